"""The OAuth 2.1 authorization server, on authlib: what authlib does, and the glue it needs here.

authlib (``authlib.oauth2``) does the protocol: request validation, the authorization code grant and
its redirects, PKCE verification (RFC 7636), the refresh grant, client authentication, bearer token
responses, revocation (RFC 7009), dynamic client registration and its metadata checks (RFC 7591), and
the ``iss`` authorization response parameter (RFC 9207). Its server classes are framework-neutral,
with integrations for Flask and Django only, so this module writes what an integration would:

- **requests and responses** (``OAuthRequest``, ``handle_response``): authlib reads a request through
  ``OAuth2Request``/``JsonRequest`` objects; Starlette's body is read before (it is async, authlib is
  not), and authlib's ``(status, body, headers)`` answers become Starlette responses;
- **storage** (``query_client``, ``save_token`` and the grants' ``save_*``/``query_*``): authlib
  leaves it to the application; here it is the store's OAuth methods (``store/oauth_rows.py``);
- **what authlib does not have**: resource indicators (RFC 8707: the ``resource`` a token is bound to,
  checked at the authorization and token endpoints), PKCE made mandatory with S256 only (authlib's
  ``CodeChallenge(required=True)`` still lets a confidential client skip it and accepts ``plain``),
  and refresh token reuse detection (a rotated refresh token shown again ends the grant).

Issuer, resource and endpoint URLs depend on the origin a request reached (``resource.public_origin``),
so the per-request origin sits in a context variable that the issuer extension and the registration
endpoint's metadata read.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from authlib.oauth2 import rfc6749, rfc7009, rfc7591, rfc7636, rfc9207
from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc6749.errors import InvalidGrantError, InvalidRequestError, OAuth2Error
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from joserfc.errors import InvalidClaimError
from starlette.responses import JSONResponse, Response

from .. import store as store_package
from ..settings import Settings
from ..store.base import Store
from ..store.records import OAuthClient, OAuthCode, User
from ..store.rules import new_id
from .limits import (
    AUTHORIZATION_CODE_LIFETIME_SECONDS,
    MAX_CLIENT_NAME_CHARS,
    MAX_GRANTS_PER_USER,
    MAX_REDIRECT_URIS,
    STALE_CLIENT_SECONDS,
)
from .models import Client, Code, Grant, redirect_uri_problem
from .resource import SCOPES, canonical_resource

__all__ = [
    "AUTHORIZE_PATH",
    "REGISTER_PATH",
    "REVOKE_PATH",
    "TOKEN_PATH",
    "AuthorizationServer",
    "InvalidTargetError",
    "OAuthRequest",
    "RegistrationFull",
    "authorization_server_metadata",
]

# At the root: the default endpoints the 2025-03-26 MCP revision tells a client to fall back to when it
# has no metadata (and what the SDK's client still does when it refreshes stored tokens after a
# restart, before any discovery), so such a client finds them too.
AUTHORIZE_PATH = "/authorize"
TOKEN_PATH = "/token"
REGISTER_PATH = "/register"
REVOKE_PATH = "/revoke"
_AUTH_METHODS = ["none", "client_secret_post", "client_secret_basic"]
_GRANT_TYPES = ["authorization_code", "refresh_token"]

# What an error means, for the errors authlib raises without a description: every refusal says why.
_DESCRIPTIONS = {
    "invalid_request": "A parameter is missing, repeated or malformed.",
    "invalid_client": "The client is not registered here, or did not authenticate as it registered.",
    "invalid_grant": "The code or refresh token is not valid: expired, used already, or not this client's.",
    "unauthorized_client": "This client did not register for this grant type or response type.",
    "unsupported_grant_type": "grant_type must be authorization_code or refresh_token.",
    "unsupported_token_type": "token_type_hint must be access_token or refresh_token.",
    "invalid_scope": "The only scope here is mcp (offline_access is accepted and changes nothing).",
    "access_denied": "The person did not allow access.",
}

# The origin of the request being served (resource.public_origin): issuer and endpoint URLs.
_origin: ContextVar[str] = ContextVar("oauth_origin")


class InvalidTargetError(OAuth2Error):  # type: ignore[misc]
    """RFC 8707 §2: the ``resource`` is not one this server issues tokens for."""

    error = "invalid_target"


class RegistrationFull(OAuth2Error):  # type: ignore[misc]
    """Every client slot is taken (setting ``oauth_max_clients``)."""

    error = "temporarily_unavailable"
    status_code = 503


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
        "token_endpoint_auth_methods_supported": list(_AUTH_METHODS),
        "revocation_endpoint_auth_methods_supported": list(_AUTH_METHODS),
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
    }


# -- requests and responses ------------------------------------------------------------------------


class _Payload(rfc6749.OAuth2Payload):  # type: ignore[misc]
    def __init__(self, items: Sequence[tuple[str, str]]) -> None:
        self._datalist: defaultdict[str, list[str]] = defaultdict(list)
        for key, value in items:
            self._datalist[key].append(value)
        self._data = {key: values[0] for key, values in self._datalist.items()}

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> defaultdict[str, list[str]]:
        return self._datalist


class OAuthRequest(rfc6749.OAuth2Request):  # type: ignore[misc]
    """An authorization or token request, its body already read: the payload is the query (the
    authorization endpoint) or the form (token and revocation endpoints)."""

    def __init__(
        self,
        method: str,
        uri: str,
        headers: Any,
        *,
        query: Sequence[tuple[str, str]],
        form: Sequence[tuple[str, str]] = (),
        payload_from_form: bool = False,
    ) -> None:
        super().__init__(method, uri, headers=headers)
        self._args = _Payload(query).data
        self._form = _Payload(form).data
        self.payload = _Payload(form if payload_from_form else query)
        self.resource: str | None = None  # RFC 8707, set once checked

    @property
    def args(self) -> dict[str, str]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


class _JsonPayload(rfc6749.JsonPayload):  # type: ignore[misc]
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    @property
    def data(self) -> dict[str, Any]:
        return self._data


class JsonOAuthRequest(rfc6749.JsonRequest):  # type: ignore[misc]
    """A registration request, its JSON body already parsed."""

    def __init__(self, method: str, uri: str, headers: Any, data: dict[str, Any]) -> None:
        super().__init__(method, uri, headers)
        self.payload = _JsonPayload(data)


# -- grants and endpoints --------------------------------------------------------------------------


def _checked_resource(request: OAuthRequest, expected: str, values: list[str]) -> str:
    """The one ``resource`` asked for, which must be ``expected``; absent means ``expected``.

    Raises:
        InvalidTargetError: several resources, or one this server issues no tokens for.
    """
    if not values:
        return expected
    if len(values) > 1:
        raise InvalidTargetError("Ask for one resource: this server issues tokens for its MCP endpoint only.")
    if canonical_resource(values[0]) != expected:
        raise InvalidTargetError(f"Tokens here are for {expected} only.")
    return expected


class _S256Only(rfc7636.CodeChallenge):  # type: ignore[misc]
    """PKCE for every client, S256 only (OAuth 2.1 §4.1.1; the MCP specification requires S256)."""

    SUPPORTED_CODE_CHALLENGE_METHOD: ClassVar[list[str]] = ["S256"]
    DEFAULT_CODE_CHALLENGE_METHOD = "S256"

    def __call__(self, grant: Any) -> None:
        super().__call__(grant)
        grant.register_hook("after_validate_authorization_request_payload", self.require_challenge)

    def require_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: send code_challenge and code_challenge_method=S256.")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256.")


class _ResourceIndicator:
    """RFC 8707 at both endpoints: the authorization request names the MCP resource (or nothing,
    which means it); a token request that names one must name the code's."""

    def __call__(self, grant: Any) -> None:
        grant.register_hook("after_validate_authorization_request_payload", self.at_authorization)
        grant.register_hook("after_validate_token_request", self.at_token)

    def at_authorization(self, grant: Any, redirect_uri: str) -> None:
        request: OAuthRequest = grant.request
        request.resource = _checked_resource(
            request, grant.server.resource, request.payload.datalist.get("resource", [])
        )

    def at_token(self, grant: Any, result: Any) -> None:
        request: OAuthRequest = grant.request
        code: Code = request.authorization_code
        _checked_resource(request, code.record.resource, _form_list(request, "resource"))


