"""The answer panel: a cited answer over the results on the page, streamed as it is written, and
its follow-ups.

"Ask" sends the question (the search words) and the ids and scores of the results shown, never
their texts (the server loads them under the caller's permissions). The server first says which
message each number of the answer names (the ``sources`` event), then the answer streams in as
``delta`` events and is replaced by the ``done`` event's final text. Each ``[N]`` becomes a link
showing the result list's own number of the message it cites, so a message has one number on the
page in every answer and follow-up, whatever the server numbered it; a message the list does not
hold is named by its author and room instead (``answer_text.citation_link``). Following a link
opens that message in its conversation (the context view), with the span of its text that supports
the sentence marked (the citation check's ``spans``). A sentence the
check finds unsupported by the sources it cites is marked (a wavy underline and a flag whose label
says why) and the panel says how many there are. Answer text is untrusted like any message: it only
ever becomes text nodes and these links.

A follow-up ("and who fixed it?") is sent with the earlier turns, each its question and the ids of
the messages its answer cited, never texts (``ai_search.append_turn``: the last
``MAX_ANSWER_TURNS``); the server searches again and answers across both. Earlier turns stay above
the current one, questions and answers, their citations still open. Thumbs and "Copy link" are
:mod:`.answer_actions`; a shared answer (``/?answer=ID``) opens here too (:meth:`AnswerPanel.show_kept`).

An answer the server marks ``truncated`` (the model stopped at its length limit) is shown as cut short,
with a notice under it. An extractive answer (no language model configured) is labelled as such. A
caller who may list the
provider's models gets a picker; the chosen model is sent only to a server whose answer route
accepts one (read from its OpenAPI document), else the picker says the server chooses.
"""

import json

import js

from ai_search import (
    MAX_SEARCH_ANSWER_MESSAGES,
    MAX_SEARCH_QUERY_LENGTH,
    append_turn,
    may_list_models,
    strip_text,
)

from . import storage
from .answer_actions import AnswerActions
from .answer_text import (
    PENDING_CITATION,
    UNSUPPORTED_LABEL,
    Turn,
    answer_segments,
    citation_link,
    cited_ids,
    read_citations,
    read_sentences,
    sentence_runs,
    unsupported_text,
)
from .api import ApiError
from .dom import closest, element, get, listen, present, replace_children, set_text
from .ffi import settled, to_py
from .message_parts import object_field, text_field
from .messages import BAD_RESPONSE_ERROR_TYPE, TRUNCATED_ANSWER_NOTICE
from .results import result_anchor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Mapping, Sequence
    from typing import Any

    from .answer_text import CitedMessage, SentenceCheck, Span
    from .api import ApiClient
    from .ffi import JsProxy

    Cite = Callable[[str, int | None, Span | None], None]

__all__ = [
    "EXTRACTIVE_PROVIDER",
    "MODEL_STORAGE_KEY",
    "AnswerPanel",
    "provider_label",
]

EXTRACTIVE_PROVIDER = "extractive"
MODEL_STORAGE_KEY = "ai-search.model"
_DIGITS = "0123456789"


def provider_label(provider: "Any") -> str:
    """What wrote the answer, for the panel's label."""
    if not isinstance(provider, dict):
        return ""
    name = provider.get("name") if isinstance(provider.get("name"), str) else ""
    model = provider.get("model") if isinstance(provider.get("model"), str) else ""
    if name == EXTRACTIVE_PROVIDER:
        return "Extractive answer: sentences quoted from the results; no language model is configured."
    if model and name:
        return f"Written by {model} ({name})."
    return f"Written by {model or name}." if model or name else ""


