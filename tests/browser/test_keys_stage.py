"""The keystroke stage (static/keys-boot.mjs, py/ai_search_web/keys.py): while Pyodide is held back,
MicroPython runs the core's grammar for the box's chips and suggestions, with the page's own markup;
the page's Python then takes over with the text, the caret and the chips as they were."""

from __future__ import annotations

from typing import Any

import pytest

from ._hostile import HOSTILE_ROOM
from .conftest import HANDED_TO_PYODIDE, PYTHON_READY_MS, PageRecord, Server
from .test_before_python import STAGE_FILES, HeldPython, _signed_in

pytestmark = pytest.mark.browser

STAGE_LIST = "#suggestions[data-by=keys]:not([hidden])"
PYTHON_LIST = "#suggestions[data-by=python]:not([hidden])"
# The suggestion list and the chips as markup, without who drew them (data-by), each element's
# attributes sorted (MicroPython's keyword arguments come in no fixed order; the DOM is the same).
MARKUP = """(selector) => {
  const canonical = (node) => {
    if (node.nodeType !== Node.ELEMENT_NODE) return node.textContent;
    const attributes = [...node.attributes].filter((a) => a.name !== "data-by")
      .map((a) => `${a.name}="${a.value}"`).sort().join(" ");
    return `<${node.localName} ${attributes}>${[...node.childNodes].map(canonical).join("")}</${node.localName}>`;
  };
  return canonical(document.querySelector(selector));
}"""


def _stage_page(page: Any, server: Server, path: str = "") -> HeldPython:
    held = HeldPython(page)
    _signed_in(page, server, "bob")
    page.goto(server.url + path)
    page.wait_for_selector("html[data-keys=ready]")
    assert page.get_attribute("html", "data-py") is None
    return held


def _chips(page: Any) -> list[str]:
    return list(page.locator("#chips .chip-label").all_inner_texts())


def _caret(page: Any) -> int:
    return int(page.evaluate("document.getElementById('search-box').selectionStart"))


def test_the_stage_suggests_and_makes_chips_while_python_is_held(page: Any, server: Server) -> None:
    held = _stage_page(page, server)
    assert page.evaluate("performance.getEntriesByName('ai-search:keys-ready').length") == 1
    page.click("#search-box")
    page.keyboard.type("in:gen")
    page.wait_for_selector(f"{STAGE_LIST} [role=option]")
    assert "general" in page.inner_text("#suggestions")
    assert page.get_attribute("#search-box", "aria-expanded") == "true"
    # Down marks the first option (aria-activedescendant), Enter applies it: a chip, the box empty.
    page.keyboard.press("ArrowDown")
    assert page.get_attribute("#search-box", "aria-activedescendant") == "suggestion-0"
    assert page.get_attribute("#suggestion-0", "aria-selected") == "true"
    page.keyboard.press("Enter")
    assert _chips(page) == ["#general"]
    assert page.input_value("#search-box") == ""
    assert page.get_attribute("#search-box", "aria-expanded") == "false"
    assert page.evaluate("window.aiSearchKeys.filters") == "in:general"

    # A click applies a date value (the core's own list: narrowed by what is typed).
    page.keyboard.type("deploy after:2026-1")
    page.wait_for_selector(f"{STAGE_LIST} [role=option]")
    first = page.locator("#suggestions [role=option]").first
    value = first.locator(".option-title").inner_text()
    first.click()
    assert len(_chips(page)) == 2
    assert page.input_value("#search-box") == "deploy "
    assert value.removeprefix("after:") in page.get_attribute("#chips li:last-child", "data-token")

    # Tab applies, Escape closes; a chip's x removes it.
    page.keyboard.type("from:car")
    page.wait_for_selector(f"{STAGE_LIST} [role=option]")
    page.keyboard.press("Escape")
    assert page.is_hidden("#suggestions")
    page.keyboard.press("ArrowDown")  # opens again
    page.keyboard.press("Tab")
    assert len(_chips(page)) == 3
    page.click("#chips li:first-child .chip-remove")
    assert _chips(page)[0] != "#general"
    assert "in:" not in page.evaluate("window.aiSearchKeys.filters")
    held.release()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)


def test_python_takes_over_with_the_text_the_caret_and_the_chips(page: Any, server: Server) -> None:
    held = _stage_page(page, server)
    page.click("#search-box")
    page.keyboard.type("in:gen")
    page.wait_for_selector(f"{STAGE_LIST} [role=option]")
    stage_list = page.evaluate(MARKUP, "#suggestions")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    stage_chips = page.evaluate(MARKUP, "#chips")
    page.keyboard.type("deploy failed")
    for _ in range(3):
        page.keyboard.press("ArrowLeft")
    assert _caret(page) == len("deploy failed") - 3

    held.release()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert page.input_value("#search-box") == "deploy failed"
    assert _caret(page) == len("deploy failed") - 3
    assert _chips(page) == ["#general"]
    assert page.evaluate(MARKUP, "#chips") == stage_chips  # the same markup, drawn by Python now
    page.keyboard.type("X")
    assert page.input_value("#search-box") == "deploy faiXled"

    # The stage has stepped aside: Python's list, the same markup as the stage's.
    page.fill("#search-box", "")
    page.keyboard.type("in:gen")
    page.wait_for_selector(f"{PYTHON_LIST} [role=option]")
    assert page.evaluate(MARKUP, "#suggestions") == stage_list
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")  # handled once: one chip more, no error from a second handler
    assert _chips(page) == ["#general"]
    assert page.input_value("#search-box") == ""


