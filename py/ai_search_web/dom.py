"""The only module that creates DOM nodes, and it only makes text.

Every string reaches the page as a text node or a checked attribute, never as HTML: no
``innerHTML``, no ``insertAdjacentHTML``. Tags and attribute names come from allow-lists, so data can
never add a ``<script type="py">``, an ``on*`` handler or a ``py-*`` handler (the page runs no
PyScript, which would wire those up even though CSP blocks inline script)::

    item = element("li", element("mark", "deploy"), " failed", class_="result", data_msg_id=msg_id)
    replace_children(get("result-list"), item)

Untrusted text cannot reorder the page: each bidi formatting character (U+202A..U+202E, U+2066..U+2069)
is put alone in a ``<bdi>`` isolate, which ends its effect at once (``highlights.bidi_runs``), and the
stylesheet isolates every text container (``unicode-bidi``), so an RTL name or an override in a message
stays inside its own box.

Highlights are ``[start, end)`` code-point spans over the plain text; :func:`highlighted` turns the
runs of :func:`~ai_search_web.highlights.highlight_runs` (pure: spans clipped, malformed ones skipped)
into text nodes and ``<mark>`` elements. Icons are inline SVG drawn from :data:`ICONS` (constants,
never data), so they look the same whatever fonts the device has.

The one link out of the page is :func:`external_link` (a message's "open in Slack"): the browser's
URL parser reads the address first, only ``http:`` and ``https:`` make a link, the parsed address is
set as the ``href`` property (never markup), and the link opens a new tab with no opener and no
referrer. Every other ``href`` is an in-page ``#fragment``.

Reading the DOM: JavaScript's ``null`` reaches Python as a ``JsNull`` proxy, not ``None`` (only
``undefined`` becomes ``None``), and ``closest()``, ``querySelector()``, ``getAttribute()`` and
``getElementById()`` all return it. :func:`present` turns both into ``None``; :func:`closest` and
:func:`data_index` use it, so a click on a label, on padding or on a text node is simply nothing.
Every listener runs behind :mod:`.boundary`.

Portable: the keystroke stage (:mod:`.keys`, MicroPython) builds its chips and suggestions with this
module too, so both runtimes make the same markup. The JavaScript bridge is :mod:`.ffi`'s (on
MicroPython ``null`` is ``None`` and ``undefined`` an object of its own; :func:`present` takes
both); no ``typing`` at run time, hence the quoted annotations.
"""

import re

import js

from .boundary import guarded
from .ffi import JsProxy, create_proxy, is_present
from .highlights import BIDI_FORMATTING_CHARACTERS, bidi_runs, highlight_runs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any, TypeVar

    from pyodide.ffi import JsNull

    _Value = TypeVar("_Value")

__all__ = [
    "ALLOWED_TAGS",
    "ICONS",
    "PAGE_LISTENERS",
    "ListenerGroup",
    "UnsafeMarkupError",
    "closest",
    "data_index",
    "element",
    "external_link",
    "get",
    "highlighted",
    "icon",
    "listen",
    "listening_as",
    "present",
    "replace_children",
    "set_attribute",
    "set_text",
    "unlisten_all",
]

# The elements the page builds. Nothing that runs, loads or embeds (script, iframe, object, img,
# link, style, svg, form) can be made from data; the only SVG is icon()'s, from constants.
ALLOWED_TAGS = frozenset(
    {
        "a", "article", "button", "div", "footer", "h2", "h3", "header", "label", "li", "mark",
        "ol", "option", "p", "section", "select", "small", "span", "strong", "sup", "time", "ul",
    }
)  # fmt: skip
# Attribute names the page sets. ARIA and data-* are open families; everything else is listed.
# href is checked separately: only in-page fragments (#result-...).
_ALLOWED_ATTRIBUTES = frozenset(
    {"id", "class", "role", "type", "title", "tabindex", "hidden", "datetime", "value", "lang", "dir",
     "href", "selected", "disabled"}
)  # fmt: skip
_FAMILY = re.compile(r"^(?:aria|data)-[a-z][a-z0-9-]*$")
_FRAGMENT = re.compile(r"^#[A-Za-z][A-Za-z0-9_:.-]*$")
# The protocols a link out of the page may have, as the browser's URL parser names them. Anything
# else (javascript:, data:, blob:, file:, an app's own scheme) runs or reaches something a click on a
# message must not.
_WEB_PROTOCOLS = frozenset({"http:", "https:"})
# A link out of the page opens a new tab that cannot reach back (no window.opener) and is not told
# where it came from: the page's URL holds the search and its filters.
_EXTERNAL_REL = "noopener noreferrer"


class UnsafeMarkupError(ValueError):
    """A tag, attribute or link the page never builds from data: a bug, never shown to users."""


def _check_attribute(name: str, value: str) -> None:
    if name not in _ALLOWED_ATTRIBUTES and not _FAMILY.match(name):
        raise UnsafeMarkupError(f"attribute {name!r} is not on the allow-list")
    if name == "href" and not _FRAGMENT.match(value):
        raise UnsafeMarkupError(f"only in-page #fragment links are built, not {value!r}")


