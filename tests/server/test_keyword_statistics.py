"""The keyword branch's per-room statistics: what a search weighs its terms by, counted per room.

index.db layout 7 keeps, per room, the documents holding each term and the room's documents and
tokens (``doc_term_counts``, ``doc_rooms``); PostgreSQL's terms layout 2 the same in
``message_term_counts`` (fed by a trigger through ``message_term_deltas``). A search sums them over
its own rooms (``keyword_rank.py``). Checked here:

- **FTS5**: through posts, edits, moves between rooms and deletes, each room's counts equal a recount
  of its documents' stored tokens, and summed over every room they equal FTS5's own counts
  (``docs_vocab``) term for term: the tokens counted are the ones FTS5 matches (for the scripts
  ``tokens.py`` is made for; a few compatibility characters, ``½`` or mathematical letters, fold
  apart in FTS5's tokenizer, as they did before these counts);
- counting a scope's statistics costs the same number of SQLite steps whatever other rooms hold (a
  primary-key lookup per room and term);
- a layout-6 file is counted in place: no vector is embedded again, every result stays;
- the ranking reads the stored columns as ``TermMatcher`` does (the highlights' rule), and counts
  every occurrence FTS5's BM25 counts (a Hypothesis property against splitting the columns);
- **PostgreSQL**: the counts and the deltas not folded yet equal a recount of ``message_terms``
  per room, before and after folding, through posts, edits, moves, the store's deletes (its trigger
  removes the row) and a second writer; and the scope's statistics are the FTS5 branch's.
"""

from __future__ import annotations

import doctest
import random
import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ai_search_server.retrieval import keyword_rank
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.index_db import ROOM_CODE_BITS, IndexDatabase, KeywordScope
from ai_search_server.retrieval.keyword_rank import BM25_B, BM25_K1, PART_WEIGHT, TokenRanker
from ai_search_server.retrieval.pg_keyword import PgKeywordIndex
from ai_search_server.retrieval.terms import TermMatcher, is_prefix_term, query_terms, term_coverage
from ai_search_server.store import open_store
from ai_search_server.store.records import Attachment, Message
from tests._postgres import PostgresCluster

from ._search_support import reopened_after_downgrade
from .conftest import Workspace

START = datetime(2026, 4, 1, tzinfo=UTC)
ROOMS = [f"room-{n}" for n in range(5)]
# Words, a prefix family, identifiers (their parts count too), CJK pairs, diacritics, digits.
WORDS = [
    "deploy", "deployment", "deploys", "canary", "harbor", "lunch", "InvalidProviderToken", "pg16",
    "ERR_CONN_RESET", "v2.14.0", "老化测试", "Déploiement", "café", "SRE-14", "the", "was",
]  # fmt: skip
MASK = (1 << ROOM_CODE_BITS) - 1


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(1, 7)))


def _message(n: int, rng: random.Random, room: str | None = None) -> Message:
    attachments = (Attachment(name=f"{rng.choice(WORDS)}.log"),) if n % 5 == 0 else ()
    return Message(
        f"m{n}", room or rng.choice(ROOMS), "u-1", "bob", "Bob", START + timedelta(minutes=n), _text(rng),
        attachments=attachments,
    )  # fmt: skip


def _recount(db: IndexDatabase) -> tuple[Counter[tuple[int, str]], dict[int, tuple[int, int]]]:
    """(code, term) -> documents, and code -> (documents, tokens), counted again from doc_terms."""
    terms: Counter[tuple[int, str]] = Counter()
    rooms: dict[int, tuple[int, int]] = {}
    for key, words, parts in db._connection().execute("SELECT rowid, words, parts FROM doc_terms"):
        code = key & MASK
        terms.update((code, term) for term in set(words.split()) | set(parts.split()))
        documents, tokens = rooms.get(code, (0, 0))
        rooms[code] = (documents + 1, tokens + len(words.split()) + len(parts.split()))
    return terms, rooms


def _assert_counts_hold(db: IndexDatabase) -> None:
    conn = db._connection()
    terms, rooms = _recount(db)
    stored = {(int(c), t): int(n) for c, t, n in conn.execute("SELECT code, term, documents FROM doc_term_counts")}
    assert stored == dict(terms), "each room's term counts are its documents' tokens, no zero rows left"
    kept = {int(c): (int(d), int(t)) for c, d, t in conn.execute("SELECT code, documents, tokens FROM doc_rooms")}
    assert {c: v for c, v in kept.items() if v != (0, 0)} == rooms
    summed: Counter[str] = Counter()
    for (_code, term), documents in terms.items():
        summed[term] += documents
    fts5 = {str(t): int(n) for t, n in conn.execute("SELECT term, doc FROM docs_vocab")}
    assert dict(summed) == fts5, "summed over every room, the counts are FTS5's own"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[IndexDatabase]:
    opened = IndexDatabase(tmp_path / INDEX_FILENAME)
    yield opened
    opened.close()


