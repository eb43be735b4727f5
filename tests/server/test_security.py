"""The HTTP security edge: Origin decisions, Host checks, CORS, the body cap and the security headers.

Middleware runs in-process (httpx.ASGITransport) around a tiny Starlette app; the streamed-body cases
drive the ASGI interface by hand, because an HTTP client always frames the body itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ai_search_server import errors
from ai_search_server.body_limit import DEFAULT_MAX_REQUEST_BODY_BYTES, BodyLimitMiddleware
from ai_search_server.mcp import MCP_PATH
from ai_search_server.origin_middleware import (
    CORS_ALLOWED_HEADERS,
    CORS_PREFLIGHT_MAX_AGE_SECONDS,
    OriginMiddleware,
)
from ai_search_server.origins import (
    OriginPolicy,
    default_allowed_hosts,
    host_name,
    normalize_origin,
    origin_allowed,
    parse_origin_list,
    same_origin_as_host,
)
from ai_search_server.security_headers import SecurityHeadersMiddleware, build_csp

SITE = "http://127.0.0.1:8000"
WIDGET_HOST = "https://intranet.example.net:8443"
PARTNER = "https://wiki.example.org"
EVIL = "https://evil.example"
ORIGIN_REFUSED = {"success": False, "error": "Origin not allowed", "errorType": "error-origin-not-allowed"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- origin_allowed ---------------------------------------------------------------------------------

# A site behind a path with a trailing slash, a partner with a path in its entry, a bare `*` and a typo
# among the entries, and a widget host on a non-default port.
POLICY = OriginPolicy(
    "https://chat.example.com/ai/",
    cors_allowed_origins=("https://wiki.example.org/app", "*", "not an origin"),
    embed_allowed_origins=(WIDGET_HOST,),
)


@pytest.mark.parametrize(
    ("origin", "expected"),
    [
        pytest.param(None, True, id="no-origin-header-is-a-native-client-and-allowed"),
        pytest.param("https://chat.example.com", True, id="same-origin-is-allowed"),
        pytest.param("https://chat.example.com:443", True, id="explicit-default-port-equals-no-port"),
        pytest.param("HTTPS://CHAT.EXAMPLE.COM", True, id="scheme-and-host-compare-case-insensitively"),
        pytest.param("https://chat.example.com/other/path", True, id="a-path-in-the-origin-is-ignored"),
        pytest.param("http://chat.example.com", False, id="other-scheme-is-refused"),
        pytest.param("https://chat.example.com:8443", False, id="other-port-is-refused"),
        pytest.param("https://chat.example.com.", False, id="trailing-dot-is-another-origin"),
        pytest.param("https://evil.chat.example.com", False, id="subdomain-is-refused"),
        pytest.param("https://chat.example.com.evil.io", False, id="suffix-trick-is-refused"),
        pytest.param(
            "https://chat.example.com@evil.io", False, id="userinfo-trick-resolves-to-the-real-host"
        ),
        pytest.param("https://wiki.example.org", True, id="cors-entry-with-a-path-matches-its-origin"),
        pytest.param("https://WIKI.example.org:443", True, id="cors-entry-matches-normalised"),
        pytest.param(WIDGET_HOST, True, id="embed-origin-is-an-allowed-api-origin"),
        pytest.param("https://intranet.example.net", False, id="embed-origin-needs-its-port"),
        pytest.param(EVIL, False, id="star-among-entries-authorises-nobody"),
        pytest.param("null", False, id="null-origin-is-refused"),
        pytest.param("", False, id="empty-origin-is-refused"),
        pytest.param("not-an-origin", False, id="unparsable-origin-is-refused"),
        pytest.param("*", False, id="star-as-origin-is-refused"),
        pytest.param("chrome-extension://abcdef", False, id="non-http-scheme-is-refused"),
        pytest.param("file://", False, id="file-origin-is-refused"),
        pytest.param("https://chat.example.com:99999", False, id="port-out-of-range-is-refused"),
    ],
)
def test_origin_allowed_follows_upstream_rules(origin: str | None, expected: bool) -> None:
    assert origin_allowed(origin, POLICY) is expected


@pytest.mark.parametrize(
    ("policy", "origin", "expected"),
    [
        pytest.param(
            OriginPolicy(SITE, cors_allowed_origins=("*",)), EVIL, False, id="star-alone-is-no-wildcard"
        ),
        pytest.param(
            OriginPolicy(SITE, cors_allowed_origins=("*",)), SITE, True, id="star-keeps-same-origin"
        ),
        pytest.param(OriginPolicy(SITE), "http://127.0.0.1", False, id="no-cors-lists-mean-same-origin-only"),
        pytest.param(OriginPolicy(SITE), "http://localhost:8000", False, id="localhost-is-not-127-0-0-1"),
        pytest.param(
            OriginPolicy("http://[0:0::1]:8000"), "http://[::1]:8000", True, id="ipv6-compared-normalised"
        ),
        pytest.param(
            OriginPolicy("http://example.com:80/"), "http://example.com", True, id="site-default-port"
        ),
    ],
)
def test_origin_allowed_edge_policies(policy: OriginPolicy, origin: str, expected: bool) -> None:
    assert origin_allowed(origin, policy) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(
            "https://bücher.example", "https://xn--bcher-kva.example", id="idna-host-becomes-punycode"
        ),
        pytest.param(
            "http://[::FFFF:1.2.3.4]:8", "http://[::ffff:102:304]:8", id="ipv6-serialised-like-whatwg"
        ),
        pytest.param("  https://a.example  ", "https://a.example", id="surrounding-spaces-are-trimmed"),
        pytest.param("https://exa mple.com", None, id="space-in-host-is-unparsable"),
        pytest.param("https://a%2eexample", None, id="percent-escape-in-host-is-unparsable"),
        pytest.param("http://[fe80::1%25eth0]", None, id="ipv6-zone-id-is-unparsable"),
        pytest.param("http:/a.example", None, id="missing-slash-is-unparsable"),
    ],
)
def test_normalize_origin(value: str, expected: str | None) -> None:
    assert normalize_origin(value) == expected


def test_policy_lists_entries_that_can_never_match() -> None:
    assert POLICY.ignored_entries == ("*", "not an origin")


def test_parse_origin_list_splits_a_comma_separated_setting() -> None:
    assert parse_origin_list(" https://a.example, ,https://b.example ,") == (
        "https://a.example",
        "https://b.example",
    )


def test_policy_refuses_a_site_url_that_is_not_http() -> None:
    with pytest.raises(ValueError, match="site_url"):
        OriginPolicy("ftp://files.example")


# -- allowed hosts ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("site_url", "expected"),
    [
        pytest.param(SITE, ("127.0.0.1", "localhost", "[::1]"), id="loopback-site"),
        pytest.param(
            "https://Chat.Example.com/ai/", ("chat.example.com", "localhost", "127.0.0.1", "[::1]"), id="public-site"
        ),
        pytest.param("http://[::1]:8000", ("[::1]", "localhost", "127.0.0.1"), id="ipv6-site"),
    ],
)
def test_default_allowed_hosts_are_names_without_ports(site_url: str, expected: tuple[str, ...]) -> None:
    assert default_allowed_hosts(site_url) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("localhost:9000", "localhost", id="name-and-port"),
        pytest.param("Chat.Example.COM", "chat.example.com", id="name-lower-cased"),
        pytest.param("[::1]:9000", "[::1]", id="ipv6-and-port"),
        pytest.param("[::1]", "[::1]", id="ipv6"),
        pytest.param("127.0.0.1.:8000", "127.0.0.1.", id="trailing-dot-kept-so-it-does-not-match"),
        pytest.param("", None, id="empty"),
        pytest.param("[::1", None, id="unclosed-bracket"),
        pytest.param("::1", None, id="unbracketed-ipv6"),
        pytest.param("a.example:", None, id="colon-without-port"),
        pytest.param("a.example:0", None, id="port-zero"),
        pytest.param("a.example:70000", None, id="port-too-large"),
        pytest.param("a.example:80x", None, id="port-not-a-number"),
        pytest.param("[::1]x", None, id="junk-after-bracket"),
    ],
)
def test_host_name_keeps_the_name_and_checks_the_port(value: str, expected: str | None) -> None:
    assert host_name(value) == expected


def test_policy_accepts_configured_names_besides_the_site_and_loopback() -> None:
    assert OriginPolicy(SITE).allowed_hosts == default_allowed_hosts(SITE)
    listed = OriginPolicy("https://chat.example.com", allowed_hosts=("Search.Example.org:8443",))
    assert listed.allowed_hosts == ("chat.example.com", "localhost", "127.0.0.1", "[::1]", "search.example.org")
    assert OriginPolicy(SITE, allowed_hosts=()).allowed_hosts == ()
    with pytest.raises(ValueError, match="allowed_hosts entry"):
        OriginPolicy(SITE, allowed_hosts=("http://chat.example.com/",))


@pytest.mark.parametrize(
    ("origin", "host", "expected"),
    [
        pytest.param("http://localhost:9000", "localhost:9000", True, id="ssh-forwarded-port"),
        pytest.param("HTTP://LOCALHOST:9000/path", "localhost:9000", True, id="spelling-of-origin"),
        pytest.param("http://chat.example.com", "chat.example.com:80", True, id="default-port-in-host"),
        pytest.param("https://localhost:9000", "localhost:9000", False, id="other-scheme"),
        pytest.param("http://localhost:9001", "localhost:9000", False, id="other-port"),
        pytest.param("http://127.0.0.1:9000", "localhost:9000", False, id="other-name"),
        pytest.param("null", "localhost:9000", False, id="null-origin"),
    ],
)
def test_same_origin_as_host(origin: str, host: str, expected: bool) -> None:
    assert same_origin_as_host(origin, host) is expected


def test_same_origin_as_host_over_https() -> None:
    assert same_origin_as_host("https://chat.example.com", "chat.example.com:443", "https")
    assert not same_origin_as_host("http://chat.example.com", "chat.example.com", "https")


# -- the middleware stack ---------------------------------------------------------------------------


class Calls:
    def __init__(self) -> None:
        self.count = 0


def make_app(
    calls: Calls, policy: OriginPolicy, *, max_body_bytes: int = DEFAULT_MAX_REQUEST_BODY_BYTES
) -> ASGIApp:
    async def echo(request: Request) -> Response:
        calls.count += 1
        body = await request.body()
        return JSONResponse({"success": True, "bytes": len(body)})

    async def page(_request: Request) -> Response:
        calls.count += 1
        return HTMLResponse("<!doctype html><title>ai-search</title>")

    async def own_csp(_request: Request) -> Response:
        return JSONResponse({}, headers={"Content-Security-Policy": "default-src 'none'"})

    app = Starlette(
        routes=[
            Route("/api/v1/echo", echo, methods=["GET", "POST"]),
            Route("/api/v1/mcp", echo, methods=["POST"]),
            Route("/api/v1/own-csp", own_csp, methods=["GET"]),
            Route("/", page, methods=["GET"]),
        ]
    )
    # The order app.create_app uses, outermost first.
    return SecurityHeadersMiddleware(
        OriginMiddleware(BodyLimitMiddleware(app, max_body_bytes=max_body_bytes), policy),
        frame_ancestors=policy.embed_allowed_origins,
    )


STACK_POLICY = OriginPolicy(SITE, cors_allowed_origins=(PARTNER,), embed_allowed_origins=(WIDGET_HOST,))


def client(app: ASGIApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=SITE)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("method", "path", "headers", "status", "allow_origin"),
    [
        pytest.param("GET", "/api/v1/echo", {}, 200, None, id="no-origin-passes-without-cors-headers"),
        pytest.param(
            "GET", "/api/v1/echo", {"Origin": SITE}, 200, None, id="same-origin-gets-no-cors-headers"
        ),
        pytest.param("GET", "/api/v1/echo", {"Origin": PARTNER}, 200, PARTNER, id="allowed-cross-origin-get"),
        pytest.param(
            "POST", "/api/v1/echo", {"Origin": WIDGET_HOST}, 200, WIDGET_HOST, id="embed-origin-post"
        ),
        pytest.param(
            "GET", "/api/v1/echo", {"Origin": EVIL}, 403, None, id="data-get-from-evil-origin-refused"
        ),
        pytest.param("POST", "/api/v1/echo", {"Origin": EVIL}, 403, None, id="post-from-evil-origin-refused"),
        pytest.param("GET", "/api/v1/echo", {"Origin": "null"}, 403, None, id="null-origin-refused"),
        pytest.param(
            "GET",
            "/api/v1/echo",
            {"Sec-Fetch-Site": "cross-site"},
            403,
            None,
            id="cross-site-browser-load-without-origin-refused",
        ),
        pytest.param(
            "GET",
            "/api/v1/echo",
            {"Sec-Fetch-Site": "same-origin"},
            200,
            None,
            id="same-origin-browser-load-without-origin-passes",
        ),
        pytest.param("GET", "/", {"Origin": EVIL}, 200, None, id="page-outside-api-is-not-origin-checked"),
        pytest.param(
            "POST",
            "/api/v1/echo",
            {"Host": "localhost:9000", "Origin": "http://localhost:9000"},
            200,
            None,
            id="page-through-a-forwarded-port-is-same-origin",
        ),
        pytest.param(
            "POST",
            "/api/v1/echo",
            {"Host": "localhost:9000", "Origin": "http://localhost:9001"},
            403,
            None,
            id="origin-on-another-port-than-host-refused",
        ),
        pytest.param(
            "POST",
            "/api/v1/echo",
            {"Host": "localhost:9000", "Origin": SITE},
            200,
            None,
            id="site-origin-passes-under-any-accepted-host",
        ),
    ],
)
async def test_origin_checks_on_api_paths(
    method: str, path: str, headers: dict[str, str], status: int, allow_origin: str | None
) -> None:
    calls = Calls()
    async with client(make_app(calls, STACK_POLICY)) as http:
        response = await http.request(method, path, headers=headers)
    assert response.status_code == status
    assert response.headers.get("access-control-allow-origin") == allow_origin
    if status == 403:
        assert response.json() == ORIGIN_REFUSED
        assert calls.count == 0
    if path.startswith("/api/"):
        assert "Origin" in response.headers.get("vary", "")
    if allow_origin is not None:
        assert "X-RateLimit-Remaining" in response.headers["access-control-expose-headers"]


@pytest.mark.anyio
async def test_two_origin_headers_are_refused() -> None:
    async with client(make_app(Calls(), STACK_POLICY)) as http:
        response = await http.get("/api/v1/echo", headers=[("Origin", SITE), ("Origin", EVIL)])
    assert response.status_code == 403


@pytest.mark.anyio
async def test_mcp_path_refuses_in_a_jsonrpc_envelope() -> None:
    async with client(make_app(Calls(), STACK_POLICY)) as http:
        response = await http.post("/api/v1/mcp", json={}, headers={"Origin": EVIL})
    assert response.status_code == 403
    assert response.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32000, "message": "Origin is not allowed"},
    }


def test_the_jsonrpc_paths_are_the_mcp_endpoints() -> None:
    """The middleware's refusals take the JSON-RPC envelope exactly where the MCP endpoint is mounted."""
    assert errors.DEFAULT_JSONRPC_PATHS == (MCP_PATH,)


