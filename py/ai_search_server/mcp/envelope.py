"""Which revision serves a request, from its headers and its ``params._meta``; the mirrored headers.

A request is served at 2026-07-28 when its ``MCP-Protocol-Version`` header or its
``_meta["io.modelcontextprotocol/protocolVersion"]`` says so, or when its method exists only there
(``server/discover``); otherwise at the handshake revision of its header (none: 2025-03-26). Nothing
is remembered between requests. At 2026-07-28, in this order (the first failure answers; the
revision's transport page, "Server Validation"; the SDK's server checks in the same order):

1. ``_meta`` holds the protocol version and the client capabilities (an object)  → -32602, 400
2. ``MCP-Protocol-Version`` equals the body's version, ``Mcp-Method`` the method, and ``Mcp-Name``
   (base64-sentinel decoded) the ``name`` of ``tools/call``/``prompts/get``        → -32020, 400
3. the body's version is one we serve at 2026-07-28                              → -32022, 400,
   ``data: {"supported": [...], "requested": ...}``

At every revision, a mirrored header that *is* sent must match the body, and none may be sent twice
(a router reading the first copy and a server the last would disagree): -32020. ``Mcp-Param-*``
headers are ignored: no tool declares ``x-mcp-header``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import rpc_errors
from .revisions import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_META_KEY,
    SUPPORTED_PROTOCOL_VERSIONS,
    VERSION_WITHOUT_HEADER,
    Revision,
    revision,
)

__all__ = [
    "MODERN_ONLY_METHODS",
    "NAME_BEARING_METHODS",
    "RequestContext",
    "TransportHeaders",
    "claims_modern",
    "decode_header_value",
    "resolve_context",
]

# Methods that exist only at 2026-07-28: served there even when the request forgot to say so.
MODERN_ONLY_METHODS = frozenset({"server/discover", "subscriptions/listen"})
# Method → the params key mirrored in Mcp-Name (resources/read's uri: no resources here).
NAME_BEARING_METHODS: Mapping[str, str] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
}
_VERSION_HEADER, _METHOD_HEADER, _NAME_HEADER = "mcp-protocol-version", "mcp-method", "mcp-name"
_ROUTING_HEADERS = frozenset({_VERSION_HEADER, _METHOD_HEADER, _NAME_HEADER})
_BASE64_SENTINEL = re.compile(r"=\?base64\?(?P<payload>.*)\?=")
# RFC 9110 field values: visible ASCII, space and tab.
_HEADER_SAFE = re.compile(r"[\x20-\x7e\t]*")


@dataclass(frozen=True, slots=True)
class TransportHeaders:
    """The routing headers of one POST, as sent (None: absent)."""

    version: str | None = None  # MCP-Protocol-Version
    method: str | None = None  # Mcp-Method
    name: str | None = None  # Mcp-Name, still encoded
    repeated: str | None = None  # a routing header sent more than once

    @classmethod
    def from_raw(cls, raw: Iterable[tuple[bytes, bytes]]) -> TransportHeaders:
        """From ASGI header pairs (a folded mapping would hide a repeated header)."""
        seen: dict[str, str] = {}
        repeated = None
        for raw_name, raw_value in raw:
            name = raw_name.decode("latin-1").lower()
            if name in _ROUTING_HEADERS:
                if name in seen:
                    repeated = repeated or name
                seen[name] = raw_value.decode("latin-1")
        return cls(seen.get(_VERSION_HEADER), seen.get(_METHOD_HEADER), seen.get(_NAME_HEADER), repeated)


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What one request said about itself: the revision it is served at, and (2026-07-28) the
    client's capabilities and identity for this request only."""

    revision: Revision
    client_capabilities: Mapping[str, Any] = field(default_factory=dict)
    client_info: Mapping[str, Any] | None = None


