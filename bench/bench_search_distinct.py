"""Search at scale with texts that do not repeat: ai.search at 100k and 1M distinct chat messages.

``bench_search.py`` draws its messages from 10,000 distinct texts, which keeps FTS5's posting lists
and the vector scan small. Here the workspaces look like chat: texts of 6-24 words drawn Zipf-like
from a 40,000-word vocabulary (the demo workspace's real words mixed in among generated ones, so a
query means something), a few short replies that do repeat ("thanks", "lgtm"), threads, rooms of
very different sizes (Zipf), people in few or many rooms, the searcher in a third of the rooms.

Vectors: a million distinct texts cannot go through the model on this CPU (23-90 texts/s: 3-12
hours), so the data set stores a random unit vector per message (and a second one, the conversation
vector, for messages with earlier messages in their conversation, as the real index does) under the
served model's id. The scan then costs what it costs with real vectors; the semantic branch finds
nothing above its floor, so this bench measures latency, never relevance (bench_relevance.py does).
The query is embedded by the real model.

Queries: two words taken from a random message of a room the searcher reads (most queries), and
common-word queries (one or two of the vocabulary's most frequent non-stopwords).

Per size, the data set is built once into ``bench/out/search-distinct-v<FORMAT>-<N>/`` (git-ignored)
with its build times in ``build.json``; then:

- **ai.search** over HTTP (the real app under uvicorn in a child process), ``searchType=keyword`` and
  ``hybrid``, one request at a time and `CONCURRENCY` at once: p50 / p99;
- **bare FTS5**: each query's keyword expression straight on the index file, no scope, no fusion,
  no HTTP (``SELECT rowid FROM docs_fts WHERE docs_fts MATCH ? ORDER BY rank LIMIT 30``);
- **memory**: the server's resident size after the run (with the model), and a fresh process
  holding store + index with every vector (without it);
- **recall** of the semantic branch against exact search (``_vector_recall.py``, in this process):
  recall@10 and CPU per search for scopes of very different sizes, against numpy's exact scan of
  every stored vector, and the vector index's open times (rebuilt from index.db, from its snapshot);
- **keyword recall** (``_keyword_recall.py``, in this process): the keyword branch's top 10 on the
  bench's queries against every match in scope ranked (coverage, then BM25), and the CPU of both;
- with ``--baseline-ref REF`` the same server measurements with REF's ``py/`` (``git archive``),
  on the same data, side by side. Each index layout gets its own copy of a data set
  (``<dir>-layout<N>/``, made once): a newer code migrates the file in place, and an older one
  would drop a newer file and re-embed every message.

With ``--postgres URL`` (a PostgreSQL server the bench may create databases on) only **the keyword
branch, FTS5 against PostgreSQL's full-text search** runs (``keyword_index = "postgres"``): the same
messages imported into a database of their own (``ai_search_bench_distinct_<N>``, made once and
reused), ``message_terms`` built from it (timed), then each query's keyword branch in this process
on both, one at a time and ``CONCURRENCY`` threads at once: wall p50 / p99, this process's and
PostgreSQL's CPU per query, and how many of FTS5's top 30 PostgreSQL returns.

With ``--second-stage`` only **the second stage's cost** runs: ai.search hybrid, one request at a
time, with ``second_stage = "off"`` and ``"local"`` (``AI_SEARCH_SECOND_STAGE``, which
bench_search.py's server passes on) on the same data with the same queries, p50 / p95 / p99 and the
difference (local minus off, paired per round), ``--stage-rounds`` rounds (a fresh server per mode per
round, the order alternating; medians across rounds). **The stage's vectors are synthetic**: the
data set's ``stage-vectors.db`` is filled once (bulk SQL, timed, ``build-stage.json``) with a random
unit 768-d vector per document, and a second (``context``) for each document whose index.db row has
a conversation vector, int8 as ``local.quantise`` stores them, under the served model's id
(``local:all-mpnet-base-v2:int8-static-v1``) and each document's ``docs.digest``, so every message is
covered and the backfill finds nothing to do (checked on ``ai.search.status``). all-mpnet-base-v2
over every message would take hours at this size on this CPU (about 10 texts/s on one thread). **The
query is embedded by the real model.** Latency only, never relevance. The stage caches 256 query
vectors, so every measured query is distinct (never asked of that server before); the last ones are
then asked again and reported apart, as "cached". Before measuring, each server is left alone until
its CPU goes idle (or 30 s): the backfill's first poll of every document runs at start (about 5 s at
1M) and would land in the first requests; the share of a core it uses with no request in flight is
reported ("idle server CPU"). After the HTTP runs, ``LocalStage.score_now`` is
timed in-process and split: the query embedding, the SQL lookup of the candidates' vectors, the
cosines, and the two reads that run while the backfill is caught up (its idle ``pending`` poll and
``coverage``'s count). Its markdown table is printed and kept in the JSON report
(``parameters.second_stage_tables``). ``--stage-quiet-poll`` adds a third server per round, the stage
on with its backfill's idle poll (a scan of every document, every 2 s while caught up) patched to
once an hour: a diagnostic of what that poll costs the searches beside it. Builds: 100k about 1.5 min, 1M about 6-10 min, then the fill
(100k: about 30 s, 260 MiB).

``--profile`` prints where a request's CPU goes, step by step, for keyword and hybrid search
(``_phase_profile.py``, in this process); ``--profile-keyword`` the keyword branch's cProfile.

    .venv/bin/python bench/bench_search_distinct.py [--sizes 100000 1000000] [--queries 200]
                                                    [--baseline-ref main] [--build-only] [--recall-only]
                                                    [--keyword-recall-only] [--profile] [--profile-keyword]
                                                    [--json PATH] [--postgres URL]
                                                    [--second-stage [--stage-rounds 3] [--stage-quiet-poll]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np

import _keyword_recall
import _phase_profile
import _vector_recall
from _figures import Baseline, Figure, Report, Target, percentile
from _pg_workspace import bench_database
from ai_search_server.demo import generate_demo_messages
from ai_search_server.retrieval.context import CONTEXT_RULE, CONTEXT_WINDOW
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.index_db import INDEX_SCHEMA_VERSION, KeywordScope
from ai_search_server.retrieval.pg_keyword import PgKeywordIndex
from ai_search_server.retrieval.stopwords import is_stopword
from ai_search_server.retrieval.terms import query_terms
from ai_search_server.store import ImportRow, open_store
from ai_search_server.store.base import Store
from bench_search import (
    BatchedImport,
    _ProbeEmbedder,
    bare_fts,
    finished_build,
    free_port,
    memory_probe,
    rss_mib,
)

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"
# The data set's format: bumped when the generator changes, so older sets are not reused.
DATA_FORMAT = 1
SEED = 20261201
SIZES = [100_000, 1_000_000]
VOCABULARY_WORDS = 40_000
# Zipf exponent of word frequencies (natural language is close to 1).
WORD_ZIPF_EXPONENT = 1.0
# Ranks are offset so the head is not one word in every message (Zipf-Mandelbrot's q).
WORD_ZIPF_OFFSET = 2.7
MIN_WORDS, MAX_WORDS = 6, 24
# Share of messages that are short stock replies (the texts that do repeat).
STOCK_REPLY_SHARE = 0.04
STOCK_REPLIES = ["thanks", "thanks!", "lgtm", "+1", "on it", "will do", "done", "ok", "ack", "nice"]
# Share of messages that are replies in a thread, and how far back a reply's thread may start (messages of the room).
THREAD_REPLY_SHARE = 0.3
THREAD_LOOKBACK = 30
# Rooms and people per million messages scale down with the size (at least the minimum).
ROOMS_PER_100K, MIN_ROOMS = 120, 40
USERS_PER_100K, MIN_USERS = 400, 100
ROOM_ZIPF_EXPONENT = 1.1
# A person's room count: 1 + (MAX - 1) * u^ROOMS_PER_USER_SKEW for uniform u (most in few, some in many).
MAX_ROOMS_PER_USER = 60
ROOMS_PER_USER_SKEW = 3
SEARCHER = "searcher"
SEARCHER_ROOM_SHARE = 1 / 3
VECTOR_DIMENSIONS = 384
VECTOR_BATCH = 5000
RESULTS = 10
QUERIES = 200
# Share of the queries made of common words (the rest: two words taken from a message).
COMMON_QUERY_SHARE = 0.25
# Common-word queries pick among these vocabulary ranks (the head minus stopwords).
COMMON_RANKS = 60
WARMUP_QUERIES = 10
CONCURRENCY = 8
SERVER_START_SECONDS = 900
# The issue's targets: recall@10 of the semantic branch against exact search; memory without the
# model at 1M (MiB; the issue's 600 MB, read as MiB); ai.search hybrid p99 one at a time (ms).
RECALL_TARGET = 0.95
MEMORY_TARGET_MIB = 600
HYBRID_P99_TARGET_MS = {100_000: 50.0, 1_000_000: 150.0}


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def label(size: int) -> str:
    return f"{size // 1_000_000}M" if size >= 1_000_000 else f"{size // 1000}k"


# -- the data set ------------------------------------------------------------------------------------


def vocabulary(rng: random.Random) -> list[str]:
    """`VOCABULARY_WORDS` words, most frequent first: the demo's real words spread among generated ones."""
    real: dict[str, None] = {}
    for row in generate_demo_messages():
        for word in str(row["text"]).lower().split():
            word = word.strip(".,:;!?()\"'")
            if word.isalpha() and len(word) > 1:
                real[word] = None
    onsets = [
        "b",
        "br",
        "d",
        "f",
        "g",
        "gr",
        "k",
        "kl",
        "l",
        "m",
        "n",
        "p",
        "pl",
        "r",
        "s",
        "st",
        "t",
        "tr",
        "v",
        "z",
    ]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou"]
    codas = ["", "n", "r", "s", "l", "t", "nd", "x"]
    made: dict[str, None] = {}
    while len(real) + len(made) < VOCABULARY_WORDS:
        syllables = rng.randint(2, 3)
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(syllables)) + rng.choice(codas)
        if word not in real:
            made[word] = None
    real_words, made_words = list(real), list(made)
    rng.shuffle(real_words)
    rng.shuffle(made_words)
    # Real and generated words alternate down the ranks until the real ones run out.
    ordered = [w for pair in zip(real_words, made_words, strict=False) for w in pair]
    ordered += made_words[len(real_words) :]
    # Stopwords are the most frequent words of real chat: they lead, as they would.
    head = [w for w in ordered if is_stopword(w)]
    return head + [w for w in ordered if not is_stopword(w)]


