"""Server processes for the kill -9 and load tests: ``ai-search serve`` started, watched and killed.

``Launcher`` starts the real command line (exec) or the same CLI entry point through the fork server
(``_zygote``), and kills with SIGKILL; ``killable_server`` waits until the server answers and always
reaps it. ``child_env()`` is the environment of every child: the project on ``PYTHONPATH``, no local
embedding model (keyword search, instant start), warnings only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from ._servers import free_port
from ._zygote import Zygote

__all__ = ["START_TIMEOUT_SECONDS", "Launcher", "child_env", "killable_server"]

ROOT = Path(__file__).resolve().parents[2]
# How long a server may take to answer its first request (seconds).
START_TIMEOUT_SECONDS = 60.0


def child_env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "py"), str(ROOT)]),
        "AI_SEARCH_EMBEDDER": "none",
        "AI_SEARCH_LOG_LEVEL": "warning",
    }


class Launcher:
    """Starts ``ai-search serve`` and kills it with SIGKILL: by exec (the real command line, as an
    operator runs it) or through the fork server (the same CLI entry point, without a second of
    imports per start). ``start`` gives the pid; ``kill`` ends it and waits for its end."""

    def __init__(self, tmp_path: Path, *, fork: bool, env: dict[str, str] | None = None) -> None:
        self.log = tmp_path / "serve.log"
        self.env = {**child_env(), **(env or {})}
        self._zygote = Zygote(self.env, tmp_path / "zygote.log") if fork else None
        self._live: dict[int, subprocess.Popen[bytes] | None] = {}

    def start(self, data_dir: Path, port: int) -> int:
        if self._zygote is not None:
            pid = self._zygote.serve(data_dir, port)
            self._live[pid] = None
            return pid
        command = [
            sys.executable,
            "-m",
            "ai_search_server",
            "serve",
            "--data",
            str(data_dir),
            "--port",
            str(port),
        ]
        with self.log.open("ab") as out:
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=self.env)
        self._live[proc.pid] = proc
        return proc.pid

    def kill(self, pid: int) -> None:
        """SIGKILL the server and reap it; a second call for the same pid does nothing."""
        if pid not in self._live:
            return
        proc = self._live.pop(pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if proc is not None:
            proc.wait(timeout=30)
        elif self._zygote is not None:
            self._zygote.wait(pid)

    def close(self) -> None:
        for pid in list(self._live):
            self.kill(pid)
        if self._zygote is not None:
            self._zygote.__exit__(None, None, None)


@contextmanager
def killable_server(launcher: Launcher, data_dir: Path) -> Iterator[tuple[int, str]]:
    """``ai-search serve`` on a free port; the caller may SIGKILL it, and it is always reaped."""
    port = free_port()
    pid = launcher.start(data_dir, port)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            try:
                httpx.get(base + "/openapi.json", timeout=1.0)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the server did not start: {launcher.log.read_text(errors='replace')[-2000:]}"
                    ) from None
                time.sleep(0.02)
        yield pid, base
    finally:
        launcher.kill(pid)
