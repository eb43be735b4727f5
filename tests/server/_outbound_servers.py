"""Fake upstreams for the outbound-client tests: a raw HTTP/1.1 server on a loopback address.

Raw asyncio streams rather than an ASGI app, because the faults we need (a body with no
Content-Length, bytes dripped slower than any deadline, a request never answered) are exactly what
a well-behaved ASGI server will not produce. Each server runs its own event loop in a thread, counts
every connection and request per path, and answers with ``Connection: close``, so every request is a
fresh connection (and a fresh destination check on the client side).

Routes (query parameters in brackets):

- ``/json``: 200, echoes ``{"method", "path", "query", "headers", "body"}`` (the request body as JSON).
- ``/sse`` [``events``]: an event stream (comments, multi-line data, ``[DONE]``), then close.
- ``/sse-cut``: two events, then a third cut off before its blank line.
- ``/sse-drip`` [``interval``]: one event per interval, forever.
- ``/status`` [``code``]: that status with a small JSON error body.
- ``/redirect`` [``code``, ``to``]: a redirect to ``to``.
- ``/raw?body=...``: 200 ``application/json`` with that body (the percent-decoded query, as bytes).
- ``/big`` [``size``, ``mode``]: a JSON string of exactly ``size`` bytes, sent with Content-Length
  (``length``), chunked (``chunked``), or delimited by closing the connection (``close``).
- ``/drip`` [``interval``]: headers announcing 1000 bytes, then one byte per interval.
- ``/hang``: reads the request and never answers.
- ``/cookie``: sets a cookie and echoes like ``/json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote_to_bytes, urlsplit

__all__ = ["LoopbackServer"]

# Server-side write size for big bodies (bytes).
WRITE_CHUNK_BYTES = 64 * 1024
# How long the server thread may take to start or stop (seconds).
THREAD_WAIT_SECONDS = 5.0


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    raw_query: str
    headers: dict[str, str]
    body: bytes


Handler = Callable[["LoopbackServer", asyncio.StreamWriter, Request], Awaitable[None]]


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} Fake", *(f"{k}: {v}" for k, v in headers.items()), "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def _send(
    writer: asyncio.StreamWriter, status: int, body: bytes, content_type: str, **extra: str
) -> None:
    headers = {"Content-Type": content_type, "Content-Length": str(len(body)), **extra}
    writer.write(_head(status, headers) + body)
    await writer.drain()


async def _json(server: LoopbackServer, writer: asyncio.StreamWriter, request: Request) -> None:
    echo = {
        "method": request.method,
        "path": request.path,
        "query": request.query,
        "headers": request.headers,
        "body": json.loads(request.body) if request.body else None,
    }
    extra = {"Set-Cookie": "session=upstream-cookie; Path=/"} if request.path == "/cookie" else {}
    await _send(writer, 200, json.dumps(echo).encode(), "application/json", **extra)


async def _sse(server: LoopbackServer, writer: asyncio.StreamWriter, request: Request) -> None:
    events = int(request.query.get("events", "3"))
    parts = [": a comment line\n\n", "event: ignored-name\ndata: first line\ndata: second line\n\n"]
    parts += [f'data: {{"n": {i}}}\r\n\r\n' for i in range(events)]
    parts.append("data: [DONE]\n\n")
    writer.write(_head(200, {"Content-Type": "text/event-stream"}))
    for part in parts:  # one write each, so the client sees several chunks
        writer.write(part.encode())
        await writer.drain()


async def _sse_cut(server: LoopbackServer, writer: asyncio.StreamWriter, request: Request) -> None:
    writer.write(_head(200, {"Content-Type": "text/event-stream"}))
    writer.write(b"data: one\n\ndata: two\n\ndata: three-cut-off\n")
    await writer.drain()


async def _sse_drip(server: LoopbackServer, writer: asyncio.StreamWriter, request: Request) -> None:
    interval = float(request.query.get("interval", "0.05"))
    writer.write(_head(200, {"Content-Type": "text/event-stream"}))
    n = 0
    while True:
        writer.write(f"data: {n}\n\n".encode())
        await writer.drain()
        n += 1
        await asyncio.sleep(interval)


async def _status(server: LoopbackServer, writer: asyncio.StreamWriter, request: Request) -> None:
    code = int(request.query.get("code", "500"))
    await _send(writer, code, b'{"error": "upstream says no: internal detail"}', "application/json")


async def _redirect(server: LoopbackServer, writer: asyncio.StreamWriter, request: Request) -> None:
    code = int(request.query.get("code", "302"))
    await _send(writer, code, b"", "text/plain", Location=request.query["to"])


async def _raw(server: LoopbackServer, writer: asyncio.StreamWriter, request: Request) -> None:
    body = unquote_to_bytes(request.raw_query.removeprefix("body="))
    await _send(writer, 200, body, "application/json")


async def _big(server: LoopbackServer, writer: asyncio.StreamWriter, request: Request) -> None:
    size, mode = int(request.query["size"]), request.query.get("mode", "length")
    payload = b'"' + b"a" * (size - 2) + b'"'
    framing = {
        "length": {"Content-Length": str(size)},
        "chunked": {"Transfer-Encoding": "chunked"},
        "close": {},
    }
    head = _head(200, {"Content-Type": "application/json", **framing[mode]})
    if mode == "close":  # HTTP/1.0-style: the body ends when the connection does
        head = head.replace(b"HTTP/1.1", b"HTTP/1.0", 1)
    writer.write(head)
    for start in range(0, size, WRITE_CHUNK_BYTES):
        piece = payload[start : start + WRITE_CHUNK_BYTES]
        writer.write(b"%x\r\n%s\r\n" % (len(piece), piece) if mode == "chunked" else piece)
        await writer.drain()
        server.bytes_sent += len(piece)
    if mode == "chunked":
        writer.write(b"0\r\n\r\n")
        await writer.drain()


async def _drip(server: LoopbackServer, writer: asyncio.StreamWriter, request: Request) -> None:
    interval = float(request.query.get("interval", "0.05"))
    writer.write(_head(200, {"Content-Type": "application/json", "Content-Length": "1000"}))
    await writer.drain()
    for _ in range(1000):
        writer.write(b" ")
        await writer.drain()
        await asyncio.sleep(interval)


async def _hang(server: LoopbackServer, writer: asyncio.StreamWriter, request: Request) -> None:
    await asyncio.sleep(3600)


ROUTES: dict[str, Handler] = {
    "/json": _json,
    "/cookie": _json,
    "/sse": _sse,
    "/sse-cut": _sse_cut,
    "/sse-drip": _sse_drip,
    "/status": _status,
    "/redirect": _redirect,
    "/raw": _raw,
    "/big": _big,
    "/drip": _drip,
    "/hang": _hang,
}


class LoopbackServer:
    """One fake upstream on ``host`` (a loopback address), counting what reaches it."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self.connections = 0
        self.hits: Counter[str] = Counter()
        self.request_headers: list[dict[str, str]] = []
        self.bytes_sent = 0
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name=f"fake-upstream-{host}", daemon=True)

    @property
    def requests(self) -> int:
        return sum(self.hits.values())

    def url(self, path: str, host: str | None = None) -> str:
        return f"http://{host or self.host}:{self.port}{path}"

    def start(self) -> LoopbackServer:
        self._thread.start()
        if not self._ready.wait(THREAD_WAIT_SECONDS):
            raise RuntimeError("fake upstream did not start")
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(THREAD_WAIT_SECONDS)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # surfaced by start(); a bind failure must not hang the tests
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            handlers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in handlers:
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            method, target, _version = request_line.split(" ", 2)
            headers = {}
            for line in header_lines:
                if line:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            parts = urlsplit(target)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            request = Request(method, parts.path, query, parts.query, headers, body)
            self.hits[parts.path] += 1
            self.request_headers.append(headers)
            handler = ROUTES.get(parts.path)
            if handler is None:
                await _send(writer, 404, b"{}", "application/json")
            else:
                await handler(self, writer, request)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away: what a cut-off call looks like from here
        except asyncio.CancelledError:
            pass  # stop(): end quietly, or asyncio's stream callback logs the cancelled task
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()
