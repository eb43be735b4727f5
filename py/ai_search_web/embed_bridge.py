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
    answer-shown     an answer finished: {provider, citations}

Results become keyboard-reachable (``tabindex=0``) because selecting one means something here.
Messages from anything but the parent at the host origin are counted in ``<html data-embed-ignored>``
(tests read it) and otherwise ignored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import js
from pyodide.ffi import JsProxy, create_proxy, to_js

from .boundary import guarded
from .dom import closest, get, listen, present, set_attribute
from .embed_protocol import (
    host_origin,
    parse_allowed_origins,
    read_host_message,
    scoped_query,
    widget_message,
)
from .results import RESULT_ID_PREFIX

if TYPE_CHECKING:
    from .page import Page

__all__ = ["EMBED_MODE", "EmbedBridge"]

# <html data-mode> of the widget page.
EMBED_MODE = "embed"


def _parent_origin() -> str | None:
    origins = present(getattr(js.location, "ancestorOrigins", None))
    if origins is None or not origins.length:
        return None
    first = present(origins.item(0))
    return first if isinstance(first, str) else None


class EmbedBridge:
    def __init__(self, page: Page, host: str, default_filters: str) -> None:
        self.page = page
        self.host = host
        self.default_filters = default_filters
        self.ignored = 0
        self._observers: list[JsProxy] = []  # kept alive with the page

    @classmethod
    def attach(cls, page: Page) -> EmbedBridge | None:
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
        bridge = cls(page, host, filters if isinstance(filters, str) else "")
        bridge.start()
        return bridge

    def start(self) -> None:
        listen(js.window, "message", self._on_message)
        results = get("result-list")
        listen(results, "click", self._on_result_click)
        listen(results, "keydown", self._on_result_key)
        self._observe(js.MutationObserver, self._results_changed, results, {"childList": True})
        self._observe(
            js.MutationObserver, self._answer_changed, get("answer"), {"attributeFilter": ["data-provider"]}
        )
        self.post("ready")

    def _observe(self, kind: JsProxy, callback: Any, target: JsProxy, options: dict[str, Any]) -> None:
        proxy = create_proxy(guarded(lambda *_args: callback(), "the widget's page observer"))
        observer = kind.new(proxy)
        observer.observe(target, to_js(options, dict_converter=js.Object.fromEntries))
        self._observers += [proxy, observer]

    def post(self, kind: str, **fields: Any) -> None:
        """Send one message to the host origin (and nowhere else: it is the target origin)."""
        message = to_js(widget_message(kind, **fields), dict_converter=js.Object.fromEntries)
        js.window.parent.postMessage(message, self.host)

    # -- from the host ---------------------------------------------------------------------------

    def _on_message(self, event: JsProxy) -> None:
        if event.source != js.window.parent or str(event.origin) != self.host:
            self._ignore()
            return
        data = event.data
        message = read_host_message(data.to_py() if isinstance(data, JsProxy) else data)
        if message is None:
            self._ignore()
            return
        box = self.page.box
        if message.type == "close":
            box.close()
            return
        if message.query:
            self.page.load_query(scoped_query(message.query, self.default_filters))
        if self.page.session.current is None:
            get("login-user").focus()  # nothing to search before signing in
        else:
            box.focus()
            if not message.query:
                box.box.select()
        self.post("opened", python=True)

    def _ignore(self) -> None:
        self.ignored += 1
        js.document.documentElement.dataset.embedIgnored = str(self.ignored)

    # -- to the host -----------------------------------------------------------------------------

    def _results_changed(self) -> None:
        for node in js.document.querySelectorAll("#result-list .result[tabindex='-1']"):
            set_attribute(node, "tabindex", "0")

    def _answer_changed(self) -> None:
        provider = present(get("answer").getAttribute("data-provider")) or ""
        citations = int(get("answer-body").querySelectorAll("a.cite").length)
        self.post("answer-shown", provider=provider, citations=citations)

    def _on_result_click(self, event: JsProxy) -> None:
        self._select(closest(event, ".result"))

    def _on_result_key(self, event: JsProxy) -> None:
        item = closest(event, ".result")
        if event.key == "Enter" and item is not None and item == present(event.target):
            event.preventDefault()
            self._select(item)

    def _select(self, item: JsProxy | None) -> None:
        if item is None:
            return
        try:
            position = int(str(item.id).removeprefix(RESULT_ID_PREFIX))
            result = self.page.results.results[position - 1]
        except (ValueError, IndexError):
            return
        msg_id, rid = result.get("_id"), result.get("rid")
        if isinstance(msg_id, str) and isinstance(rid, str):
            self.post("result-selected", msgId=msg_id, rid=rid, position=position)