def zipf_cumulative(n: int, exponent: float, offset: float = 0.0) -> np.ndarray:
    weights = 1.0 / (np.arange(n, dtype=np.float64) + 1 + offset) ** exponent
    cumulative: np.ndarray = np.cumsum(weights) / weights.sum()
    return cumulative


@dataclass(frozen=True)
class Shape:
    rooms: int
    users: int


def shape(size: int) -> Shape:
    return Shape(
        rooms=max(MIN_ROOMS, ROOMS_PER_100K * size // 100_000 // 3 if size > 100_000 else ROOMS_PER_100K),
        users=max(MIN_USERS, USERS_PER_100K * size // 100_000 // 3 if size > 100_000 else USERS_PER_100K),
    )


def data_dir(size: int) -> Path:
    return OUT / f"search-distinct-v{DATA_FORMAT}-{size}"


def memberships(rng: random.Random, rooms: list[str], users: list[str]) -> dict[str, tuple[str, ...]]:
    members: dict[str, set[str]] = {room: set() for room in rooms}
    for user in users:
        count = 1 + int((min(MAX_ROOMS_PER_USER, len(rooms)) - 1) * rng.random() ** ROOMS_PER_USER_SKEW)
        for room in rng.sample(rooms, count):
            members[room].add(user)
    for room in rng.sample(rooms, round(len(rooms) * SEARCHER_ROOM_SHARE)):
        members[room].add(SEARCHER)
    for room in rooms:
        if not members[room]:
            members[room].add(rng.choice(users))
    return {room: tuple(sorted(names)) for room, names in members.items()}


def import_messages(
    directory: Path, size: int, *, into: Store | None = None, layout: Shape | None = None
) -> dict[str, Any]:
    """Generate and import `size` messages; returns what the queries and the vectors need.

    ``into``: the store to import into (bench_scaleout.py's PostgreSQL; left open) instead of
    `directory`'s SQLite; ``layout``: rooms and people instead of `shape(size)`'s.
    """
    rng = random.Random(SEED + size)
    nprng = np.random.default_rng(SEED + size)
    words = vocabulary(rng)
    room_count, user_count = (layout or shape(size)).rooms, (layout or shape(size)).users
    rooms = [f"room-{n:03d}" for n in range(room_count)]
    users = [f"user{n:03d}" for n in range(user_count)]
    members = memberships(rng, rooms, users)
    authors = {room: [u for u in names if u != SEARCHER] or list(names) for room, names in members.items()}
    kinds = {room: "p" if n % 5 == 0 else "c" for n, room in enumerate(rooms)}
    room_of = np.searchsorted(zipf_cumulative(room_count, ROOM_ZIPF_EXPONENT), nprng.random(size))
    lengths = nprng.integers(MIN_WORDS, MAX_WORDS + 1, size)
    word_ids = np.searchsorted(
        zipf_cumulative(len(words), WORD_ZIPF_EXPONENT, WORD_ZIPF_OFFSET), nprng.random(int(lengths.sum()))
    )
    word_ids = np.minimum(word_ids, len(words) - 1)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    step_ms = max(1, 365 * 86_400_000 // size)
    recent_roots: dict[str, list[str]] = {room: [] for room in rooms}
    last_ts: dict[str, int] = {}
    with_context: list[bool] = []  # per message, in order: has earlier conversation (a context vector)
    samples: list[tuple[str, list[str]]] = []  # (room, words) of some messages, for queries
    texts: set[str] = set()
    store = into if into is not None else open_store(directory)
    cursor = 0
    try:
        rows = BatchedImport(store, size, report_every=40)
        for n in range(size):
            room = rooms[int(room_of[n])]
            ts_ms = n * step_ms
            length = int(lengths[n])
            if rng.random() < STOCK_REPLY_SHARE:
                text = rng.choice(STOCK_REPLIES)
            else:
                chosen = [words[i] for i in word_ids[cursor : cursor + length]]
                chosen[0] = chosen[0].capitalize()
                text = " ".join(chosen) + rng.choice([".", "", "", "?", "!"])
                if n % 97 == 0:
                    samples.append((room, [w.lower() for w in chosen]))
            cursor += length
            texts.add(text)
            tmid = None
            roots = recent_roots[room]
            if roots and rng.random() < THREAD_REPLY_SHARE:
                tmid = rng.choice(roots)
            else:
                roots.append(f"m-{n}")
                del roots[:-THREAD_LOOKBACK]
            previous = last_ts.get(room)
            with_context.append(
                tmid is not None
                or (previous is not None and ts_ms - previous <= CONTEXT_WINDOW.total_seconds() * 1000)
            )
            last_ts[room] = ts_ms
            rows.add(
                ImportRow(
                    room,
                    kinds[room],  # type: ignore[arg-type]
                    rng.choice(authors[room]),
                    start + timedelta(milliseconds=ts_ms),
                    text,
                    f"m-{n}",
                    members=members[room],
                    tmid=tmid,
                )
            )
        rows.finish()
    finally:
        if into is None:
            store.close()
    readable = sorted(room for room, names in members.items() if SEARCHER in names)
    common = [w for w in words[: COMMON_RANKS * 3] if not is_stopword(w)][:COMMON_RANKS]
    counts = np.bincount(room_of, minlength=room_count)
    return {
        "distinct_texts": len(texts),
        "rooms": room_count,
        "users": user_count,
        "searcher_rooms": len(readable),
        "searcher_messages": int(sum(counts[rooms.index(r)] for r in readable)),
        "largest_room_messages": int(counts.max()),
        "smallest_room_messages": int(counts.min()),
        "samples": [words for room, words in samples if room in set(readable)],
        "common_words": common,
        "with_context": with_context,
    }


def served_vector_model() -> str:
    """The vector model id the server will look for: its default local embedder's, with the context rule."""
    from ai_search_server.retrieval.local_embedder import load_local_embedder

    return f"{load_local_embedder().model_id}+{CONTEXT_RULE}"


def store_random_vectors(index_path: Path, with_context: list[bool], model: str) -> None:
    """A random unit float16 vector per document (and a context vector where the real index makes one)."""
    rng = np.random.default_rng(SEED)
    conn = sqlite3.connect(index_path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    order = {f"m-{n}": n for n in range(len(with_context))}
    rows = conn.execute("SELECT rowid, msg_id FROM docs").fetchall()
    for start in range(0, len(rows), VECTOR_BATCH):
        chunk = rows[start : start + VECTOR_BATCH]
        vectors = rng.standard_normal((2 * len(chunk), VECTOR_DIMENSIONS)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        blobs = vectors.astype("<f2")
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT OR REPLACE INTO doc_vectors (rowid, vector, context) VALUES (?, ?, ?)",
            [
                (
                    rowid,
                    blobs[2 * i].tobytes(),
                    blobs[2 * i + 1].tobytes() if with_context[order[msg_id]] else None,
                )
                for i, (rowid, msg_id) in enumerate(chunk)
            ],
        )
        conn.executemany(
            "UPDATE docs SET vector_model = ? WHERE rowid = ?", [(model, rowid) for rowid, _ in chunk]
        )
        conn.execute("COMMIT")
    conn.close()


def build(size: int) -> dict[str, Any]:
    """The data set for `size`, built from scratch unless a finished one is there; its build figures."""
    directory = data_dir(size)
    figures_path = directory / "build.json"
    finished = finished_build(directory)
    if finished is not None:
        return finished
    say(f"building {directory}: {size:,} messages")
    started = time.perf_counter()
    generated = import_messages(directory, size)
    import_seconds = time.perf_counter() - started
    say(f"  imported in {import_seconds:.0f} s; keyword indexing")
    store = open_store(directory)
    try:
        started = time.perf_counter()
        EmbeddedIndex.open(directory / INDEX_FILENAME, store, None, progress=True).close()
        keyword_seconds = time.perf_counter() - started
    finally:
        store.close()
    say(f"  keyword index in {keyword_seconds:.0f} s; storing random vectors")
    started = time.perf_counter()
    with_context = generated.pop("with_context")
    store_random_vectors(directory / INDEX_FILENAME, with_context, served_vector_model())
    vector_seconds = time.perf_counter() - started
    figures = {
        "format": DATA_FORMAT,
        "messages": size,
        **generated,
        "distinct_share": generated["distinct_texts"] / size,
        "context_vectors": sum(with_context),
        "import_seconds": import_seconds,
        "keyword_seconds": keyword_seconds,
        "vector_seconds": vector_seconds,
        "build_seconds": import_seconds + keyword_seconds + vector_seconds,
        "keyword_messages_per_second": size / keyword_seconds,
        "load_average": os.getloadavg()[0],
    }
    figures_path.write_text(json.dumps(figures))
    say(f"  built in {figures['build_seconds'] / 60:.1f} min")
    return figures


def index_layout(directory: Path) -> int:
    """The layout (``PRAGMA user_version``) of the data set's index file."""
    conn = sqlite3.connect(directory / INDEX_FILENAME)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def code_layout(python_path: Path | None) -> int:
    """The index layout a tree's code writes: this one's, or (`python_path`) another's, asked in a child."""
    if python_path is None:
        return INDEX_SCHEMA_VERSION
    env = {**os.environ, "PYTHONPATH": str(python_path)}
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ai_search_server.retrieval.index_db import INDEX_SCHEMA_VERSION as v; print(v)",
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return int(found.stdout)


def working_dir(directory: Path, layout: int) -> Path:
    """The data set as code writing index `layout` may open it.

    A newer code migrates an older index file in place, and an older code drops a newer file and
    rebuilds it from the store (embedding a million texts with the real model: hours). So each
    layout gets its own copy of the built set, made once (``<dir>-layout<N>/``) and migrated by the
    first process of that code that opens it; an older layout than the build's cannot be measured.
    """
    built = index_layout(directory)
    if layout == built:
        return directory
    if layout < built:
        raise SystemExit(
            f"{directory.name} holds index layout {built}; code of layout {layout} would drop it and "
            "re-embed every message: build the data set with that code first"
        )
    work = directory.with_name(f"{directory.name}-layout{layout}")
    if not (work / "build.json").exists():
        say(f"  copying {directory.name} for index layout {layout} (migrated when first opened)")
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(directory, work, ignore=shutil.ignore_patterns("build.json"))
        shutil.copy2(directory / "build.json", work / "build.json")  # last: the copy is whole
    return work


def stored_vector_model(directory: Path) -> str:
    """The embedder model the data set's vectors name (without the context rule), read from the index."""
    conn = sqlite3.connect(directory / INDEX_FILENAME)
    try:
        row = conn.execute("SELECT vector_model FROM docs WHERE vector_model IS NOT NULL LIMIT 1").fetchone()
    finally:
        conn.close()
    return str(row[0]).removesuffix(f"+{CONTEXT_RULE}")


def make_queries(built: dict[str, Any], count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    queries = []
    for _ in range(count):
        if rng.random() < COMMON_QUERY_SHARE:
            queries.append(" ".join(rng.sample(built["common_words"], rng.choice([1, 2]))))
            continue
        words = [w.strip(".?!") for w in rng.choice(built["samples"])]
        content = [w for w in words if not is_stopword(w)] or words
        queries.append(" ".join(rng.sample(content, min(2, len(content)))))
    return queries


# -- measuring ---------------------------------------------------------------------------------------


def start_server(
    directory: Path, python_path: Path | None, extra_env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """bench_search.py's server process on `directory`; with `python_path`, that tree's py/ first;
    `extra_env` on top of this process's environment (``AI_SEARCH_SECOND_STAGE``)."""
    port = free_port()
    env = {**os.environ, **(extra_env or {})}
    if python_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(python_path), env.get("PYTHONPATH")]))
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "bench_search.py"), "--serve", str(directory), str(port)], env=env
    )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with status {process.returncode}")
        try:
            httpx.get(f"{base_url}/openapi.json", timeout=1)
            return process, base_url
        except httpx.TransportError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit("the server did not start")