@pytest.mark.anyio
async def test_preflight_from_allowed_origin_is_answered_without_the_app() -> None:
    calls = Calls()
    headers = {
        "Origin": WIDGET_HOST,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "x-user-id, x-auth-token, content-type",
        "Access-Control-Request-Private-Network": "true",
    }
    async with client(make_app(calls, STACK_POLICY)) as http:
        response = await http.options("/api/v1/echo", headers=headers)
    assert response.status_code == 204
    assert calls.count == 0
    assert response.headers["access-control-allow-origin"] == WIDGET_HOST
    assert response.headers["access-control-allow-methods"] == "GET, POST"
    allowed = {h.strip().lower() for h in response.headers["access-control-allow-headers"].split(",")}
    assert allowed == {h.lower() for h in CORS_ALLOWED_HEADERS}
    assert response.headers["access-control-max-age"] == str(CORS_PREFLIGHT_MAX_AGE_SECONDS)
    assert response.headers["access-control-allow-private-network"] == "true"
    assert "access-control-allow-credentials" not in response.headers
    assert "Origin" in response.headers["vary"]


@pytest.mark.anyio
async def test_preflight_from_evil_origin_is_refused() -> None:
    headers = {"Origin": EVIL, "Access-Control-Request-Method": "POST"}
    async with client(make_app(Calls(), STACK_POLICY)) as http:
        response = await http.options("/api/v1/echo", headers=headers)
    assert response.status_code == 403
    assert "access-control-allow-origin" not in response.headers


