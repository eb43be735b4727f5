"""Helpers shared by the MCP tests: JSON-RPC posts, the spec's JSON Schemas, a real server on loopback.

The conftest fixtures (``store``, ``workspace``, ``app``, ``client``) give the real app in-process;
these add what only the MCP tests need.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from jsonschema import validators
from starlette.applications import Starlette
from starlette.routing import Route

from ai_search_server.app import create_app
from ai_search_server.mcp import MCP_PATH, McpEndpoint
from ai_search_server.origins import OriginPolicy
from ai_search_server.ratelimit import RateLimiter
from ai_search_server.rest import ApiRoute, make_endpoint
from ai_search_server.services import Services
from ai_search_server.serving import server_options
from ai_search_server.settings import Settings, load_settings
from ai_search_server.store.base import Store

# The MCP specification's JSON Schemas, vendored with their source and licence (tests/vendor/README.md).
TESTS_ROOT = Path(__file__).resolve().parents[1]
SCHEMA_ROOT = TESTS_ROOT / "vendor" / "mcp-schema"
# The handshake revisions (initialize first); MODERN is served per request, without a handshake.
REVISIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
MODERN = "2026-07-28"
ACCEPT = "application/json, text/event-stream"
INIT_PARAMS = {"capabilities": {}, "clientInfo": {"name": "tests", "version": "1"}}
CLIENT_INFO = {"name": "tests", "version": "1"}


def mcp_headers(auth: dict[str, str], **extra: str) -> dict[str, str]:
    return {**auth, "Accept": ACCEPT, "Content-Type": "application/json", **extra}


def request(method: str, params: dict[str, Any] | None = None, id: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def call(name: str, arguments: dict[str, Any] | None = None, id: Any = 1) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return request("tools/call", params, id)


def modern_request(
    method: str, params: dict[str, Any] | None = None, id: Any = 1, *, version: str = MODERN
) -> dict[str, Any]:
    """A 2026-07-28 request: its version, capabilities and client in ``params._meta``."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    }
    return request(method, {**(params or {}), "_meta": meta}, id)


def modern_headers(auth: dict[str, str], message: dict[str, Any], **extra: str) -> dict[str, str]:
    """The headers a 2026-07-28 client sends with ``message``: the version, Mcp-Method, Mcp-Name."""
    mirrored = {"MCP-Protocol-Version": MODERN, "Mcp-Method": message["method"]}
    name = message.get("params", {}).get("name")
    if message["method"] in ("tools/call", "prompts/get") and isinstance(name, str):
        mirrored["Mcp-Name"] = name
    return mcp_headers(auth, **{**mirrored, **extra})


async def post(
    client: httpx.AsyncClient,
    body: Any,
    headers: dict[str, str],
    *,
    raw: bytes | None = None,
    path: str = MCP_PATH,
) -> httpx.Response:
    content = raw if raw is not None else json.dumps(body).encode()
    return await client.post(path, content=content, headers=headers)


def tool_text(response: httpx.Response) -> tuple[bool, Any]:
    """(isError, the parsed JSON of the text block) of a tools/call answer."""
    result = response.json()["result"]
    (block,) = result["content"]
    assert block["type"] == "text"
    return result["isError"], json.loads(block["text"])


# -- the spec's schemas --------------------------------------------------------------------------


@cache
def _schema_root(revision: str) -> dict[str, Any]:
    with (SCHEMA_ROOT / revision / "schema.json").open(encoding="utf-8") as f:
        root: dict[str, Any] = json.load(f)
    return root


def schema_errors(revision: str, definition: str, instance: Any) -> list[str]:
    """Messages of every way ``instance`` breaks ``definition`` of the revision's schema.json."""
    root = _schema_root(revision)
    key = "$defs" if "$defs" in root else "definitions"
    schema = {"$schema": root.get("$schema"), "$ref": f"#/{key}/{definition}", key: root[key]}
    validator = validators.validator_for(schema)(schema)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(instance)]


def error_definition(revision: str) -> str:
    return "JSONRPCErrorResponse" if revision == "2025-11-25" else "JSONRPCError"


# -- apps ----------------------------------------------------------------------------------------


def mcp_settings(site_url: str = "http://testserver", **overrides: Any) -> Settings:
    return load_settings(environ={}, overrides={"site_url": site_url, "mcp_enabled": True, **overrides})


def bare_app(
    settings: Settings, store: Store, routes: Sequence[ApiRoute], *, limiter: Any = None
) -> Starlette:
    """Just ``routes`` and the MCP endpoint over them: no middleware, so the endpoint's own gates
    answer everything, and test-only routes become tools without touching the real registry."""
    services = Services.build(settings, store, limiter=limiter)
    policy = OriginPolicy(settings.site_url, tuple(settings.cors_allowed_origins))
    return Starlette(
        routes=[
            *(Route(r.path, make_endpoint(r, services), methods=[r.method]) for r in routes),
            Route(MCP_PATH, McpEndpoint(services, routes, policy)),
        ]
    )


def asgi_client(app: Starlette, client_host: str = "203.0.113.7") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(client_host, 50000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


# -- a real server -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LiveServer:
    base_url: str

    @property
    def mcp_url(self) -> str:
        return self.base_url + MCP_PATH


@contextmanager
def live_server(store: Store, **overrides: Any) -> Iterator[LiveServer]:
    """The real app under uvicorn on a free loopback port, in a thread; stopped on exit."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}"
    app = create_app(mcp_settings(base_url, **overrides), store, limiter=RateLimiter("memory://"))
    config = uvicorn.Config(app, **server_options(), log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(500):  # bounded: 5 s
            if server.started:
                break
            threading.Event().wait(0.01)
        assert server.started, "uvicorn did not start"
        yield LiveServer(base_url)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
