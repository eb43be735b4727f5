"""Recall@10 of the keyword branch against its exhaustive ranking, on the bench's queries (bench_search_distinct).

The keyword branch bounds what FTS5 ranks (a pool of the best by BM25, the newest matches of long
lists, the messages holding every term); the reference ranks every match of the same searched
terms in the searcher's scope by coverage, then BM25 (``EmbeddedIndex.keyword_search(...,
exhaustive=True)``). Both are cut by the service's keyword floor (a hit under it is never a result)
before the top 10 are compared. Timed by CPU (``time.process_time``), per query, in this process.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ai_search_server.retrieval.floor import KEYWORD_MIN_COVERAGE
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.index_db import KeywordHit, KeywordScope
from ai_search_server.retrieval.terms import query_terms
from ai_search_server.store import open_store

RECALL_AT = 10
# Candidates the service asks the keyword branch for, for 10 results (get_intelligent_search_candidate_limit).
CANDIDATES = 30


def _key(hit: KeywordHit) -> tuple[float, float]:
    return round(hit.coverage, 9), round(hit.bm25, 9)


def measure(directory: Path, searcher: str, queries: list[str], say: Callable[[str], None]) -> dict[str, Any]:
    """Mean recall@10, the queries that lost any, and the CPU of the bounded and the exhaustive search."""
    store = open_store(directory)
    index = EmbeddedIndex.open(directory / INDEX_FILENAME, store, None)
    try:
        user = store.get_user_by_username(searcher)
        assert user is not None
        scope = KeywordScope(sorted(store.readable_room_ids(user.id)))
        recalls, bounded_cpu, exhaustive_cpu, missed = [], [], [], []
        for query in queries:
            terms = query_terms(query)
            started = time.process_time()
            ours = index.keyword_search(terms, scope, CANDIDATES, min_coverage=KEYWORD_MIN_COVERAGE)
            bounded_cpu.append(time.process_time() - started)
            started = time.process_time()
            truth = index.keyword_search(
                terms, scope, RECALL_AT, min_coverage=KEYWORD_MIN_COVERAGE, exhaustive=True
            )
            exhaustive_cpu.append(time.process_time() - started)
            # Compared by score, not by message: two messages of the same (coverage, BM25) tie,
            # and either one in the top 10 is as right as the other.
            reference = [_key(h) for h in truth if h.coverage >= KEYWORD_MIN_COVERAGE][:RECALL_AT]
            found = [_key(h) for h in ours if h.coverage >= KEYWORD_MIN_COVERAGE][:RECALL_AT]
            hit = sum((Counter(reference) & Counter(found)).values())
            recall = hit / len(reference) if reference else 1.0
            recalls.append(recall)
            if recall < 1.0:
                missed.append((query, recall))
        figures = {
            "recall": statistics.mean(recalls),
            "queries": len(queries),
            "missed": missed,
            "bounded_cpu_ms": statistics.mean(bounded_cpu) * 1000,
            "bounded_cpu_p99_ms": sorted(bounded_cpu)[int(0.99 * (len(bounded_cpu) - 1))] * 1000,
            "exhaustive_cpu_ms": statistics.mean(exhaustive_cpu) * 1000,
            "exhaustive_cpu_p99_ms": sorted(exhaustive_cpu)[int(0.99 * (len(exhaustive_cpu) - 1))] * 1000,
        }
        say(
            f"  keyword recall@{RECALL_AT} against the exhaustive ranking: {figures['recall']:.3f} over "
            f"{len(queries)} queries ({len(missed)} below 1); CPU mean / p99: bounded "
            f"{figures['bounded_cpu_ms']:.1f} / {figures['bounded_cpu_p99_ms']:.1f} ms, exhaustive "
            f"{figures['exhaustive_cpu_ms']:.1f} / {figures['exhaustive_cpu_p99_ms']:.1f} ms"
        )
        for query, recall in missed[:10]:
            say(f"    recall {recall:.2f}  {query!r}")
        slowest = sorted(zip(bounded_cpu, exhaustive_cpu, queries, strict=True), reverse=True)[:5]
        for bounded, every, query in slowest:
            say(f"    slowest: {bounded * 1000:.1f} ms bounded ({every * 1000:.1f} ms every match)  {query!r}")
        figures["slowest"] = [(query, bounded * 1000) for bounded, _every, query in slowest]
        return figures
    finally:
        index.close()
        store.close()
