"""How fast ``ai-search import`` loads a chat history: our JSONL and a Slack export, side by side.

For each format, generates MESSAGES messages (deterministic: the JSONL history below, and
``make_slack_export.py``'s 100k-message Slack workspace with threads, markup, edits and files),
imports it into a fresh data dir RUNS times and prints the median messages per second, then
re-imports into the last data dir RUNS times (every message unchanged: the idempotent path). Then,
INDEX_RUNS times, the whole of ``ai-search import`` as a person runs it: the import and the index
it builds before it returns (keyword and semantic, with the local embedding model), into a fresh
data dir. The Slack figures carry the JSONL ones as their baseline.

    .venv/bin/python bench/bench_import.py [--messages 100000] [--runs 5] [--index-runs 1]
        [--formats jsonl,slack] [--listener] [--json PATH]

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
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _figures import Baseline, Figure, Report
from ai_search_server.import_dispatch import import_path
from ai_search_server.importer import import_jsonl
from ai_search_server.imports.batches import ImportReport
from ai_search_server.retrieval.wiring import index_now
from ai_search_server.services import outbound_policy
from ai_search_server.settings import load_settings
from ai_search_server.store import MessageEvent, Store, open_store
from make_slack_export import write_slack_export

MESSAGES = 100_000
ROOMS = 20
USERS = 50
RUNS = 5
INDEX_RUNS = 1
SEED = 20261101
_VOCABULARY = """
deploy failed rollback canary latency p99 invoice billing checkout retry queue worker timeout postgres
index migration alert pager incident review release branch merge flaky test cache redis token login
search answer cite embedding model vector keyword room channel thread
"""
_WORDS = _VOCABULARY.split()
_NAMES = {"jsonl": "JSONL", "slack": "Slack export"}


def write_history(path: Path, messages: int) -> int:
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
    return messages


def _importer(fmt: str) -> Callable[[Store, Path], ImportReport]:
    if fmt == "jsonl":
        return lambda store, source: import_jsonl(store, source, progress=False)
    return lambda store, source: import_path(store, source, progress=False)


def _import(
    data_dir: Path, source: Path, fmt: str, *, listener: bool, index: bool = False
) -> tuple[float, int]:
    store = open_store(data_dir)
    try:
        if listener:

            def ignore(events: Sequence[MessageEvent]) -> None:
                pass

            store.add_message_listener(ignore)
        started = time.perf_counter()
        report = _importer(fmt)(store, source)
        if index:
            settings = load_settings(environ={}, overrides={"embedder": "local"})
            index_now(settings, store, data_dir, policy=outbound_policy(settings), progress=False)
        elapsed = time.perf_counter() - started
    finally:
        store.close()
    return elapsed, report.imported + report.unchanged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=MESSAGES)
    parser.add_argument("--runs", type=int, default=RUNS, help="imports of each kind (median of these)")
    parser.add_argument("--index-runs", type=int, default=INDEX_RUNS, help="imports with indexing (0: none)")
    parser.add_argument("--formats", default="jsonl,slack", help="comma-separated: jsonl, slack")
    parser.add_argument("--listener", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/_figures.py Report)")
    args = parser.parse_args()
    formats = [f for f in args.formats.split(",") if f]
    runs: dict[tuple[str, str], list[float]] = {}
    sizes: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        for fmt in formats:
            source = Path(tmp) / ("history.jsonl" if fmt == "jsonl" else "slack-export.zip")
            expected = (write_history if fmt == "jsonl" else write_slack_export)(source, args.messages)
            sizes[fmt] = source.stat().st_size / 2**20
            first = []
            for run in range(args.runs):
                elapsed, count = _import(Path(tmp) / f"{fmt}-{run}", source, fmt, listener=args.listener)
                assert count == expected, (fmt, count, expected)
                first.append(expected / elapsed)
            last = Path(tmp) / f"{fmt}-{args.runs - 1}"
            again = [
                expected / _import(last, source, fmt, listener=args.listener)[0] for _ in range(args.runs)
            ]
            indexed = [
                expected
                / _import(Path(tmp) / f"{fmt}-index-{run}", source, fmt, listener=False, index=True)[0]
                for run in range(args.index_runs)
            ]
            runs[(fmt, "fresh")], runs[(fmt, "again")], runs[(fmt, "indexed")] = first, again, indexed
            print(
                f"import {_NAMES[fmt]}: {expected:,} messages, {sizes[fmt]:.1f} MiB, listener={args.listener}"
            )
            print(f"  fresh data dir: median {statistics.median(first):,.0f} messages/s ({args.runs} runs)")
            print(
                f"  re-import (all unchanged): median {statistics.median(again):,.0f} messages/s ({args.runs} runs)"
            )
            if indexed:
                print(
                    f"  import and index (semantic included): median {statistics.median(indexed):,.0f} messages/s"
                )
    report = Report(
        "import",
        "Import: messages per second",
        method=(
            f"`ai-search import` in-process, of a generated {args.messages:,}-message JSONL history ({ROOMS} rooms, "
            f"{USERS} users, 4-40 words a message, members lines, one in ten lines with an id) and of a generated "
            f"Slack export of as many records (bench/make_slack_export.py: 60 people, 78 conversations of every "
            "kind, a third of the messages thread replies, mentions, links, code, edits, reactions, files, joins and "
            "bot messages; a hundred are joins, not messages) into a fresh data dir (SQLite, WAL), once per run; then "
            "the same source again into the last data dir, every message unchanged (the idempotent path); then the "
            "import followed by the index `ai-search import` builds before it returns (keyword, and vectors from the "
            "local all-MiniLM-L6-v2), into a fresh data dir. A figure is messages divided by wall time; generating "
            "the source is not timed." + (" A no-op message listener is registered." if args.listener else "")
        ),
        parameters={
            "messages": args.messages,
            **{f"{_NAMES[f]} MiB": round(size, 1) for f, size in sizes.items()},
            "runs": args.runs,
            "index runs": args.index_runs,
            "listener": args.listener,
        },
    )
    labels = {
        "fresh": "import into a fresh data dir",
        "again": "re-import, all unchanged",
        "indexed": "import and index, semantic included",
    }
    for fmt in formats:
        for kind, label in labels.items():
            values = runs[(fmt, kind)]
            if not values:
                continue
            jsonl = runs.get(("jsonl", kind)) if fmt != "jsonl" else None
            name = label if fmt == "jsonl" else f"{_NAMES[fmt]}: {label}"
            baseline = Baseline(f"JSONL, {label}", jsonl) if jsonl else None
            report.add(Figure(name, "messages/s", values, baseline=baseline, better="higher"))
    report.write(args.json)


if __name__ == "__main__":
    main()
