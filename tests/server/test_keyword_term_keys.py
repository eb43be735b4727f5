"""The keyword branch reads the room from the FTS5 rowid (index layout 6, ``index_db.term_key``).

Every case is checked against the same FTS5 query scoped the old way (each match joined to ``docs``
and its room read there): the term key must change no match (the ranking is the index's, from the
scope's own statistics, since layout 7), never let a room in that the caller cannot read, and follow
a message that moves to another room. Plus the migration of a layout-5 file, and common words over
rooms of very different sizes against the exhaustive ranking.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import ai_search_server.retrieval.index as index_module
from ai_search_server.retrieval.floor import KEYWORD_MIN_COVERAGE
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.index_db import (
    INDEX_SCHEMA_VERSION,
    ROOM_CODE_BITS,
    DocConditions,
    IndexDatabase,
    KeywordHit,
    KeywordMatch,
    KeywordScope,
)
from ai_search_server.retrieval.terms import fts_match_expression, query_terms
from ai_search_server.retrieval.tokens import text_tokens, token_column_text
from ai_search_server.store.records import Attachment, Message

from ._search_support import reopened_after_downgrade
from .conftest import Workspace

START = datetime(2026, 3, 1, tzinfo=UTC)
ROOMS = [f"room-{n}" for n in range(12)]
AUTHORS = ["alice", "bob", "carol", "dave"]
WORDS = ["deploy", "deployment", "rollback", "canary", "release", "train", "pager", "alert", "quiet", "lunch"]


def _message(n: int, rng: random.Random) -> Message:
    # Room sizes very unequal: room-0 holds about half the messages, room-11 a handful.
    room = ROOMS[min(int(rng.expovariate(0.7)), len(ROOMS) - 1)]
    words = rng.choices(WORDS, weights=[10, 3, 4, 2, 6, 2, 3, 3, 1, 1], k=rng.randint(3, 9))
    text = " ".join(words)
    if n % 7 == 0:
        text += " see https://example.org/runbook"
    if n % 11 == 0:
        text = "release train " + text  # the phrase, whole
    attachments = (Attachment(name="rollback.log"),) if n % 13 == 0 else ()
    return Message(
        f"m{n}",
        room,
        f"u-{n % len(AUTHORS)}",
        AUTHORS[n % len(AUTHORS)],
        AUTHORS[n % len(AUTHORS)].title(),
        START + timedelta(minutes=n),
        text,
        attachments=attachments,
    )


def _filled(path: Path) -> IndexDatabase:
    rng = random.Random(26)
    opened = IndexDatabase(path)
    with opened.transaction() as conn:
        opened.upsert(conn, [_message(n, rng) for n in range(600)])
    return opened


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexDatabase]:
    """Read by the tests that take it, never written."""
    opened = _filled(tmp_path_factory.mktemp("term-keys") / INDEX_FILENAME)
    yield opened
    opened.close()


@pytest.fixture
def fresh_db(tmp_path: Path) -> Iterator[IndexDatabase]:
    opened = _filled(tmp_path / INDEX_FILENAME)
    yield opened
    opened.close()


def scoped_the_old_way(
    db: IndexDatabase, match: str, scope: KeywordScope, conditions: DocConditions | None
) -> list[tuple[int, float]]:
    """The same FTS5 query with every match joined to ``docs`` and its room, author, time read there."""
    if conditions is not None:
        match = conditions.match(match)
    where = ["docs_fts MATCH ?", "d.rid IN (SELECT value FROM json_each(?))"]
    params: list[object] = [match, json.dumps(list(scope.rooms))]
    if conditions is not None:
        extra, extra_params = conditions.where()
        where += extra
        params += extra_params
    if scope.users is not None:
        where.append("d.username IN (SELECT value FROM json_each(?))")
        params.append(json.dumps([u.lower() for u in scope.users]))
    if scope.ts_min_ms is not None:
        where.append("d.ts_ms >= ?")
        params.append(scope.ts_min_ms)
    if scope.ts_max_ms is not None:
        where.append("d.ts_ms <= ?")
        params.append(scope.ts_max_ms)
    rows = db._connection().execute(
        f"SELECT d.rowid, bm25(docs_fts, 1.0, 0.5) AS rank FROM docs_fts"
        f" JOIN docs d ON d.rowid = docs_fts.rowid >> {ROOM_CODE_BITS} WHERE {' AND '.join(where)}"
        " ORDER BY rank, d.rowid",
        params,
    )
    return [(int(rowid), float(rank)) for rowid, rank in rows]


def _found(db: IndexDatabase, match: str, scope: KeywordScope, conditions: DocConditions | None) -> list[str]:
    return [db.rows([m.rowid]).popitem()[1].msg_id for m in db.keyword_matches(match, scope, conditions=conditions)]


def _ms(minutes: int) -> int:
    return int((START + timedelta(minutes=minutes)).timestamp() * 1000)


SCOPES = {
    "the largest room": KeywordScope(["room-0"]),
    "small rooms": KeywordScope(["room-7", "room-9", "room-11"]),
    "most rooms": KeywordScope(ROOMS[:9]),
    "a room no message is in": KeywordScope(["room-none"]),
    "rooms and an author": KeywordScope(ROOMS[:6], users=["Bob"]),
    "rooms and a window": KeywordScope(ROOMS, ts_min_ms=_ms(100), ts_max_ms=_ms(300)),
}
QUERIES = {
    "a common word": ("release", None),
    "a prefix": ("deploy", None),  # deploy* also finds deployment
    "a short word, whole": ("train", None),
    "a phrase": ('"release train"', None),
    "an identifier's part": ("rollback", None),
    "has:link": ("rollback canary", DocConditions(marks=("link",))),
    "-has:link": ("canary", DocConditions(not_marks=("link",))),
    "has:file": ("rollback", DocConditions(marks=("file",))),
    "an excluded word": ("deploy", DocConditions(excluded=fts_match_expression([("canary",)]))),
    "a required phrase": ("pager", DocConditions(required=(fts_match_expression([("release", "train")]),))),
    "an excluded author": ("alert", DocConditions(not_usernames=("alice",))),
}


@pytest.mark.parametrize("scope_name", list(SCOPES))
@pytest.mark.parametrize("query_name", list(QUERIES))
@pytest.mark.parametrize("newest", [None, 25], ids=["every-match", "the-newest-25"])
def test_the_term_key_scopes_as_the_docs_table_does(
    db: IndexDatabase, scope_name: str, query_name: str, newest: int | None
) -> None:
    scope = SCOPES[scope_name]
    query, conditions = QUERIES[query_name]
    match = fts_match_expression(query_terms(query))
    reference = sorted(rowid for rowid, _rank in scoped_the_old_way(db, match, scope, conditions))
    if newest is not None:  # the newest matches in scope
        reference = sorted(reference[-newest:])
    hits: list[KeywordMatch] = db.keyword_matches(match, scope, newest=newest, conditions=conditions)
    assert sorted(hit.rowid for hit in hits) == reference
    rows = db.rows([hit.rowid for hit in hits])
    assert {row.rid for row in rows.values()} <= set(scope.rooms)
    codes = dict(db._connection().execute("SELECT rid, code FROM doc_rooms").fetchall())
    assert all(hit.key & ((1 << ROOM_CODE_BITS) - 1) == codes[rows[hit.rowid].rid] for hit in hits)
    texts = db.texts([hit.rowid for hit in hits])
    for hit in hits:  # the tokens the ranking reads are the document's
        tokens = text_tokens(texts[hit.rowid][0])
        assert (hit.words, hit.parts) == (token_column_text(tokens.words), token_column_text(tokens.parts))
    if scope_name in ("the largest room", "most rooms") and query_name in ("a common word", "a prefix"):
        assert hits, "the case must find something for the comparison to mean anything"


def test_a_message_moved_to_another_room_is_found_there_only(fresh_db: IndexDatabase) -> None:
    db = fresh_db
    match = fts_match_expression(query_terms("zeppelin"))
    moved = Message("moving", "room-3", "u-1", "bob", "Bob", START, "zeppelin launch notes")
    with db.transaction() as conn:
        db.upsert(conn, [moved])
    assert _found(db, match, KeywordScope(["room-3"]), None) == ["moving"]
    terms = db._connection().execute("SELECT count(*) FROM doc_terms").fetchone()[0]
    with db.transaction() as conn:
        db.upsert(conn, [Message("moving", "room-8", "u-1", "bob", "Bob", START, "zeppelin launch notes")])
    assert _found(db, match, KeywordScope(["room-3"]), None) == []
    assert _found(db, match, KeywordScope(["room-8"]), None) == ["moving"]
    assert db.scope_counts(["room-3"], ["zeppelin"], []).terms == {"zeppelin": 0}, "the count moved too"
    assert db.scope_counts(["room-8"], ["zeppelin"], []).terms == {"zeppelin": 1}
    assert db._connection().execute("SELECT count(*) FROM doc_terms").fetchone()[0] == terms
    with db.transaction() as conn:
        db.delete(conn, ["moving"])
    assert _found(db, match, KeywordScope(ROOMS), None) == []
    assert db.scope_counts(ROOMS, ["zeppelin"], []).terms == {"zeppelin": 0}
    assert db._connection().execute("SELECT count(*) FROM doc_terms").fetchone()[0] == terms - 1


def test_conditions_read_as_rowid_sets_name_documents_not_term_keys(db: IndexDatabase) -> None:
    allowed, blocked = db.condition_rowids(
        DocConditions(required=(fts_match_expression([("release", "train")]),), excluded='"canary"')
    )
    assert allowed is not None and blocked is not None and len(allowed) and len(blocked)
    rows = db.rows([int(r) for r in allowed])
    assert len(rows) == len(allowed)  # every rowid is a document's
    texts = db.texts([int(r) for r in allowed])
    assert all("release train" in text for text, _digest in texts.values())
    assert all("canary" in text for text, _digest in db.texts([int(r) for r in blocked]).values())


def _downgrade_to_layout_5(path: Path) -> None:
    """What layout 5 kept: terms under the document's rowid, no room codes."""
    conn = sqlite3.connect(path)
    conn.executescript(
        f"""
        DROP TRIGGER docs_ad;
        DROP TRIGGER doc_terms_ai;
        DROP TRIGGER doc_terms_ad;
        DROP TRIGGER doc_terms_au;
        DROP TABLE docs_vocab;
        DROP TABLE docs_fts;
        UPDATE doc_terms SET rowid = rowid >> {ROOM_CODE_BITS};
        DROP TABLE doc_rooms;
        CREATE VIRTUAL TABLE docs_fts USING fts5(
            words, parts, content='doc_terms', content_rowid='rowid',
            tokenize='unicode61 remove_diacritics 2', prefix='2 3'
        );
        INSERT INTO docs_fts (docs_fts) VALUES ('rebuild');
        CREATE TRIGGER docs_ad AFTER DELETE ON docs BEGIN
            DELETE FROM doc_terms WHERE rowid = old.rowid;
            DELETE FROM doc_vectors WHERE rowid = old.rowid;
        END;
        PRAGMA user_version = 5;
        """
    )
    conn.close()


