"""``GuardedClient``: the app's one outbound HTTP client (pipeline, LLM, embeddings).

Every call gets one total deadline, measured from the moment it starts and covering resolution,
connect, send and every read of the body, including the reads between the chunks a stream yields.
httpx's own timeouts bound each operation, not the whole call (a server dripping one byte per
second never trips a read timeout), so the deadline is an anyio cancel scope with an absolute
deadline, entered around each await and never held across a ``yield``: an async generator must not
leave a cancel scope open while its consumer runs. The body is counted as it arrives and the call
is cut as soon as the count passes the cap, whatever Content-Length says, or when it says nothing.

Usage::

    async with GuardedClient(OutboundPolicy(allow_hosts=("127.0.0.1",))) as client:
        answer = await client.request_json("POST", url, headers={"X-API-KEY": key}, json=body)
        async with contextlib.aclosing(client.stream_sse("POST", llm_url, json=request)) as events:
            async for data in events:
                ...

Close a stream you leave early with ``contextlib.aclosing`` so its connection is released at once.
"""

from __future__ import annotations

import contextlib
import json as jsonlib
import logging
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from types import TracebackType
from typing import Any, Self

import httpx

from ai_search import EventStreamParser, ServerEvent
from ai_search_server.outbound._addresses import Resolver, system_resolve
from ai_search_server.outbound._call import Call, checked_headers, checked_url, redacted
from ai_search_server.outbound._errors import (
    OutboundBusy,
    OutboundError,
    OutboundHTTPError,
    OutboundProtocolError,
    OutboundRedirect,
    OutboundTimeout,
    OutboundTooLarge,
)
from ai_search_server.outbound._gate import CallGate, GateBusy
from ai_search_server.outbound._policy import OutboundPolicy, check_max_bytes, check_timeout
from ai_search_server.outbound._transport import PinnedBackend, PinnedTransport

__all__ = ["ERROR_BODY_EXCERPT_BYTES", "GuardedClient", "OutboundResponse"]

logger = logging.getLogger("ai_search_server.outbound")

# Bytes of a non-2xx body kept on OutboundHTTPError for callers that parse provider errors.
ERROR_BODY_EXCERPT_BYTES = 4096
# Sent unless the caller overrides: ask for an uncompressed body, so the bytes we count are the
# bytes we hold (a compressed body is still counted after decoding).
_DEFAULT_HEADERS = {"user-agent": "ai-search", "accept-encoding": "identity"}


