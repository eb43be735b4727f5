"""ai.search latency on loopback at 10k and 100k messages, next to a bare FTS5 query, and indexing speed.

For each size, a workspace is generated once into ``bench/out/search-<N>`` (messages made from the demo
workspace's texts, 40 rooms, 60 users each reading about a third of the rooms) and indexed with the
local model; later runs reuse the durable store and index. Then:

- **indexing**: keyword catch-up and embedding throughput (messages/s), measured when the index was
  built (saved beside it) and printed on every run;
- **ai.search**: the real app served by uvicorn on 127.0.0.1, ``GET /api/v1/ai.search`` (hybrid, 10
  results) from one client, one request at a time; p50/p99 of the wall time;
- **bare FTS5**: the same queries' keyword expression run straight on the index file, no scoping,
  no fusion, no HTTP (``SELECT rowid ... MATCH ... ORDER BY rank LIMIT 30``): the floor;
- **parts**: query embedding, and the vector scan alone, in-process;
- **memory**: the vector matrix, and the process's resident size with and without the model loaded.

    .venv/bin/python bench/bench_search.py [--sizes 10000 100000] [--queries 200]

The first 100k run embeds 100k messages on the CPU: about half an hour on 2 cores (progress on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from ai_search_server.app import create_app
from ai_search_server.demo import generate_demo_messages
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.minilm import MINILM_DIMENSIONS, MINILM_MODEL_ID
from ai_search_server.retrieval.terms import fts_match_expression, query_terms
from ai_search_server.retrieval.vectors import VectorScope
from ai_search_server.settings import load_settings
from ai_search_server.store import ImportRow, open_store

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"
SEED = 20261130
ROOMS = 40
USERS = 60
ROOMS_PER_USER = 14
IMPORT_BATCH = 5000
EMBED_WAIT_SECONDS = 4 * 3600
RESULTS = 10
# How long the server process may take to open the index and load the model (seconds).
SERVER_START_SECONDS = 120
# Requests made before measuring (connection set-up, first-call caches).
WARMUP_QUERIES = 10
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


def rss_mib() -> float:
    """Resident set size of this process now (MiB), from /proc."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def build_store(data_dir: Path, size: int) -> Any:
    store = open_store(data_dir)
    if store.count_messages() >= size:
        return store
    rng = random.Random(SEED)
    texts = [row["text"] for row in generate_demo_messages()]
    users = [f"user{n:02d}" for n in range(USERS)]
    rooms = [(f"room-{n:02d}", "p" if n % 4 == 0 else "c") for n in range(ROOMS)]
    members = {room: set() for room, _ in rooms}
    for user in users:
        for room, _ in rng.sample(rooms, ROOMS_PER_USER):
            members[room].add(user)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    print(f"generating {size} messages into {data_dir}", file=sys.stderr)
    batch: list[ImportRow] = []
    for n in range(size):
        room, kind = rooms[n % ROOMS]
        text = rng.choice(texts)
        if rng.random() < 0.7:  # vary the texts, so no two embeddings are the same
            text = f"{text} ({rng.choice(['ref', 'ticket', 'see'])} {rng.choice(['OPS', 'LARK', 'PR'])}-{rng.randrange(10**5)})"
        batch.append(
            ImportRow(
                room,
                kind,
                rng.choice(sorted(members[room]) or users),
                start + timedelta(seconds=n * 97),
                text,
                f"bench-{n}",
                members=tuple(sorted(members[room])),
            )
        )
        if len(batch) >= IMPORT_BATCH:
            store.import_messages(batch)
            batch = []
    if batch:
        store.import_messages(batch)
    return store


def build_index(data_dir: Path, store: Any) -> dict[str, float]:
    """Index (first run) or reopen; returns the indexing figures saved at build time."""
    figures_path = data_dir / "indexing.json"
    if figures_path.exists():
        return json.loads(figures_path.read_text())
    from ai_search_server.retrieval.minilm import MiniLMEmbedder

    count = store.count_messages()
    started = time.perf_counter()
    keyword_only = EmbeddedIndex.open(data_dir / INDEX_FILENAME, store, None, progress=True)
    keyword_seconds = time.perf_counter() - started
    keyword_only.close()
    embedder = MiniLMEmbedder.load()
    started = time.perf_counter()
    index = EmbeddedIndex.open(data_dir / INDEX_FILENAME, store, embedder, progress=True)
    if not index.wait_until_embedded(EMBED_WAIT_SECONDS):
        raise SystemExit("embedding did not finish in time")
    embed_seconds = time.perf_counter() - started
    index.close()
    figures = {
        "messages": count,
        "keyword_messages_per_second": count / keyword_seconds,
        "embedding_messages_per_second": count / embed_seconds,
        "embedding_seconds": embed_seconds,
    }
    figures_path.write_text(json.dumps(figures, indent=2))
    return figures


def bare_fts(data_dir: Path, queries: list[str]) -> list[float]:
    conn = sqlite3.connect(data_dir / INDEX_FILENAME)
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


