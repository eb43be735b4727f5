"""I. Data safety: kill -9 never corrupts the workspace nor loses a write that was acknowledged.

I1 runs ``ai-search serve`` as a subprocess, posts messages over HTTP from several threads (a write
counts as acknowledged once its 200 has arrived), SIGKILLs the server at a random moment, and checks
the files with a fresh SQLite connection: ``integrity_check`` ok, WAL mode kept, every acknowledged
message there. Then it restarts on the same files, many times. It also kills ``ai-search import`` of a
big file mid-way, checks the file, and re-imports to completion: every line once, none twice.

I2 writes from several threads while an import runs in another process (no "database is locked"
may surface), then fills the database (``PRAGMA max_page_count`` on the connection the app uses,
the test-only seam ``test_store.py`` uses too): the API answers 503 ``error-service-unavailable``,
reads go on, the file stays sound, and writes resume once space is freed.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from ai_search_server.app import create_app
from ai_search_server.importer import DEFAULT_IMPORT_BATCH_SIZE
from ai_search_server.store import DATABASE_FILENAME, open_store
from ai_search_server.store.sqlite import SQLiteStore
from tests.server.conftest import Workspace

from ._apps import asgi
from ._processes import Launcher, child_env, killable_server
from .conftest import Figure, reliability_settings

# How long an import may take to write its first batch (seconds).
START_TIMEOUT_SECONDS = 60.0
# How long a cycle waits for its first acknowledged write before the kill window opens: the kill
# must land while writes are flowing, however slowly a busy machine serves the first ones.
FIRST_WRITE_TIMEOUT_SECONDS = 30.0
# Writer threads posting at once, and the users they post as (each has its own rate-limit budget).
WRITERS = 4
USERS = 8


@dataclass(frozen=True)
class Scale:
    kill_cycles: int
    import_lines: int
    import_kills: int
    fork: bool  # start the server through the fork server (quick) rather than by exec (as operators do)


DEFAULT = Scale(kill_cycles=20, import_lines=30_000, import_kills=2, fork=True)
SOAK = Scale(kill_cycles=200, import_lines=200_000, import_kills=20, fork=False)
SCALES = [
    pytest.param(DEFAULT, id="default"),
    pytest.param(SOAK, id="soak", marks=[pytest.mark.soak, pytest.mark.timeout(3600)]),
]


def seed(data_dir: Path) -> list[dict[str, str]]:
    """Users with personal access tokens, all in #general; the store is closed again."""
    with open_store(data_dir) as store:
        people = [store.create_user(f"writer{n}") for n in range(USERS)]
        store.create_room("c", "general", members=[p.id for p in people])
        headers = []
        for person in people:
            _token, plain = store.create_token(person.id, "pat", label="i1")
            headers.append({"X-User-Id": person.id, "X-Auth-Token": plain})
    return headers


@dataclass
class Writes:
    acknowledged: dict[str, str] = field(default_factory=dict)  # message id -> text
    refused: int = 0
    cut: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _wait_for_more(writes: Writes, count: int, timeout: float) -> None:
    """Return once more than ``count`` writes are acknowledged (or ``timeout`` seconds pass)."""
    deadline = time.monotonic() + timeout
    while len(writes.acknowledged) <= count and time.monotonic() < deadline:
        time.sleep(0.01)


def _write_until_cut(
    base: str, headers: list[dict[str, str]], tag: str, writes: Writes, stop: threading.Event
) -> None:
    with httpx.Client(base_url=base, timeout=10.0) as http:
        n = 0
        while not stop.is_set():
            text = f"{tag}-{n}"
            n += 1
            try:
                response = http.post(
                    "/api/v1/chat.postMessage",
                    json={"channel": "#general", "text": text},
                    headers=headers[n % len(headers)],
                )
            except httpx.TransportError:
                with writes.lock:
                    writes.cut += 1
                return
            with writes.lock:
                if response.status_code == 200:
                    writes.acknowledged[response.json()["message"]["_id"]] = text
                else:
                    writes.refused += 1


def check_file(path: Path) -> tuple[str, str]:
    """(integrity_check, journal_mode) read by a fresh connection, as the next process would."""
    with sqlite3.connect(path) as conn:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    return integrity, mode


def present(path: Path, ids: list[str]) -> set[str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT id FROM messages WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),)
        )
        found = {row[0] for row in rows}
    conn.close()
    return found


