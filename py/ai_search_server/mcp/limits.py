"""The MCP endpoint's limits, each with its unit and where its value comes from (upstream-mcp.md)."""

from __future__ import annotations

__all__ = [
    "BATCH_WORKERS",
    "MAX_BATCH_ENTRIES",
    "MAX_RESPONSE_BYTES",
    "MAX_TOOL_NAME_CHARS",
    "TOOL_CALL_TIMEOUT_SECONDS",
    "byte_limit_text",
]

# Bytes of one encoded JSON-RPC answer (413 past it), of one tool's REST answer, and of all the REST
# answers of one batch together (§8.2, §8.8). An agent's context cannot use more in one step anyway.
MAX_RESPONSE_BYTES = 5 * 1024 * 1024
# Seconds one tool call may take through the REST stack (§8.8: the upstream aborts after 20 s).
TOOL_CALL_TIMEOUT_SECONDS = 20.0
# Entries of one JSON-RPC batch (§8.2).
MAX_BATCH_ENTRIES = 20
# Entries of one batch running at once (§8.2): a batch cannot occupy more of the server than this.
BATCH_WORKERS = 4
# Characters of a tool name: the upstream's fitToolName cap (§8.7); the 2025-11-25 guidance allows 128.
MAX_TOOL_NAME_CHARS = 64

_MIB = 1024 * 1024


def byte_limit_text(limit_bytes: int) -> str:
    """``5 MiB`` for whole mebibytes, else ``1234 bytes``, as the upstream words its batch error."""
    return f"{limit_bytes // _MIB} MiB" if limit_bytes % _MIB == 0 else f"{limit_bytes} bytes"