async def measure_http(
    base_url: str, headers: dict[str, str], queries: list[str], search_type: str, concurrency: int
) -> list[float]:
    timings: list[float] = []
    pending = list(enumerate(queries))

    async def worker(client: httpx.AsyncClient) -> None:
        while pending:
            n, query = pending.pop(0)
            started = time.perf_counter()
            response = await client.get(
                "/api/v1/ai.search",
                params={"query": query, "intelligentCount": RESULTS, "searchType": search_type},
            )
            elapsed = time.perf_counter() - started
            response.raise_for_status()
            if n >= WARMUP_QUERIES:
                timings.append(elapsed)

    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=120, limits=limits) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
    return timings


def credentials(directory: Path) -> dict[str, str]:
    store = open_store(directory)
    try:
        user = store.get_user_by_username(SEARCHER)
        assert user is not None
        _token, plain = store.create_token(user.id, "session", label=f"bench-{time.time_ns()}")
        return {"X-User-Id": user.id, "X-Auth-Token": plain}
    finally:
        store.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process (all its threads) has used so far, from /proc (seconds)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_code(directory: Path, queries: list[str], python_path: Path | None) -> dict[str, Any]:
    """One server on the data set: keyword and hybrid, 1 and `CONCURRENCY` at a time; RSS after."""
    headers = credentials(directory)
    process, base_url = start_server(directory, python_path)
    figures: dict[str, Any] = {}
    try:
        warm = queries[:WARMUP_QUERIES]
        for search_type in ("keyword", "hybrid"):
            for concurrency in (1, CONCURRENCY):
                cpu_before = cpu_seconds(process.pid)
                timings = asyncio.run(
                    measure_http(base_url, headers, warm + queries, search_type, concurrency)
                )
                figures[f"{search_type}-{concurrency}"] = timings
                # The server's own CPU per request: what the other processes' load does not inflate.
                cpu = (cpu_seconds(process.pid) - cpu_before) / (len(warm) + len(queries))
                figures[f"{search_type}-{concurrency}-cpu"] = cpu
                say(
                    f"    {search_type:7} x{concurrency}: p50 {percentile(timings, 0.5) * 1000:7.1f} ms"
                    f"  p99 {percentile(timings, 0.99) * 1000:7.1f} ms  server CPU {cpu * 1000:5.1f} ms/request"
                    f"  (load {os.getloadavg()[0]:.1f})"
                )
        figures["rss_mib"] = rss_mib(process.pid)
    finally:
        process.terminate()
        process.wait()
    return figures


def profile_phases(size: int, queries_count: int) -> None:
    """Where a request's CPU goes, per phase, keyword and hybrid, in this process (what `--profile` prints)."""
    built = build(size)
    directory = working_dir(data_dir(size), code_layout(None))
    queries = make_queries(built, queries_count, SEED + size)
    headers = credentials(directory)
    warm = queries[:WARMUP_QUERIES]
    for search_type in ("keyword", "hybrid"):
        figures = _phase_profile.profile_requests(
            directory, headers, warm + queries, search_type, results=RESULTS, warmup=len(warm)
        )
        _phase_profile.print_profile(figures, f"{label(size)} {search_type}, load {os.getloadavg()[0]:.1f}")


