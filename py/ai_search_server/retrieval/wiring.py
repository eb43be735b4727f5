"""Building the search service from the settings, once per app, off the request path.

``SearchHandle`` is ``Services.search``. The app's lifespan calls ``start()`` so the
index catches up (with progress bars on a terminal) before the first request; where no lifespan
runs (an in-process test client), the first ``get()`` builds it. Either way the blocking work
(opening the index, loading the model) happens in a worker thread.

Which pipeline:

- ``pipeline_base_url`` set: the remote pipeline, through the app's guarded outbound client;
- otherwise the embedded one on ``<data_dir>/index.db``, with the embedder the ``embedder`` setting
  names (``local``: the packaged MiniLM on the fastest runtime available, or the one
  ``embedder_runtime`` names; ``openai``: an OpenAI-compatible endpoint, through the same client
  from the index's thread; ``none``). An
  embedder that cannot start leaves the search keyword-only, logged and said in every answer's meta.

``keyword_index = "postgres"`` (with ``database_url``) moves the embedded pipeline's keyword branch
into PostgreSQL (``pg_keyword.PgKeywordIndex``, shared by every process); the semantic branch stays
on ``index.db``.

The embedded pipeline is also served over HTTP when ``embedded_pipeline_http`` is on and both
``embedded_pipeline_api_key`` and ``embedded_pipeline_api_key_secret`` are set.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.lowlevel
from starlette.routing import BaseRoute

from ai_search import PipelineConfig

from ..outbound import BlockingClient, GuardedClient, OutboundPolicy, blocking_client
from ..settings import Settings
from ..store.base import Store
from .embedded import EmbeddedPipeline
from .embedder import Embedder, EmbedderError, OpenAIEmbedder
from .floor import floor_for
from .index import INDEX_FILENAME, EmbeddedIndex
from .pg_keyword import PgKeywordIndex
from .pipeline_client import Pipeline, RemotePipeline
from .search_service import SearchOptions, SearchService
from .second_stage import SecondStage
from .second_stage.bands import bands_for
from .second_stage.local import DeferredStage, LocalStage
from .second_stage.remote import build_remote_stage

__all__ = [
    "EMBEDDED_PIPELINE_ID",
    "EmbeddedPipelineHttpSettings",
    "SearchHandle",
    "build_embedder",
    "embedded_pipeline_http_settings",
    "index_now",
    "search_options",
]

log = logging.getLogger(__name__)

# Longest `index_now` waits for embeddings before leaving the rest to the server (seconds).
INDEX_NOW_MAX_SECONDS = 24 * 3600
# The id under which this server serves its embedded pipeline over HTTP.
EMBEDDED_PIPELINE_ID = "embedded"


def search_options(settings: Settings, model_id: str | None = None) -> SearchOptions:
    """The search settings; `model_id` (the embedded index's embedder) picks the calibrated floor,
    and so does the model a remote pipeline names in its answer (`floor.MODEL_FIELD`)."""
    floor_percent = settings.search_semantic_floor_percent
    percent = None if floor_percent < 0 else floor_percent
    # Bands replace the floor where they are calibrated, unless a floor is set by hand.
    banded = percent is None
    strong, related = settings.second_stage_strong_score, settings.second_stage_related_score
    return SearchOptions(
        enabled=settings.search_enabled,
        semantic_weight=settings.search_semantic_weight,
        recency_weight=settings.search_recency_weight,
        recency_half_life_days=settings.search_recency_half_life_days,
        min_similarity_percent=settings.search_min_similarity_percent,
        answer_enabled=settings.answer_enabled,
        floor=floor_for(model_id, percent),
        # A pipeline process names its model in each semantic answer: its calibrated floor applies.
        model_floor=functools.partial(floor_for, semantic_percent=percent),
        bands=bands_for(model_id) if banded else None,
        model_bands=bands_for if banded else lambda _model: None,
        stage_candidates=settings.second_stage_candidates,
        stage_thresholds=(strong, related) if strong is not None and related is not None else None,
    )


def _keyword_min_coverage(options: SearchOptions) -> float:
    """The least coverage any keyword hit can use: the floor's, or the related band's when lower."""
    if options.bands is None:
        return options.floor.keyword_coverage
    return min(options.floor.keyword_coverage, options.bands.related_coverage)


def build_embedder(settings: Settings, client: BlockingClient | None) -> Embedder | None:
    """The configured embedder, or None (keyword only) when it is `none` or cannot start.

    ``client``: the app's outbound client as the embedder's thread calls it (``openai`` needs it).
    """
    try:
        if settings.embedder == "local":
            from .local_embedder import load_local_embedder

            return load_local_embedder(settings.embedder_runtime, threads=settings.embedder_threads)
        if settings.embedder == "openai":
            if client is None:
                raise EmbedderError("embedder openai needs the outbound client, and none was given")
            return OpenAIEmbedder(
                settings.embedding_base_url,
                settings.embedding_model,
                settings.embedding_api_key,
                client=client,
            )
    except EmbedderError as exc:
        log.warning("semantic search is off: %s", exc)
    return None


@dataclass(frozen=True, slots=True)
class EmbeddedPipelineHttpSettings:
    enabled: bool
    api_key: str
    api_key_secret: str


def embedded_pipeline_http_settings(settings: Settings) -> EmbeddedPipelineHttpSettings:
    return EmbeddedPipelineHttpSettings(
        enabled=settings.embedded_pipeline_http,
        api_key=settings.embedded_pipeline_api_key,
        api_key_secret=settings.embedded_pipeline_api_key_secret,
    )


class SearchHandle:
    """Builds the search service once; `get` from any request, `start`/`aclose` from the lifespan.

    `outbound` is the app's one client: the remote pipeline calls it, and so does an OpenAI-compatible
    embedder, from the index's thread, on the loop that first asked for the service. Tests may hand in
    a ready `service` (and the `index` behind it) instead, with no client.
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        outbound: GuardedClient | None,
        data_dir: Path | None,
        service: SearchService | None = None,
        index: EmbeddedIndex | None = None,
        progress: bool | None = None,
    ) -> None:
        self._settings = settings
        self._store = store
        self._outbound = outbound
        # The event loop that owns the outbound client, learnt on it (`get`), for the embedder's thread.
        self._loop: anyio.lowlevel.EventLoopToken | None = None
        self._data_dir = data_dir
        self._service = service
        self.index = index
        self.keyword: PgKeywordIndex | None = None  # keyword_index = "postgres"
        self._progress = sys.stderr.isatty() if progress is None else progress
        self._build_lock = threading.RLock()  # _build opens the index under the same lock
        self._closed = False

    @classmethod
    def ready(cls, settings: Settings, store: Store, service: SearchService) -> SearchHandle:
        index = getattr(service.pipeline, "index", None)
        return cls(settings, store, outbound=None, data_dir=None, service=service, index=index)

    def _build(self) -> SearchService:
        with self._build_lock:
            if self._service is not None:
                return self._service
            if self._closed:
                raise RuntimeError("the search service is closed")
            pipeline = self._pipeline()
            embedder = getattr(getattr(pipeline, "index", None), "embedder", None)
            model_id = None if embedder is None else embedder.model_id
            self._service = SearchService(
                self._store,
                pipeline,
                search_options(self._settings, model_id),
                second_stage=self._second_stage(pipeline),
            )
            return self._service

    def _second_stage(self, pipeline: Pipeline) -> SecondStage | None:
        """The stage the `second_stage` setting names; `auto` is the local model where the embedded
        index has a semantic branch to re-rank (and the model is installed), else none."""
        choice = self._settings.second_stage
        if choice in ("rerank", "embeddings"):
            return build_remote_stage(self._settings, self._client())
        index = getattr(pipeline, "index", None)
        if choice == "off" or not isinstance(index, EmbeddedIndex) or self._data_dir is None:
            return None
        if index.embedder is None and choice == "auto":
            return None
        data_dir = self._data_dir
        store = self._store

        def load() -> LocalStage:
            from .mpnet import load_mpnet

            return LocalStage.open(
                load_mpnet(threads=1),
                store,
                data_dir,
                data_dir / INDEX_FILENAME,
                first_stage_busy=lambda: index.pending_embeddings > 0,
            )

        from .mpnet import MPNET_INT8_MODEL_ID

        stage = DeferredStage(load, model_id=MPNET_INT8_MODEL_ID, index_path=data_dir / INDEX_FILENAME)
        stage.start()
        return stage

    def _pipeline(self) -> Pipeline:
        settings = self._settings
        config = PipelineConfig(
            settings.pipeline_base_url,
            settings.pipeline_id,
            settings.pipeline_api_key,
            settings.pipeline_api_key_secret,
            settings.search_query_template,
            settings.search_min_similarity_percent,
        )
        if config.is_configured:
            return RemotePipeline(config, self._client(), send_conditions=settings.pipeline_conditions)
        if settings.pipeline_base_url:
            log.warning(
                "pipeline_base_url is set but the pipeline id, key or secret is missing: "
                "using the embedded pipeline"
            )
        index = self.embedded_index()
        model_id = None if index.embedder is None else index.embedder.model_id
        return EmbeddedPipeline(
            index,
            query_template=settings.search_query_template,
            min_similarity_percent=settings.search_min_similarity_percent,
            # The floor the service will apply (`_build`): terms that alone cannot clear it go unsearched.
            keyword_min_coverage=_keyword_min_coverage(search_options(settings, model_id)),
            keyword=self.keyword_index(),
        )

    def keyword_index(self) -> PgKeywordIndex | None:
        """The PostgreSQL keyword index when ``keyword_index = "postgres"``, opened on first use."""
        with self._build_lock:
            if self.keyword is None and self._settings.keyword_index == "postgres":
                self.keyword = PgKeywordIndex.open(
                    self._settings.database_url, self._store, progress=self._progress
                )
            return self.keyword

    def embedded_index(self) -> EmbeddedIndex:
        """The embedded index, opened on first use (also when only the HTTP pipeline needs it)."""
        with self._build_lock:
            if self.index is None:
                if self._data_dir is None:
                    raise RuntimeError("the embedded pipeline needs a data dir for its index")
                self._data_dir.mkdir(parents=True, exist_ok=True)
                client = self._client()
                blocking = BlockingClient(client, self._loop) if self._loop is not None else None
                self.index = EmbeddedIndex.open(
                    self._data_dir / INDEX_FILENAME,
                    self._store,
                    build_embedder(self._settings, blocking),
                    progress=self._progress,
                )
            return self.index

    def _client(self) -> GuardedClient:
        if self._outbound is None:
            raise RuntimeError("this search handle was made without an outbound client")
        return self._outbound

    def http_routes(self) -> list[BaseRoute]:
        """The embedded pipeline over HTTP, when `embedded_pipeline_http` is on (and keys are set)."""
        served = embedded_pipeline_http_settings(self._settings)
        if not served.enabled:
            return []
        if not (served.api_key and served.api_key_secret):
            log.warning(
                "embedded_pipeline_http is on but embedded_pipeline_api_key or "
                "embedded_pipeline_api_key_secret is empty: the pipeline is not served"
            )
            return []
        from .pipeline_http import pipeline_routes

        async def pipeline() -> EmbeddedPipeline:
            service = await self.get()
            if isinstance(service.pipeline, EmbeddedPipeline):
                return service.pipeline
            index = await anyio.to_thread.run_sync(self.embedded_index)
            keyword = await anyio.to_thread.run_sync(self.keyword_index)
            return EmbeddedPipeline(
                index, query_template=self._settings.search_query_template, keyword=keyword
            )

        return pipeline_routes(
            pipeline,
            pipeline_id=EMBEDDED_PIPELINE_ID,
            api_key=served.api_key,
            api_key_secret=served.api_key_secret,
        )

    async def get(self) -> SearchService:
        if self._service is not None:
            return self._service
        if self._loop is None:
            self._loop = anyio.lowlevel.current_token()
        return await anyio.to_thread.run_sync(self._build)

    async def start(self) -> None:
        await self.get()

    async def aclose(self) -> None:
        self._closed = True
        service, self._service = self._service, None
        if service is not None:
            await service.aclose()
        index, self.index = self.index, None
        if index is not None:
            await anyio.to_thread.run_sync(index.close)
        keyword, self.keyword = self.keyword, None
        if keyword is not None:
            await anyio.to_thread.run_sync(keyword.close)
        embedder = getattr(index, "embedder", None)
        close = getattr(embedder, "close", None)
        if callable(close):
            close()


