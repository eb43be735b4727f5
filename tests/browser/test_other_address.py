"""The page opened under another address than the server's own: ``http://localhost:PORT/``.

The server runs at ``http://127.0.0.1:PORT/``; a browser that opens ``localhost`` (or arrives through
``ssh -L`` or a container's port map on another port) gets the page, and its calls to the API are
same-origin with the page, so signing in and searching work there too.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from .conftest import PYTHON_READY_MS, Server

pytestmark = pytest.mark.browser


def test_sign_in_and_search_work_when_the_page_is_opened_as_localhost(context: Any, server: Server) -> None:
    port = urlsplit(server.url).port
    origin = f"http://localhost:{port}"
    page = context.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(f"{origin}/")
        page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
        page.fill("#login-user", "dave")
        page.fill("#login-password", "demo-dave")
        page.click("#login-form button")
        page.wait_for_selector("html[data-auth=in]")
        assert "@dave" in page.inner_text("#whoami")
        page.fill("#search-box", "deploy")
        page.press("#search-box", "Enter")
        page.wait_for_function("() => document.querySelectorAll('#result-list > li').length > 0")
    finally:
        page.close()
    assert errors == []
    assert requests and all(url.startswith((origin, "data:", "blob:")) for url in requests)