def profile(size: int, queries_count: int) -> None:
    """cProfile of the keyword branch in this process, one query at a time (what `--profile-keyword` prints)."""
    import cProfile
    import pstats

    from ai_search_server.retrieval.index_db import KeywordScope

    built = build(size)
    directory = working_dir(data_dir(size), code_layout(None))
    queries = make_queries(built, queries_count, SEED + size)
    store = open_store(directory)
    index = EmbeddedIndex.open(directory / INDEX_FILENAME, store, None)
    try:
        user = store.get_user_by_username(SEARCHER)
        assert user is not None
        scope = KeywordScope(sorted(store.readable_room_ids(user.id)))
        timings = []
        profiler = cProfile.Profile()
        for query in queries:
            started = time.perf_counter()
            profiler.enable()
            index.keyword_search(query_terms(query), scope, RESULTS * 3)  # the candidates ai.search asks for
            profiler.disable()
            timings.append((time.perf_counter() - started, query))
        timings.sort()
        print(
            f"keyword branch in-process at {label(size)}: p50 {percentile([t for t, _ in timings], 0.5) * 1000:.1f} ms,"
            f" p99 {percentile([t for t, _ in timings], 0.99) * 1000:.1f} ms; slowest: "
            + "; ".join(f"{q!r} {t * 1000:.0f} ms" for t, q in timings[-5:])
        )
        pstats.Stats(profiler).sort_stats("tottime").print_stats(12)
    finally:
        index.close()
        store.close()