def index_now(
    settings: Settings,
    store: Store,
    data_dir: Path,
    *,
    policy: OutboundPolicy | None = None,
    client: BlockingClient | None = None,
    progress: bool = True,
) -> int:
    """Bring `<data_dir>/index.db` level with the store and embed what lacks a vector, blocking.

    For `ai-search import` (and any batch job): keyword catch-up and embedding each show a
    progress bar on stderr. Returns the messages indexed. Does nothing with a remote pipeline.
    A running server follows the store's change log and finds the new messages by itself too, within
    about a second (`EmbeddedIndex.follow_once`), reading the vectors this job stored. An
    OpenAI-compatible embedder calls out through ``client``, the job's one outbound client as this
    thread calls it (``ai-search sync``, whose mirror calls out too), or else through one client
    under ``policy``, for this job only (``ai-search import``).

    Raises:
        ValueError: neither ``policy`` nor ``client`` is given.
    """
    if policy is None and client is None:
        raise ValueError("index_now needs the job's outbound policy or client")
    if PipelineConfig(
        settings.pipeline_base_url,
        settings.pipeline_id,
        settings.pipeline_api_key,
        settings.pipeline_api_key_secret,
    ).is_configured:
        return 0
    with contextlib.ExitStack() as stack:
        if client is None and policy is not None and settings.embedder == "openai":
            client = stack.enter_context(blocking_client(policy))
        embedder = build_embedder(settings, client)
        if settings.keyword_index == "postgres":  # level with the store now, not at the server's start
            PgKeywordIndex.open(settings.database_url, store, progress=progress, follow=False).close()
        index = EmbeddedIndex.open(data_dir / INDEX_FILENAME, store, embedder, progress=progress)
        try:
            index.wait_until_embedded(INDEX_NOW_MAX_SECONDS)
            return index.db.count()
        finally:
            index.close()
