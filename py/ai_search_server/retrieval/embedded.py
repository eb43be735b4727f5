"""``EmbeddedPipeline``: the Intelligent-Search pipeline contract, answered from the embedded index.

The same request body a remote pipeline receives (built by the pure core), the same kind of answer::

    request  {"query": "deploy", "type": "search" | "similarity",
              "classification": {...}, "filters": {"room_id": {"$in": [...]},
              "username": {"$eq": "alice"}, "timestamp": {"$ge": "...Z", "$le": "...Z"}},
              "params": {"k": 20, "threshold": 0.6}}
    answer   {"results": [{"id": msg_id, "metadata": {"msg_id", "room_id", "username",
              "timestamp"}, "similarity": 0.83, "distance": 0.17}, ...]}

`type: search` is the keyword branch (FTS5/BM25; a hit carries its BM25 `score`, which is a rank and
never read as a distance); `type: similarity` the semantic branch (cosine similarity of unit vectors,
rows farther than `threshold` left out). In-process, ``search`` builds the body with the core and calls
``handle``; over HTTP, ``pipeline_http`` calls ``handle`` with the posted body: one code path.

Our extension (``conditions``): a body may carry ``ai_search_conditions`` (``has:``, ``is:``, excluded
authors, words and phrases, required phrases); both branches apply them inside the index query, over
every document in scope, and the answer says ``"ai_search_conditions": "applied"``. A semantic
answer also names the model that embedded the query (``"ai_search_model": model_id``), so that a
proxy applies the relevance floor calibrated for it, as one process does.

Failing closed: a request without a `room_id` filter, or with a filter key or operator this pipeline
does not know, is refused (``PipelineRequestError``) rather than answered with every room.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import anyio

from ai_search import (
    CandidateSource,
    PipelineConfig,
    PipelineFilters,
    build_intelligent_search_request,
    to_iso_timestamp,
)

from .conditions import (
    CONDITIONS_APPLIED,
    CONDITIONS_FIELD,
    ConditionsError,
    MessageConditions,
    parse_conditions,
    with_conditions,
)
from .embedder import EmbedderError
from .floor import KNOWN_TERMS_FIELD, MODEL_FIELD
from .index import EmbeddedIndex
from .index_db import ROOT_MARK, DocConditions, KeywordHit, KeywordScope
from .pipeline_client import PipelineError
from .terms import Term, fts_match_expression, query_terms, value_term
from .vectors import VectorScope

__all__ = [
    "HAS_MARKS",
    "IS_MARKS",
    "MAX_PIPELINE_K",
    "MAX_PIPELINE_QUERY_CHARS",
    "EmbeddedPipeline",
    "KeywordBranch",
    "PipelineQuery",
    "PipelineRequestError",
    "doc_conditions",
    "parse_pipeline_request",
]

# Results one pipeline call may ask for (`params.k`); the service asks for at most 100.
MAX_PIPELINE_K = 1000
# Characters of `query` (after the query template was applied); the API allows 500 before it.
MAX_PIPELINE_QUERY_CHARS = 4000
_FILTER_KEYS = frozenset({"room_id", "username", "timestamp"})
# Never sent to a real server: the embedded pipeline builds its body with the core, which wants a URL.
_IN_PROCESS_BASE_URL = "http://embedded-pipeline.invalid"
# `has:` value -> the mark a document must hold (`thread`: a thread's first message, which the
# index marks from its replies).
HAS_MARKS: dict[str, str] = {
    "link": "link",
    "file": "file",
    "image": "image",
    "reaction": "reaction",
    "thread": ROOT_MARK,
}
# `is:` value -> the mark (`dm` never reaches a pipeline: the service narrows the rooms).
IS_MARKS: dict[str, str] = {"thread": "reply", "pinned": "pinned"}


class PipelineRequestError(ValueError):
    """The request body does not follow the contract; the message says which part (HTTP 400)."""


@dataclass(frozen=True, slots=True)
class PipelineQuery:
    query: str
    mode: CandidateSource
    rooms: tuple[str, ...]
    users: tuple[str, ...] | None
    ts_min_ms: int | None
    ts_max_ms: int | None
    k: int
    threshold: float | None  # largest cosine distance kept (semantic only)
    conditions: DocConditions | None = None  # our extension, when the body carried it
    message_conditions: MessageConditions | None = None  # the same, as sent (for a `KeywordBranch`)


def doc_conditions(conditions: MessageConditions) -> DocConditions:
    """The extension's conditions in the index's terms: marks and FTS5 expressions.

    Raises:
        KeyError: a value no table here knows (``parse_conditions`` lets only known ones through).
    """
    excluded = [term for term in map(value_term, conditions.not_words) if term]
    required = [term for term in map(value_term, conditions.phrases) if term]
    return DocConditions(
        marks=(*(HAS_MARKS[v] for v in conditions.has), *(IS_MARKS[v] for v in conditions.is_)),
        not_marks=(*(HAS_MARKS[v] for v in conditions.not_has), *(IS_MARKS[v] for v in conditions.not_is)),
        not_usernames=tuple(u.removeprefix("@").lower() for u in conditions.not_usernames),
        required=tuple(fts_match_expression([term]) for term in required),
        excluded=fts_match_expression(excluded),
    )


def _strings(value: object, where: str) -> tuple[str, ...]:
    """`{"$eq": s}` or `{"$in": [s, ...]}` -> the strings."""
    if not isinstance(value, Mapping) or len(value) != 1:
        raise PipelineRequestError(f"filters.{where} must be {{'$eq': value}} or {{'$in': [values]}}")
    ((operator, operand),) = value.items()
    if operator == "$eq" and isinstance(operand, str):
        values: Sequence[object] = [operand]
    elif operator == "$in" and isinstance(operand, list):
        values = operand
    else:
        raise PipelineRequestError(f"filters.{where} must be {{'$eq': value}} or {{'$in': [values]}}")
    if not all(isinstance(v, str) and v for v in values):
        raise PipelineRequestError(f"filters.{where} values must be non-empty strings")
    return tuple(dict.fromkeys(str(v) for v in values))


def _epoch_ms(value: object, where: str) -> int:
    if not isinstance(value, str):
        raise PipelineRequestError(f"filters.timestamp.{where} must be an ISO 8601 string")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise PipelineRequestError(f"filters.timestamp.{where} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return math.floor(moment.timestamp() * 1000)


def _timestamp(value: object) -> tuple[int | None, int | None]:
    if not isinstance(value, Mapping) or not value or set(value) - {"$ge", "$le"}:
        raise PipelineRequestError("filters.timestamp must hold '$ge' and/or '$le'")
    low = _epoch_ms(value["$ge"], "$ge") if "$ge" in value else None
    high = _epoch_ms(value["$le"], "$le") if "$le" in value else None
    return low, high


def _params(value: object, mode: CandidateSource) -> tuple[int, float | None]:
    if not isinstance(value, Mapping):
        raise PipelineRequestError("params must be an object with 'k'")
    k = value.get("k")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_PIPELINE_K:
        raise PipelineRequestError(f"params.k must be an integer from 1 to {MAX_PIPELINE_K}")
    threshold = value.get("threshold")
    if threshold is None or mode == "keyword":
        return k, None
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 2:
        raise PipelineRequestError("params.threshold must be a cosine distance from 0 to 2")
    return k, float(threshold)


def parse_pipeline_request(body: object) -> PipelineQuery:
    """Check a request body against the contract.

    Raises:
        PipelineRequestError: naming the first part that is wrong.
    """
    if not isinstance(body, Mapping):
        raise PipelineRequestError("the request body must be a JSON object")
    query = body.get("query")
    if not isinstance(query, str) or not query.strip() or len(query) > MAX_PIPELINE_QUERY_CHARS:
        raise PipelineRequestError(
            f"query must be a non-blank string of at most {MAX_PIPELINE_QUERY_CHARS} characters"
        )
    kind = body.get("type")
    if kind not in ("search", "similarity"):
        raise PipelineRequestError("type must be 'search' (keyword) or 'similarity' (semantic)")
    mode: CandidateSource = "keyword" if kind == "search" else "semantic"
    filters = body.get("filters")
    if not isinstance(filters, Mapping) or "room_id" not in filters:
        raise PipelineRequestError("filters.room_id is required: this pipeline never searches every room")
    unknown = sorted(set(filters) - _FILTER_KEYS)
    if unknown:
        raise PipelineRequestError(
            f"unknown filter(s) {', '.join(unknown)}; known: room_id, username, timestamp"
        )
    rooms = _strings(filters["room_id"], "room_id")
    users = _strings(filters["username"], "username") if "username" in filters else None
    low, high = _timestamp(filters["timestamp"]) if "timestamp" in filters else (None, None)
    k, threshold = _params(body.get("params"), mode)
    try:
        conditions = parse_conditions(body.get(CONDITIONS_FIELD))
    except ConditionsError as exc:
        raise PipelineRequestError(str(exc)) from None
    active = conditions if conditions is not None and conditions.active else None
    found = doc_conditions(active) if active is not None else None
    return PipelineQuery(query, mode, rooms, users, low, high, k, threshold, found, active)


class KeywordBranch(Protocol):
    """A keyword index other than the embedded one's FTS5 (``pg_keyword.PgKeywordIndex``): the same
    search, given the extension's conditions as sent."""

    def keyword_search(
        self,
        terms: Sequence[Term],
        scope: KeywordScope,
        k: int,
        *,
        min_coverage: float = 0.0,
        conditions: MessageConditions | None = None,
    ) -> list[KeywordHit]: ...


