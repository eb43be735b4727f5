"""The HTTP security edge: Host and Origin checks with CORS, a request body cap, security headers.

Three plain ASGI middleware classes, each ``(app, **options)`` with ``__call__(scope, receive, send)``;
scopes other than ``http`` (lifespan, websocket) pass straight through. ``app.create_app`` stacks them,
outermost first, and the order matters:

1. :class:`SecurityHeadersMiddleware` is outermost, so every answer, including the 403/413/421 of the
   layers below and a route's 429, carries the CSP and the other headers.
2. :class:`OriginMiddleware`: ``Host`` (421, DNS rebinding) on every path, then ``Origin`` (403) on the
   protected prefixes, CORS preflights, and CORS response headers for allowed cross origins.
3. :class:`BodyLimitMiddleware` comes after the Origin check, so a refused origin costs no upload read.
   It caps the body's size (413) and the time its reading takes (408).

Rate limits are per route (``ratelimit.py``), after authentication has said who the caller is.
Refusals are the server's own (``errors.py``: ``HostNotAllowed``, ``OriginNotAllowed``,
``RequestTooLarge``, ``RequestTimeout``), rendered by ``errors.refusal_response``: the REST shape
``{"success": false, "error", "errorType"}``, except on the JSON-RPC paths (the MCP endpoint), which
get upstream's envelope ``{"jsonrpc": "2.0", "error"}`` (no ``id``: the MCP schemas refuse ``null``).

    >>> policy = OriginPolicy("http://127.0.0.1:8000", cors_allowed_origins=("*",))
    >>> origin_allowed("HTTP://127.0.0.1:80", policy), origin_allowed("HTTP://127.0.0.1:8000", policy)
    (False, True)
    >>> origin_allowed(None, policy), origin_allowed("null", policy), origin_allowed("https://x.io", policy)
    (True, False, False)
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import urlsplit

import anyio
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import errors

__all__ = [
    "CORS_ALLOWED_HEADERS",
    "CORS_ALLOWED_METHODS",
    "CORS_EXPOSED_HEADERS",
    "CORS_PREFLIGHT_MAX_AGE_SECONDS",
    "DEFAULT_JSONRPC_PATHS",
    "DEFAULT_MAX_REQUEST_BODY_BYTES",
    "DEFAULT_PROTECTED_PREFIXES",
    "DEFAULT_REQUEST_BODY_TIMEOUT_SECONDS",
    "BodyLimitMiddleware",
    "OriginMiddleware",
    "OriginPolicy",
    "SecurityHeadersMiddleware",
    "build_csp",
    "default_allowed_hosts",
    "host_name",
    "normalize_origin",
    "origin_allowed",
    "parse_origin_list",
    "request_host",
    "request_origin_allowed",
    "same_origin_as_host",
]

# Bytes of one request body. 5 MiB is the cap the upstream MCP endpoint puts on a batch's tool results
# and on its final JSON (DESIGN decision 6, upstream-mcp.md §8.2), so any request an MCP client may
# legitimately send here fits; a REST body (a query of at most 500 characters, at most 20 message ids,
# one chat message) is far smaller. The MCP Python SDK's own default is 4 MiB.
DEFAULT_MAX_REQUEST_BODY_BYTES = 5 * 1024 * 1024
# Seconds reading one request body may take, from the first read to the last byte: the 20 s deadline
# of an answer (upstream's). A client on a slow link sends 5 MiB in that time at 2 Mbit/s; a client
# that trickles its body would otherwise hold a connection, a task and the bytes so far for ever
# (uvicorn has no body-read timeout).
DEFAULT_REQUEST_BODY_TIMEOUT_SECONDS = 20.0
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
DEFAULT_JSONRPC_PATHS = ("/api/v1/mcp",)

_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
# A DNS name as browsers serialise it in an origin: ASCII labels (IDNA already applied), an optional
# final dot, which makes a different origin and is kept so that it does not match.
_HOST_NAME = re.compile(r"^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?$")
# Sec-Fetch-Site values of a request that another site started. A browser sends Origin on every CORS
# request, so such a request without Origin is a navigation or a no-cors load (img, script, link):
# never a legitimate API call, and refusing it closes the "no Origin means allowed" door to browsers.
_FOREIGN_FETCH_SITES = {"cross-site", "same-site"}


def normalize_origin(value: str) -> str | None:
    """The serialised origin of ``value`` (WHATWG ``new URL(value).origin`` for http/https), or None.

    Lower-cases scheme and host, drops a default port, ignores path, query and credentials, as
    upstream-mcp.md §8.4 specifies. ``null``, the empty string, non-http(s) schemes, bad ports and hosts
    with characters a browser never sends all give None. Numeric IPv4 shorthands (``127.1``) are not
    expanded, so they never match: a browser always sends the dotted-quad form.
    """
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    if "%" in host:  # percent-escapes and IPv6 zone ids: never in a browser's origin
        return None
    if ":" in host:
        try:
            host = f"[{ipaddress.IPv6Address(host).compressed}]"
        except ValueError:
            return None
    else:
        try:
            host = host.encode("idna").decode("ascii").lower() if not host.isascii() else host
        except UnicodeError:
            return None
        if not _HOST_NAME.match(host):
            return None
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def parse_origin_list(text: str) -> tuple[str, ...]:
    """Split a comma-separated setting (upstream ``API_CORS_Origin``) into trimmed, non-empty entries."""
    return tuple(entry.strip() for entry in text.split(",") if entry.strip())


def host_name(value: str) -> str | None:
    """The name in a ``Host`` value (``name``, ``name:port``, ``[v6]``, ``[v6]:port``), lower-cased.

    The port is checked for shape and dropped: the Host check compares names, because a name is what a
    DNS-rebinding page controls, while the port changes with every ``ssh -L``, container mapping or
    dev proxy in front of the server. None for a value no browser sends (empty, bad port, stray
    brackets).
    """
    value = value.strip().lower()
    # An IPv6 name is bracketed, so the port is whatever follows the closing bracket.
    split_at = value.find("]") + 1 if value.startswith("[") else 0
    name, colon, port = value[split_at:].partition(":")
    name = value[:split_at] + name
    if name in ("", "[", "[]") or (name.startswith("[") and not name.endswith("]")):
        return None
    if colon and not (port.isdigit() and 0 < int(port) < 65536):
        return None
    return name


def default_allowed_hosts(site_url: str) -> tuple[str, ...]:
    """The ``Host`` names a server at ``site_url`` accepts: the site URL's host and the loopback names.

    Loopback names are always accepted, on any port: a browser sends ``Host: localhost`` only when
    its user asked for the machine itself, never because a page rebound a name. A public name must be
    the site URL's (or listed in ``allowed_hosts``), since behind a proxy the Host is that name.

    Raises:
        ValueError: ``site_url`` is not an http(s) URL.
    """
    site_origin = normalize_origin(site_url)
    if site_origin is None:
        raise ValueError(f"site_url {site_url!r} is not an http or https URL")
    name = host_name(site_origin.partition("://")[2])
    assert name is not None  # a normalised origin always has a host
    return tuple(dict.fromkeys((name, *_LOOPBACK_HOSTS)))


def _is_loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return name == "localhost"


@dataclass(frozen=True)
class OriginPolicy:
    """Who may call the API from a browser, and under which ``Host`` names the server answers.

    ``site_url`` is the product's own URL; its origin is always allowed, and so is the origin a request
    names in its own (accepted) ``Host``: the page reached through ``ssh -L 9000:127.0.0.1:8000`` or a
    container's ``-p 9000:8000`` is same-origin with itself. ``cors_allowed_origins`` are other browser
    origins allowed to call the API; ``embed_allowed_origins`` host the widget and are allowed API
    origins too (and the CSP frame ancestors). A ``*`` or any entry that is not an http(s) origin never
    matches (upstream §8.4); :attr:`ignored_entries` lists them so start-up can say so.

    ``allowed_hosts`` are Host *names* accepted besides the site URL's and the loopback names (a port
    given with one is ignored; :func:`default_allowed_hosts`); None (the default) adds none. The check
    is on by default because a server without it is open to DNS rebinding; an explicit empty tuple
    turns it off (a proxy in front already pins Host).

    Raises:
        ValueError: ``site_url`` is not an http(s) URL, or an ``allowed_hosts`` entry is not a host.
    """

    site_url: str
    cors_allowed_origins: tuple[str, ...] = ()
    embed_allowed_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        # Accept any sequence from settings code but keep the frozen record immutable.
        object.__setattr__(self, "cors_allowed_origins", tuple(self.cors_allowed_origins))
        object.__setattr__(self, "embed_allowed_origins", tuple(self.embed_allowed_origins))
        names = default_allowed_hosts(self.site_url)
        if self.allowed_hosts is not None:
            listed = tuple(_configured_host(entry) for entry in self.allowed_hosts)
            names = (*names, *listed) if listed else ()
        object.__setattr__(self, "allowed_hosts", tuple(dict.fromkeys(names)))

    @cached_property
    def site_origin(self) -> str:
        origin = normalize_origin(self.site_url)
        assert origin is not None  # checked in __post_init__
        return origin

    @cached_property
    def allowed_cross_origins(self) -> frozenset[str]:
        entries = (normalize_origin(e) for e in (*self.cors_allowed_origins, *self.embed_allowed_origins))
        return frozenset(origin for origin in entries if origin is not None)

    @property
    def ignored_entries(self) -> tuple[str, ...]:
        """Allow-list entries that can never match an origin (``*``, typos, other schemes)."""
        entries = (*self.cors_allowed_origins, *self.embed_allowed_origins)
        return tuple(entry for entry in entries if normalize_origin(entry) is None)

    def host_allowed(self, value: str) -> bool:
        """Whether a ``Host`` header value names this server (any port): a listed or loopback name."""
        if not self.allowed_hosts:
            return True
        name = host_name(value)
        return name is not None and (name in self.allowed_hosts or _is_loopback(name))


def _configured_host(entry: str) -> str:
    name = host_name(entry)
    if name is None or "/" in entry:
        raise ValueError(f"allowed_hosts entry {entry!r} is not a host name (name or name:port)")
    return name


def same_origin_as_host(origin: str, host: str, scheme: str = "http") -> bool:
    """Whether ``origin`` is the origin of a page loaded from ``Host: host`` over ``scheme``.

    Both sides are compared as a browser serialises them (lower case, the scheme's default port left
    out), so ``http://localhost:9000`` matches ``Host: localhost:9000`` and ``https://x.io`` matches
    ``Host: x.io:443`` over https; an https origin never matches a request that came over http.
    """
    normalized = normalize_origin(origin)
    own = normalize_origin(f"{scheme}://{host.strip()}") if host_name(host) is not None else None
    return normalized is not None and normalized == own


def origin_allowed(
    origin: str | None, policy: OriginPolicy, host: str | None = None, scheme: str = "http"
) -> bool:
    """Whether a request carrying this ``Origin`` header value may use the API (upstream §8.4).

    No header (native clients, curl, MCP SDK) is allowed; ``null`` and unparsable values are refused;
    otherwise the normalised origin must be the site's own, the one of the request's ``host`` and
    ``scheme`` (a Host the Host check has already accepted), or in one of the allow-lists.
    """
    if origin is None:
        return True
    normalized = normalize_origin(origin)
    if normalized is None:
        return False
    if host is not None and same_origin_as_host(normalized, host, scheme):
        return True
    return normalized == policy.site_origin or normalized in policy.allowed_cross_origins


def _single_host(headers: Headers) -> str | None:
    values = headers.getlist("host")
    return values[0] if len(values) == 1 else None


def request_host(headers: Headers, policy: OriginPolicy) -> str | None:
    """The request's ``Host`` when it may vouch for a same-origin ``Origin``: one Host header that the
    policy's Host check accepts. With the check off, none: any page could name itself in Host."""
    host = _single_host(headers)
    return host if policy.allowed_hosts and host is not None and policy.host_allowed(host) else None


