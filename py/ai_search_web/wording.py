"""What the page says about what it shows: counts, limits, waits and why a result matched.

Plain sentences, never raw numbers a person has to decode (a fused score of 0.26, a count of 50 that
is really a cap). Pure (no ``js``), so CPython tests cover it::

    >>> count_text(50), counter_text(480), reason_text("keyword", ["deploy", "failed"])
    ('50+ results: the best 50 are shown.', '20 characters left.', 'Matches “deploy”, “failed”')
    >>> bands_text(3, 12), related_text(12), coverage_text(0.6249)
    ('3 strong matches · 12 related.', '12 related results — less certain matches', 're-ranking covers 62% of messages')

Portable (the page on MicroPython 1.28 as on Pyodide: the convention of ``ai_search/_portable.py``).
"""

from ai_search import (
    MAX_INTELLIGENT_SEARCH_RESULTS,
    MAX_SEARCH_QUERY_LENGTH,
    MICROPYTHON,
    fold_text,
    strip_text,
)

from .highlights import highlight_runs
from .messages import wait_words

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

__all__ = [
    "COUNTER_FROM_CHARS",
    "MATCH_REASONS",
    "MAX_REASON_WORDS",
    "RERANK_FAILED_TEXT",
    "bands_text",
    "count_text",
    "counter_text",
    "coverage_text",
    "file_size_text",
    "lockout_text",
    "match_words",
    "more_in_thread_text",
    "no_strong_text",
    "reason_text",
    "related_text",
    "replies_text",
    "room_label",
    "too_long_text",
]

# Characters left at which the box starts counting them: enough warning to finish a sentence.
COUNTER_FROM_CHARS = 50
# Why a result matched, by the server's matchReason; "{words}" is the matched words, quoted.
MATCH_REASONS: "Mapping[str, str]" = {
    "keyword": "Matches {words}",
    "semantic": "Similar in meaning",
    "both": "Matches {words}, and similar in meaning",
}
# Room types whose name is a room name (shown with #); direct messages are named after their members.
_NAMED_ROOM_TYPES = frozenset({"c", "p"})
_DIRECT_NAME_SEPARATOR = "__"
# What "{words}" says when the highlights mark no word (the spans do not show the match).
_SOME_WORDS = "your words"
# Matched words a reason names; the rest are counted ("and 2 more").
MAX_REASON_WORDS = 3
# What the page says when the server's second stage (re-ranking) failed and its notices did not say
# so: the server's own sentence (retrieval/search_service.py).
RERANK_FAILED_TEXT = "Re-ranking is unavailable right now; results are in first-stage order."
_PERCENT = 100
# The server rounds a second stage's coverage to 4 decimals: read in ten-thousandths, exactly.
_COVERAGE_STEPS = 10_000
# File sizes: the units people read, each 1024 of the one before (as file managers count).
_SIZE_UNITS = ("bytes", "KB", "MB", "GB", "TB")
_SIZE_STEP = 1024
# Below this many units a size keeps one decimal ("2.4 MB"); above it, whole units ("240 KB").
_SIZE_DECIMALS_BELOW = 10
_TENTHS = 10

