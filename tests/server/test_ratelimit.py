"""Rate limits: budgets per route and caller, headers and 429s, caller identity, Redis sharing and failure.

The Redis tests start their own ``redis-server`` on a free loopback port (no persistence, a temp dir),
two limiters on it stand for two server processes, and killing it mid-test shows the storage-error
policy at work.
"""

from __future__ import annotations

import contextlib
import logging
import math
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from ai_search_server.errors import refusal_response
from ai_search_server.ratelimit import (
    MCP_RATE_LIMIT,
    FailedAuthMiddleware,
    OnStorageError,
    RateLimit,
    RateLimiter,
    RateLimitResult,
    Strategy,
    caller_key,
    client_address,
    rate_limit_headers,
    too_many_requests,
)

REDIS_BINARY = shutil.which("redis-server") or "/usr/bin/redis-server"
# Seconds to wait for a started redis-server to answer PING; a bound, not a measured figure.
REDIS_START_DEADLINE_SECONDS = 10.0
THREE_PER_MINUTE = RateLimit(count=3, period_seconds=60)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- budgets in memory ------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("strategy", ["moving-window", "fixed-window"])
async def test_each_caller_has_its_own_budget_per_route(strategy: Strategy) -> None:
    async with RateLimiter("memory://", strategy=strategy) as limiter:
        alice = [await limiter.hit("ai.search", "user:alice", THREE_PER_MINUTE) for _ in range(4)]
        bob = await limiter.hit("ai.search", "user:bob", THREE_PER_MINUTE)
        alice_elsewhere = await limiter.hit("chat.postMessage", "user:alice", THREE_PER_MINUTE)
    assert [r.allowed for r in alice] == [True, True, True, False]
    assert [r.remaining for r in alice] == [2, 1, 0, 0]
    assert all(r.limit == 3 and not r.degraded for r in alice)
    assert bob.allowed and bob.remaining == 2
    assert alice_elsewhere.allowed and alice_elsewhere.remaining == 2


@pytest.mark.anyio
async def test_refused_requests_do_not_use_up_budget_of_others_and_reset_is_within_the_period() -> None:
    before = time.time()
    async with RateLimiter() as limiter:
        results = [await limiter.hit("mcp", "ip:198.51.100.7", MCP_RATE_LIMIT) for _ in range(61)]
    assert [r.allowed for r in results].count(True) == 60
    assert not results[-1].allowed
    assert math.floor(before) < results[-1].reset_epoch_seconds <= math.ceil(time.time()) + 60


def test_headers_of_an_allowed_request() -> None:
    result = RateLimitResult(allowed=True, limit=60, remaining=59, reset_epoch_seconds=1_800_000_060)
    assert rate_limit_headers(result) == {
        "X-RateLimit-Limit": "60",
        "X-RateLimit-Remaining": "59",
        "X-RateLimit-Reset": "1800000060",
    }


@pytest.mark.parametrize(
    ("reset", "now", "retry_after"),
    [
        pytest.param(1_800_000_060, 1_800_000_000.0, "60", id="whole-seconds-until-reset"),
        pytest.param(1_800_000_060, 1_800_000_059.5, "1", id="fraction-rounds-up-never-early"),
        pytest.param(1_800_000_060, 1_800_000_070.0, "1", id="past-reset-still-says-one-second"),
    ],
)
def test_refused_request_headers_carry_retry_after(reset: int, now: float, retry_after: str) -> None:
    result = RateLimitResult(allowed=False, limit=60, remaining=0, reset_epoch_seconds=reset)
    headers = rate_limit_headers(result, now=now)
    assert headers["Retry-After"] == retry_after
    assert headers["X-RateLimit-Remaining"] == "0"


