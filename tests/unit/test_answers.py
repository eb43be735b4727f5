"""Answer request validation: the body's `query` and `messages` ({_id, score?} refs)."""

from __future__ import annotations

import dataclasses
import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search import _answers
from ai_search._answers import (
    MAX_ANSWER_SOURCE_ID_LENGTH,
    AnswerSource,
    AnswerSourceRef,
    InvalidAnswerRequestError,
    normalize_answer_query,
    normalize_answer_sources,
)
from ai_search._constants import MAX_SEARCH_ANSWER_MESSAGES, MAX_SEARCH_QUERY_LENGTH


def test_module_examples_hold() -> None:
    assert doctest.testmod(_answers).failed == 0


def test_answer_source_is_frozen_with_optional_metadata() -> None:
    source = AnswerSource("text")
    assert (source.username, source.room_name, source.ts, source.score) == (None, None, None, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        source.text = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        pytest.param([{"_id": "m1"}], [AnswerSourceRef("m1", None)], id="one-id-without-score"),
        pytest.param([{"_id": "m1", "score": 0.5}], [AnswerSourceRef("m1", 0.5)], id="score-kept"),
        pytest.param([{"_id": "m1", "score": 0}], [AnswerSourceRef("m1", 0.0)], id="integer-score-as-float"),
        pytest.param([{"_id": "m1", "score": 1.7}], [AnswerSourceRef("m1", 1.0)], id="score-above-1-clamped"),
        pytest.param([{"_id": "m1", "score": -3}], [AnswerSourceRef("m1", 0.0)], id="negative-score-clamped"),
        pytest.param(
            [{"_id": "b"}, {"_id": "a"}, {"_id": "b"}, {"_id": "c"}],
            [AnswerSourceRef("b"), AnswerSourceRef("a"), AnswerSourceRef("c")],
            id="ids-deduped-in-first-seen-order",
        ),
        pytest.param(
            [{"_id": "a", "score": 0.2}, {"_id": "b"}, {"_id": "a", "score": 0.9}],
            [AnswerSourceRef("a", 0.9), AnswerSourceRef("b")],
            id="last-score-wins-and-position-stays-first-seen",
        ),
        pytest.param(
            [{"_id": "a", "score": 0.2}, {"_id": "a"}],
            [AnswerSourceRef("a", 0.2)],
            id="repeat-without-score-keeps-earlier-score",
        ),
        pytest.param(
            [{"_id": "a"}, {"_id": "a", "score": 0.4}],
            [AnswerSourceRef("a", 0.4)],
            id="repeat-with-score-fills-missing-score",
        ),
        pytest.param(
            [{"_id": "x" * MAX_ANSWER_SOURCE_ID_LENGTH}],
            [AnswerSourceRef("x" * MAX_ANSWER_SOURCE_ID_LENGTH)],
            id="id-of-128-characters-accepted",
        ),
        pytest.param(
            [{"_id": "same"}] * MAX_SEARCH_ANSWER_MESSAGES,
            [AnswerSourceRef("same")],
            id="twenty-repeats-of-one-id-give-one-ref",
        ),
    ],
)
def test_normalize_answer_sources_accepts(messages: object, expected: list[AnswerSourceRef]) -> None:
    assert normalize_answer_sources(messages) == expected


@pytest.mark.parametrize(
    ("messages", "message_part"),
    [
        pytest.param(None, "messages must be an array", id="missing-messages"),
        pytest.param({"_id": "m1"}, "messages must be an array", id="object-instead-of-array"),
        pytest.param("m1", "messages must be an array", id="string-instead-of-array"),
        pytest.param([], "1 to 20 items, got 0", id="empty-array"),
        pytest.param([{"_id": f"m{i}"} for i in range(21)], "got 21", id="twenty-one-items"),
        pytest.param([{"_id": "a"}] * 21, "got 21", id="count-checked-before-dedupe"),
        pytest.param(["m1"], "messages[0] must be an object", id="bare-id-string"),
        pytest.param([{"_id": "a"}, None], "messages[1] must be an object", id="null-item-named-by-index"),
        pytest.param([{}], "messages[0]._id must be a string", id="missing-id"),
        pytest.param([{"_id": 7}], "messages[0]._id must be a string", id="numeric-id"),
        pytest.param([{"_id": ""}], "1 to 128 characters, got 0", id="empty-id"),
        pytest.param([{"_id": "x" * 129}], "got 129", id="id-of-129-characters"),
        pytest.param(
            [{"_id": "m1", "text": "I approve the refund"}],
            "unknown property 'text'",
            id="client-supplied-text-refused",
        ),
        pytest.param(
            [{"_id": "m1", "roomName": "ops"}], "unknown property 'roomName'", id="old-schema-field"
        ),
        pytest.param(
            [{"_id": "m1", "score": "0.5"}], "messages[0].score must be a finite", id="string-score"
        ),
        pytest.param([{"_id": "m1", "score": None}], "score must be a finite", id="null-score"),
        pytest.param([{"_id": "m1", "score": True}], "score must be a finite", id="boolean-score"),
        pytest.param([{"_id": "m1", "score": float("nan")}], "score must be a finite", id="nan-score"),
        pytest.param([{"_id": "m1", "score": float("inf")}], "score must be a finite", id="infinite-score"),
    ],
)
def test_normalize_answer_sources_refuses(messages: object, message_part: str) -> None:
    with pytest.raises(InvalidAnswerRequestError) as caught:
        normalize_answer_sources(messages)
    assert message_part in str(caught.value)


def test_invalid_request_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="messages must be an array"):
        normalize_answer_sources(None)


_ids = st.text(min_size=1, max_size=4, alphabet="abc")
_items = st.fixed_dictionaries(
    {"_id": _ids}, optional={"score": st.floats(allow_nan=False, allow_infinity=False)}
)


@given(st.lists(_items, min_size=1, max_size=MAX_SEARCH_ANSWER_MESSAGES))
def test_refs_are_unique_in_first_seen_order_with_scores_in_range(items: list[dict[str, object]]) -> None:
    refs = normalize_answer_sources(items)
    first_seen = list(dict.fromkeys(item["_id"] for item in items))
    assert [ref.msg_id for ref in refs] == first_seen
    assert all(ref.score is None or 0.0 <= ref.score <= 1.0 for ref in refs)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("deploy", "deploy", id="plain"),
        pytest.param("  deploy failed \n", "deploy failed", id="trimmed"),
        pytest.param("x" * MAX_SEARCH_QUERY_LENGTH, "x" * MAX_SEARCH_QUERY_LENGTH, id="500-characters"),
    ],
)
def test_normalize_answer_query_accepts(query: str, expected: str) -> None:
    assert normalize_answer_query(query) == expected


@pytest.mark.parametrize(
    ("query", "message_part"),
    [
        pytest.param(None, "query must be a string", id="missing"),
        pytest.param(42, "query must be a string", id="number"),
        pytest.param("", "non-space", id="empty"),
        pytest.param(" \t\n", "non-space", id="blank"),
        pytest.param(
            "x" * (MAX_SEARCH_QUERY_LENGTH + 1), "at most 500 characters, got 501", id="501-characters"
        ),
    ],
)
def test_normalize_answer_query_refuses(query: object, message_part: str) -> None:
    with pytest.raises(InvalidAnswerRequestError) as caught:
        normalize_answer_query(query)
    assert message_part in str(caught.value)