# `str.casefold` where it differs from `str.lower` (MicroPython has no casefold): each entry the
# character, then its folding; Cherokee, which folds to its capitals, is in `_casefold_char`.
# tests/unit/test_glue_micropython.py checks it against CPython's casefold on every code point.
_CASEFOLD_SPECIAL = (
    "\u00b5\u03bc \u00df\u0073\u0073 \u0149\u02bc\u006e \u017f\u0073 \u01f0\u006a\u030c "
    "\u0345\u03b9 \u0390\u03b9\u0308\u0301 \u03b0\u03c5\u0308\u0301 \u03c2\u03c3 \u03d0\u03b2 "
    "\u03d1\u03b8 \u03d5\u03c6 \u03d6\u03c0 \u03f0\u03ba \u03f1\u03c1 \u03f5\u03b5 "
    "\u0587\u0565\u0582 \u1c80\u0432 \u1c81\u0434 \u1c82\u043e \u1c83\u0441 \u1c84\u0442 "
    "\u1c85\u0442 \u1c86\u044a \u1c87\u0463 \u1c88\ua64b \u1e96\u0068\u0331 \u1e97\u0074\u0308 "
    "\u1e98\u0077\u030a \u1e99\u0079\u030a \u1e9a\u0061\u02be \u1e9b\u1e61 \u1e9e\u0073\u0073 "
    "\u1f50\u03c5\u0313 \u1f52\u03c5\u0313\u0300 \u1f54\u03c5\u0313\u0301 "
    "\u1f56\u03c5\u0313\u0342 \u1f80\u1f00\u03b9 \u1f81\u1f01\u03b9 \u1f82\u1f02\u03b9 "
    "\u1f83\u1f03\u03b9 \u1f84\u1f04\u03b9 \u1f85\u1f05\u03b9 \u1f86\u1f06\u03b9 "
    "\u1f87\u1f07\u03b9 \u1f88\u1f00\u03b9 \u1f89\u1f01\u03b9 \u1f8a\u1f02\u03b9 "
    "\u1f8b\u1f03\u03b9 \u1f8c\u1f04\u03b9 \u1f8d\u1f05\u03b9 \u1f8e\u1f06\u03b9 "
    "\u1f8f\u1f07\u03b9 \u1f90\u1f20\u03b9 \u1f91\u1f21\u03b9 \u1f92\u1f22\u03b9 "
    "\u1f93\u1f23\u03b9 \u1f94\u1f24\u03b9 \u1f95\u1f25\u03b9 \u1f96\u1f26\u03b9 "
    "\u1f97\u1f27\u03b9 \u1f98\u1f20\u03b9 \u1f99\u1f21\u03b9 \u1f9a\u1f22\u03b9 "
    "\u1f9b\u1f23\u03b9 \u1f9c\u1f24\u03b9 \u1f9d\u1f25\u03b9 \u1f9e\u1f26\u03b9 "
    "\u1f9f\u1f27\u03b9 \u1fa0\u1f60\u03b9 \u1fa1\u1f61\u03b9 \u1fa2\u1f62\u03b9 "
    "\u1fa3\u1f63\u03b9 \u1fa4\u1f64\u03b9 \u1fa5\u1f65\u03b9 \u1fa6\u1f66\u03b9 "
    "\u1fa7\u1f67\u03b9 \u1fa8\u1f60\u03b9 \u1fa9\u1f61\u03b9 \u1faa\u1f62\u03b9 "
    "\u1fab\u1f63\u03b9 \u1fac\u1f64\u03b9 \u1fad\u1f65\u03b9 \u1fae\u1f66\u03b9 "
    "\u1faf\u1f67\u03b9 \u1fb2\u1f70\u03b9 \u1fb3\u03b1\u03b9 \u1fb4\u03ac\u03b9 "
    "\u1fb6\u03b1\u0342 \u1fb7\u03b1\u0342\u03b9 \u1fbc\u03b1\u03b9 \u1fbe\u03b9 "
    "\u1fc2\u1f74\u03b9 \u1fc3\u03b7\u03b9 \u1fc4\u03ae\u03b9 \u1fc6\u03b7\u0342 "
    "\u1fc7\u03b7\u0342\u03b9 \u1fcc\u03b7\u03b9 \u1fd2\u03b9\u0308\u0300 "
    "\u1fd3\u03b9\u0308\u0301 \u1fd6\u03b9\u0342 \u1fd7\u03b9\u0308\u0342 "
    "\u1fe2\u03c5\u0308\u0300 \u1fe3\u03c5\u0308\u0301 \u1fe4\u03c1\u0313 \u1fe6\u03c5\u0342 "
    "\u1fe7\u03c5\u0308\u0342 \u1ff2\u1f7c\u03b9 \u1ff3\u03c9\u03b9 \u1ff4\u03ce\u03b9 "
    "\u1ff6\u03c9\u0342 \u1ff7\u03c9\u0342\u03b9 \u1ffc\u03c9\u03b9 \ufb00\u0066\u0066 "
    "\ufb01\u0066\u0069 \ufb02\u0066\u006c \ufb03\u0066\u0066\u0069 \ufb04\u0066\u0066\u006c "
    "\ufb05\u0073\u0074 \ufb06\u0073\u0074 \ufb13\u0574\u0576 \ufb14\u0574\u0565 "
    "\ufb15\u0574\u056b \ufb16\u057e\u0576 \ufb17\u0574\u056d"
)
_casefolds: "dict[str, str]" = {}
# Cherokee: capitals fold to themselves (U+13A0..U+13F5), the small letters to their capitals.
_CHEROKEE_CAPITALS = (0x13A0, 0x13F5)
_CHEROKEE_SMALL = ((0x13F8, 0x13FD, 8), (0xAB70, 0xABBF, 0xAB70 - 0x13A0))


