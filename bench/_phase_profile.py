"""Where one ``ai.search`` request's CPU goes, phase by phase, in this process (bench_search_distinct --profile).

The real app (``create_app`` with the data dir's store, the local embedder, the lifespan run by
Starlette's test client) answers each query in this process; the search path's steps are wrapped
with timers of the calling thread's CPU time (``time.thread_time``: the other engineers' load does
not count, and the pipeline runs in a worker thread), the whole request with the process's. A
wrapper times what it wraps inclusively, so nested phases (the SQL inside the keyword branch) are
parts of their parent, not additions to it.

    figures = profile_requests(directory, headers, queries, "hybrid", results=10)
    print_profile(figures)
"""

from __future__ import annotations

import functools
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

# (label, owner module, class, method): the phases timed, parents before their parts.
PHASES: tuple[tuple[str, str, str, str], ...] = (
    ("plan: readable rooms, filters", "ai_search_server.retrieval.search_service", "SearchService", "_plan"),
    ("keyword branch", "ai_search_server.retrieval.embedded", "EmbeddedPipeline", "_keyword"),
    ("  term counts in the caller's rooms", "ai_search_server.retrieval.index", "EmbeddedIndex", "_scope_statistics"),
    ("  FTS5 query (match, scope, tokens)", "ai_search_server.retrieval.index_db", "IndexDatabase", "keyword_matches"),
    ("semantic branch", "ai_search_server.retrieval.embedded", "EmbeddedPipeline", "_semantic"),
    ("  query embedding", "ai_search_server.retrieval.index", "EmbeddedIndex", "embed_query"),
    ("  vector search, both matrices", "ai_search_server.retrieval.index", "EmbeddedIndex", "semantic_search"),
    ("    scope mask over the rows", "ai_search_server.retrieval.vectors", "VectorMatrix", "_mask"),
    ("    scan of the codes (faiss)", "ai_search_server.retrieval.vector_codes", "VectorCodes", "scan"),
    ("    exact re-scoring", "ai_search_server.retrieval.vectors", "VectorMatrix", "_rescored"),
    ("resolve from the store", "ai_search_server.retrieval.search_service", "SearchService", "_resolve"),
)


def _timed(label: str, sink: dict[str, list[float]], method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            sink[label].append(time.thread_time() - started)

    return wrapper


def profile_requests(
    directory: Path, headers: dict[str, str], queries: list[str], search_type: str, *, results: int, warmup: int
) -> dict[str, Any]:
    """Per phase, the CPU seconds of each call over `queries` (after `warmup` of them), and of each request."""
    import importlib

    from starlette.testclient import TestClient

    from ai_search_server.app import create_app
    from ai_search_server.settings import load_settings
    from ai_search_server.store import open_store

    sink: dict[str, list[float]] = defaultdict(list)
    originals = []
    for label, module_name, class_name, method_name in PHASES:
        owner = getattr(importlib.import_module(module_name), class_name)
        original = getattr(owner, method_name)
        originals.append((owner, method_name, original))
        setattr(owner, method_name, _timed(label, sink, original))
    store = open_store(directory)
    requests: list[float] = []
    walls: list[float] = []
    try:
        settings = load_settings(environ={}, overrides={"site_url": "http://testserver", "embedder": "local"})
        with TestClient(create_app(settings, store, limiter=None), headers=headers) as client:
            for n, query in enumerate(queries):
                if n == warmup:
                    sink.clear()
                started, wall = time.process_time(), time.perf_counter()
                response = client.get(
                    "/api/v1/ai.search",
                    params={"query": query, "intelligentCount": results, "searchType": search_type},
                )
                response.raise_for_status()
                if n >= warmup:
                    requests.append(time.process_time() - started)
                    walls.append(time.perf_counter() - wall)
    finally:
        for owner, method_name, original in originals:
            setattr(owner, method_name, original)
        store.close()
    return {"phases": dict(sink), "requests": requests, "walls": walls, "queries": len(requests)}


def _quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def print_profile(figures: dict[str, Any], title: str) -> None:
    """A table: per phase, its mean CPU per request, the p50 and p99 of one call, and calls per request."""
    count = figures["queries"]
    print(f"\n{title}: CPU per request over {count} requests (ms)")
    print(f"{'phase':44}{'per req':>9}{'p50 call':>9}{'p99 call':>9}{'calls/req':>11}")
    requests = figures["requests"]
    print(
        f"{'the whole request (process CPU)':44}{statistics.mean(requests) * 1000:9.2f}"
        f"{_quantile(requests, 0.5) * 1000:9.2f}{_quantile(requests, 0.99) * 1000:9.2f}{1:11.1f}"
    )
    walls = figures["walls"]
    print(
        f"{'the whole request (wall)':44}{statistics.mean(walls) * 1000:9.2f}"
        f"{_quantile(walls, 0.5) * 1000:9.2f}{_quantile(walls, 0.99) * 1000:9.2f}"
    )
    for label, *_ in PHASES:
        calls = figures["phases"].get(label, [])
        if not calls:
            continue
        per_call = calls
        total = sum(per_call)
        print(
            f"{label:44}{total / count * 1000:9.2f}{_quantile(per_call, 0.5) * 1000:9.2f}"
            f"{_quantile(per_call, 0.99) * 1000:9.2f}{len(calls) / count:11.1f}"
        )
