"""Which vector holds each distinct text: content key -> vector number, in a few bytes per text.

A Python dict of a million 16-byte keys costs about 200 MB (the bytes objects, the int objects, the
table); this map keeps a key's first 8 bytes as a uint64 in one sorted numpy array beside the vector
numbers (12 bytes a text), with the latest changes in a small dict merged into the arrays when it
grows past `MERGE_ENTRIES`. Keys are blake2b digests (``index_db.content_key``): two texts share 8
leading bytes with odds of about 1 in 3.7 x 10^7 at a million texts, and then share a vector.

    keys = ContentKeys()
    number = key_number(content_key(text))
    keys.set(number, 7); keys.get(number)   # 7
    keys.delete(number); keys.get(number)   # None
"""

from __future__ import annotations

import numpy as np

__all__ = ["MERGE_ENTRIES", "ContentKeys", "key_number"]

# Recent changes held in the dict before they are merged into the sorted arrays (entries): a merge
# sorts every key (about 80 ms at a million), so it runs once per this many changes.
MERGE_ENTRIES = 65_536
_GONE = -1  # a deletion waiting for the next merge


def key_number(key: bytes) -> int:
    """The uint64 a content key is held under (its first 8 bytes)."""
    return int.from_bytes(key[:8], "little")


class ContentKeys:
    """Key number (``key_number``) -> vector number (a non-negative int).

    Not thread-safe: the matrix holds the lock.
    """

    def __init__(self) -> None:
        self._keys = np.zeros(0, dtype=np.uint64)
        self._values = np.zeros(0, dtype=np.int32)
        self._recent: dict[int, int] = {}
        self._count = 0

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        return int(self._keys.nbytes + self._values.nbytes)

    def _find(self, number: int) -> int | None:
        """The arrays' position of `number`, if it is there."""
        at = int(np.searchsorted(self._keys, np.uint64(number)))
        if at < len(self._keys) and int(self._keys[at]) == number:
            return at
        return None

    def get(self, number: int) -> int | None:
        value = self._recent.get(number)
        if value is None:
            at = self._find(number)
            value = _GONE if at is None else int(self._values[at])
        return None if value == _GONE else value

    def set(self, number: int, value: int) -> None:
        if value < 0:
            raise ValueError("vector numbers are non-negative")
        if self.get(number) is None:
            self._count += 1
        self._recent[number] = value
        if len(self._recent) > MERGE_ENTRIES:
            self._merge()

    def delete(self, number: int) -> None:
        if self.get(number) is not None:
            self._count -= 1
            self._recent[number] = _GONE

    def _merge(self) -> None:
        recent = np.fromiter(self._recent, dtype=np.uint64, count=len(self._recent))
        values = np.fromiter(self._recent.values(), dtype=np.int32, count=len(self._recent))
        kept = ~np.isin(self._keys, recent)
        keys = np.concatenate([self._keys[kept], recent[values != _GONE]])
        merged = np.concatenate([self._values[kept], values[values != _GONE]])
        order = np.argsort(keys, kind="stable")
        self._keys, self._values = keys[order], merged[order]
        self._recent = {}

    def renumber(self, new_numbers: np.ndarray) -> None:
        """Every value ``v`` becomes ``new_numbers[v]`` (the vectors were renumbered)."""
        self._merge()
        self._values = np.asarray(new_numbers, dtype=np.int32)[self._values]

    def state(self) -> dict[str, np.ndarray]:
        self._merge()
        return {"keys": self._keys, "key_vectors": self._values}

    @classmethod
    def from_state(cls, keys: np.ndarray, values: np.ndarray) -> ContentKeys:
        if keys.shape != values.shape:
            raise ValueError("content keys and their vectors differ in length")
        made = cls()
        made._keys = np.asarray(keys, dtype=np.uint64)
        made._values = np.asarray(values, dtype=np.int32)
        made._count = len(made._keys)
        return made