@pytest.mark.anyio
async def test_429_response_has_body_headers_and_retry_after() -> None:
    async with RateLimiter() as limiter:
        for _ in range(3):
            await limiter.hit("login", "ip:203.0.113.9", THREE_PER_MINUTE)
        refused = await limiter.hit("login", "ip:203.0.113.9", THREE_PER_MINUTE)
    response = refusal_response(too_many_requests(refused))
    assert response.status_code == 429
    assert (
        response.body
        == b'{"success":false,"error":"Too many requests","errorType":"error-too-many-requests"}'
    )
    assert response.headers["x-ratelimit-limit"] == "3"
    assert response.headers["x-ratelimit-remaining"] == "0"
    assert 1 <= int(response.headers["retry-after"]) <= 61


def test_mcp_429_uses_the_upstream_jsonrpc_envelope() -> None:
    result = RateLimitResult(allowed=False, limit=60, remaining=0, reset_epoch_seconds=int(time.time()) + 30)
    response = refusal_response(too_many_requests(result), jsonrpc=True)
    assert response.status_code == 429
    assert response.body == b'{"jsonrpc":"2.0","error":{"code":-32000,"message":"Too many requests"}}'


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param(
            {"storage_uri": "memcached://127.0.0.1:11211"}, "rate limit storage", id="unknown-scheme"
        ),
        pytest.param({"storage_uri": "127.0.0.1:6379"}, "rate limit storage", id="no-scheme"),
        pytest.param({"strategy": "token-bucket"}, "strategy", id="unknown-strategy"),
        pytest.param({"on_storage_error": "ignore"}, "on_storage_error", id="unknown-storage-error-policy"),
    ],
)
def test_limiter_refuses_bad_configuration(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RateLimiter(**kwargs)


@pytest.mark.parametrize(("count", "period"), [(0, 60), (60, 0), (-1, 60)])
def test_rate_limit_needs_a_positive_count_and_period(count: int, period: int) -> None:
    with pytest.raises(ValueError, match="count >= 1"):
        RateLimit(count, period)


# -- caller identity --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user_id", "peer", "forwarded", "hops", "expected"),
    [
        pytest.param("u1", "192.0.2.1", None, 0, "user:u1", id="authenticated-caller-spends-the-user-budget"),
        pytest.param(
            None, "192.0.2.1", None, 0, "ip:192.0.2.1", id="anonymous-caller-spends-the-address-budget"
        ),
        pytest.param(
            None, "192.0.2.1", "203.0.113.5", 0, "ip:192.0.2.1", id="zero-hops-ignore-forwarded-for"
        ),
        pytest.param(
            None, "10.0.0.1", "6.6.6.6, 203.0.113.5", 1, "ip:203.0.113.5", id="one-hop-takes-rightmost"
        ),
        pytest.param(
            None,
            "10.0.0.1",
            "6.6.6.6, 203.0.113.5, 10.0.0.2",
            2,
            "ip:203.0.113.5",
            id="two-hops-take-second-right",
        ),
        pytest.param(None, "10.0.0.1", "203.0.113.5", 2, "ip:203.0.113.5", id="short-list-takes-leftmost"),
        pytest.param(
            None, "10.0.0.1", ["6.6.6.6", "203.0.113.5"], 1, "ip:203.0.113.5", id="header-lines-joined"
        ),
        pytest.param(
            None, "10.0.0.1", "6.6.6.6, not-an-ip", 1, "ip:10.0.0.1", id="garbage-entry-falls-back-to-peer"
        ),
        pytest.param(None, "10.0.0.1", " , ", 1, "ip:10.0.0.1", id="empty-header-falls-back-to-peer"),
        pytest.param(
            None, "10.0.0.1", "203.0.113.5:41234", 1, "ip:203.0.113.5", id="port-on-ipv4-is-dropped"
        ),
        pytest.param(
            None, "10.0.0.1", "[2001:db8::1]:443", 1, "ip:2001:db8::/64", id="port-on-ipv6-is-dropped"
        ),
        pytest.param(
            None, "2001:db8:0:1::1", None, 0, "ip:2001:db8:0:1::/64", id="ipv6-bucketed-by-slash-64"
        ),
        pytest.param(None, "::ffff:192.0.2.1", None, 0, "ip:192.0.2.1", id="ipv4-mapped-counts-as-ipv4"),
        pytest.param(None, None, None, 0, "ip:unknown", id="no-peer-shares-one-unknown-budget"),
        pytest.param("", "192.0.2.1", None, 0, "ip:192.0.2.1", id="empty-user-id-is-anonymous"),
    ],
)
def test_caller_key(
    user_id: str | None, peer: str | None, forwarded: str | list[str] | None, hops: int, expected: str
) -> None:
    assert caller_key(user_id, peer, forwarded, hops) == expected