def request_origin_allowed(headers: Headers, policy: OriginPolicy, scheme: str = "http") -> bool:
    """The Origin rule for one request: at most one ``Origin``, and :func:`origin_allowed` for it."""
    origins = headers.getlist("origin")
    if len(origins) > 1:
        return False
    return origin_allowed(origins[0] if origins else None, policy, request_host(headers, policy), scheme)


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
        jsonrpc_paths: Collection[str] = DEFAULT_JSONRPC_PATHS,
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


class _BodyRead:
    """One request body read into memory, chunk by chunk, until it ends, passes the cap or is cut off."""

    def __init__(self, max_body_bytes: int) -> None:
        self.max_body_bytes = max_body_bytes
        self.body = bytearray()
        self.complete = False
        self.too_large = False
        self.trailing: list[Message] = []

    async def run(self, receive: Receive) -> None:
        while not self.complete:
            message = await receive()
            if message["type"] != "http.request":
                # A disconnect before the body ended: the app gets the partial body marked unfinished,
                # then the disconnect, so it never mistakes a cut upload for a whole one.
                self.trailing.append(message)
                return
            chunk: bytes = message.get("body", b"")
            if len(self.body) + len(chunk) > self.max_body_bytes:
                self.too_large = True
                return
            self.body.extend(chunk)
            self.complete = not message.get("more_body", False)


