"""One number per message (issue 36): every ``[N]`` of an answer, and of every follow-up, is the result
list's ``N``, and following it opens the list's result ``N``.

The server numbers an answer's sources its own way: an extractive answer numbers the replies of its
sources' threads after the 20 sources, a follow-up numbers what its own search found, and neither
knows how the page grouped its threads or how far "Show more" went. The page shows every citation
through its one numbering (``ResultNumbers``) or, for a message the list does not hold, by author and
room. These tests run on the embedded default (no language model: extractive answers), as bob, on
the demo workspace, and check every citation the page shows against the list itself:

- a link showing ``[N]`` names result ``N`` of the list (its ``#result-N`` holds the same message),
  and clicking it marks that result and opens that message in its conversation;
- a link that shows no number names a message the list does not hold, and opens it too;
- the server's own numbers differ from the page's somewhere, so the renumbering is exercised;
- results come in bands, strong ones first: a related result is numbered after every strong one,
  and a citation of it opens the closed related section and brings the result into view.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ai_search_web.conversations import message_id

from .conftest import PYTHON_READY_MS, Server, open_page
from .test_bands import SEARCH_ROUTE, Banding
from .test_results import _search, wait_for_search

pytestmark = pytest.mark.browser

NUMBER = re.compile(r"\[(\d+)\]")
# The issue's own steps (demo, bob), and a search whose list groups threads and needs "Show more".
CERTIFICATE = "when did the webhook certificate expire and why"
FAILOVER = "ledger-db failover"
FOLLOW_UP = "and who fixed it?"
SECOND_FOLLOW_UP = "when was that?"


@pytest.fixture(scope="session")
def server(extractive_server: Server) -> Server:
    """This module's answers are extractive (no language model), as on the embedded default."""
    return extractive_server


def _answered(page: Any, question: str) -> None:
    page.wait_for_function(
        "q => document.getElementById('answer-question').textContent === q"
        " && document.getElementById('answer-body').getAttribute('aria-busy') === 'false'"
        " && !document.getElementById('follow-up-form').hidden",
        arg=question,
    )


def _ask(page: Any, question: str, action: Callable[[], None]) -> None:
    """Ask (``action``) and wait for the answer."""
    with page.expect_request("**/api/v1/ai.search.answer"):
        action()
    _answered(page, question)


def _links(page: Any) -> list[dict[str, Any]]:
    """Every citation the answer panel shows, earlier turns first."""
    links: list[dict[str, Any]] = page.locator("#answer a.cite").evaluate_all(
        """nodes => nodes.map((n, index) => ({index, text: n.textContent, msgId: n.dataset.msgId,
             position: n.dataset.position || null, href: n.getAttribute('href'), n: n.dataset.n}))"""
    )
    return links


def _listed(page: Any, position: int) -> str | None:
    return page.get_attribute(f"#result-{position}", "data-msg-id")


def _check_one_numbering(page: Any) -> list[dict[str, Any]]:
    """Every citation shown is the list's number of its message (or names a message off the list),
    and following it opens that result; returns the links."""
    links = _links(page)
    assert links, "the answer cites something"
    for link in links:
        if link["position"] is None:
            assert not NUMBER.fullmatch(link["text"]), f"an unlisted message shown as a number: {link}"
        else:
            assert link["text"] == f"[{link['position']}]", link
            assert link["href"] == f"#result-{link['position']}"
        page.locator("#answer a.cite").nth(link["index"]).click()
        page.wait_for_selector("#context[data-state=ready]")
        assert page.get_attribute("#context-list .is-hit", "data-msg-id") == link["msgId"], link
        if link["position"] is not None:
            # The list's result N (revealed when it was behind "Show more") is the message cited.
            assert _listed(page, int(link["position"])) == link["msgId"], link
            marked = page.get_attribute(f"#result-{link['position']}", "class") or ""
            assert "is-cited" in marked.split(), link
        page.keyboard.press("Escape")
        page.wait_for_selector("#context", state="hidden")
    return links


def _check_off_list(page: Any, links: list[dict[str, Any]]) -> None:
    """The links that show no number name messages the whole list (every page of it) does not hold."""
    while page.is_visible("#show-more"):
        page.click("#show-more")
    listed = set(page.locator("#result-list .result").evaluate_all("ns => ns.map(n => n.dataset.msgId)"))
    for link in links:
        assert (link["position"] is None) == (link["msgId"] not in listed), link


def _renumbered(links: list[dict[str, Any]]) -> bool:
    """Whether some message is shown with another number than the server gave it (or with none)."""
    return any(link["n"] != link["position"] for link in links)


def test_the_issues_steps_cite_the_lists_numbers(page: Any, server: Server, tmp_path: Path) -> None:
    """Search, Ask AI, then the follow-up: each [N] opens the list's result N, in the first answer
    and in the follow-up, and a message keeps its number from one to the other."""
    open_page(page, server, username="bob")
    _search(page, CERTIFICATE)
    _ask(page, CERTIFICATE, lambda: page.click("#ask"))
    first_links = _check_one_numbering(page)
    _ask(page, FOLLOW_UP, lambda: (page.fill("#follow-up", FOLLOW_UP), page.press("#follow-up", "Enter")))
    links = _check_one_numbering(page)
    page.screenshot(path=str(tmp_path / "numbering-certificate.png"), full_page=True)
    shown: dict[str, set[str | None]] = {}
    for link in links:
        shown.setdefault(link["msgId"], set()).add(link["position"])
    assert all(len(numbers) == 1 for numbers in shown.values()), f"one message, one number: {shown}"
    assert [link["msgId"] for link in links[: len(first_links)]] == [link["msgId"] for link in first_links]
    assert _renumbered(links), "the server's numbers are not the page's: the test renumbers something"
    _check_off_list(page, links)