def test_each_rooms_counts_follow_posts_edits_moves_and_deletes(db: IndexDatabase) -> None:
    rng = random.Random(7)
    messages = [_message(n, rng) for n in range(300)]
    with db.transaction() as conn:
        db.upsert(conn, messages)
    _assert_counts_hold(db)
    assert db._connection().execute("SELECT count(*) FROM doc_term_counts").fetchone()[0] > 50
    with db.transaction() as conn:  # edits, some to an empty text
        db.upsert(conn, [replace(m, text=_text(rng) if n % 3 else "") for n, m in enumerate(messages[:60])])
    with db.transaction() as conn:  # moves to another room, some edited on the way
        db.upsert(conn, [replace(m, room_id=ROOMS[(ROOMS.index(m.room_id) + 1) % len(ROOMS)]) for m in messages[60:120]])
    with db.transaction() as conn:  # an unchanged upsert changes nothing
        db.upsert(conn, messages[200:220])
    _assert_counts_hold(db)
    with db.transaction() as conn:
        db.delete(conn, [m.id for m in messages[100:250]] + ["never-indexed"])
    _assert_counts_hold(db)
    with db.transaction() as conn:
        db.delete(conn, [m.id for m in messages])
    assert db._connection().execute("SELECT count(*) FROM doc_term_counts").fetchone()[0] == 0
    assert db.scope_counts(ROOMS, ["deploy"], ["depl"]).documents == 0


def _steps(db: IndexDatabase, rooms: list[str]) -> int:
    """SQLite VM instructions `scope_counts` runs for `rooms` (deterministic, unlike time)."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn = db._connection()
    conn.set_progress_handler(count, 1)
    try:
        db.scope_counts(rooms, ["deploy", "canary", "pg16", "nowhere"], ["depl", "harb"])
    finally:
        conn.set_progress_handler(None, 1)
    return steps


def test_counting_a_scope_costs_the_same_whatever_other_rooms_hold(db: IndexDatabase) -> None:
    rng = random.Random(11)
    with db.transaction() as conn:
        db.upsert(conn, [_message(n, rng, room=ROOMS[n % 2]) for n in range(200)])
        db.upsert(conn, [_message(1000, rng, room="hidden")])
    mine = ROOMS[:2]
    before, counts = _steps(db, mine), db.scope_counts(mine, ["deploy"], ["depl"])
    with db.transaction() as conn:  # thousands of uses of the same words in a room outside the scope
        db.upsert(conn, [_message(n, rng, room="hidden") for n in range(2000, 5000)])
    assert _steps(db, mine) == before
    assert db.scope_counts(mine, ["deploy"], ["depl"]) == counts


def _downgrade_to_layout_6(path: Path) -> None:
    """What layout 6 kept: no per-room statistics."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        DROP TABLE doc_term_counts;
        ALTER TABLE doc_rooms DROP COLUMN documents;
        ALTER TABLE doc_rooms DROP COLUMN tokens;
        PRAGMA user_version = 6;
        """
    )
    conn.close()


def test_a_layout_6_file_is_counted_in_place_keeping_vectors_and_results(
    workspace: Workspace, data_dir: Path
) -> None:
    rooms = [room.id for room in workspace.rooms.values()]
    queries = ["deploy", "deploy failed billing", "lunch", '"rolling back"']
    index, _embedder, before = reopened_after_downgrade(
        workspace.store, rooms, data_dir / INDEX_FILENAME, _downgrade_to_layout_6, queries
    )
    try:
        for query in queries:
            assert index.keyword_search(query_terms(query), KeywordScope(rooms), 20) == before[query]
        _assert_counts_hold(index.db)
    finally:
        index.close()


TOKENS = ["deploy", "deployment", "de", "canary", "err", "conn", "reset", "老化", "化测", "16", "pg"]
RANKED_TERMS = [("deploy",), ("de",), ("canary",), ("err", "conn"), ("老化", "化测"), ("16",), ("conn", "reset", "err")]


def _occurrences(term: tuple[str, ...], tokens: list[str]) -> int:
    """The reference: occurrences of the term among split tokens (a phrase without overlap)."""
    if is_prefix_term(term):
        return sum(1 for token in tokens if token.startswith(term[0]))
    count, i = 0, 0
    while i <= len(tokens) - len(term):
        if tuple(tokens[i : i + len(term)]) == term:
            count, i = count + 1, i + len(term)
        else:
            i += 1
    return count


@settings(max_examples=300)
@given(
    words=st.lists(st.sampled_from(TOKENS), max_size=12),
    parts=st.lists(st.sampled_from(TOKENS), max_size=6),
    terms=st.lists(st.sampled_from(RANKED_TERMS), min_size=1, max_size=4, unique=True),
    data=st.data(),
)
def test_the_ranking_reads_the_columns_as_the_highlights_and_bm25_do(
    words: list[str], parts: list[str], terms: list[tuple[str, ...]], data: st.DataObject
) -> None:
    searched = data.draw(st.lists(st.sampled_from(terms), min_size=1, unique=True))
    weights = {term: 1.0 + n for n, term in enumerate(terms)}
    idf = {term: 2.0 for term in searched}
    ranker = TokenRanker(terms, searched, weights, idf, 5.0)
    coverage, bm25 = ranker.score(" ".join(words), " ".join(parts))
    matched = TermMatcher(terms).matched_columns(" ".join(words), " ".join(parts))
    assert coverage == pytest.approx(term_coverage(matched, weights), abs=1e-12)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * (len(words) + len(parts)) / 5.0)
    expected = 0.0
    for term in searched:
        frequency = _occurrences(term, words) + PART_WEIGHT * _occurrences(term, parts)
        if frequency:
            expected += 2.0 * frequency * (BM25_K1 + 1) / (frequency + norm)
    assert bm25 == pytest.approx(-expected, abs=1e-12)


def test_the_ranking_module_examples_hold() -> None:
    assert doctest.testmod(keyword_rank).failed == 0


# -- PostgreSQL ---------------------------------------------------------------------------------


@pytest.fixture
def pg_url(pg_cluster: PostgresCluster) -> Iterator[str]:
    with pg_cluster.fresh_database() as url:
        yield url


def _pg_recount(url: str) -> tuple[dict[tuple[str, str], int], dict[str, tuple[int, int]]]:
    with psycopg.connect(url) as conn:
        terms = {
            (str(r), str(t)): int(n)
            for r, t, n in conn.execute(
                "SELECT room_id, lexeme, count(*) FROM message_terms, unnest(terms) GROUP BY 1, 2"
            )
        }
        rooms = {
            str(r): (int(d), int(t))
            for r, d, t in conn.execute("SELECT room_id, count(*), sum(tokens) FROM message_terms GROUP BY 1")
        }
    return terms, rooms


def _pg_counts(url: str) -> tuple[dict[tuple[str, str], int], dict[str, tuple[int, int]]]:
    """The counts and the deltas not folded yet, summed: what a search over every room reads."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT room_id, term, sum(documents), sum(tokens) FROM (SELECT * FROM message_term_counts"
            " UNION ALL SELECT * FROM message_term_deltas) c GROUP BY 1, 2 HAVING sum(documents) <> 0"
        ).fetchall()
    terms = {(str(r), str(t)): int(d) for r, t, d, _tokens in rows if t != ""}
    rooms = {str(r): (int(d), int(tokens)) for r, t, d, tokens in rows if t == ""}
    return terms, rooms


