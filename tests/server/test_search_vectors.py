"""The in-memory vector matrix: scope masks, top k, replace and remove (retrieval/vectors.py)."""

from __future__ import annotations

import numpy as np
import pytest

from ai_search_server.retrieval.embedder import normalise_rows
from ai_search_server.retrieval.vectors import INITIAL_CAPACITY_ROWS, VectorMatrix, VectorScope

DAY_MS = 86_400_000


def unit(*values: float) -> np.ndarray:
    return normalise_rows([list(values)])[0]


@pytest.fixture
def matrix() -> VectorMatrix:
    m = VectorMatrix(3)
    m.upsert(1, unit(1, 0, 0), room="r1", user="alice", ts_ms=1 * DAY_MS)
    m.upsert(2, unit(1, 1, 0), room="r1", user="Bob", ts_ms=2 * DAY_MS)
    m.upsert(3, unit(0, 1, 0), room="r2", user="alice", ts_ms=3 * DAY_MS)
    m.upsert(4, unit(1, 0, 0.1), room="secret", user="carol", ts_ms=4 * DAY_MS)
    return m


ALL_OPEN = frozenset({"r1", "r2"})


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        pytest.param(VectorScope(ALL_OPEN), [1, 2, 3], id="rooms-outside-the-scope-never-returned"),
        pytest.param(VectorScope(frozenset({"r2"})), [3], id="one-room"),
        pytest.param(VectorScope(frozenset({"nowhere"})), [], id="unknown-room-gives-nothing"),
        pytest.param(VectorScope(frozenset()), [], id="no-rooms-gives-nothing"),
        pytest.param(
            VectorScope(ALL_OPEN, users=frozenset({"bob"})), [2], id="author-matched-case-insensitively"
        ),
        pytest.param(VectorScope(ALL_OPEN, users=frozenset({"zed"})), [], id="unknown-author-gives-nothing"),
        pytest.param(VectorScope(ALL_OPEN, ts_min_ms=2 * DAY_MS), [2, 3], id="start-bound-inclusive"),
        pytest.param(VectorScope(ALL_OPEN, ts_max_ms=2 * DAY_MS), [1, 2], id="end-bound-inclusive"),
    ],
)
def test_search_respects_the_scope(matrix: VectorMatrix, scope: VectorScope, expected: list[int]) -> None:
    found = matrix.search(unit(1, 0, 0), scope, k=10)
    assert sorted(rowid for rowid, _ in found) == expected


def test_results_are_best_first_with_cosine_scores(matrix: VectorMatrix) -> None:
    found = matrix.search(unit(1, 0, 0), VectorScope(ALL_OPEN), k=10)
    assert [rowid for rowid, _ in found] == [1, 2, 3]
    assert [round(score, 4) for _, score in found] == [1.0, 0.7071, 0.0]


@pytest.mark.parametrize(
    ("k", "minimum", "expected"),
    [
        pytest.param(1, -1.0, [1], id="k-cuts-the-list"),
        pytest.param(0, -1.0, [], id="k-zero-gives-nothing"),
        pytest.param(10, 0.5, [1, 2], id="below-minimum-similarity-left-out"),
    ],
)
def test_k_and_minimum(matrix: VectorMatrix, k: int, minimum: float, expected: list[int]) -> None:
    found = matrix.search(unit(1, 0, 0), VectorScope(ALL_OPEN), k=k, min_similarity=minimum)
    assert [rowid for rowid, _ in found] == expected


def test_upsert_replaces_vector_and_filter_fields(matrix: VectorMatrix) -> None:
    matrix.upsert(1, unit(0, 0, 1), room="r2", user="dave", ts_ms=9)
    assert len(matrix) == 4
    assert matrix.search(unit(0, 0, 1), VectorScope(frozenset({"r1"})), k=1)[0][0] == 2
    assert matrix.search(unit(0, 0, 1), VectorScope(frozenset({"r2"}), users=frozenset({"dave"})), k=5) == [
        (1, pytest.approx(1.0))
    ]


def test_removed_rows_never_come_back_and_slots_are_reused(matrix: VectorMatrix) -> None:
    assert matrix.remove(1) is True
    assert matrix.remove(1) is False
    assert 1 not in matrix
    assert [r for r, _ in matrix.search(unit(1, 0, 0), VectorScope(ALL_OPEN), k=10)] == [2, 3]
    before = matrix.nbytes
    matrix.upsert(5, unit(1, 0, 0), room="r1", user="alice", ts_ms=0)
    assert matrix.nbytes == before
    assert [r for r, _ in matrix.search(unit(1, 0, 0), VectorScope(ALL_OPEN), k=1)] == [5]


def test_grows_past_its_initial_capacity() -> None:
    m = VectorMatrix(2)
    count = INITIAL_CAPACITY_ROWS * 2 + 5
    for rowid in range(count):
        m.upsert(rowid, unit(1, rowid / count), room="r", user="u", ts_ms=rowid)
    assert len(m) == count
    assert m.search(unit(1, 0), VectorScope(frozenset({"r"})), k=1)[0][0] == 0
    assert m.search(unit(1, 0), VectorScope(frozenset({"r"}), ts_min_ms=count - 1), k=5)[0][0] == count - 1


@pytest.mark.parametrize(
    "vector", [pytest.param([1.0, 0.0], id="too-short"), pytest.param([1.0, 0, 0, 0], id="too-long")]
)
def test_wrong_dimensions_are_refused(matrix: VectorMatrix, vector: list[float]) -> None:
    with pytest.raises(ValueError, match="3 values"):
        matrix.upsert(9, vector, room="r1", user="a", ts_ms=0)
    with pytest.raises(ValueError, match="3 values"):
        matrix.search(vector, VectorScope(ALL_OPEN), k=1)


@pytest.mark.parametrize(
    ("rows", "norms"),
    [
        pytest.param([[3.0, 4.0]], [1.0], id="scaled-to-unit-length"),
        pytest.param([[0.0, 0.0]], [0.0], id="zero-row-stays-zero"),
        pytest.param([[1.0, 0.0], [0.0, 2.0]], [1.0, 1.0], id="each-row-on-its-own"),
    ],
)
def test_normalise_rows(rows: list[list[float]], norms: list[float]) -> None:
    out = normalise_rows(rows)
    assert out.dtype == np.float32
    assert np.linalg.norm(out, axis=1).round(6).tolist() == norms


def test_reserve_makes_room_without_changing_results(matrix: VectorMatrix) -> None:
    before = matrix.search(unit(1, 0, 0), VectorScope(ALL_OPEN), k=10)
    matrix.reserve(5000)
    assert matrix.nbytes >= 5000 * 3 * 4
    assert matrix.search(unit(1, 0, 0), VectorScope(ALL_OPEN), k=10) == before
    small = matrix.nbytes
    matrix.reserve(10)  # never shrinks
    assert matrix.nbytes == small