def test_a_layout_5_file_is_migrated_in_place_keeping_vectors_and_results(
    workspace: Workspace, data_dir: Path
) -> None:
    store = workspace.store
    rooms = [room.id for room in workspace.rooms.values()]
    queries = ["deploy", "postgres failover", '"release notes"', "lunch"]
    index, _embedder, before = reopened_after_downgrade(
        store, rooms, data_dir / INDEX_FILENAME, _downgrade_to_layout_5, queries
    )
    try:
        assert index.vector_count == len(workspace.messages)
        for query in queries:
            assert index.keyword_search(query_terms(query), KeywordScope(rooms), 20) == before[query]
        # Written after the migration: found by keyword in its room, and only there.
        general = workspace.rooms["general"].id
        posted = store.post_message(general, workspace["alice"].user.id, "zeppelin rollout tonight")
        found = index.keyword_search(query_terms("zeppelin"), KeywordScope([general]), 5)
        assert [h.msg_id for h in found] == [posted.id]
        others = [r for r in rooms if r != general]
        assert index.keyword_search(query_terms("zeppelin"), KeywordScope(others), 5) == []
    finally:
        index.close()
    with sqlite3.connect(data_dir / INDEX_FILENAME) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (INDEX_SCHEMA_VERSION,)
    conn.close()


