"""The citation check: each answer sentence against the passages of the sources it cites."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search import _grounding
from ai_search._answers import AnswerSource
from ai_search._grounding import answer_sentences, check_citations

SOURCES = [
    AnswerSource(
        "patroni just promoted pg-ledger-02 to primary. 4m12s from the first failed check to the promotion.",
        "bob",
        "incidents",
        "2026-09-17T02:19:00Z",
    ),
    AnswerSource(
        "17 invoices in JPY and 2 in KRW were charged the wrong amount. none of the Paynova captures has "
        "settled yet, so we can void them",
        "carol",
        "releases",
        "2026-10-14T09:26:00Z",
    ),
    AnswerSource("Kestrel Freight renewed for 2 years 🎉", "frank", "leadership", "2026-11-25T16:03:00Z"),
]


def verdict(sentence: str) -> bool | None:
    (checked,) = check_citations(sentence, SOURCES)
    return checked.supported


def test_module_examples_hold() -> None:
    assert doctest.testmod(_grounding).failed == 0


@pytest.mark.parametrize(
    ("sentence", "supported"),
    [
        pytest.param("Patroni promoted pg-ledger-02 to primary [1].", True, id="close-paraphrase"),
        pytest.param("The promotion came 4m12s after the first failed check [1].", True, id="number-matches"),
        pytest.param("The promotion came 38s after the first failed check [1].", False, id="number-differs"),
        pytest.param("Five JPY invoices were charged the wrong amount [2].", False, id="number-word-differs"),
        pytest.param("2 KRW invoices were charged the wrong amount [2].", True, id="small-number"),
        pytest.param("Kestrel Freight renewed for two years [3].", True, id="number-word-is-its-digit"),
        pytest.param("The Paynova captures had settled [2].", False, id="source-denies-it"),
        pytest.param("None of the Paynova captures had settled yet [2].", True, id="both-deny"),
        pytest.param("Kestrel Freight did not renew [3].", False, id="claim-denies-what-the-source-says"),
        pytest.param("bob reported the promotion of pg-ledger-02 [1].", True, id="author-counts"),
        pytest.param("carol reported the promotion of pg-ledger-02 [1].", False, id="wrong-person"),
        pytest.param("On Sep 17, patroni promoted pg-ledger-02 [1].", True, id="date-of-the-message-counts"),
        pytest.param("Kestrel Freight renewed for 2 years [1].", False, id="wrong-source"),
        pytest.param("Kestrel Freight renewed for 2 years [1] [3].", True, id="one-of-two-sources-holds-it"),
        pytest.param("The migration added a new billing table [2].", False, id="invented"),
        pytest.param("Kestrel Freight renewed for 2 years.", None, id="cites-nothing"),
        pytest.param("Kestrel Freight renewed for 2 years [7?].", None, id="unknown-citation-cites-nothing"),
    ],
)
def test_a_sentence_is_supported_only_by_what_its_sources_say(sentence: str, supported: bool | None) -> None:
    assert verdict(sentence) is supported


def test_spans_point_at_the_supporting_passage() -> None:
    (checked,) = check_citations("The promotion came 4m12s after the first failed check [1].", SOURCES)
    (span,) = checked.spans
    assert span.n == 1
    assert SOURCES[0].text[span.start : span.end] == "4m12s from the first failed check to the promotion."


def test_a_multi_citation_sentence_spans_each_source_that_holds_part_of_it() -> None:
    sentence = "pg-ledger-02 was promoted [1] and Kestrel Freight renewed for 2 years [3]."
    (checked,) = check_citations(sentence, SOURCES)
    assert checked.supported is True
    assert [span.n for span in checked.spans] == [1, 3]
    assert checked.citations == (1, 3)


def test_an_unsupported_sentence_has_no_spans() -> None:
    (checked,) = check_citations("Kestrel Freight renewed for 3 years [3].", SOURCES)
    assert checked.supported is False
    assert checked.spans == ()


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param(
            "Rolled back [2]. Fixed [3].", ["Rolled back [2].", "Fixed [3]."], id="citation-in-sentence"
        ),
        pytest.param(
            "Rolled back. [2] Fixed. [3]", ["Rolled back. [2]", "Fixed. [3]"], id="citation-after-stop"
        ),
        pytest.param("Rolled back. [2] [4?]\nFixed [3]", ["Rolled back. [2] [4?]", "Fixed [3]"], id="runs"),
        pytest.param("[1] Starts with one.", ["[1] Starts with one."], id="leading-citation-first"),
    ],
)
def test_citations_that_follow_a_sentence_belong_to_it(answer: str, expected: list[str]) -> None:
    sentences = answer_sentences(answer)
    assert [s.text for s in sentences] == expected
    assert all(answer[s.start : s.end] == s.text for s in sentences)


_words = st.sampled_from(
    ["deploy", "failed", "rolled", "back", "4", "2", "not", "pg-ledger-02", "[1]", "[2]", "."]
)
_texts = st.lists(_words, max_size=12).map(" ".join)


@given(answer=_texts, texts=st.lists(_texts, min_size=1, max_size=3))
def test_check_citations_properties(answer: str, texts: list[str]) -> None:
    sources = [AnswerSource(text) for text in texts]
    checked = check_citations(answer, sources)
    assert check_citations(answer, sources) == checked
    for sentence in checked:
        assert answer[sentence.start : sentence.end] == sentence.text
        assert all(1 <= n <= len(sources) for n in sentence.citations)
        assert (sentence.supported is None) == (not sentence.citations)
        if not sentence.supported:
            assert sentence.spans == ()
        for span in sentence.spans:
            assert span.n in sentence.citations
            assert 0 <= span.start < span.end <= len(sources[span.n - 1].text)


@pytest.mark.parametrize(
    ("claim", "source"),
    [
        pytest.param(
            "Dana Ruiz — backup stopped [1]",
            AnswerSource("backup stopped", "dr", "ops", "2027-05-11T08:00:00Z", author_name="Dana Ruiz"),
            id="the-authors-display-name",
        ),
        pytest.param(
            "May 10, 2027 — the backup stopped yesterday [1]",
            AnswerSource("the backup stopped yesterday", "dr", "ops", "2027-05-11T08:00:00Z"),
            id="the-day-before-a-message-that-says-yesterday",
        ),
        pytest.param(
            "Jun 2, 2027 — the migration runs tomorrow [1]",
            AnswerSource("the migration runs tomorrow", "dr", "ops", "2027-06-01T08:00:00Z"),
            id="the-day-after-a-message-that-says-tomorrow",
        ),
    ],
)
def test_a_sources_author_name_and_the_days_it_names_count_as_its_words(claim: str, source: AnswerSource) -> None:
    """An extractive answer leads a line with its message's author or date (issue 36): the check
    reads them as the source's words, a relative day resolved against the message's date."""
    (checked,) = check_citations(claim, [source])
    assert checked.supported is True


def test_a_relative_day_is_not_any_day() -> None:
    source = AnswerSource("the backup stopped yesterday", "dr", "ops", "2027-05-11T08:00:00Z")
    (checked,) = check_citations("May 3, 2027 — the backup stopped yesterday [1]", [source])
    assert checked.supported is False
