"""The page says what is true: failed searches, limits, lockouts, counts, and why results matched.

- A search that fails (the server stopped, the network down, a 5xx) leaves the results before it on
  screen marked as not updated, with Retry; Ask AI waits for a search that worked.
- The box holds what the server takes (its maxlength is the server's limit) and counts down near it;
  a longer query from a link is explained, never sent.
- After too many wrong passwords the form says the server's real wait and clears the password.
- "50+" at the cap; stopwords unmarked; match reasons in words; an unfinished ``in:#`` not searched.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from ai_search import MAX_INTELLIGENT_SEARCH_RESULTS, MAX_SEARCH_QUERY_LENGTH
from ai_search_web.wording import COUNTER_FROM_CHARS, lockout_text

from .conftest import (
    PYTHON_READY_MS,
    SESSION_STORAGE_KEY,
    PageRecord,
    Server,
    Tabs,
    _start,
    _stop,
    open_page,
)
from .test_before_python import PAGE_PYTHON_FILES, STAGE_FILES
from .test_results import _search, _searches_done, wait_for_search

pytestmark = pytest.mark.browser

SEARCH_ROUTE = "**/api/v1/ai.search?*"
# Wrong passwords in a row that make the server refuse sign-in for a while (its login rate limit).
WRONG_PASSWORDS = 10


def _query_of(page: Any) -> str:
    return parse_qs(urlsplit(page.url).query).get("q", [""])[0]


def _assert_stale(page: Any, words: str) -> None:
    assert page.get_attribute("#results", "data-stale") == "true"
    assert page.is_visible("#retry")
    assert (
        page.inner_text("#search-failed-text")
        == f"The results below are still those of “{words}”: not updated."
    )
    assert page.is_disabled("#ask")
    assert float(page.evaluate("getComputedStyle(document.getElementById('result-list')).opacity")) < 1


# -- a search that failed -----------------------------------------------------------------------------


@dataclass
class OwnServer:
    server: Server
    process: Any
    tabs: Tabs


@pytest.fixture
def own(context: Any) -> Iterator[OwnServer]:
    """A server of this test's own, so that it can be stopped (or lock sign-in) without the others,
    and checked tabs on it."""
    root = Path(tempfile.mkdtemp(prefix="ai-search-honest-"))
    process, url = _start(
        root / "data", {"AI_SEARCH_EMBEDDER": "none", "AI_SEARCH_LOG_LEVEL": "warning"}, root / "log"
    )
    server = Server(url, None)
    tabs = Tabs(context, server)
    try:
        yield OwnServer(server, process, tabs)
    finally:
        try:
            tabs.check()
        finally:
            if process.poll() is None:
                _stop(process)
            shutil.rmtree(root, ignore_errors=True)


def test_results_stay_marked_not_updated_when_the_server_stops(own: OwnServer) -> None:
    """The issue as it was seen: results on screen, the server stopped, a new search."""
    server, process = own.server, own.process
    page, record = own.tabs.new()
    record.allow_error("net::ERR_CONNECTION_REFUSED")  # the stopped server, on purpose
    open_page(page, server, username="bob")
    _search(page, "failover")
    first = page.inner_text("#result-1 .result-text")
    _stop(process)
    page.fill("#search-box", "postgres")
    before = _searches_done(page)
    page.press("#search-box", "Enter")
    wait_for_search(page, before)
    assert (
        page.inner_text("#status") == "The server could not be reached. Check the connection and try again."
    )
    _assert_stale(page, "failover")
    assert page.inner_text("#result-1 .result-text") == first  # shown, but said to be old


@pytest.mark.parametrize(
    ("fail", "status"),
    [
        pytest.param(lambda route: route.abort(), "The server could not be reached.", id="network-error"),
        pytest.param(
            lambda route: route.fulfill(status=502, json={"success": False, "errorType": "error-internal"}),
            "The server hit an unexpected problem.",
            id="a-5xx",
        ),
        pytest.param(
            lambda route: route.fulfill(status=503, body="upstream down", content_type="text/plain"),
            "The server hit a problem.",
            id="a-5xx-without-json",
        ),
    ],
)
def test_retry_after_a_failed_search_brings_fresh_results(
    page: Any, record: PageRecord, server: Server, fail: Callable[[Any], None], status: str
) -> None:
    record.allow_error("net::ERR_FAILED")
    record.allow_error("status of 50")
    open_page(page, server, username="bob")
    _search(page, "failover")
    page.route(SEARCH_ROUTE, fail)
    page.fill("#search-box", "postgres")
    before = _searches_done(page)
    page.press("#search-box", "Enter")
    wait_for_search(page, before)
    assert page.inner_text("#status").startswith(status)
    _assert_stale(page, "failover")
    assert _query_of(page) == "postgres"  # the address says what was asked; the notice says what is shown

    page.unroute(SEARCH_ROUTE)
    before = _searches_done(page)
    page.click("#retry")
    wait_for_search(page, before)
    assert page.get_attribute("#results", "data-stale") == "false"
    assert page.is_hidden("#search-failed")
    assert "postgres" in page.inner_text("#result-1 .result-text").lower()
    assert page.is_enabled("#ask")


def test_a_search_that_found_nothing_is_marked_not_updated_when_the_next_fails(
    page: Any, record: PageRecord, server: Server
) -> None:
    """The empty state of the last search stays on screen under a failed one: it says whose it
    is, as results would, so nobody reads "No messages match" as the answer to the new words."""
    record.allow_error("net::ERR_FAILED")
    open_page(page, server, username="bob")
    _search(page, "xyzzyplugh qwertzuiop")
    assert page.is_visible(".empty-title")
    page.route(SEARCH_ROUTE, lambda route: route.abort())
    page.fill("#search-box", "failover")
    before = _searches_done(page)
    page.press("#search-box", "Enter")
    wait_for_search(page, before)
    assert page.get_attribute("#results", "data-stale") == "true"
    assert (
        page.inner_text("#search-failed-text")
        == "Below is still the search for “xyzzyplugh qwertzuiop”, which found nothing: not updated."
    )
    assert float(page.evaluate("getComputedStyle(document.getElementById('empty')).opacity")) < 1
    page.unroute(SEARCH_ROUTE)
    before = _searches_done(page)
    page.click("#retry")
    wait_for_search(page, before)
    assert page.get_attribute("#results", "data-stale") == "false"
    assert page.is_hidden("#empty") and page.is_visible("#result-1")


def test_a_failed_first_search_offers_retry(page: Any, record: PageRecord, server: Server) -> None:
    """Nothing on screen yet: no stale results to mark, but the same Retry."""
    record.allow_error("net::ERR_FAILED")
    open_page(page, server, username="bob")
    page.route(SEARCH_ROUTE, lambda route: route.abort())
    _search(page, "failover")
    assert page.is_visible("#retry") and page.is_hidden("#results")
    assert page.inner_text("#search-failed-text") == ""
    page.unroute(SEARCH_ROUTE)
    before = _searches_done(page)
    page.click("#retry")
    wait_for_search(page, before)
    assert page.is_visible("#result-1") and page.is_hidden("#search-failed")


# -- limits said in words -----------------------------------------------------------------------------


def test_the_box_holds_what_the_server_takes_and_counts_down(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    assert page.get_attribute("#search-box", "maxlength") == str(MAX_SEARCH_QUERY_LENGTH)
    page.fill("#search-box", "x" * (MAX_SEARCH_QUERY_LENGTH - COUNTER_FROM_CHARS - 1))
    assert page.is_hidden("#search-count")
    page.click("#search-box")
    page.keyboard.press("End")
    page.keyboard.type("y")
    assert page.inner_text("#search-count") == f"{COUNTER_FROM_CHARS} characters left."
    page.keyboard.insert_text("z" * 200)  # a paste: the box keeps what fits
    assert len(page.input_value("#search-box")) == MAX_SEARCH_QUERY_LENGTH
    assert page.inner_text("#search-count") == f"A search holds at most {MAX_SEARCH_QUERY_LENGTH} characters."
    before = _searches_done(page)
    page.keyboard.press("Enter")
    wait_for_search(page, before)  # the longest query the box allows is one the server takes
    assert page.inner_text("#status") != "The search could not be read. Check the filters and the words."


def test_a_link_with_too_long_a_query_is_explained_not_sent(
    page: Any, record: PageRecord, server: Server
) -> None:
    words = "deploy " * 102  # 714 characters of words, trimmed
    open_page(page, server, f"in:ops {words}", username="bob")
    page.wait_for_function("() => document.getElementById('status').textContent.includes('characters long')")
    assert page.inner_text("#status") == (
        f"This search is {len(words.strip())} characters long; a search holds at most "
        f"{MAX_SEARCH_QUERY_LENGTH}. Shorten it, then press Enter."
    )
    assert not any("/api/v1/ai.search?" in url for url in record.requests)


def test_a_lockout_says_the_real_wait_and_clears_the_password(own: OwnServer) -> None:
    server = own.server
    page, record = own.tabs.new()
    record.allow_error("status of 401")
    record.allow_error("status of 429")
    waits: list[str] = []
    page.on("response", lambda r: r.status == 429 and waits.append(r.headers.get("retry-after", "")))
    page.goto(server.url)
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    page.fill("#login-user", "dave")
    for attempt in range(WRONG_PASSWORDS):
        page.fill("#login-password", f"wrong-{attempt}")
        page.click("#login-form button")
        page.wait_for_function("() => document.getElementById('login-password').value === ''")
    page.fill("#login-password", "demo-dave")  # the right one, refused for now
    page.click("#login-form button")
    page.wait_for_function(
        "() => document.getElementById('login-error').textContent.includes('Try again in')"
    )
    assert waits and waits[-1].isdigit() and int(waits[-1]) > 1
    wait = int(waits[-1])  # the server's wait; the form counts it down from there
    assert page.inner_text("#login-error") in {lockout_text(s) for s in range(wait - 2, wait + 1)}
    assert page.input_value("#login-password") == ""
    assert page.is_disabled("#login-form button")
    assert page.get_attribute("html", "data-auth") == "out"


# -- counts, highlights, reasons, unfinished filters ---------------------------------------------------


def test_a_full_page_of_results_says_plus(open_as: Callable[..., Any]) -> None:
    page = open_as("alice")
    _search(page, "deploy")  # more than 50 messages of alice's rooms talk about deploys
    assert page.inner_text("#status") == (
        f"{MAX_INTELLIGENT_SEARCH_RESULTS}+ results: the best {MAX_INTELLIGENT_SEARCH_RESULTS} are shown."
    )


def test_stopwords_are_not_marked(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    _search(page, "the failover of the database")
    marks = {m.lower() for m in page.locator("#result-list .result-text mark").all_inner_texts()}
    assert marks and not marks & {"the", "of"}
    reasons = page.locator("#result-list .result-reason").all_inner_texts()
    assert reasons and all("%" not in r and "·" not in r for r in reasons)
    assert all("“the”" not in r and "“of”" not in r for r in reasons)


def test_an_unfinished_filter_is_not_searched_as_a_word(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("failover in:#")
    page.keyboard.press("Escape")  # the room list closes; Enter then searches
    before = _searches_done(page)
    page.keyboard.press("Enter")
    wait_for_search(page, before)
    assert _query_of(page) == "failover"
    assert page.input_value("#search-box") == "failover"
    assert page.locator("#chips .chip").count() == 0


# -- before Python, and on touch screens --------------------------------------------------------------


def test_the_box_suggests_before_python_from_the_rooms_python_then_reuses(page: Any, server: Server) -> None:
    """Until Python is ready the fallback offers rooms from one lookup made at load; Python's first
    list comes from the same answer, without asking again. The keystroke stage is held back (its
    own reuse of the lookups: test_keys_stage.py), so the fallback's list is the one on screen."""
    held: list[Any] = []
    page.route(PAGE_PYTHON_FILES, lambda route: held.append(route))
    page.route(STAGE_FILES, lambda route: held.append(route))
    lookups: list[str] = []
    page.on("request", lambda r: "rooms.autocomplete" in r.url and lookups.append(r.url))
    user_id, token = server.credentials("bob")
    session = json.dumps({"userId": user_id, "authToken": token, "username": "bob", "name": ""})
    page.add_init_script(f"sessionStorage.setItem({json.dumps(SESSION_STORAGE_KEY)}, {json.dumps(session)})")
    page.goto(server.url)
    page.wait_for_selector("html[data-fallback=ready]")
    page.click("#search-box")
    page.keyboard.type("in:eng")
    page.wait_for_selector("#suggestions[data-by=fallback] [role=option]")
    assert page.locator("#suggestions .option-title").all_inner_texts() == ["engineering"]
    assert page.get_attribute("#search-box", "aria-expanded") == "true"
    page.wait_for_function("() => window.aiSearchFallback.rooms !== null")
    for route in held:
        route.continue_()
    page.unroute(PAGE_PYTHON_FILES)
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    page.wait_for_selector("#suggestions[data-by=python] [role=option]")
    assert page.locator("#suggestions .option-title").all_inner_texts() == ["engineering"]
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    assert page.locator("#chips .chip-label").all_inner_texts() == ["#engineering"]
    assert len(lookups) == 1, lookups  # the fallback's, reused by Python


