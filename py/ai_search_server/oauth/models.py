"""The store's OAuth records as authlib's models (``ClientMixin``, ``AuthorizationCodeMixin``,
``TokenMixin``), and the rule for which redirect URIs a client may register.

Redirect URIs (OAuth 2.1 §2.3.1, RFC 8252 §7): ``https`` URIs; ``http`` only to a loopback address
(``127.0.0.1``, ``[::1]``, ``localhost``), where any port matches the registered one because a native
client listens on whatever port it got; and private-use schemes named by a reversed domain
(``com.example.app:/callback``), which a native app claims. Nothing else: no ``javascript:``,
``data:`` or ``file:``, no fragment, no user information.

Each URI is printable ASCII without a backslash, and an http(s) one's authority is a host (a name of
letters, digits, ``.``, ``-``, ``_``, or a bracketed IPv6 address) and at most a port of 1 to 65535:
the forms where Python's ``urlsplit`` and a browser could read different hosts are refused, not
interpreted. ``http://evil.example\\@127.0.0.1/cb`` is 127.0.0.1 to ``urlsplit`` and evil.example to a
browser (which reads ``\\`` as ``/``); ``user@host`` and ``%``-escapes are how the same trick hides.

A request's ``redirect_uri`` must pass the same rule, and then equal a registered URI character for
character, except for the port of an http loopback one (:meth:`Client.check_redirect_uri`); a URI that
fails either never receives a redirect (RFC 6749 §4.1.2.1: the error page says why instead).

Client names (:func:`client_name_problem`): the consent page shows the name a client gave itself, so
it follows the room-name rules (``store.names``): nothing invisible or text-reordering (zero-width
characters, bidi overrides and isolates), and it is kept in NFKC form.
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
from ..store import names
from ..store.records import OAuthClient, OAuthCode, OAuthGrant
from .limits import MAX_CLIENT_NAME_CHARS, MAX_REDIRECT_URI_CHARS
from .resource import SCOPES

__all__ = ["Client", "Code", "Grant", "client_name_problem", "normal_client_name", "redirect_uri_problem"]

# A private-use scheme as RFC 8252 §7.1 asks: a reversed domain name, so it has a dot.
_PRIVATE_SCHEME = re.compile(r"^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+$")
# An http(s) redirect URI's whole authority: a host name (letters, digits, '.', '-', '_'; IPv4
# addresses are such names) or a bracketed IPv6 address, then at most ':' and a port of 1-5 digits.
# No user information, no '%'-escape, no character a browser ends or rewrites a host at.
_AUTHORITY = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(?P<port>[0-9]{1,5}))?")
# The ports a redirect URI may name (TCP's, RFC 793; 0 is no port a browser connects to).
_PORTS = range(1, 65_536)
_LOOPBACK_NAMES = ("localhost",)
# Scopes a client may ask for beyond the resource's: refresh tokens are ours to give (MCP lets a
# client add offline_access). Asked for alone, it grants no MCP access (the endpoint checks the scope).
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


def _authority_problem(netloc: str) -> str | None:
    """Why an http(s) redirect URI's authority is refused (the module docstring's rule); None if it is not."""
    if "@" in netloc:
        return "a redirect URI may not hold user information (a name and @ before the host)"
    match = _AUTHORITY.fullmatch(netloc)
    if match is None:
        return (
            "an http or https redirect URI needs a host of letters, digits, dots, hyphens or underscores "
            "(or a bracketed IPv6 address), then at most a port"
        )
    if match["port"] is not None and int(match["port"]) not in _PORTS:
        return f"a redirect URI's port must be {_PORTS.start} to {_PORTS.stop - 1}"
    return None


def redirect_uri_problem(uri: Any) -> str | None:
    """Why ``uri`` may not be a redirect URI (the module docstring's rule); None if it may.

    Registration applies it to every URI registered, the authorization endpoint to the one requested.
    Each reason is printable ASCII without a quote or backslash: it becomes an OAuth error
    description, which may hold nothing else (RFC 6749 §4.1.2.1).
    """
    if not isinstance(uri, str) or not uri:
        return "a redirect URI must be a non-empty string"
    if len(uri) > MAX_REDIRECT_URI_CHARS:
        return f"a redirect URI may hold at most {MAX_REDIRECT_URI_CHARS} characters"
    if any(ord(c) < 0x21 or ord(c) > 0x7E for c in uri):
        return "a redirect URI must be printable ASCII without spaces"
    if "\\" in uri:
        return "a redirect URI may not hold a backslash (browsers read it as a slash, ending the host)"
    if "#" in uri:
        return "a redirect URI may not have a fragment"
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "a redirect URI must be a URI"
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        if problem := _authority_problem(parts.netloc):
            return problem
        if scheme == "http" and not _is_loopback(parts.hostname):
            return "an http redirect URI must go to a loopback address (127.0.0.1, [::1], localhost)"
        return None
    if _PRIVATE_SCHEME.match(scheme):
        return None
    return (
        "a redirect URI must be https, http to a loopback address, or a private-use scheme named by a "
        "reversed domain (com.example.app:/callback)"
    )


def _without_loopback_port(uri: str) -> str | None:
    """An http loopback redirect URI as written but for its port (``http://127.0.0.1:53682/cb`` gives
    ``http://127.0.0.1/cb``); None for any other URI. Only for URIs that passed the rule."""
    parts = urlsplit(uri)
    match = _AUTHORITY.fullmatch(parts.netloc)
    if parts.scheme != "http" or match is None or not _is_loopback(parts.hostname):
        return None
    host_at = uri.index("//") + 2
    return uri[:host_at] + match["host"] + uri[host_at + len(parts.netloc) :]


def _same_ignoring_loopback_port(registered: str, asked: str) -> bool:
    """Whether two http loopback URIs differ in their port at most (RFC 8252 §7.3): scheme, host, path
    and query compared as written, so ``HTTP://`` or ``localhost`` for ``127.0.0.1`` is another URI."""
    bare = _without_loopback_port(registered)
    return bare is not None and bare == _without_loopback_port(asked)


def client_name_problem(name: Any) -> str | None:
    """Why ``name`` may not be a client's name; None if it may. The room-name rules (``store.names``):
    no invisible or text-reordering character, which could make the consent page's sentence around the
    name say something else; at most ``MAX_CLIENT_NAME_CHARS`` in NFKC form. Reasons are printable
    ASCII (they become an OAuth error description) and never quote the name."""
    if not isinstance(name, str) or not name.strip():
        return "client_name must be a non-empty string"
    hidden = names.invisible_character(name)
    if hidden is not None:
        return (
            f"client_name cannot hold invisible or text-reordering characters ({hidden}): the consent "
            "page would show a name other than the one registered"
        )
    normal = normal_client_name(name)
    if normal != normal.strip():
        return "client_name cannot start or end with a space"
    if len(normal) > MAX_CLIENT_NAME_CHARS:
        return f"client_name may hold at most {MAX_CLIENT_NAME_CHARS} characters"
    return None


def normal_client_name(name: str) -> str:
    """A client name as it is stored and shown: NFKC, as room names (``store.names.normal_room_name``)."""
    return names.normal_room_name(name)


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
        # Only an unambiguous one (with several, the request must name which) that passes today's
        # rule: a client registered before the rule was tightened gets no redirect to a bad URI.
        uris = self.redirect_uris
        return uris[0] if len(uris) == 1 and redirect_uri_problem(uris[0]) is None else None

    def get_allowed_scope(self, scope: str | None) -> str:
        if not scope:
            return " ".join(SCOPES)
        asked = scope.split()
        return " ".join(s for s in dict.fromkeys(asked) if s in SCOPES or s in _EXTRA_SCOPES)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        """Whether a request may send the person to ``redirect_uri``: it passes the registration rule
        itself, and equals a registered URI that passes it too, but for an http loopback URI's port
        (module docstring). authlib asks this before any redirect, an error's included."""
        if redirect_uri_problem(redirect_uri) is not None:
            return False
        return any(
            redirect_uri_problem(uri) is None
            and (uri == redirect_uri or _same_ignoring_loopback_port(uri, redirect_uri))
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
