"""The result list: room, author, time, text with highlights, why it matched, its thread and files;
by conversation; pages and the empty state.

Results arrive as ``ai.search`` returns them (``text``, ``ts``, ``u``, ``room``, ``highlights``,
``matchReason``, optional ``score``, ``thread``, ``tmid``, ``files``). Every field is untrusted and
reaches the page as text, each in its own bidirectional isolate (``dir="auto"``), so a right-to-left
name cannot reorder what follows it. Why a result matched is said in words: the words it matched
(from its highlights), similar meaning, or both; the fused score is a ranking detail, not shown.

The list is by conversation (:mod:`.conversations`): a thread's hits together under its title, its
best hit first, at the rank of that hit. Results come in two bands (``ai.search``'s ``band``; none
means strong): the strong ones are the list, the first page ``AI_SEARCH_PAGE_SIZE`` of them, each
"Show more" ``AI_SEARCH_RESULTS_PAGE_SIZE`` more, as upstream; the related ones (at most 20, less
certain) are a section of their own below, behind a disclosure button ("12 related results — less
certain matches", ``aria-expanded``), closed unless nothing is strong ("No strong match. 7 related
results may help.", and open). One numbering runs through both: result ``n`` (1-based, strong first,
then related) is ``#result-n``, and the answer's ``[n]`` links there; following it to a related
result opens the section (:meth:`ResultsView.reveal`). A click on a result, or Enter on a focused
one, asks the page to open it in its conversation (``on_open(result, element, position)``); so does
a thread's "N more in this thread".

When nothing matched, the empty state says what was searched (the words, each filter in force, the
rooms searched) and offers one button per filter to search again without it::

    view = ResultsView(get("result-list"), get("show-more"), get("empty"), on_drop=page.remove_chip,
                       on_open=page.open_result, related=get("related"))
    view.show(results)                       # first page; the related section closed (or open)
    view.show_more()
    view.open_related(True)
    view.show_empty("deploy", chips, "18 rooms you are in")
"""

import js

from ai_search import AI_SEARCH_PAGE_SIZE, AI_SEARCH_RESULTS_PAGE_SIZE, MAX_SOURCE_MESSAGE_LENGTH, strip_text

