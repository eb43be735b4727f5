"""Embedders: text to unit-length vectors for the semantic branch of the embedded pipeline.

The product implementations:

- ``OnnxMiniLMEmbedder`` (``minilm_onnx.py``) and ``MiniLMEmbedder`` (``minilm.py``):
  all-MiniLM-L6-v2 on ONNX Runtime (float32 or int8) or in numpy, offline, from a PyPI package;
  ``local_embedder.py`` picks the runtime;
- ``OpenAIEmbedder`` (here): any OpenAI-compatible ``POST {base}/embeddings`` (OpenAI, Ollama, vLLM,
  llama.cpp server, LM Studio), called through the guarded outbound client.

``embed`` is blocking and may be slow (a model forward pass, an HTTP call): the index calls it from
its worker thread, the search service through ``anyio.to_thread``. Errors::

    EmbedderError
    ├── EmbedderUnavailable   the embedder cannot run at all (model not installed, not configured)
    └── EmbeddingFailed       one call failed (the provider answered an error or garbage, timed out)
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from ai_search import MAX_AI_SERVICE_RESPONSE_SIZE, trim_trailing_slashes

from ..outbound import GuardedClient, OutboundError, OutboundPolicy

__all__ = [
    "EMBEDDING_REQUEST_TIMEOUT_SECONDS",
    "MAX_EMBEDDING_BATCH_TEXTS",
    "Embedder",
    "EmbedderError",
    "EmbedderUnavailable",
    "EmbeddingFailed",
    "OpenAIEmbedder",
    "normalise_rows",
]

log = logging.getLogger(__name__)

# Deadline of one /embeddings call (seconds): a batch of 64 short texts on a CPU-only Ollama fits.
EMBEDDING_REQUEST_TIMEOUT_SECONDS = 30.0
# Texts sent in one /embeddings call; OpenAI accepts 2048, small local servers choke on far fewer.
MAX_EMBEDDING_BATCH_TEXTS = 64

T = TypeVar("T")
Vectors = npt.NDArray[np.float32]


class EmbedderError(Exception):
    """Base of the embedders' errors; messages name the embedder, never a key."""


class EmbedderUnavailable(EmbedderError):
    pass


class EmbeddingFailed(EmbedderError):
    pass


class Embedder(Protocol):
    """Turns texts into unit-length float32 rows of `dimensions` values, in the order given.

    `model_id` names the vector space: vectors from different ids are never compared, and a
    change of id makes the index re-embed everything.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Raises EmbedderError."""
        ...


def normalise_rows(rows: npt.ArrayLike) -> Vectors:
    """float32 rows scaled to unit length (zero rows stay zero), so a dot product is the cosine."""
    matrix = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    out: Vectors = matrix / np.maximum(norms, np.float32(1e-12))
    return out


class _LoopThread:
    """One private event loop in a daemon thread, so blocking callers can use an async client.

    The guarded client's connection pool belongs to one loop; keeping that loop alive between
    calls keeps connections (and TLS sessions) to the provider warm.
    """

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible endpoint: `POST {base_url}/embeddings`.

    `dimensions` is learnt from the first answer when not given. Vectors are re-normalised, since
    not every server returns unit-length rows.

    Raises:
        EmbedderUnavailable: base URL or model missing (from the constructor).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        *,
        policy: OutboundPolicy,
        dimensions: int | None = None,
        timeout_seconds: float = EMBEDDING_REQUEST_TIMEOUT_SECONDS,
    ) -> None:
        if not base_url.strip() or not model.strip():
            raise EmbedderUnavailable("the embeddings endpoint needs embedding_base_url and embedding_model")
        self._url = f"{trim_trailing_slashes(base_url.strip())}/embeddings"
        self._model = model.strip()
        self._headers = {"Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._policy = policy
        self._timeout = timeout_seconds
        self._dimensions = dimensions
        self._runner: _LoopThread | None = None
        self._client: GuardedClient | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"openai:{self._model}"

    @property
    def dimensions(self) -> int:
        """Known after the first call when not configured; 0 until then."""
        return self._dimensions or 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with self._lock:
            if self._runner is None:
                self._runner = _LoopThread("openai-embedder")
            runner = self._runner
        parts = [
            runner.run(self._embed_batch(list(texts[i : i + MAX_EMBEDDING_BATCH_TEXTS])))
            for i in range(0, len(texts), MAX_EMBEDDING_BATCH_TEXTS)
        ]
        return np.concatenate(parts)

    async def _embed_batch(self, texts: list[str]) -> Vectors:
        if self._client is None:
            self._client = GuardedClient(self._policy)
        try:
            response = await self._client.request_json(
                "POST",
                self._url,
                headers=self._headers,
                json={"model": self._model, "input": texts},
                timeout_seconds=self._timeout,
                max_bytes=MAX_AI_SERVICE_RESPONSE_SIZE,
            )
        except OutboundError as exc:
            raise EmbeddingFailed(f"embeddings endpoint failed: {exc.message}") from exc
        return self._vectors(response.json, len(texts))

    def _vectors(self, body: object, count: int) -> Vectors:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != count:
            raise EmbeddingFailed(f"embeddings endpoint answered without {count} items in 'data'")
        rows: list[Any] = [None] * count
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            vector = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < count or not isinstance(vector, list):
                raise EmbeddingFailed("embeddings endpoint answered an item without 'embedding' or 'index'")
            rows[index] = vector
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise EmbeddingFailed(
                "embeddings endpoint answered vectors that are not lists of numbers"
            ) from None
        if matrix.ndim != 2 or not np.isfinite(matrix).all():
            raise EmbeddingFailed("embeddings endpoint answered ragged or non-finite vectors")
        if self._dimensions is None:
            self._dimensions = int(matrix.shape[1])
        elif matrix.shape[1] != self._dimensions:
            raise EmbeddingFailed(
                f"embeddings endpoint answered {matrix.shape[1]} dimensions, expected {self._dimensions}"
            )
        return normalise_rows(matrix)

    def close(self) -> None:
        with self._lock:
            runner, client = self._runner, self._client
            self._runner = self._client = None
        if runner is not None:
            if client is not None:
                try:
                    runner.run(client.aclose())
                except Exception:  # closing must not hide the caller's own error
                    log.debug("closing the embeddings client failed", exc_info=True)
            runner.close()
