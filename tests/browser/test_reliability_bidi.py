"""B6. Untrusted text cannot reorder the page: a bidi override in an answer reverses nothing after it.

An answer holding U+202E (RIGHT-TO-LEFT OVERRIDE) with no terminator reversed the rest of its
paragraph on the page ("because of the cache [1]" read backwards), so a model, or an injected message
it repeats, could make a sentence say something else on screen. The fake provider answers with
overrides and isolates left open; the page must lay each phrase after them out left to right (each
character's box to the right of the one before, measured with DOM ranges in Chromium), while the text
itself, as copied, keeps every character.

The OAuth sign-in and consent pages show a name the client gave itself: one ending in an unclosed
override (stored before client names followed the room-name rules) reversed "asks to use ai-search as
you" there. The pages as the server writes them are shown in Chromium at the server's origin, and the
sentence after the name must read left to right.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ai_search_server.oauth.pages import ConsentView, consent_page, sign_in_page
from tests._figures import Figure

from .conftest import Server
from .test_answer import _ask, _needs_provider
from .test_results import _search

pytestmark = pytest.mark.browser

# Each opener is left unterminated, so without isolation it reaches the end of the paragraph.
ANSWER = (
    "Deploy failed \u202ebecause of the cache [1]. Then \u202bthe fix was a restart [2]. "
    "Last \u2067isolated but never closed and the end."
)
# Phrases after the openers, each of which must read left to right.
PHRASES = ("because of the cache", "the fix was a restart", "isolated but never closed", "and the end")
CHUNKS = (ANSWER[:20], ANSWER[20:47], ANSWER[47:])

# The (top, left) of each non-space character of ``phrase``, in text order, wherever it sits.
MEASURE = """(phrase) => {
  const p = document.querySelector('#answer-body .answer-text');
  const text = p.textContent;
  const at = text.indexOf(phrase);
  if (at < 0) return null;
  const walker = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
  const lefts = [];
  let offset = 0;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.data.length; i++, offset++) {
      if (offset < at || offset >= at + phrase.length || node.data[i] === ' ') continue;
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const box = range.getBoundingClientRect();
      lefts.push([box.top, box.left]);
    }
  }
  return lefts;
}"""


# Pixels within which two character boxes count as one line.
SAME_LINE_PX = 3


def _backwards(before: list[float], after: list[float]) -> bool:
    same_line = abs(after[0] - before[0]) <= SAME_LINE_PX
    return (same_line and after[1] <= before[1]) or (not same_line and after[0] < before[0])


@pytest.fixture
def overriding_answer(server: Server) -> Iterator[None]:
    _needs_provider(server)
    assert server.llm is not None
    server.llm.answer = ANSWER
    server.llm.chunks = CHUNKS
    yield
    server.llm.reset()


@pytest.mark.requirement("B6")
def test_a_bidi_override_in_an_answer_reverses_nothing_after_it(
    open_as: Callable[..., Any], overriding_answer: None, figure: Figure
) -> None:
    page = open_as("bob")
    _search(page, "deploy failed billing-api")
    _ask(page)
    shown = page.evaluate("document.querySelector('#answer-body .answer-text').textContent")
    reversed_phrases = []
    for phrase in PHRASES:
        boxes = page.evaluate(MEASURE, phrase)
        # Left to right: on one line each box is right of the one before; a wrap goes down a line.
        if not boxes or any(_backwards(a, b) for a, b in itertools.pairwise(boxes)):
            reversed_phrases.append(phrase)
    kept = all(ch in shown for ch in "\u202e\u202b\u2067")
    figure(
        tried=len(PHRASES) + 1,
        failed=len(reversed_phrases) + int(not kept),
        phrases=len(PHRASES),
        reversed_on_screen=reversed_phrases,
        controls_kept_in_the_text=kept,
    )
    assert reversed_phrases == []
    assert kept, "the text keeps its characters; only their reach is cut"


# A client's name ending in an override it never closes, as one registered before names followed the
# room-name rules could be: without isolation it reverses the rest of the sentence it sits in.
CLIENT_NAME = "Helper \u202eevil"
# (page, a phrase after the name in the same paragraph), each of which must read left to right.
OAUTH_PHRASES = (("sign-in", "asks to use ai-search as you"), ("consent", "will be able to, as you"))
BLANK = '<!doctype html><link rel="icon" href="data:,">'

# The (top, left) of each non-space character of ``phrase`` in the first paragraph or heading of
# the card that holds it.
MEASURE_IN_CARD = MEASURE.replace(
    "const p = document.querySelector('#answer-body .answer-text');",
    "const p = [...document.querySelectorAll('main p, main h1')].find((e) => e.textContent.includes(phrase));"
    " if (!p) return null;",
)


@pytest.mark.requirement("B6")
def test_a_bidi_override_in_a_client_name_reverses_nothing_on_the_oauth_pages(
    page: Any, server: Server, figure: Figure
) -> None:
    """The sign-in and consent pages as the server writes them (``oauth/pages.py``), shown in Chromium
    at the server's origin with its stylesheets: the client's name sits in a ``<bdi>``, so the
    sentence after it keeps its order (with the name in a bare ``<strong>`` it read backwards)."""
    view = ConsentView(
        action="/authorize?client_id=legacy",
        client_name=CLIENT_NAME,
        redirect_uri="http://127.0.0.1:9/cb",
        rocketchat=False,
    )
    documents = {
        "sign-in": sign_in_page(view),
        "consent": consent_page(view, person="Alice", username="alice", ticket="not-a-ticket"),
    }
    # A blank document at the server's origin (answered by the browser itself), so the pages' relative
    # stylesheet links load from the server as on the real pages.
    blank = f"{server.origin}/tests/oauth-pages"
    page.route(blank, lambda route: route.fulfill(status=200, content_type="text/html", body=BLANK))
    page.goto(blank)
    reversed_phrases = []
    for name, phrase in OAUTH_PHRASES:
        page.set_content(documents[name])
        boxes = page.evaluate(MEASURE_IN_CARD, phrase)
        if not boxes or any(_backwards(a, b) for a, b in itertools.pairwise(boxes)):
            reversed_phrases.append(f"{name}: {phrase}")
    figure(
        tried=len(OAUTH_PHRASES),
        failed=len(reversed_phrases),
        phrases=len(OAUTH_PHRASES),
        reversed_on_screen=reversed_phrases,
    )
    assert reversed_phrases == []
