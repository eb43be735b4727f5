"""The embedded pipeline served over HTTP, at the remote pipeline's contract.

``POST {prefix}/pipelines/{id}/search`` with ``X-API-KEY`` and ``X-API-KEY-SECRET``: another ai-search
proxy (or anything that speaks the upstream contract) can use this server's index as its remote
pipeline, and the remote client is tested against this real server on loopback.

Answers: 200 ``{"results": [...]}``; 400 ``{"error": ...}`` for a body that breaks the contract
(``embedded.parse_pipeline_request`` says which part); 401 for missing or wrong keys (compared in
constant time); 404 for another pipeline id; 413 for a body over ``MAX_PIPELINE_BODY_BYTES``; 503 when
the semantic branch cannot run (no embedder, or it failed), or the pipeline source cannot give a
pipeline yet (a pipeline process whose index is still opening). Keys are required: an empty key or secret
refuses to build the routes, so the index is never open to anyone who finds the port.

    routes = pipeline_routes(lambda: pipeline, pipeline_id="embedded", api_key=k, api_key_secret=s)
    app = Starlette(routes=routes)
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .embedded import EmbeddedPipeline, PipelineRequestError
from .pipeline_client import PipelineError

__all__ = ["MAX_PIPELINE_BODY_BYTES", "PIPELINE_HTTP_PREFIX", "pipeline_app", "pipeline_routes", "same_key"]

log = logging.getLogger(__name__)

# Where the app mounts the pipeline: {prefix}/pipelines/{id}/search.
PIPELINE_HTTP_PREFIX = "/pipeline/v1"
# Bytes of one request body: a filter naming a few thousand rooms fits with room to spare.
MAX_PIPELINE_BODY_BYTES = 1024 * 1024

PipelineSource = Callable[[], Awaitable[EmbeddedPipeline]]


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def same_key(given: str | None, expected: str) -> bool:
    """Whether a header's key is the expected one, compared in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


async def _read_body(request: Request) -> bytes | None:
    """The body, or None when it passed the cap (counted as it arrives)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_PIPELINE_BODY_BYTES:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_PIPELINE_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def pipeline_routes(
    pipeline: PipelineSource,
    *,
    pipeline_id: str,
    api_key: str,
    api_key_secret: str,
    prefix: str = PIPELINE_HTTP_PREFIX,
) -> list[BaseRoute]:
    """Routes serving `pipeline` (awaited per request, so it may be built lazily).

    Raises:
        ValueError: the id, key or secret is empty.
    """
    if not (pipeline_id and api_key and api_key_secret):
        raise ValueError(
            "serving the embedded pipeline needs a pipeline id, an API key and an API key secret"
        )

    async def search(request: Request) -> Response:
        if not (
            same_key(request.headers.get("x-api-key"), api_key)
            and same_key(request.headers.get("x-api-key-secret"), api_key_secret)
        ):
            return _error(401, "missing or wrong X-API-KEY / X-API-KEY-SECRET")
        if request.path_params["pipeline_id"] != pipeline_id:
            return _error(404, "no such pipeline")
        raw = await _read_body(request)
        if raw is None:
            return _error(413, f"the request body is over {MAX_PIPELINE_BODY_BYTES} bytes")
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return _error(400, "the request body is not valid JSON")
        try:
            served = await pipeline()
            answer = await anyio.to_thread.run_sync(served.handle_in_turn, body)
        except PipelineRequestError as exc:
            return _error(400, str(exc))
        except PipelineError as exc:
            log.warning("pipeline over HTTP: %s", exc)
            return _error(503, exc.reason)
        return JSONResponse(answer)

    return [Route(f"{prefix}/pipelines/{{pipeline_id}}/search", search, methods=["POST"])]


def pipeline_app(
    pipeline: EmbeddedPipeline, *, pipeline_id: str, api_key: str, api_key_secret: str
) -> Starlette:
    """A stand-alone app serving one pipeline (tests, or a dedicated pipeline process)."""

    async def source() -> EmbeddedPipeline:
        return pipeline

    return Starlette(
        routes=pipeline_routes(
            source, pipeline_id=pipeline_id, api_key=api_key, api_key_secret=api_key_secret
        )
    )
