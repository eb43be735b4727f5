"""The page starts offline under the strict CSP, and Python takes over from the plain HTML."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from .conftest import PYTHON_READY_MS, PageRecord, Server, open_page

pytestmark = pytest.mark.browser


def test_python_becomes_ready_under_the_enforced_csp(page: Any, server: Server) -> None:
    """The page loads Pyodide from its own server, with the CSP enforced, and Python takes over
    (CSP violations, errors and foreign requests fail the fixture)."""
    response = page.goto(server.url)
    assert "'unsafe-eval'" not in response.headers["content-security-policy"]
    assert "script-src 'self' 'wasm-unsafe-eval'" in response.headers["content-security-policy"]
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert page.inner_text("#status") == "Sign in to search."
    assert page.get_attribute("html", "data-auth") == "out"


# What a full start, sign-in and search must and must not request, by the page's interpreter: on
# MicroPython the page never asks for Pyodide, PyScript or a single Python file but its two bundles.
REQUESTED = {
    "micropython": (
        {"/static/vendor/micropython-1.28.0-6/micropython.wasm", "/py/keys-bundle.json", "/py/page-bundle.json",
         "/api/v1/ai.search"},
        ("/static/vendor/pyodide-", "/static/vendor/pyscript-", "/pyscript.toml", "/py/ai_search/"),
    ),
    "pyodide": (
        {"/static/vendor/pyodide-314.0.2/pyodide.asm.wasm", "/py/ai_search/_grammar.py", "/api/v1/ai.search"},
        (),
    ),
}  # fmt: skip


def test_every_request_stays_on_the_origin(page: Any, record: PageRecord, server: Server) -> None:
    """A full start, sign-in and search load everything (the interpreter, the page's Python) from
    the server itself; not one request goes elsewhere (the fixture also checks every test), and the
    page on MicroPython loads nothing of Pyodide's."""
    open_page(page, server, username="bob")
    page.click("#search-box")
    page.keyboard.type("deploy in:engin")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.documentElement.dataset.searches")
    assert page.get_attribute("html", "data-python") == server.python
    paths = {urlsplit(url).path for url in record.requests}
    wanted, unwanted = REQUESTED[server.python]
    assert wanted <= paths
    assert not [path for path in paths if path.startswith(unwanted)]
    assert all(url.startswith(server.origin + "/") for url in record.requests if not url.startswith("data:"))


@pytest.mark.parametrize(
    ("scheme", "light_text"),
    [pytest.param("light", True, id="light"), pytest.param("dark", False, id="dark")],
)
def test_colours_follow_the_system_scheme(page: Any, server: Server, scheme: str, light_text: bool) -> None:
    page.emulate_media(color_scheme=scheme)
    open_page(page, server)
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    channels = [int(part) for part in background.removeprefix("rgb(").rstrip(")").split(",")[:3]]
    assert (sum(channels) > 3 * 128) is light_text


def test_the_page_fits_a_360_pixel_screen(page: Any, server: Server) -> None:
    """At 360 px nothing scrolls sideways, with chips, suggestions and results on screen."""
    page.set_viewport_size({"width": 360, "height": 740})
    open_page(page, server, username="bob")
    page.click("#search-box")
    page.keyboard.type("in:engineering from:carol after:2026-09-01 postgres")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.documentElement.dataset.searches")
    page.click("#search-box")
    page.keyboard.press("End")
    page.keyboard.type(" in:sup")
    page.wait_for_selector("#suggestions [role=option]")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    box = page.locator("#search-box").bounding_box()
    assert box is not None and box["width"] >= 80
