"""The embedded pipeline as a process of its own: one index that any number of proxies share.

``ai-search pipeline serve`` runs this app. It keeps the search index (FTS5 and vectors, in
``<data_dir>/index.db``), follows the workspace store as every index does (PostgreSQL's change log, or
SQLite's), embeds new messages and query texts, and serves only the remote-pipeline contract:

    POST /pipeline/v1/pipelines/embedded/search   X-API-KEY, X-API-KEY-SECRET   (pipeline_http.py)
    GET  /pipeline/v1/health                      200 ready, 503 starting or failed

No user routes, no page, no MCP: the proxies (``ai-search serve`` with ``pipeline_base_url`` pointing
here) authenticate people and scope every search to the rooms the caller may read; the pipeline is
told that scope in each request's filters and answers only from it. Its keys are the settings
``embedded_pipeline_api_key`` and ``embedded_pipeline_api_key_secret`` (required: the process refuses
to start without them), and each proxy's ``pipeline_api_key`` / ``pipeline_api_key_secret`` are the
same pair.

Server to server, so no browser has business here: the Host check holds on every path (421,
``allowed_hosts`` names the pipeline's own host names beside the loopback ones), a request with an
``Origin`` that is not the process's own, or a browser's cross-site ``Sec-Fetch-Site``, is refused
(403), and wrong keys spend the per-address failed-authentication budget (429 past it) as on the
proxies.

The port opens at once; the index is opened (caught up with the store, vectors loaded) in a worker
thread meanwhile, with a log line every :data:`PROGRESS_LOG_SECONDS`, and searches answer 503 (which
a proxy turns into a degraded search with a notice) until it is ready. The health answer says
``starting``, ``ready`` or ``failed``; with the keys it adds the counts.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio
import anyio.lowlevel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .body_limit import BodyLimitMiddleware
from .origin_middleware import OriginMiddleware
from .origins import OriginPolicy
from .outbound import BlockingClient, GuardedClient
from .ratelimit import FailedAuthMiddleware, RateLimiter
from .retrieval.embedded import EmbeddedPipeline
from .retrieval.index import INDEX_FILENAME, EmbeddedIndex
from .retrieval.pg_keyword import PgKeywordIndex
from .retrieval.pipeline_client import PipelineError
from .retrieval.pipeline_http import MAX_PIPELINE_BODY_BYTES, PIPELINE_HTTP_PREFIX, pipeline_routes, same_key
from .retrieval.wiring import EMBEDDED_PIPELINE_ID, build_embedder, search_options
from .security_headers import SecurityHeadersMiddleware
from .services import outbound_policy
from .settings import Settings, SettingsError
from .store.base import Store

__all__ = [
    "PIPELINE_HEALTH_PATH",
    "PROGRESS_LOG_SECONDS",
    "PipelineProcess",
    "check_pipeline_keys",
    "create_pipeline_app",
]

log = logging.getLogger(__name__)

# Where the process says whether it is ready (GET).
PIPELINE_HEALTH_PATH = f"{PIPELINE_HTTP_PREFIX}/health"
# Seconds between two log lines while the index is being opened or embeds a backlog.
PROGRESS_LOG_SECONDS = 10.0
# A backlog of embeddings smaller than this (messages) is not worth a log line.
PROGRESS_LOG_MIN_PENDING = 500

Status = Literal["starting", "ready", "failed"]


def check_pipeline_keys(settings: Settings) -> None:
    """The keys every search must carry are configured.

    Raises:
        SettingsError: naming both settings and their environment variables.
    """
    if not (settings.embedded_pipeline_api_key and settings.embedded_pipeline_api_key_secret):
        raise SettingsError(
            "the pipeline process needs the keys its proxies will send: set embedded_pipeline_api_key and "
            "embedded_pipeline_api_key_secret (AI_SEARCH_EMBEDDED_PIPELINE_API_KEY, "
            "AI_SEARCH_EMBEDDED_PIPELINE_API_KEY_SECRET), and the same pair as each proxy's "
            "pipeline_api_key and pipeline_api_key_secret"
        )


@dataclass
class _Progress:
    """What the opening thread has done so far, for the log lines and the health answer."""

    status: Status = "starting"
    reason: str = ""
    started: float = 0.0
    ready_seconds: float = 0.0


class PipelineProcess:
    """The index of one pipeline process: opened in a worker thread, then served until closed.

    ``outbound``: the process's one client, for an OpenAI-compatible embedder (the local model
    needs none); it is called from the index's thread on the loop that ran :meth:`start`.
    """

    def __init__(
        self, settings: Settings, store: Store, data_dir: Path, *, outbound: GuardedClient, progress: bool
    ) -> None:
        self._settings = settings
        self._store = store
        self._index_path = data_dir / INDEX_FILENAME
        self._outbound = outbound
        self._progress_bars = progress
        self._state = _Progress()
        self._index: EmbeddedIndex | None = None
        self._keyword: PgKeywordIndex | None = None  # keyword_index = "postgres"
        self._pipeline: EmbeddedPipeline | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._closed = False

    @property
    def status(self) -> Status:
        return self._state.status

    def start(self, loop: anyio.lowlevel.EventLoopToken) -> None:
        """Open the index in a worker thread and log its progress; returns at once."""
        self._state.started = time.monotonic()
        blocking = BlockingClient(self._outbound, loop)
        threading.Thread(target=self._open, args=(blocking,), name="pipeline-index-open", daemon=True).start()
        threading.Thread(target=self._report, name="pipeline-progress", daemon=True).start()

    def _open(self, client: BlockingClient) -> None:
        try:
            embedder = build_embedder(self._settings, client)
            index = EmbeddedIndex.open(self._index_path, self._store, embedder, progress=self._progress_bars)
            if self._settings.keyword_index == "postgres":
                self._keyword = PgKeywordIndex.open(
                    self._settings.database_url, self._store, progress=self._progress_bars
                )
        except Exception as exc:  # the store went away mid-build, a full disk: said, never a traceback
            self._state.reason = f"{type(exc).__name__}: {exc}"
            self._state.status = "failed"
            log.error("pipeline: the index could not be opened: %s", self._state.reason)
            self._done.set()
            return
        with self._lock:
            if self._closed:
                index.close()
                if self._keyword is not None:
                    self._keyword.close()
                return
            self._index = index
            model_id = None if index.embedder is None else index.embedder.model_id
            self._pipeline = EmbeddedPipeline(
                index,
                query_template=self._settings.search_query_template,
                min_similarity_percent=self._settings.search_min_similarity_percent,
                # The keyword floor every proxy applies (it depends on no setting and no model): terms
                # that alone cannot clear it go unsearched, as in a single process.
                keyword_min_coverage=search_options(self._settings, model_id).floor.keyword_coverage,
                keyword=self._keyword,
            )
        self._state.ready_seconds = time.monotonic() - self._state.started
        self._state.status = "ready"
        self._done.set()
        log.info(
            "pipeline: ready in %.1f s: %d messages indexed, %d with a vector, %d to embed%s",
            self._state.ready_seconds,
            index.db.count(),
            index.vector_count,
            index.pending_embeddings,
            "" if index.semantic_available else " (semantic search is off: no embedder)",
        )

    def _report(self) -> None:
        """A log line every PROGRESS_LOG_SECONDS while opening, then while a backlog is embedded."""
        total = self._store.count_messages()
        while not self._done.wait(PROGRESS_LOG_SECONDS):
            log.info(
                "pipeline: opening the index: %s of %d messages indexed (%.0f s)",
                _indexed_so_far(self._index_path),
                total,
                time.monotonic() - self._state.started,
            )
        while not self._closed and self._index is not None:
            pending = self._index.pending_embeddings
            if pending < PROGRESS_LOG_MIN_PENDING:
                return
            log.info(
                "pipeline: embedding: %d messages to go, %d vectors held", pending, self._index.vector_count
            )
            time.sleep(PROGRESS_LOG_SECONDS)

    async def pipeline(self) -> EmbeddedPipeline:
        """The served pipeline.

        Raises:
            PipelineError: the index is still opening, or failed to (the route answers 503).
        """
        if self._pipeline is None:
            raise PipelineError("unavailable", branch="pipeline", detail=f"the index is {self.status}")
        return self._pipeline

    def health(self, with_counts: bool) -> dict[str, object]:
        answer: dict[str, object] = {"status": self.status}
        index = self._index
        if with_counts and index is not None:
            answer.update(
                messages=index.db.count(),
                vectors=index.vector_count,
                pendingEmbeddings=index.pending_embeddings,
                appliedChange=index.applied_change,
                semantic=index.semantic_available,
                model=index.vector_model if index.semantic_available else None,
                readySeconds=round(self._state.ready_seconds, 1),
            )
        if with_counts and self._state.reason:
            answer["reason"] = self._state.reason
        return answer

    def close(self) -> None:
        with self._lock:
            self._closed = True
            index, self._index, self._pipeline = self._index, None, None
            keyword, self._keyword = self._keyword, None
        if keyword is not None:
            keyword.close()
        if index is not None:
            index.close()
            close = getattr(index.embedder, "close", None)
            if callable(close):
                close()


def _indexed_so_far(index_path: Path) -> str:
    """Rows in the index file so far, read beside the writer (WAL), or '?' before the table exists."""
    try:
        conn = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True, timeout=1)
        try:
            return str(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return "?"


def create_pipeline_app(
    settings: Settings,
    store: Store,
    data_dir: Path,
    *,
    site_url: str,
    limiter: RateLimiter | None = None,
    progress: bool = False,
) -> Starlette:
    """The pipeline process's app around an open store; ``site_url``: the process's own address.

    Raises:
        SettingsError: the keys are not set (:func:`check_pipeline_keys`).
    """
    check_pipeline_keys(settings)
    api_key, api_key_secret = settings.embedded_pipeline_api_key, settings.embedded_pipeline_api_key_secret
    outbound = GuardedClient(outbound_policy(settings))
    process = PipelineProcess(settings, store, data_dir, outbound=outbound, progress=progress)

    async def health(request: Request) -> Response:
        keyed = same_key(request.headers.get("x-api-key"), api_key) and same_key(
            request.headers.get("x-api-key-secret"), api_key_secret
        )
        return JSONResponse(process.health(keyed), status_code=200 if process.status == "ready" else 503)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        process.start(anyio.lowlevel.current_token())
        yield
        await anyio.to_thread.run_sync(process.close)
        await outbound.aclose()
        if limiter is not None:
            await limiter.aclose()

    routes = [
        *pipeline_routes(
            process.pipeline, pipeline_id=EMBEDDED_PIPELINE_ID, api_key=api_key, api_key_secret=api_key_secret
        ),
        Route(PIPELINE_HEALTH_PATH, health, methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.pipeline_process = process
    app.add_middleware(
        BodyLimitMiddleware,
        max_body_bytes=MAX_PIPELINE_BODY_BYTES,
        body_timeout_seconds=settings.request_body_timeout_seconds,
    )
    if limiter is not None:
        app.add_middleware(
            FailedAuthMiddleware, limiter=limiter, trusted_proxy_hops=settings.trusted_proxy_hops
        )
    policy = OriginPolicy(site_url=site_url, allowed_hosts=tuple(settings.allowed_hosts) or None)
    # No CORS lists: no browser origin but the process's own may call it.
    app.add_middleware(OriginMiddleware, policy=policy, protected_prefixes=(f"{PIPELINE_HTTP_PREFIX}/",))
    app.add_middleware(SecurityHeadersMiddleware, frame_ancestors=())
    return app
