"""The result list: room, author, time, text with highlights, why it matched; pages and the empty state.

Results arrive as ``ai.search`` returns them (``text``, ``ts``, ``u``, ``room``, ``highlights``,
``matchReason``, optional ``score``). Every field is untrusted and reaches the page as text, each in
its own bidirectional isolate (``dir="auto"``), so a right-to-left name cannot reorder what follows
it. Why a result matched is said in words: the words it matched (from its highlights), similar
meaning, or both; the fused score is a ranking detail, not shown. The
first page shows ``AI_SEARCH_PAGE_SIZE`` results, each "Show more" ``AI_SEARCH_RESULTS_PAGE_SIZE``
more, as upstream. Result ``n`` (1-based) is ``#result-n``: the answer's ``[n]`` links there.

When nothing matched, the empty state says what was searched (the words, each filter in force, the
rooms searched) and offers one button per filter to search again without it::

    view = ResultsView(get("result-list"), get("show-more"), get("empty"), on_drop=page.remove_chip)
    view.show(results)                       # first page
    view.show_more()
    view.show_empty("deploy", chips, "18 rooms you are in")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import js
from pyodide.ffi import JsProxy, to_js

from ai_search import AI_SEARCH_PAGE_SIZE, AI_SEARCH_RESULTS_PAGE_SIZE, MAX_SOURCE_MESSAGE_LENGTH, FilterChip

from .dom import closest, data_index, element, highlighted, listen, replace_children, set_text
from .wording import match_words, reason_text

__all__ = ["RESULT_ID_PREFIX", "ResultsView", "result_anchor", "room_label"]

RESULT_ID_PREFIX = "result-"
# Room types whose name is a room name (shown with #); direct messages are named after their members.
_NAMED_ROOM_TYPES = frozenset({"c", "p"})
_DIRECT_NAME_SEPARATOR = "__"

Result = Mapping[str, Any]


def result_anchor(position: int) -> str:
    """The element id of the result at 1-based ``position``."""
    return f"{RESULT_ID_PREFIX}{position}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def room_label(room: Any) -> str:
    """``#name`` for a channel or group; ``Direct: a, b`` for a direct message."""
    if not isinstance(room, Mapping):
        return ""
    name = _text(room.get("fname")) or _text(room.get("name"))
    if _text(room.get("t")) in _NAMED_ROOM_TYPES or not name:
        return f"#{name}" if name else ""
    return "Direct: " + ", ".join(part for part in name.split(_DIRECT_NAME_SEPARATOR) if part)


