"""The answer panel: a cited answer over the results on the page, streamed as it is written.

"Ask" sends the question (the search words) and the ids and scores of the results shown, never
their texts (the server loads them under the caller's permissions). The answer streams in as
``delta`` events and is replaced by the ``done`` event's final text. Each ``[N]`` that names a source
becomes a link to result ``N``; clicking it opens that result in its conversation (the context view,
which can mark a supporting ``(start, end)`` span of its text). Answer
text is untrusted like any message: it only ever becomes text nodes and these links.

An answer the server marks ``truncated`` (the model stopped at its length limit) is shown as cut short,
with a notice under it. An extractive answer (no language model configured) is labelled as such. A
caller who may list the
provider's models gets a picker; the chosen model is sent only to a server whose answer route
accepts one (read from its OpenAPI document), else the picker says the server chooses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import js
from pyodide.ffi import JsProxy

from ai_search import MAX_SEARCH_ANSWER_MESSAGES

from .api import ApiClient, ApiError
from .dom import closest, element, listen, present, replace_children, set_text
from .messages import BAD_RESPONSE_ERROR_TYPE, TRUNCATED_ANSWER_NOTICE
from .results import result_anchor

__all__ = [
    "EXTRACTIVE_PROVIDER",
    "MODEL_STORAGE_KEY",
    "AnswerPanel",
    "answer_segments",
    "may_list_models",
    "provider_label",
]

EXTRACTIVE_PROVIDER = "extractive"
MODEL_STORAGE_KEY = "ai-search.model"
_CITATION = re.compile(r"\[(\d{1,3})\]")
# The server's rule for ai.llm.models (upstream's): a privileged-setting permission, or both
# manage-selected-settings and the model setting's own permission. Checked first so that nobody else
# ever sends a request that can only be refused.
_PRIVILEGED_SETTING_PERMISSIONS = frozenset({"view-privileged-setting", "edit-privileged-setting"})
_SELECTED_SETTING_PERMISSIONS = frozenset({"manage-selected-settings", "change-setting-llm_model"})


def may_list_models(permissions: frozenset[str]) -> bool:
    """Whether a caller with ``permissions`` may list the provider's models."""
    return bool(permissions & _PRIVILEGED_SETTING_PERMISSIONS) or permissions >= _SELECTED_SETTING_PERMISSIONS


def answer_segments(text: str, valid: Callable[[int], bool]) -> list[str | int]:
    """``text`` split into plain runs (str) and citation numbers (int) that ``valid`` accepts;
    a ``[N]`` it refuses stays text."""
    segments: list[str | int] = []
    position = 0
    for match in _CITATION.finditer(text):
        number = int(match[1])
        if not valid(number):
            continue
        if match.start() > position:
            segments.append(text[position : match.start()])
        segments.append(number)
        position = match.end()
    if position < len(text):
        segments.append(text[position:])
    return segments


