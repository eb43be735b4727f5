"""B1: the highlighter emits spans, never markup.

Highlights cross the wire as ``[start, end)`` code-point ranges over the plain message text
(``retrieval.terms.highlight_ranges`` on the server, ``ai_search_web.highlights.highlight_runs`` on the
page, which cuts the text into runs and ``dom.highlighted`` puts each marked run in a ``<mark>`` over a
text node). The failure modes this guards against are real ones (spec §1, "XSS in search
highlighting"): a snippet that wraps matches in ``<mark>`` without escaping, a "keep <mark>, escape the
rest" pass that input can forge with sentinels, entities that a later ``innerHTML`` decodes. Here
hypothesis drives (text, query) pairs full of ``<``, ``&lt;``, forged ``<mark>``, sentinel,
control, RTL and zero-width characters through both halves, and checks:

- server: every range is two ints, in bounds, non-empty, sorted, not overlapping nor touching (they
  are merged), starts and ends on a word character (so ``<``, ``&`` or ``>`` never open or close a
  highlight), and its first word is one the query asked for;
- page: the runs join to exactly the text, none is empty, every marked run is what the server's
  range covers, and any span input (hostile shapes included) gives that, never an exception;
- the route: ``ai.search`` carries those same ranges over the text as stored (no normalisation
  shifts the offsets).

The DOM half (``<mark>`` elements over text nodes, forged spans) runs in Chromium: B2 in
``tests/browser/test_reliability_rendering.py``.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ai_search_server.retrieval.terms import (
    PREFIX_MATCH_MIN_CHARS,
    Term,
    highlight_ranges,
    query_terms,
    words_with_offsets,
)
from ai_search_web.highlights import highlight_runs
from tests.server.conftest import Workspace

from .conftest import Figure

# Examples per property: every CI run, and scripts/test-reliability.
SCALES = [
    pytest.param(300, id="default"),
    pytest.param(10_000, id="soak", marks=[pytest.mark.soak, pytest.mark.timeout(3600)]),
]
# Characters of a failing example kept in the figure line.
EXAMPLE_CHARS = 300

# Pieces of text a highlighter can get wrong: markup and its escapes, forged highlights, the private-
# use sentinels a "keep <mark>" pass would use, controls, bidi and zero-width characters, combining
# marks, astral characters, word joiners (_ . -) that make phrases.
HOSTILE_FRAGMENTS = (
    "<", ">", "&", "&lt;", "&gt;", "&amp;", "&#60;", "&#x3c;", '"', "'", "<mark>", "</mark>", "<b>",
    "<img src=x onerror=alert(1)>", "<script>", '<script type="py">', "py-click=", "javascript:",
    "\ue000", "\ue001", "\uf8ff", "\U000f0000", "\x00", "\x01", "\x1b", "\x7f", "\u0085",
    "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u200e", "\u200f", "\u202a", "\u202e", "\u2066",
    "\u0301", "e\u0301", "\u00e9", "\ufb01", "\u0130", "\u00df", "😀", "\U0001d400", "\ufffd", "\ufffc",
    "_", ".", "-", " ", "\t", "\n", "\u00a0", "\u3000",
)  # fmt: skip
WORDS = ("deploy", "deployment", "err", "conn", "reset", "mark", "lt", "amp", "script", "x", "日本", "مرحبا")
_FRAGMENT = st.sampled_from(HOSTILE_FRAGMENTS) | st.sampled_from(WORDS) | st.text(max_size=3)
TEXTS = st.lists(_FRAGMENT, max_size=40).map("".join)
# Query pieces: words of the vocabulary (so matches happen), hostile fragments, phrases of both.
QUERIES = st.lists(st.lists(_FRAGMENT, min_size=1, max_size=3).map("".join), max_size=6).map(" ".join)
_WORD_CHAR = re.compile(r"(?:[^\W_]|[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd])")
# Spans as they could arrive at the page: the server's, and anything a broken upstream could send.
_EDGE = st.integers(-5, 60) | st.sampled_from([True, False, 2**64, -(2**64)])
HOSTILE_SPAN = (
    st.tuples(_EDGE, _EDGE).map(list)
    | st.tuples(_EDGE, _EDGE)
    | st.lists(_EDGE, max_size=3)
    | st.none()
    | st.floats(allow_nan=True)
    | st.text(max_size=2)
    | st.tuples(st.floats(), st.floats()).map(list)
    | st.dictionaries(st.integers(0, 1), st.integers(0, 9), max_size=2)
    | st.lists(st.lists(st.integers(0, 9), max_size=2), max_size=2)
)


@dataclass
class Tally:
    """Examples drawn, checks run and invariant violations found, with the first failing example of each
    kind."""

    examples_drawn: int = 0
    runs: int = 0
    violations: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def check(self, kind: str, body: Callable[[], None], example: object) -> None:
        self.runs += 1
        try:
            body()
        except AssertionError as exc:
            self.violations[kind] += 1
            self.examples.setdefault(kind, f"{example!r}: {exc}"[:EXAMPLE_CHARS])
        except Exception as exc:
            self.violations[f"{kind}-exception"] += 1
            self.examples.setdefault(
                f"{kind}-exception", f"{example!r}: {type(exc).__name__}: {exc}"[:EXAMPLE_CHARS]
            )


def _asked_for(word: str, terms: Sequence[Term]) -> bool:
    """Whether a highlight starting with ``word`` is one the query's terms could have made."""
    for term in terms:
        if term[0] == word or (
            len(term) == 1 and len(term[0]) >= PREFIX_MATCH_MIN_CHARS and word.startswith(term[0])
        ):
            return True
    return False


