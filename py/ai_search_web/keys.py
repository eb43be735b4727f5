"""The keystroke stage: the box's chips and suggestions made by the core's own grammar on MicroPython,
from a few hundred milliseconds after navigation until the page's Python (Pyodide) is ready.

``static/keys-boot.mjs`` starts MicroPython, writes the stage's files (``GET /py/keys.json``: the
core's ``KEYSTROKE_MODULES`` and the glue below) and calls :func:`start`. The stage draws with the
page's own views, so what it shows is the page's markup, ids, classes and ARIA::

    input        finished filters before the caret -> chips (chips.ChipsView); the token at the
                 caret -> suggestions (combobox.Combobox, data-by="keys")
    keys, click  Down/Up/Enter/Tab/Escape and a click apply a suggestion (the Combobox's own)
    chips        a label puts its token back at the caret; x, Backspace, Delete remove it

Rooms and people come from the lookups static/fallback.js made at load (``window.aiSearchFallback``);
the stage makes no request. Everything else stays the fallback's (sign-in, Enter searches): a search
there sends the stage's chips too (``window.aiSearchKeys.filters``, the chips as a query line).

When the page's Python is ready (``<html data-py=ready>``) the stage removes every listener it added
(its ``dom.ListenerGroup``; on MicroPython the page's own listeners are in the same interpreter and
stay) and the page starts from the box's text and ``aiSearchKeys.filters``: nothing
typed is lost and the caret stays where it was.

Why this is its own small module and not :class:`~.search_box.SearchBox`: the SearchBox also owns
the API lookups, recent searches (storage), the date picker, the hints and the counter, which the
stage does not need before Pyodide; the markup itself is shared (chips, combobox, dom).

Portable: MicroPython 1.28 (its only runtime) and CPython for type checks.
"""

import json

import js

from ai_search import (
    SearchFilters,
    apply_search_filter_token,
    build_applied_filter_chips,
    get_active_search_filter,
    insert_search_filter_token,
    merge_search_filters,
    remove_search_filter,
    serialize_search_query,
    strip_text,
    take_out_completed_search_filters,
)

from .boundary import guarded
from .caret import index_to_utf16, utf16_to_index
from .chips import ChipsView
from .combobox import Combobox, is_composing
from .dom import ListenerGroup, get, listen, listening_as, present
from .ffi import JsProxy, create_proxy, js_object
from .lookups import ROOM_LOOKUP, USER_LOOKUP, LookupCache, suggestions_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import date
    from typing import Any

    from ai_search import ActiveSearchFilter, FilterChip, FilterSuggestion

__all__ = ["BY", "READY_MARK", "KeysStage", "start"]

# Who drew a suggestion list (its data-by): the bench and the tests tell the stage's lists by it.
BY = "keys"
# The performance mark, and <html data-keys="ready">, once the stage answers keystrokes.
READY_MARK = "ai-search:keys-ready"
# Filter kinds suggested from the caller's rooms and people (only for someone signed in).
# The fallback's lists (window.aiSearchFallback), by lookup kind.
_FALLBACK_LISTS = {"room": "rooms", "user": "people"}
# The fallback's event once its lookups are in (static/fallback.js).
LOOKED_UP_EVENT = "ai-search:looked-up"


def _today() -> "date":
    """The browser's calendar day (search_box.browser_today, which the stage does not import)."""
    import datetime

    now = js.Date.new()
    return datetime.date(int(now.getFullYear()), int(now.getMonth()) + 1, int(now.getDate()))


