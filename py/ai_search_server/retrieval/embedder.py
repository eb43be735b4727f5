"""Embedders: text to unit-length vectors for the semantic branch of the embedded pipeline.

The product implementations:

- ``OnnxMiniLMEmbedder`` (``minilm_onnx.py``) and ``MiniLMEmbedder`` (``minilm.py``):
  all-MiniLM-L6-v2 on ONNX Runtime (float32 or int8) or in numpy, offline, from a PyPI package;
  ``local_embedder.py`` picks the runtime;
- ``OnnxMpnetEmbedder`` (``mpnet/``): all-mpnet-base-v2, the second stage's model, on ONNX Runtime;
- ``OpenAIEmbedder`` (here): any OpenAI-compatible ``POST {base}/embeddings`` (OpenAI, Ollama, vLLM,
  llama.cpp server, LM Studio), called through the app's guarded outbound client (from the blocking
  thread that embeds, by way of ``outbound.BlockingClient``).

``EmbeddingsEndpoint`` is that endpoint's request and the check of its answer, apart from the call:
the second stage's ``EmbeddingsStage`` sends the same request from the event loop, so the two callers
share one definition of what an answer must be.

``embed`` is blocking and may be slow (a model forward pass, an HTTP call): the index calls it from
its worker thread, the search service through ``anyio.to_thread``. Errors::

    EmbedderError
    ├── EmbedderUnavailable   the embedder cannot run at all (model not installed, not configured)
    └── EmbeddingFailed       one call failed (the provider answered an error or garbage, timed out)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ai_search import MAX_AI_SERVICE_RESPONSE_SIZE, trim_trailing_slashes

from ..outbound import BlockingClient, OutboundError

__all__ = [
    "EMBEDDING_REQUEST_TIMEOUT_SECONDS",
    "MAX_EMBEDDING_BATCH_TEXTS",
    "MAX_EMBEDDING_RESPONSE_BYTES",
    "Embedder",
    "EmbedderError",
    "EmbedderUnavailable",
    "EmbeddingFailed",
    "EmbeddingsEndpoint",
    "OpenAIEmbedder",
    "normalise_rows",
]

log = logging.getLogger(__name__)

# Deadline of one /embeddings call (seconds): a batch of 64 short texts on a CPU-only Ollama fits.
EMBEDDING_REQUEST_TIMEOUT_SECONDS = 30.0
# Texts sent in one /embeddings call; OpenAI accepts 2048, small local servers choke on far fewer.
MAX_EMBEDDING_BATCH_TEXTS = 64
# Body cap of one /embeddings answer (bytes): the upstream's 5 MiB, room for 64 rows of 3072 numbers.
MAX_EMBEDDING_RESPONSE_BYTES = MAX_AI_SERVICE_RESPONSE_SIZE

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


@dataclass(frozen=True)
class EmbeddingsEndpoint:
    """One OpenAI-compatible ``POST {base}/embeddings``: where, which model, the headers (the key is
    kept out of ``repr``), the body to send and the check of the answer. It makes no call itself, so
    a blocking caller and an async one share it.
    """

    url: str
    model: str
    headers: Mapping[str, str] = field(repr=False)

    @classmethod
    def configure(
        cls,
        base_url: str,
        model: str,
        api_key: str = "",
        *,
        settings_names: str = "embedding_base_url and embedding_model",
    ) -> EmbeddingsEndpoint:
        """Raises EmbedderUnavailable naming ``settings_names`` when the base URL or the model is blank."""
        if not base_url.strip() or not model.strip():
            raise EmbedderUnavailable(f"the embeddings endpoint needs {settings_names}")
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        return cls(f"{trim_trailing_slashes(base_url.strip())}/embeddings", model.strip(), headers)

    def request(self, texts: Sequence[str]) -> dict[str, Any]:
        """The JSON body embedding ``texts`` (at most ``MAX_EMBEDDING_BATCH_TEXTS`` of them per call)."""
        return {"model": self.model, "input": list(texts)}

    def vectors(self, body: object, count: int, dimensions: int | None) -> Vectors:
        """The ``count`` unit rows of an answer, in input order; ``dimensions`` None accepts any width.

        Raises:
            EmbeddingFailed: not ``count`` items, an item without its index or vector, vectors that are
                not numbers, ragged, non-finite or of another width than ``dimensions``.
        """
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != count:
            raise EmbeddingFailed(f"embeddings endpoint answered without {count} items in 'data'")
        rows: list[Any] = [None] * count
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            vector = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < count or not isinstance(vector, list):
                raise EmbeddingFailed("embeddings endpoint answered an item without 'embedding' or 'index'")
            if rows[index] is not None:
                raise EmbeddingFailed(f"embeddings endpoint answered index {index} twice")
            rows[index] = vector
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise EmbeddingFailed(
                "embeddings endpoint answered vectors that are not lists of numbers"
            ) from None
        if matrix.ndim != 2 or not np.isfinite(matrix).all():
            raise EmbeddingFailed("embeddings endpoint answered ragged or non-finite vectors")
        if dimensions is not None and matrix.shape[1] != dimensions:
            raise EmbeddingFailed(
                f"embeddings endpoint answered {matrix.shape[1]} dimensions, expected {dimensions}"
            )
        return normalise_rows(matrix)


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
        client: BlockingClient,
        dimensions: int | None = None,
        timeout_seconds: float = EMBEDDING_REQUEST_TIMEOUT_SECONDS,
    ) -> None:
        self._endpoint = EmbeddingsEndpoint.configure(base_url, model, api_key)
        self.client = client
        self._timeout = timeout_seconds
        self._dimensions = dimensions

    @property
    def model_id(self) -> str:
        return f"openai:{self._endpoint.model}"

    @property
    def dimensions(self) -> int:
        """Known after the first call when not configured; 0 until then."""
        return self._dimensions or 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Blocks: call it from a thread, never on the event loop."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        parts = [
            self._embed_batch(list(texts[i : i + MAX_EMBEDDING_BATCH_TEXTS]))
            for i in range(0, len(texts), MAX_EMBEDDING_BATCH_TEXTS)
        ]
        return np.concatenate(parts)

    def _embed_batch(self, texts: list[str]) -> Vectors:
        endpoint = self._endpoint
        try:
            response = self.client.request_json(
                "POST",
                endpoint.url,
                headers=endpoint.headers,
                json=endpoint.request(texts),
                timeout_seconds=self._timeout,
                max_bytes=MAX_EMBEDDING_RESPONSE_BYTES,
            )
        except OutboundError as exc:
            raise EmbeddingFailed(f"embeddings endpoint failed: {exc.message}") from exc
        vectors = endpoint.vectors(response.json, len(texts), self._dimensions)
        if self._dimensions is None:
            self._dimensions = int(vectors.shape[1])
        return vectors
