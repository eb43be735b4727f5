"""all-mpnet-base-v2 on ONNX Runtime: the second stage's local embedder, float32 or int8, offline.

The graph is written at load from the prepared safetensors (``graph.py``, ``cache.py``); the
tokenizer is the project's WordPiece with the model's own `<s> ... </s>`; batching by length and the
worker threads are every local ONNX model's (``onnx_embedder.py``).

    embedder = load_mpnet()                    # int8 when its measured quality holds, else float32
    vectors = embedder.embed(["deploy failed", "the release broke"])   # (2, 768) float32, unit rows

Float32 is the sentence-transformers model to float rounding (cosine >= 0.9999 to its vectors on the
reference texts, tests/server/test_mpnet.py); int8 quantises the linear layers (all but three,
FLOAT32_LINEARS) with static ranges measured once on the demo workspace's texts and shipped in ``retrieval/data/mpnet_int8_ranges.npz``
(remade by ``python -m ai_search_server.retrieval.mpnet calibrate``), with the cosines of its
vectors to float32's over those texts. Each precision is its own vector space, with its own id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from ..embedder import EmbedderUnavailable
from ..encoder_graph import Ranges
from ..minilm import read_safetensors
from ..minilm_int8 import RangesFile, read_ranges
from ..onnx_embedder import OnnxEmbedder, Precision, open_session, require_onnxruntime
from ..wordpiece import WordPieceTokenizer
from .cache import MODEL_SHA256, prepared_model_dir
from .graph import MAX_TOKENS, WIDTH, build_mpnet_graph, mpnet_linear_names

__all__ = [
    "AUTO_PRECISIONS",
    "FLOAT32_LINEARS",
    "INT8_MIN_COSINE",
    "INT8_MIN_MEAN_COSINE",
    "MODEL_IDS",
    "MPNET_DIMENSIONS",
    "MPNET_FLOAT32_MODEL_ID",
    "MPNET_INT8_MODEL_ID",
    "RANGES_FILE",
    "OnnxMpnetEmbedder",
    "int8_quality",
    "load_mpnet",
    "load_mpnet_ranges",
]

log = logging.getLogger(__name__)

MPNET_DIMENSIONS = WIDTH
# The vector spaces: a new recipe or calibration is a new id (stored vectors are made again).
MPNET_FLOAT32_MODEL_ID = "local:all-mpnet-base-v2:float32-v1"
MPNET_INT8_MODEL_ID = "local:all-mpnet-base-v2:int8-static-v1"
MODEL_IDS: dict[Precision, str] = {"float32": MPNET_FLOAT32_MODEL_ID, "int8": MPNET_INT8_MODEL_ID}
RANGES_FILE = Path(__file__).resolve().parents[1] / "data" / "mpnet_int8_ranges.npz"
# The figures the ranges file carries: cosine of int8's vector to float32's, over the calibration
# texts (written by `python -m ai_search_server.retrieval.mpnet calibrate`).
MEAN_COSINE_FIGURE = "int8_vs_float32_mean_cosine"
MIN_COSINE_FIGURE = "int8_vs_float32_min_cosine"
# `auto` takes int8 only while its vectors stay this close to float32's on the calibration texts
# (cosine, mean and worst): below, the re-scoring order would move for the speed.
INT8_MIN_MEAN_COSINE = 0.99
INT8_MIN_COSINE = 0.97
# Linear layers the int8 model keeps in float32. The feed-forward outputs carry most of int8's error
# (all twelve in float32: mean cosine to float32 0.9982 on the reference texts, against 0.9927 with
# none, at 1.5x the CPU time); of those tried one at a time (layers 0-5, 8, 10, 11), the middle
# three's helped most. Together they took the worst calibration text from cosine 0.24 to 0.99 and
# the reference texts' mean to 0.9953, for 7 % more CPU time than all-int8 (docs/retrieval.md).
FLOAT32_LINEARS = frozenset({"l3_ffn_out", "l4_ffn_out", "l5_ffn_out"})
# What `load_mpnet("auto")` tries, in order.
AUTO_PRECISIONS: tuple[Precision, ...] = ("int8", "float32")
AUTO: Literal["auto"] = "auto"


def load_mpnet_ranges(ranges_file: Path = RANGES_FILE) -> RangesFile:
    """The shipped int8 ranges, if they were measured on the pinned weights.

    Compared with the pinned digest rather than by hashing the weights: ``cache.py`` verified the
    prepared file against that digest before it wrote its marker.

    Raises:
        EmbedderUnavailable: the file is missing or damaged, or belongs to other weights.
    """
    found = read_ranges(ranges_file, mpnet_linear_names())
    if found.weights_sha256 != MODEL_SHA256:
        raise EmbedderUnavailable(
            f"the int8 ranges in {ranges_file} were measured on other weights than the pinned "
            "all-mpnet-base-v2 (remake them: python -m ai_search_server.retrieval.mpnet calibrate)"
        )
    return found


def int8_quality(found: RangesFile) -> tuple[float, float]:
    """(mean, min) cosine of int8's vectors to float32's recorded with the ranges; (0, 0) if absent."""
    return found.figures.get(MEAN_COSINE_FIGURE, 0.0), found.figures.get(MIN_COSINE_FIGURE, 0.0)


class OnnxMpnetEmbedder(OnnxEmbedder):
    """The `Embedder` for all-mpnet-base-v2 on ONNX Runtime: 768 dimensions, unit-length float32 rows."""

    dimensions = MPNET_DIMENSIONS

    @classmethod
    def load(
        cls,
        model_dir: Path | None = None,
        *,
        precision: Precision = "float32",
        threads: int = 0,
        ranges: Ranges | None = None,
    ) -> OnnxMpnetEmbedder:
        """Write the graph from `model_dir` (default: the prepared cache, prepared now if it is not)
        and open it. `threads` workers embed a call's batches (0: one per core). `ranges` replaces
        the shipped int8 ranges (calibration experiments).

        Raises:
            EmbedderUnavailable: onnxruntime or onnx is not installed, the model cannot be prepared
                or its files are damaged, or (int8) the shipped ranges do not belong to its weights.
        """
        require_onnxruntime()
        if model_dir is None:
            model_dir = prepared_model_dir()
        if precision == "int8" and ranges is None:
            ranges = load_mpnet_ranges().ranges
        if ranges is not None:  # a layer missing from the ranges stays float32 (GraphBuilder.linear)
            ranges = {name: pair for name, pair in ranges.items() if name not in FLOAT32_LINEARS}
        try:
            tokenizer = WordPieceTokenizer.from_tokenizer_json(
                model_dir / "tokenizer.json", max_tokens=MAX_TOKENS
            )
            weights = read_safetensors(model_dir / "model.safetensors")
            graph = build_mpnet_graph(weights, ranges=ranges if precision == "int8" else None)
            del weights  # ONNX Runtime copies what it needs; the mapping can go
        except ImportError as exc:
            raise EmbedderUnavailable(f"onnx is not installed ({exc})") from exc
        except (OSError, ValueError, KeyError) as exc:
            raise EmbedderUnavailable(f"all-mpnet-base-v2 in {model_dir} cannot be loaded: {exc}") from exc
        session = open_session(graph)
        return cls(session, tokenizer, model_id=MODEL_IDS[precision], precision=precision, threads=threads)


def _int8_if_it_holds(threads: int, model_dir: Path | None) -> OnnxMpnetEmbedder:
    mean, worst = int8_quality(load_mpnet_ranges())
    if mean < INT8_MIN_MEAN_COSINE or worst < INT8_MIN_COSINE:
        raise EmbedderUnavailable(
            f"int8's vectors are too far from float32's (cosine mean {mean:.4f}, min {worst:.4f}; "
            f"needs {INT8_MIN_MEAN_COSINE} and {INT8_MIN_COSINE})"
        )
    return OnnxMpnetEmbedder.load(model_dir, precision="int8", threads=threads)


def _float32(threads: int, model_dir: Path | None) -> OnnxMpnetEmbedder:
    return OnnxMpnetEmbedder.load(model_dir, precision="float32", threads=threads)


_LOADERS: dict[Precision, Callable[[int, Path | None], OnnxMpnetEmbedder]] = {
    "int8": _int8_if_it_holds,
    "float32": _float32,
}


def load_mpnet(
    precision: Precision | Literal["auto"] = AUTO, *, threads: int = 0, model_dir: Path | None = None
) -> OnnxMpnetEmbedder:
    """all-mpnet-base-v2 at `precision`; `auto` takes int8 when its recorded quality holds
    (INT8_MIN_MEAN_COSINE, INT8_MIN_COSINE) and its ranges fit the weights, else float32, and logs
    which and why.

    Raises:
        EmbedderUnavailable: the precision named cannot load (for `auto`: neither can); the message
            says why for each.
    """
    candidates: tuple[Precision, ...] = AUTO_PRECISIONS if precision == AUTO else (precision,)
    reasons: list[str] = []
    for name in candidates:
        try:
            embedder = _LOADERS[name](threads, model_dir)
        except EmbedderUnavailable as exc:
            reasons.append(f"{name}: {exc}")
            continue
        log.info(
            "all-mpnet-base-v2 on ONNX Runtime, %s with %d threads, model id %s%s",
            name,
            embedder.threads,
            embedder.model_id,
            f" ({'; '.join(reasons)})" if reasons else "",
        )
        return embedder
    raise EmbedderUnavailable("; ".join(reasons))
