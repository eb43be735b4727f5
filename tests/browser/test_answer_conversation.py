"""An answer as a conversation: checked sentences, citations opened in context, follow-ups, feedback,
shared links.

The provider is the fake OpenAI-compatible server on loopback (tests/server/_fake_openai.py): what
it writes is set per test, so an answer holds one sentence its source supports and one that no
source says. Everything the page shows is compared with what the server itself answers for the same
request (the citation check is deterministic), never with figures written into the test.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ai_search import HIDDEN_ANSWER_NOTE
from ai_search_web.answer_text import UNSUPPORTED_LABEL

from .conftest import Server, open_page
from .test_results import _search

pytestmark = pytest.mark.browser

# The model's first answer: a claim its first source makes, then one no source makes.
SUPPORTED = "Patroni promoted pg-ledger-02 to primary [1]."
UNSUPPORTED = "The failover was caused by a solar flare on 3 March [2]."
FIRST_ANSWER = f"{SUPPORTED} {UNSUPPORTED}"
FOLLOW_UP = "and who fixed it?"
SECOND_ANSWER = "Carol restarted the billing-api pods one zone at a time to flush the pool [1]."
REASON = "it found the promotion but invented the cause"


@pytest.fixture(autouse=True)
def _provider(server: Server) -> Iterator[None]:
    if server.llm is None:
        pytest.skip("this server build answers extractively only (no provider wired)")
    yield
    server.llm.reset()


def _writes(server: Server, answer: str) -> None:
    """What the fake provider answers next, streamed (the page) or whole (a replay by the test)."""
    server.llm.answer = answer
    words = answer.split(" ")
    server.llm.chunks = (*(word + " " for word in words[:-1]), words[-1])


def _answered(page: Any) -> None:
    page.wait_for_function(
        "() => document.getElementById('answer-body').getAttribute('aria-busy') === 'false'"
        " && !document.getElementById('follow-up-form').hidden"
    )


def _ask(page: Any, action: Callable[[], None]) -> dict[str, Any]:
    """Run ``action`` (it asks), wait for the answer, and return the body the page sent."""
    with page.expect_request("**/api/v1/ai.search.answer") as request:
        action()
    _answered(page)
    body: dict[str, Any] = json.loads(request.value.post_data or "{}")
    return body


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_ask_follow_up_open_a_citation_in_context_and_rate(page: Any, server: Server) -> None:
    """Ask; the unsupported sentence is marked and explained; [1] opens its message in its thread
    with the supporting span marked; a follow-up sends the earlier turn as ids and shows the thread
    of questions; a thumb and a reason reach the feedback route."""
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.origin)
    open_page(page, server, username="bob")
    _search(page, "patroni")
    _writes(server, FIRST_ANSWER)
    sent = _ask(page, lambda: page.click("#ask"))
    replay = server.call("bob", "POST", "ai.search.answer", json=sent)
    assert page.inner_text("#answer-body .answer-text") == replay["answer"] == FIRST_ANSWER

    # The citation check's verdicts, as the page shows them.
    verdicts = {s["text"]: s for s in replay["sentences"]}
    assert verdicts[SUPPORTED]["supported"] is True and verdicts[UNSUPPORTED]["supported"] is False
    flagged = page.locator("#answer-body .is-unsupported")
    assert flagged.count() == 1 and flagged.inner_text() == UNSUPPORTED
    assert flagged.locator(".unsupported-flag").get_attribute("aria-label") == UNSUPPORTED_LABEL
    assert flagged.locator(".unsupported-flag").get_attribute("role") == "img"
    assert page.is_visible("#answer-check") and page.inner_text("#answer-check").startswith("1 sentence of")
    assert page.locator("#answer-body .answer-text > a.cite").count() == 1, "the supported one is not marked"

    # [1] opens its message in its conversation, the span that supports the sentence marked.
    (span,) = verdicts[SUPPORTED]["spans"]
    cited = next(c["msgId"] for c in replay["citations"] if c["n"] == span["n"])
    source = server.call("bob", "GET", "chat.getMessage", params={"msgId": cited})["message"]["msg"]
    page.locator("#answer-body .answer-text > a.cite").click()
    page.wait_for_selector("#context[data-state=ready]")
    assert page.get_attribute("#context-list .is-hit", "data-msg-id") == cited
    marks = page.locator("#context-list .is-hit mark").all_inner_texts()
    assert marks == [source[span["start"] : span["end"]]]
    page.keyboard.press("Escape")
    page.wait_for_selector("#context", state="hidden")
    assert page.evaluate("document.activeElement.classList.contains('cite')")

    # A follow-up: the earlier turn goes as its question and the ids it cited, never texts.
    first_id = page.get_attribute("#answer", "data-answer-id")
    assert first_id == page.get_attribute("#answer", "data-answer-id") and first_id
    _writes(server, SECOND_ANSWER)
    page.fill("#follow-up", FOLLOW_UP)
    sent = _ask(page, lambda: page.press("#follow-up", "Enter"))
    cited_first = [c["msgId"] for c in sorted(replay["citations"], key=lambda c: c["n"])]
    assert sent == {
        "query": FOLLOW_UP,
        "turns": [{"query": "patroni", "messages": [{"_id": i} for i in cited_first]}],
    }
    assert _keys(sent) <= {"query", "turns", "messages", "_id"}
    assert page.locator("#answer-thread .answer-question").all_inner_texts() == ["patroni"]
    assert page.inner_text("#answer-thread .answer-text") == FIRST_ANSWER
    assert page.inner_text("#answer-question") == FOLLOW_UP
    # The follow-up's [1] is the server's first source of its own search: the page shows it as the
    # list's number of that message (issue 36), or by author and room when the list does not hold it.
    cite = page.locator("#answer-body a.cite")
    assert cite.count() == 1 and cite.get_attribute("data-n") == "1"
    position = cite.get_attribute("data-position")
    if position is not None:
        assert cite.inner_text() == f"[{position}]"
        assert page.get_attribute(f"#result-{position}", "data-msg-id") == cite.get_attribute("data-msg-id")
    else:
        assert not cite.inner_text()[1:-1].isdigit()
    shown_second = SECOND_ANSWER.replace("[1]", cite.inner_text())
    assert page.inner_text("#answer-body .answer-text") == shown_second
    assert page.input_value("#follow-up") == ""
    second_id = page.get_attribute("#answer", "data-answer-id")
    assert second_id and second_id != first_id

    # Thumbs down, then why: both reach the feedback route, kept for this reader.
    page.click("#answer-down")
    page.wait_for_selector("#answer-reason-form:not([hidden])")
    assert page.get_attribute("#answer-down", "aria-pressed") == "true"
    assert page.get_attribute("#answer-up", "aria-pressed") == "false"
    kept = server.call("bob", "GET", "ai.search.answer.get", params={"answerId": second_id})
    assert kept["feedback"] == {"rating": "down", "reason": ""}
    page.fill("#answer-reason", REASON)
    page.press("#answer-reason", "Enter")
    page.wait_for_selector("#answer-reason-form", state="hidden")
    assert page.inner_text("#answer-actions-status") == "Thanks: your reason was saved."
    kept = server.call("bob", "GET", "ai.search.answer.get", params={"answerId": second_id})
    assert kept["feedback"] == {"rating": "down", "reason": REASON}

    # Copy link shares the answer; the link opens it, question and all, for its reader.
    page.click("#answer-share")
    page.wait_for_function(
        "() => document.getElementById('answer-actions-status').textContent === 'Link copied.'"
    )
    link = page.evaluate("navigator.clipboard.readText()")
    assert link == f"{server.url}?answer={second_id}"
    assert server.call("bob", "GET", "ai.search.answer.get", params={"answerId": second_id})["shared"] is True
    cited = page.get_attribute("#answer-body a.cite", "data-msg-id")
    page.goto(link)
    page.wait_for_selector("#answer:not([hidden]) #answer-body .answer-text")
    assert page.inner_text("#answer-question") == FOLLOW_UP
    # No result list under a shared answer: its source is named by author and room, not numbered.
    named = page.locator("#answer-body a.cite")
    assert named.get_attribute("data-msg-id") == cited and named.get_attribute("data-position") is None
    assert page.inner_text("#answer-body .answer-text") == SECOND_ANSWER.replace("[1]", named.inner_text())
    assert not named.inner_text()[1:-1].isdigit() and " in #" in named.inner_text()
    assert page.get_attribute("#answer-down", "aria-pressed") == "true", "the reader's own rating"


def test_a_shared_answer_hides_what_its_reader_cannot_read(tabs: Any, server: Server) -> None:
    """grace reads no #incidents: a shared answer drawn from there opens with its sentences left out
    and the note, not with the texts of messages she may not read. carol asks (answers are rate
    limited per person, and the session's other tests ask as bob)."""
    page, _record = tabs.new()
    open_page(page, server, username="carol")
    _search(page, "patroni in:#incidents")
    _writes(server, FIRST_ANSWER)
    _ask(page, lambda: page.click("#ask"))
    answer_id = page.get_attribute("#answer", "data-answer-id")
    server.call("carol", "POST", "ai.search.answer.share", json={"answerId": answer_id})
    seen = server.call("grace", "GET", "ai.search.answer.get", params={"answerId": answer_id})
    assert seen["hiddenSources"] > 0 and seen["note"]

    page, _record = tabs.new()
    open_page(page, server, username="grace")
    page.goto(f"{server.url}?answer={answer_id}")
    page.wait_for_selector("#answer:not([hidden]) #answer-note:not([hidden])")
    assert page.inner_text("#answer-note") == seen["note"]
    assert page.inner_text("#answer-body .answer-text") == seen["answer"]
    assert "pg-ledger-02" not in page.inner_text("#answer")
    assert page.is_hidden("#answer-share"), "only its owner shares it"
    # Issue 36: only the actions that work. No results on the page: nothing to "Ask AI about"; and
    # when nothing of the answer can be shown to her, nothing to rate or to follow up either.
    assert page.is_hidden("#ask")
    if not seen["answer"]:
        assert seen["note"] == HIDDEN_ANSWER_NOTE
        assert page.is_hidden("#answer-actions") and page.is_hidden("#follow-up-form")
    else:
        assert page.is_visible("#answer-up") and page.is_visible("#follow-up-form")
