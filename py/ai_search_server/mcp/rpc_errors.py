"""The MCP endpoint's errors that are not HTTP refusals: in-band JSON-RPC errors and failed tool calls.

An HTTP refusal of the whole request (no PAT, a bad Origin, a body that is not JSON...) is one of the
server's refusals (``errors.py``), rendered as an id-less JSON-RPC envelope. What is answered here
rides inside a 200 response::

    McpError
    ├── RpcError                      answered in-band: {"jsonrpc": "2.0", "id": <request id>, "error"}
    │   ├── RpcInvalidRequest         -32600  a malformed entry of a batch
    │   ├── RpcMethodNotFound         -32601
    │   ├── RpcInvalidParams          -32602  bad initialize or tools/call params, a cursor
    │   └── RpcInternalError          -32603  a bug; the message never carries the cause
    └── ToolFailure                   answered as a tools/call *result* with isError: true (upstream §8.6)
        ├── ToolTimeout                       the REST call passed the 20 s deadline
        ├── ToolResponseTooLarge              one REST answer passed 5 MiB
        └── BatchBudgetExceeded               a batch's REST answers together passed 5 MiB
"""

from __future__ import annotations

from typing import ClassVar

from .limits import MAX_RESPONSE_BYTES, byte_limit_text

__all__ = [
    "BatchBudgetExceeded",
    "McpError",
    "RpcError",
    "RpcInternalError",
    "RpcInvalidParams",
    "RpcInvalidRequest",
    "RpcMethodNotFound",
    "ToolFailure",
    "ToolResponseTooLarge",
    "ToolTimeout",
]


class McpError(Exception):
    """Base of the MCP endpoint's in-band errors; ``message`` is what the client reads."""

    code: ClassVar[int] = -32603
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None) -> None:
        self.message = message or self.default_message
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


class ToolFailure(McpError):
    """A tool call that failed: the result ``{"content": [text], "isError": true}``, never an RPC error,
    so the model reads the reason and can correct itself."""


class ToolTimeout(ToolFailure):
    pass


class ToolResponseTooLarge(ToolFailure):
    default_message = f"MCP tool response exceeds the {byte_limit_text(MAX_RESPONSE_BYTES)} limit"


class BatchBudgetExceeded(ToolFailure):
    pass
