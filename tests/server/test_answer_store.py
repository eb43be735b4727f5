"""Stored answers and feedback in the SQLite store: round trips, sharing, ratings, pruning, cascades."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from ai_search_server.store.base import InvalidValue, RecordNotFound, Store
from ai_search_server.store.records import AnswerSourceRecord, StoredAnswer
from ai_search_server.store.rules import MAX_STORED_ANSWER_LENGTH, MAX_STORED_ANSWER_SOURCES
from ai_search_server.store.schema import answers_sql

from .conftest import Workspace

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def answer(ws: Workspace, answer_id: str = "a1", **changes: object) -> StoredAnswer:
    fields: dict[str, object] = {
        "id": answer_id,
        "user_id": ws["bob"].user.id,
        "query": "what happened?",
        "answer": "It went fine [1].",
        "sources": (AnswerSourceRecord(1, ws.messages["general-2"].id, ws.rooms["general"].id),),
        "provider": {"name": "extractive"},
        "created_at": NOW,
        **changes,
    }
    return StoredAnswer(**fields)  # type: ignore[arg-type]


def test_an_answer_round_trips(workspace: Workspace, store: Store) -> None:
    stored = answer(workspace, searched="who fixed it? failover")
    store.save_answer(stored)
    assert store.get_answer("a1") == stored
    assert store.get_answer("nope") is None


def test_a_long_answer_is_cut_and_too_many_sources_refused(workspace: Workspace, store: Store) -> None:
    store.save_answer(answer(workspace, answer="x" * (MAX_STORED_ANSWER_LENGTH + 5)))
    got = store.get_answer("a1")
    assert got is not None and len(got.answer) == MAX_STORED_ANSWER_LENGTH
    many = tuple(AnswerSourceRecord(n, f"m{n}", "r") for n in range(1, MAX_STORED_ANSWER_SOURCES + 2))
    with pytest.raises(InvalidValue):
        store.save_answer(answer(workspace, "a2", sources=many))


def test_sharing_keeps_the_first_time(workspace: Workspace, store: Store) -> None:
    store.save_answer(answer(workspace))
    first = store.share_answer("a1").shared_at
    assert first is not None
    assert store.share_answer("a1").shared_at == first
    with pytest.raises(RecordNotFound):
        store.share_answer("nope")


def test_ratings_replace_each_other_per_person(workspace: Workspace, store: Store) -> None:
    store.save_answer(answer(workspace))
    alice, bob = workspace["alice"].user.id, workspace["bob"].user.id
    first = store.rate_answer("a1", alice, "up", "  clear ")
    assert (first.rating, first.reason) == ("up", "clear")
    second = store.rate_answer("a1", alice, "down")
    assert (second.rating, second.reason, second.created_at) == ("down", "", first.created_at)
    store.rate_answer("a1", bob, "up")
    exported = store.feedback_since(None)
    assert sorted((f.user_id, f.rating) for f, _, _ in exported) == sorted([(alice, "down"), (bob, "up")])
    assert store.feedback_since(datetime.now(UTC) + timedelta(days=1)) == []
    for bad in (("sideways", ""), ("up", "x" * 1001), ("up", "a\x00b")):
        with pytest.raises(InvalidValue):
            store.rate_answer("a1", alice, *bad)
    with pytest.raises(RecordNotFound):
        store.rate_answer("nope", alice, "up")


def test_old_answers_nobody_kept_are_pruned() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE users (id TEXT PRIMARY KEY)")
    conn.execute("INSERT INTO users (id) VALUES ('u')")
    for statement in answers_sql(retention_days=1, every=5):
        conn.execute(statement)
    day = 24 * 3600 * 1000
    rows = [("old", 0, None), ("old-shared", 0, 1), ("old-rated", 0, None), ("fresh", 3 * day, None)]
    for answer_id, created, shared in rows:
        conn.execute(
            "INSERT INTO answers (id, user_id, query, answer, created_at, shared_at) VALUES (?, 'u', 'q', 'a', ?, ?)",
            (answer_id, created, shared),
        )
    conn.execute("INSERT INTO answer_feedback VALUES ('old-rated', 'u', 'up', '', 0, 0)")
    conn.execute(
        "INSERT INTO answers (id, user_id, query, answer, created_at) VALUES ('trigger', 'u', 'q', 'a', ?)",
        (3 * day,),
    )
    kept = {row[0] for row in conn.execute("SELECT id FROM answers")}
    assert kept == {"old-shared", "old-rated", "fresh", "trigger"}
