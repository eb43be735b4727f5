"""Kept answers: share one by link, open one as a reader, rate one (thumbs up or down, and why).

Every answer ``ai.search.answer`` gives carries an ``answerId`` (``answers.records``). Its owner may
share it (``ai.search.answer.share``: a link any signed-in reader may open); whoever may open it
(the owner, or anyone once it is shared) gets it with ``ai.search.answer.get``, as they may see it:
sentences drawn from sources in rooms they do not read are left out, with a note. The same people
may rate it (``ai.search.answer.feedback``); ratings are kept per person and exported by an admin
with ``ai-search feedback export``. An answer someone may not open answers as one that does not exist.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ai_search import to_iso_timestamp

from .. import errors
from ..answers.records import ANSWER_NOT_FOUND, openable_answer, reader_view
from ..ratelimit import RateLimit
from ..rest import ApiRequest, Refusal, Router
from ..store import base as store_base
from ..store.rules import MAX_FEEDBACK_REASON_LENGTH
from .answers import answer_refusals
from .params import Id, Params
from .shapes import opened_answer_json

__all__ = ["ANSWER_LINK_PARAMETER", "router"]

router = Router(tags=("AI",))

# Opens of kept answers per user and minute: a page of shared links, each opened once.
ANSWER_GET_RATE_LIMIT = RateLimit(count=60, period_seconds=60)
# Shares and ratings per user and minute: one click each.
ANSWER_WRITE_RATE_LIMIT = RateLimit(count=30, period_seconds=60)
# The page's query parameter that opens a shared answer: ``/?answer=<answerId>``.
ANSWER_LINK_PARAMETER = "answer"
_NOT_FOUND = (Refusal(errors.NotFound.status, ANSWER_NOT_FOUND),)


class AnswerIdParams(Params):
    answerId: Id = Field(description="The answerId ai.search.answer gave.")


class FeedbackParams(Params):
    answerId: Id = Field(description="The answerId ai.search.answer gave.")
    rating: Literal["up", "down"] = Field(description="Thumbs up or thumbs down.")
    reason: Annotated[str, Field(max_length=MAX_FEEDBACK_REASON_LENGTH)] = Field(
        default="", description="Why, in a few words (optional)."
    )


@router.get(
    "ai.search.answer.get",
    AnswerIdParams,
    title="Open a kept answer",
    description="A kept answer, as the caller may see it: yours, or one shared with you. Sentences drawn "
    "from messages in rooms you cannot read are left out, and a note says so.",
    rate_limit=ANSWER_GET_RATE_LIMIT,
    refuses=_NOT_FOUND,
)
async def get_answer(req: ApiRequest[AnswerIdParams]) -> dict[str, Any]:
    store = req.services.store
    with answer_refusals():
        stored = openable_answer(store, req.user, req.params.answerId)
    feedback = store.answer_feedback(stored.id, req.user.id)
    return opened_answer_json(reader_view(store, req.user, stored, feedback))


@router.post(
    "ai.search.answer.share",
    AnswerIdParams,
    title="Share an answer",
    idempotent=True,
    description="Share one of your answers: its link then opens for any signed-in reader, who sees only "
    "what their own rooms allow.",
    rate_limit=ANSWER_WRITE_RATE_LIMIT,
    refuses=_NOT_FOUND,
)
async def share_answer(req: ApiRequest[AnswerIdParams]) -> dict[str, Any]:
    store = req.services.store
    with answer_refusals():
        stored = openable_answer(store, req.user, req.params.answerId)
    if stored.user_id != req.user.id:
        raise errors.NotFound(ANSWER_NOT_FOUND, error_type="error-answer-not-found")
    shared = store.share_answer(stored.id)
    site = req.services.settings.site_url.rstrip("/")
    assert shared.shared_at is not None
    return {
        "answerId": shared.id,
        "link": f"{site}/?{ANSWER_LINK_PARAMETER}={shared.id}",
        "sharedAt": to_iso_timestamp(shared.shared_at),
    }


@router.post(
    "ai.search.answer.feedback",
    FeedbackParams,
    title="Rate an answer",
    destructive=True,
    idempotent=True,
    description="Rate an answer you may open: thumbs up or down, with an optional reason. Rating again "
    "replaces your earlier rating.",
    rate_limit=ANSWER_WRITE_RATE_LIMIT,
    refuses=_NOT_FOUND,
)
async def answer_feedback(req: ApiRequest[FeedbackParams]) -> dict[str, Any]:
    store, params = req.services.store, req.params
    with answer_refusals():
        stored = openable_answer(store, req.user, params.answerId)
    try:
        feedback = store.rate_answer(stored.id, req.user.id, params.rating, params.reason)
    except store_base.InvalidValue as error:
        raise errors.InvalidParams(f"Invalid parameters: {error}") from None
    return {"answerId": stored.id, "rating": feedback.rating, "reason": feedback.reason}
