"""``PgKeywordIndex``: the keyword branch on PostgreSQL full-text search, for ``keyword_index = "postgres"``.

With the workspace on PostgreSQL, the keyword branch can run in the database itself: one table
(``message_terms``, ``store/pg_terms.py``: a ``tsvector`` per message under a GIN index, with the
message's room, folded author, time and marks) that every process shares, instead of an FTS5 index
in each process's ``index.db``. Same inputs and outputs as ``EmbeddedIndex.keyword_search``:

- **tokens**: each message is cut by ``tokens.text_tokens`` in Python (folded words, CJK pairs,
  identifier parts) and handed to PostgreSQL as a ready ``tsvector``: words at positions 1..n with
  weight A, parts after a gap with weight B (FTS5's two columns), so no text search configuration
  of PostgreSQL's cuts, stems or drops anything (the stopwords stay ours, ``stopwords.py``);
- **query**: each term is a ``tsquery`` (``'deploy':*`` for a word of 4+ characters, ``'err' <->
  'conn' <-> 'reset'`` for a phrase), OR-ed; excluded words become ``& !(...)``, required phrases
  ``& (...)``; ``has:``/``is:`` read the row's marks (``has:thread``: ``messages.tmid`` names it);
  rooms, authors and time sit in the same ``WHERE``, so nothing out of scope is ever ranked;
- **rank**: BM25 computed in the statement, FTS5's: its constants (``BM25_K1``, ``BM25_B``), its
  IDF (``ln((N - n + 0.5) / (n + 0.5))`` from each term's matches, counted through the GIN index
  before the query), its column weights (a part counts half a word), the tokens stored as the
  length. The term frequency is read back from ``ts_rank`` of the term alone, once with only the
  words weighted and once with only the parts (the ``term_frequency`` SQL function inverts
  ts_rank's sum of 1/j^2: exact for one lexeme, the count of lexemes for a prefix matching
  several). ``ts_rank``/``ts_rank_cd`` alone were not used: they know no term's rarity, so the
  pool of 200 they would pick for an OR query is led by the common words;
- then, as in the FTS5 branch, the pool is ordered by **coverage** (the share of the query's squared
  IDF weight a message holds), with the same bounds (common terms, MaxScore's essential terms, and
  past ``KEYWORD_EXACT_MAX_MATCHES`` the newest matches beside an AND of every term).

**Kept current** like ``index.db``: this process's writes through the store's listener (findable as
soon as ``post_message`` returns, by every process), any process's through the store's change log,
read every ``FOLLOW_INTERVAL_SECONDS``. The log position the table is level with lives in the
database (``message_terms_state``), and an advisory lock lets one process apply changes at a time, so N proxies do the work once. A deleted message's row goes in the delete's own
transaction (a trigger). A table of another layout (``TERMS_LAYOUT``) is rebuilt from the store.

Raises ``PipelineError`` (branch ``keyword``) when PostgreSQL fails during a search: the service then
answers with the other branch.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from ..store.base import StorageFailure, Store
from ..store.records import Message, MessageEvent
from . import index as fts_index  # the FTS5 branch's bounds, read at each search: one set for both
from .conditions import MessageConditions
from .embedded import HAS_MARKS, IS_MARKS
from .index import DOCUMENT_COUNT_SECONDS, FOLLOW_BATCH_MESSAGES, FOLLOW_INTERVAL_SECONDS, _essential_terms
from .index_db import ROOT_MARK, KeywordHit, KeywordScope, message_digest
from .message_checks import message_marks
from .pipeline_client import PipelineError
from .progress import ProgressReporter
from .terms import Term, is_prefix_term, term_coverage, term_weights, value_term
from .tokens import TextTokens, text_tokens

__all__ = [
    "BM25_B",
    "BM25_K1",
    "MAX_LEXEME_BYTES",
    "MAX_POSITION",
    "PG_KEYWORD_CONNECTIONS",
    "TERMS_LAYOUT",
    "PgKeywordIndex",
    "term_query",
    "tsvector_text",
]

log = logging.getLogger(__name__)

#: The layout of ``message_terms`` rows (tokens and tsvector); a table of another is rebuilt.
TERMS_LAYOUT = "1"
# PostgreSQL refuses a lexeme longer than this (bytes of UTF-8); such a token (a pasted blob) is not
# indexed, as no one types it.
MAX_LEXEME_BYTES = 2046
# The largest position a tsvector holds; later tokens share it (phrases past it do not match).
MAX_POSITION = 16383
# Connections one process keeps to PostgreSQL for the keyword branch (searches and index writes).
PG_KEYWORD_CONNECTIONS = 4
# How long a search or write waits for a free connection (seconds).
PG_KEYWORD_WAIT_SECONDS = 10.0
# BM25's constants, FTS5's: term-frequency saturation and length normalisation.
BM25_K1 = 1.2
BM25_B = 0.75
# FTS5's floor on a term's IDF.
_MIN_IDF = 1e-6
# ts_rank's weights (D, C, B, A) that rank the words alone (A) and the parts alone (B).
_WORDS_ONLY = "'{0, 0, 0, 1}'::float4[]"
_PARTS_ONLY = "'{0, 0, 1, 0}'::float4[]"
# A part counts half a word, as FTS5's column weights say (index_db._BM25_WEIGHTS).
_PART_WEIGHT = 0.5
# Transaction-level advisory lock taken by whoever applies the change log to the table.
KEYWORD_TERMS_LOCK = 0x61692D736561_03
_LAYOUT_KEY = "layout"
_CHANGE_KEY = "change"
# Messages read from the store per step of a full comparison (messages).
CATCH_UP_BATCH_MESSAGES = 2000

_UPSERT = """
INSERT INTO message_terms (message_id, room_id, username, ts, marks, tokens, terms, digest)
VALUES (%s, %s, %s, %s, %s, %s, %s::tsvector, %s)
ON CONFLICT (message_id) DO UPDATE SET
    room_id = excluded.room_id, username = excluded.username, ts = excluded.ts, marks = excluded.marks,
    tokens = excluded.tokens, terms = excluded.terms, digest = excluded.digest
