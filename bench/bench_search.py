"""The search cost curve: ai.search at 1k, 10k, 100k and 1M messages, beside a bare FTS5 query.

For each size, a workspace is generated once into ``bench/out/search-v<FORMAT>-<N>`` and indexed with
the local model; later runs reuse it (a folder without ``build.json`` is a build that did not finish
and is built again). Message texts come from a bounded pool of distinct texts (`POOL_TEXTS`: the demo
workspace's texts plus ticket-suffixed variations), so a million messages hold at most that many
distinct texts: the embedded index embeds each distinct text once (messages with the same text share
one real MiniLM vector), which is what makes a million messages buildable on a CPU. 40 rooms, 60
users each reading 14 of them; the searching user reads about a third of the messages.

Per size:

- **build** (from scratch, saved in ``build.json`` and reported on every run): generating and
  importing the messages, keyword indexing (messages/s), embedding (messages/s, and distinct texts/s:
  the model's own pace);
- **ai.search**: the real app served by uvicorn in a child process on 127.0.0.1, ``GET
  /api/v1/ai.search`` (hybrid, 10 results), one request at a time; `RUNS` runs of `QUERIES_PER_RUN`
  queries, p50 and p99 of each run, the figure is the median across runs;
- **bare FTS5** (the baseline, same runs, same queries): the keyword expression straight on the index
  file, no scoping, no fusion, no HTTP (``SELECT rowid ... MATCH ... ORDER BY rank LIMIT 30``);
- **parts**, in-process: the keyword branch, the query embedding, the vector scan; and the scan of
  100k distinct random vectors (no sharing: the worst case of a workspace whose texts never repeat);
- **memory**: the resident size of a fresh process holding store + index with every vector, without
  the model; and the server's, with the model, after each run.

    .venv/bin/python bench/bench_search.py [--sizes 1000 10000 100000 1000000] [--runs 5]
                                           [--queries 100] [--json PATH]

Building all four from scratch took 24 minutes on the shared 2-core machine (1M: 15 minutes, half of
it importing and keyword-indexing the million, the rest embedding the pool); progress goes to stderr.
With the data sets cached, a full run at the defaults takes about 12 minutes, most of it at 1M (each
run opens the million-message index twice: the memory probe and the server).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import uvicorn

from _figures import Baseline, Figure, Report, Target, percentile
from ai_search_server.app import create_app
from ai_search_server.demo import generate_demo_messages
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.index_db import KeywordScope
from ai_search_server.retrieval.minilm import MINILM_DIMENSIONS, MINILM_MODEL_ID
from ai_search_server.retrieval.terms import fts_match_expression, query_terms
from ai_search_server.retrieval.vectors import VectorMatrix, VectorScope
from ai_search_server.settings import load_settings
from ai_search_server.store import ImportRow, Store, open_store
from ai_search_server.store.records import RoomType

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"
# The data set's format: bumped when the generator changes, so older sets are not reused.
DATA_FORMAT = 2
SEED = 20261130
SIZES = [1_000, 10_000, 100_000, 1_000_000]
RUNS = 5
QUERIES_PER_RUN = 100
ROOMS = 40
USERS = 60
ROOMS_PER_USER = 14
# Distinct texts messages are drawn from (texts): the demo's, then ticket-suffixed variations of them.
POOL_TEXTS = 10_000
IMPORT_BATCH = 5000
EMBED_WAIT_SECONDS = 4 * 3600
RESULTS = 10
# The size the targets are set at (messages), and the targets.
TARGET_SIZE = 100_000
SEARCH_P99_TARGET_MS = 100
MEMORY_TARGET_MIB = 300
# Rows of the no-sharing scan: as many distinct vectors as the target size has messages.
WORST_CASE_SCAN_ROWS = 100_000
# How long the server process may take to open the index and load the model (seconds).
SERVER_START_SECONDS = 300
# Requests made before each run is measured (connection set-up, first-call caches).
WARMUP_QUERIES = 10
# Queries timed in-process for the parts (queries).
PART_QUERIES = 100
QUERIES = [
    "postgres failover",
    "ERR_CONN_RESET",
    "why did billing keep failing after the database switched to the replica",
    "v2.14.0",
    "which release added idempotency keys",
    "customer charged twice",
    "pricing cache stampede",
    "did we make an offer to the SRE candidate",
    "what do I need to install to run the code on my laptop",
    "who is leading the new platform team",
    "deploy rollback",
    "x509: certificate has expired",
    "invoice emails arrived hours late",
    "what did we decide about versioning the public API",
    "dark mode",
    "when can't we deploy over the holidays",
    "why did the cloud bill go up",
    "Paynova key leaked in CI logs",
    "CSV export times out for large accounts",
    "where was the team offsite",
]


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def rss_mib(pid: int | str = "self") -> float:
    """Resident set size of a process now (MiB), from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def ms(values: list[float]) -> str:
    return f"p50 {percentile(values, 0.5) * 1000:7.2f} ms   p99 {percentile(values, 0.99) * 1000:7.2f} ms"


