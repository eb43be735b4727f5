"""What the page says about what it shows: counts, limits, waits and why a result matched.

Plain sentences, never raw numbers a person has to decode (a fused score of 0.26, a count of 50 that
is really a cap). Pure (no ``js``), so CPython tests cover it::

    >>> count_text(50), counter_text(480), reason_text("keyword", ["deploy", "failed"])
    ('50+ results: the best 50 are shown.', '20 characters left.', 'Matches “deploy”, “failed”')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ai_search import MAX_INTELLIGENT_SEARCH_RESULTS, MAX_SEARCH_QUERY_LENGTH

from .highlights import highlight_runs
from .messages import wait_words

__all__ = [
    "COUNTER_FROM_CHARS",
    "MATCH_REASONS",
    "MAX_REASON_WORDS",
    "count_text",
    "counter_text",
    "file_size_text",
    "lockout_text",
    "match_words",
    "more_in_thread_text",
    "reason_text",
    "replies_text",
    "too_long_text",
]

# Characters left at which the box starts counting them: enough warning to finish a sentence.
COUNTER_FROM_CHARS = 50
# Why a result matched, by the server's matchReason; "{words}" is the matched words, quoted.
MATCH_REASONS: Mapping[str, str] = {
    "keyword": "Matches {words}",
    "semantic": "Similar in meaning",
    "both": "Matches {words}, and similar in meaning",
}
# What "{words}" says when the highlights mark no word (the spans do not show the match).
_SOME_WORDS = "your words"
# Matched words a reason names; the rest are counted ("and 2 more").
MAX_REASON_WORDS = 3
# File sizes: the units people read, each 1024 of the one before (as file managers count).
_SIZE_UNITS = ("bytes", "KB", "MB", "GB", "TB")
_SIZE_STEP = 1024
# Below this many units a size keeps one decimal ("2.4 MB"); above it, whole units ("240 KB").
_SIZE_DECIMALS_BELOW = 10


def count_text(count: int) -> str:
    """The status after a search: ``1 result.``, ``12 results.``, ``50+ results…`` at the cap."""
    if count >= MAX_INTELLIGENT_SEARCH_RESULTS:
        return (
            f"{MAX_INTELLIGENT_SEARCH_RESULTS}+ results: the best {MAX_INTELLIGENT_SEARCH_RESULTS} are shown."
        )
    return f"{count} result{'s' if count != 1 else ''}."


def too_long_text(length: int) -> str:
    """Why a search longer than the server takes is not sent."""
    return (
        f"This search is {length} characters long; a search holds at most {MAX_SEARCH_QUERY_LENGTH}. "
        "Shorten it, then press Enter."
    )


def counter_text(length: int, limit: int = MAX_SEARCH_QUERY_LENGTH) -> str:
    """The line under a box holding ``length`` characters: empty until the limit is near."""
    left = limit - length
    if left > COUNTER_FROM_CHARS:
        return ""
    if left <= 0:
        return f"A search holds at most {limit} characters."
    return f"{left} character{'s' if left != 1 else ''} left."


def lockout_text(seconds: int) -> str:
    """What the sign-in form says while the server refuses sign-in for ``seconds`` more."""
    return f"Too many sign-in attempts. Try again in {wait_words(seconds)}."


def match_words(text: str, spans: Any) -> list[str]:
    """The distinct words the highlight spans mark in ``text``, first seen first (case folded)."""
    seen: dict[str, str] = {}
    for run, marked in highlight_runs(text, spans if isinstance(spans, list) else []):
        word = run.strip()
        if marked and word:
            seen.setdefault(word.casefold(), word)
    return list(seen.values())


def reason_text(reason: Any, words: Sequence[str]) -> str:
    """Why a result matched, in words: ``Matches “deploy”, “failed”``, ``Similar in meaning``;
    ``""`` for a reason the page does not know."""
    template = MATCH_REASONS.get(reason) if isinstance(reason, str) else None
    if template is None:
        return ""
    named = ", ".join(f"“{word}”" for word in words[:MAX_REASON_WORDS])
    if len(words) > MAX_REASON_WORDS:
        named += f" and {len(words) - MAX_REASON_WORDS} more"
    return template.format(words=named or _SOME_WORDS)


def replies_text(count: Any) -> str:
    """``1 reply``, ``6 replies``; ``""`` for what is not a count."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return ""
    return f"{count} repl{'y' if count == 1 else 'ies'}"


def more_in_thread_text(count: int) -> str:
    """The button under a thread whose other hits are not listed: ``2 more in this thread``."""
    return f"{count} more in this thread"


def file_size_text(size: Any) -> str:
    """A file's size as people read it: ``512 bytes``, ``2.4 KB``, ``240 KB``; ``""`` when unknown."""
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        return ""
    value, unit = float(size), 0
    while value >= _SIZE_STEP and unit < len(_SIZE_UNITS) - 1:
        value /= _SIZE_STEP
        unit += 1
    if unit == 0:
        return f"{size} byte{'s' if size != 1 else ''}"
    shown = f"{value:.1f}".removesuffix(".0") if value < _SIZE_DECIMALS_BELOW else f"{value:.0f}"
    return f"{shown} {_SIZE_UNITS[unit]}"
