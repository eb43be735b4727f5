"""The local second stage: a stronger embedding model whose vectors are filled in the background.

all-mpnet-base-v2 costs several times MiniLM per text, too much to embed a query's hundred candidates
while someone waits. So every message gets its vectors ahead of time, after the first-stage index has
its own: a background thread walks the index's documents oldest first and stores, per message, the
vector of the message alone and of the message after its earlier conversation (as the first stage
does, ``context.py``; the better of the two similarities counts). A search then embeds the query once
(cached) and reads a hundred stored vectors by message id: milliseconds, not seconds. Search works
from the first minute, and gets better as the backfill goes on; ``coverage`` says how far it is.

The vectors live in ``<data_dir>/stage-vectors.db`` (SQLite, WAL), int8 with one scale per vector
(772 bytes per vector, two per message with a conversation): at a million messages about 1.5 GB on
disk and nothing in memory beyond SQLite's page cache, since a search reads only its candidates. A
row is valid while the first-stage index holds the same digest for the message (``docs.digest``: an
edit changes it), so an edited message is scored again only after it is embedded again, and a
deleted one is never asked for.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import anyio
import numpy as np
import numpy.typing as npt

from ...store.base import Store
from ..context import CONTEXT_MESSAGES, CONTEXT_WINDOW, context_text
from ..embedder import Embedder, EmbedderError
from .base import Passage, SecondStageError, StageCoverage

__all__ = [
    "BACKFILL_BATCH_MESSAGES",
    "QUERY_CACHE_ENTRIES",
    "STAGE_VECTORS_FILENAME",
    "LocalStage",
    "StageVectors",
]

log = logging.getLogger(__name__)

STAGE_VECTORS_FILENAME = "stage-vectors.db"
# Messages embedded per backfill round (messages): small enough that a search is never queued
# behind a long forward pass of the model for more than a fraction of a second.
BACKFILL_BATCH_MESSAGES = 32
# How long the backfill waits when it has caught up, or while the first stage still embeds (seconds).
BACKFILL_IDLE_SECONDS = 2.0
# Query vectors kept (queries): paging, "show more" and a follow-up re-ask the same query.
QUERY_CACHE_ENTRIES = 256
# How often the backfill walks the whole index again, for messages edited since (seconds): an edited
# message is read by the first stage alone until then.
RESCAN_SECONDS = 600.0
_BUSY_TIMEOUT_MS = 10_000
_INT8_MAX = 127.0

Vector = npt.NDArray[np.float32]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS vectors (
        msg_id TEXT PRIMARY KEY, digest BLOB NOT NULL, alone BLOB NOT NULL, context BLOB
    ) WITHOUT ROWID""",
)


def quantise(vector: Vector) -> bytes:
    """int8 with one float32 scale in front: 4 + d bytes, cosine kept to about 0.9999."""
    scale = float(np.max(np.abs(vector))) or 1.0
    codes = np.clip(np.rint(vector / scale * _INT8_MAX), -_INT8_MAX, _INT8_MAX).astype(np.int8)
    return bytes(np.float32(scale).tobytes()) + bytes(codes.tobytes())


def dequantise(blob: bytes) -> Vector:
    scale = np.frombuffer(blob[:4], dtype=np.float32)[0]
    codes: Vector = np.frombuffer(blob[4:], dtype=np.int8).astype(np.float32)
    return codes * np.float32(scale / _INT8_MAX)


