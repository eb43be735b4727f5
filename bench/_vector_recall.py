"""Recall@10 of the semantic branch against exact search, per scope, in this process (bench_search_distinct).

The index opens the data set as the server does (quantised matrices, from their snapshot or rebuilt
from index.db, both timed); the reference is numpy's exact product over every stored float16
vector, read here into float32, with each row's score the better of its message and conversation
vectors (as ``EmbeddedIndex.semantic_search``). Queries are random unit vectors: the data set's
vectors are random too, the hardest case for a compressed index (no clusters; the tenth best
barely above the hundredth), so the figures are a floor for real embeddings.
"""

from __future__ import annotations

import sqlite3
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.index_db import content_key
from ai_search_server.retrieval.vector_snapshot import snapshot_path
from ai_search_server.retrieval.vectors import VectorScope
from ai_search_server.store import open_store

RECALL_QUERIES = 50
RECALL_AT = 10
DAY_MS = 86_400_000


@dataclass(frozen=True)
class Reference:
    """Every row's filter fields and exact vectors (`contexts`: one per row with `has_context`, in order)."""

    rowids: np.ndarray
    rooms: np.ndarray
    users: np.ndarray
    ts: np.ndarray
    vectors: np.ndarray
    contexts: np.ndarray
    has_context: np.ndarray


def load_reference(index_path: Path, model: str, dimensions: int) -> Reference:
    conn = sqlite3.connect(index_path)
    try:
        rows = conn.execute(
            "SELECT d.rowid, d.rid, d.username, d.ts_ms, v.vector, v.context, d.text FROM docs d"
            " JOIN doc_vectors v ON v.rowid = d.rowid WHERE d.vector_model = ? ORDER BY d.rowid",
            (model,),
        ).fetchall()
    finally:
        conn.close()
    count = len(rows)
    vectors = np.zeros((count, dimensions), dtype=np.float32)
    has_context = np.asarray([r[5] is not None for r in rows], dtype=bool)
    contexts = np.zeros((int(has_context.sum()), dimensions), dtype=np.float32)
    at = 0
    first_of_text: dict[bytes, int] = {}
    for i, (_rowid, _rid, _user, _ts, blob, context, text) in enumerate(rows):
        # Messages with one text share the vector of the first (as the index holds them): the data
        # set stores a random vector per message, even for the repeated "thanks".
        first = first_of_text.setdefault(content_key(text), i)
        vectors[i] = vectors[first] if first != i else np.frombuffer(blob, dtype="<f2")
        if context is not None:
            contexts[at] = np.frombuffer(context, dtype="<f2")
            at += 1
    return Reference(
        np.asarray([r[0] for r in rows], dtype=np.int64),
        np.asarray([r[1] for r in rows]),
        np.asarray([r[2] for r in rows]),
        np.asarray([r[3] for r in rows], dtype=np.int64),
        vectors,
        contexts,
        has_context,
    )


def exact_top(reference: Reference, mask: np.ndarray, query: np.ndarray, k: int) -> tuple[set[int], float]:
    """The reference's top k rowids in `mask`, and the CPU seconds the exact scan took."""
    started = time.process_time()
    best = reference.vectors @ query
    with_context = np.flatnonzero(reference.has_context)
    best[with_context] = np.maximum(best[with_context], reference.contexts @ query)
    best[~mask] = -np.inf
    count = min(k, int(mask.sum()))
    top = np.argpartition(-best, count - 1)[:count] if count else np.zeros(0, dtype=np.int64)
    elapsed = time.process_time() - started
    return {int(r) for r in reference.rowids[top]}, elapsed


