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
    rows_only = matrix.nbytes
    matrix.reserve(5000)
    # Rows are reserved (room, author, time, rowid, vector number: 28 bytes each), vectors are not:
    # how many distinct ones a load brings is known only once loaded.
    assert matrix.nbytes - rows_only == (5000 - INITIAL_CAPACITY_ROWS) * 28
    assert matrix.search(unit(1, 0, 0), VectorScope(ALL_OPEN), k=10) == before
    small = matrix.nbytes
    matrix.reserve(10)  # never shrinks
    assert matrix.nbytes == small


def test_rows_with_one_content_key_share_one_vector() -> None:
    m = VectorMatrix(3)
    m.upsert(1, unit(1, 0, 0), room="r1", user="a", ts_ms=1, key=b"thanks")
    m.upsert(2, None, room="r2", user="b", ts_ms=2, key=b"thanks")  # a held key needs no vector
    m.upsert(3, unit(0, 1, 0), room="r1", user="a", ts_ms=3, key=b"other")
    assert (len(m), m.distinct_vectors) == (3, 2)
    found = m.search(unit(1, 0, 0), VectorScope(frozenset({"r1", "r2"})), k=2)
    assert sorted(found) == [(1, pytest.approx(1.0)), (2, pytest.approx(1.0))]
    assert m.search(unit(1, 0, 0), VectorScope(frozenset({"r2"})), k=5) == [(2, pytest.approx(1.0))]
    # The shared vector stays while one row still points at it, and goes with the last.
    m.remove(1)
    assert m.holds(b"thanks") and m.distinct_vectors == 2
    m.remove(2)
    assert not m.holds(b"thanks") and m.distinct_vectors == 1
    assert m.vector_for(b"thanks") is None
    with pytest.raises(ValueError, match="vector is required"):
        m.upsert(4, None, room="r1", user="a", ts_ms=4, key=b"thanks")
    # A freed vector is reused, and no removed row comes back through it.
    before = m.nbytes
    m.upsert(5, unit(0, 0, 1), room="r1", user="a", ts_ms=5, key=b"new")
    assert m.nbytes == before
    assert [r for r, _ in m.search(unit(0, 0, 1), VectorScope(frozenset({"r1", "r2"})), k=5)] == [5, 3]


def test_a_row_moved_to_another_key_releases_the_old_vector() -> None:
    m = VectorMatrix(3)
    m.upsert(1, unit(1, 0, 0), room="r1", user="a", ts_ms=1, key=b"old")
    m.upsert(1, unit(0, 1, 0), room="r1", user="a", ts_ms=1, key=b"new")
    assert (len(m), m.distinct_vectors, m.holds(b"old")) == (1, 1, False)
    vector = m.vector_for(b"new")
    assert vector is not None and vector.tolist() == pytest.approx(unit(0, 1, 0).tolist())
    # Upserting a row again under its own key keeps the vector held.
    m.upsert(1, None, room="r2", user="a", ts_ms=1, key=b"new")
    assert m.holds(b"new") and m.search(unit(0, 1, 0), VectorScope(frozenset({"r2"})), k=1)[0][0] == 1
