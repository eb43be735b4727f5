"""``EmbeddedIndex``: the embedded pipeline's keyword and vector indexes, kept current with the store.

- **Keyword** (FTS5, ``index_db``): written synchronously from the store's message listener, so a
  posted message is findable by keyword as soon as ``post_message`` returns.
- **Vectors** (``vectors.VectorMatrix`` in memory, float16 BLOBs on disk): embedding is slow (a model
  forward pass or an HTTP call), so the listener only queues the document and a background thread
  embeds the queue in batches. An edited message leaves the vector matrix at once (its old meaning
  must not match) and comes back once re-embedded.
- **Following the store across processes**: the store's listener hears this process's writes only, so
  a thread also reads the store's message change log (``Store.message_changes_since``) every
  `FOLLOW_INTERVAL_SECONDS`: a message imported, posted, edited or deleted by another process that
  shares the data dir (``ai-search import`` beside a live server, another proxy) is applied to the
  keyword index and embedded, or its vector, when that process already stored one, is read from disk.
  The last change applied is kept in the index file, so a start reads only what changed since.
- **Catch-up** at start: what changed since the change number the index file remembers; with no such
  number, or when the store's log no longer reaches back to it, the store is compared with the index
  by digest (new, edited and deleted messages). Then every document without a vector from the current
  embedder is queued. With ``progress=True`` both steps show a progress bar on stderr.

Without an embedder the index is keyword-only; ``semantic_available`` says so.

    index = EmbeddedIndex.open(data_dir / "index.db", store, embedder)
    index.keyword_search(query_terms("deploy"), KeywordScope(rooms=["r1"]), k=20)
    index.wait_until_embedded(timeout_seconds=30)     # tests and benchmarks
    index.close()
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ..store.base import StorageFailure, Store
from ..store.records import MessageEvent
from .context import CONTEXT_MESSAGES, CONTEXT_RULE, CONTEXT_WINDOW, context_text
from .embedder import Embedder, EmbedderError, EmbedderUnavailable
from .index_db import (
    RESCAN_META_KEY,
    DocConditions,
    DocRow,
    IndexDatabase,
    KeywordHit,
    KeywordMatch,
    KeywordScope,
    content_key,
    message_digest,
)
from .keyword_rank import ScopeStatistics, TokenRanker, bm25_idf
from .progress import ProgressReporter
from .terms import Term, fts_match_expression, is_prefix_term, term_weights
from .vector_snapshot import Column, read_snapshot, snapshot_path, write_snapshot
from .vectors import REGROUP_SHARE, ExactVectors, VectorMatrix, VectorScope

__all__ = [
    "COMMON_TERM_MIN_DOCUMENTS",
    "COMMON_TERM_SHARE",
    "EMBED_BATCH_TEXTS",
    "EMBED_RETRY_MAX_SECONDS",
    "FOLLOW_BATCH_MESSAGES",
    "FOLLOW_INTERVAL_SECONDS",
    "INDEX_FILENAME",
    "KEYWORD_EXACT_MAX_MATCHES",
    "KEYWORD_NEWEST_MATCHES",
    "KEYWORD_POOL_SIZE",
    "EmbeddedIndex",
    "KeywordPlan",
    "plan_keyword_search",
]

log = logging.getLogger(__name__)

INDEX_FILENAME = "index.db"
# Documents embedded per call of the embedder (texts): several model batches, so the embedder can
# group similar lengths (less padding) while one call stays a few seconds on a CPU.
EMBED_BATCH_TEXTS = 256
# Messages the PostgreSQL branch's statement ranks and hands back per keyword search (messages),
# best first by coverage and BM25: several times the candidates a search asks for (30 for 10 results).
KEYWORD_POOL_SIZE = 200
# A term in more than this share of the scope's messages is not sent to FTS5 when rarer terms remain.
COMMON_TERM_SHARE = 0.2
# Matches in scope (the sum of the searched terms' counts in the scope's rooms, known before the
# query) up to which every match is ranked, exactly. Ranking costs 5-8 us a match (reading its
# tokens, then coverage and BM25 in Python), so past it only the `KEYWORD_NEWEST_MATCHES` most recent
# matches in scope are ranked, and the messages holding every searched term are searched on their
# own beside them. Chosen on the bench's 300k distinct messages: recall@10 0.996 against ranking
# every match, p99 15 ms of CPU (5,000 and 2,000: 1.000 and 29 ms). The judged workspaces stay well
# below it.
KEYWORD_EXACT_MAX_MATCHES = 2_000
# In-scope matches ranked when there are more than `KEYWORD_EXACT_MAX_MATCHES` (messages): about
# 8 ms of ranking whatever the size of the workspace.
KEYWORD_NEWEST_MATCHES = 1_000
# Slack on the coverage floor when leaving terms out (share): the pipeline reports coverage rounded
# to 4 decimals, so a message just under the floor could read as on it.
_COVERAGE_ROUNDING = 1e-4
# Scopes smaller than this (messages in the caller's rooms) search every term, common or not.
COMMON_TERM_MIN_DOCUMENTS = 1000
# Longest wait between retries after the embedder failed (seconds); waits double from 1 s up to it.
EMBED_RETRY_MAX_SECONDS = 60.0
# Time between two reads of the store's change log (seconds): what another process wrote is
# searchable about this long after its commit; one indexed read of the log's last number each time.
FOLLOW_INTERVAL_SECONDS = 1.0
# Changed messages read from the store's log per step (messages).
FOLLOW_BATCH_MESSAGES = 2000
# Messages read from the store per step while catching up (messages).
CATCH_UP_BATCH_MESSAGES = 2000
_MODEL_META_KEY = "vector_model"
# The store change number the index file is level with (kept so that a start reads only what changed).
_CHANGE_META_KEY = "store_change"


class EmbeddedIndex:
    """Keyword and vector indexes over the store's messages. Thread-safe.

    Raises:
        sqlite3.Error: the index file cannot be opened (from `open`).
    """

    def __init__(self, db: IndexDatabase, store: Store, embedder: Embedder | None, *, progress: bool) -> None:
        self.db = db
        self.store = store
        self.embedder = embedder
        self._progress = progress
        self._closed = False
        self._matrix: VectorMatrix | None = None
        # The messages with their conversation (retrieval/context.py), by rowid; unshared.
        self._context: VectorMatrix | None = None
        self._pending: dict[int, None] = {}  # rowids waiting for a vector, in arrival order
        self._wake = threading.Condition()
        self._worker: threading.Thread | None = None
        self.embed_failures = 0
        # Texts sent to the embedder since opening: fewer than the messages embedded when texts repeat.
        self.embedded_texts = 0
        # Messages-with-their-conversation sent to the embedder since opening (retrieval/context.py).
        self.embedded_contexts = 0
        self.last_embed_error: str | None = None
        self._embedding: set[int] = set()  # rowids of the batch being embedded
        self._applied_change = 0  # the store change number the index has applied through
        self._vectors_loaded = False
        self._follower: threading.Thread | None = None
        self._stop_following = threading.Event()
        self._snapshot = snapshot_path(db.path)
        # The index file's write stamp the snapshot on disk was taken at ("": none known).
        self._snapshot_writes = ""
        # The write stamp when the vectors were loaded: with no write of this process since, that.
        self._loaded_writes = ""

    # -- lifecycle --------------------------------------------------------------------------------

    @classmethod
    def open(
        cls, path: Path, store: Store, embedder: Embedder | None, *, progress: bool = False
    ) -> EmbeddedIndex:
        """Open (or create) the index file, catch up with the store and start embedding."""
        index = cls(IndexDatabase(path), store, embedder, progress=progress)
        # Subscribed before catching up: events that arrive meanwhile wait on the index's write
        # lock and are applied after it, in commit order, so the newest state always wins.
        store.add_message_listener(index._on_events)
        index._catch_up_at_start()
        if embedder is not None:
            index._load_vectors()
            index._queue(index.db.unembedded(index.vector_model))
            index._worker = threading.Thread(
                target=index._embed_loop, name="search-index-embedder", daemon=True
            )
            index._worker.start()
        index._follower = threading.Thread(
            target=index._follow_loop, name="search-index-follower", daemon=True
        )
        index._follower.start()
        return index

    def close(self) -> None:
        """Stop the embedding thread (after its current batch) and close the file. Idempotent."""
        with self._wake:
            if self._closed:
                return
            self._closed = True
            self._wake.notify_all()
        self._stop_following.set()
        if self._worker is not None:
            self._worker.join()
        if self._follower is not None:
            self._follower.join()
        self._save_snapshot()
        self.db.close()

    @property
    def semantic_available(self) -> bool:
        return self.embedder is not None

    @property
    def pending_embeddings(self) -> int:
        with self._wake:
            return len(self._pending) + len(self._embedding)

    @property
    def applied_change(self) -> int:
        """The store change number the index has applied through (``Store.latest_message_change``)."""
        return self._applied_change

    @property
    def vector_count(self) -> int:
        return 0 if self._matrix is None else len(self._matrix)

    @property
    def distinct_vectors(self) -> int:
        """Vectors held in memory: messages with the same text share one."""
        return 0 if self._matrix is None else self._matrix.distinct_vectors

    @property
    def vector_bytes(self) -> int:
        return 0 if self._matrix is None else self._matrix.nbytes

    # -- keeping current --------------------------------------------------------------------------

    def catch_up(self) -> int:
        """Bring the keyword index level with the store; returns the documents changed or removed."""
        total = self.store.count_messages()
        changed = 0
        with self.db.write_lock, ProgressReporter("indexing messages", total, enabled=self._progress) as bar:
            known = self.db.digests()
            seen: set[str] = set()
            for batch in self.store.iter_messages(batch_size=CATCH_UP_BATCH_MESSAGES):
                seen.update(m.id for m in batch)
                stale = [m for m in batch if known.get(m.id) is None or known[m.id] != message_digest(m)]
                if stale:
                    with self.db.transaction() as conn:
                        docs = self.db.upsert(conn, stale)
                    changed += len(docs)
                    self._forget_vectors(d.rowid for d in docs if d.needs_vector)
                    self._queue(d.rowid for d in docs if d.needs_vector)
                bar.advance(len(batch))
            gone = [msg_id for msg_id in known if msg_id not in seen]
            if gone:
                with self.db.transaction() as conn:
                    removed = self.db.delete(conn, gone)
                self._forget_vectors(removed)
                changed += len(removed)
        if changed:
            log.info("search index: %d document(s) added, updated or removed to match the store", changed)
        return changed

    def _catch_up_at_start(self) -> None:
        """Apply what changed since the change number the file remembers, or rescan the store (also
        after a migration: every document gains what the new schema keeps, its vector kept)."""
        latest = self.store.latest_message_change()
        saved = self.db.get_meta(_CHANGE_META_KEY)
        if self.db.get_meta(RESCAN_META_KEY) is not None:
            log.info("search index: the index file was upgraded; comparing every message with the store")
            self.catch_up()
            self._note_applied(latest)
            self.db.delete_meta(RESCAN_META_KEY)
            return
        if saved is not None and saved.isdigit() and int(saved) <= latest:
            self._applied_change = int(saved)
            if self.store.message_changes_since(self._applied_change, limit=1).complete:
                while self.follow_once():
                    pass
                return
        self.catch_up()
        self._note_applied(latest)

    def follow_once(self) -> bool:
        """Apply one batch of the store's changes since the last one applied; True if there may be more.

        Any process's writes are in the store's change log; what this process wrote was applied by
        the listener already, so those changes cost a digest comparison. A log that no longer
        reaches back to the last change applied (pruned) or that went backwards (the store file was
        replaced, a restore) makes a full rescan.
        """
        latest = self.store.latest_message_change()
        if latest == self._applied_change:
            return False
        changes = (
            self.store.message_changes_since(self._applied_change, limit=FOLLOW_BATCH_MESSAGES)
            if latest > self._applied_change
            else None
        )
        if changes is None or not changes.complete:
            log.warning("search index: the store's change log does not reach back; rescanning the store")
            self.catch_up()
            self._note_applied(latest)
            return False
        self._apply_changes(changes.message_ids)
        self._note_applied(changes.last)
        return changes.last < latest

    def _note_applied(self, change: int) -> None:
        self._applied_change = change
        self.db.set_meta(_CHANGE_META_KEY, str(change))

    def _follow_loop(self) -> None:
        failing = False
        while not self._stop_following.wait(FOLLOW_INTERVAL_SECONDS) and not self.store.closed:
            try:
                while self.follow_once() and not self._stop_following.is_set():
                    pass
                failing = False
            except StorageFailure as exc:  # the disk or a lock: said once per outage, retried
                if not failing and not self.store.closed:
                    log.warning("search index: reading the store's changes failed (%s); retrying", exc)
                failing = True
            except Exception:  # the thread must not die: the index would silently stop following
                log.exception("search index: following the store failed; retrying")

    def _apply_changes(self, message_ids: Sequence[str]) -> None:
        """Bring the given messages' documents level with the store: upsert, delete, find vectors."""
        messages = self.store.get_messages(message_ids)
        present = [messages[msg_id] for msg_id in message_ids if msg_id in messages]
        gone = [msg_id for msg_id in message_ids if msg_id not in messages]
        with self.db.transaction() as conn:
            docs = self.db.upsert(conn, present) if present else []
            removed = self.db.delete(conn, gone) if gone else []
        self._forget_vectors([*removed, *(d.rowid for d in docs if d.needs_vector)])
        self._queue(d.rowid for d in docs if d.needs_vector)
        if present:
            self._adopt_vectors([m.id for m in present])

    def _adopt_vectors(self, msg_ids: Sequence[str]) -> None:
        """Give the matrix the vectors of documents another process indexed; queue those it did not embed."""
        if self.embedder is None or not self._vectors_loaded:
            return  # the start-up load reads every stored vector anyway
        states = self.db.vector_states(msg_ids, self.vector_model)
        with self._wake:
            missing = [
                rowid
                for rowid in states
                if rowid not in (self._matrix or ())
                and rowid not in self._pending
                and rowid not in self._embedding
            ]
        stored = [rowid for rowid in missing if states[rowid]]
        for batch in self.db.load_vectors(
            self.vector_model, self.embedder.dimensions or None, known=self._holds_key, rowids=stored
        ):
            for row in batch:
                self._upsert_vector(
                    row.rowid, row.vector, row.rid, row.username, row.ts_ms, row.key, row.context
                )
        self._queue(rowid for rowid in missing if not states[rowid])

    def _on_events(self, events: Sequence[MessageEvent]) -> None:
        if self._closed:
            return
        upserts = [e.message for e in events if e.kind != "deleted"]
        deletions = [e.message.id for e in events if e.kind == "deleted"]
        with self.db.transaction() as conn:
            docs = self.db.upsert(conn, upserts) if upserts else []
            removed = self.db.delete(conn, deletions) if deletions else []
        self._forget_vectors([*removed, *(d.rowid for d in docs if d.needs_vector)])
        self._queue(d.rowid for d in docs if d.needs_vector)

    # -- vectors ------------------------------------------------------------------------------------

    def _forget_vectors(self, rowids: Iterable[int]) -> None:
        for rowid in rowids:
            for matrix in (self._matrix, self._context):
                if matrix is not None:
                    matrix.remove(rowid)

    def _queue(self, rowids: Iterable[int]) -> None:
        if self.embedder is None:
            return
        with self._wake:
            for rowid in rowids:
                self._pending[rowid] = None
            if self._pending:
                self._wake.notify_all()

    @property
    def vector_model(self) -> str:
        """What made the stored vectors: the embedder's model and the conversation-context rule."""
        assert self.embedder is not None
        return f"{self.embedder.model_id}+{CONTEXT_RULE}"

    def _load_vectors(self) -> None:
        """The matrices from their snapshot when it is current, else rebuilt from the index file."""
        assert self.embedder is not None
        model_id = self.vector_model
        if self.db.get_meta(_MODEL_META_KEY) != model_id:
            log.info("search index: vectors are now %s; every message will be embedded again", model_id)
            self.db.set_meta(_MODEL_META_KEY, model_id)
        dimensions = self.embedder.dimensions or None
        writes = self._loaded_writes = self.db.write_stamp()
        saved = read_snapshot(self._snapshot, model_id, writes, self._exact_reader)
        if saved is not None and (dimensions is None or saved[0].dimensions == dimensions):
            self._matrix, self._context = saved
            self._snapshot_writes = writes
            self._vectors_loaded = True
            self._group_vectors(0.0)
            return
        if dimensions:
            self._matrix = self._new_matrix(dimensions, "vector")
            self._matrix.reserve(self.db.count())
            self._context = self._new_matrix(dimensions, "context")
        total = self.db.count()
        with ProgressReporter("loading vectors", total, enabled=self._progress and total > 0) as bar:
            for batch in self.db.load_vectors(model_id, dimensions, known=self._holds_key):
                for stored in batch:
                    self._upsert_vector(
                        stored.rowid,
                        stored.vector,
                        stored.rid,
                        stored.username,
                        stored.ts_ms,
                        stored.key,
                        stored.context,
                    )
                bar.advance(len(batch))
        self._vectors_loaded = True
        self._group_vectors(0.0)
        self._save_snapshot()

    def _group_vectors(self, share: float) -> None:
        """Group each matrix's vectors by room once more than `share` of them came since the last time."""
        for matrix in (self._matrix, self._context):
            if matrix is not None and matrix.scattered_share > share:
                matrix.group_by_room()
                self._snapshot_writes = ""  # the snapshot on disk, if any, holds the old order

    def _exact_reader(self, column: Column) -> ExactVectors:
        """What a matrix re-scores with: the stored vectors of `column`, read from the index file."""
        return lambda rowids: self.db.exact_vectors(rowids, column)

    def _new_matrix(self, dimensions: int, column: Column) -> VectorMatrix:
        return VectorMatrix(dimensions, exact=self._exact_reader(column))

    def _save_snapshot(self) -> None:
        """Save the matrices when they are what the index file holds now and the file has changed
        since the snapshot on disk. Another process's write since this one's last (a second server
        on the data dir) leaves the matrices possibly behind it: then no snapshot is left at all."""
        if self._matrix is None or self._context is None or not self._vectors_loaded:
            return
        writes = self.db.write_stamp()
        if writes == self._snapshot_writes:
            return
        if writes not in (self.db.own_write_stamp, self._loaded_writes):
            self._snapshot.unlink(missing_ok=True)
            return
        try:
            write_snapshot(self._snapshot, self.vector_model, writes, self._matrix, self._context)
            self._snapshot_writes = writes
        except OSError as exc:  # a full disk: the next start rebuilds, as without a snapshot
            log.warning("search index: saving the vector snapshot failed (%s)", exc)

    def _holds_key(self, key: bytes) -> bool:
        return self._matrix is not None and self._matrix.holds(key)

    def _upsert_vector(
        self,
        rowid: int,
        vector: npt.NDArray[np.float32] | None,
        rid: str,
        user: str,
        ts: int,
        key: bytes,
        context: npt.NDArray[np.float32] | None = None,
    ) -> None:
        if self._matrix is None:
            assert vector is not None  # the first row of a matrix always brings its vector
            self._matrix = self._new_matrix(int(vector.shape[0]), "vector")
        self._matrix.upsert(rowid, vector, room=rid, user=user, ts_ms=ts, key=key)
        if self._context is None:
            self._context = self._new_matrix(self._matrix.dimensions, "context")
        if context is None:
            self._context.remove(rowid)
        else:
            # Contexts are per message (no key): no two messages share one.
            self._context.upsert(rowid, context, room=rid, user=user, ts_ms=ts)

    def _take_batch(self) -> list[int] | None:
        with self._wake:
            while not self._pending and not self._closed:
                self._wake.wait()
            if self._closed:
                return None
            batch = list(self._pending)[:EMBED_BATCH_TEXTS]
            for rowid in batch:
                del self._pending[rowid]
            self._embedding = set(batch)
            return batch

    def _embed_loop(self) -> None:
        retry_seconds = 1.0
        bar: ProgressReporter | None = None  # shown while a large backlog drains (start, imports)
        done = 0
        while (batch := self._take_batch()) is not None:
            if bar is None and self._progress:
                backlog = len(batch) + self.pending_embeddings
                candidate = ProgressReporter("embedding messages", backlog, enabled=True)
                if candidate.shows:
                    bar, done = candidate.__enter__(), 0
            try:
                self._embed(batch)
                retry_seconds = 1.0
            except Exception as exc:  # the thread must not die: the index would silently go stale
                if not isinstance(exc, EmbedderError):
                    log.exception("search index: embedding a batch failed unexpectedly")
                self._note_failure(batch, str(exc) or type(exc).__name__)
                with self._wake:
                    self._wake.wait(retry_seconds)
                retry_seconds = min(retry_seconds * 2, EMBED_RETRY_MAX_SECONDS)
            finally:
                with self._wake:
                    self._embedding = set()
                    self._wake.notify_all()
            if bar is not None:
                done += len(batch)
                left = self.pending_embeddings
                bar.update(completed=done, total=done + left)
                if left == 0:
                    bar.__exit__(None, None, None)
                    bar = None
        if bar is not None:
            bar.__exit__(None, None, None)

    def _note_failure(self, batch: list[int], reason: str) -> None:
        self.embed_failures += 1
        if self.last_embed_error != reason:
            log.warning(
                "search index: embedding failed (%s); semantic results will lag until it recovers", reason
            )
        self.last_embed_error = reason
        with self._wake:
            for rowid in batch:  # back in the queue: retried on the next round
                self._pending.setdefault(rowid, None)
            self._embedding = set()

    def _embed(self, batch: list[int]) -> None:
        """Embed a batch of documents, each distinct text once.

        A text already held in memory (another message with the same text: bot posts, "thanks",
        "+1") reuses that vector without calling the embedder; identical texts inside the batch are
        sent once.
        """
        assert self.embedder is not None
        docs = self.db.texts(batch)
        rowids = [rowid for rowid in batch if rowid in docs]
        if not rowids:
            return
        keys = {rowid: content_key(docs[rowid][0]) for rowid in rowids}
        # The stored float16 copy, so memory and disk agree after a restart.
        vectors: dict[bytes, npt.NDArray[np.float32]] = {}
        new_texts: dict[bytes, str] = {}
        for rowid in rowids:
            key = keys[rowid]
            if key in vectors or key in new_texts:
                continue
            held = None if self._matrix is None else self._matrix.vector_for(key)
            if held is not None:
                vectors[key] = held
            else:
                new_texts[key] = docs[rowid][0]
        if new_texts:
            embedded = self.embedder.embed(list(new_texts.values()))
            for i, key in enumerate(new_texts):
                vectors[key] = embedded[i].astype(np.float16).astype(np.float32)
        self.embedded_texts += len(new_texts)
        contexts = self._embed_contexts(rowids, {rowid: docs[rowid][0] for rowid in rowids})
        saved = self.db.store_vectors(
            [(r, docs[r][1], vectors[keys[r]], contexts.get(r)) for r in rowids], self.vector_model
        )
        rows = self.db.rows(saved)
        for rowid in rowids:
            row = rows.get(rowid)
            if row is not None:
                self._upsert_vector(
                    rowid,
                    vectors[keys[rowid]],
                    row.rid,
                    row.username,
                    row.ts_ms,
                    keys[rowid],
                    contexts.get(rowid),
                )
        self._group_vectors(REGROUP_SHARE)
        self.last_embed_error = None

    def _embed_contexts(
        self, rowids: Sequence[int], texts: dict[int, str]
    ) -> dict[int, npt.NDArray[np.float32]]:
        """The vector of each document's text after its earlier conversation, for those that have one."""
        assert self.embedder is not None
        rows = self.db.rows(rowids)
        messages = self.store.get_messages(row.msg_id for row in rows.values())
        context_texts: dict[int, str] = {}
        for rowid, row in rows.items():
            message = messages.get(row.msg_id)
            if message is None:
                continue
            earlier = self.store.earlier_in_conversation(
                message, limit=CONTEXT_MESSAGES, within=CONTEXT_WINDOW
            )
            text = context_text(texts[rowid], [m.searchable_text for m in earlier])
            if text is not None:
                context_texts[rowid] = text
        if not context_texts:
            return {}
        embedded = self.embedder.embed(list(context_texts.values()))
        self.embedded_contexts += len(context_texts)
        return {
            rowid: embedded[i].astype(np.float16).astype(np.float32) for i, rowid in enumerate(context_texts)
        }

    def wait_until_embedded(self, timeout_seconds: float) -> bool:
        """Block until nothing waits for a vector; False if `timeout_seconds` passed first."""
        deadline = time.monotonic() + timeout_seconds
        with self._wake:
            while self._pending or self._embedding:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed:
                    return False
                self._wake.wait(remaining)
        return True

    # -- searching ----------------------------------------------------------------------------------

    def keyword_search(
        self,
        terms: Sequence[Term],
        scope: KeywordScope,
        k: int,
        *,
        min_coverage: float = 0.0,
        conditions: DocConditions | None = None,
        exhaustive: bool = False,
    ) -> list[KeywordHit]:
        """The `k` messages in scope matching any term, those matching more of the query's weight first.

        Ranked by coverage (the share of the query's squared IDF weight a message holds: "checkout"
        and "slow" outweigh "why was the"), then BM25, then the oldest first; BM25 alone lets a
        three-word message holding only "slow" and "was" beat a long one holding "checkout", "slow"
        and "month". Both are read from the tokens the index stored (``keyword_rank.TokenRanker``),
        not by cutting each text again, and every weight is counted over `scope`'s rooms only
        (``plan_keyword_search``): what other rooms hold changes neither which messages come back
        nor their order.

        What FTS5 is asked is bounded three ways, each from those counts, known before the query:

        - terms in more than `COMMON_TERM_SHARE` of the scope's messages are left out when rarer
          ones remain (scopes under `COMMON_TERM_MIN_DOCUMENTS` search every term);
        - with `min_coverage` (the relevance floor the caller applies), the lightest terms are left
          out as long as a message holding only left-out terms stays under it: such a message can
          never be a result, and a rare word's short list then stands for the whole query;
        - past `KEYWORD_EXACT_MAX_MATCHES` matches in scope, only the `KEYWORD_NEWEST_MATCHES` most
          recent ones are ranked, beside every message holding all the searched terms (their own,
          much shorter, AND query): the cost stays bounded by what is ranked, at any size.

        `conditions` (the search line's ``has:``, ``is:``, excluded words...) sit inside each FTS5
        query, so only messages that meet them are ranked.

        `exhaustive` ranks every match of the searched terms in scope, with no bound: the reference
        the keyword recall bench compares with (slow on long lists; never on a request's path).
        """
        if not terms or not scope.rooms or k <= 0:
            return []
        plan = plan_keyword_search(terms, self._scope_statistics(terms, scope.rooms), min_coverage)
        if exhaustive or plan.matches <= KEYWORD_EXACT_MAX_MATCHES:
            matches = self.db.keyword_matches(
                fts_match_expression(plan.searched), scope, conditions=conditions
            )
        else:
            matches = self._bounded_matches(plan, scope, conditions)
        score = plan.ranker().score
        ranked = []
        for n, (key, words, parts) in enumerate(matches):
            coverage, bm25 = score(words, parts)
            # Coverage first (to 9 decimals: equal sums tie), BM25, then the oldest (the order FTS5
            # hands equal ranks over in): a term key is unique, so the order depends on nothing
            # but the matches themselves.
            ranked.append((-round(coverage, 9), bm25, key, n, coverage))
        best = heapq.nsmallest(k, ranked)
        rows = self.db.keyword_rows([matches[n].rowid for *_order, n, _coverage in best])
        hits = []
        for _order, bm25, _key, n, coverage in best:
            match = matches[n]
            found = rows.get(match.rowid)
            if found is not None:  # deleted since the match
                row, text = found
                hits.append(
                    KeywordHit(
                        row.rowid, row.msg_id, row.rid, row.username, row.ts_ms, bm25, text,
                        coverage=coverage, words=match.words, parts=match.parts,
                    )
                )  # fmt: skip
        return hits

    def _bounded_matches(
        self, plan: KeywordPlan, scope: KeywordScope, conditions: DocConditions | None
    ) -> list[KeywordMatch]:
        """The keyword query over lists too long to rank whole: the newest matches in scope, and the
        messages holding every searched term (all of them when that AND is short enough)."""
        searched = plan.searched
        found = {
            match.key: match
            for match in self.db.keyword_matches(
                fts_match_expression(searched), scope, newest=KEYWORD_NEWEST_MATCHES, conditions=conditions
            )
        }
        if len(searched) > 1:
            every = " AND ".join(f"({fts_match_expression([term])})" for term in searched)
            exact = min(plan.counts[t] for t in searched) <= KEYWORD_EXACT_MAX_MATCHES
            for match in self.db.keyword_matches(
                every, scope, newest=None if exact else KEYWORD_NEWEST_MATCHES, conditions=conditions
            ):
                found.setdefault(match.key, match)
        return list(found.values())

    def _scope_statistics(self, terms: Sequence[Term], rooms: Sequence[str]) -> ScopeStatistics:
        """The scope's documents and tokens, and per term the documents holding it, in its rooms only."""
        singles = [t[0] for t in terms if len(t) == 1 and not is_prefix_term(t)]
        prefixes = [t[0] for t in terms if is_prefix_term(t)]
        words_in_phrases = [w for t in terms if len(t) > 1 for w in t]
        counted = self.db.scope_counts(rooms, [*singles, *words_in_phrases], prefixes)
        per_term: dict[Term, int] = {}
        for term in terms:
            if is_prefix_term(term):
                per_term[term] = counted.terms[term[0] + "*"]
            else:  # a phrase is at most as common as its rarest word
                per_term[term] = min(counted.terms[word] for word in term)
        return ScopeStatistics(counted.documents, counted.tokens, per_term)

    def known_terms(self, terms: Sequence[Term], rooms: Sequence[str]) -> int:
        """How many of `terms` occur in any message of `rooms` (0: a query in words no one used)."""
        if not terms or not rooms:
            return 0
        counts = self._scope_statistics(terms, rooms).counts
        return sum(1 for term in terms if counts.get(term, 0) > 0)

    def rows(self, rowids: Sequence[int]) -> dict[int, DocRow]:
        return self.db.rows(rowids)

    def condition_scope(self, scope: VectorScope, conditions: DocConditions) -> VectorScope:
        """`scope` narrowed by the conditions, for the semantic branch's mask."""
        allowed, blocked = self.db.condition_rowids(conditions)
        return replace(
            scope, excluded_users=frozenset(conditions.not_usernames), allowed=allowed, blocked=blocked
        )

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Raises EmbedderError (EmbedderUnavailable when there is no embedder)."""
        if self.embedder is None:
            raise EmbedderUnavailable("no embedder is configured")
        vector: npt.NDArray[np.float32] = self.embedder.embed([text])[0]
        return vector

    def semantic_search(
        self, vector: npt.NDArray[np.float32], scope: VectorScope, k: int, min_similarity: float
    ) -> list[tuple[int, float]]:
        """The `k` messages most similar to `vector` in scope, best first: each scores the better of its
        two similarities, alone and with its conversation (retrieval/context.py).

        Exact: a message in the top `k` by the better score is in the top `k` of the matrix that gave
        it that score, so merging the two top-`k` lists loses nothing.
        """
        if self._matrix is None or vector.shape[0] != self._matrix.dimensions:
            return []
        best: dict[int, float] = {}
        for matrix in (self._matrix, self._context):
            if matrix is None:
                continue
            for rowid, score in matrix.search(vector, scope, k=k, min_similarity=min_similarity):
                if score > best.get(rowid, -np.inf):
                    best[rowid] = score
        ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))
        return ranked[:k]


@dataclass(frozen=True, slots=True)
class KeywordPlan:
    """What one keyword search asks the index for, and how it ranks, decided from its scope's
    statistics only (``plan_keyword_search``; the FTS5 and the PostgreSQL branch alike)."""

    terms: tuple[Term, ...]
    searched: tuple[Term, ...]  # the terms the index is asked for
    counts: Mapping[Term, int]  # messages in scope holding each term (upper bounds: keyword_rank)
    weights: dict[Term, float]  # each term's weight in the coverage (terms.term_weights)
    idf: dict[Term, float]  # each searched term's BM25 IDF (keyword_rank.bm25_idf)
    mean_tokens: float  # BM25's mean length in scope

    @property
    def matches(self) -> int:
        """An upper bound of the messages in scope that match a searched term."""
        return sum(self.counts[term] for term in self.searched)

    def ranker(self) -> TokenRanker:
        return TokenRanker(self.terms, self.searched, self.weights, self.idf, self.mean_tokens)


def plan_keyword_search(
    terms: Sequence[Term], statistics: ScopeStatistics, min_coverage: float
) -> KeywordPlan:
    """The terms to search and their weights, from `statistics` (the scope's rooms only): the
    common-term cut (`COMMON_TERM_SHARE` of the scope's messages, in scopes of at least
    `COMMON_TERM_MIN_DOCUMENTS`), then MaxScore's essential terms under `min_coverage`."""
    counts, total = statistics.counts, statistics.documents
    weights = term_weights(counts, total)
    rare = [t for t in terms if 0 < counts[t] <= COMMON_TERM_SHARE * total]
    searched = rare if rare and total >= COMMON_TERM_MIN_DOCUMENTS else list(terms)
    searched = _essential_terms(searched, weights, min_coverage)
    return KeywordPlan(
        tuple(terms),
        tuple(searched),
        counts,
        weights,
        {term: bm25_idf(counts[term], total) for term in searched},
        statistics.mean_tokens,
    )


def _essential_terms(searched: Sequence[Term], weights: dict[Term, float], min_coverage: float) -> list[Term]:
    """`searched` without its lightest terms, as long as a message holding only the terms left out
    (and those the caller left out already) covers less than `min_coverage` of the query's weight:
    every message that can clear the floor holds one of the terms kept (MaxScore's essential lists).
    At least one term is kept."""
    total = sum(w * w for w in weights.values())
    if min_coverage <= 0 or total <= 0:
        return list(searched)
    limit = (min_coverage - _COVERAGE_ROUNDING) * total
    left_out = sum(w * w for term, w in weights.items() if term not in searched)
    dropped: set[Term] = set()
    for term in sorted(searched, key=lambda t: weights[t])[:-1]:
        if left_out + weights[term] ** 2 >= limit:
            break
        left_out += weights[term] ** 2
        dropped.add(term)
    return [term for term in searched if term not in dropped]
