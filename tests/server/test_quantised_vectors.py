"""Quantised vectors (retrieval/vector_codes.py, vectors.py, content_keys.py, vector_snapshot.py):
recall against the exact scan, exact scores, scope and edits, the content-key map, the snapshot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ai_search_server.retrieval import content_keys
from ai_search_server.retrieval.content_keys import ContentKeys
from ai_search_server.retrieval.index import INDEX_FILENAME
from ai_search_server.retrieval.vector_codes import QUANTISE_MIN_VECTORS
from ai_search_server.retrieval.vector_snapshot import snapshot_path
from ai_search_server.retrieval.vectors import ExactVectors, VectorMatrix, VectorScope
from ai_search_server.store.base import Store

from ._search_support import EMBED_WAIT_SECONDS, HashingEmbedder, open_test_index
from .conftest import Workspace

DIMENSIONS = 64
ROWS = QUANTISE_MIN_VECTORS + 1000
ROOMS = ["big", "mid", "small"]


def unit_rows(rng: np.random.Generator, count: int) -> np.ndarray:
    rows = rng.standard_normal((count, DIMENSIONS)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


class Disk:
    """Stands for the index file's float16 vectors, and counts the rows read back from it."""

    def __init__(self) -> None:
        self.vectors: dict[int, np.ndarray] = {}
        self.reads = 0

    def read(self, rowids: object) -> dict[int, np.ndarray]:
        wanted = list(rowids)  # type: ignore[call-overload]
        self.reads += len(wanted)
        return {r: self.vectors[r] for r in wanted if r in self.vectors}


def filled(disk: Disk, seed: int = 1) -> tuple[VectorMatrix, VectorMatrix, np.ndarray, list[str]]:
    """The same rows in a quantised matrix (re-scoring from `disk`) and an exact one."""
    rng = np.random.default_rng(seed)
    vectors = unit_rows(rng, ROWS).astype(np.float16).astype(np.float32)
    rooms = [ROOMS[0] if n % 10 < 7 else ROOMS[1] if n % 10 < 9 else ROOMS[2] for n in range(ROWS)]
    exact_reader: ExactVectors = disk.read
    quantised, exact = VectorMatrix(DIMENSIONS, exact=exact_reader), VectorMatrix(DIMENSIONS)
    for rowid, (vector, room) in enumerate(zip(vectors, rooms, strict=True)):
        disk.vectors[rowid] = vector
        for matrix in (quantised, exact):
            matrix.upsert(rowid, vector, room=room, user=f"u{rowid % 7}", ts_ms=rowid)
    return quantised, exact, vectors, rooms


@pytest.mark.parametrize(
    "scope",
    [
        pytest.param(VectorScope(frozenset(ROOMS)), id="every-room"),
        pytest.param(VectorScope(frozenset({"big"})), id="the-largest-room"),
        pytest.param(VectorScope(frozenset({"small"})), id="a-small-room"),
        pytest.param(VectorScope(frozenset(ROOMS), users=frozenset({"u3"})), id="one-author"),
        pytest.param(VectorScope(frozenset(ROOMS), ts_min_ms=ROWS - 400), id="a-time-window"),
    ],
)
def test_quantised_search_finds_what_the_exact_scan_finds(scope: VectorScope) -> None:
    disk = Disk()
    quantised, exact, vectors, _rooms = filled(disk)
    assert quantised.quantised and not exact.quantised
    queries = unit_rows(np.random.default_rng(9), 30)
    found = 0
    for query in queries:
        ours = quantised.search(query, scope, k=10)
        truth = exact.search(query, scope, k=10)
        found += len({r for r, _ in ours} & {r for r, _ in truth})
        # Scores are the exact ones, re-read from "disk", not the codes' approximation.
        for rowid, score in ours:
            assert score == pytest.approx(float(vectors[rowid] @ query), abs=1e-5)
    # Random vectors are the hardest case (the tenth best barely above the rest); real ones do better.
    assert found / (10 * len(queries)) >= 0.95


