"""Which local runtime embeds: the fastest that can run here, or the one the settings name.

all-MiniLM-L6-v2 runs three ways, fastest first (docs/retrieval.md has the figures):

- ``onnx-int8``: ONNX Runtime, int8 linear layers (``minilm_onnx.py``);
- ``onnx``: ONNX Runtime, float32 (the numpy model's vectors to float rounding);
- ``numpy``: ``minilm.py``, which needs nothing beyond numpy.

``auto`` (the default) takes the first that loads, so a machine without onnxruntime still has
semantic search. The choice is logged at start-up with the reason for any path passed over.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .embedder import Embedder, EmbedderUnavailable

__all__ = ["AUTO", "LOCAL_RUNTIMES", "load_local_embedder"]

log = logging.getLogger(__name__)

AUTO = "auto"
# Every runtime by the name the `embedder_runtime` setting uses, fastest first: `auto` tries them in
# this order.
LOCAL_RUNTIMES = ("onnx-int8", "onnx", "numpy")


def _onnx_int8(threads: int) -> Embedder:
    from .minilm_onnx import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder.load(precision="int8", threads=threads)


def _onnx(threads: int) -> Embedder:
    from .minilm_onnx import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder.load(precision="float32", threads=threads)


def _numpy(threads: int) -> Embedder:
    from .minilm import MiniLMEmbedder

    return MiniLMEmbedder.load()  # one BLAS thread: see minilm.limit_blas_threads


_LOADERS: dict[str, Callable[[int], Embedder]] = {"onnx-int8": _onnx_int8, "onnx": _onnx, "numpy": _numpy}


def load_local_embedder(runtime: str = AUTO, *, threads: int = 0) -> Embedder:
    """The local all-MiniLM-L6-v2 on `runtime` (`auto`: the fastest that loads).

    `threads` is the ONNX runtimes' worker count (0: one per core).

    Raises:
        EmbedderUnavailable: the runtime named cannot load (or, for `auto`, none can); the message
            says why for each.
        ValueError: `runtime` is not `auto` or one of LOCAL_RUNTIMES.
    """
    if runtime != AUTO and runtime not in _LOADERS:
        raise ValueError(f"unknown local embedder runtime {runtime!r} (known: auto, {', '.join(LOCAL_RUNTIMES)})")
    candidates = LOCAL_RUNTIMES if runtime == AUTO else (runtime,)
    reasons: list[str] = []
    for name in candidates:
        try:
            embedder = _LOADERS[name](threads)
        except EmbedderUnavailable as exc:
            reasons.append(f"{name}: {exc}")
            if runtime == AUTO:
                log.info("local embedder: %s is not available here (%s)", name, exc)
            continue
        passed = f" ({'; '.join(reasons)})" if reasons else ""
        log.info(
            "local embedder: all-MiniLM-L6-v2 on %s%s, model id %s%s",
            name,
            f" with {getattr(embedder, 'threads', 1)} threads" if name != "numpy" else "",
            embedder.model_id,
            " (chosen: the fastest available)" + passed if runtime == AUTO else " (set by embedder_runtime)",
        )
        return embedder
    raise EmbedderUnavailable("; ".join(reasons))
