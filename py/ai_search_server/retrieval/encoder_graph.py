"""A transformer encoder as an ONNX graph, written with `onnx.helper`: the parts every model shares.

Why write the graph instead of exporting it: an export needs PyTorch (several GB) and the models'
PyPI packages ship only safetensors. A sentence encoder's forward pass is small enough to spell out,
and every model here is the same kind (``minilm_graph.py``: all-MiniLM-L6-v2; ``mpnet/graph.py``:
all-mpnet-base-v2): embeddings + LayerNorm, post-LN layers of multi-head self-attention (ONNX Runtime's
``MultiHeadAttention``, which masks padded keys) and an exact-GELU feed-forward, mean pooling over real
tokens, L2 normalisation. Built in memory at load, so there is no generated file to go stale.

Two precisions:

- **float32**: the model's own arithmetic, to float rounding;
- **int8**: every linear layer as an integer matrix product (``MatMulIntegerToFloat``, VNNI on x86).
  Activations are quantised with *static* per-channel ranges calibrated once (``minilm_int8.py``),
  not per batch: a dynamic per-batch scale makes a text's vector depend on the other texts of its
  batch (cosine 0.957 between a text alone and in a batch), while static ranges keep every text
  independent. A per-channel smoothing factor (``SMOOTHING_ALPHA``) moves part of each activation
  channel's range into the weights, as in SmoothQuant, so a few outlier channels do not cost the
  others their precision; per-channel zero points fold into the bias.

Large initialisers (the weights) are not serialised into the protobuf: they are declared as external
data and handed to ONNX Runtime from memory (``Graph.external``, ``onnx_embedder.open_session``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = [
    "GRAPH_OPSET",
    "SMOOTHING_ALPHA",
    "EncoderLayer",
    "Graph",
    "GraphBuilder",
    "LayerNames",
    "Ranges",
    "linear_names",
    "quantise_linear",
]

# The default-domain opset the graph is written against (QuantizeLinear, Gelu, LayerNormalization).
GRAPH_OPSET = 21
# Share of each activation channel's range moved into the weights (0: per-tensor activation scale,
# 1: per-channel). Measured on all-MiniLM-L6-v2 and the demo texts against float32: 0.3 -> mean
# cosine 0.9973, 0.5 -> 0.9980, 0.7 -> 0.9985, 0.85 -> 0.9986 but a lower minimum (0.985 vs 0.987).
SMOOTHING_ALPHA = 0.7
# The ONNX IR version written (ONNX Runtime 1.32 reads up to 11).
_IR_VERSION = 10
# Initialisers of at least this size (bytes) stay out of the protobuf (`GraphBuilder.constant`):
# serialising all-mpnet-base-v2's 438 MB of weights into it took 4.9 s of a 9.4 s build.
_EXTERNAL_MIN_BYTES = 1 << 16
# The file name external initialisers claim; never opened, ONNX Runtime is handed the arrays.
_EXTERNAL_LOCATION = "in-memory"
_INT8_MAX = 127
_UINT8_MAX = 255

Array = npt.NDArray[np.float32]
# Calibrated (low, high) per input channel of each linear layer, by `linear_names()`.
Ranges = Mapping[str, tuple[Array, Array]]


def linear_names(layers: int) -> list[str]:
    """The linear layers of `layers` encoder layers (`GraphBuilder.encoder_layer` named `l{i}_`), in
    order; each one's input is what the int8 graph quantises."""
    return [f"l{i}_{part}" for i in range(layers) for part in ("qkv", "attn_out", "ffn_in", "ffn_out")]


class Graph(NamedTuple):
    """A serialised ONNX model and its large initialisers by name, kept out of the protobuf (pass
    both to ``onnx_embedder.open_session``)."""

    model: bytes
    external: dict[str, npt.NDArray[Any]]


@dataclass(frozen=True, slots=True)
class EncoderLayer:
    """One post-LN transformer layer's weights; every matrix is (inputs, outputs)."""

    qkv_weight: Array  # query, key and value projections side by side
    qkv_bias: Array
    attention_out_weight: Array
    attention_out_bias: Array
    attention_norm: tuple[Array, Array]
    ffn_in_weight: Array
    ffn_in_bias: Array
    ffn_out_weight: Array
    ffn_out_bias: Array
    output_norm: tuple[Array, Array]


