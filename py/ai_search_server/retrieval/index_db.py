"""The embedded pipeline's own SQLite file: messages as documents, FTS5 over their text, and vectors.

One file (``<data_dir>/index.db``, WAL) beside the workspace store, never the store's own tables: the
index can be deleted and rebuilt from the store at any time, and a remote pipeline deployment has no
such file at all. All SQL of the embedded pipeline lives here (DESIGN decision 8).

Schema::

    docs(rowid, msg_id UNIQUE, rid, username (folded), ts_ms, text, digest, vector_model, tmid)
         text: the message's searchable text (its text, then its attachments' names, titles, descriptions)
         tmid: the thread a reply belongs to (NULL for no reply): a message starts a thread when a
         document names it here
    doc_marks(mark, rowid = docs.rowid)   what the message holds (``message_checks.MESSAGE_MARKS``:
                                          link, file, image, reaction, pinned, reply), one row each;
                                          and ``root`` while another document names it as its
                                          ``tmid`` (kept by triggers, as replies come and go)
    doc_vectors(rowid = docs.rowid, vector, context)   context: the message with its conversation
                                                        (retrieval/context.py), NULL without one
    doc_rooms(rid PRIMARY KEY, code, documents, tokens)   a small number per room, given the first
                                       time a room is seen; the room's documents and their tokens
    doc_term_counts(code, term, documents)   per room, the documents holding each term (WITHOUT ROWID,
                                             keyed (code, term)): what a search weighs its terms by
    doc_terms(rowid = docs.rowid << ROOM_CODE_BITS | doc_rooms.code, words, parts)
              the text cut by ``tokens.text_tokens``, under a **term key** that carries the room
    docs_fts  FTS5 external-content table over doc_terms (words, parts)
              tokenize 'unicode61 remove_diacritics 2', prefix indexes for 2- and 3-character prefixes
    meta(key, value)

**Statistics are per room.** A term's weight (its IDF), the common-term cut, MaxScore's essential
terms, the exact/bounded choice and BM25 all depend on how many messages hold a word, and counted
over the whole index they told a caller how often a word occurs in rooms they cannot read (issue 42,
finding 4). So ``upsert`` and ``delete`` keep, per room, the documents holding each term and the
room's documents and tokens (``doc_term_counts``, ``doc_rooms``), in the same transaction as the
document; a search sums them over its own rooms (``scope_counts``): a few B-tree lookups per room
and term, whatever the rest of the index holds. ``docs_vocab`` (FTS5's own counts over every room)
stays for the tests that check both agree; no search reads it.

**The room is in the FTS5 rowid.** A keyword search checks every match against the caller's rooms;
read from ``docs`` that check was a B-tree lookup per match (about 1.2 us, most of a common word's
cost at a million messages), read from the match's own rowid it is an integer operation on what
FTS5 hands over anyway (``term_key``). The document's rowid sits in the high bits,
so the keys keep the documents' order (newest last) and "the newest matches" is still a walk down
the rowids.

FTS5 indexes the message's tokens as ``tokens`` cuts them, not the raw text: Chinese and Japanese
runs become character pairs and identifiers give their parts (``InvalidProviderToken``), which
unicode61 alone cannot find. The tokens sit in their own table, like the vectors, so the ``docs`` rows
that the keyword search joins for the scope check stay slim.

``doc_marks`` and ``tmid`` let a search's ``has:``/``is:`` conditions (``DocConditions``) sit in
the index query itself, over every document in scope, beside the FTS5 match (excluded words are an
FTS5 ``NOT``, required phrases an ``AND``); the semantic branch reads the same conditions as sets of
rowids (``condition_rowids``) for its vector mask.

``digest`` is a hash of what a search reads (room, author, time, text, thread, marks): catching up with the store
compares digests, so edits made while nothing listened are noticed. ``vector_model`` names the
embedder that made the document's current vector (NULL until embedded, and again once its text
changes), so a change of model re-embeds everything. The vector itself (float16: half the disk of
float32; the cosines move by well under 0.001) sits in its own table, not in ``docs``: a keyword
search joins every FTS5 match to ``docs`` to check the caller's scope, and 768-byte vectors inside
those rows made that join read six times the pages (at 100k messages, 40 of a long query's 50 ms).

Threads: each thread uses its own connection; writes take one lock, so the store's writer threads
(listeners), the embedding worker and the catch-up never wait on SQLite's busy handler in-process.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from ..store.records import Message
from .message_checks import MESSAGE_MARKS, message_marks
from .tokens import text_tokens, token_column_text

__all__ = [
    "INDEX_BUSY_TIMEOUT_MS",
    "INDEX_SCHEMA_VERSION",
    "RESCAN_META_KEY",
    "ROOM_CODE_BITS",
    "ROOT_MARK",
    "DocConditions",
    "DocRow",
    "IndexCapacityError",
    "IndexDatabase",
    "IndexedDoc",
    "KeywordHit",
    "KeywordMatch",
    "KeywordScope",
    "ScopeCounts",
    "StoredVector",
    "content_key",
    "message_digest",
    "term_key",
]

# How long an index write waits for another process holding the file (milliseconds).
INDEX_BUSY_TIMEOUT_MS = 5000
# Bumped when the schema changes; an older file is dropped and rebuilt from the store.
# 2: vectors moved out of `docs` into `doc_vectors`.
# 3: FTS5 indexes `doc_terms` (CJK character pairs, identifier parts), not `docs.text`.
# 4: each vector row also holds the message's conversation-context vector.
# 5: `docs.tmid` and `doc_marks` (has:/is: over the whole index); migrated in place from 4.
# 6: `doc_rooms`, and `doc_terms` (so FTS5) keyed by the term key; migrated in place from 4 and 5.
# 7: per-room statistics (`doc_term_counts`, `doc_rooms.documents`/`tokens`); counted in place from 4-6.
INDEX_SCHEMA_VERSION = 7
#: Low bits of a term key that hold the document's room code (bits): 16,777,215 rooms per index;
#: the document's rowid takes the 39 bits above them (549 billion documents).
ROOM_CODE_BITS = 24
_ROOM_MASK = (1 << ROOM_CODE_BITS) - 1
#: Set (in the file's meta) while every document must be compared with the store again: after a
#: migration, until the index holds each message's marks. Cleared once a full comparison finished.
RESCAN_META_KEY = "rescan"
# Bytes of the digest: 8 bytes (64 bits) make an accidental match between two versions negligible.
_DIGEST_BYTES = 8
# Bytes of a text's content key: 16 bytes (128 bits), so two different texts never share a vector
# by accident, even across millions of distinct texts.
_CONTENT_KEY_BYTES = 16

#: The mark of a thread's first message: held while a document names it as its `tmid`.
ROOT_MARK = "root"
# The mark names, for SQL that must name each (a delete reaches the key by mark): the message's
# own, rewritten on each upsert; and all of them, the thread root's too, gone with the document.
_MARK_LIST = ", ".join(f"'{name}'" for name in MESSAGE_MARKS)
_EVERY_MARK_LIST = f"{_MARK_LIST}, '{ROOT_MARK}'"
# The parent of a reply that is gone or moved loses its root mark once no reply names it.
_UNROOT_OLD_PARENT = f"""DELETE FROM doc_marks WHERE mark = '{ROOT_MARK}'
            AND rowid = (SELECT rowid FROM docs WHERE msg_id = old.tmid)
            AND NOT EXISTS (SELECT 1 FROM docs WHERE tmid = old.tmid);"""
_ROOT_NEW_PARENT = f"""INSERT OR IGNORE INTO doc_marks (mark, rowid)
            SELECT '{ROOT_MARK}', rowid FROM docs WHERE msg_id = new.tmid;"""
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS docs (
        rowid INTEGER PRIMARY KEY,
        msg_id TEXT NOT NULL UNIQUE,
        rid TEXT NOT NULL,
        username TEXT NOT NULL,
        ts_ms INTEGER NOT NULL,
        text TEXT NOT NULL,
        digest BLOB NOT NULL,
        vector_model TEXT,
        tmid TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS docs_replies ON docs(tmid) WHERE tmid IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS doc_marks (
        mark TEXT NOT NULL, rowid INTEGER NOT NULL, PRIMARY KEY (mark, rowid)
    ) WITHOUT ROWID""",
    "CREATE TABLE IF NOT EXISTS doc_vectors (rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL, context BLOB)",
    "CREATE INDEX IF NOT EXISTS docs_unembedded ON docs(rowid) WHERE vector_model IS NULL",
    """CREATE TABLE IF NOT EXISTS doc_rooms (
        rid TEXT PRIMARY KEY, code INTEGER NOT NULL UNIQUE,
        documents INTEGER NOT NULL DEFAULT 0, tokens INTEGER NOT NULL DEFAULT 0
    )""",
    # Keyed by room first: a search looks up each of its rooms, never walks another room's rows.
    """CREATE TABLE IF NOT EXISTS doc_term_counts (
        code INTEGER NOT NULL, term TEXT NOT NULL, documents INTEGER NOT NULL, PRIMARY KEY (code, term)
    ) WITHOUT ROWID""",
    # rowid: the term key (`term_key`), not docs.rowid.
    "CREATE TABLE IF NOT EXISTS doc_terms (rowid INTEGER PRIMARY KEY, words TEXT NOT NULL, parts TEXT NOT NULL)",
    """CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5(
        words, parts, content='doc_terms', content_rowid='rowid',
        tokenize='unicode61 remove_diacritics 2', prefix='2 3'
    )""",
    # FTS5's per-term document counts over every room (fts5vocab reads the FTS index itself): the
    # tests compare doc_term_counts with it; a search never reads it (it counts hidden rooms too).
    "CREATE VIRTUAL TABLE IF NOT EXISTS docs_vocab USING fts5vocab(docs_fts, 'row')",
    """CREATE TRIGGER IF NOT EXISTS doc_terms_ai AFTER INSERT ON doc_terms BEGIN
        INSERT INTO docs_fts(rowid, words, parts) VALUES (new.rowid, new.words, new.parts);
    END""",
    """CREATE TRIGGER IF NOT EXISTS doc_terms_ad AFTER DELETE ON doc_terms BEGIN
        INSERT INTO docs_fts(docs_fts, rowid, words, parts) VALUES ('delete', old.rowid, old.words, old.parts);
    END""",
    """CREATE TRIGGER IF NOT EXISTS doc_terms_au AFTER UPDATE ON doc_terms BEGIN
        INSERT INTO docs_fts(docs_fts, rowid, words, parts) VALUES ('delete', old.rowid, old.words, old.parts);
        INSERT INTO docs_fts(rowid, words, parts) VALUES (new.rowid, new.words, new.parts);
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS docs_ad AFTER DELETE ON docs BEGIN
        DELETE FROM doc_terms WHERE rowid BETWEEN old.rowid << {ROOM_CODE_BITS}
            AND (old.rowid << {ROOM_CODE_BITS}) | {_ROOM_MASK};
        DELETE FROM doc_vectors WHERE rowid = old.rowid;
        DELETE FROM doc_marks WHERE mark IN ({_EVERY_MARK_LIST}) AND rowid = old.rowid;
        {_UNROOT_OLD_PARENT}
    END""",
    # A reply marks its parent; a message whose replies came first (an import's order) is marked too.
    f"""CREATE TRIGGER IF NOT EXISTS docs_root_ai AFTER INSERT ON docs BEGIN
        {_ROOT_NEW_PARENT}
        INSERT OR IGNORE INTO doc_marks (mark, rowid)
            SELECT '{ROOT_MARK}', new.rowid WHERE EXISTS (SELECT 1 FROM docs WHERE tmid = new.msg_id);
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS docs_root_au AFTER UPDATE OF tmid ON docs
        WHEN old.tmid IS NOT new.tmid BEGIN
        {_UNROOT_OLD_PARENT}
        {_ROOT_NEW_PARENT}
    END""",
)
# Schema 4 -> 5: the new column; the trigger is made again with the marks (the schema above adds
# the table and the index). Every document is then compared with the store (`RESCAN_META_KEY`).
_MIGRATE_FROM_4 = (
    "ALTER TABLE docs ADD COLUMN tmid TEXT",
    "DROP TRIGGER IF EXISTS docs_ad",
)
# Schema 5 -> 6: the terms move under their term keys, and FTS5 is rebuilt over them (its
# `rebuild` reads the content table: about 2 s per 100k messages, nothing is tokenised again).
# The triggers are made again by the schema above.
_MIGRATE_FROM_5 = (
    "DROP TABLE IF EXISTS doc_rooms",
    "CREATE TABLE doc_rooms (rid TEXT PRIMARY KEY, code INTEGER NOT NULL UNIQUE)",
    "INSERT INTO doc_rooms (rid, code) SELECT rid, row_number() OVER (ORDER BY rid) FROM (SELECT DISTINCT rid FROM docs)",
    "DROP TABLE IF EXISTS doc_terms_keyed",
    "CREATE TABLE doc_terms_keyed (rowid INTEGER PRIMARY KEY, words TEXT NOT NULL, parts TEXT NOT NULL)",
    f"""INSERT INTO doc_terms_keyed (rowid, words, parts)
        SELECT (t.rowid << {ROOM_CODE_BITS}) | r.code, t.words, t.parts
        FROM doc_terms t JOIN docs d ON d.rowid = t.rowid JOIN doc_rooms r ON r.rid = d.rid""",
    "DROP TRIGGER IF EXISTS docs_ad",
    "DROP TRIGGER IF EXISTS doc_terms_ai",
    "DROP TRIGGER IF EXISTS doc_terms_ad",
    "DROP TRIGGER IF EXISTS doc_terms_au",
    "DROP TABLE IF EXISTS docs_vocab",
    "DROP TABLE IF EXISTS docs_fts",
    "DROP TABLE doc_terms",
    "ALTER TABLE doc_terms_keyed RENAME TO doc_terms",
)
# Schema 6 -> 7 (after 4 -> 6): the per-room statistics; the schema above makes `doc_term_counts`, and
# `_count_every_document` fills both from `doc_terms` (no text is cut again).
_MIGRATE_FROM_6 = (
    "ALTER TABLE doc_rooms ADD COLUMN documents INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE doc_rooms ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0",
)
# Documents read per step while counting every document's terms (a migration): the deltas of one
# step are summed in memory before they are written.
_COUNT_BATCH_DOCUMENTS = 20_000
# Add to a term's count in a room (a delta, negative for a document that left).
_ADD_TERM_COUNT = """
INSERT INTO doc_term_counts (code, term, documents) VALUES (?, ?, ?)
ON CONFLICT (code, term) DO UPDATE SET documents = documents + excluded.documents
"""
# A room's code: the next number the first time the room is seen.
_ROOM_CODE = """
INSERT INTO doc_rooms (rid, code) VALUES (?, (SELECT coalesce(max(code), 0) + 1 FROM doc_rooms))
ON CONFLICT (rid) DO UPDATE SET code = code
RETURNING code
"""
# An upsert that fires the UPDATE trigger (INSERT OR REPLACE would delete without firing it).
_UPSERT_TERMS = """
INSERT INTO doc_terms (rowid, words, parts) VALUES (?, ?, ?)
ON CONFLICT (rowid) DO UPDATE SET words = excluded.words, parts = excluded.parts
WHERE doc_terms.words != excluded.words OR doc_terms.parts != excluded.parts
"""
# A changed digest resets the vector only when the text changed: a vector depends on nothing else.
_UPSERT = """
INSERT INTO docs (msg_id, rid, username, ts_ms, text, digest, tmid) VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (msg_id) DO UPDATE SET
    rid = excluded.rid, username = excluded.username, ts_ms = excluded.ts_ms, tmid = excluded.tmid,
    vector_model = CASE WHEN docs.text = excluded.text THEN docs.vector_model END,
    text = excluded.text, digest = excluded.digest
WHERE docs.digest != excluded.digest
RETURNING rowid, vector_model IS NULL
"""


