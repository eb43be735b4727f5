"""The answer panel's pure helpers on CPython: the citation check's verdicts read defensively, the
answer cut at its sentences (whole, once, in order), cited ids for a follow-up's turn."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search import append_turn
from ai_search_web.answer_text import (
    CitationLink,
    CitedMessage,
    SentenceCheck,
    citation_link,
    cited_ids,
    read_citations,
    read_sentences,
    sentence_runs,
    unsupported_text,
)

pytestmark = pytest.mark.browser

ANSWER = "The deploy failed on billing-api [1]. It was a solar flare [2].\nRolled back [1]."


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(
            [
                {
                    "text": "A [1].",
                    "citations": [1],
                    "supported": True,
                    "spans": [{"n": 1, "start": 0, "end": 4}],
                }
            ],
            [SentenceCheck("A [1].", (1,), True, {1: (0, 4)})],
            id="a-whole-verdict",
        ),
        pytest.param(
            [{"text": "B.", "supported": None}],
            [SentenceCheck("B.", (), None, {})],
            id="uncited-is-unchecked",
        ),
        pytest.param(
            [{"text": "C [2].", "citations": [2, "x", True, -1], "supported": "no"}],
            [SentenceCheck("C [2].", (2,), None, {})],
            id="bad-numbers-and-verdicts-dropped",
        ),
        pytest.param(
            [{"text": "D.", "spans": [{"n": 1, "start": 5, "end": 2}, {"n": 2, "start": 0}, "x"]}],
            [SentenceCheck("D.", (), None, {})],
            id="bad-spans-dropped",
        ),
        pytest.param([{"text": ""}, {"citations": [1]}, "E.", None], [], id="no-text-no-sentence"),
        pytest.param({"text": "F."}, [], id="not-a-list"),
    ],
)
def test_read_sentences(raw: Any, expected: list[SentenceCheck]) -> None:
    assert read_sentences(raw) == expected


def test_sentence_runs_find_each_sentence_in_order() -> None:
    checks = read_sentences(
        [
            {"text": "The deploy failed on billing-api [1].", "citations": [1], "supported": True},
            {"text": "It was a solar flare [2].", "citations": [2], "supported": False},
            {"text": "not in the answer.", "supported": False},
            {"text": "Rolled back [1].", "citations": [1], "supported": True},
        ]
    )
    runs = sentence_runs(ANSWER, checks)
    assert [(text, check.supported if check else None) for text, check in runs] == [
        ("The deploy failed on billing-api [1].", True),
        (" ", None),
        ("It was a solar flare [2].", False),
        ("\n", None),
        ("Rolled back [1].", True),
    ]


@given(
    answer=st.text(alphabet="ab [1].\n", max_size=40),
    texts=st.lists(st.text(alphabet="ab [1].\n", min_size=1, max_size=8), max_size=6),
)
def test_sentence_runs_give_back_the_answer_whole(answer: str, texts: list[str]) -> None:
    runs = sentence_runs(answer, [SentenceCheck(text, supported=False) for text in texts])
    assert "".join(text for text, _ in runs) == answer
    assert all(text for text, _ in runs)


def test_cited_ids_are_the_next_turns_messages() -> None:
    citations = read_citations(
        [{"n": 1, "msgId": "m1", "rid": "r"}, {"n": 2, "msgId": "m2"}, {"n": 3, "msgId": "m3"}, {"n": "4"}]
    )
    assert citations == {1: CitedMessage("m1", "r"), 2: CitedMessage("m2"), 3: CitedMessage("m3")}
    ids = cited_ids(ANSWER, {n: c.msg_id for n, c in citations.items()})
    assert ids == ["m1", "m2"], "in the order first cited, each once; [3] was never cited"
    assert append_turn([], "why", ids) == [{"query": "why", "messages": [{"_id": "m1"}, {"_id": "m2"}]}]


@pytest.mark.parametrize(
    ("count", "start"),
    [
        pytest.param(0, "", id="none-says-nothing"),
        pytest.param(1, "1 sentence of this answer is not", id="one"),
        pytest.param(3, "3 sentences of this answer are not", id="several"),
    ],
)
def test_unsupported_text(count: int, start: str) -> None:
    assert unsupported_text(count).startswith(start) and bool(unsupported_text(count)) is bool(count)


CAROL = {"username": "carol", "name": "Carol Diaz"}
OPS = {"_id": "r-ops", "t": "c", "name": "ops", "fname": "ops"}


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        pytest.param(
            {"n": 4, "msgId": "m", "rid": "r-ops", "u": CAROL, "room": OPS},
            CitedMessage("m", "r-ops", "Carol Diaz", "#ops"),
            id="author-and-room",
        ),
        pytest.param(
            {"n": 4, "msgId": "m", "u": {"username": "carol"}, "room": {"t": "d", "name": "alice__carol"}},
            CitedMessage("m", "", "carol", "Direct: alice, carol"),
            id="a-username-in-a-direct-room",
        ),
        pytest.param(
            {"n": 4, "msgId": "m", "u": "carol", "room": ["ops"]}, CitedMessage("m"), id="malformed-left-out"
        ),
    ],
)
def test_citations_say_who_wrote_what_and_where(item: dict[str, Any], expected: CitedMessage) -> None:
    assert read_citations([item]) == {4: expected}


LISTED = {"m-listed": 21}.get


@pytest.mark.parametrize(
    ("n", "cited", "expected"),
    [
        pytest.param(
            9,
            {9: CitedMessage("m-listed", "r-ops", "Carol Diaz", "#ops")},
            CitationLink("m-listed", "r-ops", 21, "[21]", "Result 21"),
            id="a-listed-message-shows-the-lists-number-not-the-servers",
        ),
        pytest.param(
            21,
            {21: CitedMessage("m-other", "r-ops", "Carol Diaz", "#ops")},
            CitationLink(
                "m-other", "r-ops", None, "[Carol Diaz in #ops]", "Carol Diaz in #ops: a message not among the results"
            ),
            id="an-unlisted-message-is-named-never-numbered",
        ),
        pytest.param(
            2,
            {2: CitedMessage("m-other")},
            CitationLink("m-other", "", None, "[a message]", "a message: a message not among the results"),
            id="nothing-known-of-it",
        ),
        pytest.param(
            2,
            {2: CitedMessage("m-other", room="#ops")},
            CitationLink(
                "m-other", "", None, "[a message in #ops]", "a message in #ops: a message not among the results"
            ),
            id="only-its-room",
        ),
        pytest.param(3, {2: CitedMessage("m-listed")}, None, id="a-number-the-server-has-not-named"),
    ],
)
def test_a_citation_shows_the_lists_number_of_its_message(
    n: int, cited: dict[int, CitedMessage], expected: CitationLink | None
) -> None:
    assert citation_link(n, cited, LISTED) == expected