@pytest.mark.anyio
async def test_star_in_the_list_never_produces_a_star_cors_header() -> None:
    policy = OriginPolicy(SITE, cors_allowed_origins=("*", PARTNER))
    async with client(make_app(Calls(), policy)) as http:
        allowed = await http.get("/api/v1/echo", headers={"Origin": PARTNER})
        refused = await http.get("/api/v1/echo", headers={"Origin": EVIL})
    assert allowed.headers["access-control-allow-origin"] == PARTNER
    assert refused.status_code == 403
    assert "access-control-allow-origin" not in refused.headers


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("host", "path", "status"),
    [
        pytest.param("127.0.0.1:8000", "/api/v1/echo", 200, id="site-host-passes"),
        pytest.param("localhost:8000", "/api/v1/echo", 200, id="localhost-passes-on-a-loopback-site"),
        pytest.param("LOCALHOST:8000", "/api/v1/echo", 200, id="host-compares-case-insensitively"),
        pytest.param("[::1]:8000", "/api/v1/echo", 200, id="ipv6-loopback-passes"),
        pytest.param("evil.example:8000", "/api/v1/echo", 421, id="rebound-name-refused-on-api"),
        pytest.param("evil.example:8000", "/", 421, id="rebound-name-refused-on-the-page-too"),
        pytest.param("127.0.0.1:9000", "/api/v1/echo", 200, id="forwarded-port-passes"),
        pytest.param("localhost", "/api/v1/echo", 200, id="loopback-name-without-a-port-passes"),
        pytest.param("127.0.0.2:8000", "/api/v1/echo", 200, id="any-ipv4-loopback-passes"),
        pytest.param("localhost.:8000", "/api/v1/echo", 421, id="localhost-trailing-dot-refused"),
        pytest.param("evil.example", "/api/v1/echo", 421, id="rebound-name-without-a-port-refused"),
        pytest.param("127.0.0.1.:8000", "/api/v1/echo", 421, id="trailing-dot-refused"),
    ],
)
async def test_host_header_guards_against_dns_rebinding(host: str, path: str, status: int) -> None:
    calls = Calls()
    async with client(make_app(calls, STACK_POLICY)) as http:
        response = await http.get(path, headers={"Host": host})
    assert response.status_code == status
    if status == 421:
        assert response.json()["errorType"] == "error-host-not-allowed"
        assert calls.count == 0


