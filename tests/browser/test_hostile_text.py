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


# sourceUrl values a hostile or broken server could send, and the link each may make (None: none).
# The store refuses all but the first two, so they are forged into the answers on their way.
SOURCE_LINK_CASES = (
    ("{own}channel/ops?msg=Xk2", "Open in Rocket.Chat"),
    ("https://acme.slack.com/archives/C024BE91L/p1355517523000005", "Open in Slack"),
    ("javascript:window.__xss=10", None),
    ("JaVaScRiPt:window.__xss=11", None),
    ("java\tscript:window.__xss=12", None),
    ("data:text/html,<script>parent.__xss=13</script>", None),
    ("http://[::1", None),  # passes the text rule; the browser's URL parser refuses it
)
LINKS = """(scope) => [...document.querySelectorAll(`${scope} [data-msg-id]`)].map((item) => {
  const a = item.querySelector('a:not([href^="#"])');
  return [item.dataset.msgId, a && {cls: a.className, href: a.href, protocol: a.protocol, rel: a.rel,
                                    target: a.target, text: a.textContent}];
})"""


def _assert_links(page: Any, scope: str, expected: dict[str, tuple[str, str | None]]) -> None:
    """Each message under ``scope`` has the link its forged sourceUrl may make, or none."""
    shown = page.evaluate(LINKS, scope)
    assert {msg_id for msg_id, _link in shown} <= expected.keys() and shown
    for msg_id, link in shown:
        url, text = expected[msg_id]
        if text is None:
            assert link is None, f"{url!r} made a link: {link}"
        else:
            assert link == {
                "cls": "source-link", "href": url, "protocol": url.split(":")[0] + ":",
                "rel": "noopener noreferrer", "target": "_blank", "text": text,
            }  # fmt: skip


def test_a_source_link_opens_only_a_web_address_in_a_new_tab(
    open_as: Callable[..., Any], server: Server, hostile: None
) -> None:
    """Each result's and each context message's ``sourceUrl`` makes an "Open in ..." link only for
    an http(s) address the browser parses, opened in a new tab with no opener and no referrer; a
    javascript:, data: or unparsable one makes none and runs nothing."""
    page = open_as("bob")
    cases = [(url.format(own=server.url), text) for url, text in SOURCE_LINK_CASES]
    in_results: dict[str, tuple[str, str | None]] = {}
    in_context: dict[str, tuple[str, str | None]] = {}

    def forging(key: str, expected: dict[str, tuple[str, str | None]]) -> Callable[[Any], None]:
        def forge(route: Any) -> None:
            response = route.fetch()
            data = response.json()
            for i, message in enumerate(data[key]):
                message["sourceUrl"] = cases[i % len(cases)][0]
                expected[message.get("msgId") or message["_id"]] = cases[i % len(cases)]
            route.fulfill(response=response, json=data)

        return forge

    page.route("**/api/v1/ai.search?*", forging("intelligent", in_results))
    page.route("**/api/v1/chat.getMessageContext?*", forging("messages", in_context))
    _search(page, WORD)
    while page.is_visible("#show-more"):
        page.click("#show-more")
    assert set(in_results.values()) == set(cases)  # every case reached the page
    _assert_links(page, "#result-list", in_results)

    with page.context.expect_page() as opened:
        page.locator(f'#result-list a.source-link[href="{cases[0][0]}"]').first.click()
    tab = opened.value
    tab.wait_for_load_state()
    assert tab.url == cases[0][0]
    assert tab.evaluate("() => [window.opener, document.referrer]") == [None, ""]
    tab.close()
    assert page.is_hidden("#context")  # following the link opened no conversation

    page.locator("#result-list .result-text").first.click()
    page.wait_for_selector("#context .context-message")
    _assert_links(page, "#context-list", in_context)
    _assert_clean(page)
