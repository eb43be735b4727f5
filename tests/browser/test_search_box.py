"""The box as people type: chips for finished filters, the suggestion combobox, carets, IME, keys."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.browser


def _chips(page: Any) -> list[str]:
    return page.locator("#chips .chip-label").all_inner_texts()


def _options(page: Any) -> list[str]:
    return page.locator("#suggestions [role=option] .option-title").all_inner_texts()


def _caret(page: Any) -> int:
    return int(page.evaluate("document.getElementById('search-box').selectionStart"))


@pytest.mark.parametrize(
    ("typed", "chips", "box"),
    [
        pytest.param(
            "deploy in:ops ", ["#ops"], "deploy ", id="a-room-filter-becomes-a-chip-once-a-space-ends-it"
        ),
        pytest.param("deploy in:ops", [], "deploy in:ops", id="the-token-being-typed-stays-in-the-box"),
        pytest.param(
            'from:@bob in:"on call" in:ops,design failed ',
            ["#on call", "#ops", "#design", "@bob"],
            "failed ",
            id="several-filters-become-chips-in-table-order-quoted-values-keep-spaces",
        ),
        pytest.param(
            "after:2026-11-01 before:2026-11-30 x",
            ["after:2026-11-01", "before:2026-11-30"],
            "x",
            id="date-filters-become-chips",
        ),
        pytest.param("after:2026-02-30 x", [], "after:2026-02-30 x", id="an-impossible-date-stays-text"),
        pytest.param("IN:ops FROM:bob ", ["#ops", "@bob"], "", id="keys-are-case-insensitive"),
    ],
)
def test_finished_filters_become_chips(
    open_as: Callable[..., Any], typed: str, chips: list[str], box: str
) -> None:
    """Each filter followed by more text leaves the box for a chip; the rest stays as typed."""
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type(typed)
    assert _chips(page) == chips
    assert page.input_value("#search-box") == box


def test_the_suggestion_list_works_by_keyboard(open_as: Callable[..., Any]) -> None:
    """The APG combobox: the list opens for the token at the caret, Down marks an option through
    aria-activedescendant, Enter applies it (a chip), Escape closes without applying."""
    page = open_as("bob")
    box = page.locator("#search-box")
    assert box.get_attribute("role") == "combobox"
    assert box.get_attribute("aria-controls") == "suggestions"
    page.click("#search-box")
    page.keyboard.type("deploy in:engin")
    page.wait_for_selector("#suggestions [role=option]")
    assert _options(page) == ["engineering"]
    assert box.get_attribute("aria-expanded") == "true"
    assert box.get_attribute("aria-activedescendant") is None

    page.keyboard.press("ArrowDown")
    assert box.get_attribute("aria-activedescendant") == "suggestion-0"
    assert page.get_attribute("#suggestion-0", "aria-selected") == "true"
    page.keyboard.press("Enter")
    assert _chips(page) == ["#engineering"]
    assert page.input_value("#search-box") == "deploy "
    assert box.get_attribute("aria-expanded") == "false"
    assert page.is_hidden("#suggestions")

    page.keyboard.type("from:ca")
    page.wait_for_selector("#suggestions [role=option]")
    assert "@carol" in _options(page)
    page.keyboard.press("Escape")
    assert box.get_attribute("aria-expanded") == "false"
    assert page.input_value("#search-box") == "deploy from:ca"
    assert _chips(page) == ["#engineering"]


def test_tab_accepts_and_arrows_wrap(open_as: Callable[..., Any]) -> None:
    """Up from the top wraps to the last option; Tab applies the active option like Enter."""
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("after:")
    page.wait_for_selector("#suggestions [role=option]")
    words = ["today", "yesterday", "-7d", "last-week", "this-month"]
    assert _options(page) == [f"after:{word}" for word in words] + ["Pick a date…"]
    page.keyboard.press("ArrowUp")  # opens at the last option
    assert page.get_attribute("#search-box", "aria-activedescendant") == "suggestion-5"
    page.keyboard.press("ArrowDown")  # wraps to the first
    assert page.get_attribute("#search-box", "aria-activedescendant") == "suggestion-0"
    page.keyboard.press("Tab")
    assert _chips(page) == [f"after:{datetime.date.today().isoformat()}"]  # the days "today" means
    assert page.evaluate("document.activeElement.id") == "search-box"


def test_accepting_replaces_the_token_at_the_caret(open_as: Callable[..., Any]) -> None:
    """A suggestion replaces the token under the caret, not the end of the text, and the caret lands
    after it (here: the token became a chip, so right where the token was)."""
    page = open_as("bob")
    page.fill("#search-box", "deploy failed")
    page.evaluate("document.getElementById('search-box').setSelectionRange(6, 6)")
    page.keyboard.type(" in:engin")
    assert page.input_value("#search-box") == "deploy in:engin failed"
    page.wait_for_selector("#suggestions [role=option]")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    assert _chips(page) == ["#engineering"]
    assert page.input_value("#search-box") == "deploy failed"
    assert _caret(page) == len("deploy ")


def test_carets_count_utf16_units_in_the_dom(open_as: Callable[..., Any]) -> None:
    """Text before the token with characters outside the BMP (two UTF-16 units each) still puts the
    chip and the caret in the right place."""
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("🚀🚀 in:engin")
    page.wait_for_selector("#suggestions [role=option]")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    assert _chips(page) == ["#engineering"]
    assert page.input_value("#search-box") == "🚀🚀 "
    assert _caret(page) == 5  # two surrogate pairs and a space


@pytest.mark.parametrize(
    "init",
    [
        pytest.param("{key: 'Enter', isComposing: true}", id="enter-while-composing"),
        pytest.param("{key: 'Enter', keyCode: 229}", id="enter-with-ime-key-code-229"),
        pytest.param("{key: 'Tab', isComposing: true}", id="tab-while-composing"),
    ],
)
def test_nothing_is_accepted_during_ime_composition(open_as: Callable[..., Any], init: str) -> None:
    """Enter or Tab that belong to an IME composition confirm the text, never a suggestion."""
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("in:engin")
    page.wait_for_selector("#suggestions [role=option]")
    page.keyboard.press("ArrowDown")
    page.evaluate(
        "init => document.getElementById('search-box').dispatchEvent("
        "new KeyboardEvent('keydown', {...init, bubbles: true, cancelable: true}))",
        page.evaluate(f"({init})"),
    )
    assert _chips(page) == []
    assert page.input_value("#search-box") == "in:engin"
    assert page.get_attribute("#search-box", "aria-expanded") == "true"


def test_input_during_composition_waits_for_compositionend(open_as: Callable[..., Any]) -> None:
    """The box is not rewritten while an IME composes; the finished text is parsed at compositionend."""
    page = open_as("bob")
    page.evaluate(
        "const box = document.getElementById('search-box'); box.focus(); box.value = 'in:ops 東京';"
        "box.dispatchEvent(new InputEvent('input', {isComposing: true}))"
    )
    assert _chips(page) == []
    page.dispatch_event("#search-box", "compositionend")
    assert _chips(page) == ["#ops"]
    assert page.input_value("#search-box") == "東京"


def test_chips_are_removed_by_keyboard(open_as: Callable[..., Any]) -> None:
    """Backspace at the start of the box goes to the last chip; Backspace/Delete remove chips."""
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("in:ops from:bob ")
    assert _chips(page) == ["#ops", "@bob"]
    page.keyboard.press("Backspace")
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Remove filter @bob"
    page.keyboard.press("Backspace")
    assert _chips(page) == ["#ops"]
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Remove filter #ops"
    page.keyboard.press("Delete")
    assert _chips(page) == []
    assert page.evaluate("document.activeElement.id") == "search-box"


def test_a_chip_is_removed_by_click(open_as: Callable[..., Any]) -> None:
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type("in:ops from:bob ")
    page.click("button[aria-label='Remove filter #ops']")
    assert _chips(page) == ["@bob"]


@pytest.mark.parametrize(
    "press",
    [
        pytest.param("/", id="slash-outside-a-field"),
        pytest.param("Control+k", id="ctrl-k"),
        pytest.param("Meta+k", id="cmd-k"),
    ],
)
def test_keyboard_shortcuts_focus_the_box(open_as: Callable[..., Any], press: str) -> None:
    page = open_as("bob")
    page.click("h1")
    page.keyboard.press(press)
    assert page.evaluate("document.activeElement.id") == "search-box"
    assert page.input_value("#search-box") == ""


def test_people_suggestions_are_people_the_caller_shares_rooms_with(open_as: Callable[..., Any]) -> None:
    """from: offers matching people from users.autocomplete, then the typed name itself."""
    page = open_as("grace")
    page.click("#search-box")
    page.keyboard.type("from:a")
    page.wait_for_selector("#suggestions [role=option]")
    titles = _options(page)
    assert titles[0].startswith("@")
    assert titles[-1] == "from:a"
    # users.autocomplete matches the username or the display name (the option's description)
    assert all("a" in text.lower() for text in page.locator("#suggestions [role=option]").all_inner_texts())
