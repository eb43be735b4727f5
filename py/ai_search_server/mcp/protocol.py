"""JSON-RPC 2.0 for MCP: message validation, the methods we serve, and response encoding.

Stateless and dual-era: every message stands on its own (``envelope.resolve_context`` picks the
revision it is served at), so tools/list and tools/call work without a prior ``initialize``
(mcp-transport-rules.md §1.7), and a 2026-07-28 request needs no handshake at all. The methods
(upstream-mcp.md §8.6), by era:

=========================== ==================== ==========================================================
method                      handshake revisions  2026-07-28
=========================== ==================== ==========================================================
``initialize``              negotiates one of    unknown (-32601, 404): a handshake selects the legacy era
                            2025-03-26..2025-11-25
                            (else the latest)
``server/discover``         —                    supported versions, capabilities, serverInfo, cache hints
``ping``                    ``{}``               unknown (-32601, 404): removed in 2026-07-28
``tools/list``              the active catalog, in one page (a cursor is refused: we never issue one);
                            at 2026-07-28 with ``ttlMs`` and ``cacheScope``
``tools/call``              the REST route, as the caller; failures are results with ``isError``; from
                            2025-06-18 on, the route's body as ``structuredContent`` too
``prompts/list``            the prompts (``prompts.py``); at 2026-07-28 with ``ttlMs`` and ``cacheScope``
``prompts/get``             the prompt, filled by calling its tools as ``tools/call`` does
``notifications/*``         nothing (202): also when a client puts an id on them
anything else               ``-32601 Method not found: <method>`` (200 in-band; 404 at 2026-07-28)
=========================== ==================== ==========================================================

Every 2026-07-28 result carries ``resultType: "complete"`` and ``_meta`` naming the server.

A message is answered as encoded bytes with its HTTP status (or None for "nothing to answer"), so a
batch joins its answers without re-encoding and the size cap counts the real bytes. Optional fields
are left out, never null; ids are echoed as they came (a string stays a string).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import __version__
from . import rpc_errors
from .catalog import Catalog, Tool
from .envelope import RequestContext, TransportHeaders, claims_modern, resolve_context
from .guide import server_instructions
from .prompts import ToolRunner
from .revisions import (
    HANDSHAKE_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    LATEST_PROTOCOL_VERSION,
    SERVER_INFO_META_KEY,
    SUPPORTED_PROTOCOL_VERSIONS,
    VERSION_WITHOUT_HEADER,
    revision,
)

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "LIST_CACHE_SCOPE",
    "LIST_TTL_MS",
    "SERVER_NAME",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "VERSION_WITHOUT_HEADER",
    "Answer",
    "ToolCaller",
    "ToolResponse",
    "encode_error",
    "handle_message",
    "is_client_response",
    "is_valid_request",
    "negotiate_version",
    "supports_batching",
]

log = logging.getLogger(__name__)

SERVER_NAME = "ai-search"
# Milliseconds a client may keep a tools/list or server/discover result (2026-07-28 caching). The
# catalog changes only when the server restarts with other settings; five minutes bounds how long a
# client keeps a stale list after that, at one list request per five minutes per client.
LIST_TTL_MS = 300_000
# The catalog and the server's description are the same for every caller (permissions are checked
# when a tool is called), so any cache may share them.
LIST_CACHE_SCOPE = "public"
# Notifications by name: answered with nothing even when the client sent an id (upstream §8.6).
_SILENT_METHODS = frozenset({"notifications/initialized", "notifications/cancelled"})
# The server's version as upstream reports its own: major.minor.
_SERVER_VERSION = ".".join(__version__.split(".")[:2])
_SERVER_INFO = {"name": SERVER_NAME, "version": _SERVER_VERSION}
_INSTRUCTIONS = server_instructions()
# Added to every 2026-07-28 result (its basic page: resultType MUST, serverInfo SHOULD).
_MODERN_RESULT_FIELDS = {"resultType": "complete", "_meta": {SERVER_INFO_META_KEY: _SERVER_INFO}}
_CACHE_HINTS = {"ttlMs": LIST_TTL_MS, "cacheScope": LIST_CACHE_SCOPE}


@dataclass(frozen=True, slots=True)
class Answer:
    """One encoded JSON-RPC response and the HTTP status it goes out with (alone in its POST)."""

    body: bytes
    status: int = 200


@dataclass(frozen=True, slots=True)
class ToolResponse:
    """What a REST route answered a tool call: its body as JSON text, and parsed."""

    ok: bool
    status: int
    text: str  # the body as JSON text (JSON.stringify(body) upstream)
    data: Any = None  # the parsed body; None when it is not JSON


#: Calls one tool's route as the caller: ``(tool, arguments) -> ToolResponse``.
#: Raises rpc_errors.ToolFailure (timeout, size caps), which becomes an ``isError`` result.
ToolCaller = Callable[[Tool, Mapping[str, Any]], Awaitable[ToolResponse]]


def supports_batching(header_version: str | None) -> bool:
    return revision(header_version or VERSION_WITHOUT_HEADER).batches


def negotiate_version(requested: str) -> str:
    """The client's version when we speak it (MUST), else our latest (SHOULD) of the handshake era:
    ``initialize`` cannot open a 2026-07-28 conversation, which has no handshake."""
    return requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION


def _is_id(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def is_valid_request(message: Any) -> bool:
    """A JSON-RPC request or notification as upstream accepts it: ``jsonrpc`` "2.0", a non-empty
    string ``method``, a string or number ``id`` if any (never null), object ``params`` if any."""
    return (
        type(message) is dict
        and message.get("jsonrpc") == "2.0"
        and isinstance(message.get("method"), str)
        and bool(message["method"])
        and ("id" not in message or _is_id(message["id"]))
        and type(message.get("params", {})) is dict
    )


def is_client_response(message: Any) -> bool:
    """A JSON-RPC response the client posted. We never send requests, so there is nothing to match
    it to; it is accepted and ignored (202), as the transport allows (mcp-transport-rules.md §2)."""
    return (
        type(message) is dict
        and message.get("jsonrpc") == "2.0"
        and "method" not in message
        and "id" in message
        and (_is_id(message["id"]) or message["id"] is None)
        and (("result" in message) != ("error" in message))
    )


# -- encoding ------------------------------------------------------------------------------------


def _json(value: Any) -> bytes:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode()
    except UnicodeEncodeError:
        # A lone surrogate (an id or method sent as "\ud800") has no UTF-8 form; escaped, it is JSON.
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()


def _encode_result(request_id: Any, result_json: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":' + _json(request_id) + b',"result":' + result_json + b"}"


def _with_fields(result_json: bytes, fields: Mapping[str, Any]) -> bytes:
    """An encoded JSON object with ``fields`` added (its own keys must not repeat them)."""
    extra = _json(dict(fields))
    return extra if result_json == b"{}" else result_json[:-1] + b"," + extra[1:]


def encode_error(
    code: int, message: str, request_id: Any = None, *, has_id: bool = False, data: Any = None
) -> bytes:
    """An error response; without ``has_id`` the id is left out (it could not be read)."""
    error = _json(
        {"code": code, "message": message}
        if data is None
        else {"code": code, "message": message, "data": data}
    )
    if not has_id:
        return b'{"jsonrpc":"2.0","error":' + error + b"}"
    return b'{"jsonrpc":"2.0","id":' + _json(request_id) + b',"error":' + error + b"}"


_EMPTY_RESULT = b"{}"


# -- methods -------------------------------------------------------------------------------------


def _initialize(params: Mapping[str, Any], _ctx: RequestContext, catalog: Catalog) -> bytes:
    client_info = params.get("clientInfo")
    if not (
        isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and isinstance(client_info, dict)
        and isinstance(client_info.get("name"), str)
        and isinstance(client_info.get("version"), str)
    ):
        raise rpc_errors.RpcInvalidParams("Invalid initialize parameters")
    return _json(
        {
            "protocolVersion": negotiate_version(params["protocolVersion"]),
            "capabilities": catalog.capabilities,
            "serverInfo": _SERVER_INFO,
            "instructions": _INSTRUCTIONS,
        }
    )


def _discover(_params: Mapping[str, Any], _ctx: RequestContext, catalog: Catalog) -> bytes:
    return _json(
        {
            "supportedVersions": list(SUPPORTED_PROTOCOL_VERSIONS),
            "capabilities": catalog.capabilities,
            "instructions": _INSTRUCTIONS,
            **_CACHE_HINTS,
        }
    )


def _ping(_params: Mapping[str, Any], _ctx: RequestContext, _catalog: Catalog) -> bytes:
    return _EMPTY_RESULT


def _tools_list(params: Mapping[str, Any], ctx: RequestContext, catalog: Catalog) -> bytes:
    # Every list fits one page and we never hand out a cursor, so any cursor is one we did not issue.
    if params.get("cursor") is not None:
        raise rpc_errors.RpcInvalidParams("Invalid cursor: tools/list has a single page")
    listing = catalog.list_result_json(ctx.revision)
    return _with_fields(listing, _CACHE_HINTS) if ctx.revision.modern else listing


async def _tools_call(
    params: Mapping[str, Any], ctx: RequestContext, catalog: Catalog, call_tool: ToolCaller
) -> bytes:
    name, arguments = params.get("name"), params.get("arguments", {})
    if not isinstance(name, str) or type(arguments) is not dict:
        raise rpc_errors.RpcInvalidParams("Invalid tools/call parameters")
    tool = catalog.by_name.get(name)
    if tool is None:
        raise rpc_errors.RpcInvalidParams(f"Unknown tool: {name}")
    try:
        response = await call_tool(tool, arguments)
    except rpc_errors.ToolFailure as exc:
        return _json(
            {"content": [{"type": "text", "text": f"Tool execution failed: {exc.message}"}], "isError": True}
        )
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": response.text}],
        "isError": not response.ok,
    }
    # The route's body as structured content where the revision and the tool have an output schema;
    # the same JSON stays in the text block for clients that read text only. A failed call has no
    # structured content: its body is the error, which the schema does not describe.
    if ctx.revision.structured and tool.output_schema is not None and response.ok:
        if type(response.data) is dict:
            result["structuredContent"] = response.data
        else:  # a route declaring a reply must answer a JSON object: a bug, said plainly
            log.error("tool %s declares an output schema but its route answered no JSON object", tool.name)
            raise rpc_errors.RpcInternalError()
    return _json(result)


def _prompts_list(params: Mapping[str, Any], ctx: RequestContext, catalog: Catalog) -> bytes:
    if not catalog.prompts:
        raise rpc_errors.RpcMethodNotFound("Method not found: prompts/list")
    if params.get("cursor") is not None:
        raise rpc_errors.RpcInvalidParams("Invalid cursor: prompts/list has a single page")
    listing = catalog.prompts_result_json(ctx.revision)
    return _with_fields(listing, _CACHE_HINTS) if ctx.revision.modern else listing


def _tool_runner(catalog: Catalog, call_tool: ToolCaller) -> ToolRunner:
    """Runs a prompt's tools as ``tools/call`` would; a refusal refuses the prompt (-32602)."""

    async def run(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        try:
            response = await call_tool(catalog.by_name[name], arguments)
        except rpc_errors.ToolFailure as exc:
            raise rpc_errors.RpcInvalidParams(f"{name} failed: {exc.message}") from None
        if not response.ok or type(response.data) is not dict:
            said = response.data.get("error") if type(response.data) is dict else None
            raise rpc_errors.RpcInvalidParams(f"{name} refused: {said or f'HTTP {response.status}'}")
        data: dict[str, Any] = response.data
        return data

    return run


async def _prompts_get(
    params: Mapping[str, Any], _ctx: RequestContext, catalog: Catalog, call_tool: ToolCaller
) -> bytes:
    name, arguments = params.get("name"), params.get("arguments", {})
    if not isinstance(name, str) or type(arguments) is not dict:
        raise rpc_errors.RpcInvalidParams("Invalid prompts/get parameters")
    prompt = next((p for p in catalog.prompts if p.name == name), None)
    if prompt is None:
        raise rpc_errors.RpcInvalidParams(f"Unknown prompt: {name}")
    return _json(await prompt.get(arguments, _tool_runner(catalog, call_tool)))


_Method = Callable[[Mapping[str, Any], RequestContext, Catalog], bytes]
_CallingMethod = Callable[[Mapping[str, Any], RequestContext, Catalog, ToolCaller], Awaitable[bytes]]
# The methods of each era that answer from the catalog alone; the ones that call tools (through the
# REST stack) are served in both.
_HANDSHAKE_METHODS: Mapping[str, _Method] = {
    "initialize": _initialize,
    "ping": _ping,
    "tools/list": _tools_list,
    "prompts/list": _prompts_list,
}
_MODERN_METHODS: Mapping[str, _Method] = {
    "server/discover": _discover,
    "tools/list": _tools_list,
    "prompts/list": _prompts_list,
}
_CALLING_METHODS: Mapping[str, _CallingMethod] = {"tools/call": _tools_call, "prompts/get": _prompts_get}


async def _result(
    method: str, params: Mapping[str, Any], ctx: RequestContext, catalog: Catalog, call_tool: ToolCaller
) -> bytes:
    calling = _CALLING_METHODS.get(method)
    if calling is not None:
        return await calling(params, ctx, catalog, call_tool)
    serve = (_MODERN_METHODS if ctx.revision.modern else _HANDSHAKE_METHODS).get(method)
    if serve is None:
        raise rpc_errors.RpcMethodNotFound(f"Method not found: {method}")
    return serve(params, ctx, catalog)


async def handle_message(
    message: Any, catalog: Catalog, call_tool: ToolCaller, headers: TransportHeaders | None = None
) -> Answer | None:
    """The answer to one message of a POST (single or batch entry); None: nothing to answer.

    ``headers`` are the POST's routing headers (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``).
    An invalid envelope is answered in-band here (-32600 without id), as a batch entry needs; the
    endpoint refuses a single invalid message with 400 before it gets here.
    """
    if not is_valid_request(message):
        if is_client_response(message):
            return None
        return Answer(
            encode_error(rpc_errors.RpcInvalidRequest.code, rpc_errors.RpcInvalidRequest.default_message)
        )
    method: str = message["method"]
    if "id" not in message or method in _SILENT_METHODS:
        return None
    request_id = message["id"]
    params: Mapping[str, Any] = message.get("params", {})
    headers = headers or TransportHeaders()
    # A request that claims 2026-07-28 is answered by its rules even when it fails their checks.
    modern = claims_modern(method, params, headers)
    try:
        ctx = resolve_context(method, params, headers)
        result = await _result(method, params, ctx, catalog, call_tool)
    except rpc_errors.RpcError as exc:
        # A header contradicting the body is refused 400 whatever the revision (the mirror is a 2026-07-28
        # header, but a router may already trust it).
        by_status = modern or isinstance(exc, rpc_errors.RpcHeaderMismatch)
        status = rpc_errors.MODERN_HTTP_STATUS.get(exc.code, 200) if by_status else 200
        return Answer(encode_error(exc.code, exc.message, request_id, has_id=True, data=exc.data), status)
    except Exception:  # a bug: answer it as such, without its text, and keep the rest of a batch going
        log.exception("MCP %s failed", method)
        internal = rpc_errors.RpcInternalError()
        return Answer(encode_error(internal.code, internal.message, request_id, has_id=True))
    if modern:
        result = _with_fields(result, _MODERN_RESULT_FIELDS)
    return Answer(_encode_result(request_id, result))
