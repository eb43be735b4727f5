"""The search box: its chips, its suggestion list and the lookups behind them.

Everything a keystroke needs runs here, in Python on the main thread, within a frame: the grammar
(``ai_search``) reads the box; filters finished before the caret move into chips; the token at the
caret picks the suggestions; room and people lookups come from :mod:`.lookups`, answered locally once
the caller's complete lists are known (otherwise one request, whose answer updates the list when it
arrives, if the token is still the same)::

    input          finished filters before the caret -> chips; the token at the caret -> suggestions
                   (rooms, people, date values narrowed by what is typed, has:/is:/sort: values);
                   a finished token whose value was refused -> a hint under the box
    empty box      the recent searches of this browser, and one option to clear them
    "Pick a date…" the last date suggestion: a native date input (arrows and digits, or its
                   calendar); Enter (or leaving it with a date) applies it, Escape goes back
    Enter / Tab    an active suggestion replaces the token at the caret (then becomes a chip)
    Backspace/Left at the start of the box -> the last chip
    chip label     the chip's token goes back into the box at the caret, to be edited

Dates are the browser's: chips show the days a value means on the browser's calendar day, and the
search sends the browser's time zone, in which the server reads the same words.

Carets: the DOM counts UTF-16 units, the grammar code points (:mod:`.caret` converts).

The box holds at most ``MAX_SEARCH_QUERY_LENGTH`` characters, the server's own limit (its
``maxlength``, which the server also writes into the page's HTML); from
``wording.COUNTER_FROM_CHARS`` before it, a line under the box counts what is left.
"""

import datetime
import json

import js

from ai_search import (
    DATE_PICKER_GROUP,
    MAX_SEARCH_QUERY_LENGTH,
    SearchFilters,
    apply_search_filter_token,
    build_applied_filter_chips,
    build_filter_hints,
    find_refused_search_filters,
    get_active_search_filter,
    insert_search_filter_token,
    merge_search_filters,
    remove_search_filter,
    strip_text,
    take_out_completed_search_filters,
)

from . import storage
from .api import ApiError
from .caret import index_to_utf16, utf16_to_index
from .chips import ChipsView
from .combobox import Combobox, is_composing
from .dom import listen, present, replace_children
from .ffi import JsException, settled
from .lookups import ROOM_LOOKUP, USER_LOOKUP, LookupCache, suggestions_for
from .recent import (
    CLEAR_RECENT_GROUP,
    RECENT_GROUP,
    RECENT_SEARCHES_KEY,
    encode_recent_searches,
    recent_search_suggestions,
    recent_searches,
    with_recent_search,
)
from .wording import counter_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from typing import Any

    from ai_search import ActiveSearchFilter, FilterChip, FilterSuggestion

    from .api import ApiClient
    from .ffi import JsProxy

__all__ = ["KEY_TIMINGS_KEPT", "SearchBox", "browser_time_zone", "browser_today"]

# Keystrokes whose timings are kept for the benchmark (window.aiSearchTimings), newest last.
KEY_TIMINGS_KEPT = 500
_ROUTES = {"room": "rooms.autocomplete.channelAndPrivate", "user": "users.autocomplete"}
_SELECTOR_FIELDS = {"room": "name", "user": "term"}


def browser_today() -> datetime.date:
    """The browser's calendar day, from its own clock and zone (what "today" means to the person)."""
    now = js.Date.new()
    return datetime.date(int(now.getFullYear()), int(now.getMonth()) + 1, int(now.getDate()))


def browser_time_zone() -> str:
    """The browser's IANA time zone (``Europe/Paris``); "" when the browser does not say."""
    zone = present(js.Intl.DateTimeFormat.new().resolvedOptions().timeZone)
    return zone if isinstance(zone, str) else ""


