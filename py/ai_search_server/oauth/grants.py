"""The grants and endpoints authlib runs, told where our store is: the authorization code grant with
PKCE (S256, required of every client) and the resource indicator (RFC 8707), the refresh grant with
rotation and reuse detection, revocation (RFC 7009) and dynamic registration (RFC 7591).

Each class reads its server (``AuthorizationServer`` in server.py) as ``self.server``: its ``store``,
``settings``, ``resource`` and ``metadata()``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from authlib.oauth2 import rfc7009, rfc7591, rfc7636
from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc6749.errors import InvalidGrantError, InvalidRequestError, OAuth2Error

from ..store.base import Store
from ..store.records import OAuthClient, OAuthCode, User
from ..store.rules import new_id
from .limits import AUTHORIZATION_CODE_LIFETIME_SECONDS, MAX_REDIRECT_URIS, STALE_CLIENT_SECONDS
from .models import Client, Code, Grant, client_name_problem, normal_client_name, redirect_uri_problem
from .requests import JsonOAuthRequest, OAuthRequest
from .resource import canonical_resource

__all__ = [
    "AUTH_METHODS",
    "CodeGrant",
    "InvalidTargetError",
    "RefreshGrant",
    "Registration",
    "RegistrationFull",
    "ResourceIndicator",
    "Revocation",
    "S256Only",
]

# How clients may authenticate at the token and revocation endpoints: public clients by none.
AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")


class InvalidTargetError(OAuth2Error):  # type: ignore[misc]
    """RFC 8707 §2: the ``resource`` is not one this server issues tokens for."""

    error = "invalid_target"


class RegistrationFull(OAuth2Error):  # type: ignore[misc]
    """Every client slot is taken (setting ``oauth_max_clients``)."""

    error = "temporarily_unavailable"
    status_code = 503


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


class S256Only(rfc7636.CodeChallenge):  # type: ignore[misc]
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


class ResourceIndicator:
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


class CodeGrant(grants.AuthorizationCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS: ClassVar[list[str]] = list(AUTH_METHODS)

    @staticmethod
    def validate_authorization_redirect_uri(request: OAuthRequest, client: Client) -> str:
        """authlib's check (``client.check_redirect_uri``, else the one registered URI), with a refusal
        that says which rule failed and never quotes the URI: authlib's did, and an OAuth error
        description may hold only printable ASCII without a quote or backslash (RFC 6749 §4.1.2.1), so
        a URI holding one was a 500."""
        asked = request.payload.redirect_uri
        if not asked:
            default = client.get_default_redirect_uri()
            if not default:
                raise InvalidRequestError("Missing 'redirect_uri' in request.")
            return default
        if client.check_redirect_uri(asked):
            return str(asked)
        problem = redirect_uri_problem(asked)
        raise InvalidRequestError(
            f"This redirect_uri is not allowed: {problem}."
            if problem
            else "This redirect_uri is not one the client registered (only an http loopback one's port may differ)."
        )

    @property
    def store(self) -> Store:
        store: Store = self.server.store
        return store

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


class RefreshGrant(grants.RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS: ClassVar[list[str]] = list(AUTH_METHODS)
    INCLUDE_NEW_REFRESH_TOKEN = True  # rotation (OAuth 2.1 §4.3.1): every refresh gives a new one

    @property
    def store(self) -> Store:
        store: Store = self.server.store
        return store

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


class Revocation(rfc7009.RevocationEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS: ClassVar[list[str]] = list(AUTH_METHODS)

    def query_token(self, token_string: str, token_type_hint: str | None) -> _Presented:
        return _Presented(token_string)

    def revoke_token(self, token: _Presented, request: OAuthRequest) -> None:
        # RFC 7009 §2.2: an unknown or foreign token is answered 200 all the same.
        self.server.store.revoke_oauth_token(token.value, request.client.id)


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
        if name is not None and (problem := client_name_problem(name)):
            raise rfc7591.InvalidClientMetadataError(f"{problem}.")


class Registration(rfc7591.ClientRegistrationEndpoint):  # type: ignore[misc]
    def __init__(self, server: Any) -> None:
        super().__init__(server, claims_classes=[_ClientClaims])

    def authenticate_token(self, request: JsonOAuthRequest) -> bool:
        # Open registration (RFC 7591 §3, as MCP clients expect): a client gets nothing until a person
        # signs in and consents; the address's registration budget and oauth_max_clients bound it.
        return True

    def get_server_metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = self.server.metadata()
        return metadata

    def extract_client_metadata(self, request: JsonOAuthRequest) -> dict[str, Any]:
        """authlib's checked metadata, the name in the form it is stored and shown (NFKC), so the
        registration's answer says what the consent page will."""
        metadata: dict[str, Any] = super().extract_client_metadata(request)
        if isinstance(metadata.get("client_name"), str):
            metadata["client_name"] = normal_client_name(metadata["client_name"])
        return metadata

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
        server = self.server
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
