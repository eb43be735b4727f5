"""Batches by length for the local embedding model: similar lengths together, padded arrays.

A forward pass costs the padded size of its batch (texts x longest text), and attention grows with the
square of it, so one long message must not make 63 short ones pay for its length. Both local runtimes
(numpy in ``minilm.py``, ONNX Runtime in ``minilm_onnx.py``) cut a call's texts the same way.

    >>> list(length_batches([3, 9, 2, 3], max_texts=2, max_tokens=100))
    [[2, 0], [3, 1]]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["length_batches", "padded"]


def length_batches(lengths: Sequence[int], *, max_texts: int, max_tokens: int) -> Iterator[list[int]]:
    """Indexes into `lengths`, shortest first, cut into batches of at most `max_texts` texts whose
    padded size (texts x longest) stays within `max_tokens` (a single longer text is its own batch)."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batch: list[int] = []
    for index in order:
        if batch and (len(batch) >= max_texts or (len(batch) + 1) * lengths[index] > max_tokens):
            yield batch
            batch = []
        batch.append(index)
    if batch:
        yield batch


def padded(encoded: Sequence[Sequence[int]]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Token ids right-padded with 0 to the longest, and the mask of real tokens (1) vs padding (0)."""
    length = max(len(ids) for ids in encoded)
    ids = np.zeros((len(encoded), length), dtype=np.int64)
    mask = np.zeros((len(encoded), length), dtype=np.int64)
    for row, token_ids in enumerate(encoded):
        ids[row, : len(token_ids)] = token_ids
        mask[row, : len(token_ids)] = 1
    return ids, mask
