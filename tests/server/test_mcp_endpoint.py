"""The MCP endpoint over raw HTTP: every gate and status, JSON-RPC rules, batches, caps, dispatch.

Two apps: the real one (``client`` from conftest: all routes and middleware), and a bare one with
test-only routes exposed as tools (``_mcp_fixtures.bare_app``), for what the real routes cannot
show: concurrency, byte caps, the caller's address, query strings.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from pydantic import BaseModel, ConfigDict
from starlette.applications import Starlette
from starlette.responses import Response, StreamingResponse

from ai_search_server.app import create_app
from ai_search_server.mcp import SUPPORTED_PROTOCOL_VERSIONS, rpc_errors
from ai_search_server.mcp.dispatch import CallerAuth, build_query_string, call_route
from ai_search_server.mcp.endpoint import accepts_json
from ai_search_server.mcp.guide import server_instructions
from ai_search_server.ratelimit import RateLimiter
from ai_search_server.rest import ApiRequest, ApiRoute, Router
from ai_search_server.store.base import Store

from ._mcp_fixtures import (
    INIT_PARAMS,
    MODERN,
    REVISIONS,
    asgi_client,
    bare_app,
    call,
    error_definition,
    mcp_headers,
    mcp_settings,
    modern_headers,
    modern_request,
    post,
    request,
    schema_errors,
    tool_text,
)
from .conftest import Workspace

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024


def error_of(response: httpx.Response, status: int, code: int) -> dict[str, Any]:
    """The error envelope of ``response``, checked against status, code and every revision's schema
    that can express it (an id-less error exists only from 2025-11-25 on)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert body["error"]["code"] == code, body
    revisions = REVISIONS if "id" in body else ("2025-11-25",)
    for revision in revisions:
        assert schema_errors(revision, error_definition(revision), body) == [], revision
    return body


# -- gates, through the real app -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("auth", "status", "code"),
    [
        pytest.param("none", 401, -32001, id="no-credentials"),
        pytest.param("user-id-only", 401, -32001, id="user-id-without-token"),
        pytest.param("session", 401, -32001, id="login-token-is-not-a-pat"),
        pytest.param("wrong", 401, -32001, id="token-of-someone-else"),
        pytest.param("pat", 200, None, id="pat-accepted"),
    ],
)
async def test_personal_access_token_required(
    client: httpx.AsyncClient, workspace: Workspace, auth: str, status: int, code: int | None
) -> None:
    alice, bob = workspace["alice"], workspace["bob"]
    headers = {
        "none": {},
        "user-id-only": {"X-User-Id": alice.user.id},
        "session": alice.headers,
        "wrong": {"X-User-Id": alice.user.id, "X-Auth-Token": bob.pat},
        "pat": alice.pat_headers,
    }[auth]
    r = await post(client, request("ping"), mcp_headers(headers))
    if code is None:
        assert r.status_code == status and r.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    else:
        assert error_of(r, status, code)["error"]["message"] == "Personal Access Token required"


async def test_disabled_endpoint_answers_404(store: Store, workspace: Workspace) -> None:
    app = create_app(mcp_settings(mcp_enabled=False), store)
    async with asgi_client(app) as c:
        for method in ("POST", "GET"):
            r = await c.request(
                method,
                "/api/v1/mcp",
                json=request("ping"),
                headers=mcp_headers(workspace["alice"].pat_headers),
            )
            assert error_of(r, 404, -32601)["error"]["message"] == "MCP endpoint is disabled"


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        pytest.param(None, 200, id="no-origin-native-client"),
        pytest.param("http://testserver", 200, id="the-site-itself"),
        pytest.param("HTTP://TESTSERVER:80", 200, id="site-normalised"),
        pytest.param("http://evil.example.com", 403, id="foreign-origin"),
        pytest.param("null", 403, id="opaque-origin"),
        pytest.param("https://testserver", 403, id="other-scheme"),
    ],
)
async def test_origin_checked(
    client: httpx.AsyncClient, workspace: Workspace, origin: str | None, status: int
) -> None:
    extra = {"Origin": origin} if origin else {}
    r = await post(client, request("ping"), mcp_headers(workspace["alice"].pat_headers, **extra))
    assert r.status_code == status
    if status == 403:
        assert r.json()["error"] == {"code": -32000, "message": "Origin is not allowed"}


