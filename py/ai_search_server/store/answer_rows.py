"""Stored answers and their feedback as rows (schema migration 6).

An answer row keeps what is needed to show the answer again to whoever opens its link: the question,
the text, the provider and the ids of its numbered sources (as JSON). The sources' texts are never
copied: they are read again, under the reader's permissions, each time the answer is shown.
Feedback is one row per answer and person; rating again replaces the row. The statements are
SQLite's; the columns, their values and the records made from rows are every store's.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from .base import InvalidValue
from .records import AnswerFeedback, AnswerRating, AnswerSourceRecord, StoredAnswer
from .rules import MAX_STORED_ANSWER_LENGTH, MAX_STORED_ANSWER_SOURCES, from_ms, to_ms

__all__ = [
    "ANSWER_COLUMNS",
    "FEEDBACK_COLUMNS",
    "answer_from_row",
    "answer_values",
    "feedback_from_row",
    "feedback_since",
    "insert_answer",
    "read_answer",
    "read_feedback",
    "upsert_feedback",
]

ANSWER_COLUMNS = "id, user_id, query, answer, sources, provider, created_at, shared_at, searched"
FEEDBACK_COLUMNS = "answer_id, user_id, rating, reason, created_at, updated_at"

Row = tuple[Any, ...]


def answer_from_row(row: Row) -> StoredAnswer:
    sources = tuple(
        AnswerSourceRecord(int(s["n"]), str(s["msgId"]), str(s["rid"])) for s in json.loads(row[4])
    )
    return StoredAnswer(
        id=row[0],
        user_id=row[1],
        query=row[2],
        answer=row[3],
        sources=sources,
        provider={str(k): str(v) for k, v in json.loads(row[5]).items()},
        created_at=from_ms(row[6]),
        shared_at=None if row[7] is None else from_ms(row[7]),
        searched=row[8],
    )


def feedback_from_row(row: Row) -> AnswerFeedback:
    return AnswerFeedback(
        row[0], row[1], cast(AnswerRating, row[2]), row[3], from_ms(row[4]), from_ms(row[5])
    )


def insert_answer(conn: sqlite3.Connection, answer: StoredAnswer) -> None:
    """Store ``answer`` (its text cut to ``MAX_STORED_ANSWER_LENGTH``).

    Raises:
        InvalidValue: more than ``MAX_STORED_ANSWER_SOURCES`` sources.
    """
    conn.execute(
        f"INSERT INTO answers ({ANSWER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", answer_values(answer)
    )


def answer_values(answer: StoredAnswer) -> tuple[Any, ...]:
    """The values of ``ANSWER_COLUMNS`` that keep ``answer`` (its text cut to ``MAX_STORED_ANSWER_LENGTH``).

    Raises:
        InvalidValue: more than ``MAX_STORED_ANSWER_SOURCES`` sources.
    """
    if len(answer.sources) > MAX_STORED_ANSWER_SOURCES:
        raise InvalidValue(f"an answer may number at most {MAX_STORED_ANSWER_SOURCES} sources")
    sources = json.dumps([{"n": s.n, "msgId": s.msg_id, "rid": s.rid} for s in answer.sources])
    return (
        answer.id,
        answer.user_id,
        answer.query,
        answer.answer[:MAX_STORED_ANSWER_LENGTH],
        sources,
        json.dumps(answer.provider, sort_keys=True),
        to_ms(answer.created_at),
        None if answer.shared_at is None else to_ms(answer.shared_at),
        answer.searched,
    )


def read_answer(conn: sqlite3.Connection, answer_id: str) -> StoredAnswer | None:
    row = conn.execute(f"SELECT {ANSWER_COLUMNS} FROM answers WHERE id = ?", (answer_id,)).fetchone()
    return None if row is None else answer_from_row(row)


def upsert_feedback(
    conn: sqlite3.Connection, answer_id: str, user_id: str, rating: AnswerRating, reason: str, now: int
) -> AnswerFeedback:
    """Record one person's rating of one answer, replacing an earlier one (its first time is kept)."""
    conn.execute(
        f"INSERT INTO answer_feedback ({FEEDBACK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (answer_id, user_id) DO UPDATE SET rating = excluded.rating,"
        " reason = excluded.reason, updated_at = excluded.updated_at",
        (answer_id, user_id, rating, reason, now, now),
    )
    feedback = read_feedback(conn, answer_id, user_id)
    assert feedback is not None
    return feedback


def read_feedback(conn: sqlite3.Connection, answer_id: str, user_id: str) -> AnswerFeedback | None:
    row = conn.execute(
        f"SELECT {FEEDBACK_COLUMNS} FROM answer_feedback WHERE answer_id = ? AND user_id = ?",
        (answer_id, user_id),
    ).fetchone()
    return None if row is None else feedback_from_row(row)


def feedback_since(
    conn: sqlite3.Connection, since: datetime | None
) -> Sequence[tuple[AnswerFeedback, StoredAnswer, str]]:
    """Every rating given or changed at ``since`` or later (all of them for None), oldest first, with
    its answer and the rater's username."""
    rows = conn.execute(
        f"SELECT {', '.join('f.' + c.strip() for c in FEEDBACK_COLUMNS.split(','))},"
        f" {', '.join('a.' + c.strip() for c in ANSWER_COLUMNS.split(','))}, u.username"
        " FROM answer_feedback f JOIN answers a ON a.id = f.answer_id JOIN users u ON u.id = f.user_id"
        " WHERE f.updated_at >= ? ORDER BY f.updated_at, f.answer_id, f.user_id",
        (0 if since is None else to_ms(since),),
    ).fetchall()
    return [(feedback_from_row(row[:6]), answer_from_row(row[6:15]), str(row[15])) for row in rows]