# Every write transaction counts itself here, so a snapshot of the vectors taken at one count is
# known to be current exactly while the count has not moved.
_WRITES_META_KEY = "writes"
_FILE_META_KEY = "file_id"
# The columns exact_vectors reads (a table, so no caller's string reaches the SQL).
_VECTOR_COLUMNS = {"vector": "vector", "context": "context"}
_COUNT_WRITE = """
INSERT INTO meta (key, value) VALUES (?, '1')
ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1
RETURNING CAST(value AS INTEGER)
"""


class _TermCounts:
    """Changes to the per-room statistics, summed over a batch of documents, written in one go.

    A document counts once for each distinct term of its two token columns (the words and the parts
    FTS5 indexes: a word in either matches), and for its room's documents and tokens (BM25's length
    is every token of both columns, as FTS5 counts it).
    """

    def __init__(self) -> None:
        self._terms: dict[tuple[int, str], int] = {}
        self._rooms: dict[int, tuple[int, int]] = {}

    def add(self, code: int, words: str, parts: str, sign: int) -> None:
        word_list, part_list = words.split(), parts.split()
        terms = self._terms
        for term in set(word_list).union(part_list):
            terms[code, term] = terms.get((code, term), 0) + sign
        documents, tokens = self._rooms.get(code, (0, 0))
        self._rooms[code] = (documents + sign, tokens + sign * (len(word_list) + len(part_list)))

    def forget(self, rows: Iterable[tuple[int, str, str]]) -> None:
        """Take out what stored ``doc_terms`` rows (term key, words, parts) counted for."""
        for key, words, parts in rows:
            self.add(int(key) & _ROOM_MASK, words, parts, -1)

    def write(self, conn: sqlite3.Connection) -> None:
        """Apply the changes inside the caller's transaction; a count that reaches 0 leaves the table."""
        changed = [(code, term, delta) for (code, term), delta in self._terms.items() if delta]
        conn.executemany(_ADD_TERM_COUNT, changed)
        conn.executemany(
            "DELETE FROM doc_term_counts WHERE code = ? AND term = ? AND documents <= 0",
            [(code, term) for code, term, delta in changed if delta < 0],
        )
        conn.executemany(
            "UPDATE doc_rooms SET documents = documents + ?, tokens = tokens + ? WHERE code = ?",
            [(documents, tokens, code) for code, (documents, tokens) in self._rooms.items() if documents or tokens],
        )
        self._terms.clear()
        self._rooms.clear()


