"""Per-route, per-caller rate limits on the ``limits`` library, in process memory or shared in Redis.

    limiter = RateLimiter("redis://127.0.0.1:6379/0")    # "memory://" (the default): one process only
    key = caller_key(user_id, peer, request.headers.getlist("x-forwarded-for"), trusted_proxy_hops)
    result = await limiter.hit("ai.search", key, RateLimit(count=60, period_seconds=60))
    if not result.allowed:
        ...  # 429 with rate_limit_headers(result), which then carry Retry-After
    await limiter.aclose()

Strategy: a moving window by default, which is exact (never more than ``count`` hits in any
``period_seconds``); a fixed window is one counter per key but lets up to twice the count through
around a window edge. Both come from ``limits.aio``, so a check never blocks the event loop.

When the shared store fails (Redis down, unreachable, timing out), ``on_storage_error`` decides:

* ``"local"`` (the default): count in this process's memory until Redis answers again. Each process
  then enforces the limit on its own, so N processes admit at most N times the budget: the guard
  against unbounded consumption (LLM, pipeline) stays, and the API stays up. Failing open would drop
  the guard during any Redis outage; failing closed would turn every Redis outage into an API outage.
* ``"allow"``: fail open, every request passes.
* ``"deny"``: fail closed, every request is refused (429 with ``Retry-After``).

Answers given without the shared store are marked ``degraded``. The first failure of an outage is
logged as a warning, the recovery as info; Redis is retried every ``redis_retry_interval_seconds``.

Failed authentication has a budget of its own (:class:`FailedAuthMiddleware`): every 401 answered to a
request that carried credentials (an API token, or the served pipeline's X-API-KEY pair) spends one of
the client address's :data:`AUTH_FAILURE_RATE_LIMIT` (10 a minute), and once it is spent, requests
from that address that carry credentials are answered 429 before the credentials are checked, so a
correct guess is not told apart from a wrong one.

Besides the windows, plain counters live in the same storage (:meth:`RateLimiter.add`,
:meth:`RateLimiter.value`), under the same storage-error policy: ``login_throttle.py`` counts each
account's failed sign-ins with them, so every process on one Redis agrees on an account's wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import ipaddress
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from limits import RateLimitItemPerSecond
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter
from limits.aio.strategies import RateLimiter as _Strategy
from limits.errors import StorageError
from redis.asyncio import ConnectionPool
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import errors

_T = TypeVar("_T")


class _Unanswered(enum.Enum):
    """What :meth:`RateLimiter._on_shared` answers when the shared storage did not."""

    UNANSWERED = enum.auto()


_UNANSWERED = _Unanswered.UNANSWERED

__all__ = [
    "AUTH_FAILURE_RATE_LIMIT",
    "AUTH_FAILURE_ROUTE_KEY",
    "DEFAULT_RATE_LIMIT_STORAGE",
    "IPV6_CLIENT_PREFIX_BITS",
    "MCP_RATE_LIMIT",
    "REDIS_RETRY_INTERVAL_SECONDS",
    "REDIS_SOCKET_TIMEOUT_SECONDS",
    "FailedAuthMiddleware",
    "OnStorageError",
    "RateLimit",
    "RateLimitResult",
    "RateLimiter",
    "Strategy",
    "caller_key",
    "client_address",
    "rate_limit_headers",
    "redis_url",
    "too_many_requests",
]

log = logging.getLogger(__name__)

DEFAULT_RATE_LIMIT_STORAGE = "memory://"
# Seconds one Redis connect or command may take. A limiter check that waits longer costs more than it
# protects; on timeout the storage-error policy answers instead.
REDIS_SOCKET_TIMEOUT_SECONDS = 0.5
# Extra attempts of one Redis command, without back-off: one, so a pooled connection that died with a
# Redis restart is replaced at once, while a Redis that is down fails fast.
REDIS_COMMAND_RETRIES = 1
# Seconds after a Redis failure during which checks go straight to the storage-error policy, so an
# outage does not add a connection attempt to every request.
REDIS_RETRY_INTERVAL_SECONDS = 5.0
# Bits of an IPv6 client address that form its bucket. One subscriber usually holds a whole /64, so
# bucketing single addresses would let one client mint 2**64 fresh budgets.
IPV6_CLIENT_PREFIX_BITS = 64

Strategy = Literal["moving-window", "fixed-window"]
OnStorageError = Literal["local", "allow", "deny"]

_STRATEGIES: dict[str, type[_Strategy]] = {
    "moving-window": MovingWindowRateLimiter,
    "fixed-window": FixedWindowRateLimiter,
}
# Our URI schemes to the async storage schemes of `limits`, and to redis-py's own URL schemes.
_STORAGE_SCHEMES = {
    "memory": ("async+memory", None),
    "redis": ("async+redis", "redis"),
    "rediss": ("async+rediss", "rediss"),
    "redis+unix": ("async+redis+unix", "unix"),
}
_STORAGE_FAILURES = (RedisError, StorageError, OSError)


def redis_url(storage_uri: str) -> str | None:
    """redis-py's URL of a Redis ``rate_limit_storage`` URI; None for ``memory://`` (or a scheme this
    module does not know, which :class:`RateLimiter` refuses). The consent tickets of OAuth live in
    the same Redis (``oauth/tickets.py``)."""
    scheme, sep, rest = storage_uri.partition("://")
    schemes = _STORAGE_SCHEMES.get(scheme.lower()) if sep else None
    if schemes is None or schemes[1] is None:
        return None
    return f"{schemes[1]}://{rest}"


@dataclass(frozen=True)
class RateLimit:
    """At most ``count`` requests per ``period_seconds``, per route and caller."""

    count: int
    period_seconds: int

    def __post_init__(self) -> None:
        if self.count < 1 or self.period_seconds < 1:
            raise ValueError(f"a rate limit needs count >= 1 and period_seconds >= 1, got {self}")


# The upstream MCP endpoint's limiter: 60 requests per 60 s per user (upstream-mcp.md §8.1).
MCP_RATE_LIMIT = RateLimit(count=60, period_seconds=60)
# Failed authentications (401 to a request carrying X-User-Id or X-Auth-Token) per client address per
# 60 s: the login route's budget. A person who mistyped a token a few times is not locked out; someone
# guessing tokens gets 10 guesses a minute from an address (an IPv6 /64), whatever tokens they rotate.
AUTH_FAILURE_RATE_LIMIT = RateLimit(10, 60)
# The limiter's route key of that budget.
AUTH_FAILURE_ROUTE_KEY = "auth-failures"


@dataclass(frozen=True)
class RateLimitResult:
    """One counted request: whether it may proceed, and the budget left until ``reset_epoch_seconds``.

    ``degraded``: the shared store failed and the storage-error policy answered.
    """

    allowed: bool
    limit: int
    remaining: int
    reset_epoch_seconds: int
    degraded: bool = False

    def retry_after_seconds(self, now: float | None = None) -> int:
        """Whole seconds until the next request may pass: at least 1, rounded up so never too early."""
        return max(1, math.ceil(self.reset_epoch_seconds - (time.time() if now is None else now)))


class RateLimiter:
    """Counts requests per ``(route_key, caller_key)`` against a :class:`RateLimit`.

    ``storage_uri``: ``memory://`` or ``redis://[:password@]host:port/db`` (also ``rediss://``,
    ``redis+unix:///path?db=0``), where several server processes share one budget. Call
    :meth:`aclose` when done (the app's lifespan does).

    Raises:
        ValueError: an unknown URI scheme, strategy or storage-error policy.
    """

    def __init__(
        self,
        storage_uri: str = DEFAULT_RATE_LIMIT_STORAGE,
        *,
        strategy: Strategy = "moving-window",
        on_storage_error: OnStorageError = "local",
        key_prefix: str = "ai-search",
        redis_socket_timeout_seconds: float = REDIS_SOCKET_TIMEOUT_SECONDS,
        redis_retry_interval_seconds: float = REDIS_RETRY_INTERVAL_SECONDS,
    ) -> None:
        scheme, sep, rest = storage_uri.partition("://")
        if not sep or scheme.lower() not in _STORAGE_SCHEMES:
            raise ValueError(
                f"rate limit storage {storage_uri!r}: expected memory:// or redis://host:port/db "
                f"(schemes: {', '.join(_STORAGE_SCHEMES)})"
            )
        if strategy not in _STRATEGIES:
            raise ValueError(f"rate limit strategy {strategy!r}: expected one of {', '.join(_STRATEGIES)}")
        if on_storage_error not in ("local", "allow", "deny"):
            raise ValueError(f"on_storage_error {on_storage_error!r}: expected local, allow or deny")
        limits_scheme, redis_scheme = _STORAGE_SCHEMES[scheme.lower()]
        self.strategy_name = strategy
        self.on_storage_error = on_storage_error
        self.key_prefix = key_prefix
        self.redis_retry_interval_seconds = redis_retry_interval_seconds
        self._pool: ConnectionPool | None = None
        storage: Storage
        if redis_scheme is None:
            storage = MemoryStorage()
        else:
            self._pool = ConnectionPool.from_url(
                f"{redis_scheme}://{rest}",
                socket_timeout=redis_socket_timeout_seconds,
                socket_connect_timeout=redis_socket_timeout_seconds,
                retry=Retry(NoBackoff(), REDIS_COMMAND_RETRIES),
            )
            # limits builds its client on our pool, so we own the sockets and can close them.
            options: dict[str, Any] = {"connection_pool": self._pool}
            storage = RedisStorage(
                f"{limits_scheme}://{rest}", wrap_exceptions=True, implementation="redispy", **options
            )
        self._storage = storage
        self._shared = _STRATEGIES[strategy](storage)
        # The in-process fallback for on_storage_error="local"; for memory:// it is never used.
        self._local_storage = MemoryStorage()
        self._local = _STRATEGIES[strategy](self._local_storage)
        self._failed_at: float | None = None

    @property
    def shared(self) -> bool:
        """Whether several processes share this limiter's budgets (a Redis store)."""
        return self._pool is not None

    async def hit(self, route_key: str, caller_key: str, limit: RateLimit) -> RateLimitResult:
        """Count one request of ``caller_key`` on ``route_key``; the answer says whether it may proceed.

        With the moving window a refused request uses up no budget; the fixed window counts it until the
        window ends. Never raises for a storage failure: the storage-error policy answers instead.
        """
        result = await self._ask(self._count, route_key, caller_key, limit)
        assert result is not None  # _count always answers
        return result

    async def refusal(self, route_key: str, caller_key: str, limit: RateLimit) -> RateLimitResult | None:
        """The refusal one more request of ``caller_key`` would get, or None if it would pass.

        Counts nothing: a check before work whose outcome decides whether to :meth:`hit`. Never raises
        for a storage failure: the storage-error policy answers instead.
        """
        return await self._ask(self._test, route_key, caller_key, limit)

    async def _ask(
        self, operation: _Operation, route_key: str, caller_key: str, limit: RateLimit
    ) -> RateLimitResult | None:
        item = RateLimitItemPerSecond(limit.count, limit.period_seconds)
        # The strategy is part of the key: the two keep different Redis types under a key, so processes
        # configured differently (a rolling deploy) must not meet on one.
        identifiers = (self.key_prefix, self.strategy_name, route_key, caller_key)
        result = await self._on_shared(lambda: operation(self._shared, item, identifiers, degraded=False))
        if result is not _UNANSWERED:
            return result
        if self.on_storage_error == "local":
            return await operation(self._local, item, identifiers, degraded=True)
        reset = math.ceil(time.time() + max(1.0, self.redis_retry_interval_seconds))
        allowed = self.on_storage_error == "allow"
        return RateLimitResult(allowed, limit.count, limit.count if allowed else 0, reset, degraded=True)

    async def add(self, key: str, amount: int, expiry_seconds: int) -> int | None:
        """Add ``amount`` to the counter ``key`` and return its new value; a counter that did not exist
        starts at ``amount`` and is forgotten ``expiry_seconds`` later (adding never extends that).

        A counter of its own, beside the windows of :meth:`hit`, in the same storage: several
        processes on one Redis share it (``login_throttle.py`` counts failed sign-ins per account
        with it). None when the shared storage failed and ``on_storage_error`` is ``"allow"`` or
        ``"deny"``: the caller applies that policy (``"local"`` counts in this process instead).
        """
        return await self._counter(lambda storage, k: storage.incr(k, expiry_seconds, amount), key)

    async def value(self, key: str) -> int | None:
        """The counter ``key`` as :meth:`add` left it (0 when absent or expired); None as there."""
        return await self._counter(lambda storage, k: storage.get(k), key)

    async def _counter(self, operation: Callable[[Storage, str], Awaitable[int]], key: str) -> int | None:
        """``operation`` on the shared storage, or as the storage-error policy says (:meth:`add`)."""
        full_key = f"{self.key_prefix}/{key}"
        counted = await self._on_shared(lambda: operation(self._storage, full_key))
        if counted is not _UNANSWERED:
            return int(counted)
        if self.on_storage_error == "local":
            return int(await operation(self._local_storage, full_key))
        return None

    async def _on_shared(self, call: Callable[[], Awaitable[_T]]) -> _T | _Unanswered:
        """The answer of ``call()`` on the shared storage, or ``_UNANSWERED`` when that storage
        failed or rests after a failure (the caller then applies the storage-error policy). One place
        notes a failure and, when the storage answers again, that shared budgets are back."""
        if self._redis_resting():
            return _UNANSWERED
        try:
            result = await call()
        except _STORAGE_FAILURES as exc:
            self._note_failure(exc)
            return _UNANSWERED
        if self._failed_at is not None:
            log.info("rate limit storage answers again; shared budgets are back")
            self._failed_at = None
        return result

    async def aclose(self) -> None:
        """Close the Redis connections and stop the in-memory expiry tasks."""
        for storage in (self._storage, self._local_storage):
            if isinstance(storage, MemoryStorage) and storage.timer is not None:
                storage.timer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await storage.timer
        if self._pool is not None:
            await self._pool.aclose()

    async def __aenter__(self) -> RateLimiter:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    def _redis_resting(self) -> bool:
        return (
            self._failed_at is not None
            and time.monotonic() - self._failed_at < self.redis_retry_interval_seconds
        )

    def _note_failure(self, exc: Exception) -> None:
        if self._failed_at is None:
            log.warning(
                "rate limit storage failed (%s); answering with on_storage_error=%r until it recovers",
                exc,
                self.on_storage_error,
            )
        self._failed_at = time.monotonic()

    @staticmethod
    async def _count(
        strategy: _Strategy, item: RateLimitItemPerSecond, identifiers: tuple[str, ...], *, degraded: bool
    ) -> RateLimitResult:
        allowed = await strategy.hit(item, *identifiers)
        return await _result(strategy, item, identifiers, allowed=allowed, degraded=degraded)

    @staticmethod
    async def _test(
        strategy: _Strategy, item: RateLimitItemPerSecond, identifiers: tuple[str, ...], *, degraded: bool
    ) -> RateLimitResult | None:
        if await strategy.test(item, *identifiers):
            return None  # the common case costs one storage call
        return await _result(strategy, item, identifiers, allowed=False, degraded=degraded)


async def _result(
    strategy: _Strategy,
    item: RateLimitItemPerSecond,
    identifiers: tuple[str, ...],
    *,
    allowed: bool,
    degraded: bool,
) -> RateLimitResult:
    stats = await strategy.get_window_stats(item, *identifiers)
    return RateLimitResult(
        allowed=allowed,
        limit=item.amount,
        remaining=max(0, stats.remaining),
        reset_epoch_seconds=math.ceil(stats.reset_time),
        degraded=degraded,
    )


class _Operation(Protocol):
    async def __call__(
        self,
        strategy: _Strategy,
        item: RateLimitItemPerSecond,
        identifiers: tuple[str, ...],
        *,
        degraded: bool,
    ) -> RateLimitResult | None: ...


# Headers that carry a credential: the API's user id and token, and the served embedded pipeline's key
# pair, so guessing pipeline keys spends the same per-address budget as guessing tokens.
# Not Authorization: an OAuth access token that expired is refused 401 once an hour per person as a
# matter of course (the client then refreshes), and a hosted assistant calls for many people from a
# few addresses, so counting those would lock out all of them; a 256-bit token is no guess anyway.
_CREDENTIAL_HEADERS = frozenset({b"x-user-id", b"x-auth-token", b"x-api-key", b"x-api-key-secret"})


class FailedAuthMiddleware:
    """A per-address budget of failed authentications (:data:`AUTH_FAILURE_RATE_LIMIT`), on REST and MCP.

    Only requests that carry ``X-User-Id``, ``X-Auth-Token`` or the served pipeline's ``X-API-KEY`` /
    ``X-API-KEY-SECRET`` are looked at: an anonymous request
    costs nothing here. Such a request is answered 429 (``Retry-After``; the JSON-RPC envelope on the
    MCP path) without reaching the app when its address has spent the budget; otherwise it goes on,
    and a 401 answer spends one. Refusing before the credentials are checked is the point: a guess
    made after the budget is spent is never checked, so it tells its sender nothing, and a valid
    token from that address waits too until the window frees (at most one period). The address is
    :func:`caller_key`'s, so forged ``X-Forwarded-For`` entries change nothing unless
    ``trusted_proxy_hops`` says a proxy wrote them. Requests checked at the same moment all pass the
    check before any of their 401s is counted, so a burst of N parallel guesses may exceed the budget
    by up to N once.
    """

    def __init__(
        self,
        app: ASGIApp,
        limiter: RateLimiter,
        *,
        trusted_proxy_hops: int = 0,
        limit: RateLimit = AUTH_FAILURE_RATE_LIMIT,
        jsonrpc_paths: Sequence[str] = errors.DEFAULT_JSONRPC_PATHS,
    ) -> None:
        self.app = app
        self.limiter = limiter
        self.trusted_proxy_hops = trusted_proxy_hops
        self.limit = limit
        self.jsonrpc_paths = frozenset(jsonrpc_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not any(name in _CREDENTIAL_HEADERS for name, _ in scope["headers"]):
            await self.app(scope, receive, send)
            return
        peer = scope["client"][0] if scope.get("client") else None
        forwarded = Headers(scope=scope).getlist("x-forwarded-for") if self.trusted_proxy_hops else None
        key = caller_key(None, peer, forwarded, self.trusted_proxy_hops)
        refusal = await self.limiter.refusal(AUTH_FAILURE_ROUTE_KEY, key, self.limit)
        if refusal is not None:
            spent = too_many_requests(refusal, errors.AuthFailuresSpent)
            jsonrpc = scope["path"] in self.jsonrpc_paths
            await errors.refusal_response(spent, jsonrpc=jsonrpc)(scope, receive, send)
            return
        status = 0

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self.app(scope, receive, send_noting_status)
        if status == 401:
            await self.limiter.hit(AUTH_FAILURE_ROUTE_KEY, key, self.limit)


def rate_limit_headers(result: RateLimitResult, now: float | None = None) -> dict[str, str]:
    """``X-RateLimit-Limit``, ``-Remaining``, ``-Reset`` (epoch seconds); ``Retry-After`` when refused."""
    headers = {
        "X-RateLimit-Limit": str(result.limit),
        "X-RateLimit-Remaining": str(result.remaining),
        "X-RateLimit-Reset": str(result.reset_epoch_seconds),
    }
    if not result.allowed:
        headers["Retry-After"] = str(result.retry_after_seconds(now))
    return headers


def too_many_requests(
    result: RateLimitResult, kind: type[errors.TooManyRequests] = errors.TooManyRequests
) -> errors.TooManyRequests:
    """The 429 refusal of a refused count, carrying its headers (``Retry-After`` among them); rendered
    as the REST body, or upstream MCP's JSON-RPC envelope (§8.1), by ``errors.refusal_response``."""
    return kind(headers=rate_limit_headers(result))


def client_address(
    peer: str | None, forwarded_for: str | Sequence[str] | None, trusted_proxy_hops: int
) -> str:
    """The client's address: the TCP peer, or the forwarded entry ``trusted_proxy_hops`` from the right.

    Each trusted proxy appends the address it received the request from, so with N proxies in front the
    client is the N-th entry from the right; everything left of it is whatever the client sent and is
    never read. With 0 hops the header is ignored entirely, so a spoofed header cannot dodge a limit.
    Pass every ``X-Forwarded-For`` line (``headers.getlist``): a proxy may add its own line rather than
    append. Trusting hops is only right when the server cannot be reached except through those proxies.
    A list shorter than the hop count means the request skipped a proxy; its leftmost entry was still
    written by a trusted one. An entry that is not an IP address falls back to the peer.

    Raises:
        ValueError: a negative hop count.
    """
    if trusted_proxy_hops < 0:
        raise ValueError(f"trusted_proxy_hops must be >= 0, got {trusted_proxy_hops}")
    fallback = peer or "unknown"
    if trusted_proxy_hops == 0 or not forwarded_for:
        return fallback
    lines = [forwarded_for] if isinstance(forwarded_for, str) else list(forwarded_for)
    entries = [entry.strip() for line in lines for entry in line.split(",") if entry.strip()]
    if not entries:
        return fallback
    address = _parse_address(entries[max(0, len(entries) - trusted_proxy_hops)])
    return fallback if address is None else str(address)


def caller_key(
    user_id: str | None,
    client_host: str | None,
    forwarded_for_header: str | Sequence[str] | None,
    trusted_proxy_hops: int,
) -> str:
    """Whose budget a request spends: ``user:<id>`` when authenticated, else ``ip:<address>``.

    Unauthenticated requests (and invalid tokens: pass no user id for them) spend the address's budget,
    so rotating bogus tokens mints no fresh budgets. An IPv6 address is bucketed by its
    /:data:`IPV6_CLIENT_PREFIX_BITS` network; an IPv4-mapped IPv6 address counts as its IPv4 address.
    """
    if user_id:
        return f"user:{user_id}"
    address = client_address(client_host, forwarded_for_header, trusted_proxy_hops)
    parsed = _parse_address(address)
    if parsed is None:
        return f"ip:{address.lower()}"
    if parsed.version == 6:
        return f"ip:{ipaddress.IPv6Network((parsed, IPV6_CLIENT_PREFIX_BITS), strict=False)}"
    return f"ip:{parsed}"


def _parse_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An IP address from a peer or forwarded entry, with an optional port (``1.2.3.4:5``, ``[::1]:5``)."""
    candidates = [text]
    if text.startswith("["):
        candidates = [text[1 : text.find("]")]] if "]" in text else []
    elif text.count(":") == 1:
        candidates.append(text.partition(":")[0])
    for candidate in candidates:
        try:
            address = ipaddress.ip_address(candidate)
        except ValueError:
            continue
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            return address.ipv4_mapped
        return address
    return None