def provider_label(provider: Any) -> str:
    """What wrote the answer, for the panel's label."""
    if not isinstance(provider, Mapping):
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
        *,
        panel: JsProxy,
        ask: JsProxy,
        label: JsProxy,
        body: JsProxy,
        error: JsProxy,
        picker: JsProxy,
        locate: Callable[[str], int | None],
        cite: Callable[[int, tuple[int, int] | None], None],
    ) -> None:
        self._panel, self._ask, self._label, self._body, self._error = panel, ask, label, body, error
        self._picker = picker
        self._picker_label = picker.parentElement  # the <label class="model"> around the picker
        self._locate = locate
        self._cite = cite
        self._sources: tuple[str, ...] = ()
        self._positions: dict[int, int] = {}
        self._controller: JsProxy | None = None
        self.model_param = False
        self.stale = False
        self.text = ""
        self.truncated = False
        listen(body, "click", self._click)
        listen(picker, "change", self._pick)

    # -- lifecycle -----------------------------------------------------------------------------

    def reset(self, available: bool) -> None:
        """A new result list: forget the old answer; offer "Ask" when answers can be made."""
        self.cancel()
        self.text = ""
        self.truncated = False
        self._panel.dataset.truncated = "false"
        replace_children(self._body)
        set_text(self._label, "")
        set_text(self._error, "")
        self._panel.hidden = not available
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

    async def run(self, api: ApiClient, question: str, results: Sequence[Mapping[str, Any]]) -> None:
        """Ask for an answer over ``results`` (best first) and stream it into the panel."""
        self.reset(True)
        sources = [r for r in results if isinstance(r.get("_id"), str)][:MAX_SEARCH_ANSWER_MESSAGES]
        self._sources = tuple(str(r["_id"]) for r in sources)
        self._positions = {}
        body: dict[str, Any] = {
            "query": question,
            "messages": [
                {"_id": r["_id"], **({"score": r["score"]} if _is_score(r.get("score")) else {})}
                for r in sources
            ],
        }
        model = self.chosen_model()
        if model and self.model_param:
            body["model"] = model
        self._ask.disabled = True
        self._body.setAttribute("aria-busy", "true")
        set_text(self._label, "Writing an answer…")
        controller = self._controller = js.AbortController.new()
        try:
            async for event in api.events("ai.search.answer", body, signal=controller.signal):
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
        if not isinstance(payload, dict):
            self._fail(ApiError(BAD_RESPONSE_ERROR_TYPE).message)
            return False
        if name == "delta":
            if isinstance(payload.get("text"), str):
                self.text += payload["text"]
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

    def _finish(self, payload: Mapping[str, Any]) -> None:
        answer = payload.get("answer")
        if isinstance(answer, str):
            self.text = answer
        self.truncated = payload.get("truncated") is True
        self._panel.dataset.truncated = "true" if self.truncated else "false"
        citations = payload.get("citations")
        for citation in citations if isinstance(citations, list) else []:
            if isinstance(citation, Mapping) and isinstance(citation.get("n"), int):
                position = self._locate(str(citation.get("msgId") or ""))
                if position is not None:
                    self._positions[citation["n"]] = position
        self._render()
        set_text(self._label, provider_label(payload.get("provider")))
        self._panel.dataset.provider = str((payload.get("provider") or {}).get("name") or "")
        model = (payload.get("provider") or {}).get("model")
        if isinstance(model, str) and model:
            self._select_model(model, only_if_unset=True)

    def _fail(self, message: str) -> None:
        set_text(self._label, "")
        set_text(self._error, message)

    # -- rendering -----------------------------------------------------------------------------

    def _position(self, number: int) -> int | None:
        if number in self._positions:
            return self._positions[number]
        if self._positions or not 1 <= number <= len(self._sources):
            return None  # after "done", only the server's citations link
        return self._locate(self._sources[number - 1])

    def _render(self) -> None:
        children: list[Any] = []
        for segment in answer_segments(self.text, lambda n: self._position(n) is not None):
            if isinstance(segment, str):
                children.append(segment)
                continue
            position = self._position(segment)
            children.append(
                element(
                    "a",
                    f"[{segment}]",
                    href=f"#{result_anchor(position or 0)}",
                    class_="cite",
                    data_position=str(position),
                    aria_label=f"Source {segment}: result {position}",
                )
            )
        notice = [element("p", TRUNCATED_ANSWER_NOTICE, class_="answer-truncated")] if self.truncated else []
        replace_children(self._body, element("p", *children, class_="answer-text", dir="auto"), *notice)

    def _click(self, event: JsProxy) -> None:
        link = closest(event, "a.cite")
        if link is None:
            return
        event.preventDefault()
        position = present(link.getAttribute("data-position"))
        if isinstance(position, str) and position.isdigit() and position.isascii():
            self._cite(int(position), None)

    # -- model picker --------------------------------------------------------------------------

    async def discover_models(self, api: ApiClient) -> None:
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

    def offer_models(self, models: Sequence[Mapping[str, Any]], *, model_param: bool) -> None:
        """Show the picker with the provider's models (the caller may list them)."""
        self.model_param = model_param
        options = [m for m in models if isinstance(m.get("key"), str) and m["key"]]
        if not options:
            return
        replace_children(
            self._picker,
            *(element("option", str(m.get("label") or m["key"]), value=m["key"]) for m in options),
        )
        stored = present(js.sessionStorage.getItem(MODEL_STORAGE_KEY))
        if isinstance(stored, str) and stored:
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
        if only_if_unset and present(js.sessionStorage.getItem(MODEL_STORAGE_KEY)):
            return
        for option in self._picker.options:
            if option.value == model:
                self._picker.value = model
                return

    def _pick(self, _event: JsProxy) -> None:
        js.sessionStorage.setItem(MODEL_STORAGE_KEY, self.chosen_model())


def _is_score(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


async def _answer_takes_model() -> bool:
    """Whether the answer route takes a ``model`` (its OpenAPI request schema lists one)."""
    try:
        response = await js.fetch("/openapi.json")
        document = (await response.json()).to_py()
        schema = document["paths"]["/api/v1/ai.search.answer"]["post"]["requestBody"]["content"]
        return "model" in schema["application/json"]["schema"]["properties"]
    except Exception:  # any surprise in the document means "no"
        return False