def test_grouped_threads_show_more_follow_ups_and_a_sort_change(page: Any, server: Server, tmp_path: Path) -> None:
    """A list that groups threads, answered after "Show more", followed up twice, then sorted by
    time and asked again: every citation of every turn is the list's number of its message."""
    open_page(page, server, username="bob")
    _search(page, FAILOVER)
    assert page.locator("#result-list .conversation").count() >= 1, "the list groups a thread"
    page.click("#show-more")
    _ask(page, FAILOVER, lambda: page.click("#ask"))
    _check_one_numbering(page)
    for question in (FOLLOW_UP, SECOND_FOLLOW_UP):
        _ask(page, question, lambda q=question: (page.fill("#follow-up", q), page.press("#follow-up", "Enter")))
        links = _check_one_numbering(page)
    assert page.locator("#answer-thread .answer-turn").count() == 2

    # Newest first: a new list, new numbers; the answers start again and cite the new list.
    before = int(page.get_attribute("html", "data-searches") or 0)
    order = page.locator("#result-list .result").evaluate_all("ns => ns.map(n => n.dataset.msgId)")
    page.click("#sort-toggle")
    wait_for_search(page, before)
    assert page.locator("#answer a.cite").count() == 0, "the answers about the old list are gone"
    assert page.locator("#result-list .result").evaluate_all("ns => ns.map(n => n.dataset.msgId)") != order
    _ask(page, FAILOVER, lambda: page.click("#ask"))
    _check_one_numbering(page)
    _ask(page, FOLLOW_UP, lambda: (page.fill("#follow-up", FOLLOW_UP), page.press("#follow-up", "Enter")))
    links = _check_one_numbering(page)
    page.screenshot(path=str(tmp_path / "numbering-failover-sorted.png"), full_page=True)
    assert _renumbered(links)
    _check_off_list(page, links)



def test_the_widget_numbers_as_the_page_does(page: Any, server: Server) -> None:
    """The widget's page (``/embed``, here alone, with no host) is the page's Python: its answers and
    follow-ups cite its own list's numbers too."""
    open_page(page, server, username="bob")  # signs the tab in
    page.goto(f"{server.url}embed")
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    _search(page, FAILOVER)
    _ask(page, FAILOVER, lambda: page.click("#ask"))
    _check_one_numbering(page)
    _ask(page, FOLLOW_UP, lambda: (page.fill("#follow-up", FOLLOW_UP), page.press("#follow-up", "Enter")))
    links = _check_one_numbering(page)
    assert _renumbered(links)


# Whether a result is (at least partly) in the window.
IN_VIEW = """(id) => {
  const r = document.getElementById(id).getBoundingClientRect();
  return r.height > 0 && r.bottom > 0 && r.top < window.innerHeight;
}"""


def test_a_citation_of_a_related_result_opens_its_section(page: Any, server: Server) -> None:
    """Strong results first, then related ones, in one numbering: an answer's [N] of a related result
    shows the list's N (after every strong one), and following it opens the closed related section,
    marks the result and brings it into view beside its conversation. The search's bands and the
    answer are forged on their way (this server has no bands; the answer cites what the test
    chooses, numbered the server's own way)."""
    open_page(page, server, username="bob")
    banding = Banding(strong=3)
    page.route(SEARCH_ROUTE, banding)
    _search(page, FAILOVER)
    listed, strong_listed = banding.listed()
    assert len(listed) > strong_listed + 1, "the failover search has related results to cite"
    strong_hit, related_hit = listed[0], listed[strong_listed + 1]
    position = strong_listed + 2
    answer = {
        "answerId": None,
        "answer": "The primary failed over to the replica [2]. A game day rehearsed it later [1].",
        "citations": [
            {"n": 1, "msgId": message_id(related_hit), "rid": related_hit["rid"]},
            {"n": 2, "msgId": message_id(strong_hit), "rid": strong_hit["rid"]},
        ],
        "provider": {"name": "extractive"},
        "truncated": False,
        "sentences": [],
    }
    page.route("**/api/v1/ai.search.answer", lambda route: route.fulfill(json=answer))
    _ask(page, FAILOVER, lambda: page.click("#ask"))
    assert [link["text"] for link in _links(page)] == ["[1]", f"[{position}]"]
    assert page.get_attribute("#related-toggle", "aria-expanded") == "false"
    assert page.is_hidden(f"#result-{position}")

    page.locator(f"#answer a.cite[data-position='{position}']").click()
    page.wait_for_selector("#context[data-state=ready]")
    assert page.get_attribute("#context-list .is-hit", "data-msg-id") == message_id(related_hit)
    assert page.get_attribute("#related-toggle", "aria-expanded") == "true"
    assert page.is_visible(f"#result-{position}")
    assert "is-cited" in (page.get_attribute(f"#result-{position}", "class") or "").split()
    assert page.evaluate(IN_VIEW, f"result-{position}"), "the cited result is brought into view"
    page.keyboard.press("Escape")
    page.wait_for_selector("#context", state="hidden")
    # Closed again, the section opens again for the same citation; every link is the list's number.
    page.click("#related-toggle")
    assert page.is_hidden(f"#result-{position}")
    _check_one_numbering(page)
    assert page.get_attribute("#related-toggle", "aria-expanded") == "true"