@dataclass(frozen=True, slots=True)
class LayerNames:
    """Where a checkpoint keeps one layer's weights, under ``encoder.layer.<i>.``: the query, key and
    value projections (``{part}`` is each of `qkv_parts`), the attention's output and its norm. The
    feed-forward half is named alike in BERT and MPNet checkpoints."""

    qkv: str
    qkv_parts: tuple[str, str, str]
    attention_out: str
    attention_norm: str

    def read(self, w: Callable[[str], Array], index: int) -> EncoderLayer:
        p = f"encoder.layer.{index}."
        projections = [f"{p}{self.qkv.format(part=part)}" for part in self.qkv_parts]
        return EncoderLayer(
            qkv_weight=np.concatenate([w(f"{name}.weight") for name in projections]).T,
            qkv_bias=np.concatenate([w(f"{name}.bias") for name in projections]),
            attention_out_weight=w(f"{p}{self.attention_out}.weight").T,
            attention_out_bias=w(f"{p}{self.attention_out}.bias"),
            attention_norm=(w(f"{p}{self.attention_norm}.weight"), w(f"{p}{self.attention_norm}.bias")),
            ffn_in_weight=w(f"{p}intermediate.dense.weight").T,
            ffn_in_bias=w(f"{p}intermediate.dense.bias"),
            ffn_out_weight=w(f"{p}output.dense.weight").T,
            ffn_out_bias=w(f"{p}output.dense.bias"),
            output_norm=(w(f"{p}output.LayerNorm.weight"), w(f"{p}output.LayerNorm.bias")),
        )


