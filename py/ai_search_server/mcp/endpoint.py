"""The MCP endpoint at ``/api/v1/mcp``: JSON-RPC over Streamable HTTP, stateless, JSON answers only.

A POST passes these gates, in order (upstream-mcp.md §8.1–8.2; the first refusal answers):

====  ============================================================  ======  ======
step  gate                                                          status  code
====  ============================================================  ======  ======
1     ``X-User-Id`` and ``X-Auth-Token``, or a bearer token         401     -32001
2     the ``mcp_enabled`` setting on                                404     -32601
3     ``Origin`` absent or allowed (DNS rebinding, §8.4)            403     -32000
4     ``MCP-Protocol-Version`` absent or one we speak               400     -32022
5     ``Accept`` absent or admitting application/json               406     -32600
6     a PAT of that user, or an OAuth token for this endpoint       401     -32001
6b    an OAuth token granted the ``mcp`` scope                      403     -32000
7     at most 60 requests a minute per user (X-RateLimit-* kept)    429     -32000
8     the ``access-mcp`` permission                                 403     -32000
9     the body is JSON (checked only now, after the PAT)            400     -32700
10    a valid request, or a batch of 1–20 at 2025-03-26 only        400     -32600
11    the encoded answer at most 5 MiB                              413     -32000
====  ============================================================  ======  ======

A 401 carries ``WWW-Authenticate: Bearer resource_metadata="…"`` when OAuth is on (``oauth/``): where
an OAuth client finds the authorization server (RFC 9728 §5.1), with ``error="invalid_token"`` when a
bearer token was sent and refused. A bearer token (``Authorization: Bearer``) counts only when the
``X-User-Id``/``X-Auth-Token`` pair is absent; it must be an OAuth access token whose grant names this
endpoint as its resource (RFC 8707 audience), so a token issued for another resource is refused, and
that granted the ``mcp`` scope: a token granted ``offline_access`` alone (a client may ask for that)
is answered 403 with ``WWW-Authenticate: Bearer error="insufficient_scope", …, scope="mcp"`` (RFC 6750
§3.1; the MCP authorization specification's runtime scope challenge), so the client asks again.

then the answer with its status (200; at 2026-07-28 a malformed request is 400 and an unknown method
404, and a mirrored header contradicting the body is 400 at any revision: ``envelope.py``), or 202
without a body when there is nothing to answer (notifications, client responses). GET and DELETE pass steps 1–4, then 6 (any token kind, as upstream's route auth)
and 8, and answer 405 with ``Allow: POST``: we open no server-to-client stream and keep no session.

In the app, ``origin_middleware.OriginMiddleware`` checks ``Host`` (421) and ``Origin`` (403) before
any route, so there a bad Origin is refused ahead of step 1; step 3 keeps the endpoint safe wherever
it is mounted.

Differences from the upstream, on purpose: its route-level authentication ran before step 2, so
there a disabled endpoint first checked credentials; here the cheap, store-free gates come first.
Error envelopes leave out an ``id`` they could not read instead of sending null (``errors.py``).
A client's JSON-RPC response is accepted with 202 (the transport allows both), step 5 follows the
SDK's 406, and an unknown version header is answered with 2026-07-28's -32022 and the versions we
speak, which a dual-era client reads to retry rather than fall back.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import errors
from ..accept_header import accepts
from ..oauth import canonical_resource, challenge, grants_resource_access, public_origin
from ..origins import OriginPolicy, request_origin_allowed
from ..ratelimit import MCP_RATE_LIMIT
from ..rest import ApiRoute
from ..services import Caller, Services
from ..store.base import StorageFailure
from .catalog import Catalog, Tool, build_catalog
from .dispatch import ByteBudget, CallerAuth, call_route
from .envelope import TransportHeaders
from .limits import BATCH_WORKERS, MAX_BATCH_ENTRIES, MAX_RESPONSE_BYTES, byte_limit_text
from .protocol import (
    Answer,
    ToolCaller,
    ToolResponse,
    handle_message,
    is_client_response,
    is_valid_request,
    supports_batching,
)
from .revisions import SUPPORTED_PROTOCOL_VERSIONS

__all__ = [
    "ACCESS_MCP_PERMISSION",
    "MCP_PATH",
    "McpEndpoint",
    "accepts_json",
]

MCP_PATH = "/api/v1/mcp"
ACCESS_MCP_PERMISSION = "access-mcp"
# The limiter's route key: one budget for the endpoint, whatever the JSON-RPC method.
_RATE_LIMIT_KEY = "mcp"
_JSON = "application/json"


def accepts_json(accept: str) -> bool:
    """Whether an ``Accept`` value admits application/json (a wildcard counts; ``q=0`` refuses it)."""
    return accepts(accept, _JSON)


def _finite_float(text: str) -> float:
    """A JSON number that fits a float; 1e400 would become inf, which no answer could echo as JSON."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number out of range: {text[:32]}")
    return value


