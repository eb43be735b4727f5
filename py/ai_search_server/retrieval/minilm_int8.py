"""The int8 model's calibrated activation ranges: measured once, shipped, tied to the weights.

Static quantisation needs, for every input channel of every linear layer, the range its values take.
They are measured by running the float32 graph over a calibration set (the demo workspace's distinct
messages: chat of every length, code names, numbers, emoji; 2,110 when the shipped file was made) and
kept in
``data/minilm_int8_ranges.npz`` with the SHA-256 of the weights they were measured on; other weights
are refused (the int8 path is then unavailable and the float32 one is used). Remake the file after
a change of weights, calibration set or ``minilm_graph.SMOOTHING_ALPHA`` (and then change
``MINILM_INT8_MODEL_ID``, so indexes re-embed)::

    .venv/bin/python -m ai_search_server.retrieval.minilm_int8
"""

from __future__ import annotations

import argparse
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from .embedder import EmbedderUnavailable

__all__ = [
    "MINILM_INT8_MODEL_ID",
    "RANGES_FILE",
    "RangesFile",
    "calibrate",
    "load_ranges",
    "read_ranges",
    "save_ranges",
    "weights_digest",
]

# The vector space of the int8 model: a new calibration or recipe is a new id (indexes re-embed).
MINILM_INT8_MODEL_ID = "local:all-MiniLM-L6-v2:int8-static-v1"
RANGES_FILE = Path(__file__).resolve().parent / "data" / "minilm_int8_ranges.npz"
# Texts per calibration run (texts of one length only, so that no padding enters a range).
_CALIBRATION_BATCH_TEXTS = 64
# Names of the figures stored beside the ranges start with this (a layer's name never does).
_FIGURE_PREFIX = "figure."
# Bytes read at a time while hashing the weights (bytes).
_HASH_CHUNK_BYTES = 1 << 20

Array = npt.NDArray[np.float32]


def weights_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def load_ranges(weights_path: Path, ranges_file: Path = RANGES_FILE) -> dict[str, tuple[Array, Array]]:
    """The shipped ranges, if they were measured on the weights at `weights_path`.

    Raises:
        EmbedderUnavailable: the file is missing or damaged, or belongs to other weights.
    """
    from .minilm_graph import linear_names

    ranges, digest, _ = read_ranges(ranges_file, linear_names())
    if digest != weights_digest(weights_path):
        raise EmbedderUnavailable(
            f"the int8 model's ranges were measured on other weights than {weights_path} "
            "(remake them: python -m ai_search_server.retrieval.minilm_int8)"
        )
    return ranges


class RangesFile(NamedTuple):
    """What a ranges file holds: the ranges by layer, the SHA-256 of the weights they were measured on
    (the caller compares it with its own weights), and any figures measured with them (by name)."""

    ranges: dict[str, tuple[Array, Array]]
    weights_sha256: str
    figures: dict[str, float]


def read_ranges(ranges_file: Path, names: Sequence[str]) -> RangesFile:
    """The ranges of the layers `names` in `ranges_file`, with its digest and figures.

    Raises:
        EmbedderUnavailable: the file is missing or damaged, or lacks a layer.
    """
    try:
        with np.load(ranges_file) as data:
            digest = str(data["weights_sha256"])
            ranges = {name: (data[f"{name}.low"], data[f"{name}.high"]) for name in names}
            figures = {
                key.removeprefix(_FIGURE_PREFIX): float(data[key])
                for key in data.files
                if key.startswith(_FIGURE_PREFIX)
            }
    except (OSError, KeyError, ValueError) as exc:
        raise EmbedderUnavailable(f"the int8 model's ranges ({ranges_file}) cannot be read: {exc}") from exc
    return RangesFile(ranges, digest, figures)


def save_ranges(
    path: Path,
    ranges: Mapping[str, tuple[Array, Array]],
    weights_sha256: str,
    figures: Mapping[str, float] | None = None,
) -> None:
    """Write `ranges` with the digest of the weights they belong to (and `figures` measured with
    them), as `read_ranges` reads them."""
    arrays: dict[str, npt.NDArray[np.generic]] = {"weights_sha256": np.array(weights_sha256)}
    for name, (low, high) in ranges.items():
        arrays[f"{name}.low"], arrays[f"{name}.high"] = low, high
    for name, value in (figures or {}).items():
        arrays[f"{_FIGURE_PREFIX}{name}"] = np.array(value, dtype=np.float64)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]


def calibrate(
    session: object, encoded: Sequence[Sequence[int]], names: Sequence[str]
) -> dict[str, tuple[Array, Array]]:
    """Per-channel (low, high) of each linear layer's input over `encoded` token ids.

    `session` runs the float32 graph built with ``expose_inputs=True``, whose extra outputs are the
    inputs of the layers `names`, in that order. Texts are grouped by length so that every row is a
    real token.
    """
    run = session.run  # type: ignore[attr-defined]
    by_length: dict[int, list[Sequence[int]]] = {}
    for ids in encoded:
        by_length.setdefault(len(ids), []).append(ids)
    low: dict[str, Array] = {}
    high: dict[str, Array] = {}
    for group in by_length.values():
        for start in range(0, len(group), _CALIBRATION_BATCH_TEXTS):
            batch = np.asarray(group[start : start + _CALIBRATION_BATCH_TEXTS], dtype=np.int64)
            outputs = run(None, {"input_ids": batch, "attention_mask": np.ones_like(batch)})[1:]
            for name, values in zip(names, outputs, strict=True):
                rows = values.reshape(-1, values.shape[-1])
                low[name] = np.minimum(low[name], rows.min(axis=0)) if name in low else rows.min(axis=0)
                high[name] = np.maximum(high[name], rows.max(axis=0)) if name in high else rows.max(axis=0)
    return {name: (low[name], high[name]) for name in names}


def main() -> None:
    parser = argparse.ArgumentParser(description="Measure the int8 model's activation ranges.")
    parser.add_argument("--out", type=Path, default=RANGES_FILE)
    args = parser.parse_args()
    from ..demo import generate_demo_messages
    from .minilm import MINILM_MAX_TOKENS, packaged_model_dir, read_safetensors
    from .minilm_graph import build_minilm_graph, linear_names
    from .onnx_embedder import default_threads, open_session
    from .wordpiece import WordPieceTokenizer

    model_dir = packaged_model_dir()
    weights_path = model_dir / "model.safetensors"
    tokenizer = WordPieceTokenizer.from_tokenizer_json(model_dir / "tokenizer.json", max_tokens=MINILM_MAX_TOKENS)
    texts = sorted({str(row["text"]) for row in generate_demo_messages()})
    graph = build_minilm_graph(read_safetensors(weights_path), expose_inputs=True)
    session = open_session(graph, threads=default_threads())
    ranges = calibrate(session, [tokenizer.encode(text) for text in texts], linear_names())
    save_ranges(args.out, ranges, weights_digest(weights_path))
    print(f"{args.out}: ranges of {len(ranges)} layers from {len(texts)} texts")


if __name__ == "__main__":
    main()
