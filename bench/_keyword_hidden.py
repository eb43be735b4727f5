"""What hidden uses of a word still cost a keyword search: time, and SQLite steps (issue 42, finding 4).

The review's reproduction: a private room holds a marker word many times; a user outside it, who
used the word once among 600 other messages, searches ``flibbertyx <word>`` by keyword. Results no
longer depend on the hidden uses (tests/reliability/test_keyword_scoping.py proves it); what remains
is work: FTS5's posting list of the word holds the hidden messages too, and the walk reads past them
(the room is checked on each match's term key). Measured here, per number of hidden uses:

- the keyword branch's CPU per search (``EmbeddedIndex.keyword_search`` in this process,
  ``time.thread_time``), median and p99 of `RUNS` searches, and the SQLite VM instructions it ran
  (a progress handler on the index's connection: deterministic, unlike time);
- ``ai.search`` over the real app in-process (ASGI, no network), wall time, median and p99 of
  `REQUESTS` requests: what a caller could time.

    .venv/bin/python bench/_keyword_hidden.py [--hidden 0 3000 30000] [--runs 500] [--requests 300]

Run it once with this tree's ``py/`` and once with another's (``PYTHONPATH=<tree>/py``) to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from ai_search_server.app import create_app
from ai_search_server.retrieval.floor import KEYWORD_MIN_COVERAGE
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.index_db import KeywordScope
from ai_search_server.retrieval.terms import query_terms
from ai_search_server.settings import load_settings
from ai_search_server.store import ImportRow, open_store

WORD = "quokkalite"
QUERY = f"flibbertyx {WORD}"
FILLER_MESSAGES = 600
FILLER = ["team", "weekly", "sync", "notes", "budget", "review", "lunch", "coffee", "meeting", "agenda", "ticket", "sprint", "harbor", "crane"]
HIDDEN = [0, 3000, 30000]
RUNS = 500
REQUESTS = 300
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
IMPORT_BATCH = 5000


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def build(directory: Path, hidden: int) -> tuple[Any, str]:
    store = open_store(directory)
    alice = store.create_user("alice")
    general = store.create_room("c", "general", members=[alice.id])
    rng = random.Random(42)
    for n in range(FILLER_MESSAGES):
        store.post_message(general.id, alice.id, " ".join(rng.choices(FILLER, k=rng.randint(5, 12))), ts=T0 + timedelta(minutes=n))
    store.post_message(general.id, alice.id, f"the {WORD} shipment reached the harbor", ts=T0 + timedelta(hours=20))
    rows = [
        ImportRow("vault", "p", "hiddenauthor", T0 + timedelta(days=1, seconds=n), f"{WORD} crate {n}", f"hidden-{n}",
                  members=("hiddenauthor",))
        for n in range(hidden)
    ]  # fmt: skip
    for start in range(0, len(rows), IMPORT_BATCH):
        store.import_messages(rows[start : start + IMPORT_BATCH])
    _token, pat = store.create_token(alice.id, "pat", label="bench")
    store.close()
    return alice.id, pat


def in_process(directory: Path, user_id: str, runs: int) -> dict[str, Any]:
    store = open_store(directory)
    index = EmbeddedIndex.open(directory / INDEX_FILENAME, store, None)
    try:
        scope = KeywordScope(sorted(store.readable_room_ids(user_id)))
        terms = query_terms(QUERY)
        steps = 0

        def count() -> int:
            nonlocal steps
            steps += 1
            return 0

        conn = index.db._connection()
        conn.set_progress_handler(count, 1)
        found = index.keyword_search(terms, scope, 30, min_coverage=KEYWORD_MIN_COVERAGE)
        conn.set_progress_handler(None, 1)
        cpu = []
        for _ in range(runs):
            started = time.thread_time()
            index.keyword_search(terms, scope, 30, min_coverage=KEYWORD_MIN_COVERAGE)
            cpu.append((time.thread_time() - started) * 1000)
        return {
            "hits": len(found),
            "sqlite_steps": steps,
            "cpu_ms_median": statistics.median(cpu),
            "cpu_ms_p99": percentile(cpu, 0.99),
        }
    finally:
        index.close()
        store.close()


async def over_the_app(directory: Path, user_id: str, pat: str, requests: int) -> dict[str, Any]:
    settings = load_settings(environ={}, overrides={"site_url": "http://testserver", "embedder": "none"})
    store = open_store(directory)
    app = create_app(settings, store, limiter=None)
    headers = {"X-User-Id": user_id, "X-Auth-Token": pat}
    params = {"query": QUERY, "searchType": "keyword"}
    wall = []
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
                for _ in range(10):
                    await http.get("/api/v1/ai.search", params=params, headers=headers)
                for _ in range(requests):
                    started = time.perf_counter()
                    response = await http.get("/api/v1/ai.search", params=params, headers=headers)
                    wall.append((time.perf_counter() - started) * 1000)
                hits = len(response.json()["intelligent"])
    finally:
        store.close()
    return {"rest_hits": hits, "rest_ms_median": statistics.median(wall), "rest_ms_p99": percentile(wall, 0.99)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=HIDDEN)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--requests", type=int, default=REQUESTS)
    args = parser.parse_args()
    for hidden in args.hidden:
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp) / "data"
            user_id, pat = build(directory, hidden)
            figures = {"hidden_uses": hidden, **in_process(directory, user_id, args.runs)}
            figures.update(asyncio.run(over_the_app(directory, user_id, pat, args.requests)))
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}), flush=True)
    print(f"load average {Path('/proc/loadavg').read_text().split()[:3]}", file=sys.stderr)


if __name__ == "__main__":
    main()
