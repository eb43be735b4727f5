"""Hybrid ranking: minimum similarity, the relevance floor, weighted RRF, single-branch ranking, recency
rerank, match reason."""

from __future__ import annotations

import doctest
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search import _fusion
from ai_search._fusion import (
    apply_temporal_rerank,
    filter_semantic_candidates_by_minimum_similarity,
    filter_semantic_candidates_by_relevance_floor,
    fuse_candidates_with_weighted_rrf,
    get_match_reason,
    get_recency_decay,
    to_ranked_candidates,
)
from ai_search._pipeline import CandidateSource, IntelligentSearchCandidate

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def cand(
    msg_id: str | None,
    source: CandidateSource = "semantic",
    *,
    id: str | None = None,
    **fields: Any,
) -> IntelligentSearchCandidate:
    return IntelligentSearchCandidate(
        id=id if id is not None else (msg_id or ""), rid="r", msg_id=msg_id, text="", source=source, **fields
    )


def sem(*ids: str) -> list[IntelligentSearchCandidate]:
    return [cand(i, "semantic") for i in ids]


def kw(*ids: str) -> list[IntelligentSearchCandidate]:
    return [cand(i, "keyword") for i in ids]


def test_module_docstring_examples_hold() -> None:
    assert doctest.testmod(_fusion).failed == 0


SIMILARITIES = [0.69996, 0.7, None, 0.9, 1.0, -0.2]


@pytest.mark.parametrize(
    ("percent", "kept"),
    [
        pytest.param(70, [0.7, None, 0.9, 1.0], id="no-rounding-0.69996-fails-at-70"),
        pytest.param(70.9, [0.7, None, 0.9, 1.0], id="percent-floored"),
        pytest.param("70", [0.7, None, 0.9, 1.0], id="numeric-string-percent"),
        pytest.param(150, [None, 1.0], id="clamped-to-100"),
        pytest.param(1, [0.69996, 0.7, None, 0.9, 1.0], id="one-percent-drops-negative"),
    ],
)
def test_minimum_similarity_filter(percent: object, kept: list[float | None]) -> None:
    candidates = [cand(f"m{i}", semantic_similarity=s) for i, s in enumerate(SIMILARITIES)]
    result = filter_semantic_candidates_by_minimum_similarity(candidates, percent)
    assert [c.semantic_similarity for c in result] == kept


@pytest.mark.parametrize(
    "percent",
    [
        pytest.param(0, id="zero"),
        pytest.param(0.9, id="below-one-floors-to-zero"),
        pytest.param(-5, id="negative"),
        pytest.param(math.nan, id="nan"),
        pytest.param("abc", id="non-numeric"),
    ],
)
def test_minimum_similarity_zero_returns_the_input_itself(percent: object) -> None:
    candidates = [cand("m", semantic_similarity=-0.5)]
    assert filter_semantic_candidates_by_minimum_similarity(candidates, percent) is candidates


@pytest.mark.parametrize(
    ("floor", "query_floor", "corroborated", "kept"),
    [
        pytest.param(0.7, 0.0, set(), [0.7, None, 0.9, 1.0], id="at-or-above-the-floor-or-unknown"),
        pytest.param(
            0.7, 0.0, {"m0", "m5"}, [0.69996, 0.7, None, 0.9, 1.0, -0.2], id="keyword-found-ones-stay"
        ),
        pytest.param(0.0, 1.01, set(), [None], id="a-weak-best-match-keeps-no-semantic-only-one"),
        pytest.param(0.0, 1.01, {"m3"}, [None, 0.9], id="but-keyword-found-ones-still-stay"),
        pytest.param(
            0.5, 1.0, set(), [0.69996, 0.7, None, 0.9, 1.0], id="a-best-match-at-the-query-floor-is-enough"
        ),
    ],
)
def test_relevance_floor(
    floor: float, query_floor: float, corroborated: set[str], kept: list[float | None]
) -> None:
    candidates = [cand(f"m{i}", semantic_similarity=s) for i, s in enumerate(SIMILARITIES)]
    result = filter_semantic_candidates_by_relevance_floor(
        candidates, floor, corroborated, query_floor=query_floor
    )
    assert [c.semantic_similarity for c in result] == kept


