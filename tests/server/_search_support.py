"""Helpers for the search tests: the test embedder, a search stack on a temp store, a loopback server.

``HashingEmbedder`` is **the test embedder, not a product path**: a real class implementing the
``Embedder`` protocol, deterministic and instant, so the suite never loads the model except in the
one test marked slow. Each word (folded, a few synonyms mapped to one concept so that a paraphrase
can match without sharing a word) is hashed into one of 64 dimensions with a sign; rows are
normalised. Texts sharing words or concepts are similar; others are near orthogonal.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ai_search_server.retrieval.embedded import EmbeddedPipeline
from ai_search_server.retrieval.embedder import EmbeddingFailed, normalise_rows
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.index_db import KeywordScope
from ai_search_server.retrieval.search_service import SearchOptions, SearchOutcome, SearchService
from ai_search_server.retrieval.terms import query_terms, words_with_offsets
from ai_search_server.routes.shapes import retrieval_json, search_hit_json
from ai_search_server.store.base import Store

from ._fake_openai import UvicornThread

__all__ = [
    "TEST_DIMENSIONS",
    "FailingEmbedder",
    "HashingEmbedder",
    "UvicornThread",
    "hits_json",
    "open_test_index",
    "report_json",
    "search_stack",
]

# Dimensions of the test embedder's vectors.
TEST_DIMENSIONS = 64
# Words the test embedder treats as one meaning, so "outage" finds "downtime" with no shared word.
SYNONYMS = {
    "outage": "outage",
    "downtime": "outage",
    "incident": "outage",
    "invoice": "invoice",
    "bill": "invoice",
    "billing": "invoice",
    "vacation": "vacation",
    "holiday": "vacation",
    "pto": "vacation",
}
# How long a loopback server may take to start or stop (seconds).
SERVER_WAIT_SECONDS = 5.0
# How long tests wait for the background embedder to drain its queue (seconds).
EMBED_WAIT_SECONDS = 10.0


class HashingEmbedder:
    """The test embedder (see the module docstring). `calls` counts embed() calls."""

    model_id = "test:hashing-64"
    dimensions = TEST_DIMENSIONS

    def __init__(self, model_id: str | None = None) -> None:
        if model_id is not None:
            self.model_id = model_id
        self.calls = 0
        self.texts_embedded = 0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.texts_embedded += len(texts)
        rows = np.zeros((len(texts), TEST_DIMENSIONS), dtype=np.float32)
        for row, text in enumerate(texts):
            for _start, _end, word in words_with_offsets(text):
                concept = SYNONYMS.get(word, word)
                digest = hashlib.blake2b(concept.encode(), digest_size=8).digest()
                rows[row, digest[0] % TEST_DIMENSIONS] += 1.0 if digest[1] % 2 else -1.0
        return normalise_rows(rows)


class FailingEmbedder(HashingEmbedder):
    """Fails every call while `failing` is set; then behaves as the hashing embedder."""

    def __init__(self) -> None:
        super().__init__()
        self.failing = True

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.failing:
            self.calls += 1
            raise EmbeddingFailed("the test embedder is told to fail")
        return super().embed(texts)


def open_test_index(store: Store, data_dir: Path, embedder: Any = None) -> EmbeddedIndex:
    """An index on `data_dir` with the test embedder (pass `embedder=False` for keyword only)."""
    chosen = HashingEmbedder() if embedder is None else (None if embedder is False else embedder)
    return EmbeddedIndex.open(data_dir / INDEX_FILENAME, store, chosen)


def search_stack(
    store: Store, data_dir: Path, *, embedder: Any = None, **options: Any
) -> tuple[SearchService, EmbeddedIndex]:
    """A search service on the embedded pipeline, every message embedded before it returns."""
    index = open_test_index(store, data_dir, embedder)
    assert index.wait_until_embedded(EMBED_WAIT_SECONDS), "the test embedder did not drain its queue"
    return SearchService(store, EmbeddedPipeline(index), SearchOptions(**options)), index


def hits_json(outcome: SearchOutcome) -> list[dict[str, Any]]:
    """The outcome's hits as ``ai.search`` answers them (routes/shapes.py)."""
    return [search_hit_json(hit) for hit in outcome.hits]


def report_json(outcome: SearchOutcome) -> dict[str, Any]:
    """The outcome's report as ``ai.search`` answers it in ``meta.retrieval``."""
    return retrieval_json(outcome.report)


def reopened_after_downgrade(
    store: Store, rooms: list[str], index_path: Path, downgrade: Callable[[Path], None], queries: list[str]
) -> tuple[EmbeddedIndex, HashingEmbedder, dict[str, list[Any]]]:
    """An index built, searched for ``queries``, closed, taken back to an older layout by
    ``downgrade``, and opened again (so migrated): the reopened index, its embedder (which counts what
    it embedded again) and the keyword results before. The caller closes the index."""
    first = EmbeddedIndex.open(index_path, store, HashingEmbedder())
    assert first.wait_until_embedded(EMBED_WAIT_SECONDS)
    before = {q: first.keyword_search(query_terms(q), KeywordScope(rooms), 20) for q in queries}
    assert any(before.values())
    first.close()
    downgrade(index_path)
    embedder = HashingEmbedder()
    index = EmbeddedIndex.open(index_path, store, embedder)
    assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
    assert embedder.texts_embedded == 0  # the vectors stayed
    return index, embedder, before
