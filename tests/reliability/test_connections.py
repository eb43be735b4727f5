"""F6. Idle connections: a socket that sends nothing cannot hold the server, nor starve real requests.

300 TCP connections that sent nothing were all still open after 60 s (uvicorn arms no timer before a
connection's first request), and under a 256-descriptor limit real requests got ECONNRESET. Now the
head deadline starts when a connection opens, and past the connection cap the longest-idle connection
makes room. Both are proved with real sockets: against the app in a server thread with a 1 s deadline
and a cap of 20, and against ``ai-search serve`` itself started under a 256-descriptor limit.
"""

from __future__ import annotations

import contextlib
import resource
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ai_search_server.app import create_app
from ai_search_server.serving import RESERVED_DESCRIPTORS, connection_cap, server_options
from ai_search_server.store.base import Store

from ._processes import ROOT, START_TIMEOUT_SECONDS, child_env
from ._servers import ServedApp, free_port
from .conftest import Figure, reliability_settings

# The shortened head deadline (seconds; the product's is 20): long enough that evictions past the cap
# are seen before it, short enough for a test.
SHORT_HEAD_DEADLINE_SECONDS = 3.0
SMALL_CAP = 20
IDLE_SOCKETS = 300
# The descriptor limit of the reproduction (descriptors): what a small container or a default
# systemd unit of old gives a process.
SMALL_DESCRIPTOR_LIMIT = 256
# Slack on a loaded 2-core machine for "closed at the deadline" (seconds).
SLACK_SECONDS = 3.0


@contextlib.contextmanager
def idle_sockets(port: int, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections to ``port`` that send nothing, closed at the end."""
    opened: list[socket.socket] = []
    try:
        for _ in range(count):
            conn = socket.create_connection(("127.0.0.1", port), timeout=5)
            conn.setblocking(False)
            opened.append(conn)
        yield opened
    finally:
        for conn in opened:
            conn.close()


def closed_by_server(sockets: list[socket.socket]) -> int:
    """How many of ``sockets`` the server has closed (readable with nothing to read, or reset)."""
    readable, _, _ = select.select(sockets, [], [], 0) if sockets else ([], [], [])
    closed = 0
    for conn in readable:
        try:
            closed += conn.recv(1) == b""
        except OSError:
            closed += 1
    return closed


def wait_until_closed(sockets: list[socket.socket], want: int, seconds: float) -> tuple[int, float]:
    started = time.monotonic()
    seen = 0
    while time.monotonic() - started < seconds:
        seen = closed_by_server(sockets)
        if seen >= want:
            break
        time.sleep(0.05)
    return seen, time.monotonic() - started


@pytest.mark.requirement("F6")
def test_idle_sockets_are_closed_at_the_head_deadline_and_evicted_past_the_cap(
    store: Store, figure: Figure
) -> None:
    settings = reliability_settings(site_url="http://127.0.0.1:8000", allowed_hosts=["127.0.0.1"])
    options = server_options(head_timeout_seconds=SHORT_HEAD_DEADLINE_SECONDS, max_connections=SMALL_CAP)
    served_app = ServedApp(create_app(settings, store, limiter=None), **options)
    with served_app as server, idle_sockets(server.port, 3 * SMALL_CAP) as idle:
        opened = time.monotonic()
        evicted, _ = wait_until_closed(idle, len(idle) - SMALL_CAP, SHORT_HEAD_DEADLINE_SECONDS / 2)
        started = time.monotonic()
        answers = [
            httpx.get(f"{server.url}/openapi.json", headers={"Host": "127.0.0.1"}, timeout=5).status_code
            for _ in range(5)
        ]
        served_in = time.monotonic() - started
        closed, _ = wait_until_closed(idle, len(idle), SHORT_HEAD_DEADLINE_SECONDS + SLACK_SECONDS)
        after = time.monotonic() - opened
    figure(
        tried=len(idle) + len(answers),
        failed=(len(idle) - closed) + sum(status != 200 for status in answers),
        idle_sockets=len(idle),
        cap=SMALL_CAP,
        real_requests=answers,
        real_requests_served_in_seconds=round(served_in, 3),
        evicted_before_the_deadline=evicted,
        closed_by_the_server=closed,
        all_closed_seconds_after_opening=round(after, 2),
        deadline_seconds=SHORT_HEAD_DEADLINE_SECONDS,
    )
    assert answers == [200] * 5
    assert evicted >= len(idle) - SMALL_CAP, "past the cap, idle connections made room at once"
    assert closed == len(idle), "every silent connection is closed by the deadline from its opening"
    assert SHORT_HEAD_DEADLINE_SECONDS * 0.9 <= after <= SHORT_HEAD_DEADLINE_SECONDS + SLACK_SECONDS


def _limit_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (SMALL_DESCRIPTOR_LIMIT, SMALL_DESCRIPTOR_LIMIT))


@pytest.mark.requirement("F6")
def test_300_idle_sockets_do_not_starve_the_real_server_under_256_descriptors(
    tmp_path: Path, figure: Figure
) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < IDLE_SOCKETS + 64:  # this process holds the idle sockets' other ends
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    port = free_port()
    log = tmp_path / "serve.log"
    command = [sys.executable, "-m", "ai_search_server", "serve", "--data", str(tmp_path / "data"), "--port", str(port)]
    with log.open("wb") as out:
        server = subprocess.Popen(command, env=child_env(), cwd=ROOT, stdout=out, stderr=out, preexec_fn=_limit_descriptors)
    url = f"http://127.0.0.1:{port}/openapi.json"
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url, timeout=2).status_code == 200:
                    break
            time.sleep(0.1)
        with idle_sockets(port, IDLE_SOCKETS) as idle:
            time.sleep(0.5)  # let the server accept them all
            statuses: list[str] = []
            for _ in range(20):
                try:
                    statuses.append(str(httpx.get(url, timeout=5).status_code))
                except httpx.HTTPError as exc:
                    statuses.append(type(exc).__name__)
            evicted = closed_by_server(idle)
        fds = len(list(Path(f"/proc/{server.pid}/fd").iterdir()))
    finally:
        server.terminate()
        server.wait(timeout=30)
    served = statuses.count("200")
    figure(
        tried=len(statuses),
        failed=len(statuses) - served,
        descriptor_limit=SMALL_DESCRIPTOR_LIMIT,
        idle_sockets=IDLE_SOCKETS,
        connection_cap=SMALL_DESCRIPTOR_LIMIT - RESERVED_DESCRIPTORS,
        real_requests_served=f"{served}/{len(statuses)}",
        idle_sockets_closed_by_the_server=evicted,
        server_descriptors_after=fds,
        outcomes=sorted(set(statuses)),
    )
    assert served == len(statuses), (statuses, log.read_text()[-2000:])
    assert fds < SMALL_DESCRIPTOR_LIMIT


def test_the_cap_follows_the_descriptor_limit_and_the_setting() -> None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    expected = 1000 if soft == resource.RLIM_INFINITY else max(16, min(1000, soft - RESERVED_DESCRIPTORS))
    assert connection_cap() == expected
    assert connection_cap(50) == 50