def test_quantised_rows_follow_edits_removals_and_room_moves() -> None:
    disk = Disk()
    quantised, _exact, vectors, _rooms = filled(disk)
    query = vectors[5]
    assert quantised.search(query, VectorScope(frozenset({"big"})), k=1)[0][0] == 5
    quantised.upsert(5, vectors[5], room="small", user="u0", ts_ms=5)  # moved to another room
    assert 5 not in {r for r, _ in quantised.search(query, VectorScope(frozenset({"big"})), k=20)}
    assert quantised.search(query, VectorScope(frozenset({"small"})), k=1)[0][0] == 5
    assert quantised.remove(5)
    assert 5 not in {r for r, _ in quantised.search(query, VectorScope(frozenset(ROOMS)), k=50)}
    # A new vector takes the freed slot and is found by its own meaning.
    fresh = unit_rows(np.random.default_rng(3), 1)[0]
    disk.vectors[ROWS + 1] = fresh
    quantised.upsert(ROWS + 1, fresh, room="mid", user="u1", ts_ms=0)
    assert quantised.search(fresh, VectorScope(frozenset({"mid"})), k=1)[0] == (ROWS + 1, pytest.approx(1.0))


def test_a_shared_vector_is_read_back_exactly_once_quantised() -> None:
    disk = Disk()
    quantised, _exact, vectors, _rooms = filled(disk)
    quantised.upsert(ROWS + 1, vectors[0], room="mid", user="u1", ts_ms=1, key=b"thanks-key-0001")
    quantised.upsert(ROWS + 2, None, room="big", user="u2", ts_ms=2, key=b"thanks-key-0001")
    disk.vectors[ROWS + 1] = disk.vectors[ROWS + 2] = vectors[0]
    held = quantised.vector_for(b"thanks-key-0001")
    assert held is not None and held.tolist() == pytest.approx(vectors[0].tolist())
    # The row standing for the shared vector leaves: another holder stands for it.
    quantised.remove(ROWS + 1)
    del disk.vectors[ROWS + 1]
    held = quantised.vector_for(b"thanks-key-0001")
    assert held is not None and held.tolist() == pytest.approx(vectors[0].tolist())
    assert (ROWS + 2) in {r for r, _ in quantised.search(vectors[0], VectorScope(frozenset({"big"})), k=3)}


@pytest.mark.parametrize(
    "scope",
    [
        pytest.param(VectorScope(frozenset(ROOMS)), id="every-room"),
        pytest.param(VectorScope(frozenset({"mid"})), id="one-room"),
        pytest.param(VectorScope(frozenset({"big", "small"}), users=frozenset({"u2"})), id="rooms-and-author"),
        pytest.param(VectorScope(frozenset({"small"}), ts_min_ms=ROWS // 2), id="a-room-and-a-window"),
    ],
)
def test_grouping_the_vectors_by_room_changes_no_result(scope: VectorScope) -> None:
    disk = Disk()
    quantised, _exact, vectors, _rooms = filled(disk)
    # Shared and freed vectors too: a key held in two rooms, a row gone, a row moved.
    quantised.upsert(ROWS + 1, vectors[3], room="small", user="u2", ts_ms=ROWS, key=b"shared-key-00001")
    quantised.upsert(ROWS + 2, None, room="big", user="u2", ts_ms=ROWS, key=b"shared-key-00001")
    disk.vectors[ROWS + 1] = disk.vectors[ROWS + 2] = vectors[3]
    quantised.remove(11)
    quantised.upsert(12, vectors[12], room="small", user="u2", ts_ms=ROWS)
    queries = unit_rows(np.random.default_rng(6), 12)
    before = [quantised.search(query, scope, k=10) for query in queries]
    assert quantised.scattered_share > 0
    quantised.group_by_room()
    assert quantised.scattered_share == 0
    assert [quantised.search(query, scope, k=10) for query in queries] == before
    held = quantised.vector_for(b"shared-key-00001")
    assert held is not None and held.tolist() == pytest.approx(vectors[3].tolist())
    # Edits after grouping land where they should, and a snapshot keeps the order.
    fresh = unit_rows(np.random.default_rng(8), 1)[0]
    disk.vectors[ROWS + 3] = fresh
    quantised.upsert(ROWS + 3, fresh, room="mid", user="u1", ts_ms=0)
    assert quantised.remove(ROWS + 1)
    assert quantised.search(fresh, VectorScope(frozenset({"mid"})), k=1)[0] == (ROWS + 3, pytest.approx(1.0))
    assert (ROWS + 2) in {r for r, _ in quantised.search(vectors[3], VectorScope(frozenset({"big"})), k=3)}
    copy = VectorMatrix.from_state(quantised.state(), exact=disk.read)
    assert copy.scattered_share == quantised.scattered_share
    for query in queries:
        assert copy.search(query, scope, k=10) == quantised.search(query, scope, k=10)


def test_candidates_re_read_per_search_are_bounded() -> None:
    disk = Disk()
    quantised, _exact, _vectors, _rooms = filled(disk)
    disk.reads = 0
    quantised.search(unit_rows(np.random.default_rng(4), 1)[0], VectorScope(frozenset(ROOMS)), k=10)
    assert 0 < disk.reads <= 100  # rescore_candidates(10): not every vector of the scope


def test_a_snapshot_gives_back_the_same_matrix() -> None:
    disk = Disk()
    quantised, _exact, _vectors, _rooms = filled(disk)
    quantised.remove(7)
    copy = VectorMatrix.from_state(quantised.state(), exact=disk.read)
    assert (len(copy), copy.distinct_vectors, copy.quantised) == (
        len(quantised),
        quantised.distinct_vectors,
        True,
    )
    for query in unit_rows(np.random.default_rng(5), 5):
        scope = VectorScope(frozenset({"big", "small"}), ts_max_ms=ROWS - 100)
        assert copy.search(query, scope, k=10) == quantised.search(query, scope, k=10)
    assert 7 not in copy and 8 in copy
    broken = quantised.state()
    broken["rooms"] = broken["rooms"][:-5]
    with pytest.raises(ValueError, match="differ in length"):
        VectorMatrix.from_state(broken, exact=disk.read)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 40), st.integers(0, 1000)), max_size=120))