class StageVectors:
    """The stage's vectors beside the first-stage index (`index_path`), one connection per thread."""

    def __init__(self, path: Path, index_path: Path, model_id: str) -> None:
        self.path = path
        self.index_path = index_path
        self.model_id = model_id
        self._local = threading.local()
        with self._connect() as conn:
            for statement in _SCHEMA:
                conn.execute(statement)
            row = conn.execute("SELECT value FROM meta WHERE key = 'model'").fetchone()
            if row is None or row[0] != model_id:
                if row is not None:
                    log.info(
                        "second stage: the model changed (%s -> %s): vectors start over", row[0], model_id
                    )
                conn.execute("DELETE FROM vectors")
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('model', ?)", (model_id,))

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("ATTACH DATABASE ? AS idx", (f"file:{self.index_path}?mode=ro",))
        return conn

    def connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    def pending(self, limit: int, after: int = 0, upto: int | None = None) -> list[tuple[int, str, bytes, str]]:
        """(rowid, msg_id, digest, text) of documents past rowid `after` without a valid vector, in
        rowid order. Walks the index from `after` by its primary key, so a caller that moves `after`
        along reads each document once per pass, not the whole index per batch."""
        rows = self.connection().execute(
            "SELECT d.rowid, d.msg_id, d.digest, d.text FROM idx.docs d LEFT JOIN vectors v"
            " ON v.msg_id = d.msg_id AND v.digest = d.digest"
            " WHERE d.rowid > ? AND d.rowid <= ? AND v.msg_id IS NULL ORDER BY d.rowid LIMIT ?",
            (after, (1 << 62) if upto is None else upto, limit),
        )
        return [(int(r[0]), r[1], bytes(r[2]), r[3]) for r in rows]

    def last_rowid(self) -> int:
        row = self.connection().execute("SELECT max(rowid) FROM idx.docs").fetchone()
        return int(row[0] or 0)

    def counts(self) -> StageCoverage:
        conn = self.connection()
        total = int(conn.execute("SELECT count(*) FROM idx.docs").fetchone()[0])
        scored = int(
            conn.execute(
                "SELECT count(*) FROM vectors v JOIN idx.docs d ON d.msg_id = v.msg_id AND d.digest = v.digest"
            ).fetchone()[0]
        )
        return StageCoverage(scored, total)

    def total(self) -> int:
        return int(self.connection().execute("SELECT count(*) FROM idx.docs").fetchone()[0])

    def store(self, rows: Sequence[tuple[str, bytes, Vector, Vector | None]]) -> None:
        conn = self.connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                [(m, d, quantise(a), None if c is None else quantise(c)) for m, d, a, c in rows],
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def vectors(self, msg_ids: Sequence[str]) -> dict[str, tuple[Vector, Vector | None]]:
        """The valid vectors of these messages (a message edited since, or never reached, is left out)."""
        import json

        rows = self.connection().execute(
            "SELECT v.msg_id, v.alone, v.context FROM vectors v JOIN idx.docs d"
            " ON d.msg_id = v.msg_id AND d.digest = v.digest"
            " WHERE v.msg_id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(msg_ids)),),
        )
        return {r[0]: (dequantise(r[1]), None if r[2] is None else dequantise(r[2])) for r in rows}

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class LocalStage:
    """A local embedding model as the second stage; `start` runs the backfill in a daemon thread.

    `first_stage_busy` says whether the first-stage index still has messages to embed: the backfill
    waits for it, so that semantic search covers everything before re-ranking starts.
    """

    kind = "local"

    def __init__(
        self,
        embedder: Embedder,
        vectors: StageVectors,
        store: Store,
        *,
        first_stage_busy: Callable[[], bool] = lambda: False,
    ) -> None:
        self.embedder = embedder
        self.vectors = vectors
        self.store = store
        self._first_stage_busy = first_stage_busy
        self._queries: OrderedDict[str, Vector] = OrderedDict()
        self._queries_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._coverage = StageCoverage(0, 0)
        # The backfill's walk through the index by rowid, and when it last started over from the top.
        self._cursor = 0
        self._rescanned_at = time.monotonic()
        self.last_error: str | None = None
        self._logged_step = 10  # set from the first coverage in `open`

    @classmethod
    def open(
        cls,
        embedder: Embedder,
        store: Store,
        data_dir: Path,
        index_path: Path,
        *,
        first_stage_busy: Callable[[], bool] = lambda: False,
    ) -> LocalStage:
        vectors = StageVectors(data_dir / STAGE_VECTORS_FILENAME, index_path, embedder.model_id)
        stage = cls(embedder, vectors, store, first_stage_busy=first_stage_busy)
        stage._coverage = vectors.counts()
        stage._logged_step = int(stage._coverage.ratio * 10)
        return stage

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    # -- scoring -----------------------------------------------------------------------------------

    def _query_vector(self, query: str) -> Vector:
        with self._queries_lock:
            held = self._queries.get(query)
            if held is not None:
                self._queries.move_to_end(query)
                return held
        vector: Vector = self.embedder.embed([query])[0]
        with self._queries_lock:
            self._queries[query] = vector
            while len(self._queries) > QUERY_CACHE_ENTRIES:
                self._queries.popitem(last=False)
        return vector

    def score_now(self, query: str, passages: Sequence[Passage]) -> dict[str, float]:
        """Blocking: the query's cosine with each covered passage's better vector."""
        held = self.vectors.vectors([p.id for p in passages])
        if not held:
            return {}
        try:
            q = self._query_vector(query)
        except EmbedderError as exc:
            raise SecondStageError(f"second stage {self.model_id}: {exc}") from exc
        scores: dict[str, float] = {}
        for msg_id, (alone, context) in held.items():
            best = float(alone @ q)
            if context is not None:
                best = max(best, float(context @ q))
            scores[msg_id] = best
        return scores

    async def score(self, query: str, passages: Sequence[Passage]) -> Mapping[str, float]:
        return await anyio.to_thread.run_sync(self.score_now, query, passages)

    def coverage(self) -> StageCoverage:
        """Kept by the backfill thread: no query on the request path."""
        return self._coverage

    # -- the backfill ------------------------------------------------------------------------------

    def backfill_once(self, limit: int = BACKFILL_BATCH_MESSAGES) -> int:
        """Embed up to `limit` messages that lack a valid vector; returns how many were stored.

        The walk goes on from where the last call stopped (`_cursor`); at the end of the index it
        waits for new documents past the last one seen, and walks the whole index again every
        `RESCAN_SECONDS` for the messages edited since (an edited message's old vector is never
        used: its digest no longer matches).
        """
        now = time.monotonic()
        if now - self._rescanned_at >= RESCAN_SECONDS:
            self._cursor, self._rescanned_at = 0, now
        end = self.vectors.last_rowid()
        pending = self.vectors.pending(limit, self._cursor, end)
        self._cursor = pending[-1][0] if len(pending) == limit else end
        self._coverage = StageCoverage(self._coverage.scored, max(self.vectors.total(), self._coverage.scored))
        if not pending:
            return 0
        messages = self.store.get_messages(m for _, m, _, _ in pending)
        contexts: dict[str, str] = {}
        for _, msg_id, _, text in pending:
            message = messages.get(msg_id)
            if message is None:
                continue
            earlier = self.store.earlier_in_conversation(message, limit=CONTEXT_MESSAGES, within=CONTEXT_WINDOW)
            with_context = context_text(text, [m.searchable_text for m in earlier])
            if with_context is not None:
                contexts[msg_id] = with_context
        alone = self.embedder.embed([text for _, _, _, text in pending])
        context_ids = list(contexts)
        embedded = self.embedder.embed([contexts[m] for m in context_ids]) if context_ids else None
        by_id = {m: embedded[i] for i, m in enumerate(context_ids)} if embedded is not None else {}
        self.vectors.store([(m, d, alone[i], by_id.get(m)) for i, (_, m, d, _) in enumerate(pending)])
        scored = self._coverage.scored + len(pending)
        self._coverage = StageCoverage(min(scored, self._coverage.total), self._coverage.total)
        return len(pending)

    def run_backfill(
        self, *, until_done: bool = False, on_progress: Callable[[StageCoverage], None] | None = None
    ) -> None:
        """Fill vectors until stopped (or, `until_done`, until a whole pass finds nothing pending)."""
        if until_done:
            self._cursor = 0
        while not self._stop.is_set():
            if self._first_stage_busy():
                if self._stop.wait(BACKFILL_IDLE_SECONDS):
                    return
                continue
            try:
                stored = self.backfill_once()
            except (EmbedderError, sqlite3.Error) as exc:
                reason = str(exc)
                if reason != self.last_error:
                    log.warning("second stage: the backfill failed (%s); it retries", reason)
                self.last_error = reason
                stored = 0
            else:
                self.last_error = None
            if stored:
                self._log_progress()
                if on_progress is not None:
                    on_progress(self.coverage())
            else:
                if until_done and self.last_error is None:
                    self._coverage = self.vectors.counts()
                    return
                if self._stop.wait(BACKFILL_IDLE_SECONDS):
                    return

    def _log_progress(self) -> None:
        """One log line per tenth of the way (the CLI's view of a backfill that takes hours at scale)."""
        coverage = self._coverage
        step = int(coverage.ratio * 10)
        if step > self._logged_step:
            self._logged_step = step
            log.info(
                "second stage: vectors cover %d%% of messages (%d of %d)",
                int(coverage.ratio * 100),
                coverage.scored,
                coverage.total,
            )

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self.run_backfill, name="second-stage-backfill", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        self.vectors.close()

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self.close)


