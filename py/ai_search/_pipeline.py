"""The Intelligent-Search pipeline contract: filters, the request, and candidate normalisation.

The server calls the remote pipeline (or the embedded one, which speaks the same contract) with a
request built here, and turns whatever JSON comes back into `IntelligentSearchCandidate` records here.
Everything is pure: the caller does the HTTP call, the logging and the permission re-check against
the store. Keeping it pure lets the embedded pipeline, the remote client and the tests share one
definition of the wire format.

    >>> filters = build_intelligent_search_pipeline_filters(["r1", "r2"], rids=["r2"])
    >>> filters
    {'room_id': {'$eq': 'r2'}}
    >>> config = PipelineConfig("https://h/api/v2", "p 1", "key", "secret")
    >>> build_intelligent_search_request("deploy", config, classifications=["user"],
    ...     pipeline_filters=filters, limit=20).url
    'https://h/api/v2/pipelines/p%201/search'

The behaviour is the upstream "IS v2" generation (hybrid retrieval): keyword hits carry no score,
semantic scores are clamped to cosine ranges rather than guessed as percents, duplicate message ids
are dropped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import quote, urlsplit

from ._constants import (
    CLASSIFICATION_SEARCH_TYPE,
    INTELLIGENT_SEARCH_CANDIDATE_MULTIPLIER,
    MAX_INTELLIGENT_SEARCH_CANDIDATES,
    MIN_INTELLIGENT_SEARCH_CANDIDATES,
)

__all__ = [
    "INTELLIGENT_SEARCH_CANDIDATE_BASE_MIN_RESULTS",
    "INTELLIGENT_SEARCH_PIPELINE_TIMEOUT_SECONDS",
    "CandidateSource",
    "IntelligentSearchCandidate",
    "IntelligentSearchRequest",
    "NormalizedCandidates",
    "PipelineConfig",
    "PipelineFilters",
    "build_intelligent_search_pipeline_filters",
    "build_intelligent_search_request",
    "get_intelligent_search_candidate_limit",
    "get_semantic_distance_threshold",
    "normalize_intelligent_search_candidates",
    "normalize_similarity_percent",
    "to_iso_timestamp",
    "trim_trailing_slashes",
]

# Deadline of one pipeline call, connect to last byte (seconds); the caller's HTTP client applies it.
INTELLIGENT_SEARCH_PIPELINE_TIMEOUT_SECONDS = 10.0
# A search for fewer results than this still fetches candidates as if asked for this many (results),
# so that fusion has something to fuse for tiny pages.
INTELLIGENT_SEARCH_CANDIDATE_BASE_MIN_RESULTS = 5

CandidateSource = Literal["semantic", "keyword"]
# The JSON object sent as `filters`: `room_id`, `username`, `timestamp` with `$eq`/`$in`/`$ge`/`$le`.
PipelineFilters = dict[str, Any]

_Paths = tuple[tuple[str, ...], ...]

# Where a pipeline response may keep its result list, highest priority first.
_RESULT_CARRIERS = ("results", "context", "documents", "hits", "data")
# Field paths read for each value, first non-empty wins; ("metadata", x) is x inside `metadata`.
_RID_PATHS = (("metadata", "room_id"), ("metadata", "rid"), ("room_id",), ("rid",))
_MSG_ID_PATHS = (
    ("metadata", "msg_id"),
    ("metadata", "message_id"),
    ("msg_id",),
    ("message_id",),
    ("id",),
)
_TEXT_PATHS = (("text",), ("content",), ("document",), ("page_content",), ("metadata", "text"))
_TS_PATHS = (("metadata", "timestamp"), ("timestamp",))
_SIMILARITY_PATHS = (("similarity",), ("metadata", "similarity"))
_DISTANCE_PATHS = (("score",), ("distance",), ("metadata", "score"), ("metadata", "distance"))
# Cosine ranges: similarity in [-1, 1], distance = 1 - similarity in [0, 2].
_SIMILARITY_RANGE = (-1.0, 1.0)
_DISTANCE_RANGE = (0.0, 2.0)
# What JavaScript's Number() accepts as a decimal string; Python's float() also takes "1_0", "inf"
# and non-ASCII digits, which the upstream never read as numbers.
_DECIMAL_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """Where the pipeline lives and how to authenticate; the secrets never reach the browser."""

    base_url: str
    pipeline_id: str
    api_key: str = field(repr=False)
    api_key_secret: str = field(repr=False)
    query_template: str = ""
    minimum_similarity_percent: float = 0

    @property
    def is_configured(self) -> bool:
        """True when base URL, pipeline id, key and secret are all non-blank."""
        required = (self.base_url, self.pipeline_id, self.api_key, self.api_key_secret)
        return all(value.strip() for value in required)


@dataclass(frozen=True, slots=True)
class IntelligentSearchRequest:
    """One pipeline call, ready for an HTTP client: headers carry the secrets, so repr hides them."""

    method: str
    url: str
    headers: dict[str, str] = field(repr=False)
    body: dict[str, Any]
    timeout_seconds: float = INTELLIGENT_SEARCH_PIPELINE_TIMEOUT_SECONDS


@dataclass(frozen=True, slots=True)
class IntelligentSearchCandidate:
    """A message the pipeline proposed; unverified until the server finds it in the store.

    `id` is the message id, or `intelligent-<source>-<index>` when the pipeline gave none. Score
    fields are None for keyword hits (their `score` is a full-text rank, not a distance) and when
    the pipeline sent no usable number. The rank fields are set by fusion or ranking.
    """

    id: str
    rid: str | None
    msg_id: str | None
    text: str
    source: CandidateSource
    score: float | None = None
    semantic_similarity: float | None = None
    semantic_distance: float | None = None
    ts: str | None = None
    rrf_score: float | None = None
    semantic_rank: int | None = None
    fulltext_rank: int | None = None


@dataclass(frozen=True, slots=True)
class NormalizedCandidates:
    """Accepted candidates, plus how many scores fell outside the cosine range (to log one warning)."""

    candidates: tuple[IntelligentSearchCandidate, ...]
    out_of_range_count: int


def trim_trailing_slashes(url: str) -> str:
    """Strip every trailing `/` and nothing else: `https://x/v1//` gives `https://x/v1`."""
    return url.rstrip("/")


def to_iso_timestamp(moment: datetime) -> str:
    """Write an aware datetime as JavaScript's `toISOString()` does: UTC, milliseconds, `Z`.

    Microseconds are truncated to milliseconds, as a JavaScript `Date` holds no finer time.

    Raises:
        ValueError: `moment` is naive; guessing its zone could move a date filter by a day.
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"to_iso_timestamp needs an aware datetime, got naive {moment.isoformat()}")
    utc = moment.astimezone(UTC)
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:"
        f"{utc.second:02d}.{utc.microsecond // 1000:03d}Z"
    )


