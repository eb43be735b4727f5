"""The search page: the state of one tab and the wiring between box, chips, suggestions, results,
answer, sign-in and the address bar.

Everything a keystroke needs runs here in Python on the main thread and stays within a frame: the
grammar (``ai_search``) parses the box, finished filters move into chips, the token under the caret
picks suggestions, and room and people lookups come from :mod:`.lookups` (answered locally once the
caller's complete lists are known; otherwise one request whose answer arrives later). Network calls
are awaited (:mod:`.api`), never blocking.

Flow of the box::

    input   -> finished filters before the caret become chips; the token at the caret drives the list
    Enter   -> the active suggestion is applied, or the search runs: the box's filters join the chips,
               the query line (serialize_search_query) goes to ?q= and to ai.search
    popstate-> the query line of that history entry is loaded and searched again
"""

from __future__ import annotations

import asyncio
import datetime
import json
from collections.abc import Coroutine
from typing import Any

import js
from ai_search import (
    MAX_INTELLIGENT_SEARCH_RESULTS,
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
    parse_search_filter_text,
    remove_search_filter,
    serialize_search_query,
)
from pyodide.ffi import JsProxy

from . import url_state
from .answer import AnswerPanel, may_list_models
from .api import ApiClient, ApiError
from .auth import Session
from .caret import index_to_utf16, utf16_to_index
from .chips import ChipsView
from .combobox import Combobox, is_composing
from .dom import element, get, listen, replace_children, set_text
from .lookups import ROOM_LOOKUP, USER_LOOKUP, LookupCache
from .results import ResultsView

__all__ = ["KEY_TIMINGS_KEPT", "Page"]

# Keystroke handling times kept for the benchmark (window.aiSearchTimings), newest last.
KEY_TIMINGS_KEPT = 500
_ROUTES = {"room": "rooms.autocomplete.channelAndPrivate", "user": "users.autocomplete"}
_SELECTOR_FIELDS = {"room": "name", "user": "term"}


