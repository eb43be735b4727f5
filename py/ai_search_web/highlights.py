"""Highlight runs: the result text cut at the server's ``[start, end)`` spans, as plain data.

Pure (no ``js``), so it is property-tested under CPython (tests/reliability/test_rendering.py, B1);
:func:`ai_search_web.dom.highlighted` only turns each marked run into a ``<mark>`` element over a text
node. The spans come over the network, so they are data like any other: each is clipped to the text
and to the end of the previous one, and anything that is not two integers is skipped, so any input
renders the whole text exactly once, in order, and never as markup::

    >>> highlight_runs("deploy failed", [[0, 6], [4, 9], "x", [50, 60]])
    [('deploy', True), (' fa', True), ('iled', False)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["highlight_runs"]


def highlight_runs(text: str, spans: Sequence[Any]) -> list[tuple[str, bool]]:
    """``text`` as consecutive (run, marked) pairs; the runs joined give ``text`` back.

    Spans are ``[start, end)`` code points. Overlaps are clipped to the end of the previous span,
    out-of-range edges to the text; empty and malformed spans (not a list or tuple of two ints) are
    skipped. Empty runs are never produced.
    """
    runs: list[tuple[str, bool]] = []
    position = 0
    for start, end in sorted(_valid_spans(spans, len(text))):
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


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _valid_spans(spans: Sequence[Any], length: int) -> list[tuple[int, int]]:
    valid = []
    for span in spans:
        if not isinstance(span, list | tuple) or len(span) != 2 or not all(_is_index(edge) for edge in span):
            continue
        start, end = max(0, span[0]), min(length, span[1])
        if start < end:
            valid.append((start, end))
    return valid