def scopes(reference: Reference, searcher_rooms: list[str]) -> list[tuple[str, VectorScope, np.ndarray]]:
    """Scopes of very different sizes: the searcher's rooms, the largest, a middling and the smallest room
    of theirs, their rooms over the last 30 days, one author in their rooms."""
    in_searcher = np.isin(reference.rooms, searcher_rooms)
    sizes = {room: int((reference.rooms == room).sum()) for room in searcher_rooms}
    ordered = sorted(searcher_rooms, key=lambda room: sizes[room])
    largest, middle, smallest = ordered[-1], ordered[len(ordered) // 2], ordered[0]
    last = int(reference.ts.max())
    recent = in_searcher & (reference.ts >= last - 30 * DAY_MS)
    authors, counts = np.unique(reference.users[in_searcher], return_counts=True)
    author = str(authors[int(np.argmax(counts))])
    by_author = in_searcher & (reference.users == author)
    rooms = frozenset(searcher_rooms)
    made = [
        ("the searcher's rooms", VectorScope(rooms), in_searcher),
        ("their largest room", VectorScope(frozenset({largest})), reference.rooms == largest),
        ("a middling room", VectorScope(frozenset({middle})), reference.rooms == middle),
        ("their smallest room", VectorScope(frozenset({smallest})), reference.rooms == smallest),
        ("their rooms, last 30 days", VectorScope(rooms, ts_min_ms=last - 30 * DAY_MS), recent),
        ("one author, their rooms", VectorScope(rooms, users=frozenset({author})), by_author),
    ]
    return [(f"{name} ({int(mask.sum()):,} messages)", scope, mask) for name, scope, mask in made]


def measure(
    directory: Path,
    model: str,
    dimensions: int,
    searcher_rooms: list[str],
    embedder: Any,
    say: Callable[[str], None],
    database_url: str = "",
) -> dict[str, Any]:
    """Open timings (rebuild, snapshot), then recall and CPU per scope: quantised and exact.

    ``database_url``: the workspace on PostgreSQL (bench_scaleout.py) instead of `directory`'s SQLite.
    """
    index_path = directory / INDEX_FILENAME
    snapshot_path(index_path).unlink(missing_ok=True)
    figures: dict[str, Any] = {}
    store = open_store(directory, database_url=database_url)
    try:
        started = time.perf_counter()
        EmbeddedIndex.open(index_path, store, embedder).close()
        figures["rebuild_seconds"] = time.perf_counter() - started
        started = time.perf_counter()
        index = EmbeddedIndex.open(index_path, store, embedder)
        figures["snapshot_seconds"] = time.perf_counter() - started
        say(
            f"  vectors: rebuilt from index.db in {figures['rebuild_seconds']:.1f} s, "
            f"opened from the snapshot in {figures['snapshot_seconds']:.1f} s"
        )
        try:
            reference = load_reference(index_path, model, dimensions)
            rng = np.random.default_rng(7)
            queries = rng.standard_normal((RECALL_QUERIES, dimensions)).astype(np.float32)
            queries /= np.linalg.norm(queries, axis=1, keepdims=True)
            per_scope = []
            for name, scope, mask in scopes(reference, searcher_rooms):
                recalls, ours, exact = [], [], []
                for query in queries:
                    truth, exact_cpu = exact_top(reference, mask, query, RECALL_AT)
                    started = time.process_time()
                    found = index.semantic_search(query, scope, RECALL_AT, -1.0)
                    ours.append(time.process_time() - started)
                    exact.append(exact_cpu)
                    recalls.append(
                        len(truth & {rowid for rowid, _ in found}) / max(1, min(RECALL_AT, len(truth)))
                    )
                per_scope.append(
                    {
                        "scope": name,
                        "recall": statistics.mean(recalls),
                        "cpu_ms": statistics.median(ours) * 1000,
                        "exact_cpu_ms": statistics.median(exact) * 1000,
                    }
                )
                say(
                    f"  recall@{RECALL_AT} {per_scope[-1]['recall']:.3f}  CPU {per_scope[-1]['cpu_ms']:.1f} ms"
                    f" (exact float32 scan {per_scope[-1]['exact_cpu_ms']:.1f} ms)  {name}"
                )
            figures["scopes"] = per_scope
            figures["quantised"] = bool(index._matrix is not None and index._matrix.quantised)
        finally:
            index.close()
    finally:
        store.close()
    return figures