@pytest.mark.anyio
async def test_empty_allowed_hosts_turns_the_host_check_off() -> None:
    policy = OriginPolicy(SITE, allowed_hosts=())
    async with client(make_app(Calls(), policy)) as http:
        response = await http.get("/api/v1/echo", headers={"Host": "evil.example"})
        # Without a Host check the request's Host proves nothing: a rebound page may not call as itself.
        rebound = await http.get(
            "/api/v1/echo", headers={"Host": "evil.example", "Origin": "http://evil.example"}
        )
    assert response.status_code == 200
    assert rebound.status_code == 403


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("middleware", "options"),
    [
        pytest.param(OriginMiddleware, {"policy": OriginPolicy(SITE)}, id="origin"),
        pytest.param(BodyLimitMiddleware, {"max_body_bytes": 1}, id="body-limit"),
        pytest.param(SecurityHeadersMiddleware, {"frame_ancestors": ()}, id="security-headers"),
    ],
)
async def test_non_http_scopes_pass_through(middleware: Any, options: dict[str, Any]) -> None:
    seen: list[str] = []

    async def inner(scope: Scope, _receive: Receive, _send: Send) -> None:
        seen.append(scope["type"])

    websocket = {"type": "websocket", "path": "/api/v1/x", "headers": [(b"origin", EVIL.encode())]}
    for scope in ({"type": "lifespan"}, websocket):
        await middleware(inner, **options)(scope, _never_receive, _never_send)
    assert seen == ["lifespan", "websocket"]


