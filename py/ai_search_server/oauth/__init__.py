"""OAuth 2.1 for MCP clients: the MCP endpoint as a protected resource (RFC 9728) and an
authorization server in the proxy (RFC 8414 metadata, dynamic client registration RFC 7591, the
authorization code grant with PKCE S256, rotated refresh tokens, revocation RFC 7009), on authlib.

- ``resource``: the resource's identifier, metadata and 401 challenge (the MCP endpoint reads these);
- ``server``: authlib's authorization server over the store, and the glue authlib needs (says which);
- ``grants``: the grants and endpoints authlib runs, over the store; ``requests``: its request objects;
- ``models``: the store's records as authlib's models; the redirect URI rule;
- ``endpoints``: the HTTP routes; ``pages``: the sign-in and consent pages; ``limits``: the limits.

Tokens are opaque (256-bit random, stored as SHA-256 digests), bound to the MCP endpoint (the
``resource`` of their grant) and to one person: the endpoint turns one into that person's caller,
so every tool call sees what they may see, as with a personal access token.
"""

from __future__ import annotations

from .endpoints import AUTHORIZATION_SERVER_METADATA_PATH, OAuthEndpoints
from .resource import (
    PROTECTED_RESOURCE_PATH,
    SCOPES,
    canonical_resource,
    challenge,
    grants_resource_access,
    protected_resource_metadata,
    public_origin,
    resource_metadata_url,
)
from .server import AUTHORIZE_PATH, REGISTER_PATH, REVOKE_PATH, TOKEN_PATH, authorization_server_metadata

__all__ = [
    "AUTHORIZATION_SERVER_METADATA_PATH",
    "AUTHORIZE_PATH",
    "PROTECTED_RESOURCE_PATH",
    "REGISTER_PATH",
    "REVOKE_PATH",
    "SCOPES",
    "TOKEN_PATH",
    "OAuthEndpoints",
    "authorization_server_metadata",
    "canonical_resource",
    "challenge",
    "grants_resource_access",
    "protected_resource_metadata",
    "public_origin",
    "resource_metadata_url",
]
