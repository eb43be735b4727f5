"""A result in its conversation: the thread (or the room around it), the hit marked and in view, on
the page by mouse, by keyboard only and through a permalink; Back returns to the results as they were.

Every expectation about what a conversation holds is read from the server (``chat.getMessageContext``
as the same person), so the page is checked against the store, not against a copy of the demo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from ai_search_web.conversations import MAX_HITS_PER_CONVERSATION

from ._hostile import PAYLOADS, WORD
from .conftest import PageRecord, Server
from .test_results import _search, _searches_done

pytestmark = pytest.mark.browser

# Two replies of the ledger-db failover thread in #incidents match; neither is its first message.
THREAD_QUERY = "in:#incidents patroni"
THREAD_LINE = "in:incidents patroni"  # as the address bar keeps it (the serialized query)
READY = "#context[data-state=ready]"
# The hit's box against the view's: inside it, not hidden under its sticky heading.
HIT_IN_VIEW = """() => {
  const hit = document.querySelector('#context-list .is-hit');
  const view = document.getElementById('context');
  const head = document.querySelector('.context-head').getBoundingClientRect();
  const r = hit.getBoundingClientRect();
  const bottom = Math.min(view.getBoundingClientRect().bottom, window.innerHeight);
  return r.top >= head.bottom - 1 && r.bottom <= bottom + 1;
}"""


def _params(page: Any) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(page.url).query).items()}


def _listed(page: Any) -> list[str]:
    return list(
        page.locator("#context-list .context-message").evaluate_all("ns => ns.map(n => n.dataset.msgId)")
    )


def assert_in_its_thread(page: Any, server: Server, username: str, msg_id: str) -> dict[str, Any]:
    """The view shows the message's whole thread as the server has it, first message first, the
    message itself marked, focused and in view; returns the server's context."""
    page.wait_for_selector(READY)
    expected = server.call(username, "GET", "chat.getMessageContext", params={"msgId": msg_id})
    assert expected["kind"] == "thread" and expected["tmid"] != msg_id, "the hit must be a reply"
    ids = [m["_id"] for m in expected["messages"]]
    assert _listed(page) == ids
    assert ids[0] == expected["tmid"]  # the parent first, then every sibling in order
    hit = page.locator("#context-list .is-hit")
    assert hit.count() == 1
    assert hit.get_attribute("data-msg-id") == msg_id
    assert hit.get_attribute("aria-current") == "true"
    assert page.evaluate("document.activeElement.dataset.msgId") == msg_id
    assert page.evaluate(HIT_IN_VIEW)
    assert page.inner_text("#context-title") == "Thread"
    assert f"{expected['replies']} replies" in page.inner_text("#context-where")
    return expected


def test_a_thread_reply_opens_in_its_thread_and_back_returns_to_the_results(
    open_as: Callable[..., Any], server: Server
) -> None:
    page = open_as("bob")
    _search(page, THREAD_QUERY)
    # The list says the conversation: both hits under one heading, the thread's reply count in it.
    heads = page.locator("#result-list .conversation-head")
    assert heads.count() == 1
    first = page.locator("#result-1")
    msg_id = first.get_attribute("data-msg-id")
    context = server.call("bob", "GET", "chat.getMessageContext", params={"msgId": msg_id})
    assert f"{context['replies']} replies" in heads.first.inner_text()
    assert page.locator(".conversation .result").count() == 2
    page.evaluate("window.scrollTo(0, 120)")
    scrolled = page.evaluate("window.scrollY")
    searches = _searches_done(page)

    first.click()
    expected = assert_in_its_thread(page, server, "bob", msg_id)
    assert _params(page) == {"q": THREAD_LINE, "msg": msg_id}
    # The words the search matched are marked in the hit, and the thread's other hit is marked as found.
    assert [m.lower() for m in page.locator("#context-list .is-hit mark").all_inner_texts()] == ["patroni"]
    found = page.locator("#context-list .is-found").evaluate_all("ns => ns.map(n => n.dataset.msgId)")
    assert found == [page.get_attribute("#result-2", "data-msg-id")]
    # Files and reactions of the thread show where the store has them.
    files = page.locator("#context-list .file-name").all_inner_texts()
    assert files == [f["name"] for m in expected["messages"] for f in m.get("files", [])]
    assert page.locator("#context-list .reaction").count() == sum(
        len(m.get("reactions", {})) for m in expected["messages"]
    )

    page.go_back()
    page.wait_for_selector("#context", state="hidden")
    assert _params(page) == {"q": THREAD_LINE}
    assert _searches_done(page) == searches  # the same results, not a new search
    assert page.evaluate("window.scrollY") == scrolled
    assert page.evaluate("document.activeElement.id") == "result-1"
    page.go_forward()
    assert_in_its_thread(page, server, "bob", msg_id)  # from the page's memory: no second request