class BodyLimitMiddleware:
    """413 for a request body over ``max_body_bytes``, by ``Content-Length`` and by counting chunks;
    408 for one whose reading takes longer than ``body_timeout_seconds``.

    The declared length is checked first; then the body is read and counted chunk by chunk, so a chunked
    upload or a lying ``Content-Length`` stops being read once the count passes the cap (the cap plus
    one chunk at most is ever in memory). The whole reading runs under one deadline, so a client that
    trickles its body (a byte a second) is answered 408 with ``Connection: close`` and loses its
    connection, however steadily it sends. The app then gets the body as one message, so no handler runs
    on an oversized or unfinished one; a disconnect before the end reaches it as an unfinished body,
    then the disconnect.
    """

    def __init__(
        self,
        app: ASGIApp,
        max_body_bytes: int = DEFAULT_MAX_REQUEST_BODY_BYTES,
        jsonrpc_paths: Collection[str] = DEFAULT_JSONRPC_PATHS,
        body_timeout_seconds: float = DEFAULT_REQUEST_BODY_TIMEOUT_SECONDS,
    ) -> None:
        if max_body_bytes < 0:
            raise ValueError(f"max_body_bytes must be >= 0, got {max_body_bytes}")
        if not (math.isfinite(body_timeout_seconds) and body_timeout_seconds > 0):
            raise ValueError(f"body_timeout_seconds must be a positive number, got {body_timeout_seconds}")
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_timeout_seconds = body_timeout_seconds
        self.jsonrpc_paths = frozenset(jsonrpc_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = headers.get("content-length", "")
        # A malformed length is left to the chunk count below; the server rejects it before us anyway.
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._refuse(scope, receive, send)
            return
        read = _BodyRead(self.max_body_bytes)
        # RFC 9112 §6.3: a request with neither Content-Length nor Transfer-Encoding has no body, so
        # there is nothing to wait for and no deadline to arm (a timer costs more than the whole read).
        if declared in ("", "0") and "transfer-encoding" not in headers:
            await read.run(receive)
        else:
            with anyio.move_on_after(self.body_timeout_seconds) as deadline:
                await read.run(receive)
            if deadline.cancelled_caught:
                # Connection: close (the refusal's header), so the server drops the connection
                # instead of reading on.
                late = errors.RequestTimeout.after(self.body_timeout_seconds)
                await self._answer(late, scope, receive, send)
                return
        if read.too_large:
            await self._refuse(scope, receive, send)
            return
        body, complete, trailing = read.body, read.complete, read.trailing
        pending: list[Message] = [
            {"type": "http.request", "body": bytes(body), "more_body": not complete},
            *trailing,
        ]

        async def replay() -> Message:
            return pending.pop(0) if pending else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._answer(errors.RequestTooLarge.over(self.max_body_bytes), scope, receive, send)

    async def _answer(self, refusal: errors.ApiError, scope: Scope, receive: Receive, send: Send) -> None:
        jsonrpc = scope["path"] in self.jsonrpc_paths
        await errors.refusal_response(refusal, jsonrpc=jsonrpc)(scope, receive, send)


# The page's Content-Security-Policy, directive by directive, and why each source is there. Measured
# against the runtime the page loads (pyodide 314.0.x under PyScript 0.7.31; static/pyscript-boot.mjs starts it):
# - Pyodide's only eval() calls are in the dynamic linker (EM_ASM/EM_JS of side modules, i.e.
#   packages with .so files, which the page never loads), in emscripten_run_script and in a Node-only
#   path, so no string is ever compiled. So 'unsafe-eval' is not needed; only WebAssembly
#   compilation is, which 'wasm-unsafe-eval' allows without allowing eval().
# - PyScript's one Function(...) builds the hooks of PyScript *workers*; the page runs none, and its
#   boot module (static/pyscript-boot.mjs) empties that set before PyScript reads it.
# - The page's one worker, the Pyodide snapshot maker, is a file of our own. So worker-src is 'self'.
# - The page styles elements only through its stylesheets and the CSSOM (element.style, which CSP
#   does not govern). No 'unsafe-inline'.
# - img-src data: serves the `data:,` favicon and inline SVG icons; data: is no network request, so it
#   opens no exfiltration path, while img-src/connect-src 'self' close the Markdown-image one.
_CSP_DIRECTIVES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("default-src", ("'self'",)),
    ("script-src", ("'self'", "'wasm-unsafe-eval'")),
    ("worker-src", ("'self'",)),
    ("connect-src", ("'self'",)),
    ("img-src", ("'self'", "data:")),
    ("style-src", ("'self'",)),
    ("object-src", ("'none'",)),
    ("base-uri", ("'none'",)),
    ("form-action", ("'self'",)),
)
# Sources csp_extra may never add: each one re-opens script injection. Loosening the policy is a code
# change with a reviewer, not a setting.
_CSP_FORBIDDEN_SOURCES = {"'unsafe-inline'", "'unsafe-eval'", "'unsafe-hashes'", "*"}
_CSP_SCRIPT_DIRECTIVES = {"default-src", "script-src", "script-src-elem", "script-src-attr", "worker-src"}
_CSP_DIRECTIVE_NAME = re.compile(r"^[a-z][a-z-]*$")
_CSP_SOURCE = re.compile(r"^[^\s;,]+$")
_CSP_SCHEME_ONLY = re.compile(r"^[a-z][a-z0-9+.-]*:$", re.IGNORECASE)


