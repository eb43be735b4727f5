"""Extractive answers (no LLM configured): sentence choice, citations, fallbacks, determinism."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search import _extractive
from ai_search._answers import AnswerSource
from ai_search._citations import extract_citations
from ai_search._constants import MAX_SEARCH_ANSWER_MESSAGES, MAX_SEARCH_ANSWER_TEXT_LENGTH
from ai_search._extractive import (
    EXTRACTIVE_ANSWER_MAX_SENTENCES,
    EXTRACTIVE_NO_MATCH_PREFIX,
    EXTRACTIVE_NO_SOURCES_TEXT,
    EXTRACTIVE_SENTENCE_MAX_CHARS,
    build_extractive_answer,
)

INCIDENT = [
    AnswerSource("Deploy to prod failed at 10:02. The disk on db-2 was full.", "alice", "ops", None, 0.9),
    AnswerSource("I rolled back the deploy at 10:05. Everything is green again!", "bob", "ops", None, 0.8),
    AnswerSource("Lunch is at noon today.\nBring snacks.", "carol", "random", None, 0.3),
    AnswerSource("Postmortem: disk alerts were muted since October.", "dave", "infra", None, 0.5),
]


def test_module_examples_hold() -> None:
    assert doctest.testmod(_extractive).failed == 0


@pytest.mark.parametrize(
    ("query", "sources", "expected"),
    [
        pytest.param(
            "why did the deploy fail?",
            INCIDENT,
            "Deploy to prod failed at 10:02. [1]\nI rolled back the deploy at 10:05. [2]",
            id="one-sentence-per-source-best-first",
        ),
        pytest.param(
            "disk db-2",
            INCIDENT,
            "The disk on db-2 was full. [1]\nPostmortem: disk alerts were muted since October. [4]",
            id="rare-terms-outweigh-common-ones",
        ),
        pytest.param(
            "snacks",
            INCIDENT,
            "Bring snacks. [3]",
            id="line-break-splits-sentences-and-citation-is-source-position",
        ),
        pytest.param(
            "DEPLOY",
            [AnswerSource("deploy done")],
            "deploy done [1]",
            id="case-folded-match",
        ),
        pytest.param(
            "the deploy",
            [AnswerSource("The cat sat."), AnswerSource("Deploy ok.")],
            "Deploy ok. [2]",
            id="stop-words-do-not-match",
        ),
        pytest.param(
            "who",
            [AnswerSource("who knows"), AnswerSource("nobody")],
            "who knows [1]",
            id="all-stop-word-question-uses-its-words",
        ),
        pytest.param(
            "deploy",
            [AnswerSource("deploy one. deploy two. deploy three. deploy four.")],
            "deploy one. [1]\ndeploy two. [1]\ndeploy three. [1]",
            id="single-source-fills-up-to-the-maximum",
        ),
        pytest.param(
            "deploy",
            [AnswerSource("deploy A.", score=0.1), AnswerSource("deploy B.", score=0.9)],
            "deploy B. [2]\ndeploy A. [1]",
            id="retrieval-score-breaks-ties",
        ),
        pytest.param(
            "deploy",
            [AnswerSource("deploy A."), AnswerSource("deploy B.")],
            "deploy A. [1]\ndeploy B. [2]",
            id="full-tie-goes-to-earlier-source",
        ),
        pytest.param(
            "refund",
            [AnswerSource("Approved the refund, see [2] and [9].")],
            "Approved the refund, see (2) and (9). [1]",
            id="bracketed-numbers-in-quotes-defused",
        ),
        pytest.param(
            "deploy",
            [AnswerSource(""), AnswerSource("  "), AnswerSource("deploy ok")],
            "deploy ok [3]",
            id="empty-sources-keep-numbering",
        ),
    ],
)
def test_build_extractive_answer(query: str, sources: list[AnswerSource], expected: str) -> None:
    assert build_extractive_answer(query, sources) == expected


def test_repeat_source_only_after_every_matching_source_is_used() -> None:
    sources = [
        AnswerSource("deploy failed. deploy retried. deploy ok."),
        AnswerSource("the deploy is done"),
    ]
    answer = build_extractive_answer("deploy", sources, max_sentences=3)
    assert extract_citations(answer, 2) == [1, 2]
    assert answer.count("[1]") == 2
    assert answer.count("[2]") == 1


@pytest.mark.parametrize(
    ("query", "sources", "expected"),
    [
        pytest.param(
            "kubernetes upgrade",
            INCIDENT,
            f"{EXTRACTIVE_NO_MATCH_PREFIX} Deploy to prod failed at 10:02. [1]",
            id="no-overlap-cites-the-highest-scored-source",
        ),
        pytest.param(
            "kubernetes",
            [AnswerSource("low", score=0.1), AnswerSource("High one. Second.", score=0.7)],
            f"{EXTRACTIVE_NO_MATCH_PREFIX} High one. [2]",
            id="no-overlap-top-source-by-score-not-position",
        ),
        pytest.param(
            "kubernetes",
            [AnswerSource("first"), AnswerSource("second")],
            f"{EXTRACTIVE_NO_MATCH_PREFIX} first [1]",
            id="no-overlap-without-scores-cites-the-first",
        ),
        pytest.param(
            "?!", [AnswerSource("deploy")], f"{EXTRACTIVE_NO_MATCH_PREFIX} deploy [1]", id="wordless-query"
        ),
        pytest.param("deploy", [], EXTRACTIVE_NO_SOURCES_TEXT, id="no-sources"),
        pytest.param(
            "deploy", [AnswerSource(" \n "), AnswerSource("...")], EXTRACTIVE_NO_SOURCES_TEXT, id="no-words"
        ),
    ],
)
def test_fallbacks_say_so_plainly(query: str, sources: list[AnswerSource], expected: str) -> None:
    assert build_extractive_answer(query, sources) == expected


def test_long_sentence_is_clipped_at_a_word_boundary() -> None:
    text = "deploy " + "word " * 200
    answer = build_extractive_answer("deploy", [AnswerSource(text)])
    quoted = answer.removesuffix(" [1]")
    assert len(quoted) <= EXTRACTIVE_SENTENCE_MAX_CHARS
    assert quoted.endswith("word…")


def test_only_the_prompt_window_is_read() -> None:
    hidden = AnswerSource("x " * MAX_SEARCH_ANSWER_TEXT_LENGTH + "\nsecret deploy note")
    assert build_extractive_answer("secret", [hidden]).startswith(EXTRACTIVE_NO_MATCH_PREFIX)
    late = [AnswerSource("nothing")] * MAX_SEARCH_ANSWER_MESSAGES + [AnswerSource("secret")]
    assert build_extractive_answer("secret", late).startswith(EXTRACTIVE_NO_MATCH_PREFIX)


def test_max_sentences_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="1 or more"):
        build_extractive_answer("q", INCIDENT, max_sentences=0)


_sources = st.lists(
    st.builds(
        AnswerSource,
        st.text(alphabet="deploy fail ok.!\n[]12", max_size=60),
        score=st.none() | st.floats(min_value=0, max_value=1),
    ),
    max_size=6,
)


@given(query=st.text(alphabet="deploy fail ok?", max_size=20), sources=_sources)
def test_every_line_ends_with_one_valid_citation_and_runs_are_deterministic(
    query: str, sources: list[AnswerSource]
) -> None:
    answer = build_extractive_answer(query, sources)
    assert build_extractive_answer(query, sources) == answer
    if answer == EXTRACTIVE_NO_SOURCES_TEXT:
        assert all(not any(ch.isalnum() for ch in source.text) for source in sources)
        return
    lines = answer.split("\n")
    assert 1 <= len(lines) <= EXTRACTIVE_ANSWER_MAX_SENTENCES
    for line in lines:
        cited = extract_citations(line, len(sources))
        assert len(cited) == 1
        assert line.endswith(f" [{cited[0]}]")
        assert sources[cited[0] - 1].text.strip()