@pytest.mark.requirement("I1")
@pytest.mark.parametrize("scale", SCALES)
def test_kill_9_while_posting_loses_no_acknowledged_write(
    tmp_path: Path, scale: Scale, figure: Figure
) -> None:
    data_dir = tmp_path / "data"
    headers = seed(data_dir)
    database = data_dir / DATABASE_FILENAME
    rng = random.Random(20261130)
    writes = Writes()
    corrupt: list[str] = []
    not_wal = 0
    launcher = Launcher(tmp_path, fork=scale.fork)
    try:
        for cycle in range(scale.kill_cycles):
            stop = threading.Event()
            with killable_server(launcher, data_dir) as (pid, base):
                threads = [
                    threading.Thread(
                        target=_write_until_cut,
                        args=(base, headers[w::WRITERS], f"c{cycle}-w{w}", writes, stop),
                        daemon=True,
                    )
                    for w in range(WRITERS)
                ]
                acknowledged_before = len(writes.acknowledged)
                for thread in threads:
                    thread.start()
                _wait_for_more(writes, acknowledged_before, FIRST_WRITE_TIMEOUT_SECONDS)
                time.sleep(rng.uniform(0.05, 0.3))
                launcher.kill(pid)
                stop.set()
                for thread in threads:
                    thread.join(timeout=30)
            for name in (DATABASE_FILENAME, "index.db"):
                if (data_dir / name).exists():
                    integrity, mode = check_file(data_dir / name)
                    corrupt += [f"cycle {cycle} {name}: {integrity}"] if integrity != "ok" else []
                    not_wal += mode != "wal"
    finally:
        launcher.close()
    ids = list(writes.acknowledged)
    missing = len(ids) - len(present(database, ids))
    figure(
        tried=scale.kill_cycles,
        failed=len(corrupt) + not_wal + missing,
        kills=scale.kill_cycles,
        integrity_check_failures=len(corrupt),
        acknowledged_writes=len(ids),
        acknowledged_but_missing=missing,
        journal_mode_wal=f"{scale.kill_cycles * 2 - not_wal}/{scale.kill_cycles * 2}",
        writes_refused=writes.refused,
        writes_cut_by_the_kill=writes.cut,
    )
    assert len(ids) > scale.kill_cycles, "the writers were acknowledged in most cycles"
    assert corrupt == []
    assert not_wal == 0
    assert missing == 0


