"""What ``has:``/``is:``/excluded words cost, applied inside the index against checked on candidates.

One data set of 100k messages (``bench/out/conditions-v<FORMAT>-<N>``, built once and reused): the
texts of ``bench_search`` (the demo's and their ticket-suffixed variations), 40 rooms, 60 users, a
year; and what chat holds beside the words: 3% of the messages carry a file (a third of them an
image), 8% a reaction, 0.5% a pin, 10% are replies in a thread started earlier in the same room,
and links are where the demo's texts hold one. The searching user reads 14 rooms.

Per search line, in this process, the search service on the embedded pipeline (keyword only, and
hybrid), median of `RUNS` runs of the queries:

- **words**: the line without its filter (the baseline);
- **before**: the filter checked on the candidates only (the pipeline told nothing of it, 100
  candidates per branch: what every search did before our extension);
- **after**: the filter applied inside both branches' index queries;

and the results each finds (before misses what ranks past its candidates). The semantic branch's
vectors come from a stand-in of MiniLM's shape (384 dimensions, one fixed random unit vector per
distinct text, no model load): the cost measured is the mask and the scan, which do not depend on
what the numbers mean; the query embedding is left out the same way.

    .venv/bin/python bench/bench_conditions.py [--size 100000] [--runs 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ai_search import parse_search_filter_text
from ai_search_server.retrieval.embedded import EmbeddedPipeline
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.search_query import search_request
from ai_search_server.retrieval.search_service import SearchOptions, SearchRequest, SearchService, SearchType
from ai_search_server.store import ImportRow, open_store
from ai_search_server.store.records import Attachment, Reaction
from bench_search import QUERIES, BatchedImport, finished_build, room_layout, say, text_pool

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"
# Bumped when the generator changes, so an older set is not reused.
DATA_FORMAT = 1
SEED = 20261201
SIZE = 100_000
RUNS = 5
IMPORT_BATCH = 2000
# Shares of the messages (fractions) holding each attribute.
FILE_SHARE = 0.03
IMAGE_SHARE_OF_FILES = 1 / 3
REACTION_SHARE = 0.08
PIN_SHARE = 0.005
REPLY_SHARE = 0.10
# A reply answers one of the last this many messages of its room (messages).
THREAD_REACH = 50
DIMENSIONS = 384
EMBED_WAIT_SECONDS = 1800.0
# Queries of `bench_search` each filter is added to (queries).
QUERIES_PER_FILTER = 10
FILTERS = [
    "has:file",
    "has:image",
    "has:link",
    "has:reaction",
    "has:thread",
    "is:thread",
    "is:pinned",
    "-has:link",
    "-is:thread",
    "-deploy",
]


class RandomVectors:
    """An embedder of MiniLM's shape: each distinct text one fixed random unit vector (see above)."""

    model_id = "bench:random-384"
    dimensions = DIMENSIONS

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
            row = np.random.default_rng(seed).standard_normal(DIMENSIONS).astype(np.float32)
            rows[i] = row / np.linalg.norm(row)
        return rows


def data_dir(size: int) -> Path:
    return OUT / f"conditions-v{DATA_FORMAT}-{size}"