def label(size: int) -> str:
    return f"{size // 1_000_000}M" if size >= 1_000_000 else f"{size // 1000}k"


# -- the data set ------------------------------------------------------------------------------------


def text_pool() -> list[str]:
    """`POOL_TEXTS` distinct texts: every distinct demo text, then variations with a ticket suffix."""
    rng = random.Random(SEED)
    demo = list(dict.fromkeys(str(row["text"]) for row in generate_demo_messages()))
    pool = dict.fromkeys(demo)
    while len(pool) < POOL_TEXTS:
        text = rng.choice(demo)
        suffix = f"({rng.choice(['ref', 'ticket', 'see'])} {rng.choice(['OPS', 'LARK', 'PR'])}-{rng.randrange(10**5)})"
        pool[f"{text} {suffix}"] = None
    return list(pool)[:POOL_TEXTS]


def data_dir(size: int) -> Path:
    return OUT / f"search-v{DATA_FORMAT}-{size}"


def room_layout(
    rng: random.Random,
) -> tuple[list[tuple[str, RoomType]], dict[str, list[str]], dict[str, tuple[str, ...]]]:
    """The rooms (name, kind), each room's possible authors and its members: `USERS` users, each
    reading `ROOMS_PER_USER` of the `ROOMS` rooms."""
    users = [f"user{n:02d}" for n in range(USERS)]
    rooms: list[tuple[str, RoomType]] = [(f"room-{n:02d}", "p" if n % 4 == 0 else "c") for n in range(ROOMS)]
    members: dict[str, set[str]] = {room: set() for room, _ in rooms}
    for user in users:
        for room, _ in rng.sample(rooms, ROOMS_PER_USER):
            members[room].add(user)
    authors = {room: sorted(names) or users for room, names in members.items()}
    return rooms, authors, {room: tuple(sorted(names)) for room, names in members.items()}


class BatchedImport:
    """A generated data set's rows into the store IMPORT_BATCH at a time (one transaction each),
    saying how far it got every `report_every` batches: a million rows in one call would hold them
    all in memory, one call a row would pay a transaction each."""

    def __init__(self, store: Store, size: int, *, report_every: int, batch: int = IMPORT_BATCH) -> None:
        self._store, self._size, self._every, self._batch = store, size, report_every, batch
        self._rows: list[ImportRow] = []
        self._done = 0

    def add(self, row: ImportRow) -> None:
        self._rows.append(row)
        if len(self._rows) >= self._batch:
            self._flush()
            if self._every and self._done % (self._batch * self._every) == 0:
                say(f"  imported {self._done:,} of {self._size:,} messages")

    def finish(self) -> None:
        if self._rows:
            self._flush()

    def _flush(self) -> None:
        self._store.import_messages(self._rows)
        self._done += len(self._rows)
        self._rows = []


