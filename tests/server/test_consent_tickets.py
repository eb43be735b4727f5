"""Consent tickets (``oauth/tickets.py``): in process memory, and in a real ``redis-server``.

Both kinds keep one promise: a ticket names the person it was issued to, for its own request only,
once, within its lifetime. The Redis kind keeps it across processes (two ticket stores on one Redis
stand for two proxies), and says so when Redis does not answer rather than letting a consent through.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest

from ai_search_server.oauth.tickets import (
    ConsentTickets,
    MemoryTickets,
    RedisTickets,
    TicketsUnavailable,
    consent_tickets,
)
from ai_search_server.ratelimit import redis_url

from ._live import free_port, running_redis

pytestmark = pytest.mark.anyio
needs_redis = pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not installed")


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server not installed")
    with running_redis(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(params=["memory", pytest.param("redis", marks=needs_redis)])
async def tickets(request: pytest.FixtureRequest) -> AsyncIterator[ConsentTickets]:
    made = MemoryTickets() if request.param == "memory" else RedisTickets(request.getfixturevalue("redis_server"))
    yield made
    await made.aclose()


async def test_a_ticket_names_its_person_once_and_only_for_its_own_request(tickets: ConsentTickets) -> None:
    ticket = await tickets.issue("user-1", "digest-a")
    assert await tickets.redeem(ticket, "digest-b") is None  # another request: refused, not used up
    assert await tickets.redeem(ticket + "x", "digest-a") is None
    assert await tickets.redeem(ticket, "digest-a") == "user-1"
    assert await tickets.redeem(ticket, "digest-a") is None  # used


async def test_tickets_are_distinct_and_unguessable_in_length(tickets: ConsentTickets) -> None:
    issued = {await tickets.issue("user-1", "digest-a") for _ in range(20)}
    assert len(issued) == 20 and all(len(t) >= 43 for t in issued)  # 32 random bytes, base64url


@pytest.mark.parametrize("kind", ["memory", pytest.param("redis", marks=needs_redis)])
async def test_an_expired_ticket_is_refused(kind: str, request: pytest.FixtureRequest) -> None:
    short: ConsentTickets = (
        MemoryTickets(lifetime_seconds=1)
        if kind == "memory"
        else RedisTickets(request.getfixturevalue("redis_server"), lifetime_seconds=1)
    )
    try:
        ticket = await short.issue("user-1", "digest-a")
        await anyio.sleep(1.2)
        assert await short.redeem(ticket, "digest-a") is None
    finally:
        await short.aclose()


@needs_redis
async def test_a_ticket_issued_by_one_process_is_redeemed_by_another_and_only_once(redis_server: str) -> None:
    first, second, third = (RedisTickets(redis_server) for _ in range(3))
    try:
        ticket = await first.issue("user-1", "digest-a")
        results: list[str | None] = []

        async def redeem(store: RedisTickets) -> None:
            results.append(await store.redeem(ticket, "digest-a"))

        async with anyio.create_task_group() as group:  # two consents racing through two processes
            group.start_soon(redeem, second)
            group.start_soon(redeem, third)
        assert sorted(map(str, results)) == ["None", "user-1"]
    finally:
        for store in (first, second, third):
            await store.aclose()


async def test_a_redis_that_does_not_answer_stops_the_flow_with_a_clear_error() -> None:
    down = RedisTickets(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    try:
        with pytest.raises(TicketsUnavailable, match="did not answer"):
            await down.issue("user-1", "digest-a")
        with pytest.raises(TicketsUnavailable):
            await down.redeem("anything", "digest-a")
    finally:
        await down.aclose()


@pytest.mark.parametrize(
    ("storage", "kind", "url"),
    [
        ("memory://", MemoryTickets, None),
        ("redis://cache.internal:6379/2", RedisTickets, "redis://cache.internal:6379/2"),
        ("rediss://:pw@cache.internal:6380/0", RedisTickets, "rediss://:pw@cache.internal:6380/0"),
        ("redis+unix:///run/redis.sock?db=1", RedisTickets, "unix:///run/redis.sock?db=1"),
    ],
)
async def test_the_tickets_live_where_the_rate_limits_do(
    storage: str, kind: type[object], url: str | None
) -> None:
    assert redis_url(storage) == url
    made = consent_tickets(storage)
    try:
        assert isinstance(made, kind)
    finally:
        await made.aclose()
