"""The page on MicroPython (page_python = "micropython", static/keys-boot.mjs): the stage first,
then the whole page in the same interpreter; a page that cannot start there is handed to Pyodide,
which the page's own <script type="py"> then runs, and nothing typed is lost on the way."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import HANDED_TO_PYODIDE, PYTHON_READY_MS, PageRecord, Server, open_page

pytestmark = pytest.mark.browser

# A page bundle whose entry module raises on import: what a module MicroPython cannot run would do.
BROKEN_BUNDLE = json.dumps(
    {"entry": "ai_search_web.main", "files": {"ai_search_web/main.py": "raise RuntimeError('not on MicroPython')\n"}}
)


# The page's interpreter names itself (MicroPython's runPython returns no value: the page is told).
IMPLEMENTATION = """(async () => {
  (await window.aiSearchPython).runPython("import js, sys\\njs.window.__implementation = sys.implementation.name");
  return window.__implementation;
})()"""


def _searches_with_a_chip(page: Any) -> None:
    """The page's own handlers answer: a finished filter becomes a chip, Enter searches."""
    page.click("#search-box")
    page.keyboard.type("in:ops failover")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.documentElement.dataset.searches")
    assert page.locator("#chips .chip-label").all_inner_texts() == ["#ops"]
    assert page.locator("#result-list > li").count() >= 1


@pytest.fixture(autouse=True)
def _on_micropython(server: Server) -> None:
    if server.python != "micropython":
        pytest.skip("this server's pages run on Pyodide (AI_SEARCH_PAGE_PYTHON)")


def test_the_page_runs_on_micropython_with_the_stages_interpreter(page: Any, server: Server) -> None:
    """One interpreter for the stage and the page: the page's Python is MicroPython's, and the
    page's own handlers answer (a chip, a search) after the stage stepped aside."""
    open_page(page, server, username="bob")
    assert page.get_attribute("html", "data-python") == "micropython"
    assert page.evaluate("(async () => (await window.aiSearchPython) === window.aiSearchKeys.interpreter)()")
    assert page.evaluate("(async () => await window.aiSearchKeys.page)()") is True
    implementation = page.evaluate(IMPLEMENTATION)
    assert implementation == "micropython"
    _searches_with_a_chip(page)


def test_a_page_that_cannot_start_on_micropython_starts_on_pyodide(
    page: Any, record: PageRecord, server: Server
) -> None:
    record.allow_error(HANDED_TO_PYODIDE)
    page.route("**/py/page-bundle.json*", lambda route: route.fulfill(body=BROKEN_BUNDLE, content_type="application/json"))
    open_page(page, server, username="bob")
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert page.get_attribute("html", "data-python") == "pyodide"
    assert page.evaluate("(async () => await window.aiSearchKeys.page)()") is False
    implementation = page.evaluate(IMPLEMENTATION)
    assert implementation == "cpython"
    # One page answers the box: the stage and MicroPython's page stopped listening.
    _searches_with_a_chip(page)
