"""Citations in an answer: normalise `【N†...】` marks to `[N]` (batch or streaming), then check them.

Some models (OpenAI's among them) cite as `【1†L1-L2】`. Upstream rewrites those groups to `[N]`:

    >>> normalize_citations("sources.【1†L1-L2】【2†L4-L5】")
    'sources. [1] [2]'

A group is `【`, spaces, digits, optionally `†` and a label (anything but `】` or a newline), spaces,
`】`. One space is added before it when the character before it is not whitespace (JS `\\s`). Unlike
upstream, each part has a length cap (`MAX_CITATION_*`): a group longer than
`MAX_CITATION_HOLD_BACK_CHARS` + 1 characters is left as it is. The cap is what lets the streaming
normaliser hold back only a bounded tail and still produce exactly what the batch one produces; no
real citation comes near it.

After normalisation the route keeps only citations that point at a source:

    >>> extract_citations("Rolled back [2] [9] [2].", source_count=3)
    [2]
    >>> mark_unknown_citations("Rolled back [2] [9].", source_count=3)
    'Rolled back [2] [9?].'

A citation token is `[` + 1 to 6 ASCII digits + `]`; `[01]` is source 1. An unknown one is marked
`[N?]`: the reader still sees what the model claimed, the page (which links only `[N]`) does not turn
it into a link, and marking twice changes nothing.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "MAX_CITATION_HOLD_BACK_CHARS",
    "MAX_CITATION_LABEL_CHARS",
    "MAX_CITATION_NUMBER_DIGITS",
    "MAX_CITATION_PADDING_CHARS",
    "CitationStreamNormalizer",
    "extract_citations",
    "mark_unknown_citations",
    "normalize_citations",
]

# Spaces allowed on each side of the number inside `【 4 】` (characters).
MAX_CITATION_PADDING_CHARS = 8
# Digits of a citation number (characters); also the longest `[N]` the extractor reads.
MAX_CITATION_NUMBER_DIGITS = 6
# Characters of the label after `†`, as in `【3†source】` or `【1†L1-L2】`.
MAX_CITATION_LABEL_CHARS = 64
# The longest unfinished group (`【`, spaces, digits, `†`, label, spaces, no `】` yet) the streaming
# normaliser holds back (characters); anything longer cannot become a citation, so it is emitted.
MAX_CITATION_HOLD_BACK_CHARS = (
    1 + MAX_CITATION_PADDING_CHARS + MAX_CITATION_NUMBER_DIGITS + 1 + MAX_CITATION_LABEL_CHARS
) + MAX_CITATION_PADDING_CHARS

_PAD = f" {{0,{MAX_CITATION_PADDING_CHARS}}}"
_NUMBER = f"[0-9]{{1,{MAX_CITATION_NUMBER_DIGITS}}}"
_LABEL = f"(?:†[^】\\n]{{0,{MAX_CITATION_LABEL_CHARS}}})?"
# A whole group, the number captured. Every part excludes `】`, so a group always ends at the first
# `】` after its `【`: whether a group matches is decided by that stretch alone.
_GROUP: Final = re.compile(f"【{_PAD}({_NUMBER}){_LABEL}{_PAD}】")
# A group not finished yet: some continuation of this text could still match `_GROUP`.
_UNFINISHED_GROUP: Final = re.compile(f"【{_PAD}(?:{_NUMBER}{_LABEL}{_PAD})?")
_CITATION: Final = re.compile(f"\\[({_NUMBER})\\]")

# JavaScript's `\s` (ECMA-262 WhiteSpace + LineTerminator). Python's str.isspace differs: it counts
# U+001C..U+001F and U+0085, and not U+FEFF.
_JS_WHITESPACE: Final = frozenset(
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def _normalize(text: str, previous: str) -> str:
    """Rewrite the groups in `text`; `previous` is the character before `text` ("" at the start)."""

    def replace(match: re.Match[str]) -> str:
        start = match.start()
        before = text[start - 1] if start else previous
        space = " " if before and before not in _JS_WHITESPACE else ""
        return f"{space}[{match.group(1)}]"

    return _GROUP.sub(replace, text)


def normalize_citations(text: str) -> str:
    """Rewrite every `【N...】` citation group to `[N]`, with one space before it after a non-space.

    `【3†source】` becomes `[3]`, `【 4 】` becomes `[4]`; groups with no digits, with a newline
    inside, or past the length caps stay unchanged. The number keeps its digits as written.
    """
    return _normalize(text, "")


class CitationStreamNormalizer:
    """`normalize_citations` for a streamed answer, fed one chunk at a time.

    `feed` returns the text that is safe to show now; `flush` returns the rest at the end. Together
    they give exactly `normalize_citations` of the whole text, however it was split:

        >>> n = CitationStreamNormalizer()
        >>> [n.feed("see【"), n.feed("2†L1"), n.feed("】 ok"), n.flush()]
        ['see', '', ' [2] ok', '']

    Only a tail that could still become a group is held back, at most
    `MAX_CITATION_HOLD_BACK_CHARS` characters, so a stray `【` delays the stream by a bounded amount
    and never stalls it. The character before the held tail is remembered, so the leading-space rule
    works across chunks. Use one per answer; `flush` resets it for the next.
    """

    __slots__ = ("_pending", "_previous")

    def __init__(self) -> None:
        self._pending = ""
        self._previous = ""

    def feed(self, chunk: str) -> str:
        """Take the next chunk; return the normalised text that no later chunk can change."""
        pending = self._pending + chunk
        hold_from = self._unfinished_start(pending)
        ready, self._pending = pending[:hold_from], pending[hold_from:]
        out = _normalize(ready, self._previous)
        if ready:
            self._previous = ready[-1]
        return out

    def flush(self) -> str:
        """Return the held tail (normalised; an unfinished group stays as written) and reset."""
        out = _normalize(self._pending, self._previous)
        self._pending = ""
        self._previous = ""
        return out

    @staticmethod
    def _unfinished_start(text: str) -> int:
        # The earliest `【` whose rest of the text could still grow into a group. A group cannot be
        # longer than the hold-back cap, so only the last MAX_CITATION_HOLD_BACK_CHARS can qualify.
        # Everything before it is final: each group there ends, or has failed, before the cut.
        start = text.find("【", max(0, len(text) - MAX_CITATION_HOLD_BACK_CHARS))
        while start != -1:
            if _UNFINISHED_GROUP.fullmatch(text, start):
                return start
            start = text.find("【", start + 1)
        return len(text)


def extract_citations(answer: str, source_count: int) -> list[int]:
    """The source numbers `answer` cites as `[N]`, in order of first citation, each once.

    Only 1..`source_count` count; anything else has no source behind it (see
    `mark_unknown_citations`).
    """
    cited: dict[int, None] = {}
    for match in _CITATION.finditer(answer):
        number = int(match.group(1))
        if 1 <= number <= source_count:
            cited.setdefault(number, None)
    return list(cited)


def mark_unknown_citations(answer: str, source_count: int) -> str:
    """Rewrite each `[N]` with no source behind it (N < 1 or N > `source_count`) as `[N?]`."""

    def mark(match: re.Match[str]) -> str:
        number = int(match.group(1))
        return match.group(0) if 1 <= number <= source_count else f"[{match.group(1)}?]"

    return _CITATION.sub(mark, answer)
