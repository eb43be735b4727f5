"""The semantic branch's vectors as stored in memory: float32 while few, 4-bit codes once many.

At a million distinct messages the float32 vectors of the messages and of their conversations are
2.2 GB and one exact scan reads all of it (numpy has no faster path: int8 products take 3.5x the
time of float32 BLAS, float16 12x). So past `QUANTISE_MIN_VECTORS` vectors the store keeps a
scalar quantiser's codes instead (faiss ``IndexScalarQuantizer``, 4 bits per dimension: 192 bytes a
vector instead of 1,536) and scans only the vectors the caller's scope selects (an id bitmap, so a
small scope costs little and loses nothing: the scan is exhaustive over it). Scores from codes are
approximate; the caller re-scores the best candidates from the exact float16 vectors the index file
keeps (``VectorMatrix.search``). Below the threshold the vectors stay float32 and the scan is exact
numpy, which is also the reference the recall bench compares with.

Vector numbers are slots: ``append`` makes a new one, ``put`` overwrites one (a freed slot reused);
a freed slot's old contents stay until then and are never selected.

    codes = VectorCodes(384, quantise=True)
    number = codes.append(vector)
    numbers, scores = codes.scan(query, selected, count=120)   # selected: bool per vector number
"""

from __future__ import annotations

from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

__all__ = ["QUANTISE_MIN_VECTORS", "RANGE_MARGIN", "VectorCodes"]

# Vectors from which the store quantises (vectors): below it float32 costs little (3 MB at 2,000)
# and the exact scan is a fraction of a millisecond; from it the quantiser has enough vectors to
# learn each dimension's range from.
QUANTISE_MIN_VECTORS = 2000
# Share of each dimension's learnt range added on both sides (share): vectors embedded later may
# reach a little past what the first ones did; a value past the range is clipped, which costs
# approximate score only (the re-scoring is exact).
RANGE_MARGIN = 0.25
# Float32 rows allocated up front, and the growth factor when full (a quarter: doubling would hold
# up to half the matrix unused).
_INITIAL_VECTORS = 1024
_GROWTH_FACTOR = 1.25

Vector = npt.NDArray[np.float32]


def _one_thread_per_search() -> None:
    """Caps faiss's OpenMP and numpy's BLAS at one thread each, for the whole process.

    Several searches run at once on a small machine, and pool threads that spin while they wait
    cost more than they bring: OpenBLAS's two threads made a product of 1,400 x 384 float32 take
    8.5 ms instead of 0.1 ms (CPU, under load), and a hybrid search at 100k distinct messages used
    54 ms of CPU instead of 31 (docs/retrieval.md). Idempotent.
    """
    global _capped
    if _capped:
        return
    faiss.omp_set_num_threads(1)
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    threadpool_limits(limits=1, user_api="blas")
    _capped = True


_capped = False


def _grown(capacity: int, needed: int) -> int:
    return max(needed, int(capacity * _GROWTH_FACTOR))


