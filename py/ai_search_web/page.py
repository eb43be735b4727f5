"""The search page: one tab's state and the wiring between the box, results, answer, sign-in and the
address bar. The box itself (chips, suggestions, lookups) is :mod:`.search_box`.

    Enter      -> the search runs: the box's filters join the chips, the query line
                  (serialize_search_query) goes to ?q= (a history entry) and to ai.search
    a result   -> it opens in its conversation (:mod:`.context`; &msg= is a history entry), as do
                  an answer's citations and a permalink (?msg=ID)
    popstate   -> that entry's query line is searched again when it is another one, and its
                  message opened or the view closed: Back from a message shows the results as they were
    start      -> take over from static/fallback.js without losing typed text, found results or
                  the rooms and people it already looked up

The page says what is true: a search that failed leaves the results of the one before on screen
marked as not updated, with a Retry button, and Ask AI waits for a search that worked. Network calls
are awaited (:mod:`.api`), never blocking the page; everything runs behind :mod:`.boundary`.
"""

import asyncio

import js

from ai_search import (
    MAX_INTELLIGENT_SEARCH_RESULTS,
    MAX_SEARCH_QUERY_LENGTH,
    build_applied_filter_chips,
    drop_unfinished_search_filters,
    fold_text,
    merge_search_filters,
    parse_search_filter_text,
    serialize_search_query,
    strip_text,
)

from . import url_state
from .answer import AnswerPanel
from .api import ApiClient, ApiError
from .auth import Session
from .boundary import spawn
from .context import ContextView
from .dom import element, get, listen, present, replace_children, set_text
from .ffi import JsProxy, js_object, to_py
from .message_parts import list_field, object_field
from .results import ResultsView, result_anchor
from .search_box import SearchBox, browser_time_zone
from .signin import SignInForm
from .wording import RERANK_FAILED_TEXT, bands_text, count_text, coverage_text, too_long_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Coroutine, Mapping
    from typing import Any

    from ai_search import FilterChip

    from .context import Span

__all__ = ["Page"]


