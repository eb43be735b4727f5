"""Citations: `【N†...】` normalisation (batch and streaming), extraction and marking of `[N]`."""

from __future__ import annotations

import doctest
from itertools import pairwise

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ai_search import _citations
from ai_search._citations import (
    MAX_CITATION_HOLD_BACK_CHARS,
    MAX_CITATION_LABEL_CHARS,
    MAX_CITATION_NUMBER_DIGITS,
    MAX_CITATION_PADDING_CHARS,
    CitationStreamNormalizer,
    extract_citations,
    mark_unknown_citations,
    normalize_citations,
)


def test_module_examples_hold() -> None:
    assert doctest.testmod(_citations).failed == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The upstream spec's examples, verbatim.
        pytest.param("sources.【1†L1-L2】【2†L4-L5】", "sources. [1] [2]", id="spec-two-groups-after-period"),
        pytest.param("【3†source】", "[3]", id="spec-label-at-start"),
        pytest.param("【 4 】", "[4]", id="spec-spaces-inside"),
        # Leading space rule.
        pytest.param("done 【1】", "done [1]", id="no-extra-space-after-space"),
        pytest.param("done\n【1】", "done\n[1]", id="no-space-after-newline"),
        pytest.param("done\u00a0【1】", "done\u00a0[1]", id="no-space-after-nbsp-js-whitespace"),
        pytest.param("done\ufeff【1】", "done\ufeff[1]", id="no-space-after-bom-js-whitespace"),
        pytest.param("done\x1c【1】", "done\x1c [1]", id="space-after-file-separator-not-js-whitespace"),
        pytest.param("done\u0085【1】", "done\u0085 [1]", id="space-after-nel-not-js-whitespace"),
        pytest.param("x【12】y", "x [12]y", id="nothing-added-after-the-group"),
        # Group shapes that match.
        pytest.param("【1】", "[1]", id="bare-number"),
        pytest.param("【007†a】", "[007]", id="digits-kept-as-written"),
        pytest.param("【1†】", "[1]", id="empty-label"),
        pytest.param("【1†a 】", "[1]", id="label-then-space"),
        pytest.param("【1†a【2】", "[1]", id="label-may-hold-an-opening-bracket"),
        pytest.param("【1\t】", "【1\t】", id="tab-is-not-a-space"),
        # Groups left unchanged.
        pytest.param("【source】", "【source】", id="no-digits"),
        pytest.param("【†1】", "【†1】", id="dagger-before-digits"),
        pytest.param("【1†L1\nL2】", "【1†L1\nL2】", id="newline-in-label"),
        pytest.param("【\n1】", "【\n1】", id="newline-before-number"),
        pytest.param("【1 †a】", "【1 †a】", id="space-before-dagger"),
        pytest.param("【4:0†source】", "【4:0†source】", id="colon-form-is-not-digits"),
        pytest.param("【1", "【1", id="unclosed"),
        pytest.param("【١】", "【١】", id="non-ascii-digits"),
        pytest.param("[1] and 1】", "[1] and 1】", id="already-plain"),
        # Caps.
        pytest.param(
            "【" + "9" * MAX_CITATION_NUMBER_DIGITS + "】",
            "[" + "9" * MAX_CITATION_NUMBER_DIGITS + "]",
            id="max-digits",
        ),
        pytest.param(
            "【" + "9" * (MAX_CITATION_NUMBER_DIGITS + 1) + "】",
            "【" + "9" * (MAX_CITATION_NUMBER_DIGITS + 1) + "】",
            id="too-many-digits",
        ),
        pytest.param("【1†" + "x" * MAX_CITATION_LABEL_CHARS + "】", "[1]", id="max-label"),
        pytest.param(
            "【1†" + "x" * (MAX_CITATION_LABEL_CHARS + 1) + "】",
            "【1†" + "x" * (MAX_CITATION_LABEL_CHARS + 1) + "】",
            id="label-too-long",
        ),
        pytest.param(
            "【" + " " * MAX_CITATION_PADDING_CHARS + "1" + " " * MAX_CITATION_PADDING_CHARS + "】",
            "[1]",
            id="max-padding",
        ),
    ],
)
def test_normalize_citations(text: str, expected: str) -> None:
    assert normalize_citations(text) == expected


def test_hold_back_cap_is_the_longest_unfinished_group() -> None:
    longest = (
        "【"
        + " " * MAX_CITATION_PADDING_CHARS
        + "9" * MAX_CITATION_NUMBER_DIGITS
        + "†"
        + "x" * MAX_CITATION_LABEL_CHARS
        + " " * MAX_CITATION_PADDING_CHARS
    )
    assert len(longest) == MAX_CITATION_HOLD_BACK_CHARS
    assert normalize_citations(longest + "】") == "[" + "9" * MAX_CITATION_NUMBER_DIGITS + "]"
    normalizer = CitationStreamNormalizer()
    assert normalizer.feed("a" + longest) == "a"
    assert normalizer.feed("】") == " [" + "9" * MAX_CITATION_NUMBER_DIGITS + "]"


def feed_all(chunks: list[str]) -> tuple[list[str], str]:
    normalizer = CitationStreamNormalizer()
    return [normalizer.feed(chunk) for chunk in chunks], normalizer.flush()


