"""The MCP endpoint as an OAuth protected resource: its identifier, its metadata (RFC 9728), and the
``WWW-Authenticate`` challenge of its 401 answers (RFC 6750 §3, RFC 9728 §5.1).

authlib has no RFC 9728 (nor RFC 8707 resource indicators), so this module is ours: the metadata is
a small JSON document and the resource comparison one normalisation.

The site's public origin is the origin a request was made to when its ``Host`` is a loopback name
(``localhost``, ``127.0.0.1``, ``[::1]``, any port: a demo, or a server reached through ``ssh -L`` or a
container's port map), else the setting ``site_url`` (behind a proxy, the public name). The issuer,
the resource and every endpoint URL are built from it, so that a client that reached us under one
name is told that name throughout, and a token issued under one name is not accepted under another.

    >>> canonical_resource("HTTPS://Search.Example.com/api/v1/mcp/")
    'https://search.example.com/api/v1/mcp'
    >>> canonical_resource("https://search.example.com/api/v1/mcp#x") is None
    True
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request

from ..origins import host_name, normalize_origin
from ..settings import Settings

__all__ = [
    "PROTECTED_RESOURCE_PATH",
    "SCOPES",
    "canonical_resource",
    "challenge",
    "grants_resource_access",
    "protected_resource_metadata",
    "public_origin",
    "resource_metadata_url",
]

# RFC 9728 §3: the metadata of a resource at <origin><path> is at /.well-known/oauth-protected-resource<path>;
# the root form (without the path) is served too, for clients that try it first.
PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"
# The one scope: act as the person over MCP, with their permissions (each tool call is still checked
# against them). Finer scopes would promise a separation the tools do not make.
SCOPES = ("mcp",)
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]", "::1")


def public_origin(settings: Settings, request: Request) -> str:
    """``scheme://host[:port]`` of the site as this request reached it (module docstring)."""
    host = (request.headers.get("host") or "").lower()
    if (host_name(host) in _LOOPBACK_NAMES or not settings.site_url) and host:
        return f"{request.url.scheme}://{host}"
    # As browsers serialise an origin (host lowercase, no default port): the issuer is compared as a string.
    return normalize_origin(settings.site_url) or settings.site_url.rstrip("/")


def canonical_resource(uri: str) -> str | None:
    """A resource URI compared as RFC 8707 and the MCP specification say: scheme and host
    lowercase, no trailing slash, no fragment; None for what is no absolute http(s) URI."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc or parts.fragment:
        return None
    if "#" in uri:
        return None
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}{query}"


def resource_metadata_url(origin: str, resource_path: str) -> str:
    return f"{origin}{PROTECTED_RESOURCE_PATH}{resource_path}"


def protected_resource_metadata(origin: str, resource_path: str) -> dict[str, Any]:
    """RFC 9728 §2: the resource, the authorization server that issues its tokens (ours: the site's
    origin is the issuer), how tokens are sent, and the scopes."""
    resource = f"{origin}{resource_path}"
    return {
        "resource": canonical_resource(resource) or resource,
        "authorization_servers": [origin],
        "bearer_methods_supported": ["header"],
        "scopes_supported": list(SCOPES),
        "resource_name": "ai-search MCP",
    }


def challenge(
    origin: str, resource_path: str, *, error: str | None = None, description: str | None = None
) -> str:
    """The ``WWW-Authenticate`` value of a 401 or 403: where the metadata is, the scope, and for a
    token that was sent and refused, its ``error`` (RFC 6750 §3.1): ``invalid_token`` (401), or
    ``insufficient_scope`` (403) with an ``error_description``, as the MCP authorization specification
    asks. ``description`` is our own sentence: printable ASCII without a quote or backslash."""
    parts = [
        f'resource_metadata="{resource_metadata_url(origin, resource_path)}"',
        f'scope="{" ".join(SCOPES)}"',
    ]
    if error:
        parts.insert(0, f'error="{error}"')
    if description:
        parts.append(f'error_description="{description}"')
    return "Bearer " + ", ".join(parts)


def grants_resource_access(scope: str) -> bool:
    """Whether a grant's ``scope`` (space-separated) holds every scope of :data:`SCOPES`: a token
    granted ``offline_access`` alone is for refreshing, and calls nothing."""
    return set(SCOPES) <= set(scope.split())
