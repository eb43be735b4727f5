"""The store's OAuth records as authlib's models (``ClientMixin``, ``AuthorizationCodeMixin``,
``TokenMixin``), and the rule for which redirect URIs a client may register.

Redirect URIs (OAuth 2.1 §2.3.1, RFC 8252 §7): ``https`` URIs; ``http`` only to a loopback address
(``127.0.0.1``, ``[::1]``, ``localhost``), where any port matches the registered one because a native
client listens on whatever port it got; and private-use schemes named by a reversed domain
(``com.example.app:/callback``), which a native app claims. Nothing else: no ``javascript:``,
``data:`` or ``file:``, no fragment, no user information.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749 import AuthorizationCodeMixin, ClientMixin, TokenMixin

from .. import store as store_package
from ..store.records import OAuthClient, OAuthCode, OAuthGrant
from .limits import MAX_REDIRECT_URI_CHARS
from .resource import SCOPES

__all__ = ["Client", "Code", "Grant", "redirect_uri_problem"]

# A private-use scheme as RFC 8252 §7.1 asks: a reversed domain name, so it has a dot.
_PRIVATE_SCHEME = re.compile(r"^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+$")
_LOOPBACK_NAMES = ("localhost",)
# Scopes a client may ask for beyond the resource's: refresh tokens are ours to give (MCP lets a
# client add offline_access), so it is accepted and changes nothing.
_EXTRA_SCOPES = ("offline_access",)


def _is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def redirect_uri_problem(uri: Any) -> str | None:
    """Why ``uri`` may not be registered as a redirect URI (the module docstring's rule); None if it may."""
    if not isinstance(uri, str) or not uri:
        return "a redirect URI must be a non-empty string"
    if len(uri) > MAX_REDIRECT_URI_CHARS:
        return f"a redirect URI may hold at most {MAX_REDIRECT_URI_CHARS} characters"
    if any(ord(c) < 0x21 or ord(c) > 0x7E for c in uri):
        return "a redirect URI must be printable ASCII without spaces"
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "a redirect URI must be a URI"
    if "#" in uri:
        return "a redirect URI may not have a fragment"
    scheme = parts.scheme.lower()
    if scheme == "https":
        ok = bool(parts.hostname) and not parts.username and not parts.password
        return None if ok else "an https redirect URI needs a host and no user information"
    if scheme == "http":
        if not _is_loopback(parts.hostname) or parts.username or parts.password:
            return "an http redirect URI must go to a loopback address (127.0.0.1, [::1], localhost)"
        return None
    if _PRIVATE_SCHEME.match(scheme):
        return None
    return (
        "a redirect URI must be https, http to a loopback address, or a private-use scheme named by a "
        "reversed domain (com.example.app:/callback)"
    )


def _same_ignoring_loopback_port(registered: str, asked: str) -> bool:
    a, b = urlsplit(registered), urlsplit(asked)
    return (
        a.scheme == b.scheme == "http"
        and _is_loopback(a.hostname)
        and a.hostname == b.hostname
        and (a.path, a.query) == (b.path, b.query)
    )


class Client(ClientMixin):  # type: ignore[misc]
    """A registered client, from ``store.oauth_client``."""

    def __init__(self, record: OAuthClient, secret_hash: str | None) -> None:
        self.record = record
        self.secret_hash = secret_hash
        self.metadata: dict[str, Any] = json.loads(record.metadata)

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def redirect_uris(self) -> list[str]:
        return list(self.metadata.get("redirect_uris") or [])

    def get_client_id(self) -> str:
        return self.record.id

    def get_default_redirect_uri(self) -> str | None:
        # Only an unambiguous one: with several, the request must name which.
        uris = self.redirect_uris
        return uris[0] if len(uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str:
        if not scope:
            return " ".join(SCOPES)
        asked = scope.split()
        return " ".join(s for s in dict.fromkeys(asked) if s in SCOPES or s in _EXTRA_SCOPES)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return any(
            uri == redirect_uri or _same_ignoring_loopback_port(uri, redirect_uri)
            for uri in self.redirect_uris
        )

    def check_client_secret(self, client_secret: str) -> bool:
        if self.secret_hash is None:
            return False
        return hmac.compare_digest(store_package.hash_token(client_secret), self.secret_hash)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        # The method registered is the only one: a public client ("none") cannot be made to look
        # confidential, and a confidential one must always prove its secret.
        return bool(method == self.metadata.get("token_endpoint_auth_method", "client_secret_basic"))

    def check_response_type(self, response_type: str) -> bool:
        return response_type in (self.metadata.get("response_types") or ["code"])

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in (self.metadata.get("grant_types") or ["authorization_code"])


class Code(AuthorizationCodeMixin):  # type: ignore[misc]
    """An authorization code taken from the store (already marked used)."""

    def __init__(self, record: OAuthCode) -> None:
        self.record = record
        self.code_challenge = record.code_challenge
        self.code_challenge_method = record.code_challenge_method

    def get_redirect_uri(self) -> str:
        return self.record.redirect_uri

    def get_scope(self) -> str:
        return self.record.scope


class Grant(TokenMixin):  # type: ignore[misc]
    """A live grant, as a refresh token names it."""

    def __init__(self, record: OAuthGrant) -> None:
        self.record = record

    def check_client(self, client: Client) -> bool:
        return bool(self.record.client_id == client.get_client_id())

    def get_scope(self) -> str:
        return self.record.scope

    def get_expires_in(self) -> int:
        return 0

    def is_expired(self) -> bool:
        return False

    def is_revoked(self) -> bool:
        return False

    def get_user(self) -> str:
        return self.record.user_id

    def get_client(self) -> Any:
        return None
