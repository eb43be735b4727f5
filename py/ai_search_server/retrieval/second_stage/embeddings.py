"""A remote OpenAI-compatible embeddings model as a second stage: the cosine of query and passage.

A larger embedding model than the first stage's (text-embedding-3-large, bge-large, nomic-embed on
Ollama, a vLLM or TEI ``/v1/embeddings``) re-scores the candidates. The request and the check of the
answer are the first stage's own (``embedder.EmbeddingsEndpoint``); only the call differs, made here
on the event loop through the app's ``GuardedClient``.

A search's candidates come back search after search (the same busy messages match many queries), so
each passage's vector is kept in a bounded LRU keyed by a hash of the model and the text
(``PASSAGE_VECTOR_CACHE_ENTRIES``): a scoring sends the query and only the passages not seen lately.
"""

from __future__ import annotations

import functools
import hashlib
from collections import OrderedDict
from collections.abc import Mapping, Sequence

import numpy as np

from ...outbound import GuardedClient
from ..embedder import (
    MAX_EMBEDDING_BATCH_TEXTS,
    MAX_EMBEDDING_RESPONSE_BYTES,
    EmbeddingFailed,
    EmbeddingsEndpoint,
    Vectors,
)
from ._remote import FULL_COVERAGE, REMOTE_STAGE_TIMEOUT_SECONDS, RemoteCaller, clip, in_batches
from .base import Passage, StageCoverage

__all__ = ["PASSAGE_VECTOR_CACHE_ENTRIES", "EmbeddingsStage"]

# Passage vectors kept (entries): at 1024 dimensions 4 MiB per thousand, 16 MiB in all, and at 3072
# (text-embedding-3-large) 48 MiB; 80 searches' worth of 50 distinct candidates.
PASSAGE_VECTOR_CACHE_ENTRIES = 4096


class EmbeddingsStage:
    """A remote ``POST {base}/embeddings`` model; scores are cosines in -1..1, uncalibrated.

    Safe to call concurrently on one event loop (the cache is touched between awaits only); two
    scorings that miss the same passage both send it, and the later answer stays.

    Raises:
        EmbedderUnavailable: a blank ``base_url`` or ``model`` (from the constructor).
    """

    def __init__(
        self,
        client: GuardedClient,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        timeout_seconds: float = REMOTE_STAGE_TIMEOUT_SECONDS,
        cache_entries: int = PASSAGE_VECTOR_CACHE_ENTRIES,
    ) -> None:
        self._endpoint = EmbeddingsEndpoint.configure(
            base_url, model, api_key, settings_names="second_stage_url and second_stage_model"
        )
        self._model_id = f"embeddings:{self._endpoint.model}"
        self._caller = RemoteCaller(
            client, stage=self._model_id, api_key=api_key, timeout_seconds=timeout_seconds
        )
        self._cache: OrderedDict[bytes, Vectors] = OrderedDict()
        self._cache_entries = cache_entries
        self._dimensions: int | None = None

    def __repr__(self) -> str:
        return f"EmbeddingsStage({self._model_id!r})"

    @property
    def model_id(self) -> str:
        """``embeddings:<model>``."""
        return self._model_id

    @property
    def kind(self) -> str:
        return "embeddings"

    def coverage(self) -> StageCoverage:
        return FULL_COVERAGE

    async def aclose(self) -> None:
        """Drop the cached vectors; the client is the app's."""
        self._cache.clear()

    async def score(self, query: str, passages: Sequence[Passage]) -> Mapping[str, float]:
        """The cosine of the query's vector and each passage's.

        Raises:
            SecondStageError: a call failed, timed out, or answered vectors that fail the endpoint's check.
        """
        if not passages:
            return {}
        texts = {passage.id: clip(passage.text) for passage in passages}
        known = self._recall(set(texts.values()))
        missing = [text for text in dict.fromkeys(texts.values()) if text not in known]
        with self._caller.deadline():
            vectors = await self._embed([clip(query), *missing])
        query_vector = vectors[0]
        for text, vector in zip(missing, vectors[1:], strict=True):
            known[text] = vector
            self._remember(self._key(text), vector)
        return {passage_id: float(np.dot(query_vector, known[text])) for passage_id, text in texts.items()}

    def _recall(self, texts: set[str]) -> dict[str, Vectors]:
        """The cached vectors of ``texts``, taken now (a concurrent scoring may evict them while this one
        waits), each marked as used."""
        known = {}
        for text in texts:
            key = self._key(text)
            if (vector := self._cache.get(key)) is not None:
                self._cache.move_to_end(key)
                known[text] = vector
        return known

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(f"{self._endpoint.model}\0{text}".encode()).digest()

    def _remember(self, key: bytes, vector: Vectors) -> None:
        self._cache[key] = vector
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_entries:
            self._cache.popitem(last=False)

    async def _embed(self, texts: list[str]) -> Vectors:
        """Unit rows of ``texts``, in batches sent at once; the first answer fixes the width."""
        parts = await self._caller.gather(
            [
                functools.partial(self._embed_batch, batch)
                for batch in in_batches(texts, MAX_EMBEDDING_BATCH_TEXTS)
            ]
        )
        widths = {int(part.shape[1]) for part in parts}
        if len(widths) > 1:
            raise self._caller.failure(f"the answers' vectors have {sorted(widths)} dimensions at once")
        if self._dimensions is None:
            self._dimensions = widths.pop()
        return np.concatenate(parts)

    async def _embed_batch(self, texts: Sequence[str]) -> Vectors:
        endpoint = self._endpoint
        body = await self._caller.post(
            endpoint.url,
            endpoint.request(texts),
            headers=endpoint.headers,
            max_bytes=MAX_EMBEDDING_RESPONSE_BYTES,
        )
        try:
            return endpoint.vectors(body, len(texts), self._dimensions)
        except EmbeddingFailed as exc:
            raise self._caller.failure(str(exc)) from None
