"""The authorization server's HTTP routes: metadata, authorization (sign-in and consent), token,
registration, revocation.

==========================================================  ======  =========================================
path                                                        method  what
==========================================================  ======  =========================================
``/.well-known/oauth-protected-resource[/api/v1/mcp]``      GET     RFC 9728 metadata of the MCP endpoint
``/.well-known/oauth-authorization-server``                 GET     RFC 8414 metadata
``/authorize``                                        GET     the sign-in page (the request checked)
``/authorize``                                        POST    sign-in, then consent; the redirect
``/token``                                            POST    code + verifier, or refresh: tokens
``/register``                                         POST    RFC 7591 dynamic client registration
``/revoke``                                           POST    RFC 7009 revocation
==========================================================  ======  =========================================

The person signs in on our page with their workspace account, by the same check as
``POST /api/v1/login`` (``Services.sign_in``: a local password, or a Rocket.Chat one when Rocket.Chat
sign-in is on) and from the same per-address budget; no session cookie is set. Signing in shows the
consent page, whose form carries a *consent ticket* for the person and the exact authorization
request, valid ``CONSENT_LIFETIME_SECONDS`` and used once (``tickets.py``: kept in the Redis of
``rate_limit_storage`` when there is one, so any server process may answer the consent). Both forms
are refused unless the browser says it posts from this site (``Sec-Fetch-Site: same-origin``, and
``Origin`` when sent), which with the ticket stops cross-site requests from signing someone in or
consenting for them.

An authorization request that names no registered client, or a redirect URI that fails the
registration rule or matches no registered one (``models.py``: a backslash, user information, a bad
port, another scheme case...), gets an error page, never a redirect (RFC 6749 §4.1.2.1); any other
error goes back to the client's redirect URI as the protocol says. No parameter's text is quoted in
an error description (authlib refuses a quote, a backslash or non-ASCII there, which was a 500).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qsl, urlsplit

from authlib.oauth2.rfc6749.errors import InsecureTransportError, OAuth2Error
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .. import errors
from ..origins import normalize_origin
from ..rest import lone_surrogate_at
from ..security_headers import build_csp
from ..services import Services
from ..store.base import StorageFailure
from ..store.records import User
from .limits import (
    MAX_AUTHORIZATION_QUERY_CHARS,
    MAX_REGISTRATION_BODY_BYTES,
    MAX_TOKEN_BODY_BYTES,
    REGISTRATION_RATE_LIMIT,
    SIGN_IN_RATE_LIMIT,
    TOKEN_RATE_LIMIT,
)
from .models import Client, redirect_uri_problem
from .pages import ConsentView, consent_page, error_page, sign_in_page
from .requests import JsonOAuthRequest, OAuthRequest
from .resource import PROTECTED_RESOURCE_PATH, protected_resource_metadata, public_origin
from .server import (
    AUTHORIZE_PATH,
    REGISTER_PATH,
    REVOKE_PATH,
    TOKEN_PATH,
    AuthorizationServer,
    authorization_server_metadata,
)
from .tickets import ConsentTickets, TicketsUnavailable, consent_tickets

__all__ = ["AUTHORIZATION_SERVER_METADATA_PATH", "OAuthEndpoints"]

AUTHORIZATION_SERVER_METADATA_PATH = "/.well-known/oauth-authorization-server"
# The login route's rate-limit key: the sign-in page spends the same budget (limits.SIGN_IN_RATE_LIMIT).
_SIGN_IN_RATE_KEY = "login"
_SIGN_IN_FAILED = "Incorrect username or password."
# What no username holds (the login route's rule, routes/params.py): C0 controls and DEL.
_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")
_SIGN_IN_AGAIN = "That sign-in has expired or was used already. Sign in again."
_NEEDS_HTTPS = (
    "OAuth needs this site to be served over https (the setting site_url), or on a loopback address."
)
_NOT_FROM_THIS_SITE = "This form was not sent from this site's own page."
# Seconds a person is asked to wait when the ticket store (Redis) does not answer: as often as the
# rate limiter tries Redis again (ratelimit.REDIS_RETRY_INTERVAL_SECONDS).
_TICKETS_RETRY_AFTER_SECONDS = 5
_TICKETS_DOWN = (
    "Signing in cannot go on right now (the server's shared store did not answer). Try again shortly."
)
# Public documents and token endpoints answer any origin: they take no cookie or other ambient
# credential, so a page elsewhere (a browser-based MCP client) gains nothing it could not send itself.
_CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, MCP-Protocol-Version",
    "Access-Control-Max-Age": "600",
}
_PAGE_HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "same-origin"}

_log = logging.getLogger(__name__)
Endpoint = Callable[[Request], Awaitable[Response]]


def _oauth_error(
    status: int, error: str, description: str, headers: dict[str, str] | None = None
) -> Response:
    body = {"error": error, "error_description": description}
    return JSONResponse(
        body, status_code=status, headers={"Cache-Control": "no-store", **_CORS, **(headers or {})}
    )


def _form_pairs(body: bytes) -> list[tuple[str, str]] | None:
    """A form body's pairs; None when it is no UTF-8 ``application/x-www-form-urlencoded`` text."""
    try:
        return parse_qsl(body.decode("utf-8"), keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError):
        return None