def test_two_addresses_in_one_ipv6_slash_64_share_a_budget() -> None:
    assert caller_key(None, "2001:db8::1", None, 0) == caller_key(None, "2001:db8::ffff:1", None, 0)
    assert caller_key(None, "2001:db8::1", None, 0) != caller_key(None, "2001:db8:0:1::1", None, 0)


def test_negative_hops_are_refused() -> None:
    with pytest.raises(ValueError, match="trusted_proxy_hops"):
        client_address("10.0.0.1", "203.0.113.5", -1)


@pytest.mark.anyio
async def test_spoofed_forwarded_for_without_trusted_hops_creates_no_new_budgets() -> None:
    async with RateLimiter() as limiter:
        results = [
            await limiter.hit(
                "ai.search", caller_key(None, "192.0.2.1", f"198.51.100.{n}", 0), THREE_PER_MINUTE
            )
            for n in range(10)
        ]
    assert [r.allowed for r in results].count(True) == 3


@pytest.mark.anyio
async def test_one_trusted_hop_budgets_each_real_client_and_ignores_what_they_prepend() -> None:
    proxy = "10.0.0.1"
    async with RateLimiter() as limiter:
        first = [
            await limiter.hit(
                "ai.search", caller_key(None, proxy, f"6.6.6.{n}, 203.0.113.5", 1), THREE_PER_MINUTE
            )
            for n in range(5)
        ]
        second = await limiter.hit("ai.search", caller_key(None, proxy, "203.0.113.6", 1), THREE_PER_MINUTE)
    assert [r.allowed for r in first] == [True, True, True, False, False]
    assert second.allowed


# -- Redis: shared budgets and failure --------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A throwaway redis-server on loopback, no persistence, started and killed by the test."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [
            REDIS_BINARY,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.directory),
        ]
        command += ["--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + REDIS_START_DEADLINE_SECONDS
        while True:
            client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.2)
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on port {self.port}") from None
                time.sleep(0.02)
            finally:
                client.close()

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if not Path(REDIS_BINARY).is_file():
        pytest.skip(f"redis-server is not installed ({REDIS_BINARY} missing; apt-get install redis-server)")
    server = RedisServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.mark.anyio
@pytest.mark.parametrize("strategy", ["moving-window", "fixed-window"])
async def test_two_processes_on_one_redis_share_one_budget(
    redis_server: RedisServer, strategy: Strategy
) -> None:
    async with (
        RateLimiter(redis_server.url, strategy=strategy) as first,
        RateLimiter(redis_server.url, strategy=strategy) as second,
    ):
        assert first.shared and second.shared
        answers = [
            await first.hit("ai.search", "user:alice", THREE_PER_MINUTE),
            await second.hit("ai.search", "user:alice", THREE_PER_MINUTE),
            await first.hit("ai.search", "user:alice", THREE_PER_MINUTE),
            await second.hit("ai.search", "user:alice", THREE_PER_MINUTE),
            await first.hit("ai.search", "user:alice", THREE_PER_MINUTE),
        ]
        other = await second.hit("ai.search", "user:bob", THREE_PER_MINUTE)
    assert [a.allowed for a in answers] == [True, True, True, False, False]
    assert [a.remaining for a in answers] == [2, 1, 0, 0, 0]
    assert not any(a.degraded for a in answers)
    assert other.allowed