def _check_ranges(text: str, ranges: Sequence[Any], terms: Sequence[Term]) -> None:
    """The server's ranges: ints, in bounds, sorted and apart, on word edges, asked for."""
    previous_end = -1
    for span in ranges:
        assert len(span) == 2 and all(type(edge) is int for edge in span), f"not two ints: {span!r}"
        start, end = span
        assert 0 <= start < end <= len(text), f"out of bounds or empty: {span!r} in {len(text)} chars"
        assert start > previous_end, f"overlapping or touching: {span!r} after end {previous_end}"
        assert _WORD_CHAR.fullmatch(text[start]) and _WORD_CHAR.fullmatch(text[end - 1]), (
            f"highlight {text[start:end]!r} does not start and end on a word character"
        )
        first = next(words_with_offsets(text[start:end]))[2]
        assert _asked_for(first, terms), f"highlight {text[start:end]!r} was not asked for by {terms!r}"
        previous_end = end


def _check_runs(text: str, spans: Sequence[Any], exact: Sequence[tuple[int, int]] | None) -> None:
    """The page's runs: they give the text back, none empty, marks only where a valid span was.

    ``exact`` (the server's valid, disjoint ranges) must come back as the marked runs one for one.
    """
    runs = highlight_runs(text, spans)
    assert "".join(run for run, _marked in runs) == text, "the runs do not give the text back"
    assert all(run for run, _marked in runs), "an empty run"
    assert all(isinstance(marked, bool) for _run, marked in runs)
    assert not any(not a[1] and not b[1] for a, b in itertools.pairwise(runs)), "two plain runs in a row"
    covered = set()
    for span in spans:
        if isinstance(span, list | tuple) and len(span) == 2 and all(type(e) is int for e in span):
            covered.update(range(max(0, span[0]), min(len(text), span[1])))
    position = 0
    marked_ranges = []
    for run, marked in runs:
        if marked:
            assert set(range(position, position + len(run))) <= covered, f"marked {run!r} outside every span"
            marked_ranges.append((position, position + len(run)))
        position += len(run)
    if exact is not None:
        assert marked_ranges == [tuple(r) for r in exact], f"marks {marked_ranges} != ranges {exact}"


