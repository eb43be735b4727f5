"""The search language in the page: each new operator typed becomes its chip, a chip is edited in the
box, dates are suggested by what is typed, a search without results offers relaxations that work in
one click, every result list carries its receipt, sort toggles, and recent searches come back."""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import Any

import pytest

from ai_search import build_filter_suggestions, get_active_search_filter, resolve_search_date

pytestmark = pytest.mark.browser

# Seconds a search may take on the demo workspace (keyword only) on a loaded 2-core machine.
SEARCH_SECONDS = 60


def _chips(page: Any) -> list[str]:
    return page.locator("#chips .chip-label").all_inner_texts()


def _options(page: Any) -> list[str]:
    return page.locator("#suggestions [role=option] .option-title").all_inner_texts()


def _browser_today(page: Any) -> datetime.date:
    y, m, d = page.evaluate(
        "(() => { const n = new Date(); return [n.getFullYear(), n.getMonth() + 1, n.getDate()]; })()"
    )
    return datetime.date(y, m, d)


def _searches(page: Any) -> int:
    return int(page.evaluate("Number(document.documentElement.dataset.searches || 0)"))


def _search(page: Any, action: Callable[[], None]) -> None:
    """Do `action` and wait until the page has shown the search it starts."""
    before = _searches(page)
    action()
    deadline = time.monotonic() + SEARCH_SECONDS
    while _searches(page) <= before:
        assert time.monotonic() < deadline, "the search did not finish"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("typed", "label", "excluded"),
    [
        pytest.param("-in:#ops ", "not #ops", True, id="excluded-room"),
        pytest.param("-from:@bob ", "not @bob", True, id="excluded-author"),
        pytest.param("-canary ", "not “canary”", True, id="excluded-word"),
        pytest.param('-"rolling back" ', "not “rolling back”", True, id="excluded-phrase"),
        pytest.param("has:link ", "has:link", False, id="has"),
        pytest.param("-has:file ", "not has:file", True, id="excluded-has"),
        pytest.param("is:thread ", "is:thread", False, id="is"),
        pytest.param("sort:new ", "sort:new", False, id="sort"),
        pytest.param("on:2026-11-03 ", "on:2026-11-03", False, id="on-a-day"),
        pytest.param("during:2026-10 ", "during:2026-10-01 – 2026-10-31", False, id="during-a-month"),
        pytest.param("channel:ops ", "#ops", False, id="an-alias"),
    ],
)
def test_each_operator_becomes_its_chip(
    open_as: Callable[..., Any], typed: str, label: str, excluded: bool
) -> None:
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("deploy " + typed)
    assert _chips(page) == [label]
    chip = page.locator("#chips .chip").first
    assert ("is-excluded" in (chip.get_attribute("class") or "")) == excluded
    assert page.input_value("#search-box") == "deploy "


@pytest.mark.parametrize(
    ("typed", "value"),
    [
        pytest.param("after:-7d ", "-7d", id="days-back"),
        pytest.param("before:yesterday ", "yesterday", id="yesterday"),
        pytest.param("during:last-week ", "last-week", id="last-week"),
    ],
)
def test_a_relative_date_chip_shows_its_days_and_the_words_typed(
    open_as: Callable[..., Any], typed: str, value: str
) -> None:
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type(typed)
    period = resolve_search_date(value, _browser_today(page))
    (label,) = _chips(page)
    assert period.first.isoformat() in label
    assert typed.strip() in (page.locator("#chips .chip").first.get_attribute("title") or "")