def _refuse_constant(name: str) -> Any:
    """NaN and Infinity are not JSON (Python's parser accepts them; an echoed NaN id would be invalid)."""
    raise ValueError(f"{name} is not JSON")


def _refusal(exc: errors.ApiError, headers: Mapping[str, str] | None = None) -> Response:
    """The refusal as an id-less JSON-RPC envelope; its own headers win over the rate-limit ones."""
    return errors.refusal_response(exc, jsonrpc=True, headers={**(headers or {}), **exc.headers})


class McpEndpoint:
    """The ASGI app of ``/api/v1/mcp``; builds its tool catalog once, from the route registry.

    ``Route(MCP_PATH, McpEndpoint(services, api_routes, policy))``: tool calls go back into the app
    that routed the request (``scope["app"]``), so they pass the same middleware and routes.
    """

    def __init__(self, services: Services, api_routes: Sequence[ApiRoute], policy: OriginPolicy) -> None:
        self.services = services
        self.policy = policy
        self.enabled = services.settings.mcp_enabled
        self.catalog: Catalog = build_catalog(api_routes, extended=services.settings.mcp_expose_extended_api)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            if request.method == "POST":
                response = await self._post(request)
            else:
                await self._gate(request, post=False)
                raise errors.MethodNotAllowed(headers={"Allow": "POST"})
        except errors.ApiError as exc:
            response = _refusal(exc)
        await response(scope, receive, send)

    # -- gates -----------------------------------------------------------------------------------
    def _unauthorized(self, request: Request, *, refused_token: bool) -> errors.PatRequired:
        """The 401, with the OAuth challenge when OAuth is on (module docstring)."""
        settings = self.services.settings
        if not (self.enabled and settings.mcp_oauth_enabled):
            return errors.PatRequired()
        origin = public_origin(settings, request)
        value = challenge(origin, MCP_PATH, error="invalid_token" if refused_token else None)
        return errors.PatRequired(headers={"WWW-Authenticate": value})

    async def _caller(
        self, request: Request, user_id: str | None, token: str | None, bearer: str | None
    ) -> Caller:
        """Step 6: the caller of the PAT pair, else of the OAuth bearer token."""
        try:
            if user_id and token:
                return await self.services.authenticate(user_id, token)
            assert bearer is not None
            caller, grant = self.services.resolve_bearer(bearer)
        except errors.Unauthorized:
            raise self._unauthorized(request, refused_token=True) from None
        except StorageFailure:
            raise errors.ServiceUnavailable() from None
        origin = public_origin(self.services.settings, request)
        if grant.resource != canonical_resource(f"{origin}{MCP_PATH}"):
            raise self._unauthorized(request, refused_token=True)
        if not grants_resource_access(grant.scope):
            sentence = errors.ScopeRequired.default_message
            value = challenge(origin, MCP_PATH, error="insufficient_scope", description=sentence)
            raise errors.ScopeRequired(headers={"WWW-Authenticate": value})
        return caller

    async def _gate(self, request: Request, *, post: bool) -> tuple[Caller, dict[str, str]]:
        """Steps 1–8; the caller and the rate-limit headers to put on the answer."""
        headers = request.headers
        user_id, token = headers.get("x-user-id"), headers.get("x-auth-token")
        bearer = _bearer(headers.get("authorization")) if self.services.settings.mcp_oauth_enabled else None
        if (not user_id or not token) and bearer is None:
            raise self._unauthorized(request, refused_token=False)
        if not self.enabled:
            raise errors.EndpointDisabled()
        if not request_origin_allowed(headers, self.policy, request.url.scheme):
            raise errors.OriginNotAllowed()
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise errors.UnsupportedVersion(
                rpc_data={"supported": list(SUPPORTED_PROTOCOL_VERSIONS), "requested": version}
            )
        accept = headers.get("accept")
        if post and accept is not None and not accepts_json(accept):
            raise errors.NotAcceptable()
        caller = await self._caller(request, user_id, token, bearer)
        if post and caller.is_session:
            raise self._unauthorized(request, refused_token=False)
        rate_headers: dict[str, str] = {}
        if post:
            # errors.TooManyRequests, with its headers, when the budget is spent.
            limited = await self.services.check_rate_limit(_RATE_LIMIT_KEY, caller.user.id, MCP_RATE_LIMIT)
            rate_headers = dict(limited)
        if ACCESS_MCP_PERMISSION not in caller.permissions:
            raise errors.PermissionRequired(headers=rate_headers)
        return caller, rate_headers

    # -- POST ------------------------------------------------------------------------------------
    async def _post(self, request: Request) -> Response:
        caller, rate_headers = await self._gate(request, post=True)
        try:
            return await self._answer(request, caller, rate_headers)
        except errors.ApiError as exc:
            return _refusal(exc, rate_headers)

    async def _answer(self, request: Request, caller: Caller, rate_headers: dict[str, str]) -> Response:
        try:
            message: Any = json.loads(
                await request.body(), parse_constant=_refuse_constant, parse_float=_finite_float
            )
        except (ValueError, RecursionError):  # UnicodeDecodeError included; nesting deeper than we parse
            raise errors.ParseError() from None
        auth = CallerAuth(
            user_id=caller.user.id,
            # The tool calls carry the credential the endpoint resolved, with its caller in the scope.
            token=request.headers.get("x-auth-token") or _bearer(request.headers.get("authorization")) or "",
            client_host=self.services.client_address(request),
            host_header=request.headers.get("host", "").encode("latin-1"),
            caller=caller,
        )
        app: ASGIApp = request.scope["app"]
        headers = TransportHeaders.from_raw(request.scope["headers"])
        answer: Answer | None
        if type(message) is list:
            if not supports_batching(headers.version):
                raise errors.InvalidEnvelope()
            answer = await self._batch(message, app, auth, headers)
        elif is_valid_request(message):
            answer = await handle_message(message, self.catalog, _tool_caller(app, auth, None), headers)
        elif is_client_response(message):
            answer = None
        else:
            raise errors.InvalidEnvelope()
        if answer is None:
            return Response(status_code=202, headers=rate_headers, media_type=_JSON)
        if len(answer.body) > MAX_RESPONSE_BYTES:
            raise errors.ResponseTooLarge(
                f"MCP response exceeds the {byte_limit_text(MAX_RESPONSE_BYTES)} limit"
            )
        return Response(answer.body, status_code=answer.status, headers=rate_headers, media_type=_JSON)

    async def _batch(
        self, entries: list[Any], app: ASGIApp, auth: CallerAuth, headers: TransportHeaders
    ) -> Answer | None:
        """Entries run at most BATCH_WORKERS at once and share one byte budget; answers keep the
        request order, and entries with nothing to answer (notifications) are left out."""
        if not 1 <= len(entries) <= MAX_BATCH_ENTRIES:
            raise errors.InvalidEnvelope()
        call_tool = _tool_caller(app, auth, ByteBudget())
        workers = anyio.CapacityLimiter(BATCH_WORKERS)
        answers: list[Answer | None] = [None] * len(entries)

        async def run(index: int, entry: Any) -> None:
            async with workers:
                answers[index] = await handle_message(entry, self.catalog, call_tool, headers)

        async with anyio.create_task_group() as group:
            for index, entry in enumerate(entries):
                group.start_soon(run, index, entry)
        parts = [answer.body for answer in answers if answer is not None]
        # A batch is answered 200 as a whole: each entry's error is in its own response.
        return Answer(b"[" + b",".join(parts) + b"]") if parts else None


def _bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (RFC 6750 §2.1), else None."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    value = value.strip()
    return value if scheme.lower() == "bearer" and value and " " not in value else None


def _tool_caller(app: ASGIApp, auth: CallerAuth, budget: ByteBudget | None) -> ToolCaller:
    async def call_tool(tool: Tool, arguments: Mapping[str, Any]) -> ToolResponse:
        return await call_route(app, tool.route, arguments, auth, budget=budget)

    return call_tool
