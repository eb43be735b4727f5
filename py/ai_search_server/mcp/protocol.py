"""JSON-RPC 2.0 for MCP: message validation, the methods we serve, and response encoding.

Stateless: every message stands on its own, so tools/list and tools/call work without a prior
``initialize`` (mcp-transport-rules.md §1.7). The methods (upstream-mcp.md §8.6):

=========================== ====================================================================
``initialize``              negotiates 2025-03-26, 2025-06-18 or 2025-11-25 (an unknown version is
                            answered with the latest); declares only the tools capability
``ping``                    ``{}``
``tools/list``              the active catalog, in one page (a cursor is refused: we never issue one)
``tools/call``              the REST route, as the caller; failures are results with ``isError``
``notifications/*``         nothing (202): also when a client puts an id on them
anything else               ``-32601 Method not found: <method>``
=========================== ====================================================================

A message is answered as encoded bytes (or None for "nothing to answer"), so a batch joins its
answers without re-encoding and the size cap counts the real bytes. Optional fields are left out,
never null; ids are echoed as they came (a string stays a string).
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

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "SERVER_NAME",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "VERSION_WITHOUT_HEADER",
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

SUPPORTED_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
LATEST_PROTOCOL_VERSION = "2025-11-25"
# A request without an MCP-Protocol-Version header speaks this version (2025-06-18 transport rules).
VERSION_WITHOUT_HEADER = "2025-03-26"
SERVER_NAME = "ai-search"
# Notifications by name: answered with nothing even when the client sent an id (upstream §8.6).
_SILENT_METHODS = frozenset({"notifications/initialized", "notifications/cancelled"})
# The server's version as upstream reports its own: major.minor.
_SERVER_VERSION = ".".join(__version__.split(".")[:2])
_INITIALIZE_CAPABILITIES = {"tools": {"listChanged": False}}


@dataclass(frozen=True, slots=True)
class ToolResponse:
    """What a REST route answered a tool call: ``body`` parsed when it is JSON, else raw text."""

    ok: bool
    status: int
    text: str  # the body as JSON text (JSON.stringify(body) upstream)


#: Calls one tool's route as the caller: ``(tool, arguments) -> ToolResponse``.
#: Raises rpc_errors.ToolFailure (timeout, size caps), which becomes an ``isError`` result.
ToolCaller = Callable[[Tool, Mapping[str, Any]], Awaitable[ToolResponse]]


def supports_batching(header_version: str | None) -> bool:
    return (header_version or VERSION_WITHOUT_HEADER) == VERSION_WITHOUT_HEADER


def negotiate_version(requested: str) -> str:
    """The client's version when we speak it (MUST), else our latest (SHOULD)."""
    return requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION


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


def encode_error(code: int, message: str, request_id: Any = None, *, has_id: bool = False) -> bytes:
    """An error response; without ``has_id`` the id is left out (it could not be read)."""
    error = _json({"code": code, "message": message})
    if not has_id:
        return b'{"jsonrpc":"2.0","error":' + error + b"}"
    return b'{"jsonrpc":"2.0","id":' + _json(request_id) + b',"error":' + error + b"}"


_EMPTY_RESULT = b"{}"


# -- methods -------------------------------------------------------------------------------------


def _initialize(params: Mapping[str, Any]) -> bytes:
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
            "capabilities": _INITIALIZE_CAPABILITIES,
            "serverInfo": {"name": SERVER_NAME, "version": _SERVER_VERSION},
        }
    )


def _tools_list(params: Mapping[str, Any], catalog: Catalog) -> bytes:
    # Every list fits one page and we never hand out a cursor, so any cursor is one we did not issue.
    if params.get("cursor") is not None:
        raise rpc_errors.RpcInvalidParams("Invalid cursor: tools/list has a single page")
    return catalog.list_result_json


async def _tools_call(params: Mapping[str, Any], catalog: Catalog, call_tool: ToolCaller) -> bytes:
    name, arguments = params.get("name"), params.get("arguments", {})
    if not isinstance(name, str) or type(arguments) is not dict:
        raise rpc_errors.RpcInvalidParams("Invalid tools/call parameters")
    tool = catalog.by_name.get(name)
    if tool is None:
        raise rpc_errors.RpcInvalidParams(f"Unknown tool: {name}")
    try:
        response = await call_tool(tool, arguments)
    except rpc_errors.ToolFailure as exc:
        text, is_error = f"Tool execution failed: {exc.message}", True
    else:
        text, is_error = response.text, not response.ok
    return _json({"content": [{"type": "text", "text": text}], "isError": is_error})


async def handle_message(message: Any, catalog: Catalog, call_tool: ToolCaller) -> bytes | None:
    """The encoded answer to one message of a POST (single or batch entry); None: nothing to answer.

    An invalid envelope is answered in-band here (-32600 without id), as a batch entry needs; the
    endpoint refuses a single invalid message with 400 before it gets here.
    """
    if not is_valid_request(message):
        if is_client_response(message):
            return None
        return encode_error(rpc_errors.RpcInvalidRequest.code, rpc_errors.RpcInvalidRequest.default_message)
    method: str = message["method"]
    if "id" not in message or method in _SILENT_METHODS:
        return None
    request_id = message["id"]
    params: Mapping[str, Any] = message.get("params", {})
    try:
        if method == "tools/call":
            result = await _tools_call(params, catalog, call_tool)
        elif method == "tools/list":
            result = _tools_list(params, catalog)
        elif method == "ping":
            result = _EMPTY_RESULT
        elif method == "initialize":
            result = _initialize(params)
        else:
            raise rpc_errors.RpcMethodNotFound(f"Method not found: {method}")
    except rpc_errors.RpcError as exc:
        return encode_error(exc.code, exc.message, request_id, has_id=True)
    except Exception:  # a bug: answer it as such, without its text, and keep the rest of a batch going
        log.exception("MCP %s failed", method)
        internal = rpc_errors.RpcInternalError()
        return encode_error(internal.code, internal.message, request_id, has_id=True)
    return _encode_result(request_id, result)
