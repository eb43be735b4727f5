"""all-mpnet-base-v2 as an ONNX graph, written from its safetensors with `onnx.helper`.

Why written and not exported: as for all-MiniLM-L6-v2 (``encoder_graph.py``), an export needs
PyTorch and the packages ship only the safetensors. The layers are the same kind (post-LN, exact
GELU), built by the same ``GraphBuilder``, so float32 and static int8 work as there. What MPNet adds,
following Hugging Face's ``modeling_mpnet.py``:

- **positions RoBERTa-style**: position ids count from ``padding_idx + 1`` = 2 for real tokens, so a
  text's position rows are the table's rows 2, 3, ...; padded tokens take the same rows as real ones
  would (masked as keys and left out of the pooling, so they change nothing);
- **no token types**, and LayerNorm epsilon 1e-5;
- **a relative position bias shared by every layer**: ``encoder.relative_attention_bias`` (32 buckets
  x 12 heads) looked up by T5-style bidirectional buckets of ``key position - query position``
  (exact up to 8 apart, then logarithmic up to 128), added to each layer's attention scores. The
  buckets depend only on the positions, so the bias for ``MAX_TOKENS x MAX_TOKENS`` is computed here
  once, and each forward pass slices its ``tokens x tokens`` corner and hands it to every layer's
  attention beside the padding mask.

Then mean pooling over real tokens and L2 normalisation (the model's ``1_Pooling`` and
sentence-transformers' Normalize).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ..encoder_graph import SMOOTHING_ALPHA, Graph, GraphBuilder, LayerNames, Ranges, linear_names

__all__ = [
    "HEADS",
    "LAYERS",
    "MAX_TOKENS",
    "WIDTH",
    "build_mpnet_graph",
    "mpnet_linear_names",
    "relative_position_buckets",
]

LAYERS = 12
HEADS = 12
WIDTH = 768
# Tokens per text, <s> and </s> included: sentence-transformers' max_seq_length for this model
# (sentence_bert_config.json).
MAX_TOKENS = 384
_LAYER_NORM_EPS = 1e-5
# The padding id; positions of real tokens start one after it (RoBERTa's convention).
_PADDING_IDX = 1
# The relative attention's buckets (config.relative_attention_num_buckets) and the distance beyond
# which all distances share a bucket (tokens), as in modeling_mpnet.relative_position_bucket.
_RELATIVE_BUCKETS = 32
_RELATIVE_MAX_DISTANCE = 128


def mpnet_linear_names() -> list[str]:
    """The linear layers in order, as calibration measures and the int8 graph quantises them."""
    return linear_names(LAYERS)


def relative_position_buckets(
    tokens: int, *, buckets: int = _RELATIVE_BUCKETS, max_distance: int = _RELATIVE_MAX_DISTANCE
) -> npt.NDArray[np.int64]:
    """Bucket of every (query i, key j) pair for `tokens` positions: modeling_mpnet's
    ``relative_position_bucket(j - i)``, bidirectional.

    Half the buckets are for keys before the query, half for keys after; within a half, the first
    quarter of the buckets are exact distances and the rest grow logarithmically up to
    `max_distance`, beyond which the last bucket holds them all. Computed in float32 as torch does,
    so a distance on a bucket boundary lands in the same bucket.
    """
    position = np.arange(tokens, dtype=np.int64)
    relative = position[None, :] - position[:, None]  # key - query
    n = -relative
    half = buckets // 2
    result = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    max_exact = half // 2
    with np.errstate(divide="ignore"):  # log(0) for n = 0: that pair is exact and takes `n` instead
        scaled = (
            np.log(n.astype(np.float32) / np.float32(max_exact))
            / np.float32(math.log(max_distance / max_exact))
            * np.float32(half - max_exact)
        )
    large = max_exact + np.where(n < max_exact, 0, scaled).astype(np.int64)
    large = np.minimum(large, half - 1)
    bucketed: npt.NDArray[np.int64] = result + np.where(n < max_exact, n, large)
    return bucketed


# MPNet's names for a layer's attention weights (encoder_graph.LayerNames).
_MPNET_LAYER = LayerNames(
    qkv="attention.attn.{part}",
    qkv_parts=("q", "k", "v"),
    attention_out="attention.attn.o",
    attention_norm="attention.LayerNorm",
)


def build_mpnet_graph(
    weights: Mapping[str, npt.NDArray[Any]],
    *,
    ranges: Ranges | None = None,
    alpha: float = SMOOTHING_ALPHA,
    expose_inputs: bool = False,
) -> Graph:
    """The serialised ONNX model: inputs `input_ids`, `attention_mask` (int64, batch x tokens, at
    most MAX_TOKENS), output `embedding` (float32, batch x 768, unit rows).

    `weights` are the safetensors tensors; `ranges` makes the linear layers int8 (float32 without);
    `expose_inputs` also outputs every linear layer's input, in the order of `mpnet_linear_names()`.

    Raises:
        KeyError: a tensor is missing from `weights` or a layer from `ranges`.
    """

    def w(name: str) -> npt.NDArray[np.float32]:
        return np.asarray(weights[name], dtype=np.float32)

    g = GraphBuilder(ranges, alpha, expose_inputs, layer_norm_eps=_LAYER_NORM_EPS)
    x = g.embeddings(
        w("embeddings.word_embeddings.weight"),
        w("embeddings.position_embeddings.weight")[_PADDING_IDX + 1 :],
        (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias")),
    )
    # (1, heads, MAX_TOKENS, MAX_TOKENS): the bias of every pair, sliced to this batch's tokens.
    table = w("encoder.relative_attention_bias.weight")  # (buckets, heads)
    bias = np.ascontiguousarray(table[relative_position_buckets(MAX_TOKENS)].transpose(2, 0, 1)[None])
    axes = g.constant("bias_axes", np.array([2, 3], np.int64))
    starts = g.constant("bias_starts", np.array([0, 0], np.int64))
    g.node("Concat", ["length", "length"], ["bias_ends"], axis=0)
    g.node("Slice", [g.constant("position_bias_table", bias), starts, "bias_ends", axes], ["position_bias"])
    for i in range(LAYERS):
        x = g.encoder_layer(x, _MPNET_LAYER.read(w, i), f"l{i}_", heads=HEADS, attention_bias="position_bias")
    g.mean_pool_and_normalise(x, "embedding")
    return g.serialise("all-mpnet-base-v2", WIDTH)
