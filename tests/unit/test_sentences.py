"""Sentences, stems, questions, and the kinds of answer a question asks for and a sentence offers."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search import _answer_kinds, _sentences
from ai_search._answer_kinds import question_kinds, sentence_kinds
from ai_search._sentences import content_stems, is_question, split_sentences, stem


def test_module_examples_hold() -> None:
    assert doctest.testmod(_sentences).failed == 0
    assert doctest.testmod(_answer_kinds).failed == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("One. Two! Three? Four… five", ["One.", "Two!", "Three?", "Four…", "five"], id="marks"),
        pytest.param("line one\n\n  line two  ", ["line one", "line two"], id="line-breaks"),
        pytest.param("v2.14.1 is out.It works", ["v2.14.1 is out.It works"], id="no-space-no-break"),
        pytest.param("   ", [], id="blank"),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert [s.text for s in split_sentences(text)] == expected


@given(st.text(alphabet="ab .!?…\n ", max_size=80))
def test_sentence_offsets_point_at_the_sentence(text: str) -> None:
    sentences = split_sentences(text)
    for sentence in sentences:
        assert text[sentence.start : sentence.end] == sentence.text
        assert sentence.text == sentence.text.strip() != ""
    assert [s.start for s in sentences] == sorted(s.start for s in sentences)


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        pytest.param("failed", "fail", id="ed"),
        pytest.param("failing", "fail", id="ing"),
        pytest.param("fails", "fail", id="s"),
        pytest.param("passes", "pass", id="es"),
        pytest.param("promote", "promot", id="final-e"),
        pytest.param("led", "lead", id="irregular"),
        pytest.param("bus", "bus", id="too-short-to-fold"),
        pytest.param("4m12s", "4m12s", id="digits-untouched"),
    ],
)
def test_stem(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_content_stems_drop_stop_words_and_fold_case() -> None:
    assert content_stems("Why did THE Deploys fail?") == {"deploy", "fail"}


@pytest.mark.parametrize(
    ("sentence", "asks"),
    [
        pytest.param("anyone know what's up?", True, id="question-mark"),
        pytest.param("can we talk about it? 😅", True, id="mark-before-emoji"),
        pytest.param("why didn't the pool recover on its own", True, id="no-mark"),
        pytest.param("two questions: how did it take 4 minutes", True, id="embedded"),
        pytest.param("that's why we rolled back", False, id="why-in-a-statement"),
        pytest.param("here is what we did", False, id="what-in-a-statement"),
    ],
)
def test_is_question(sentence: str, asks: bool) -> None:
    assert is_question(sentence) is asks


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        pytest.param("why did the cert expire", {"cause"}, id="why"),
        pytest.param("how did we fix the stampede", {"method"}, id="how-did-we-fix"),
        pytest.param("how many carts did we lose", {"count"}, id="how-many"),
        pytest.param("how much did we refund", {"amount"}, id="how-much"),
        pytest.param("how long did the restore take", {"duration"}, id="how-long"),
        pytest.param("how did the outage affect customers", {"count"}, id="affect-is-not-a-method"),
        pytest.param("when can't we deploy", {"time"}, id="when"),
        pytest.param("who owns report-builder", {"person"}, id="who"),
        pytest.param("what did we decide about the API", {"decision"}, id="decide"),
        pytest.param("should jobs go on the bus", {"decision", "polar"}, id="should"),
        pytest.param("did SRE-14 accept", {"polar"}, id="yes-no"),
        pytest.param("where is the offsite", {"place"}, id="where"),
        pytest.param("how much did conversion improve", {"amount", "change"}, id="how-much-change"),
        pytest.param("Warum ist der Export langsam", set(), id="other-language-asks-no-kind"),
    ],
)
def test_question_kinds(question: str, kinds: set[str]) -> None:
    assert question_kinds(question) == kinds


@pytest.mark.parametrize(
    ("sentence", "ignore", "offered", "not_offered"),
    [
        pytest.param("refunds issued: $18,430.50 in total", (), {"amount"}, set(), id="money"),
        pytest.param("promotion in 38s", (), {"duration"}, set(), id="duration"),
        pytest.param("roughly 310 carts", (), {"count"}, set(), id="count"),
        pytest.param(
            "deployed v2.14.1 at 10:20, see #5041",
            (),
            set(),
            {"amount", "count", "quantity"},
            id="not-numbers",
        ),
        pytest.param(
            "the cert expired at midnight", ("expir",), set(), {"cause"}, id="question-words-offer-nothing"
        ),
        pytest.param("the cert expired at midnight", (), {"cause"}, set(), id="same-words-when-not-asked"),
        pytest.param("yes: shadow bob in November", (), {"polar", "time"}, set(), id="yes-and-month"),
        pytest.param("68.1% vs 65.8% (+2.3 points)", (), {"change", "amount"}, set(), id="a-difference"),
        pytest.param(
            "`mapper_parsing_exception: failed to parse`", (), {"cause"}, set(), id="the-failure-itself"
        ),
    ],
)
def test_sentence_kinds(
    sentence: str, ignore: tuple[str, ...], offered: set[str], not_offered: set[str]
) -> None:
    kinds = sentence_kinds(sentence, ignore=frozenset(ignore))
    assert offered <= kinds
    assert not kinds & not_offered


def test_names_offer_a_person() -> None:
    assert "person" in sentence_kinds("ask Carol about it", names=frozenset({"carol"}))
    assert "person" not in sentence_kinds("ask about it", names=frozenset({"carol"}))
