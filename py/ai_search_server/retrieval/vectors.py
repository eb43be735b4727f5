"""The semantic branch's vectors in memory: a scope-masked top-k search, each distinct text once.

Python's sqlite3 here cannot load a vector extension, so the vectors live as float16 BLOBs beside
FTS5 in the index file (durable, exact) and in memory as ``vector_codes.VectorCodes``: float32 while
there are few, 4-bit codes past ``QUANTISE_MIN_VECTORS`` (192 bytes a vector instead of 1,536). A
search selects the vectors the caller's scope holds (rooms, authors, time: small integer arrays, a
few vector operations), scans exactly those, and, from codes, re-scores the best
``rescore_candidates(k)`` with the exact vectors read back from the index file (the `exact`
callable) before taking the top k. The scan is exhaustive over the scope, so a small scope loses
nothing and costs little; docs/retrieval.md has the recall and the timings.

**Shared vectors.** Rows (messages) and vectors are two tables: a row points at a vector, and rows
upserted with the same content ``key`` (the index passes a hash of the text) share one. Chat repeats
itself -- bot posts, "thanks", "+1", the same alert every night -- so a workspace holds fewer
distinct texts than messages: memory and scan time grow with the distinct texts, and the per-row
cost is a few integers (room, author, time, vector number). Every per-row and per-vector field is a
numpy array, not a Python object: at a million rows a dict entry per row alone would be 100 MB.

    matrix = VectorMatrix(384, exact=read_vectors)            # read_vectors(rowids) -> {rowid: vector}
    matrix.upsert(7, vector, room="r1", user="alice", ts_ms=1_790_000_000_000, key=b"...")
    matrix.vector_for(b"...")                                                  # the shared vector
    matrix.search(query_vector, VectorScope(rooms=frozenset({"r1"})), k=20)   # [(7, 0.83)]
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .content_keys import ContentKeys, key_number
from .vector_codes import VectorCodes

__all__ = [
    "GROWTH_FACTOR",
    "INITIAL_CAPACITY_ROWS",
    "REGROUP_SHARE",
    "RESCORE_FACTOR",
    "RESCORE_MIN_CANDIDATES",
    "ExactVectors",
    "VectorMatrix",
    "VectorScope",
    "rescore_candidates",
]

# Rows (and vectors) allocated up front; when full an array grows by GROWTH_FACTOR (a quarter: at
# a million rows, doubling would hold up to half of every array unused).
INITIAL_CAPACITY_ROWS = 1024
GROWTH_FACTOR = 1.25
# Candidates re-scored exactly per search from codes: RESCORE_FACTOR x k, at least
# RESCORE_MIN_CANDIDATES (vectors). On a million random unit vectors (the hardest case: no
# clusters, the best ten barely above the rest) 100 candidates gave recall@10 1.00 and 30 gave
# 0.95 (docs/retrieval.md); each costs one indexed read of the index file (~10 us).
RESCORE_FACTOR = 4
RESCORE_MIN_CANDIDATES = 100
# Share of the vectors added since the vectors were last grouped by room (`group_by_room`) past
# which the index groups them again (share): a scope's codes in a few runs are scanned at about
# half the CPU of the same number scattered (faiss reads its bitmap in runs), and new vectors,
# appended at the end, scatter the rooms until then.
REGROUP_SHARE = 0.1
_FREE = -1  # room code of an empty row slot, and slot of a rowid not held

Vector = npt.NDArray[np.float32]
# The exact vectors of some rows, read from the index file: rowid -> float32 vector (rows gone: absent).
ExactVectors = Callable[[Sequence[int]], dict[int, Vector]]


def rescore_candidates(k: int) -> int:
    """Vectors re-scored exactly for a search of `k` results from codes."""
    return max(k * RESCORE_FACTOR, RESCORE_MIN_CANDIDATES)


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


def _grown(capacity: int, needed: int) -> int:
    return max(needed, int(capacity * GROWTH_FACTOR))


def _allowed(codes: list[int], known: int) -> npt.NDArray[np.bool_]:
    """A table of `known` + 1 flags, set for `codes`: indexed by a row's code it says whether the row
    is in scope, and the last flag, which the free slots' -1 reads, is never set. One gather per
    row: np.isin took 18 ms over a million rows, this 2."""
    table = np.zeros(known + 1, dtype=np.bool_)
    table[codes] = True
    return table


def _resized(array: npt.NDArray[Any], capacity: int, fill: Any) -> npt.NDArray[Any]:
    """`array` in a new buffer of `capacity` (the tail filled). Not np.resize: its result is a view
    of a buffer holding whole repeated copies, so growing by a quarter kept twice the array alive."""
    grown = np.full(capacity, fill, dtype=array.dtype)
    grown[: len(array)] = array
    return grown


class VectorMatrix:
    """Rows keyed by the index's document rowid, each pointing at a (possibly shared) vector; thread-safe.

    With `exact` (the index file's vectors), the vectors are quantised once there are many and
    searches re-score from it; without, they stay float32 and every search is exact.

    Raises:
        ValueError: a vector of the wrong shape (from `upsert` and `search`), a negative rowid.
    """

    def __init__(self, dimensions: int, *, exact: ExactVectors | None = None) -> None:
        if dimensions <= 0:
            raise ValueError(f"vector dimensions must be positive, got {dimensions}")
        self.dimensions = dimensions
        self._lock = threading.Lock()
        self._exact = exact
        # Vectors: one per distinct content key (or per row upserted without a key).
        self._codes = VectorCodes(dimensions, quantise=exact is not None)
        self._free_vectors: list[int] = []
        self._refs = np.zeros(INITIAL_CAPACITY_ROWS, dtype=np.int32)  # rows pointing at each vector
        self._key_of_vector = np.zeros(INITIAL_CAPACITY_ROWS, dtype=np.uint64)  # key number
        self._keyed = np.zeros(INITIAL_CAPACITY_ROWS, dtype=np.bool_)  # whether it has a key
        self._rowid_of_vector = np.zeros(INITIAL_CAPACITY_ROWS, dtype=np.int64)  # a row holding it
        self._keys = ContentKeys()
        # Rows: filter fields and the vector each one points at.
        self._rooms = np.full(INITIAL_CAPACITY_ROWS, _FREE, dtype=np.int32)
        self._users = np.zeros(INITIAL_CAPACITY_ROWS, dtype=np.int32)
        self._ts = np.zeros(INITIAL_CAPACITY_ROWS, dtype=np.int64)
        self._rowids = np.zeros(INITIAL_CAPACITY_ROWS, dtype=np.int64)
        self._vector_of_row = np.zeros(INITIAL_CAPACITY_ROWS, dtype=np.int32)
        self._used = 0  # row slots ever used: slots at or past this index are empty
        self._free: list[int] = []
        self._slot_of = np.full(INITIAL_CAPACITY_ROWS, _FREE, dtype=np.int32)  # by rowid
        self._count = 0
        self._room_codes: dict[str, int] = {}
        self._user_codes: dict[str, int] = {}
        self._grouped = 0  # vectors there were when they were last grouped by room

    def __len__(self) -> int:
        return self._count

    def __contains__(self, rowid: object) -> bool:
        return isinstance(rowid, int) and self._slot(rowid) is not None

    def _slot(self, rowid: int) -> int | None:
        if 0 <= rowid < len(self._slot_of):
            slot = int(self._slot_of[rowid])
            return None if slot == _FREE else slot
        return None

    @property
    def distinct_vectors(self) -> int:
        """Vectors held: rows sharing a content key count once."""
        return len(self._codes) - len(self._free_vectors)

    @property
    def quantised(self) -> bool:
        return self._codes.quantised

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (allocated capacity, not just the used rows and vectors)."""
        arrays = (
            self._refs,
            self._key_of_vector,
            self._keyed,
            self._rowid_of_vector,
            self._rooms,
            self._users,
            self._ts,
            self._rowids,
            self._vector_of_row,
            self._slot_of,
        )
        return self._codes.nbytes + self._keys.nbytes + sum(array.nbytes for array in arrays)

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
        self._rooms = _resized(self._rooms, capacity, _FREE)
        self._users = _resized(self._users, capacity, 0)
        self._ts = _resized(self._ts, capacity, 0)
        self._rowids = _resized(self._rowids, capacity, 0)
        self._vector_of_row = _resized(self._vector_of_row, capacity, 0)

    def _check(self, vector: npt.ArrayLike) -> Vector:
        array = np.asarray(vector, dtype=np.float32).reshape(-1)
        if array.shape != (self.dimensions,):
            raise ValueError(f"expected a vector of {self.dimensions} values, got shape {array.shape}")
        return array

    def holds(self, key: bytes) -> bool:
        """Whether a vector is held for this content key."""
        with self._lock:
            return self._keys.get(key_number(key)) is not None

    def vector_for(self, key: bytes) -> Vector | None:
        """The vector held for this content key (a copy), or None: the caller need not embed again.

        Once quantised, the exact vector is read back from the index file (one row sharing it)."""
        with self._lock:
            number = self._keys.get(key_number(key))
            if number is None:
                return None
            held = self._codes.exact(number)
            if held is not None or self._exact is None:
                return held
            rowid = int(self._rowid_of_vector[number])
            return self._exact([rowid]).get(rowid)

    def _new_vector(self, array: Vector, key: bytes | None, rowid: int) -> int:
        if self._free_vectors:
            number = self._free_vectors.pop()
            self._codes.put(number, array)
        else:
            number = self._codes.append(array)
            if number >= len(self._refs):
                capacity = _grown(len(self._refs), number + 1)
                self._refs = _resized(self._refs, capacity, 0)
                self._key_of_vector = _resized(self._key_of_vector, capacity, 0)
                self._keyed = _resized(self._keyed, capacity, False)
                self._rowid_of_vector = _resized(self._rowid_of_vector, capacity, 0)
        self._rowid_of_vector[number] = rowid
        self._keyed[number] = key is not None
        if key is not None:
            self._keys.set(key_number(key), number)
            self._key_of_vector[number] = key_number(key)
        return number

    def _release_vector(self, number: int, leaving_rowid: int) -> None:
        """One row less points at `number`; the slot of `leaving_rowid` already points elsewhere."""
        self._refs[number] -= 1
        if self._refs[number] == 0:
            key = int(self._key_of_vector[number])
            if self._keyed[number] and self._keys.get(key) == number:
                self._keys.delete(key)
            self._free_vectors.append(number)
        elif int(self._rowid_of_vector[number]) == leaving_rowid:
            # Another row holding the vector stands for it when re-scoring (rare: a shared text edited).
            holders = np.flatnonzero(
                (self._vector_of_row[: self._used] == number) & (self._rooms[: self._used] != _FREE)
            )
            self._rowid_of_vector[number] = self._rowids[holders[0]]

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
        if rowid < 0:
            raise ValueError(f"rowids are non-negative, got {rowid}")
        array = None if vector is None else self._check(vector)
        with self._lock:
            number = None if key is None else self._keys.get(key_number(key))
            if number is None:
                if array is None:
                    raise ValueError("a vector is required for a content key the matrix does not hold")
                number = self._new_vector(array, key, rowid)
            self._refs[number] += 1  # before releasing the old one: the same key stays held
            slot = self._slot(rowid)
            old: int | None = None
            if slot is None:
                if self._free:
                    slot = self._free.pop()
                else:
                    if self._used == len(self._rooms):
                        self._grow_rows(_grown(len(self._rooms), self._used + 1))
                    slot = self._used
                    self._used += 1
                if rowid >= len(self._slot_of):
                    self._slot_of = _resized(self._slot_of, _grown(len(self._slot_of), rowid + 1), _FREE)
                self._slot_of[rowid] = slot
                self._count += 1
            else:
                old = int(self._vector_of_row[slot])
            self._vector_of_row[slot] = number
            self._rooms[slot] = self._code(self._room_codes, room)
            self._users[slot] = self._code(self._user_codes, user.lower())
            self._ts[slot] = ts_ms
            self._rowids[slot] = rowid
            if old is not None:
                self._release_vector(old, rowid)

    def remove(self, rowid: int) -> bool:
        """Forget a row (and its vector when no other row shares it); True when it was present."""
        with self._lock:
            slot = self._slot(rowid)
            if slot is None:
                return False
            self._slot_of[rowid] = _FREE
            self._count -= 1
            self._rooms[slot] = _FREE
            self._release_vector(int(self._vector_of_row[slot]), rowid)
            self._free.append(slot)
            return True

    @property
    def scattered_share(self) -> float:
        """Share of the vectors added since they were last grouped by room (0: all grouped)."""
        count = len(self._codes)
        return 0.0 if count == 0 else max(0, count - self._grouped) / count

    def group_by_room(self) -> None:
        """Renumber the vectors so that each room's lie together, in their old order.

        A search scans the codes its scope selects through a bitmap; faiss walks every code and
        computes the selected ones, and a selection in a few long runs costs about half the CPU of
        the same number of codes scattered (measured: 1M codes, 15 % selected, 14 ms against 30).
        A vector shared by rows of several rooms goes with the room of the row that stands for it;
        free vectors go last. Float32 matrices (few vectors, scanned whole) are left as they are.
        """
        with self._lock:
            count = len(self._codes)
            if not self._codes.quantised or count == 0:
                self._grouped = count
                return
            stand_in = np.clip(self._rowid_of_vector[:count], 0, len(self._slot_of) - 1)
            slots = self._slot_of[stand_in]
            rooms = np.where(slots >= 0, self._rooms[np.maximum(slots, 0)], _FREE).astype(np.int64)
            last = len(self._room_codes)
            rooms[rooms < 0] = last
            if self._free_vectors:
                rooms[np.asarray(self._free_vectors, dtype=np.int64)] = last
            order = np.argsort(rooms, kind="stable")
            new_number = np.empty(count, dtype=np.int64)
            new_number[order] = np.arange(count, dtype=np.int64)
            self._codes.permute(order)
            for name in ("_refs", "_key_of_vector", "_keyed", "_rowid_of_vector"):
                array = getattr(self, name)
                array[:count] = array[:count][order]
            used = slice(0, self._used)
            self._vector_of_row[used] = new_number[self._vector_of_row[used]].astype(np.int32)
            self._free_vectors = [int(new_number[n]) for n in self._free_vectors]
            self._keys.renumber(new_number)
            self._grouped = count

    def _mask(self, scope: VectorScope) -> npt.NDArray[np.bool_] | None:
        """Rows inside the scope among the used slots, or None when no row can be."""
        room_codes = [self._room_codes[r] for r in scope.rooms if r in self._room_codes]
        if not room_codes:
            return None
        used = slice(0, self._used)
        mask = _allowed(room_codes, len(self._room_codes))[self._rooms[used]]
        if scope.users is not None:
            user_codes = [self._user_codes[u.lower()] for u in scope.users if u.lower() in self._user_codes]
            if not user_codes:
                return None
            mask &= _allowed(user_codes, len(self._user_codes))[self._users[used]]
        if scope.ts_min_ms is not None:
            mask &= self._ts[used] >= scope.ts_min_ms
        if scope.ts_max_ms is not None:
            mask &= self._ts[used] <= scope.ts_max_ms
        excluded = [
            self._user_codes[u.lower()] for u in scope.excluded_users if u.lower() in self._user_codes
        ]
        if excluded:
            mask &= ~_allowed(excluded, len(self._user_codes))[self._users[used]]
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

        Exact from float32: every row of the top k holds one of the k best vectors in scope. From
        codes, the `rescore_candidates(k)` best by approximate score are re-scored exactly, and a
        row is missed only if its vector ranked below them on codes.
        """
        vector = self._check(query)
        if k <= 0:
            return []
        with self._lock:
            mask = self._mask(scope)
            if mask is None:
                return []
            in_scope = np.flatnonzero(mask)
            scope_vectors = self._vector_of_row[in_scope]
            selected = np.zeros(len(self._codes), dtype=np.bool_)
            selected[scope_vectors] = True
            wanted = rescore_candidates(k) if self._codes.quantised else k
            numbers, scores = self._codes.scan(vector, selected, wanted)
            if len(numbers) == 0:
                return []
            if self._codes.quantised and self._exact is not None:
                scores = self._rescored(numbers, scores, vector)
            position = np.full(len(self._codes), -1, dtype=np.int32)
            position[numbers] = np.arange(len(numbers), dtype=np.int32)
            row_position = position[scope_vectors]
            hit = row_position >= 0
            candidates = in_scope[hit]
            row_scores = scores[row_position[hit]]
            count = min(k, len(candidates))
            top = (
                np.argpartition(-row_scores, count - 1)[:count]
                if count < len(candidates)
                else np.arange(count)
            )
            top = top[np.argsort(-row_scores[top], kind="stable")]
            rowids = self._rowids[candidates[top]]
            best = row_scores[top]
        return [
            (int(rowid), float(score))
            for rowid, score in zip(rowids, best, strict=True)
            if np.isfinite(score) and score >= min_similarity
        ]

    def _rescored(self, numbers: npt.NDArray[np.int64], approximate: Vector, query: Vector) -> Vector:
        """Exact scores of the vectors `numbers`, read back through one row holding each (a row
        deleted meanwhile keeps its approximate score: the search's caller drops it anyway)."""
        assert self._exact is not None
        rowids = [int(r) for r in self._rowid_of_vector[numbers]]
        exact = self._exact(rowids)
        scores = approximate.copy()
        for i, rowid in enumerate(rowids):
            held = exact.get(rowid)
            if held is not None:
                scores[i] = float(held @ query)
        return scores

    # -- a snapshot, so that a start need not read every vector back (index.py writes it) ------------

    def state(self) -> dict[str, npt.NDArray[Any]]:
        """Every array the matrix holds, trimmed to what is used (numpy only: no pickle)."""
        with self._lock:
            vectors, rows = len(self._codes), self._used
            return {
                **{f"codes.{name}": array for name, array in self._codes.state().items()},
                **{f"keys.{name}": array for name, array in self._keys.state().items()},
                "dimensions": np.asarray(self.dimensions),
                "refs": self._refs[:vectors].copy(),
                "key_of_vector": self._key_of_vector[:vectors].copy(),
                "keyed": self._keyed[:vectors].copy(),
                "rowid_of_vector": self._rowid_of_vector[:vectors].copy(),
                "free_vectors": np.asarray(self._free_vectors, dtype=np.int64),
                "rooms": self._rooms[:rows].copy(),
                "users": self._users[:rows].copy(),
                "ts": self._ts[:rows].copy(),
                "rowids": self._rowids[:rows].copy(),
                "vector_of_row": self._vector_of_row[:rows].copy(),
                "free": np.asarray(self._free, dtype=np.int64),
                "grouped": np.asarray(min(self._grouped, vectors)),
                "room_names": np.asarray(list(self._room_codes), dtype=np.str_),
                "user_names": np.asarray(list(self._user_codes), dtype=np.str_),
            }

    @classmethod
    def from_state(cls, state: dict[str, npt.NDArray[Any]], *, exact: ExactVectors | None) -> VectorMatrix:
        """The matrix `state` was taken from.

        Raises:
            ValueError: the arrays do not fit together (a damaged or foreign snapshot), KeyError: one is missing.
        """
        matrix = cls(int(state["dimensions"]), exact=exact)
        codes = {name.removeprefix("codes."): v for name, v in state.items() if name.startswith("codes.")}
        matrix._codes = VectorCodes.from_state(matrix.dimensions, exact is not None, codes)
        matrix._keys = ContentKeys.from_state(state["keys.keys"], state["keys.key_vectors"])
        vectors = len(matrix._codes)
        per_vector = ("refs", "key_of_vector", "keyed", "rowid_of_vector")
        per_row = ("rooms", "users", "ts", "rowids", "vector_of_row")
        rows = len(state["rooms"])
        if any(len(state[name]) != vectors for name in per_vector) or any(
            len(state[name]) != rows for name in per_row
        ):
            raise ValueError("the vector snapshot's arrays differ in length")
        capacity_vectors, capacity_rows = (
            max(vectors, INITIAL_CAPACITY_ROWS),
            max(rows, INITIAL_CAPACITY_ROWS),
        )
        matrix._refs = _resized(state["refs"].astype(np.int32), capacity_vectors, 0)
        matrix._key_of_vector = _resized(state["key_of_vector"].astype(np.uint64), capacity_vectors, 0)
        matrix._keyed = _resized(state["keyed"].astype(np.bool_), capacity_vectors, False)
        matrix._rowid_of_vector = _resized(state["rowid_of_vector"].astype(np.int64), capacity_vectors, 0)
        matrix._free_vectors = [int(n) for n in state["free_vectors"]]
        matrix._rooms = _resized(state["rooms"].astype(np.int32), capacity_rows, _FREE)
        matrix._users = _resized(state["users"].astype(np.int32), capacity_rows, 0)
        matrix._ts = _resized(state["ts"].astype(np.int64), capacity_rows, 0)
        matrix._rowids = _resized(state["rowids"].astype(np.int64), capacity_rows, 0)
        matrix._vector_of_row = _resized(state["vector_of_row"].astype(np.int32), capacity_rows, 0)
        matrix._used = rows
        matrix._free = [int(n) for n in state["free"]]
        held = np.flatnonzero(matrix._rooms[:rows] != _FREE)
        rowids = matrix._rowids[held]
        if len(rowids) and (rowids.min() < 0 or vectors == 0 or matrix._vector_of_row[held].max() >= vectors):
            raise ValueError("the vector snapshot's rows point outside it")
        matrix._slot_of = np.full(
            max(int(rowids.max()) + 1 if len(rowids) else 0, INITIAL_CAPACITY_ROWS), _FREE, np.int32
        )
        matrix._slot_of[rowids] = held.astype(np.int32)
        matrix._count = len(held)
        matrix._grouped = int(state["grouped"]) if "grouped" in state else 0
        matrix._room_codes = {str(name): i for i, name in enumerate(state["room_names"])}
        matrix._user_codes = {str(name): i for i, name in enumerate(state["user_names"])}
        return matrix