class ResultsView:
    def __init__(
        self, listing: JsProxy, more: JsProxy, empty: JsProxy, *, on_drop: Callable[[FilterChip], None]
    ) -> None:
        self._list = listing
        self._more = more
        self._empty = empty
        self._on_drop = on_drop
        self.results: tuple[Result, ...] = ()
        self.shown = 0
        self._drops: tuple[FilterChip, ...] = ()
        self._time_format: JsProxy | None = None  # made on first use: not on the start-up path
        listen(more, "click", lambda _event: self.show_more())
        listen(empty, "click", self._drop_click)

    def clear(self) -> None:
        self.results, self.shown, self._drops = (), 0, ()
        replace_children(self._list)
        replace_children(self._empty)
        self._empty.hidden = True
        self._more.hidden = True

    def show(self, results: Sequence[Result]) -> None:
        """Show the first page of ``results`` (replacing what was there)."""
        self.clear()
        self.results = tuple(result for result in results if isinstance(result, Mapping))
        self._reveal(min(AI_SEARCH_PAGE_SIZE, len(self.results)))

    def show_more(self) -> None:
        self._reveal(min(self.shown + AI_SEARCH_RESULTS_PAGE_SIZE, len(self.results)))

    def reveal(self, position: int) -> None:
        """Make sure the result at 1-based ``position`` is on the page (a citation points at it)."""
        if self.shown < position <= len(self.results):
            self._reveal(position)

    def _reveal(self, upto: int) -> None:
        fresh = [self._item(self.results[i], i + 1) for i in range(self.shown, upto)]
        for node in fresh:
            self._list.appendChild(node)
        first_new = self.shown
        self.shown = upto
        self._more.hidden = self.shown >= len(self.results)
        if fresh and first_new:
            fresh[0].focus()  # "Show more" moved focus to the first new result, not back to the top
        left = len(self.results) - self.shown
        set_text(self._more, f"Show more ({min(left, AI_SEARCH_RESULTS_PAGE_SIZE)} of {left} left)")

    def _item(self, result: Result, position: int) -> JsProxy:
        text = _text(result.get("text"))
        shown_text = text[:MAX_SOURCE_MESSAGE_LENGTH]
        spans = result.get("highlights")
        user = result.get("u") if isinstance(result.get("u"), Mapping) else {}
        username, name = _text(user.get("username")), _text(user.get("name"))
        reason = reason_text(result.get("matchReason"), match_words(shown_text, spans))
        ts = _text(result.get("ts"))
        return element(
            "li",
            element(
                "article",
                element(
                    "header",
                    element("span", f"[{position}]", class_="result-number"),
                    element("span", room_label(result.get("room")), class_="result-room", dir="auto"),
                    element(
                        "span",
                        name or username,
                        class_="result-author",
                        title=f"@{username}" if username else None,
                        dir="auto",
                    ),
                    element("time", self._when(ts), datetime=ts, class_="result-time") if ts else None,
                    element("span", reason, class_="result-reason", dir="auto") if reason else None,
                    class_="result-meta",
                ),
                element(
                    "p",
                    *highlighted(shown_text, spans if isinstance(spans, list) else []),
                    "…" if len(text) > len(shown_text) else None,
                    class_="result-text",
                    dir="auto",
                ),
            ),
            id=result_anchor(position),
            class_="result",
            tabindex="-1",
            data_msg_id=_text(result.get("msgId")) or _text(result.get("_id")),
        )

    def _when(self, ts: str) -> str:
        date = js.Date.new(ts)
        if js.Number.isNaN(date.getTime()):
            return ts
        if self._time_format is None:
            self._time_format = js.Intl.DateTimeFormat.new(
                js.undefined,
                to_js({"dateStyle": "medium", "timeStyle": "short"}, dict_converter=js.Object.fromEntries),
            )
        return str(self._time_format.format(date))

    def position_of(self, msg_id: str) -> int | None:
        """The 1-based position of the result with this message id, if it is in the list."""
        for index, result in enumerate(self.results):
            if msg_id and msg_id in (result.get("msgId"), result.get("_id")):
                return index + 1
        return None

    def show_empty(self, words: str, chips: Sequence[FilterChip], rooms: str) -> None:
        """Nothing matched: say what was searched, and offer to drop each filter."""
        self.clear()
        self._drops = tuple(chips)
        lines: list[Any] = [
            element(
                "p",
                "No messages match ",
                element("span", f"“{words}”", dir="auto"),
                ".",
                class_="empty-title",
            )
        ]
        scope = [f"Searched {rooms}"] + [chip.title for chip in chips]
        lines.append(element("ul", *(element("li", line) for line in scope), class_="empty-scope"))
        if chips:
            lines.append(
                element(
                    "div",
                    *(
                        element(
                            "button",
                            f"Search without {chip.label}",
                            type="button",
                            class_="drop-filter",
                            data_index=str(index),
                        )
                        for index, chip in enumerate(chips)
                    ),
                    class_="empty-actions",
                )
            )
        replace_children(self._empty, *lines)
        self._empty.hidden = False

    def _drop_click(self, event: JsProxy) -> None:
        index = data_index(closest(event, "button.drop-filter"), len(self._drops))
        if index is not None:
            self._on_drop(self._drops[index])
