"""The embedded index follows the store: posts, edits, deletes, imports, restarts, model changes."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.index_db import INDEX_SCHEMA_VERSION, KeywordScope
from ai_search_server.retrieval.terms import query_terms
from ai_search_server.retrieval.vectors import VectorScope
from ai_search_server.store import ImportRow
from ai_search_server.store.base import Store

from ._search_support import EMBED_WAIT_SECONDS, FailingEmbedder, HashingEmbedder, open_test_index
from .conftest import Workspace


def keyword_ids(index: EmbeddedIndex, query: str, rooms: list[str]) -> set[str]:
    hits = index.keyword_search(query_terms(query), KeywordScope(rooms), 50)
    return {hit.msg_id for hit in hits}


def semantic_ids(index: EmbeddedIndex, query: str, rooms: list[str], minimum: float = 0.5) -> set[str]:
    hits = index.semantic_search(index.embed_query(query), VectorScope(frozenset(rooms)), 50, minimum)
    return {row.msg_id for row in index.rows([rowid for rowid, _ in hits]).values()}


@pytest.fixture
def index(workspace: Workspace, data_dir: Path) -> Iterator[EmbeddedIndex]:
    opened = open_test_index(workspace.store, data_dir)
    assert opened.wait_until_embedded(EMBED_WAIT_SECONDS)
    yield opened
    opened.close()


def test_catch_up_indexes_every_stored_message(workspace: Workspace, index: EmbeddedIndex) -> None:
    assert index.db.count() == len(workspace.messages)
    assert index.vector_count == len(workspace.messages)
    ops = workspace.rooms["ops"].id
    assert keyword_ids(index, "deploy", [ops]) == {workspace.messages["ops-3"].id}


def test_a_posted_message_is_found_by_keyword_as_soon_as_post_returns(
    workspace: Workspace, index: EmbeddedIndex
) -> None:
    general = workspace.rooms["general"].id
    message = workspace.store.post_message(general, workspace["alice"].user.id, "kubernetes upgrade tonight")
    # No wait: keyword indexing happens inside the store's listener.
    assert keyword_ids(index, "kubernetes", [general]) == {message.id}
    assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
    assert message.id in semantic_ids(index, "kubernetes upgrade tonight", [general])


def test_an_edit_replaces_words_and_meaning(workspace: Workspace, index: EmbeddedIndex) -> None:
    general = workspace.rooms["general"].id
    original = workspace.messages["general-2"]  # "the deploy went fine today"
    workspace.store.edit_message(original.id, "payroll vacation schedule")
    assert keyword_ids(index, "deploy", [general]) == set()
    assert keyword_ids(index, "payroll", [general]) == {original.id}
    assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
    assert original.id in semantic_ids(index, "holiday payroll", [general])
    assert original.id not in semantic_ids(index, "the deploy went fine today", [general], minimum=0.9)


@pytest.mark.parametrize(
    ("text", "query", "edited"),
    [
        pytest.param("好的，老化测试是 48 小时", "老化测试", "明天发货", id="chinese-word-inside-a-run"),
        pytest.param(
            "認証機関は TELEC で、技適番号は3月末", "技適", "了解です", id="japanese-word-inside-a-run"
        ),
        pytest.param(
            "APNs returns InvalidProviderToken", "provider token", "all good now", id="camel-case-parts"
        ),
        pytest.param(
            "see pgbouncer.ini on db-proxy-1", "pgbouncer", "see the wiki", id="word-inside-a-file-name"
        ),
    ],
)
def test_words_inside_runs_and_identifiers_are_found_and_follow_edits(
    workspace: Workspace, index: EmbeddedIndex, text: str, query: str, edited: str
) -> None:
    general = workspace.rooms["general"].id
    message = workspace.store.post_message(general, workspace["alice"].user.id, text)
    assert keyword_ids(index, query, [general]) == {message.id}
    workspace.store.edit_message(message.id, edited)
    assert keyword_ids(index, query, [general]) == set()
    assert message.id in keyword_ids(index, edited, [general])
    workspace.store.delete_message(message.id)
    assert message.id not in keyword_ids(index, edited, [general])


def test_a_deleted_message_leaves_both_indexes(workspace: Workspace, index: EmbeddedIndex) -> None:
    ops = workspace.rooms["ops"].id
    doomed = workspace.messages["ops-3"]
    workspace.store.delete_message(doomed.id)
    assert keyword_ids(index, "billing", [ops]) == set()
    assert doomed.id not in semantic_ids(index, doomed.text, [ops], minimum=-1.0)
    assert index.db.count() == len(workspace.messages) - 1


def test_imported_messages_are_indexed(workspace: Workspace, index: EmbeddedIndex) -> None:
    rows = [
        ImportRow(
            "imported",
            "c",
            "alice",
            datetime(2026, 11, 2, tzinfo=UTC),
            f"terraform plan number {n}",
            f"imp-{n}",
        )
        for n in range(30)
    ]
    workspace.store.import_messages(rows)
    room = workspace.store.get_room_by_name("imported")
    assert room is not None
    assert len(keyword_ids(index, "terraform", [room.id])) == 30
    assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
    assert index.vector_count == len(workspace.messages) + 30


def test_reopening_catches_up_with_changes_made_while_closed(workspace: Workspace, data_dir: Path) -> None:
    store: Store = workspace.store
    first = open_test_index(store, data_dir)
    assert first.wait_until_embedded(EMBED_WAIT_SECONDS)
    first.close()
    general, ops = workspace.rooms["general"].id, workspace.rooms["ops"].id
    store.edit_message(workspace.messages["general-1"].id, "welcome aboard, grafana dashboards are here")
    store.delete_message(workspace.messages["ops-4"].id)
    added = store.post_message(ops, workspace["carol"].user.id, "grafana alert fired")
    embedder = HashingEmbedder()
    second = open_test_index(store, data_dir, embedder)
    try:
        assert keyword_ids(second, "grafana", [general, ops]) == {
            workspace.messages["general-1"].id,
            added.id,
        }
        assert keyword_ids(second, "rolling", [ops]) == set()
        assert second.wait_until_embedded(EMBED_WAIT_SECONDS)
        # Only the edited and the new message needed a vector: the rest were read from disk.
        assert embedder.texts_embedded == 2
        assert second.vector_count == len(workspace.messages)
    finally:
        second.close()


def test_a_new_embedder_re_embeds_everything(workspace: Workspace, data_dir: Path) -> None:
    open_test_index(workspace.store, data_dir).close()
    other = HashingEmbedder(model_id="test:another-model")
    index = open_test_index(workspace.store, data_dir, other)
    try:
        assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
        # Each message once, and with its conversation those that follow one within the window:
        # general-2, ops-4 and dm-7 come a minute after another message of their room.
        assert index.embedded_contexts == 3
        assert other.texts_embedded == len(workspace.messages) + 3
    finally:
        index.close()


def test_a_failing_embedder_keeps_keyword_search_and_retries(workspace: Workspace, data_dir: Path) -> None:
    embedder = FailingEmbedder()
    index = open_test_index(workspace.store, data_dir, embedder)
    try:
        assert not index.wait_until_embedded(0.3)
        assert index.pending_embeddings == len(workspace.messages)
        assert index.last_embed_error == "the test embedder is told to fail"
        assert keyword_ids(index, "deploy", [workspace.rooms["ops"].id]) == {workspace.messages["ops-3"].id}
        embedder.failing = False
        assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
        assert index.vector_count == len(workspace.messages)
    finally:
        index.close()


def test_without_an_embedder_the_index_is_keyword_only(workspace: Workspace, data_dir: Path) -> None:
    index = open_test_index(workspace.store, data_dir, embedder=False)
    try:
        assert index.semantic_available is False
        assert index.pending_embeddings == 0
        assert keyword_ids(index, "lunch", [workspace.rooms["dm"].id]) == {workspace.messages["dm-6"].id}
    finally:
        index.close()


def test_keyword_hits_matching_more_of_the_query_weight_come_first(
    workspace: Workspace, index: EmbeddedIndex
) -> None:
    general = workspace.rooms["general"].id
    alice = workspace["alice"].user.id
    for n in range(20):  # messages sharing only stopwords with the query ("why was the")
        workspace.store.post_message(general, alice, f"the weather was fine on day {n}")
    short = workspace.store.post_message(general, alice, "slow, it was")
    long = workspace.store.post_message(
        general, alice, "the checkout page was slow for a whole month after the release"
    )
    hits = index.keyword_search(
        query_terms("why was the checkout slow last month"), KeywordScope([general]), 5
    )
    assert [h.msg_id for h in hits] == [long.id, short.id], "stopwords alone never make a hit"
    assert hits[0].coverage > hits[1].coverage > 0


def test_common_words_are_not_searched_in_a_large_index(
    workspace: Workspace, index: EmbeddedIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ai_search_server.retrieval.index as index_module

    monkeypatch.setattr(index_module, "COMMON_TERM_MIN_DOCUMENTS", 10)
    general = workspace.rooms["general"].id
    alice = workspace["alice"].user.id
    for n in range(20):
        workspace.store.post_message(general, alice, f"the weather was fine on day {n}")
    wanted = workspace.store.post_message(general, alice, "the checkout was slow")
    hits = index.keyword_search(query_terms("weather checkout nowhereword"), KeywordScope([general]), 50)
    # "weather" is in most messages: left out, so messages holding only "weather" are not hits; a word
    # no message holds ("nowhereword") does not count as the rarer term that would replace it.
    assert [h.msg_id for h in hits] == [wanted.id]
    only_common = index.keyword_search(query_terms("weather nowhereword"), KeywordScope([general]), 50)
    assert len(only_common) == 20


# What another process does to the workspace (it shares the files, not this process's listeners).
def _post(other: Store, ws: Workspace) -> tuple[str, str, bool]:
    added = other.post_message(ws.rooms["ops"].id, ws["alice"].user.id, "zookeeper quorum lost")
    return added.id, "zookeeper", True


def _edit(other: Store, ws: Workspace) -> tuple[str, str, bool]:
    edited = other.edit_message(ws.messages["ops-3"].id, "zookeeper quorum lost")
    return edited.id, "zookeeper", True


def _delete(other: Store, ws: Workspace) -> tuple[str, str, bool]:
    doomed = ws.messages["ops-3"]
    other.delete_message(doomed.id)
    return doomed.id, "billing", False


def _import(other: Store, ws: Workspace) -> tuple[str, str, bool]:
    row = ImportRow("ops", "c", "alice", datetime(2026, 11, 5, tzinfo=UTC), "zookeeper quorum lost", "imp-1")
    other.import_messages([row])
    return "imp-1", "zookeeper", True


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(_post, id="posted"),
        pytest.param(_edit, id="edited"),
        pytest.param(_delete, id="deleted"),
        pytest.param(_import, id="imported"),
    ],
)
def test_writes_by_another_process_reach_both_indexes(
    workspace: Workspace, index: EmbeddedIndex, data_dir: Path, open_workspace: Callable[[Path], Store], write: Any
) -> None:
    other = open_workspace(data_dir)  # another process's store: its writes reach no listener here
    try:
        msg_id, word, present = write(other, workspace)
    finally:
        other.close()
    ops = workspace.rooms["ops"].id
    assert (msg_id in keyword_ids(index, word, [ops])) is not present  # not heard yet
    assert index.follow_once() is False  # one batch held every change
    assert index.applied_change == workspace.store.latest_message_change()
    assert (msg_id in keyword_ids(index, word, [ops])) is present
    assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
    assert (msg_id in semantic_ids(index, "zookeeper quorum lost", [ops], minimum=0.9)) is present
    assert index.follow_once() is False  # level: nothing more to apply


def test_the_follower_thread_applies_another_process_s_writes_by_itself(
    workspace: Workspace, index: EmbeddedIndex, data_dir: Path, open_workspace: Callable[[Path], Store]
) -> None:
    other = open_workspace(data_dir)
    try:
        _import(other, workspace)
    finally:
        other.close()
    ops = workspace.rooms["ops"].id
    deadline = time.monotonic() + EMBED_WAIT_SECONDS
    while "imp-1" not in semantic_ids(index, "zookeeper quorum lost", [ops], minimum=0.9):
        assert time.monotonic() < deadline, "the follower did not pick the import up"
        time.sleep(0.05)


def test_a_vector_stored_by_another_process_is_read_not_embedded_again(
    workspace: Workspace, data_dir: Path, open_workspace: Callable[[Path], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ai_search_server.retrieval.index as index_module

    # Followed by hand below, once the other process has stored its vector.
    monkeypatch.setattr(index_module, "FOLLOW_INTERVAL_SECONDS", 3600.0)
    ours_embedder, theirs_embedder = HashingEmbedder(), HashingEmbedder()
    ours = open_test_index(workspace.store, data_dir, ours_embedder)
    try:
        assert ours.wait_until_embedded(EMBED_WAIT_SECONDS)
        before = ours_embedder.texts_embedded
        other = open_workspace(data_dir)
        theirs = open_test_index(other, data_dir, theirs_embedder)  # e.g. `ai-search import`'s index
        try:
            other.import_messages(
                [ImportRow("ops", "c", "alice", datetime(2026, 11, 5, tzinfo=UTC), "zookeeper quorum lost", "imp-1")]
            )
            assert theirs.wait_until_embedded(EMBED_WAIT_SECONDS)
        finally:
            theirs.close()
            other.close()
        ours.follow_once()
        assert ours.pending_embeddings == 0
        assert ours_embedder.texts_embedded == before  # the other process's vector, read from disk
        assert theirs_embedder.texts_embedded >= 1
        ops = workspace.rooms["ops"].id
        assert "imp-1" in semantic_ids(ours, "zookeeper quorum lost", [ops], minimum=0.9)
    finally:
        ours.close()


def test_a_restart_reads_only_what_changed_since_the_last_change_applied(
    workspace: Workspace, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = open_test_index(workspace.store, data_dir)
    first.close()
    added = workspace.store.post_message(workspace.rooms["ops"].id, workspace["alice"].user.id, "zookeeper")
    scans: list[int] = []
    iter_messages = workspace.store.iter_messages
    monkeypatch.setattr(
        workspace.store, "iter_messages", lambda **kw: scans.append(1) or iter_messages(**kw)
    )
    again = open_test_index(workspace.store, data_dir)
    try:
        assert scans == []  # no full scan of the store
        assert keyword_ids(again, "zookeeper", [workspace.rooms["ops"].id]) == {added.id}
    finally:
        again.close()


def test_an_index_behind_a_pruned_change_log_rescans_the_store(
    workspace: Workspace, index: EmbeddedIndex, data_dir: Path, open_workspace: Callable[[Path], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    other = open_workspace(data_dir)
    try:
        msg_id, _, _ = _post(other, workspace)
    finally:
        other.close()
    real = workspace.store.message_changes_since
    monkeypatch.setattr(
        workspace.store,
        "message_changes_since",
        lambda change, *, limit: replace(real(change, limit=limit), complete=False),
    )
    assert index.follow_once() is False
    assert keyword_ids(index, "zookeeper", [workspace.rooms["ops"].id]) == {msg_id}
    assert index.applied_change == workspace.store.latest_message_change()


def test_identical_texts_are_embedded_once_and_share_one_vector(workspace: Workspace, data_dir: Path) -> None:
    store: Store = workspace.store
    general, ops = workspace.rooms["general"].id, workspace.rooms["ops"].id
    alice, carol = workspace["alice"].user.id, workspace["carol"].user.id
    embedder = HashingEmbedder()
    index = open_test_index(store, data_dir, embedder)
    try:
        assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
        before = embedder.texts_embedded
        posted = [
            store.post_message(general, alice, "nightly backup finished"),
            store.post_message(ops, carol, "nightly backup finished"),
            store.post_message(ops, alice, "nightly backup finished"),
        ]
        assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
        # The text once; the second ops post follows the first, so it also has its context embedded.
        assert index.embedded_contexts == 3 + 1
        assert embedder.texts_embedded == before + 1 + 1
        assert index.vector_count == len(workspace.messages) + 3
        assert index.distinct_vectors == len(workspace.messages) + 1
        # Each message is still its own hit, in its own room, with the same similarity.
        hits = index.semantic_search(
            index.embed_query("nightly backup"), VectorScope(frozenset({ops})), 10, 0.5
        )
        rows = index.rows([rowid for rowid, _ in hits])
        assert {rows[rowid].msg_id for rowid, _ in hits} == {posted[1].id, posted[2].id}
        assert len({round(score, 6) for _, score in hits}) == 1
        # Editing one leaves the others their vector.
        store.edit_message(posted[0].id, "payroll vacation schedule")
        assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
        assert posted[1].id in semantic_ids(index, "nightly backup finished", [ops], minimum=0.9)
        assert posted[0].id in semantic_ids(index, "holiday payroll", [general])
    finally:
        index.close()
    # After a restart a known text is not embedded again, and the vectors are shared from the load.
    store.post_message(general, carol, "nightly backup finished")
    embedder = HashingEmbedder()
    reopened = open_test_index(store, data_dir, embedder)
    try:
        assert reopened.wait_until_embedded(EMBED_WAIT_SECONDS)
        # The known text is not embedded again; only its context (the edited post before it) is.
        assert reopened.embedded_texts == 0 and reopened.embedded_contexts == 1
        assert embedder.texts_embedded == 1
        assert reopened.vector_count == len(workspace.messages) + 4
        assert reopened.distinct_vectors == len(workspace.messages) + 2
    finally:
        reopened.close()


# Layout 1 kept vectors inside `docs`; layout 2 had FTS5 over `docs.text` (no CJK pairs, no parts).
_OLD_LAYOUTS = {
    1: (
        "CREATE TABLE docs (rowid INTEGER PRIMARY KEY, msg_id TEXT NOT NULL UNIQUE, rid TEXT NOT NULL,"
        " username TEXT NOT NULL, ts_ms INTEGER NOT NULL, text TEXT NOT NULL, digest BLOB NOT NULL,"
        " vector BLOB, vector_model TEXT)",
        "INSERT INTO docs VALUES (1, 'gone', 'r', 'u', 0, 'stale text', x'00', NULL, NULL)",
    ),
    2: (
        "CREATE TABLE docs (rowid INTEGER PRIMARY KEY, msg_id TEXT NOT NULL UNIQUE, rid TEXT NOT NULL,"
        " username TEXT NOT NULL, ts_ms INTEGER NOT NULL, text TEXT NOT NULL, digest BLOB NOT NULL,"
        " vector_model TEXT)",
        "CREATE VIRTUAL TABLE docs_fts USING fts5(text, content='docs', content_rowid='rowid')",
        "INSERT INTO docs VALUES (1, 'gone', 'r', 'u', 0, 'stale text', x'00', NULL)",
        "INSERT INTO docs_fts(rowid, text) VALUES (1, 'stale text')",
    ),
}


@pytest.mark.parametrize("layout", [pytest.param(v, id=f"layout-{v}") for v in _OLD_LAYOUTS])
def test_an_index_file_of_an_older_layout_is_rebuilt_from_the_store(
    workspace: Workspace, data_dir: Path, layout: int
) -> None:
    # Such a file is dropped and rebuilt, never half-read.
    path = data_dir / INDEX_FILENAME
    with sqlite3.connect(path) as conn:
        for statement in _OLD_LAYOUTS[layout]:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {layout}")
    conn.close()
    index = open_test_index(workspace.store, data_dir)
    try:
        assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
        assert index.db.count() == len(workspace.messages)
        assert index.vector_count == len(workspace.messages)
        assert keyword_ids(index, "stale", [workspace.rooms["general"].id, "r"]) == set()
    finally:
        index.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (INDEX_SCHEMA_VERSION,)
        assert conn.execute("SELECT count(*) FROM doc_vectors").fetchone() == (len(workspace.messages),)
        assert conn.execute("SELECT count(*) FROM doc_terms").fetchone() == (len(workspace.messages),)
    conn.close()


def test_a_short_reply_is_found_by_the_meaning_of_its_conversation(workspace: Workspace, data_dir: Path) -> None:
    store, ops = workspace.store, workspace.rooms["ops"].id
    alice, carol = workspace["alice"].user.id, workspace["carol"].user.id
    parent = store.post_message(ops, alice, "invoice emails stopped arriving for customers")
    reply = store.post_message(ops, carol, "ok rolling it back now", tmid=parent.id)
    other_thread = store.post_message(ops, alice, "zookeeper quorum flapped")
    other_reply = store.post_message(ops, carol, "ok rolling it back now", tmid=other_thread.id)
    index = open_test_index(store, data_dir)
    try:
        assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
        found = semantic_ids(index, "invoice emails", [ops], minimum=0.3)
        # The reply shares no word with the question; its thread does.
        assert reply.id in found and other_reply.id not in found
        assert parent.id in found
    finally:
        index.close()