from .conversations import ResultNumbers, group_by_conversation, message_id, split_bands
from .dom import (
    closest,
    data_index,
    element,
    get,
    highlighted,
    icon,
    listen,
    present,
    replace_children,
    set_text,
)
from .message_view import author, file_chips, source_anchor, thread_note, when
from .wording import (
    match_words,
    more_in_thread_text,
    no_strong_text,
    reason_text,
    related_text,
    replies_text,
    room_label,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from ai_search import FilterChip

    from .conversations import Conversation
    from .ffi import JsProxy

    Result = Mapping[str, Any]

__all__ = ["RESULT_ID_PREFIX", "ResultsView", "result_anchor", "room_label"]

RESULT_ID_PREFIX = "result-"
_DIGITS = "0123456789"


def result_anchor(position: int) -> str:
    """The element id of the result at 1-based ``position``."""
    return f"{RESULT_ID_PREFIX}{position}"


def _text(value: "Any") -> str:
    return value if isinstance(value, str) else ""


class ResultsView:
    def __init__(
        self,
        listing: "JsProxy",
        more: "JsProxy",
        empty: "JsProxy",
        *,
        on_drop: "Callable[[FilterChip], None]",
        on_open: "Callable[[Result, JsProxy, int | None], None]",
        on_relax: "Callable[[str], None] | None" = None,
        related: "JsProxy | None" = None,
    ) -> None:
        self._list = listing
        self._more = more
        self._empty = empty
        self._on_drop = on_drop
        self._on_open = on_open
        # The related section: its note, its disclosure button (and the label in it) and its list.
        self._related = related if related is not None else get("related")
        self._related_note = self._related.querySelector(".related-note")
        self._related_toggle = self._related.querySelector(".related-toggle")
        self._related_label = self._related.querySelector(".related-label")
        self._related_list = self._related.querySelector(".related-list")
        self.found: tuple[Result, ...] = ()  # every result of the search, best first
        self.results: tuple[Result, ...] = ()  # those listed, in the list's order: result n is [n]
        self.numbers = ResultNumbers()  # the page's one numbering: the list's and every answer's [n]
        self.strong = 0  # results[:strong] are the strong band's, the rest the related band's
        self.counts = (0, 0)  # strong and related results found (a thread's unlisted hits too)
        self._on_relax = on_relax
        self._relaxations: tuple[str, ...] = ()
        self.shown = 0  # strong results on the page ("Show more" adds to them)
        self.related_open = False
        self._related_drawn = False  # the related results are in their list (drawn once, when opened)
        self.empty_shown = False  # the empty state is on screen (the last search found nothing)
        self._groups: tuple[Conversation, ...] = ()
        self._related_groups = 0  # self._groups[-_related_groups:] are the related band's
        self._group_of: tuple[int, ...] = ()  # the group of each listed result
        self._containers: dict[int, JsProxy] = {}  # a thread's list of hits, once it is on the page
        self._drops: tuple[FilterChip, ...] = ()
        listen(more, "click", lambda _event: self.show_more())
        listen(empty, "click", self._drop_click)
        listen(self._related_toggle, "click", lambda _event: self.open_related(not self.related_open))
        for results in (listing, self._related_list):
            listen(results, "click", self._click)
            listen(results, "keydown", self._key)

    def clear(self) -> None:
        self.found, self.results, self.shown, self._drops = (), (), 0, ()
        self.numbers = ResultNumbers()
        self.strong, self.counts = 0, (0, 0)
        self._groups, self._group_of, self._containers, self._related_groups = (), (), {}, 0
        replace_children(self._list)
        replace_children(self._related_list)
        self._related.hidden = True
        self._set_related(False)
        self._related_drawn = False
        replace_children(self._empty)
        self._empty.hidden = True
        self.empty_shown = False
        self._more.hidden = True

    def show(self, results: "Sequence[Result]", *, by_time: bool = False) -> None:
        """Show the first page of ``results`` (replacing what was there), by conversation: the strong
        band as the list, the related band in its section, open only when nothing is strong.
        ``by_time``: the results are newest first (``sort:new``), and so is each thread."""
        self.clear()
        self.found = tuple(result for result in results if isinstance(result, dict))
        strong, related = split_bands(self.found)
        strong_groups = group_by_conversation(strong, by_time=by_time)
        related_groups = group_by_conversation(related, by_time=by_time)
        self._groups = tuple(strong_groups + related_groups)
        self._related_groups = len(related_groups)
        self.results = tuple(hit for group in self._groups for hit in group.hits)
        self.strong = sum(len(group.hits) for group in strong_groups)
        self.counts = (len(strong), len(related))
        self.numbers = ResultNumbers(self.results)
        self._group_of = tuple(index for index, group in enumerate(self._groups) for _hit in group.hits)
        self._reveal(min(AI_SEARCH_PAGE_SIZE, self.strong))
        if related:
            set_text(self._related_label, related_text(len(related)))
            set_text(self._related_note, no_strong_text(len(related)) if not strong else "")
            self._related_note.hidden = bool(strong)
            self._related.hidden = False
            # Nothing strong: the related results are all there is, so they are shown at once (a
            # closed section under "No strong match" would leave the reader a page with nothing).
            self.open_related(not strong)

    def show_more(self) -> None:
        self._reveal(min(self.shown + AI_SEARCH_RESULTS_PAGE_SIZE, self.strong))

    def open_related(self, is_open: bool) -> None:
        """Open (drawing it the first time) or close the related section; focus stays on its button."""
        if is_open and not self._related_drawn and self.strong < len(self.results):
            for index in range(self.strong, len(self.results)):
                self._place(
                    self._item(self.results[index], index + 1), self._group_of[index], last=self._last(index)
                )
            self._related_drawn = True
        self._set_related(is_open and self._related_drawn)

    def _set_related(self, is_open: bool) -> None:
        self.related_open = is_open
        self._related_toggle.setAttribute("aria-expanded", "true" if is_open else "false")
        self._related_list.hidden = not is_open

    def reveal(self, position: int) -> None:
        """Make sure the result at 1-based ``position`` is on the page (a citation points at it): past
        "Show more", or in the related section, which opens."""
        if self.shown < position <= self.strong:
            self._reveal(position)
        elif self.strong < position <= len(self.results) and not self.related_open:
            self.open_related(True)

    def visible(self, position: int) -> bool:
        """Whether the result at 1-based ``position`` is on the page now (listed, its section open)."""
        if 1 <= position <= self.strong:
            return position <= self.shown
        return self.strong < position <= len(self.results) and self.related_open

    def on_page(self) -> "tuple[Result, ...]":
        """The results on the page, in the list's order: the strong ones shown, then the related
        ones when their section is open (what "Ask AI about these results" is about)."""
        related = self.results[self.strong :] if self.related_open else ()
        return self.results[: self.shown] + related

    def hit(self, msg_id: str) -> "Result | None":
        """The result of this search for a message id (listed or not), if there is one."""
        return next((result for result in self.found if msg_id and message_id(result) == msg_id), None)

    def _last(self, index: int) -> bool:
        """Whether listed result ``index`` (0-based) is the last of its group."""
        return index + 1 == len(self.results) or self._group_of[index + 1] != self._group_of[index]

    def _reveal(self, upto: int) -> None:
        first_new = self.shown
        fresh = []
        for index in range(self.shown, upto):
            node = self._item(self.results[index], index + 1)
            self._place(node, self._group_of[index], last=self._last(index))
            fresh.append(node)
        self.shown = upto
        self._more.hidden = self.shown >= self.strong
        if fresh and first_new:
            fresh[0].focus()  # "Show more" moved focus to the first new result, not back to the top
        left = self.strong - self.shown
        set_text(self._more, f"Show more ({min(left, AI_SEARCH_RESULTS_PAGE_SIZE)} of {left} left)")

    def _place(self, node: "JsProxy", group_index: int, *, last: bool) -> None:
        """Put a result in its band's list, or in its thread's entry (made with its first hit); the
        entry ends with its "N more in this thread" button once its last listed hit is there."""
        group = self._groups[group_index]
        listing = self._list if group_index < len(self._groups) - self._related_groups else self._related_list
        if not group.grouped:
            listing.appendChild(node)
            return
        if group_index not in self._containers:
            hits = self._containers[group_index] = element("ol", class_="conversation-hits")
            listing.appendChild(
                element("li", self._heading(group), hits, class_="conversation", data_group=str(group_index))
            )
        self._containers[group_index].appendChild(node)
        if last and group.more:
            self._containers[group_index].parentElement.appendChild(
                element(
                    "button",
                    icon("thread"),
                    more_in_thread_text(len(group.more)),
                    type="button",
                    class_="conversation-more",
                    data_index=str(group_index),
                )
            )

    def _heading(self, group: "Conversation") -> "JsProxy":
        thread = group.thread or {}
        replies = replies_text(thread.get("replies"))
        return element(
            "header",
            icon("thread"),
            element("span", _text(thread.get("title")), class_="conversation-title", dir="auto"),
            element(
                "span",
                " · ".join(part for part in (room_label(group.hits[0].get("room")), replies) if part),
                class_="conversation-meta",
                dir="auto",
            ),
            class_="conversation-head",
        )

    def _item(self, result: "Result", position: int) -> "JsProxy":
        text = _text(result.get("text"))
        shown_text = text[:MAX_SOURCE_MESSAGE_LENGTH]
        spans = result.get("highlights")
        reason = reason_text(result.get("matchReason"), match_words(shown_text, spans))
        ts = _text(result.get("ts"))
        grouped = self._groups[self._group_of[position - 1]].grouped
        return element(
            "li",
            element(
                "article",
                element(
                    "header",
                    element("span", f"[{position}]", class_="result-number"),
                    element("span", room_label(result.get("room")), class_="result-room", dir="auto"),
                    author(result, "result-author"),
                    element("time", when(ts), datetime=ts, class_="result-time") if ts else None,
                    element("span", reason, class_="result-reason", dir="auto") if reason else None,
                    source_anchor(result),
                    class_="result-meta",
                ),
                thread_note(result, grouped=grouped),
                element(
                    "p",
                    *highlighted(shown_text, spans if isinstance(spans, list) else []),
                    "…" if len(text) > len(shown_text) else None,
                    class_="result-text",
                    dir="auto",
                ),
                file_chips(result),
            ),
            id=result_anchor(position),
            class_="result",
            tabindex="0",
            data_msg_id=message_id(result),
        )

    def position_of(self, msg_id: str) -> int | None:
        """The list's number of this message (its 1-based position), if the list holds it: what every
        answer's citation of it shows too."""
        return self.numbers.number(msg_id)

    # -- opening a result in its conversation ----------------------------------------------------

    def _position(self, node: "JsProxy | None") -> int | None:
        raw = _text(present(node.id)) if node is not None else ""
        number = raw[len(RESULT_ID_PREFIX) :] if raw.startswith(RESULT_ID_PREFIX) else raw
        if not _is_digits(number) or not self.visible(int(number)):
            return None
        return int(number)

    def _click(self, event: "JsProxy") -> None:
        if closest(event, "a.source-link") is not None:
            return  # the browser follows the link out, in a new tab; the result stays as it is
        more = closest(event, "button.conversation-more")
        if more is not None:
            index = data_index(more, len(self._groups))
            if index is not None and self._groups[index].more:
                self._on_open(self._groups[index].more[0], more, None)
            return
        item = closest(event, ".result")
        position = self._position(item)
        selection = present(js.window.getSelection())
        if item is None or position is None or (selection is not None and not selection.isCollapsed):
            return  # text being selected in a result is not a request to open it
        self._on_open(self.results[position - 1], item, position)

    def _key(self, event: "JsProxy") -> None:
        item = closest(event, ".result")
        if event.key != "Enter" or item is None or item != present(event.target):
            return
        position = self._position(item)
        if position is not None:
            event.preventDefault()
            self._on_open(self.results[position - 1], item, position)

    def show_empty(
        self,
        words: str,
        chips: "Sequence[FilterChip]",
        rooms: str,
        diagnosis: "Mapping[str, Any] | None" = None,
    ) -> None:
        """Nothing matched: say what was searched, and offer to drop each filter. With the server's
        diagnosis, say what each relaxation finds and offer each that finds something as one click."""
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
        labels = {chip.token: chip.label for chip in chips}
        relaxations = _relaxations(diagnosis, labels) if self._on_relax is not None else []
        self._relaxations = tuple(line for _label, line in relaxations)
        if relaxations:
            lines.append(element("p", _text((diagnosis or {}).get("text")), class_="diagnosis", dir="auto"))
            buttons = [
                element("button", label, type="button", class_="relax", data_index=str(index))
                for index, (label, _line) in enumerate(relaxations)
            ]
        else:
            buttons = [
                element(
                    "button",
                    f"Search without {chip.label}",
                    type="button",
                    class_="drop-filter",
                    data_index=str(index),
                )
                for index, chip in enumerate(chips)
            ]
        if buttons:
            lines.append(element("div", *buttons, class_="empty-actions"))
        replace_children(self._empty, *lines)
        self._empty.hidden = False
        self.empty_shown = True

    def _drop_click(self, event: "JsProxy") -> None:
        relax = data_index(closest(event, "button.relax"), len(self._relaxations))
        if relax is not None and self._on_relax is not None:
            self._on_relax(self._relaxations[relax])
            return
        index = data_index(closest(event, "button.drop-filter"), len(self._drops))
        if index is not None:
            self._on_drop(self._drops[index])


def _relaxations(diagnosis: "Mapping[str, Any] | None", labels: "Mapping[str, str]") -> list[tuple[str, str]]:
    """(button label, query line) of each relaxation the server says finds something, "Search without
    @dave (3)": each dropped token named as its chip is (`labels`: token -> label)."""
    found = diagnosis.get("relaxations") if isinstance(diagnosis, dict) else None
    offers = []
    for item in found if isinstance(found, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("q"), str) or not strip_text(item["q"]):
            continue
        count = item.get("count")
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            continue
        shown = f"{count}+" if item.get("more") is True else str(count)
        drop = _text(item.get("drop"))
        tokens = [t for t in item.get("tokens", []) if isinstance(t, str)] if isinstance(item.get("tokens"), list) else []
        if drop == "all":
            label = f"Search all your rooms with no filter ({shown})"
        elif drop == "quotes":
            label = f"Search the words in any order ({shown})"
        else:
            named = " ".join(labels.get(token, token) for token in tokens) or drop
            label = f"Search without {named} ({shown})"
        offers.append((label, item["q"]))
    return offers


def _is_digits(text: str) -> bool:
    """Whether ``text`` is ASCII digits only, as an id the page wrote has them (``str.isdigit`` also
    takes other scripts' digits on CPython, and MicroPython's str has no ``isascii``)."""
    return bool(text) and all(char in _DIGITS for char in text)
