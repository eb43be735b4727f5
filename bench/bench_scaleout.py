"""Past one machine: the distinct-texts workspace on PostgreSQL, one pipeline process, 1, 2 and 4 proxies.

The workspace is bench_search_distinct.py's generator (texts of 6-24 words drawn Zipf-like, >= 90%
distinct, threads, Zipf room sizes) with the layout issue #23 asks for: 500 rooms and 2,000 people,
whatever the size. The same rows go into PostgreSQL and into SQLite, so every figure has SQLite's
single process beside it on the same data:

- **import**: messages/s into each store (``Store.import_messages``, batches of bench_search's
  ``IMPORT_BATCH``);
- **keyword indexing**: messages/s of a new ``index.db`` catching up with each store (what a new
  pipeline process does before it answers);
- **semantic indexing**: the packaged model's texts/s on a sample of the data set's texts (a million
  through the model is hours on this CPU, so the data set stores random unit vectors, as
  bench_search_distinct.py does: the scan costs what real vectors cost, relevance is not measured);
- **ai.search** hybrid over HTTP, ``CONCURRENCY`` clients spread over the proxies (client i talks to
  proxy i mod N): p50 / p99 and requests/s, for SQLite in one process, PostgreSQL in one process
  (embedded pipeline), and ``ai-search pipeline serve`` with 1, 2 and 4 proxies on PostgreSQL;
- **memory** (RSS) and CPU per request of every process after its run;
- **ANN recall@10** of the pipeline's vector index against exact search (``_vector_recall.py``).

The PostgreSQL cluster is Debian's server in ``PG_ROOT`` (made once with ``initdb``, started and
stopped by the bench, unix socket only, the server's default durability); each size is one database
there and one folder ``bench/out/scaleout-v<FORMAT>-<N>/`` (``sqlite/``: workspace.db and index.db;
``pipeline/``: the pipeline's index.db), built once, ``build.json`` marking a finished build.

    .venv/bin/python bench/bench_scaleout.py [--sizes 100000] [--queries 200] [--proxies 1 2 4]
                                             [--build-only] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pwd
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

import _vector_recall
from _figures import Baseline, Figure, Report, percentile
from ai_search_server.retrieval.context import CONTEXT_RULE
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.store import open_store
from bench_search import _ProbeEmbedder, free_port, rss_mib
from bench_search_distinct import (
    SEARCHER,
    VECTOR_DIMENSIONS,
    Shape,
    cpu_seconds,
    credentials,
    import_messages,
    make_queries,
    served_vector_model,
    store_random_vectors,
)

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"
# The data set's format: bumped when the generator or the layout changes.
DATA_FORMAT = 1
SEED = 20261201
SIZES = [100_000]
# Issue #23's workspace: 500 rooms and 2,000 people (at every size, so the scope is alike).
LAYOUT = Shape(rooms=500, users=2000)
# Where the bench's PostgreSQL cluster lives: outside bench/out, whose parents the postgres user
# (PostgreSQL refuses to run as root) may not enter.
PG_ROOT = Path(tempfile.gettempdir()) / "ai-search-bench-scaleout-pg"
PG_SUPERUSER = "ai_search"
PG_START_SECONDS = 120
PG_MAX_CONNECTIONS = 200
PG_BIN_GLOB = "usr/lib/postgresql/*/bin"
PROXY_COUNTS = [1, 2, 4]
QUERIES = 200
WARMUP_QUERIES = 10
CONCURRENCY = 8
RESULTS = 10
# Texts of the data set put through the real model to measure semantic indexing (texts).
EMBED_SAMPLE = 2000
SERVER_START_SECONDS = 900.0
# One semantic floor for every process measured (percent): a proxy with a remote pipeline knows no
# calibrated floor for its model (docs/deploy.md), so without it the proxies would show the random
# vectors' matches that one process hides, and rebuild more results per search than it.
SEMANTIC_FLOOR_PERCENT = 45
PIPELINE_KEY, PIPELINE_SECRET = "bench-pipeline-key-0123", "bench-pipeline-secret-0123"


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def label(size: int) -> str:
    return f"{size // 1_000_000}M" if size >= 1_000_000 else f"{size // 1000}k"


def data_dir(size: int) -> Path:
    return OUT / f"scaleout-v{DATA_FORMAT}-{size}"


# -- PostgreSQL ----------------------------------------------------------------------------------


def _pg_bin() -> Path:
    found = sorted(Path("/").glob(PG_BIN_GLOB), key=lambda p: int(p.parent.name), reverse=True)
    for folder in found:
        if (folder / "initdb").exists():
            return folder
    raise SystemExit("PostgreSQL's server is not installed (scripts/setup --test installs it)")


def _as_owner(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    runuser = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")
    if runuser is None:
        raise SystemExit("running PostgreSQL under root needs util-linux's runuser")
    return [runuser, "-u", "postgres", "--", *command]


@contextmanager
def postgres() -> Iterator[str]:
    """The bench's cluster, made on first use and started for this run; yields a URL template."""
    pg_bin, data, run = _pg_bin(), PG_ROOT / "data", PG_ROOT / "run"
    if not (data / "PG_VERSION").exists():
        shutil.rmtree(PG_ROOT, ignore_errors=True)
        run.mkdir(parents=True)
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            for path in (PG_ROOT, run):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        subprocess.run(
            _as_owner([str(pg_bin / "initdb"), "-D", str(data), "-U", PG_SUPERUSER, "--auth=trust",
                       "--encoding=UTF8", "--locale=C"]),
            check=True, capture_output=True,
        )
    options = f"-c listen_addresses='' -c unix_socket_directories={run} -c max_connections={PG_MAX_CONNECTIONS}"
    subprocess.run(
        _as_owner([str(pg_bin / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(PG_ROOT / "server.log"),
                   "-w", "-t", str(PG_START_SECONDS), "start"]),
        check=True, capture_output=True,
    )
    try:
        yield f"postgresql://{PG_SUPERUSER}@/{{db}}?host={run}"
    finally:
        subprocess.run(
            _as_owner([str(pg_bin / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
            check=False, capture_output=True,
        )


def _admin(url_template: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(url_template.format(db="postgres"), autocommit=True) as conn:
        conn.execute(sql)


# -- the data set --------------------------------------------------------------------------------


def _timed_keyword_index(index_dir: Path, store_url: str, store_dir: Path) -> float:
    store = open_store(store_dir, database_url=store_url)
    try:
        started = time.perf_counter()
        EmbeddedIndex.open(index_dir / INDEX_FILENAME, store, None, progress=True).close()
        return time.perf_counter() - started
    finally:
        store.close()


def _embedding_rate(index_path: Path) -> dict[str, float]:
    """The packaged model's texts/s (wall and per CPU-second) on EMBED_SAMPLE texts of the data set."""
    from ai_search_server.retrieval.local_embedder import load_local_embedder

    conn = sqlite3.connect(index_path)
    try:
        texts = [r[0] for r in conn.execute("SELECT text FROM docs ORDER BY rowid LIMIT ?", (EMBED_SAMPLE,))]
    finally:
        conn.close()
    embedder = load_local_embedder()
    embedder.embed(texts[:32])  # warm
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(texts), 256):
        embedder.embed(texts[start : start + 256])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    close = getattr(embedder, "close", None)
    if callable(close):
        close()
    return {"texts": len(texts), "texts_per_second": len(texts) / wall, "texts_per_cpu_second": len(texts) / cpu}


def build(size: int, url_template: str) -> dict[str, Any]:
    """Both stores, both indexes and their vectors for `size`, unless built; the build figures."""
    directory = data_dir(size)
    marker = directory / "build.json"
    database = f"scaleout_{size}"
    if marker.exists():
        return dict(json.loads(marker.read_text()))
    shutil.rmtree(directory, ignore_errors=True)
    sqlite_dir, pipeline_dir = directory / "sqlite", directory / "pipeline"
    sqlite_dir.mkdir(parents=True)
    pipeline_dir.mkdir(parents=True)
    _admin(url_template, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    _admin(url_template, f"CREATE DATABASE {database}")
    pg_url = url_template.format(db=database)
    figures: dict[str, Any] = {"format": DATA_FORMAT, "messages": size, "database": database, "rooms": LAYOUT.rooms,
                               "users": LAYOUT.users}

    say(f"building {directory}: {size:,} messages into PostgreSQL")
    pg_store = open_store(pipeline_dir, database_url=pg_url)
    try:
        started = time.perf_counter()
        generated = import_messages(pipeline_dir, size, into=pg_store, layout=LAYOUT)
        figures["pg_import_seconds"] = time.perf_counter() - started
    finally:
        pg_store.close()
    say(f"  PostgreSQL import: {figures['pg_import_seconds']:.0f} s; the same rows into SQLite")
    started = time.perf_counter()
    import_messages(sqlite_dir, size, layout=LAYOUT)
    figures["sqlite_import_seconds"] = time.perf_counter() - started
    say(f"  SQLite import: {figures['sqlite_import_seconds']:.0f} s; keyword indexes")
    figures["pg_keyword_seconds"] = _timed_keyword_index(pipeline_dir, pg_url, pipeline_dir)
    figures["sqlite_keyword_seconds"] = _timed_keyword_index(sqlite_dir, "", sqlite_dir)
    say(
        f"  keyword index from PostgreSQL {figures['pg_keyword_seconds']:.0f} s, from SQLite "
        f"{figures['sqlite_keyword_seconds']:.0f} s; random vectors"
    )
    with_context = generated.pop("with_context")
    model = served_vector_model()
    for name, folder in (("pg", pipeline_dir), ("sqlite", sqlite_dir)):
        started = time.perf_counter()
        store_random_vectors(folder / INDEX_FILENAME, with_context, model)
        figures[f"{name}_vector_seconds"] = time.perf_counter() - started
    figures["embedding"] = _embedding_rate(sqlite_dir / INDEX_FILENAME)
    figures.update(generated)
    figures["distinct_share"] = generated["distinct_texts"] / size
    figures["load_average"] = os.getloadavg()[0]
    marker.write_text(json.dumps(figures))
    return figures


# -- the processes -------------------------------------------------------------------------------


def serve_proxy(data: str, port: int, database_url: str, pipeline_url: str) -> None:
    """A proxy process: the real app under uvicorn, rate limits off (the bench would measure 429s)."""
    import uvicorn

    from ai_search_server.app import create_app
    from ai_search_server.settings import load_settings

    overrides: dict[str, Any] = {"site_url": f"http://127.0.0.1:{port}", "embedder": "local",
                                 "database_url": database_url, "search_semantic_floor_percent": SEMANTIC_FLOOR_PERCENT}
    if pipeline_url:
        overrides.update(
            pipeline_base_url=pipeline_url, pipeline_id="embedded", pipeline_api_key=PIPELINE_KEY,
            pipeline_api_key_secret=PIPELINE_SECRET, outbound_allow_hosts=["127.0.0.1"],
        )
    settings = load_settings(environ={}, overrides=overrides)
    store = open_store(Path(data), database_url=database_url)
    uvicorn.run(create_app(settings, store, limiter=None), host="127.0.0.1", port=port, log_level="warning",
                access_log=False)


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    base: str
    kind: str  # "proxy", "single" or "pipeline"


def _wait(served: Served, path: str) -> None:
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if served.proc.poll() is not None:
            raise SystemExit(f"a {served.kind} process exited with {served.proc.returncode}")
        try:
            if httpx.get(served.base + path, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"a {served.kind} process did not start")


@contextmanager
def processes(stack: ExitStack, commands: Sequence[tuple[str, list[str], dict[str, str], str]]) -> Iterator[list[Served]]:
    started: list[Served] = []
    try:
        for kind, args, env, probe in commands:
            port = int(args[args.index("--port") + 1]) if "--port" in args else int(args[-1])
            proc = subprocess.Popen([sys.executable, *args], env={**os.environ, **env})
            served = Served(proc, f"http://127.0.0.1:{port}", kind)
            started.append(served)
            _wait(served, probe)
        yield started
    finally:
        for served in started:
            served.proc.terminate()
        for served in started:
            try:
                served.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                served.proc.kill()


def proxy_command(kind: str, data: Path, database_url: str, pipeline_url: str) -> tuple[str, list[str], dict[str, str], str]:
    port = free_port()
    return (kind, [__file__, "--serve-proxy", str(data), database_url, pipeline_url, str(port)], {},
            "/openapi.json")


def pipeline_command(data: Path, database_url: str, port: int) -> tuple[str, list[str], dict[str, str], str]:
    env = {"AI_SEARCH_EMBEDDED_PIPELINE_API_KEY": PIPELINE_KEY, "AI_SEARCH_EMBEDDED_PIPELINE_API_KEY_SECRET":
           PIPELINE_SECRET, "AI_SEARCH_LOG_LEVEL": "warning", "AI_SEARCH_EMBEDDER": "local"}
    args = ["-m", "ai_search_server", "pipeline", "serve", "--data", str(data), "--database", database_url,
            "--port", str(port)]
    return ("pipeline", args, env, "/pipeline/v1/health")


# -- measuring -----------------------------------------------------------------------------------


async def _drive(bases: list[str], headers: dict[str, str], queries: list[str]) -> tuple[list[float], float]:
    """`CONCURRENCY` clients, client i on proxy i mod N, through `queries`; timings and wall seconds."""
    pending = list(queries)
    timings: list[float] = []

    async def worker(client: httpx.AsyncClient) -> None:
        while pending:
            query = pending.pop()
            started = time.perf_counter()
            response = await client.get(
                "/api/v1/ai.search", params={"query": query, "intelligentCount": RESULTS, "searchType": "hybrid"}
            )
            timings.append(time.perf_counter() - started)
            response.raise_for_status()

    clients = [httpx.AsyncClient(base_url=bases[i % len(bases)], headers=headers, timeout=300) for i in range(CONCURRENCY)]
    try:
        started = time.perf_counter()
        await asyncio.gather(*(worker(client) for client in clients))
        return timings, time.perf_counter() - started
    finally:
        for client in clients:
            await client.aclose()


def postgres_cpu_seconds() -> float:
    """CPU seconds the bench cluster's server processes (the postmaster and its children) have used."""
    try:
        postmaster = int((PG_ROOT / "data" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        if pid == postmaster or int(fields[1]) == postmaster:
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def measure(served: list[Served], headers: dict[str, str], queries: list[str]) -> dict[str, Any]:
    front = [s.base for s in served if s.kind != "pipeline"]
    asyncio.run(_drive(front, headers, queries[:WARMUP_QUERIES] * 2))
    cpu_before = {s.proc.pid: cpu_seconds(s.proc.pid) for s in served}
    pg_before, bench_before = postgres_cpu_seconds(), time.process_time()
    timings, wall = asyncio.run(_drive(front, headers, queries))
    cpu = {s.proc.pid: (cpu_seconds(s.proc.pid) - cpu_before[s.proc.pid]) / len(queries) for s in served}
    others = {
        "postgres": (postgres_cpu_seconds() - pg_before) / len(queries),
        "load generator": (time.process_time() - bench_before) / len(queries),
    }
    figures = {
        "timings": timings,
        "throughput": len(queries) / wall,
        "p50_ms": percentile(timings, 0.5) * 1000,
        "p99_ms": percentile(timings, 0.99) * 1000,
        "rss_mib": {kind: [rss_mib(s.proc.pid) for s in served if s.kind == kind] for kind in {s.kind for s in served}},
        "cpu_ms": {
            **{kind: sum(cpu[s.proc.pid] for s in served if s.kind == kind) * 1000 for kind in {s.kind for s in served}},
            **{kind: seconds * 1000 for kind, seconds in others.items()},
        },
        "load": os.getloadavg()[0],
    }
    say(
        f"    p50 {figures['p50_ms']:7.1f} ms  p99 {figures['p99_ms']:7.1f} ms  {figures['throughput']:5.1f} req/s"
        f"  RSS {figures['rss_mib']}  CPU/request {({k: round(v, 1) for k, v in figures['cpu_ms'].items()})}"
        f"  (load {figures['load']:.1f})"
    )
    return figures


def _pg_credentials(pg_url: str, folder: Path) -> dict[str, str]:
    store = open_store(folder, database_url=pg_url)
    try:
        user = store.get_user_by_username(SEARCHER)
        assert user is not None
        _token, plain = store.create_token(user.id, "session", label=f"bench-{time.time_ns()}")
        return {"X-User-Id": user.id, "X-Auth-Token": plain}
    finally:
        store.close()


def _searcher_rooms(folder: Path, url: str) -> list[str]:
    store = open_store(folder, database_url=url)
    try:
        user = store.get_user_by_username(SEARCHER)
        assert user is not None
        return sorted(store.readable_room_ids(user.id))
    finally:
        store.close()


def run_size(size: int, url_template: str, queries_count: int, proxy_counts: list[int], report: Report) -> None:
    built = build(size, url_template)
    directory = data_dir(size)
    sqlite_dir, pipeline_dir = directory / "sqlite", directory / "pipeline"
    pg_url = url_template.format(db=built["database"])
    name = label(size)
    queries = make_queries(built, queries_count, SEED + size)
    say(
        f"== {name}: {built['distinct_share']:.1%} distinct texts, {built['rooms']} rooms, {built['users']} people; "
        f"the searcher reads {built['searcher_rooms']} rooms ({built['searcher_messages']:,} messages)"
    )
    model = f"{served_vector_model()}"
    recall = {}
    for store_name, folder, url in (("PostgreSQL (the pipeline's index)", pipeline_dir, pg_url), ("SQLite", sqlite_dir, "")):
        say(f"  recall, {store_name}")
        recall[store_name] = _vector_recall.measure(
            folder, model, VECTOR_DIMENSIONS, _searcher_rooms(folder, url),
            _ProbeEmbedder(model.removesuffix(f"+{CONTEXT_RULE}")), say, database_url=url,
        )
    runs: dict[str, dict[str, Any]] = {}
    say("  SQLite, one process")
    with ExitStack() as stack, processes(stack, [proxy_command("single", sqlite_dir, "", "")]) as served:
        runs["sqlite"] = measure(served, credentials(sqlite_dir), queries)
    headers = _pg_credentials(pg_url, pipeline_dir)
    say("  PostgreSQL, one process (embedded pipeline)")
    with ExitStack() as stack, processes(stack, [proxy_command("single", pipeline_dir, pg_url, "")]) as served:
        runs["pg-single"] = measure(served, headers, queries)
    port = free_port()
    pipeline_url = f"http://127.0.0.1:{port}/pipeline/v1"
    for count in proxy_counts:
        say(f"  PostgreSQL, pipeline process + {count} prox{'y' if count == 1 else 'ies'}")
        commands = [pipeline_command(pipeline_dir, pg_url, port)] + [
            proxy_command("proxy", directory / f"proxy-{n}", pg_url, pipeline_url) for n in range(count)
        ]
        for n in range(count):
            (directory / f"proxy-{n}").mkdir(exist_ok=True)
        with ExitStack() as stack, processes(stack, commands) as served:
            runs[f"proxies-{count}"] = measure(served, headers, queries)
    _report(size, name, built, recall, runs, proxy_counts, report)


def _report(
    size: int, name: str, built: dict[str, Any], recall: dict[str, Any], runs: dict[str, dict[str, Any]],
    proxy_counts: list[int], report: Report,
) -> None:
    sqlite = runs["sqlite"]
    for store, key in (("PostgreSQL", "pg"), ("SQLite", "sqlite")):
        seconds = built[f"{key}_import_seconds"]
        report.add(Figure(f"scale-out {name}: import into {store}", "messages/s", [size / seconds], better="higher",
                          note=f"{seconds:.0f} s for {size:,} messages"))
    report.add(Figure(
        f"scale-out {name}: keyword indexing from PostgreSQL", "messages/s", [size / built["pg_keyword_seconds"]],
        baseline=Baseline("from SQLite", [size / built["sqlite_keyword_seconds"]]), better="higher",
    ))
    embedding = built["embedding"]
    report.add(Figure(
        f"scale-out {name}: semantic indexing, the packaged model", "texts/s", [embedding["texts_per_second"]],
        better="higher",
        note=f"{embedding['texts']} texts of the data set; {embedding['texts_per_cpu_second']:.0f} per CPU-second; "
        f"{size / embedding['texts_per_second'] / 3600:.1f} h for {size:,} distinct texts",
    ))
    for label_, key in (("one process, embedded pipeline", "pg-single"),
                        *((f"pipeline process + {n} prox{'y' if n == 1 else 'ies'}", f"proxies-{n}") for n in proxy_counts)):
        run = runs[key]
        for tag in ("p50", "p99"):
            report.add(Figure(
                f"scale-out {name}: ai.search hybrid {CONCURRENCY} concurrent {tag}, PostgreSQL, {label_}", "ms",
                [run[f"{tag}_ms"]], baseline=Baseline("SQLite, one process", [sqlite[f"{tag}_ms"]]),
            ))
        report.add(Figure(
            f"scale-out {name}: ai.search hybrid throughput, PostgreSQL, {label_}", "requests/s", [run["throughput"]],
            baseline=Baseline("SQLite, one process", [sqlite["throughput"]]), better="higher",
            note=f"load average {run['load']:.1f}; CPU per request "
            + ", ".join(f"{k} {v:.1f} ms" for k, v in sorted(run["cpu_ms"].items())),
        ))
        for kind, values in sorted(run["rss_mib"].items()):
            report.add(Figure(
                f"scale-out {name}: RSS per {kind} process, PostgreSQL, {label_}", "MiB", [statistics.median(values)],
                baseline=Baseline("SQLite, one process", sqlite["rss_mib"]["single"]),
            ))
    pg_recall, sqlite_recall = recall["PostgreSQL (the pipeline's index)"], recall["SQLite"]
    for ours, theirs in zip(pg_recall["scopes"], sqlite_recall["scopes"], strict=True):
        report.add(Figure(
            f"scale-out {name}: ANN recall@10 against exact, the pipeline's index, {ours['scope']}", "",
            [ours["recall"]], baseline=Baseline("SQLite's index", [theirs["recall"]]), better="higher",
        ))
    print(f"\n== scale-out at {size:,} messages ({built['distinct_share']:.1%} distinct, {built['rooms']} rooms, "
          f"{built['users']} people); load {os.getloadavg()[0]:.1f}")
    print(f"import: PostgreSQL {size / built['pg_import_seconds']:,.0f} msg/s, SQLite {size / built['sqlite_import_seconds']:,.0f} msg/s")
    print(f"keyword indexing: from PostgreSQL {size / built['pg_keyword_seconds']:,.0f} msg/s, from SQLite "
          f"{size / built['sqlite_keyword_seconds']:,.0f} msg/s; model {embedding['texts_per_second']:.0f} texts/s")
    print(f"{'':44}{'p50 ms':>9}{'p99 ms':>9}{'req/s':>8}  RSS MiB / CPU ms per request")
    for key, run in runs.items():
        print(f"{key:44}{run['p50_ms']:9.1f}{run['p99_ms']:9.1f}{run['throughput']:8.1f}  {run['rss_mib']} {run['cpu_ms']}")
    for ours in pg_recall["scopes"]:
        print(f"recall@10 {ours['recall']:.3f}  {ours['scope']}")


METHOD = (
    "bench_search_distinct.py's generator with 500 rooms and 2,000 people, imported into PostgreSQL (Debian's "
    "server, default durability, unix socket) and into SQLite; random unit vectors stored in both indexes. "
    f"ai.search hybrid over HTTP, {RESULTS} results, {CONCURRENCY} concurrent clients spread over the proxies "
    "(client i on proxy i mod N), rate limits off, one semantic floor (0.45) for every process; the pipeline process is `ai-search pipeline serve`; every "
    "process on this one 2-core machine, the load generator included."
)


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "--serve-proxy":
        serve_proxy(sys.argv[2], int(sys.argv[5]), sys.argv[3], sys.argv[4])
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument("--proxies", type=int, nargs="+", default=PROXY_COUNTS)
    parser.add_argument("--build-only", action="store_true", help="build the data sets, measure nothing")
    parser.add_argument("--json", type=Path, help="write the figures here (bench/_figures.py's Report)")
    args = parser.parse_args()
    report = Report("scaleout", "Past one machine: PostgreSQL, a shared pipeline, several proxies", method=METHOD)
    report.parameters = {"sizes": args.sizes, "queries": args.queries, "proxies": args.proxies,
                         "concurrency": CONCURRENCY, "rooms": LAYOUT.rooms, "users": LAYOUT.users,
                         "data_format": DATA_FORMAT, "cores": os.cpu_count()}
    with postgres() as url_template:
        for size in args.sizes:
            if args.build_only:
                build(size, url_template)
            else:
                run_size(size, url_template, args.queries, args.proxies, report)
    if not args.build_only:
        report.write(args.json)


if __name__ == "__main__":
    main()
