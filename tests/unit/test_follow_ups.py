"""Follow-ups: what a follow-up asks after the earlier turns, the turns' validation, the merged sources."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search import _follow_ups
from ai_search._answers import AnswerSourceRef, InvalidAnswerRequestError
from ai_search._constants import MAX_SEARCH_ANSWER_MESSAGES, MAX_SEARCH_QUERY_LENGTH
from ai_search._follow_ups import (
    FOLLOW_UP_EARLIER_SOURCES,
    FOLLOW_UP_SEARCH_RESULTS,
    MAX_ANSWER_TURNS,
    MAX_ANSWER_TURNS_BYTES,
    AnswerTurn,
    append_turn,
    follow_up_sources,
    normalize_answer_turns,
    resolve_follow_up,
    resolve_turns,
)

FAILOVER = "why did the postgres failover take so long"


def test_module_examples_hold() -> None:
    assert doctest.testmod(_follow_ups).failed == 0


@pytest.mark.parametrize(
    ("follow_up", "expected"),
    [
        pytest.param("and who fixed it?", "who fixed it? postgres failover", id="continuation-and-pointer"),
        pytest.param("who fixed it?", "who fixed it? postgres failover", id="pointer"),
        pytest.param("when?", "when? postgres failover", id="too-short-to-stand-alone"),
        pytest.param("what about the failover drill?", "the failover drill? postgres", id="what-about"),
        pytest.param("what did the pentest find?", "what did the pentest find?", id="a-new-question"),
    ],
)
def test_resolve_follow_up(follow_up: str, expected: str) -> None:
    assert resolve_follow_up(follow_up, [FAILOVER]) == expected


def test_a_first_question_is_its_own_search() -> None:
    assert resolve_follow_up("and who fixed it?", []) == "and who fixed it?"


def test_each_turn_is_read_after_the_ones_before_it() -> None:
    turns = [AnswerTurn(FAILOVER, ()), AnswerTurn("and when?", ())]
    # "and when?" is read as "when? postgres failover", which carries the failover to the next turn.
    assert resolve_turns("who fixed it?", turns) == "who fixed it? postgres failover"


def test_the_search_text_fits_the_query_limit() -> None:
    long_question = " ".join(f"word{i}" for i in range(200))
    assert len(resolve_follow_up("and then?", [long_question])) <= MAX_SEARCH_QUERY_LENGTH


@pytest.mark.parametrize(
    ("turns", "needle"),
    [
        pytest.param("x", "must be an array", id="not-a-list"),
        pytest.param(
            [{"query": FAILOVER}] * (MAX_ANSWER_TURNS + 1), f"at most {MAX_ANSWER_TURNS}", id="too-many"
        ),
        pytest.param(
            [{"query": "é" * 500}] * MAX_ANSWER_TURNS, f"{MAX_ANSWER_TURNS_BYTES} bytes", id="too-many-bytes"
        ),
        pytest.param([["q"]], "turns[0] must be an object", id="not-an-object"),
        pytest.param([{"query": FAILOVER, "answer": "it was the pool"}], "'answer'", id="no-texts"),
        pytest.param([{"query": 3}], "turns[0].query must be a string", id="query-not-a-string"),
        pytest.param(
            [{"query": FAILOVER, "messages": [{"_id": ""}]}], "turns[0].messages[0]._id", id="bad-id"
        ),
        pytest.param([{"query": FAILOVER, "messages": [{"_id": "m"}] * 21}], "at most 20", id="too-many-ids"),
    ],
)
def test_bad_turns_are_refused(turns: object, needle: str) -> None:
    with pytest.raises(InvalidAnswerRequestError) as caught:
        normalize_answer_turns(turns)
    assert needle in str(caught.value)


def test_turns_are_trimmed_and_deduplicated() -> None:
    (turn,) = normalize_answer_turns([{"query": f"  {FAILOVER} ", "messages": [{"_id": "a"}, {"_id": "a"}]}])
    assert turn == AnswerTurn(FAILOVER, (AnswerSourceRef("a"),))
    assert normalize_answer_turns(None) == []


def refs(prefix: str, count: int) -> list[AnswerSourceRef]:
    return [AnswerSourceRef(f"{prefix}{i}") for i in range(count)]


def test_sources_come_in_order_with_their_shares() -> None:
    turns = [AnswerTurn("first", tuple(refs("old", 15))), AnswerTurn("second", tuple(refs("recent", 3)))]
    merged = [r.msg_id for r in follow_up_sources(refs("own", 2), refs("found", 15), turns)]
    assert merged[:2] == ["own0", "own1"]
    assert merged[2 : 2 + FOLLOW_UP_SEARCH_RESULTS] == [f"found{i}" for i in range(FOLLOW_UP_SEARCH_RESULTS)]
    assert merged[2 + FOLLOW_UP_SEARCH_RESULTS : 2 + FOLLOW_UP_SEARCH_RESULTS + 3] == [
        "recent0",
        "recent1",
        "recent2",
    ]
    assert len(merged) == MAX_SEARCH_ANSWER_MESSAGES


_ids = st.lists(st.sampled_from([f"m{i}" for i in range(30)]), max_size=25)


@given(current=_ids, found=_ids, earlier=st.lists(_ids, max_size=MAX_ANSWER_TURNS))
def test_merged_sources_are_unique_and_bounded(
    current: list[str], found: list[str], earlier: list[list[str]]
) -> None:
    turns = [AnswerTurn("q", tuple(AnswerSourceRef(i) for i in ids)) for ids in earlier]
    merged = [
        r.msg_id
        for r in follow_up_sources(
            [AnswerSourceRef(i) for i in current], [AnswerSourceRef(i) for i in found], turns
        )
    ]
    assert len(merged) == len(set(merged)) <= MAX_SEARCH_ANSWER_MESSAGES
    own = list(dict.fromkeys(current))[:MAX_SEARCH_ANSWER_MESSAGES]
    assert merged[: len(own)] == own
    older = {i for ids in earlier for i in ids}
    assert set(merged) <= set(current) | set(found) | older
    assert (
        sum(1 for m in merged if m not in own and m in found and m not in older) <= FOLLOW_UP_SEARCH_RESULTS
    )
    assert sum(1 for m in merged if m not in own and m not in found) <= FOLLOW_UP_EARLIER_SOURCES


def test_the_turns_a_client_keeps_are_the_last_ones_and_valid() -> None:
    turns: list[dict[str, object]] = []
    for n in range(MAX_ANSWER_TURNS + 2):
        turns = append_turn(turns, f"question {n}", [f"m{i}" for i in range(30)])
    assert [t["query"] for t in turns] == [f"question {n}" for n in range(2, MAX_ANSWER_TURNS + 2)]
    assert [len(t["messages"]) for t in turns] == [20] * MAX_ANSWER_TURNS  # type: ignore[arg-type]
    assert normalize_answer_turns(turns)[-1].query == f"question {MAX_ANSWER_TURNS + 1}"