@pytest.mark.requirement("B1")
@pytest.mark.parametrize("examples", SCALES)
def test_the_highlighter_emits_spans_never_markup(examples: int, figure: Figure) -> None:
    tally = Tally()
    hypothesis_settings = settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )

    @hypothesis_settings
    @given(TEXTS, QUERIES, st.data())
    def server_and_page(text: str, query: str, data: st.DataObject) -> None:
        tally.examples_drawn += 1
        if data.draw(st.booleans()):  # often search for words the text really holds
            picked = [w for _s, _e, w in words_with_offsets(text)]
            if picked:
                query += " " + data.draw(st.sampled_from(picked))
        terms = query_terms(query)
        ranges = [list(r) for r in highlight_ranges(text, terms)]
        tally.check("server", lambda: _check_ranges(text, ranges, terms), (text, query))
        tally.check("page", lambda: _check_runs(text, ranges, ranges), (text, ranges))

    @hypothesis_settings
    @given(TEXTS, st.lists(HOSTILE_SPAN, max_size=8))
    def hostile_spans(text: str, spans: list[Any]) -> None:
        tally.examples_drawn += 1
        tally.check("page-hostile-spans", lambda: _check_runs(text, spans, None), (text, spans))

    server_and_page()
    hostile_spans()
    failed = sum(tally.violations.values())
    figure(
        tried=tally.runs,
        failed=failed,
        examples=tally.examples_drawn,
        invariant_violations=failed,
        by_kind=dict(tally.violations),
        first_failures=tally.examples,
    )
    assert failed == 0, tally.examples


# Texts posted through the API and searched back: the ranges in ai.search's answer must cover the
# words of the text *as the route returns it*.
ROUTE_TEXTS = (
    "deploy <b>failed</b> &lt;img src=x onerror=alert(1)&gt; on billing",
    "<mark>deploy</mark> forged \ue000deploy\ue001 sentinel",
    "\u202edeploy\u202c rtl and zero\u200bwidth de\u200bploy \ufeffdeploy",
    "e\u0301deploy combining, ﬁdeploy ligature, DÉPLOY upper, deploy\x7f",
    '😀deploy😀 astral 𝐝eploy <script type="py">deploy</script>',
    "deploy_err.conn-reset and ERR_CONN_RESET <a href=javascript:deploy>x</a>",
)
ROUTE_QUERIES = (
    "deploy",
    "err_conn_reset",
    "<b>deploy</b>",
    "&lt;img",
    "mark deploy",
    "\u200bdeploy",
    "déploy",
)


@pytest.mark.requirement("B1")
@pytest.mark.anyio
async def test_search_results_carry_ranges_over_the_text_as_returned(
    client: httpx.AsyncClient, workspace: Workspace, figure: Figure
) -> None:
    alice = workspace["alice"]
    for text in ROUTE_TEXTS:
        response = await client.post(
            "/api/v1/chat.postMessage", json={"channel": "#ops", "text": text}, headers=alice.headers
        )
        assert response.status_code == 200, response.text
    tally = Tally()
    results = 0
    found_texts: set[str] = set()
    for query in ROUTE_QUERIES:
        response = await client.get("/api/v1/ai.search", params={"q": query}, headers=alice.headers)
        assert response.status_code == 200, response.text
        terms = query_terms(query)
        for result in response.json()["intelligent"]:
            results += 1
            text, ranges = result["text"], result["highlights"]
            found_texts.add(text)
            example = (query, text, ranges)
            tally.check("route", functools.partial(_check_ranges, text, ranges, terms), example)
            tally.check("route-page", functools.partial(_check_runs, text, ranges, ranges), example)
    failed = sum(tally.violations.values())
    figure(
        tried=tally.runs,
        failed=failed,
        queries=len(ROUTE_QUERIES),
        results_checked=results,
        invariant_violations=failed,
        first_failures=tally.examples,
    )
    assert set(ROUTE_TEXTS) <= found_texts, "a hostile message was not found, or came back changed"
    assert failed == 0, tally.examples
