"""Our extension of the pipeline request (``ai_search_conditions``) without a workspace: its shape,
what it refuses, its round trip, and that its tables cover every value the grammar accepts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search import HAS_VALUES, IS_VALUES
from ai_search_server.retrieval.conditions import (
    CONDITIONS_FIELD,
    MAX_CONDITION_VALUES,
    PIPELINE_HAS_VALUES,
    PIPELINE_IS_VALUES,
    ConditionsError,
    MessageConditions,
    conditions_applied,
    parse_conditions,
    with_conditions,
)
from ai_search_server.retrieval.embedded import (
    HAS_MARKS,
    IS_MARKS,
    PipelineRequestError,
    doc_conditions,
    parse_pipeline_request,
)
from ai_search_server.retrieval.index_db import ROOT_MARK
from ai_search_server.retrieval.message_checks import MESSAGE_MARKS
from ai_search_server.retrieval.search_service import SearchRequest

BODY: dict[str, Any] = {
    "query": "deploy",
    "type": "search",
    "filters": {"room_id": {"$eq": "r1"}},
    "params": {"k": 5},
}


def test_every_value_the_grammar_accepts_reaches_the_index_or_the_rooms() -> None:
    assert set(PIPELINE_HAS_VALUES) == set(HAS_VALUES.values()) == set(HAS_MARKS)
    assert set(PIPELINE_IS_VALUES) | {"dm"} == set(IS_VALUES.values())
    assert set(IS_MARKS) == set(PIPELINE_IS_VALUES)
    marks = set(HAS_MARKS.values()) | set(IS_MARKS.values())
    assert marks <= {*MESSAGE_MARKS, ROOT_MARK}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param([], "must be an object", id="not-an-object"),
        pytest.param({"hass": ["file"]}, r"unknown ai_search_conditions key\(s\) hass", id="unknown-key"),
        pytest.param({"has": "file"}, "must be a list", id="not-a-list"),
        pytest.param({"has": ["pdf"]}, "takes link, file, image, reaction, thread", id="unknown-has"),
        pytest.param({"is": ["dm"]}, "takes thread, pinned", id="dm-is-the-rooms"),
        pytest.param({"notWords": ["  "]}, "non-blank strings", id="blank-word"),
        pytest.param({"notWords": [7]}, "non-blank strings", id="not-a-string"),
        pytest.param({"phrases": ["x" * 501]}, "at most 500 characters", id="too-long"),
        pytest.param({"notUsernames": ["a"] * (MAX_CONDITION_VALUES + 1)}, "at most 50", id="too-many"),
    ],
)
def test_a_malformed_extension_is_refused_by_name(value: object, message: str) -> None:
    with pytest.raises(ConditionsError, match=message):
        parse_conditions(value)
    with pytest.raises(PipelineRequestError, match=message):  # the embedded pipeline answers 400
        parse_pipeline_request({**BODY, CONDITIONS_FIELD: value})


def test_no_extension_is_the_contract_alone() -> None:
    assert parse_conditions(None) is None
    assert parse_pipeline_request(BODY).conditions is None
    assert with_conditions(BODY, MessageConditions()) == BODY
    assert not conditions_applied({"results": []})
    assert conditions_applied({"results": [], CONDITIONS_FIELD: "applied"})


_words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=20).filter(
    str.strip
)


@given(
    has=st.lists(st.sampled_from(PIPELINE_HAS_VALUES), unique=True),
    not_is=st.lists(st.sampled_from(PIPELINE_IS_VALUES), unique=True),
    words=st.lists(_words, max_size=5, unique=True),
    phrases=st.lists(_words, max_size=3, unique=True),
)
def test_the_extension_round_trips(
    has: list[str], not_is: list[str], words: list[str], phrases: list[str]
) -> None:
    conditions = MessageConditions(
        has=tuple(has), not_is=tuple(not_is), not_words=tuple(words), phrases=tuple(phrases)
    )
    assert parse_conditions(conditions.to_wire()) == conditions
    assert parse_conditions(with_conditions(BODY, conditions).get(CONDITIONS_FIELD, {})) == conditions


@pytest.mark.parametrize(
    ("request_fields", "wire"),
    [
        pytest.param({"has": ("file", "thread")}, {"has": ["file", "thread"]}, id="has"),
        pytest.param({"is_": ("dm", "pinned")}, {"is": ["pinned"]}, id="is-dm-stays-home"),
        pytest.param({"excluded_is": ("dm",)}, {}, id="only-dm-sends-nothing"),
        pytest.param({"excluded_usernames": ("@bot", "bot")}, {"notUsernames": ["bot"]}, id="authors"),
        pytest.param(
            {"excluded_words": ("canary", "rolling back")},
            {"notWords": ["canary", "rolling back"]},
            id="words",
        ),
        pytest.param(
            {"text": 'deploy "Rolling Back" now'}, {"phrases": ["rolling back"]}, id="phrases-folded"
        ),
    ],
)
def test_a_request_sends_what_the_pipeline_can_apply(
    request_fields: dict[str, Any], wire: dict[str, Any]
) -> None:
    fields = {"text": "deploy", **request_fields}
    assert SearchRequest(**fields).conditions().to_wire() == wire


def test_the_index_terms_of_the_conditions() -> None:
    found = doc_conditions(
        MessageConditions(
            has=("file", "thread"),
            not_has=("link",),
            is_=("thread",),
            not_is=("pinned",),
            not_usernames=("@Bot",),
            not_words=("deploy", "rolling back"),
            phrases=("release train",),
        )
    )
    assert found.marks == ("file", "root", "reply")
    assert found.not_marks == ("link", "pinned")
    assert found.not_usernames == ("bot",)
    assert found.required == ('"release" + "train"',)
    assert found.excluded == '"deploy"* OR "rolling" + "back"'
    assert found.match('"x"') == '(("x") AND ("release" + "train")) NOT ("deploy"* OR "rolling" + "back")'
