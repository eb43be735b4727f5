"""The real app wired to test upstreams on loopback, with deadlines a test can shorten.

``product_app(store, pipeline_url=..., llm_url=...)`` builds ``create_app`` with a remote pipeline and
an OpenAI-compatible provider reached through the real guarded client (loopback allow-listed).
``pipeline_deadline`` and ``llm_deadline`` replace the product's 10 s and 20 s for the default run;
``None`` keeps the product's own (the soak run measures those). ``asgi(app)`` is an in-process client
that turns an unhandled exception into the 500 a real server would send.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
from starlette.applications import Starlette

from ai_search import PipelineConfig
from ai_search_server.answers.answer_service import AnswerService
from ai_search_server.answers.provider import OpenAICompatibleProvider, ProviderConfig
from ai_search_server.app import create_app
from ai_search_server.outbound import OutboundPolicy
from ai_search_server.retrieval.pipeline_client import RemotePipeline
from ai_search_server.retrieval.search_service import SearchService
from ai_search_server.retrieval.wiring import SearchHandle, search_options
from ai_search_server.store.base import Store
from tests.server.conftest import BASE_URL

from .conftest import reliability_settings

__all__ = ["LOOPBACK", "MCP_HEADERS", "asgi", "product_app"]

LOOPBACK = OutboundPolicy(allow_hosts=("127.0.0.1",))
MCP_HEADERS = {"Accept": "application/json", "Content-Type": "application/json"}


def asgi(app: Starlette, client_host: str = "203.0.113.7") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(client_host, 50000), raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url=BASE_URL)


@asynccontextmanager
async def product_app(
    store: Store,
    *,
    pipeline_url: str | None = None,
    llm_url: str | None = None,
    pipeline_deadline: float | None = None,
    llm_deadline: float | None = None,
    limiter: Any = None,
    **overrides: Any,
) -> AsyncIterator[Starlette]:
    values: dict[str, Any] = {"outbound_allow_hosts": ["127.0.0.1"], **overrides}
    if llm_url is not None:
        values.update(llm_base_url=llm_url, llm_model="gpt-4o", llm_api_key="sk-reliability")
    settings = reliability_settings(**values)
    app = create_app(settings, store, limiter=limiter)
    async with AsyncExitStack() as stack:
        # The app's one client, as the lifespan would close it (in-process tests run no lifespan).
        client = await stack.enter_async_context(app.state.services.outbound)
        if llm_url is not None:
            provider_config = ProviderConfig(settings.llm_base_url, settings.llm_model, settings.llm_api_key)
            provider = (
                OpenAICompatibleProvider(client, provider_config)
                if llm_deadline is None
                else OpenAICompatibleProvider(
                    client, provider_config, completion_timeout_seconds=llm_deadline
                )
            )
            app.state.services.answers = AnswerService(settings, store, provider)
        if pipeline_url is not None:
            pipeline_config = PipelineConfig(pipeline_url, "p1", "pk", "ps")
            pipeline = RemotePipeline(pipeline_config, client, timeout_seconds=pipeline_deadline)
            service = SearchService(store, pipeline, search_options(settings))
            stack.push_async_callback(service.aclose)
            app.state.services.search = SearchHandle.ready(settings, store, service)
        yield app