async def _never_receive() -> Message:
    raise AssertionError("receive must not be called")


async def _never_send(_message: Message) -> None:
    raise AssertionError("send must not be called")


# -- body limit -------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("size", "status"),
    [
        pytest.param(DEFAULT_MAX_REQUEST_BODY_BYTES, 200, id="exactly-5-mib-is-accepted"),
        pytest.param(DEFAULT_MAX_REQUEST_BODY_BYTES + 1, 413, id="5-mib-plus-one-byte-is-refused"),
    ],
)
async def test_default_body_cap_is_5_mib(size: int, status: int) -> None:
    assert DEFAULT_MAX_REQUEST_BODY_BYTES == 5 * 1024 * 1024
    async with client(make_app(Calls(), STACK_POLICY)) as http:
        response = await http.post("/api/v1/echo", content=b"x" * size)
    assert response.status_code == status
    if status == 413:
        assert response.json() == {
            "success": False,
            "error": "Request body too large",
            "errorType": "error-request-too-large",
        }
        assert "content-security-policy" in response.headers
    else:
        assert response.json()["bytes"] == size


class Upload:
    """A hand-driven ASGI request: chunks of a body, then (optionally) a disconnect, counting reads."""

    def __init__(
        self, chunks: Iterator[bytes], *, content_length: int | None = None, disconnect: bool = False
    ):
        self.chunks = chunks
        self.disconnect = disconnect
        self.reads = 0
        self.bytes_read = 0
        self.sent: list[Message] = []
        self.headers = [] if content_length is None else [(b"content-length", str(content_length).encode())]

    def scope(self, path: str = "/api/v1/echo") -> Scope:
        return {"type": "http", "method": "POST", "path": path, "headers": self.headers, "query_string": b""}

    async def receive(self) -> Message:
        self.reads += 1
        chunk = next(self.chunks, None)
        if chunk is None:
            return {"type": "http.disconnect"}
        self.bytes_read += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(self, message: Message) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])