def _csp_source(redirect_uri: str) -> str:
    """The CSP source of a redirect URI's destination (``form-action`` governs the redirect after the
    consent form, in Chromium): its origin, or its private-use scheme."""
    parts = urlsplit(redirect_uri)
    if parts.scheme in ("http", "https"):
        return f"{parts.scheme}://{parts.netloc}"
    return f"{parts.scheme}:"


class OAuthEndpoints:
    """The routes above for one app; ``resource_path`` is the MCP endpoint's path."""

    def __init__(self, services: Services, resource_path: str) -> None:
        self.services = services
        self.resource_path = resource_path
        self.server = AuthorizationServer(services.store, services.settings, resource_path)
        self.tickets: ConsentTickets = consent_tickets(services.settings.rate_limit_storage)

    async def aclose(self) -> None:
        """Close the ticket store's connections (the app's lifespan does, at shutdown)."""
        await self.tickets.aclose()

    @property
    def enabled(self) -> bool:
        settings = self.services.settings
        return settings.mcp_enabled and settings.mcp_oauth_enabled

    def routes(self) -> list[BaseRoute]:
        public = ["GET", "OPTIONS"]
        posted = ["POST", "OPTIONS"]
        return [
            Route(PROTECTED_RESOURCE_PATH, self._guard(self.resource_metadata), methods=public),
            Route(
                PROTECTED_RESOURCE_PATH + self.resource_path,
                self._guard(self.resource_metadata),
                methods=public,
            ),
            Route(AUTHORIZATION_SERVER_METADATA_PATH, self._guard(self.server_metadata), methods=public),
            Route(AUTHORIZE_PATH, self._guard(self.authorize), methods=["GET", "POST"]),
            Route(TOKEN_PATH, self._guard(self.token), methods=posted),
            Route(REGISTER_PATH, self._guard(self.register), methods=posted),
            Route(REVOKE_PATH, self._guard(self.revoke), methods=posted),
        ]

    def _guard(self, endpoint: Endpoint) -> Endpoint:
        """404 while OAuth is off; CORS preflights answered; no exception reaches the client."""

        async def guarded(request: Request) -> Response:
            if not self.enabled:
                return JSONResponse({"error": "not_found", "error_description": "OAuth is off here."}, 404)
            if request.method == "OPTIONS":
                return Response(status_code=204, headers=_CORS)
            origin = public_origin(self.services.settings, request)
            with self.server.serving(origin):
                try:
                    return await endpoint(request)
                except errors.TooManyRequests as limited:
                    retry = {k: v for k, v in limited.headers.items() if k.lower() == "retry-after"}
                    if request.url.path == AUTHORIZE_PATH:
                        page = error_page("Too many attempts", f"{limited.message} Try again in a minute.")
                        return HTMLResponse(page, 429, headers={**_PAGE_HEADERS, **retry})
                    return _oauth_error(429, "temporarily_unavailable", limited.message, retry)
                except InsecureTransportError:
                    # OAuth 2.1 §1.5: TLS, except for loopback. authlib refuses plain http elsewhere.
                    if request.url.path == AUTHORIZE_PATH:
                        return self._error_page(400, _NEEDS_HTTPS)
                    return _oauth_error(400, "insecure_transport", _NEEDS_HTTPS)
                except TicketsUnavailable as exc:  # only the sign-in and consent forms use tickets
                    _log.warning("%s (on %s)", exc, request.url.path)
                    page = error_page("Try again shortly", _TICKETS_DOWN)
                    retry = {"Retry-After": str(_TICKETS_RETRY_AFTER_SECONDS)}
                    return HTMLResponse(page, 503, headers={**_PAGE_HEADERS, **retry})
                except StorageFailure:
                    _log.exception("storage failure on %s", request.url.path)
                    return _oauth_error(
                        503, "temporarily_unavailable", errors.ServiceUnavailable.default_message
                    )

        return guarded

    # -- metadata --------------------------------------------------------------------------------
    async def resource_metadata(self, request: Request) -> Response:
        origin = public_origin(self.services.settings, request)
        return JSONResponse(protected_resource_metadata(origin, self.resource_path), headers=_CORS)

    async def server_metadata(self, request: Request) -> Response:
        origin = public_origin(self.services.settings, request)
        return JSONResponse(authorization_server_metadata(origin), headers=_CORS)

    # -- authorization: sign-in and consent ------------------------------------------------------
    async def authorize(self, request: Request) -> Response:
        settings = self.services.settings
        origin = public_origin(settings, request)
        query_string = request.scope.get("query_string", b"").decode("latin-1")
        if len(query_string) > MAX_AUTHORIZATION_QUERY_CHARS:
            return self._error_page(400, "This sign-in link is too long.")
        query = _form_pairs(query_string.encode("latin-1"))
        if query is None:
            return self._error_page(400, "This sign-in link is malformed.")
        form: list[tuple[str, str]] = []
        if request.method == "POST":
            if not self._posted_from_here(request, origin):
                return self._error_page(403, _NOT_FROM_THIS_SITE)
            posted = _form_pairs(await request.body())
            if posted is None:
                return self._error_page(400, "This form was sent malformed.")
            form = posted
        uri = f"{origin}{AUTHORIZE_PATH}" + (f"?{query_string}" if query_string else "")
        oauth_request = OAuthRequest(request.method, uri, request.headers, query=query, form=form)
        try:
            grant = self.server.get_consent_grant(oauth_request, end_user=None)
        except OAuth2Error as error:
            # A registered client and a redirect URI it may use (Client.check_redirect_uri, which
            # applies the registration rule to it): tell the client. Anything else: our page.
            if error.redirect_uri and redirect_uri_problem(error.redirect_uri) is None:
                response: Response = self.server.handle_error_response(oauth_request, error)
                self.server.add_issuer(response)
                return response
            return self._error_page(400, error.description or "This sign-in link is not valid.")
        client: Client = oauth_request.client
        view = ConsentView(
            action=f"{AUTHORIZE_PATH}?{query_string}",
            client_name=client.name,
            redirect_uri=grant.redirect_uri,
            rocketchat=self.services.rocketchat_sign_in is not None,
        )
        fields = dict(form)
        step = fields.get("step")
        if request.method == "GET" or step not in ("sign-in", "consent"):
            return self._page(sign_in_page(view))
        digest = hashlib.sha256(f"{client.id}\x1f{query_string}".encode()).hexdigest()
        if step == "sign-in":
            return await self._sign_in(request, view, fields, digest)
        user = await self._ticket_user(fields.get("ticket", ""), digest)
        if user is None:
            return self._page(sign_in_page(view, error=_SIGN_IN_AGAIN), 400)
        allowed = fields.get("decision") == "allow"
        response = self.server.create_authorization_response(
            oauth_request, grant_user=user if allowed else None, grant=grant
        )
        response.headers.update(_PAGE_HEADERS)
        return response

    async def _sign_in(
        self, request: Request, view: ConsentView, fields: dict[str, str], digest: str
    ) -> Response:
        services = self.services
        host = services.client_address(request)
        await services.check_rate_limit(
            _SIGN_IN_RATE_KEY, services.rate_limit_key(None, host), SIGN_IN_RATE_LIMIT
        )
        username = fields.get("username", "").strip().removeprefix("@")[:100]
        password = fields.get("password", "")[:1024]
        # As the login route's parameter rule: no name holds a control character, so none is looked up
        # (PostgreSQL refuses a NUL in a query parameter outright: a 500).
        well_formed = bool(username and password) and not _CONTROL_CHARACTER.search(username)
        user = await services.sign_in(username, password) if well_formed else None
        if user is None:
            # 200: the page again, with the reason; a 401 would ask for HTTP authentication it has none of.
            return self._page(sign_in_page(view, username=username, error=_SIGN_IN_FAILED))
        ticket = await self.tickets.issue(user.id, digest)
        page = consent_page(view, person=user.name or user.username, username=user.username, ticket=ticket)
        # The consent form's answer is a redirect to the client: form-action must allow it there.
        csp = build_csp(extra={"form-action": [_csp_source(view.redirect_uri)]})
        return self._page(page, headers={"Content-Security-Policy": csp})

    async def _ticket_user(self, ticket: str, digest: str) -> User | None:
        user_id = await self.tickets.redeem(ticket, digest) if ticket else None
        user = self.services.store.get_user(user_id) if user_id else None
        return user if user is not None and user.active else None

    @staticmethod
    def _posted_from_here(request: Request, origin: str) -> bool:
        """Whether the browser says this POST comes from a page of this site (module docstring)."""
        site = request.headers.get("sec-fetch-site")
        if site is not None and site != "same-origin":
            return False
        sent = request.headers.get("origin")
        if sent is None:
            return site == "same-origin"
        own = {
            normalize_origin(origin),
            normalize_origin(f"{request.url.scheme}://{request.headers.get('host', '')}"),
        }
        return normalize_origin(sent) in own - {None}

    @staticmethod
    def _page(html: str, status: int = 200, *, headers: dict[str, str] | None = None) -> Response:
        return HTMLResponse(html, status, headers={**_PAGE_HEADERS, **(headers or {})})

    def _error_page(self, status: int, description: str) -> Response:
        return self._page(error_page("Cannot connect", description), status)

    # -- token, registration, revocation ---------------------------------------------------------
    async def _form_request(self, request: Request, path: str) -> OAuthRequest | Response:
        services = self.services
        host = services.client_address(request)
        await services.check_rate_limit(f"oauth{path}", services.rate_limit_key(None, host), TOKEN_RATE_LIMIT)
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/x-www-form-urlencoded":
            return _oauth_error(
                400, "invalid_request", "Send the parameters as application/x-www-form-urlencoded."
            )
        body = await request.body()
        if len(body) > MAX_TOKEN_BODY_BYTES:
            return _oauth_error(
                413, "invalid_request", f"The body may hold at most {MAX_TOKEN_BODY_BYTES} bytes."
            )
        form = _form_pairs(body)
        if form is None:
            return _oauth_error(400, "invalid_request", "The body is not form-encoded UTF-8 text.")
        origin = public_origin(services.settings, request)
        return OAuthRequest(
            "POST", f"{origin}{path}", request.headers, query=[], form=form, payload_from_form=True
        )

    async def token(self, request: Request) -> Response:
        built = await self._form_request(request, TOKEN_PATH)
        if isinstance(built, Response):
            return built
        return self._cors(self.server.create_token_response(built))

    async def revoke(self, request: Request) -> Response:
        built = await self._form_request(request, REVOKE_PATH)
        if isinstance(built, Response):
            return built
        return self._cors(self.server.create_endpoint_response("revocation", built))

    async def register(self, request: Request) -> Response:
        services = self.services
        host = services.client_address(request)
        await services.check_rate_limit(
            "oauth/register", services.rate_limit_key(None, host), REGISTRATION_RATE_LIMIT
        )
        body = await request.body()
        if len(body) > MAX_REGISTRATION_BODY_BYTES:
            return _oauth_error(
                413,
                "invalid_client_metadata",
                f"Client metadata may hold at most {MAX_REGISTRATION_BODY_BYTES} bytes.",
            )
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            return _oauth_error(400, "invalid_client_metadata", "The body is not JSON.")
        if not isinstance(data, dict) or not data:
            return _oauth_error(
                400, "invalid_client_metadata", "The body must be a JSON object of client metadata."
            )
        if lone_surrogate_at(data) is not None:
            # JSON may spell one (a bare \ud800) but it has no UTF-8 form: the answer, which repeats
            # the metadata, could not be encoded (a 500), nor could the store keep it.
            return _oauth_error(
                400,
                "invalid_client_metadata",
                "The client metadata holds a lone surrogate, which is no Unicode text.",
            )
        origin = public_origin(services.settings, request)
        json_request = JsonOAuthRequest("POST", f"{origin}{REGISTER_PATH}", request.headers, data)
        return self._cors(self.server.create_endpoint_response("client_registration", json_request))

    @staticmethod
    def _cors(response: Response) -> Response:
        response.headers.update(_CORS)
        return response
