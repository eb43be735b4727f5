"""Real servers for tests: ``ai-search serve`` and ``redis-server`` as subprocesses on loopback."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

# How long a server may take to answer its first request (seconds).
START_TIMEOUT_SECONDS = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(
        f"server did not start within {START_TIMEOUT_SECONDS} s:\n{log.read_text(errors='replace')}"
    )


@contextmanager
def running_server(
    data_dir: Path, *, env: Mapping[str, str] | None = None, demo: bool = False
) -> Iterator[str]:
    """``ai-search serve`` on a free loopback port; yields its base URL and stops it afterwards."""
    port = free_port()
    log = data_dir.parent / f"serve-{port}.log"
    args = [sys.executable, "-m", "ai_search_server", "serve", "--data", str(data_dir), "--port", str(port)]
    if demo:
        args.append("--demo")
    full_env = {**os.environ, "AI_SEARCH_EMBEDDER": "none", "AI_SEARCH_LOG_LEVEL": "warning", **(env or {})}
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=full_env)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(base + "/openapi.json", proc, log)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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