def _stored_terms(conn: sqlite3.Connection, rowid: int) -> list[tuple[int, str, str]]:
    """The document's ``doc_terms`` rows (term key, words, parts): one, or none before its first upsert."""
    return conn.execute(
        "SELECT rowid, words, parts FROM doc_terms WHERE rowid BETWEEN ? AND ?",
        (term_key(rowid, 0), term_key(rowid, _ROOM_MASK)),
    ).fetchall()


def _count_every_document(conn: sqlite3.Connection) -> None:
    """Count the statistics again from ``doc_terms`` (inside the caller's transaction): the migration
    to layout 7: 6 s for the 100k-message bench file, one pass, no text cut again)."""
    conn.execute("DELETE FROM doc_term_counts")
    conn.execute("UPDATE doc_rooms SET documents = 0, tokens = 0")
    counts = _TermCounts()
    cursor = conn.execute("SELECT rowid, words, parts FROM doc_terms")
    while rows := cursor.fetchmany(_COUNT_BATCH_DOCUMENTS):
        for key, words, parts in rows:
            counts.add(int(key) & _ROOM_MASK, words, parts, 1)
        counts.write(conn)


class IndexCapacityError(sqlite3.DatabaseError):
    """The index file cannot take another room (a term key's room code would overflow)."""