def test_relevance_floor_off_returns_the_input_itself() -> None:
    candidates = [cand("m", semantic_similarity=-0.5)]
    assert filter_semantic_candidates_by_relevance_floor(candidates, 0.0) is candidates


def test_relevance_floor_keys_candidates_by_message_id_first() -> None:
    candidates = [cand("msg-1", id="intelligent-semantic-0", semantic_similarity=0.1)]
    assert filter_semantic_candidates_by_relevance_floor(candidates, 0.5, {"msg-1"}) == candidates


def _fused(
    result: list[IntelligentSearchCandidate],
) -> list[tuple[str, float | None, int | None, int | None]]:
    return [(c.id, c.rrf_score, c.semantic_rank, c.fulltext_rank) for c in result]


@pytest.mark.parametrize(
    ("semantic", "keyword", "weight", "limit", "expected"),
    [
        pytest.param(
            sem("a", "b"),
            kw("b", "c"),
            50,
            10,
            [("b", 0.5 / 62 + 0.5 / 61, 2, 1), ("a", 0.5 / 61, 1, None), ("c", 0.5 / 62, None, 2)],
            id="shared-candidate-sums-both-branches",
        ),
        pytest.param(
            sem("a"),
            kw("c"),
            50,
            10,
            [("a", 0.5 / 61, 1, None), ("c", 0.5 / 61, None, 1)],
            id="tie-broken-by-semantic-rank-missing-is-last",
        ),
        pytest.param(
            sem("a", "b"),
            kw("b", "c"),
            100,
            10,
            [("a", 1 / 61, 1, None), ("b", 1 / 62, 2, None)],
            id="weight-100-ignores-keyword-branch",
        ),
        pytest.param(
            sem("a", "b"),
            kw("b", "c"),
            0,
            10,
            [("b", 1 / 61, None, 1), ("c", 1 / 62, None, 2)],
            id="weight-0-ignores-semantic-branch",
        ),
        pytest.param(
            sem("a"),
            kw("c"),
            49.9,
            10,
            [("c", 0.51 / 61, None, 1), ("a", 0.49 / 61, 1, None)],
            id="weight-floored",
        ),
        pytest.param(sem("a"), kw("c"), 150, 10, [("a", 1 / 61, 1, None)], id="weight-clamped-high"),
        pytest.param(sem("a"), kw("c"), -10, 10, [("c", 1 / 61, None, 1)], id="weight-clamped-low"),
        pytest.param(sem("a"), kw("c"), math.nan, 10, [("c", 1 / 61, None, 1)], id="nan-weight-is-zero"),
        pytest.param(
            sem("a", "a", "b"),
            [],
            50,
            10,
            [("a", 0.5 / 61, 1, None), ("b", 0.5 / 62, 2, None)],
            id="repeated-id-counts-once-ranks-consecutive",
        ),
        pytest.param(
            [cand(None, id=""), *sem("a")], [], 50, 10, [("a", 0.5 / 61, 1, None)], id="empty-id-ignored"
        ),
        pytest.param(
            sem("a", "b", "c"),
            kw("c", "b", "a"),
            50,
            2,
            [("a", 0.5 / 61 + 0.5 / 63, 1, 3), ("c", 0.5 / 63 + 0.5 / 61, 3, 1)],
            id="sliced-to-limit-after-sorting-b-at-2-2-scores-just-below",
        ),
        pytest.param(sem("a"), kw("a"), 50, 0, [], id="zero-limit"),
        pytest.param(sem("a"), kw("a"), 50, -1, [], id="negative-limit"),
        pytest.param([], [], 50, 10, [], id="nothing-to-fuse"),
    ],
)
def test_weighted_rrf(
    semantic: list[IntelligentSearchCandidate],
    keyword: list[IntelligentSearchCandidate],
    weight: object,
    limit: int,
    expected: list[tuple[str, float, int | None, int | None]],
) -> None:
    got = _fused(fuse_candidates_with_weighted_rrf(semantic, keyword, weight, limit))
    assert [(i, sr, fr) for i, _, sr, fr in got] == [(i, sr, fr) for i, _, sr, fr in expected]
    assert [s for _, s, _, _ in got] == pytest.approx([s for _, s, _, _ in expected], rel=1e-12)