@pytest.mark.parametrize(
    ("chunks", "emitted", "flushed"),
    [
        pytest.param(["see【", "2†L1", "】 ok"], ["see", "", " [2] ok"], "", id="group-split-three-ways"),
        pytest.param(
            ["sources.", "【1†L1-L2】【2", "†L4-L5】"], ["sources.", " [1]", " [2]"], "", id="spec-split"
        ),
        pytest.param(["a 【", "1】"], ["a ", "[1]"], "", id="space-before-group-in-earlier-chunk"),
        pytest.param(["a", "【1】"], ["a", " [1]"], "", id="non-space-before-group-in-earlier-chunk"),
        pytest.param(["a", "", "【", "", "1】"], ["a", "", "", "", " [1]"], "", id="empty-chunks"),
        pytest.param(["【1†a【2", "】"], ["", "[1]"], "", id="label-holding-a-bracket-held-from-the-first"),
        pytest.param(["plain ", "text"], ["plain ", "text"], "", id="no-bracket-streams-through"),
        pytest.param(["x【source"], ["x【source"], "", id="non-digit-after-bracket-not-held"),
        pytest.param(["x【1", "\n】"], ["x", "【1\n】"], "", id="newline-releases-held-tail"),
        pytest.param(["end【3"], ["end"], "【3", id="unfinished-group-flushed-as-written"),
        pytest.param(
            ["a【1†" + "x" * MAX_CITATION_LABEL_CHARS, "y"],
            ["a", "【1†" + "x" * MAX_CITATION_LABEL_CHARS + "y"],
            "",
            id="tail-past-cap-released",
        ),
    ],
)
def test_stream_normalizer_emits_safe_text(chunks: list[str], emitted: list[str], flushed: str) -> None:
    assert feed_all(chunks) == (emitted, flushed)


def test_stream_hold_back_is_bounded_for_a_stray_bracket() -> None:
    normalizer = CitationStreamNormalizer()
    out = normalizer.feed("【1†" + "z" * 1000)
    assert len(out) >= 1000 + 3 - MAX_CITATION_HOLD_BACK_CHARS
    assert normalizer.feed("z" * 10) == "z" * 10


def test_flush_resets_the_normalizer() -> None:
    normalizer = CitationStreamNormalizer()
    normalizer.feed("x【1")
    assert normalizer.flush() == "【1"
    assert normalizer.feed("【2】") == "[2]"


_citation_heavy = st.text(alphabet="【】†12 \nab.", max_size=60)
_any_text = st.text(max_size=200)


@settings(max_examples=500)
@given(text=_citation_heavy | _any_text, data=st.data())
@example(text="a【1†L1-L2】【2†L4-L5】", data=None)
@example(text="x【1†a【2】", data=None)
def test_stream_equals_batch_for_any_split(text: str, data: st.DataObject | None) -> None:
    if data is None:
        cuts = list(range(1, len(text)))
    else:
        cuts = sorted(data.draw(st.sets(st.integers(min_value=0, max_value=len(text))), label="cuts"))
    chunks = [text[start:end] for start, end in pairwise([0, *cuts, len(text)])]
    emitted, flushed = feed_all(chunks)
    assert "".join(emitted) + flushed == normalize_citations(text)


@given(st.text(alphabet="【】†12 \nab", max_size=120))
def test_held_tail_is_one_unfinished_group_within_the_cap(text: str) -> None:
    # An unfinished group has no `】`, so flush returns the held tail exactly as it was fed.
    for end in range(len(text) + 1):
        normalizer = CitationStreamNormalizer()
        normalizer.feed(text[:end])
        held = normalizer.flush()
        assert len(held) <= MAX_CITATION_HOLD_BACK_CHARS
        assert not held or (held.startswith("【") and "】" not in held and "\n" not in held)


@pytest.mark.parametrize(
    ("answer", "source_count", "expected"),
    [
        pytest.param("A [1] B [2].", 2, [1, 2], id="in-order"),
        pytest.param("A [2] B [1] C [2].", 3, [2, 1], id="first-citation-order-each-once"),
        pytest.param("A [3] [9] [0].", 3, [3], id="out-of-range-dropped"),
        pytest.param("A [01].", 2, [1], id="leading-zero-is-the-same-source"),
        pytest.param("no citations", 5, [], id="none"),
        pytest.param("A [1]", 0, [], id="no-sources"),
        pytest.param("A [1 ] [ 2] [1,2] [^1] [a] 【1】", 5, [], id="not-citation-tokens"),
        pytest.param("A [1?] [2]", 5, [2], id="marked-unknown-is-not-a-citation"),
        pytest.param("A [1234567]", 10_000_000, [], id="more-than-six-digits-not-a-token"),
        pytest.param("[[2]]", 2, [2], id="nested-brackets"),
    ],
)
def test_extract_citations(answer: str, source_count: int, expected: list[int]) -> None:
    assert extract_citations(answer, source_count) == expected


@pytest.mark.parametrize(
    ("answer", "source_count", "expected"),
    [
        pytest.param("Rolled back [2] [9].", 3, "Rolled back [2] [9?].", id="spec-like"),
        pytest.param("A [0] [4] [3]", 3, "A [0?] [4?] [3]", id="zero-and-past-end"),
        pytest.param("A [1]", 0, "A [1?]", id="no-sources-marks-all"),
        pytest.param("A [9?]", 3, "A [9?]", id="already-marked-unchanged"),
        pytest.param("see [link](x) [a]", 3, "see [link](x) [a]", id="non-numeric-untouched"),
        pytest.param("A [007]", 3, "A [007?]", id="digits-kept-as-written"),
    ],
)
def test_mark_unknown_citations(answer: str, source_count: int, expected: str) -> None:
    assert mark_unknown_citations(answer, source_count) == expected


@given(st.text(alphabet="[]0123?ab ", max_size=40), st.integers(min_value=0, max_value=3))
def test_marking_is_idempotent_and_keeps_every_valid_citation(answer: str, source_count: int) -> None:
    marked = mark_unknown_citations(answer, source_count)
    assert mark_unknown_citations(marked, source_count) == marked
    assert extract_citations(marked, source_count) == extract_citations(answer, source_count)