@pytest.mark.parametrize(
    ("version", "status"),
    [
        pytest.param(None, 200, id="absent-means-2025-03-26"),
        *(pytest.param(v, 200, id=f"supported-{v}") for v in REVISIONS),
        pytest.param("", 400, id="empty-is-unsupported"),
        pytest.param("invalid-protocol-version", 400, id="malformed"),
        pytest.param("2000-01-01", 400, id="too-old"),
        pytest.param("2099-01-01", 400, id="too-new"),
        pytest.param("2024-11-05", 400, id="older-handshake-we-do-not-speak"),
    ],
)
async def test_protocol_version_header(
    client: httpx.AsyncClient, workspace: Workspace, version: str | None, status: int
) -> None:
    extra = {"MCP-Protocol-Version": version} if version is not None else {}
    r = await post(client, request("ping"), mcp_headers(workspace["alice"].pat_headers, **extra))
    if status == 400:
        # 2026-07-28's UnsupportedProtocolVersionError: a dual-era client retries at a version named.
        error = error_of(r, 400, -32022)["error"]
        assert error["message"] == "Unsupported protocol version"
        assert error["data"] == {"supported": list(SUPPORTED_PROTOCOL_VERSIONS), "requested": version}
        assert schema_errors("2026-07-28", "UnsupportedProtocolVersionError", r.json()) == []
    else:
        assert r.status_code == 200


@pytest.mark.parametrize(
    ("accept", "ok"),
    [
        pytest.param("application/json, text/event-stream", True, id="what-clients-send"),
        pytest.param("application/json", True, id="json-alone"),
        pytest.param("*/*", True, id="anything-curl"),
        pytest.param("application/*;q=0.5", True, id="json-family-with-quality"),
        pytest.param("text/html", False, id="html-only"),
        pytest.param("text/event-stream", False, id="sse-only-we-never-stream"),
        pytest.param("application/json;q=0", False, id="json-explicitly-refused"),
    ],
)
def test_accepts_json(accept: str, ok: bool) -> None:
    assert accepts_json(accept) is ok


async def test_unacceptable_accept_gets_406(client: httpx.AsyncClient, workspace: Workspace) -> None:
    headers = mcp_headers(workspace["alice"].pat_headers, Accept="text/html")
    error_of(await post(client, request("ping"), headers), 406, -32600)


async def test_parse_error_only_after_the_pat_check(client: httpx.AsyncClient, workspace: Workspace) -> None:
    alice = workspace["alice"]
    broken = b'{"jsonrpc": "2.0", "id": 1, "method": '
    error_of(await post(client, None, mcp_headers(alice.headers), raw=broken), 401, -32001)
    error_of(await post(client, None, mcp_headers(alice.pat_headers), raw=broken), 400, -32700)
    for raw in (
        b"\xff\xfe",
        b'{"jsonrpc": "2.0", "id": NaN, "method": "ping"}',
        b"[" * 100_000 + b"]" * 100_000,
    ):
        error_of(await post(client, None, mcp_headers(alice.pat_headers), raw=raw), 400, -32700)


