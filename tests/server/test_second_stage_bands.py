"""Confidence bands and fusion by query kind (retrieval/second_stage/bands.py), case by case."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ai_search_server.retrieval.second_stage.bands import (
    CALIBRATED_BANDS,
    BandPolicy,
    Scored,
    assign_bands,
    bands_for,
    query_kind,
    stage_is_calibrated,
)

POLICY = BandPolicy(
    strong=0.5,
    related=0.3,
    strong_coverage=0.6,
    related_coverage=0.25,
    stage_weight=0.6,
    keyword_weight={"cjk": 1.0, "words": 0.6, "phrase": 0.3, "question": 0.0},
    related_limit=3,
)


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("why was the checkout slow last month", "question"),
        ("who decided how we run report jobs", "question"),
        ("is the beta still on?", "question"),
        ("billing retries outage", "phrase"),
        ("billing retries after the outage", "question"),
        ("postgres failover", "words"),
        ("deploy", "words"),
        ('"rolling back" billing', "words"),
        ("ERR_CONN_RESET on billing", "words"),
        ("v2.14.0 release notes", "words"),
        ("LARK-2231 status update", "words"),
        ("fix the camelCase parser", "words"),
        ("工厂火灾", "cjk"),
        ("🎉", "symbols"),
        ("🎉 👏", "symbols"),
        ("🎉 party", "words"),
        ("老化测试 结果", "cjk"),
    ],
)
def test_query_kind(query: str, kind: str) -> None:
    assert query_kind(query) == kind


def ids(banded: list) -> list[tuple[str, str]]:
    return [(b.id, b.band) for b in banded]


@pytest.mark.parametrize(
    ("item", "band"),
    [
        pytest.param(Scored("m", similarity=0.55), "strong", id="first-stage-similarity-strong"),
        pytest.param(Scored("m", similarity=0.35), "related", id="first-stage-similarity-related"),
        pytest.param(Scored("m", similarity=0.2), None, id="below-related-dropped"),
        pytest.param(Scored("m", similarity=0.2, coverage=0.7), "strong", id="keyword-coverage-strong"),
        pytest.param(Scored("m", similarity=0.2, coverage=0.3), "related", id="keyword-coverage-related"),
        pytest.param(Scored("m", coverage=0.1), None, id="thin-keyword-hit-dropped"),
        # 0.6 x 0.7 + 0.4 x 0.2 = 0.50: the second stage lifts a weak first-stage match to strong.
        pytest.param(Scored("m", similarity=0.2, stage=0.7), "strong", id="second-stage-lifts"),
        # 0.6 x 0.1 + 0.4 x 0.55 = 0.28: and drops a first-stage look-alike it does not believe.
        pytest.param(Scored("m", similarity=0.55, stage=0.1), None, id="second-stage-drops"),
    ],
)
def test_one_candidate_band(item: Scored, band: str | None) -> None:
    banded = assign_bands(POLICY, "why did the billing deploy fail", [item])
    assert ids(banded) == ([] if band is None else [("m", band)])


def test_strong_first_then_related_each_best_first_and_related_capped() -> None:
    items = [
        Scored("r1", similarity=0.31),
        Scored("s1", similarity=0.51),
        Scored("r2", similarity=0.45),
        Scored("r3", similarity=0.40),
        Scored("s2", similarity=0.70),
        Scored("r4", similarity=0.35),
    ]
    banded = assign_bands(POLICY, "why did the billing deploy fail", items)
    assert ids(banded) == [
        ("s2", "strong"),
        ("s1", "strong"),
        ("r2", "related"),
        ("r3", "related"),
        ("r4", "related"),
    ]


def test_words_queries_lean_on_keyword_coverage_questions_on_meaning() -> None:
    items = [Scored("meaning", similarity=0.62), Scored("words", similarity=0.52, coverage=1.0)]
    # A question orders by meaning alone (keyword weight 0)...
    assert [b.id for b in assign_bands(POLICY, "why did the billing deploy fail", items)] == [
        "meaning",
        "words",
    ]
    # ...an identifier query adds 0.6 x coverage: the message holding the words comes first.
    assert [b.id for b in assign_bands(POLICY, "ERR_CONN_RESET billing", items)] == ["words", "meaning"]


def test_cjk_queries_are_read_by_words_only() -> None:
    items = [Scored("similar", similarity=0.9, stage=0.9), Scored("holds-it", similarity=0.1, coverage=0.8)]
    assert ids(assign_bands(POLICY, "工厂火灾", items)) == [("holds-it", "strong")]


def test_a_query_in_words_no_one_used_needs_more_for_a_related_result_from_meaning() -> None:
    items = [
        Scored("near", similarity=0.35),
        Scored("close", similarity=0.6),
        Scored("kw", coverage=0.3),
        Scored("closer", similarity=0.45),
    ]
    banded = assign_bands(POLICY, "xyzzyplugh qwertzuiop", items, known_words=False)
    assert ids(banded) == [("close", "strong"), ("closer", "related"), ("kw", "related")]
    assert ("near", "related") in ids(assign_bands(POLICY, "xyzzyplugh qwertzuiop", items))
    assert ids(assign_bands(POLICY, "xyzzyplugh qwertzuiop", items[:1], known_words=False)) == []


def test_an_unscored_candidate_is_read_by_the_first_stage() -> None:
    stage_off = assign_bands(POLICY, "why did the billing deploy fail", [Scored("m", similarity=0.52)])
    stage_on = assign_bands(
        POLICY, "why did the billing deploy fail", [Scored("m", similarity=0.52, stage=None)]
    )
    assert ids(stage_off) == ids(stage_on) == [("m", "strong")]


def test_ties_break_by_id_so_the_order_is_stable() -> None:
    items = [Scored("b", similarity=0.6), Scored("a", similarity=0.6)]
    assert [b.id for b in assign_bands(POLICY, "why did it fail", items)] == ["a", "b"]


def test_calibrated_tables() -> None:
    for model, policy in CALIBRATED_BANDS.items():
        assert bands_for(model) is policy
        assert 0 < policy.related < policy.strong < 1
        assert 0 < policy.related_coverage < policy.strong_coverage <= 1
        assert 0 <= policy.stage_weight <= 1
    assert bands_for("test:hashing-64") is None
    assert bands_for(None) is None
    assert stage_is_calibrated("local:all-mpnet-base-v2:int8-static-v1")
    assert not stage_is_calibrated("rerank:tei:127.0.0.1:8080")


def test_related_limit_zero_keeps_strong_only() -> None:
    items = [Scored("s", similarity=0.6), Scored("r", similarity=0.4)]
    assert ids(assign_bands(replace(POLICY, related_limit=0), "why", items)) == [("s", "strong")]


def test_a_symbols_query_is_strong_only_where_the_message_holds_the_symbols() -> None:
    items = [Scored("other-emoji", similarity=0.9, stage=0.9), Scored("holds-it", similarity=0.9, coverage=1.0)]
    assert ids(assign_bands(POLICY, "🎉", items)) == [("holds-it", "strong"), ("other-emoji", "related")]


def test_the_margin_is_for_questions_naming_something_no_one_mentioned() -> None:
    margin = replace(POLICY, strong_margin=0.15)
    # Everything is about the topic: the best stands only 0.05 above the median.
    items = [Scored("best", similarity=0.60), *(Scored(f"m{i}", similarity=0.55) for i in range(5))]
    assert not any(b.band == "strong" for b in assign_bands(margin, "running ferry in FreeBSD jails", items))
    # The same evidence for a question whose every word the rooms use: many answers, all strong.
    banded = assign_bands(margin, "why is ferry slow", items, all_words_known=True)
    assert all(b.band == "strong" for b in banded) and len(banded) == 6