def test_weighted_rrf_with_custom_k() -> None:
    got = _fused(fuse_candidates_with_weighted_rrf(sem("a", "b"), kw("b"), 50, 10, k=0))
    assert got == [("b", 0.5 / 2 + 0.5 / 1, 2, 1), ("a", 0.5 / 1, 1, None)]


def test_weighted_rrf_refuses_negative_k() -> None:
    with pytest.raises(ValueError, match="RRF constant"):
        fuse_candidates_with_weighted_rrf(sem("a"), kw("a"), 50, 10, k=-1)


def test_weighted_rrf_keys_on_msg_id_then_id() -> None:
    semantic = [cand(None, id="intelligent-semantic-0"), cand("m", id="m")]
    keyword = [cand(None, "keyword", id="intelligent-keyword-0"), cand("m", "keyword", id="other")]
    result = fuse_candidates_with_weighted_rrf(semantic, keyword, 50, 10)
    assert sorted(c.id for c in result) == ["intelligent-keyword-0", "intelligent-semantic-0", "m"]


@pytest.mark.parametrize(
    ("semantic_ts", "keyword_ts", "expected_ts"),
    [
        pytest.param(None, "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z", id="ts-filled-from-other-branch"),
        pytest.param(
            "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z", "2026-10-01T00:00:00Z", id="own-ts-kept"
        ),
        pytest.param(None, None, None, id="no-ts-anywhere"),
    ],
)
def test_weighted_rrf_keeps_first_seen_candidate(
    semantic_ts: str | None, keyword_ts: str | None, expected_ts: str | None
) -> None:
    semantic = [replace(cand("m"), text="semantic text", score=0.8, ts=semantic_ts)]
    keyword = [replace(cand("m", "keyword"), text="keyword text", ts=keyword_ts)]
    (fused,) = fuse_candidates_with_weighted_rrf(semantic, keyword, 50, 10)
    assert (fused.text, fused.source, fused.score, fused.ts) == (
        "semantic text",
        "semantic",
        0.8,
        expected_ts,
    )


def test_weighted_rrf_fills_ts_for_keyword_first_seen() -> None:
    keyword = [replace(cand("m", "keyword"), ts=None)]
    semantic = [replace(cand("m"), ts="2026-11-01T00:00:00Z")]
    (fused,) = fuse_candidates_with_weighted_rrf(semantic, keyword, 0, 10)
    assert fused.ts is None, "a branch with weight 0 is ignored entirely, its ts included"
    (fused,) = fuse_candidates_with_weighted_rrf([], keyword, 50, 10)
    assert fused.source == "keyword"


def test_to_ranked_candidates() -> None:
    candidates = [cand("a"), cand("b", "keyword"), replace(cand("c", "keyword"), semantic_rank=7)]
    assert _fused(to_ranked_candidates(candidates)) == [
        ("a", 1 / 61, 1, None),
        ("b", 1 / 62, None, 2),
        ("c", 1 / 63, 7, 3),
    ]
    assert _fused(to_ranked_candidates(candidates[:1], k=9)) == [("a", 1 / 10, 1, None)]


def test_to_ranked_candidates_refuses_negative_k() -> None:
    with pytest.raises(ValueError, match="RRF constant"):
        to_ranked_candidates([cand("a")], k=-60)


@pytest.mark.parametrize(
    ("age", "half_life", "expected"),
    [
        pytest.param(0, 30, 1.0, id="new-message-full-boost"),
        pytest.param(30, 30, 0.5, id="one-half-life-halves"),
        pytest.param(60, 30, 0.25, id="two-half-lives-quarter"),
        pytest.param(-5, 30, 1.0, id="future-counts-as-now"),
        pytest.param(10, 0, 0.0, id="zero-half-life"),
        pytest.param(10, -1, 0.0, id="negative-half-life"),
        pytest.param(10, math.nan, 0.0, id="nan-half-life"),
        pytest.param(math.nan, 30, 0.0, id="nan-age"),
        pytest.param(math.inf, 30, 0.0, id="infinite-age"),
        pytest.param(10, math.inf, 1.0, id="infinite-half-life-never-decays"),
        pytest.param(1e308, 1e-308, 0.0, id="huge-ratio-underflows-to-zero"),
    ],
)
def test_get_recency_decay(age: float, half_life: float, expected: float) -> None:
    assert get_recency_decay(age, half_life) == expected