async def test_rate_limit_is_60_a_minute_with_headers(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    headers = mcp_headers(workspace["alice"].pat_headers)
    for n in range(60):
        r = await post(client, request("ping", id=n), headers)
        assert r.status_code == 200
        assert r.headers["X-RateLimit-Limit"] == "60"
        assert r.headers["X-RateLimit-Remaining"] == str(59 - n)
    r = await post(client, request("ping"), headers)
    assert error_of(r, 429, -32000)["error"]["message"] == "Too many requests"
    assert r.headers["X-RateLimit-Remaining"] == "0" and int(r.headers["Retry-After"]) >= 1
    # another caller has a budget of their own
    assert (await post(client, request("ping"), mcp_headers(workspace["bob"].pat_headers))).status_code == 200


async def test_access_mcp_permission_required(client: httpx.AsyncClient, workspace: Workspace) -> None:
    store: Any = workspace.store
    store.revoke_permission("bot", "access-mcp")
    robot = store.create_user("robot", roles=("bot",))
    _token, pat = store.create_token(robot.id, "pat", label="t")
    headers = mcp_headers({"X-User-Id": robot.id, "X-Auth-Token": pat})
    assert error_of(await post(client, request("ping"), headers), 403, -32000)["error"]["message"] == (
        "The access-mcp permission is required"
    )
    assert (await client.get("/api/v1/mcp", headers=headers)).status_code == 403


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
async def test_other_methods_get_405_allow_post(
    client: httpx.AsyncClient, workspace: Workspace, method: str
) -> None:
    r = await client.request(method, "/api/v1/mcp", headers=mcp_headers(workspace["alice"].pat_headers))
    assert error_of(r, 405, -32600)["error"]["message"] == "Only POST is supported"
    assert r.headers["Allow"] == "POST"


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        pytest.param({"MCP-Protocol-Version": "2099-01-01"}, 400, id="bad-version-first"),
        pytest.param({"Origin": "http://evil.example.com"}, 403, id="bad-origin-first"),
        pytest.param({}, 405, id="login-token-enough-no-pat-lookup"),
    ],
)
async def test_get_gates(
    client: httpx.AsyncClient, workspace: Workspace, headers: dict[str, str], status: int
) -> None:
    r = await client.get("/api/v1/mcp", headers={**workspace["alice"].headers, **headers})
    assert r.status_code == status


# -- gate order, on the endpoint alone (no middleware answers first) -----------------------------


@pytest.mark.parametrize(
    ("who", "headers", "enabled", "raw", "status"),
    [
        pytest.param(
            "none", {"Origin": "http://evil.example.com"}, False, b"{", 401, id="pat-header-before-all"
        ),
        pytest.param(
            "pat", {"Origin": "http://evil.example.com"}, False, b"{", 404, id="disabled-before-origin"
        ),
        pytest.param(
            "pat",
            {"Origin": "http://evil.example.com", "MCP-Protocol-Version": "x"},
            True,
            b"{",
            403,
            id="origin-before-version",
        ),
        pytest.param(
            "session", {"MCP-Protocol-Version": "x"}, True, b"{", 400, id="version-before-pat-lookup"
        ),
        pytest.param("session", {}, True, b"{", 401, id="pat-lookup-before-parse"),
        pytest.param("pat", {}, True, b"[", 400, id="parse-error-last"),
    ],
)
async def test_gate_order(
    store: Store,
    workspace: Workspace,
    who: str,
    headers: dict[str, str],
    enabled: bool,
    raw: bytes,
    status: int,
) -> None:
    auth = {"none": {}, "pat": workspace["alice"].pat_headers, "session": workspace["alice"].headers}[who]
    app = bare_app(mcp_settings(mcp_enabled=enabled), store, [])
    async with asgi_client(app) as c:
        r = await post(c, None, mcp_headers(auth, **headers), raw=raw)
    assert r.status_code == status


# -- JSON-RPC ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        pytest.param({"jsonrpc": "2.0", "id": None, "method": "ping"}, id="null-id"),
        pytest.param({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": []}, id="array-params"),
        pytest.param({"jsonrpc": "2.0", "id": 1}, id="missing-method"),
        pytest.param({"jsonrpc": "2.0", "id": 1, "method": ""}, id="empty-method"),
        pytest.param({"jsonrpc": "1.0", "id": 1, "method": "ping"}, id="wrong-jsonrpc-version"),
        pytest.param({"jsonrpc": "2.0", "id": True, "method": "ping"}, id="boolean-id"),
        pytest.param({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, id="object-id"),
        pytest.param({"jsonrpc": "2.0", "method": 7}, id="notification-with-bad-method"),
        pytest.param("ping", id="a-json-string"),
        pytest.param(42, id="a-json-number"),
    ],
)
async def test_invalid_single_messages_get_400(
    client: httpx.AsyncClient, workspace: Workspace, message: Any
) -> None:
    r = await post(client, message, mcp_headers(workspace["alice"].pat_headers))
    assert error_of(r, 400, -32600)["error"]["message"] == "Invalid Request"


@pytest.mark.parametrize(
    "message",
    [
        pytest.param({"jsonrpc": "2.0", "method": "notifications/initialized"}, id="initialized"),
        pytest.param(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
            id="cancelled",
        ),
        pytest.param(
            {"jsonrpc": "2.0", "id": 5, "method": "notifications/initialized"}, id="initialized-with-an-id"
        ),
        pytest.param(
            {"jsonrpc": "2.0", "method": "no/such/method", "params": {"x": 1}}, id="unknown-notification"
        ),
        pytest.param({"jsonrpc": "2.0", "id": "r1", "result": {}}, id="a-client-response"),
        pytest.param(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -1, "message": "x"}}, id="a-client-error"
        ),
    ],
)
async def test_nothing_to_answer_gets_202_without_body(
    client: httpx.AsyncClient, workspace: Workspace, message: dict[str, Any]
) -> None:
    r = await post(client, message, mcp_headers(workspace["alice"].pat_headers))
    assert r.status_code == 202
    assert r.content == b""