def code_of(ref: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(ROOT.parent), "archive", ref, "py"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "py"


def searcher_rooms(directory: Path) -> list[str]:
    store = open_store(directory)
    try:
        user = store.get_user_by_username(SEARCHER)
        assert user is not None
        return sorted(store.readable_room_ids(user.id))
    finally:
        store.close()


def run_recall(size: int, report: Report) -> None:
    """Recall@10 against exact search per scope, and the vector index's open times (in-process)."""
    build(size)
    directory = working_dir(data_dir(size), code_layout(None))
    name = label(size)
    model = stored_vector_model(directory)
    say(f"== {name}: recall of the semantic branch against exact search")
    figures = _vector_recall.measure(
        directory,
        f"{model}+{CONTEXT_RULE}",
        VECTOR_DIMENSIONS,
        searcher_rooms(directory),
        _ProbeEmbedder(model),
        say,
    )
    for scope in figures["scopes"]:
        report.add(
            Figure(
                f"distinct {name}: semantic recall@10 against exact, {scope['scope']}",
                "",
                [scope["recall"]],
                target=Target(">=", RECALL_TARGET),
                better="higher",
                note=f"{_vector_recall.RECALL_QUERIES} random unit queries over random unit vectors (the hardest case)",
            )
        )
        report.add(
            Figure(
                f"distinct {name}: semantic branch CPU per search, {scope['scope']}",
                "ms",
                [scope["cpu_ms"]],
                baseline=Baseline("exact float32 numpy scan", [scope["exact_cpu_ms"]]),
                note="quantised scan of the scope + exact re-scoring from index.db; process CPU, median",
            )
        )
    report.add(
        Figure(f"distinct {name}: vector index rebuilt from index.db", "s", [figures["rebuild_seconds"]])
    )
    report.add(
        Figure(f"distinct {name}: vector index opened from its snapshot", "s", [figures["snapshot_seconds"]])
    )


def run_keyword_recall(size: int, queries_count: int, report: Report) -> None:
    """Recall@10 of the keyword branch against its exhaustive ranking, on the bench's queries (in-process)."""
    built = build(size)
    directory = working_dir(data_dir(size), code_layout(None))
    name = label(size)
    say(f"== {name}: recall of the keyword branch against its exhaustive ranking")
    figures = _keyword_recall.measure(
        directory, SEARCHER, make_queries(built, queries_count, SEED + size), say
    )
    report.add(
        Figure(
            f"distinct {name}: keyword recall@10 against the exhaustive ranking",
            "",
            [figures["recall"]],
            better="higher",
            note=f"{figures['queries']} bench queries, {len(figures['missed'])} below 1; every match in scope"
            " ranked by coverage then BM25, both cut by the keyword floor",
        )
    )
    report.add(
        Figure(
            f"distinct {name}: keyword branch CPU per search, in-process",
            "ms",
            [figures["bounded_cpu_ms"]],
            baseline=Baseline("every match in scope ranked", [figures["exhaustive_cpu_ms"]]),
            note=f"mean; p99 {figures['bounded_cpu_p99_ms']:.1f} ms (every match ranked: "
            f"{figures['exhaustive_cpu_p99_ms']:.1f} ms)",
        )
    )


def run_size(size: int, queries_count: int, baseline_ref: str | None, report: Report) -> None:
    directory = data_dir(size)
    built = build(size)
    name = label(size)
    run_recall(size, report)
    run_keyword_recall(size, queries_count, report)
    queries = make_queries(built, queries_count, SEED + size)
    say(
        f"== {name}: {built['distinct_share']:.1%} distinct texts, {built['rooms']} rooms "
        f"({built['smallest_room_messages']:,}-{built['largest_room_messages']:,} messages), the searcher reads "
        f"{built['searcher_rooms']} ({built['searcher_messages']:,} messages); build {built['build_seconds'] / 60:.1f} min"
    )
    fts = bare_fts(directory, queries)
    say(f"  bare FTS5: p50 {percentile(fts, 0.5) * 1000:.1f} ms  p99 {percentile(fts, 0.99) * 1000:.1f} ms")
    ours_dir = working_dir(directory, code_layout(None))
    memory, probe = memory_probe(ours_dir, stored_vector_model(directory))
    say("  this code:")
    ours = measure_code(ours_dir, queries, None)
    theirs = None
    if baseline_ref:
        say(f"  {baseline_ref}'s code:")
        with tempfile.TemporaryDirectory() as tmp:
            code = code_of(baseline_ref, Path(tmp))
            theirs = measure_code(working_dir(directory, code_layout(code)), queries, code)
    for key, what in (
        ("keyword-1", "keyword"),
        ("hybrid-1", "hybrid"),
        (f"keyword-{CONCURRENCY}", f"keyword, {CONCURRENCY} concurrent"),
        (f"hybrid-{CONCURRENCY}", f"hybrid, {CONCURRENCY} concurrent"),
    ):
        for share, tag in ((0.5, "p50"), (0.99, "p99")):
            target = HYBRID_P99_TARGET_MS.get(size) if key == "hybrid-1" and tag == "p99" else None
            report.add(
                Figure(
                    f"distinct {name}: ai.search {what} {tag}",
                    "ms",
                    [percentile(ours[key], share) * 1000],
                    baseline=Baseline(f"{baseline_ref}'s code", [percentile(theirs[key], share) * 1000])
                    if theirs
                    else None,
                    target=Target("<=", target) if target else None,
                )
            )
        report.add(
            Figure(
                f"distinct {name}: server CPU per request, {what}",
                "ms",
                [ours[f"{key}-cpu"] * 1000],
                baseline=Baseline(f"{baseline_ref}'s code", [theirs[f"{key}-cpu"] * 1000])
                if theirs
                else None,
                note="user + system time of the server process over the run, per request",
            )
        )
    report.add(Figure(f"distinct {name}: bare FTS5 p50", "ms", [percentile(fts, 0.5) * 1000]))
    report.add(Figure(f"distinct {name}: bare FTS5 p99", "ms", [percentile(fts, 0.99) * 1000]))
    report.add(
        Figure(
            f"distinct {name}: RSS without the model",
            "MiB",
            [memory],
            target=Target("<=", MEMORY_TARGET_MIB) if size >= 1_000_000 else None,
            note=f"{probe['distinct_vectors']:,} distinct vectors, {probe['vector_mib']:.0f} MiB of arrays",
        )
    )
    report.add(Figure(f"distinct {name}: RSS of the server with the model", "MiB", [ours["rss_mib"]]))
    report.add(
        Figure(
            f"distinct {name}: build",
            "s",
            [built["build_seconds"]],
            note=f"import {built['import_seconds']:.0f} s, keyword index {built['keyword_seconds']:.0f} s, "
            f"vectors {built['vector_seconds']:.0f} s (load average {built['load_average']:.1f})",
        )
    )
    print(
        f"\n== {size:,} messages, {built['distinct_share']:.1%} distinct; searcher reads {built['searcher_rooms']} of "
        f"{built['rooms']} rooms ({built['searcher_messages']:,} messages); {len(queries)} queries; load {os.getloadavg()[0]:.1f}"
    )
    header = f"{'':28}{'p50 ms':>9}{'p99 ms':>9}{'CPU ms':>9}" + (
        f"{f'{baseline_ref} p50':>14}{'p99':>9}{'CPU':>9}" if theirs else ""
    )
    print(header)
    for key in ("keyword-1", "hybrid-1", f"keyword-{CONCURRENCY}", f"hybrid-{CONCURRENCY}"):
        line = f"ai.search {key:18}" + _row(ours, key)
        if theirs:
            line += "     " + _row(theirs, key)
        print(line)
    print(f"{'bare FTS5 (no scope)':28}{percentile(fts, 0.5) * 1000:9.1f}{percentile(fts, 0.99) * 1000:9.1f}")
    print(
        f"RSS without the model {memory:.0f} MiB; server with the model {ours['rss_mib']:.0f} MiB"
        + (f" ({baseline_ref}: {theirs['rss_mib']:.0f} MiB)" if theirs else "")
    )
    print(
        f"build {built['build_seconds'] / 60:.1f} min (import {built['import_seconds']:.0f} s, keyword "
        f"{built['keyword_seconds']:.0f} s = {built['keyword_messages_per_second']:,.0f} msg/s, vectors {built['vector_seconds']:.0f} s)"
    )


def postgres_copy(size: int, server_url: str) -> tuple[str, dict[str, Any]]:
    """The size's messages in a PostgreSQL database of their own and its ``message_terms``, built
    once (figures in ``build-postgres.json`` beside the SQLite set)."""
    url = bench_database(server_url, f"distinct_{size}")
    directory = data_dir(size)
    figures_path = directory / "build-postgres.json"
    if figures_path.exists():
        return url, dict(json.loads(figures_path.read_text()))
    store = open_store(directory / "pg", database_url=url)
    try:
        if store.count_messages() != 0:
            raise SystemExit(f"{url} holds a half-built copy; drop the database and run again")
    finally:
        store.close()
    say(f"importing {size:,} messages into PostgreSQL")
    started = time.perf_counter()
    store = open_store(directory / "pg", database_url=url)
    try:
        import_messages(directory / "pg", size, into=store)
        import_seconds = time.perf_counter() - started
        started = time.perf_counter()
        PgKeywordIndex.open(url, store, progress=True, follow=False).close()
        keyword_seconds = time.perf_counter() - started
    finally:
        store.close()
    figures = {
        "import_seconds": import_seconds,
        "keyword_seconds": keyword_seconds,
        "keyword_messages_per_second": size / keyword_seconds,
        "load_average": os.getloadavg()[0],
    }
    figures_path.write_text(json.dumps(figures))
    return url, figures


def _database_cpu_seconds(url: str) -> float:
    """CPU seconds used so far by the server processes serving ``url``'s database (this machine's
    PostgreSQL only; 0 when /proc cannot show them)."""
    import psycopg

    with psycopg.connect(url) as conn:
        pids = [
            int(r[0])
            for r in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
        ]
        mine = conn.execute("SELECT pg_backend_pid()").fetchone()
    total = 0.0
    for pid in pids:
        if mine is not None and pid == mine[0]:
            continue
        try:
            total += cpu_seconds(pid)
        except OSError:
            continue
    return total


def _time_queries(search: Any, queries: list[str], threads: int) -> tuple[list[float], float]:
    """Wall seconds of each query and this process's CPU seconds per query, `threads` at once."""
    from concurrent.futures import ThreadPoolExecutor

    def one(query: str) -> float:
        started = time.perf_counter()
        search(query)
        return time.perf_counter() - started

    for query in queries[:WARMUP_QUERIES]:
        search(query)
    cpu = time.process_time()
    with ThreadPoolExecutor(threads) as pool:
        timings = list(pool.map(one, queries))
    return timings, (time.process_time() - cpu) / len(queries)


def run_postgres(size: int, queries_count: int, server_url: str, report: Report) -> None:
    """The keyword branch on FTS5 and on PostgreSQL, the same queries over the same messages."""
    directory = data_dir(size)
    built = build(size)
    url, pg_built = postgres_copy(size, server_url)
    queries = make_queries(built, queries_count, SEED + size)
    name = label(size)
    fts_dir = working_dir(directory, code_layout(None))  # this code's index layout
    sqlite_store = open_store(fts_dir)
    pg_store = open_store(directory / "pg", database_url=url)
    fts = EmbeddedIndex.open(fts_dir / INDEX_FILENAME, sqlite_store, None)
    pg = PgKeywordIndex.open(url, pg_store)
    try:
        scopes = []
        for store in (sqlite_store, pg_store):
            user = store.get_user_by_username(SEARCHER)
            assert user is not None
            scopes.append(KeywordScope(sorted(store.readable_room_ids(user.id))))
        k = RESULTS * 3  # the candidates ai.search asks a branch for
        branches = {
            "FTS5": lambda q: fts.keyword_search(query_terms(q), scopes[0], k),
            "PostgreSQL": lambda q: pg.keyword_search(query_terms(q), scopes[1], k),
        }
        overlap = []
        for query in queries:
            expected = {h.msg_id for h in branches["FTS5"](query)}
            if expected:
                overlap.append(
                    len(expected & {h.msg_id for h in branches["PostgreSQL"](query)}) / len(expected)
                )
        print(
            f"\n== keyword branch at {size:,} messages, {len(queries)} queries ({built['searcher_messages']:,} "
            f"messages in the searcher's rooms); load {os.getloadavg()[0]:.1f}"
        )
        print(f"{'':30}{'p50 ms':>9}{'p99 ms':>9}{'CPU ms':>9}{'+ PG CPU ms':>12}")
        for threads in (1, CONCURRENCY):
            for branch, search in branches.items():
                server_cpu = _database_cpu_seconds(url) if branch == "PostgreSQL" else 0.0
                timings, cpu = _time_queries(search, queries, threads)
                if branch == "PostgreSQL":
                    server_cpu = (_database_cpu_seconds(url) - server_cpu) / (len(queries) + WARMUP_QUERIES)
                    report.add(
                        Figure(
                            f"distinct {name}: keyword branch on PostgreSQL, server CPU per query",
                            "ms",
                            [server_cpu * 1000],
                        )
                    )
                what = f"{branch}, {'one at a time' if threads == 1 else f'{threads} threads'}"
                print(
                    f"{what:30}{percentile(timings, 0.5) * 1000:9.1f}{percentile(timings, 0.99) * 1000:9.1f}"
                    f"{cpu * 1000:9.1f}{server_cpu * 1000:12.1f}"
                )
                for share, tag in ((0.5, "p50"), (0.99, "p99")):
                    report.add(
                        Figure(
                            f"distinct {name}: keyword branch {what} {tag}",
                            "ms",
                            [percentile(timings, share) * 1000],
                        )
                    )
                report.add(
                    Figure(
                        f"distinct {name}: keyword branch {what}, CPU of this process per query",
                        "ms",
                        [cpu * 1000],
                    )
                )
        share = sum(overlap) / len(overlap) if overlap else 0.0
        print(
            f"PostgreSQL returns {share:.1%} of FTS5's top {k} (mean over {len(overlap)} queries with hits)"
        )
        print(
            f"PostgreSQL copy: import {pg_built['import_seconds']:.0f} s, message_terms {pg_built['keyword_seconds']:.0f} s "
            f"= {pg_built['keyword_messages_per_second']:,.0f} msg/s (FTS5: {built['keyword_seconds']:.0f} s = "
            f"{built['keyword_messages_per_second']:,.0f} msg/s)"
        )
        report.add(
            Figure(
                f"distinct {name}: PostgreSQL's share of FTS5's top {k}", "share", [share], better="higher"
            )
        )
        report.add(
            Figure(
                f"distinct {name}: message_terms build",
                "s",
                [pg_built["keyword_seconds"]],
                baseline=Baseline("FTS5 index", [built["keyword_seconds"]]),
                note=f"load average {pg_built['load_average']:.1f} (FTS5's: {built['load_average']:.1f})",
            )
        )
    finally:
        pg.close()
        fts.close()
        pg_store.close()
        sqlite_store.close()


def _row(figures: dict[str, Any], key: str) -> str:
    timings = figures[key]
    return (
        f"{percentile(timings, 0.5) * 1000:9.1f}{percentile(timings, 0.99) * 1000:9.1f}"
        f"{figures[f'{key}-cpu'] * 1000:9.1f}"
    )


# -- the second stage's cost (--second-stage) --------------------------------------------------------

# Random unit vectors of the second stage's width, stored as its backfill would (local.quantise).
STAGE_VECTOR_DIMENSIONS = 768
# Rows per transaction while filling stage-vectors.db.
STAGE_FILL_BATCH = 50_000
# Rounds of (off, local), each mode a fresh server per round, the order alternating: medians across rounds.
STAGE_ROUNDS = 3
# Queries measured per server, every one distinct (the stage caches QUERY_CACHE_ENTRIES query vectors).
STAGE_QUERIES = 200
# The issue's target: what the stage adds to ai.search hybrid p95, one at a time (ms).
STAGE_ADDED_P95_TARGET_MS = {100_000: 30.0}
# Candidates the in-process breakdown hands LocalStage.score_now (the server's default stage_candidates).
STAGE_BREAKDOWN_CANDIDATES = 50
# Before measuring, each server gets up to this long to finish its start-up work (seconds), judged
# over windows of STAGE_IDLE_WINDOW_SECONDS with no request in flight.
STAGE_SETTLE_SECONDS = 30.0
STAGE_IDLE_WINDOW_SECONDS = 5.0
# The servers' environments: the stage off, on, and (diagnostic, --stage-quiet-poll) on with the
# backfill's idle poll once an hour instead of every BACKFILL_IDLE_SECONDS (bench_search.py's server
# patches it): what the poll's full scan of the index costs the searches beside it.
STAGE_MODES = {
    "off": {"AI_SEARCH_SECOND_STAGE": "off"},
    "local": {"AI_SEARCH_SECOND_STAGE": "local"},
    "local-quiet": {"AI_SEARCH_SECOND_STAGE": "local", "BENCH_STAGE_IDLE_SECONDS": "3600"},
}
STAGE_MODE_NAMES = {
    "off": "off",
    "local": "local",
    "local-quiet": "local, idle poll hourly (diagnostic)",
}
STAGE_SYNTHETIC = (
    "the second stage's vectors are SYNTHETIC: random unit 768-d vectors (one for the message alone, a "
    "second for each message the first-stage index holds a conversation vector for), int8 as "
    "local.quantise stores them, under the served model's id and each message's index.db digest, so the "
    "server finds every message covered and its backfill has nothing to do; running all-mpnet-base-v2 "
    "over every message would take hours at this size on this CPU. The query IS embedded by the real "
    "model (int8 ONNX). This measures latency, never relevance."
)


def quantised_rows(vectors: np.ndarray) -> np.ndarray:
    """``local.quantise`` of each row, vectorised: (n, 4 + d) bytes, the float32 scale then int8 codes."""
    scale = np.abs(vectors).max(axis=1)
    scale[scale == 0] = 1.0
    codes = np.clip(np.rint(vectors / scale[:, None] * np.float32(127.0)), -127, 127).astype(np.int8)
    out = np.empty((len(vectors), 4 + vectors.shape[1]), dtype=np.uint8)
    out[:, :4] = scale.astype("<f4").view(np.uint8).reshape(-1, 4)
    out[:, 4:] = codes.view(np.uint8)
    return out


def fill_stage_vectors(directory: Path) -> dict[str, Any]:
    """``stage-vectors.db`` beside the data set's index with a synthetic, valid row for every document
    (made once per data set; figures in ``build-stage.json``). See `STAGE_SYNTHETIC`."""
    from ai_search_server.retrieval.mpnet import MPNET_INT8_MODEL_ID
    from ai_search_server.retrieval.second_stage.local import STAGE_VECTORS_FILENAME, StageVectors, quantise

    path = directory / STAGE_VECTORS_FILENAME
    index_path = directory / INDEX_FILENAME
    figures_path = directory / "build-stage.json"
    if figures_path.exists() and path.exists():
        figures = dict(json.loads(figures_path.read_text()))
        if figures.get("model") == MPNET_INT8_MODEL_ID:
            return figures
    figures_path.unlink(missing_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    say(f"  filling {path.name} with synthetic vectors (random unit, {STAGE_VECTOR_DIMENSIONS}-d, int8)")
    # The product's own schema and meta row (the model id the server checks at start).
    StageVectors(path, index_path, MPNET_INT8_MODEL_ID).close()
    started = time.perf_counter()
    index = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)
    try:
        documents = index.execute(
            "SELECT d.msg_id, d.digest, v.context IS NOT NULL FROM docs d"
            " LEFT JOIN doc_vectors v ON v.rowid = d.rowid ORDER BY d.msg_id"
        ).fetchall()
    finally:
        index.close()
    rng = np.random.default_rng(SEED + 768)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")
    context_count = 0
    try:
        for start in range(0, len(documents), STAGE_FILL_BATCH):
            chunk = documents[start : start + STAGE_FILL_BATCH]
            with_context = [bool(c) for _, _, c in chunk]
            vectors = rng.standard_normal((len(chunk) + sum(with_context), STAGE_VECTOR_DIMENSIONS)).astype(
                np.float32
            )
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            if start == 0:  # the same bytes as the product's quantise
                assert quantised_rows(vectors[:3]).tobytes() == b"".join(quantise(v) for v in vectors[:3])
            blobs = quantised_rows(vectors)
            rows = []
            extra = len(chunk)
            for i, (msg_id, digest, _) in enumerate(chunk):
                context = None
                if with_context[i]:
                    context = blobs[extra].tobytes()
                    extra += 1
                rows.append((msg_id, digest, blobs[i].tobytes(), context))
            context_count += sum(with_context)
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO vectors (msg_id, digest, alone, context) VALUES (?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    fill_seconds = time.perf_counter() - started
    check = StageVectors(path, index_path, MPNET_INT8_MODEL_ID)
    try:
        coverage = check.counts()
    finally:
        check.close()
    if coverage.scored != coverage.total or coverage.total != len(documents):
        raise SystemExit(f"{path}: {coverage.scored} of {coverage.total} rows valid after the fill")
    figures = {
        "model": MPNET_INT8_MODEL_ID,
        "messages": len(documents),
        "context_vectors": context_count,
        "fill_seconds": fill_seconds,
        "mib": path.stat().st_size / 2**20,
        "load_average": os.getloadavg()[0],
    }
    figures_path.write_text(json.dumps(figures))
    say(
        f"  {len(documents):,} rows ({context_count:,} with a context vector) in {fill_seconds:.0f} s, "
        f"{figures['mib']:.0f} MiB"
    )
    return figures


def distinct_queries(built: dict[str, Any], count: int, seed: int) -> list[str]:
    """`count` queries made as `make_queries` makes them, no two the same string."""
    seen: dict[str, None] = {}
    attempt = 0
    while len(seen) < count:
        for query in make_queries(built, count, seed + attempt):
            if query.strip():
                seen.setdefault(query, None)
        attempt += 1
        if attempt > 50:
            raise SystemExit(f"only {len(seen)} distinct queries")
    return list(seen)[:count]


def _stage_state(body: Any) -> str:
    """The response's ``meta.retrieval.secondStage`` as "kind/state", or "absent"."""
    retrieval = (body.get("meta") or {}).get("retrieval") or {} if isinstance(body, dict) else {}
    stage = retrieval.get("secondStage")
    return f"{stage.get('kind')}/{stage.get('state')}" if isinstance(stage, dict) else "absent"


def _stage_status(client: httpx.Client) -> dict[str, Any]:
    response = client.get("/api/v1/ai.search.status")
    response.raise_for_status()
    return dict(response.json())


def _timed_searches(client: httpx.Client, queries: list[str]) -> tuple[list[float], dict[str, int]]:
    """ai.search hybrid, one at a time: each request's wall seconds, and the stage states seen."""
    timings: list[float] = []
    states: dict[str, int] = {}
    for query in queries:
        started = time.perf_counter()
        response = client.get(
            "/api/v1/ai.search", params={"query": query, "intelligentCount": RESULTS, "searchType": "hybrid"}
        )
        timings.append(time.perf_counter() - started)
        response.raise_for_status()
        state = _stage_state(response.json())
        states[state] = states.get(state, 0) + 1
    return timings, states


def _settle(pid: int) -> float:
    """Wait until the server is idle (its start-up work done: the backfill's first poll of every
    document, seconds at 1M) or `STAGE_SETTLE_SECONDS` pass; returns its CPU share (of one core)
    over the last `STAGE_IDLE_WINDOW_SECONDS`, with no request in flight."""
    deadline = time.monotonic() + STAGE_SETTLE_SECONDS
    while True:
        before, started = cpu_seconds(pid), time.monotonic()
        time.sleep(STAGE_IDLE_WINDOW_SECONDS)
        share = (cpu_seconds(pid) - before) / (time.monotonic() - started)
        if share < 0.05 or time.monotonic() > deadline:
            return share


def measure_stage_mode(
    directory: Path, mode: str, warm: list[str], queries: list[str], cached: list[str]
) -> dict[str, Any]:
    """One server with ``second_stage = mode``: hybrid one at a time over `queries` (never asked of this
    server before: the stage embeds each), then `cached` (the last of them again: its vectors cached)."""
    headers = credentials(directory)
    process, base_url = start_server(directory, None, STAGE_MODES[mode])
    figures: dict[str, Any] = {"mode": mode}
    try:
        with httpx.Client(base_url=base_url, headers=headers, timeout=120) as client:
            figures["status_before"] = _stage_status(client).get("secondStage")
            _timed_searches(client, warm)
            figures["idle_cpu_share"] = _settle(process.pid)
            cpu_before = cpu_seconds(process.pid)
            figures["load_before"] = os.getloadavg()
            figures["uncached"], figures["states"] = _timed_searches(client, queries)
            figures["uncached_cpu"] = (cpu_seconds(process.pid) - cpu_before) / len(queries)
            cpu_before = cpu_seconds(process.pid)
            figures["cached"], cached_states = _timed_searches(client, cached)
            figures["cached_cpu"] = (cpu_seconds(process.pid) - cpu_before) / len(cached)
            figures["load_after"] = os.getloadavg()
            for state, n in cached_states.items():
                figures["states"][state] = figures["states"].get(state, 0) + n
            status = _stage_status(client)
            figures["status_after"] = status.get("secondStage")
            figures["pending_embeddings"] = (status.get("index") or {}).get("pendingEmbeddings")
        figures["rss_mib"] = rss_mib(process.pid)
    finally:
        process.terminate()
        process.wait()
    ms = {k: [t * 1000 for t in figures[k]] for k in ("uncached", "cached")}
    say(
        f"    {mode:5}: uncached p50 {percentile(ms['uncached'], 0.5):6.1f} p95 {percentile(ms['uncached'], 0.95):6.1f}"
        f" p99 {percentile(ms['uncached'], 0.99):6.1f} ms, CPU {figures['uncached_cpu'] * 1000:5.1f} ms/request;"
        f" cached p50 {percentile(ms['cached'], 0.5):6.1f} p95 {percentile(ms['cached'], 0.95):6.1f} ms;"
        f" stage {figures['states']}; idle CPU {figures['idle_cpu_share']:.0%} of a core;"
        f" status {figures['status_after']} (load {figures['load_after'][0]:.1f})"
    )
    return figures


def stage_breakdown(directory: Path, queries: list[str]) -> dict[str, list[float]]:
    """Where the stage's time goes, in this process (no server running): ``LocalStage.score_now`` on
    `STAGE_BREAKDOWN_CANDIDATES` random documents of the searcher's rooms per query, first with the
    query unseen then cached; the SQL lookup (``StageVectors.vectors``) and the query embedding alone;
    and the backfill's idle poll (``pending``) and the status count (``total``), which run while caught up."""
    from ai_search_server.retrieval.mpnet import MPNET_INT8_MODEL_ID, load_mpnet
    from ai_search_server.retrieval.second_stage import Passage
    from ai_search_server.retrieval.second_stage.local import STAGE_VECTORS_FILENAME, LocalStage, StageVectors

    rooms = searcher_rooms(directory)
    conn = sqlite3.connect(f"file:{directory / INDEX_FILENAME}?mode=ro", uri=True)
    try:
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT msg_id FROM docs WHERE rid IN (SELECT value FROM json_each(?))", (json.dumps(rooms),)
            )
        ]
    finally:
        conn.close()
    rng = random.Random(SEED + 50)
    model = load_mpnet(threads=1)
    assert model.model_id == MPNET_INT8_MODEL_ID, model.model_id
    vectors = StageVectors(directory / STAGE_VECTORS_FILENAME, directory / INDEX_FILENAME, model.model_id)
    store = open_store(directory)
    stage = LocalStage(model, vectors, store)
    out: dict[str, list[float]] = {k: [] for k in ("score_uncached", "score_cached", "sql", "embed", "dot")}
    try:
        for query in queries[:WARMUP_QUERIES]:
            model.embed([query])
        for query in queries[WARMUP_QUERIES:]:
            passages = [Passage(m, "") for m in rng.sample(ids, STAGE_BREAKDOWN_CANDIDATES)]
            started = time.perf_counter()
            scores = stage.score_now(query, passages)
            out["score_uncached"].append(time.perf_counter() - started)
            assert len(scores) == len(passages), (len(scores), len(passages))
            started = time.perf_counter()
            stage.score_now(query, passages)
            out["score_cached"].append(time.perf_counter() - started)
            started = time.perf_counter()
            held = vectors.vectors([p.id for p in passages])
            out["sql"].append(time.perf_counter() - started)
            started = time.perf_counter()
            q = model.embed([query])[0]
            out["embed"].append(time.perf_counter() - started)
            started = time.perf_counter()
            for alone, context in held.values():
                best = float(alone @ q)
                if context is not None:
                    best = max(best, float(context @ q))
            out["dot"].append(time.perf_counter() - started)
        out["pending_poll"], out["total_count"], out["rescan"] = [], [], []
        for _ in range(5):
            started = time.perf_counter()
            end = vectors.last_rowid()
            assert vectors.pending(32, end, end) == []
            out["pending_poll"].append(time.perf_counter() - started)
            started = time.perf_counter()
            assert vectors.pending(32, 0, end) == []
            out["rescan"].append(time.perf_counter() - started)
            started = time.perf_counter()
            vectors.total()
            out["total_count"].append(time.perf_counter() - started)
    finally:
        vectors.close()
        store.close()
    return out


