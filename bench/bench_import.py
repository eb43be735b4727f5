"""How fast ``ai-search import`` loads a chat history, first time and again (the idempotent path).

Generates MESSAGES messages (deterministic random: ROOMS rooms, USERS users, a few members lines)
into a temporary JSONL file, imports it into a fresh data dir RUNS times, and prints the median
messages per second; then re-imports the same file into the last data dir RUNS times (every line
unchanged: the idempotent path) and prints that too.

    .venv/bin/python bench/bench_import.py [--messages 100000] [--runs 5] [--listener] [--json PATH]

``--listener`` registers a no-op message listener, so the cost of building the 'posted' events that
keep search indexes current is included (as in a running server, whose index listens).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _figures import Figure, Report
from ai_search_server.importer import import_jsonl
from ai_search_server.store import MessageEvent, open_store

MESSAGES = 100_000
ROOMS = 20
USERS = 50
RUNS = 5
SEED = 20261101
_VOCABULARY = """
deploy failed rollback canary latency p99 invoice billing checkout retry queue worker timeout postgres
index migration alert pager incident review release branch merge flaky test cache redis token login
search answer cite embedding model vector keyword room channel thread
"""
_WORDS = _VOCABULARY.split()


def write_history(path: Path, messages: int) -> None:
    rng = random.Random(SEED)
    users = [f"user{n:02d}" for n in range(USERS)]
    rooms = [(f"room-{n:02d}", "p" if n % 5 == 0 else "c") for n in range(ROOMS)]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with path.open("w", encoding="utf-8") as out:
        for n in range(messages):
            room, room_type = rng.choice(rooms)
            line: dict[str, object] = {
                "room": room,
                "room_type": room_type,
                "user": rng.choice(users),
                "ts": (start + timedelta(seconds=n * 30 + rng.randrange(30))).isoformat(),
                "text": " ".join(rng.choices(_WORDS, k=rng.randrange(4, 40))),
            }
            if n % 10 == 0:
                line["id"] = f"bench-{n}"
            if n < ROOMS * 3:
                line["members"] = rng.sample(users, 5)
            out.write(json.dumps(line) + "\n")


def _import(data_dir: Path, source: Path, *, listener: bool) -> tuple[float, int]:
    store = open_store(data_dir)
    try:
        if listener:

            def ignore(events: Sequence[MessageEvent]) -> None:
                pass

            store.add_message_listener(ignore)
        started = time.perf_counter()
        report = import_jsonl(store, source, progress=False)
        elapsed = time.perf_counter() - started
    finally:
        store.close()
    return elapsed, report.imported + report.unchanged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=MESSAGES)
    parser.add_argument("--runs", type=int, default=RUNS, help="imports of each kind (median of these)")
    parser.add_argument("--listener", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/_figures.py Report)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        source = Path(tmp) / "history.jsonl"
        write_history(source, args.messages)
        size_mib = source.stat().st_size / 2**20
        first: list[float] = []
        for run in range(args.runs):
            elapsed, count = _import(Path(tmp) / f"data-{run}", source, listener=args.listener)
            assert count == args.messages, count
            first.append(elapsed)
        again = [
            _import(Path(tmp) / f"data-{args.runs - 1}", source, listener=args.listener)[0]
            for _ in range(args.runs)
        ]
    median, median_again = statistics.median(first), statistics.median(again)
    print(f"import: {args.messages:,} messages, {size_mib:.1f} MiB JSONL, listener={args.listener}")
    print(
        f"  fresh data dir: median {args.messages / median:,.0f} messages/s ({median:.2f} s, {args.runs} runs)"
    )
    print(
        f"  re-import (all unchanged): median {args.messages / median_again:,.0f} messages/s "
        f"({median_again:.2f} s, {args.runs} runs)"
    )
    report = Report(
        "import",
        "Import: messages per second",
        method=(
            f"`ai-search import` (importer.import_jsonl, in-process) of a generated {args.messages:,}-message "
            f"JSONL history ({size_mib:.1f} MiB; {ROOMS} rooms, {USERS} users, 4-40 words a message, "
            "members lines, one in ten lines with an id) into a fresh data dir (SQLite, WAL), once per run; "
            "then the same file again into the last data dir, every line unchanged (the idempotent path). "
            "A run's figure is messages divided by the import's wall time; building the file is not timed."
            + (
                " A no-op message listener is registered, so the 'posted' events an index listens to are built."
                if args.listener
                else ""
            )
        ),
        parameters={
            "messages": args.messages,
            "JSONL MiB": round(size_mib, 1),
            "runs": args.runs,
            "listener": args.listener,
        },
    )
    report.add(
        Figure(
            "import into a fresh data dir", "messages/s", [args.messages / t for t in first], better="higher"
        )
    )
    report.add(
        Figure("re-import, all unchanged", "messages/s", [args.messages / t for t in again], better="higher")
    )
    report.write(args.json)


if __name__ == "__main__":
    main()
