"""The MCP boundary's one exception tree; each class carries its JSON-RPC code and HTTP status.

Three families, because the endpoint answers a failure in three different places::

    McpError                          code    status
    ├── HttpRefusal                   the whole POST/GET is refused: HTTP status, id-less error envelope
    │   ├── PatRequired               -32001  401  no or bad credentials, or a login token instead of a PAT
    │   ├── EndpointDisabled          -32601  404  the mcp_enabled setting is off
    │   ├── OriginRefused             -32000  403  a browser Origin that is not allowed (DNS rebinding)
    │   ├── PermissionRequired        -32000  403  the caller lacks the access-mcp permission
    │   ├── UnsupportedVersion        -32600  400  an MCP-Protocol-Version header we do not speak
    │   ├── NotAcceptable             -32600  406  an Accept header without application/json
    │   ├── MethodNotAllowed          -32600  405  GET/DELETE: the endpoint is POST only
    │   ├── RateLimited               -32000  429  past 60 requests a minute
    │   ├── ParseError                -32700  400  the body is not JSON
    │   ├── InvalidEnvelope           -32600  400  not a JSON-RPC request, or a batch we cannot take
    │   ├── ResponseTooLarge          -32000  413  the encoded answer is over 5 MiB
    │   └── ServiceUnavailable        -32603  503  the workspace store failed while checking the caller
    ├── RpcError                      answered in-band, inside a 200 JSON-RPC response with the request id
    │   ├── InvalidRequest            -32600       a malformed entry of a batch
    │   ├── MethodNotFound            -32601
    │   ├── InvalidParams             -32602       bad initialize/tools/call params, unknown tool, bad cursor
    │   └── InternalError             -32603       a bug; the message never carries the cause
    └── ToolFailure                   answered as a tools/call *result* with isError: true (upstream §8.6)
        ├── ToolTimeout                            the REST call passed the 20 s deadline
        ├── ToolResponseTooLarge                   one REST answer passed 5 MiB
        └── BatchBudgetExceeded                    a batch's REST answers together passed 5 MiB

Error envelopes the endpoint cannot tie to a request id leave ``id`` out rather than sending
``"id": null``: the 2025-11-25 schema types ``id`` as string|integer and allows it to be absent in an
error response (mcp-transport-rules.md §1.6); upstream sends null, which no revision's schema accepts.
"""

from __future__ import annotations

from typing import ClassVar

from .limits import MAX_RESPONSE_BYTES, byte_limit_text

__all__ = [
    "BatchBudgetExceeded",
    "EndpointDisabled",
    "HttpRefusal",
    "InternalError",
    "InvalidEnvelope",
    "InvalidParams",
    "InvalidRequest",
    "McpError",
    "MethodNotAllowed",
    "MethodNotFound",
    "NotAcceptable",
    "OriginRefused",
    "ParseError",
    "PatRequired",
    "PermissionRequired",
    "RateLimited",
    "ResponseTooLarge",
    "RpcError",
    "ServiceUnavailable",
    "ToolFailure",
    "ToolResponseTooLarge",
    "ToolTimeout",
    "UnsupportedVersion",
]


class McpError(Exception):
    """Base of every error the MCP endpoint answers; ``message`` is what the client reads."""

    code: ClassVar[int] = -32603
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None, *, headers: dict[str, str] | None = None) -> None:
        self.message = message or self.default_message
        self.headers = headers or {}
        super().__init__(self.message)


class HttpRefusal(McpError):
    """Refuses the whole HTTP request with ``status`` and an id-less JSON-RPC error envelope."""

    status: ClassVar[int] = 400


class PatRequired(HttpRefusal):
    code, status, default_message = -32001, 401, "Personal Access Token required"


class EndpointDisabled(HttpRefusal):
    code, status, default_message = -32601, 404, "MCP endpoint is disabled"


class OriginRefused(HttpRefusal):
    code, status, default_message = -32000, 403, "Origin is not allowed"


class PermissionRequired(HttpRefusal):
    code, status, default_message = -32000, 403, "The access-mcp permission is required"


class UnsupportedVersion(HttpRefusal):
    code, status, default_message = -32600, 400, "Unsupported MCP protocol version"


class NotAcceptable(HttpRefusal):
    code, status, default_message = -32600, 406, "Not Acceptable: the client must accept application/json"


class MethodNotAllowed(HttpRefusal):
    code, status, default_message = -32600, 405, "Only POST is supported"


class RateLimited(HttpRefusal):
    code, status, default_message = -32000, 429, "Too many requests"


class ParseError(HttpRefusal):
    code, status, default_message = -32700, 400, "Parse error"


class InvalidEnvelope(HttpRefusal):
    code, status, default_message = -32600, 400, "Invalid Request"


class ResponseTooLarge(HttpRefusal):
    code, status = -32000, 413
    default_message = f"MCP response exceeds the {byte_limit_text(MAX_RESPONSE_BYTES)} limit"


class ServiceUnavailable(HttpRefusal):
    code, status = -32603, 503
    default_message = "The workspace database is unavailable; try again shortly"


class RpcError(McpError):
    """Answered in-band: ``{"jsonrpc": "2.0", "id": <request id>, "error": {code, message}}``."""


class InvalidRequest(RpcError):
    code, default_message = -32600, "Invalid Request"


class MethodNotFound(RpcError):
    code, default_message = -32601, "Method not found"


class InvalidParams(RpcError):
    code, default_message = -32602, "Invalid params"


class InternalError(RpcError):
    code, default_message = -32603, "Internal error"


class ToolFailure(McpError):
    """A tool call that failed: the result ``{"content": [text], "isError": true}``, never an RPC error,
    so the model reads the reason and can correct itself."""


class ToolTimeout(ToolFailure):
    pass


class ToolResponseTooLarge(ToolFailure):
    default_message = f"MCP tool response exceeds the {byte_limit_text(MAX_RESPONSE_BYTES)} limit"


class BatchBudgetExceeded(ToolFailure):
    pass