class GraphBuilder:
    """Nodes and initialisers being collected, with one helper per kind of layer.

    Every encoder written here uses it (``minilm_graph.py``, ``mpnet/graph.py``): a linear layer is
    float32 or static int8 the same way whatever the model, so the recipe lives in one place.
    """

    def __init__(
        self,
        ranges: Ranges | None,
        alpha: float,
        expose_inputs: bool,
        *,
        layer_norm_eps: float,
    ) -> None:
        from onnx import TensorProto, helper, numpy_helper

        self._helper, self._numpy_helper, self._types = helper, numpy_helper, TensorProto
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.external: dict[str, npt.NDArray[Any]] = {}
        self.exposed: list[Any] = []
        self._ranges, self._alpha, self._expose = ranges, alpha, expose_inputs
        self._layer_norm_eps = layer_norm_eps
        if ranges is not None:
            self.constant("one", np.array(1.0, np.float32))
            self.constant("zero_u8", np.array(0, np.uint8))

    def constant(self, name: str, value: npt.NDArray[Any]) -> str:
        """An initialiser; a large one is declared as external data and handed to ONNX Runtime from
        memory (`Graph.external`), so it is never copied into the serialised protobuf."""
        array = np.ascontiguousarray(value)
        if array.nbytes < _EXTERNAL_MIN_BYTES:
            self.initializers.append(self._numpy_helper.from_array(array, name))
            return name
        tensor = self._types()
        tensor.name = name
        tensor.data_type = self._helper.np_dtype_to_tensor_dtype(array.dtype)
        tensor.dims.extend(array.shape)
        tensor.data_location = self._types.EXTERNAL
        for key, text in (("location", _EXTERNAL_LOCATION), ("offset", "0"), ("length", str(array.nbytes))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, text
        self.initializers.append(tensor)
        self.external[name] = array
        return name

    def node(self, op: str, inputs: list[str], outputs: list[str], domain: str = "", **attrs: Any) -> str:
        self.nodes.append(self._helper.make_node(op, inputs, outputs, domain=domain, **attrs))
        return outputs[0]

    def layer_norm(self, x: str, weight: Array, bias: Array, name: str) -> str:
        g, b = self.constant(f"{name}_g", weight), self.constant(f"{name}_b", bias)
        return self.node("LayerNormalization", [x, g, b], [name], axis=-1, epsilon=self._layer_norm_eps)

    def linear(self, x: str, weight: Array, bias: Array, name: str) -> str:
        """x @ weight + bias; `weight` is (inputs, outputs). int8 when the ranges have this layer,
        float32 when there are no ranges or they leave it out (a layer kept in float32 on purpose)."""
        if self._expose:
            self.exposed.append(self._helper.make_tensor_value_info(x, self._types.FLOAT, None))
        if self._ranges is None or name not in self._ranges:
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

    def embeddings(self, word: Array, positions: Array, norm: tuple[Array, Array]) -> str:
        """Word embedding + the first `tokens` rows of `positions`, then LayerNorm ("x0").

        Also casts the mask for attention ("mask_i32"), which every layer reads.
        """
        self.constant("i0", np.array([0], np.int64))
        self.constant("i1", np.array([1], np.int64))
        self.constant("i2", np.array([2], np.int64))
        words = self.node("Gather", [self.constant("word", word), "input_ids"], ["we"])
        self.node("Shape", ["input_ids"], ["ids_shape"])
        self.node("Slice", ["ids_shape", "i1", "i2"], ["length"])
        self.node("Slice", [self.constant("positions", positions), "i0", "length"], ["pe"])
        summed = self.node("Add", [words, "pe"], ["emb"])
        self.node("Cast", ["attention_mask"], ["mask_i32"], to=self._types.INT32)
        return self.layer_norm(summed, *norm, "x0")

    def encoder_layer(
        self, x: str, layer: EncoderLayer, name: str, *, heads: int, attention_bias: str = ""
    ) -> str:
        """A post-LN transformer layer: self-attention, residual + LayerNorm, exact-GELU feed-forward,
        residual + LayerNorm. Its linear layers are `{name}qkv`, `{name}attn_out`, `{name}ffn_in`,
        `{name}ffn_out`; `attention_bias` (batch or 1, heads, tokens, tokens) is added to the scores.
        """
        qkv = self.linear(x, layer.qkv_weight, layer.qkv_bias, f"{name}qkv")
        self.node("Split", [qkv], [f"{name}q", f"{name}k", f"{name}v"], axis=-1, num_outputs=3)
        # Scales by 1/sqrt(head width) and masks padded keys itself.
        attention_inputs = [f"{name}q", f"{name}k", f"{name}v", "", "mask_i32"]
        if attention_bias:
            attention_inputs.append(attention_bias)
        context = self.node(
            "MultiHeadAttention",
            attention_inputs,
            [f"{name}context"],
            domain="com.microsoft",
            num_heads=heads,
        )
        attended = self.linear(
            context, layer.attention_out_weight, layer.attention_out_bias, f"{name}attn_out"
        )
        residual = self.node("Add", [attended, x], [f"{name}residual1"])
        x1 = self.layer_norm(residual, *layer.attention_norm, f"{name}x1")
        hidden = self.linear(x1, layer.ffn_in_weight, layer.ffn_in_bias, f"{name}ffn_in")
        activated = self.node("Gelu", [hidden], [f"{name}gelu"])  # exact (erf), as the models were trained
        out = self.linear(activated, layer.ffn_out_weight, layer.ffn_out_bias, f"{name}ffn_out")
        residual2 = self.node("Add", [out, x1], [f"{name}residual2"])
        return self.layer_norm(residual2, *layer.output_norm, f"{name}x2")

    def mean_pool_and_normalise(self, x: str, output: str) -> str:
        """Mean pooling over real tokens, then L2: the sum has the mean's direction, so it is
        normalised as it is (sentence-transformers' Pooling + Normalize)."""
        self.node("Cast", ["attention_mask"], ["mask_f"], to=self._types.FLOAT)
        self.node("Unsqueeze", ["mask_f", self.constant("last_axis", np.array([-1], np.int64))], ["mask_3d"])
        self.node("Mul", [x, "mask_3d"], ["masked"])
        self.node(
            "ReduceSum",
            ["masked", self.constant("token_axis", np.array([1], np.int64))],
            ["pooled"],
            keepdims=0,
        )
        return self.node("LpNormalization", ["pooled"], [output], axis=-1, p=2)

    def serialise(self, name: str, width: int) -> Graph:
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
        return Graph(model.SerializeToString(), dict(self.external))


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
