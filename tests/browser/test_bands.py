"""Confidence bands on the page: strong results are the list, related ones a section of their own
below it, closed behind a button; the count says how many of each; one numbering runs through both;
a thread shows its best hit first; the receipt says how much of the workspace re-ranking covers.

The browser suite's server searches by keywords only (no embedding model to load), and bands are
calibrated for the local model: so these tests take the server's real answer to a real search and
give it bands on its way to the page (the first ``strong`` results strong, the rest related, as
``ai.search`` orders them), and a second stage where a test needs one. What the page should show is
worked out from that forged answer with the page's own pure helpers (the bands, the grouping, the
numbering), never written into the test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from ai_search_web.conversations import (
    RELATED_BAND,
    STRONG_BAND,
    group_by_conversation,
    message_id,
    split_bands,
)
from ai_search_web.wording import RERANK_FAILED_TEXT, bands_text, no_strong_text, related_text

from .conftest import PYTHON_READY_MS, Server, open_page
from .test_results import _search

pytestmark = pytest.mark.browser

SEARCH_ROUTE = "**/api/v1/ai.search?*"
# Many hits in several threads of #incidents and #engineering (the demo's ledger-db failover).
FAILOVER = "ledger-db failover"
# A thread (the ledger-db postmortem) whose best hit is a reply written after the thread's other
# hits: listed as written, the reply would come last.
BEST_REPLY_QUERY = "patroni"
# Related results ai.search returns at most (retrieval/second_stage/bands.py).
RELATED_LIMIT = 20
# A markup payload in a related result's text: it must stay text.
MARKUP = '<img src=x onerror="window.__pwned=1"><b>bold</b>'


@dataclass
class Banding:
    """Gives ai.search's real answers bands: the first ``strong`` results strong, the next (at most
    20) related; with ``stage``, a second stage's report. Keeps the last answer it forged."""

    strong: int
    stage: dict[str, Any] | None = None
    notices: list[str] | None = None
    markup: bool = False
    data: dict[str, Any] = field(default_factory=dict)

    def __call__(self, route: Any) -> None:
        response = route.fetch()
        data = response.json()
        found = data["intelligent"][: self.strong + RELATED_LIMIT]
        for index, result in enumerate(found):
            result["band"] = STRONG_BAND if index < self.strong else RELATED_BAND
        if self.markup and len(found) > self.strong:
            found[self.strong]["text"] = MARKUP + " " + found[self.strong]["text"]
        retrieval = data["meta"]["retrieval"]
        strong = min(self.strong, len(found))
        retrieval["bands"] = {"strong": strong, "related": len(found) - strong}
        if self.stage is not None:
            retrieval["secondStage"] = self.stage
        if self.notices is not None:
            retrieval["notices"] = self.notices
        data["intelligent"] = found
        self.data = data
        route.fulfill(response=response, json=data)

    @property
    def found(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.data["intelligent"]
        return found

    def listed(self) -> tuple[list[dict[str, Any]], int]:
        """The list as the page numbers it (result n is listed[n - 1]), and how many are strong."""
        strong, related = split_bands(self.found)
        strong_hits = [hit for group in group_by_conversation(strong) for hit in group.hits]
        related_hits = [hit for group in group_by_conversation(related) for hit in group.hits]
        return strong_hits + related_hits, len(strong_hits)


def _banded_search(page: Any, banding: Banding, query: str = FAILOVER) -> None:
    """Search ``query`` (the box emptied first), its answer given bands by ``banding``."""
    page.unroute(SEARCH_ROUTE)
    page.route(SEARCH_ROUTE, banding)
    page.fill("#search-box", "")
    _search(page, query)


def _ids(page: Any, selector: str) -> list[str]:
    ids: list[str] = page.locator(selector).evaluate_all("ns => ns.map(n => n.dataset.msgId)")
    return ids


def _numbers(page: Any, selector: str) -> list[str]:
    numbers: list[str] = page.locator(f"{selector} .result-number").all_inner_texts()
    return numbers


def _expanded(page: Any) -> str | None:
    expanded: str | None = page.get_attribute("#related-toggle", "aria-expanded")
    return expanded


def test_the_count_names_both_bands_and_the_related_ones_wait_closed(open_as: Callable[..., Any]) -> None:
    """The count says both bands ("3 strong matches · 12 related."); the strong results are the list,
    numbered from 1; the related ones sit closed behind a labelled button, numbered after them."""
    page = open_as("bob")
    banding = Banding(strong=3)
    _banded_search(page, banding)
    strong, related = split_bands(banding.found)
    assert strong and related, "the demo's failover talk gives both bands"
    assert page.inner_text("#status") == bands_text(len(strong), len(related))
    assert page.inner_text("#status") == f"3 strong matches · {len(related)} related."
    listed, strong_listed = banding.listed()
    assert _ids(page, "#result-list .result") == [message_id(r) for r in listed[:strong_listed]]
    assert _numbers(page, "#result-list") == [f"[{n}]" for n in range(1, strong_listed + 1)]
    assert page.is_hidden("#show-more"), "three strong results fit the first page"
    # The related section: its button labelled and closed, its results not on the page.
    assert page.is_visible("#related-toggle")
    assert page.inner_text("#related-toggle") == related_text(len(related))
    assert _expanded(page) == "false"
    assert page.get_attribute("#related-toggle", "aria-controls") == "related-list"
    assert page.is_hidden("#related-list")
    assert page.is_hidden("#related-note"), "some results are strong: no 'No strong match'"
    page.click("#related-toggle")
    assert _ids(page, "#related-list .result") == [message_id(r) for r in listed[strong_listed:]]
    first_related = strong_listed + 1
    assert _numbers(page, "#related-list") == [f"[{n}]" for n in range(first_related, len(listed) + 1)]
    assert page.get_attribute(f"#result-{first_related}", "data-msg-id") == message_id(listed[strong_listed])


def test_the_related_section_opens_and_closes_by_click_and_by_keyboard(open_as: Callable[..., Any]) -> None:
    """The button is a disclosure (``aria-expanded``): a click, Enter and Space each open or close it
    in place, focus stays on it; a related result then opens in its conversation from the keyboard
    like any other. Its untrusted text stays text."""
    page = open_as("bob")
    banding = Banding(strong=3, markup=True)
    _banded_search(page, banding)
    toggle = page.locator("#related-toggle")
    toggle.click()
    assert _expanded(page) == "true" and page.is_visible("#related-list")
    toggle.click()
    assert _expanded(page) == "false" and page.is_hidden("#related-list")
    toggle.focus()
    page.keyboard.press("Enter")
    assert _expanded(page) == "true" and page.is_visible("#related-list")
    assert page.evaluate("document.activeElement.id") == "related-toggle"
    page.keyboard.press("Space")
    assert _expanded(page) == "false" and page.is_hidden("#related-list")
    page.keyboard.press("Space")
    assert _expanded(page) == "true"
    # The forged markup is text: shown as written, no element made, nothing run.
    listed, strong_listed = banding.listed()
    first = page.locator(f"#result-{strong_listed + 1}")
    assert MARKUP in first.locator(".result-text").inner_text()
    assert page.locator("#related-list img, #related-list b").count() == 0
    assert page.evaluate("window.__pwned === undefined")
    # Tab from the button reaches the first related result; Enter opens it in its conversation.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == f"result-{strong_listed + 1}"
    page.keyboard.press("Enter")
    page.wait_for_selector("#context[data-state=ready]")
    assert page.get_attribute("#context-list .is-hit", "data-msg-id") == message_id(listed[strong_listed])
    page.keyboard.press("Escape")
    page.wait_for_selector("#context", state="hidden")
    assert page.evaluate("document.activeElement.id") == f"result-{strong_listed + 1}"


def test_nothing_strong_says_so_and_shows_the_related_results(open_as: Callable[..., Any]) -> None:
    """No strong result: the status and the section say it plainly, and the related results are
    shown at once (numbered from 1), not hidden under a closed button on an otherwise empty page."""
    page = open_as("bob")
    banding = Banding(strong=0)
    _banded_search(page, banding)
    related = len(banding.found)
    assert related > 1
    assert page.inner_text("#status") == f"No strong match · {related} related."
    assert page.inner_text("#related-note") == no_strong_text(related)
    assert page.inner_text("#related-note") == f"No strong match. {related} related results may help."
    assert _expanded(page) == "true" and page.is_visible("#related-list")
    assert page.locator("#result-list .result").count() == 0
    assert page.is_hidden("#show-more") and page.is_hidden("#empty")
    assert _numbers(page, "#related-list")[0] == "[1]"
    # They are what is on the page, so "Ask AI about these results" is offered over them.
    assert page.is_visible("#ask")


def test_no_bands_keep_the_plain_count_and_no_related_section(open_as: Callable[..., Any]) -> None:
    """A server without calibrated bands (this one, unforged) sends none: one list, the count as
    before, no related section."""
    page = open_as("bob")
    _search(page, FAILOVER)
    assert page.inner_text("#status").endswith(("result.", "results.", "are shown."))
    assert page.is_hidden("#related")


def test_a_threads_best_hit_comes_first_even_when_it_is_a_late_reply(
    open_as: Callable[..., Any], server: Server
) -> None:
    """A thread's hits: the best (the server's order) first, though it is a reply written after the
    others, then the others as they were written."""
    found = server.call("bob", "GET", "ai.search", params={"q": BEST_REPLY_QUERY, "intelligentCount": "50"})[
        "intelligent"
    ]
    threads: dict[str, list[dict[str, Any]]] = {}
    for result in found:
        if result.get("thread"):
            threads.setdefault(result["thread"]["_id"], []).append(result)
    hits = next(
        hits
        for hits in threads.values()
        if len(hits) > 1 and hits[0].get("tmid") and min(h["ts"] for h in hits[1:3]) < hits[0]["ts"]
    )
    best, rest = hits[0], hits[1:3]
    page = open_as("bob")
    _search(page, BEST_REPLY_QUERY)
    while page.is_visible("#show-more"):
        page.click("#show-more")
    group = page.locator(f"#result-list .conversation:has(.result[data-msg-id='{best['_id']}'])")
    shown = _ids(group, ".result")
    assert shown == [best["_id"]] + [r["_id"] for r in sorted(rest, key=lambda r: r["ts"])]
    assert shown != [r["_id"] for r in sorted(hits[:3], key=lambda r: r["ts"])], "the old order differs"
    # The thread's first message, a hit too, comes right after the reply, as the first one written.
    root = next(r for r in rest if not r.get("tmid"))
    assert shown[1] == root["_id"]
    assert group.locator(".result").nth(1).locator(".result-thread").inner_text() == "Started this thread"


def test_the_receipt_says_how_much_re_ranking_covers(open_as: Callable[..., Any]) -> None:
    """While the second stage's vectors are computed the receipt says "re-ranking covers 62% of
    messages" (rounded down); once it covers everything, nothing; a stage that failed is said by
    the notices instead (the server's sentence, or the page's when the server sent none)."""
    page = open_as("bob")
    stage = {"kind": "local", "model": "local:all-mpnet-base-v2:int8", "coverage": 0.6299, "state": "ok"}
    _banded_search(page, Banding(strong=3, stage=stage))
    receipt = page.locator("#search-receipt span").all_inner_texts()
    assert receipt[-1] == "re-ranking covers 62% of messages"
    assert receipt[0].startswith("searched ")

    _banded_search(page, Banding(strong=3, stage={**stage, "coverage": 1.0}))
    assert not any("re-ranking" in line for line in page.locator("#search-receipt span").all_inner_texts())

    failed = {**stage, "state": "failed"}
    server_notice = "Re-ranking is unavailable right now; results are in first-stage order."
    _banded_search(page, Banding(strong=3, stage=failed, notices=[server_notice]))
    assert page.locator("#notices p").all_inner_texts() == [server_notice]
    assert not any("re-ranking" in line for line in page.locator("#search-receipt span").all_inner_texts())

    _banded_search(page, Banding(strong=3, stage=failed, notices=[]))
    assert page.locator("#notices p").all_inner_texts() == [RERANK_FAILED_TEXT]


def test_the_widget_shows_the_bands_as_the_page_does(page: Any, server: Server) -> None:
    """The widget's page (``/embed``, here alone, with no host) is the page's Python and markup: the
    same count, the same closed related section, the same receipt."""
    open_page(page, server, username="bob")  # signs the tab in
    page.goto(f"{server.url}embed")
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    stage = {"kind": "rerank", "model": "bge-reranker-v2-m3", "coverage": 0.5, "state": "ok"}
    banding = Banding(strong=2, stage=stage)
    _banded_search(page, banding)
    strong, related = split_bands(banding.found)
    assert page.inner_text("#status") == bands_text(len(strong), len(related))
    assert _expanded(page) == "false" and page.is_hidden("#related-list")
    assert "re-ranking covers 50% of messages" in page.inner_text("#search-receipt")
    page.click("#related-toggle")
    listed, strong_listed = banding.listed()
    assert _ids(page, "#related-list .result") == [message_id(r) for r in listed[strong_listed:]]
    assert _numbers(page, "#related-list")[0] == f"[{strong_listed + 1}]"