def import_messages(directory: Path, size: int) -> None:
    rng = random.Random(SEED + size)
    pool = text_pool()
    rooms, authors, room_members = room_layout(rng)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    # Spread over about a year whatever the size.
    step_ms = max(1, 365 * 86_400_000 // size)
    store = open_store(directory)
    try:
        rows = BatchedImport(store, size, report_every=20)
        for n in range(size):
            room, kind = rooms[n % ROOMS]
            rows.add(
                ImportRow(
                    room,
                    kind,
                    rng.choice(authors[room]),
                    start + timedelta(milliseconds=n * step_ms),
                    rng.choice(pool),
                    f"bench-{n}",
                    members=room_members[room],
                )
            )
        rows.finish()
    finally:
        store.close()


def finished_build(directory: Path) -> dict[str, Any] | None:
    """The build figures of a finished data set in `directory` (its build.json), or None after
    clearing an unfinished one, leaving an empty folder to build in."""
    figures_path = directory / "build.json"
    if figures_path.exists():
        return dict(json.loads(figures_path.read_text()))
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    return None


def build(size: int) -> dict[str, Any]:
    """The data set for `size`, built from scratch unless a finished one is there; its build figures."""
    directory = data_dir(size)
    figures_path = directory / "build.json"
    finished = finished_build(directory)
    if finished is not None:
        return finished
    from ai_search_server.retrieval.minilm import MiniLMEmbedder

    say(f"building {directory} from scratch: {size:,} messages from at most {POOL_TEXTS:,} distinct texts")
    started = time.perf_counter()
    import_messages(directory, size)
    import_seconds = time.perf_counter() - started
    say(f"  imported in {import_seconds:.0f} s; keyword indexing")
    store = open_store(directory)
    try:
        started = time.perf_counter()
        EmbeddedIndex.open(directory / INDEX_FILENAME, store, None, progress=True).close()
        keyword_seconds = time.perf_counter() - started
        say(f"  keyword index in {keyword_seconds:.0f} s; embedding")
        embedder = MiniLMEmbedder.load()
        started = time.perf_counter()
        index = EmbeddedIndex.open(directory / INDEX_FILENAME, store, embedder, progress=True)
        if not index.wait_until_embedded(EMBED_WAIT_SECONDS):
            raise SystemExit("embedding did not finish in time")
        embed_seconds = time.perf_counter() - started
        texts, distinct = index.embedded_texts, index.distinct_vectors
        index.close()
    finally:
        store.close()
    figures = {
        "format": DATA_FORMAT,
        "messages": size,
        "distinct_texts": distinct,
        "embedded_texts": texts,
        "import_seconds": import_seconds,
        "keyword_seconds": keyword_seconds,
        "embedding_seconds": embed_seconds,
        "build_seconds": import_seconds + keyword_seconds + embed_seconds,
        "keyword_messages_per_second": size / keyword_seconds,
        "embedding_messages_per_second": size / embed_seconds,
        "embedding_texts_per_second": texts / embed_seconds,
        "load_average": os.getloadavg()[0],
    }
    figures_path.write_text(json.dumps(figures, indent=2))
    say(f"  built in {figures['build_seconds'] / 60:.1f} min ({distinct:,} distinct texts embedded)")
    return figures


# -- measuring ---------------------------------------------------------------------------------------


def bare_fts(directory: Path, queries: list[str]) -> list[float]:
    conn = sqlite3.connect(directory / INDEX_FILENAME)
    timings = []
    for query in queries:
        expression = fts_match_expression(query_terms(query))
        started = time.perf_counter()
        conn.execute(
            "SELECT rowid FROM docs_fts WHERE docs_fts MATCH ? ORDER BY rank LIMIT 30", (expression,)
        ).fetchall()
        timings.append(time.perf_counter() - started)
    conn.close()
    return timings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def measure_http(base_url: str, headers: dict[str, str], queries: list[str]) -> list[float]:
    timings = []
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60) as client:
        for n, query in enumerate(queries):
            started = time.perf_counter()
            response = await client.get(
                "/api/v1/ai.search", params={"query": query, "intelligentCount": RESULTS}
            )
            elapsed = time.perf_counter() - started
            response.raise_for_status()
            if n >= WARMUP_QUERIES:
                timings.append(elapsed)
    return timings