@pytest.mark.parametrize(
    "query",
    ["deploy", "release", "deploy rollback", "pager alert canary", '"release train" deploy', "quiet lunch"],
)
@pytest.mark.parametrize("rooms", [ROOMS[:1], ROOMS[1:], ROOMS[::3]], ids=["largest", "all-but-largest", "every-third"])
def test_common_words_over_unequal_rooms_give_the_exhaustive_top_ten(
    db: IndexDatabase, query: str, rooms: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small data takes the exact path: the pool and the coverage order give the exhaustive top 10."""
    index = EmbeddedIndex(db, store=None, embedder=None, progress=False)  # type: ignore[arg-type]
    monkeypatch.setattr(index_module, "COMMON_TERM_MIN_DOCUMENTS", 10**9)  # every term searched
    terms, scope = query_terms(query), KeywordScope(rooms)
    ours = index.keyword_search(terms, scope, 30, min_coverage=KEYWORD_MIN_COVERAGE)
    every = index.keyword_search(terms, scope, 10, min_coverage=KEYWORD_MIN_COVERAGE, exhaustive=True)
    def key(hit: KeywordHit) -> tuple[float, float]:
        return round(hit.coverage, 9), round(hit.bm25, 9)
    assert [key(h) for h in ours[:10]] == [key(h) for h in every[:10]]
    assert every, "the case must find something"
    assert {h.rid for h in ours} <= set(rooms)
