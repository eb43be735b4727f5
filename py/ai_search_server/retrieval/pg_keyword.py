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
- **statistics of the caller's rooms only** (``keyword_rank``): a trigger on ``message_terms``
  appends, per row written or deleted, what it changes to its room's counts (the messages holding
  each lexeme, the room's messages and tokens) to ``message_term_deltas``; whoever follows the
  store folds them into ``message_term_counts`` every ``FOLLOW_INTERVAL_SECONDS``. A search sums
  both over its own rooms (``room_id``, ``term`` keyed), in one statement: appending never waits
  on a row another writer holds, so writers in one room never serialise or deadlock on its
  common words, and no count depends on a room outside the scope;
- **rank**: coverage (the share of the query's squared IDF weight a message holds), then BM25
  computed in the statement, FTS5's: its constants (``keyword_rank.BM25_K1``, ``BM25_B``), its
  IDF (``ln((N - n + 0.5) / (n + 0.5))``), its column weights (a part counts half a word), the
  tokens stored as the length, all from the scope's counts; then the oldest first. The term
  frequency is read back from ``ts_rank`` of the term alone, once with only the words weighted and
  once with only the parts (the ``term_frequency`` SQL function inverts ts_rank's sum of 1/j^2:
  exact for one lexeme, the count of lexemes for a prefix matching several). ``ts_rank``/
  ``ts_rank_cd`` alone were not used: they know no term's rarity;
- the statement hands back the best ``KEYWORD_POOL_SIZE`` in that order, with the FTS5 branch's
  bounds (common terms, MaxScore's essential terms, and past ``KEYWORD_EXACT_MAX_MATCHES`` matches
  in scope the newest matches beside an AND of every term).

**Kept current** like ``index.db``: this process's writes through the store's listener (findable as
soon as ``post_message`` returns, by every process), any process's through the store's change log,
read every ``FOLLOW_INTERVAL_SECONDS``. The log position the table is level with lives in the
database (``message_terms_state``), and an advisory lock lets one process apply changes at a time, so N proxies do the work once. A deleted message's row goes in the delete's own
transaction (a trigger), and with it what it counted for (the counting trigger). A table of another
layout (``TERMS_LAYOUT``) is rebuilt from the store, its counts with it.

Raises ``PipelineError`` (branch ``keyword``) when PostgreSQL fails during a search: the service then
answers with the other branch.
"""

from __future__ import annotations

import logging
import threading
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
from .index import FOLLOW_BATCH_MESSAGES, FOLLOW_INTERVAL_SECONDS, KeywordPlan, plan_keyword_search
from .index_db import ROOT_MARK, KeywordHit, KeywordScope, message_digest
from .keyword_rank import BM25_B, BM25_K1, PART_WEIGHT, ScopeStatistics
from .message_checks import message_marks
from .pipeline_client import PipelineError
from .progress import ProgressReporter
from .terms import Term, is_prefix_term, term_coverage, value_term
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

#: The layout of ``message_terms`` rows (tokens and tsvector) and of their per-room counts; a table
#: of another is rebuilt. 2: the counts (``message_term_counts``, ``message_term_deltas``).
TERMS_LAYOUT = "2"
# PostgreSQL refuses a lexeme longer than this (bytes of UTF-8); such a token (a pasted blob) is not
# indexed, as no one types it.
MAX_LEXEME_BYTES = 2046
# The largest position a tsvector holds; later tokens share it (phrases past it do not match).
MAX_POSITION = 16383
# Connections one process keeps to PostgreSQL for the keyword branch (searches and index writes).
PG_KEYWORD_CONNECTIONS = 4
# How long a search or write waits for a free connection (seconds).
PG_KEYWORD_WAIT_SECONDS = 10.0
# ts_rank's weights (D, C, B, A) that rank the words alone (A) and the parts alone (B).
_WORDS_ONLY = "'{0, 0, 0, 1}'::float4[]"
_PARTS_ONLY = "'{0, 0, 1, 0}'::float4[]"
# The term of a room's own row in the counts: its messages and their tokens (no lexeme is empty).
_ROOM_TOTALS = ""
# The highest code point: every term starting with a prefix sorts below prefix + it (collation "C").
_LAST_CHARACTER = "\U0010ffff"
# Transaction-level advisory lock taken by whoever applies the change log to the table.
KEYWORD_TERMS_LOCK = 0x61692D736561_03
_LAYOUT_KEY = "layout"
_CHANGE_KEY = "change"
# Messages read from the store per step of a full comparison (messages).
CATCH_UP_BATCH_MESSAGES = 2000

# The per-room counts of layout 2, made when the table takes that layout (the store's migration 9
# made ``message_terms``; these are the keyword index's own, rebuilt with it). A row of the deltas
# is what one message's write or delete changed; the counts are their folded sums.
_COUNTS_SQL = (
    """CREATE TABLE IF NOT EXISTS message_term_counts (
        room_id text COLLATE "C" NOT NULL,
        term text COLLATE "C" NOT NULL,
        documents bigint NOT NULL,
        tokens bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (room_id, term)
    )""",
    """CREATE TABLE IF NOT EXISTS message_term_deltas (
        room_id text COLLATE "C" NOT NULL,
        term text COLLATE "C" NOT NULL,
        documents bigint NOT NULL,
        tokens bigint NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX IF NOT EXISTS message_term_deltas_key ON message_term_deltas (room_id, term)",
    # Each distinct lexeme of the row counts once for its room; the room's own row ('') its
    # message and tokens. An update that changes neither room nor terms changes nothing.
    f"""CREATE OR REPLACE FUNCTION count_message_terms() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'UPDATE' AND OLD.room_id = NEW.room_id AND OLD.terms = NEW.terms
                AND OLD.tokens = NEW.tokens THEN
            RETURN NULL;
        END IF;
        IF TG_OP <> 'INSERT' THEN
            INSERT INTO message_term_deltas (room_id, term, documents, tokens)
                SELECT OLD.room_id, lexeme, -1, 0 FROM unnest(OLD.terms)
                UNION ALL SELECT OLD.room_id, '{_ROOM_TOTALS}', -1, -OLD.tokens;
        END IF;
        IF TG_OP <> 'DELETE' THEN
            INSERT INTO message_term_deltas (room_id, term, documents, tokens)
                SELECT NEW.room_id, lexeme, 1, 0 FROM unnest(NEW.terms)
                UNION ALL SELECT NEW.room_id, '{_ROOM_TOTALS}', 1, NEW.tokens;
        END IF;
        RETURN NULL;
    END $$""",
    "DROP TRIGGER IF EXISTS message_terms_count ON message_terms",
    """CREATE TRIGGER message_terms_count AFTER INSERT OR UPDATE OR DELETE ON message_terms
        FOR EACH ROW EXECUTE FUNCTION count_message_terms()""",
)
# The deltas folded into the counts, in one statement (the keys in one order); the keys whose count
# reached 0, for the caller to delete in the same transaction.
_FOLD_DELTAS = """
WITH moved AS (DELETE FROM message_term_deltas RETURNING room_id, term, documents, tokens),
merged AS (
    INSERT INTO message_term_counts AS c (room_id, term, documents, tokens)
    SELECT room_id, term, sum(documents), sum(tokens) FROM moved GROUP BY room_id, term ORDER BY room_id, term
    ON CONFLICT (room_id, term) DO UPDATE
        SET documents = c.documents + excluded.documents, tokens = c.tokens + excluded.tokens
    RETURNING room_id, term, documents
)
SELECT room_id, term FROM merged WHERE documents = 0
"""

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
                with conn.transaction():
                    for statement in _COUNTS_SQL:
                        conn.execute(statement)
                    conn.execute("TRUNCATE message_terms, message_term_counts, message_term_deltas")
            elif (
                saved is not None
                and saved.isdigit()
                and int(saved) <= latest
                and self.store.message_changes_since(int(saved), limit=1).complete
            ):
                self._seen_change = int(saved)
                while self._apply_log(conn, latest):
                    pass
                self._fold(conn)
                return
            self._compare_all(conn)
            self._save_state(conn, latest)
            # The planner's statistics, after a bulk write (not the deltas': just folded, they would
            # say "empty" to every later plan).
            conn.execute("ANALYZE message_terms, message_term_counts")

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
                self._fold(conn)
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
        """Apply what any process changed since the table's position and fold the counts' deltas,
        if no other process is doing it right now; True when a change was applied."""
        latest = self.store.latest_message_change()
        with self._turn(wait=False) as conn:
            if conn is None:
                return False  # another process is applying it; the table is shared
            applied = latest != self._seen_change
            while applied and self._apply_log(conn, latest) and not self._stop.is_set():
                pass
            self._fold(conn)
        return applied

    def _fold(self, conn: psycopg.Connection[Any]) -> None:
        """Fold the counts' deltas into the counts (the caller holds the turn, so one process folds
        at a time): a search then sums few rows per room and term. A count that reaches 0 goes."""
        with conn.transaction():
            emptied = conn.execute(_FOLD_DELTAS).fetchall()
            if emptied:
                conn.execute(
                    "DELETE FROM message_term_counts c USING unnest(%s::text[], %s::text[]) AS e(room_id, term)"
                    " WHERE c.room_id = e.room_id AND c.term = e.term AND c.documents = 0",
                    ([str(r[0]) for r in emptied], [str(r[1]) for r in emptied]),
                )

    def _follow_loop(self) -> None:
        failing = False
        while not self._stop.wait(FOLLOW_INTERVAL_SECONDS) and not self.store.closed:
            try:
                self.follow_once()
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
        """``EmbeddedIndex.keyword_search`` over ``message_terms``: the same bounds, statistics of the
        scope's rooms only, coverage, then BM25, then the oldest first.

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
        plan = plan_keyword_search(terms, self._scope_statistics(conn, terms, scope.rooms), min_coverage)
        searched = plan.searched
        pool = max(k, fts_index.KEYWORD_POOL_SIZE)
        filters = _filters(scope, conditions)
        ranking = _Ranking(plan)
        exact_max, newest = fts_index.KEYWORD_EXACT_MAX_MATCHES, fts_index.KEYWORD_NEWEST_MATCHES
        if plan.matches <= exact_max:
            found = self._ranked(conn, _any_query(searched), filters, ranking, pool, newest=None)
        else:
            found = self._ranked(conn, _any_query(searched), filters, ranking, pool, newest=newest)
            if len(searched) > 1:
                exact = min(plan.counts[t] for t in searched) <= exact_max
                every = self._ranked(
                    conn, _every_query(searched), filters, ranking, pool, newest=None if exact else newest
                )
                for msg_id, hit in every.items():
                    found.setdefault(msg_id, hit)
        # The statement's order, again over both queries' hits: coverage, BM25, the oldest first
        # (``rowid`` holds the row's ``seq``: the order rows were first written, for equal times).
        scored = sorted(found.values(), key=lambda hit: (-round(hit.coverage, 9), hit.bm25, hit.ts_ms, hit.rowid))
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
        matches = (
            "SELECT t.message_id, t.seq, t.room_id, t.username, t.ts, t.tokens, t.terms"
            f" FROM message_terms t WHERE {where}"
        )
        if newest is not None:
            matches += " ORDER BY t.ts DESC, t.seq DESC LIMIT %(newest)s"
            params["newest"] = newest
        sql = (
            f"SELECT m.message_id, m.seq, m.room_id, m.username, m.ts, {ranking.score_sql} AS score,"
            f" ARRAY[{ranking.held_sql}] FROM ({matches}) m CROSS JOIN LATERAL ({ranking.rank_sql}) r"
            f" ORDER BY {ranking.coverage_sql} DESC, score, m.ts, m.seq LIMIT %(pool)s"
        )
        found: dict[str, KeywordHit] = {}
        for msg_id, seq, rid, username, ts, score, held in conn.execute(sql, params):
            matched = [term for term, holds in zip(ranking.every, held, strict=True) if holds]
            found[msg_id] = KeywordHit(
                int(seq),
                msg_id,
                rid,
                username,
                int(ts),
                float(score),
                "",
                coverage=term_coverage(matched, ranking.weights),
            )
        return found

    def _scope_statistics(
        self, conn: psycopg.Connection[Any], terms: Sequence[Term], rooms: Sequence[str]
    ) -> ScopeStatistics:
        """The scope's messages and tokens, and per term the messages holding it, summed over the
        counts and the deltas not folded yet of its rooms only, in one statement (one snapshot):
        a few index lookups per room and term, whatever other rooms hold. A prefix sums the words it
        starts and a phrase takes its rarest word's count (upper bounds, as the FTS5 branch's)."""
        words = {_ROOM_TOTALS: None}
        prefixes: dict[str, None] = {}
        for term in terms:
            for word in term if len(term) > 1 or not is_prefix_term(term) else ():
                words.setdefault(word, None)
            if is_prefix_term(term):
                prefixes.setdefault(term[0], None)
        # One branch per word and table, each an index range on (room_id, term): with `term = ANY`
        # the planner filtered a burst of deltas row by row (the deltas' statistics are rarely fresh).
        params: dict[str, Any] = {"rooms": list(dict.fromkeys(rooms))}
        parts = []
        for i, word in enumerate(words):
            params[f"w{i}"] = word
            parts += [
                f"SELECT term AS key, documents, tokens FROM {table} WHERE room_id = ANY(%(rooms)s) AND term = %(w{i})s"
                for table in ("message_term_counts", "message_term_deltas")
            ]
        for i, prefix in enumerate(prefixes):
            params[f"p{i}"], params[f"e{i}"] = prefix, prefix + _LAST_CHARACTER
            parts += [
                f"SELECT %(p{i})s || '*', documents, 0 FROM {table}"
                f" WHERE room_id = ANY(%(rooms)s) AND term >= %(p{i})s AND term < %(e{i})s"
                for table in ("message_term_counts", "message_term_deltas")
            ]
        rows = conn.execute(
            f"SELECT key, sum(documents), sum(tokens) FROM ({' UNION ALL '.join(parts)}) c GROUP BY key", params
        ).fetchall()
        counted = {str(key): (int(documents), int(tokens)) for key, documents, tokens in rows}
        documents, tokens = counted.get(_ROOM_TOTALS, (0, 0))
        per_term: dict[Term, int] = {}
        for term in terms:
            if is_prefix_term(term):
                per_term[term] = counted.get(term[0] + "*", (0, 0))[0]
            else:
                per_term[term] = min(counted.get(word, (0, 0))[0] for word in term)
        return ScopeStatistics(documents, tokens, per_term)


class _Ranking:
    """The SQL of one query's coverage and BM25 over the searched terms, from its plan (the scope's
    statistics only), and of the flags of every query term."""

    def __init__(self, plan: KeywordPlan) -> None:
        self.every = plan.terms
        self.weights = plan.weights
        self.params: dict[str, Any] = {"mean_tokens": plan.mean_tokens}
        frequencies = []
        scores = []
        for i, term in enumerate(plan.searched):
            self.params[f"q{i}"] = term_query(term)
            self.params[f"idf{i}"] = plan.idf[term]
            if len(term) > 1 and not is_prefix_term(term):  # ts_rank scores a phrase on another scale
                frequencies.append(f"(m.terms @@ %(q{i})s::tsquery)::int::float8 AS f{i}")
            else:  # FTS5's frequency: occurrences among the words, plus half those among the parts
                frequencies.append(
                    f"term_frequency(ts_rank({_WORDS_ONLY}, m.terms, %(q{i})s::tsquery, 0))"
                    f" + {PART_WEIGHT} * term_frequency(ts_rank({_PARTS_ONLY}, m.terms, %(q{i})s::tsquery, 0)) AS f{i}"
                )
            scores.append(
                f"%(idf{i})s * r.f{i} * {BM25_K1 + 1} / (r.f{i} + {BM25_K1} * "
                f"({1 - BM25_B} + {BM25_B} * m.tokens::float8 / %(mean_tokens)s))"
            )
        # Whether the match holds each query term, as the coverage counts it (a phrase among the words).
        total = sum(w * w for w in plan.weights.values())
        held = []
        shares = []
        for j, term in enumerate(plan.terms):
            self.params[f"c{j}"] = term_query(term, words_only=True)
            self.params[f"w{j}"] = plan.weights[term] ** 2 / total if total > 0 else 0.0
            frequencies.append(f"m.terms @@ %(c{j})s::tsquery AS h{j}")
            held.append(f"r.h{j}")
            shares.append(f"r.h{j}::int * %(w{j})s")
        self.rank_sql = "SELECT " + ", ".join(frequencies)
        # Negative, as SQLite's bm25(): smaller is better, so both branches sort the same way.
        self.score_sql = "-(" + " + ".join(scores) + ")"
        self.held_sql = ", ".join(held)
        # Rounded as the final order rounds it (9 decimals), so near-equal sums tie there too.
        self.coverage_sql = "round((" + " + ".join(shares) + ")::numeric, 9)"
