"""Highlight runs: the result text cut at the server's ``[start, end)`` spans, as plain data.

Pure (no ``js``) and portable (MicroPython too: the keystroke stage draws with :mod:`.dom`), so it is property-tested under CPython (tests/reliability/test_rendering.py, B1);
:func:`ai_search_web.dom.highlighted` only turns each marked run into a ``<mark>`` element over a text
node. The spans come over the network, so they are data like any other: each is clipped to the text
and to the end of the previous one, and anything that is not two integers is skipped, so any input
renders the whole text exactly once, in order, and never as markup::

    >>> highlight_runs("deploy failed", [[0, 6], [4, 9], "x", [50, 60]])
    [('deploy', True), (' fa', True), ('iled', False)]

:func:`bidi_runs` cuts a text around its explicit bidi formatting characters (embeddings, overrides,
isolates and their terminators), so that :mod:`ai_search_web.dom` can put each one in an isolate of its
own (``<bdi>``): an untrusted U+202E then reverses nothing, not the rest of its paragraph, while the
text, copied or read by a screen reader, keeps every character::

    >>> bidi_runs("deploy \u202edeliaf then fixed")
    [('deploy ', False), ('\u202e', True), ('deliaf then fixed', False)]
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["BIDI_FORMATTING_CHARACTERS", "bidi_runs", "highlight_runs"]

# LRE, RLE, PDF, LRO, RLO (U+202A..U+202E) and LRI, RLI, FSI, PDI (U+2066..U+2069): the characters
# whose effect reaches past themselves, to the end of the paragraph when unterminated. The marks
# (LRM, RLM, ALM) act on their neighbours only and stay as they are.
BIDI_FORMATTING_CHARACTERS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def highlight_runs(text: str, spans: "Sequence[Any]") -> "list[tuple[str, bool]]":
    """``text`` as consecutive (run, marked) pairs; the runs joined give ``text`` back.

    Spans are ``[start, end)`` code points. Overlaps are clipped to the end of the previous span,
    out-of-range edges to the text; empty and malformed spans (not a list or tuple of two ints) are
    skipped. Empty runs are never produced.
    """
    runs: list[tuple[str, bool]] = []
    position = 0
    for start, end in sorted(_valid_spans(spans, len(text))):  # portable: pairs of ints, a total order
        start = max(start, position)
        if start >= end:
            continue
        if start > position:
            runs.append((text[position:start], False))
        runs.append((text[start:end], True))
        position = end
    if position < len(text):
        runs.append((text[position:], False))
    return runs


def _is_index(value: "Any") -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _valid_spans(spans: "Sequence[Any]", length: int) -> "list[tuple[int, int]]":
    valid = []
    for span in spans:
        if not isinstance(span, (list, tuple)) or len(span) != 2 or not all(_is_index(edge) for edge in span):
            continue
        start, end = max(0, span[0]), min(length, span[1])
        if start < end:
            valid.append((start, end))
    return valid


def bidi_runs(text: str) -> list[tuple[str, bool]]:
    """``text`` as consecutive (run, is one bidi formatting character) pairs; joined, ``text`` again."""
    if not BIDI_FORMATTING_CHARACTERS.intersection(text):
        return [(text, False)] if text else []
    runs: list[tuple[str, bool]] = []
    start = 0
    for index, ch in enumerate(text):
        if ch in BIDI_FORMATTING_CHARACTERS:
            if index > start:
                runs.append((text[start:index], False))
            runs.append((ch, True))
            start = index + 1
    if start < len(text):
        runs.append((text[start:], False))
    return runs