def _ms(values: list[float], share: float) -> float:
    return percentile(values, share) * 1000


def run_second_stage(
    size: int, queries_count: int, rounds: int, report: Report, *, quiet_poll: bool = False
) -> None:
    """ai.search hybrid with the second stage off and local on the same data, same queries (see --second-stage)."""
    from ai_search_server.retrieval.second_stage.local import QUERY_CACHE_ENTRIES

    built = build(size)
    name = label(size)
    directory = working_dir(data_dir(size), code_layout(None))
    say(f"== {name}: the second stage's cost; {STAGE_SYNTHETIC}")
    filled = fill_stage_vectors(directory)
    everything = distinct_queries(built, WARMUP_QUERIES + queries_count, SEED + size + 2)
    warm, queries = everything[:WARMUP_QUERIES], everything[WARMUP_QUERIES:]
    # The last ones again: their vectors are still in the stage's cache (and the first stage's, if any).
    cached = queries[-min(len(queries), QUERY_CACHE_ENTRIES - WARMUP_QUERIES) :]
    modes = ["off", "local"] + (["local-quiet"] if quiet_poll else [])
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    for n in range(rounds):
        say(f"  round {n + 1} of {rounds}")
        shift = n % len(modes)
        for mode in modes[shift:] + modes[:shift]:  # the order turns round by round
            runs[mode].append(measure_stage_mode(directory, mode, warm, queries, cached))
    say("  in-process breakdown of LocalStage.score_now")
    breakdown = stage_breakdown(directory, warm + queries)
    load = os.getloadavg()

    def per_round(mode: str, kind: str, share: float) -> list[float]:
        return [_ms(r[kind], share) for r in runs[mode]]

    def median(values: list[float]) -> float:
        return float(np.median(values))

    shares = ((0.5, "p50"), (0.95, "p95"), (0.99, "p99"))
    lines = [
        f"ai.search hybrid, one request at a time, {name} messages ({built['searcher_messages']:,} in the "
        f"searcher's rooms); {len(queries)} distinct queries per server, {len(cached)} repeated; median of "
        f"{rounds} rounds (a fresh server per mode per round, order alternating); load average "
        + ", ".join(f"{r['load_before'][0]:.1f}" for mode in runs for r in runs[mode])
        + f" (1 min, at each run's start); {STAGE_SYNTHETIC}",
        "",
        "| second stage | query vector | p50 ms | p95 ms | p99 ms | server CPU ms/request | idle server CPU |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for kind, what in (("uncached", "embedded (new query)"), ("cached", "cached (repeated query)")):
        for mode in modes:
            cells = [median(per_round(mode, kind, share)) for share, _ in shares]
            cpu = median([r[f"{kind}_cpu"] * 1000 for r in runs[mode]])
            lines.append(
                f"| {STAGE_MODE_NAMES[mode]} | {what if mode != 'off' else '—'} | "
                + " | ".join(f"{c:.1f}" for c in cells)
                + f" | {cpu:.1f} | {median([r['idle_cpu_share'] for r in runs[mode]]):.0%} |"
            )
        for mode in modes[1:]:
            added = [
                median(
                    [a - b for a, b in zip(per_round(mode, kind, s), per_round("off", kind, s), strict=True)]
                )
                for s, _ in shares
            ]
            cpu_added = median(
                [
                    (a[f"{kind}_cpu"] - b[f"{kind}_cpu"]) * 1000
                    for a, b in zip(runs[mode], runs["off"], strict=True)
                ]
            )
            lines.append(
                f"| **added by the stage** ({STAGE_MODE_NAMES[mode]}) | {what} | "
                + " | ".join(f"**{c:+.1f}**" for c in added)
                + f" | {cpu_added:+.1f} | |"
            )
            if mode != "local":
                report.add(
                    Figure(
                        f"distinct {name}: added to ai.search hybrid p95 by the second stage, {STAGE_MODE_NAMES[mode]}, query {kind}",
                        "ms",
                        [
                            a - b
                            for a, b in zip(
                                per_round(mode, kind, 0.95), per_round("off", kind, 0.95), strict=True
                            )
                        ],
                        note="diagnostic: the backfill's idle poll patched to once an hour in the server",
                    )
                )
        for share, tag in shares:
            target = STAGE_ADDED_P95_TARGET_MS.get(size) if (tag == "p95" and kind == "uncached") else None
            report.add(
                Figure(
                    f"distinct {name}: ai.search hybrid {tag} with the second stage, query {kind}",
                    "ms",
                    per_round("local", kind, share),
                    baseline=Baseline("second stage off", per_round("off", kind, share)),
                    note="synthetic stage vectors (latency only); the query embedded by the real model",
                )
            )
            report.add(
                Figure(
                    f"distinct {name}: added by the second stage to ai.search hybrid {tag}, query {kind}",
                    "ms",
                    [
                        a - b
                        for a, b in zip(
                            per_round("local", kind, share), per_round("off", kind, share), strict=True
                        )
                    ],
                    target=Target("<=", target) if target else None,
                    note="local minus off, per round (paired), same queries; synthetic stage vectors",
                )
            )
    if size in HYBRID_P99_TARGET_MS:
        report.add(
            Figure(
                f"distinct {name}: ai.search hybrid p99 with the second stage on (local)",
                "ms",
                per_round("local", "uncached", 0.99),
                target=Target("<=", 150.0) if size >= 1_000_000 else None,
            )
        )
    b = breakdown
    lines += [
        "",
        f"In-process, LocalStage.score_now on {STAGE_BREAKDOWN_CANDIDATES} random documents of the searcher's "
        f"rooms, {len(b['sql'])} queries (load average {load[0]:.1f}):",
        "",
        "| step | p50 ms | p95 ms | p99 ms |",
        "|---|---:|---:|---:|",
    ]
    for key, what in (
        ("score_uncached", "score_now, query unseen (embed + SQL + dot)"),
        ("score_cached", "score_now, query cached (SQL + dot)"),
        ("embed", "query embedding alone (all-mpnet-base-v2 int8, 1 thread)"),
        ("sql", f"SQL lookup of {STAGE_BREAKDOWN_CANDIDATES} vectors (StageVectors.vectors)"),
        ("dot", "cosines"),
        ("pending_poll", "backfill's idle poll past the last document (every 2 s while caught up)"),
        ("rescan", "backfill's walk over the whole index for edits (every 10 minutes)"),
        ("total_count", "the count of all documents (the backfill thread, each round)"),
    ):
        lines.append(
            f"| {what} | {_ms(b[key], 0.5):.1f} | {_ms(b[key], 0.95):.1f} | {_ms(b[key], 0.99):.1f} |"
        )
    lines += [
        "",
        f"Stage vectors: {filled['messages']:,} rows ({filled['context_vectors']:,} with a context vector), "
        f"{filled['mib']:.0f} MiB, filled in {filled['fill_seconds']:.0f} s (load {filled['load_average']:.1f}); "
        f"data set built in {built['build_seconds'] / 60:.1f} min (load {built['load_average']:.1f}).",
        "Server status after each local run (secondStage): "
        + "; ".join(str(r["status_after"]) for r in runs["local"])
        + ". Stage states in responses: "
        + ", ".join(f"{mode} " + "; ".join(str(r["states"]) for r in runs[mode]) for mode in modes)
        + ".",
    ]
    table = "\n".join(lines)
    print(f"\n== {name}: the second stage's cost\n\n{table}\n")
    for key in ("sql", "embed", "score_uncached", "score_cached", "pending_poll", "rescan", "total_count"):
        report.add(
            Figure(
                f"distinct {name}: second stage in-process, {key} p50",
                "ms",
                [_ms(b[key], 0.5)],
                note=f"p95 {_ms(b[key], 0.95):.1f} ms, p99 {_ms(b[key], 0.99):.1f} ms",
            )
        )
    report.parameters.setdefault("second_stage_tables", {})[name] = table
    report.parameters.setdefault("second_stage_runs", {})[name] = {
        mode: [
            {k: v for k, v in r.items() if k not in ("uncached", "cached")}
            | {f"{k}_ms": [t * 1000 for t in r[k]] for k in ("uncached", "cached")}
            for r in rs
        ]
        for mode, rs in runs.items()
    }
    report.parameters.setdefault("second_stage_fill", {})[name] = filled


METHOD = (
    "Workspaces of distinct chat messages (6-24 words drawn Zipf-like from a 40,000-word vocabulary with "
    "the demo's real words mixed in; 4% stock replies; 30% thread replies; Zipf room sizes; people in 1-60 "
    "rooms; the searcher in a third of the rooms), random unit vectors stored under the served model's id "
    "(the scan costs what real vectors cost; semantic results are empty under the floor). ai.search over "
    f"HTTP, {RESULTS} results, keyword and hybrid, one request at a time and {CONCURRENCY} concurrent; bare "
    "FTS5: the same queries' expression on the index file, no scope. Recall: the semantic branch's top 10 "
    "against numpy's exact scan of every stored vector, 50 random unit queries per scope, in-process."
)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument(
        "--baseline-ref", help="also measure this git revision's py/ on the same data (e.g. main)"
    )
    parser.add_argument("--build-only", action="store_true", help="build the data sets, measure nothing")
    parser.add_argument(
        "--recall-only", action="store_true", help="only the semantic branch's recall against exact search"
    )
    parser.add_argument(
        "--keyword-recall-only",
        action="store_true",
        help="only the keyword branch's recall against its exhaustive ranking",
    )
    parser.add_argument(
        "--profile", action="store_true", help="CPU per phase of a request in-process, measure nothing else"
    )
    parser.add_argument(
        "--profile-keyword",
        action="store_true",
        help="cProfile the keyword branch in-process, measure nothing else",
    )
    parser.add_argument(
        "--second-stage",
        action="store_true",
        help="only ai.search hybrid with the second stage off and local, side by side (synthetic stage vectors)",
    )
    parser.add_argument(
        "--stage-rounds", type=int, default=STAGE_ROUNDS, help="rounds of (off, local) for --second-stage"
    )
    parser.add_argument(
        "--stage-quiet-poll",
        action="store_true",
        help="--second-stage also with the backfill's idle poll patched to hourly (diagnostic)",
    )
    parser.add_argument("--json", type=Path, help="write the figures here (bench/_figures.py's Report)")
    parser.add_argument(
        "--postgres", metavar="URL", help="only the keyword branch, FTS5 against PostgreSQL's (a server URL)"
    )
    args = parser.parse_args()
    if args.profile or args.profile_keyword:
        for size in args.sizes:
            (profile_phases if args.profile else profile)(size, args.queries)
        return
    report = Report("search-distinct", "Search at scale with distinct texts", method=METHOD)
    report.parameters = {
        "sizes": args.sizes,
        "queries": args.queries,
        "data_format": DATA_FORMAT,
        "baseline_ref": args.baseline_ref,
        "cores": os.cpu_count(),
    }
    for size in args.sizes:
        if args.build_only:
            build(size)
        elif args.recall_only:
            run_recall(size, report)
        elif args.keyword_recall_only:
            run_keyword_recall(size, args.queries, report)
        elif args.second_stage:
            run_second_stage(size, args.queries, args.stage_rounds, report, quiet_poll=args.stage_quiet_poll)
        elif args.postgres:
            run_postgres(size, args.queries, args.postgres, report)
        else:
            run_size(size, args.queries, args.baseline_ref, report)
    if not args.build_only:
        report.write(args.json)


if __name__ == "__main__":
    main()