def _deltas(url: str) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute("SELECT count(*) FROM message_term_deltas").fetchone()[0])  # type: ignore[index]


def test_postgres_counts_follow_every_write_and_match_the_fts5_branch(pg_url: str, tmp_path: Path) -> None:
    store = open_store(tmp_path / "data", database_url=pg_url)
    other = open_store(tmp_path / "other", database_url=pg_url)  # a second writer on the database
    try:
        bob = store.create_user("bob")
        rooms = [store.create_room("c", name, members=[bob.id]).id for name in ROOMS]
        rng = random.Random(5)
        posted = [
            store.post_message(rooms[n % len(rooms)], bob.id, _text(rng), ts=START + timedelta(minutes=n))
            for n in range(120)
        ]
        pg = PgKeywordIndex.open(pg_url, store, follow=False)
        second = PgKeywordIndex.open(pg_url, other, follow=False)
        try:
            assert _pg_counts(pg_url) == _pg_recount(pg_url)
            for message in posted[:20]:
                store.edit_message(message.id, _text(rng))
            for message in posted[20:40]:
                store.delete_message(message.id)  # the store's trigger drops the row
            for n in range(30):  # written through the second index's listener
                other.post_message(rooms[n % 2], bob.id, _text(rng), ts=START + timedelta(hours=5, minutes=n))
            original = store.get_message(posted[50].id)
            assert original is not None
            with psycopg.connect(pg_url) as conn, conn.transaction():  # a message moved to another room
                pg._write(conn, [replace(original, room_id=rooms[4])])
            assert _deltas(pg_url) > 0
            assert _pg_counts(pg_url) == _pg_recount(pg_url), "counts and deltas, before folding"
            pg.follow_once()
            assert _deltas(pg_url) == 0
            assert _pg_counts(pg_url) == _pg_recount(pg_url), "after folding"
            with psycopg.connect(pg_url) as conn, conn.transaction():  # and back, as the store has it
                pg._write(conn, [original])
            fts5 = EmbeddedIndex.open(tmp_path / INDEX_FILENAME, store, None)
            try:
                terms = query_terms("deploy canary harbor pg16 InvalidProviderToken 老化测试 cafe")
                for scope in (rooms, rooms[:2], rooms[4:], ["no-such-room"]):
                    with pg._pool.connection() as conn:
                        ours = pg._scope_statistics(conn, terms, scope)
                    assert ours == fts5._scope_statistics(terms, scope), scope
            finally:
                fts5.close()
        finally:
            second.close()
            pg.close()
    finally:
        other.close()
        store.close()
