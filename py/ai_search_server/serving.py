"""How uvicorn serves the app: one definition for ``ai-search serve``, the tests' servers and the benches.

    uvicorn.run(app, host=host, port=port, **server_options())
    uvicorn.Config(app, **server_options(), log_level="warning")   # a test server, same parser and caps

Why a protocol class of our own: uvicorn's fast parser (httptools) puts no cap on a request's head. It
buffers a header line until the line ends, so one request of 8 MiB of headers was read, held and
answered 200, and the 5 MiB body cap never bounded what a request holds in memory. uvicorn's other
parser (h11) does cap the head (``h11_max_incomplete_event_size``), but it is pure Python and slower
on every request; :class:`HeadLimitedHttpToolsProtocol` keeps httptools and answers
``431 Request Header Fields Too Large`` (and closes) for a head over :data:`MAX_REQUEST_HEAD_BYTES`.
Two counts, because httptools hands over a header only once its line has ended: the bytes received
while a head is incomplete bound the memory (at most the cap plus one socket read, which asyncio makes
256 KiB at most), and the request line and headers as parsed make the cap exact for a head that
arrives whole in one read. Should h11 be chosen anyway, its own cap is set to the same figure (h11
answers 400 past it).

A head must also arrive whole within :data:`REQUEST_HEAD_TIMEOUT_SECONDS`, or the answer is ``408
Request Timeout`` (and the connection closes): uvicorn's keep-alive timer stops at the first byte of a
request, so without it a client trickling one header byte at a time would hold a connection open for
ever (the body has its own deadline, ``request_body_timeout_seconds``). On a new connection the clock
starts when the connection opens, not at its first byte: uvicorn arms no timer before a first request,
so a client that connects and sends nothing held its socket for ever (300 such sockets under a
256-descriptor limit left real requests ECONNRESET). Such a connection is closed without an answer
(there was no request to answer). On a kept-alive connection the clock starts at the next request's
first byte (uvicorn's own keep-alive timeout closes one that stays quiet).

At most ``max_connections`` connections are open at once (:func:`connection_cap`: the setting, or
what the process's descriptor limit leaves after :data:`RESERVED_DESCRIPTORS`). A connection beyond
the cap closes the longest-idle connection (one that is between requests or has sent nothing yet),
so idle sockets can never starve real requests; when every connection is busy with a request, the
newcomer is answered ``503 Service Unavailable`` and closed.

A refusal is written, the write side is shut, and what the client still sends is read and dropped
for up to :data:`REFUSAL_LINGER_SECONDS` before the connection closes: closing a socket with unread
data sends a reset, and a reset makes the client's kernel drop the answer it has not read yet.
"""

from __future__ import annotations

import asyncio
import resource
import time
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from . import errors

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "MAX_REQUEST_HEAD_BYTES",
    "REFUSAL_LINGER_SECONDS",
    "REQUEST_HEAD_TIMEOUT_SECONDS",
    "RESERVED_DESCRIPTORS",
    "HeadLimitedHttpToolsProtocol",
    "connection_cap",
    "server_options",
]

# Bytes of one request's head (request line and headers). Our own clients send a few hundred (a token
# pair, a search query of at most 500 characters in the URL); 64 KiB is four times nginx's default
# (4 buffers of 8 KiB) and h11's 16 KiB, so no proxy in front would pass a head we refuse.
MAX_REQUEST_HEAD_BYTES = 64 * 1024
# Seconds from a request head's first byte to its end (the body deadline's 20 s, as for the body).
REQUEST_HEAD_TIMEOUT_SECONDS = 20.0
# Seconds a refused connection keeps reading (and dropping) what the client still sends, so that the
# client reads the 431 instead of a reset.
REFUSAL_LINGER_SECONDS = 1.0
# Client connections open at once when the descriptor limit allows it (connections). One process on a
# small machine answers a few hundred requests a second; a thousand connections is far more than its
# real clients keep open, and each costs a descriptor and a protocol object.
DEFAULT_MAX_CONNECTIONS = 1000
# Descriptors kept back from client connections (descriptors): outbound calls (32 at once), SQLite
# (three per connection, one connection per worker thread: 40 threads), Redis, the listening socket,
# logs and the index. 160 covers them with room to spare; a limit that leaves fewer than
# MIN_CONNECTIONS is a misconfiguration, and the cap stays at that floor.
RESERVED_DESCRIPTORS = 160
# The fewest connections the cap allows (connections), whatever the descriptor limit.
MIN_CONNECTIONS = 16

# The status lines and plain-text sentences of the refusals answered here (errors.py).
_HEAD_TOO_LARGE = (b"431 Request Header Fields Too Large", errors.HeadTooLarge.default_message.encode())
_HEAD_TOO_SLOW = (b"408 Request Timeout", errors.HeadTimeout.default_message.encode())
_TOO_MANY_CONNECTIONS = (b"503 Service Unavailable", errors.TooManyConnections.default_message.encode())


def connection_cap(setting: int = 0) -> int:
    """The connection cap: ``setting`` when it is not 0, else :data:`DEFAULT_MAX_CONNECTIONS` or what
    the soft descriptor limit leaves after :data:`RESERVED_DESCRIPTORS`, whichever is smaller."""
    if setting:
        return setting
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return DEFAULT_MAX_CONNECTIONS
    return max(MIN_CONNECTIONS, min(DEFAULT_MAX_CONNECTIONS, soft - RESERVED_DESCRIPTORS))


class _HeadTooLarge(Exception):
    """Raised from a parser callback to stop parsing a head over the cap."""


class HeadLimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a cap on the bytes of a request head (431 past it) and on
    the time it takes to arrive (408 past it)."""

    head_timeout_seconds = REQUEST_HEAD_TIMEOUT_SECONDS
    max_connections = DEFAULT_MAX_CONNECTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._received = 0  # bytes received since the last head completed
        self._parsed = 0  # bytes of the current head's request line and headers, as parsed
        self._in_body = False  # between a head's end and its message's end: bytes are body bytes
        self._refused = False
        self._head_timer: asyncio.TimerHandle | None = None
        self._ever_received = False  # a first byte arrived on this connection
        self._quiet_since = time.monotonic()  # when this connection last finished a request (or opened)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections and not self._make_room():
            self._refuse(_TOO_MANY_CONNECTIONS)
            return
        # The head's clock starts now: a connection that sends nothing must not outlive the deadline.
        self._head_timer = asyncio.get_running_loop().call_later(
            self.head_timeout_seconds, self._head_too_slow
        )

    def _idle(self) -> bool:
        """Between requests, or nothing sent yet: closing it loses no request."""
        cycle = self.cycle
        return (
            not self._refused
            and not self._in_body
            and self._received == 0
            and (cycle is None or cycle.response_complete)
            and not self.pipeline
        )

    def _make_room(self) -> bool:
        """Close the longest-idle other connection; False when every other one is busy."""
        idle = [
            c
            for c in self.connections
            if c is not self and isinstance(c, HeadLimitedHttpToolsProtocol) and c._idle()
        ]
        if not idle:
            return False
        oldest = min(idle, key=lambda c: c._quiet_since)
        self.logger.warning(
            "Connection cap of %d reached: closing the longest-idle connection.", self.max_connections
        )
        oldest._refused = True
        oldest._cancel_head_timer()
        oldest.transport.close()
        oldest.connections.discard(oldest)
        return True

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # lingering after a refusal: drop what still arrives
        self._ever_received = True
        if not self._in_body:
            self._received += len(data)
        super().data_received(data)
        if self._in_body or self._refused or not self._received:
            return
        if self._received > MAX_REQUEST_HEAD_BYTES:
            self._refuse_head()
        elif self._head_timer is None:  # a head is incomplete: it has this long to finish
            self._head_timer = asyncio.get_running_loop().call_later(
                self.head_timeout_seconds, self._head_too_slow
            )

    def on_message_begin(self) -> None:
        self._parsed = 0
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._count_parsed(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_parsed(len(name) + len(value) + 4)  # ": " and the line break
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_body = True
        self._received = 0
        self._cancel_head_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_body = False
        self._quiet_since = time.monotonic()
        super().on_message_complete()

    def _count_parsed(self, size: int) -> None:
        self._parsed += size
        if self._parsed > MAX_REQUEST_HEAD_BYTES:
            # Stops the parser; uvicorn answers a parser error through send_400_response, below.
            self._refused = True
            raise _HeadTooLarge

    def send_400_response(self, msg: str) -> None:
        if self._refused:
            self._refuse_head()
        else:
            super().send_400_response(msg)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self._in_body or self._refused or self.transport.is_closing():
            return
        if not self._ever_received:
            # Connected and silent since: there is no request to answer, only a socket to free.
            self.logger.info("Connection sent nothing in %.0f s: closed.", self.head_timeout_seconds)
            self._refused = True
            self.transport.close()
            return
        if self._received == 0:
            return  # between requests on a kept-alive connection: uvicorn's keep-alive timeout rules
        self.logger.warning("Request head not complete after %.0f s (408).", self.head_timeout_seconds)
        self._refuse(_HEAD_TOO_SLOW)

    def _refuse_head(self) -> None:
        self.logger.warning("Request head over %d bytes refused (431).", MAX_REQUEST_HEAD_BYTES)
        self._refuse(_HEAD_TOO_LARGE)

    def _refuse(self, answer: tuple[bytes, bytes]) -> None:
        """Answer ``status`` with ``message``, shut the write side, and close after the linger."""
        status, message = answer
        self._refused = True
        self._cancel_head_timer()
        content = [b"HTTP/1.1 " + status + b"\r\n"]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [
                b"content-type: text/plain; charset=utf-8\r\n",
                b"content-length: " + str(len(message)).encode("ascii") + b"\r\n",
                b"connection: close\r\n",
                b"\r\n",
                message,
            ]
        )
        self.transport.write(b"".join(content))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        asyncio.get_running_loop().call_later(REFUSAL_LINGER_SECONDS, self.transport.close)


def server_options(
    *, head_timeout_seconds: float = REQUEST_HEAD_TIMEOUT_SECONDS, max_connections: int = 0
) -> dict[str, Any]:
    """uvicorn options of every server of the app (``ai-search serve``, tests, benches).

    ``head_timeout_seconds`` other than the product's is for tests that cannot wait 20 s;
    ``max_connections`` is the ``max_connections`` setting (0: :func:`connection_cap` decides).

    Forwarding headers are not trusted by uvicorn (the rate limiter reads ``X-Forwarded-For`` itself,
    and only for the configured proxy hops), and no ``Server`` header names the software.
    """
    limits = {
        "head_timeout_seconds": head_timeout_seconds,
        "max_connections": connection_cap(max_connections),
    }
    protocol = type(HeadLimitedHttpToolsProtocol.__name__, (HeadLimitedHttpToolsProtocol,), limits)
    return {
        "http": protocol,
        "h11_max_incomplete_event_size": MAX_REQUEST_HEAD_BYTES,
        "proxy_headers": False,
        "server_header": False,
    }
