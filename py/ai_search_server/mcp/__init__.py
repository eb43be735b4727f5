"""The MCP endpoint: the REST routes as MCP tools, called as the user through the REST stack.

``catalog`` (tools from route metadata), ``revisions`` (what each protocol revision has),
``envelope`` (which revision serves a request; the mirrored headers), ``protocol`` (JSON-RPC),
``dispatch`` (in-process REST calls), ``endpoint`` (the HTTP gates, refused with the server's
``errors``), ``rpc_errors`` (in-band JSON-RPC errors and failed tool calls), ``limits``.
"""

from __future__ import annotations

from .catalog import ALLOWED_TOOL_NAMES, CURATED_ROUTES, Catalog, Tool, build_catalog, tool_name_for
from .endpoint import MCP_PATH, McpEndpoint
from .revisions import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS

__all__ = [
    "ALLOWED_TOOL_NAMES",
    "CURATED_ROUTES",
    "LATEST_PROTOCOL_VERSION",
    "MCP_PATH",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Catalog",
    "McpEndpoint",
    "Tool",
    "build_catalog",
    "tool_name_for",
]
