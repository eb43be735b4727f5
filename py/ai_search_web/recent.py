"""Recent searches: the last ``RECENT_SEARCHES_KEPT`` query lines of this browser, newest first.

They live in ``localStorage`` under ``RECENT_SEARCHES_KEY`` (this browser only, never sent anywhere)
and are offered when the box is empty, each as the line it searched, with one option to clear them.
What storage holds is untrusted (another tab, an old version, a person with devtools): it is read
back only as a JSON list of non-empty strings no longer than a query line, anything else dropped.
Pure (no ``js``), so the rules are tested on CPython; the box does the storage calls::

    kept = recent_searches(storage.getItem(RECENT_SEARCHES_KEY))
    storage.setItem(RECENT_SEARCHES_KEY, encode_recent_searches(with_recent_search(kept, line)))
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ai_search import FilterSuggestion

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


def recent_searches(stored: object) -> tuple[str, ...]:
    """The kept lines from what storage returned (a JSON string, or None when there is none)."""
    if not isinstance(stored, str):
        return ()
    try:
        items = json.loads(stored)
    except ValueError:
        return ()
    if not isinstance(items, list):
        return ()
    lines = (item.strip() for item in items if isinstance(item, str))
    kept = [line for line in lines if line and len(line) <= MAX_RECENT_SEARCH_CHARS]
    return tuple(dict.fromkeys(kept))[:RECENT_SEARCHES_KEPT]


def with_recent_search(kept: Sequence[str], line: str) -> tuple[str, ...]:
    """`line` first, then the others (the same line once), at most `RECENT_SEARCHES_KEPT`."""
    line = line.strip()
    if not line or len(line) > MAX_RECENT_SEARCH_CHARS:
        return tuple(kept)
    return tuple(dict.fromkeys((line, *kept)))[:RECENT_SEARCHES_KEPT]


def encode_recent_searches(kept: Sequence[str]) -> str:
    return json.dumps(list(kept), ensure_ascii=False)


def recent_search_suggestions(kept: Sequence[str]) -> tuple[FilterSuggestion, ...]:
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
            description=f"Forget these {len(kept)} in this browser" if len(kept) > 1 else "Forget it in this browser",
            value="",
            icon="close",
            filter_key="",
        )
    )
    return tuple(options)