def _eq_or_in(values: Sequence[str]) -> dict[str, Any]:
    return {"$eq": values[0]} if len(values) == 1 else {"$in": list(values)}


def build_intelligent_search_pipeline_filters(
    user_room_ids: Iterable[str],
    *,
    rid: str | None = None,
    rids: Iterable[str] = (),
    from_username: str | None = None,
    from_usernames: Iterable[str] = (),
    start_date: datetime | None = None,
    end_date: datetime | None = None,
) -> PipelineFilters | None:
    """Build the pipeline `filters` object, scoped to the rooms the caller may read.

    Returns None, meaning "do not search", when the caller has no rooms or when rooms were
    requested and none of them is among `user_room_ids`: an explicit filter on a room the caller
    cannot read must never widen into a search of every room. Requested rooms keep the request's
    order (`rids`, then `rid`). A date bound is written only when given (`$ge` for the start,
    `$le` for the end).

    Raises:
        ValueError: a date is a naive datetime.
    """
    allowed = list(dict.fromkeys(user_room_ids))
    if not allowed:
        return None
    requested = list(dict.fromkeys([*rids, *([rid] if rid else [])]))
    if requested:
        allowed_set = set(allowed)
        rooms = [room for room in requested if room in allowed_set]
        if not rooms:
            return None
    else:
        rooms = allowed
    filters: PipelineFilters = {"room_id": _eq_or_in(rooms)}

    names = [*from_usernames, *([from_username] if from_username is not None else [])]
    usernames = list(dict.fromkeys(name.removeprefix("@") for name in names))
    usernames = [name for name in usernames if name]
    if usernames:
        filters["username"] = _eq_or_in(usernames)

    timestamp: dict[str, str] = {}
    if start_date is not None:
        timestamp["$ge"] = to_iso_timestamp(start_date)
    if end_date is not None:
        timestamp["$le"] = to_iso_timestamp(end_date)
    if timestamp:
        filters["timestamp"] = timestamp
    return filters