def message_digest(message: Message) -> bytes:
    """A hash of everything the index keeps of a message (room, author, time, text, thread, marks)."""
    parts = (
        message.room_id,
        message.username.lower(),
        str(_ts_ms(message)),
        message.searchable_text,
        message.tmid or "",
        ",".join(message_marks(message)),
    )
    return hashlib.blake2b("\x00".join(parts).encode(), digest_size=_DIGEST_BYTES).digest()


def term_key(rowid: int, room_code: int) -> int:
    """The rowid FTS5 indexes a document's terms under: its rowid, then its room's code in the low bits."""
    return (rowid << ROOM_CODE_BITS) | room_code


def content_key(text: str) -> bytes:
    """What identical texts share: the key under which the vector matrix holds one vector for them."""
    return hashlib.blake2b(text.encode(), digest_size=_CONTENT_KEY_BYTES).digest()


def _ts_ms(message: Message) -> int:
    return int(message.ts.timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class IndexedDoc:
    """What a write did to one document: its rowid, and whether it now needs a vector."""

    rowid: int
    needs_vector: bool


@dataclass(frozen=True, slots=True)
class DocRow:
    rowid: int
    msg_id: str
    rid: str
    username: str  # folded
    ts_ms: int


@dataclass(frozen=True, slots=True)
class KeywordScope:
    """Rooms always; folded usernames and an inclusive epoch-ms window when given."""

    rooms: Sequence[str]
    users: Sequence[str] | None = None
    ts_min_ms: int | None = None
    ts_max_ms: int | None = None


@dataclass(frozen=True, slots=True)
class DocConditions:
    """A search's conditions beyond room, author and time, in the index's terms.

    `marks`/`not_marks` name ``doc_marks`` rows a document must hold / must not (``ROOT_MARK`` for a
    thread's first message); `not_usernames` are folded
    authors left out; `required` FTS5 expressions each must match (quoted phrases) and `excluded` one
    none may (excluded words and phrases, OR-ed). Contradictions (`has:file -has:file`) match nothing.
    """

    marks: tuple[str, ...] = ()
    not_marks: tuple[str, ...] = ()
    not_usernames: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    excluded: str = ""

    def where(self, rowid: str = "d.rowid") -> tuple[list[str], list[object]]:
        """SQL conditions on the documents and their parameters, FTS5 left aside: `rowid` is the SQL
        of the document's rowid, the author condition needs ``docs`` as `d` (`needs_docs`)."""
        where: list[str] = []
        params: list[object] = []
        for mark in self.marks:
            where.append(f"{rowid} IN (SELECT rowid FROM doc_marks WHERE mark = ?)")
            params.append(mark)
        for mark in self.not_marks:
            where.append(f"{rowid} NOT IN (SELECT rowid FROM doc_marks WHERE mark = ?)")
            params.append(mark)
        if self.not_usernames:
            where.append("d.username NOT IN (SELECT value FROM json_each(?))")
            params.append(_json_list(u.lower() for u in self.not_usernames))
        return where, params

    @property
    def needs_docs(self) -> bool:
        return bool(self.not_usernames)

    def match(self, expression: str) -> str:
        """A keyword query's FTS5 expression narrowed by the required and excluded expressions."""
        for required in self.required:
            expression = f"({expression}) AND ({required})"
        return f"({expression}) NOT ({self.excluded})" if self.excluded else expression


@dataclass(frozen=True, slots=True)
class KeywordHit:
    rowid: int
    msg_id: str
    rid: str
    username: str
    ts_ms: int
    bm25: float  # BM25 from the scope's statistics, negative as SQLite's bm25(): more negative is better
    text: str
    coverage: float = 0.0  # share of the query's term weight the message matches (set by the index)
    # The folded tokens FTS5 indexed (doc_terms: words in order, then parts), space-separated: what
    # the coverage is computed from without cutting the text again.
    words: str = ""
    parts: str = ""


class KeywordMatch(NamedTuple):
    """A document matching a keyword query, as the ranking reads it: its term key (the document's
    rowid, then its room's code) and the folded tokens FTS5 indexed, space-separated. A tuple: a
    search makes thousands."""

    key: int
    words: str
    parts: str

    @property
    def rowid(self) -> int:
        return self.key >> ROOM_CODE_BITS


@dataclass(frozen=True, slots=True)
class ScopeCounts:
    """Statistics of a scope's rooms (``IndexDatabase.scope_counts``): documents, their tokens, and
    documents per word (``"prefix*"``: summed over the words with that prefix)."""

    documents: int
    tokens: int
    terms: dict[str, int]


@dataclass(frozen=True, slots=True)
class StoredVector:
    rowid: int
    rid: str
    username: str
    ts_ms: int
    key: bytes  # content_key(text): rows with the same text share one vector in memory
    vector: npt.NDArray[np.float32] | None  # None when `load_vectors` was told the key is known
    context: npt.NDArray[np.float32] | None = None  # the message with its conversation, if it has one


class IndexDatabase:
    """The index file. Raises sqlite3.Error on database failures (the callers decide what to say)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self.write_lock = threading.RLock()
        # The write stamp this process's last counted transaction left ("" before its first).
        self.own_write_stamp = ""
        self._closed = False
        conn = self._connection()
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        rebuild_fts = version in (4, 5)
        if version == 4:
            with self.transaction() as write:
                for statement in _MIGRATE_FROM_4:
                    write.execute(statement)
                write.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, '1')", (RESCAN_META_KEY,))
        if version in (4, 5):
            # Uncounted: the vector snapshot (rows, rooms, vectors by docs.rowid) stays what it was.
            with self.transaction(counted=False) as write:
                for statement in _MIGRATE_FROM_5:
                    write.execute(statement)
        elif version not in (0, 6, INDEX_SCHEMA_VERSION):
            # An index is a cache of the store: an unknown layout is rebuilt, never migrated.
            conn.executescript(
                "DROP TABLE IF EXISTS docs_vocab; DROP TABLE IF EXISTS docs_fts; DROP TABLE IF EXISTS docs;"
                " DROP TABLE IF EXISTS doc_vectors; DROP TABLE IF EXISTS doc_terms; DROP TABLE IF EXISTS meta;"
                " DROP TABLE IF EXISTS doc_rooms; DROP TABLE IF EXISTS doc_term_counts;"
            )
        count_terms = version in (4, 5, 6)
        if count_terms:
            with self.transaction(counted=False) as write:
                for statement in _MIGRATE_FROM_6:
                    write.execute(statement)
        with self.transaction(counted=False) as write:
            for statement in _SCHEMA:
                write.execute(statement)
            if rebuild_fts:
                write.execute("INSERT INTO docs_fts (docs_fts) VALUES ('rebuild')")
            if count_terms:
                _count_every_document(write)
            write.execute(f"PRAGMA user_version = {INDEX_SCHEMA_VERSION}")
            # Names this file among every index file ever made here (one deleted and rebuilt, an
            # older layout dropped): its write count starts again from nothing.
            write.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (_FILE_META_KEY, uuid.uuid4().hex)
            )

    # -- plumbing ---------------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise sqlite3.ProgrammingError("the search index is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            # check_same_thread=False only so close() can close every thread's connection.
            conn = sqlite3.connect(
                self.path, timeout=INDEX_BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {INDEX_BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            # The index is rebuilt from the store after a crash: durability of the last commit is cheap to lose.
            conn.execute("PRAGMA synchronous = NORMAL")
            with self._connections_lock:
                self._connections.append(conn)
            self._local.conn = conn
        return conn

    @contextmanager
    def transaction(self, *, counted: bool = True) -> Iterator[sqlite3.Connection]:
        """A write transaction; a counted one moves the file's `write_stamp`."""
        conn = self._connection()
        with self.write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                count = conn.execute(_COUNT_WRITE, (_WRITES_META_KEY,)).fetchone()[0] if counted else None
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            if count is not None:
                self.own_write_stamp = f"{self.get_meta(_FILE_META_KEY)}:{count}"

    def write_stamp(self) -> str:
        """This file and how many counted write transactions it has seen, by any process: what the
        vector snapshot is checked against (index.py). Any write, or another file, gives another."""
        return f"{self.get_meta(_FILE_META_KEY)}:{self.get_meta(_WRITES_META_KEY) or 0}"

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._connections_lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()

    # -- meta ---------------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self._connection().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def delete_meta(self, key: str) -> None:
        with self.transaction() as conn:
            conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    # -- documents ------------------------------------------------------------------------------

    def count(self) -> int:
        return int(self._connection().execute("SELECT count(*) FROM docs").fetchone()[0])

    def digests(self) -> dict[str, bytes]:
        """msg_id -> digest of every document (to compare with the store when catching up)."""
        return {
            row[0]: bytes(row[1]) for row in self._connection().execute("SELECT msg_id, digest FROM docs")
        }

    def upsert(self, conn: sqlite3.Connection, messages: Iterable[Message]) -> list[IndexedDoc]:
        """Insert or update documents inside the caller's transaction; unchanged ones are skipped."""
        changed = []
        counts = _TermCounts()
        for message in messages:
            row = conn.execute(
                _UPSERT,
                (
                    message.id,
                    message.room_id,
                    message.username.lower(),
                    _ts_ms(message),
                    message.searchable_text,
                    message_digest(message),
                    message.tmid,
                ),
            ).fetchone()
            if row is not None:
                rowid = int(row[0])
                code = self._room_code(conn, message.room_id)
                key = term_key(rowid, code)
                # What the document counted for until now (in its old room, if it moved) leaves the
                # statistics; a document moved to another room leaves its terms' old key.
                counts.forget(_stored_terms(conn, rowid))
                conn.execute(
                    "DELETE FROM doc_terms WHERE rowid BETWEEN ? AND ? AND rowid != ?",
                    (term_key(rowid, 0), term_key(rowid, _ROOM_MASK), key),
                )
                conn.execute(f"DELETE FROM doc_marks WHERE mark IN ({_MARK_LIST}) AND rowid = ?", (rowid,))
                conn.executemany(
                    "INSERT INTO doc_marks (mark, rowid) VALUES (?, ?)",
                    [(mark, rowid) for mark in message_marks(message)],
                )
                tokens = text_tokens(message.searchable_text)
                words, parts = token_column_text(tokens.words), token_column_text(tokens.parts)
                conn.execute(_UPSERT_TERMS, (key, words, parts))
                counts.add(code, words, parts, 1)
                changed.append(IndexedDoc(rowid=int(row[0]), needs_vector=bool(row[1])))
        counts.write(conn)
        return changed

    @staticmethod
    def _room_code(conn: sqlite3.Connection, rid: str) -> int:
        """The room's code in this file, given now if it has none (inside the caller's transaction).

        Raises:
            IndexCapacityError: the file holds as many rooms as a term key can name.
        """
        code = int(conn.execute(_ROOM_CODE, (rid,)).fetchone()[0])
        if code > _ROOM_MASK:
            raise IndexCapacityError(f"the search index holds {_ROOM_MASK:,} rooms, the most it can")
        return code

    def delete(self, conn: sqlite3.Connection, msg_ids: Iterable[str]) -> list[int]:
        """Delete documents inside the caller's transaction; returns the rowids that were there."""
        removed = []
        counts = _TermCounts()
        for msg_id in msg_ids:
            row = conn.execute("SELECT rowid FROM docs WHERE msg_id = ?", (msg_id,)).fetchone()
            if row is None:
                continue
            rowid = int(row[0])
            # The terms go first, so that what they counted for leaves the statistics with them
            # (the docs trigger would delete them unseen).
            counts.forget(
                conn.execute(
                    "DELETE FROM doc_terms WHERE rowid BETWEEN ? AND ? RETURNING rowid, words, parts",
                    (term_key(rowid, 0), term_key(rowid, _ROOM_MASK)),
                ).fetchall()
            )
            conn.execute("DELETE FROM docs WHERE rowid = ?", (rowid,))
            removed.append(rowid)
        counts.write(conn)
        return removed

    def rows(self, rowids: Sequence[int]) -> dict[int, DocRow]:
        """rowid -> the document's ids and filter fields, for the documents still there."""
        if not rowids:
            return {}
        rows = self._connection().execute(
            "SELECT rowid, msg_id, rid, username, ts_ms FROM docs"
            " WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps([int(r) for r in rowids]),),
        )
        return {int(r[0]): DocRow(int(r[0]), r[1], r[2], r[3], int(r[4])) for r in rows}

    def texts(self, rowids: Sequence[int]) -> dict[int, tuple[str, bytes]]:
        """rowid -> (text, digest) of the documents still there."""
        rows = self._connection().execute(
            "SELECT rowid, text, digest FROM docs WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps([int(r) for r in rowids]),),
        )
        return {int(r[0]): (r[1], bytes(r[2])) for r in rows}

    def vector_states(self, msg_ids: Sequence[str], model_id: str) -> dict[int, bool]:
        """rowid -> whether ``model_id`` made its stored vector, for the given messages still there."""
        rows = self._connection().execute(
            "SELECT rowid, vector_model IS ? FROM docs WHERE msg_id IN (SELECT value FROM json_each(?))",
            (model_id, json.dumps(list(msg_ids))),
        )
        return {int(r[0]): bool(r[1]) for r in rows}

    def unembedded(self, model_id: str) -> list[int]:
        """Rowids with no vector, or one made by another embedder, oldest first."""
        rows = self._connection().execute(
            "SELECT rowid FROM docs WHERE vector_model IS NOT ? ORDER BY rowid", (model_id,)
        )
        return [int(r[0]) for r in rows]

    def store_vectors(
        self,
        items: Sequence[tuple[int, bytes, npt.NDArray[np.float32], npt.NDArray[np.float32] | None]],
        model_id: str,
    ) -> list[int]:
        """Save (rowid, digest they were made from, vector, context vector or None); a document
        edited since keeps no vector. Returns the rowids saved.
        """
        saved = []
        with self.transaction() as conn:
            for rowid, digest, vector, context in items:
                blob = np.asarray(vector, dtype="<f2").tobytes()
                context_blob = None if context is None else np.asarray(context, dtype="<f2").tobytes()
                cursor = conn.execute(
                    "UPDATE docs SET vector_model = ? WHERE rowid = ? AND digest = ?",
                    (model_id, rowid, digest),
                )
                if cursor.rowcount:
                    conn.execute(
                        "INSERT OR REPLACE INTO doc_vectors (rowid, vector, context) VALUES (?, ?, ?)",
                        (rowid, blob, context_blob),
                    )
                    saved.append(rowid)
        return saved

    def load_vectors(
        self,
        model_id: str,
        dimensions: int | None,
        known: Callable[[bytes], bool] = lambda key: False,
        batch_rows: int = 10_000,
        rowids: Sequence[int] | None = None,
    ) -> Iterator[list[StoredVector]]:
        """Every stored vector made by `model_id` (of `rowids` only, when given), in batches.

        A row whose content key `known` says is held already, or that an earlier row of its batch
        carried, comes without its vector (not decoded: at a million messages with repeated texts,
        that is most of the load time); add the rows to the matrix in the order given.
        """
        sql = (
            "SELECT d.rowid, d.rid, d.username, d.ts_ms, d.text, v.vector, v.context"
            " FROM docs d JOIN doc_vectors v ON v.rowid = d.rowid WHERE d.vector_model = ?"
        )
        params: list[object] = [model_id]
        if rowids is not None:
            sql += " AND d.rowid IN (SELECT value FROM json_each(?))"
            params.append(json.dumps([int(r) for r in rowids]))
        cursor = self._connection().execute(sql, params)
        while rows := cursor.fetchmany(batch_rows):
            # Per batch, not per load: a set of every key would hold 100 MB at a million texts, and
            # `known` covers the earlier batches (their rows are in the matrix by now).
            decoded: set[bytes] = set()
            batch = []
            for rowid, rid, username, ts_ms, text, blob, context_blob in rows:
                if dimensions is not None and len(blob) != 2 * dimensions:
                    continue
                key = content_key(text)
                vector = None
                if key not in decoded and not known(key):
                    vector = np.frombuffer(blob, dtype="<f2").astype(np.float32)
                    decoded.add(key)
                context = None
                if context_blob is not None and len(context_blob) == len(blob):
                    context = np.frombuffer(context_blob, dtype="<f2").astype(np.float32)
                batch.append(StoredVector(int(rowid), rid, username, int(ts_ms), key, vector, context))
            yield batch

    def exact_vectors(
        self, rowids: Sequence[int], column: Literal["vector", "context"]
    ) -> dict[int, npt.NDArray[np.float32]]:
        """rowid -> the stored float16 vector (or context vector) as float32, for the rows that have one:
        what the matrix re-scores its candidates with."""
        if not rowids:
            return {}
        rows = self._connection().execute(
            f"SELECT rowid, {_VECTOR_COLUMNS[column]} FROM doc_vectors WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps([int(r) for r in rowids]),),
        )
        found = [(int(rowid), blob) for rowid, blob in rows if blob is not None]
        if not found:
            return {}
        # One conversion for all of them: per-row frombuffer + astype was most of the re-scoring time.
        size = len(found[0][1])
        found = [(rowid, blob) for rowid, blob in found if len(blob) == size]
        vectors = np.frombuffer(b"".join(blob for _, blob in found), dtype="<f2").reshape(len(found), -1)
        return dict(zip((rowid for rowid, _ in found), vectors.astype(np.float32), strict=True))

    def scope_counts(self, rooms: Sequence[str], words: Iterable[str], prefixes: Iterable[str]) -> ScopeCounts:
        """The statistics of `rooms` only: their documents and tokens, and per word the documents
        holding it, per prefix the sum over the words starting with it (an upper bound).

        Read in one snapshot, from ``doc_rooms`` and ``doc_term_counts``: one B-tree lookup per room
        and word (a range per room and prefix), so neither the cost nor the answer depends on what
        any other room holds.
        """
        conn = self._connection()
        snapshot = not conn.in_transaction  # inside the caller's transaction, that one is the snapshot
        if snapshot:
            conn.execute("BEGIN")
        try:
            rows = conn.execute(
                "SELECT code, documents, tokens FROM doc_rooms WHERE rid IN (SELECT value FROM json_each(?))",
                (_json_list(rooms),),
            ).fetchall()
            codes = json.dumps([int(row[0]) for row in rows])
            in_rooms = "SELECT coalesce(sum(documents), 0) FROM doc_term_counts WHERE code IN (SELECT value FROM json_each(?))"
            counts: dict[str, int] = {}
            for word in words:
                counts[word] = int(conn.execute(f"{in_rooms} AND term = ?", (codes, word)).fetchone()[0])
            for prefix in prefixes:
                # Every term starting with the prefix sorts between it and it + the highest code point.
                counts[prefix + "*"] = int(
                    conn.execute(
                        f"{in_rooms} AND term >= ? AND term < ?", (codes, prefix, prefix + "\U0010ffff")
                    ).fetchone()[0]
                )
        finally:
            if snapshot:
                conn.execute("COMMIT")
        return ScopeCounts(sum(int(r[1]) for r in rows), sum(int(r[2]) for r in rows), counts)

    def condition_rowids(
        self, conditions: DocConditions
    ) -> tuple[npt.NDArray[np.int64] | None, npt.NDArray[np.int64] | None]:
        """(rowids holding every positive condition, rowids holding any negative one), sorted; None
        for a side with no condition. Authors are left to the caller (the vector mask has them).

        Each side is one SQL statement over the marks' key and FTS5: its cost
        grows with the documents that hold the attribute, not with the index.
        """
        marks = "SELECT rowid AS id FROM doc_marks WHERE mark = ?"
        matches = f"SELECT rowid >> {ROOM_CODE_BITS} AS id FROM docs_fts WHERE docs_fts MATCH ?"
        positive: list[tuple[str, list[object]]] = [(marks, [mark]) for mark in conditions.marks]
        positive += [(matches, [expression]) for expression in conditions.required]
        negative: list[tuple[str, list[object]]] = [(marks, [mark]) for mark in conditions.not_marks]
        if conditions.excluded:
            negative.append((matches, [conditions.excluded]))
        return self._rowid_set(positive, " INTERSECT "), self._rowid_set(negative, " UNION ")

    def _rowid_set(
        self, parts: Sequence[tuple[str, list[object]]], operator: str
    ) -> npt.NDArray[np.int64] | None:
        if not parts:
            return None
        combined = operator.join(part for part, _params in parts)
        params = [p for _part, part_params in parts for p in part_params]
        # One JSON array rather than a row per rowid: 10k rowids in a fifth of the time.
        (found,) = self._connection().execute(f"SELECT json_group_array(id) FROM ({combined})", params).fetchone()
        return np.sort(np.asarray(json.loads(found), dtype=np.int64))

    def keyword_matches(
        self,
        match: str,
        scope: KeywordScope,
        *,
        newest: int | None = None,
        conditions: DocConditions | None = None,
    ) -> list[KeywordMatch]:
        """The documents matching the FTS5 expression inside the scope, with their stored tokens, in
        no particular order: the caller ranks them (``index.py``, from the scope's own statistics).

        With `newest`, only the `newest` most recently indexed matches in scope: FTS5 walks the match
        list from its highest rowid down, the scope is checked row by row, and the walk stops there,
        so the cost is bounded by `newest` (and the scope's share), not by the length of the list.
        The scope, and the `conditions`, always sit in the same query as the match: a message
        holding the attribute is found however many others match.

        Nothing here ranks: FTS5's ``bm25()`` weighs terms by counts over the whole index (every
        room), so a ranking it made would depend on rooms outside the scope.
        """
        if conditions is not None:
            match = conditions.match(match)
        # The rooms are read from the match's own rowid (the term key), never from a join: only
        # an author or time condition reads the document's row, and only for matches in the rooms.
        rowid = f"(docs_fts.rowid >> {ROOM_CODE_BITS})"
        where = [
            "docs_fts MATCH ?",
            f"(docs_fts.rowid & {_ROOM_MASK}) IN"
            " (SELECT code FROM doc_rooms WHERE rid IN (SELECT value FROM json_each(?)))",
        ]
        params: list[object] = [match, _json_list(scope.rooms)]
        needs_docs = False
        if conditions is not None:
            extra, extra_params = conditions.where(rowid)
            where += extra
            params += extra_params
            needs_docs = conditions.needs_docs
        if scope.users is not None:
            where.append("d.username IN (SELECT value FROM json_each(?))")
            params.append(_json_list(u.lower() for u in scope.users))
        if scope.ts_min_ms is not None:
            where.append("d.ts_ms >= ?")
            params.append(scope.ts_min_ms)
        if scope.ts_max_ms is not None:
            where.append("d.ts_ms <= ?")
            params.append(scope.ts_max_ms)
        needs_docs = needs_docs or scope.users is not None or scope.ts_min_ms is not None or scope.ts_max_ms is not None
        joined = f" JOIN docs d ON d.rowid = {rowid}" if needs_docs else ""
        keys = f"SELECT docs_fts.rowid AS key FROM docs_fts{joined} WHERE {' AND '.join(where)}"
        if newest is not None:
            keys += " ORDER BY docs_fts.rowid DESC LIMIT ?"
            params.append(newest)
        sql = f"SELECT t.rowid, t.words, t.parts FROM ({keys}) h JOIN doc_terms t ON t.rowid = h.key"
        return [KeywordMatch._make(row) for row in self._connection().execute(sql, params)]

    def keyword_rows(self, rowids: Sequence[int]) -> dict[int, tuple[DocRow, str]]:
        """rowid -> (the document's ids and filter fields, its text), for the documents still there:
        what a keyword hit shows, read for the few that are returned."""
        if not rowids:
            return {}
        rows = self._connection().execute(
            "SELECT rowid, msg_id, rid, username, ts_ms, text FROM docs"
            " WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps([int(r) for r in rowids]),),
        )
        return {int(r[0]): (DocRow(int(r[0]), r[1], r[2], r[3], int(r[4])), r[5]) for r in rows}


def _json_list(values: Iterable[str]) -> str:
    # One JSON parameter read by json_each(): a caller with thousands of rooms never meets SQLite's
    # limit on bound variables.
    return json.dumps(list(values))