def import_messages(directory: Path, size: int) -> None:
    rng = random.Random(SEED + size)
    pool = text_pool()
    rooms, authors, room_members = room_layout(rng)
    recent: dict[str, list[str]] = {room: [] for room, _ in rooms}
    start = datetime(2026, 1, 1, tzinfo=UTC)
    step_ms = max(1, 365 * 86_400_000 // size)
    store = open_store(directory)
    try:
        rows = BatchedImport(store, size, report_every=0, batch=IMPORT_BATCH)
        for n in range(size):
            room, kind = rooms[n % len(rooms)]
            message_id = f"bench-{n}"
            tmid = None
            if recent[room] and rng.random() < REPLY_SHARE:
                tmid = rng.choice(recent[room][-THREAD_REACH:])
            else:
                recent[room].append(message_id)
            attachments: tuple[Attachment, ...] = ()
            if rng.random() < FILE_SHARE:
                image = rng.random() < IMAGE_SHARE_OF_FILES
                name = f"{'screenshot' if image else 'report'}-{n}.{'png' if image else 'pdf'}"
                attachments = (Attachment(name, type="image/png" if image else "application/pdf"),)
            reactions = (
                (Reaction(":+1:", (rng.choice(authors[room]),)),) if rng.random() < REACTION_SHARE else ()
            )
            rows.add(
                ImportRow(
                    room,
                    kind,
                    rng.choice(authors[room]),
                    start + timedelta(milliseconds=n * step_ms),
                    rng.choice(pool),
                    message_id,
                    members=room_members[room],
                    tmid=tmid,
                    attachments=attachments,
                    reactions=reactions,
                    pinned=rng.random() < PIN_SHARE,
                )
            )
        rows.finish()
    finally:
        store.close()


def build(size: int) -> dict[str, Any]:
    directory = data_dir(size)
    finished = finished_build(directory)
    if finished is not None:
        return finished
    say(f"building {directory}: {size:,} messages")
    started = time.perf_counter()
    import_messages(directory, size)
    store = open_store(directory)
    try:
        index = EmbeddedIndex.open(directory / INDEX_FILENAME, store, RandomVectors(), progress=True)
        if not index.wait_until_embedded(EMBED_WAIT_SECONDS):
            raise SystemExit("embedding did not finish in time")
        index.close()
    finally:
        store.close()
    figures = {"format": DATA_FORMAT, "messages": size, "build_seconds": time.perf_counter() - started}
    (directory / "build.json").write_text(json.dumps(figures, indent=2))
    return figures


class ContractOnly:
    """The embedded pipeline told nothing of the conditions: the candidate check alone (before)."""

    kind = "embedded"

    def __init__(self, pipeline: EmbeddedPipeline) -> None:
        self._pipeline = pipeline
        self.index = pipeline.index

    @property
    def semantic_available(self) -> bool:
        return True

    async def search(self, query: str, **kw: Any) -> object:
        kw.pop("conditions", None)
        return await self._pipeline.search(query, **kw)

    async def aclose(self) -> None:
        """Nothing to close."""


def _request(line: str, search_type: SearchType) -> SearchRequest:
    parsed = parse_search_filter_text(line)
    return search_request(parsed.search_text, parsed.filters, limit=10, search_type=search_type)


async def _time(service: SearchService, user: Any, requests: list[SearchRequest]) -> tuple[list[float], int]:
    timings, found = [], 0
    for request in requests:
        started = time.perf_counter()
        outcome = await service.search(user, request)
        timings.append(time.perf_counter() - started)
        found += len(outcome.hits)
    return timings, found


async def measure(size: int, runs: int) -> dict[str, Any]:
    directory = data_dir(size)
    store = open_store(directory)
    index = EmbeddedIndex.open(directory / INDEX_FILENAME, store, RandomVectors())
    try:
        assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
        user = store.get_user_by_username("user00")
        assert user is not None
        embedded = EmbeddedPipeline(index)
        after = SearchService(store, embedded, SearchOptions())
        before = SearchService(store, ContractOnly(embedded), SearchOptions())
        rng = random.Random(SEED)
        results: dict[str, Any] = {}
        search_types: tuple[SearchType, ...] = ("keyword", "hybrid")
        for search_type in search_types:
            for line_filter in FILTERS:
                queries = rng.sample(QUERIES, QUERIES_PER_FILTER)
                plain = [_request(q, search_type) for q in queries]
                filtered = [_request(f"{q} {line_filter}", search_type) for q in queries]
                medians: dict[str, list[float]] = {"words": [], "before": [], "after": []}
                found: dict[str, int] = {}
                for _run in range(runs):
                    for name, service, requests in (
                        ("words", after, plain),
                        ("before", before, filtered),
                        ("after", after, filtered),
                    ):
                        timings, hits = await _time(service, user, requests)
                        medians[name].append(statistics.median(timings) * 1000)
                        found[name] = hits
                row = {name: statistics.median(values) for name, values in medians.items()}
                row.update({f"found_{name}": count for name, count in found.items()})
                results[f"{search_type} {line_filter}"] = row
                say(
                    f"  {search_type:7} {line_filter:13} words {row['words']:6.1f} ms  before "
                    f"{row['before']:6.1f} ms  after {row['after']:6.1f} ms  (x{row['after'] / row['before']:.2f})"
                    f"  results before {found['before']:3d} after {found['after']:3d}"
                )
        return results
    finally:
        index.close()
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=SIZE)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    build(args.size)
    say(
        f"{args.size:,} messages; median per query of {QUERIES_PER_FILTER} queries, median of {args.runs} runs"
    )
    results = asyncio.run(measure(args.size, args.runs))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    print(json.dumps({"size": args.size, "runs": args.runs, "lines": results}, indent=2), file=sys.stdout)


if __name__ == "__main__":
    main()