class AnswerPanel:
    def __init__(
        self,
        api: "ApiClient",
        *,
        picker: "JsProxy",
        locate: "Callable[[str], int | None]",
        cite: "Cite",
        spawn: "Callable[[Coroutine[Any, Any, Any], str], None]",
    ) -> None:
        self._api = api
        self._panel, self._ask, self._label = get("answer"), get("ask"), get("answer-label")
        self._body, self._error = get("answer-body"), get("answer-error")
        self._thread, self._question = get("answer-thread"), get("answer-question")
        self._check, self._note = get("answer-check"), get("answer-note")
        self._follow_form, self._follow_box = get("follow-up-form"), get("follow-up")
        self._reason_box = get("answer-reason")
        self._follow_box.maxLength = MAX_SEARCH_QUERY_LENGTH
        self._picker = picker
        self._picker_label = picker.parentElement  # the <label class="model"> around the picker
        self._locate = locate
        self._cite = cite
        self._spawn = spawn
        self.actions = AnswerActions(api, spawn=spawn)
        self._earlier: list[Turn] = []  # the turns above the current one, oldest first
        self._turns: list[dict[str, object]] = []  # what the next follow-up sends (ids only)
        self.turn: Turn | None = None
        self._controller: JsProxy | None = None
        self.model_param = False
        self.stale = False
        listen(self._panel, "click", self._click)
        listen(picker, "change", self._pick)
        listen(self._follow_form, "submit", self._on_follow_up)

    @property
    def text(self) -> str:
        return self.turn.text if self.turn is not None else ""

    # -- lifecycle -----------------------------------------------------------------------------

    def reset(self, available: bool) -> None:
        """A new result list: forget the old answers; offer "Ask" when answers can be made."""
        self.cancel()
        self.turn, self._earlier, self._turns = None, [], []
        self._panel.dataset.truncated = "false"
        for node in (self._body, self._thread):
            replace_children(node)
        for node in (self._label, self._error, self._question, self._check, self._note):
            set_text(node, "")
        self._thread.hidden = self._question.hidden = self._check.hidden = self._note.hidden = True
        self._follow_form.hidden = True
        self.actions.hide()
        self._panel.hidden = not available
        self._ask.hidden = False
        self._ask.disabled = self.stale

    def set_stale(self, stale: bool) -> None:
        """The results on screen are from before a search that failed: no answer over them until a
        search works again (an answer already shown stays, it is about those results)."""
        self.stale = stale
        self._ask.disabled = stale or self._controller is not None
        self._ask.title = "Search again first: the results on screen are not up to date." if stale else ""

    def cancel(self) -> None:
        if self._controller is not None:
            self._controller.abort()
            self._controller = None

    async def run(self, question: str, results: "Sequence[Mapping[str, Any]]") -> None:
        """Ask for an answer over ``results`` (best first) and stream it into the panel."""
        self.reset(True)
        sources = [r for r in results if isinstance(r.get("_id"), str)][:MAX_SEARCH_ANSWER_MESSAGES]
        await self._stream(Turn(question), {"query": question, "messages": [_source(r) for r in sources]})

    def _on_follow_up(self, event: "JsProxy") -> None:
        event.preventDefault()
        question = strip_text(str(self._follow_box.value or ""))
        if question and self.turn is not None and self.turn.done and self._controller is None:
            self._spawn(self.follow_up(question), "asking a follow-up")

    async def follow_up(self, question: str) -> None:
        """Ask ``question`` after the turns so far: the current answer moves up into the thread. If
        no answer comes (the server stopped, a refusal), it comes back down, the question is left in
        the box to send again, and the error says why."""
        previous, rating, reason = self.turn, self.actions.rating, str(self._reason_box.value or "")
        if previous is not None:
            self._earlier.append(previous)
        self._follow_box.value = ""
        self._render_thread()
        turn = Turn(question)
        await self._stream(turn, {"query": question, "turns": self._turns})
        if turn.done or self.turn is not turn or previous is None:
            return  # answered, or a new search or question took over
        self.turn = self._earlier.pop()
        self._render_thread()
        self._show_question()
        self._render()
        self.actions.show(previous.answer_id, rating=rating, reason=reason)
        self._follow_box.value = question
        self._follow_form.hidden = False

    async def _stream(self, turn: Turn, body: "dict[str, Any]") -> None:
        self.turn = turn
        self._show_question()
        for node in (self._error, self._check, self._note):
            set_text(node, "")
        self._check.hidden = self._note.hidden = True
        # A follow-up keeps its box (and the focus in it); a first question has none yet.
        self._follow_form.hidden = not self._earlier
        self.actions.hide()
        self._render()
        model = self.chosen_model()
        if model and self.model_param:
            body["model"] = model
        self._ask.disabled = True
        self._body.setAttribute("aria-busy", "true")
        set_text(self._label, "Writing an answer…")
        controller = self._controller = js.AbortController.new()
        try:
            async for event in self._api.events("ai.search.answer", body, signal=controller.signal):
                if controller is not self._controller:
                    return  # a newer search or question took over
                if not self._on_event(event.event, event.data):
                    break
        except ApiError as exc:
            if controller is self._controller:
                self._fail(exc.message)
        finally:
            if controller is self._controller:
                self._controller = None
                self._ask.disabled = self.stale
                self._body.setAttribute("aria-busy", "false")

    def _on_event(self, name: str, data: str) -> bool:
        """Apply one stream event; False when the stream is over."""
        try:
            payload = json.loads(data) if data else {}
        except ValueError:
            payload = None
        if not isinstance(payload, dict) or self.turn is None:
            self._fail(ApiError(BAD_RESPONSE_ERROR_TYPE).message)
            return False
        if name == "sources":
            # What each number of the answer names, before its text: the links are right as it streams.
            self.turn.citations = read_citations(payload.get("citations"))
            return True
        if name == "delta":
            if isinstance(payload.get("text"), str):
                self.turn.text += payload["text"]
                self._render()
            return True
        if name == "done":
            self._finish(payload)
            return False
        if name == "error":
            error_type = payload.get("errorType")
            self._fail(ApiError(error_type if isinstance(error_type, str) else "").message)
            return False
        return True  # unknown events are for newer pages

    def _finish(self, payload: "Mapping[str, Any]") -> None:
        turn = self.turn
        if turn is None:
            return
        self._take(turn, payload)
        self._turns = append_turn(self._turns, turn.question, cited_ids(turn.text, _cited_messages(turn)))
        self._render()
        provider = object_field(payload, "provider")
        set_text(self._label, provider_label(provider))
        self._panel.dataset.provider = str(provider.get("name") or "")
        model = provider.get("model")
        if isinstance(model, str) and model:
            self._select_model(model, only_if_unset=True)
        self._follow_form.hidden = False

    def _take(self, turn: Turn, payload: "Mapping[str, Any]") -> None:
        """A finished answer's fields (the ``done`` event, or a kept answer) into ``turn``."""
        if isinstance(payload.get("answer"), str):
            turn.text = payload["answer"]
        turn.truncated = payload.get("truncated") is True
        turn.citations = read_citations(payload.get("citations"))
        turn.checks = read_sentences(payload.get("sentences"))
        answer_id = payload.get("answerId")
        turn.answer_id = answer_id if isinstance(answer_id, str) else ""
        turn.done = True
        self._panel.dataset.truncated = "true" if turn.truncated else "false"
        self._panel.dataset.answerId = turn.answer_id  # <section data-answer-id>: the answer shown
        feedback = object_field(payload, "feedback")
        self.actions.show(
            turn.answer_id,
            rating=str(feedback.get("rating") or ""),
            reason=str(feedback.get("reason") or ""),
            mine=payload.get("mine") is not False,
        )

    def show_kept(self, data: "Mapping[str, Any]", *, results: bool = False) -> None:
        """A kept answer (``ai.search.answer.get``: a shared link) as this reader may see it, with
        only the actions that work for them: "Ask AI about these results" only over results on the
        page (``results``); when nothing of the answer can be shown to this reader, no rating and no
        follow-up (there is nothing to rate or follow), and the note says plainly what is hidden."""
        self.reset(True)
        question = text_field(data, "query")
        self.turn = Turn(question)
        self._take(self.turn, data)
        self._turns = append_turn([], question, cited_ids(self.turn.text, _cited_messages(self.turn)))
        self._show_question()
        self._render()
        provider = data.get("provider")
        set_text(self._label, "Shared answer. " + provider_label(provider))
        note = data.get("note")
        set_text(self._note, note if isinstance(note, str) else "")
        self._note.hidden = not isinstance(note, str) or not note
        self._ask.hidden = not results
        visible = bool(strip_text(self.turn.text))
        self._follow_form.hidden = not visible
        if not visible:
            self.actions.hide()

    def _fail(self, message: str) -> None:
        set_text(self._label, "")
        set_text(self._error, message)

    # -- rendering -----------------------------------------------------------------------------

    def _show_question(self) -> None:
        asked = self.turn.question if self.turn is not None else ""
        set_text(self._question, asked)
        self._question.hidden = not asked

    def _paragraph(self, turn: Turn) -> "JsProxy":
        # Streaming from a server that has not said what its numbers name: every [N] is held back.
        pending = not turn.done and not turn.citations
        children: list[Any] = []
        for text, check in sentence_runs(turn.text, turn.checks):
            parts = self._cited(text, turn.citations, check, pending=pending)
            if check is not None and check.unsupported:
                flag = element("span", class_="unsupported-flag", role="img", aria_label=UNSUPPORTED_LABEL,
                               title=UNSUPPORTED_LABEL)  # fmt: skip
                children.append(
                    element("span", *parts, flag, class_="is-unsupported", title=UNSUPPORTED_LABEL)
                )
            else:
                children.extend(parts)
        return element("p", *children, class_="answer-text", dir="auto")

    def _cited(
        self, text: str, cited: "Mapping[int, CitedMessage]", check: "SentenceCheck | None", *, pending: bool
    ) -> "list[Any]":
        """``text`` with each ``[n]`` as the link to the message it cites, shown by the list's number
        of it (or its author and room); while ``pending``, a ``[n]`` shows no number at all."""
        parts: list[Any] = []
        for segment in answer_segments(text, lambda n: pending or n in cited):
            if isinstance(segment, str):
                parts.append(segment)
                continue
            link = citation_link(segment, cited, self._locate)
            if link is None:
                parts.append(element("span", PENDING_CITATION, class_="cite-pending"))
                continue
            position = link.number
            span = check.spans.get(segment) if check is not None else None
            parts.append(
                element(
                    "a",
                    link.text,
                    href=f"#{result_anchor(position)}" if position else "#context",
                    class_="cite" if position else "cite cite-off-list",
                    data_msg_id=link.msg_id,
                    data_rid=link.rid or None,
                    data_n=str(segment),  # the server's number of it, which the page never shows
                    data_position=str(position) if position else None,
                    data_span=f"{span[0]},{span[1]}" if span else None,
                    aria_label=link.label,
                    title=None if position else link.label,
                    dir=None if position else "auto",
                )
            )
        return parts

    def _render(self) -> None:
        turn = self.turn
        if turn is None:
            replace_children(self._body)
            return
        notice = [element("p", TRUNCATED_ANSWER_NOTICE, class_="answer-truncated")] if turn.truncated else []
        replace_children(self._body, self._paragraph(turn), *notice)
        flagged = sum(1 for check in turn.checks if check.unsupported)
        set_text(self._check, unsupported_text(flagged))
        self._check.hidden = not flagged

    def _render_thread(self) -> None:
        items = [
            element(
                "li",
                element("p", turn.question, class_="answer-question", dir="auto"),
                self._paragraph(turn),
                class_="answer-turn",
            )
            for turn in self._earlier
        ]
        replace_children(self._thread, *items)
        self._thread.hidden = not items

    def _click(self, event: "JsProxy") -> None:
        link = closest(event, "a.cite")
        if link is None:
            return
        event.preventDefault()
        msg_id = present(link.getAttribute("data-msg-id"))
        if not isinstance(msg_id, str) or not msg_id:
            return
        position = present(link.getAttribute("data-position"))
        span = present(link.getAttribute("data-span"))
        self._cite(
            msg_id,
            int(position) if isinstance(position, str) and _is_digits(position) else None,
            _read_span(span),
        )

    # -- model picker --------------------------------------------------------------------------

    async def discover_models(self, api: "ApiClient") -> None:
        """Offer the picker if the caller may list models and the provider has some."""
        try:
            permissions = (await api.get("me")).get("permissions")
            if not isinstance(permissions, list) or not may_list_models(
                frozenset(p for p in permissions if isinstance(p, str))
            ):
                return
            models = (await api.get("ai.llm.models")).get("data")
        except ApiError:
            return  # no provider, or the server said no after all: no picker
        if isinstance(models, list) and models:
            self.offer_models(
                [m for m in models if isinstance(m, dict)], model_param=await _answer_takes_model()
            )

    def hide_models(self) -> None:
        self._picker_label.hidden = True

    def offer_models(self, models: "Sequence[Mapping[str, Any]]", *, model_param: bool) -> None:
        """Show the picker with the provider's models (the caller may list them)."""
        self.model_param = model_param
        options = [m for m in models if isinstance(m.get("key"), str) and m["key"]]
        if not options:
            return
        replace_children(
            self._picker,
            *(element("option", str(m.get("label") or m["key"]), value=m["key"]) for m in options),
        )
        stored = storage.read(storage.SESSION, MODEL_STORAGE_KEY)
        if stored:
            self._select_model(stored)
        self._picker.disabled = not model_param
        self._picker.title = (
            "The model this question is sent to"
            if model_param
            else "This server chooses the model itself (setting llm_model)"
        )
        self._picker_label.hidden = False

    def chosen_model(self) -> str:
        value = self._picker.value
        return value if isinstance(value, str) else ""

    def _select_model(self, model: str, *, only_if_unset: bool = False) -> None:
        if only_if_unset and storage.read(storage.SESSION, MODEL_STORAGE_KEY):
            return
        for option in self._picker.options:
            if option.value == model:
                self._picker.value = model
                return

    def _pick(self, _event: "JsProxy") -> None:
        storage.write(storage.SESSION, MODEL_STORAGE_KEY, self.chosen_model())