def make_history(path: Path, lines: int) -> None:
    """``lines`` distinct messages over a few rooms and users, one JSON object per line."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    with path.open("w", encoding="utf-8") as out:
        for n in range(lines):
            record = {
                "room": f"room{n % 7}",
                "room_type": "c",
                "user": f"user{n % 13}",
                "ts": (t0 + timedelta(seconds=n)).isoformat(),
                "text": f"line {n}: the deploy of service {n % 97} went fine",
            }
            out.write(json.dumps(record) + "\n")


def count_messages(path: Path) -> tuple[int, int]:
    with sqlite3.connect(path) as conn:
        total, distinct = conn.execute("SELECT count(*), count(DISTINCT text) FROM messages").fetchone()
    conn.close()
    return total, distinct


@pytest.mark.requirement("I1")
@pytest.mark.parametrize("scale", SCALES)
def test_kill_9_during_an_import_then_a_re_import_completes_without_duplicates(
    tmp_path: Path, scale: Scale, figure: Figure
) -> None:
    history = tmp_path / "history.jsonl"
    make_history(history, scale.import_lines)
    data_dir = tmp_path / "data"
    database = data_dir / DATABASE_FILENAME
    rng = random.Random(7)
    command = [
        sys.executable,
        "-m",
        "ai_search_server",
        "import",
        str(history),
        "--data",
        str(data_dir),
        "--quiet",
    ]
    killed_mid_way = 0
    corrupt: list[str] = []
    counts = []
    for _kill in range(scale.import_kills):
        proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env()
        )
        # Wait until the import has committed something, then kill at a random moment after it.
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while proc.poll() is None and time.monotonic() < deadline:
            if database.exists() and (data_dir / (DATABASE_FILENAME + "-wal")).exists():
                break
            time.sleep(0.02)
        time.sleep(rng.uniform(0.1, 1.0))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            killed_mid_way += 1
        proc.wait(timeout=60)
        integrity, mode = check_file(database)
        if integrity != "ok" or mode != "wal":
            corrupt.append(f"{integrity} {mode}")
        counts.append(count_messages(database)[0])
        # An interrupted import keeps whole batches: never a part of one.
        if counts[-1] % DEFAULT_IMPORT_BATCH_SIZE:
            corrupt.append(f"{counts[-1]} messages: not a whole number of batches")
    finished = subprocess.run(command, capture_output=True, text=True, env=child_env(), timeout=600)
    total, distinct = count_messages(database)
    integrity, mode = check_file(database)
    figure(
        tried=scale.import_kills + 1,
        failed=len(corrupt) + (integrity != "ok") + (total != scale.import_lines) + (distinct != total),
        lines=scale.import_lines,
        kills_mid_import=killed_mid_way,
        messages_after_each_kill=counts,
        messages_after_re_import=total,
        duplicates=total - distinct,
        integrity_check_failures=len(corrupt) + (integrity != "ok"),
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert killed_mid_way >= 1, "at least one import was killed before it finished"
    assert corrupt == [] and (integrity, mode) == ("ok", "wal")
    assert (total, distinct) == (scale.import_lines, scale.import_lines)


# -- I2 ---------------------------------------------------------------------------------------------


@pytest.mark.requirement("I2")
def test_writers_beside_an_import_never_see_database_is_locked(tmp_path: Path, figure: Figure) -> None:
    data_dir = tmp_path / "data"
    headers = seed(data_dir)
    history = tmp_path / "history.jsonl"
    make_history(history, DEFAULT.import_lines)
    writes = Writes()
    statuses: dict[int, int] = {}
    locked = 0
    launcher = Launcher(tmp_path, fork=False)
    with contextlib.closing(launcher), killable_server(launcher, data_dir) as (_pid, base):
        importer = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ai_search_server",
                "import",
                str(history),
                "--data",
                str(data_dir),
                "--quiet",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=child_env(),
        )
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=_write_until_cut, args=(base, headers[w::WRITERS], f"w{w}", writes, stop), daemon=True
            )
            for w in range(WRITERS)
        ]
        for thread in threads:
            thread.start()
        with httpx.Client(base_url=base, timeout=10.0) as http:
            while importer.poll() is None:  # readers, while the import and the writers run
                response = http.get("/api/v1/rooms.get", headers=headers[0])
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                locked += "locked" in response.text
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        _out, import_errors = importer.communicate(timeout=60)
    locked += import_errors.decode(errors="replace").count("locked")
    figure(
        tried=len(writes.acknowledged) + writes.refused + sum(statuses.values()),
        failed=locked + (importer.returncode != 0),
        writes_acknowledged=len(writes.acknowledged),
        writes_refused=writes.refused,
        reads=statuses,
        import_exit=importer.returncode,
        database_is_locked_surfaced=locked,
    )
    assert importer.returncode == 0
    assert locked == 0
    assert writes.acknowledged


FILL_ATTEMPTS = 300


@pytest.mark.requirement("I2")
@pytest.mark.anyio
async def test_a_full_database_answers_503_and_writes_resume_when_space_is_freed(
    store: SQLiteStore, workspace: Workspace, figure: Figure
) -> None:
    app = create_app(reliability_settings(), store, limiter=None)
    alice = workspace["alice"].headers
    general = workspace.rooms["general"].id
    # The in-process app runs its handlers on this thread, so this is the connection it writes with.
    conn = store._connection()
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    conn.execute(f"PRAGMA max_page_count = {pages + 2}")
    statuses: dict[int, int] = {}
    full: list[dict[str, Any]] = []
    async with asgi(app) as http:
        for n in range(FILL_ATTEMPTS):
            response = await http.post(
                "/api/v1/chat.postMessage",
                json={"roomId": general, "text": f"{n} " + "x" * 4000},
                headers=alice,
            )
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            if response.status_code == 503:
                full.append(response.json())
                break
        read = await http.get(
            "/api/v1/chat.getMessage", params={"msgId": workspace.messages["general-1"].id}, headers=alice
        )
        integrity_when_full = conn.execute("PRAGMA integrity_check").fetchone()[0]
        conn.execute("PRAGMA max_page_count = 1073741823")
        resumed = await http.post(
            "/api/v1/chat.postMessage", json={"roomId": general, "text": "space again"}, headers=alice
        )
    error = full[0] if full else {}
    figure(
        tried=sum(statuses.values()) + 2,
        failed=(not full)
        + (read.status_code != 200)
        + (integrity_when_full != "ok")
        + (resumed.status_code != 200),
        writes_before_full=statuses.get(200, 0),
        full_answer=f"{503 if full else None} {error.get('errorType')}",
        reads_while_full=read.status_code,
        integrity_after_full=integrity_when_full,
        writes_resume=resumed.status_code,
    )
    assert error.get("errorType") == "error-service-unavailable" and error.get("success") is False
    assert "full" not in error.get("error", "") or "database" in error.get("error", "")
    assert read.status_code == 200
    assert integrity_when_full == "ok"
    assert resumed.status_code == 200