class KeysStage:
    def __init__(self, listeners: "ListenerGroup") -> None:
        # Every listener the stage adds (its own, its chips' and its list's): what step_aside removes.
        self.listeners = listeners
        self.box = get("search-box")
        self.filters = SearchFilters()
        self.chips = ChipsView(
            get("chips"), on_remove=self._remove_chip, on_leave=self.focus, on_edit=self._edit_chip
        )
        self.combo = Combobox(self.box, get("suggestions"), on_accept=self.accept, by=BY)
        self._lookups = {"room": LookupCache(ROOM_LOOKUP), "user": LookupCache(USER_LOOKUP)}
        self._observer: JsProxy | None = None
        listen(self.box, "input", self._on_input)
        listen(self.box, "keydown", self._on_keydown)
        listen(self.box, "compositionend", lambda _event: self.refresh())
        listen(self.box, "blur", lambda _event: self.combo.close())
        listen(get("search-form"), "submit", lambda _event: self.combo.close())  # the fallback searches
        listen(js.document, LOOKED_UP_EVENT, lambda _event: self._looked_up())

    # -- the box ---------------------------------------------------------------------------------

    @property
    def text(self) -> str:
        return str(self.box.value)

    def caret(self, text: str) -> int:
        start = present(self.box.selectionStart)
        return utf16_to_index(text, int(start)) if isinstance(start, (int, float)) else len(text)

    def set_text(self, text: str, caret: int) -> None:
        self.box.value = text
        position = index_to_utf16(text, caret)
        self.box.setSelectionRange(position, position)

    def focus(self) -> None:
        self.box.focus()

    def _focused(self) -> bool:
        return bool(self.box == present(js.document.activeElement))

    def set_filters(self, filters: SearchFilters) -> None:
        self.filters = filters
        self.chips.render(build_applied_filter_chips(filters, today=_today()))
        js.window.aiSearchKeys.filters = serialize_search_query("", filters)

    # -- typing ----------------------------------------------------------------------------------

    def _on_input(self, event: JsProxy) -> None:
        if not getattr(event, "isComposing", False):  # compositionend refreshes
            self.refresh()

    def _on_keydown(self, event: JsProxy) -> None:
        if self.combo.handle_key(event) or is_composing(event):
            return
        at_start = self.box.selectionStart == 0 and self.box.selectionEnd == 0
        if event.key in ("Backspace", "ArrowLeft") and at_start and self.chips.focus_last():
            event.preventDefault()

    def refresh(self) -> None:
        """Filters finished before the caret become chips; the token at the caret is suggested for
        (search_box.SearchBox.refresh, without its hints, counter and recent searches)."""
        typed = self.text
        text, caret, finished = take_out_completed_search_filters(typed, self.caret(typed))
        if finished is not None:
            self.set_text(text, caret)
            self.set_filters(merge_search_filters(self.filters, finished))
        self._suggest(get_active_search_filter(text, caret) if strip_text(text) else None)

    def _suggest(self, active: "ActiveSearchFilter | None") -> None:
        signed_in = js.document.documentElement.getAttribute("data-auth") == "in"
        suggestions = suggestions_for(active, self._lookup, signed_in=signed_in, today=_today())
        if suggestions is None:
            self.combo.close()
        else:
            self.combo.show(suggestions)

    def accept(self, suggestion: "FilterSuggestion") -> None:
        """The chosen value replaces the token at the caret; it then becomes a chip."""
        text = self.text
        caret = self.caret(text)
        active = get_active_search_filter(text, caret)
        applied = apply_search_filter_token(text, active, suggestion.filter_key, suggestion.value, caret)
        self.set_text(applied.text, applied.caret)
        self.refresh()

    # -- chips -----------------------------------------------------------------------------------

    def _remove_chip(self, chip: "FilterChip", _index: int) -> None:
        self.set_filters(remove_search_filter(self.filters, chip.filter_key, chip.value))
        if not self.chips.focus_last():
            self.focus()

    def _edit_chip(self, chip: "FilterChip", _index: int) -> None:
        self.set_filters(remove_search_filter(self.filters, chip.filter_key, chip.value))
        text = self.text
        inserted = insert_search_filter_token(text, self.caret(text), chip.token)
        self.focus()
        self.set_text(inserted.text, inserted.caret)
        self.refresh()

    # -- the fallback's lookups ------------------------------------------------------------------

    def _lookup(self, kind: str, text: str) -> "list[Any] | None":
        cache = self._lookups[kind]
        if cache.local("") is None:
            items = _fallback_list(_FALLBACK_LISTS[kind])
            if items is not None:
                cache.store("", items)
        return cache.local(text)

    def _looked_up(self) -> None:
        """The fallback's rooms and people arrived: a token being typed gets its list now."""
        if self._focused() and strip_text(self.text):
            self._suggest(get_active_search_filter(self.text, self.caret(self.text)))

    # -- stepping aside --------------------------------------------------------------------------

    def watch_for_python(self) -> None:
        """Step aside the moment the page's Python marks itself ready."""
        root = js.document.documentElement
        if root.getAttribute("data-py") == "ready":
            self.step_aside()
            return
        self._observer = js.MutationObserver.new(
            create_proxy(guarded(lambda *_args: self._python_changed(), "the keystroke stage's handoff"))
        )
        self._observer.observe(root, js_object(attributes=True))

    def _python_changed(self) -> None:
        if js.document.documentElement.getAttribute("data-py") == "ready":
            self.step_aside()

    def step_aside(self) -> None:
        if self._observer is not None:
            self._observer.disconnect()
            self._observer = None
        self.listeners.remove_all()


def _fallback_list(name: str) -> "list[Any] | None":
    """The fallback's complete answer ``name`` (rooms or people) as Python dicts, or None yet."""
    fallback = present(getattr(js.window, "aiSearchFallback", None))
    items = present(getattr(fallback, name, None)) if fallback is not None else None
    if items is None:
        return None
    loaded = json.loads(str(js.JSON.stringify(items)))
    return [item for item in loaded if isinstance(item, dict)] if isinstance(loaded, list) else None


# The running stage (its listeners' proxies keep it alive too).
STAGE: "KeysStage | None" = None


def start() -> "KeysStage | None":
    """Start the stage (static/keys-boot.mjs calls this once its files are written); None when the
    page's Python is already ready."""
    global STAGE
    root = js.document.documentElement
    if root.getAttribute("data-py") == "ready":
        return None
    listeners = ListenerGroup()
    with listening_as(listeners):
        stage = STAGE = KeysStage(listeners)
    stage.watch_for_python()
    root.setAttribute("data-keys", "ready")
    js.performance.mark(READY_MARK)
    if stage._focused() and strip_text(stage.text) and not _from_address(stage.text):
        stage.refresh()  # typed before the stage was there
    return stage


def _from_address(text: str) -> bool:
    """Whether the box holds the address bar's ``?q=`` as the fallback put it there: that query is
    the page's Python's to load (with its search), not the stage's to turn into chips."""
    wanted = present(js.URLSearchParams.new(js.location.search).get("q"))
    return isinstance(wanted, str) and strip_text(wanted) == strip_text(text)