def test_a_permalink_opens_the_message_in_its_thread_and_copies_itself(
    open_as: Callable[..., Any], server: Server, context: Any
) -> None:
    found = server.call("bob", "GET", "ai.search", params={"q": THREAD_QUERY})["intelligent"]
    msg_id = next(r["_id"] for r in found if r.get("tmid"))
    page = open_as("bob")
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.origin)
    entries = page.evaluate("history.length")
    page.goto(f"{server.url}?msg={msg_id}")
    assert_in_its_thread(page, server, "bob", msg_id)

    page.click("#context-copy")
    page.wait_for_selector("#context-status:has-text('Link copied.')")
    assert page.evaluate("navigator.clipboard.readText()") == f"{server.url}?msg={msg_id}"
    # Closing a permalink stays on the page (it pushed no entry to step back from).
    page.click("#context-close")
    page.wait_for_selector("#context", state="hidden")
    assert page.url == server.url
    assert page.evaluate("history.length") == entries + 1
    assert page.evaluate("document.activeElement.id") == "search-box"


def test_keyboard_only_a_result_opens_and_escape_returns_to_it(
    open_as: Callable[..., Any], server: Server
) -> None:
    page = open_as("bob")
    page.keyboard.type(THREAD_QUERY)
    page.keyboard.press("Enter")
    page.wait_for_selector("#result-list .result")
    for _ in range(30):  # Tab from the box, through the controls, to the first result
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('result')"):
            break
    assert page.evaluate("document.activeElement.id") == "result-1"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "result-2"
    msg_id = page.get_attribute("#result-2", "data-msg-id")
    page.keyboard.press("Enter")
    assert_in_its_thread(page, server, "bob", msg_id)
    # Tab reaches the view's controls; Escape closes it from anywhere in it.
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.closest('#context') !== null")
    page.keyboard.press("Escape")
    page.wait_for_selector("#context", state="hidden")
    assert page.evaluate("document.activeElement.id") == "result-2"
    assert "msg" not in _params(page)


def test_a_message_outside_a_thread_opens_amid_its_room(open_as: Callable[..., Any], server: Server) -> None:
    """The messages before and after it, oldest first; a thread's message among them (here a reply
    of another thread, posted in between) offers its thread, which opens in the same view."""
    page = open_as("bob")
    _search(page, "in:#ops failover game day")
    msg_id = "demo-failover-gameday-01"
    expected = server.call("bob", "GET", "chat.getMessageContext", params={"msgId": msg_id})
    assert expected["kind"] == "room"
    position = page.locator(f"#result-list .result[data-msg-id='{msg_id}']").get_attribute("id")
    page.click(f"#{position}")
    page.wait_for_selector(READY)
    assert _listed(page) == [m["_id"] for m in expected["messages"]]
    assert page.get_attribute("#context-list .is-hit", "data-msg-id") == msg_id
    assert page.inner_text("#context-title") == "Conversation"
    threaded = [m["_id"] for m in expected["messages"] if m.get("tcount") or m.get("tmid")]
    assert threaded, "the demo posts a reply of another thread amid this one's room"
    buttons = page.locator("#context-list .open-thread")
    assert buttons.count() == len(threaded)
    buttons.first.click()
    page.wait_for_selector(f"#context[data-state=ready] .is-hit[data-msg-id='{threaded[0]}']")
    assert page.inner_text("#context-title") == "Thread"
    assert _params(page)["msg"] == threaded[0]
    page.keyboard.press("Escape")  # one entry for the whole visit: Escape goes back to the results
    page.wait_for_selector("#context", state="hidden")
    assert "msg" not in _params(page)


@pytest.mark.parametrize(
    ("msg_id", "edited", "pinned", "reactions"),
    [
        pytest.param("demo-code-freeze-01", True, True, ["👍"], id="edited-pinned-and-reacted"),
        pytest.param("demo-platform-announcement-01", False, False, ["🚀", "🎉"], id="two-reactions"),
    ],
)
def test_edits_pins_and_reactions_show_in_the_view(
    open_as: Callable[..., Any], server: Server, msg_id: str, edited: bool, pinned: bool, reactions: list[str]
) -> None:
    page = open_as("bob")
    page.goto(f"{server.url}?msg={msg_id}")
    page.wait_for_selector(READY)
    hit = page.locator("#context-list .is-hit")
    message = server.call("bob", "GET", "chat.getMessage", params={"msgId": msg_id})["message"]
    assert (hit.locator(".message-edited").count() == 1) is edited is ("editedAt" in message)
    assert (hit.locator(".message-pinned").count() == 1) is pinned is bool(message.get("pinned"))
    assert sorted(hit.locator(".reaction-emoji").all_inner_texts()) == sorted(reactions)
    counts = hit.locator(".reaction-count").all_inner_texts()
    assert sorted(int(c) for c in counts) == sorted(
        len(r["usernames"]) for r in message["reactions"].values()
    )


