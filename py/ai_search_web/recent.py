"""Recent searches: the last ``RECENT_SEARCHES_KEPT`` query lines of this browser, newest first.

They live in ``localStorage`` under ``RECENT_SEARCHES_KEY`` (this browser only, never sent anywhere)
and are offered when the box is empty, each as the line it searched, with one option to clear them.
What storage holds is untrusted (another tab, an old version, a person with devtools): it is read
back only as a JSON list of non-empty strings no longer than a query line, anything else dropped.
Pure (no ``js``), so the rules are tested on CPython; the box does the storage calls::

    kept = recent_searches(storage.getItem(RECENT_SEARCHES_KEY))
    storage.setItem(RECENT_SEARCHES_KEY, encode_recent_searches(with_recent_search(kept, line)))

Portable (the page on MicroPython 1.28 as on Pyodide: the convention of ``ai_search/_portable.py``).
"""

import json

from ai_search import FilterSuggestion, strip_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "CLEAR_RECENT_GROUP",
    "MAX_RECENT_SEARCH_CHARS",
    "RECENT_GROUP",
    "RECENT_SEARCHES_KEPT",
    "RECENT_SEARCHES_KEY",
    "encode_recent_searches",
    "recent_search_suggestions",
    "recent_searches",
    "with_recent_search",
]

RECENT_SEARCHES_KEY = "ai-search.recent"
# Searches kept (lines); the oldest goes when one more is added.
RECENT_SEARCHES_KEPT = 10
# Characters of one kept line: the server's own limit of a query line (routes/search.py).
MAX_RECENT_SEARCH_CHARS = 4096
RECENT_GROUP = "recent"
CLEAR_RECENT_GROUP = "recent-clear"


def _first_each(lines: "Iterable[str]") -> "tuple[str, ...]":
    """`lines` with each line once, where it first comes, at most `RECENT_SEARCHES_KEPT` (a list, not
    `dict.fromkeys`: MicroPython's dicts keep no order)."""
    kept: list[str] = []
    for line in lines:
        if line not in kept:
            kept.append(line)
            if len(kept) == RECENT_SEARCHES_KEPT:
                break
    return tuple(kept)


def recent_searches(stored: object) -> "tuple[str, ...]":
    """The kept lines from what storage returned (a JSON string, or None when there is none)."""
    if not isinstance(stored, str):
        return ()
    try:
        items = json.loads(stored)
    except ValueError:
        return ()
    if not isinstance(items, list):
        return ()
    lines = (strip_text(item) for item in items if isinstance(item, str))
    return _first_each(line for line in lines if line and len(line) <= MAX_RECENT_SEARCH_CHARS)


def with_recent_search(kept: "Sequence[str]", line: str) -> "tuple[str, ...]":
    """`line` first, then the others (the same line once), at most `RECENT_SEARCHES_KEPT`."""
    line = strip_text(line)
    if not line or len(line) > MAX_RECENT_SEARCH_CHARS:
        return tuple(kept)
    return _first_each([line] + list(kept))  # noqa: RUF005 (MicroPython has no `*` in a list)


# How JSON writes the characters it must escape (`json.dumps(..., ensure_ascii=False)`): the short
# forms, then \u00XX for the other controls. MicroPython's `json.dumps` has no `ensure_ascii` and
# writes \b and \f as \u0008 and \u000c, so the list is written here, the same on both.
_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_FIRST_PRINTABLE = " "


def _json_string(text: str) -> str:
    out = ['"']
    for char in text:
        escaped = _JSON_ESCAPES.get(char)
        if escaped is None and char < _FIRST_PRINTABLE:
            escaped = "\\u" + ("000" + hex(ord(char))[2:])[-4:]
        out.append(char if escaped is None else escaped)
    out.append('"')
    return "".join(out)


def encode_recent_searches(kept: "Sequence[str]") -> str:
    """`kept` as storage holds it: a JSON list of the lines, their characters as they are (what
    `json.dumps(list(kept), ensure_ascii=False)` writes)."""
    return "[" + ", ".join(_json_string(line) for line in kept) + "]"


def recent_search_suggestions(kept: "Sequence[str]") -> "tuple[FilterSuggestion, ...]":
    """The combobox options for an empty box: each kept line, then "Clear recent searches"."""
    if not kept:
        return ()
    options = [
        FilterSuggestion(
            key=f"recent-{index}",
            group=RECENT_GROUP,
            title=line,
            description="Recent search",
            value=line,
            icon="clock",
            filter_key="",
        )
        for index, line in enumerate(kept)
    ]
    options.append(
        FilterSuggestion(
            key="recent-clear",
            group=CLEAR_RECENT_GROUP,
            title="Clear recent searches",
            description=f"Forget these {len(kept)} in this browser"
            if len(kept) > 1
            else "Forget it in this browser",
            value="",
            icon="close",
            filter_key="",
        )
    )
    return tuple(options)
