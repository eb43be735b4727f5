"""The widget page's side of the postMessage API, once Python is ready (the protocol: :mod:`.embed_protocol`).

On ``embed.html`` (``<html data-mode="embed">``) inside an allowed host's iframe, :meth:`EmbedBridge.attach`
connects the page to its host. Before Python, ``static/embed-frame.js`` said hello and applied the
look; it keeps forwarding Escape and the page's height (``resize``), which need no Python. From here
on Python answers the host::

    ready            once, when attached
    open {query?}    -> the box gets focus (the username field when signed out); a query is searched
                        with the default filters; then "opened"
    close            -> the suggestion list closes (the host hid the widget)
    result-selected  a result clicked, or Enter on a focused result: {msgId, rid, position}
    open-message     a result, a citation or a thread's "N more" is about to open in the context
                     view: {id, msgId, rid, tmid, position, via}; with ?intercept=1 the view waits
                     for open-message-reply {id, taken} (at most HOST_REPLY_MS) and stays closed
                     when the host took it
    answer-shown     an answer finished: {provider, citations}

Messages from anything but the parent at the host origin are counted in ``<html data-embed-ignored>``
(tests read it) and otherwise ignored.

Waiting for a host's reply is an ``asyncio.Event`` per request (MicroPython's asyncio makes no
Futures); messages are read with :func:`.ffi.to_py` and written with :func:`.ffi.to_js`.
"""

import asyncio

import js

from .boundary import guarded
from .dom import get, listen, present
from .embed_protocol import (
    HOST_REPLY_MS,
    host_origin,
    parse_allowed_origins,
    read_host_message,
    scoped_query,
    widget_message,
)
from .ffi import create_proxy, to_js, to_py

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Awaitable
    from typing import Any

    from .context import OpenRequest
    from .ffi import JsProxy
    from .page import Page

__all__ = ["EMBED_MODE", "EmbedBridge"]

# <html data-mode> of the widget page.
EMBED_MODE = "embed"
# The iframe URL's parameter by which a host says it replies to open-message (static/embed.js sets it).
INTERCEPT_PARAMETER = "intercept"
_MS_PER_SECOND = 1000


def _parent_origin() -> "str | None":
    origins = present(getattr(js.location, "ancestorOrigins", None))
    if origins is None or not origins.length:
        return None
    first = present(origins.item(0))
    return first if isinstance(first, str) else None


class _Reply:
    """A host's reply to one open-message, waited for: ``arrived`` is set when ``taken`` holds it.
    (An ``asyncio.Event``, not a Future: MicroPython's asyncio makes no Futures.)"""

    __slots__ = ("arrived", "taken")

    def __init__(self) -> None:
        self.arrived = asyncio.Event()
        self.taken = False

    def give(self, taken: bool) -> None:
        """The host's answer; only its first counts (as a Future's result is set once)."""
        if not self.arrived.is_set():
            self.taken = taken
            self.arrived.set()


class EmbedBridge:
    def __init__(self, page: "Page", host: str, default_filters: str, *, intercept: bool = False) -> None:
        self.page = page
        self.host = host
        self.default_filters = default_filters
        self.intercept = intercept  # the host replies to open-message, and may take it
        self.ignored = 0
        self._observers: list[JsProxy] = []  # kept alive with the page
        self._requests = 0
        self._replies: dict[int, _Reply] = {}

    @classmethod
    def attach(cls, page: "Page") -> "EmbedBridge | None":
        """Connect ``page`` to its host when it is the widget page in an allowed host's iframe."""
        html = js.document.documentElement
        if html.getAttribute("data-mode") != EMBED_MODE:
            return None
        params = js.URLSearchParams.new(js.location.search)
        requested = params.get("host")
        host = host_origin(
            requested if isinstance(requested, str) else "",
            parse_allowed_origins(present(html.getAttribute("data-embed-origins")) or ""),
            framed=js.window.parent != js.window,
            parent_origin=_parent_origin(),
        )
        if host is None:
            return None  # standalone, or a host the server does not allow: the page works alone
        filters = params.get("filters")
        bridge = cls(
            page,
            host,
            filters if isinstance(filters, str) else "",
            intercept=params.get(INTERCEPT_PARAMETER) == "1",
        )
        bridge.start()
        return bridge

    def start(self) -> None:
        listen(js.window, "message", self._on_message)
        self.page.context.intercept = self._ask_host
        self._observe(
            js.MutationObserver, self._answer_changed, get("answer"), {"attributeFilter": ["data-provider"]}
        )
        self.post("ready")

    def _observe(
        self, kind: "JsProxy", callback: "Any", target: "JsProxy", options: "dict[str, Any]"
    ) -> None:
        proxy = create_proxy(guarded(lambda *_args: callback(), "the widget's page observer"))
        observer = kind.new(proxy)
        observer.observe(target, to_js(options))
        self._observers += [proxy, observer]

    def post(self, kind: str, **fields: "Any") -> None:
        """Send one message to the host origin (and nowhere else: it is the target origin)."""
        message = to_js(widget_message(kind, **fields))
        js.window.parent.postMessage(message, self.host)

    # -- from the host ---------------------------------------------------------------------------

    def _on_message(self, event: "JsProxy") -> None:
        if event.source != js.window.parent or str(event.origin) != self.host:
            self._ignore()
            return
        message = read_host_message(to_py(event.data))
        if message is None:
            self._ignore()
            return
        box = self.page.box
        if message.type == "open-message-reply":
            waiting = self._replies.get(message.request)
            if waiting is not None:
                waiting.give(message.taken)
            return
        if message.type == "close":
            box.close()
            return
        if message.query:
            self.page.context.close(restore_focus=False)  # a new search: the results, not a message
            self.page.load_query(scoped_query(message.query, self.default_filters))
        if self.page.session.current is None:
            get("login-user").focus()  # nothing to search before signing in
        elif self.page.context.is_open:
            self.page.context.focus()  # the message it was showing when the host hid it
        else:
            box.focus()
            if not message.query:
                box.box.select()
        self.post("opened", python=True)

    def _ignore(self) -> None:
        self.ignored += 1
        js.document.documentElement.dataset.embedIgnored = str(self.ignored)

    # -- to the host -----------------------------------------------------------------------------

    def _answer_changed(self) -> None:
        provider = present(get("answer").getAttribute("data-provider")) or ""
        citations = int(get("answer-body").querySelectorAll("a.cite").length)
        self.post("answer-shown", provider=provider, citations=citations)

    def _ask_host(self, request: "OpenRequest") -> "Awaitable[bool] | None":
        """Tell the host a message is about to open: None (open it) unless the host replies, else
        whether it took it."""
        if request["via"] == "result" and request["rid"]:
            self.post(
                "result-selected", msgId=request["msgId"], rid=request["rid"], position=request["position"]
            )
        self._requests += 1
        number = self._requests
        if not self.intercept:
            self.post("open-message", id=number, **request)
            return None
        # Waited for before the host hears of it: its reply can arrive before a task that would
        # start waiting has run.
        reply = self._replies[number] = _Reply()
        self.post("open-message", id=number, **request)
        return self._reply(number, reply)

    async def _reply(self, number: int, reply: _Reply) -> bool:
        try:
            await asyncio.wait_for(reply.arrived.wait(), HOST_REPLY_MS / _MS_PER_SECOND)
        except asyncio.TimeoutError:  # noqa: UP041 (MicroPython has no builtin TimeoutError)
            return False  # a host that does not answer does not keep the message closed
        finally:
            self._replies.pop(number, None)
        return reply.taken
