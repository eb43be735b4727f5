"""The local second stage: vectors filled in the background, read by message id, kept honest on edits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.second_stage import Passage, StageCoverage
from ai_search_server.retrieval.second_stage.local import (
    STAGE_VECTORS_FILENAME,
    LocalStage,
    dequantise,
    quantise,
)

from ._search_support import EMBED_WAIT_SECONDS, HashingEmbedder, open_test_index
from .conftest import Workspace


@pytest.fixture
def index(workspace: Workspace, data_dir: Path) -> Iterator[EmbeddedIndex]:
    opened = open_test_index(workspace.store, data_dir)
    assert opened.wait_until_embedded(EMBED_WAIT_SECONDS)
    yield opened
    opened.close()


@pytest.fixture
def stage(workspace: Workspace, index: EmbeddedIndex, data_dir: Path) -> Iterator[LocalStage]:
    """The local stage over the test index, with the hashing embedder as its model; closed after."""
    opened = open_stage(workspace, data_dir)
    yield opened
    opened.close()


def open_stage(workspace: Workspace, data_dir: Path, model_id: str = "test:stage-hashing") -> LocalStage:
    return LocalStage.open(HashingEmbedder(model_id), workspace.store, data_dir, data_dir / INDEX_FILENAME)


def test_quantised_vectors_keep_their_direction() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        v = rng.normal(size=768).astype(np.float32)
        v /= np.linalg.norm(v)
        back = dequantise(quantise(v))
        assert len(quantise(v)) == 4 + 768
        assert float(back @ v) / float(np.linalg.norm(back)) > 0.9999


def test_the_backfill_covers_every_message_then_scores_them(
    workspace: Workspace, index: EmbeddedIndex, data_dir: Path, stage: LocalStage
) -> None:
    total = len(workspace.messages)
    assert stage.coverage() == StageCoverage(0, total)
    assert (
        stage.score_now("deploy failed", [Passage(m.id, m.text) for m in workspace.messages.values()])
        == {}
    )
    stage.run_backfill(until_done=True)
    assert stage.coverage() == StageCoverage(total, total)
    assert (data_dir / STAGE_VECTORS_FILENAME).exists()
    failed = workspace.messages["ops-3"]
    scores = stage.score_now(
        "deploy failed", [Passage(m.id, m.text) for m in workspace.messages.values()]
    )
    assert set(scores) == {m.id for m in workspace.messages.values()}
    expected = float(
        HashingEmbedder().embed([failed.text])[0] @ HashingEmbedder().embed(["deploy failed"])[0]
    )
    assert scores[failed.id] == pytest.approx(expected, abs=0.01)
    assert max(scores, key=scores.__getitem__) == failed.id


def test_an_edited_message_is_not_scored_until_its_vectors_are_made_again(
    workspace: Workspace, index: EmbeddedIndex, data_dir: Path, stage: LocalStage
) -> None:
    stage.run_backfill(until_done=True)
    edited = workspace.messages["general-2"]
    workspace.store.edit_message(edited.id, "payroll vacation schedule")
    assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
    assert edited.id not in stage.score_now("payroll", [Passage(edited.id, "payroll vacation schedule")])
    assert stage.vectors.counts().scored == len(workspace.messages) - 1
    stage.run_backfill(until_done=True)
    scores = stage.score_now("holiday payroll", [Passage(edited.id, "payroll vacation schedule")])
    assert scores[edited.id] > 0.5


def test_a_deleted_message_is_never_scored(
    workspace: Workspace, index: EmbeddedIndex, data_dir: Path, stage: LocalStage
) -> None:
    stage.run_backfill(until_done=True)
    gone = workspace.messages["dm-6"]
    workspace.store.delete_message(gone.id)
    assert stage.score_now("lunch", [Passage(gone.id, gone.text)]) == {}


def test_a_new_model_starts_its_vectors_over(
    workspace: Workspace, index: EmbeddedIndex, data_dir: Path
) -> None:
    first = open_stage(workspace, data_dir)
    first.run_backfill(until_done=True)
    first.close()
    again = open_stage(workspace, data_dir)
    assert again.coverage().scored == len(workspace.messages)
    again.close()
    other = open_stage(workspace, data_dir, model_id="test:another-model")
    try:
        assert other.coverage().scored == 0
    finally:
        other.close()


def test_the_background_thread_fills_vectors_and_stops_on_close(
    workspace: Workspace, index: EmbeddedIndex, data_dir: Path
) -> None:
    import time

    stage = open_stage(workspace, data_dir)
    stage.start()
    deadline = time.monotonic() + EMBED_WAIT_SECONDS
    while stage.coverage().ratio < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stage.coverage().ratio == 1
    stage.close()
    assert stage._thread is None


def test_a_deferred_stage_scores_nothing_until_its_model_has_loaded(
    workspace: Workspace, index: EmbeddedIndex, data_dir: Path
) -> None:
    import asyncio
    import threading

    from ai_search_server.retrieval.embedder import EmbedderUnavailable
    from ai_search_server.retrieval.second_stage.local import DeferredStage

    gate = threading.Event()

    def load() -> LocalStage:
        gate.wait(EMBED_WAIT_SECONDS)
        return open_stage(workspace, data_dir)

    stage = DeferredStage(load, model_id="test:stage-hashing", index_path=data_dir / INDEX_FILENAME)
    stage.start()
    passages = [Passage(m.id, m.text) for m in workspace.messages.values()]
    try:
        assert asyncio.run(stage.score("deploy failed", passages)) == {}
        assert stage.coverage() == StageCoverage(0, len(workspace.messages))
        gate.set()
        assert stage.wait_until_loaded(EMBED_WAIT_SECONDS) and stage.stage is not None
        stage.stage.run_backfill(until_done=True)
        assert len(asyncio.run(stage.score("deploy failed", passages))) == len(passages)
    finally:
        stage.close()

    def broken() -> LocalStage:
        raise EmbedderUnavailable("all-mpnet-base-v2 is not installed: run scripts/setup")

    failed = DeferredStage(broken, model_id="test:stage-hashing", index_path=data_dir / INDEX_FILENAME)
    failed.start()
    assert failed.wait_until_loaded(EMBED_WAIT_SECONDS)
    assert failed.stage is None and "not installed" in (failed.last_error or "")
    assert asyncio.run(failed.score("deploy", passages)) == {}
    failed.close()
