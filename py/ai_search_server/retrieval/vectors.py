"""The semantic branch's vectors in memory: searched by brute-force dot product, each distinct text once.

Python's sqlite3 here cannot load a vector extension, so the vectors live as BLOBs beside FTS5 in the
index file (durable) and as this matrix in memory (fast). A search scores every distinct vector with
one matrix product (unit vectors: the dot product is the cosine similarity), spreads the scores to
the rows that share them, masks the rows the caller's scope excludes, and takes the top k with a
partial sort. At 100k distinct texts x 384 dimensions that is one 150 MB read, about 13 ms;
docs/retrieval.md has the figures.

**Shared vectors.** Rows (messages) and vectors are two tables: a row points at a vector, and rows
upserted with the same content ``key`` (the index passes a hash of the text) share one. Chat repeats
itself -- bot posts, "thanks", "+1", the same alert every night -- so a workspace holds fewer
distinct texts than messages: memory and scan time grow with the distinct texts, and the per-row
cost is a few integers (room, author, time, vector number).

Each row carries what the pipeline filters on (room, author, time), kept as small integer arrays so
the scope mask costs a few vector operations, not a Python loop.

    matrix = VectorMatrix(384)
    matrix.upsert(7, vector, room="r1", user="alice", ts_ms=1_790_000_000_000, key=b"...")
    matrix.vector_for(b"...")                                                  # the shared vector
    matrix.search(query_vector, VectorScope(rooms=frozenset({"r1"})), k=20)   # [(7, 0.83)]
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = ["GROWTH_FACTOR", "INITIAL_CAPACITY_ROWS", "VectorMatrix", "VectorScope"]

# Rows (and vectors) allocated up front; when full an array grows by GROWTH_FACTOR (a quarter: at
# 100k x 384 float32 vectors, doubling would hold up to 150 MB that no vector uses).
INITIAL_CAPACITY_ROWS = 1024
GROWTH_FACTOR = 1.25
_FREE = -1  # room code of an empty row slot

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class VectorScope:
    """Which rows a search may return: rooms always, authors and a time window when given.

    `users` holds folded usernames (lower case); None means any author; `excluded_users` are left
    out. Times are epoch ms, both bounds inclusive. `allowed` (rows that may be returned) and
    `blocked` (rows that may not) are sorted rowid arrays, None for no such limit: the search line's
    other conditions, read from the index file (``IndexDatabase.condition_rowids``).
    """

    rooms: frozenset[str]
    users: frozenset[str] | None = None
    ts_min_ms: int | None = None
    ts_max_ms: int | None = None
    excluded_users: frozenset[str] = frozenset()
    allowed: npt.NDArray[np.int64] | None = field(default=None, compare=False)
    blocked: npt.NDArray[np.int64] | None = field(default=None, compare=False)


def _grown(capacity: int) -> int:
    return max(capacity + 1, int(capacity * GROWTH_FACTOR))


class VectorMatrix:
    """Rows keyed by the index's document rowid, each pointing at a (possibly shared) vector; thread-safe.

    Raises:
        ValueError: a vector of the wrong shape (from `upsert` and `search`).
    """

    def __init__(self, dimensions: int) -> None:
        if dimensions <= 0:
            raise ValueError(f"vector dimensions must be positive, got {dimensions}")
        self.dimensions = dimensions
        self._lock = threading.Lock()
        # Vectors: one per distinct content key (or per row upserted without a key).
        self._vectors = np.zeros((INITIAL_CAPACITY_ROWS, dimensions), dtype=np.float32)
        self._vectors_used = 0  # vector numbers at or past this are empty
        self._free_vectors: list[int] = []
        self._refs: list[int] = [0] * INITIAL_CAPACITY_ROWS  # rows pointing at each vector
        self._key_of_vector: dict[int, bytes] = {}
        self._vector_of_key: dict[bytes, int] = {}
        # Rows: filter fields and the vector each one points at.
        self._rooms = np.full(INITIAL_CAPACITY_ROWS, _FREE, dtype=np.int32)
        self._users = np.zeros(INITIAL_CAPACITY_ROWS, dtype=np.int32)
        self._ts = np.zeros(INITIAL_CAPACITY_ROWS, dtype=np.int64)
        self._rowids = np.zeros(INITIAL_CAPACITY_ROWS, dtype=np.int64)
        self._vector_of_row = np.zeros(INITIAL_CAPACITY_ROWS, dtype=np.int32)
        self._used = 0  # row slots ever used: slots at or past this index are empty
        self._free: list[int] = []
        self._slot_of: dict[int, int] = {}
        self._room_codes: dict[str, int] = {}
        self._user_codes: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, rowid: object) -> bool:
        return rowid in self._slot_of

    @property
    def distinct_vectors(self) -> int:
        """Vectors held: rows sharing a content key count once."""
        return self._vectors_used - len(self._free_vectors)

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (allocated capacity, not just the used rows and vectors)."""
        arrays = (self._vectors, self._rooms, self._users, self._ts, self._rowids, self._vector_of_row)
        return sum(array.nbytes for array in arrays)

    def _code(self, codes: dict[str, int], key: str) -> int:
        code = codes.get(key)
        if code is None:
            code = codes[key] = len(codes)
        return code

    def reserve(self, rows: int) -> None:
        """Make room for `rows` rows (the index knows its size when it loads from disk).

        Vectors are not reserved: how many distinct ones there will be is known only once loaded.
        """
        with self._lock:
            if rows > len(self._rooms):
                self._grow_rows(rows)

    def _grow_rows(self, capacity: int) -> None:
        self._rooms = np.concatenate([self._rooms, np.full(capacity - len(self._rooms), _FREE, np.int32)])
        self._users = np.resize(self._users, capacity)
        self._ts = np.resize(self._ts, capacity)
        self._rowids = np.resize(self._rowids, capacity)
        self._vector_of_row = np.resize(self._vector_of_row, capacity)

    def _grow_vectors(self) -> None:
        capacity = _grown(len(self._vectors))
        self._vectors = np.resize(self._vectors, (capacity, self.dimensions))
        self._refs.extend([0] * (capacity - len(self._refs)))

    def _check(self, vector: npt.ArrayLike) -> Vector:
        array = np.asarray(vector, dtype=np.float32).reshape(-1)
        if array.shape != (self.dimensions,):
            raise ValueError(f"expected a vector of {self.dimensions} values, got shape {array.shape}")
        return array

    def holds(self, key: bytes) -> bool:
        """Whether a vector is held for this content key."""
        return key in self._vector_of_key

    def vector_for(self, key: bytes) -> Vector | None:
        """A copy of the vector held for this content key, or None: the caller need not embed again."""
        with self._lock:
            number = self._vector_of_key.get(key)
            return None if number is None else self._vectors[number].copy()

    def _new_vector(self, array: Vector, key: bytes | None) -> int:
        if self._free_vectors:
            number = self._free_vectors.pop()
        else:
            if self._vectors_used == len(self._vectors):
                self._grow_vectors()
            number = self._vectors_used
            self._vectors_used += 1
        self._vectors[number] = array
        if key is not None:
            self._vector_of_key[key] = number
            self._key_of_vector[number] = key
        return number

    def _release_vector(self, number: int) -> None:
        self._refs[number] -= 1
        if self._refs[number] == 0:
            key = self._key_of_vector.pop(number, None)
            if key is not None:
                del self._vector_of_key[key]
            self._free_vectors.append(number)

    def upsert(
        self,
        rowid: int,
        vector: npt.ArrayLike | None,
        *,
        room: str,
        user: str,
        ts_ms: int,
        key: bytes | None = None,
    ) -> None:
        """Add the row, or replace it (vector and filter fields) when the rowid is present.

        With a `key` already held, the row shares that vector and `vector` is not read (it may be
        None); otherwise `vector` is required and is stored, under `key` when one is given.
        """
        array = None if vector is None else self._check(vector)
        with self._lock:
            number = None if key is None else self._vector_of_key.get(key)
            if number is None:
                if array is None:
                    raise ValueError("a vector is required for a content key the matrix does not hold")
                number = self._new_vector(array, key)
            self._refs[number] += 1  # before releasing the old one: the same key stays held
            slot = self._slot_of.get(rowid)
            if slot is None:
                if self._free:
                    slot = self._free.pop()
                else:
                    if self._used == len(self._rooms):
                        self._grow_rows(_grown(len(self._rooms)))
                    slot = self._used
                    self._used += 1
                self._slot_of[rowid] = slot
            else:
                self._release_vector(int(self._vector_of_row[slot]))
            self._vector_of_row[slot] = number
            self._rooms[slot] = self._code(self._room_codes, room)
            self._users[slot] = self._code(self._user_codes, user.lower())
            self._ts[slot] = ts_ms
            self._rowids[slot] = rowid

    def remove(self, rowid: int) -> bool:
        """Forget a row (and its vector when no other row shares it); True when it was present."""
        with self._lock:
            slot = self._slot_of.pop(rowid, None)
            if slot is None:
                return False
            self._rooms[slot] = _FREE
            self._release_vector(int(self._vector_of_row[slot]))
            self._free.append(slot)
            return True

    def _mask(self, scope: VectorScope) -> npt.NDArray[np.bool_] | None:
        """Rows inside the scope among the used slots, or None when no row can be."""
        room_codes = [self._room_codes[r] for r in scope.rooms if r in self._room_codes]
        if not room_codes:
            return None
        used = slice(0, self._used)
        mask = np.isin(self._rooms[used], np.asarray(room_codes, dtype=np.int32))
        if scope.users is not None:
            user_codes = [self._user_codes[u.lower()] for u in scope.users if u.lower() in self._user_codes]
            if not user_codes:
                return None
            mask &= np.isin(self._users[used], np.asarray(user_codes, dtype=np.int32))
        if scope.ts_min_ms is not None:
            mask &= self._ts[used] >= scope.ts_min_ms
        if scope.ts_max_ms is not None:
            mask &= self._ts[used] <= scope.ts_max_ms
        excluded = [
            self._user_codes[u.lower()] for u in scope.excluded_users if u.lower() in self._user_codes
        ]
        if excluded:
            mask &= ~np.isin(self._users[used], np.asarray(excluded, dtype=np.int32))
        if scope.allowed is not None:
            mask &= np.isin(self._rowids[used], scope.allowed)
        if scope.blocked is not None and len(scope.blocked):
            mask &= ~np.isin(self._rowids[used], scope.blocked)
        return mask

    def search(
        self, query: npt.ArrayLike, scope: VectorScope, *, k: int, min_similarity: float = -1.0
    ) -> list[tuple[int, float]]:
        """The `k` rows most similar to `query` inside `scope`, best first: (rowid, similarity).

        `query` must be unit length for the scores to be cosines; rows below `min_similarity`
        are left out. Rows sharing a vector tie; ties keep no particular order.
        """
        vector = self._check(query)
        if k <= 0:
            return []
        with self._lock:
            mask = self._mask(scope)
            if mask is None:
                return []
            per_vector = self._vectors[: self._vectors_used] @ vector
            scores = per_vector[self._vector_of_row[: self._used]]
            scores[~mask] = -np.inf
            allowed = int(mask.sum())
            count = min(k, allowed)
            if count == 0:
                return []
            top = (
                np.argpartition(-scores, count - 1)[:count] if count < len(scores) else np.arange(len(scores))
            )
            top = top[np.argsort(-scores[top], kind="stable")]
            rowids = self._rowids[top]
        return [
            (int(rowid), float(score))
            for rowid, score in zip(rowids, scores[top], strict=True)
            if np.isfinite(score) and score >= min_similarity
        ]
