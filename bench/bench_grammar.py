"""How long the search language takes on a 200-character line with every operator, per call.

The browser re-parses the box on every keystroke, so the keystroke path (what the box does on each
input: finished filters into chips, the token under the caret, its suggestions, the chips with their
days, the hints) must stay within a frame (16 ms) even under Pyodide, which runs several times
slower than CPython. The same functions are then timed inside the vendored Pyodide in Node
(``bench/_pyodide_run.mjs``; ``scripts/setup`` vendors it), in the same report; ``--no-pyodide``
skips that.

    .venv/bin/python bench/bench_grammar.py [--repeats 7] [--calls 2000] [--json PATH] [--no-pyodide]
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import subprocess
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _figures import Figure, Report, Target
from ai_search import (
    build_applied_filter_chips,
    build_filter_hints,
    build_filter_suggestions,
    extract_completed_search_filters,
    find_refused_search_filters,
    get_active_search_filter,
    merge_search_filters,
    parse_search_filter_text,
    serialize_search_query,
)

# Characters of the benchmark query.
QUERY_LENGTH_CHARS = 200
# One frame at 60 Hz (milliseconds): the keystroke path must fit in it.
FRAME_MS = 16.0
# The calendar day the dates are read on: fixed, so every run times the same work.
TODAY = datetime.date(2026, 12, 1)
_PYODIDE_RUNNER = Path(__file__).resolve().parent / "_pyodide_run.mjs"
# Seconds the Pyodide side may take: Node, Pyodide's start and the timing rounds on a loaded machine.
PYODIDE_TIMEOUT_SECONDS = 300
_RUNS_MARK = "bench-grammar-runs: "
# Timing rounds; the median of them is reported.
REPEATS = 7
# Calls per round.
CALLS_PER_REPEAT = 2_000

# Every operator of the table once or more, a refused value, a phrase, and words.
_BASE = (
    "deploy -in:#random in:#ops from:@al -from:@bot has:link -has:file is:thread -is:dm after:-7d "
    'before:2026-11-30 on:yesterday during:last-week sort:new -canary -"roll back" has:pdf '
)
_WORDS = "notes about the canary release and the rollback plan for friday "


def build_query(length: int = QUERY_LENGTH_CHARS) -> str:
    """A realistic line of exactly `length` characters: every operator (negations, has:/is:,
    relative and calendar dates, sort:, excluded words and phrases), a refused value, plain words,
    and a date token still being typed at the end."""
    tail = " after:2026-1"
    words = (_WORDS * (length // len(_WORDS) + 1))[: max(0, length - len(tail) - len(_BASE))]
    body = (_BASE + words)[: length - len(tail)]
    return body + tail


def keystroke(text: str) -> object:
    """What the box does with its text on one keystroke, caret at the end (search_box.SearchBox.refresh
    without the DOM): finished filters into chips, the token under the caret and its suggestions,
    the chips with their days, and the hints for refused tokens."""
    completed = extract_completed_search_filters(text)
    filters = merge_search_filters(completed.filters)
    rest = completed.search_text
    active = get_active_search_filter(rest)
    finished = rest[: active.start] + rest[active.end :] if active is not None else rest
    return (
        build_applied_filter_chips(filters, today=TODAY),
        build_filter_suggestions(active, today=TODAY),
        build_filter_hints(find_refused_search_filters(finished)),
    )


FUNCTIONS: list[tuple[str, Callable[[str], object]]] = [
    ("keystroke (the box's whole path)", keystroke),
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
    parser.add_argument("--no-pyodide", action="store_true", help="time CPython only")
    parser.add_argument("--emit-runs", action="store_true", help=argparse.SUPPRESS)  # the Pyodide side
    args = parser.parse_args()
    if args.emit_runs:  # inside Pyodide: print the runs for the CPython side to report
        query = build_query()
        runs = {name: round_microseconds(f, query, args.repeats, args.calls) for name, f in FUNCTIONS}
        print(_RUNS_MARK + json.dumps({"interpreter": _interpreter(), "runs": runs}))
        return
    query = build_query()
    parsed = parse_search_filter_text(query)
    interpreter = _interpreter()
    print(interpreter)
    print(f"query ({len(query)} chars): {query!r}")
    print(f"parsed: {serialize_search_query(parsed.search_text, parsed.filters)!r}")
    print(f"median of {args.repeats} rounds x {args.calls} calls:")
    report = Report(
        "grammar",
        "Filter grammar: parse and extract",
        method=(
            f"The pure-Python search language (py/ai_search) on one realistic {len(query)}-character line "
            "(every operator: negations, has:/is:, relative and calendar dates, sort:, excluded words and a "
            "phrase, a refused value, plain words, a date token still being typed), timed with timeit under "
            f"{interpreter}: {args.repeats} rounds of {args.calls} calls each; a run is one round's time per "
            "call. keystroke is the box's whole path per input (chips with their days, the token under the "
            "caret, its suggestions, the hints); the page runs it under Pyodide on every keystroke, so it "
            "must stay within a 16 ms frame."
        ),
        parameters={"query characters": len(query), "rounds": args.repeats, "calls per round": args.calls},
    )
    for name, function in FUNCTIONS:
        runs = round_microseconds(function, query, args.repeats, args.calls)
        report.add(
            Figure(
                name,
                "µs",
                runs=runs,
                note=f"per call, {platform.python_implementation()}",
                target=_frame(name),
            )
        )
        share = statistics.median(runs) / (FRAME_MS * 1000)
        print(f"  {name:36} {statistics.median(runs):8.1f} µs  ({share:.1%} of a {FRAME_MS:g} ms frame)")
    if not args.no_pyodide:
        _add_pyodide(report, args.repeats, args.calls)
    report.write(args.json)


def _frame(name: str) -> Target | None:
    """The keystroke path's bound: one frame."""
    return Target("<=", FRAME_MS * 1000) if name.startswith("keystroke") else None


def _interpreter() -> str:
    return f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}"


def _add_pyodide(report: Report, repeats: int, calls: int) -> None:
    """The same functions timed inside the vendored Pyodide (Node), added to `report`."""
    command = ["node", str(_PYODIDE_RUNNER), "--repeats", str(repeats), "--calls", str(calls), "--emit-runs"]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=PYODIDE_TIMEOUT_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"Pyodide: not timed ({exc})")
        return
    lines = [line for line in done.stdout.splitlines() if line.startswith(_RUNS_MARK)]
    if done.returncode != 0 or not lines:
        print(f"Pyodide: not timed (exit {done.returncode}): {done.stderr.strip()[-400:]}")
        return
    found = json.loads(lines[-1].removeprefix(_RUNS_MARK))
    print(f"{found['interpreter']} (vendored Pyodide in Node):")
    for name, runs in found["runs"].items():
        report.add(Figure(f"{name}, Pyodide", "µs", runs=runs, note="per call, Pyodide", target=_frame(name)))
        share = statistics.median(runs) / (FRAME_MS * 1000)
        print(f"  {name:36} {statistics.median(runs):8.1f} µs  ({share:.1%} of a {FRAME_MS:g} ms frame)")


if __name__ == "__main__":
    main()