@pytest.mark.parametrize(
    "request_id",
    [
        pytest.param(1, id="integer"),
        pytest.param("1", id="numeric-string-stays-a-string"),
        pytest.param("probe-ping-Ä", id="non-ascii-string"),
        pytest.param(0, id="zero"),
        pytest.param(2**53, id="large-integer"),
    ],
)
async def test_ids_echoed_with_their_type(
    client: httpx.AsyncClient, workspace: Workspace, request_id: Any
) -> None:
    r = await post(client, request("ping", id=request_id), mcp_headers(workspace["alice"].pat_headers))
    body = r.json()
    assert body == {"jsonrpc": "2.0", "id": request_id, "result": {}}
    assert type(body["id"]) is type(request_id)


@pytest.mark.parametrize(
    ("requested", "answered"),
    [
        *(pytest.param(v, v, id=f"echoes-{v}") for v in REVISIONS),
        pytest.param("2024-11-05", "2025-11-25", id="older-answered-with-latest"),
        pytest.param("2026-07-28", "2025-11-25", id="newer-answered-with-latest"),
    ],
)
async def test_initialize_negotiates(
    client: httpx.AsyncClient, workspace: Workspace, requested: str, answered: str
) -> None:
    r = await post(
        client,
        request("initialize", {"protocolVersion": requested, **INIT_PARAMS}),
        mcp_headers(workspace["alice"].pat_headers),
    )
    result = r.json()["result"]
    assert result == {
        "protocolVersion": answered,
        "capabilities": {"tools": {"listChanged": False}, "prompts": {"listChanged": False}},
        "serverInfo": {"name": "ai-search", "version": result["serverInfo"]["version"]},
        "instructions": server_instructions(),
    }
    assert "mcp-session-id" not in r.headers
    for revision in REVISIONS:
        assert schema_errors(revision, "InitializeResult", result) == []


@pytest.mark.parametrize(
    ("message", "code", "text"),
    [
        pytest.param(
            request("initialize", {"protocolVersion": "2025-06-18"}),
            -32602,
            "Invalid initialize parameters",
            id="initialize-without-client-info",
        ),
        pytest.param(
            request("initialize", {**INIT_PARAMS, "protocolVersion": 7}),
            -32602,
            "Invalid initialize parameters",
            id="initialize-version-not-a-string",
        ),
        pytest.param(
            request("no/such/method"), -32601, "Method not found: no/such/method", id="unknown-method"
        ),
        pytest.param(
            request("tools/call", {"arguments": {}}),
            -32602,
            "Invalid tools/call parameters",
            id="call-without-name",
        ),
        pytest.param(
            request("tools/call", {"name": "get_rooms_get", "arguments": [1]}),
            -32602,
            "Invalid tools/call parameters",
            id="call-arguments-not-an-object",
        ),
        pytest.param(call("get_me"), -32602, "Unknown tool: get_me", id="extended-tool-unknown-when-off"),
        pytest.param(call("nope"), -32602, "Unknown tool: nope", id="unknown-tool"),
        pytest.param(
            request("tools/list", {"cursor": "abc"}),
            -32602,
            "Invalid cursor: tools/list has a single page",
            id="a-cursor-we-never-issued",
        ),
    ],
)
async def test_rpc_errors_are_in_band_with_the_id(
    client: httpx.AsyncClient, workspace: Workspace, message: dict[str, Any], code: int, text: str
) -> None:
    r = await post(client, message, mcp_headers(workspace["alice"].pat_headers))
    body = error_of(r, 200, code)
    assert body["id"] == 1 and body["error"]["message"] == text