def room_label(room: "Any") -> str:
    """``#name`` for a channel or group; ``Direct: a, b`` for a direct message (a search result's or
    a citation's ``room``)."""
    if not isinstance(room, dict):
        return ""
    name = _text(room.get("fname")) or _text(room.get("name"))
    if _text(room.get("t")) in _NAMED_ROOM_TYPES or not name:
        return f"#{name}" if name else ""
    parts = name.split(_DIRECT_NAME_SEPARATOR)  # portable: an ASCII separator splits any text alike
    return "Direct: " + ", ".join(part for part in parts if part)


def _text(value: "Any") -> str:
    return value if isinstance(value, str) else ""


def count_text(count: int) -> str:
    """The status after a search: ``1 result.``, ``12 results.``, ``50+ results…`` at the cap."""
    if count >= MAX_INTELLIGENT_SEARCH_RESULTS:
        return (
            f"{MAX_INTELLIGENT_SEARCH_RESULTS}+ results: the best {MAX_INTELLIGENT_SEARCH_RESULTS} are shown."
        )
    return f"{count} result{'s' if count != 1 else ''}."


def _count(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def bands_text(strong: int, related: int) -> str:
    """The status after a search whose results come in bands (``ai.search``'s ``band``): how many are
    strong matches and how many only related, never a cap: ``3 strong matches · 12 related.``,
    ``1 strong match.``, ``No strong match · 7 related.``, ``No results.``"""
    if strong <= 0 and related <= 0:
        return "No results."
    said = _count(strong, "strong match", "strong matches") if strong > 0 else "No strong match"
    return f"{said} · {related} related." if related > 0 else f"{said}."


def related_text(related: int) -> str:
    """The button that opens the related results: ``12 related results — less certain matches``."""
    if related == 1:
        return "1 related result — a less certain match"
    return f"{related} related results — less certain matches"


def no_strong_text(related: int) -> str:
    """Above the related results when nothing is strong: ``No strong match. 7 related results may
    help.``"""
    return f"No strong match. {_count(related, 'related result', 'related results')} may help."


def coverage_text(coverage: "Any") -> str:
    """The receipt's words for a second stage that has not re-ranked the whole workspace yet:
    ``re-ranking covers 62% of messages``, rounded down (never 100% before it is all), and ``""``
    once it covers everything (or for what is not a share)."""
    if not isinstance(coverage, (int, float)) or isinstance(coverage, bool) or not 0 <= coverage < 1:
        return ""  # portable: a NaN fails both comparisons
    steps = int(coverage * _COVERAGE_STEPS + 0.5)  # the server's 4 decimals, exactly
    percent = min(steps * _PERCENT // _COVERAGE_STEPS, _PERCENT - 1)
    return f"re-ranking covers {percent}% of messages"


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


def _casefold_char(char: str) -> str:
    if not _casefolds:
        for entry in _CASEFOLD_SPECIAL.split(" "):
            _casefolds[entry[0]] = entry[1:]
    special = _casefolds.get(char)
    if special is not None:
        return special
    code = ord(char)
    if _CHEROKEE_CAPITALS[0] <= code <= _CHEROKEE_CAPITALS[1]:
        return char
    for first, last, offset in _CHEROKEE_SMALL:
        if first <= code <= last:
            return chr(code - offset)
    return fold_text(char)


def _casefold_portable(text: str) -> str:
    """`text.casefold()` as CPython gives it, from `fold` (`str.lower`) and the characters where the
    two differ; a casefold has no context, so it goes character by character."""
    if len(text.encode()) == len(text):
        return fold_text(text)  # ASCII: casefold is lower
    return "".join(_casefold_char(char) for char in text)


if not MICROPYTHON:

    def _casefold(text: str) -> str:
        return text.casefold()

else:
    _casefold = _casefold_portable


def match_words(text: str, spans: "Any") -> "list[str]":
    """The distinct words the highlight spans mark in ``text``, first seen first (case folded)."""
    keys: list[str] = []
    words: list[str] = []
    for run, marked in highlight_runs(text, spans if isinstance(spans, list) else []):
        word = strip_text(run)
        if marked and word:
            key = _casefold(word)
            if key not in keys:
                keys.append(key)
                words.append(word)
    return words


def reason_text(reason: "Any", words: "Sequence[str]") -> str:
    """Why a result matched, in words: ``Matches “deploy”, “failed”``, ``Similar in meaning``;
    ``""`` for a reason the page does not know."""
    template = MATCH_REASONS.get(reason) if isinstance(reason, str) else None
    if template is None:
        return ""
    named = ", ".join(f"“{word}”" for word in words[:MAX_REASON_WORDS])
    if len(words) > MAX_REASON_WORDS:
        named += f" and {len(words) - MAX_REASON_WORDS} more"
    return template.format(words=named or _SOME_WORDS)


def replies_text(count: "Any") -> str:
    """``1 reply``, ``6 replies``; ``""`` for what is not a count."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return ""
    return f"{count} repl{'y' if count == 1 else 'ies'}"


def more_in_thread_text(count: int) -> str:
    """The button under a thread whose other hits are not listed: ``2 more in this thread``."""
    return f"{count} more in this thread"


def _rounded(numerator: int, denominator: int) -> int:
    # numerator / denominator to the nearest whole number, ties to even: how CPython's float
    # formatting rounds the exact value (MicroPython's rounds ties up, and not always exactly).
    whole, rest = divmod(numerator, denominator)
    if 2 * rest > denominator or (2 * rest == denominator and whole % 2 == 1):
        whole += 1
    return whole


def file_size_text(size: "Any") -> str:
    """A file's size as people read it: ``512 bytes``, ``2.4 KB``, ``240 KB``; ``""`` when unknown."""
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        return ""
    # In whole numbers, as a float of the size would be (exact below 2**53 bytes, rounded past it):
    # the size over a power of 1024 is exact in binary, so the rounding below is the float's.
    exact, unit, divisor = int(float(size)), 0, 1
    while exact >= divisor * _SIZE_STEP and unit < len(_SIZE_UNITS) - 1:
        divisor *= _SIZE_STEP
        unit += 1
    if unit == 0:
        return f"{size} byte{'s' if size != 1 else ''}"
    if exact < _SIZE_DECIMALS_BELOW * divisor:
        tenths = _rounded(exact * _TENTHS, divisor)
        shown = str(tenths // _TENTHS) if tenths % _TENTHS == 0 else f"{tenths // _TENTHS}.{tenths % _TENTHS}"
    else:
        shown = str(_rounded(exact, divisor))
    return f"{shown} {_SIZE_UNITS[unit]}"
