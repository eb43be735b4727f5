"""Results: scoped to the signed-in person, paged as upstream, explained when empty, in the URL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from ai_search import AI_SEARCH_PAGE_SIZE, AI_SEARCH_RESULTS_PAGE_SIZE

from .conftest import PYTHON_READY_MS, PageRecord, Server, Tabs, open_page

pytestmark = pytest.mark.browser


def _searches_done(page: Any) -> int:
    return int(page.get_attribute("html", "data-searches") or 0)


def wait_for_search(page: Any, done_before: int) -> None:
    """Wait until the page finished one more search than ``done_before``."""
    page.wait_for_function("n => Number(document.documentElement.dataset.searches || 0) > n", arg=done_before)


def _search(page: Any, text: str) -> None:
    before = _searches_done(page)
    page.click("#search-box")
    page.keyboard.type(text)
    page.keyboard.press("Enter")
    wait_for_search(page, before)


def _rooms_shown(page: Any) -> set[str]:
    return set(page.locator("#result-list .result-room").all_inner_texts())


def _query_of(page: Any) -> str:
    return parse_qs(urlsplit(page.url).query).get("q", [""])[0]


def test_two_people_see_different_results_for_the_same_query(tabs: Tabs, server: Server) -> None:
    """The same words: bob sees the hiring committee's offers, frank (not a member) never does but
    finds the discount offered in a support escalation, and every room either is shown in is one of
    their own subscriptions."""
    shown: dict[str, set[str]] = {}
    for username in ("bob", "frank"):
        page, _record = tabs.new()
        open_page(page, server, username=username)
        _search(page, "candidate offer")
        while page.is_visible("#show-more"):
            page.click("#show-more")
        shown[username] = _rooms_shown(page)
        own = {
            f"#{s['fname'] or s['name']}" if s["t"] != "d" else "Direct: " + ", ".join(s["name"].split("__"))
            for s in server.call(username, "GET", "subscriptions.get")["update"]
        }
        assert shown[username], f"{username} found nothing"
        assert shown[username] <= own, f"{username} sees rooms outside their subscriptions"
    assert "#hiring-committee" in shown["bob"]
    assert "#hiring-committee" not in shown["frank"]


def test_results_show_room_author_time_highlights_and_why(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    _search(page, "failover")
    first = page.locator("#result-1")
    assert first.locator(".result-room").inner_text().startswith(("#", "Direct: "))
    assert first.locator(".result-author").inner_text()
    assert first.locator("time").get_attribute("datetime")
    marks = first.locator(".result-text mark").all_inner_texts()
    assert marks and all("failover" in mark.lower() for mark in marks)
    # Why it matched, in words: the words it matched (those marked), never a raw score.
    reason = first.locator(".result-reason").inner_text()
    assert reason.startswith("Matches “") and marks[0] in reason
    assert "%" not in reason


def test_results_come_in_pages_of_five_then_eight(open_as: Callable[..., Any]) -> None:
    """A first page of AI_SEARCH_PAGE_SIZE, then AI_SEARCH_RESULTS_PAGE_SIZE more per "Show more"."""
    page = open_as("alice")
    _search(page, "deploy")
    total = int(page.inner_text("#status").split()[0].removesuffix("+"))
    assert total > AI_SEARCH_PAGE_SIZE + AI_SEARCH_RESULTS_PAGE_SIZE, (
        "the demo should have enough deploy talk"
    )
    assert page.locator("#result-list .result").count() == AI_SEARCH_PAGE_SIZE
    page.click("#show-more")
    assert page.locator("#result-list .result").count() == AI_SEARCH_PAGE_SIZE + AI_SEARCH_RESULTS_PAGE_SIZE
    assert page.evaluate("document.activeElement.id") == f"result-{AI_SEARCH_PAGE_SIZE + 1}"


def test_the_empty_state_explains_the_scope_and_drops_a_filter(open_as: Callable[..., Any]) -> None:
    """No match: the words, the rooms searched and each filter are listed; a button searches again
    without one filter (chip, address bar and results follow)."""
    page = open_as("bob")
    _search(page, "in:ops from:dave failover")
    assert page.is_visible("#empty")
    empty = page.inner_text("#empty")
    assert "failover" in empty
    assert "only #ops" in empty
    assert "Only messages from @dave" in empty
    page.click("text=Search without @dave")
    page.wait_for_function("() => document.querySelectorAll('#result-list .result').length > 0")
    assert page.locator("#chips .chip-label").all_inner_texts() == ["#ops"]
    assert _query_of(page) == "in:ops failover"
    assert _rooms_shown(page) == {"#ops"}


def test_words_are_required_and_said_so(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("in:ops ")
    page.keyboard.press("Enter")
    assert page.inner_text("#status") == "Type words to search for; filters only narrow a search."


def test_the_query_line_is_in_the_url_and_back_forward_restore_searches(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    _search(page, "in:ops deploy")
    assert _query_of(page) == "in:ops deploy"
    first = page.inner_text("#result-1 .result-text")
    page.fill("#search-box", "")
    page.click("button[aria-label='Remove filter #ops']")  # the box is empty: no new search yet
    _search(page, "from:bob postgres")
    assert _query_of(page) == "from:bob postgres"

    before = _searches_done(page)
    page.go_back()
    wait_for_search(page, before)
    assert page.input_value("#search-box") == "deploy"
    assert page.locator("#chips .chip-label").all_inner_texts() == ["#ops"]
    assert page.inner_text("#result-1 .result-text") == first

    before = _searches_done(page)
    page.go_forward()
    wait_for_search(page, before)
    assert page.input_value("#search-box") == "postgres"
    assert page.locator("#chips .chip-label").all_inner_texts() == ["@bob"]


def test_a_shared_url_opens_with_its_chips_and_results(open_as: Callable[..., Any]) -> None:
    page = open_as("bob", query="in:ops from:bob upgrade")
    page.wait_for_function("() => document.querySelectorAll('#result-list .result').length > 0")
    assert page.locator("#chips .chip-label").all_inner_texts() == ["#ops", "@bob"]
    assert page.input_value("#search-box") == "upgrade"
    assert _rooms_shown(page) == {"#ops"}
    assert set(page.locator("#result-list .result-author").all_inner_texts()) <= {"Bob Lindqvist", "bob"}


def test_sign_in_and_out_through_the_page(page: Any, record: PageRecord, server: Server) -> None:
    """Sign in with the form (token kept in sessionStorage, this tab only), sign out clears it."""
    record.allow_error("status of 401")  # the wrong password, on purpose
    page.goto(server.url)
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    page.fill("#login-user", "dave")
    page.fill("#login-password", "wrong password")
    page.click("#login-form button")
    page.wait_for_selector("#login-error:not(:empty)")
    assert page.inner_text("#login-error") == "That username and password do not match."
    page.fill("#login-password", "demo-dave")
    page.click("#login-form button")
    page.wait_for_selector("html[data-auth=in]")
    assert "@dave" in page.inner_text("#whoami")
    stored = page.evaluate("sessionStorage.getItem('ai-search.session')")
    assert '"username": "dave"' in stored
    page.click("#logout")
    page.wait_for_selector("html[data-auth=out]")
    assert page.evaluate("sessionStorage.getItem('ai-search.session')") is None


def test_an_expired_session_asks_to_sign_in_again(page: Any, record: PageRecord, server: Server) -> None:
    """The server refuses the token (here: it was logged out elsewhere); the page forgets it and says so."""
    record.allow_error("status of 401")  # the refused token, on purpose
    open_page(page, server, username="erin")
    server.call("erin", "POST", "logout")
    server.tokens.pop("erin")  # that token is gone for good
    page.click("#search-box")
    page.keyboard.type("deploy")
    page.keyboard.press("Enter")
    page.wait_for_selector("html[data-auth=out]")
    assert page.inner_text("#status") == "Your session has ended. Sign in again."
    assert page.evaluate("sessionStorage.getItem('ai-search.session')") is None