@dataclass(frozen=True)
class OutboundResponse:
    """A 2xx answer read in full: ``json`` is the parsed body, None when the body is empty."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    json: Any


class GuardedClient:
    """The one outbound client per app; an async context manager owning its connection pool and its
    cap of calls at once (``gate``), which every caller of the app shares because they share the client.

    ``resolve`` is the DNS seam (tests pass a stub); it is called once per new connection and the
    connection goes to one of the addresses it returned, after all of them passed the policy. Code
    that runs in a blocking thread calls it through ``BlockingClient``.
    """

    def __init__(
        self,
        policy: OutboundPolicy,
        *,
        resolve: Resolver = system_resolve,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        self.policy = policy
        self.gate = CallGate(policy.max_concurrent_calls, policy.queue_wait_seconds)
        self._client = httpx.AsyncClient(
            transport=PinnedTransport(PinnedBackend(policy, resolve), verify=verify),
            follow_redirects=False,
            trust_env=False,
            # Upstreams are stateless APIs: keep no cookies, so nothing carries from one call to the next.
            cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
            timeout=policy.total_timeout_seconds,
            headers=_DEFAULT_HEADERS,
        )

    async def __aenter__(self) -> Self:
        await self._client.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._client.__aexit__(exc_type, exc, tb)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def request_json(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        timeout_seconds: float | None = None,
        max_bytes: int | None = None,
    ) -> OutboundResponse:
        """Send ``json`` (if not None) and read a whole JSON answer.

        Raises:
            OutboundError: any subclass; see the package docstring for which and when.
            TypeError, ValueError: ``json`` is not JSON-serialisable (NaN included): a caller's bug.
        """
        async with self._exchange(
            method, url, headers, json, timeout_seconds, max_bytes, "application/json"
        ) as (call, response):
            chunks = response.aiter_bytes()
            parts: list[bytes] = []
            while (chunk := await call.next_chunk(chunks)) is not None:
                parts.append(chunk)
        body = b"".join(parts)
        try:
            parsed = jsonlib.loads(body, parse_constant=_refuse_constant) if body.strip() else None
        except (ValueError, RecursionError):
            raise OutboundProtocolError(
                f"outbound {call.method} {call.target}: the answer is not valid JSON", target=call.target
            ) from None
        return OutboundResponse(response.status_code, dict(response.headers.items()), body, parsed)

    async def stream_sse(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        timeout_seconds: float | None = None,
        max_bytes: int | None = None,
    ) -> AsyncGenerator[str, None]:
        """Yield the ``data`` payload of each server-sent event (OpenAI-style streams end with ``[DONE]``,
        which is yielded like any payload; the caller decides that the stream is complete).

        Raises:
            OutboundError: any subclass, before the first event or between events.
        """
        parser = EventStreamParser(errors="strict")
        async with self._exchange(
            method, url, headers, json, timeout_seconds, max_bytes, "text/event-stream"
        ) as (call, response):
            chunks = response.aiter_bytes()
            while (chunk := await call.next_chunk(chunks)) is not None:
                for event in _events(call, parser, chunk):
                    call.check_deadline()
                    yield event.data
            for event in _events(call, parser, None):
                call.check_deadline()
                yield event.data

    @asynccontextmanager
    async def _exchange(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str] | None,
        payload: Any,
        timeout_seconds: float | None,
        max_bytes: int | None,
        accept: str,
    ) -> AsyncIterator[tuple[Call, httpx.Response]]:
        """Send the request and hand over a 2xx response whose body is still unread; close it after.

        The call holds a slot of the process's gate throughout; the wait for it comes before the call's
        deadline starts.
        """
        parsed = checked_url(url)
        try:
            async with (
                self.gate.slot(),
                self._exchange_in_slot(
                    method, parsed, headers, payload, timeout_seconds, max_bytes, accept
                ) as exchange,
            ):
                yield exchange
        except GateBusy:
            busy = OutboundBusy(
                f"outbound {method.upper()} {redacted(parsed)}: {self.gate.max_calls} calls already run "
                f"and none ended within {self.gate.wait_seconds:g} s",
                target=redacted(parsed),
            )
            logger.warning("%s", busy.message)
            raise busy from None

    @asynccontextmanager
    async def _exchange_in_slot(
        self,
        method: str,
        parsed: httpx.URL,
        headers: Mapping[str, str] | None,
        payload: Any,
        timeout_seconds: float | None,
        max_bytes: int | None,
        accept: str,
    ) -> AsyncIterator[tuple[Call, httpx.Response]]:
        call = Call(
            method.upper(),
            redacted(parsed),
            check_timeout(self.policy.total_timeout_seconds if timeout_seconds is None else timeout_seconds),
            check_max_bytes(self.policy.max_response_bytes if max_bytes is None else max_bytes),
        )
        request_headers = checked_headers(call, {"accept": accept, **(headers or {})})
        content = None
        if payload is not None:
            content = jsonlib.dumps(payload, ensure_ascii=False, allow_nan=False).encode()
            request_headers.setdefault("content-type", "application/json")
        try:
            with call.guarded("connecting and sending"):
                request = self._client.build_request(
                    call.method,
                    parsed,
                    headers=request_headers,
                    content=content,
                    timeout=httpx.Timeout(max(call.remaining(), 0.001)),
                )
                response = await self._client.send(request, stream=True)
        except OutboundError as exc:
            logger.warning("%s", exc.message)
            raise
        try:
            await self._check_status(call, response)
            yield call, response
            logger.debug(
                "outbound %s %s -> %d, %d bytes",
                call.method,
                call.target,
                response.status_code,
                call.read_bytes,
            )
        except OutboundError as exc:
            logger.warning("%s", exc.message)
            raise
        finally:
            await response.aclose()

    async def _check_status(self, call: Call, response: httpx.Response) -> None:
        status = response.status_code
        if 300 <= status < 400:
            raise OutboundRedirect(
                f"outbound {call.method} {call.target} answered {status}, a redirect; redirects are refused",
                target=call.target,
                status=status,
            )
        if not 200 <= status < 300:
            excerpt = b""
            chunks = response.aiter_bytes()
            # The status is the news; a body that is slow, huge or broken only shortens the excerpt.
            with contextlib.suppress(OutboundTimeout, OutboundTooLarge, OutboundProtocolError):
                while len(excerpt) < ERROR_BODY_EXCERPT_BYTES and (chunk := await call.next_chunk(chunks)):
                    excerpt += chunk
            raise OutboundHTTPError(
                f"outbound {call.method} {call.target} answered HTTP {status}",
                target=call.target,
                status=status,
                body_excerpt=excerpt[:ERROR_BODY_EXCERPT_BYTES],
                headers=dict(response.headers.items()),
            )
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > call.max_bytes:
            raise OutboundTooLarge(
                f"outbound {call.method} {call.target}: Content-Length {int(declared)} is over the cap of "
                f"{call.max_bytes} bytes",
                target=call.target,
                limit_bytes=call.max_bytes,
                read_bytes=0,
            )


def _events(call: Call, parser: EventStreamParser, chunk: bytes | None) -> list[ServerEvent]:
    """The events ``chunk`` completes; None ends the stream (an unfinished event is dropped)."""
    try:
        return parser.close() if chunk is None else parser.feed(chunk)
    except UnicodeDecodeError:
        raise OutboundProtocolError(
            f"outbound {call.method} {call.target}: the stream is not valid UTF-8", target=call.target
        ) from None
    except ValueError as exc:  # an event that never ends (only with a byte cap above the parser's)
        raise OutboundProtocolError(
            f"outbound {call.method} {call.target}: {exc}", target=call.target
        ) from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