class EmbeddedPipeline:
    """The `Pipeline` over an `EmbeddedIndex`; `handle` is the contract, blocking.

    `keyword`, when given, answers the keyword branch instead of the index's FTS5 (the setting
    ``keyword_index = "postgres"``); the semantic branch stays on the index.
    """

    kind = "embedded"

    def __init__(
        self,
        index: EmbeddedIndex,
        *,
        query_template: str = "",
        min_similarity_percent: int = 0,
        keyword_min_coverage: float = 0.0,
        keyword: KeywordBranch | None = None,
    ) -> None:
        self.index = index
        self.keyword = keyword
        # The keyword floor the search service applies to this pipeline's hits, when the caller knows
        # it: the index leaves out of its FTS5 query the terms that alone could never clear it. 0 (a
        # caller whose floor is unknown, such as a client of the pipeline served over HTTP) searches
        # every term.
        self.keyword_min_coverage = keyword_min_coverage
        # One contract call at a time: both branches are CPU work under the GIL (Python loops,
        # many short numpy calls); two of them side by side wait on each other's GIL hand-overs
        # (5 ms each) and a hybrid search took 3x the sum of its branches. In turn, they do not.
        self._cpu = threading.Lock()
        self._config = PipelineConfig(
            _IN_PROCESS_BASE_URL,
            "embedded",
            "in-process",
            "in-process",
            query_template,
            min_similarity_percent,
        )

    @property
    def semantic_available(self) -> bool:
        return self.index.semantic_available

    def handle(self, body: object) -> dict[str, Any]:
        """Answer one contract request.

        Raises:
            PipelineRequestError: the body breaks the contract.
            PipelineError: the semantic branch cannot run (no embedder, or the embedder failed).
        """
        query = parse_pipeline_request(body)
        results = self._keyword(query) if query.mode == "keyword" else self._semantic(query)
        answer: dict[str, Any] = {"results": results}
        if self.keyword is None:
            # Whether the query holds any word of the searched rooms: the bands' gibberish test.
            answer[KNOWN_TERMS_FIELD] = self.index.known_terms(query_terms(query.query), query.rooms)
        if query.conditions is not None:
            answer[CONDITIONS_FIELD] = CONDITIONS_APPLIED
        if query.mode != "keyword" and self.index.embedder is not None:
            # The caller (a proxy) picks the semantic floor calibrated for this model (floor.py).
            answer[MODEL_FIELD] = self.index.embedder.model_id
        return answer

    def _keyword(self, query: PipelineQuery) -> list[dict[str, Any]]:
        scope = KeywordScope(query.rooms, query.users, query.ts_min_ms, query.ts_max_ms)
        if self.keyword is not None:
            hits = self.keyword.keyword_search(
                query_terms(query.query),
                scope,
                query.k,
                min_coverage=self.keyword_min_coverage,
                conditions=query.message_conditions,
            )
        else:
            hits = self.index.keyword_search(
                query_terms(query.query),
                scope,
                query.k,
                min_coverage=self.keyword_min_coverage,
                conditions=query.conditions,
            )
        return [
            {
                "id": h.msg_id,
                "metadata": _metadata(h.msg_id, h.rid, h.username, h.ts_ms),
                "score": h.bm25,
                "coverage": round(h.coverage, 4),
            }
            for h in hits
        ]

    def _semantic(self, query: PipelineQuery) -> list[dict[str, Any]]:
        if not self.index.semantic_available:
            raise PipelineError("unavailable", branch="semantic", detail="no embedder is configured")
        try:
            vector = self.index.embed_query(query.query)
        except EmbedderError as exc:
            raise PipelineError("unreachable", branch="semantic", detail=str(exc)) from exc
        scope = VectorScope(
            frozenset(query.rooms),
            None if query.users is None else frozenset(query.users),
            query.ts_min_ms,
            query.ts_max_ms,
        )
        if query.conditions is not None:
            scope = self.index.condition_scope(scope, query.conditions)
        minimum = -1.0 if query.threshold is None else 1 - query.threshold
        hits = self.index.semantic_search(vector, scope, query.k, minimum)
        rows = self.index.rows([rowid for rowid, _score in hits])
        results = []
        for rowid, similarity in hits:
            row = rows.get(rowid)
            if row is None:  # deleted between the scan and this read
                continue
            results.append(
                {
                    "id": row.msg_id,
                    "metadata": _metadata(row.msg_id, row.rid, row.username, row.ts_ms),
                    "similarity": round(similarity, 6),
                    "distance": round(1 - similarity, 6),
                }
            )
        return results

    async def search(
        self,
        query: str,
        *,
        mode: CandidateSource,
        classifications: Sequence[str],
        pipeline_filters: PipelineFilters,
        limit: int,
        conditions: MessageConditions | None = None,
    ) -> object:
        request = build_intelligent_search_request(
            query,
            self._config,
            classifications=classifications,
            pipeline_filters=pipeline_filters,
            limit=limit,
            mode=mode,
        )
        body = with_conditions(request.body, conditions)
        # SQLite reads and the embedding forward pass block: off the event loop, one at a time.
        return await anyio.to_thread.run_sync(self.handle_in_turn, body)

    def handle_in_turn(self, body: object) -> dict[str, Any]:
        """`handle`, waiting for any other call of this pipeline to finish first (but for a keyword
        search answered by PostgreSQL: that work is the database's, not this process's CPU)."""
        if self.keyword is not None and isinstance(body, Mapping) and body.get("type") == "search":
            return self.handle(body)
        with self._cpu:
            return self.handle(body)

    async def aclose(self) -> None:
        """The index belongs to whoever opened it; nothing to release here."""


def _metadata(msg_id: str, rid: str, username: str, ts_ms: int) -> dict[str, str]:
    moment = datetime.fromtimestamp(ts_ms / 1000, UTC)
    return {"msg_id": msg_id, "room_id": rid, "username": username, "timestamp": to_iso_timestamp(moment)}
