"""The search box: its chips, its suggestion list and the lookups behind them.

Everything a keystroke needs runs here, in Python on the main thread, within a frame: the grammar
(``ai_search``) reads the box; filters finished before the caret move into chips; the token at the
caret picks the suggestions; room and people lookups come from :mod:`.lookups`, answered locally once
the caller's complete lists are known (otherwise one request, whose answer updates the list when it
arrives, if the token is still the same)::

    input          finished filters before the caret -> chips; the token at the caret -> suggestions
    Enter / Tab    an active suggestion replaces the token at the caret (then becomes a chip)
    Backspace/Left at the start of the box -> the last chip

Carets: the DOM counts UTF-16 units, the grammar code points (:mod:`.caret` converts).

The box holds at most ``MAX_SEARCH_QUERY_LENGTH`` characters, the server's own limit (its
``maxlength``, which the server also writes into the page's HTML); from
``wording.COUNTER_FROM_CHARS`` before it, a line under the box counts what is left.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Coroutine
from typing import Any

import js
from pyodide.ffi import JsProxy

from ai_search import (
    MAX_SEARCH_QUERY_LENGTH,
    ActiveSearchFilter,
    FilterChip,
    FilterSuggestion,
    SearchFilters,
    apply_search_filter_token,
    build_applied_filter_chips,
    build_filter_suggestions,
    build_user_filter_suggestions,
    extract_completed_search_filters,
    get_active_search_filter,
    get_search_filter_operator,
    merge_filter_suggestions,
    merge_search_filters,
    remove_search_filter,
)

from .api import ApiClient, ApiError
from .caret import index_to_utf16, utf16_to_index
from .chips import ChipsView
from .combobox import Combobox, is_composing
from .dom import listen, present
from .lookups import ROOM_LOOKUP, USER_LOOKUP, LookupCache
from .wording import counter_text

__all__ = ["KEY_TIMINGS_KEPT", "SearchBox"]

# Keystrokes whose timings are kept for the benchmark (window.aiSearchTimings), newest last.
KEY_TIMINGS_KEPT = 500
_ROUTES = {"room": "rooms.autocomplete.channelAndPrivate", "user": "users.autocomplete"}
_SELECTOR_FIELDS = {"room": "name", "user": "term"}
# Filter kinds whose suggestions come from the server (so only for someone signed in).
_LOOKED_UP = frozenset(_ROUTES)


class SearchBox:
    def __init__(
        self,
        *,
        box: JsProxy,
        chips: JsProxy,
        listbox: JsProxy,
        counter: JsProxy,
        api: ApiClient,
        signed_in: Callable[[], bool],
        spawn: Callable[[Coroutine[Any, Any, Any]], None],
        on_chip_removed: Callable[[FilterChip, bool], None],
    ) -> None:
        self.box = box
        box.maxLength = MAX_SEARCH_QUERY_LENGTH
        self._counter = counter
        self._api = api
        self._signed_in = signed_in
        self._spawn = spawn
        self._on_chip_removed = on_chip_removed
        self.filters = SearchFilters()
        self.chips = ChipsView(chips, on_remove=self._remove_chip, on_leave=self.focus)
        self.combo = Combobox(box, listbox, on_accept=self.accept_suggestion)
        self._lookups = {"room": LookupCache(ROOM_LOOKUP), "user": LookupCache(USER_LOOKUP)}
        self._pending: set[tuple[str, str]] = set()
        # Per keystroke, in ms: "handler" is the Python work of an input event (parse, chips,
        # suggestions, DOM); "latency" runs from the event's creation to the end of that work.
        self.timings: JsProxy = js.JSON.parse('{"handler": [], "latency": []}')
        listen(box, "input", self._on_input)
        listen(box, "keydown", self._on_keydown)
        listen(box, "compositionend", lambda _event: self.refresh())
        listen(box, "blur", lambda _event: self.combo.close())

    # -- text, caret, filters ----------------------------------------------------------------------

    @property
    def text(self) -> str:
        return str(self.box.value)

    def caret(self, text: str) -> int:
        start = present(self.box.selectionStart)
        return utf16_to_index(text, int(start)) if isinstance(start, int | float) else len(text)

    def set_text(self, text: str, caret: int | None = None) -> None:
        self.box.value = text
        position = index_to_utf16(text, len(text) if caret is None else caret)
        self.box.setSelectionRange(position, position)
        self._count()

    def set_filters(self, filters: SearchFilters) -> None:
        self.filters = filters
        self.chips.render(build_applied_filter_chips(filters))

    def focus(self) -> None:
        self.box.focus()

    def _remove_chip(self, chip: FilterChip, index: int) -> None:
        """A chip's remove button: drop that value, keep focus among the chips (else the box)."""
        self.set_filters(remove_search_filter(self.filters, chip.filter_key, chip.value))
        if not self.chips.focus_last():
            self.focus()
        self._on_chip_removed(chip, True)

    def drop(self, chip: FilterChip) -> None:
        """Drop one filter value from elsewhere (the empty state's buttons)."""
        self.set_filters(remove_search_filter(self.filters, chip.filter_key, chip.value))
        self._on_chip_removed(chip, False)

    # -- typing ----------------------------------------------------------------------------------

    def _on_input(self, event: JsProxy) -> None:
        if getattr(event, "isComposing", False):
            return  # the text is not final; compositionend refreshes
        started = js.performance.now()
        self.refresh()
        ended = js.performance.now()
        for series, value in (
            (self.timings.handler, ended - started),
            (self.timings.latency, ended - event.timeStamp),
        ):
            series.push(value)
            if series.length > KEY_TIMINGS_KEPT:
                series.shift()

    def refresh(self) -> None:
        """Move the filters finished before the caret into chips, then update the suggestions."""
        self._count()
        text = self.text
        caret = self.caret(text)
        before, after = text[:caret], text[caret:]
        completed = extract_completed_search_filters(before)
        if completed.has_completed_filters:
            before = completed.search_text
            if before.endswith(" ") and after.startswith(" "):
                after = after.lstrip(" ")
            text, caret = before + after, len(before)
            self.set_text(text, caret)
            self.set_filters(merge_search_filters(self.filters, completed.filters))
        self._suggest(get_active_search_filter(text, caret))

    def _count(self) -> None:
        text = self.text
        words = counter_text(index_to_utf16(text, len(text)))  # maxlength counts UTF-16 units
        if words != str(self._counter.textContent):
            self._counter.textContent = words
        self._counter.hidden = not words

    def _on_keydown(self, event: JsProxy) -> None:
        if self.combo.handle_key(event) or is_composing(event):
            return
        at_start = self.box.selectionStart == 0 and self.box.selectionEnd == 0
        if event.key in ("Backspace", "ArrowLeft") and at_start and self.chips.focus_last():
            event.preventDefault()

    # -- suggestions -------------------------------------------------------------------------------

    def _suggest(self, active: ActiveSearchFilter | None) -> None:
        kind = get_search_filter_operator(active.key).kind if active is not None else ""
        if active is None or (kind in _LOOKED_UP and not self._signed_in()):
            self.combo.close()
            return
        suggestions: tuple[FilterSuggestion, ...]
        if kind == "room":
            suggestions = build_filter_suggestions(active, self._lookup(kind, active.lookup_text) or ())
        elif kind == "user":
            users = self._lookup(kind, active.lookup_text) or ()
            suggestions = merge_filter_suggestions(
                build_user_filter_suggestions(active, users), build_filter_suggestions(active)
            )
        else:  # dates: the local calendar day (Pyodide's clock follows the browser's time zone)
            suggestions = build_filter_suggestions(active, today=datetime.date.today())
        self.combo.show(suggestions)

    def accept_suggestion(self, suggestion: FilterSuggestion) -> None:
        """Put the chosen value in place of the token at the caret; it then becomes a chip."""
        text = self.text
        caret = self.caret(text)
        active = get_active_search_filter(text, caret)
        applied = apply_search_filter_token(text, active, suggestion.filter_key, suggestion.value, caret)
        self.set_text(applied.text, applied.caret)
        self.refresh()

    def close(self) -> None:
        self.combo.close()

    # -- lookups ---------------------------------------------------------------------------------

    def _lookup(self, kind: str, text: str) -> list[Any] | None:
        known = self._lookups[kind].local(text)
        if known is None and (kind, text) not in self._pending:
            self._pending.add((kind, text))
            self._spawn(self.fetch_lookup(kind, text))
        return known

    async def fetch_lookup(self, kind: str, text: str) -> None:
        """Ask the autocomplete route; refresh the list if the same token is still being typed."""
        selector = json.dumps({_SELECTOR_FIELDS[kind]: text})
        try:
            data = await self._api.get(_ROUTES[kind], {"selector": selector})
        except ApiError:
            return
        finally:
            self._pending.discard((kind, text))
        items = data.get("items")
        self._lookups[kind].store(
            text, [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
        )
        current = self.text
        active = get_active_search_filter(current, self.caret(current))
        if (
            active is not None
            and active.lookup_text == text
            and self.box == present(js.document.activeElement)
        ):
            self._suggest(active)

    def seed_lookups(self, rooms: list[Any] | None, people: list[Any] | None) -> None:
        """The rooms and people the fallback script looked up (the empty lookup text) before Python."""
        for kind, items in (("room", rooms), ("user", people)):
            if items is not None:
                self._lookups[kind].store("", items)

    async def prefetch(self) -> None:
        """The caller's rooms and people: complete lists answer later keystrokes locally. Lists the
        fallback script already fetched are not asked for again."""
        for kind in ("room", "user"):
            if self._lookups[kind].local("") is None:
                await self.fetch_lookup(kind, "")

    def forget(self) -> None:
        """Another person signed in (or nobody): their lookups are not this one's."""
        for cache in self._lookups.values():
            cache.clear()
