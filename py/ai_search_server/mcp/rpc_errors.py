"""The MCP endpoint's errors that are not HTTP refusals: in-band JSON-RPC errors and failed tool calls.

An HTTP refusal of the whole request (no PAT, a bad Origin, a body that is not JSON...) is one of the
server's refusals (``errors.py``), rendered as an id-less JSON-RPC envelope. What is answered here
carries the request's id; at the handshake revisions (2025-03-26 to 2025-11-25) it rides inside a 200
response, at 2026-07-28 the HTTP status comes from :data:`MODERN_HTTP_STATUS` (the revision's
transport: 400 for a malformed request, 404 for an unknown method)::

    McpError
    ├── RpcError                      answered in-band: {"jsonrpc": "2.0", "id": <request id>, "error"}
    │   ├── RpcInvalidRequest         -32600  a malformed entry of a batch
    │   ├── RpcMethodNotFound         -32601
    │   ├── RpcInvalidParams          -32602  bad initialize or tools/call params, a cursor, a 2026-07-28
    │   │                                     request without its _meta protocol version or capabilities
    │   ├── RpcInternalError          -32603  a bug; the message never carries the cause
    │   ├── RpcHeaderMismatch         -32020  MCP-Protocol-Version, Mcp-Method or Mcp-Name missing (2026-07-28),
    │   │                                     repeated, or not what the body says (any revision)
    │   └── RpcUnsupportedVersion     -32022  a _meta protocol version we do not serve; data names ours
    └── ToolFailure                   answered as a tools/call *result* with isError: true (upstream §8.6)
        ├── ToolTimeout                       the REST call passed the 20 s deadline
        ├── ToolResponseTooLarge              one REST answer passed 5 MiB
        └── BatchBudgetExceeded               a batch's REST answers together passed 5 MiB
"""

from __future__ import annotations

from typing import Any, ClassVar

from .limits import MAX_RESPONSE_BYTES, byte_limit_text

__all__ = [
    "MODERN_HTTP_STATUS",
    "BatchBudgetExceeded",
    "McpError",
    "RpcError",
    "RpcHeaderMismatch",
    "RpcInternalError",
    "RpcInvalidParams",
    "RpcInvalidRequest",
    "RpcMethodNotFound",
    "RpcUnsupportedVersion",
    "ToolFailure",
    "ToolResponseTooLarge",
    "ToolTimeout",
]


class McpError(Exception):
    """Base of the MCP endpoint's in-band errors; ``message`` is what the client reads."""

    code: ClassVar[int] = -32603
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None, *, data: dict[str, Any] | None = None) -> None:
        self.message = message or self.default_message
        self.data = data  # the error's ``data`` member, when the revision defines one
        super().__init__(self.message)


class RpcError(McpError):
    """Answered in-band: ``{"jsonrpc": "2.0", "id": <request id>, "error": {code, message}}``."""


class RpcInvalidRequest(RpcError):
    code, default_message = -32600, "Invalid Request"


class RpcMethodNotFound(RpcError):
    code, default_message = -32601, "Method not found"


class RpcInvalidParams(RpcError):
    code, default_message = -32602, "Invalid params"


class RpcInternalError(RpcError):
    code, default_message = -32603, "Internal error"


class RpcHeaderMismatch(RpcError):
    code, default_message = -32020, "Header mismatch"


class RpcUnsupportedVersion(RpcError):
    code, default_message = -32022, "Unsupported protocol version"


#: The HTTP status of an in-band error at 2026-07-28, by code (its transport page; the SDK's table is
#: the same). A code not listed is answered 200, as every error is at the handshake revisions.
MODERN_HTTP_STATUS: dict[int, int] = {
    -32700: 400,
    -32600: 400,
    -32602: 400,
    RpcHeaderMismatch.code: 400,
    -32021: 400,  # MissingRequiredClientCapability: no method here needs a client capability
    RpcUnsupportedVersion.code: 400,
    RpcMethodNotFound.code: 404,
}


class ToolFailure(McpError):
    """A tool call that failed: the result ``{"content": [text], "isError": true}``, never an RPC error,
    so the model reads the reason and can correct itself."""


class ToolTimeout(ToolFailure):
    pass


class ToolResponseTooLarge(ToolFailure):
    default_message = f"MCP tool response exceeds the {byte_limit_text(MAX_RESPONSE_BYTES)} limit"


class BatchBudgetExceeded(ToolFailure):
    pass