def endless(chunk_size: int) -> Iterator[bytes]:
    while True:
        yield b"x" * chunk_size


async def must_not_run(_scope: Scope, _receive: Receive, _send: Send) -> None:
    raise AssertionError("the app must not see an oversized request")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("content_length", "chunk_size"),
    [
        pytest.param(None, 400, id="chunked-upload-without-length-is-cut-off"),
        pytest.param(10, 400, id="lying-small-content-length-is-cut-off"),
        pytest.param(None, 5000, id="one-huge-chunk-is-refused-at-once"),
    ],
)
async def test_streamed_body_is_counted_and_reading_stops(
    content_length: int | None, chunk_size: int
) -> None:
    cap = 1000
    upload = Upload(endless(chunk_size), content_length=content_length)
    await BodyLimitMiddleware(must_not_run, max_body_bytes=cap)(upload.scope(), upload.receive, upload.send)
    assert upload.status == 413
    assert upload.bytes_read <= cap + chunk_size


@pytest.mark.anyio
async def test_declared_length_over_cap_is_refused_before_reading() -> None:
    upload = Upload(endless(10), content_length=1001)
    await BodyLimitMiddleware(must_not_run, max_body_bytes=1000)(upload.scope(), upload.receive, upload.send)
    assert upload.status == 413
    assert upload.reads == 0


@pytest.mark.anyio
async def test_streamed_413_on_the_mcp_path_is_jsonrpc() -> None:
    upload = Upload(endless(600))
    await BodyLimitMiddleware(must_not_run, max_body_bytes=1000)(
        upload.scope("/api/v1/mcp"), upload.receive, upload.send
    )
    assert upload.status == 413
    assert b'"jsonrpc":"2.0"' in upload.sent[1]["body"]


