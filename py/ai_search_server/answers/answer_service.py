"""The answer service: is answering on, which sources may the caller use, and who writes the answer.

One ``AnswerService`` per app (``Services.answers``), built by ``AnswerService.from_settings``
around the app's ``GuardedClient``. Per request, in order:

1. **Status.** Search or answers switched off: ``error-ai-not-enabled``. An LLM base URL without a
   model: ``error-ai-provider-not-configured``. No base URL at all is not an error: the answer is
   extractive (quoted from the sources, labelled ``provider: {name: "extractive"}``), so the embedded
   default answers with no LLM anywhere (DESIGN decision 4).
2. **Sources.** The request names message ids, never texts. Every id must be a message in a room the
   caller reads now (subscribed, not banned); one that is not refuses the whole request with
   ``error-invalid-search-answer-sources``, and the refusal is the same whether the message is
   missing or just not the caller's, so it confirms nothing. Sources are loaded from the store.
3. **Answer.** The prompt (``build_search_answer_prompt``: question and sources marked untrusted)
   goes to the provider with the system prompt setting; or the extractive answerer quotes the
   sources (and their conversations, ``context``). The text is shaped (``stream.shape_answer_text``)
   and its citations checked: each ``[N]`` with a source becomes ``{n, msgId, rid}``, one without is
   dropped and marked ``[N?]``; every sentence is checked against the sources it cites
   (``ai_search.check_citations``): ``sentences`` says which are supported, and by which passages.
4. **Output checks.** Every configured secret (the LLM's key, the pipeline's and the embeddings'
   keys) is replaced by ``[redacted]`` in the answer and in model ids (``redaction.SecretRedactor``),
   streamed text included, so a provider that echoes its ``Authorization`` header leaks nothing.
   With a custom system prompt (``answer_system_prompt``), every run of its words
   the model repeats is replaced by ``[redacted]`` (``echo.PromptEcho``), streamed text included. An
   answer the model stopped before finishing (``finish_reason`` ``length`` or ``content_filter``) is
   kept and marked ``truncated: true``.

**Numbering.** Source ``n`` is the ``n``-th source the answer was given; an extractive answer
numbers the messages of their conversations after them. Every number an answer may cite is kept
with the answer (``records.keep_answer``), context messages included, so a shared answer still
knows what each of its numbers cites. The page shows each cited message by its own number in the
result list, never by these (``ai_search_web.answer_text``): the citations say which message each
``[n]`` is, and its author and room for a message the page does not list.

``answer`` returns the whole result; ``answer_events`` yields one ``AnswerSources`` (every numbered
message the answer may cite, before any text, so a page can show each ``[n]`` as it streams in),
``AnswerDelta``s, then one ``AnswerDone``, for the streamed route. Both return records (``routes/shapes.py`` writes them as JSON)
and raise the answers' own errors (``answer_errors``) or the provider's ``ProviderError``; the routes
turn those into refusals.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace

from ai_search import (
    DEFAULT_ANSWER_SYSTEM_PROMPT,
    AnswerSourceRef,
    AnswerTurn,
    CheckedSentence,
    ModelOption,
    build_extractive_answer,
    build_search_answer_prompt,
    check_citations,
    extract_citations,
    model_list_fallback,
)

from ..outbound import GuardedClient
from ..redaction import SecretRedactor
from ..settings import Settings
from ..store.base import Store
from ..store.records import User
from . import follow_ups
from .answer_errors import AnswersOff, ProviderNotConfigured, SourcesRefused, UnknownModel
from .context import load_context
from .echo import PromptEcho
from .follow_ups import FollowUpSearch
from .provider import OpenAICompatibleProvider, ProviderConfig
from .records import keep_answer
from .sources import Citation, LoadedSource, citation, loaded_source
from .stream import AnswerTextStream, shape_answer_text

__all__ = [
    "EXTRACTIVE_PROVIDER_NAME",
    "AnswerDelta",
    "AnswerDone",
    "AnswerResult",
    "AnswerService",
    "AnswerSources",
    "Citation",
]

log = logging.getLogger(__name__)

EXTRACTIVE_PROVIDER_NAME = "extractive"

NOT_ENABLED = "AI answers are not enabled on this server."
NOT_CONFIGURED = "The AI provider is not fully configured: llm_base_url is set but llm_model is empty."
NO_CLIENT = "The AI provider is configured, but this server was started without an outbound client for it."
INVALID_SOURCES = "Some source messages do not exist or are not in rooms you can read."
NO_SOURCE_TEXT = "None of the source messages has any text to answer from."


@dataclass(frozen=True, slots=True)
class AnswerResult:
    answer: str
    citations: tuple[Citation, ...]
    provider: dict[str, str]
    # The model stopped before finishing (its token limit, or the provider's content filter).
    truncated: bool = False
    # Every sentence with its citations checked against the sources (``ai_search.check_citations``).
    sentences: tuple[CheckedSentence, ...] = ()
    # A follow-up: what it was searched as, read after the earlier turns.
    searched: str | None = None
    # The id it is kept under, to share and rate it (None when it could not be stored).
    answer_id: str | None = None


@dataclass(frozen=True, slots=True)
class _Asked:
    """What one request asks: the question to answer from, the source ids, the earlier questions."""

    question: str
    refs: tuple[AnswerSourceRef, ...]
    earlier: tuple[str, ...] = ()
    searched: str | None = None


@dataclass(frozen=True, slots=True)
class AnswerSources:
    """Every message the streamed answer may cite, by its number: sent before the first text."""

    citations: tuple[Citation, ...]


@dataclass(frozen=True, slots=True)
class _Drawn:
    """An extractive answer and every message it numbered (its sources, then their conversations)."""

    result: AnswerResult
    numbered: tuple[LoadedSource, ...]


@dataclass(frozen=True, slots=True)
class AnswerDelta:
    text: str


@dataclass(frozen=True, slots=True)
class AnswerDone:
    result: AnswerResult


class AnswerService:
    """Answers questions from sources the caller may read; see the module docstring for the steps."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        provider: OpenAICompatibleProvider | None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.provider = provider
        self.system_prompt = settings.answer_system_prompt.strip() or DEFAULT_ANSWER_SYSTEM_PROMPT
        # Only a custom prompt may hold what an operator keeps private; the built-in one is public.
        custom = settings.answer_system_prompt.strip()
        self.echo = PromptEcho(custom) if custom else None
        # The configured secrets, replaced wherever the provider's words reach the caller.
        self.secrets = SecretRedactor.from_settings(settings)

    @classmethod
    def from_settings(cls, settings: Settings, store: Store, client: GuardedClient | None) -> AnswerService:
        """The service for these settings; ``client`` is the app's one outbound client (None: no LLM)."""
        provider = None
        if client is not None and settings.llm_base_url:
            config = ProviderConfig(
                base_url=settings.llm_base_url, model=settings.llm_model, api_key=settings.llm_api_key
            )
            provider = OpenAICompatibleProvider(
                client, config, redactor=SecretRedactor.from_settings(settings)
            )
        return cls(settings, store, provider)

    # -- status ----------------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self.settings.search_enabled and self.settings.answer_enabled

    @property
    def extractive(self) -> bool:
        """No LLM configured: answers are quoted from the sources."""
        return not self.settings.llm_base_url

    @property
    def configured(self) -> bool:
        """Answers can be given now: enabled, and either extractive or a provider with a model."""
        return self.enabled and (self.extractive or self._ready_provider() is not None)

    def _ready_provider(self) -> OpenAICompatibleProvider | None:
        provider = self.provider
        return provider if provider is not None and provider.model else None

    def _check_ready(self) -> OpenAICompatibleProvider | None:
        """The provider to ask, or None for an extractive answer.

        Raises:
            AnswersOff, ProviderNotConfigured: answers are off, or the provider lacks a model.
        """
        if not self.enabled:
            raise AnswersOff(NOT_ENABLED)
        if self.extractive:
            return None
        if self.provider is None:
            # A wiring fault, not a setting: the app did not hand this service its outbound client.
            log.error("llm_base_url is set but the answer service was built without an outbound client")
            raise ProviderNotConfigured(NO_CLIENT)
        provider = self._ready_provider()
        if provider is None:
            raise ProviderNotConfigured(NOT_CONFIGURED)
        return provider

    # -- sources ---------------------------------------------------------------------------------

    def load_sources(self, user: User, refs: Sequence[AnswerSourceRef]) -> list[LoadedSource]:
        """The sources, in request order, each read from the store under the caller's permissions.

        Raises:
            SourcesRefused: an id is not a message in a room the caller reads, or no source has any text.
        """
        messages = self.store.get_messages(ref.msg_id for ref in refs)
        readable = self.store.readable_room_ids(user.id)
        if any(ref.msg_id not in messages or messages[ref.msg_id].room_id not in readable for ref in refs):
            raise SourcesRefused(INVALID_SOURCES)
        rooms = self.store.get_rooms({messages[ref.msg_id].room_id for ref in refs})
        loaded = [
            loaded_source(messages[ref.msg_id], rooms, ref.score)
            for ref in refs
            if messages[ref.msg_id].text.strip()
        ]
        if not loaded:
            raise SourcesRefused(NO_SOURCE_TEXT)
        return loaded

    async def _asked(
        self,
        user: User,
        query: str,
        refs: Sequence[AnswerSourceRef],
        turns: Sequence[AnswerTurn],
        search: FollowUpSearch | None,
    ) -> _Asked:
        """The question and its source ids; for a follow-up, read after ``turns`` and searched again."""
        if not turns:
            return _Asked(query, tuple(refs))
        planned = await follow_ups.plan(user, query, refs, turns, search)
        return _Asked(planned.searched, planned.refs, tuple(t.query for t in turns), planned.searched)

    def _finish(
        self, user: User, query: str, asked: _Asked, result: AnswerResult, numbered: Sequence[LoadedSource]
    ) -> AnswerResult:
        """The result with what a follow-up searched, kept under a new id (``records.keep_answer``)
        with every message it numbered, so each of its ``[n]`` still names the same message when
        the answer is shared."""
        ids = [(s.msg_id, s.rid) for s in numbered]
        answer_id = keep_answer(self.store, user, query, result.answer, ids, result.provider, asked.searched)
        return replace(result, searched=asked.searched, answer_id=answer_id)

    def _extractive(self, user: User, query: str, sources: Sequence[LoadedSource]) -> _Drawn:
        """The answer quoted from the sources and their conversations (``context.load_context``)."""
        readable = self.store.readable_room_ids(user.id)
        rooms = self.store.get_rooms({s.rid for s in sources})
        drawn = load_context(self.store, readable, sources, lambda message: loaded_source(message, rooms))
        text = build_extractive_answer(
            query, [s.source for s in drawn.sources], [s.source for s in drawn.context]
        )
        numbered = (*drawn.sources, *drawn.context)
        return _Drawn(self._result(text, numbered, None), numbered)

    # -- answers ---------------------------------------------------------------------------------

    async def _provider_for(self, model: str | None) -> OpenAICompatibleProvider | None:
        """The provider to ask (with the requested model, when one is named), or None: extractive.

        Raises:
            AnswersOff, ProviderNotConfigured: see ``_check_ready``.
            UnknownModel: the provider does not offer that model (or its list could not be read).
        """
        provider = self._check_ready()
        if provider is None or not model or model == provider.model:
            return provider
        offered = {option.key for option in await provider.list_models()}
        if model not in offered:
            raise UnknownModel(f"The AI provider does not offer the model {model!r}")
        return provider.with_model(model)

    async def answer(
        self,
        user: User,
        query: str,
        refs: Sequence[AnswerSourceRef],
        *,
        model: str | None = None,
        turns: Sequence[AnswerTurn] = (),
        search: FollowUpSearch | None = None,
    ) -> AnswerResult:
        """The whole answer at once (JSON callers and MCP tools). With ``turns`` (the earlier turns of
        the conversation) the question is a follow-up: see ``follow_ups``.

        Raises:
            AnswerError: see ``_provider_for`` and ``load_sources``.
            ProviderError: the provider failed (``timed_out`` when it was too slow, ``busy`` when the
                app's cap of outbound calls stayed full).
        """
        provider = await self._provider_for(model)
        asked = await self._asked(user, query, refs, turns, search)
        sources = self.load_sources(user, asked.refs)
        if provider is None:
            drawn = self._extractive(user, asked.question, sources)
            return self._finish(user, query, asked, drawn.result, drawn.numbered)
        prompt = self._prompt(query, sources, asked.earlier)
        completion = await provider.complete(self.system_prompt, prompt)
        result = self._result(completion.text, sources, provider, truncated=completion.truncated)
        return self._finish(user, query, asked, result, sources)

    async def answer_events(
        self,
        user: User,
        query: str,
        refs: Sequence[AnswerSourceRef],
        *,
        model: str | None = None,
        turns: Sequence[AnswerTurn] = (),
        search: FollowUpSearch | None = None,
    ) -> AsyncGenerator[AnswerSources | AnswerDelta | AnswerDone, None]:
        """The answer as it is written: one ``AnswerSources`` (what each number the answer may cite
        names), ``AnswerDelta``s whose texts join to the final answer, then one ``AnswerDone`` with
        the answer, its citations and the provider.

        Raises (from any step of the iteration):
            the same errors as ``answer``. Status and sources are checked before anything is yielded.
        """
        provider = await self._provider_for(model)
        asked = await self._asked(user, query, refs, turns, search)
        sources = self.load_sources(user, asked.refs)
        if provider is None:
            drawn = self._extractive(user, asked.question, sources)
            result = self._finish(user, query, asked, drawn.result, drawn.numbered)
            yield AnswerSources(_numbered(drawn.numbered))
            yield AnswerDelta(result.answer)
            yield AnswerDone(result)
            return
        shaper = AnswerTextStream(len(sources))
        # The same redaction as the whole answer's, chunk by chunk: it holds back the words an echo
        # could still start with, so no piece of one leaves before it is known to be one.
        echo = self.echo.stream() if self.echo is not None else None
        secrets = self.secrets.stream()
        parts: list[str] = []
        prompt = self._prompt(query, sources, asked.earlier)
        yield AnswerSources(_numbered(sources))
        async with aclosing(provider.stream(self.system_prompt, prompt)) as deltas:
            async for delta in deltas:
                parts.append(delta)
                text = shaper.feed(delta)
                if echo is not None:
                    text = echo.feed(text)
                text = secrets.feed(text)
                if text:
                    yield AnswerDelta(text)
        tail = shaper.flush()
        if echo is not None:
            tail = echo.feed(tail) + echo.flush()
        tail = secrets.feed(tail) + secrets.flush()
        if tail:
            yield AnswerDelta(tail)
        result = self._result("".join(parts), sources, provider, truncated=deltas.truncated)
        yield AnswerDone(self._finish(user, query, asked, result, sources))

    async def models(self) -> list[ModelOption]:
        """The provider's models for the settings picker; never fails (the selected model alone)."""
        if self.provider is None:
            return model_list_fallback(self.settings.llm_model or None)
        redact = self.secrets.redact
        return [ModelOption(redact(o.key), redact(o.label)) for o in await self.provider.list_models()]

    # -- helpers ---------------------------------------------------------------------------------

    def _prompt(self, query: str, sources: Sequence[LoadedSource], earlier: Sequence[str] = ()) -> str:
        return build_search_answer_prompt(query, [s.source for s in sources], earlier=earlier)

    def _result(
        self,
        raw: str,
        sources: Sequence[LoadedSource],
        provider: OpenAICompatibleProvider | None,
        *,
        truncated: bool = False,
    ) -> AnswerResult:
        answer = self.secrets.redact(shape_answer_text(raw, len(sources)))
        if self.echo is not None:
            stream = self.echo.stream()
            answer = stream.feed(answer) + stream.flush()
            if stream.redacted_runs:
                # The text stays out of the log too: it is what the operator keeps private.
                log.warning("an answer repeated the system prompt: %d run(s) redacted", stream.redacted_runs)
        cited = extract_citations(answer, len(sources))
        citations = tuple(citation(n, sources[n - 1]) for n in cited)
        label = (
            {"name": provider.name, "model": provider.model}
            if provider is not None
            else {"name": EXTRACTIVE_PROVIDER_NAME}
        )
        sentences = tuple(check_citations(answer, [s.source for s in sources]))
        return AnswerResult(answer, citations, label, truncated, sentences)


def _numbered(sources: Sequence[LoadedSource]) -> tuple[Citation, ...]:
    """Every numbered message, as the citation it would be."""
    return tuple(citation(n, source) for n, source in enumerate(sources, start=1))
