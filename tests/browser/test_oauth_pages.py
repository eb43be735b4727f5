"""OAuth for MCP clients in Chromium: a client registers, the person signs in and consents on our pages,
the browser lands on the client's loopback redirect URI with the code, and the client calls a tool,
refreshes, and is refused once it revoked. Also: the pages at 360 px, light and dark.

The client's side (registration, PKCE, the token requests) is plain httpx; its redirect URI is a real
HTTP server on loopback that records what the browser brings.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from .conftest import EXPECT_MS, Server, Tabs

pytestmark = pytest.mark.browser

# Where the screenshots go: a directory named by the environment (to look at them), else the test's own.
SCREENSHOT_DIR_ENV = "AI_SEARCH_SCREENSHOT_DIR"
PHONE = {"width": 360, "height": 740}
HOSTILE_NAME = '<img src=x onerror="window.__xss=1">Claude-ish connector with averyveryverylongunbrokenname'


@dataclass
class Callback:
    """The client's redirect URI: a loopback HTTP server that records each query it is sent."""

    url: str
    received: list[dict[str, str]] = field(default_factory=list)

    @property
    def origin(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"


@contextmanager
def callback_server() -> Iterator[Callback]:
    callback = Callback("")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == "/callback":  # not the favicon the browser asks for
                callback.received.append({key: values[0] for key, values in parse_qs(parts.query).items()})
            body = b"<!doctype html><title>Connected</title><p>You can close this tab.</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads ``received``."""

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    callback.url = f"http://127.0.0.1:{httpd.server_address[1]}/callback"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield callback
    finally:
        httpd.shutdown()
        httpd.server_close()


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


def register(server: Server, redirect_uri: str, name: str) -> str:
    body = {
        "client_name": name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
    }
    response = httpx.post(f"{server.origin}/register", json=body, timeout=30)
    assert response.status_code == 201, response.text
    client_id: str = response.json()["client_id"]
    return client_id


def authorization_url(server: Server, client_id: str, redirect_uri: str, challenge: str) -> str:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "browser-state",
        "resource": f"{server.origin}/api/v1/mcp",
        "scope": "mcp",
    }
    return f"{server.origin}/authorize?{urlencode(query)}"


def call_tool(server: Server, access_token: str) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_channels_list_joined"}}
    headers = {"Authorization": f"Bearer {access_token}", "Accept": "application/json"}
    return httpx.post(f"{server.origin}/api/v1/mcp", json=body, headers=headers, timeout=30)


def token(server: Server, **form: str) -> httpx.Response:
    return httpx.post(f"{server.origin}/token", data=form, timeout=30)


def test_a_client_connects_through_the_sign_in_and_consent_pages(context: Any, server: Server) -> None:
    with callback_server() as callback:
        tabs = Tabs(context, server, also_allowed=(callback.origin,))
        try:
            client_id = register(server, callback.url, HOSTILE_NAME)
            verifier, challenge = pkce()
            page, _record = tabs.new()
            page.goto(authorization_url(server, client_id, callback.url, challenge))
            page.wait_for_selector("h1", timeout=EXPECT_MS)
            assert page.inner_text("h1") == "Sign in to connect"
            # The registered name is shown as text, never parsed as markup.
            assert page.inner_text("strong.client") == HOSTILE_NAME
            assert page.locator("main img").count() == 0
            page.fill("#username", "alice")
            page.fill("#password", "demo-alice")
            page.click("button.primary")
            page.wait_for_selector("button[value=allow]", timeout=EXPECT_MS)
            assert page.inner_text("h1") == f"Allow {HOSTILE_NAME}?"
            assert "@alice" in page.inner_text("main")
            assert urlsplit(callback.url).netloc in page.inner_text("strong.destination")
            page.click("button[value=allow]")
            page.wait_for_url(f"{callback.url}?*", timeout=EXPECT_MS)
            assert page.evaluate("window.__xss") is None

            (answer,) = callback.received
            assert answer["state"] == "browser-state" and answer["iss"] == server.origin
            exchanged = token(
                server,
                grant_type="authorization_code",
                code=answer["code"],
                code_verifier=verifier,
                client_id=client_id,
                redirect_uri=callback.url,
                resource=f"{server.origin}/api/v1/mcp",
            )
            assert exchanged.status_code == 200, exchanged.text
            tokens = exchanged.json()
            called = call_tool(server, tokens["access_token"])
            assert called.status_code == 200 and called.json()["result"]["isError"] is False
            channels = json.loads(called.json()["result"]["content"][0]["text"])["channels"]
            assert channels, "alice has joined channels in the demo"

            refreshed = token(
                server, grant_type="refresh_token", refresh_token=tokens["refresh_token"], client_id=client_id
            ).json()
            assert call_tool(server, refreshed["access_token"]).status_code == 200
            assert call_tool(server, tokens["access_token"]).status_code == 401

            revoked = httpx.post(
                f"{server.origin}/revoke",
                data={"token": refreshed["access_token"], "client_id": client_id},
                timeout=30,
            )
            assert revoked.status_code == 200
            refused = call_tool(server, refreshed["access_token"])
            assert refused.status_code == 401 and "resource_metadata=" in refused.headers["www-authenticate"]
        finally:
            tabs.check()


def _screenshot_dir(tmp_path: Path) -> Path:
    chosen = os.environ.get(SCREENSHOT_DIR_ENV)
    directory = Path(chosen) if chosen else tmp_path
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_pages_fit_a_phone_in_light_and_dark(
    context: Any, server: Server, tmp_path: Path, scheme: str
) -> None:
    """Sign-in, a refused sign-in and consent at 360 px: nothing wider than the screen, the scheme's
    colours applied, no CSP violation (the tab check), and a screenshot of each to look at."""
    shots = _screenshot_dir(tmp_path)
    tabs = Tabs(context, server)
    try:
        client_id = register(server, "http://127.0.0.1:9/callback", HOSTILE_NAME)
        _verifier, challenge = pkce()
        page, _record = tabs.new()
        page.set_viewport_size(PHONE)
        page.emulate_media(color_scheme=scheme)
        page.goto(authorization_url(server, client_id, "http://127.0.0.1:9/callback", challenge))
        page.wait_for_selector("#username", timeout=EXPECT_MS)
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == ("rgb(15, 20, 25)" if scheme == "dark" else "rgb(255, 255, 255)")

        def fits(name: str) -> None:
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE["width"], f"{name} is {width} px wide"
            page.screenshot(path=str(shots / f"oauth-{name}-{scheme}.png"), full_page=True)

        fits("sign-in")
        page.fill("#username", "alice")
        page.fill("#password", "wrong")
        page.click("button.primary")
        page.wait_for_selector(".alert", timeout=EXPECT_MS)
        fits("sign-in-refused")
        page.fill("#password", "demo-alice")
        page.click("button.primary")
        page.wait_for_selector("button[value=allow]", timeout=EXPECT_MS)
        fits("consent")
    finally:
        tabs.check()