def ms(values: list[float]) -> str:
    return f"p50 {percentile(values, 0.5) * 1000:7.2f} ms   p99 {percentile(values, 0.99) * 1000:7.2f} ms"


def process_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def serve(data_dir: Path, port: int) -> None:
    """The server process: the real app on the data dir, uvicorn, lifespan on (opens the index)."""
    store = open_store(data_dir)
    settings = load_settings(
        environ={}, overrides={"site_url": f"http://127.0.0.1:{port}", "embedder": "local"}
    )
    uvicorn.run(
        create_app(settings, store), host="127.0.0.1", port=port, log_level="warning", access_log=False
    )


def start_server(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, __file__, "--serve", str(data_dir), str(port)])
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


def components(
    data_dir: Path, store: Any, user_id: str, queries: list[str]
) -> tuple[list[float], list[float]]:
    """Query embedding and vector scan alone, in this process (the server process is idle then)."""
    from ai_search_server.retrieval.minilm import MiniLMEmbedder

    index = EmbeddedIndex.open(data_dir / INDEX_FILENAME, store, MiniLMEmbedder.load())
    rooms = frozenset(store.readable_room_ids(user_id))
    embed_times, scan_times = [], []
    try:
        for query in queries:
            started = time.perf_counter()
            vector = index.embed_query(query)
            embed_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            index.semantic_search(vector, VectorScope(rooms), 30, -1.0)
            scan_times.append(time.perf_counter() - started)
    finally:
        index.close()
    return embed_times, scan_times


def run_size(size: int, query_count: int) -> dict[str, Any]:
    data_dir = OUT / f"search-{size}"
    store = build_store(data_dir, size)
    figures = build_index(data_dir, store)
    user = store.get_user_by_username("user00")
    _token, plain = store.create_token(user.id, "session", label=f"bench-{time.time_ns()}")
    headers = {"X-User-Id": user.id, "X-Auth-Token": plain}
    rng = random.Random(size)
    queries = [rng.choice(QUERIES) for _ in range(query_count + WARMUP_QUERIES)]
    without_model = memory_probe(data_dir)
    process, base_url = start_server(data_dir)
    try:
        http = asyncio.run(measure_http(base_url, headers, queries))
        rss_serving = process_rss_mib(process.pid)
    finally:
        process.terminate()
        process.wait()
    fts = bare_fts(data_dir, queries[WARMUP_QUERIES:])
    embed_times, scan_times = components(data_dir, store, user.id, queries[:100])
    rooms = store.readable_room_ids(user.id)
    store.close()
    print(
        f"\n== {size} messages, user00 reads {len(rooms)} of {ROOMS} rooms; load average {os.getloadavg()[0]:.1f}"
    )
    print(f"ai.search over HTTP (hybrid, {RESULTS} results): {ms(http)}")
    print(f"bare FTS5 query on the same data:        {ms(fts)}")
    print(f"  ratio of medians (the overhead we own): {percentile(http, 0.5) / percentile(fts, 0.5):.1f}x")
    print(f"query embedding (MiniLM, numpy):         {ms(embed_times)}")
    print(f"vector scan (brute force, scoped):       {ms(scan_times)}")
    print(
        f"RSS of a process holding store + index (all vectors) without the model: {without_model:.0f} MiB; "
        f"of the server with the model, after the run: {rss_serving:.0f} MiB"
    )
    print(
        f"indexing (at build): keyword {figures['keyword_messages_per_second']:.0f} msg/s, "
        f"embedding {figures['embedding_messages_per_second']:.1f} msg/s "
        f"({figures['embedding_seconds'] / 60:.1f} min for {figures['messages']})"
    )
    return {"size": size, "http": http, "fts": fts}


class _ProbeEmbedder:
    """Names the local model's vector space without loading it: the index loads its vectors only."""

    model_id = MINILM_MODEL_ID
    dimensions = MINILM_DIMENSIONS

    def embed(self, texts: object) -> Any:
        raise RuntimeError("the memory probe embeds nothing")


def memory_probe(data_dir: Path) -> float:
    """RSS (MiB) of a fresh process that opens the store and the index with every vector, no model."""
    out = subprocess.run(
        [sys.executable, __file__, "--memory-probe", str(data_dir)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def _probe(data_dir: Path) -> None:
    store = open_store(data_dir)
    index = EmbeddedIndex.open(data_dir / INDEX_FILENAME, store, _ProbeEmbedder())  # type: ignore[arg-type]
    print(f"vectors in memory: {index.vector_count}, {index.vector_bytes / 2**20:.1f} MiB", file=sys.stderr)
    print(f"{rss_mib():.1f}")
    index.close()
    store.close()


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--memory-probe":
        _probe(Path(sys.argv[2]))
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        serve(Path(sys.argv[2]), int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    for size in args.sizes:
        run_size(size, args.queries)


if __name__ == "__main__":
    main()
