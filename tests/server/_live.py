"""Real servers for tests: ``ai-search serve`` and ``redis-server`` as subprocesses on loopback.

    with running_server(data_dir, env=env) as base:              # one server; its base URL
        httpx.get(base + "/api/v1/me", headers=...)
    with running_servers([dir_a, dir_b, dir_c], env=env) as proxies:   # several, started at once
        proxies[2].kill()                                       # SIGKILL, as a crash would
    with running_server(data_dir, env=env, workers=2) as base:   # ai-search serve --workers 2

:class:`ServerProcess` is one ``ai-search serve`` (its port, its log, how to stop or kill it); the
context managers start, wait for and stop them. Benches and other tests that need several proxies
build on these.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

__all__ = [
    "START_TIMEOUT_SECONDS",
    "STOP_TIMEOUT_SECONDS",
    "ServerProcess",
    "free_port",
    "running_redis",
    "running_server",
    "running_servers",
]

# How long a server may take to answer its first request (seconds).
START_TIMEOUT_SECONDS = 60.0
# How long a server may take to stop after SIGTERM before it is killed (seconds).
STOP_TIMEOUT_SECONDS = 10.0
# The environment every test server starts with: no embedding model (keyword search only), quiet logs.
BASE_ENV = {"AI_SEARCH_EMBEDDER": "none", "AI_SEARCH_LOG_LEVEL": "warning"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ServerProcess:
    """One ``ai-search serve`` subprocess on a free loopback port, its output in ``log``."""

    def __init__(
        self,
        data_dir: Path,
        *,
        env: Mapping[str, str] | None = None,
        demo: bool = False,
        workers: int = 1,
        args: Sequence[str] = (),
    ) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data_dir.parent / f"serve-{self.port}.log"
        command = [sys.executable, "-m", "ai_search_server", "serve", "--data", str(data_dir)]
        command += ["--port", str(self.port), *(["--demo"] if demo else [])]
        command += [*(["--workers", str(workers)] if workers != 1 else []), *args]
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **BASE_ENV, **(env or {})}
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_until_up(self, timeout: float = START_TIMEOUT_SECONDS) -> None:
        """Until the server answers a request; raises with its output if it exits or takes too long."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.output()}")
            try:
                httpx.get(self.url + "/openapi.json", timeout=1.0)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"server did not start within {timeout} s:\n{self.output()}")

    def worker_pids(self) -> set[int]:
        """The worker processes of ``--workers N`` (the supervisor's spawned children), from /proc."""
        pids: set[int] = set()
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rpartition(")")[2].split()
                cmdline = (stat.parent / "cmdline").read_bytes()
            except OSError:
                continue  # ended while we looked
            if int(fields[1]) == self.proc.pid and b"spawn_main" in cmdline:
                pids.add(int(stat.parent.name))
        return pids

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: the process ends at once, as in a crash or an out-of-memory kill."""
        if self.running:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        """SIGTERM, as a service manager stops it; SIGKILL after :data:`STOP_TIMEOUT_SECONDS`."""
        if self.running:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                self.kill()


@contextmanager
def running_servers(
    data_dirs: Sequence[Path],
    *,
    env: Mapping[str, str] | None = None,
    workers: int = 1,
    args: Sequence[str] = (),
) -> Iterator[list[ServerProcess]]:
    """One ``ai-search serve`` per data dir (a dir may repeat), all started before any is waited for;
    yields them once every one answers, and stops them afterwards."""
    with ExitStack() as stack:
        servers: list[ServerProcess] = []
        for data_dir in data_dirs:
            server = ServerProcess(data_dir, env=env, workers=workers, args=args)
            stack.callback(server.stop)
            servers.append(server)
        for server in servers:
            server.wait_until_up()
        yield servers


@contextmanager
def running_server(
    data_dir: Path,
    *,
    env: Mapping[str, str] | None = None,
    demo: bool = False,
    workers: int = 1,
) -> Iterator[str]:
    """``ai-search serve`` on a free loopback port; yields its base URL and stops it afterwards."""
    server = ServerProcess(data_dir, env=env, demo=demo, workers=workers)
    try:
        server.wait_until_up()
        yield server.url
    finally:
        server.stop()


@contextmanager
def running_redis(workdir: Path) -> Iterator[str]:
    """A throwaway ``redis-server`` (Debian's) on a free loopback port; yields its redis:// URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (scripts/setup --test installs it)")
    port = free_port()
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.05)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