WHERE message_terms.digest <> excluded.digest
"""


def _lexeme(word: str) -> str:
    """A quoted lexeme of tsvector/tsquery input: nothing of the word is read as syntax."""
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_text(tokens: TextTokens) -> tuple[str, int]:
    """The ``tsvector`` input of a message's tokens, and how many tokens it holds (BM25's length).

    Words take positions 1..n with weight A, parts positions n+2.. with weight B (the gap keeps a
    phrase from running from the last word into the first part, as FTS5's columns do).
    """
    positions: dict[str, list[str]] = {}
    for position, token in enumerate(tokens.words, start=1):
        positions.setdefault(token.text, []).append(f"{min(position, MAX_POSITION)}A")
    first_part = len(tokens.words) + 2
    for offset, token in enumerate(tokens.parts):
        positions.setdefault(token.text, []).append(f"{min(first_part + offset, MAX_POSITION)}B")
    text = " ".join(
        f"{_lexeme(word)}:{','.join(places)}"
        for word, places in positions.items()
        if len(word.encode()) <= MAX_LEXEME_BYTES
    )
    return text, len(tokens.words) + len(tokens.parts)


def term_query(term: Term, *, words_only: bool = False) -> str:
    """One term as ``tsquery`` input: a prefix, a word, or a phrase (its words adjacent, in order).

    ``words_only`` keeps a phrase to the words (weight A): what the coverage counts, as
    ``TermMatcher`` matches phrases among the words only.
    """
    if is_prefix_term(term):
        return _lexeme(term[0]) + ":*"
    if len(term) == 1:
        return _lexeme(term[0])
    label = ":A" if words_only else ""
    return "(" + " <-> ".join(_lexeme(word) + label for word in term) + ")"


def _any_query(terms: Sequence[Term]) -> str:
    return " | ".join(term_query(term) for term in terms)


def _every_query(terms: Sequence[Term]) -> str:
    return " & ".join(term_query(term) for term in terms)


@dataclass(frozen=True, slots=True)
class _Filters:
    """The scope and conditions as SQL on ``message_terms t``, and the tsquery they add."""

    where: tuple[str, ...]
    params: dict[str, Any]
    required: str  # "& ..." appended to the match, or ""


def _filters(scope: KeywordScope, conditions: MessageConditions | None) -> _Filters:
    where = ["t.room_id = ANY(%(rooms)s)"]
    params: dict[str, Any] = {"rooms": list(scope.rooms)}
    if scope.users is not None:
        where.append("t.username = ANY(%(users)s)")
        params["users"] = [u.lower() for u in scope.users]
    if scope.ts_min_ms is not None:
        where.append("t.ts >= %(ts_min)s")
        params["ts_min"] = scope.ts_min_ms
    if scope.ts_max_ms is not None:
        where.append("t.ts <= %(ts_max)s")
        params["ts_max"] = scope.ts_max_ms
    required = ""
    if conditions is not None:
        marks = [*(HAS_MARKS[v] for v in conditions.has), *(IS_MARKS[v] for v in conditions.is_)]
        not_marks = [*(HAS_MARKS[v] for v in conditions.not_has), *(IS_MARKS[v] for v in conditions.not_is)]
        root = "EXISTS (SELECT 1 FROM messages r WHERE r.tmid = t.message_id)"
        if ROOT_MARK in marks:
            where.append(root)
        if ROOT_MARK in not_marks:
            where.append(f"NOT {root}")
        held = [m for m in marks if m != ROOT_MARK]
        refused = [m for m in not_marks if m != ROOT_MARK]
        if held:
            where.append("t.marks @> %(marks)s::text[]")
            params["marks"] = held
        if refused:
            where.append("NOT t.marks && %(not_marks)s::text[]")
            params["not_marks"] = refused
        if conditions.not_usernames:
            where.append("t.username <> ALL(%(not_users)s)")
            params["not_users"] = [u.removeprefix("@").lower() for u in conditions.not_usernames]
        phrases = [term for term in map(value_term, conditions.phrases) if term]
        excluded = [term for term in map(value_term, conditions.not_words) if term]
        required = "".join(f" & {term_query(term)}" for term in phrases)
        if excluded:
            required += f" & !({_any_query(excluded)})"
    return _Filters(tuple(where), params, required)


class PgKeywordIndex:
    """The ``message_terms`` table kept current with the store, and the keyword search over it.

    Thread-safe. Raises ``StorageFailure`` from ``open`` when PostgreSQL cannot be reached.
    """

    def __init__(
        self, pool: ConnectionPool[psycopg.Connection[Any]], store: Store, *, progress: bool
    ) -> None:
        self._pool = pool
        self.store = store
        self._progress = progress
        self._closed = False
        self._stop = threading.Event()
        self._follower: threading.Thread | None = None
        self._statistics: tuple[int, float, float] | None = None  # (documents, mean tokens, when)
        self._seen_change = 0  # the latest store change this process saw applied

    # -- lifecycle --------------------------------------------------------------------------------

    @classmethod
    def open(
        cls, database_url: str, store: Store, *, progress: bool = False, follow: bool = True
    ) -> PgKeywordIndex:
        """Connect, bring the table level with the store (waiting for another process doing it) and
        follow the store's changes from then on (``follow``: in a thread)."""
        pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            database_url,
            min_size=1,
            max_size=PG_KEYWORD_CONNECTIONS,
            kwargs={"autocommit": True},
            timeout=PG_KEYWORD_WAIT_SECONDS,
            open=False,
            name="keyword",
        )
        try:
            pool.open(wait=True, timeout=PG_KEYWORD_WAIT_SECONDS)
        except Exception as exc:
            pool.close()
            raise StorageFailure(f"the PostgreSQL keyword index could not connect: {exc}") from None
        index = cls(pool, store, progress=progress)
        store.add_message_listener(index._on_events)
        try:
            index._level_at_start()
        except psycopg.Error as exc:
            index.close()
            raise StorageFailure(f"bringing the PostgreSQL keyword index level failed: {exc}") from None
        if follow:
            index._follower = threading.Thread(
                target=index._follow_loop, name="pg-keyword-follower", daemon=True
            )
            index._follower.start()
        return index

    def close(self) -> None:
        """Stop following and close the connections. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._follower is not None:
            self._follower.join()
        self._pool.close()

    # -- keeping current --------------------------------------------------------------------------

    @contextmanager
    def _turn(self, *, wait: bool) -> Iterator[psycopg.Connection[Any] | None]:
        """A connection holding the lock on applying changes to the table (None: another process
        holds it and ``wait`` is off). A session lock, so a long comparison commits batch by batch
        and never holds a row that a listener elsewhere waits to write."""
        with self._pool.connection() as conn:
            if wait:
                conn.execute("SELECT pg_advisory_lock(%s)", (KEYWORD_TERMS_LOCK,))
            else:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (KEYWORD_TERMS_LOCK,)).fetchone()
                if row is None or not row[0]:
                    yield None
                    return
            try:
                yield conn
            finally:
                with suppress(psycopg.Error):  # a lost connection took its lock with it
                    conn.execute("SELECT pg_advisory_unlock(%s)", (KEYWORD_TERMS_LOCK,))

    def _level_at_start(self) -> None:
        with self._turn(wait=True) as conn:
            assert conn is not None
            state = dict(conn.execute("SELECT key, value FROM message_terms_state").fetchall())
            latest = self.store.latest_message_change()
            saved = state.get(_CHANGE_KEY)
            if state.get(_LAYOUT_KEY) != TERMS_LAYOUT:
                if state:
                    log.info("keyword index: the PostgreSQL terms are of another layout; rebuilding them")
                conn.execute("TRUNCATE message_terms")
            elif (
                saved is not None
                and saved.isdigit()
                and int(saved) <= latest
                and self.store.message_changes_since(int(saved), limit=1).complete
            ):
                self._seen_change = int(saved)
                while self._apply_log(conn, latest):
                    pass
                return
            self._compare_all(conn)
            self._save_state(conn, latest)
            conn.execute("ANALYZE message_terms")  # the planner's statistics, after a bulk write

    def _save_state(self, conn: psycopg.Connection[Any], change: int) -> None:
        conn.execute(
            "INSERT INTO message_terms_state (key, value) VALUES (%s, %s), (%s, %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (_LAYOUT_KEY, TERMS_LAYOUT, _CHANGE_KEY, str(change)),
        )
        self._seen_change = change

    def _compare_all(self, conn: psycopg.Connection[Any]) -> int:
        """Every message compared with its row by digest: the stale written, the gone deleted."""
        known = {
            str(row[0]): bytes(row[1]) for row in conn.execute("SELECT message_id, digest FROM message_terms")
        }
        total = self.store.count_messages()
        changed = 0
        seen: set[str] = set()
        with ProgressReporter("indexing messages in PostgreSQL", total, enabled=self._progress) as bar:
            for batch in self.store.iter_messages(batch_size=CATCH_UP_BATCH_MESSAGES):
                seen.update(m.id for m in batch)
                stale = [m for m in batch if known.get(m.id) != message_digest(m)]
                with conn.transaction():
                    changed += self._write(conn, stale)
                bar.advance(len(batch))
        gone = sorted(set(known) - seen)
        if gone:
            conn.execute("DELETE FROM message_terms WHERE message_id = ANY(%s)", (gone,))
        if changed or gone:
            log.info("keyword index: %d message(s) written, %d removed in PostgreSQL", changed, len(gone))
        return changed + len(gone)

    def _apply_log(self, conn: psycopg.Connection[Any], latest: int) -> bool:
        """One batch of the change log after the table's position, in one transaction with the new
        position (the caller holds the turn); True when there may be more."""
        (saved,) = conn.execute(
            "SELECT value FROM message_terms_state WHERE key = %s", (_CHANGE_KEY,)
        ).fetchone() or (None,)
        applied = int(saved) if saved is not None and str(saved).isdigit() else -1
        if applied == latest:
            self._seen_change = latest
            return False
        changes = (
            self.store.message_changes_since(applied, limit=FOLLOW_BATCH_MESSAGES)
            if 0 <= applied < latest
            else None
        )
        if changes is None or not changes.complete:
            log.warning("keyword index: the store's change log does not reach back; comparing every message")
            self._compare_all(conn)
            self._save_state(conn, latest)
            return False
        with conn.transaction():
            self._apply(conn, changes.message_ids)
            self._save_state(conn, changes.last)
        return changes.last < latest

    def follow_once(self) -> bool:
        """Apply what any process changed since the table's position, if no other process is doing
        it right now; True when something was applied."""
        latest = self.store.latest_message_change()
        if latest == self._seen_change:
            return False
        with self._turn(wait=False) as conn:
            if conn is None:
                return False  # another process is applying it; the table is shared
            while self._apply_log(conn, latest) and not self._stop.is_set():
                pass
        return True

    def _follow_loop(self) -> None:
        failing = False
        while not self._stop.wait(FOLLOW_INTERVAL_SECONDS) and not self.store.closed:
            try:
                self.follow_once()
                if self._statistics_stale():
                    with self._pool.connection() as conn:
                        self._count_documents(conn)
                failing = False
            except (psycopg.Error, StorageFailure) as exc:  # said once per outage, retried
                if not failing and not self._closed:
                    log.warning("keyword index: following the store failed (%s); retrying", exc)
                failing = True
            except Exception:  # the thread must not die: the table would silently go stale
                log.exception("keyword index: following the store failed; retrying")

    def _apply(self, conn: psycopg.Connection[Any], message_ids: Sequence[str]) -> None:
        messages = self.store.get_messages(message_ids)
        rows = conn.execute(
            "SELECT message_id, digest FROM message_terms WHERE message_id = ANY(%s)", (list(message_ids),)
        ).fetchall()
        known = {str(r[0]): bytes(r[1]) for r in rows}
        self._write(conn, [m for m in messages.values() if known.get(m.id) != message_digest(m)])
        gone = sorted(set(message_ids) - set(messages))
        if gone:
            conn.execute("DELETE FROM message_terms WHERE message_id = ANY(%s)", (gone,))

    def _write(self, conn: psycopg.Connection[Any], messages: Iterable[Message]) -> int:
        rows = []
        for message in sorted(messages, key=lambda m: m.id):  # one order: concurrent writers never deadlock
            terms, tokens = tsvector_text(text_tokens(message.searchable_text))
            rows.append(
                (
                    message.id,
                    message.room_id,
                    message.username.lower(),
                    int(message.ts.timestamp() * 1000),
                    list(message_marks(message)),
                    tokens,
                    terms,
                    message_digest(message),
                )
            )
        if rows:
            with conn.cursor() as cursor:
                cursor.executemany(_UPSERT, rows)
        return len(rows)

    def _on_events(self, events: Sequence[MessageEvent]) -> None:
        """This process's writes, applied at once (the follower would bring them a second later)."""
        if self._closed:
            return
        upserts = {e.message.id: e.message for e in events if e.kind != "deleted"}
        deletions = sorted({e.message.id for e in events if e.kind == "deleted"})
        try:
            with self._pool.connection() as conn, conn.transaction():
                self._write(conn, [m for msg_id, m in upserts.items() if msg_id not in deletions])
                if deletions:
                    conn.execute("DELETE FROM message_terms WHERE message_id = ANY(%s)", (deletions,))
        except psycopg.Error as exc:
            log.warning("keyword index: writing to PostgreSQL failed (%s); the follower retries", exc)

    # -- searching ----------------------------------------------------------------------------------

    def count(self) -> int:
        """Messages the table holds."""
        with self._pool.connection() as conn:
            (found,) = conn.execute("SELECT count(*) FROM message_terms").fetchone() or (0,)
        return int(found)

    def keyword_search(
        self,
        terms: Sequence[Term],
        scope: KeywordScope,
        k: int,
        *,
        min_coverage: float = 0.0,
        conditions: MessageConditions | None = None,
    ) -> list[KeywordHit]:
        """``EmbeddedIndex.keyword_search`` over ``message_terms``: the same bounds, BM25 and coverage.

        Raises:
            PipelineError: PostgreSQL failed (branch ``keyword``).
        """
        if not terms or not scope.rooms or k <= 0:
            return []
        try:
            with self._pool.connection() as conn:
                return self._search(conn, terms, scope, k, min_coverage, conditions)
        except (psycopg.Error, StorageFailure) as exc:
            raise PipelineError("unreachable", branch="keyword", detail=str(exc)) from None
        except TimeoutError as exc:  # psycopg_pool.PoolTimeout
            raise PipelineError("busy", branch="keyword", detail=str(exc)) from None

    def _search(
        self,
        conn: psycopg.Connection[Any],
        terms: Sequence[Term],
        scope: KeywordScope,
        k: int,
        min_coverage: float,
        conditions: MessageConditions | None,
    ) -> list[KeywordHit]:
        total, mean_tokens = self._documents(conn)
        counts, matches = self._term_counts(conn, terms)
        weights = term_weights(counts, total)
        rare = [t for t in terms if 0 < counts[t] <= fts_index.COMMON_TERM_SHARE * total]
        searched = rare if rare and total >= fts_index.COMMON_TERM_MIN_DOCUMENTS else list(terms)
        searched = _essential_terms(searched, weights, min_coverage)
        pool = max(k, fts_index.KEYWORD_POOL_SIZE)
        filters = _filters(scope, conditions)
        ranking = _Ranking(searched, terms, weights, _fts5_idf(matches, total), mean_tokens)
        exact_max, newest = fts_index.KEYWORD_EXACT_MAX_MATCHES, fts_index.KEYWORD_NEWEST_MATCHES
        if sum(counts[t] for t in searched) <= exact_max:
            found = self._ranked(conn, _any_query(searched), filters, ranking, pool, newest=None)
        else:
            found = self._ranked(conn, _any_query(searched), filters, ranking, pool, newest=newest)
            if len(searched) > 1:
                exact = min(counts[t] for t in searched) <= exact_max
                every = self._ranked(
                    conn, _every_query(searched), filters, ranking, pool, newest=None if exact else newest
                )
                for msg_id, hit in every.items():
                    found.setdefault(msg_id, hit)
        scored = list(found.values())
        scored.sort(key=lambda hit: (-round(hit.coverage, 9), hit.bm25))
        return scored[:k]

    def _ranked(
        self,
        conn: psycopg.Connection[Any],
        match: str,
        filters: _Filters,
        ranking: _Ranking,
        pool: int,
        *,
        newest: int | None,
    ) -> dict[str, KeywordHit]:
        params = {**filters.params, **ranking.params, "match": f"({match}){filters.required}", "pool": pool}
        where = " AND ".join(("t.terms @@ %(match)s::tsquery", *filters.where))
        matches = f"SELECT t.message_id, t.room_id, t.username, t.ts, t.tokens, t.terms FROM message_terms t WHERE {where}"
        if newest is not None:
            matches += " ORDER BY t.ts DESC, t.seq DESC LIMIT %(newest)s"
            params["newest"] = newest
        sql = (
            f"SELECT h.message_id, h.room_id, h.username, h.ts, h.score, ARRAY[{ranking.held_sql}] FROM ("
            f" SELECT m.*, {ranking.score_sql} AS score FROM ({matches}) m CROSS JOIN LATERAL ({ranking.rank_sql}) r"
            " ORDER BY score LIMIT %(pool)s) h ORDER BY h.score"
        )
        found: dict[str, KeywordHit] = {}
        for position, (msg_id, rid, username, ts, score, held) in enumerate(conn.execute(sql, params)):
            matched = [term for term, holds in zip(ranking.every, held, strict=True) if holds]
            found[msg_id] = KeywordHit(
                position,
                msg_id,
                rid,
                username,
                int(ts),
                float(score),
                "",
                coverage=term_coverage(matched, ranking.weights),
            )
        return found

    def _documents(self, conn: psycopg.Connection[Any]) -> tuple[int, float]:
        """Messages in the table and their mean tokens, at most `DOCUMENT_COUNT_SECONDS` old.

        The count reads the whole table (40 ms at 100k messages on a busy machine), so with a
        follower thread it is refreshed there, off the searches; a search counts only when there is
        no count yet, or no follower to refresh it.
        """
        cached = self._statistics
        if cached is None or (self._follower is None and self._statistics_stale()):
            cached = self._count_documents(conn)
        return cached[0], cached[1]

    def _statistics_stale(self) -> bool:
        cached = self._statistics
        return cached is None or time.monotonic() - cached[2] > DOCUMENT_COUNT_SECONDS

    def _count_documents(self, conn: psycopg.Connection[Any]) -> tuple[int, float, float]:
        row = conn.execute("SELECT count(*), coalesce(avg(tokens), 0) FROM message_terms").fetchone()
        assert row is not None
        self._statistics = (int(row[0]), float(row[1]), time.monotonic())
        return self._statistics

    def _term_counts(
        self, conn: psycopg.Connection[Any], terms: Sequence[Term]
    ) -> tuple[dict[Term, int], dict[Term, int]]:
        """Per term, counted through the GIN index: (the count its weight is made from, as the FTS5
        branch counts it: a phrase by its rarest word; the messages it matches, BM25's as FTS5's).
        A prefix's count is the messages holding a word it starts (FTS5's weight sums each word's)."""
        asked: dict[str, None] = {}
        for term in terms:
            asked.setdefault(term_query(term), None)
            if len(term) > 1:
                for word in term:
                    asked.setdefault(term_query((word,)), None)
        queries = list(asked)
        counts_sql = ", ".join(
            "(SELECT count(*) FROM message_terms WHERE terms @@ %s::tsquery)" for _ in queries
        )
        row = conn.execute(f"SELECT {counts_sql}", queries).fetchone()
        assert row is not None
        count_of = dict(zip(queries, (int(c) for c in row), strict=True))
        matches = {term: count_of[term_query(term)] for term in terms}
        weighed = {
            term: matches[term] if len(term) == 1 else min(count_of[term_query((word,))] for word in term)
            for term in terms
        }
        return weighed, matches