def timed(msg_id: str, rrf: float, ts: str | None) -> IntelligentSearchCandidate:
    return replace(cand(msg_id), rrf_score=rrf, ts=ts)


DAYS_90_AGO = (NOW - timedelta(days=90)).isoformat().replace("+00:00", "Z")
TODAY = NOW.isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize(
    ("candidates", "weight", "expected"),
    [
        pytest.param(
            [timed("old", 0.02, DAYS_90_AGO), timed("new", 0.018, TODAY)],
            100,
            ["new", "old"],
            id="strong-recency-lifts-new-message",
        ),
        pytest.param(
            [timed("old", 0.02, DAYS_90_AGO), timed("new", 0.018, TODAY)],
            10,
            ["old", "new"],
            id="weak-recency-keeps-relevance-order",
        ),
        pytest.param(
            [timed("old", 0.02, DAYS_90_AGO), timed("new", 0.018, TODAY)],
            150,
            ["new", "old"],
            id="weight-clamped-to-100",
        ),
        pytest.param(
            [timed("none", 0.02, None), timed("new", 0.015, TODAY)],
            50,
            ["new", "none"],
            id="missing-ts-keeps-plain-rrf",
        ),
        pytest.param(
            [timed("bad", 0.02, "last tuesday"), timed("new", 0.015, TODAY)],
            50,
            ["new", "bad"],
            id="unparsable-ts-keeps-plain-rrf",
        ),
        pytest.param(
            [timed("a", 0.01, None), timed("b", 0.01, None), timed("c", 0.01, "x")],
            50,
            ["a", "b", "c"],
            id="stable-on-ties",
        ),
        pytest.param(
            [timed("future", 0.01, "2027-01-01T00:00:00Z"), timed("now", 0.01, TODAY)],
            50,
            ["future", "now"],
            id="future-ts-counts-as-now",
        ),
        pytest.param(
            [timed("old", 0.02, "2026-09-01"), timed("naive", 0.015, "2026-11-30T12:00:00")],
            100,
            ["naive", "old"],
            id="date-only-and-zoneless-read-as-utc",
        ),
        pytest.param(
            [timed("no-rrf", 0.0, TODAY), replace(cand("none"), ts=TODAY)],
            100,
            ["no-rrf", "none"],
            id="missing-rrf-counts-as-zero",
        ),
    ],
)
def test_temporal_rerank(
    candidates: list[IntelligentSearchCandidate], weight: object, expected: list[str]
) -> None:
    result = apply_temporal_rerank(candidates, recency_weight=weight, half_life_days=30, now=NOW)
    assert [c.id for c in result] == expected
    assert {c.id: c.rrf_score for c in result} == {c.id: c.rrf_score for c in candidates}


def test_temporal_rerank_uses_the_half_life() -> None:
    # 0.02 x (1 + 0.5 x 2^(-10/h)) against 0.021 (no ts): h = 30 gives 0.02794, h = 1 gives 0.02001.
    candidates = [timed("plain", 0.021, None), timed("dated", 0.02, "2026-11-20T12:00:00Z")]
    long_life = apply_temporal_rerank(candidates, recency_weight=50, half_life_days=30, now=NOW)
    short_life = apply_temporal_rerank(candidates, recency_weight=50, half_life_days=1, now=NOW)
    assert [c.id for c in long_life] == ["dated", "plain"]
    assert [c.id for c in short_life] == ["plain", "dated"]