def test_a_message_the_reader_cannot_read_says_so(
    open_as: Callable[..., Any], server: Server, record: PageRecord
) -> None:
    """grace is not in #incidents: its permalink answers as a message that does not exist."""
    record.allow_error("status of 404")  # the refusal this test asks for
    page = open_as("grace")
    page.goto(f"{server.url}?msg=demo-pg-failover-02")
    page.wait_for_selector("#context[data-state=failed]")
    assert page.inner_text("#context-status") == "This message does not exist, or you cannot read it."
    assert page.locator("#context-list .context-message").count() == 0


def test_hostile_messages_stay_text_in_the_view(open_as: Callable[..., Any], hostile: None) -> None:
    page = open_as("bob")
    _search(page, f"in:#ops {WORD}")
    page.click("#result-1")
    page.wait_for_selector(READY)
    texts = page.locator("#context-list .message-text").all_inner_texts()
    assert {p for p in PAYLOADS if p in texts}, "the view shows the hostile messages around the hit"
    assert page.evaluate(
        """() => ({
          xss: window.__xss ?? null, pyxss: window.__pyxss ?? null,
          markup: document.querySelectorAll('#context img, #context script, #context iframe, #context svg:not(.icon)').length,
        })"""
    ) == {"xss": None, "pyxss": None, "markup": 0}


def test_a_reply_says_its_thread_and_its_files(open_as: Callable[..., Any], server: Server) -> None:
    """Alone in the list, a reply names its thread (title, replies) and shows its files as labels."""
    page = open_as("bob")
    _search(page, "in:#incidents pgbouncer")
    found = server.call("bob", "GET", "ai.search", params={"q": "in:#incidents pgbouncer"})["intelligent"]
    reply = next(r for r in found if r.get("tmid") and r.get("files"))
    item = page.locator(f"#result-list .result[data-msg-id='{reply['_id']}']")
    note = item.locator(".result-thread").text_content()
    assert note == f"In thread “{reply['thread']['title']}” · {reply['thread']['replies']} replies"
    assert item.locator(".file-name").all_inner_texts() == [f["name"] for f in reply["files"]]
    assert item.locator(".file a, .file[href]").count() == 0  # labels, not links: no file bytes here


def test_a_busy_thread_lists_its_best_hits_and_opens_the_others(
    open_as: Callable[..., Any], server: Server
) -> None:
    """A thread with more hits than MAX_HITS_PER_CONVERSATION lists that many, the best first and the
    others in the order they were written, and "N more in this thread" opens the best of the others
    in the thread."""
    query = "in:#support-escalations export"
    found = server.call("bob", "GET", "ai.search", params={"q": query, "intelligentCount": "50"})[
        "intelligent"
    ]
    by_thread: dict[str, list[dict[str, Any]]] = {}
    for result in found:
        if result.get("thread"):
            by_thread.setdefault(result["thread"]["_id"], []).append(result)
    thread_id, hits = max(by_thread.items(), key=lambda item: len(item[1]))
    assert len(hits) > MAX_HITS_PER_CONVERSATION, "the demo's export escalation matches more often"
    page = open_as("bob")
    _search(page, query)
    group = page.locator(f"#result-list .conversation:has(.result[data-msg-id='{hits[0]['_id']}'])")
    listed = group.locator(".result").evaluate_all("ns => ns.map(n => n.dataset.msgId)")
    best = hits[:MAX_HITS_PER_CONVERSATION]
    assert listed == [best[0]["_id"]] + [r["_id"] for r in sorted(best[1:], key=lambda r: r["ts"])]
    more = group.locator(".conversation-more")
    left = len(hits) - MAX_HITS_PER_CONVERSATION
    assert more.inner_text() == f"{left} more in this thread"
    more.click()
    page.wait_for_selector(READY)
    assert (
        page.get_attribute("#context-list .is-hit", "data-msg-id") == hits[MAX_HITS_PER_CONVERSATION]["_id"]
    )
    assert _listed(page)[0] == thread_id
    page.keyboard.press("Escape")
    page.wait_for_selector("#context", state="hidden")
    assert page.evaluate("document.activeElement.className") == "conversation-more"