@pytest.mark.parametrize(
    ("extended", "must_have"),
    [
        pytest.param(False, "get_rooms_get", id="curated-by-default"),
        pytest.param(True, "get_me", id="extended-set"),
    ],
)
async def test_tools_list_validates_against_every_revision(
    store: Store, workspace: Workspace, extended: bool, must_have: str
) -> None:
    app = create_app(mcp_settings(mcp_expose_extended_api=extended), store)
    alice = workspace["alice"]
    async with asgi_client(app) as c:
        for revision in REVISIONS:
            headers = mcp_headers(alice.pat_headers, **{"MCP-Protocol-Version": revision})
            result = (await post(c, request("tools/list"), headers)).json()["result"]
            assert must_have in {t["name"] for t in result["tools"]}
            assert "nextCursor" not in result
            assert schema_errors(revision, "ListToolsResult", result) == [], revision
        listing = modern_request("tools/list")
        result = (await post(c, listing, modern_headers(alice.pat_headers, listing))).json()["result"]
        assert must_have in {t["name"] for t in result["tools"]}
        assert schema_errors(MODERN, "ListToolsResult", result) == []


# -- tools/call through the REST stack, as the caller --------------------------------------------


@pytest.mark.parametrize(
    ("username", "rooms"),
    [
        pytest.param("alice", {"general", "ops", "alice__bob"}, id="alice-sees-her-rooms"),
        pytest.param("bob", {"general", "secret", "alice__bob"}, id="bob-sees-his-rooms"),
    ],
)
async def test_tools_run_as_the_caller(
    client: httpx.AsyncClient, workspace: Workspace, username: str, rooms: set[str]
) -> None:
    r = await post(client, call("get_rooms_get", {}), mcp_headers(workspace[username].pat_headers))
    is_error, body = tool_text(r)
    assert not is_error
    assert {room["name"] for room in body["update"]} == rooms
    for revision in REVISIONS:
        assert schema_errors(revision, "CallToolResult", r.json()["result"]) == []


async def test_rest_failures_are_is_error_results(client: httpx.AsyncClient, workspace: Workspace) -> None:
    secret = next(m for key, m in workspace.messages.items() if key.startswith("secret"))
    headers = mcp_headers(workspace["alice"].pat_headers)
    is_error, body = tool_text(await post(client, call("get_chat_getMessage", {"msgId": secret.id}), headers))
    assert is_error and body["success"] is False
    is_error, body = tool_text(
        await post(
            client,
            call("get_chat_getMessage", {"msgId": secret.id}),
            mcp_headers(workspace["bob"].pat_headers),
        )
    )
    assert not is_error and body["message"]["msg"] == secret.text
    # bad arguments are REST validation errors, answered as results the model can correct (SEP-1303)
    is_error, body = tool_text(await post(client, call("get_chat_getMessage", {"msgid": "x"}), headers))
    assert is_error and "unknown parameter 'msgid'" in body["error"]


async def test_write_tools_post_json_as_the_caller(client: httpx.AsyncClient, workspace: Workspace) -> None:
    headers = mcp_headers(workspace["alice"].pat_headers)
    message = call("post_chat_postMessage_by_channel", {"channel": "#ops", "text": "rolled forward"})
    is_error, body = tool_text(await post(client, message, headers))
    assert not is_error and body["message"]["u"]["username"] == "alice"
    is_error, body = tool_text(
        await post(
            client,
            call("post_chat_postMessage_by_channel", {"channel": "#secret", "text": "let me in"}),
            headers,
        )
    )
    assert is_error