@pytest.mark.parametrize(
    ("weight", "half_life"),
    [
        pytest.param(0, 30, id="zero-weight"),
        pytest.param(0.9, 30, id="weight-floored-to-zero"),
        pytest.param(math.nan, 30, id="nan-weight"),
        pytest.param(50, 0, id="zero-half-life"),
        pytest.param(50, -3, id="negative-half-life"),
        pytest.param(50, math.nan, id="nan-half-life"),
    ],
)
def test_temporal_rerank_noop_returns_the_same_list(weight: object, half_life: float) -> None:
    candidates = [timed("old", 0.02, DAYS_90_AGO), timed("new", 0.018, TODAY)]
    assert (
        apply_temporal_rerank(candidates, recency_weight=weight, half_life_days=half_life, now=NOW)
        is candidates
    )


def test_temporal_rerank_refuses_naive_now() -> None:
    with pytest.raises(ValueError, match="aware"):
        apply_temporal_rerank([], recency_weight=50, half_life_days=30, now=datetime(2026, 11, 30))


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        pytest.param(replace(cand("m"), semantic_rank=1, fulltext_rank=4), "both", id="both-ranks"),
        pytest.param(replace(cand("m", "keyword"), semantic_rank=2), "semantic", id="semantic-rank-only"),
        pytest.param(replace(cand("m"), fulltext_rank=2), "keyword", id="fulltext-rank-only"),
        pytest.param(cand("m", "keyword"), "keyword", id="unranked-keyword-uses-source"),
        pytest.param(cand("m"), "semantic", id="unranked-semantic-uses-source"),
    ],
)
def test_get_match_reason(candidate: IntelligentSearchCandidate, expected: str) -> None:
    assert get_match_reason(candidate) == expected


def test_match_reason_after_fusion() -> None:
    fused = fuse_candidates_with_weighted_rrf(sem("a", "b"), kw("b", "c"), 50, 10)
    assert {c.id: get_match_reason(c) for c in fused} == {"a": "semantic", "b": "both", "c": "keyword"}


BRANCH_IDS = st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", ""]), max_size=8)


@given(
    semantic_ids=BRANCH_IDS,
    keyword_ids=BRANCH_IDS,
    weight=st.integers(min_value=-10, max_value=110) | st.floats(allow_nan=True),
    limit=st.integers(min_value=-1, max_value=8),
)
def test_fused_output_is_unique_bounded_and_sorted(
    semantic_ids: list[str], keyword_ids: list[str], weight: object, limit: int
) -> None:
    fused = fuse_candidates_with_weighted_rrf(sem(*semantic_ids), kw(*keyword_ids), weight, limit)
    ids = [c.id for c in fused]
    assert len(ids) == len(set(ids)) <= max(0, limit)
    assert "" not in ids
    assert set(ids) <= set(semantic_ids) | set(keyword_ids)
    scores = [c.rrf_score or 0.0 for c in fused]
    assert all(c.rrf_score is not None for c in fused)
    assert all(0 < s <= 2 / 61 for s in scores)
    assert scores == sorted(scores, reverse=True)
    for c in fused:
        assert c.semantic_rank is not None or c.fulltext_rank is not None


@given(
    rrfs=st.lists(st.floats(min_value=0, max_value=1), max_size=8),
    ages=st.lists(st.integers(min_value=-400, max_value=4000) | st.none(), min_size=8, max_size=8),
    weight=st.integers(min_value=0, max_value=100),
)
def test_temporal_rerank_is_a_permutation_keeping_scores(
    rrfs: list[float], ages: list[int | None], weight: int
) -> None:
    candidates = [
        timed(f"m{i}", rrf, None if age is None else (NOW - timedelta(days=age)).isoformat())
        for i, (rrf, age) in enumerate(zip(rrfs, ages, strict=False))
    ]
    result = apply_temporal_rerank(candidates, recency_weight=weight, half_life_days=30, now=NOW)
    assert sorted(result, key=lambda c: c.id) == sorted(candidates, key=lambda c: c.id)


@given(ts=st.text(max_size=40) | st.datetimes().map(datetime.isoformat))
def test_temporal_rerank_never_raises_on_any_timestamp(ts: str) -> None:
    candidates = [timed("a", 0.01, ts), timed("b", 0.01, TODAY)]
    assert len(apply_temporal_rerank(candidates, recency_weight=100, half_life_days=30, now=NOW)) == 2
