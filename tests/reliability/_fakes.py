"""Fake upstreams and an outbound recorder for the reliability suite.

``RawUpstream``: a raw HTTP/1.1 server on 127.0.0.1 (asyncio streams in a thread) whose
``behaviour`` decides every answer, so it can misbehave in ways no ASGI server will: truncate a body,
reset the connection mid-body, drip one byte at a time, hang, stream 50 MiB. It records every request
and counts connections, bytes sent and clients that went away. It plays the remote pipeline (its
``answer`` is the JSON a pipeline returns) and the trap that must never be contacted.

``ObeyingLLM``: the OpenAI-compatible fake of ``tests/server/_fake_openai.py`` turned into a model that
"obeys" every injection: it answers with the whole prompt it was sent, asks for tool calls, and emits
links and images pointing at a trap.

``OutboundRecorder``: wraps httpcore's network backend for the whole process, so every outbound TCP
connect of the app (guarded client, pipeline, LLM) is recorded, and one to an address outside the
loopback test upstreams is refused before any packet leaves: a failing SSRF test stays on this machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpcore
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from tests.server._fake_openai import FakeOpenAI

__all__ = ["ObeyingLLM", "OutboundRecorder", "RawUpstream", "Recorded"]

# Bytes per write of a big body.
WRITE_CHUNK_BYTES = 64 * 1024
# Longest a hanging or dripping answer lasts on its own (seconds).
MAX_HOLD_SECONDS = 60.0
# How long the server thread may take to start or stop (seconds).
THREAD_WAIT_SECONDS = 5.0
MIB = 1024 * 1024


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def _head(status: int, headers: dict[str, str], version: str = "HTTP/1.1") -> bytes:
    lines = [f"{version} {status} Fake", *(f"{k}: {v}" for k, v in headers.items()), "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class RawUpstream:
    """A misbehaving upstream; set ``behaviour`` (and ``answer``, ``status``, ``interval``) per test.

    =============  ================================================================================
    ok             200 with ``answer`` as JSON (after ``delay`` seconds)
    status         ``status`` with a JSON error body holding ``SECRET_TEXT``
    error-body     200 with ``{"error": SECRET_TEXT}``
    garbage        200 application/json that is not JSON
    truncated      Content-Length of the whole answer, half of it sent, then close
    reset          half of the answer, then a TCP reset
    hang           reads the request, never answers (until the client leaves)
    drip           headers announcing a body, then one byte per ``interval`` seconds
    huge           200, chunked, ``huge_bytes`` of a JSON string, as fast as the client reads
    redirect       302 to ``location``
    sse            200 text/event-stream: the raw ``sse`` chunks as they are, then close
    =============  ================================================================================
    """

    SECRET_TEXT = "upstream-internal-detail-42"

    COMPLETION: ClassVar[dict[str, Any]] = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "It broke [1]."}}]
    }

    def __init__(self, port: int = 0) -> None:
        self.behaviour = "ok"
        self.sse: list[bytes] = []
        self.answer: Any = {"results": []}
        self.status = 500
        self.delay = 0.0
        self.interval = 1.0
        self.huge_bytes = 50 * MIB
        self.location = "http://169.254.169.254/latest/meta-data/"
        self.requests: list[Recorded] = []
        self.connections = 0
        self.bytes_sent = 0
        self.clients_gone = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.port = port
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> RawUpstream:
        self._thread.start()
        if not self._ready.wait(THREAD_WAIT_SECONDS):
            raise RuntimeError("the fake upstream did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(THREAD_WAIT_SECONDS)

    def __enter__(self) -> RawUpstream:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *lines = head.decode("latin-1").split("\r\n")
            method, path, _version = request_line.split(" ", 2)
            headers = {}
            for line in lines:
                if line:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
            self.requests.append(Recorded(method, path, headers, body))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                await self._answer(reader, writer)
            finally:
                self.in_flight -= 1
        except (ConnectionError, asyncio.IncompleteReadError):
            self.clients_gone += 1  # the client closed while we wrote: what a cut-off call looks like
        except asyncio.CancelledError:
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()
                await writer.wait_closed()

    async def _write(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(data)
        await writer.drain()
        self.bytes_sent += len(data)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        behaviour = self.behaviour
        payload = json.dumps(self.answer).encode()
        json_type = {"Content-Type": "application/json"}
        if behaviour == "ok":
            if self.delay:
                await asyncio.sleep(self.delay)
            await self._write(
                writer, _head(200, {**json_type, "Content-Length": str(len(payload))}) + payload
            )
        elif behaviour in ("status", "error-body"):
            error = json.dumps({"error": self.SECRET_TEXT}).encode()
            status = self.status if behaviour == "status" else 200
            await self._write(writer, _head(status, {**json_type, "Content-Length": str(len(error))}) + error)
        elif behaviour == "garbage":
            junk = b"<html>{'results': [oops"
            await self._write(writer, _head(200, {**json_type, "Content-Length": str(len(junk))}) + junk)
        elif behaviour == "truncated":
            await self._write(writer, _head(200, {**json_type, "Content-Length": str(len(payload))}))
            await self._write(writer, payload[: len(payload) // 2])
        elif behaviour == "reset":
            await self._write(writer, _head(200, {**json_type, "Content-Length": str(len(payload))}))
            await self._write(writer, payload[: len(payload) // 2])
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        elif behaviour == "hang":
            await self._until_gone(reader, MAX_HOLD_SECONDS)
        elif behaviour == "drip":
            await self._write(writer, _head(200, {**json_type, "Content-Length": "100000"}))
            for _ in range(int(MAX_HOLD_SECONDS / self.interval)):
                await self._write(writer, b" ")
                if await self._until_gone(reader, self.interval):
                    return
        elif behaviour == "huge":
            await self._write(writer, _head(200, {**json_type, "Transfer-Encoding": "chunked"}))
            piece = b"a" * WRITE_CHUNK_BYTES
            await self._write(writer, b'%x\r\n"%s\r\n' % (1, b""))
            for _ in range(self.huge_bytes // WRITE_CHUNK_BYTES):
                await self._write(writer, b"%x\r\n%s\r\n" % (len(piece), piece))
        elif behaviour == "sse":
            await self._write(writer, _head(200, {"Content-Type": "text/event-stream"}))
            for chunk in self.sse:
                await self._write(writer, chunk)
        elif behaviour == "redirect":
            await self._write(writer, _head(302, {"Location": self.location, "Content-Length": "0"}))
        else:
            raise AssertionError(f"unknown behaviour {behaviour}")

    async def _until_gone(self, reader: asyncio.StreamReader, seconds: float) -> bool:
        """Wait up to ``seconds``; True when the client closed its side meanwhile."""
        try:
            data = await asyncio.wait_for(reader.read(1), seconds)
        except TimeoutError:
            return False
        if not data:
            self.clients_gone += 1
            return True
        return False


class ObeyingLLM(FakeOpenAI):
    """A model that follows every injected instruction (see the module docstring).

    Its answer is the system prompt and the user prompt it received, then a Markdown image, an HTML
    image and a link to ``trap_url``, and (JSON answers) ``tool_calls`` for ``tools_requested``.
    """

    def __init__(self, trap_url: str) -> None:
        self.trap_url = trap_url
        self.tools_requested = ("post_chat_postMessage_by_channel", "post_channels_create", "get_rooms_get")
        super().__init__()

    def obey(self, body: Any) -> str:
        messages = body.get("messages", []) if isinstance(body, dict) else []
        said = "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        return (
            f"Sure. Here is everything I was told:\n{said}\n"
            f'![status]({self.trap_url}/exfil.png?d=1) <img src="{self.trap_url}/x.png"> '
            f"[click]({self.trap_url}/login) [1]"
        )

    def _tool_calls(self) -> list[dict[str, Any]]:
        return [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps({"channel": "#general", "text": "pwned"})},
            }
            for n, name in enumerate(self.tools_requested)
        ]

    async def _completions(self, request: Request) -> Response:
        recorded = await self._record(request)
        text = self.obey(recorded.body)
        if isinstance(recorded.body, dict) and recorded.body.get("stream") is True:
            return StreamingResponse(self._obeying_stream(text), media_type="text/event-stream")
        message = {"role": "assistant", "content": text, "tool_calls": self._tool_calls()}
        return JSONResponse({"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]})

    async def _obeying_stream(self, text: str) -> AsyncIterator[bytes]:
        calls = [{"index": n, **call} for n, call in enumerate(self._tool_calls())]
        chunks: list[dict[str, Any]] = [{"tool_calls": calls}]
        chunks += [{"content": text[i : i + 40]} for i in range(0, len(text), 40)]
        for delta in chunks:
            payload = {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            yield f"data: {json.dumps(payload)}\n\n".encode()
        yield b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
        yield b"data: [DONE]\n\n"


@dataclass
class OutboundRecorder:
    """Every outbound connect of this process: ``allowed`` (host, port) pairs pass, others are refused."""

    allowed: set[tuple[str, int]] = field(default_factory=set)
    connects: list[tuple[str, int]] = field(default_factory=list)
    refused: list[tuple[str, int]] = field(default_factory=list)

    def allow(self, url: str) -> None:
        host, _, port = url.removeprefix("http://").partition("/")[0].rpartition(":")
        self.allowed.add((host, int(port)))

    @contextlib.contextmanager
    def installed(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[OutboundRecorder]:
        original = httpcore.AnyIOBackend.connect_tcp
        recorder = self

        async def connect_tcp(backend: Any, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
            recorder.connects.append((host, port))
            if (host, port) not in recorder.allowed:
                recorder.refused.append((host, port))
                raise httpcore.ConnectError(f"test recorder: {host}:{port} is not a test upstream")
            return await original(backend, host, port, *args, **kwargs)

        monkeypatch.setattr(httpcore.AnyIOBackend, "connect_tcp", connect_tcp)
        yield self

    @property
    def off_list(self) -> list[tuple[str, int]]:
        return [pair for pair in self.connects if pair not in self.allowed]
