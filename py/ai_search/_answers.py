"""Answer sources: the record an answer is grounded on, and validation of the answer request.

`POST /api/v1/ai.search.answer` takes message *ids*, never texts (DESIGN decision 4): the server loads
each message itself, after checking the caller may see it, so a client cannot put words in a source's
mouth. This module validates the ids part of that body and defines `AnswerSource`, the record the
server builds from the store and hands to the prompt builder (`_prompt`) or to the extractive
answerer (`_extractive`):

    >>> refs = normalize_answer_sources([{"_id": "m1", "score": 1.7}, {"_id": "m2"}, {"_id": "m1"}])
    >>> [(r.msg_id, r.score) for r in refs]
    [('m1', 1.0), ('m2', None)]

Errors: every refusal raises `InvalidAnswerRequestError` (a `ValueError`), which the server maps to
400 with the message as given; messages name the offending field (`messages[2]._id`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ._constants import MAX_SEARCH_ANSWER_MESSAGES, MAX_SEARCH_QUERY_LENGTH

__all__ = [
    "MAX_ANSWER_SOURCE_ID_LENGTH",
    "AnswerSource",
    "AnswerSourceRef",
    "InvalidAnswerRequestError",
    "body_object",
    "normalize_answer_query",
    "normalize_answer_sources",
    "source_ref",
]

# Characters of one message id in the answer body, as in the upstream schema (`_id`: 1..128).
MAX_ANSWER_SOURCE_ID_LENGTH = 128

# The upstream item schema holds `_id` and `score` only; older clients also sent text, username,
# roomName and ts, which we refuse instead of silently ignoring, so no client believes its text is used.
_SOURCE_ITEM_KEYS = frozenset({"_id", "score"})


class InvalidAnswerRequestError(ValueError):
    """The answer request body breaks the schema; the message says which field and why (HTTP 400)."""


@dataclass(frozen=True, slots=True)
class AnswerSource:
    """One source message as the answer sees it, loaded from the store by the server.

    `ts` is an ISO 8601 string; `score` is the retrieval score in [0, 1] the client sent back, or
    None. Empty or None metadata is left out of the prompt. `conversation` groups the messages of one
    conversation (a thread, or a stretch of a room around a source) under one key, so an extractive
    answer can weigh a reply by the thread it is in; the prompt does not use it. `author_name` is the
    author's display name ("Carol Diaz"): an extractive answer names the person who did something by
    it, and the citation check counts it among the source's words, as it counts the username.
    """

    text: str
    username: str | None = None
    room_name: str | None = None
    ts: str | None = None
    score: float | None = None
    conversation: str | None = None
    author_name: str | None = None


@dataclass(frozen=True, slots=True)
class AnswerSourceRef:
    """A message id the client wants the answer grounded on, and the score it saw for it."""

    msg_id: str
    score: float | None = None


def normalize_answer_query(query: object) -> str:
    """Check the answer's `query` (1..500 characters, not blank) and return it trimmed.

    Raises:
        InvalidAnswerRequestError: not a string, blank, or longer than `MAX_SEARCH_QUERY_LENGTH`.
    """
    if not isinstance(query, str):
        raise InvalidAnswerRequestError("query must be a string")
    if len(query) > MAX_SEARCH_QUERY_LENGTH:
        raise InvalidAnswerRequestError(
            f"query must be at most {MAX_SEARCH_QUERY_LENGTH} characters, got {len(query)}"
        )
    trimmed = query.strip()
    if not trimmed:
        raise InvalidAnswerRequestError("query must contain at least one non-space character")
    return trimmed


def _clamped_score(value: object, field: str) -> float:
    # bool is an int subclass in Python but not a number in JSON Schema, so refuse it explicitly.
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidAnswerRequestError(f"{field} must be a finite number between 0 and 1")
    return min(1.0, max(0.0, float(value)))


def body_object(item: object, field: str, keys: frozenset[str], shape: str) -> Mapping[str, object]:
    """`item` as an object holding only `keys`; `shape` says what it should be ("_id and score").

    Raises:
        InvalidAnswerRequestError: not an object, or an unknown property (the message names it).
    """
    if not isinstance(item, Mapping):
        raise InvalidAnswerRequestError(f"{field} must be an object with {shape}")
    unknown = sorted(str(key) for key in item if key not in keys)
    if unknown:
        raise InvalidAnswerRequestError(
            f"{field} has unknown property {unknown[0]!r}; only {shape} are allowed"
        )
    return item


def source_ref(item: object, field: str) -> AnswerSourceRef:
    """One `{_id, score?}` item of the body, `field` naming it in errors (`messages[2]`).

    Raises:
        InvalidAnswerRequestError: not an object, an unknown property, a bad `_id` or score.
    """
    item = body_object(item, field, _SOURCE_ITEM_KEYS, "_id and an optional score")
    msg_id = item.get("_id")
    if not isinstance(msg_id, str):
        raise InvalidAnswerRequestError(f"{field}._id must be a string")
    if not 1 <= len(msg_id) <= MAX_ANSWER_SOURCE_ID_LENGTH:
        raise InvalidAnswerRequestError(
            f"{field}._id must be 1 to {MAX_ANSWER_SOURCE_ID_LENGTH} characters, got {len(msg_id)}"
        )
    score = _clamped_score(item["score"], f"{field}.score") if "score" in item else None
    return AnswerSourceRef(msg_id, score)


def normalize_answer_sources(messages: object) -> list[AnswerSourceRef]:
    """Validate the body's `messages` (1..20 `{_id, score?}` objects) and return one ref per id.

    Ids are deduped in first-seen order. A score is clamped to [0, 1] rather than refused, because
    clients echo retrieval scores that float arithmetic can push a hair outside the range. For a
    repeated id the last *given* score wins; a later occurrence without a score keeps the earlier one.
    The item count is checked before deduplication, as the upstream schema does.

    Raises:
        InvalidAnswerRequestError: not a list, 0 or more than 20 items, an item that is not an object,
            an unknown property, an `_id` that is not a 1..128 character string, or a score that is
            not a finite number.
    """
    if not isinstance(messages, list):
        raise InvalidAnswerRequestError(
            f"messages must be an array of 1 to {MAX_SEARCH_ANSWER_MESSAGES} {{_id, score?}} objects"
        )
    if not 1 <= len(messages) <= MAX_SEARCH_ANSWER_MESSAGES:
        raise InvalidAnswerRequestError(
            f"messages must hold 1 to {MAX_SEARCH_ANSWER_MESSAGES} items, got {len(messages)}"
        )
    scores: dict[str, float | None] = {}
    for index, item in enumerate(messages):
        ref = source_ref(item, f"messages[{index}]")
        if ref.score is not None or ref.msg_id not in scores:
            scores[ref.msg_id] = ref.score
    return [AnswerSourceRef(msg_id, score) for msg_id, score in scores.items()]