def test_a_chip_goes_back_into_the_box_to_be_edited(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("deploy after:-7d has:link ")
    assert _chips(page)[0] == "has:link"  # the table's order: has: before dates
    page.locator("#chips .chip-label").nth(1).click()  # the date chip
    assert _chips(page) == ["has:link"]
    assert page.input_value("#search-box") == "deploy after:-7d"
    caret = page.evaluate("document.getElementById('search-box').selectionStart")
    assert caret == len("deploy after:-7d")
    assert "after:-7d" in _options(page)  # its suggestions are open again
    for _ in range(len("-7d")):
        page.keyboard.press("Backspace")
    page.keyboard.type("last-week ")
    assert _chips(page)[1].startswith("after:")
    assert page.locator("#chips .chip").nth(1).get_attribute("data-token") == "after:last-week"


def test_a_chip_is_edited_by_keyboard_too(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("-in:ops x")
    page.keyboard.press("Home")
    page.keyboard.press("ArrowLeft")  # the last chip
    page.keyboard.press("e")
    assert _chips(page) == []
    assert page.input_value("#search-box").startswith("-in:ops")


def test_date_suggestions_follow_what_is_typed(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("deploy after:2026-1")
    today = _browser_today(page)
    offered = build_filter_suggestions(get_active_search_filter("deploy after:2026-1"), today=today)
    expected = [s.title for s in offered]
    assert _options(page) == expected
    assert all(option.startswith("after:2026-1") for option in expected[:-1])
    assert expected[-1] == "Pick a date…"
    page.keyboard.type("1-0")
    assert _options(page)[:-1] == [f"after:2026-11-0{day}" for day in range(9, 4, -1)]


def test_has_values_are_suggested_and_an_unknown_one_is_hinted(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("deploy has:")
    assert _options(page) == ["has:link", "has:file", "has:image", "has:reaction", "has:thread"]
    page.keyboard.type("pdf ")
    assert _chips(page) == []
    hints = page.locator("#search-hints")
    assert hints.is_visible()
    assert "has: takes link, file, image, reaction, thread" in hints.inner_text()


def test_a_search_without_results_offers_relaxations_that_work(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("deploy in:#ops is:dm")
    _search(page, lambda: page.keyboard.press("Enter"))
    assert page.locator("#status").inner_text() == "No results."
    diagnosis = page.locator("#empty .diagnosis").inner_text()
    assert diagnosis.startswith("0 in #ops is:dm; ")
    buttons = page.locator("#empty button.relax")
    labels = buttons.all_inner_texts()
    assert labels and all("(" in label for label in labels)
    first = labels[0]
    promised = first.rsplit("(", 1)[1].rstrip(")")
    _search(page, lambda: buttons.first.click())
    assert page.locator("#result-list .result").count() > 0
    shown = page.locator("#status").inner_text()
    assert shown.startswith(promised.rstrip("+")), (first, shown)
    assert "is:dm" not in _chips(page)
    assert "is%3Adm" not in page.url
    assert page.locator("#search-receipt").inner_text().startswith("searched ")


def test_every_result_list_carries_its_receipt_and_sort_toggles(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("deploy")
    _search(page, lambda: page.keyboard.press("Enter"))
    receipt = page.locator("#search-receipt").inner_text()
    assert receipt.startswith("searched ") and " rooms you are in, " in receipt
    toggle = page.locator("#sort-toggle")
    assert toggle.get_attribute("aria-pressed") == "false"
    _search(page, lambda: toggle.click())
    assert toggle.get_attribute("aria-pressed") == "true"
    assert "sort:new" in _chips(page)
    times = page.locator("#result-list .result-time").evaluate_all(
        "nodes => nodes.map(n => n.getAttribute('datetime'))"
    )
    assert times == sorted(times, reverse=True) and len(times) > 1


def test_recent_searches_come_back_on_an_empty_box_and_can_be_cleared(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    page.evaluate("localStorage.removeItem('ai-search.recent')")
    for line in ("deploy", "rollback in:#ops"):
        page.fill("#search-box", line)
        _search(page, lambda: page.keyboard.press("Enter"))
        page.fill("#search-box", "")  # no words: removing the chips searches nothing more
        page.locator("#chips .chip-remove").evaluate_all("nodes => nodes.forEach(n => n.click())")
    page.fill("#search-box", "")
    page.evaluate("document.getElementById('search-box').blur()")
    page.click("#search-box")
    assert _options(page) == ["in:ops rollback", "deploy", "Clear recent searches"]
    _search(page, lambda: page.locator("#suggestions [role=option]").nth(1).click())
    assert page.input_value("#search-box") == "deploy"
    page.fill("#search-box", "")
    page.evaluate("document.getElementById('search-box').blur()")
    page.click("#search-box")
    assert _options(page)[0] == "deploy"  # the newest first
    page.locator("#suggestions [role=option]").last.click()
    assert page.evaluate("localStorage.getItem('ai-search.recent')") is None
    page.evaluate("document.getElementById('search-box').blur()")
    page.click("#search-box")
    assert _options(page) == []


def test_a_date_picker_is_one_step_away_and_works_by_keyboard(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("deploy after:")
    assert _options(page)[-1] == "Pick a date…"
    page.keyboard.press("ArrowUp")  # the last option
    page.keyboard.press("Enter")
    picker = page.locator("#date-picker")
    assert picker.is_visible()
    assert page.evaluate("document.activeElement.id") == "date-picker"
    page.keyboard.type("11032026")  # month, day, year: the en-US order of the test browser
    page.keyboard.press("Enter")
    assert not picker.is_visible()
    assert page.evaluate("document.activeElement.id") == "search-box"
    assert _chips(page) == ["after:2026-11-03"]
    page.keyboard.type("x after:")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")  # back to the box, nothing applied
    assert not picker.is_visible()
    assert page.input_value("#search-box").endswith("after:")
