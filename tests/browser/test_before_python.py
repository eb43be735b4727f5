"""Before Python is ready the page already searches (static/fallback.js, results as text), and
Python then takes over without losing what was typed or found."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from ._hostile import WORD
from .conftest import PYTHON_READY_MS, SESSION_STORAGE_KEY, Server

pytestmark = pytest.mark.browser


# The keystroke stage's sources: its bundle (what the page names) or its file list.
STAGE_FILES = re.compile(r"/py/keys(-bundle)?\.json")
# What the page's Python waits for on each interpreter: PyScript's configuration (pyscript.toml:
# PyScript starts nothing without it) on Pyodide, the page bundle on MicroPython (the stage runs
# without it; the page is imported from it).
PAGE_PYTHON_FILES = re.compile(r"/pyscript\.toml|/py/page-bundle\.json")


class HeldPython:
    """Holds the page's Python (on either interpreter, :data:`PAGE_PYTHON_FILES`) until
    :meth:`release`: until then the page is the fallback's and, unless ``stage`` is False, the
    keystroke stage's (tests/browser/test_keys_stage.py); with ``stage=False`` the stage's file list
    is held too, so the page is the fallback's alone (a stage still loading, or failed)."""

    def __init__(self, page: Any, *, stage: bool = True) -> None:
        self.routes: list[Any] = []
        self.released = False
        page.route(PAGE_PYTHON_FILES, self._hold)
        if not stage:
            page.route(STAGE_FILES, self._hold)

    def _hold(self, route: Any) -> None:
        if self.released:
            route.continue_()
        else:
            self.routes.append(route)

    def release(self) -> None:
        self.released = True
        for route in self.routes:
            route.continue_()


def _signed_in(page: Any, server: Server, username: str) -> None:
    user_id, token = server.credentials(username)
    session = json.dumps({"userId": user_id, "authToken": token, "username": username, "name": username})
    page.add_init_script(f"sessionStorage.setItem({json.dumps(SESSION_STORAGE_KEY)}, {json.dumps(session)});")


def test_enter_searches_before_python_and_python_keeps_it(page: Any, server: Server) -> None:
    held = HeldPython(page, stage=False)
    _signed_in(page, server, "bob")
    page.goto(server.url)
    page.wait_for_selector("html[data-fallback=ready]")
    assert page.get_attribute("html", "data-py") is None
    page.click("#search-box")
    page.keyboard.type("in:ops failover")
    page.keyboard.press("Enter")
    page.wait_for_selector("#fallback-results li")
    assert "failover" in page.inner_text("#fallback-results").lower()
    assert page.url.endswith("?q=in%3Aops+failover")
    page.keyboard.type(" more words")  # still typing while Python loads

    held.release()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    # nothing typed is lost: the finished filter is now a chip, the words stay in the box
    assert page.locator("#chips .chip-label").all_inner_texts() == ["#ops"]
    assert page.input_value("#search-box") == "failover more words"
    assert page.is_hidden("#fallback-results")
    assert page.locator("#result-list > li").count() >= 1  # the fallback's results, now Python's
    assert set(page.locator("#result-list .result-room").all_inner_texts()) == {"#ops"}


def test_the_status_speaks_of_loading_only_when_a_chip_is_missing(page: Any, server: Server) -> None:
    """While Python loads the box suggests and searches, so the status says nothing about loading;
    a finished filter (which Python would make a chip) is the moment it says why there is none,
    and Python's own status replaces that once it is ready. (With the keystroke stage there, the
    chip is made at once: the fallback alone here.)"""
    held = HeldPython(page, stage=False)
    _signed_in(page, server, "bob")
    page.goto(server.url)
    page.wait_for_selector("html[data-fallback=ready]")
    page.click("#search-box")
    page.keyboard.type("in:op")
    page.wait_for_selector("#suggestions [role=option]")  # the fallback's own suggestions
    assert page.inner_text("#status").strip() == ""
    page.keyboard.type("s ")
    assert "chips once the page has finished loading" in page.inner_text("#status")

    held.release()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert page.locator("#chips .chip-label").all_inner_texts() == ["#ops"]
    assert "finished loading" not in page.inner_text("#status")


# The fallback's lookups of the caller's rooms and people (static/fallback.js, lookUp), and any
# lookup the page's Python makes of its own.
LOOKUPS = re.compile(r"/api/v1/(rooms\.autocomplete\.channelAndPrivate|users\.autocomplete)\?")


def test_lookups_still_on_their_way_are_not_asked_for_again(page: Any, server: Server) -> None:
    """Python can take over before the fallback's lookups of the caller's rooms and people are in
    (a fast start over a slow link): it waits for those instead of asking again, one round trip
    more, and the token being typed gets its list the moment they land."""
    asked: list[str] = []
    held: list[Any] = []

    def hold(route: Any) -> None:
        asked.append(route.request.url)
        if len(asked) <= 2:
            held.append(route)
        else:
            route.continue_()

    page.route(LOOKUPS, hold)
    _signed_in(page, server, "bob")
    page.goto(server.url)
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    page.click("#search-box")
    page.keyboard.type("in:gen")
    assert page.locator("#suggestions [role=option]").count() == 0  # nothing to suggest from yet
    for route in held:
        route.continue_()
    page.wait_for_function(
        "() => [...document.querySelectorAll('#suggestions [role=option]')]"
        ".some((o) => o.textContent.includes('general'))"
    )
    page.wait_for_function("() => window.aiSearchPrefetched === true")
    assert len(asked) == 2, asked  # the fallback's two lookups, and none of Python's own


def test_a_shared_url_is_searched_before_python(page: Any, server: Server) -> None:
    held = HeldPython(page)
    _signed_in(page, server, "bob")
    page.goto(server.url + "?q=failover")
    page.wait_for_selector("#fallback-results li")
    assert page.input_value("#search-box") == "failover"
    held.release()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert page.input_value("#search-box") == "failover"
    assert page.locator("#result-list > li").count() >= 1


def test_the_fallback_renders_hostile_text_as_text(page: Any, server: Server, hostile: None) -> None:
    held = HeldPython(page)
    _signed_in(page, server, "bob")
    page.goto(server.url + f"?q={WORD}")
    page.wait_for_selector("#fallback-results li")
    assert '<img src=x onerror="window.__xss = 1">' in page.inner_text("#fallback-results")
    assert page.evaluate("document.querySelectorAll('#fallback-results *:not(li)').length") == 0
    assert page.evaluate("window.__xss ?? null") is None
    held.release()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
