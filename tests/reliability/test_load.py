"""G. Load and soak: ``ai-search serve`` on loopback under sustained search and MCP traffic.

The real command line serves a seeded workspace (the embedded keyword pipeline, rate limits on); the
load comes from this process over keep-alive connections, spread over many users so that each stays
inside its own budget (the limits are F5's subject). G1 reports requests/s and latency percentiles and
needs every answer to be a 2xx; G2 mixes in writes and deliberate bad requests for five minutes and
samples the server's memory and file descriptors, which must stay flat. On 2 cores the load generator
shares the machine with the server: the figures are baselines to compare run to run, never targets.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from ai_search_server.importer import import_jsonl
from ai_search_server.mcp import MCP_PATH
from ai_search_server.store import DATABASE_FILENAME, open_store

from ._processes import Launcher, killable_server
from ._servers import proc_stats
from .conftest import Figure

# Users the load is spread over: each has its own search (120/min) and MCP (60/min) budget.
LOAD_USERS = 300
SEEDED_MESSAGES = 3000
CONCURRENCY = 8
# The served command line, with the MCP endpoint on (``--demo`` would also load the demo workspace).
SERVER_ENV = {"AI_SEARCH_MCP_ENABLED": "true"}
WORDS = ("deploy", "outage", "billing", "invoice", "rollback", "latency", "database", "release")


@dataclass(frozen=True)
class Scale:
    seconds: float
    sample_every_seconds: float


G1_DEFAULT = Scale(seconds=5, sample_every_seconds=1)
G1_SOAK = Scale(seconds=60, sample_every_seconds=5)
G2_SOAK = Scale(seconds=300, sample_every_seconds=5)


def seed_workspace(data_dir: Path, tmp_path: Path) -> list[dict[str, str]]:
    """A workspace of SEEDED_MESSAGES messages in 8 rooms that LOAD_USERS people all read; their PATs."""
    history = tmp_path / "seed.jsonl"
    members = [f"load{n}" for n in range(LOAD_USERS)]
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    rng = random.Random(3)
    with history.open("w", encoding="utf-8") as out:
        for n in range(SEEDED_MESSAGES):
            words = " ".join(rng.choice(WORDS) for _ in range(8))
            record: dict[str, Any] = {
                "room": f"room{n % 8}",
                "room_type": "c",
                "user": members[n % 40],
                "ts": (t0 + timedelta(minutes=n)).isoformat(),
                "text": f"message {n}: {words}",
            }
            if n < 8:
                record["members"] = members
            out.write(json.dumps(record) + "\n")
    with open_store(data_dir) as store:
        import_jsonl(store, history, progress=False)
        headers = []
        for name in members:
            user = store.get_user_by_username(name)
            assert user is not None
            _token, plain = store.create_token(user.id, "pat", label="load")
            headers.append({"X-User-Id": user.id, "X-Auth-Token": plain})
    return headers


@dataclass
class Load:
    latencies_ms: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    transport_errors: int = 0
    samples: list[dict[str, float]] = field(default_factory=list)
    wal_bytes_max: int = 0


Request = Callable[[httpx.AsyncClient, dict[str, str], random.Random], Any]


def search(http: httpx.AsyncClient, auth: dict[str, str], rng: random.Random) -> Any:
    return http.get(
        "/api/v1/ai.search", params={"q": f"{rng.choice(WORDS)} {rng.choice(WORDS)}"}, headers=auth
    )


def mcp_search(http: httpx.AsyncClient, auth: dict[str, str], rng: random.Random) -> Any:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "get_ai_search_by_query", "arguments": {"query": rng.choice(WORDS)}},
    }
    return http.post(MCP_PATH, json=body, headers={**auth, "Accept": "application/json"})


def post(http: httpx.AsyncClient, auth: dict[str, str], rng: random.Random) -> Any:
    return http.post(
        "/api/v1/chat.postMessage", json={"channel": "#room1", "text": f"soak {rng.random()}"}, headers=auth
    )


def bad(http: httpx.AsyncClient, auth: dict[str, str], rng: random.Random) -> Any:
    return http.post(MCP_PATH, content=b'{"jsonrpc": "2.0", "id": 1, "method": ', headers=auth)


def answer(http: httpx.AsyncClient, auth: dict[str, str], rng: random.Random) -> Any:
    return http.post(
        "/api/v1/ai.search.answer", json={"query": "what broke?", "messages": [{"_id": "nope"}]}, headers=auth
    )


async def run_load(
    base: str, pid: int, data_dir: Path, users: list[dict[str, str]], mix: list[Request], scale: Scale
) -> Load:
    load = Load()
    deadline = time.monotonic() + scale.seconds
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)

    async def worker(n: int, http: httpx.AsyncClient) -> None:
        rng = random.Random(n)
        while time.monotonic() < deadline:
            # Random picks: a fixed rotation would tie each worker to one kind of request and one
            # slice of the users, and hammer those few budgets.
            request = rng.choice(mix)
            start = time.perf_counter()
            try:
                response = await request(http, rng.choice(users), rng)
            except httpx.TransportError:
                load.transport_errors += 1
                continue
            load.latencies_ms.append((time.perf_counter() - start) * 1000)
            load.statuses[response.status_code] += 1

    async def sampler() -> None:
        while time.monotonic() < deadline:
            load.samples.append({"t": time.monotonic(), **proc_stats(pid)})
            for name in (DATABASE_FILENAME, "index.db"):
                with contextlib.suppress(FileNotFoundError):
                    load.wal_bytes_max = max(load.wal_bytes_max, (data_dir / f"{name}-wal").stat().st_size)
            await anyio.sleep(scale.sample_every_seconds)

    async with (
        httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as http,
        anyio.create_task_group() as group,
    ):
        group.start_soon(sampler)
        for n in range(CONCURRENCY):
            group.start_soon(worker, n, http)
    load.samples.append({"t": time.monotonic(), **proc_stats(pid)})
    return load


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def summary(load: Load, seconds: float) -> dict[str, Any]:
    total = sum(load.statuses.values())
    first, last = load.samples[0], load.samples[-1]
    return {
        "requests": total,
        "requests_per_second": total / seconds,
        "p50_ms": statistics.median(load.latencies_ms),
        "p95_ms": percentile(load.latencies_ms, 0.95),
        "p99_ms": percentile(load.latencies_ms, 0.99),
        "statuses": {str(k): v for k, v in sorted(load.statuses.items())},
        "server_cpu_percent": 100 * (last["cpu_seconds"] - first["cpu_seconds"]) / (last["t"] - first["t"]),
        "rss_mib_start_end": [first["rss_mib"], last["rss_mib"]],
    }


@pytest.mark.requirement("G1")
@pytest.mark.parametrize(
    "scale",
    [
        pytest.param(G1_DEFAULT, id="default"),
        pytest.param(G1_SOAK, id="soak", marks=[pytest.mark.soak, pytest.mark.timeout(900)]),
    ],
)
def test_sustained_search_and_mcp_load_has_no_errors(tmp_path: Path, scale: Scale, figure: Figure) -> None:
    data_dir = tmp_path / "data"
    users = seed_workspace(data_dir, tmp_path)
    launcher = Launcher(tmp_path, fork=False, env=SERVER_ENV)
    with contextlib.closing(launcher), killable_server(launcher, data_dir) as (pid, base):
        load = asyncio.run(run_load(base, pid, data_dir, users, [search, mcp_search], scale))
    figures = summary(load, scale.seconds)
    not_2xx = sum(v for k, v in load.statuses.items() if not 200 <= k < 300) + load.transport_errors
    figure(
        tried=figures["requests"],
        failed=not_2xx,
        seconds=scale.seconds,
        concurrency=CONCURRENCY,
        non_2xx_percent=100 * not_2xx / max(1, figures["requests"]),
        **figures,
    )
    assert figures["requests"] > 0
    assert not_2xx == 0, load.statuses


def slope_mib_per_hour(samples: list[dict[str, float]]) -> float:
    """Least-squares slope of RSS over the samples' second half (after warm-up), in MiB per hour."""
    half = samples[len(samples) // 2 :]
    if len(half) < 2:
        return 0.0
    ts = [s["t"] for s in half]
    rss = [s["rss_mib"] for s in half]
    t_mean, r_mean = statistics.fmean(ts), statistics.fmean(rss)
    spread = sum((t - t_mean) ** 2 for t in ts)
    return (
        3600 * sum((t - t_mean) * (r - r_mean) for t, r in zip(ts, rss, strict=True)) / spread
        if spread
        else 0.0
    )


# Growth allowed over the soak's second half (MiB): a leak of a few KiB per request shows far above it.
RSS_GROWTH_ALLOWED_MIB = 40.0
FD_GROWTH_ALLOWED = 5


@pytest.mark.requirement("G2")
@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_a_five_minute_soak_keeps_memory_and_descriptors_flat(tmp_path: Path, figure: Figure) -> None:
    data_dir = tmp_path / "data"
    users = seed_workspace(data_dir, tmp_path)
    launcher = Launcher(tmp_path, fork=False, env=SERVER_ENV)
    # Searches, MCP tool calls, writes, refusals (a cut JSON-RPC body) and answers (10 a minute per
    # user: one in sixteen keeps 300 users inside that budget at a few hundred requests a second).
    mix: list[Request] = [search] * 6 + [mcp_search] * 4 + [post] * 2 + [bad] * 3 + [answer]
    with contextlib.closing(launcher), killable_server(launcher, data_dir) as (pid, base):
        load = asyncio.run(run_load(base, pid, data_dir, users, mix, G2_SOAK))
    figures = summary(load, G2_SOAK.seconds)
    # The second half, after warm-up: worker threads open their own SQLite connections (a few fds
    # each, up to the thread pool's size) during the first minutes, which is growth, not a leak. The
    # last sample is taken after the clients hung up, so it is left out.
    half = load.samples[len(load.samples) // 2 : -1]
    growth = half[-1]["rss_mib"] - half[0]["rss_mib"]
    fd_delta = max(s["fds"] for s in half) - half[0]["fds"]
    server_errors = sum(v for k, v in load.statuses.items() if k >= 500) + load.transport_errors
    figure(
        tried=figures["requests"],
        failed=server_errors + (growth > RSS_GROWTH_ALLOWED_MIB) + (fd_delta > FD_GROWTH_ALLOWED),
        seconds=G2_SOAK.seconds,
        rss_slope_mib_per_hour=slope_mib_per_hour(load.samples),
        rss_growth_second_half_mib=growth,
        fd_delta=fd_delta,
        wal_max_mib=load.wal_bytes_max / (1024 * 1024),
        error_percent=100 * server_errors / max(1, figures["requests"]),
        **figures,
    )
    assert server_errors == 0, load.statuses
    assert growth <= RSS_GROWTH_ALLOWED_MIB
    assert fd_delta <= FD_GROWTH_ALLOWED
