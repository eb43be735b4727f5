"""The page starts offline under the strict CSP, and Python takes over from the plain HTML."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import PYTHON_READY_MS, Server, open_page

pytestmark = pytest.mark.browser


def test_python_becomes_ready_under_the_enforced_csp(page: Any, server: Server) -> None:
    """The page loads PyScript and Pyodide from its own server, with the CSP enforced, and Python
    replaces the loading line (CSP violations, errors and foreign requests fail the fixture)."""
    response = page.goto(server.url)
    assert "'unsafe-eval'" not in response.headers["content-security-policy"]
    assert "script-src 'self' 'wasm-unsafe-eval'" in response.headers["content-security-policy"]
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert page.inner_text("#status") == "Sign in to search."
    assert page.get_attribute("html", "data-auth") == "out"


def test_a_reload_starts_python_from_the_memory_snapshot(page: Any, server: Server) -> None:
    """After a first start the page keeps a Pyodide memory snapshot; the next start restores it and
    Python works the same (the grammar turns a finished filter into a chip)."""
    open_page(page, server)
    page.wait_for_function("() => window.__pySnapshot === 'stored' || window.__pySnapshot === 'loaded'")
    page.reload()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert page.evaluate("window.__pySnapshot") == "loaded"
    page.fill("#search-box", "after:2026-11-01 ")
    page.dispatch_event("#search-box", "input")
    assert page.inner_text("#chips .chip-label") == "after:2026-11-01"
