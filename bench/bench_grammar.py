"""How long the filter grammar takes on a 200-character query, per call, under this interpreter.

The browser re-parses the box on every keystroke, so parse and extract must stay far below a frame
(16 ms) even under Pyodide, which runs several times slower than CPython.

    .venv/bin/python bench/bench_grammar.py
"""

from __future__ import annotations

import platform
import statistics
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py"))

from ai_search._grammar import (
    extract_completed_search_filters,
    get_active_search_filter,
    parse_search_filter_text,
    serialize_search_query,
)

# Characters of the benchmark query.
QUERY_LENGTH_CHARS = 200
# Timing rounds; the median of them is reported.
REPEATS = 7
# Calls per round.
CALLS_PER_REPEAT = 2_000

_BASE = (
    'deploy failed again in:#ops,#infra in:"team room" from:@alice,@bob after:2026-11-01 '
    "before:2026-11-30 rollback FROM:carol in:ops after:2026-02-30 notes about the canary release "
)


def build_query(length: int = QUERY_LENGTH_CHARS) -> str:
    """A realistic query of exactly `length` characters: filters of every key, a duplicate, an
    invalid date, and plain words, ending with a token still being typed."""
    tail = " in:plat"
    body = (_BASE * (length // len(_BASE) + 1))[: length - len(tail)]
    return body + tail


def median_microseconds(function: Callable[[str], object], query: str) -> float:
    rounds = timeit.repeat(lambda: function(query), number=CALLS_PER_REPEAT, repeat=REPEATS)
    return statistics.median(rounds) / CALLS_PER_REPEAT * 1e6


def main() -> None:
    query = build_query()
    parsed = parse_search_filter_text(query)
    print(f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}")
    print(f"query ({len(query)} chars): {query!r}")
    print(f"parsed: {serialize_search_query(parsed.search_text, parsed.filters)!r}")
    print(f"median of {REPEATS} rounds x {CALLS_PER_REPEAT} calls:")
    for name, function in [
        ("parse_search_filter_text", parse_search_filter_text),
        ("extract_completed_search_filters", extract_completed_search_filters),
        ("get_active_search_filter", get_active_search_filter),
    ]:
        print(f"  {name:34} {median_microseconds(function, query):8.1f} µs")


if __name__ == "__main__":
    main()