class DeferredStage:
    """A local stage whose model loads in the background, so the server answers from its first second.

    Loading all-mpnet-base-v2 (writing its graph, handing ONNX Runtime 438 MB of weights) takes a few
    seconds; until it is done this stage scores nothing (the first stage ranks alone, as for a message
    whose vector is not there yet) and says it covers nothing. A model that cannot load is logged
    once and leaves the first stage alone for good.
    """

    kind = "local"

    def __init__(self, load: Callable[[], LocalStage], *, model_id: str, index_path: Path) -> None:
        self._load = load
        self._expected_model = model_id
        self._index_path = index_path
        self._stage: LocalStage | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None

    @property
    def model_id(self) -> str:
        stage = self._stage
        return self._expected_model if stage is None else stage.model_id

    @property
    def stage(self) -> LocalStage | None:
        """The loaded stage, or None while the model loads (or if it could not)."""
        return self._stage

    def _run(self) -> None:
        try:
            stage = self._load()
        except EmbedderError as exc:
            self.last_error = str(exc)
            log.warning("second stage: the local model is not available (%s); the first stage ranks alone", exc)
            return
        with self._lock:
            if self._closed:
                stage.close()
                return
            self._stage = stage
        log.info("second stage: %s, vectors cover %.0f%% of messages", stage.model_id, 100 * stage.coverage().ratio)
        stage.run_backfill()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="second-stage", daemon=True)
            self._thread.start()

    def wait_until_loaded(self, timeout_seconds: float) -> bool:
        """Block until the model loaded (or failed); False if `timeout_seconds` passed first."""
        deadline = time.monotonic() + timeout_seconds
        while self._stage is None and self.last_error is None and time.monotonic() < deadline:
            time.sleep(0.05)
        return self._stage is not None or self.last_error is not None

    async def score(self, query: str, passages: Sequence[Passage]) -> Mapping[str, float]:
        stage = self._stage
        return {} if stage is None else await stage.score(query, passages)

    def coverage(self) -> StageCoverage:
        stage = self._stage
        if stage is not None:
            return stage.coverage()
        try:
            with sqlite3.connect(f"file:{self._index_path}?mode=ro", uri=True) as conn:
                total = int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
        except sqlite3.Error:
            total = 0
        return StageCoverage(0, max(total, 1))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            stage = self._stage
        if stage is not None:
            stage.close()  # stops its backfill loop, which runs in this object's thread
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self.close)
