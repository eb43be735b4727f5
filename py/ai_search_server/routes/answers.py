"""Cited answers (``ai.search.answer``) and the provider's model list (``ai.llm.models``).

``POST /api/v1/ai.search.answer`` takes message *ids* (with the scores ``ai.search`` gave them), never
texts; the server loads each source itself under the caller's permissions (``answers.answer_service``).
Two ways to get the answer, same body:

- plain JSON (the default, and what MCP tools get): ``{"answer", "citations": [{"n", "msgId", "rid"}],
  "provider": {"name", "model"}, "truncated", "sentences": [{"text", "citations", "supported",
  "spans"}], "success": true}`` (``sentences``: each sentence checked against the sources it cites);
- ``Accept: text/event-stream``: the answer as it is written: first ``event: sources``
  ``{"citations": [...]}`` (every message the answer may cite, shaped as ``citations`` are, so a page
  knows what each ``[N]`` names while the text streams in), then ``event: delta`` ``{"text"}`` events
  whose texts join to the final answer, then ``event: done`` with the JSON shape above (without
  ``success``), or ``event: error`` ``{"errorType", "error"}`` if the provider fails half-way.
  Anything that fails before the first event (bad body, answers off, sources refused, provider down)
  is an ordinary JSON error with its HTTP status, as for JSON callers. A header and not a body field,
  because the body keeps upstream's schema (``additionalProperties: false``).

A follow-up adds ``turns``, the earlier turns of the conversation (each ``{query, messages}``: the
question and the ids its answer cited), and may leave out ``messages``: the server reads the question
after the turns, searches again as the caller, and answers from this turn's messages, the search's
results and the earlier turns' sources (``answers.follow_ups``); the answer says what it searched,
``searched``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import aclosing, contextmanager
from typing import Annotated, Any

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema
from starlette.responses import Response, StreamingResponse

from ai_search import (
    MAX_ANSWER_SOURCE_ID_LENGTH,
    MAX_ANSWER_TURN_SOURCES,
    MAX_ANSWER_TURNS,
    MAX_SEARCH_ANSWER_MESSAGES,
    MAX_SEARCH_QUERY_LENGTH,
    AnswerSourceRef,
    AnswerTurn,
    InvalidAnswerRequestError,
    may_list_models,
    normalize_answer_query,
    normalize_answer_sources,
    normalize_answer_turns,
)

from .. import errors
from ..answers.answer_errors import (
    AnswerError,
    AnswerNotFound,
    AnswersOff,
    ProviderNotConfigured,
    SourcesRefused,
    UnknownModel,
)
from ..answers.answer_service import AnswerDelta, AnswerDone, AnswerSources
from ..answers.follow_ups import FollowUpSearch
from ..answers.provider import ProviderError
from ..answers.stream import SSE_MEDIA_TYPE, sse_event, wants_event_stream
from ..ratelimit import RateLimit
from ..rest import ApiRequest, Refusal, Router
from .params import NoParams, Params
from .replies import AnswerReply
from .shapes import answer_json, citations_json

__all__ = [
    "ANSWER_RATE_LIMIT",
    "MODELS_RATE_LIMIT",
    "AnswerParams",
    "answer_refusals",
    "refusal_of",
    "router",
]

log = logging.getLogger(__name__)

# What the answer service yields for the streamed route, in order: sources, deltas, done.
Event = AnswerSources | AnswerDelta | AnswerDone

router = Router(tags=("AI",))

# Answers per user and minute, as upstream: each may cost a model call.
ANSWER_RATE_LIMIT = RateLimit(count=10, period_seconds=60)
# Model lists per user and minute, as upstream: only the settings page asks.
MODELS_RATE_LIMIT = RateLimit(count=5, period_seconds=60)
# Characters of a model name a caller may ask for.
MAX_MODEL_NAME_CHARS = 200
MODEL_CHOICE_FORBIDDEN = "Choosing the answer model needs the permission to list models"
MODELS_FORBIDDEN = "Listing the models needs a permission to change the model setting"
ANSWER_REFUSALS = (
    Refusal(errors.FeatureUnavailable.status, "AI answers are off or not configured on this server"),
    Refusal(errors.Forbidden.status, MODEL_CHOICE_FORBIDDEN),
    Refusal(errors.UpstreamFailure.status, "The AI provider failed or answered nothing usable"),
    Refusal(
        errors.UpstreamBusy.status, "Too many answers are being written at once: retry after Retry-After"
    ),
    Refusal(errors.UpstreamTimeout.status, "The AI provider did not answer in time"),
)
# Seconds a client is asked to wait after a 503 UpstreamBusy: the queue wait it just lost.
BUSY_RETRY_AFTER_SECONDS = 2
# The answers' errors as the refusals a caller gets (the answers' own error_type kept).
_REFUSAL_OF: dict[type[AnswerError], type[errors.ApiError]] = {
    AnswersOff: errors.FeatureUnavailable,
    ProviderNotConfigured: errors.FeatureUnavailable,
    SourcesRefused: errors.InvalidParams,
    UnknownModel: errors.InvalidParams,
    AnswerNotFound: errors.NotFound,
}


def refusal_of(exc: AnswerError | ProviderError) -> errors.ApiError:
    """The refusal answering an answer that could not be given: 400/404 for the caller's part, 502
    for the provider's (504 when it was too slow, 503 with Retry-After when the app's cap of outbound
    calls stayed full)."""
    if isinstance(exc, ProviderError):
        if exc.busy:
            retry = {"Retry-After": str(BUSY_RETRY_AFTER_SECONDS)}
            return errors.UpstreamBusy(exc.message, error_type=exc.error_type, headers=retry)
        failure = errors.UpstreamTimeout if exc.timed_out else errors.UpstreamFailure
        return failure(exc.message, error_type=exc.error_type)
    return _REFUSAL_OF[type(exc)](exc.message, error_type=exc.error_type)


@contextmanager
def answer_refusals() -> Iterator[None]:
    """Within the block, an answer that cannot be given is raised as its refusal (``refusal_of``)."""
    try:
        yield
    except (AnswerError, ProviderError) as exc:
        raise refusal_of(exc) from None


def _drop_default(schema: dict[str, Any]) -> None:
    # The unset score's default (None) is not a number; the schema should not offer it as one.
    schema.pop("default", None)


class AnswerSourceParam(Params):
    msg_id: Annotated[str, Field(min_length=1, max_length=MAX_ANSWER_SOURCE_ID_LENGTH)] = Field(
        alias="_id", description="Id of a message the answer may use, as returned by ai.search."
    )
    # A JSON null passes here and is refused by normalize_answer_sources; the schema says number only.
    # Not bounded: the score is clamped to [0, 1], as echoed scores can sit a rounding error outside.
    score: Annotated[float, Field(strict=True, allow_inf_nan=False)] | SkipJsonSchema[None] = Field(
        default=None,
        description="The message's retrieval score from ai.search (0 to 1; clamped).",
        json_schema_extra=_drop_default,
    )


class AnswerTurnParam(Params):
    query: Annotated[str, Field(strict=True, min_length=1, max_length=MAX_SEARCH_QUERY_LENGTH)] = Field(
        description="An earlier question of this conversation, as it was asked."
    )
    messages: Annotated[list[AnswerSourceParam], Field(max_length=MAX_ANSWER_TURN_SOURCES)] = Field(
        default_factory=list, description="The messages that earlier answer cited (ids, never texts)."
    )


class AnswerParams(Params):
    query: Annotated[str, Field(strict=True, min_length=1, max_length=MAX_SEARCH_QUERY_LENGTH)] = Field(
        description="The question to answer."
    )
    messages: Annotated[list[AnswerSourceParam], Field(max_length=MAX_SEARCH_ANSWER_MESSAGES)] = Field(
        default_factory=list,
        description="The source messages, best first; the answer cites them as [1], [2]... 1 to 20 of "
        "them, unless turns are given (a follow-up searches for its own sources).",
    )
    turns: Annotated[list[AnswerTurnParam], Field(max_length=MAX_ANSWER_TURNS)] = Field(
        default_factory=list,
        description="For a follow-up question: the earlier turns of the conversation, oldest first, "
        "each with the ids of the messages its answer cited. The server reads the question in their "
        "light, searches again as the caller, and answers from both.",
    )
    model: Annotated[str, Field(min_length=1, max_length=MAX_MODEL_NAME_CHARS)] | SkipJsonSchema[None] = (
        Field(
            default=None,
            description="One of the provider's models (ai.llm.models) to answer with, instead of the "
            "configured one; only for callers allowed to list models.",
            json_schema_extra=_drop_default,
        )
    )


def _request(params: AnswerParams) -> tuple[str, list[AnswerSourceRef], list[AnswerTurn]]:
    """The trimmed query, the deduplicated source refs (scores clamped) and the earlier turns.

    Raises:
        errors.InvalidParams: a blank query, no messages and no turns, turns over their byte limit,
            or an item the core refuses (a null score).
    """
    try:
        turns = normalize_answer_turns(
            [t.model_dump(by_alias=True, exclude_unset=True) for t in params.turns]
        )
        items = [item.model_dump(by_alias=True, exclude_unset=True) for item in params.messages]
        # A follow-up may come without sources of its own; a first question needs 1 to 20.
        refs = normalize_answer_sources(items) if items or not turns else []
        return normalize_answer_query(params.query), refs, turns
    except InvalidAnswerRequestError as exc:
        raise errors.InvalidParams(f"Invalid parameters: {exc}") from None


async def _follow_up_search(req: ApiRequest[AnswerParams]) -> FollowUpSearch:
    """The app's search service, for a follow-up's own search."""
    return FollowUpSearch(await req.services.search.get())


@router.post(
    "ai.search.answer",
    AnswerParams,
    title="Answer a question, citing messages",
    reply=AnswerReply,
    open_world=True,
    description=(
        "Answer a question from messages the authenticated user can read, citing them as [N]. Pass the "
        "message ids (and scores) that ai.search returned; the server loads the texts itself. Send "
        "`Accept: text/event-stream` to receive the answer as it is written."
    ),
    rate_limit=ANSWER_RATE_LIMIT,
    refuses=ANSWER_REFUSALS,
    event_stream=True,
)
async def search_answer(req: ApiRequest[AnswerParams]) -> Mapping[str, Any] | Response:
    query, refs, turns = _request(req.params)
    model = req.params.model
    assert req.caller is not None
    if model is not None and not may_list_models(req.caller.permissions):
        raise errors.Forbidden(MODEL_CHOICE_FORBIDDEN)
    service = req.services.answers
    search = await _follow_up_search(req) if turns else None
    if not wants_event_stream(req.http.headers.get("accept")):
        with answer_refusals():
            result = await service.answer(req.user, query, refs, model=model, turns=turns, search=search)
        return answer_json(result)
    events = service.answer_events(req.user, query, refs, model=model, turns=turns, search=search)
    # The first text is awaited here, so a failure before any text (answers off, sources refused,
    # provider down or too slow to start) is a JSON error with its status, not a 200 stream.
    firsts: list[Event] = []
    try:
        with answer_refusals():
            while not firsts or isinstance(firsts[-1], AnswerSources):
                firsts.append(await anext(events))
    except BaseException:
        await events.aclose()
        raise
    return StreamingResponse(
        _event_stream(firsts, events),
        media_type=SSE_MEDIA_TYPE,
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


def _encoded(event: Event) -> bytes:
    if isinstance(event, AnswerSources):
        return sse_event("sources", {"citations": citations_json(event.citations)})
    if isinstance(event, AnswerDone):
        return sse_event("done", answer_json(event.result))
    return sse_event("delta", {"text": event.text})


async def _event_stream(firsts: list[Event], events: AsyncGenerator[Event, None]) -> AsyncIterator[bytes]:
    async with aclosing(events):
        try:
            # The events awaited before the response started leave together, the first text with them.
            yield b"".join(_encoded(event) for event in firsts)
            event = firsts[-1]
            while not isinstance(event, AnswerDone):
                event = await anext(events)
                yield _encoded(event)
        except (AnswerError, ProviderError) as exc:
            refusal = refusal_of(exc)
            yield sse_event("error", {"errorType": refusal.error_type, "error": refusal.message})
        except Exception:
            # A bug, not a provider failure: the client still gets a closed stream with an error.
            log.exception("answer stream failed")
            failure = errors.ApiError()
            yield sse_event("error", {"errorType": failure.error_type, "error": failure.message})


@router.get(
    "ai.llm.models",
    NoParams,
    title="List the answer models",
    open_world=True,
    description="List the models the configured LLM provider offers (for the answer model setting).",
    rate_limit=MODELS_RATE_LIMIT,
    refuses=(Refusal(errors.Forbidden.status, MODELS_FORBIDDEN),),
)
async def llm_models(req: ApiRequest[NoParams]) -> dict[str, Any]:
    assert req.caller is not None
    if not may_list_models(req.caller.permissions):
        raise errors.Forbidden(MODELS_FORBIDDEN)
    options = await req.services.answers.models()
    return {"data": [{"key": option.key, "label": option.label} for option in options]}