def set_attribute(node: JsProxy, name: str, value: str | bool) -> None:
    """Set (``True`` or a string) or remove (``False``) an allow-listed attribute.

    Raises:
        UnsafeMarkupError: ``name`` is not allowed, or an ``href`` is not a ``#fragment``.
    """
    if value is False:
        node.removeAttribute(name)
        return
    text = "" if value is True else str(value)
    _check_attribute(name, text)
    node.setAttribute(name, text)


def element(tag: str, *children: "Any", **attributes: "str | bool | None") -> JsProxy:
    """A new ``tag`` element with text (``str``) or node children and allow-listed attributes.

    Keyword names map to attributes: ``class_`` → ``class``, ``aria_label`` → ``aria-label``,
    ``data_msg_id`` → ``data-msg-id``; ``None`` and ``False`` values are left out.

    Raises:
        UnsafeMarkupError: the tag or an attribute is not allowed.
    """
    if tag not in ALLOWED_TAGS:
        raise UnsafeMarkupError(f"element {tag!r} is not on the allow-list")
    node = js.document.createElement(tag)
    for key, value in attributes.items():  # portable: attribute order means nothing in the DOM
        if value is None or value is False:
            continue
        set_attribute(node, key.rstrip("_").replace("_", "-"), value)
    _append(node, children)
    return node


def external_link(url: str, *children: "Any", class_: str) -> "JsProxy | None":
    """An ``<a>`` out of the page to ``url`` (a new tab, ``rel="noopener noreferrer"``), with our own
    ``children``; None when the browser's URL parser does not read ``url`` as an http(s) address.

    ``url`` is parsed with ``URL.parse()``, the same parser the link would use, so what is checked is
    what a click follows: a scheme hidden behind characters the parser strips (a tab or a newline
    inside ``javascript:``) is seen as the scheme it is. The parsed ``href`` is then set as a
    property, not as markup. ``URL.parse`` gives ``null`` for what is not an absolute URL at all,
    where ``new URL()`` throws: MicroPython cannot catch an exception a synchronous call throws.
    """
    parsed = present(js.URL.parse(url))
    if parsed is None:  # not an absolute URL at all
        return None
    if parsed.protocol not in _WEB_PROTOCOLS:
        return None
    link = js.document.createElement("a")
    link.href = parsed.href
    link.rel = _EXTERNAL_REL
    link.target = "_blank"
    set_attribute(link, "class", class_)
    _append(link, children)
    return link


def _append(node: JsProxy, children: "Iterable[Any]") -> None:
    for child in children:
        if child is None:
            continue
        if isinstance(child, str):
            _append_text(node, child)
        elif isinstance(child, (list, tuple)):
            _append(node, child)
        else:
            node.appendChild(child)


def _append_text(node: JsProxy, text: str) -> None:
    """``text`` as text nodes; each bidi formatting character alone in a ``<bdi>``, whose isolate ends
    the character's effect at once, so untrusted text cannot reorder what follows it."""
    for run, control in bidi_runs(text):
        if control:
            isolate = js.document.createElement("bdi")
            isolate.appendChild(js.document.createTextNode(run))
            node.appendChild(isolate)
        else:
            node.appendChild(js.document.createTextNode(run))


def replace_children(node: JsProxy, *children: "Any") -> None:
    """Replace every child of ``node`` (strings become text nodes); no children clears it."""
    fragment = js.document.createDocumentFragment()
    _append(fragment, children)
    node.replaceChildren(fragment)


def set_text(node: JsProxy, text: str) -> None:
    """``node.textContent = text``: the text as one text node, markup characters and all (bidi
    formatting characters isolated, as :func:`replace_children` does)."""
    if BIDI_FORMATTING_CHARACTERS.intersection(text):
        replace_children(node, text)
    else:
        node.textContent = text


def present(value: "_Value | JsNull | None") -> "_Value | None":
    """``value``, or None when it is JavaScript's ``null`` or ``undefined``."""
    return value if is_present(value) else None


def closest(event: JsProxy, selector: str) -> "JsProxy | None":
    """The element matching ``selector`` at or around the event's target, or None.

    The target may be a text node (no ``closest``), the document, or outside any match: all None.
    """
    target = present(getattr(event, "target", None))
    if target is not None and not hasattr(target, "closest"):
        target = present(getattr(target, "parentElement", None))
    if target is None or not hasattr(target, "closest"):
        return None
    return present(target.closest(selector))


def data_index(node: "JsProxy | None", count: int) -> "int | None":
    """``node``'s ``data-index`` when it is a whole number in ``0..count-1``, else None."""
    raw = present(node.getAttribute("data-index")) if node is not None else None
    if not isinstance(raw, str) or not raw or not all("0" <= digit <= "9" for digit in raw):
        return None
    index = int(raw)
    return index if index < count else None


