"""The MCP revisions the endpoint speaks, and what each one has: one table, read everywhere else.

Two eras (the 2026-07-28 versioning page): the *handshake* revisions open with ``initialize`` and
carry their version in the ``MCP-Protocol-Version`` header; the *modern* one (2026-07-28) has no
handshake: every request carries its version and the client's capabilities in ``params._meta``, and
the ``Mcp-Method``/``Mcp-Name`` headers mirror the body. The server is dual-era: each request is
served by the revision it names, with nothing kept between requests.

==============  ========  =======  ===========  ==============  ==========  =====================
revision        era       batches  annotations  title, output-  resultType  server/discover,
                                                Schema, struct  and _meta   cache hints
                                                -uredContent    serverInfo
==============  ========  =======  ===========  ==============  ==========  =====================
2025-03-26      handshake yes      yes          no              no          no
2025-06-18      handshake no       yes          yes             no          no
2025-11-25      handshake no       yes          yes             no          no
2026-07-28      modern    no       yes          yes             yes         yes
==============  ========  =======  ===========  ==============  ==========  =====================
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CLIENT_CAPABILITIES_META_KEY",
    "CLIENT_INFO_META_KEY",
    "HANDSHAKE_VERSIONS",
    "LATEST_HANDSHAKE_VERSION",
    "LATEST_PROTOCOL_VERSION",
    "MODERN_VERSIONS",
    "PROTOCOL_VERSION_META_KEY",
    "REVISIONS",
    "SERVER_INFO_META_KEY",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "VERSION_WITHOUT_HEADER",
    "Revision",
    "revision",
]

# The reserved _meta keys of 2026-07-28 (its basic page, "Per-request protocol fields").
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"


@dataclass(frozen=True, slots=True)
class Revision:
    """What one revision of the protocol has, as far as a stateless tools server is concerned."""

    version: str
    modern: bool  # per-request _meta, no initialize; server/discover, resultType, cache hints
    batches: bool  # a JSON-RPC array in one POST (removed in 2025-06-18)
    annotations: bool  # Tool.annotations (readOnlyHint, destructiveHint, ...)
    structured: bool  # Tool.title, Tool.outputSchema, CallToolResult.structuredContent


#: Newest first: the order ``server/discover`` lists them and ``-32022`` names them.
REVISIONS: tuple[Revision, ...] = (
    Revision("2026-07-28", modern=True, batches=False, annotations=True, structured=True),
    Revision("2025-11-25", modern=False, batches=False, annotations=True, structured=True),
    Revision("2025-06-18", modern=False, batches=False, annotations=True, structured=True),
    Revision("2025-03-26", modern=False, batches=True, annotations=True, structured=False),
)
_BY_VERSION = {r.version: r for r in REVISIONS}

SUPPORTED_PROTOCOL_VERSIONS: tuple[str, ...] = tuple(r.version for r in REVISIONS)
MODERN_VERSIONS: tuple[str, ...] = tuple(r.version for r in REVISIONS if r.modern)
HANDSHAKE_VERSIONS: tuple[str, ...] = tuple(r.version for r in REVISIONS if not r.modern)
LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[0]
# initialize answers an unknown version with this one (a handshake cannot name a modern revision).
LATEST_HANDSHAKE_VERSION = HANDSHAKE_VERSIONS[0]
# A request without an MCP-Protocol-Version header speaks this version (2025-06-18 transport rules).
VERSION_WITHOUT_HEADER = "2025-03-26"


def revision(version: str) -> Revision:
    """The revision of a supported version string (KeyError for any other)."""
    return _BY_VERSION[version]