class SearchBox:
    def __init__(
        self,
        *,
        box: "JsProxy",
        chips: "JsProxy",
        listbox: "JsProxy",
        counter: "JsProxy",
        api: "ApiClient",
        signed_in: "Callable[[], bool]",
        spawn: "Callable[[Coroutine[Any, Any, Any]], None]",
        on_chip_removed: "Callable[[FilterChip, bool], None]",
        hints: "JsProxy | None" = None,
        on_recent: "Callable[[str], None] | None" = None,
        date_picker: "JsProxy | None" = None,
    ) -> None:
        self.box = box
        box.maxLength = MAX_SEARCH_QUERY_LENGTH
        self._counter = counter
        self._api = api
        self._signed_in = signed_in
        self._spawn = spawn
        self._on_chip_removed = on_chip_removed
        self._hints = hints
        self._hints_shown: tuple[str, ...] = ()
        self._on_recent = on_recent
        self._picker = date_picker
        self._picking = ""  # the date key the picker fills
        self.filters = SearchFilters()
        self.chips = ChipsView(
            chips, on_remove=self._remove_chip, on_leave=self.focus, on_edit=self._edit_chip
        )
        self.combo = Combobox(box, listbox, on_accept=self.accept_suggestion)
        self._lookups = {"room": LookupCache(ROOM_LOOKUP), "user": LookupCache(USER_LOOKUP)}
        self._pending: set[tuple[str, str]] = set()
        # The fallback script's lookups of the caller's rooms and people while they are still on
        # their way (a promise, and a function returning both lists once it settles): keystrokes
        # wait for them rather than ask again (see await_fallback_lookups).
        self._fallback: tuple[Any, Callable[[], tuple[list[Any] | None, list[Any] | None]]] | None = None
        # Per keystroke, in ms: "handler" is the Python work of an input event (parse, chips,
        # suggestions, DOM); "latency" runs from the event's creation to the end of that work.
        self.timings: JsProxy = js.JSON.parse('{"handler": [], "latency": []}')
        listen(box, "input", self._on_input)
        listen(box, "keydown", self._on_keydown)
        listen(box, "compositionend", lambda _event: self.refresh())
        listen(box, "blur", lambda _event: self.combo.close())
        listen(box, "focus", lambda _event: self._offer_recent())
        if date_picker is not None:
            listen(date_picker, "keydown", self._picker_key)
            listen(date_picker, "blur", lambda _event: self._picked(apply=True))

    # -- text, caret, filters ----------------------------------------------------------------------

    @property
    def text(self) -> str:
        return str(self.box.value)

    def caret(self, text: str) -> int:
        start = present(self.box.selectionStart)
        return utf16_to_index(text, int(start)) if isinstance(start, (int, float)) else len(text)

    def set_text(self, text: str, caret: int | None = None) -> None:
        self.box.value = text
        position = index_to_utf16(text, len(text) if caret is None else caret)
        self.box.setSelectionRange(position, position)
        self._count()

    def set_filters(self, filters: SearchFilters) -> None:
        self.filters = filters
        self.chips.render(build_applied_filter_chips(filters, today=browser_today()))

    def focus(self) -> None:
        self.box.focus()

    def _remove_chip(self, chip: "FilterChip", index: int) -> None:
        """A chip's remove button: drop that value, keep focus among the chips (else the box)."""
        self.set_filters(remove_search_filter(self.filters, chip.filter_key, chip.value))
        if not self.chips.focus_last():
            self.focus()
        self._on_chip_removed(chip, True)

    def _edit_chip(self, chip: "FilterChip", index: int) -> None:
        """A chip's label: its value leaves the chips and its token goes back into the box at the
        caret, still being typed (so its suggestions show), to be changed and finished again."""
        self.set_filters(remove_search_filter(self.filters, chip.filter_key, chip.value))
        text = self.text
        inserted = insert_search_filter_token(text, self.caret(text), chip.token)
        self.focus()
        self.set_text(inserted.text, inserted.caret)
        self.refresh()

    def drop(self, chip: "FilterChip") -> None:
        """Drop one filter value from elsewhere (the empty state's buttons)."""
        self.set_filters(remove_search_filter(self.filters, chip.filter_key, chip.value))
        self._on_chip_removed(chip, False)

    # -- typing ----------------------------------------------------------------------------------

    def _on_input(self, event: "JsProxy") -> None:
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
        typed = self.text
        text, caret, finished = take_out_completed_search_filters(typed, self.caret(typed))
        if finished is not None:
            self.set_text(text, caret)
            self.set_filters(merge_search_filters(self.filters, finished))
        active = get_active_search_filter(text, caret)
        self._hint(text[: active.start] + text[active.end :] if active is not None else text)
        if not strip_text(text):
            self._offer_recent()
            return
        self._suggest(active)

    def _hint(self, finished: str) -> None:
        """Say why a finished token stays words (`has:pdf`); the token being typed says nothing yet."""
        if self._hints is None:
            return
        hints = build_filter_hints(find_refused_search_filters(finished))
        if hints != self._hints_shown:
            self._hints_shown = hints
            replace_children(self._hints, *(hint + " " for hint in hints))
            self._hints.hidden = not hints

    # -- recent searches ---------------------------------------------------------------------------

    def recent(self) -> tuple[str, ...]:
        return recent_searches(storage.read(storage.LOCAL, RECENT_SEARCHES_KEY))

    def remember(self, line: str) -> None:
        """Keep `line` as this browser's newest recent search."""
        self._store_recent(with_recent_search(self.recent(), line))

    def _store_recent(self, kept: tuple[str, ...]) -> None:
        storage.write(storage.LOCAL, RECENT_SEARCHES_KEY, encode_recent_searches(kept) if kept else None)

    def _offer_recent(self) -> None:
        if self._on_recent is None or strip_text(self.text) or self.filters != SearchFilters():
            return
        self.combo.show(recent_search_suggestions(self.recent()))

    def _count(self) -> None:
        text = self.text
        words = counter_text(index_to_utf16(text, len(text)))  # maxlength counts UTF-16 units
        if words != str(self._counter.textContent):
            self._counter.textContent = words
        self._counter.hidden = not words

    def _on_keydown(self, event: "JsProxy") -> None:
        if self.combo.handle_key(event) or is_composing(event):
            return
        at_start = self.box.selectionStart == 0 and self.box.selectionEnd == 0
        if event.key in ("Backspace", "ArrowLeft") and at_start and self.chips.focus_last():
            event.preventDefault()

    # -- suggestions -------------------------------------------------------------------------------

    def _suggest(self, active: "ActiveSearchFilter | None") -> None:
        suggestions = suggestions_for(
            active, self._lookup, signed_in=self._signed_in(), today=browser_today()
        )
        if suggestions is None:
            self.combo.close()
        else:
            self.combo.show(suggestions)

    def accept_suggestion(self, suggestion: "FilterSuggestion") -> None:
        """Put the chosen value in place of the token at the caret; it then becomes a chip. A recent
        search runs again; "Clear recent searches" forgets them."""
        if suggestion.group == RECENT_GROUP and self._on_recent is not None:
            self._on_recent(suggestion.value)
            return
        if suggestion.group == CLEAR_RECENT_GROUP:
            self._store_recent(())
            self.combo.close()
            return
        if suggestion.group == DATE_PICKER_GROUP and self._picker is not None:
            self._open_picker(suggestion.filter_key)
            return
        text = self.text
        caret = self.caret(text)
        active = get_active_search_filter(text, caret)
        applied = apply_search_filter_token(text, active, suggestion.filter_key, suggestion.value, caret)
        self.set_text(applied.text, applied.caret)
        self.refresh()

    def close(self) -> None:
        self.combo.close()

    # -- the date picker ---------------------------------------------------------------------------

    def _open_picker(self, key: str) -> None:
        assert self._picker is not None
        self._picking = key
        text = self.text
        active = get_active_search_filter(text, self.caret(text))
        typed = active.lookup_text if active is not None else ""
        self._picker.value = typed if len(typed) == len("2026-11-03") else ""
        self._picker.hidden = False
        self._picker.focus()

    def _picker_key(self, event: "JsProxy") -> None:
        if event.key == "Enter":
            event.preventDefault()
            self._picked(apply=True)
        elif event.key == "Escape":
            event.preventDefault()
            self._picked(apply=False)

    def _picked(self, *, apply: bool) -> None:
        """Close the picker; with `apply` and a date in it, that date replaces the token at the caret."""
        if self._picker is None or not self._picking:
            return
        key, self._picking = self._picking, ""
        value = str(self._picker.value or "")
        self._picker.hidden = True
        self.focus()
        if apply and value:
            text = self.text
            caret = self.caret(text)
            applied = apply_search_filter_token(
                text, get_active_search_filter(text, caret), key, value, caret
            )
            self.set_text(applied.text, applied.caret)
            self.refresh()

    # -- lookups ---------------------------------------------------------------------------------

    def _lookup(self, kind: str, text: str) -> "list[Any] | None":
        known = self._lookups[kind].local(text)
        if known is None and self._fallback is None and (kind, text) not in self._pending:
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
        self._suggest_again(text)

    def _suggest_again(self, looked_up: "str | None" = None) -> None:
        """A lookup answered: the token being typed (if its text is ``looked_up``, or any token
        when None) gets its list now, while the box has focus."""
        current = self.text
        active = get_active_search_filter(current, self.caret(current))
        if (
            active is not None
            and (looked_up is None or active.lookup_text == looked_up)
            and self.box == present(js.document.activeElement)
        ):
            self._suggest(active)

    def seed_lookups(self, rooms: "list[Any] | None", people: "list[Any] | None") -> None:
        """The rooms and people the fallback script looked up (the empty lookup text) before Python."""
        for kind, items in (("room", rooms), ("user", people)):
            if items is not None:
                self._lookups[kind].store("", items)

    def await_fallback_lookups(
        self, lookup: "Any", lists: "Callable[[], tuple[list[Any] | None, list[Any] | None]]"
    ) -> None:
        """The fallback script's lookups (``lookup``, a promise) are still on their way when Python
        takes over, as on a fast start over a slow link: rather than ask again (one more round trip
        before the first suggestion), keystrokes wait for them, and ``lists()`` seeds the box once
        they are in."""
        self._fallback = (lookup, lists)
        self._spawn(self._fallback_lookups_in())

    async def _fallback_lookups_in(self) -> None:
        waiting = self._fallback
        if waiting is None:
            return
        try:  # noqa: SIM105 (MicroPython has no contextlib)
            await settled(waiting[0])
        except JsException:
            pass  # the fallback's lookups never reject; if they did, the box asks itself
        if self._fallback is not waiting:
            return  # seeded already, or another person signed in meanwhile
        self._fallback = None
        self.seed_lookups(*waiting[1]())
        self._suggest_again()

    async def prefetch(self) -> None:
        """The caller's rooms and people: complete lists answer later keystrokes locally. Lists the
        fallback script already fetched, or is fetching, are not asked for again."""
        await self._fallback_lookups_in()
        for kind in ("room", "user"):
            if self._lookups[kind].local("") is None:
                await self.fetch_lookup(kind, "")

    def forget(self) -> None:
        """Another person signed in (or nobody): their lookups are not this one's."""
        self._fallback = None
        for cache in self._lookups.values():  # portable: each is cleared, in any order
            cache.clear()