def get(element_id: str) -> JsProxy:
    """The element with this id in the page's own markup.

    Raises:
        LookupError: index.html has no such element (a page/code mismatch).
    """
    node = present(js.document.getElementById(element_id))
    if node is None:
        raise LookupError(f"index.html has no element with id {element_id!r}")
    return node


# Inline SVG icons (24 x 24 view box, drawn with currentColor): path data only, all constants.
ICONS: dict[str, str] = {
    "hash": "M10 3 8 21M16 3l-2 18M4 9h17M3 15h17",
    "user": "M12 12a4 4 0 1 0 0-8 4 4 0 0 0 0 8Zm-7 8a7 7 0 0 1 14 0",
    "calendar": "M4 6h16v14H4zM4 10h16M8 3v5M16 3v5",
    "close": "M6 6l12 12M18 6 6 18",
    "thread": "M4 5h16v11H10l-5 4v-4H4z",
    "file": "M6 3h8l4 4v14H6zM14 3v4h4",
    "image": "M4 5h16v14H4zM4 16l5-5 4 4 2-2 5 5M15 9.5h.01",
    "pin": "M9 3h6l-1 7 3 3H7l3-3zM12 13v8",
    "link": "M10 14a4 4 0 0 0 5.7 0l3-3a4 4 0 0 0-5.7-5.7l-1 1M14 10a4 4 0 0 0-5.7 0l-3 3a4 4 0 0 0 5.7 5.7l1-1",
    "back": "M19 12H5M11 6l-6 6 6 6",
    "clock": "M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18Zm0-14v5l3 2",
    "external": "M14 4h6v6M20 4l-9 9M18 14v6H4V6h6",
}
_SVG = "http://www.w3.org/2000/svg"


def icon(name: str) -> JsProxy:
    """The decorative icon ``name`` of :data:`ICONS` as inline SVG (hidden from screen readers).

    Raises:
        UnsafeMarkupError: ``name`` is not one of the icons.
    """
    if name not in ICONS:
        raise UnsafeMarkupError(f"no icon named {name!r}")
    svg = js.document.createElementNS(_SVG, "svg")
    for attribute, value in (("viewBox", "0 0 24 24"), ("aria-hidden", "true"), ("focusable", "false"),
                             ("class", f"icon icon-{name}")):  # fmt: skip
        svg.setAttribute(attribute, value)
    path = js.document.createElementNS(_SVG, "path")
    path.setAttribute("d", ICONS[name])
    svg.appendChild(path)
    return svg


def highlighted(text: str, spans: "Sequence[Any]") -> "list[Any]":
    """``text`` as children: plain runs as strings, each span's run in a ``<mark>``.

    Spans are ``[start, end)`` code points, clipped and checked by :func:`highlight_runs`, so any
    input renders the whole text once.
    """
    return [element("mark", run) if marked else run for run, marked in highlight_runs(text, spans)]


class ListenerGroup:
    """The listeners one part of the page added through :func:`listen`, removed together.

    The keystroke stage and the page share one interpreter on MicroPython: when the page takes over,
    the stage removes its own listeners (its group) and none of the page's. A handler runs with its
    listener's group current, so a listener it adds (a list opening, a chip made) is that group's
    too. Proxies handed to addEventListener must outlive the call: each is kept until removed."""

    def __init__(self) -> None:
        self.added: list[tuple[JsProxy, str, Any]] = []

    def remove_all(self) -> None:
        while self.added:
            target, event, proxy = self.added.pop()
            target.removeEventListener(event, proxy)


# The page's own group (the page never removes its listeners); listening_as() names another.
PAGE_LISTENERS = ListenerGroup()
_current = [PAGE_LISTENERS]
_groups = [PAGE_LISTENERS]


class listening_as:
    """``with listening_as(group):`` the listeners added inside go to ``group``."""

    def __init__(self, group: ListenerGroup) -> None:
        self.group = group
        self.previous = group
        if group not in _groups:
            _groups.append(group)

    def __enter__(self) -> ListenerGroup:
        self.previous = _current[0]
        _current[0] = self.group
        return self.group

    def __exit__(self, *_exc: "object") -> None:
        _current[0] = self.previous


def listen(target: JsProxy, event: str, handler: "Callable[[JsProxy], Any]") -> None:
    """``target.addEventListener(event, handler)`` behind the boundary, in the current
    :class:`ListenerGroup`; the proxy is kept until that group is removed."""
    group = _current[0]

    def run(*args: "Any") -> "Any":
        with listening_as(group):
            return handler(*args)

    proxy = create_proxy(guarded(run, f"the page's {event} handler"))
    group.added.append((target, event, proxy))
    target.addEventListener(event, proxy)


def unlisten_all() -> None:
    """Remove every listener :func:`listen` added in this interpreter, every group's (a page that
    could not start on MicroPython, handed to Pyodide: static/keys-boot.mjs)."""
    for group in _groups:
        group.remove_all()
