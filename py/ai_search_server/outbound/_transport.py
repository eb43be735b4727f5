"""Connect only to the address that was checked: a pinning httpcore network backend.

Why a network backend, not URL rewriting: httpcore hands ``connect_tcp`` the URL's host and port at
the one moment a socket is opened. Resolving, checking and connecting there means there is exactly
one resolution per connection, and the socket goes to an address from that same answer, so a DNS
rebinding between check and connect has nothing to switch. Everything above the socket still sees
the real host: the ``Host`` header, TLS SNI and certificate verification (httpcore passes the origin's
host as ``server_hostname``), and the connection pool's keys. Rewriting the URL to the IP would need
the ``sni_hostname`` extension, a hand-kept ``Host`` header, and care with IPv6 brackets and pooled
connections; the backend gets all of that for free.

httpx 0.28 takes no ``network_backend`` argument, so ``PinnedTransport`` builds the httpcore pool
itself (the ``_pool`` attribute that ``AsyncHTTPTransport.handle_async_request`` uses) and keeps
httpx's request/response plumbing and exception mapping. Proxies and ``trust_env`` are off: a proxy
would resolve the host itself, out of our sight.
"""

from __future__ import annotations

import functools
import logging
import ssl
from collections.abc import Iterable

import httpcore
import httpx

from ai_search_server.outbound._addresses import IPAddress, Resolver, check_addresses, parse_ip_literal
from ai_search_server.outbound._errors import OutboundProtocolError, OutboundRefused
from ai_search_server.outbound._policy import OutboundPolicy

__all__ = ["PinnedBackend", "PinnedTransport"]

logger = logging.getLogger("ai_search_server.outbound")

SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """Resolve once, refuse unless every address passes the policy, then connect to those addresses."""

    def __init__(
        self, policy: OutboundPolicy, resolve: Resolver, inner: httpcore.AsyncNetworkBackend | None = None
    ) -> None:
        self._policy = policy
        self._resolve = resolve
        self._inner = inner if inner is not None else httpcore.AnyIOBackend()

    async def checked_addresses(self, host: str, port: int) -> list[IPAddress]:
        """The addresses ``host`` may be reached at, in the resolver's order.

        Raises:
            OutboundRefused: a numeric host that does not parse, or an address the policy refuses.
            OutboundProtocolError: the name does not resolve.
        """
        literal = parse_ip_literal(host)
        if literal is not None:
            addresses = [literal]
        else:
            try:
                addresses = list(await self._resolve(host, port))
            except OSError as exc:
                raise OutboundProtocolError(f"outbound call failed: could not resolve {host}") from exc
            if not addresses:
                raise OutboundProtocolError(f"outbound call failed: {host} resolved to no address")
        check_addresses(host, addresses, self._policy)
        logger.debug("outbound host %s pinned to %s", host, ", ".join(map(str, addresses)))
        return addresses

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self.checked_addresses(host, port)
        options = list(socket_options) if socket_options is not None else None
        failure: Exception | None = None
        for address in addresses:
            try:
                # A literal address: the inner backend's getaddrinfo is numeric, no second DNS query.
                return await self._inner.connect_tcp(
                    str(address), port, timeout=timeout, local_address=local_address, socket_options=options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # checked_addresses never returns an empty list
        raise failure

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[SocketOption] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise OutboundRefused("outbound destination refused: unix sockets are not outbound destinations")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@functools.cache
def _default_ssl_context() -> ssl.SSLContext:
    """Loading the CA bundle costs about 25 ms, so every client shares one verifying context (httpcore
    only ever sets the same ALPN list on it)."""
    return httpx.create_ssl_context(verify=True, trust_env=False)


class PinnedTransport(httpx.AsyncHTTPTransport):
    """httpx's HTTP/1.1 transport over a ``PinnedBackend``, with no proxy and no retries."""

    def __init__(
        self,
        backend: PinnedBackend,
        *,
        verify: ssl.SSLContext | bool = True,
        limits: httpx.Limits | None = None,
    ) -> None:
        # Deliberately not calling super().__init__: it would build a pool on httpcore's default backend.
        limits = limits if limits is not None else httpx.Limits()
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=(
                _default_ssl_context()
                if verify is True
                else httpx.create_ssl_context(verify=verify, trust_env=False)
            ),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=False,
            retries=0,
            network_backend=backend,
        )
