"""A shared answer as a reader sees it: what their rooms allow, and never a word only a hidden source holds."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search import _sharing
from ai_search._answers import AnswerSource
from ai_search._sentences import content_stems
from ai_search._sharing import answer_for_reader

GENERAL = AnswerSource("the deploy went fine today, billing-api is green", "bob", "general")
SECRET = AnswerSource("the acquisition of Quillon closes in march for 40 million", "bob", "secret")


def test_module_examples_hold() -> None:
    assert doctest.testmod(_sharing).failed == 0


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param(
            "The deploy went fine [1]. The acquisition closes in march [2].",
            "The deploy went fine [1].",
            id="hidden-only-dropped",
        ),
        pytest.param(
            "The deploy went fine today [1] [2].",
            "The deploy went fine today [1].",
            id="hidden-citation-stripped",
        ),
        pytest.param(
            "The deploy went fine [1] and the acquisition closes [2].",
            "",
            id="mixed-with-hidden-words-dropped",
        ),
        pytest.param(
            "The deploy went fine [1].\nQuillon closes in march.",
            "The deploy went fine [1].",
            id="uncited-hidden-dropped",
        ),
        pytest.param(
            "The deploy went fine [1].\nbilling-api is green.",
            "The deploy went fine [1].\nbilling-api is green.",
            id="uncited-visible-kept",
        ),
        pytest.param("billing-api is green for 40 million [1].", "", id="hidden-number-dropped"),
    ],
)
def test_the_reader_sees_only_what_visible_sources_say(answer: str, expected: str) -> None:
    view = answer_for_reader(answer, [GENERAL, None])
    assert view.answer == expected
    assert all(2 not in s.citations for s in view.sentences)


def test_with_every_source_visible_the_answer_is_as_given() -> None:
    answer = "The deploy went fine [1]. The acquisition closes in march [2]. Uncited words."
    view = answer_for_reader(answer, [GENERAL, SECRET])
    assert view.answer == answer
    assert (view.hidden_sources, view.dropped_sentences) == (0, 0)


def test_hidden_sources_are_counted_when_cited() -> None:
    view = answer_for_reader("Deploy went fine [1]. Closes in march [2].", [GENERAL, None, None])
    assert (view.hidden_sources, view.dropped_sentences) == (1, 1)


_general_words = ["the", "deploy", "went", "fine", "today", "billing-api", "is", "green"]
_secret_words = ["acquisition", "Quillon", "closes", "march", "40", "million"]
_sentence = st.lists(
    st.sampled_from([*_general_words, *_secret_words, "[1]", "[2]", "and"]), min_size=1, max_size=8
)
_answers = st.lists(_sentence.map(lambda words: " ".join(words) + "."), min_size=1, max_size=5).map(" ".join)
_only_secret = content_stems(SECRET.text) - content_stems(GENERAL.text) - content_stems("bob general secret")


@given(_answers)
def test_no_word_only_a_hidden_source_holds_ever_reaches_the_reader(answer: str) -> None:
    view = answer_for_reader(answer, [GENERAL, None])
    assert not content_stems(view.answer) & _only_secret
    assert "40" not in view.answer
    for sentence in view.sentences:
        assert not content_stems(sentence.text) & _only_secret
        assert sentence.citations in ((), (1,))