class Page:
    def __init__(self) -> None:
        self.session = Session.restore()
        self.api = ApiClient(self.session.credentials, on_unauthorized=self.session.expired)
        self.query = ""  # the query line of the results on screen
        self.words = ""
        self.stale = False  # the results on screen are older than the last search, which failed
        self._failed_query = ""
        self._search_seq = 0
        self._search_controller: JsProxy | None = None
        self._room_count: int | None = None
        self.searches_done = 0  # <html data-searches>: lets tests and benchmarks wait for an answer

        self.status = get("status")
        self.box = SearchBox(
            box=get("search-box"),
            chips=get("chips"),
            listbox=get("suggestions"),
            counter=get("search-count"),
            api=self.api,
            signed_in=lambda: self.session.current is not None,
            spawn=self._spawn,
            on_chip_removed=self._chip_removed,
            hints=get("search-hints"),
            on_recent=self.search_line,
            date_picker=get("date-picker"),
        )
        self.results = ResultsView(
            get("result-list"),
            get("show-more"),
            get("empty"),
            on_drop=self.box.drop,
            on_open=self.open_result,
            on_relax=self.search_line,
            related=get("related"),
        )
        self.context = ContextView(
            self.api,
            hits=self.results.hit,
            locate=self.result_element,
            spawn=self._spawn,
            embedded=js.document.documentElement.getAttribute("data-mode") == "embed",
        )
        self.answer = AnswerPanel(
            self.api,
            picker=get("model-picker"),
            locate=self.results.position_of,
            cite=self.cite,
            spawn=self._spawn,
        )
        self.signin = SignInForm(self.session, self.api)
        self.session.on_change = self._session_changed

    # -- start -----------------------------------------------------------------------------------

    def start(self) -> None:
        """Wire the events, take over from the fallback script without losing typed text, go live."""
        listen(get("search-form"), "submit", self._on_submit)
        listen(get("ask"), "click", lambda _e: self._spawn(self._ask(), "asking for an answer"))
        listen(get("retry"), "click", lambda _e: self._retry())
        listen(get("sort-toggle"), "click", lambda _e: self._toggle_sort())
        listen(js.document, "keydown", self._on_shortcut)
        url_state.on_history_change(self.follow_history)
        js.window.aiSearchTimings = self.box.timings

        self._show_session()
        set_text(self.status, "Ready." if self.session.current else "Sign in to search.")
        self._take_over()
        if url_state.read_message():
            self._open_linked()
        if url_state.read_answer():
            self._open_shared_answer()
        get("fallback-results").hidden = True
        js.document.documentElement.dataset.py = "ready"
        js.performance.mark("ai-search:python-ready")
        if self.session.current is not None:
            self._spawn(self._prefetch(), "looking up rooms and people")

    def _take_over(self) -> None:
        """Start from what the fallback script and the address bar left, keeping the typed text.

        Results the fallback already fetched are shown as they are (no second request), and the
        rooms and people it looked up answer the box's suggestions at once. The box is set from
        ``?q=`` only when it holds nothing else; text typed since is kept and parsed. The chips the
        keystroke stage made (:mod:`.keys`, whose text left the box) stay chips.
        """
        fallback = present(getattr(js.window, "aiSearchFallback", None))
        self.box.seed_lookups(
            _items(fallback, "rooms") if fallback is not None else None,
            _items(fallback, "people") if fallback is not None else None,
        )
        lookup = present(getattr(fallback, "lookup", None)) if fallback is not None else None
        if fallback is not None and lookup is not None:
            self.box.await_fallback_lookups(
                lookup, lambda: (_items(fallback, "rooms"), _items(fallback, "people"))
            )
        data = _js_dict(fallback.data) if fallback is not None else None
        fetched = str(fallback.q) if fallback is not None and data is not None else ""
        url_query = url_state.read_query()
        typed = strip_text(self.box.text)
        chipped = _stage_filters()
        if url_query and typed in ("", strip_text(url_query)) and not chipped:
            self.load_query(url_query, prefetched=data if fetched == url_query else None)
            return
        if fetched and data is not None:
            parsed = parse_search_filter_text(fetched)
            self.query, self.words = (
                serialize_search_query(parsed.search_text, parsed.filters),
                parsed.search_text,
            )
            self.box.set_filters(parsed.filters)
            self._show_results(data)
        if chipped:  # the keystroke stage's chips stay chips
            filters = parse_search_filter_text(chipped).filters
            self.box.set_filters(merge_search_filters(self.box.filters, filters))
        self.box.refresh()  # what was typed since stays as typed; its finished filters become chips

    def _spawn(self, coroutine: "Coroutine[Any, Any, Any]", where: str = "a background task") -> None:
        spawn(coroutine, where)

    def _on_shortcut(self, event: JsProxy) -> None:
        """``/`` (outside a field) or Ctrl/Cmd+K: to the box, its text selected."""
        key = str(event.key)
        target = present(event.target)
        editing = target is not None and (
            bool(getattr(target, "isContentEditable", False))
            or str(getattr(target, "tagName", "")) in ("INPUT", "TEXTAREA", "SELECT")
        )
        if (fold_text(key) == "k" and (event.ctrlKey or event.metaKey)) or (key == "/" and not editing):
            event.preventDefault()
            self.box.focus()
            self.box.box.select()

    def _toggle_sort(self) -> None:
        """Relevance or newest first: the same as typing or removing ``sort:new``."""
        newest = self.box.filters.sort != "new"
        self.box.set_filters(self.box.filters.replace(sort="new" if newest else None))
        self._show_sort()
        if self.query:
            self.submit()

    def _show_sort(self) -> None:
        toggle = get("sort-toggle")
        newest = self.box.filters.sort == "new"
        toggle.setAttribute("aria-pressed", "true" if newest else "false")
        set_text(toggle, "Sort: newest first" if newest else "Sort: most relevant first")

    def _chip_removed(self, _chip: "FilterChip", _by_keyboard_or_click: bool) -> None:
        """A filter was dropped; a search on screen runs again without it."""
        if self.query:
            self.submit()

    # -- searching -------------------------------------------------------------------------------

    def _on_submit(self, event: JsProxy) -> None:
        event.preventDefault()
        self.box.close()
        self.submit()

    def submit(self) -> None:
        """Search for the box plus the chips; the query line goes to the address bar (the message
        open stays in the entry before, for Back)."""
        self.context.close(history=False, restore_focus=False)
        parsed = parse_search_filter_text(drop_unfinished_search_filters(self.box.text))
        self.box.set_filters(merge_search_filters(self.box.filters, parsed.filters))
        self.box.set_text(parsed.search_text)
        if not parsed.search_text:
            set_text(self.status, "Type words to search for; filters only narrow a search.")
            return
        if len(parsed.search_text) > MAX_SEARCH_QUERY_LENGTH:
            set_text(self.status, too_long_text(len(parsed.search_text)))
            return
        query = serialize_search_query(parsed.search_text, self.box.filters)
        url_state.push_query(query)
        self._spawn(self.search(query), "a search")

    def search_line(self, line: str) -> None:
        """Search for a whole line offered by the page (a relaxation, a recent search): a new
        history entry, as a search typed and submitted is."""
        url_state.push_query(line)
        self.load_query(line)

    def load_query(self, query: str, prefetched: "dict[str, Any] | None" = None) -> None:
        """Show the search of a query line (from the address bar or history) and run it."""
        parsed = parse_search_filter_text(drop_unfinished_search_filters(query))
        self.box.set_filters(parsed.filters)
        self.box.set_text(parsed.search_text)
        self.box.close()
        if not parsed.search_text:
            self._clear_results()
            return
        if len(parsed.search_text) > MAX_SEARCH_QUERY_LENGTH:
            set_text(self.status, too_long_text(len(parsed.search_text)))
            return
        line = serialize_search_query(parsed.search_text, parsed.filters)
        if prefetched is not None:
            self.query, self.words = line, parsed.search_text
            self._show_results(prefetched)
        else:
            self._spawn(self.search(line), "a search")

    def _clear_results(self) -> None:
        self._search_seq += 1
        self.query = self.words = ""
        self._set_stale(False)
        self.results.clear()
        self.answer.reset(False)
        get("results").hidden = True

    async def search(self, query: str) -> None:
        parsed = parse_search_filter_text(query)
        self._search_seq += 1
        seq = self._search_seq
        if self._search_controller is not None:
            self._search_controller.abort()
        if self.session.current is None:
            set_text(self.status, "Sign in to search.")
            self.signin.focus()
            return
        controller = self._search_controller = js.AbortController.new()
        set_text(self.status, "Searching…")
        get("results").setAttribute("aria-busy", "true")
        params = {"q": query, "intelligentCount": str(MAX_INTELLIGENT_SEARCH_RESULTS)}
        zone = browser_time_zone()
        if zone:
            params["tz"] = zone  # the server reads after:yesterday on this browser's calendar
        try:
            data = await self.api.get("ai.search", params, signal=controller.signal)
        except ApiError as exc:
            if seq == self._search_seq:
                self._failed(query, exc)
            return
        if seq != self._search_seq:
            return
        self.query, self.words = query, parsed.search_text
        self.box.remember(query)
        self._show_results(data)

    def _failed(self, query: str, exc: ApiError) -> None:
        """A search did not answer: say why, offer Retry, and mark what is on screen as old."""
        get("results").setAttribute("aria-busy", "false")
        set_text(self.status, exc.message)
        self._failed_query = query
        if self.session.current is None:
            self._set_stale(False)  # the session ended: nothing to retry until signed in again
        else:
            self._set_stale(True)
        self._searched()

    def _retry(self) -> None:
        if self._failed_query:
            self._spawn(self.search(self._failed_query), "a search")

    def _set_stale(self, stale: bool) -> None:
        """Show or clear the failed-search notice; what is on screen (results, or the empty state of
        a search that found nothing) is marked not updated."""
        found = bool(self.results.results)
        shown = bool(self.query) and (found or self.results.empty_shown)
        self.stale = stale and shown
        notice = get("search-failed")
        notice.hidden = not stale
        said = (
            f"The results below are still those of “{self.words}”: not updated."
            if found
            else f"Below is still the search for “{self.words}”, which found nothing: not updated."
        )
        set_text(get("search-failed-text"), said if self.stale else "")
        get("results").dataset.stale = "true" if self.stale else "false"
        self.answer.set_stale(self.stale)
        if not stale:
            self._failed_query = ""

    def _show_results(self, data: "dict[str, Any]") -> None:
        self._set_stale(False)
        section = get("results")
        section.hidden = False
        section.setAttribute("aria-busy", "false")
        found = data.get("intelligent")
        results = [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []
        meta = object_field(data, "meta")
        retrieval = object_field(meta, "retrieval")
        notices = [n for n in list_field(retrieval, "notices") if isinstance(n, str)]
        stage = object_field(retrieval, "secondStage")
        if stage.get("state") == "failed" and not notices:
            notices.append(RERANK_FAILED_TEXT)  # the server says so in its notices; if not, the page does
        replace_children(get("notices"), *(element("p", n, dir="auto") for n in notices))
        self._show_receipt(meta)
        self._show_sort()
        if results:
            self.results.show(results, by_time=self.box.filters.sort == "new")
            strong, related = self.results.counts
            # With bands (the server calibrated them) the count says how many are strong and how many
            # only related, never "50+"; without, every result is one of the list, up to the cap.
            banded = isinstance(retrieval.get("bands"), dict) or any("band" in r for r in results)
            set_text(self.status, bands_text(strong, related) if banded else count_text(len(results)))
        else:
            chips = build_applied_filter_chips(self.box.filters)
            diagnosis = diagnosed if isinstance(diagnosed := meta.get("diagnosis"), dict) else None
            self.results.show_empty(self.words, chips, self._scope_text(), diagnosis)
            set_text(self.status, "No results.")
        self.answer.reset(bool(results) and meta.get("answerGenerationConfigured") is not False)
        self._searched()

    def _show_receipt(self, meta: "Mapping[str, Any]") -> None:
        """What the search looked through ("searched 12 rooms you are in, 1 Jul – today"), the names
        it could not search by (the server words both), and how much of the workspace re-ranking
        covers yet while its vectors are being computed ("re-ranking covers 62% of messages")."""
        scope = object_field(meta, "scope")
        unknown = list_field(scope, "unknown")
        stage = object_field(object_field(meta, "retrieval"), "secondStage")
        # Said while the stage ran (a failed one's notice says what happened instead).
        covers = coverage_text(stage.get("coverage")) if stage.get("state") == "ok" else ""
        lines = [scope.get("text")] + list(unknown) + [covers]  # noqa: RUF005 (MicroPython has no `*` in a list)
        said = [line for line in lines if isinstance(line, str) and line]
        receipt = get("search-receipt")
        replace_children(receipt, *(element("span", line, dir="auto") for line in said))
        receipt.hidden = not said

    def _searched(self) -> None:
        self.searches_done += 1
        js.document.documentElement.dataset.searches = str(self.searches_done)

    def _scope_text(self) -> str:
        rooms = self.box.filters.room_names
        if rooms:
            return "only " + ", ".join(f"#{name}" for name in rooms)
        if self._room_count is not None:
            return f"all {self._room_count} rooms and direct messages you are in"
        return "all the rooms and direct messages you are in"

    # -- messages in their conversation ------------------------------------------------------------

    def follow_history(self) -> None:
        """Back/Forward: search the entry's query line if it is not the one on screen, and show its
        message (or none)."""
        query, msg_id = url_state.read_query(), url_state.read_message()
        if query != self.query:
            self.load_query(query)
        if msg_id and self.session.current is not None:
            if msg_id != self.context.msg_id:
                self.context.open(msg_id, hit=self.results.hit(msg_id), history="none")
        else:
            self.context.close(history=False)

    def _open_linked(self) -> None:
        """The address names a message (a permalink): open it, once signed in."""
        msg_id = url_state.read_message()
        if self.session.current is None:
            set_text(self.status, "Sign in to see the linked message.")
        elif msg_id:
            self.context.open(msg_id, hit=self.results.hit(msg_id), history="none")

    def _open_shared_answer(self) -> None:
        """The address names a kept answer (a shared link): show it as this reader may see it."""
        if self.session.current is None:
            set_text(self.status, "Sign in to see the shared answer.")
        else:
            self._spawn(self._load_shared_answer(url_state.read_answer()), "opening a shared answer")

    async def _load_shared_answer(self, answer_id: str) -> None:
        try:
            data = await self.api.get("ai.search.answer.get", {"answerId": answer_id})
        except ApiError as exc:
            set_text(self.status, exc.message)
            return
        self.answer.show_kept(data, results=bool(self.results.on_page()))
        set_text(self.status, "A shared answer.")

    def result_element(self, msg_id: str) -> JsProxy | None:
        """The listed result of a message, if it is on the page."""
        position = self.results.position_of(msg_id)
        if position is None or not self.results.visible(position):
            return None
        return present(js.document.getElementById(result_anchor(position)))

    def open_result(self, result: "Mapping[str, Any]", invoker: JsProxy, position: int | None) -> None:
        """A result was clicked or Enter pressed on it (or a thread's "N more": no position): its
        conversation."""
        self.context.show_result(
            result, invoker=invoker, position=position, via="result" if position is not None else "more"
        )

    def cite(self, msg_id: str, position: int | None, span: "Span | None" = None) -> None:
        """A citation was followed: mark its result (``position``, when the message is one) and
        open the message in its conversation, the supporting ``span`` (code points of its text)
        marked when the answer gave one."""
        for node in js.document.querySelectorAll(".result.is-cited"):
            node.classList.remove("is-cited")
        invoker = present(js.document.activeElement)
        if position is not None and 1 <= position <= len(self.results.results):
            hidden = not self.results.visible(position)
            self.results.reveal(position)  # past "Show more", or in the related section, which opens
            cited = present(js.document.getElementById(result_anchor(position)))
            if cited is not None:  # reveal() just listed it; a page without it marks nothing
                cited.classList.add("is-cited")
                if hidden:  # it was not on screen: the list shows where it is, beside the conversation
                    cited.scrollIntoView(js_object(block="center"))
            result: Mapping[str, Any] = self.results.results[position - 1]
            self.context.show_result(result, invoker=invoker, position=position, span=span, via="citation")
        else:
            # A message of a source's conversation, or of a follow-up's own search: not listed.
            self.context.show_result(
                {"_id": msg_id}, invoker=invoker, position=None, span=span, via="citation", preview=False
            )

    async def _ask(self) -> None:
        # The results on the page; with nothing strong and the related section closed again, the
        # related ones still (they are all the search found, and the button says "about these results").
        shown = self.results.on_page() or self.results.results
        if not shown or not self.words or self.stale:
            return
        await self.answer.run(self.words, shown)

    # -- session -------------------------------------------------------------------------------

    def _show_session(self) -> None:
        current = self.session.current
        js.document.documentElement.dataset.auth = "in" if current else "out"
        self.signin.show()

    def _session_changed(self) -> None:
        self._show_session()
        self.box.forget()
        self._room_count = None
        self.context.reset()
        self._clear_results()
        if self.session.current is not None:
            set_text(self.status, "Signed in. Ready.")
            self._spawn(self._prefetch(), "looking up rooms and people")
            if url_state.read_query():
                self.load_query(url_state.read_query())
            self.box.focus()
            if url_state.read_message():
                self._open_linked()
            if url_state.read_answer():
                self._open_shared_answer()
        else:
            ended = (
                "Your session has ended. Sign in again." if self.session.ended == "expired" else "Signed out."
            )
            set_text(self.status, ended)
            self.answer.hide_models()

    async def _prefetch(self) -> None:
        """After sign-in: the caller's rooms and people (for local suggestions), room count, models."""
        await asyncio.gather(self.box.prefetch(), self._count_rooms(), self.answer.discover_models(self.api))
        js.window.aiSearchPrefetched = True

    async def _count_rooms(self) -> None:
        try:
            data = await self.api.get("subscriptions.get")
        except ApiError:
            return
        update = data.get("update")
        if isinstance(update, list):
            self._room_count = sum(1 for s in update if isinstance(s, dict) and not s.get("banned"))


def _js_dict(value: "Any") -> "dict[str, Any] | None":
    """A JavaScript object the fallback script left, as a dict (None for anything else)."""
    value = present(value)
    if value is None or not isinstance(value, JsProxy):
        return None
    converted = to_py(value)
    return converted if isinstance(converted, dict) else None


def _stage_filters() -> str:
    """The keystroke stage's chips as a query line (static/keys-boot.mjs), "" without them."""
    stage = present(getattr(js.window, "aiSearchKeys", None))
    line = present(getattr(stage, "filters", None)) if stage is not None else None
    return strip_text(line) if isinstance(line, str) else ""


def _items(fallback: JsProxy, name: str) -> "list[Any] | None":
    """The fallback's complete lookup answer ``name`` (rooms or people), or None if it has none."""
    value = present(getattr(fallback, name, None))
    converted = to_py(value) if value is not None and isinstance(value, JsProxy) else None
    return [item for item in converted if isinstance(item, dict)] if isinstance(converted, list) else None