def test_touch_screens_get_no_keyboard_hints(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    assert page.is_visible("#search-hint .keys-hint")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})  # hover: none
    assert page.is_hidden("#search-hint .keys-hint")
    assert page.is_visible("#search-hint")  # the filters are still explained


def test_at_360_pixels_box_chips_and_button_share_one_row(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    page.set_viewport_size({"width": 360, "height": 740})
    page.click("#search-box")
    page.keyboard.type("in:engineering from:carol after:2026-09-01 postgres failover")
    boxes = {name: page.locator(selector).bounding_box() for name, selector in
             (("chips", "#chips"), ("box", "#search-box"), ("button", ".search-button"))}  # fmt: skip
    middles = [b["y"] + b["height"] / 2 for b in boxes.values() if b]
    assert len(middles) == 3 and max(middles) - min(middles) < 4, boxes
    assert boxes["box"] and boxes["box"]["width"] >= 80  # the typed text keeps room to be seen
    line = float(
        page.evaluate("parseFloat(getComputedStyle(document.querySelector('.search-button')).lineHeight)")
    )
    assert boxes["button"] and boxes["button"]["height"] < 2 * line + 16  # "Search" on one line
    assert page.evaluate(
        "(() => { const c = document.getElementById('chips'); return c.scrollWidth > c.clientWidth; })()"
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= 360


def test_at_360_pixels_a_long_word_that_matches_nothing_stays_on_screen(open_as: Callable[..., Any]) -> None:
    """The empty state repeats what was searched: one long unbroken word (a pasted hash, a URL)
    wraps inside the page rather than pushing it sideways, and so does a long room name."""
    page = open_as("bob")
    page.set_viewport_size({"width": 360, "height": 740})
    page.click("#search-box")
    page.keyboard.type(f"in:#{'n' * 80} {'x' * 200}")
    page.keyboard.press("Enter")
    page.wait_for_selector(".empty-title")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360


def test_icons_are_drawn_not_typed(open_as: Callable[..., Any]) -> None:
    """Suggestion and chip icons are inline SVG: no emoji that needs a font the device may lack."""
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("in:engineering after:")
    page.wait_for_selector("#suggestions[data-by=python] [role=option]")
    assert (
        page.locator("#suggestions .option-icon svg.icon").count()
        == page.locator("#suggestions [role=option]").count()
    )
    assert page.locator("#chips .chip-remove svg.icon").count() == 1
    icon_text = "".join(page.locator("#suggestions .option-icon, #chips .chip-remove").all_inner_texts())
    assert icon_text.strip() == ""


def test_no_status_speaks_of_the_machinery(page: Any, server: Server) -> None:
    page.goto(server.url)
    page.wait_for_selector("html[data-fallback=ready]")
    assert page.inner_text("#status") == "Sign in to search."
    html = page.content()
    assert "Loading Python" not in html and "Pyodide" not in page.inner_text("body")
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert page.inner_text("#status") == "Sign in to search."


# -- storage switched off -------------------------------------------------------------------------------

# Every storage call throws, as in a sandboxed frame or with site data blocked.
BLOCKED_STORAGE = """
for (const name of ["sessionStorage", "localStorage"]) {
  Object.defineProperty(window, name, {
    configurable: true,
    get() { throw new DOMException("The operation is insecure.", "SecurityError"); },
  });
}
"""


def test_with_storage_off_sign_in_search_and_recent_searches_still_work(own: OwnServer) -> None:
    """Nothing the page keeps in storage is essential: with both stores throwing, sign-in lasts as
    long as the page, searches run, recent searches are simply not kept, and nothing breaks."""
    page, record = own.tabs.new()
    page.add_init_script(BLOCKED_STORAGE)
    page.goto(own.server.url)
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    page.fill("#login-user", "bob")
    page.fill("#login-password", "demo-bob")
    page.click("#login-form button")
    page.wait_for_selector("html[data-auth=in]")
    assert "bob" in page.inner_text("#whoami")
    _search(page, "deploy")
    assert page.locator("#result-list .result-room").count() > 0
    page.fill("#search-box", "")
    page.click("#search-box")
    assert page.locator("#suggestions [role=option]").all_inner_texts() == []  # nothing was kept
    assert record.errors == []
