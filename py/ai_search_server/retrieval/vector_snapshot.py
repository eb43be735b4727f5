"""The vector matrices saved beside the index file, so that a start need not rebuild them.

Rebuilding reads every stored float16 vector and every text (for its content key) back from
``index.db`` and quantises them again: at a million messages, minutes. The snapshot
(``index.vectors.npz``: numpy arrays only, never pickle) holds both matrices as they were, with the
index file's write stamp (``IndexDatabase.write_stamp``: which file, and its count of write
transactions) and the vector model at that moment. It is used only while both still match: any
write to the index file since (a message indexed, edited or deleted by any process, a vector
stored), or another index file in its place, moves the stamp, and the matrices are rebuilt from the
file instead. A snapshot that cannot be read is rebuilt the same way, with a warning.

    pair = read_snapshot(path, model_id, db.write_stamp(), exact_for)   # None: rebuild
    write_snapshot(path, model_id, db.write_stamp(), messages, contexts)
"""

from __future__ import annotations

import logging
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .vectors import ExactVectors, VectorMatrix

__all__ = ["SNAPSHOT_SUFFIX", "read_snapshot", "snapshot_path", "write_snapshot"]

log = logging.getLogger(__name__)

SNAPSHOT_SUFFIX = ".vectors.npz"
# Bumped when the arrays a snapshot holds change meaning: an older one is rebuilt, never read.
SNAPSHOT_FORMAT = 1
_PARTS = ("messages", "contexts")

Column = Literal["vector", "context"]


def snapshot_path(index_path: Path) -> Path:
    return index_path.with_suffix(SNAPSHOT_SUFFIX)


def write_snapshot(
    path: Path, model_id: str, writes: str, messages: VectorMatrix, contexts: VectorMatrix
) -> None:
    """Save both matrices as of `writes` (atomically: a crash leaves the previous file or none)."""
    arrays: dict[str, npt.NDArray[Any]] = {
        "format": np.asarray(SNAPSHOT_FORMAT),
        "model": np.asarray(model_id, dtype=np.str_),
        "writes": np.asarray(writes, dtype=np.str_),
    }
    for part, matrix in zip(_PARTS, (messages, contexts), strict=True):
        arrays.update({f"{part}/{name}": array for name, array in matrix.state().items()})
    partial = path.with_name(path.name + ".partial")
    with partial.open("wb") as file:
        np.savez(file, **arrays)  # type: ignore[arg-type]  # numpy's stub reads **kwds as allow_pickle
    os.replace(partial, path)


def read_snapshot(
    path: Path, model_id: str, writes: str, exact_for: Callable[[Column], ExactVectors]
) -> tuple[VectorMatrix, VectorMatrix] | None:
    """Both matrices, when the snapshot at `path` was taken at `writes` with `model_id`; else None."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as saved:
            if (
                int(saved["format"]) != SNAPSHOT_FORMAT
                or str(saved["model"]) != model_id
                or str(saved["writes"]) != writes
            ):
                log.info("search index: the vector snapshot is out of date; rebuilding it from the index")
                return None
            states: dict[str, dict[str, npt.NDArray[Any]]] = {part: {} for part in _PARTS}
            for name in saved.files:
                part, _, field = name.partition("/")
                if part in states:
                    states[part][field] = saved[name]
        return (
            VectorMatrix.from_state(states["messages"], exact=exact_for("vector")),
            VectorMatrix.from_state(states["contexts"], exact=exact_for("context")),
        )
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        log.warning("search index: the vector snapshot %s cannot be read (%s); rebuilding it", path, exc)
        return None
