"""The OAuth 2.1 authorization server, on authlib: what authlib does, and the glue it needs here.

authlib (``authlib.oauth2``) does the protocol: request validation, the authorization code grant and
its redirects, PKCE verification (RFC 7636), the refresh grant, client authentication, bearer token
responses, revocation (RFC 7009), dynamic client registration and its metadata checks (RFC 7591), and
the ``iss`` authorization response parameter (RFC 9207). Its server classes are framework-neutral,
with integrations for Flask and Django only, so this package writes what an integration would:

- **requests and responses** (``requests.py``, ``handle_response``): authlib reads a request through
  ``OAuth2Request``/``JsonRequest`` objects; Starlette's body is read before (it is async, authlib is
  not), and authlib's ``(status, body, headers)`` answers become Starlette responses;
- **storage** (``query_client``, ``save_token`` and the grants' ``save_*``/``query_*`` in ``grants.py``): authlib
  leaves it to the application; here it is the store's OAuth methods (``store/oauth_rows.py``);
- **what authlib does not have** (``grants.py``): resource indicators (RFC 8707: the ``resource`` a token is bound to,
  checked at the authorization and token endpoints), PKCE made mandatory with S256 only (authlib's
  ``CodeChallenge(required=True)`` still lets a confidential client skip it and accepts ``plain``),
  and refresh token reuse detection (a rotated refresh token shown again ends the grant).

Issuer, resource and endpoint URLs depend on the origin a request reached (``resource.public_origin``),
so the per-request origin sits in a context variable that the issuer extension and the registration
endpoint's metadata read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from typing import Any

from authlib.oauth2 import rfc6749, rfc9207
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from starlette.responses import JSONResponse, Response

from .. import store as store_package
from ..settings import Settings
from ..store.base import Store
from ..store.records import User
from .grants import (
    AUTH_METHODS,
    CodeGrant,
    RefreshGrant,
    Registration,
    ResourceIndicator,
    Revocation,
    S256Only,
)
from .limits import MAX_CLIENT_ID_CHARS, MAX_GRANTS_PER_USER
from .models import Client, Code, Grant
from .requests import JsonOAuthRequest, OAuthRequest, Redirect
from .resource import SCOPES, canonical_resource

__all__ = [
    "AUTHORIZE_PATH",
    "REGISTER_PATH",
    "REVOKE_PATH",
    "TOKEN_PATH",
    "AuthorizationServer",
    "authorization_server_metadata",
]

# At the root: the default endpoints the 2025-03-26 MCP revision tells a client to fall back to when it
# has no metadata (and what the SDK's client still does when it refreshes stored tokens after a
# restart, before any discovery), so such a client finds them too.
AUTHORIZE_PATH = "/authorize"
TOKEN_PATH = "/token"
REGISTER_PATH = "/register"
REVOKE_PATH = "/revoke"
_GRANT_TYPES = ["authorization_code", "refresh_token"]
# A client id as one can be: printable ASCII without spaces, at most MAX_CLIENT_ID_CHARS.
_CLIENT_ID = re.compile(rf"[\x21-\x7e]{{1,{MAX_CLIENT_ID_CHARS}}}")

# What an error means, for the errors authlib raises without a description: every refusal says why.
_DESCRIPTIONS = {
    "invalid_request": "A parameter is missing, repeated or malformed.",
    "invalid_client": "The client is not registered here, or did not authenticate as it registered.",
    "invalid_grant": "The code or refresh token is not valid: expired, used already, or not this client's.",
    "unauthorized_client": "This client did not register for this grant type or response type.",
    "unsupported_grant_type": "grant_type must be authorization_code or refresh_token.",
    "unsupported_token_type": "token_type_hint must be access_token or refresh_token.",
    "invalid_scope": "The scope here is mcp (offline_access may be added; alone it grants no MCP access).",
    "unsupported_response_type": "response_type must be code.",
    "access_denied": "The person did not allow access.",
}

# The origin of the request being served (resource.public_origin): issuer and endpoint URLs.
_origin: ContextVar[str] = ContextVar("oauth_origin")


def authorization_server_metadata(origin: str) -> dict[str, Any]:
    """RFC 8414 §2 (with RFC 9207's ``authorization_response_iss_parameter_supported``)."""
    return {
        "issuer": origin,
        "authorization_endpoint": f"{origin}{AUTHORIZE_PATH}",
        "token_endpoint": f"{origin}{TOKEN_PATH}",
        "registration_endpoint": f"{origin}{REGISTER_PATH}",
        "revocation_endpoint": f"{origin}{REVOKE_PATH}",
        "scopes_supported": [*SCOPES, "offline_access"],
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": list(_GRANT_TYPES),
        "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
        "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS),
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
    }


class _Issuer(rfc9207.IssuerParameter):  # type: ignore[misc]
    def get_issuer(self) -> str:
        return _origin.get()


class AuthorizationServer(rfc6749.AuthorizationServer):  # type: ignore[misc]
    """authlib's server over the store; one per app, told the MCP resource path it issues tokens for."""

    def __init__(self, store: Store, settings: Settings, resource_path: str) -> None:
        super().__init__(scopes_supported=[*SCOPES, "offline_access"])
        self.store = store
        self.settings = settings
        self.resource_path = resource_path
        self.register_token_generator(
            "default",
            BearerTokenGenerator(_new_token, _new_token, self._access_seconds),
        )
        self.register_grant(CodeGrant, [S256Only(required=True), ResourceIndicator()])
        self.register_grant(RefreshGrant)
        self.register_endpoint(Revocation)
        self.register_endpoint(Registration(self))
        self._issuer = _Issuer()
        self.register_extension(self._issuer)

    def add_issuer(self, response: Response) -> None:
        """RFC 9207's ``iss`` on an error redirect answered before authlib's own response path."""
        self._issuer.add_issuer_parameter(self, response)

    @contextmanager
    def serving(self, origin: str) -> Iterator[None]:
        """Serve one request reached at ``origin``."""
        token = _origin.set(origin)
        try:
            yield
        finally:
            _origin.reset(token)

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 metadata for the request being served (registration checks client metadata by it)."""
        return authorization_server_metadata(_origin.get())

    @property
    def resource(self) -> str:
        """The MCP endpoint's canonical URI for the request being served (what a grant stores)."""
        uri = f"{_origin.get()}{self.resource_path}"
        return canonical_resource(uri) or uri

    def _access_seconds(self, client: Client, grant_type: str) -> int:
        return self.settings.oauth_access_token_minutes * 60

    def get_authorization_grant(self, request: OAuthRequest) -> Any:
        """authlib's, but an unsupported ``response_type`` is refused without quoting it: authlib's
        description did, and one holding a quote, a backslash or a non-ASCII character is no valid
        description (authlib raises ValueError: a 500). Where the refusal goes is authlib's rule:
        back to the client only for a registered client and a redirect URI it may use."""
        if CodeGrant.check_authorization_endpoint(request):
            return super().get_authorization_grant(request)
        redirect_uri = None
        client = self.query_client(request.payload.client_id) if request.payload.client_id else None
        if client is not None:
            asked = request.payload.redirect_uri
            if not asked:
                redirect_uri = client.get_default_redirect_uri()
            elif client.check_redirect_uri(asked):
                redirect_uri = asked
        raise rfc6749.UnsupportedResponseTypeError(
            None, _DESCRIPTIONS["unsupported_response_type"], redirect_uri=redirect_uri
        )

    # -- what authlib leaves to the application ------------------------------------------------
    def query_client(self, client_id: str) -> Client | None:
        # Only what a client id can be (registration issues printable ASCII): anything else is asked
        # of no store (PostgreSQL refuses a NUL in a query parameter outright: a 500).
        if not isinstance(client_id, str) or not _CLIENT_ID.fullmatch(client_id):
            return None
        found = self.store.oauth_client(client_id)
        return None if found is None else Client(*found)

    def save_token(self, token: dict[str, Any], request: OAuthRequest) -> None:
        user: User = request.user
        client: Client = request.client
        if request.authorization_code is not None:
            code: Code = request.authorization_code
            grant_id, resource = code.record.grant_id, code.record.resource
        else:
            grant: Grant = request.refresh_token
            grant_id, resource = grant.record.id, grant.record.resource
        now = datetime.now(UTC)
        refresh = token.get("refresh_token")
        self.store.save_oauth_tokens(
            grant_id=grant_id,
            user_id=user.id,
            client_id=client.id,
            scope=token.get("scope", ""),
            resource=resource,
            access=(token["access_token"], now + timedelta(seconds=int(token["expires_in"]))),
            refresh=(refresh, now + timedelta(days=self.settings.oauth_refresh_token_days))
            if refresh
            else None,
            max_grants_per_user=MAX_GRANTS_PER_USER,
        )

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        """No signal system here: nothing listens."""

    def create_oauth2_request(self, request: Any) -> OAuthRequest:
        assert isinstance(request, OAuthRequest), "build an OAuthRequest first: the body must be read"
        return request

    def create_json_request(self, request: Any) -> JsonOAuthRequest:
        assert isinstance(request, JsonOAuthRequest), "build a JsonOAuthRequest first"
        return request

    def handle_response(self, status: int, body: Any, headers: Sequence[tuple[str, str]]) -> Response:
        header_map = {name: value for name, value in headers}
        header_map.setdefault("Cache-Control", "no-store")
        if 300 <= status < 400:
            return Redirect(status_code=status, headers=header_map)
        header_map.pop("Content-Type", None)
        if isinstance(body, dict) and "error" in body and not body.get("error_description"):
            body = {**body, "error_description": _DESCRIPTIONS.get(body["error"], "The request was refused.")}
        return JSONResponse(body, status_code=status, headers=header_map)


def _new_token(**_: Any) -> str:
    return store_package.new_token()