def _is_score(value: "Any") -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _source(result: "Mapping[str, Any]") -> "dict[str, Any]":
    """What the answer route is told of a result: its id, and its score when it has one."""
    source = {"_id": result["_id"]}
    if _is_score(result.get("score")):
        source["score"] = result["score"]
    return source


def _cited_messages(turn: Turn) -> dict[int, str]:
    """The message id of each source number the answer cites."""
    return {number: cited.msg_id for number, cited in turn.citations.items()}  # portable: a lookup table


def _is_digits(text: str) -> bool:
    """Whether ``text`` is ASCII digits only, as the page writes its attributes (``str.isdigit`` also
    takes other scripts' digits on CPython, and MicroPython's str has no ``isascii``)."""
    return bool(text) and all(char in _DIGITS for char in text)


async def _answer_takes_model() -> bool:
    """Whether the answer route takes a ``model`` (its OpenAPI request schema lists one)."""
    try:
        response = await settled(js.fetch("/openapi.json"))
        document = to_py(await settled(response.json()))
        if not isinstance(document, dict):
            return False
        schema = document["paths"]["/api/v1/ai.search.answer"]["post"]["requestBody"]["content"]
        return "model" in schema["application/json"]["schema"]["properties"]
    except Exception:  # any surprise in the document means "no"
        return False


def _read_span(value: "Any") -> "Span | None":
    """A citation link's ``data-span`` (``start,end``), or None."""
    if not isinstance(value, str):
        return None
    start, _, end = value.partition(",")
    if _is_digits(start) and _is_digits(end) and int(start) < int(end):
        return int(start), int(end)
    return None