def test_content_keys_behave_as_a_dict(steps: list[tuple[bool, int, int]]) -> None:
    original = content_keys.MERGE_ENTRIES
    content_keys.MERGE_ENTRIES = 4  # merge often: the sorted arrays carry most entries
    try:
        keys, model = ContentKeys(), {}
        for is_set, number, value in steps:
            if is_set:
                keys.set(number, value)
                model[number] = value
            else:
                keys.delete(number)
                model.pop(number, None)
            assert len(keys) == len(model)
        assert all(keys.get(n) == model.get(n) for n in range(41))
        saved = keys.state()
        again = ContentKeys.from_state(saved["keys"], saved["key_vectors"])
        assert all(again.get(n) == model.get(n) for n in range(41))
    finally:
        content_keys.MERGE_ENTRIES = original


def test_the_index_reopens_from_its_snapshot_and_rebuilds_a_stale_one(
    workspace: Workspace, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store: Store = workspace.store
    first = open_test_index(store, data_dir)
    assert first.wait_until_embedded(EMBED_WAIT_SECONDS)
    first.close()
    snapshot = snapshot_path(data_dir / INDEX_FILENAME)
    assert snapshot.exists()
    general = workspace.rooms["general"].id
    query_text = workspace.messages["general-1"].text

    # Current snapshot: the vectors are not read back from the index file.
    from ai_search_server.retrieval.index_db import IndexDatabase

    real_load = IndexDatabase.load_vectors

    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError("the vectors were rebuilt although the snapshot is current")

    monkeypatch.setattr(IndexDatabase, "load_vectors", refuse)
    second = open_test_index(store, data_dir)
    try:
        assert second.vector_count == len(workspace.messages)
        hits = second.semantic_search(
            second.embed_query(query_text), VectorScope(frozenset({general})), 1, 0.5
        )
        assert [second.rows([r])[r].msg_id for r, _ in hits] == [workspace.messages["general-1"].id]
    finally:
        second.close()

    # A write while closed (an edit) makes the snapshot stale: the matrices are rebuilt from the file.
    monkeypatch.setattr(IndexDatabase, "load_vectors", real_load)
    store.edit_message(workspace.messages["general-1"].id, "the office wifi password changed today")
    rebuilt = []
    monkeypatch.setattr(
        IndexDatabase,
        "load_vectors",
        lambda self, *a, **k: (rebuilt.append(1), real_load(self, *a, **k))[1],
    )
    third = open_test_index(store, data_dir)
    try:
        assert rebuilt
        assert third.wait_until_embedded(EMBED_WAIT_SECONDS)
        hits = third.semantic_search(
            third.embed_query(query_text), VectorScope(frozenset({general})), 5, 0.99
        )
        assert workspace.messages["general-1"].id not in {third.rows([r])[r].msg_id for r, _ in hits}
    finally:
        third.close()


def test_a_damaged_snapshot_is_rebuilt(workspace: Workspace, data_dir: Path) -> None:
    first = open_test_index(workspace.store, data_dir)
    assert first.wait_until_embedded(EMBED_WAIT_SECONDS)
    first.close()
    snapshot_path(data_dir / INDEX_FILENAME).write_bytes(b"not a snapshot")
    embedder = HashingEmbedder()
    second = open_test_index(workspace.store, data_dir, embedder)
    try:
        assert second.vector_count == len(workspace.messages)
        assert embedder.texts_embedded == 0  # rebuilt from the stored vectors, nothing embedded again
    finally:
        second.close()