class Trickle(Upload):
    """An upload that sends a byte every ``interval`` seconds, for ever."""

    def __init__(self, interval: float) -> None:
        super().__init__(endless(1), content_length=1000)
        self.interval = interval

    async def receive(self) -> Message:
        await anyio.sleep(self.interval)
        return await super().receive()


# Seconds of the body deadline in the in-process tests: short, and far above the trickle interval.
TEST_BODY_DEADLINE_SECONDS = 0.2


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "marker"),
    [("/api/v1/echo", b'"errorType":"error-request-timeout"'), ("/api/v1/mcp", b'"jsonrpc":"2.0"')],
)
async def test_a_trickled_body_gets_408_and_connection_close_at_the_deadline(path: str, marker: bytes) -> None:
    upload = Trickle(interval=0.01)
    middleware = BodyLimitMiddleware(must_not_run, body_timeout_seconds=TEST_BODY_DEADLINE_SECONDS)
    with anyio.fail_after(TEST_BODY_DEADLINE_SECONDS * 20):
        await middleware(upload.scope(path), upload.receive, upload.send)
    assert upload.status == 408
    assert (b"connection", b"close") in upload.sent[0]["headers"]
    assert marker in upload.sent[1]["body"]
    assert upload.reads > 1, "the client did send, steadily; the deadline is on the whole body"


@pytest.mark.parametrize("seconds", [0, -1, float("inf"), float("nan")])
def test_a_body_deadline_that_cannot_work_is_refused(seconds: float) -> None:
    with pytest.raises(ValueError, match="body_timeout_seconds"):
        BodyLimitMiddleware(must_not_run, body_timeout_seconds=seconds)


class Recorder:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def __call__(self, _scope: Scope, receive: Receive, _send: Send) -> None:
        while True:
            message = await receive()
            self.messages.append(message)
            if message["type"] != "http.request" or not message.get("more_body", False):
                return


@pytest.mark.anyio
async def test_body_under_the_cap_reaches_the_app_whole() -> None:
    def three_chunks() -> Iterator[bytes]:
        yield b"ab"
        yield b"cd"

    async def receive_then_end() -> Message:
        chunk = next(chunks, None)
        return {"type": "http.request", "body": chunk or b"e", "more_body": chunk is not None}

    chunks = three_chunks()
    app = Recorder()
    scope = Upload(iter(())).scope()
    await BodyLimitMiddleware(app, max_body_bytes=5)(scope, receive_then_end, _never_send)
    assert app.messages == [{"type": "http.request", "body": b"abcde", "more_body": False}]


@pytest.mark.anyio
async def test_disconnect_mid_upload_is_not_passed_off_as_a_whole_body() -> None:
    upload = Upload(iter([b"part"]))
    app = Recorder()
    await BodyLimitMiddleware(app, max_body_bytes=100)(upload.scope(), upload.receive, upload.send)
    assert app.messages == [
        {"type": "http.request", "body": b"part", "more_body": True},
        {"type": "http.disconnect"},
    ]


def test_body_cap_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="max_body_bytes"):
        BodyLimitMiddleware(must_not_run, max_body_bytes=-1)


# -- security headers and CSP -----------------------------------------------------------------------


def directives(csp: str) -> dict[str, list[str]]:
    parsed: dict[str, list[str]] = {}
    for part in csp.split(";"):
        name, *sources = part.split()
        parsed[name] = sources
    return parsed


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "headers"),
    [
        pytest.param("/", {}, id="html-page"),
        pytest.param("/api/v1/echo", {}, id="json-api-response"),
        pytest.param("/api/v1/echo", {"Origin": EVIL}, id="origin-refusal"),
        pytest.param("/api/v1/echo", {"Host": "evil.example"}, id="host-refusal"),
    ],
)
async def test_every_response_carries_the_security_headers(path: str, headers: dict[str, str]) -> None:
    async with client(make_app(Calls(), OriginPolicy(SITE))) as http:
        response = await http.get(path, headers=headers)
    assert response.headers["content-security-policy"] == build_csp()
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["x-frame-options"] == "DENY"


