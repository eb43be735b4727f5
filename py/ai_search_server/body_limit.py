"""The request body cap: 413 for a body over the cap, 408 for one whose reading takes too long.

:class:`BodyLimitMiddleware` comes after the Origin check in ``app.create_app``'s stack, so a refused
origin costs no upload read. Refusals are ``errors.RequestTooLarge`` and ``errors.RequestTimeout``,
rendered by ``errors.refusal_response`` (a JSON-RPC envelope on the MCP endpoint).
"""

from __future__ import annotations

import math
from collections.abc import Collection

import anyio
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import errors

__all__ = ["DEFAULT_MAX_REQUEST_BODY_BYTES", "DEFAULT_REQUEST_BODY_TIMEOUT_SECONDS", "BodyLimitMiddleware"]

# Bytes of one request body. 5 MiB is the cap the upstream MCP endpoint puts on a batch's tool results
# and on its final JSON (DESIGN decision 6, upstream-mcp.md §8.2), so any request an MCP client may
# legitimately send here fits; a REST body (a query of at most 500 characters, at most 20 message ids,
# one chat message) is far smaller. The MCP Python SDK's own default is 4 MiB.
DEFAULT_MAX_REQUEST_BODY_BYTES = 5 * 1024 * 1024
# Seconds reading one request body may take, from the first read to the last byte: the 20 s deadline
# of an answer (upstream's). A client on a slow link sends 5 MiB in that time at 2 Mbit/s; a client
# that trickles its body would otherwise hold a connection, a task and the bytes so far for ever
# (uvicorn has no body-read timeout).
DEFAULT_REQUEST_BODY_TIMEOUT_SECONDS = 20.0


class _BodyRead:
    """One request body read into memory, chunk by chunk, until it ends, passes the cap or is cut off."""

    def __init__(self, max_body_bytes: int) -> None:
        self.max_body_bytes = max_body_bytes
        self.body = bytearray()
        self.complete = False
        self.too_large = False
        self.trailing: list[Message] = []

    async def run(self, receive: Receive) -> None:
        while not self.complete:
            message = await receive()
            if message["type"] != "http.request":
                # A disconnect before the body ended: the app gets the partial body marked unfinished,
                # then the disconnect, so it never mistakes a cut upload for a whole one.
                self.trailing.append(message)
                return
            chunk: bytes = message.get("body", b"")
            if len(self.body) + len(chunk) > self.max_body_bytes:
                self.too_large = True
                return
            self.body.extend(chunk)
            self.complete = not message.get("more_body", False)


class BodyLimitMiddleware:
    """413 for a request body over ``max_body_bytes``, by ``Content-Length`` and by counting chunks;
    408 for one whose reading takes longer than ``body_timeout_seconds``.

    The declared length is checked first; then the body is read and counted chunk by chunk, so a chunked
    upload or a lying ``Content-Length`` stops being read once the count passes the cap (the cap plus
    one chunk at most is ever in memory). The whole reading runs under one deadline, so a client that
    trickles its body (a byte a second) is answered 408 with ``Connection: close`` and loses its
    connection, however steadily it sends. The app then gets the body as one message, so no handler runs
    on an oversized or unfinished one; a disconnect before the end reaches it as an unfinished body,
    then the disconnect.
    """

    def __init__(
        self,
        app: ASGIApp,
        max_body_bytes: int = DEFAULT_MAX_REQUEST_BODY_BYTES,
        jsonrpc_paths: Collection[str] = errors.DEFAULT_JSONRPC_PATHS,
        body_timeout_seconds: float = DEFAULT_REQUEST_BODY_TIMEOUT_SECONDS,
    ) -> None:
        if max_body_bytes < 0:
            raise ValueError(f"max_body_bytes must be >= 0, got {max_body_bytes}")
        if not (math.isfinite(body_timeout_seconds) and body_timeout_seconds > 0):
            raise ValueError(f"body_timeout_seconds must be a positive number, got {body_timeout_seconds}")
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_timeout_seconds = body_timeout_seconds
        self.jsonrpc_paths = frozenset(jsonrpc_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = headers.get("content-length", "")
        # A malformed length is left to the chunk count below; the server rejects it before us anyway.
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._refuse(scope, receive, send)
            return
        read = _BodyRead(self.max_body_bytes)
        # RFC 9112 §6.3: a request with neither Content-Length nor Transfer-Encoding has no body, so
        # there is nothing to wait for and no deadline to arm (a timer costs more than the whole read).
        if declared in ("", "0") and "transfer-encoding" not in headers:
            await read.run(receive)
        else:
            with anyio.move_on_after(self.body_timeout_seconds) as deadline:
                await read.run(receive)
            if deadline.cancelled_caught:
                # Connection: close (the refusal's header), so the server drops the connection
                # instead of reading on.
                late = errors.RequestTimeout.after(self.body_timeout_seconds)
                await self._answer(late, scope, receive, send)
                return
        if read.too_large:
            await self._refuse(scope, receive, send)
            return
        body, complete, trailing = read.body, read.complete, read.trailing
        pending: list[Message] = [
            {"type": "http.request", "body": bytes(body), "more_body": not complete},
            *trailing,
        ]

        async def replay() -> Message:
            return pending.pop(0) if pending else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._answer(errors.RequestTooLarge.over(self.max_body_bytes), scope, receive, send)

    async def _answer(self, refusal: errors.ApiError, scope: Scope, receive: Receive, send: Send) -> None:
        jsonrpc = scope["path"] in self.jsonrpc_paths
        await errors.refusal_response(refusal, jsonrpc=jsonrpc)(scope, receive, send)
