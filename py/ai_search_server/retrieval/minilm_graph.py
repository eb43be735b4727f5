"""all-MiniLM-L6-v2 as an ONNX graph, written from the packaged safetensors (``encoder_graph.py``).

The same 6-layer BERT encoder as ``minilm.py`` (embeddings + token type 0 + LayerNorm, 12-head
self-attention, exact GELU), then mean pooling over real tokens and L2 normalisation. Built in memory
at load (~0.3 s). Float32 gives the vectors of ``minilm.py`` to float rounding (cosine >= 0.99999 on
the reference texts), hence the same ``model_id``; int8 uses the ranges of ``minilm_int8.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from .encoder_graph import SMOOTHING_ALPHA, Graph, GraphBuilder, LayerNames, Ranges
from .encoder_graph import linear_names as encoder_linear_names

__all__ = ["LAYERS", "build_minilm_graph", "linear_names"]

LAYERS = 6
_HEADS = 12
_WIDTH = 384
_LAYER_NORM_EPS = 1e-12

Array = npt.NDArray[np.float32]


def linear_names() -> list[str]:
    """The model's linear layers in order; each one's input is what the int8 graph quantises."""
    return encoder_linear_names(LAYERS)


# BERT's names for a layer's attention weights (encoder_graph.LayerNames).
_BERT_LAYER = LayerNames(
    qkv="attention.self.{part}",
    qkv_parts=("query", "key", "value"),
    attention_out="attention.output.dense",
    attention_norm="attention.output.LayerNorm",
)


def build_minilm_graph(
    weights: Mapping[str, npt.NDArray[Any]],
    *,
    ranges: Ranges | None = None,
    alpha: float = SMOOTHING_ALPHA,
    expose_inputs: bool = False,
) -> Graph:
    """The serialised ONNX model: inputs `input_ids`, `attention_mask` (int64, batch x tokens),
    output `embedding` (float32, batch x 384, unit rows).

    `weights` are the safetensors tensors; `ranges` makes the linear layers int8 (float32 without);
    `expose_inputs` also outputs every linear layer's input, in the order of `linear_names()` (what
    calibration measures).

    Raises:
        KeyError: a tensor is missing from `weights` or a layer from `ranges`.
    """

    def w(name: str) -> Array:
        return np.asarray(weights[name], dtype=np.float32)

    g = GraphBuilder(ranges, alpha, expose_inputs, layer_norm_eps=_LAYER_NORM_EPS)
    # Token type 0 for every token: its embedding is folded into the position table.
    positions = w("embeddings.position_embeddings.weight") + w("embeddings.token_type_embeddings.weight")[0]
    x = g.embeddings(
        w("embeddings.word_embeddings.weight"),
        positions,
        (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias")),
    )
    for i in range(LAYERS):
        x = g.encoder_layer(x, _BERT_LAYER.read(w, i), f"l{i}_", heads=_HEADS)
    g.mean_pool_and_normalise(x, "embedding")
    return g.serialise("all-MiniLM-L6-v2", _WIDTH)