@pytest.mark.anyio
async def test_embed_origins_become_frame_ancestors_without_x_frame_options() -> None:
    async with client(make_app(Calls(), STACK_POLICY)) as http:
        response = await http.get("/")
    assert directives(response.headers["content-security-policy"])["frame-ancestors"] == [
        "'self'",
        WIDGET_HOST,
    ]
    assert "x-frame-options" not in response.headers


@pytest.mark.anyio
async def test_a_route_that_sets_its_own_csp_keeps_it() -> None:
    async with client(make_app(Calls(), STACK_POLICY)) as http:
        response = await http.get("/api/v1/own-csp")
    assert response.headers.get_list("content-security-policy") == ["default-src 'none'"]


@pytest.mark.anyio
async def test_report_only_mode_sends_the_report_only_header() -> None:
    async def ok(_scope: Scope, _receive: Receive, send: Send) -> None:
        await Response("ok")(_scope, _receive, send)

    app = SecurityHeadersMiddleware(ok, frame_ancestors=(), report_only=True)
    async with client(app) as http:
        response = await http.get("/")
    assert response.headers["content-security-policy-report-only"] == build_csp()
    assert "content-security-policy" not in response.headers


def test_csp_lets_pyodide_run_and_nothing_looser() -> None:
    policy = directives(build_csp())
    assert policy == {
        "default-src": ["'self'"],
        "script-src": ["'self'", "'wasm-unsafe-eval'"],
        "worker-src": ["'self'"],
        "connect-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "style-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }


@pytest.mark.parametrize(
    ("frame_ancestors", "extra", "directive", "expected"),
    [
        pytest.param(
            ["HTTPS://Wiki.Example.org:443/embed"],
            None,
            "frame-ancestors",
            ["'self'", "https://wiki.example.org"],
            id="frame-ancestors-are-normalised-origins-after-self",
        ),
        pytest.param(
            (),
            {"connect-src": ["https://metrics.example"]},
            "connect-src",
            ["'self'", "https://metrics.example"],
            id="extra-appends-to-a-directive",
        ),
        pytest.param((), {"base-uri": ["'self'"]}, "base-uri", ["'self'"], id="extra-replaces-none"),
        pytest.param(
            (), {"connect-src": ["'self'"]}, "connect-src", ["'self'"], id="extra-does-not-duplicate"
        ),
        pytest.param((), {"report-to": ["csp"]}, "report-to", ["csp"], id="extra-adds-a-directive"),
    ],
)
def test_build_csp_extends(
    frame_ancestors: list[str], extra: dict[str, list[str]] | None, directive: str, expected: list[str]
) -> None:
    assert directives(build_csp(frame_ancestors=frame_ancestors, extra=extra))[directive] == expected


@pytest.mark.parametrize(
    ("frame_ancestors", "extra"),
    [
        pytest.param(["*"], None, id="star-frame-ancestor"),
        pytest.param(["null"], None, id="null-frame-ancestor"),
        pytest.param((), {"script-src": ["'unsafe-eval'"]}, id="unsafe-eval"),
        pytest.param((), {"script-src": ["'unsafe-inline'"]}, id="unsafe-inline-script"),
        pytest.param((), {"style-src": ["'UNSAFE-INLINE'"]}, id="unsafe-inline-style-any-case"),
        pytest.param((), {"img-src": ["*"]}, id="star-source"),
        pytest.param((), {"script-src": ["https:"]}, id="scheme-only-script-source"),
        pytest.param((), {"worker-src": ["data:"]}, id="data-workers"),
        pytest.param((), {"connect-src": ["https://a.example; script-src *"]}, id="directive-injection"),
        pytest.param((), {"Script Src": ["'self'"]}, id="bad-directive-name"),
    ],
)
def test_build_csp_refuses_anything_looser(
    frame_ancestors: list[str], extra: dict[str, list[str]] | None
) -> None:
    with pytest.raises(ValueError):
        build_csp(frame_ancestors=frame_ancestors, extra=extra)
