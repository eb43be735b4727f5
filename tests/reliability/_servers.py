"""Real servers on loopback for the reliability suite, and a raw HTTP client for hostile bytes.

``ServedApp(app)``: the app under uvicorn as ``ai-search serve`` runs it (its parser and head cap, no
proxy headers, no server header: ``serving.server_options``; lifespan on), in a daemon thread on a free 127.0.0.1 port.
``raw_exchange(port, data)``: bytes in, bytes out over one TCP connection, for requests no HTTP
client library would send. ``free_port()`` and ``proc_stats(pid)`` serve the subprocess tests.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path
from typing import Any

from .._uvicorn import UvicornThread

__all__ = ["START_TIMEOUT_SECONDS", "ServedApp", "free_port", "proc_stats", "raw_exchange"]

# How long a server may take to start or stop (seconds).
START_TIMEOUT_SECONDS = 30.0
# How long raw_exchange waits for the server to answer and close (seconds).
RAW_READ_TIMEOUT_SECONDS = 10.0
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServedApp(UvicornThread):
    """The app as ``ai-search serve`` runs it (``serving.server_options``, lifespan on); a context
    manager yielding itself (``.url``, ``.port``)."""

    def __init__(self, app: Any, **config: Any) -> None:
        serve_like = {
            "lifespan": "on",
            "ws": "auto",
            "timeout_graceful_shutdown": 2,
        }
        super().__init__(app, **{**serve_like, **config})


def raw_exchange(port: int, data: bytes, *, read_timeout: float = RAW_READ_TIMEOUT_SECONDS) -> bytes:
    """Send ``data`` as it is and return everything the server sends until it closes or goes quiet."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as conn:
        # The server may close before reading everything: its answer is still there to read.
        with contextlib.suppress(OSError):
            conn.sendall(data)
        chunks = []
        deadline = time.monotonic() + read_timeout
        while time.monotonic() < deadline:
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                break
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            if b"\r\n\r\n" in b"".join(chunks) and _complete(b"".join(chunks)):
                break
        return b"".join(chunks)


def _complete(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return len(body) >= int(value.strip())
    return False


def proc_stats(pid: int) -> dict[str, float]:
    """RSS (MiB), open file descriptors and CPU seconds (user + system) of a live process."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    rss_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return {
        "rss_mib": rss_pages * _PAGE_BYTES / (1024 * 1024),
        "fds": float(len(os.listdir(f"/proc/{pid}/fd"))),
        "cpu_seconds": (int(stat[11]) + int(stat[12])) / ticks,
    }