class VectorCodes:
    """Numbered vectors, exact float32 or 4-bit codes, scanned for the best of a selection.

    Not thread-safe: the owner (``VectorMatrix``) holds the lock.
    """

    def __init__(self, dimensions: int, *, quantise: bool) -> None:
        self.dimensions = dimensions
        self._quantise = quantise
        self._floats: Vector | None = np.zeros((_INITIAL_VECTORS, dimensions), dtype=np.float32)
        self._codes: Any = None  # faiss.IndexScalarQuantizer once quantised
        self._used = 0
        _one_thread_per_search()

    def __len__(self) -> int:
        return self._used

    @property
    def quantised(self) -> bool:
        return self._codes is not None

    @property
    def nbytes(self) -> int:
        if self._codes is not None:
            return int(self._codes.ntotal * self._codes.code_size)
        assert self._floats is not None
        return int(self._floats.nbytes)

    def exact(self, number: int) -> Vector | None:
        """A copy of the float32 vector, or None once quantised (the codes are not the vector)."""
        if self._floats is None:
            return None
        copy: Vector = self._floats[number].copy()
        return copy

    def append(self, vector: Vector) -> int:
        number = self._used
        if self._codes is not None:
            self._codes.add(vector.reshape(1, -1))
        else:
            assert self._floats is not None
            if number == len(self._floats):
                grown = np.zeros((_grown(len(self._floats), number + 1), self.dimensions), dtype=np.float32)
                grown[:number] = self._floats
                self._floats = grown
            self._floats[number] = vector
        self._used += 1
        if self._codes is None and self._quantise and self._used >= QUANTISE_MIN_VECTORS:
            self._quantise_now()
        return number

    def put(self, number: int, vector: Vector) -> None:
        """Overwrite slot `number` (< len)."""
        if self._codes is None:
            assert self._floats is not None
            self._floats[number] = vector
            return
        code = self._codes.sa_encode(vector.reshape(1, -1))
        size = int(self._codes.code_size)
        view = faiss.rev_swig_ptr(self._codes.codes.data(), int(self._codes.ntotal) * size)
        view[number * size : (number + 1) * size] = code.reshape(-1)

    def permute(self, order: npt.NDArray[np.int64]) -> None:
        """Renumber the vectors: vector ``i`` becomes what vector ``order[i]`` was (`order` is a
        permutation of ``range(len(self))``)."""
        if self._codes is not None:
            size = int(self._codes.code_size)
            view = faiss.rev_swig_ptr(self._codes.codes.data(), self._used * size).reshape(self._used, size)
            view[:] = view[order]
        else:
            assert self._floats is not None
            self._floats[: self._used] = self._floats[: self._used][order]

    def _quantise_now(self) -> None:
        assert self._floats is not None
        floats = self._floats[: self._used]
        codes = faiss.IndexScalarQuantizer(
            self.dimensions, faiss.ScalarQuantizer.QT_4bit, faiss.METRIC_INNER_PRODUCT
        )
        codes.train(floats)
        # Trained ranges are [min; max - min] per dimension; widen each by the margin on both sides.
        trained = faiss.vector_to_array(codes.sq.trained).reshape(2, self.dimensions)
        low, span = trained[0], trained[1]
        widened = np.concatenate([low - RANGE_MARGIN * span, span * (1 + 2 * RANGE_MARGIN)])
        faiss.copy_array_to_vector(widened.astype(np.float32), codes.sq.trained)
        codes.add(floats)
        self._codes = codes
        self._floats = None

    def scan(
        self, query: Vector, selected: npt.NDArray[np.bool_], count: int
    ) -> tuple[npt.NDArray[np.int64], Vector]:
        """The `count` best selected vectors for `query`, best first: (numbers, scores).

        `selected` has one flag per vector number (len(self)). Scores are inner products: exact
        for float32, approximate from codes.
        """
        if count <= 0 or self._used == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if self._codes is None:
            assert self._floats is not None
            scores = self._floats[: self._used] @ query
            scores[~selected] = -np.inf
            top = (
                np.argpartition(-scores, count - 1)[:count] if count < len(scores) else np.arange(len(scores))
            )
            top = top[np.argsort(-scores[top], kind="stable")]
            keep = np.isfinite(scores[top])
            return top[keep].astype(np.int64), scores[top][keep]
        bitmap = np.packbits(selected, bitorder="little")
        params = faiss.SearchParameters()
        params.sel = faiss.IDSelectorBitmap(self._used, faiss.swig_ptr(bitmap))
        scores, numbers = self._codes.search(query.reshape(1, -1), count, params=params)
        keep = numbers[0] >= 0
        return numbers[0][keep].astype(np.int64), scores[0][keep].astype(np.float32)

    # -- a snapshot, for the index file's companion (index.py) ---------------------------------------

    def state(self) -> dict[str, npt.NDArray[Any]]:
        if self._codes is not None:
            return {"codes": faiss.serialize_index(self._codes), "used": np.asarray(self._used)}
        assert self._floats is not None
        return {"floats": self._floats[: self._used], "used": np.asarray(self._used)}

    @classmethod
    def from_state(cls, dimensions: int, quantise: bool, state: dict[str, npt.NDArray[Any]]) -> VectorCodes:
        store = cls(dimensions, quantise=quantise)
        used = int(state["used"])
        if "codes" in state:
            store._codes = faiss.deserialize_index(np.asarray(state["codes"], dtype=np.uint8))
            store._floats = None
            if int(store._codes.ntotal) != used or int(store._codes.d) != dimensions:
                raise ValueError("the vector codes do not match their snapshot")
        else:
            floats = np.asarray(state["floats"], dtype=np.float32)
            if floats.shape != (used, dimensions):
                raise ValueError("the vectors do not match their snapshot")
            store._floats = np.zeros((max(used, _INITIAL_VECTORS), dimensions), dtype=np.float32)
            store._floats[:used] = floats
        store._used = used
        return store