def serve(directory: Path, port: int) -> None:
    """The server process: the real app on the data dir, uvicorn, lifespan on (opens the index)."""
    store = open_store(directory)
    overrides: dict[str, Any] = {"site_url": f"http://127.0.0.1:{port}", "embedder": "local"}
    # The second stage as the parent asks (bench_search_distinct.py --second-stage); else off, so the
    # first stage's figures stay comparable with earlier runs and no backfill of the real model runs
    # while they are measured (the second stage's cost is measured apart, with synthetic vectors).
    overrides["second_stage"] = os.environ.get("AI_SEARCH_SECOND_STAGE") or "off"
    if os.environ.get("BENCH_STAGE_IDLE_SECONDS"):  # a diagnostic: how often a caught-up backfill polls
        from ai_search_server.retrieval.second_stage import local as stage_local

        stage_local.BACKFILL_IDLE_SECONDS = float(os.environ["BENCH_STAGE_IDLE_SECONDS"])
    settings = load_settings(environ={}, overrides=overrides)
    uvicorn.run(
        create_app(settings, store, limiter=None),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
    )


def start_server(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, __file__, "--serve", str(directory), str(port)])
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{base_url}/openapi.json", timeout=1)
            return process, base_url
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("the server did not start")


def timed(calls: list[Callable[[], object]]) -> list[float]:
    timings = []
    for call in calls:
        started = time.perf_counter()
        call()
        timings.append(time.perf_counter() - started)
    return timings


def parts(directory: Path, user_id: str, queries: list[str]) -> dict[str, list[float]]:
    """Keyword branch, query embedding and vector scan alone, in this process (the server is stopped)."""
    from ai_search_server.retrieval.minilm import MiniLMEmbedder

    store = open_store(directory)
    index = EmbeddedIndex.open(directory / INDEX_FILENAME, store, MiniLMEmbedder.load())
    rooms = sorted(store.readable_room_ids(user_id))
    try:
        vectors = {query: index.embed_query(query) for query in set(queries)}
        return {
            "keyword": timed(
                [lambda q=q: index.keyword_search(query_terms(q), KeywordScope(rooms), 30) for q in queries]
            ),
            "embed": timed([lambda q=q: index.embed_query(q) for q in queries]),
            "scan": timed(
                [
                    lambda q=q: index.semantic_search(vectors[q], VectorScope(frozenset(rooms)), 30, -1.0)
                    for q in queries
                ]
            ),
        }
    finally:
        index.close()
        store.close()