def build_csp(
    *, frame_ancestors: Sequence[str] = (), extra: Mapping[str, Sequence[str]] | None = None
) -> str:
    """The Content-Security-Policy header value of every response.

    ``frame_ancestors`` are the origins allowed to embed the widget: ``'self'`` plus them, or ``'none'``
    when there are none. ``extra`` appends sources to a directive (or adds a directive); a ``'none'``
    it extends is replaced.

    Raises:
        ValueError: a frame ancestor is not an http(s) origin (``*`` included), or ``extra`` names a bad
            directive, a malformed source, a source that re-opens script injection, or a scheme-only
            source in a script directive.
    """
    ancestors: list[str] = []
    for entry in frame_ancestors:
        origin = normalize_origin(entry)
        if origin is None:
            raise ValueError(f"frame ancestor {entry!r} is not an http or https origin")
        ancestors.append(origin)
    directives = {name: list(sources) for name, sources in _CSP_DIRECTIVES}
    directives["frame-ancestors"] = ["'self'", *ancestors] if ancestors else ["'none'"]
    for name, sources in (extra or {}).items():
        if not _CSP_DIRECTIVE_NAME.match(name):
            raise ValueError(f"CSP directive name {name!r} is not valid")
        for source in sources:
            if not _CSP_SOURCE.match(source):
                raise ValueError(f"CSP source {source!r} for {name} is empty or holds a space, ';' or ','")
            if source.lower() in _CSP_FORBIDDEN_SOURCES or (
                name in _CSP_SCRIPT_DIRECTIVES and _CSP_SCHEME_ONLY.match(source)
            ):
                raise ValueError(f"CSP source {source} for {name} would allow injected script; refused")
        current = directives.setdefault(name, [])
        if current == ["'none'"] and sources:
            current.clear()
        current.extend(source for source in sources if source not in current)
    return "; ".join(f"{name} {' '.join(sources)}" for name, sources in directives.items())