@pytest.mark.anyio
async def test_processes_with_different_strategies_do_not_collide_on_one_redis(
    redis_server: RedisServer,
) -> None:
    """A rolling deploy that changes the strategy: each keeps its own Redis keys (a list vs a counter)."""
    async with (
        RateLimiter(redis_server.url, strategy="moving-window") as moving,
        RateLimiter(redis_server.url, strategy="fixed-window") as fixed,
    ):
        results = [
            await moving.hit("ai.search", "user:alice", THREE_PER_MINUTE),
            await fixed.hit("ai.search", "user:alice", THREE_PER_MINUTE),
        ]
    assert [(r.allowed, r.degraded, r.remaining) for r in results] == [(True, False, 2), (True, False, 2)]


@pytest.mark.anyio
async def test_redis_outage_falls_back_to_local_budgets_and_recovers(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The default policy: while Redis is down each process enforces the limit itself."""
    async with RateLimiter(redis_server.url, redis_retry_interval_seconds=0) as limiter:
        shared = await limiter.hit("ai.search", "user:alice", THREE_PER_MINUTE)
        redis_server.kill()
        with caplog.at_level(logging.WARNING, logger="ai_search_server.ratelimit"):
            during = [await limiter.hit("ai.search", "user:alice", THREE_PER_MINUTE) for _ in range(4)]
        redis_server.start()  # same port, empty: the shared count starts over
        after = await limiter.hit("ai.search", "user:alice", THREE_PER_MINUTE)
    assert shared.allowed and not shared.degraded
    assert [r.allowed for r in during] == [True, True, True, False]
    assert all(r.degraded for r in during)
    assert after.allowed and not after.degraded and after.remaining == 2
    warnings = [r for r in caplog.records if "rate limit storage failed" in r.getMessage()]
    assert len(warnings) == 1, "one warning per outage, not one per request"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("policy", "allowed"),
    [
        pytest.param("allow", True, id="fail-open-lets-every-request-through"),
        pytest.param("deny", False, id="fail-closed-refuses-every-request"),
    ],
)
async def test_redis_outage_with_an_explicit_policy(
    redis_server: RedisServer, policy: OnStorageError, allowed: bool
) -> None:
    async with RateLimiter(
        redis_server.url, on_storage_error=policy, redis_retry_interval_seconds=0
    ) as limiter:
        redis_server.kill()
        results = [await limiter.hit("ai.search", "user:alice", THREE_PER_MINUTE) for _ in range(5)]
    assert [r.allowed for r in results] == [allowed] * 5
    assert all(r.degraded for r in results)
    if not allowed:
        assert "Retry-After" in rate_limit_headers(results[0])


@pytest.mark.anyio
async def test_after_a_failure_redis_rests_for_the_retry_interval(redis_server: RedisServer) -> None:
    """Within the interval no request pays for another connection attempt, even once Redis is back."""
    async with RateLimiter(redis_server.url, redis_retry_interval_seconds=3600) as limiter:
        redis_server.kill()
        down = await limiter.hit("ai.search", "user:alice", THREE_PER_MINUTE)
        redis_server.start()
        still_resting = await limiter.hit("ai.search", "user:alice", THREE_PER_MINUTE)
    assert down.degraded and still_resting.degraded
    assert still_resting.remaining == 1, "counted in the same local budget"


@pytest.mark.anyio
async def test_unreachable_redis_from_the_start_is_an_outage_too() -> None:
    async with RateLimiter(f"redis://127.0.0.1:{free_port()}/0") as limiter:
        result = await limiter.hit("ai.search", "user:alice", THREE_PER_MINUTE)
    assert result.allowed and result.degraded


@pytest.mark.anyio
async def test_aclose_releases_the_redis_connections(redis_server: RedisServer) -> None:
    limiter = RateLimiter(redis_server.url)
    await limiter.hit("ai.search", "user:alice", THREE_PER_MINUTE)
    await limiter.aclose()
    with contextlib.closing(redis.Redis(host="127.0.0.1", port=redis_server.port)) as observer:
        deadline = time.monotonic() + REDIS_START_DEADLINE_SECONDS
        # The server notices a closed socket on its next event-loop turn; wait for it, bounded.
        while (clients := observer.client_list()) and len(clients) > 1 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert len(clients) == 1, "only the observer is still connected"


# -- failed authentication --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_refusal_counts_nothing_and_answers_once_the_budget_is_spent() -> None:
    async with RateLimiter() as limiter:
        peeks = [await limiter.refusal("r", "ip:192.0.2.1", THREE_PER_MINUTE) for _ in range(5)]
        hits = [(await limiter.hit("r", "ip:192.0.2.1", THREE_PER_MINUTE)).allowed for _ in range(3)]
        spent = await limiter.refusal("r", "ip:192.0.2.1", THREE_PER_MINUTE)
    assert peeks == [None] * 5 and hits == [True] * 3
    assert spent is not None and not spent.allowed and spent.remaining == 0
    assert 1 <= spent.retry_after_seconds() <= 61


# The tokens _token_checker was asked to check, in order.
_checks: list[bytes] = []


async def _token_checker(scope: Any, receive: Any, send: Any) -> None:
    """401 unless X-Auth-Token is 'right'; counts the credential checks it makes."""
    headers = dict(scope["headers"])
    if b"x-auth-token" in headers:
        _checks.append(headers[b"x-auth-token"])
    status = 200 if headers.get(b"x-auth-token", b"right") == b"right" else 401
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def _guarded_client(limiter: RateLimiter, peer: str, hops: int = 0) -> httpx.AsyncClient:
    app = FailedAuthMiddleware(_token_checker, limiter, trusted_proxy_hops=hops, limit=THREE_PER_MINUTE)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=(peer, 1)), base_url="http://t")


@pytest.mark.anyio
async def test_failed_authentications_spend_the_address_budget_and_later_guesses_go_unchecked() -> None:
    _checks.clear()
    async with RateLimiter() as limiter, _guarded_client(limiter, "192.0.2.1") as http:
        guesses = [
            await http.get(
                "/api/v1/me",
                headers={"X-User-Id": "u", "X-Auth-Token": f"guess-{n}", "X-Forwarded-For": f"198.51.100.{n}"},
            )
            for n in range(6)
        ]
        right = await http.get("/api/v1/me", headers={"X-User-Id": "u", "X-Auth-Token": "right"})
        mcp = await http.post("/api/v1/mcp", headers={"X-User-Id": "u", "X-Auth-Token": "right"})
        anonymous = await http.get("/api/v1/info")
    assert [r.status_code for r in guesses] == [401, 401, 401, 429, 429, 429]
    assert _checks == [b"guess-0", b"guess-1", b"guess-2"], "refused guesses never reach the check"
    assert all("retry-after" in r.headers for r in guesses[3:])
    assert right.status_code == 429, "a right token from a spent address waits too"
    assert (mcp.status_code, mcp.json()["error"]["code"]) == (429, -32000)
    assert anonymous.status_code == 200, "requests without credentials spend nothing and are not refused"


@pytest.mark.anyio
async def test_successful_authentications_spend_no_failure_budget() -> None:
    async with RateLimiter() as limiter, _guarded_client(limiter, "192.0.2.1") as http:
        answers = [
            await http.get("/api/v1/me", headers={"X-User-Id": "u", "X-Auth-Token": "right"}) for _ in range(10)
        ]
    assert [r.status_code for r in answers] == [200] * 10


@pytest.mark.anyio
async def test_behind_a_trusted_proxy_each_client_has_its_own_failure_budget() -> None:
    proxy = "10.0.0.1"
    async with RateLimiter() as limiter, _guarded_client(limiter, proxy, hops=1) as http:

        async def guess(client: str) -> int:
            headers = {"X-User-Id": "u", "X-Auth-Token": "wrong", "X-Forwarded-For": f"6.6.6.6, {client}"}
            return (await http.get("/api/v1/me", headers=headers)).status_code

        first = [await guess("203.0.113.5") for _ in range(4)]
        second = await guess("203.0.113.6")
    assert first == [401, 401, 401, 429]
    assert second == 401
