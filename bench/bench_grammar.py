"""How long the filter grammar takes on a 200-character query, per call, under this interpreter.

The browser re-parses the box on every keystroke, so parse and extract must stay far below a frame
(16 ms) even under Pyodide, which runs several times slower than CPython.

    .venv/bin/python bench/bench_grammar.py [--repeats 7] [--calls 2000] [--json PATH]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _figures import Figure, Report
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


FUNCTIONS: list[tuple[str, Callable[[str], object]]] = [
    ("parse_search_filter_text", parse_search_filter_text),
    ("extract_completed_search_filters", extract_completed_search_filters),
    ("get_active_search_filter", get_active_search_filter),
]


def round_microseconds(
    function: Callable[[str], object], query: str, repeats: int, calls: int
) -> list[float]:
    """Microseconds per call in each of ``repeats`` rounds of ``calls`` calls."""
    rounds = timeit.repeat(lambda: function(query), number=calls, repeat=repeats)
    return [seconds / calls * 1e6 for seconds in rounds]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS, help="timing rounds (median of these)")
    parser.add_argument("--calls", type=int, default=CALLS_PER_REPEAT, help="calls per round")
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/_figures.py Report)")
    args = parser.parse_args()
    query = build_query()
    parsed = parse_search_filter_text(query)
    interpreter = f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}"
    print(interpreter)
    print(f"query ({len(query)} chars): {query!r}")
    print(f"parsed: {serialize_search_query(parsed.search_text, parsed.filters)!r}")
    print(f"median of {args.repeats} rounds x {args.calls} calls:")
    report = Report(
        "grammar",
        "Filter grammar: parse and extract",
        method=(
            f"The pure-Python filter grammar (py/ai_search/_grammar.py) on one realistic {len(query)}-character "
            "query (filters of every key, a duplicate, an invalid date, plain words, a token still being "
            f"typed), timed with timeit under {interpreter}: {args.repeats} rounds of {args.calls} calls each; "
            "a run is one round's time per call. The page re-parses the box on every keystroke under Pyodide, "
            "several times slower than CPython, so these must stay far below a 16 ms frame."
        ),
        parameters={"query characters": len(query), "rounds": args.repeats, "calls per round": args.calls},
    )
    for name, function in FUNCTIONS:
        runs = round_microseconds(function, query, args.repeats, args.calls)
        report.add(Figure(name, "µs", runs=runs, note="per call, CPython"))
        print(f"  {name:34} {statistics.median(runs):8.1f} µs")
    report.write(args.json)


if __name__ == "__main__":
    main()