def worst_case_scan(queries: int) -> list[float]:
    """Scan times over `WORST_CASE_SCAN_ROWS` distinct random unit vectors (no text repeats)."""
    rng = np.random.default_rng(SEED)
    matrix = VectorMatrix(MINILM_DIMENSIONS)
    matrix.reserve(WORST_CASE_SCAN_ROWS)
    rows = rng.standard_normal((WORST_CASE_SCAN_ROWS, MINILM_DIMENSIONS)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    for rowid, row in enumerate(rows):
        matrix.upsert(rowid, row, room=f"room-{rowid % ROOMS:02d}", user="u", ts_ms=rowid)
    scope = VectorScope(frozenset(f"room-{n:02d}" for n in range(0, ROOMS, 3)))
    return timed([lambda n=n: matrix.search(rows[n], scope, k=30) for n in range(queries)])


class _ProbeEmbedder:
    """Names the local model's vector space without loading it: the index loads its vectors only."""

    def __init__(self, model_id: str = MINILM_MODEL_ID) -> None:
        self.model_id = model_id
        self.dimensions = MINILM_DIMENSIONS

    def embed(self, texts: object) -> Any:
        raise RuntimeError("the memory probe embeds nothing")


def memory_probe(directory: Path, model_id: str = MINILM_MODEL_ID) -> tuple[float, dict[str, float]]:
    """RSS (MiB) of a fresh process that opens the store and the index with every vector of
    `model_id`, without loading the model."""
    out = subprocess.run(
        [sys.executable, __file__, "--memory-probe", str(directory), model_id],
        check=True,
        capture_output=True,
        text=True,
    )
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    return float(figures["rss_mib"]), figures


def _probe(directory: Path, model_id: str) -> None:
    store = open_store(directory)
    index = EmbeddedIndex.open(directory / INDEX_FILENAME, store, _ProbeEmbedder(model_id))  # type: ignore[arg-type]
    figures = {
        "rss_mib": rss_mib(),
        "rows": index.vector_count,
        "distinct_vectors": index.distinct_vectors,
        "vector_mib": index.vector_bytes / 2**20,
    }
    print(json.dumps(figures))
    index.close()
    store.close()


def run_size(size: int, runs: int, queries_per_run: int, report: Report) -> None:
    directory = data_dir(size)
    built = build(size)
    store = open_store(directory)
    user = store.get_user_by_username("user00")
    assert user is not None
    _token, plain = store.create_token(user.id, "session", label=f"bench-{time.time_ns()}")
    rooms = store.readable_room_ids(user.id)
    store.close()
    headers = {"X-User-Id": user.id, "X-Auth-Token": plain}
    rng = random.Random(size)
    http_p50, http_p99, fts_p50, fts_p99, served_rss, loads = [], [], [], [], [], []
    memory, probe = [], {}
    say(f"== {label(size)}: {runs} runs of {queries_per_run} queries")
    for run in range(runs):
        rss, probe = memory_probe(directory)
        memory.append(rss)
        queries = [rng.choice(QUERIES) for _ in range(queries_per_run + WARMUP_QUERIES)]
        process, base_url = start_server(directory)
        try:
            http = asyncio.run(measure_http(base_url, headers, queries))
            served_rss.append(rss_mib(process.pid))
        finally:
            process.terminate()
            process.wait()
        fts = bare_fts(directory, queries[WARMUP_QUERIES:])
        loads.append(os.getloadavg()[0])
        http_p50.append(percentile(http, 0.5) * 1000)
        http_p99.append(percentile(http, 0.99) * 1000)
        fts_p50.append(percentile(fts, 0.5) * 1000)
        fts_p99.append(percentile(fts, 0.99) * 1000)
        say(f"  run {run + 1}: ai.search {ms(http)}; bare FTS5 {ms(fts)}; load {loads[-1]:.1f}")
    part = parts(directory, user.id, [rng.choice(QUERIES) for _ in range(PART_QUERIES)])
    at_target = size == TARGET_SIZE
    name = label(size)
    report.add(
        Figure(
            f"ai.search p50 at {name}",
            "ms",
            http_p50,
            baseline=Baseline("bare FTS5 query p50", fts_p50),
        )
    )
    report.add(
        Figure(
            f"ai.search p99 at {name}",
            "ms",
            http_p99,
            baseline=Baseline("bare FTS5 query p99", fts_p99),
            target=Target("<=", SEARCH_P99_TARGET_MS) if at_target else None,
        )
    )
    report.add(
        Figure(
            f"RSS of store + index without the model at {name}",
            "MiB",
            memory,
            target=Target("<=", MEMORY_TARGET_MIB) if at_target else None,
            note=f"{probe['rows']:,} messages with vectors, {probe['distinct_vectors']:,} distinct "
            f"(shared by identical texts), vector arrays {probe['vector_mib']:.1f} MiB",
        )
    )
    report.add(Figure(f"RSS of the server with the model at {name}", "MiB", served_rss))
    report.add(
        Figure(
            f"indexing at {name}: keyword",
            "messages/s",
            [built["keyword_messages_per_second"]],
            better="higher",
            note="measured once, when the data set was built",
        )
    )
    report.add(
        Figure(
            f"indexing at {name}: semantic",
            "messages/s",
            [built["embedding_messages_per_second"]],
            better="higher",
            note=f"{built['embedded_texts']:,} distinct texts embedded "
            f"({built['embedding_texts_per_second']:.1f} texts/s through the model); measured once, at build",
        )
    )
    report.add(
        Figure(
            f"build from scratch at {name}",
            "s",
            [built["build_seconds"]],
            note=f"import {built['import_seconds']:.0f} s, keyword index {built['keyword_seconds']:.0f} s, "
            f"embedding {built['embedding_seconds']:.0f} s (load average {built['load_average']:.1f})",
        )
    )
    for key, what in (
        ("keyword", "keyword branch"),
        ("embed", "query embedding"),
        ("scan", "vector scan"),
    ):
        report.add(Figure(f"{what} p50 at {name} (in-process)", "ms", [percentile(part[key], 0.5) * 1000]))
    print(
        f"\n== {size:,} messages ({built['distinct_texts']:,} distinct texts), user00 reads {len(rooms)} of {ROOMS} rooms"
    )
    print(
        f"ai.search over HTTP (hybrid, {RESULTS} results), median of {runs} runs: "
        f"p50 {np.median(http_p50):.1f} ms, p99 {np.median(http_p99):.1f} ms"
    )
    print(
        f"bare FTS5 query on the same data:                   "
        f"p50 {np.median(fts_p50):.1f} ms, p99 {np.median(fts_p99):.1f} ms"
    )
    print(
        f"  ratio of p50 medians: {np.median(http_p50) / np.median(fts_p50):.1f}x; load average {min(loads):.1f}-{max(loads):.1f}"
    )
    print(f"keyword branch (in-process):   {ms(part['keyword'])}")
    print(f"query embedding (MiniLM):      {ms(part['embed'])}")
    print(f"vector scan (scoped):          {ms(part['scan'])}")
    print(
        f"RSS without the model: {np.median(memory):.0f} MiB ({probe['distinct_vectors']:,} distinct vectors, "
        f"{probe['vector_mib']:.1f} MiB of arrays); server with the model: {np.median(served_rss):.0f} MiB"
    )
    print(
        f"build: {built['build_seconds'] / 60:.1f} min; keyword {built['keyword_messages_per_second']:,.0f} msg/s, "
        f"semantic {built['embedding_messages_per_second']:,.1f} msg/s "
        f"({built['embedding_texts_per_second']:.1f} distinct texts/s)"
    )


METHOD = (
    "Workspaces of 1k, 10k, 100k and 1M messages (40 rooms, 60 users each reading 14; the searching "
    f"user reads about a third of the messages), texts drawn from a pool of {POOL_TEXTS:,} distinct texts "
    "(the demo workspace's texts plus ticket-suffixed variations), so the embedded index embeds each "
    "distinct text once and identical messages share one real MiniLM vector. ai.search: the real app "
    "under uvicorn in a child process on 127.0.0.1, GET /api/v1/ai.search (hybrid, 10 results), one "
    f"request at a time; {RUNS} runs of {QUERIES_PER_RUN} queries from 20 natural queries, p50 and p99 "
    "per run, medians across runs. Baseline: the same queries' keyword expression as a bare FTS5 query "
    "on the same index file (no scoping, no fusion, no HTTP). Memory: a fresh process opening store and "
    "index with every vector, no model. Indexing and build times: measured once, when the data set was "
    "built from scratch (cached in bench/out/)."
)


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--memory-probe":
        _probe(Path(sys.argv[2]), sys.argv[3])
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        serve(Path(sys.argv[2]), int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--queries", type=int, default=QUERIES_PER_RUN, help="queries per run")
    parser.add_argument("--build-only", action="store_true", help="build the data sets, measure nothing")
    parser.add_argument("--json", type=Path, help="write the figures here (bench/_figures.py's Report)")
    args = parser.parse_args()
    report = Report("search", "Search latency and the cost curve", method=METHOD)
    report.parameters = {
        "sizes": args.sizes,
        "runs": args.runs,
        "queries_per_run": args.queries,
        "pool_texts": POOL_TEXTS,
        "data_format": DATA_FORMAT,
        "cores": os.cpu_count(),
    }
    for size in args.sizes:
        if args.build_only:
            build(size)
            continue
        run_size(size, args.runs, args.queries, report)
    if not args.build_only:
        scan = worst_case_scan(PART_QUERIES)
        report.add(
            Figure(
                f"vector scan p50, {WORST_CASE_SCAN_ROWS // 1000}k distinct vectors (in-process)",
                "ms",
                [percentile(scan, 0.5) * 1000],
                note="random unit vectors, no text repeats: the scan of a 100k workspace whose texts never repeat",
            )
        )
        print(f"\nvector scan over {WORST_CASE_SCAN_ROWS:,} distinct vectors (no sharing): {ms(scan)}")
        report.write(args.json)


if __name__ == "__main__":
    main()
