"""Shared by the benchmarks: our server with a generated workspace, in a child process on loopback.

    with BenchServer(messages=10_000) as server:
        server.url, server.headers, server.message_ids

The child builds a fresh workspace (one user ``bench`` in one room, ``messages`` generated messages,
a personal access token), starts the real app under uvicorn with rate limits off (a benchmark that
hits a limit measures 429s), and writes its credentials to a ready file the parent waits for.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# Seconds the child server may take to build its workspace and start listening.
SERVER_START_SECONDS = 300.0
WORDS = [
    "deploy",
    "rollback",
    "billing-api",
    "search-indexer",
    "postgres",
    "failover",
    "latency",
    "canary",
    "release",
    "hotfix",
    "incident",
    "pager",
    "alert",
    "queue",
    "retry",
    "timeout",
    "cache",
    "invoice",
    "customer",
    "migration",
    "schema",
    "index",
    "vacuum",
    "replica",
    "backup",
    "restore",
    "review",
    "design",
    "proposal",
    "hiring",
    "onboarding",
    "budget",
    "cost",
    "region",
    "cluster",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def generated_rows(count: int, *, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` import rows in one room, spread over 90 days, with chat-like word soup."""
    import random

    rng = random.Random(seed)
    start = datetime(2026, 9, 1, tzinfo=UTC)
    return [
        {
            "id": f"bench-{n}",
            "room": "bench",
            "room_type": "c",
            "user": "bench",
            "ts": (start + timedelta(seconds=n * 7776000 // max(count, 1))).isoformat(),
            "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 24))),
            **({"members": ["bench"]} if n == 0 else {}),
        }
        for n in range(count)
    ]


def _serve(port: int, data_dir: Path, ready_file: Path, messages: int, settings_json: str) -> None:
    import uvicorn

    from ai_search_server.app import create_app
    from ai_search_server.importer import import_rows
    from ai_search_server.serving import server_options
    from ai_search_server.settings import load_settings
    from ai_search_server.store import open_store

    store = open_store(data_dir)
    user = store.create_user("bench", name="Bench")
    import_rows(store, generated_rows(messages))
    _token, pat = store.create_token(user.id, "pat", label="bench")
    overrides = {"site_url": f"http://127.0.0.1:{port}", "mcp_enabled": True, **json.loads(settings_json)}
    settings = load_settings(environ={}, overrides=overrides)
    app = create_app(settings, store, limiter=None)
    ids = [f"bench-{n}" for n in range(0, messages, max(1, messages // 100))]
    ready_file.write_text(
        json.dumps({"user_id": user.id, "token": pat, "message_ids": ids, "pid": os.getpid()})
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, **server_options())


class BenchServer:
    def __init__(self, *, messages: int = 1, settings: dict[str, Any] | None = None) -> None:
        self.messages = messages
        self.settings = settings or {}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._tmp = tempfile.TemporaryDirectory(prefix="ai-search-bench-")
        self._child: subprocess.Popen[bytes] | None = None
        self.user_id = self.token = ""
        self.message_ids: list[str] = []
        self.pid = 0

    @property
    def headers(self) -> dict[str, str]:
        return {"X-User-Id": self.user_id, "X-Auth-Token": self.token}

    def __enter__(self) -> BenchServer:
        tmp = Path(self._tmp.name)
        ready = tmp / "ready.json"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "py"), os.environ.get("PYTHONPATH")])),
        }
        self._child = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--port",
                str(self.port),
                "--data",
                str(tmp / "data"),
                "--ready-file",
                str(ready),
                "--messages",
                str(self.messages),
                "--settings",
                json.dumps(self.settings),
            ],
            env=env,
        )
        deadline = time.monotonic() + SERVER_START_SECONDS
        while time.monotonic() < deadline:
            if self._child.poll() is not None:
                raise SystemExit(f"the benchmark server exited with status {self._child.returncode}")
            if ready.is_file():
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", self.port)) == 0:
                        creds = json.loads(ready.read_text())
                        self.user_id, self.token = creds["user_id"], creds["token"]
                        self.message_ids, self.pid = creds["message_ids"], creds["pid"]
                        return self
            time.sleep(0.1)
        raise SystemExit(f"the benchmark server did not start within {SERVER_START_SECONDS:.0f} s")

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._child is not None:
            self._child.terminate()
            try:
                self._child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._child.kill()
        self._tmp.cleanup()


# The interpreters the page's and the widget's Python run on (the page_python setting), by name.
PAGE_PYTHONS = {"micropython": "MicroPython", "pyodide": "Pyodide"}


def add_python_options(parser: argparse.ArgumentParser, what: str) -> argparse._MutuallyExclusiveGroup:
    """``--python`` and ``--against-python`` of a browser bench of ``what`` ("the page", "the
    widget"); returns the group of baseline options, for the bench's own to join."""
    from ai_search_server.settings import load_settings

    parser.add_argument(
        "--python",
        choices=tuple(PAGE_PYTHONS),
        default=load_settings(environ={}).page_python,
        help=f"the interpreter {what}'s Python runs on (the page_python setting; default: its default)",
    )
    baselines = parser.add_mutually_exclusive_group()
    baselines.add_argument(
        "--against-python",
        choices=tuple(PAGE_PYTHONS),
        metavar="OTHER",
        help=f"the baseline: the same runs with {what} on this interpreter (default: the other one)",
    )
    return baselines


def baseline_python(
    parser: argparse.ArgumentParser, python: str, against: str | None, *, wanted: bool
) -> str | None:
    """The interpreter of the baseline runs: ``against``, else (when a baseline is ``wanted``) the
    one ``python`` is not."""
    chosen = against if against is not None or not wanted else next(p for p in PAGE_PYTHONS if p != python)
    if chosen == python:
        parser.error(f"--against-python {chosen}: that is --python already")
    return chosen


@contextmanager
def demo_app_server(overrides: dict[str, Any] | None = None, *, root: Path | None = None) -> Iterator[str]:
    """The real app over the demo workspace, in a thread on a free loopback port; yields its URL.

    For the browser benchmarks, which need the page files (``root``, default the project) and the
    demo people; no embedding model, so the machine's cores go to the browser being measured.
    """
    import threading

    import uvicorn

    from ai_search_server.app import create_app
    from ai_search_server.demo import DEMO_USERS, generate_demo_messages
    from ai_search_server.importer import import_rows
    from ai_search_server.serving import server_options
    from ai_search_server.settings import load_settings
    from ai_search_server.static import PROJECT_ROOT
    from ai_search_server.store import open_store

    work = Path(tempfile.mkdtemp(prefix="ai-search-bench-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    store = open_store(work / "data")
    for user in DEMO_USERS:
        store.create_user(user.username, name=user.name, password=user.password, roles=(user.role,))
    import_rows(store, generate_demo_messages())
    settings = load_settings(environ={}, overrides={"site_url": url, "embedder": "none", **(overrides or {})})
    app = create_app(settings, store, root=root or PROJECT_ROOT)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **server_options())
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(10)
        store.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--ready-file", type=Path, required=True)
    parser.add_argument("--messages", type=int, default=1)
    parser.add_argument("--settings", default="{}")
    a = parser.parse_args()
    _serve(a.port, a.data, a.ready_file, a.messages, a.settings)