def _read_number(value: object) -> float | None:
    """A finite number, or a non-blank string holding one; anything else (bools too) is None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an int beyond float range
            return None
        return number if math.isfinite(number) else None
    if isinstance(value, str):
        text = value.strip()
        if not _DECIMAL_RE.fullmatch(text):
            return None
        number = float(text)
        return number if math.isfinite(number) else None
    return None


def normalize_similarity_percent(value: object) -> int:
    """Read a percent setting: non-numbers give 0, otherwise floor and clamp to 0..100."""
    number = _read_number(value)
    if number is None:
        return 0
    return min(100, max(0, math.floor(number)))


def get_semantic_distance_threshold(percent: float) -> float:
    """The largest cosine distance kept for a minimum similarity: 61 gives 0.39, 0 gives 1."""
    # Math.round(x * 1e4) / 1e4, i.e. halves round up, unlike Python's round().
    return math.floor((1 - percent / 100) * 10_000 + 0.5) / 10_000


def get_intelligent_search_candidate_limit(limit: int) -> int:
    """Candidates each retrieval branch fetches for `limit` results: max(limit, 5) x 3, in 20..100."""
    wanted = (
        max(limit, INTELLIGENT_SEARCH_CANDIDATE_BASE_MIN_RESULTS) * INTELLIGENT_SEARCH_CANDIDATE_MULTIPLIER
    )
    return min(MAX_INTELLIGENT_SEARCH_CANDIDATES, max(MIN_INTELLIGENT_SEARCH_CANDIDATES, wanted))


def build_intelligent_search_request(
    query: str,
    config: PipelineConfig,
    *,
    classifications: Sequence[str],
    pipeline_filters: PipelineFilters | None,
    limit: int,
    mode: CandidateSource = "semantic",
) -> IntelligentSearchRequest:
    """Build `POST {base}/pipelines/{id}/search` exactly as the upstream sends it.

    The base URL keeps its path (`https://h/api/v2` gives `https://h/api/v2/pipelines/...`); the
    pipeline id is one encoded path segment. The query template's first `{query}` is replaced
    literally. Keyword mode asks for `type: search` and sends no distance threshold, because a
    full-text rank has no distance. `filters` is left out when `pipeline_filters` is None.

    Raises:
        ValueError: the config is not complete, its base URL has a query or fragment, or `mode`
            is unknown.
    """
    if not config.is_configured:
        raise ValueError("the intelligent search pipeline is not configured (base URL, id, key, secret)")
    if mode not in ("semantic", "keyword"):
        raise ValueError(f"unknown intelligent search mode {mode!r}; expected 'semantic' or 'keyword'")
    parts = urlsplit(config.base_url)
    if parts.query or parts.fragment:
        raise ValueError("the pipeline base URL must not carry a query or a fragment; the path is appended")
    segment = quote(config.pipeline_id, safe="")
    if segment in (".", ".."):  # a dot segment would be resolved away by URL normalisation
        segment = segment.replace(".", "%2E")
    url = f"{trim_trailing_slashes(config.base_url)}/pipelines/{segment}/search"
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "X-API-KEY": config.api_key,
        "X-API-KEY-SECRET": config.api_key_secret,
    }
    template = config.query_template
    params: dict[str, Any] = {"k": limit}
    if mode == "semantic":
        percent = normalize_similarity_percent(config.minimum_similarity_percent)
        params["threshold"] = get_semantic_distance_threshold(percent)
    body: dict[str, Any] = {
        "query": template.replace("{query}", query, 1) if template else query,
        "type": "search" if mode == "keyword" else "similarity",
        "classification": {
            "classifications": list(classifications),
            "search_type": CLASSIFICATION_SEARCH_TYPE,
        },
    }
    if pipeline_filters is not None:
        body["filters"] = pipeline_filters
    body["params"] = params
    return IntelligentSearchRequest(method="POST", url=url, headers=headers, body=body)


def _result_list(raw: object) -> list[object]:
    if isinstance(raw, list | tuple):
        return list(raw)
    if isinstance(raw, Mapping):
        for key in _RESULT_CARRIERS:
            value = raw.get(key)
            if isinstance(value, list | tuple):
                return list(value)
    return []


def _lookup(item: Mapping[str, object], metadata: Mapping[str, object], path: tuple[str, ...]) -> object:
    if len(path) == 2:
        return metadata.get(path[1])
    return item.get(path[0])


def _first_string(item: Mapping[str, object], metadata: Mapping[str, object], paths: _Paths) -> str | None:
    for path in paths:
        value = _lookup(item, metadata, path)
        if isinstance(value, str) and value:
            return value
    return None


def _first_number(item: Mapping[str, object], metadata: Mapping[str, object], paths: _Paths) -> float | None:
    for path in paths:
        number = _read_number(_lookup(item, metadata, path))
        if number is not None:
            return number
    return None


def _split_external_identifier(
    external: object, rid: str | None, msg_id: str | None
) -> tuple[str | None, str | None]:
    """Fill whichever id is missing from `rid:msg`; a colon first or last means "no split"."""
    if (rid is not None and msg_id is not None) or not isinstance(external, str) or not external:
        return rid, msg_id
    colon = external.find(":")
    if 0 < colon < len(external) - 1:
        return rid or external[:colon], msg_id or external[colon + 1 :]
    return rid, msg_id or external


def _semantic_scores(
    item: Mapping[str, object], metadata: Mapping[str, object]
) -> tuple[float | None, float | None, float | None, bool]:
    """(score, similarity, distance, out_of_range) from a similarity or else a distance field."""
    similarity = _first_number(item, metadata, _SIMILARITY_PATHS)
    if similarity is not None:
        low, high = _SIMILARITY_RANGE
        clamped = min(high, max(low, similarity))
        return max(0.0, clamped), clamped, 1 - clamped, clamped != similarity
    distance = _first_number(item, metadata, _DISTANCE_PATHS)
    if distance is not None:
        low, high = _DISTANCE_RANGE
        clamped = min(high, max(low, distance))
        similarity = 1 - clamped
        return max(0.0, similarity), similarity, clamped, clamped != distance
    return None, None, None, False


def normalize_intelligent_search_candidates(
    raw: object,
    user_room_ids: Iterable[str] = (),
    limit: int = MAX_INTELLIGENT_SEARCH_CANDIDATES,
    source: CandidateSource = "semantic",
) -> NormalizedCandidates:
    """Turn any pipeline response into at most `limit` unique, room-scoped candidates.

    Never raises on malformed JSON: unreadable items are skipped. When `user_room_ids` is not
    empty, an item in another room is dropped; an item with no room id passes, and the server
    re-checks it against the store. Duplicate message ids keep the first; `limit` counts accepted
    candidates. Out-of-range scores are counted only for accepted candidates.
    """
    rooms = frozenset(user_room_ids)
    accepted: dict[str, IntelligentSearchCandidate] = {}
    out_of_range = 0
    for index, entry in enumerate(_result_list(raw)):
        if len(accepted) >= limit:
            break
        item: Mapping[str, object] = entry if isinstance(entry, Mapping) else {}
        meta = item.get("metadata")
        metadata: Mapping[str, object] = meta if isinstance(meta, Mapping) else {}
        rid = _first_string(item, metadata, _RID_PATHS)
        msg_id = _first_string(item, metadata, _MSG_ID_PATHS)
        rid, msg_id = _split_external_identifier(item.get("external_identifier"), rid, msg_id)
        if rid is None and msg_id is None:
            continue
        if rooms and rid is not None and rid not in rooms:
            continue
        candidate_id = msg_id or f"intelligent-{source}-{index}"
        if candidate_id in accepted:
            continue
        score = similarity = distance = None
        if source == "semantic":
            score, similarity, distance, outside = _semantic_scores(item, metadata)
            out_of_range += outside
        accepted[candidate_id] = IntelligentSearchCandidate(
            id=candidate_id,
            rid=rid,
            msg_id=msg_id,
            text=_first_string(item, metadata, _TEXT_PATHS) or "",
            source=source,
            score=score,
            semantic_similarity=similarity,
            semantic_distance=distance,
            ts=_first_string(item, metadata, _TS_PATHS),
        )
    return NormalizedCandidates(tuple(accepted.values()), out_of_range)
