"""The app's cap on outbound calls at once (outbound/_gate.py): waits, refusals, hand-over, loops.

Real calls through the guarded client to a slow loopback server are in
tests/reliability/test_limits.py (503 for answers, a busy notice for searches); these pin the gate.
"""

from __future__ import annotations

import asyncio
import threading

import anyio
import pytest

from ai_search_server.app import create_app
from ai_search_server.outbound import OutboundBusy, OutboundPolicy
from ai_search_server.outbound._client import GuardedClient
from ai_search_server.outbound._gate import CallGate, GateBusy
from ai_search_server.retrieval.pipeline_client import PipelineError
from ai_search_server.settings import load_settings
from ai_search_server.store.base import Store

pytestmark = pytest.mark.anyio

# Seconds a test holds a slot: long against the waits below, short for the suite.
HOLD_SECONDS = 0.3


async def test_a_call_beyond_the_cap_waits_then_is_refused() -> None:
    gate = CallGate(max_calls=1, wait_seconds=0.05)
    async with gate.slot():
        with pytest.raises(GateBusy):
            async with gate.slot():
                raise AssertionError("no second slot while the first is held")
        assert gate.in_use == 1
    assert gate.in_use == 0


async def test_a_slot_freed_within_the_wait_is_handed_to_the_first_waiter() -> None:
    gate = CallGate(max_calls=1, wait_seconds=5)
    order: list[str] = []

    async def take(name: str) -> None:
        async with gate.slot():
            order.append(name)
            await anyio.sleep(0.01)

    async with anyio.create_task_group() as group, gate.slot():
        for name in ("first", "second", "third"):
            group.start_soon(take, name)
            await anyio.sleep(0.01)  # queue them in this order
        order.append("holder")
    assert order == ["holder", "first", "second", "third"]
    assert gate.in_use == 0


async def test_a_cancelled_waiter_leaves_no_slot_behind() -> None:
    gate = CallGate(max_calls=1, wait_seconds=5)
    async with gate.slot():
        with anyio.move_on_after(0.05):
            async with gate.slot():
                raise AssertionError("unreachable")
    assert gate.in_use == 0
    async with gate.slot():  # the slot is free again
        assert gate.in_use == 1


def test_one_gate_serves_event_loops_in_several_threads() -> None:
    gate = CallGate(max_calls=2, wait_seconds=5)
    peak = 0
    refused = 0
    lock = threading.Lock()

    async def worker() -> None:
        nonlocal peak, refused
        for _ in range(3):
            try:
                async with gate.slot():
                    with lock:
                        peak = max(peak, gate.in_use)
                    await asyncio.sleep(0.01)
            except GateBusy:
                refused += 1

    threads = [threading.Thread(target=lambda: asyncio.run(worker())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert (peak, refused, gate.in_use) == (2, 0, 0)


async def test_every_caller_of_an_app_shares_its_one_client_and_its_gate(store: Store) -> None:
    """The answers' provider and the remote pipeline call the app's client: a call of one holding the
    only slot makes the other wait, then fail busy, before it connects."""
    settings = load_settings(
        environ={},
        overrides={
            "site_url": "http://testserver",
            "embedder": "none",
            "llm_base_url": "http://127.0.0.1:9/v1",
            "llm_model": "m",
            "pipeline_base_url": "http://127.0.0.1:9/pipeline",
            "pipeline_id": "p",
            "pipeline_api_key": "k",
            "pipeline_api_key_secret": "s",
            "outbound_allow_hosts": ["127.0.0.1"],
            "outbound_max_concurrent_calls": 1,
        },
    )
    services = create_app(settings, store).state.services
    search = await services.search.get()
    assert services.answers.provider is not None and services.answers.provider.client is services.outbound
    async with services.outbound, services.outbound.gate.slot():
        with pytest.raises(PipelineError) as caught:
            await search.pipeline.search(
                "deploy", mode="keyword", classifications=["user"], pipeline_filters={}, limit=5
            )
    assert caught.value.kind == "busy"
    await services.search.aclose()


async def test_a_full_gate_fails_the_call_with_outbound_busy_before_connecting() -> None:
    policy = OutboundPolicy(allow_hosts=("127.0.0.1",), max_concurrent_calls=1, queue_wait_seconds=0.05)
    async with GuardedClient(policy) as client, client.gate.slot():
        with pytest.raises(OutboundBusy) as caught:
            # Port 9 (discard) is never contacted: the call fails before it connects.
            await client.request_json("GET", "http://127.0.0.1:9/never")
    assert caught.value.proxy_status == 503
    assert "1 calls already run" in caught.value.message


@pytest.mark.parametrize("bad", [{"max_concurrent_calls": 0}, {"queue_wait_seconds": -1.0}])
def test_the_policy_refuses_a_cap_or_wait_that_cannot_work(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        OutboundPolicy(**bad)  # type: ignore[arg-type]