class Page:
    def __init__(self) -> None:
        self.session = Session.restore()
        self.api = ApiClient(self.session.credentials, on_unauthorized=self.session.expired)
        self.filters = SearchFilters()
        self.query = ""  # the query line of the search on screen
        self.words = ""
        self._search_seq = 0
        self._search_controller: JsProxy | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._lookups = {"room": LookupCache(ROOM_LOOKUP), "user": LookupCache(USER_LOOKUP)}
        self._pending_lookups: set[tuple[str, str]] = set()
        self._room_count: int | None = None
        self.timings: JsProxy = js.Array.new()

        self.box = get("search-box")
        self.status = get("status")
        self.chips = ChipsView(get("chips"), on_remove=self.remove_chip, on_leave=self.focus_box)
        self.combo = Combobox(self.box, get("suggestions"), on_accept=self.accept_suggestion)
        self.results = ResultsView(
            get("result-list"), get("show-more"), get("empty"), on_drop=lambda chip: self.remove_chip(chip, -1)
        )
        self.answer = AnswerPanel(
            panel=get("answer"),
            ask=get("ask"),
            label=get("answer-label"),
            body=get("answer-body"),
            error=get("answer-error"),
            picker=get("model-picker"),
            locate=self.results.position_of,
            cite=self.cite,
        )
        self.session.on_change = self._session_changed

    # -- start -----------------------------------------------------------------------------------

    def start(self) -> None:
        """Wire the events, take over from the fallback script without losing typed text, go live."""
        listen(self.box, "input", self._on_input)
        listen(self.box, "keydown", self._on_keydown)
        listen(self.box, "compositionend", lambda _e: self.refresh())
        listen(self.box, "blur", lambda _e: self.combo.close())
        listen(get("search-form"), "submit", self._on_submit)
        listen(get("login-form"), "submit", self._on_login)
        listen(get("logout"), "click", lambda _e: self._spawn(self.session.sign_out(self.api)))
        listen(get("ask"), "click", lambda _e: self._spawn(self._ask()))
        listen(js.document, "keydown", self._on_shortcut)
        url_state.on_query_change(self.load_query)
        js.window.aiSearchTimings = self.timings

        self._show_session()
        set_text(self.status, "Ready." if self.session.current else "Sign in to search.")
        self._take_over()
        get("fallback-results").hidden = True
        js.document.documentElement.dataset.py = "ready"
        js.performance.mark("ai-search:python-ready")
        js.window.__pyReadyT = js.performance.now()
        if self.session.current is not None:
            self._spawn(self._prefetch())

    def _take_over(self) -> None:
        """Start from what the fallback script and the address bar left, keeping the typed text.

        Results the fallback already fetched are shown as they are (no second request). The box
        is set from ``?q=`` only when it holds nothing else; text typed since is kept and parsed.
        """
        fallback = getattr(js.window, "aiSearchFallback", None)
        data = fallback.data.to_py() if fallback is not None and fallback.data else None
        fetched = str(fallback.q) if isinstance(data, dict) else ""
        url_query = url_state.read_query()
        typed = str(self.box.value).strip()
        if url_query and typed in ("", url_query.strip()):
            self.load_query(url_query, prefetched=data if fetched == url_query else None)
            return
        if fetched:
            parsed = parse_search_filter_text(fetched)
            self.query, self.words = serialize_search_query(parsed.search_text, parsed.filters), parsed.search_text
            self.set_filters(parsed.filters)
            self._show_results(data)
        self.refresh()  # what was typed since stays as typed; its finished filters become chips

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- the box -----------------------------------------------------------------------------------

    def _caret(self, text: str) -> int:
        start = self.box.selectionStart
        return utf16_to_index(text, int(start)) if start is not None else len(text)

    def _set_box(self, text: str, caret: int) -> None:
        self.box.value = text
        position = index_to_utf16(text, caret)
        self.box.setSelectionRange(position, position)

    def _on_input(self, event: JsProxy) -> None:
        if getattr(event, "isComposing", False):
            return  # the text is not final; compositionend refreshes
        started = js.performance.now()
        self.refresh()
        self.timings.push(js.performance.now() - started)
        if self.timings.length > KEY_TIMINGS_KEPT:
            self.timings.shift()

    def refresh(self) -> None:
        """Move the filters finished before the caret into chips, then update the suggestions."""
        text = str(self.box.value)
        caret = self._caret(text)
        before, after = text[:caret], text[caret:]
        completed = extract_completed_search_filters(before)
        if completed.has_completed_filters:
            before = completed.search_text
            if before.endswith(" ") and after.startswith(" "):
                after = after.lstrip(" ")
            text, caret = before + after, len(before)
            self._set_box(text, caret)
            self.set_filters(merge_search_filters(self.filters, completed.filters))
        self._suggest(get_active_search_filter(text, caret))

    def _suggest(self, active: ActiveSearchFilter | None) -> None:
        if active is None or self.session.current is None and active.key in ("in", "from"):
            self.combo.close()
            return
        kind = get_search_filter_operator(active.key).kind
        suggestions: tuple[FilterSuggestion, ...]
        if kind == "date":
            suggestions = build_filter_suggestions(active, today=datetime.date.today())
        elif kind == "room":
            rooms = self._lookup(kind, active.lookup_text)
            suggestions = build_filter_suggestions(active, rooms or ())
        else:
            users = self._lookup(kind, active.lookup_text)
            suggestions = merge_filter_suggestions(
                build_user_filter_suggestions(active, users or ()), build_filter_suggestions(active)
            )
        self.combo.show(suggestions)

    def _lookup(self, kind: str, text: str) -> list[Any] | None:
        known = self._lookups[kind].local(text)
        if known is None and (kind, text) not in self._pending_lookups:
            self._pending_lookups.add((kind, text))
            self._spawn(self._fetch_lookup(kind, text))
        return known

    async def _fetch_lookup(self, kind: str, text: str) -> None:
        try:
            data = await self.api.get(_ROUTES[kind], {"selector": json.dumps({_SELECTOR_FIELDS[kind]: text})})
        except ApiError:
            return
        finally:
            self._pending_lookups.discard((kind, text))
        items = data.get("items")
        self._lookups[kind].store(text, [i for i in items if isinstance(i, dict)] if isinstance(items, list) else [])
        current = str(self.box.value)
        active = get_active_search_filter(current, self._caret(current))
        if active is not None and active.lookup_text == text and self.box == js.document.activeElement:
            self._suggest(active)

    def accept_suggestion(self, suggestion: FilterSuggestion) -> None:
        """Put the chosen value in place of the token at the caret; it then becomes a chip."""
        text = str(self.box.value)
        caret = self._caret(text)
        applied = apply_search_filter_token(
            text, get_active_search_filter(text, caret), suggestion.filter_key, suggestion.value, caret
        )
        self._set_box(applied.text, applied.caret)
        self.refresh()

    def _on_keydown(self, event: JsProxy) -> None:
        if self.combo.handle_key(event) or is_composing(event):
            return
        key = event.key
        if key in ("Backspace", "ArrowLeft") and self.box.selectionStart == 0 and self.box.selectionEnd == 0:
            if self.chips.focus_last():
                event.preventDefault()

    def focus_box(self) -> None:
        self.box.focus()

    def _on_shortcut(self, event: JsProxy) -> None:
        key = str(event.key)
        target = event.target
        editing = bool(target.isContentEditable) or str(target.tagName) in ("INPUT", "TEXTAREA", "SELECT")
        if (key.lower() == "k" and (event.ctrlKey or event.metaKey)) or (key == "/" and not editing):
            event.preventDefault()
            self.box.focus()
            self.box.select()

    # -- chips and filters ---------------------------------------------------------------------

    def set_filters(self, filters: SearchFilters) -> None:
        self.filters = filters
        self.chips.render(build_applied_filter_chips(filters))

    def remove_chip(self, chip: FilterChip, index: int) -> None:
        """Drop one filter value; a search on screen runs again without it."""
        self.set_filters(remove_search_filter(self.filters, chip.filter_key, chip.value))
        if index >= 0 and not self.chips.focus_last():
            self.focus_box()
        if self.query:
            self.submit()

    # -- searching -------------------------------------------------------------------------------

    def _on_submit(self, event: JsProxy) -> None:
        event.preventDefault()
        self.combo.close()
        self.submit()

    def submit(self) -> None:
        """Search for the box plus the chips; the query line goes to the address bar."""
        parsed = parse_search_filter_text(str(self.box.value))
        self.set_filters(merge_search_filters(self.filters, parsed.filters))
        self._set_box(parsed.search_text, len(parsed.search_text))
        if not parsed.search_text:
            set_text(self.status, "Type words to search for; filters only narrow a search.")
            return
        query = serialize_search_query(parsed.search_text, self.filters)
        url_state.push_query(query)
        self._spawn(self.search(query))

    def load_query(self, query: str, prefetched: dict[str, Any] | None = None) -> None:
        """Show the search of a query line (from the address bar or history) and run it."""
        parsed = parse_search_filter_text(query)
        self.set_filters(parsed.filters)
        self._set_box(parsed.search_text, len(parsed.search_text))
        self.combo.close()
        if not parsed.search_text:
            self._clear_results()
            return
        line = serialize_search_query(parsed.search_text, parsed.filters)
        if prefetched is not None:
            self.query, self.words = line, parsed.search_text
            self._show_results(prefetched)
        else:
            self._spawn(self.search(line))

    def _clear_results(self) -> None:
        self._search_seq += 1
        self.query = self.words = ""
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
            get("login-user").focus()
            return
        controller = self._search_controller = js.AbortController.new()
        set_text(self.status, "Searching…")
        get("results").setAttribute("aria-busy", "true")
        try:
            data = await self.api.get(
                "ai.search",
                {"q": query, "intelligentCount": str(MAX_INTELLIGENT_SEARCH_RESULTS)},
                signal=controller.signal,
            )
        except ApiError as exc:
            if seq == self._search_seq:
                set_text(self.status, exc.message)
                get("results").setAttribute("aria-busy", "false")
            return
        if seq != self._search_seq:
            return
        self.query, self.words = query, parsed.search_text
        self._show_results(data)

    def _show_results(self, data: dict[str, Any]) -> None:
        section = get("results")
        section.hidden = False
        section.setAttribute("aria-busy", "false")
        found = data.get("intelligent")
        results = [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []
        meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
        retrieval = meta.get("retrieval") if isinstance(meta.get("retrieval"), dict) else {}
        notices = retrieval.get("notices") if isinstance(retrieval.get("notices"), list) else []
        replace_children(get("notices"), *(element("p", n) for n in notices if isinstance(n, str)))
        if results:
            self.results.show(results)
            count = len(results)
            set_text(self.status, f"{count} result{'s' if count != 1 else ''}.")
        else:
            chips = build_applied_filter_chips(self.filters)
            self.results.show_empty(self.words, chips, self._scope_text())
            set_text(self.status, "No results.")
        self.answer.reset(bool(results) and meta.get("answerGenerationConfigured") is not False)

    def _scope_text(self) -> str:
        rooms = self.filters.room_names
        if rooms:
            return "only " + ", ".join(f"#{name}" for name in rooms)
        if self._room_count is not None:
            return f"all {self._room_count} rooms and direct messages you are in"
        return "all the rooms and direct messages you are in"

    def cite(self, position: int) -> None:
        """A citation was followed: bring its result into view and mark it."""
        self.results.reveal(position)
        for node in js.document.querySelectorAll(".result.is-cited"):
            node.classList.remove("is-cited")
        try:
            node = get(f"result-{position}")
        except LookupError:
            return
        node.classList.add("is-cited")
        node.scrollIntoView(block="center")
        node.focus(preventScroll=True)

    async def _ask(self) -> None:
        shown = self.results.results[: self.results.shown]
        if not shown or not self.words:
            return
        await self.answer.run(self.api, self.words, shown)

    # -- session -------------------------------------------------------------------------------

    def _show_session(self) -> None:
        current = self.session.current
        js.document.documentElement.dataset.auth = "in" if current else "out"
        if current is not None:
            set_text(get("whoami"), f"{current.name or current.username} (@{current.username})")

    def _session_changed(self) -> None:
        self._show_session()
        for cache in self._lookups.values():
            cache.clear()
        self._room_count = None
        self._clear_results()
        set_text(get("login-error"), "")
        if self.session.current is not None:
            set_text(self.status, "Signed in. Ready.")
            self._spawn(self._prefetch())
            if url_state.read_query():
                self.load_query(url_state.read_query())
            self.box.focus()
        else:
            set_text(self.status, "Signed out.")
            self._model_picker_hidden()

    def _model_picker_hidden(self) -> None:
        get("model-picker").closest("label").hidden = True

    def _on_login(self, event: JsProxy) -> None:
        event.preventDefault()
        self._spawn(self._login())

    async def _login(self) -> None:
        user, password = get("login-user"), get("login-password")
        button = get("login-form").querySelector("button")
        button.disabled = True
        try:
            await self.session.sign_in(self.api, str(user.value).strip(), str(password.value))
            password.value = ""
        except ApiError as exc:
            set_text(get("login-error"), exc.message)
        finally:
            button.disabled = False

    async def _prefetch(self) -> None:
        """After sign-in: the caller's rooms and people (for local suggestions), room count, models."""
        await asyncio.gather(
            self._fetch_lookup("room", ""), self._fetch_lookup("user", ""), self._count_rooms(), self._models()
        )

    async def _count_rooms(self) -> None:
        try:
            data = await self.api.get("subscriptions.get")
        except ApiError:
            return
        update = data.get("update")
        if isinstance(update, list):
            self._room_count = sum(1 for s in update if isinstance(s, dict) and not s.get("banned"))

    async def _models(self) -> None:
        try:
            me = await self.api.get("me")
            permissions = me.get("permissions")
            if not may_list_models(frozenset(p for p in permissions if isinstance(p, str))):
                return
            data = await self.api.get("ai.llm.models")
        except (ApiError, TypeError):
            return  # no provider, or the server said no after all: no picker
        models = data.get("data")
        if isinstance(models, list) and models:
            self.answer.offer_models([m for m in models if isinstance(m, dict)], model_param=await self._model_param())

    async def _model_param(self) -> bool:
        """Whether the answer route takes a ``model`` (its OpenAPI request schema lists one)."""
        try:
            response = await js.fetch("/openapi.json")
            document = (await response.json()).to_py()
            schema = document["paths"]["/api/v1/ai.search.answer"]["post"]["requestBody"]["content"]
            return "model" in schema["application/json"]["schema"]["properties"]
        except Exception:  # noqa: BLE001 - any surprise in the document means "no"
            return False
