"""Every refusal the server answers over HTTP, and the one function that renders them.

Each class carries its HTTP status, its stable ``errorType``, its sentence, its JSON-RPC code and the
reason the OpenAPI document gives for it. Routes, the dispatcher (``rest.py``), the middleware
(``origin_middleware.py``, ``body_limit.py``, ``ratelimit.py``) and the MCP endpoint raise or build these, and
:func:`refusal_response` renders them, as Rocket.Chat's REST body
``{"success": false, "error": <message>, "errorType": <type>}`` or, on the MCP endpoint, as an
id-less JSON-RPC envelope ``{"jsonrpc": "2.0", "error": {"code", "message"}}`` (no ``id``: the MCP
schemas refuse ``null``). Messages are written for the person calling the API; upstream error text
(a provider's, a database's) never reaches them verbatim.

::

    ApiError                   status  errorType                         JSON-RPC
    ├── InvalidParams          400     error-invalid-params              -32602  a bad parameter
    ├── Conflict               400     error-duplicate                   -32000  a name already taken
    ├── FeatureUnavailable     400     error-ai-not-enabled, ...         -32000  a feature off
    ├── Unauthorized           401     error-unauthorized                -32001  no or bad credentials
    │   └── PatRequired        401                                       -32001  MCP: a PAT is needed
    ├── Forbidden              403     error-not-allowed                 -32000  not permitted
    │   ├── PermissionRequired 403                                       -32000  MCP: access-mcp
    │   └── ScopeRequired      403                                       -32000  MCP: the mcp scope
    ├── OriginNotAllowed       403     error-origin-not-allowed          -32000  a browser Origin
    ├── NotFound               404     error-not-found, ...              -32601
    │   └── EndpointDisabled   404                                       -32601  MCP: mcp_enabled off
    ├── RequestTimeout         408     error-request-timeout             -32000  the body came too late
    ├── RequestTooLarge        413     error-request-too-large           -32000  the body is too big
    ├── HostNotAllowed         421     error-host-not-allowed            -32000  not this server's Host
    ├── TooManyRequests        429     error-too-many-requests           -32000  a rate limit reached
    │   ├── AuthFailuresSpent  429                                       -32000  failed sign-ins spent
    │   └── SignInsSlowed      429                                       -32000  an account's wait
    ├── UpstreamFailure        502     error-ai-provider-request-failed  -32000  a provider failed
    │   ├── UpstreamTimeout    504                                       -32000  too slow
    │   └── UpstreamBusy       503                                       -32000  outbound calls at cap
    ├── ServiceUnavailable     503     error-service-unavailable         -32603  the database failed
    │ the HTTP server's own, in plain text (serving.py):
    ├── HeadTimeout            408                                               the head came too late
    ├── HeadTooLarge           431                                               the head is too big
    ├── TooManyConnections     503                                               the connection cap
    │ the MCP endpoint's own gates (always JSON-RPC):
    ├── UnsupportedVersion     400     error-unsupported-version         -32022  data: supported, requested
    ├── ParseError             400     error-invalid-json                -32700  the body is not JSON
    ├── InvalidEnvelope        400     error-invalid-request             -32600  no JSON-RPC request
    ├── MethodNotAllowed       405     error-method-not-allowed          -32600  POST only
    ├── NotAcceptable          406     error-not-acceptable              -32600  no application/json
    └── ResponseTooLarge       413     error-response-too-large          -32000  an answer over 5 MiB

The MCP endpoint's in-band errors (answered inside a 200 JSON-RPC response with the request id) and
failed tool calls are not HTTP refusals: they live in ``mcp/rpc_errors.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from starlette.responses import JSONResponse, Response

__all__ = [
    "DEFAULT_JSONRPC_PATHS",
    "ApiError",
    "AuthFailuresSpent",
    "Conflict",
    "EndpointDisabled",
    "FeatureUnavailable",
    "Forbidden",
    "HeadTimeout",
    "HeadTooLarge",
    "HostNotAllowed",
    "InvalidEnvelope",
    "InvalidParams",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotFound",
    "OriginNotAllowed",
    "ParseError",
    "PatRequired",
    "PermissionRequired",
    "RequestTimeout",
    "RequestTooLarge",
    "ResponseTooLarge",
    "ScopeRequired",
    "ServiceUnavailable",
    "SignInsSlowed",
    "TooManyConnections",
    "TooManyRequests",
    "Unauthorized",
    "UnsupportedVersion",
    "UpstreamBusy",
    "UpstreamFailure",
    "UpstreamTimeout",
    "refusal_response",
]


class ApiError(Exception):
    """One refusal: ``message`` (default ``default_message``) is what the caller reads.

    ``rpc_message`` is the sentence of the JSON-RPC envelope when upstream's MCP endpoint words it
    differently from the REST one ("Origin is not allowed" beside "Origin not allowed"); ``reason``
    is the OpenAPI document's description of when the refusal is answered.
    """

    status: ClassVar[int] = 500
    default_type: ClassVar[str] = "error-internal"
    default_message: ClassVar[str] = "Internal server error"
    rpc_code: ClassVar[int] = -32603
    default_rpc_message: ClassVar[str | None] = None
    reason: ClassVar[str] = ""

    def __init__(
        self,
        message: str | None = None,
        *,
        error_type: str | None = None,
        details: dict[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        rpc_message: str | None = None,
        rpc_data: dict[str, Any] | None = None,
    ) -> None:
        self.message = message or self.default_message
        self.error_type = error_type or self.default_type
        self.details = details
        self.headers = dict(headers or {})
        self.rpc_message = rpc_message or (message if message else self.default_rpc_message) or self.message
        self.rpc_data = rpc_data  # the JSON-RPC error's ``data`` member, when it has one
        super().__init__(self.message)

    @classmethod
    def described(cls) -> str:
        """When this refusal is answered, for the OpenAPI document (its reason, else its sentence)."""
        return cls.reason or cls.default_message

    def body(self) -> dict[str, Any]:
        """The REST body."""
        body: dict[str, Any] = {"success": False, "error": self.message, "errorType": self.error_type}
        if self.details:
            body["details"] = self.details
        return body

    def rpc_body(self) -> dict[str, Any]:
        """The id-less JSON-RPC error envelope (the request's id could not be, or was not, read)."""
        error: dict[str, Any] = {"code": self.rpc_code, "message": self.rpc_message}
        if self.rpc_data is not None:
            error["data"] = self.rpc_data
        return {"jsonrpc": "2.0", "error": error}


# The paths whose middleware refusals are JSON-RPC envelopes: the MCP endpoint (mcp.MCP_PATH), whose
# clients read only JSON-RPC. Every other path gets the REST body.
DEFAULT_JSONRPC_PATHS = ("/api/v1/mcp",)


def refusal_response(
    refusal: ApiError, *, jsonrpc: bool = False, headers: Mapping[str, str] | None = None
) -> Response:
    """The one rendering of a refusal: the REST body, or the JSON-RPC envelope (``jsonrpc``), with
    its status and the refusal's headers (then ``headers``, which win)."""
    body = refusal.rpc_body() if jsonrpc else refusal.body()
    merged = {**refusal.headers, **(headers or {})}
    return JSONResponse(body, status_code=refusal.status, headers=merged or None)


# -- parameters, credentials, permissions ------------------------------------------------------


class InvalidParams(ApiError):
    status = 400
    default_type = "error-invalid-params"
    default_message = "Invalid parameters"
    rpc_code = -32602
    reason = "A parameter is missing, unknown or out of range"


class Unauthorized(ApiError):
    status = 401
    default_type = "error-unauthorized"
    default_message = "You must be logged in to do this."
    rpc_code = -32001
    # Credentials that are sent are checked on every route, even on one that does not need them.
    reason = "No credentials, or credentials that are not valid"


class PatRequired(Unauthorized):
    default_message = "Personal Access Token required"


class Forbidden(ApiError):
    status = 403
    default_type = "error-not-allowed"
    default_message = "You are not allowed to do this."
    rpc_code = -32000
    reason = "The caller lacks a permission the route needs"


class PermissionRequired(Forbidden):
    default_message = "The access-mcp permission is required"


class ScopeRequired(Forbidden):
    """An OAuth token that was not granted the scope MCP needs (``offline_access`` alone): RFC 6750
    §3.1's ``insufficient_scope``, whose ``WWW-Authenticate`` challenge names the scope to ask for."""

    default_message = "This OAuth token was not granted the mcp scope"


class NotFound(ApiError):
    status = 404
    default_type = "error-not-found"
    default_message = "Not found"
    rpc_code = -32601


class EndpointDisabled(NotFound):
    default_message = "MCP endpoint is disabled"


class Conflict(ApiError):
    status = 400
    default_type = "error-duplicate"
    default_message = "Already exists"
    rpc_code = -32000


class FeatureUnavailable(ApiError):
    status = 400
    default_type = "error-ai-not-enabled"
    default_message = "AI search is not enabled"
    rpc_code = -32000


class UpstreamFailure(ApiError):
    status = 502
    default_type = "error-ai-provider-request-failed"
    default_message = "The AI provider request failed"
    rpc_code = -32000


class UpstreamTimeout(UpstreamFailure):
    """The provider passed its deadline: 504, with the errorType of any other provider failure."""

    status = 504


class UpstreamBusy(UpstreamFailure):
    """The app's cap of outbound calls stayed full (``outbound_max_concurrent_calls``): 503 with
    ``Retry-After``, with the errorType of any other provider failure; the provider was not called."""

    status = 503


class ServiceUnavailable(ApiError):
    status = 503
    default_type = "error-service-unavailable"
    default_message = "The workspace database is unavailable; try again shortly"
    rpc_code = -32603


# -- the HTTP edge: middleware in front of every route (origin_middleware, body_limit, ratelimit, serving)


class HostNotAllowed(ApiError):
    status = 421
    default_type = "error-host-not-allowed"
    default_message = "Host not allowed"
    rpc_code = -32000
    default_rpc_message = "Host is not allowed"


class OriginNotAllowed(ApiError):
    status = 403
    default_type = "error-origin-not-allowed"
    default_message = "Origin not allowed"
    rpc_code = -32000
    default_rpc_message = "Origin is not allowed"
    reason = "Origin not allowed: a cross-site call from a site not allowed"


class RequestTooLarge(ApiError):
    """Raised with the cap in its JSON-RPC sentence: ``RequestTooLarge.over(max_body_bytes)``."""

    status = 413
    default_type = "error-request-too-large"
    default_message = "Request body too large"
    rpc_code = -32000
    reason = "The request body is over the size cap"

    @classmethod
    def over(cls, max_body_bytes: int) -> RequestTooLarge:
        return cls(rpc_message=f"Request body exceeds the {max_body_bytes} byte limit")


class RequestTimeout(ApiError):
    """Raised with the deadline in its JSON-RPC sentence: ``RequestTimeout.after(seconds)``; the
    connection is closed with it, so the server reads no more of a body that trickles."""

    status = 408
    default_type = "error-request-timeout"
    default_message = "Request body not received in time"
    rpc_code = -32000
    reason = "The request body was not received in time"

    @classmethod
    def after(cls, seconds: float) -> RequestTimeout:
        return cls(
            rpc_message=f"Request body not received within {seconds:g} s", headers={"Connection": "close"}
        )


class TooManyRequests(ApiError):
    status = 429
    default_type = "error-too-many-requests"
    default_message = "Too many requests"
    rpc_code = -32000
    reason = "Rate limit reached: retry after Retry-After"


class AuthFailuresSpent(TooManyRequests):
    reason = "Too many failed authentications from this address"


class SignInsSlowed(TooManyRequests):
    """An account's failed sign-ins started a wait (login_throttle.py); answered alike for every
    username, known or not, before the password is checked."""

    default_message = "Too many failed sign-ins for this username: wait before trying again"
    reason = (
        "Too many failed sign-ins for this username: retry after Retry-After (a known device skips the wait)"
    )


class HeadTimeout(ApiError):
    """Answered by the HTTP server itself (serving.py), in plain text, before any route runs."""

    status = 408
    default_message = "Request head not received in time"
    reason = "The request head was not received in time"


class HeadTooLarge(ApiError):
    """Answered by the HTTP server itself (serving.py), in plain text, before any route runs."""

    status = 431
    default_message = "Request header fields too large"
    reason = "The request head (request line and headers) is over its size cap"


class TooManyConnections(ApiError):
    """Answered by the HTTP server itself (serving.py), in plain text, to a connection past the cap
    when every open one is busy."""

    status = 503
    default_message = "Too many connections; try again"


# -- the MCP endpoint's own gates (mcp/endpoint.py), answered as JSON-RPC envelopes ---------------


class MethodNotAllowed(ApiError):
    status = 405
    default_type = "error-method-not-allowed"
    default_message = "Only POST is supported"
    rpc_code = -32600


class NotAcceptable(ApiError):
    status = 406
    default_type = "error-not-acceptable"
    default_message = "Not Acceptable: the client must accept application/json"
    rpc_code = -32600


class UnsupportedVersion(ApiError):
    """Raised with ``rpc_data={"supported": [...], "requested": ...}`` (2026-07-28's
    UnsupportedProtocolVersionError, which its clients read to retry at a version we speak)."""

    status = 400
    default_type = "error-unsupported-version"
    default_message = "Unsupported protocol version"
    rpc_code = -32022


class ParseError(ApiError):
    status = 400
    default_type = "error-invalid-json"
    default_message = "Parse error"
    rpc_code = -32700


class InvalidEnvelope(ApiError):
    status = 400
    default_type = "error-invalid-request"
    default_message = "Invalid Request"
    rpc_code = -32600


class ResponseTooLarge(ApiError):
    """Raised with the cap in its sentence (mcp/limits.py words it as upstream does: 5 MiB)."""

    status = 413
    default_type = "error-response-too-large"
    default_message = "The MCP response is over its size cap"
    rpc_code = -32000
