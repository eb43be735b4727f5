"""Untrusted text stays text: message texts, room names, highlights, query text and LLM output can
add no markup, run no script and start no Python (the page runs Pyodide itself and has no
<script type="py">, but PyScript, or anything like it added later, would wire such markup and py-*
handlers, and CSP cannot stop that, so none may ever appear)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ._hostile import HOSTILE_ANSWER, HOSTILE_ROOM, PAYLOADS, WORD
from .conftest import OWN_PYTHON_SCRIPT, Server
from .test_results import _search

pytestmark = pytest.mark.browser

CHECK = """() => ({
  xss: window.__xss ?? null,
  pyxss: window.__pyxss ?? null,
  // Every Python script but the page's own (the last child of <body>, main.py from pyscript.toml).
  pyScripts: [...document.querySelectorAll('script[type="py"], script[type="mpy"], py-script, mpy-script')]
    .filter((s) => s !== document.querySelector(OWN_SCRIPT)).length,
  handlers: document.querySelectorAll('[py-click], [mpy-click], [onerror], [onload], [srcdoc]').length,
  // The page's own icons are inline <svg class="icon">; any other SVG came from data.
  embeds: document.querySelectorAll('img, svg:not(.icon), iframe, object, embed, #pyclick').length,
})""".replace("OWN_SCRIPT", json.dumps(OWN_PYTHON_SCRIPT))
CLEAN = {"xss": None, "pyxss": None, "pyScripts": 0, "handlers": 0, "embeds": 0}


def _assert_clean(page: Any) -> None:
    page.wait_for_timeout(300)  # give any DOM observer its chance to pick something up
    assert page.evaluate(CHECK) == CLEAN


def test_message_texts_and_room_names_render_as_text(open_as: Callable[..., Any], hostile: None) -> None:
    page = open_as("bob")
    _search(page, WORD)
    while page.is_visible("#show-more"):
        page.click("#show-more")
    texts = page.locator("#result-list .result-text").all_inner_texts()
    for payload in PAYLOADS:
        assert payload in texts
    assert f"#{HOSTILE_ROOM}" in page.locator("#result-list .result-room").all_inner_texts()
    marks = page.locator("#result-list mark").all_inner_texts()
    assert marks and {mark.lower() for mark in marks} == {WORD}  # our highlights only, none forged
    _assert_clean(page)


def test_llm_output_renders_as_text(open_as: Callable[..., Any], server: Server, hostile: None) -> None:
    """The answer (the provider's, or the extractive one quoting hostile sources) is text plus our
    own citation links."""
    if server.llm is not None:
        server.llm.answer = HOSTILE_ANSWER
        server.llm.chunks = (HOSTILE_ANSWER[:20], HOSTILE_ANSWER[20:70], HOSTILE_ANSWER[70:])
    try:
        page = open_as("bob")
        _search(page, WORD)
        page.click("#ask")
        page.wait_for_function(
            "() => document.getElementById('answer-label').textContent.match(/^(Written|Extractive)/)"
        )
        body = page.inner_text("#answer-body")
        if server.llm is not None:
            assert body == HOSTILE_ANSWER
        assert page.locator("#answer-body a").evaluate_all(
            "ns => ns.every(n => n.classList.contains('cite'))"
        )
        _assert_clean(page)
    finally:
        if server.llm is not None:
            server.llm.reset()


def test_query_text_and_chips_render_as_text(open_as: Callable[..., Any], hostile: None) -> None:
    page = open_as("bob")
    page.click("#search-box")
    page.keyboard.type('in:"<b py-click=print>x</b>" from:<img/src=x/onerror=window.__xss=8> ')
    labels = page.locator("#chips .chip-label").all_inner_texts()
    assert labels == ["#<b py-click=print>x</b>", "@<img/src=x/onerror=window.__xss=8>"]
    page.keyboard.type("<script type=py>x</script>")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.documentElement.dataset.searches")
    _assert_clean(page)
