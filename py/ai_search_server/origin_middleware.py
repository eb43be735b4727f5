"""The Host and Origin checks in front of every route, and CORS for the allowed cross origins.

:class:`OriginMiddleware` answers what :mod:`.origins` decides: ``Host`` on every path (421, DNS
rebinding), then ``Origin`` on the protected prefixes (403), CORS preflights (204), and CORS
response headers for an allowed cross origin. It sits inside ``SecurityHeadersMiddleware`` (so its
refusals carry the CSP) and before the body cap (so a refused origin costs no upload read); the
order is ``app.create_app``'s. Refusals are ``errors.HostNotAllowed`` and ``errors.OriginNotAllowed``,
rendered by ``errors.refusal_response`` (a JSON-RPC envelope on the MCP endpoint).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import errors
from .origins import OriginPolicy, normalize_origin, request_host, request_origin_allowed, same_origin_as_host

__all__ = [
    "CORS_ALLOWED_HEADERS",
    "CORS_ALLOWED_METHODS",
    "CORS_EXPOSED_HEADERS",
    "CORS_PREFLIGHT_MAX_AGE_SECONDS",
    "DEFAULT_PROTECTED_PREFIXES",
    "OriginMiddleware",
]

# Seconds a browser may cache a preflight answer. Chromium caps it at 7200; ten minutes keeps a changed
# allow-list effective soon.
CORS_PREFLIGHT_MAX_AGE_SECONDS = 600
CORS_ALLOWED_METHODS = ("GET", "POST")
CORS_ALLOWED_HEADERS = (
    "X-User-Id",
    "X-Auth-Token",
    "Content-Type",
    "MCP-Protocol-Version",
    "Mcp-Session-Id",
    "Last-Event-ID",
)
# Response headers a cross-origin page (the widget host) may read; the rate-limit headers are not
# CORS-safelisted, and a widget needs them to back off.
CORS_EXPOSED_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After")
# Data routes are GET too, so the Origin check covers every method under these prefixes.
DEFAULT_PROTECTED_PREFIXES = ("/api/",)
# Sec-Fetch-Site values of a request that another site started. A browser sends Origin on every CORS
# request, so such a request without Origin is a navigation or a no-cors load (img, script, link):
# never a legitimate API call, and refusing it closes the "no Origin means allowed" door to browsers.
_FOREIGN_FETCH_SITES = {"cross-site", "same-site"}


class OriginMiddleware:
    """Host check on every path (421), Origin check and CORS on the protected prefixes (403, 204).

    An allowed cross origin gets ``Access-Control-Allow-Origin: <its origin>`` (never ``*``, never
    credentials: auth travels in headers, not cookies). Every protected response carries
    ``Vary: Origin`` so a shared cache never hands one origin's CORS answer to another.
    """

    def __init__(
        self,
        app: ASGIApp,
        policy: OriginPolicy,
        protected_prefixes: Sequence[str] = DEFAULT_PROTECTED_PREFIXES,
        jsonrpc_paths: Collection[str] = errors.DEFAULT_JSONRPC_PATHS,
    ) -> None:
        self.app = app
        self.policy = policy
        self.protected_prefixes = tuple(protected_prefixes)
        self.jsonrpc_paths = frozenset(jsonrpc_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        path: str = scope["path"]
        scheme: str = scope.get("scheme", "http")
        host = request_host(headers, self.policy)
        if self.policy.allowed_hosts and host is None:
            refusal = errors.refusal_response(errors.HostNotAllowed(), jsonrpc=path in self.jsonrpc_paths)
            await refusal(scope, receive, send)
            return
        if not path.startswith(self.protected_prefixes):
            await self.app(scope, receive, send)
            return
        origins = headers.getlist("origin")
        if not origins:
            refused = headers.get("sec-fetch-site") in _FOREIGN_FETCH_SITES
        else:
            refused = not request_origin_allowed(headers, self.policy, scheme)
        if refused:
            refusal = errors.refusal_response(errors.OriginNotAllowed(), jsonrpc=path in self.jsonrpc_paths)
            await refusal(scope, receive, _with_cors_headers(send, None))
            return
        if not origins:
            await self.app(scope, receive, _with_cors_headers(send, None))
            return
        origin = origins[0]
        same_origin = normalize_origin(origin) == self.policy.site_origin or (
            host is not None and same_origin_as_host(origin, host, scheme)
        )
        cross_origin = None if same_origin else origin
        if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
            await self._preflight(headers, cross_origin)(scope, receive, send)
            return
        await self.app(scope, receive, _with_cors_headers(send, cross_origin))

    @staticmethod
    def _preflight(headers: Headers, cross_origin: str | None) -> Response:
        answer = {
            "Access-Control-Allow-Methods": ", ".join(CORS_ALLOWED_METHODS),
            "Access-Control-Allow-Headers": ", ".join(CORS_ALLOWED_HEADERS),
            "Access-Control-Max-Age": str(CORS_PREFLIGHT_MAX_AGE_SECONDS),
            "Vary": "Origin",
        }
        if cross_origin is not None:
            answer["Access-Control-Allow-Origin"] = cross_origin
            # Chromium's Private Network Access: a public widget host calling a server on a private
            # network asks first; the origin is already on our allow-list, so say yes.
            if headers.get("access-control-request-private-network") == "true":
                answer["Access-Control-Allow-Private-Network"] = "true"
        return Response(status_code=204, headers=answer)


def _with_cors_headers(send: Send, cross_origin: str | None) -> Send:
    async def send_with_cors(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            headers.add_vary_header("Origin")
            if cross_origin is not None:
                headers["Access-Control-Allow-Origin"] = cross_origin
                headers["Access-Control-Expose-Headers"] = ", ".join(CORS_EXPOSED_HEADERS)
        await send(message)

    return send_with_cors