# -- batches -------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, "2025-03-26"], ids=["header-absent", "2025-03-26"])
async def test_batch_answers_in_order_without_notifications(
    client: httpx.AsyncClient, workspace: Workspace, version: str | None
) -> None:
    extra = {"MCP-Protocol-Version": version} if version else {}
    batch = [
        request("ping", id="a"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        call("get_rooms_get", {}, id=2),
        request("nope", id=3),
    ]
    r = await post(client, batch, mcp_headers(workspace["alice"].pat_headers, **extra))
    assert r.status_code == 200
    answers = r.json()
    assert [a.get("id") for a in answers] == ["a", None, 2, 3]
    assert "id" not in answers[1] and answers[1]["error"]["code"] == -32600
    assert answers[2]["result"]["isError"] is False
    assert answers[3]["error"]["code"] == -32601
    assert schema_errors("2025-03-26", "JSONRPCMessage", [answers[0], answers[2], answers[3]]) == []


async def test_batch_of_notifications_gets_202(client: httpx.AsyncClient, workspace: Workspace) -> None:
    batch = [{"jsonrpc": "2.0", "method": "notifications/initialized"}] * 3
    r = await post(client, batch, mcp_headers(workspace["alice"].pat_headers))
    assert r.status_code == 202 and r.content == b""


@pytest.mark.parametrize(
    ("size", "version", "status"),
    [
        pytest.param(0, None, 400, id="empty-batch"),
        pytest.param(1, None, 200, id="one-entry"),
        pytest.param(20, None, 200, id="twenty-entries"),
        pytest.param(21, None, 400, id="twenty-one-entries"),
        pytest.param(2, "2025-06-18", 400, id="no-batches-at-2025-06-18"),
        pytest.param(2, "2025-11-25", 400, id="no-batches-at-2025-11-25"),
    ],
)
async def test_batch_limits(
    client: httpx.AsyncClient, workspace: Workspace, size: int, version: str | None, status: int
) -> None:
    extra = {"MCP-Protocol-Version": version} if version else {}
    r = await post(
        client,
        [request("ping", id=n) for n in range(size)],
        mcp_headers(workspace["alice"].pat_headers, **extra),
    )
    if status == 400:
        error_of(r, 400, -32600)
    else:
        assert r.status_code == 200 and len(r.json()) == size


# -- dispatch details, with test-only routes -----------------------------------------------------


class Anything(BaseModel):
    model_config = ConfigDict(extra="allow")


PROBES = Router(tags=("Test",))
_running = {"now": 0, "max": 0}


@PROBES.get("spotlight", Anything, description="Echo the query string and the client address.")
async def _echo(req: ApiRequest[Anything]) -> dict[str, Any]:
    return {"query": req.http.url.query, "client": req.client_host, "user": req.user.username}


@PROBES.get("dm.files", Anything, description="A JSON body of `size` bytes of `fill`.")
async def _sized(req: ApiRequest[Anything]) -> Response:
    extra = req.params.model_extra or {}
    return Response(
        json.dumps({"blob": extra.get("fill", "x") * int(extra["size"])}), media_type="application/json"
    )


@PROBES.get("dm.history", Anything, description="`size` bytes streamed without a Content-Length.")
async def _streamed(req: ApiRequest[Anything]) -> Response:
    size = int((req.params.model_extra or {})["size"])

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(size // MIB):
            yield b"x" * MIB
        yield b"x" * (size % MIB)

    return StreamingResponse(chunks(), media_type="text/plain")


@PROBES.get("rooms.info", Anything, description="Counts how many calls run at once.")
async def _overlap(_req: ApiRequest[Anything]) -> dict[str, Any]:
    _running["now"] += 1
    _running["max"] = max(_running["max"], _running["now"])
    for _ in range(20):
        await anyio.sleep(0)
    _running["now"] -= 1
    return {}


@PROBES.get("rooms.isMember", Anything, description="Never answers.")
async def _stuck(_req: ApiRequest[Anything]) -> dict[str, Any]:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


@pytest.fixture
def probe_app(store: Store, workspace: Workspace) -> Starlette:
    return bare_app(
        mcp_settings(mcp_expose_extended_api=True), store, PROBES.routes, limiter=RateLimiter("memory://")
    )


def route_named(name: str) -> ApiRoute:
    return next(r for r in PROBES.routes if r.name == name)


@pytest.mark.parametrize(
    ("arguments", "query"),
    [
        pytest.param(
            {"msgId": "message-id", "fields": {"msg": 1}},
            "msgId=message-id&fields=%7B%22msg%22%3A1%7D",
            id="upstream-example",
        ),
        pytest.param({"b": 1, "a": True, "c": None}, "b=1&a=true&c=null", id="key-order-and-json-scalars"),
        pytest.param({"q": "in:#ops a b"}, "q=in%3A%23ops+a+b", id="strings-as-they-are"),
        pytest.param({"list": ["x", 2]}, "list=%5B%22x%22%2C2%5D", id="arrays-as-json"),
        pytest.param({"name": "Ä"}, "name=%C3%84", id="utf-8"),
        pytest.param({}, "", id="no-arguments"),
    ],
)
def test_query_string_per_upstream(arguments: dict[str, Any], query: str) -> None:
    assert build_query_string(arguments) == query


async def test_dispatch_sends_the_query_the_caller_and_the_client_address(
    probe_app: Starlette, workspace: Workspace
) -> None:
    async with asgi_client(probe_app, client_host="198.51.100.9") as c:
        r = await post(
            c, call("get_spotlight", {"q": "deploy", "n": 2}), mcp_headers(workspace["bob"].pat_headers)
        )
    is_error, body = tool_text(r)
    assert not is_error
    assert body == {"query": "q=deploy&n=2", "client": "198.51.100.9", "user": "bob", "success": True}


async def test_batch_runs_at_most_four_at_once(probe_app: Starlette, workspace: Workspace) -> None:
    _running.update(now=0, max=0)
    async with asgi_client(probe_app) as c:
        r = await post(
            c,
            [call("get_rooms_info", {}, id=n) for n in range(10)],
            mcp_headers(workspace["alice"].pat_headers),
        )
    assert [a["id"] for a in r.json()] == list(range(10))
    assert _running["max"] == 4


async def test_one_tool_answer_over_5_mib_fails_the_call(probe_app: Starlette, workspace: Workspace) -> None:
    headers = mcp_headers(workspace["alice"].pat_headers)
    async with asgi_client(probe_app) as c:
        ok = await post(c, call("get_dm_files", {"size": 4 * MIB}), headers)
        declared = await post(c, call("get_dm_files", {"size": 5 * MIB}), headers)
        streamed = await post(c, call("get_dm_history", {"size": 5 * MIB + 1}), headers)
    assert ok.json()["result"]["isError"] is False
    for r in (declared, streamed):
        assert r.json()["result"] == {
            "content": [
                {"type": "text", "text": "Tool execution failed: MCP tool response exceeds the 5 MiB limit"}
            ],
            "isError": True,
        }


async def test_a_batch_shares_one_5_mib_budget(probe_app: Starlette, workspace: Workspace) -> None:
    batch = [call("get_dm_files", {"size": 2 * MIB}, id=n) for n in range(3)]
    async with asgi_client(probe_app) as c:
        r = await post(c, batch, mcp_headers(workspace["alice"].pat_headers))
    assert r.status_code == 200
    results = [a["result"] for a in r.json()]
    failed = [res["content"][0]["text"] for res in results if res["isError"]]
    assert failed == ["Tool execution failed: MCP batch response exceeds the 5 MiB limit"]


async def test_an_answer_over_5_mib_once_encoded_gets_413(probe_app: Starlette, workspace: Workspace) -> None:
    # 3 MiB of quotes: each is 2 bytes in the REST body and 4 once the body is a JSON string in the answer
    async with asgi_client(probe_app) as c:
        r = await post(
            c,
            call("get_dm_files", {"size": 3 * MIB // 2, "fill": '"'}),
            mcp_headers(workspace["alice"].pat_headers),
        )
    assert error_of(r, 413, -32000)["error"]["message"] == "MCP response exceeds the 5 MiB limit"


async def test_dispatch_deadline(probe_app: Starlette, workspace: Workspace) -> None:
    alice = workspace["alice"]
    auth = CallerAuth(alice.user.id, alice.pat, "127.0.0.1", b"testserver")
    with pytest.raises(rpc_errors.ToolTimeout, match="MCP tool call timed out after 50 ms"):
        await call_route(probe_app, route_named("rooms.isMember"), {}, auth, timeout_seconds=0.05)