class SecurityHeadersMiddleware:
    """CSP, ``nosniff``, ``Referrer-Policy`` (and ``X-Frame-Options`` when nothing may frame us).

    Added to every HTTP response, HTML or not, unless the app already set that header for a route on
    purpose. ``Referrer-Policy: no-referrer``: a result links out of the product, and the page URL holds
    the search query and room filters, which must not leak to the linked site.

    ``frameable_paths`` None: every response may be framed by ``frame_ancestors``. A collection: only
    those exact paths may (the widget page, ``/embed``); every other response, the full search page
    included, gets ``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``, so the page with the
    sign-in form can never be clickjacked, whatever the embed allow-list says. ``X-Frame-Options``
    cannot name origins, so a frameable path with an allow-list omits it (``frame-ancestors`` rules).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        frame_ancestors: Sequence[str],
        csp_extra: Mapping[str, Sequence[str]] | None = None,
        report_only: bool = False,
        frameable_paths: Collection[str] | None = None,
    ) -> None:
        self.app = app
        self.frameable_paths = None if frameable_paths is None else frozenset(frameable_paths)
        self.headers = self._headers(frame_ancestors, csp_extra, report_only)
        self.unframed_headers = (
            self.headers if self.frameable_paths is None else self._headers((), csp_extra, report_only)
        )

    @staticmethod
    def _headers(
        frame_ancestors: Sequence[str], csp_extra: Mapping[str, Sequence[str]] | None, report_only: bool
    ) -> dict[str, str]:
        csp_name = "Content-Security-Policy-Report-Only" if report_only else "Content-Security-Policy"
        headers = {
            csp_name: build_csp(frame_ancestors=frame_ancestors, extra=csp_extra),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
        }
        if not frame_ancestors:
            # For browsers without CSP frame-ancestors; it cannot express an allow-list, so only "none".
            headers["X-Frame-Options"] = "DENY"
        return headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        framed = self.frameable_paths is None or scope["path"] in self.frameable_paths
        chosen = self.headers if framed else self.unframed_headers

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in chosen.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)