def _fts5_idf(matches: dict[Term, int], total: int) -> dict[Term, float]:
    """BM25's IDF as FTS5 computes it, ln((N - n + 0.5) / (n + 0.5)), floored at 1e-6 as FTS5 floors
    it (a term in over half the messages still counts a little)."""
    return {
        term: max(math.log((total - n + 0.5) / (n + 0.5)) if total > 0 else 0.0, _MIN_IDF)
        for term, n in matches.items()
    }


class _Ranking:
    """The SQL of one query's BM25 over the searched terms, and of the flags of every query term."""

    def __init__(
        self,
        searched: Sequence[Term],
        every: Sequence[Term],
        weights: dict[Term, float],
        idf: dict[Term, float],
        mean_tokens: float,
    ) -> None:
        self.every = tuple(every)
        self.weights = weights
        self.params: dict[str, Any] = {"mean_tokens": max(mean_tokens, 1.0)}
        frequencies = []
        scores = []
        for i, term in enumerate(searched):
            self.params[f"q{i}"] = term_query(term)
            self.params[f"idf{i}"] = idf[term]
            if len(term) > 1 and not is_prefix_term(term):  # ts_rank scores a phrase on another scale
                frequencies.append(f"(t.terms @@ %(q{i})s::tsquery)::int::float8 AS f{i}")
            else:  # FTS5's frequency: occurrences among the words, plus half those among the parts
                frequencies.append(
                    f"term_frequency(ts_rank({_WORDS_ONLY}, t.terms, %(q{i})s::tsquery, 0))"
                    f" + {_PART_WEIGHT} * term_frequency(ts_rank({_PARTS_ONLY}, t.terms, %(q{i})s::tsquery, 0)) AS f{i}"
                )
            scores.append(
                f"%(idf{i})s * r.f{i} * {BM25_K1 + 1} / (r.f{i} + {BM25_K1} * "
                f"({1 - BM25_B} + {BM25_B} * m.tokens::float8 / %(mean_tokens)s))"
            )
        # `t` inside the lateral is the match row.
        self.rank_sql = "SELECT " + ", ".join(frequencies).replace("t.terms", "m.terms")
        # Negative, as SQLite's bm25(): smaller is better, so both branches sort the same way.
        self.score_sql = "-(" + " + ".join(scores) + ")"
        held = []
        for j, term in enumerate(every):
            self.params[f"c{j}"] = term_query(term, words_only=True)
            held.append(f"h.terms @@ %(c{j})s::tsquery")
        self.held_sql = ", ".join(held)
