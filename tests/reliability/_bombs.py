"""Decompression bombs and damaged archives as the third review built them, small on disk.

Each is a real export (a Slack zip, a Zulip tar.gz) whose first conversation day or messages file is
honest (``HONEST_MESSAGES`` messages, which an import must keep) and whose next member is the bomb:

==================  =========================================================================================
``zip-string``      a Slack day file of ``mib`` MiB: one message whose text is that long (the review's 261 KB zip)
``zip-whitespace``  a Slack day file of ``mib`` MiB: a list padded with spaces (valid JSON, nothing to import)
``zip-spread``      ``mib`` MiB over many 4 MiB day files, each far under the per-member cap
``tar-2gib``        a Zulip messages file declared and stored as 2 GiB of padding (the review's 2 MB tar.gz)
``zip-damaged-*``   a Slack day file whose deflate data is damaged (``zlib.error``) or decodes wrong (bad CRC)
``zip-damaged-dir``  a Slack zip whose central directory is damaged (the archive cannot be opened)
``many_members``    an honest export, then ``count`` empty members (a zip, or a tar.gz)
==================  =========================================================================================

The large members are written as repeated compressed blocks: a gzip stream may be a series of gzip
members (RFC 1952), so a 2 GiB member costs one compressed MiB, written 2,048 times; a zip member is
one deflate stream, compressed as it is written, a MiB at a time.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BOMBS",
    "HONEST_MESSAGES",
    "ImportRun",
    "damaged_directory",
    "damaged_mattermost",
    "damaged_zip",
    "many_members",
    "run_import",
    "slack_bomb",
    "zulip_bomb",
]

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024
HONEST_MESSAGES = 20
_TS0 = 1793610000  # 2026-11-02
_PEOPLE = (("U01ALICE", "alice"), ("U02BOB", "bob"), ("U03CAROL", "carol"))


def _messages(day: int, count: int, channel: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "message",
            "user": _PEOPLE[n % 3][0],
            "text": f"{channel} day {day} note {n}: the deploy of shard {n} went fine",
            "ts": f"{_TS0 + day * 86400 + n * 60}.000{n:03d}",
        }
        for n in range(count)
    ]


def _slack_lists(archive: zipfile.ZipFile) -> None:
    users = [
        {"id": uid, "team_id": "T0BOMB", "name": name, "real_name": name.title()} for uid, name in _PEOPLE
    ]
    channels = [
        {"id": "C01GENERAL", "name": "general", "members": [uid for uid, _ in _PEOPLE]},
        {"id": "C02RANDOM", "name": "random", "members": ["U01ALICE", "U02BOB"]},
    ]
    archive.writestr("users.json", json.dumps(users))
    archive.writestr("channels.json", json.dumps(channels))
    archive.writestr("general/2026-11-02.json", json.dumps(_messages(0, HONEST_MESSAGES, "general")))
    archive.writestr("random/2026-11-02.json", json.dumps(_messages(0, 5, "random")))


def _padded(archive: zipfile.ZipFile, name: str, head: bytes, size: int, tail: bytes, fill: bytes) -> None:
    """Member ``name`` of exactly ``size`` bytes: ``head``, ``fill`` repeated, ``tail``."""
    block = fill * (MIB // len(fill))
    with archive.open(name, "w", force_zip64=True) as out:
        out.write(head)
        left = size - len(head) - len(tail)
        while left > 0:
            out.write(block[:left])
            left -= min(left, len(block))
        out.write(tail)


def slack_bomb(path: Path, kind: str, mib: int = 256) -> Path:
    """A Slack export zip with the honest day, then the bomb of ``kind`` (module docstring)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        _slack_lists(archive)
        if kind == "string":
            head = b'[{"type": "message", "user": "U02BOB", "ts": "1793700000.000100", "text": "'
            _padded(archive, "general/2026-11-03.json", head, mib * MIB, b'"}]', b"a")
        elif kind == "whitespace":
            _padded(archive, "general/2026-11-03.json", b"[", mib * MIB, b"]", b" ")
        elif kind == "spread":
            for n in range(mib // 4):  # day files sort after the honest one (names, not dates, count)
                _padded(
                    archive,
                    f"general/2027-{n // 28 + 1:02d}-{n % 28 + 1:02d}.json",
                    b"[",
                    4 * MIB,
                    b"]",
                    b" ",
                )
        else:
            raise ValueError(kind)
    return path


def damaged_zip(path: Path, damage: str = "deflate") -> Path:
    """A Slack export zip whose second general day file is damaged: ``deflate``, its compressed data
    starts with a block of the reserved type (``zlib.error``: invalid block type, as the review's);
    ``crc``, its data is overwritten part way and decodes to something else (a bad CRC-32)."""
    day = json.dumps(_messages(1, 400, "general"), indent=1).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        _slack_lists(archive)
        archive.writestr("general/2026-11-03.json", day)
        archive.writestr("general/2026-11-04.json", json.dumps(_messages(2, 5, "general")))
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("general/2026-11-03.json")
    data = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    if damage == "deflate":
        data[start] = 0xFF  # BFINAL 1, BTYPE 11: reserved
    else:
        middle = start + info.compress_size // 2
        data[middle : middle + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    return path


def damaged_mattermost(path: Path, posts: int = 6000) -> Path:
    """A Mattermost export zip (``mmctl export``) of ``posts`` posts, about 2.5 MB of JSONL, whose
    deflate data is overwritten three quarters of the way in: the posts before read, then the damage."""
    lines = [
        {"type": "version", "version": 1},
        {"type": "team", "team": {"name": "acme", "display_name": "Acme", "type": "O"}},
        {"type": "channel", "channel": {"team": "acme", "name": "town-square", "type": "O"}},
        *(
            {"type": "user", "user": {"username": name, "teams": [{"name": "acme", "channels": [{"name": "town-square"}]}]}}
            for _uid, name in _PEOPLE
        ),
        *(
            {"type": "post", "post": {"team": "acme", "channel": "town-square", "user": _PEOPLE[n % 3][1],
             "message": f"post {n}: shard {n % 97} of billing-api rolled to v{n % 13}.{n % 7} " + "ok " * (n % 60),
             "create_at": (_TS0 + n) * 1000}}
            for n in range(posts)
        ),
    ]  # fmt: skip
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("export.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("export.jsonl")
    data = bytearray(path.read_bytes())
    at = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + info.compress_size * 3 // 4
    data[at : at + 256] = bytes(range(256))
    path.write_bytes(bytes(data))
    return path


def _tar_header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(format=tarfile.PAX_FORMAT)


def _tar_member(name: str, data: bytes) -> bytes:
    return _tar_header(name, len(data)) + data + b"\0" * (-len(data) % 512)


def _zulip_start(folder: str) -> bytes:
    """realm.json and an honest messages-000001.json as tar members (uncompressed)."""
    realm = {
        "zerver_realm": [{"id": 2, "string_id": "bomb"}],
        "zerver_userprofile": [
            {"id": 10 + n, "delivery_email": f"{name}@bomb.test", "full_name": name.title(), "realm": 2}
            for n, (_uid, name) in enumerate(_PEOPLE)
        ],
        "zerver_stream": [{"id": 100, "name": "general", "invite_only": False, "realm": 2}],
        "zerver_recipient": [{"id": 200, "type": 2, "type_id": 100}],
        "zerver_subscription": [{"user_profile": 10 + n, "recipient": 200, "active": True} for n in range(3)],
    }
    honest = {
        "zerver_message": [
            {"id": 1000 + n, "sender": 10 + n % 3, "recipient": 200, "subject": "deploys",
             "content": f"general note {n}: the deploy of shard {n} went fine", "date_sent": _TS0 + n * 60}
            for n in range(HONEST_MESSAGES)
        ]
    }  # fmt: skip
    return _tar_member(f"{folder}/realm.json", json.dumps(realm).encode()) + _tar_member(
        f"{folder}/messages-000001.json", json.dumps(honest).encode()
    )


def zulip_bomb(path: Path, mib: int = 2048) -> Path:
    """A Zulip export tar.gz: realm.json, an honest messages-000001.json, then messages-000002.json of
    ``mib`` MiB of padding inside ``{"zerver_message": [...]}``, as a series of gzip members."""
    head, tail, size = b'{"zerver_message": [', b"]}", mib * MIB
    with path.open("wb") as out:
        out.write(
            gzip.compress(
                _zulip_start("zulip-export-bomb")
                + _tar_header("zulip-export-bomb/messages-000002.json", size)
                + head
            )
        )
        block = gzip.compress(b" " * MIB)
        left = size - len(head) - len(tail)
        for _ in range(left // MIB):
            out.write(block)
        out.write(gzip.compress(b" " * (left % MIB) + tail + b"\0" * (-size % 512) + b"\0" * 1024))
    return path


def many_members(path: Path, count: int, kind: str) -> Path:
    """An honest export (a Slack zip, or a Zulip tar.gz) followed by ``count`` empty members."""
    if kind == "zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
            _slack_lists(archive)
            for n in range(count):
                archive.writestr(f"uploads/x-{n:07d}.bin", b"")
        return path
    empty = b"".join(_tar_header(f"zulip-export-many/uploads/x-{n:07d}.bin", 0) for n in range(count))
    path.write_bytes(gzip.compress(_zulip_start("zulip-export-many") + empty + b"\0" * 1024))
    return path


def damaged_directory(path: Path) -> Path:
    """A Slack export zip whose central directory's first entry has lost its signature."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        _slack_lists(archive)
    data = bytearray(path.read_bytes())
    at = data.index(b"PK\x01\x02")
    data[at : at + 4] = b"XX\x01\x02"
    path.write_bytes(bytes(data))
    return path


# name -> (builder of the archive at a path, what its first conversation keeps)
BOMBS: dict[str, Callable[[Path], Path]] = {
    "zip-string": lambda path: slack_bomb(path, "string"),
    "zip-whitespace": lambda path: slack_bomb(path, "whitespace"),
    "zip-spread": lambda path: slack_bomb(path, "spread", mib=160),
    "tar-2gib": lambda path: zulip_bomb(path),
    "zip-damaged-deflate": damaged_zip,
    "zip-damaged-crc": lambda path: damaged_zip(path, "crc"),
    "zip-damaged-directory": damaged_directory,
}


# The command, with its own peak memory written last to stderr: VmHWM, the high-water mark of this
# process's own memory. Not getrusage: on Linux its maxrss keeps the RSS the parent had when it
# forked (a pytest process of 800 MB would be counted as the child's).
_RUN = """
import sys
from ai_search_server.cli import main
try:
    status = main(sys.argv[1:])
finally:
    with open("/proc/self/status") as status_file:
        peak = next(line.split()[1] for line in status_file if line.startswith("VmHWM:"))
    print(f"peak-rss-kib {peak}", file=sys.stderr)
sys.exit(status)
"""
# Seconds between two looks at the import's temporary folder.
POLL_SECONDS = 0.02


@dataclass
class ImportRun:
    """What one ``ai-search import`` process did and cost."""

    status: int
    seconds: float
    peak_rss_mib: float
    peak_temp_mib: float
    stdout: str
    stderr: str

    @property
    def traceback(self) -> bool:
        return "Traceback" in self.stderr


def _folder_bytes(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):  # removed while we looked
                total += (Path(root) / name).stat().st_size
    return total


def run_import(archive: Path, work: Path, *, code: Path | None = None, database_url: str = "") -> ImportRun:
    """``ai-search import ARCHIVE --quiet`` in a process of its own (``code``: another copy of py/ to
    run), into a fresh data dir under ``work``, its ``TMPDIR`` a private folder polled every
    POLL_SECONDS for the most it held; its own peak RSS (VmHWM)."""
    data, tmp = work / "data", work / "tmp"
    data.mkdir(parents=True)
    tmp.mkdir()
    (data / "config.toml").write_text('embedder = "none"\n')
    paths = [str(code or ROOT / "py"), str(ROOT)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "TMPDIR": str(tmp)}
    command = [sys.executable, "-c", _RUN, "import", str(archive), "--quiet", "--data", str(data)]
    command += ["--database", database_url] if database_url else []
    peak = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _folder_bytes(tmp))
            time.sleep(POLL_SECONDS)

    watcher = threading.Thread(target=watch, daemon=True)
    started = time.monotonic()
    watcher.start()
    try:
        finished = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
    finally:
        done.set()
        watcher.join()
    rss = next((int(n.split()[1]) for n in finished.stderr.splitlines() if n.startswith("peak-rss-kib ")), 0)
    return ImportRun(
        finished.returncode,
        time.monotonic() - started,
        rss / 1024,
        peak[0] / MIB,
        finished.stdout,
        finished.stderr,
    )
