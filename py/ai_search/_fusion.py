"""Hybrid ranking: weighted reciprocal rank fusion of the keyword and semantic branches, and recency.

The server fetches candidates from each branch (see `_pipeline`), drops semantic ones below the
minimum similarity and, unless the keyword branch found them too, below the relevance floor, fuses
the two ranked lists, and may then nudge recent messages up:

    >>> from ai_search._pipeline import IntelligentSearchCandidate as C
    >>> semantic = [C("m1", "r", "m1", "", "semantic"), C("m2", "r", "m2", "", "semantic")]
    >>> keyword = [C("m2", "r", "m2", "", "keyword")]
    >>> [c.id for c in fuse_candidates_with_weighted_rrf(semantic, keyword, 50, 10)]
    ['m2', 'm1']

Fusion uses ranks only, never the branches' raw scores, because a BM25 rank and a cosine distance
live on different scales. Every function returns new candidate records (`dataclasses.replace`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal

from ._constants import INTELLIGENT_SEARCH_RRF_CONSTANT
from ._pipeline import IntelligentSearchCandidate, normalize_similarity_percent

__all__ = [
    "MatchReason",
    "apply_temporal_rerank",
    "filter_semantic_candidates_by_minimum_similarity",
    "filter_semantic_candidates_by_relevance_floor",
    "fuse_candidates_with_weighted_rrf",
    "get_match_reason",
    "get_recency_decay",
    "to_ranked_candidates",
]

# Seconds in one day, to turn a message's age into the half-life's unit (days).
_SECONDS_PER_DAY = 86_400

MatchReason = Literal["keyword", "semantic", "both"]

_Candidates = Sequence[IntelligentSearchCandidate]


@dataclass(slots=True)
class _Fused:
    candidate: IntelligentSearchCandidate
    score: float = 0.0
    ts: str | None = None
    semantic_rank: int | None = None
    fulltext_rank: int | None = None


def _check_rrf_constant(k: int) -> None:
    if k < 0:
        raise ValueError(f"the RRF constant k must be 0 or more, got {k}")


def filter_semantic_candidates_by_minimum_similarity(candidates: _Candidates, percent: object) -> _Candidates:
    """Keep candidates whose similarity is at least `percent`/100, or unknown.

    `percent` is floored and clamped to 0..100 (non-numbers give 0); 0 returns `candidates`
    itself. No rounding: 0.69996 fails at 70 while 0.7 passes.
    """
    floor_percent = normalize_similarity_percent(percent)
    if floor_percent == 0:
        return candidates
    minimum = floor_percent / 100
    return [c for c in candidates if c.semantic_similarity is None or c.semantic_similarity >= minimum]


def filter_semantic_candidates_by_relevance_floor(
    candidates: _Candidates, floor: float, corroborated: Collection[str] = (), *, query_floor: float = 0.0
) -> _Candidates:
    """Keep the semantic candidates that are results: similar enough, or found by keyword too.

    A message the keyword branch also found (its key, `msg_id` else `id`, is in `corroborated`) stands
    on its words. One found only by meaning must be at least `floor` similar (a cosine, 0..1), and
    the query's best match must reach `query_floor`: a similarity search always returns the nearest
    messages, related or not, and a query about nothing the workspace discussed has only weak
    nearest ones, while a query with an answer usually has one strong match even when the answer
    itself is less similar than that. A candidate without a similarity is kept (nothing to judge it
    by). With both floors <= 0, `candidates` itself is returned.

        >>> from ai_search._pipeline import IntelligentSearchCandidate as C
        >>> near = C("m1", "r", "m1", "", "semantic", semantic_similarity=0.6)
        >>> far = C("m2", "r", "m2", "", "semantic", semantic_similarity=0.2)
        >>> [c.id for c in filter_semantic_candidates_by_relevance_floor([near, far], 0.4)]
        ['m1']
        >>> [c.id for c in filter_semantic_candidates_by_relevance_floor([near, far], 0.4, {"m2"})]
        ['m1', 'm2']
        >>> [c.id for c in filter_semantic_candidates_by_relevance_floor([near, far], 0.1, query_floor=0.7)]
        []
    """
    if not floor > 0 and not query_floor > 0:
        return candidates
    known = [c.semantic_similarity for c in candidates if c.semantic_similarity is not None]
    strong_enough = not known or max(known) >= query_floor
    return [
        c
        for c in candidates
        if (c.msg_id or c.id) in corroborated
        or c.semantic_similarity is None
        or (strong_enough and c.semantic_similarity >= floor)
    ]


def fuse_candidates_with_weighted_rrf(
    semantic: _Candidates,
    keyword: _Candidates,
    semantic_weight: object,
    limit: int,
    k: int = INTELLIGENT_SEARCH_RRF_CONSTANT,
) -> list[IntelligentSearchCandidate]:
    """Fuse two ranked lists: each list adds `weight / (k + rank)` to the messages it returned.

    `semantic_weight` is a percent (floored, clamped to 0..100); the keyword branch gets the rest,
    and a branch whose weight is 0 is ignored. A candidate is keyed by `msg_id`, else `id`; a
    repeated key counts once per branch, and ranks run 1, 2, 3... over unique keys. The record
    first seen (semantic branch first) is kept, with `ts` filled from the other branch when
    missing. Ordered by fused score, then semantic rank, then full-text rank; at most `limit`.

    Raises:
        ValueError: `k` is negative.
    """
    _check_rrf_constant(k)
    weight = normalize_similarity_percent(semantic_weight) / 100
    branches = ((semantic, weight, "semantic"), (keyword, 1 - weight, "keyword"))
    fused: dict[str, _Fused] = {}
    for candidates, branch_weight, branch in branches:
        if branch_weight <= 0:
            continue
        rank = 0
        seen: set[str] = set()
        for candidate in candidates:
            key = candidate.msg_id or candidate.id
            if not key or key in seen:
                continue
            seen.add(key)
            rank += 1
            entry = fused.get(key)
            if entry is None:
                entry = fused[key] = _Fused(candidate, ts=candidate.ts)
            entry.score += branch_weight / (k + rank)
            entry.ts = entry.ts or candidate.ts
            if branch == "semantic":
                entry.semantic_rank = rank
            else:
                entry.fulltext_rank = rank
    ordered = sorted(
        fused.values(),
        key=lambda e: (
            -e.score,
            math.inf if e.semantic_rank is None else e.semantic_rank,
            math.inf if e.fulltext_rank is None else e.fulltext_rank,
        ),
    )
    return [
        replace(
            e.candidate,
            ts=e.ts,
            rrf_score=e.score,
            semantic_rank=e.semantic_rank,
            fulltext_rank=e.fulltext_rank,
        )
        for e in ordered[: max(0, limit)]
    ]


def to_ranked_candidates(
    candidates: _Candidates, k: int = INTELLIGENT_SEARCH_RRF_CONSTANT
) -> list[IntelligentSearchCandidate]:
    """Score a single branch's list by position, as if it had been fused alone: 1 / (k + rank).

    Keyword candidates get their full-text rank, the others their semantic rank; the other rank
    is left as it was.

    Raises:
        ValueError: `k` is negative.
    """
    _check_rrf_constant(k)
    ranked = []
    for index, candidate in enumerate(candidates):
        rank = index + 1
        if candidate.source == "keyword":
            ranked.append(replace(candidate, rrf_score=1 / (k + rank), fulltext_rank=rank))
        else:
            ranked.append(replace(candidate, rrf_score=1 / (k + rank), semantic_rank=rank))
    return ranked


def get_recency_decay(age_days: float, half_life_days: float) -> float:
    """2^(-age/half_life), 1 for messages from now or the future; 0 without a valid half-life or age."""
    if not half_life_days > 0 or not math.isfinite(age_days):
        return 0.0
    return float(2.0 ** (-(max(0.0, age_days) / half_life_days)))


def _parse_timestamp(value: str | None) -> datetime | None:
    """Read an ISO 8601 time (a `Z` suffix included); a time without a zone is taken as UTC."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def apply_temporal_rerank(
    candidates: _Candidates,
    *,
    recency_weight: object,
    half_life_days: float,
    now: datetime,
) -> _Candidates:
    """Reorder by `rrf_score x (1 + w x decay(age in days))`, w = recency weight percent / 100.

    Returns `candidates` itself when the weight is 0 or the half-life is not positive. A candidate
    with no readable `ts` keeps its plain `rrf_score`; ties keep their order; `rrf_score` itself is
    not changed, so the fused relevance stays visible.

    Raises:
        ValueError: `now` is a naive datetime.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"apply_temporal_rerank needs an aware `now`, got naive {now.isoformat()}")
    weight = normalize_similarity_percent(recency_weight) / 100
    if weight == 0 or not half_life_days > 0:
        return candidates

    def order_key(candidate: IntelligentSearchCandidate) -> float:
        relevance = candidate.rrf_score or 0.0
        moment = _parse_timestamp(candidate.ts)
        if moment is None:
            return relevance
        age_days = (now - moment).total_seconds() / _SECONDS_PER_DAY
        return relevance * (1 + weight * get_recency_decay(age_days, half_life_days))

    return sorted(candidates, key=lambda candidate: -order_key(candidate))


def get_match_reason(candidate: IntelligentSearchCandidate) -> MatchReason:
    """Which branch found a candidate: from its ranks once fused or ranked, else from its source."""
    if candidate.semantic_rank is not None and candidate.fulltext_rank is not None:
        return "both"
    if candidate.semantic_rank is not None:
        return "semantic"
    if candidate.fulltext_rank is not None:
        return "keyword"
    return candidate.source