def test_enter_searches_with_the_stages_chips(page: Any, server: Server) -> None:
    held = _stage_page(page, server)
    page.click("#search-box")
    page.keyboard.type("in:ops failover")
    assert _chips(page) == ["#ops"]
    page.keyboard.press("Enter")
    page.wait_for_selector("#fallback-results li")
    assert page.url.endswith("?q=in%3Aops+failover")
    assert all(text.startswith("#ops") for text in page.locator("#fallback-results li").all_inner_texts())
    held.release()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert _chips(page) == ["#ops"]
    assert set(page.locator("#result-list .result-room").all_inner_texts()) == {"#ops"}


def test_the_widget_page_has_the_stage_too(page: Any, server: Server) -> None:
    held = _stage_page(page, server, "embed")
    page.click("#search-box")
    page.keyboard.type("in:gen")
    page.wait_for_selector(f"{STAGE_LIST} [role=option]")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    assert _chips(page) == ["#general"]
    held.release()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert _chips(page) == ["#general"]


def test_without_micropython_the_page_goes_on_as_before(page: Any, record: PageRecord, server: Server) -> None:
    """MicroPython that cannot start: the fallback suggests until the page's Python is ready, which
    is then Pyodide's whatever page_python says (MicroPython's page is handed to it)."""
    record.allow_error("Failed to load resource")
    record.allow_error(HANDED_TO_PYODIDE)
    page.route(STAGE_FILES, lambda route: route.fulfill(status=404))
    held = HeldPython(page)
    _signed_in(page, server, "bob")
    page.goto(server.url)
    page.wait_for_selector("html[data-keys=failed]")
    page.click("#search-box")
    page.keyboard.type("in:gen")
    page.wait_for_selector("#suggestions[data-by=fallback] [role=option]")
    held.release()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert page.get_attribute("html", "data-python") == "pyodide"


def test_the_stage_shows_a_hostile_room_name_as_text(page: Any, server: Server, hostile: None) -> None:
    held = _stage_page(page, server)
    page.click("#search-box")
    page.keyboard.type("in:quokka")
    page.wait_for_selector(f"{STAGE_LIST} [role=option]")
    assert HOSTILE_ROOM in page.inner_text("#suggestions")
    assert page.evaluate("document.querySelectorAll('#suggestions img, #chips img').length") == 0
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    assert page.evaluate("document.querySelectorAll('#chips img').length") == 0
    assert page.evaluate("window.__xss ?? null") is None
    held.release()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert page.evaluate("window.__xss ?? null") is None


def test_a_shared_query_is_left_to_python_to_load(page: Any, server: Server) -> None:
    """``?q=`` in the box (the fallback put it there and searches it) is not the stage's to turn into
    chips: the page's Python loads it, filters as chips and its search."""
    held = _stage_page(page, server, "?q=in%3Aops+failover")
    assert page.input_value("#search-box") == "in:ops failover"
    assert _chips(page) == []
    held.release()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert _chips(page) == ["#ops"]
    assert page.input_value("#search-box") == "failover"
    page.wait_for_selector("#result-list > li")
    assert set(page.locator("#result-list .result-room").all_inner_texts()) == {"#ops"}


def test_the_stage_takes_no_key_of_an_ime_composition(page: Any, server: Server) -> None:
    """Enter of a composition confirms text, never a suggestion; the box is not rewritten until the
    composition ends (the page's Combobox rules, on MicroPython)."""
    held = _stage_page(page, server)
    page.click("#search-box")
    page.keyboard.type("in:gen")
    page.wait_for_selector(f"{STAGE_LIST} [role=option]")
    page.keyboard.press("ArrowDown")
    for init in ({"key": "Enter", "isComposing": True}, {"key": "Enter", "keyCode": 229}):
        page.evaluate(
            "init => document.getElementById('search-box').dispatchEvent("
            "new KeyboardEvent('keydown', {...init, bubbles: true, cancelable: true}))",
            init,
        )
    assert _chips(page) == []
    assert page.input_value("#search-box") == "in:gen"
    page.evaluate(
        "const box = document.getElementById('search-box'); box.value = 'in:ops 東京';"
        "box.dispatchEvent(new InputEvent('input', {isComposing: true}))"
    )
    assert _chips(page) == []
    page.dispatch_event("#search-box", "compositionend")
    assert _chips(page) == ["#ops"]
    assert page.input_value("#search-box") == "東京"
    held.release()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert _chips(page) == ["#ops"]
