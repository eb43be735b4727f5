"""The 2026-07-28 revision over raw HTTP, beside the handshake revisions on the same endpoint.

No ``initialize``: each request carries its version and the client's capabilities in ``_meta``, the
``Mcp-Method``/``Mcp-Name`` headers mirror the body, results carry ``resultType`` and the server's
identity, list results carry cache hints. Every answer is checked against the revision's JSON Schema
(``tests/vendor/mcp-schema/2026-07-28``).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from ai_search_server.mcp import SUPPORTED_PROTOCOL_VERSIONS
from ai_search_server.mcp.envelope import decode_header_value

from ._mcp_fixtures import (
    INIT_PARAMS,
    MODERN,
    REVISIONS,
    call,
    mcp_headers,
    modern_headers,
    modern_request,
    post,
    request,
    schema_errors,
)
from .conftest import Workspace

pytestmark = pytest.mark.anyio

SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"


def result_of(response: httpx.Response, definition: str) -> dict[str, Any]:
    """The result of a 200 answer, valid as ``definition`` of 2026-07-28, with the fields every
    result of that revision carries."""
    assert response.status_code == 200, response.text
    body = response.json()
    assert schema_errors(MODERN, "JSONRPCResultResponse", body) == []
    result: dict[str, Any] = body["result"]
    assert schema_errors(MODERN, definition, result) == [], result
    assert result["resultType"] == "complete"
    assert result["_meta"][SERVER_INFO_KEY]["name"] == "ai-search"
    return result


def modern_error(response: httpx.Response, status: int, code: int, definition: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["error"]["code"] == code, body
    assert body["id"] == 1
    assert schema_errors(MODERN, definition, body) == [], body
    return body


async def test_discover_names_every_revision_and_caches(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    message = modern_request("server/discover")
    r = await post(client, message, modern_headers(workspace["alice"].pat_headers, message))
    result = result_of(r, "DiscoverResult")
    assert result["supportedVersions"] == list(SUPPORTED_PROTOCOL_VERSIONS)
    assert result["supportedVersions"][0] == MODERN
    assert result["capabilities"]["tools"] == {"listChanged": False}
    assert result["ttlMs"] > 0 and result["cacheScope"] == "public"
    assert "mcp-session-id" not in r.headers


async def test_tools_list_and_call_without_a_handshake(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    alice = workspace["alice"]
    listing = modern_request("tools/list")
    result = result_of(
        await post(client, listing, modern_headers(alice.pat_headers, listing)), "ListToolsResult"
    )
    assert result["ttlMs"] > 0 and result["cacheScope"] == "public"
    assert "get_rooms_get" in {tool["name"] for tool in result["tools"]}

    message = modern_request("tools/call", {"name": "get_rooms_get", "arguments": {}})
    called = result_of(
        await post(client, message, modern_headers(alice.pat_headers, message)), "CallToolResult"
    )
    assert called["isError"] is False
    rooms = json.loads(called["content"][0]["text"])["update"]
    assert {room["name"] for room in rooms} == {"general", "ops", "alice__bob"}


async def test_a_notification_gets_202(client: httpx.AsyncClient, workspace: Workspace) -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": modern_request("x")["params"]}
    r = await post(client, note, modern_headers(workspace["alice"].pat_headers, note))
    assert r.status_code == 202 and r.content == b""


def _without_meta_key(key: str) -> dict[str, Any]:
    message = modern_request("tools/list")
    del message["params"]["_meta"][key]
    return message


def _with_meta(key: str, value: Any) -> dict[str, Any]:
    message = modern_request("tools/list")
    message["params"]["_meta"][key] = value
    return message


_NAMED_CALL = modern_request("tools/call", {"name": "get_rooms_get", "arguments": {}})


@pytest.mark.parametrize(
    ("message", "extra", "status", "code", "definition", "text"),
    [
        pytest.param(
            request("tools/list"), {}, 400, -32602, "JSONRPCErrorResponse",
            "Invalid params: _meta is missing io.modelcontextprotocol/protocolVersion, "
            "io.modelcontextprotocol/clientCapabilities",
            id="modern-header-without-meta",
        ),
        pytest.param(
            _without_meta_key("io.modelcontextprotocol/clientCapabilities"), {}, 400, -32602, "JSONRPCErrorResponse",
            "Invalid params: _meta is missing io.modelcontextprotocol/clientCapabilities",
            id="meta-without-capabilities",
        ),
        pytest.param(
            _with_meta("io.modelcontextprotocol/clientCapabilities", []),
            {}, 400, -32602, "JSONRPCErrorResponse",
            "Invalid params: _meta io.modelcontextprotocol/clientCapabilities must be an object",
            id="capabilities-not-an-object",
        ),
        pytest.param(
            modern_request("tools/list"), {"MCP-Protocol-Version": "2025-11-25"}, 400, -32020, "HeaderMismatchError",
            "Header mismatch: MCP-Protocol-Version header '2025-11-25' does not match body value '2026-07-28'",
            id="version-header-contradicts-meta",
        ),
        pytest.param(
            modern_request("tools/list"), {"Mcp-Method": "tools/call"}, 400, -32020, "HeaderMismatchError",
            "Header mismatch: Mcp-Method header value 'tools/call' does not match body value 'tools/list'",
            id="method-header-contradicts-body",
        ),
        pytest.param(
            _NAMED_CALL, {"Mcp-Name": "post_chat_postMessage_by_roomId"}, 400, -32020, "HeaderMismatchError",
            "Header mismatch: Mcp-Name header value 'post_chat_postMessage_by_roomId' does not match body value "
            "'get_rooms_get'",
            id="name-header-contradicts-body",
        ),
        pytest.param(
            _NAMED_CALL, {"Mcp-Name": "=?base64?not base64?="}, 400, -32020, "HeaderMismatchError",
            "Header mismatch: Mcp-Name header value '=?base64?not base64?=' does not match body value "
            "'get_rooms_get'",
            id="name-header-malformed-base64",
        ),
        pytest.param(
            modern_request("tools/list", version="2025-11-25"), {"MCP-Protocol-Version": "2025-11-25"},
            400, -32022, "UnsupportedProtocolVersionError", "Unsupported protocol version",
            id="meta-names-a-handshake-revision",
        ),
        pytest.param(
            modern_request("initialize", INIT_PARAMS), {}, 404, -32601, "JSONRPCErrorResponse",
            "Method not found: initialize", id="no-handshake-at-2026",
        ),
        pytest.param(
            modern_request("ping"), {}, 404, -32601, "JSONRPCErrorResponse", "Method not found: ping",
            id="ping-removed",
        ),
        pytest.param(
            modern_request("resources/list"), {}, 404, -32601, "JSONRPCErrorResponse",
            "Method not found: resources/list", id="unknown-method",
        ),
        pytest.param(
            modern_request("tools/call", {"name": "nope", "arguments": {}}), {}, 400, -32602,
            "JSONRPCErrorResponse", "Unknown tool: nope", id="unknown-tool",
        ),
    ],
)  # fmt: skip
async def test_modern_refusals(
    client: httpx.AsyncClient,
    workspace: Workspace,
    message: dict[str, Any],
    extra: dict[str, str],
    status: int,
    code: int,
    definition: str,
    text: str,
) -> None:
    headers = modern_headers(workspace["alice"].pat_headers, message, **extra)
    body = modern_error(await post(client, message, headers), status, code, definition)
    assert body["error"]["message"] == text
    if code == -32022:
        assert body["error"]["data"] == {
            "supported": list(SUPPORTED_PROTOCOL_VERSIONS),
            "requested": "2025-11-25",
        }


@pytest.mark.parametrize(
    "missing", ["MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"], ids=lambda h: f"without-{h}"
)
async def test_every_mirrored_header_is_required(
    client: httpx.AsyncClient, workspace: Workspace, missing: str
) -> None:
    headers = modern_headers(workspace["alice"].pat_headers, _NAMED_CALL)
    del headers[missing]
    body = modern_error(await post(client, _NAMED_CALL, headers), 400, -32020, "HeaderMismatchError")
    assert body["error"]["message"].startswith("Header mismatch")


async def test_a_repeated_mirrored_header_is_refused(client: httpx.AsyncClient, workspace: Workspace) -> None:
    pairs = list(modern_headers(workspace["alice"].pat_headers, _NAMED_CALL).items())
    pairs.append(("Mcp-Name", "get_rooms_get"))
    r = await client.post("/api/v1/mcp", content=json.dumps(_NAMED_CALL).encode(), headers=pairs)
    body = modern_error(r, 400, -32020, "HeaderMismatchError")
    assert body["error"]["message"] == "Header mismatch: mcp-name header sent more than once"


async def test_a_base64_name_header_matches_its_decoded_value(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    encoded = "=?base64?" + base64.b64encode(b"get_rooms_get").decode() + "?="
    headers = modern_headers(workspace["alice"].pat_headers, _NAMED_CALL, **{"Mcp-Name": encoded})
    assert result_of(await post(client, _NAMED_CALL, headers), "CallToolResult")["isError"] is False


@pytest.mark.parametrize(
    ("value", "decoded"),
    [
        pytest.param("get_rooms_get", "get_rooms_get", id="plain"),
        pytest.param("=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界", id="utf-8-in-base64"),
        pytest.param("=?base64?IHBhZGRlZCA=?=", " padded ", id="spaces-in-base64"),
        pytest.param("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?=", id="the-sentinel-itself"),
        pytest.param("=?base64?SGVsbG8?=", None, id="unpadded-is-not-canonical"),
        pytest.param("=?base64?/w==?=", None, id="not-utf-8"),
        pytest.param("=?BASE64?SGk=?=", "=?BASE64?SGk=?=", id="the-markers-are-case-sensitive"),
        pytest.param("caf\u00e9", None, id="raw-non-ascii"),
    ],
)
def test_header_values_decode_as_the_transport_says(value: str, decoded: str | None) -> None:
    assert decode_header_value(value) == decoded


@pytest.mark.parametrize("revision", REVISIONS)
async def test_handshake_revisions_check_a_mirrored_header_that_is_sent(
    client: httpx.AsyncClient, workspace: Workspace, revision: str
) -> None:
    alice = workspace["alice"]
    message = call("get_rooms_get", {})
    agreeing = mcp_headers(
        alice.pat_headers, **{"MCP-Protocol-Version": revision, "Mcp-Method": "tools/call"}
    )
    r = await post(client, message, agreeing)
    assert r.status_code == 200 and "resultType" not in r.json()["result"]
    contradicting = {**agreeing, "Mcp-Name": "get_me"}
    r = await post(client, message, contradicting)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020


async def test_discover_is_served_only_as_2026(client: httpx.AsyncClient, workspace: Workspace) -> None:
    """A discover without the 2026-07-28 fields is refused by that revision's rules, which a dual-era
    client recognises (it does not mistake this server for a legacy one)."""
    r = await post(client, request("server/discover"), mcp_headers(workspace["alice"].pat_headers))
    modern_error(r, 400, -32602, "JSONRPCErrorResponse")


async def test_eras_interleave_on_one_connection(client: httpx.AsyncClient, workspace: Workspace) -> None:
    alice = workspace["alice"]
    init = request("initialize", {"protocolVersion": "2025-06-18", **INIT_PARAMS})
    assert (await post(client, init, mcp_headers(alice.pat_headers))).json()["result"][
        "protocolVersion"
    ] == "2025-06-18"
    listing = modern_request("tools/list")
    result_of(await post(client, listing, modern_headers(alice.pat_headers, listing)), "ListToolsResult")
    legacy = await post(
        client,
        request("tools/list"),
        mcp_headers(alice.pat_headers, **{"MCP-Protocol-Version": "2025-06-18"}),
    )
    assert "ttlMs" not in legacy.json()["result"] and "resultType" not in legacy.json()["result"]
