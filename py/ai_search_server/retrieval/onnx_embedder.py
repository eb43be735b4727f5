"""An encoder graph on ONNX Runtime as an `Embedder`: tokenize, batch by length, run on worker threads.

What every local ONNX model here shares (all-MiniLM-L6-v2 in ``minilm_onnx.py``, all-mpnet-base-v2
in ``mpnet/embedder.py``); only the graph, the tokenizer and the names differ. ``embed`` sorts a
call's texts by length, cuts them into small batches (``batching.py``) and spreads the batches over
``threads`` workers that share one session, each running single-threaded: on a 2-core machine two
independent workers beat one two-thread session, whose threads meet at every operator (and spin while
they wait), and a single query runs in the caller's thread with no hand-off at all.

A graph takes `input_ids` and `attention_mask` (int64, batch x tokens, right-padded) and answers
`embedding` (float32, batch x dimensions, unit rows).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from .batching import length_batches, padded
from .embedder import EmbedderUnavailable, EmbeddingFailed
from .encoder_graph import Graph
from .wordpiece import WordPieceTokenizer

__all__ = [
    "MAX_EMBEDDER_THREADS",
    "ONNX_BATCH_TEXTS",
    "ONNX_BATCH_TOKENS",
    "OnnxEmbedder",
    "Precision",
    "default_threads",
    "open_session",
    "require_onnxruntime",
]

Precision = Literal["float32", "int8"]
# Texts per forward pass. Smaller than the numpy model's 64: ONNX Runtime's per-call cost is small,
# and a batch whose activations stay in the core's cache ran 10-20 % faster (16-32 vs 64-128 texts).
ONNX_BATCH_TEXTS = 32
# Padded tokens per forward pass (texts x longest): long texts come in smaller batches.
ONNX_BATCH_TOKENS = 2048
# Most worker threads one embedder runs (threads): beyond the cores they only contend.
MAX_EMBEDDER_THREADS = 16
# ONNX Runtime's SkipLayerNormalization fusion is left out: on all-MiniLM-L6-v2 its kernel took 7x the
# time of the Add + LayerNormalization it replaces (1.19 ms vs 0.16 ms for 32 x 19 tokens, 1.32.0).
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


def require_onnxruntime() -> Any:
    """The onnxruntime module; a loader calls it first, so that a machine without it hears so
    before any weights are read.

    Raises:
        EmbedderUnavailable: onnxruntime is not installed.
    """
    try:
        import onnxruntime  # type: ignore[import-untyped]
    except ImportError as exc:
        raise EmbedderUnavailable(f"onnxruntime is not installed ({exc})") from exc
    return onnxruntime


def open_session(graph: Graph, *, threads: int = 1) -> Any:
    """A sequential CPU session on `graph`, `threads` threads per operator (1 for the embedders,
    whose workers run in parallel instead).

    The graph's large initialisers are handed over from memory (ONNX Runtime copies them in), not
    parsed out of the protobuf.

    Raises:
        EmbedderUnavailable: onnxruntime is not installed or refuses the graph.
    """
    onnxruntime = require_onnxruntime()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = _ORT_LOG_ERRORS_ONLY
    try:
        names = list(graph.external)
        values = [onnxruntime.OrtValue.ortvalue_from_numpy(graph.external[name]) for name in names]
        options.add_external_initializers(names, values)
        return onnxruntime.InferenceSession(
            graph.model, options, providers=["CPUExecutionProvider"], disabled_optimizers=_DISABLED_OPTIMIZERS
        )
    except Exception as exc:  # onnxruntime raises its own untyped errors for a graph it refuses
        raise EmbedderUnavailable(f"ONNX Runtime cannot run the embedding model: {exc}") from exc


class OnnxEmbedder:
    """An `Embedder` over one ONNX Runtime session: unit-length float32 rows of `dimensions` values.

    Subclasses set `dimensions` (and may set the batch limits) and provide a `load` that builds the
    graph. Thread-safe: ONNX Runtime sessions may run from several threads at once, and the
    tokenizer's word cache is a dict whose single-item writes are atomic under the GIL.
    """

    dimensions: ClassVar[int]
    # Texts and padded tokens per forward pass (see ONNX_BATCH_TEXTS, ONNX_BATCH_TOKENS).
    batch_texts: ClassVar[int] = ONNX_BATCH_TEXTS
    batch_tokens: ClassVar[int] = ONNX_BATCH_TOKENS

    def __init__(
        self,
        session: Any,
        tokenizer: WordPieceTokenizer,
        *,
        model_id: str,
        precision: Precision,
        threads: int,
    ) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self.model_id = model_id
        self.precision = precision
        self.threads = threads or default_threads()
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

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
                [len(ids) for ids in encoded], max_texts=self.batch_texts, max_tokens=self.batch_tokens
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
            raise EmbeddingFailed(f"the local embedding model ({self.model_id}) failed: {exc}") from exc
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
