"""A real OpenAI-compatible server for the answer tests: Starlette on uvicorn, in a thread, on 127.0.0.1.

It speaks the two calls the product makes, ``GET /v1/models`` and ``POST /v1/chat/completions``
(plain JSON, or server-sent events when the body says ``stream: true``), and records every request.
``behaviour`` switches what it does next (tests set it; ``reset`` puts everything back):

==============  ===========================================================================
ok              answer ``answer`` (JSON), or stream it in ``chunks`` then ``[DONE]``
500             HTTP 500 with a JSON error body holding ``PROVIDER_SECRET_TEXT``
401-echo        HTTP 401 whose body quotes the Authorization header it got (as OpenAI does)
slow            wait (up to ``MAX_HOLD_SECONDS``) before any byte, until the client goes away
stall           stream the first chunk, then wait like ``slow``
hold            stream the first chunk, then wait until ``release`` is set, then the rest
garbage         200 with a body (or a stream event) that is not JSON
empty           answer ``"   "`` (JSON) or stream only whitespace
no-choices      ``{"choices": []}`` (JSON) or stream chunks without choices, then ``[DONE]``
oversize        a body (or stream) larger than the 5 MiB cap
error-event     stream the first chunk, then an ``{"error": ...}`` event (vLLM, OpenAI do so)
cut             stream two chunks, then close without ``[DONE]`` or a ``finish_reason``
finish-only     stream the chunks, the last with ``finish_reason: "stop"``, no ``[DONE]``
length          answer or stream as ``ok``, but finish with ``finish_reason: "length"`` (token limit)
echo-auth       a hostile provider: the answer quotes the Authorization header it got and ``echo``
                (streamed three characters a chunk, so the key is split), and so do the model ids
==============  ===========================================================================

``chunk_delay_seconds`` spaces the streamed chunks out like a model writing, and delays a JSON answer
by as long (benchmarks; 0 in tests).
``models`` is the id list ``/v1/models`` returns with ``ok``; the other behaviours apply to it too.

Usage::

    with UvicornThread(FakeOpenAI().app) as server:  # or FakeOpenAI().serve()
        base_url = f"{server.url}/v1"
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .._uvicorn import UvicornThread

__all__ = [
    "DEFAULT_ANSWER",
    "DEFAULT_CHUNKS",
    "OVERSIZE_BYTES",
    "PROVIDER_SECRET_TEXT",
    "FakeOpenAI",
    "RecordedRequest",
    "UvicornThread",
]

# Text the provider puts in its error bodies; it must never reach an API client.
PROVIDER_SECRET_TEXT = "internal-provider-detail-7f3a"
DEFAULT_ANSWER = "The deploy failed on billing-api [1] and was rolled back [2]."
# The same answer as a model streams it, a 【N†...】 citation group split across three chunks.
DEFAULT_CHUNKS = ("The deploy failed ", "on billing-api【", "1†L1-", "L2】 and was rolled back [", "2].")
# Bytes of an oversize answer: a little over the 5 MiB cap.
OVERSIZE_BYTES = 5 * 1024 * 1024 + 64 * 1024
# Longest a slow, stalled or held response waits (seconds) before giving up by itself.
MAX_HOLD_SECONDS = 30.0
# How often a waiting response checks whether its client went away (seconds).
POLL_SECONDS = 0.02
# How long the server thread may take to start or stop (seconds).
THREAD_WAIT_SECONDS = 10.0


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


def _chunk(content: str | None, finish_reason: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    payload = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return f"data: {json.dumps(payload)}\n\n".encode()


def _completion(content: Any, finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}
        ],
    }


class FakeOpenAI:
    """The fake provider's state and its Starlette app; see the module docstring."""

    def __init__(self) -> None:
        self.app = Starlette(
            routes=[
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/chat/completions", self._completions, methods=["POST"]),
            ]
        )
        self.release = threading.Event()
        self.reset()

    def reset(self) -> None:
        self.behaviour = "ok"
        self.answer = DEFAULT_ANSWER
        self.chunks: Sequence[str] = DEFAULT_CHUNKS
        self.chunk_delay_seconds = 0.0
        self.models: Sequence[str] = ("gpt-4o", "llama3.1:8b", "B-model", "a-model")
        self.echo = ""  # more text the echo-auth behaviour quotes (other secrets it learnt of)
        self.requests: list[RecordedRequest] = []
        self.release.clear()

    def serve(self) -> UvicornThread:
        return UvicornThread(self.app)

    def completions(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    async def _record(self, request: Request) -> RecordedRequest:
        raw = await request.body()
        recorded = RecordedRequest(
            request.method, request.url.path, dict(request.headers), json.loads(raw) if raw else None
        )
        self.requests.append(recorded)
        return recorded

    async def _wait(self, request: Request, until: threading.Event | None = None) -> bool:
        """Wait until ``until`` is set (True), or the client left or the cap passed (False)."""
        deadline = time.monotonic() + MAX_HOLD_SECONDS
        while time.monotonic() < deadline:
            if until is not None and until.is_set():
                return True
            if await request.is_disconnected():
                return False
            await asyncio.sleep(POLL_SECONDS)
        return False

    def _error(self, request: Request, behaviour: str) -> Response | None:
        if behaviour == "500":
            body = {
                "error": {"message": f"{PROVIDER_SECRET_TEXT}: upstream exploded", "type": "server_error"}
            }
            return JSONResponse(body, status_code=500)
        if behaviour == "401-echo":
            given = request.headers.get("authorization", "")
            body = {
                "error": {"message": f"Incorrect API key provided: {given}", "type": "invalid_request_error"}
            }
            return JSONResponse(body, status_code=401)
        return None

    async def _models(self, request: Request) -> Response:
        await self._record(request)
        behaviour = self.behaviour
        if (error := self._error(request, behaviour)) is not None:
            return error
        if behaviour == "slow":
            await self._wait(request)
            return Response(status_code=204)
        if behaviour == "garbage":
            return Response(b"<html>not json", media_type="application/json")
        if behaviour == "oversize":
            return JSONResponse({"data": [{"id": "x" * OVERSIZE_BYTES}]})
        if behaviour == "echo-auth":
            leaked = [request.headers.get("authorization", ""), *self.echo.split()]
            return JSONResponse({"data": [{"id": f"model-{value}"} for value in leaked] + [{"id": "gpt-4o"}]})
        return JSONResponse({"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]})

    async def _completions(self, request: Request) -> Response:
        recorded = await self._record(request)
        behaviour = self.behaviour
        if (error := self._error(request, behaviour)) is not None:
            return error
        if behaviour == "slow":
            await self._wait(request)
            return Response(status_code=204)
        if behaviour == "echo-auth":
            text = self._echo_text(request)
            if isinstance(recorded.body, dict) and recorded.body.get("stream") is True:
                return StreamingResponse(_echo_stream(text), media_type="text/event-stream")
            return JSONResponse(_completion(text))
        if isinstance(recorded.body, dict) and recorded.body.get("stream") is True:
            return StreamingResponse(self._stream(request, behaviour), media_type="text/event-stream")
        if behaviour == "garbage":
            return Response(b'{"choices": [oops', media_type="application/json")
        if behaviour == "empty":
            return JSONResponse(_completion("   "))
        if behaviour == "no-choices":
            return JSONResponse({"choices": []})
        if behaviour == "oversize":
            return JSONResponse(_completion("x" * OVERSIZE_BYTES))
        if self.chunk_delay_seconds:  # as long as the streamed answer takes to write
            await asyncio.sleep(self.chunk_delay_seconds * (len(self.chunks) - 1))
        return JSONResponse(_completion(self.answer, "length" if behaviour == "length" else "stop"))

    def _echo_text(self, request: Request) -> str:
        given = request.headers.get("authorization", "(none)")
        return f"I was called with {given} and told {self.echo} [1]."

    async def _stream(self, request: Request, behaviour: str) -> AsyncIterator[bytes]:
        chunks = list(self.chunks)
        yield _chunk(None)  # role-only opening chunk, as OpenAI sends
        if behaviour == "garbage":
            yield b"data: {not json\n\n"
            return
        if behaviour == "empty":
            yield _chunk("  ")
            yield _chunk("\n", "stop")
            yield b"data: [DONE]\n\n"
            return
        if behaviour == "no-choices":
            yield b'data: {"choices": []}\n\n'
            yield b"data: [DONE]\n\n"
            return
        if behaviour == "oversize":
            piece = "x" * (64 * 1024)
            for _ in range(OVERSIZE_BYTES // len(piece) + 1):
                yield _chunk(piece)
            yield b"data: [DONE]\n\n"
            return
        yield _chunk(chunks[0])
        if behaviour == "stall":
            await self._wait(request)
            return
        if behaviour == "error-event":
            message = f"{PROVIDER_SECRET_TEXT}: overloaded"
            yield f"data: {json.dumps({'error': {'message': message}})}\n\n".encode()
            return
        if behaviour == "hold" and not await self._wait(request, self.release):
            return
        if behaviour == "cut":
            yield _chunk(chunks[1])
            return
        for index, text in enumerate(chunks[1:], start=1):
            if self.chunk_delay_seconds:
                await asyncio.sleep(self.chunk_delay_seconds)
            last = index == len(chunks) - 1
            yield _chunk(text, "stop" if last and behaviour == "finish-only" else None)
        if behaviour != "finish-only":
            yield _chunk(None, "length" if behaviour == "length" else "stop")
            yield b"data: [DONE]\n\n"


async def _echo_stream(text: str) -> AsyncIterator[bytes]:
    yield _chunk(None)
    for start in range(0, len(text), 3):
        yield _chunk(text[start : start + 3])
    yield _chunk(None, "stop")
    yield b"data: [DONE]\n\n"
