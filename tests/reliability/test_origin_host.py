"""E. Origin and Host: every rule, on every state-changing route and on MCP, over real TCP.

The matrix crosses Host values (the site's name on its own port, another port and none, a case
variant, loopback names, other names, a trailing dot, a bad port) with Origin values (absent, the
site's own in three spellings, the Host's own, other port, trailing dot, other scheme, another site,
``null``) and ``Sec-Fetch-Site: cross-site`` with a cookie and no Origin. Expected:
a bad Host is 421 whatever else; otherwise a bad Origin is 403; otherwise the route answers as it
would anyway (never 403 nor 421). Refusals on ``/api/v1/mcp`` are JSON-RPC envelopes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import pytest

from ai_search_server.app import create_app
from ai_search_server.cli import DEFAULT_HOST, build_parser
from ai_search_server.mcp import MCP_PATH
from ai_search_server.routes import all_routes
from ai_search_server.store.base import Store
from tests.server.conftest import Workspace

from ._servers import ServedApp
from .conftest import Figure, reliability_settings

SITE = "http://ai.test:8000"
# Host names are compared without ports: the site's name and loopback names pass on any port (a
# forwarded port, a container mapping); another name, or a trailing dot, is refused (DNS rebinding).
HOSTS = {
    "ai.test:8000": True,
    "AI.TEST:8000": True,
    "ai.test:9000": True,
    "ai.test": True,
    "127.0.0.1:9000": True,
    "localhost": True,
    "evil.example": False,
    "evil.example:8000": False,
    "ai.test.:8000": False,
    "ai.test:0": False,
}
ORIGINS: dict[str, bool] = {
    "": True,  # no Origin: a native client (curl, an MCP SDK)
    "http://ai.test:8000": True,
    "HTTP://AI.TEST:8000": True,
    "http://ai.test:8000/some/path": True,
    "http://ai.test:9000": False,
    "http://ai.test": False,
    "http://127.0.0.1:9000": False,
    "http://ai.test.:8000": False,
    "https://ai.test:8000": False,
    "https://evil.example": False,
    "null": False,
}
# Origins that are same-origin with one Host only: the page loaded under that Host calls its own API.
SAME_ORIGIN_AS_HOST = {
    "ai.test:9000": "http://ai.test:9000",
    "ai.test": "http://ai.test",
    "127.0.0.1:9000": "http://127.0.0.1:9000",
}
FETCH_SITES = {"cross-site": False, "same-site": False, "same-origin": True, "none": True}
# Every state-changing route, one data route, and the MCP endpoint.
PATHS = [("POST", r.path) for r in all_routes() if r.method == "POST"] + [
    ("GET", "/api/v1/ai.search"),
    ("POST", MCP_PATH),
]


# What only the Origin/Host edge says (a route's own 403 is error-not-allowed).
EDGE_REFUSALS = (
    "error-origin-not-allowed",
    "error-host-not-allowed",
    "Origin is not allowed",
    "Host is not allowed",
)


def _cells() -> list[tuple[str, str, str, dict[str, str], int | None]]:
    """(method, path, label, headers, expected refusal status or None) for every cell."""
    cells = []
    for method, path in PATHS:
        for host, host_ok in HOSTS.items():
            variants: list[tuple[str, dict[str, str], bool]] = [
                (
                    f"origin={origin or 'absent'}",
                    {"Origin": origin} if origin else {},
                    ok or SAME_ORIGIN_AS_HOST.get(host) == origin,
                )
                for origin, ok in ORIGINS.items()
            ]
            variants += [
                (f"sec-fetch-site={site}", {"Sec-Fetch-Site": site, "Cookie": "session=1"}, ok)
                for site, ok in FETCH_SITES.items()
            ]
            for label, extra, origin_ok in variants:
                expected = None if host_ok and origin_ok else (421 if not host_ok else 403)
                cells.append((method, path, f"host={host} {label}", {"Host": host, **extra}, expected))
    return cells


def _refusal_shape_ok(path: str, response: httpx.Response) -> bool:
    body: Any = response.json()
    if path == MCP_PATH:
        return body.get("jsonrpc") == "2.0" and body["error"]["code"] == -32000 and "id" not in body
    wanted = "error-host-not-allowed" if response.status_code == 421 else "error-origin-not-allowed"
    return body.get("success") is False and body.get("errorType") == wanted


@pytest.mark.requirement("E1")
def test_every_origin_and_host_rule_holds_on_rest_and_mcp(
    store: Store, workspace: Workspace, figure: Figure
) -> None:
    settings = reliability_settings(site_url=SITE)
    auth = {
        **workspace["alice"].pat_headers,
        "Accept": "application/json",
        "Content-Type": "application/json",
    }
    mismatches: list[str] = []
    statuses: Counter[int] = Counter()
    cells = _cells()
    with (
        ServedApp(create_app(settings, store, limiter=None)) as server,
        httpx.Client(base_url=server.url) as http,
    ):
        for method, path, label, headers, expected in cells:
            body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}' if path == MCP_PATH else b"{}"
            response = http.request(
                method, path, headers={**auth, **headers}, content=body if method == "POST" else None
            )
            statuses[response.status_code] += 1
            if expected is None:
                if response.status_code == 421 or (
                    response.status_code == 403 and any(r in response.text for r in EDGE_REFUSALS)
                ):
                    mismatches.append(f"{method} {path} {label}: refused {response.status_code}")
            elif response.status_code != expected or not _refusal_shape_ok(path, response):
                mismatches.append(f"{method} {path} {label}: {response.status_code} {response.text[:100]}")
    default_bind = build_parser().parse_args(["serve"]).host
    figure(
        tried=len(cells),
        failed=len(mismatches) + (default_bind != "127.0.0.1"),
        routes=len(PATHS),
        mismatches=len(mismatches),
        statuses=dict(sorted(statuses.items())),
        default_bind=default_bind,
    )
    assert mismatches == []
    assert default_bind == DEFAULT_HOST == "127.0.0.1"