def _form_list(request: OAuthRequest, key: str) -> list[str]:
    return list(request.payload.datalist.get(key, []))


class _CodeGrant(grants.AuthorizationCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS: ClassVar[list[str]] = list(_AUTH_METHODS)

    @property
    def store(self) -> Store:
        server: AuthorizationServer = self.server
        return server.store

    def save_authorization_code(self, code: str, request: OAuthRequest) -> None:
        client: Client = request.client
        user: User = request.user
        self.store.save_oauth_code(
            code,
            OAuthCode(
                grant_id=new_id(),
                client_id=client.id,
                user_id=user.id,
                redirect_uri=request.payload.redirect_uri or "",
                scope=request.scope,
                resource=request.resource or self.server.resource,
                code_challenge=request.payload.data["code_challenge"],
                code_challenge_method="S256",
                expires_at=datetime.now(UTC) + timedelta(seconds=AUTHORIZATION_CODE_LIFETIME_SECONDS),
            ),
        )

    def query_authorization_code(self, code: str, client: Client) -> Code | None:
        # Taken (marked used) here, in one transaction, rather than deleted after the tokens are
        # issued as authlib's order would: two exchanges racing each other cannot both win, and a
        # code that failed a later check (verifier, redirect URI) stays spent.
        record = self.store.take_oauth_code(code, client.id)
        return None if record is None else Code(record)

    def delete_authorization_code(self, authorization_code: Code) -> None:
        """Nothing left to do: ``query_authorization_code`` spent the code."""

    def authenticate_user(self, authorization_code: Code) -> User | None:
        user = self.store.get_user(authorization_code.record.user_id)
        return user if user is not None and user.active else None


class _RefreshGrant(grants.RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS: ClassVar[list[str]] = list(_AUTH_METHODS)
    INCLUDE_NEW_REFRESH_TOKEN = True  # rotation (OAuth 2.1 §4.3.1): every refresh gives a new one

    @property
    def store(self) -> Store:
        server: AuthorizationServer = self.server
        return server.store

    def validate_token_request(self) -> None:
        super().validate_token_request()
        grant: Grant = self.request.refresh_token
        _checked_resource(self.request, grant.record.resource, _form_list(self.request, "resource"))

    def authenticate_refresh_token(self, refresh_token: str) -> Grant | None:
        record = self.store.oauth_grant_by_refresh(refresh_token)
        return None if record is None else Grant(record)

    def authenticate_user(self, refresh_token: Grant) -> User | None:
        user = self.store.get_user(refresh_token.record.user_id)
        return user if user is not None and user.active else None

    def revoke_old_credential(self, refresh_token: Grant) -> None:
        if not self.store.rotate_oauth_tokens(refresh_token.record.token_id):
            # Another refresh replaced this pair a moment ago with the same token: one of the two is
            # a replay, and which cannot be told, so the grant ends (tokens just issued included).
            self.store.revoke_oauth_grant(refresh_token.record.id)
            raise InvalidGrantError("This refresh token was already used; the authorization is revoked.")


class _Presented:
    """A token presented for revocation; the store checks it belongs to the client."""

    def __init__(self, value: str) -> None:
        self.value = value

    def check_client(self, client: Client) -> bool:
        return True


class _Revocation(rfc7009.RevocationEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS: ClassVar[list[str]] = list(_AUTH_METHODS)

    def query_token(self, token_string: str, token_type_hint: str | None) -> _Presented:
        return _Presented(token_string)

    def revoke_token(self, token: _Presented, request: OAuthRequest) -> None:
        # RFC 7009 §2.2: an unknown or foreign token is answered 200 all the same.
        server: AuthorizationServer = self.server
        server.store.revoke_oauth_token(token.value, request.client.id)


class _ClientClaims(rfc7591.ClientMetadataClaims):  # type: ignore[misc]
    """authlib's metadata checks, with ours on redirect URIs and the name (shown on the consent page)."""

    def validate_redirect_uris(self) -> None:
        uris = self.get("redirect_uris")
        if not isinstance(uris, list) or not uris:
            raise rfc7591.InvalidRedirectURIError("redirect_uris must list at least one redirect URI.")
        if len(uris) > MAX_REDIRECT_URIS:
            raise rfc7591.InvalidRedirectURIError(f"At most {MAX_REDIRECT_URIS} redirect URIs.")
        for uri in uris:
            if problem := redirect_uri_problem(uri):
                raise rfc7591.InvalidRedirectURIError(f"{problem}.")

    def validate_client_name(self) -> None:
        name = self.get("client_name")
        if name is None:
            return
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_CLIENT_NAME_CHARS:
            raise InvalidClaimError("client_name")
        if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in name):
            raise InvalidClaimError("client_name")


class _Registration(rfc7591.ClientRegistrationEndpoint):  # type: ignore[misc]
    def __init__(self, server: AuthorizationServer) -> None:
        super().__init__(server, claims_classes=[_ClientClaims])

    def authenticate_token(self, request: JsonOAuthRequest) -> bool:
        # Open registration (RFC 7591 §3, as MCP clients expect): a client gets nothing until a person
        # signs in and consents; the address's registration budget and oauth_max_clients bound it.
        return True

    def get_server_metadata(self) -> dict[str, Any]:
        return authorization_server_metadata(_origin.get())

    def resolve_public_key(self, request: JsonOAuthRequest) -> None:
        return None

    def generate_client_info(self, request: JsonOAuthRequest) -> dict[str, Any]:
        info: dict[str, Any] = super().generate_client_info(request)
        if request.payload.data.get("token_endpoint_auth_method") == "none":
            # A public client has no secret to keep; issuing one would only invite it to be embedded.
            info.pop("client_secret", None)
            info.pop("client_secret_expires_at", None)
        return info

    def save_client(
        self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: JsonOAuthRequest
    ) -> Client:
        server: AuthorizationServer = self.server
        metadata = {**client_metadata, "client_id": client_info["client_id"]}
        record = OAuthClient(
            id=client_info["client_id"],
            name=str(client_metadata.get("client_name") or "An unnamed MCP client"),
            metadata=json.dumps(metadata, separators=(",", ":")),
            has_secret="client_secret" in client_info,
            created_at=datetime.now(UTC),
        )
        stale_before = record.created_at - timedelta(seconds=STALE_CLIENT_SECONDS)
        saved = server.store.register_oauth_client(
            record,
            client_info.get("client_secret"),
            max_clients=server.settings.oauth_max_clients,
            stale_before=stale_before,
        )
        if not saved:
            raise RegistrationFull("Too many clients are registered here right now; try again later.")
        return Client(record, None)


class _Issuer(rfc9207.IssuerParameter):  # type: ignore[misc]
    def get_issuer(self) -> str:
        return _origin.get()


class _Redirect(Response):
    """A 302 whose ``location`` authlib's issuer extension may rewrite."""

    @property
    def location(self) -> str:
        return self.headers["location"]

    @location.setter
    def location(self, value: str) -> None:
        self.headers["location"] = value


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
        self.register_grant(_CodeGrant, [_S256Only(required=True), _ResourceIndicator()])
        self.register_grant(_RefreshGrant)
        self.register_endpoint(_Revocation)
        self.register_endpoint(_Registration(self))
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

    @property
    def resource(self) -> str:
        """The MCP endpoint's canonical URI for the request being served."""
        return f"{_origin.get()}{self.resource_path}"

    def _access_seconds(self, client: Client, grant_type: str) -> int:
        return self.settings.oauth_access_token_minutes * 60

    # -- what authlib leaves to the application ------------------------------------------------
    def query_client(self, client_id: str) -> Client | None:
        if not isinstance(client_id, str) or not client_id or len(client_id) > 200:
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
            return _Redirect(status_code=status, headers=header_map)
        header_map.pop("Content-Type", None)
        if isinstance(body, dict) and "error" in body and not body.get("error_description"):
            body = {**body, "error_description": _DESCRIPTIONS.get(body["error"], "The request was refused.")}
        return JSONResponse(body, status_code=status, headers=header_map)


def _new_token(**_: Any) -> str:
    return store_package.new_token()