def decode_header_value(value: str) -> str | None:
    """A header value as the body would hold it: ``=?base64?…?=`` decoded (canonical base64 of UTF-8),
    anything else as it is; None when it is malformed, so it never matches by accident."""
    if not _HEADER_SAFE.fullmatch(value):
        return None
    match = _BASE64_SENTINEL.fullmatch(value)
    if match is None:
        return value
    payload = match["payload"]
    try:
        decoded = base64.b64decode(payload, validate=True)
    except binascii.Error:
        return None
    if base64.b64encode(decoded).decode("ascii") != payload:
        return None
    try:
        return decoded.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _check_mirrors(
    method: str, params: Mapping[str, Any], headers: TransportHeaders, *, required: bool
) -> None:
    """Raises rpc_errors.RpcHeaderMismatch when a mirrored header is repeated, missing (``required``)
    or not what the body says."""
    if headers.repeated is not None:
        raise rpc_errors.RpcHeaderMismatch(f"Header mismatch: {headers.repeated} header sent more than once")
    if headers.method is None:
        if required:
            raise rpc_errors.RpcHeaderMismatch("Header mismatch: the Mcp-Method header is required")
    elif headers.method != method:
        raise rpc_errors.RpcHeaderMismatch(
            f"Header mismatch: Mcp-Method header value {headers.method!r} does not match body value {method!r}"
        )
    name_key = NAME_BEARING_METHODS.get(method)
    body_name = params.get(name_key) if name_key is not None else None
    if not isinstance(body_name, str):
        return  # nothing to mirror; the method itself refuses a missing name
    if headers.name is None:
        if required:
            raise rpc_errors.RpcHeaderMismatch(
                f"Header mismatch: the Mcp-Name header is required for {method}"
            )
        return
    if decode_header_value(headers.name) != body_name:
        raise rpc_errors.RpcHeaderMismatch(
            f"Header mismatch: Mcp-Name header value {headers.name!r} does not match body value {body_name!r}"
        )


def _body_version(params: Mapping[str, Any]) -> Any:
    meta = params.get("_meta")
    return meta.get(PROTOCOL_VERSION_META_KEY) if type(meta) is dict else None


def claims_modern(method: str, params: Mapping[str, Any], headers: TransportHeaders) -> bool:
    """Whether the request is to be served, and refused, by 2026-07-28's rules (the module's table)."""
    return (
        (headers.version is not None and revision(headers.version).modern)
        or _body_version(params) is not None
        or method in MODERN_ONLY_METHODS
    )


def resolve_context(method: str, params: Mapping[str, Any], headers: TransportHeaders) -> RequestContext:
    """The revision and per-request client facts of one request (the module's table).

    ``headers.version`` is None or a supported version: the endpoint refuses any other before the
    body is read.

    Raises:
        rpc_errors.RpcInvalidParams: a 2026-07-28 request without its _meta protocol fields.
        rpc_errors.RpcHeaderMismatch: a mirrored header missing, repeated or contradicting the body.
        rpc_errors.RpcUnsupportedVersion: a _meta protocol version we do not serve.
    """
    if not claims_modern(method, params, headers):
        _check_mirrors(method, params, headers, required=False)
        return RequestContext(revision(headers.version or VERSION_WITHOUT_HEADER))
    meta = params.get("_meta")
    body_version = _body_version(params)
    missing = [
        key
        for key in (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY)
        if type(meta) is not dict or key not in meta
    ]
    if missing:
        raise rpc_errors.RpcInvalidParams(f"Invalid params: _meta is missing {', '.join(missing)}")
    assert type(meta) is dict
    if headers.version is None or headers.version != body_version:
        shown = "missing" if headers.version is None else repr(headers.version)
        raise rpc_errors.RpcHeaderMismatch(
            f"Header mismatch: MCP-Protocol-Version header {shown} does not match body value {body_version!r}"
        )
    _check_mirrors(method, params, headers, required=True)
    if body_version not in MODERN_VERSIONS:
        raise rpc_errors.RpcUnsupportedVersion(
            data={"supported": list(SUPPORTED_PROTOCOL_VERSIONS), "requested": str(body_version)}
        )
    capabilities = meta[CLIENT_CAPABILITIES_META_KEY]
    if type(capabilities) is not dict:
        raise rpc_errors.RpcInvalidParams(
            f"Invalid params: _meta {CLIENT_CAPABILITIES_META_KEY} must be an object"
        )
    client_info = meta.get(CLIENT_INFO_META_KEY)
    return RequestContext(
        revision(body_version), capabilities, client_info if type(client_info) is dict else None
    )
