"""The answer panel: streamed, cited ([N] links to results that exist), labelled, errors in words."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ai_search_web.messages import TRUNCATED_ANSWER_NOTICE

from .conftest import LLM_MODEL, PageRecord, Server
from .test_results import _search

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def _reset_provider(server: Server) -> Iterator[None]:
    yield
    if server.llm is not None:
        server.llm.reset()


def _needs_provider(server: Server) -> None:
    if server.llm is None:
        pytest.skip("this server build answers extractively only (no provider wired)")


def _ask(page: Any) -> None:
    page.click("#ask")
    page.wait_for_function(
        "() => document.getElementById('answer-body').getAttribute('aria-busy') === 'false'"
        " && (document.getElementById('answer-label').textContent.startsWith('Written')"
        " || document.getElementById('answer-label').textContent.startsWith('Extractive')"
        " || document.getElementById('answer-error').textContent !== '')"
    )


def test_the_answer_cites_results_that_exist(open_as: Callable[..., Any], server: Server) -> None:
    """Every [N] in the answer is a link to a result on the page, and following one opens it in its
    conversation."""
    page = open_as("bob")
    _search(page, "deploy failed billing-api")
    assert page.is_visible("#answer")
    _ask(page)
    assert page.inner_text("#answer-error") == ""
    links = page.locator("#answer-body a.cite")
    assert links.count() >= 1
    result_ids = set(page.locator("#result-list .result").evaluate_all("nodes => nodes.map(n => n.id)"))
    for href in links.evaluate_all("nodes => nodes.map(n => n.getAttribute('href'))"):
        assert href.removeprefix("#") in result_ids
    label = page.inner_text("#answer-label")
    if server.llm is None:
        assert label.startswith("Extractive answer")
    else:
        assert label == f"Written by {LLM_MODEL} (OpenAI compatible)." or label.startswith(
            f"Written by {LLM_MODEL}"
        )
        assert (
            page.inner_text("#answer-body") == "The deploy failed on billing-api [1] and was rolled back [2]."
        )
    assert page.get_attribute("#answer", "data-truncated") == "false"
    # Following a citation marks its result and opens that message in its conversation; Escape
    # returns to the citation.
    target = links.first.get_attribute("href")
    links.first.click()
    assert "is-cited" in page.get_attribute(target, "class").split()
    page.wait_for_selector("#context[data-state=ready]")
    cited = page.get_attribute(target, "data-msg-id")
    assert page.get_attribute("#context-list .is-hit", "data-msg-id") == cited
    assert page.evaluate("document.activeElement.dataset.msgId") == cited
    page.keyboard.press("Escape")
    page.wait_for_selector("#context", state="hidden")
    assert page.evaluate("document.activeElement.classList.contains('cite')")


def test_the_answer_streams_in(open_as: Callable[..., Any], server: Server) -> None:
    """The first words show while the provider is still writing; the final text replaces them."""
    _needs_provider(server)
    server.llm.behaviour = "hold"
    page = open_as("bob")
    _search(page, "deploy failed billing-api")
    page.click("#ask")
    page.wait_for_function(
        "() => document.getElementById('answer-body').textContent.includes('The deploy failed')"
    )
    assert page.get_attribute("#answer-body", "aria-busy") == "true"
    assert page.inner_text("#answer-label") == "Writing an answer…"
    server.llm.release.set()
    page.wait_for_function(
        "() => document.getElementById('answer-body').getAttribute('aria-busy') === 'false'"
    )
    assert page.locator("#answer-body a.cite").count() == 2


def test_an_answer_the_model_cut_short_says_so(open_as: Callable[..., Any], server: Server) -> None:
    """A `truncated` answer keeps its text and citations and gets a notice under it, as text."""
    _needs_provider(server)
    server.llm.behaviour = "length"
    page = open_as("bob")
    _search(page, "deploy failed billing-api")
    _ask(page)
    assert page.inner_text("#answer-error") == ""
    assert page.inner_text("#answer-body .answer-text") == (
        "The deploy failed on billing-api [1] and was rolled back [2]."
    )
    assert page.inner_text("#answer-body .answer-truncated") == TRUNCATED_ANSWER_NOTICE
    assert page.get_attribute("#answer", "data-truncated") == "true"
    assert page.locator("#answer-body a.cite").count() == 2


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        pytest.param(
            "500", "The language model did not answer in time or failed. Try again.", id="provider-500"
        ),
        pytest.param(
            "garbage", "The language model did not answer in time or failed. Try again.", id="garbage"
        ),
        pytest.param(
            "empty", "The language model returned an empty answer. Try again or rephrase.", id="empty-answer"
        ),
    ],
)
def test_provider_failures_read_as_sentences(
    open_as: Callable[..., Any], record: PageRecord, server: Server, behaviour: str, message: str
) -> None:
    _needs_provider(server)
    record.allow_error("Failed to load resource")  # the route's own 4xx/5xx, shown in words
    server.llm.behaviour = behaviour
    page = open_as("bob")
    _search(page, "deploy failed billing-api")
    _ask(page)
    assert page.inner_text("#answer-error") == message
    assert "internal-provider-detail" not in page.inner_text("#answer")


def test_the_model_picker_is_for_those_who_may_list_models(tabs: Any, server: Server) -> None:
    """alice (admin) gets the provider's models; bob, who may not list them, gets no picker."""
    _needs_provider(server)
    from .conftest import open_page

    for username, visible in (("alice", True), ("bob", False)):
        page, _record = tabs.new()
        open_page(page, server, username=username)
        if visible:  # the picker sits in the answer panel, which shows once there are results
            page.wait_for_selector("label.model:not([hidden])", state="attached")
            options = page.locator("#model-picker option").evaluate_all("nodes => nodes.map(n => n.value)")
            assert LLM_MODEL in options
        else:
            page.wait_for_function("() => window.aiSearchPrefetched === true")
            assert page.get_attribute("label.model", "hidden") is not None
