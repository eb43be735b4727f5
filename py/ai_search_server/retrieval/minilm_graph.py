"""all-MiniLM-L6-v2 as an ONNX graph, written from the packaged safetensors (``encoder_graph.py``).

The same 6-layer BERT encoder as ``minilm.py`` (embeddings + token type 0 + LayerNorm, 12-head
self-attention, exact GELU), then mean pooling over real tokens and L2 normalisation. Built in memory
at load (~0.3 s). Float32 gives the vectors of ``minilm.py`` to float rounding (cosine >= 0.99999 on
the reference texts), hence the same ``model_id``; int8 uses the ranges of ``minilm_int8.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from .encoder_graph import SMOOTHING_ALPHA, EncoderLayer, Graph, GraphBuilder, Ranges
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


def _minilm_layer(w: Callable[[str], Array], index: int) -> EncoderLayer:
    p = f"encoder.layer.{index}."
    parts = ("query", "key", "value")
    return EncoderLayer(
        qkv_weight=np.concatenate([w(f"{p}attention.self.{part}.weight") for part in parts]).T,
        qkv_bias=np.concatenate([w(f"{p}attention.self.{part}.bias") for part in parts]),
        attention_out_weight=w(f"{p}attention.output.dense.weight").T,
        attention_out_bias=w(f"{p}attention.output.dense.bias"),
        attention_norm=(w(f"{p}attention.output.LayerNorm.weight"), w(f"{p}attention.output.LayerNorm.bias")),
        ffn_in_weight=w(f"{p}intermediate.dense.weight").T,
        ffn_in_bias=w(f"{p}intermediate.dense.bias"),
        ffn_out_weight=w(f"{p}output.dense.weight").T,
        ffn_out_bias=w(f"{p}output.dense.bias"),
        output_norm=(w(f"{p}output.LayerNorm.weight"), w(f"{p}output.LayerNorm.bias")),
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
        x = g.encoder_layer(x, _minilm_layer(w, i), f"l{i}_", heads=_HEADS)
    g.mean_pool_and_normalise(x, "embedding")
    return g.serialise("all-MiniLM-L6-v2", _WIDTH)
