"""F. Limits: 5 MiB in and out, the 20 s deadline, batch 20 and 4 at once, 60 requests a minute.

Each limit is pushed past its edge and must answer its documented status: 413 for a body over 5 MiB
(declared, chunked or streamed), a degraded search or a 502 for an upstream answer over 5 MiB, a 504
or a degraded search once the deadline passes, 400 (-32600) for a batch of 21 before any work, and 429
with ``Retry-After`` past a rate limit (failed authentications included: 10 a minute per address),
whatever ``X-Forwarded-For`` says. The default run shortens
the upstream deadlines to keep CI quick; the soak run holds the product's own 10 s and 20 s.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import pytest
from pydantic import BaseModel, ConfigDict
from starlette.types import Message

from ai_search_server.app import create_app
from ai_search_server.body_limit import DEFAULT_MAX_REQUEST_BODY_BYTES, BodyLimitMiddleware
from ai_search_server.mcp import MCP_PATH
from ai_search_server.mcp.limits import BATCH_WORKERS, MAX_BATCH_ENTRIES, TOOL_CALL_TIMEOUT_SECONDS
from ai_search_server.outbound import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_QUEUE_WAIT_SECONDS,
    GuardedClient,
    OutboundTooLarge,
)
from ai_search_server.ratelimit import AUTH_FAILURE_RATE_LIMIT, RateLimiter
from ai_search_server.rest import ApiRequest, Router
from ai_search_server.serving import REQUEST_HEAD_TIMEOUT_SECONDS, server_options
from ai_search_server.store.base import Store
from tests.server._mcp_fixtures import asgi_client, bare_app, mcp_settings
from tests.server.conftest import Workspace

from ._apps import LOOPBACK, MCP_HEADERS, asgi, product_app
from ._fakes import RawUpstream
from ._servers import ServedApp
from .conftest import Figure, reliability_settings

MIB = 1024 * 1024
# What httpcore reads per socket read (bytes): the most a capped call may read past the cap.
READ_CHUNK_BYTES = 64 * 1024
# The product's deadlines for an answer and a pipeline call (seconds), as documented.
ANSWER_DEADLINE_SECONDS = 20.0
PIPELINE_DEADLINE_SECONDS = 10.0
# Slack on a measured deadline (seconds): scheduling on a loaded 2-core machine, never a target.
DEADLINE_SLACK_SECONDS = 2.0


@dataclass(frozen=True)
class Scale:
    llm_deadline: float | None  # None: the product's own
    pipeline_deadline: float | None
    bogus_tokens: int
    hammer_seconds: float


DEFAULT = Scale(llm_deadline=1.0, pipeline_deadline=1.0, bogus_tokens=500, hammer_seconds=0)
SOAK = Scale(llm_deadline=None, pipeline_deadline=None, bogus_tokens=10_000, hammer_seconds=300)
SCALES = [
    pytest.param(DEFAULT, id="default"),
    pytest.param(SOAK, id="soak", marks=[pytest.mark.soak, pytest.mark.timeout(1800)]),
]


def _ping(pad: int = 0) -> bytes:
    """A JSON-RPC ping of exactly ``len(_ping(0)) + pad`` bytes (params hold the padding)."""
    return b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"p":"' + b"x" * pad + b'"}}'


def _ping_of(size: int) -> bytes:
    return _ping(size - len(_ping(0)))


# -- F1 ---------------------------------------------------------------------------------------------


async def _pulled_before_refusal(chunk_bytes: int) -> tuple[int, int]:
    """Feed the body limit an endless upload; (bytes it pulled, status it answered)."""
    pulled = 0
    status = 0

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("an oversized body must never reach the app")

    async def receive() -> Message:
        nonlocal pulled
        pulled += chunk_bytes
        return {"type": "http.request", "body": b"x" * chunk_bytes, "more_body": True}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    scope = {"type": "http", "method": "POST", "path": "/api/v1/mcp", "headers": []}
    await BodyLimitMiddleware(app)(scope, receive, send)
    return pulled, status


async def _chunked(body: bytes, piece: int = 64 * 1024) -> AsyncIterator[bytes]:
    """The body as a chunked upload: no Content-Length at all."""
    for start in range(0, len(body), piece):
        yield body[start : start + piece]


@pytest.mark.requirement("F1")
@pytest.mark.anyio
async def test_request_bodies_are_capped_at_5_mib(store: Store, workspace: Workspace, figure: Figure) -> None:
    cap = DEFAULT_MAX_REQUEST_BODY_BYTES
    headers = {**workspace["alice"].pat_headers, **MCP_HEADERS}
    settings = reliability_settings(site_url="http://127.0.0.1:8000", allowed_hosts=["127.0.0.1"])
    outcomes: dict[str, tuple[int, int]] = {}
    with ServedApp(create_app(settings, store, limiter=None)) as server:
        async with httpx.AsyncClient(base_url=server.url, headers={"Host": "127.0.0.1"}, timeout=30) as http:
            exact = await http.post(MCP_PATH, content=_ping_of(cap), headers=headers)
            outcomes["exactly-5-mib"] = (exact.status_code, 200)
            over = await http.post(MCP_PATH, content=_ping_of(cap + 1), headers=headers)
            outcomes["5-mib-plus-1"] = (over.status_code, 413)
            chunked = await http.post(MCP_PATH, content=_chunked(_ping_of(cap + 1)), headers=headers)
            outcomes["chunked-without-length"] = (chunked.status_code, 413)
            rest = await http.post("/api/v1/chat.postMessage", content=b"x" * (6 * MIB), headers=headers)
            outcomes["rest-6-mib"] = (rest.status_code, 413)
    # A lying length: 10 MiB declared and nothing sent is refused on the header alone.
    declared = _declared_only(store, settings, declared=10 * MIB)
    outcomes["declared-10-mib-nothing-sent"] = (declared, 413)
    pulled, status = await _pulled_before_refusal(READ_CHUNK_BYTES)
    outcomes["endless-upload"] = (status, 413)
    wrong = {name: got for name, (got, want) in outcomes.items() if got != want}
    figure(
        tried=len(outcomes),
        failed=len(wrong) + (pulled > cap + READ_CHUNK_BYTES),
        refusals_as_expected=f"{len(outcomes) - len(wrong)}/{len(outcomes)}",
        statuses={name: got for name, (got, _want) in outcomes.items()},
        bytes_buffered_before_413=pulled,
        cap_plus_one_chunk=cap + READ_CHUNK_BYTES,
    )
    assert wrong == {}
    assert pulled <= cap + READ_CHUNK_BYTES


def _declared_only(store: Store, settings: Any, declared: int) -> int:
    """The status a real server answers to headers declaring ``declared`` bytes, before any is sent."""
    with (
        ServedApp(create_app(settings, store, limiter=None)) as server,
        socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn,
    ):
        conn.sendall(
            b"POST /api/v1/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {declared}\r\n\r\n".encode()
        )
        answer = conn.recv(4096)
    return int(answer.split(b" ", 2)[1])


SLOW_UPLOAD_SECONDS = 25.0


@pytest.mark.requirement("F1")
@pytest.mark.soak
@pytest.mark.timeout(120)
def test_a_slow_upload_is_cut_by_the_20_s_deadline(store: Store, figure: Figure) -> None:
    settings = reliability_settings(site_url="http://127.0.0.1:8000", allowed_hosts=["127.0.0.1"])
    closed_after: float | None = None
    with (
        ServedApp(create_app(settings, store, limiter=None)) as server,
        socket.create_connection(("127.0.0.1", server.port), timeout=1) as conn,
    ):
        conn.sendall(b"POST /api/v1/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n")
        start = time.monotonic()
        while time.monotonic() - start < SLOW_UPLOAD_SECONDS:
            try:
                conn.sendall(b" ")
                if conn.recv(1024) == b"":
                    closed_after = time.monotonic() - start
                    break
            except TimeoutError:
                continue
            except OSError:
                closed_after = time.monotonic() - start
                break
            else:
                closed_after = time.monotonic() - start  # the server answered: the upload is over
                break
    figure(tried=1, failed=int(closed_after is None), closed_after_seconds=closed_after)
    assert closed_after is not None and closed_after <= ANSWER_DEADLINE_SECONDS + DEADLINE_SLACK_SECONDS


# Seconds of the shortened body deadline the default run uses (the soak run holds the product's 20 s).
SHORT_BODY_DEADLINE_SECONDS = 1
# Seconds between two bytes of a trickled upload: steady enough that no idle timeout could fire.
TRICKLE_INTERVAL_SECONDS = 0.2


def _body_head(path: str) -> bytes:
    """A POST head announcing a 1000-byte body."""
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Accept: application/json\r\nX-User-Id: u\r\nX-Auth-Token: t\r\nContent-Length: 1000\r\n\r\n"
    ).encode()


def _trickle(port: int, start: bytes, drip: bytes, *, give_up_after: float) -> tuple[bytes, float]:
    """Send ``start``, then ``drip`` once per TRICKLE_INTERVAL_SECONDS; what the server answered
    (b"" if nothing) and when, in seconds after ``start`` went out."""
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=TRICKLE_INTERVAL_SECONDS) as conn:
        conn.sendall(start)
        began = time.monotonic()
        while time.monotonic() - began < give_up_after:
            try:
                conn.sendall(drip)
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not chunk:
                break
            answer += chunk
            head, _, body = answer.partition(b"\r\n\r\n")
            if body and (body.rstrip().endswith((b"}", b"]")) or b"content-type: text/plain" in head.lower()):
                break
        return answer, time.monotonic() - began


@pytest.mark.requirement("F1")
def test_a_trickled_body_is_answered_408_at_the_body_deadline(store: Store, figure: Figure) -> None:
    settings = reliability_settings(
        site_url="http://127.0.0.1:8000",
        allowed_hosts=["127.0.0.1"],
        request_body_timeout_seconds=SHORT_BODY_DEADLINE_SECONDS,
    )
    outcomes: dict[str, tuple[int | None, str, float, bool]] = {}
    with ServedApp(create_app(settings, store, limiter=None)) as server:
        for name, path in (("rest", "/api/v1/login"), ("mcp", MCP_PATH)):
            answer, seconds = _trickle(
                server.port, _body_head(path), b" ", give_up_after=SHORT_BODY_DEADLINE_SECONDS + 10
            )
            head, _, body = answer.partition(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else None
            closes = b"connection: close" in head.lower()
            outcomes[name] = (status, body.decode(errors="replace"), seconds, closes)
        after = httpx.post(
            f"{server.url}/api/v1/login", json={"user": "x", "password": "y"}, headers={"Host": "127.0.0.1"}
        )
    rest_status, rest_body, _, rest_closes = outcomes["rest"]
    mcp_status, mcp_body, _, mcp_closes = outcomes["mcp"]
    seconds = {n: t for n, (_s, _b, t, _c) in outcomes.items()}
    late = {n: t for n, t in seconds.items() if t > SHORT_BODY_DEADLINE_SECONDS + DEADLINE_SLACK_SECONDS}
    early = {n: t for n, t in seconds.items() if t < SHORT_BODY_DEADLINE_SECONDS * 0.9}
    figure(
        tried=len(outcomes),
        failed=sum(s != 408 for s, _b, _t, _c in outcomes.values()) + len(late) + len(early),
        statuses={n: s for n, (s, _b, _t, _c) in outcomes.items()},
        answered_after_seconds={n: round(t, 2) for n, t in seconds.items()},
        deadline_seconds=SHORT_BODY_DEADLINE_SECONDS,
    )
    assert (rest_status, mcp_status) == (408, 408)
    assert json.loads(rest_body)["errorType"] == "error-request-timeout"
    assert json.loads(mcp_body)["error"]["code"] == -32000
    assert rest_closes and mcp_closes, "a trickling client loses its connection"
    assert late == {} and early == {}, outcomes
    assert after.status_code == 401, "the server goes on serving whole requests"


# Seconds of the shortened head deadline (the product's is serving.REQUEST_HEAD_TIMEOUT_SECONDS).
SHORT_HEAD_DEADLINE_SECONDS = 1.0


@pytest.mark.requirement("F1")
def test_a_trickled_head_is_answered_408_at_the_head_deadline(store: Store, figure: Figure) -> None:
    """uvicorn's keep-alive timer stops at a request's first byte: without a head deadline a client
    sending a header a byte at a time holds its connection for ever."""
    settings = reliability_settings(site_url="http://127.0.0.1:8000", allowed_hosts=["127.0.0.1"])
    options = server_options(head_timeout_seconds=SHORT_HEAD_DEADLINE_SECONDS)
    with ServedApp(create_app(settings, store, limiter=None), **options) as server:
        answer, seconds = _trickle(
            server.port,
            b"GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",
            b"a",
            give_up_after=SHORT_HEAD_DEADLINE_SECONDS + 10,
        )
        after = httpx.get(f"{server.url}/openapi.json", headers={"Host": "127.0.0.1"})
    head = answer.partition(b"\r\n\r\n")[0]
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else None
    in_time = SHORT_HEAD_DEADLINE_SECONDS * 0.9 <= seconds <= SHORT_HEAD_DEADLINE_SECONDS + DEADLINE_SLACK_SECONDS
    figure(
        tried=1,
        failed=int(status != 408 or not in_time),
        status=status,
        answered_after_seconds=round(seconds, 2),
        deadline_seconds=SHORT_HEAD_DEADLINE_SECONDS,
    )
    assert status == 408, answer
    assert b"connection: close" in head.lower()
    assert in_time, seconds
    assert after.status_code == 200, "the server goes on serving whole requests"


@pytest.mark.requirement("F1")
def test_the_head_deadline_is_the_body_deadline() -> None:
    assert REQUEST_HEAD_TIMEOUT_SECONDS == ANSWER_DEADLINE_SECONDS


@pytest.mark.requirement("F1")
def test_the_body_deadline_is_the_documented_20_s() -> None:
    from ai_search_server.body_limit import DEFAULT_REQUEST_BODY_TIMEOUT_SECONDS
    from ai_search_server.settings import Settings

    assert DEFAULT_REQUEST_BODY_TIMEOUT_SECONDS == Settings().request_body_timeout_seconds == ANSWER_DEADLINE_SECONDS


# -- F2 ---------------------------------------------------------------------------------------------


@pytest.mark.requirement("F2")
@pytest.mark.anyio
async def test_a_50_mib_upstream_answer_is_cut_after_5_mib(
    store: Store, workspace: Workspace, figure: Figure
) -> None:
    tries = 3
    with RawUpstream() as upstream:
        upstream.behaviour = "huge"
        read: list[int] = []
        async with GuardedClient(LOOPBACK) as client:
            for _ in range(tries):
                with pytest.raises(OutboundTooLarge) as caught:
                    await client.request_json("GET", upstream.url + "/huge")
                read.append(caught.value.read_bytes)
        async with (
            product_app(store, pipeline_url=upstream.url, llm_url=f"{upstream.url}/v1") as app,
            asgi(app) as http,
        ):
            alice = workspace["alice"].headers
            searches = [
                await http.get("/api/v1/ai.search", params={"query": "deploy"}, headers=alice)
                for _ in range(tries)
            ]
            answers = [
                await http.post(
                    "/api/v1/ai.search.answer",
                    json={"query": "x", "messages": [{"_id": workspace.messages["ops-3"].id}]},
                    headers=alice,
                )
                for _ in range(tries)
            ]
        await anyio.sleep(0.2)  # let the upstream notice the closed connections
        gone = upstream.clients_gone
        sent = upstream.bytes_sent
    notices = {n for s in searches for n in s.json()["meta"]["retrieval"]["notices"]}
    answer_errors = {(a.status_code, a.json()["errorType"]) for a in answers}
    over = [
        n for n in read if not DEFAULT_MAX_RESPONSE_BYTES < n <= DEFAULT_MAX_RESPONSE_BYTES + READ_CHUNK_BYTES
    ]
    figure(
        tried=tries * 3,
        failed=len(over) + (len(answer_errors) != 1) + sum("could not be read" not in n for n in notices),
        max_bytes_read=max(read),
        cap_plus_one_chunk=DEFAULT_MAX_RESPONSE_BYTES + READ_CHUNK_BYTES,
        answer_errors=sorted(map(str, answer_errors)),
        search_notices=sorted(notices),
        connections_closed_by_us=gone,
        upstream_bytes_sent_mib=sent / MIB,
    )
    assert over == []
    assert answer_errors == {(502, "error-ai-provider-request-failed")}
    assert notices and all("could not be read" in notice for notice in notices)
    assert gone >= tries * 3, "every cut call closed its connection"


# -- F3 ---------------------------------------------------------------------------------------------


def _our_tasks() -> int:
    return len([t for t in asyncio.all_tasks() if not t.done()])


@pytest.mark.requirement("F3")
@pytest.mark.anyio
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("behaviour", ["drip", "hang"])
async def test_a_dripping_or_silent_upstream_ends_by_the_deadline(
    store: Store, workspace: Workspace, scale: Scale, behaviour: str, figure: Figure
) -> None:
    llm_deadline = scale.llm_deadline or ANSWER_DEADLINE_SECONDS
    pipeline_deadline = scale.pipeline_deadline or PIPELINE_DEADLINE_SECONDS
    alice = workspace["alice"].headers
    body = {"query": "x", "messages": [{"_id": workspace.messages["ops-3"].id}]}
    with RawUpstream() as upstream:
        upstream.behaviour, upstream.interval = behaviour, 0.5
        async with (
            product_app(
                store,
                pipeline_url=upstream.url,
                llm_url=f"{upstream.url}/v1",
                llm_deadline=scale.llm_deadline,
                pipeline_deadline=scale.pipeline_deadline,
            ) as app,
            asgi(app) as http,
        ):
            tasks_before = _our_tasks()
            timings: dict[str, tuple[float, int]] = {}
            requests = {
                "answer": lambda: http.post("/api/v1/ai.search.answer", json=body, headers=alice),
                "answer-stream": lambda: http.post(
                    "/api/v1/ai.search.answer", json=body, headers={**alice, "Accept": "text/event-stream"}
                ),
                "search": lambda: http.get("/api/v1/ai.search", params={"query": "deploy"}, headers=alice),
            }

            async def timed(name: str) -> None:
                start = time.monotonic()
                response = await requests[name]()
                timings[name] = (time.monotonic() - start, response.status_code)

            with anyio.fail_after(max(llm_deadline, pipeline_deadline) * 2 + 10):
                async with anyio.create_task_group() as group:
                    for name in requests:
                        group.start_soon(timed, name)
            await anyio.sleep(0.3)
            orphans = _our_tasks() - tasks_before
        gone = upstream.clients_gone
    limits = {"answer": llm_deadline, "answer-stream": llm_deadline, "search": pipeline_deadline}
    late = {n: t for n, (t, _s) in timings.items() if t > limits[n] + DEADLINE_SLACK_SECONDS}
    early = {n: t for n, (t, _s) in timings.items() if t < limits[n] * 0.9}
    statuses = {n: s for n, (_t, s) in timings.items()}
    figure(
        tried=len(timings),
        failed=len(late) + len(early) + max(orphans, 0),
        behaviour=behaviour,
        deadlines_seconds=limits,
        max_request_seconds=max(t for t, _s in timings.values()),
        statuses=statuses,
        orphan_tasks=orphans,
        upstream_saw_disconnect=gone,
    )
    assert late == {} and early == {}, timings
    assert statuses == {"answer": 504, "answer-stream": 504, "search": 200}
    assert orphans <= 0
    assert gone >= 3, "the upstream saw every abandoned call go away"


# -- F4 ---------------------------------------------------------------------------------------------


class _Anything(BaseModel):
    model_config = ConfigDict(extra="allow")


PROBES = Router(tags=("Test",))


@dataclass
class _Calls:
    now: int = 0
    max: int = 0
    total: int = 0
    starts: list[float] = field(default_factory=list)

    def reset(self) -> None:
        self.now = self.max = self.total = 0
        self.starts.clear()


_calls = _Calls()
# Seconds each counted call takes: long enough that four overlap.
CALL_SECONDS = 0.05


@PROBES.get("rooms.info", _Anything, description="Counts the calls that run at once.")
async def _counted(_req: ApiRequest[_Anything]) -> dict[str, Any]:
    _calls.now += 1
    _calls.total += 1
    _calls.starts.append(time.monotonic())
    _calls.max = max(_calls.max, _calls.now)
    await anyio.sleep(CALL_SECONDS)
    _calls.now -= 1
    return {}


def _batch(size: int) -> list[dict[str, Any]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "get_rooms_info", "arguments": {}},
        }
        for n in range(size)
    ]


@pytest.mark.requirement("F4")
@pytest.mark.anyio
async def test_a_batch_holds_20_entries_and_runs_4_at_once(
    store: Store, workspace: Workspace, figure: Figure
) -> None:
    app = bare_app(mcp_settings(mcp_expose_extended_api=True), store, PROBES.routes)
    headers = {**workspace["alice"].pat_headers, **MCP_HEADERS}
    _calls.reset()
    async with asgi_client(app) as http:
        start = time.monotonic()
        full = await http.post(MCP_PATH, json=_batch(MAX_BATCH_ENTRIES), headers=headers)
        waits = sorted(s - start for s in _calls.starts)
        work_for_full = _calls.total
        _calls.total = 0
        refused = await http.post(MCP_PATH, json=_batch(MAX_BATCH_ENTRIES + 1), headers=headers)
        work_for_refused = _calls.total
    answered = [entry["id"] for entry in full.json()]
    p99_wait = waits[max(0, round(len(waits) * 0.99) - 1)] if waits else None
    figure(
        tried=2,
        failed=(answered != list(range(MAX_BATCH_ENTRIES)))
        + (refused.status_code != 400)
        + work_for_refused
        + (_calls.max != BATCH_WORKERS),
        batch_of_20=full.status_code,
        batch_of_21=f"{refused.status_code} {refused.json()['error']['code']}",
        partial_work_on_refused_batch=work_for_refused,
        max_in_flight=_calls.max,
        p99_queue_wait_ms=None if p99_wait is None else p99_wait * 1000,
    )
    assert answered == list(range(MAX_BATCH_ENTRIES)) and work_for_full == MAX_BATCH_ENTRIES
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, -32600)
    assert work_for_refused == 0
    assert _calls.max == BATCH_WORKERS


PARALLEL_ANSWERS = 50


@pytest.mark.requirement("F4")
@pytest.mark.anyio
async def test_50_parallel_answers_reach_the_llm_only_as_far_as_the_limits_allow(
    store: Store, workspace: Workspace, figure: Figure
) -> None:
    body = {"query": "x", "messages": [{"_id": workspace.messages["ops-3"].id}]}
    alice = workspace["alice"].headers
    durations: dict[int, list[float]] = {}
    with RawUpstream() as llm:
        llm.answer, llm.delay = RawUpstream.COMPLETION, 0.2
        async with (
            product_app(store, llm_url=f"{llm.url}/v1", limiter=RateLimiter("memory://")) as app,
            asgi(app) as http,
        ):

            async def ask() -> None:
                start = time.monotonic()
                response = await http.post("/api/v1/ai.search.answer", json=body, headers=alice)
                durations.setdefault(response.status_code, []).append(time.monotonic() - start)

            async with anyio.create_task_group() as group:
                for _ in range(PARALLEL_ANSWERS):
                    group.start_soon(ask)
        upstream_calls, max_in_flight = len(llm.requests), llm.max_in_flight
    refused = durations.get(429, [])
    figure(
        tried=PARALLEL_ANSWERS,
        failed=(upstream_calls > 10) + (len(durations.get(200, [])) != 10),
        answered=len(durations.get(200, [])),
        refused_429=len(refused),
        upstream_calls=upstream_calls,
        max_in_flight_upstream=max_in_flight,
        p99_refusal_ms=max(refused) * 1000 if refused else None,
        median_answer_ms=statistics.median(durations[200]) * 1000 if 200 in durations else None,
    )
    # The answer route allows 10 a minute per user: the rest are refused before any upstream call.
    assert len(durations.get(200, [])) == 10 and upstream_calls == 10
    assert len(refused) == PARALLEL_ANSWERS - 10
    assert max(refused) < CALL_SECONDS * 20, "a 429 never waits for the upstream"


# The cap the test sets on outbound calls at once, and how long the slow LLM takes to answer (seconds):
# longer than the product's queue wait, so the calls beyond the cap are refused, not merely delayed.
TEST_OUTBOUND_CAP = 2
SLOW_LLM_SECONDS = DEFAULT_QUEUE_WAIT_SECONDS + 2.0


@pytest.mark.requirement("F4")
@pytest.mark.anyio
async def test_outbound_calls_beyond_the_process_cap_wait_briefly_then_get_503(
    store: Store, workspace: Workspace, figure: Figure
) -> None:
    body = {"query": "x", "messages": [{"_id": workspace.messages["ops-3"].id}]}
    alice = workspace["alice"].headers
    with RawUpstream() as llm, RawUpstream() as pipeline:
        llm.answer = RawUpstream.COMPLETION
        settings = reliability_settings(
            outbound_allow_hosts=["127.0.0.1"],
            outbound_max_concurrent_calls=TEST_OUTBOUND_CAP,
            llm_base_url=f"{llm.url}/v1",
            llm_model="gpt-4o",
            llm_api_key="sk-reliability",
            pipeline_base_url=pipeline.url,
            pipeline_id="p1",
            pipeline_api_key="pk",
            pipeline_api_key_secret="ps",
        )
        app = create_app(settings, store, limiter=None)
        answers: list[httpx.Response] = []
        async with asgi(app) as http:

            async def ask(into: list[httpx.Response]) -> None:
                into.append(await http.post("/api/v1/ai.search.answer", json=body, headers=alice))

            # Twice the cap of slow answers, and a search once they hold every slot: pipeline and LLM
            # calls share the one cap of the process.
            llm.delay = SLOW_LLM_SECONDS
            async with anyio.create_task_group() as group:
                for _ in range(2 * TEST_OUTBOUND_CAP):
                    group.start_soon(ask, answers)
                await anyio.sleep(0.5)
                busy_search = await http.get("/api/v1/ai.search", params={"query": "deploy"}, headers=alice)
            pipeline_calls_while_full = len(pipeline.requests)
            # A short burst over the cap only waits: every answer of a fast LLM is served.
            llm.delay = 0.3
            burst: list[httpx.Response] = []
            async with anyio.create_task_group() as group:
                for _ in range(2 * TEST_OUTBOUND_CAP):
                    group.start_soon(ask, burst)
            search_after = await http.get("/api/v1/ai.search", params={"query": "deploy"}, headers=alice)
        max_in_flight = llm.max_in_flight
    statuses = sorted(r.status_code for r in answers)
    refused = [r for r in answers if r.status_code == 503]
    busy_notices = [n for n in busy_search.json()["meta"]["retrieval"]["notices"] if "busy" in n]
    after_notices = search_after.json()["meta"]["retrieval"]["notices"]
    figure(
        tried=len(answers) + len(burst) + 2,
        failed=(statuses != [200] * TEST_OUTBOUND_CAP + [503] * TEST_OUTBOUND_CAP)
        + (max_in_flight > TEST_OUTBOUND_CAP)
        + sum(r.status_code != 200 for r in burst)
        + (not busy_notices)
        + bool(after_notices),
        cap=TEST_OUTBOUND_CAP,
        answer_statuses=statuses,
        burst_statuses=sorted(r.status_code for r in burst),
        max_in_flight_upstream=max_in_flight,
        search_notices_while_full=busy_notices,
        pipeline_calls_while_full=pipeline_calls_while_full,
    )
    assert statuses == [200] * TEST_OUTBOUND_CAP + [503] * TEST_OUTBOUND_CAP
    assert all(r.json()["errorType"] == "error-ai-provider-request-failed" for r in refused)
    assert all(r.headers.get("retry-after") for r in refused)
    assert max_in_flight == TEST_OUTBOUND_CAP
    assert busy_search.status_code == 200 and busy_notices, "a search degrades while the cap is full"
    assert pipeline_calls_while_full == 0
    assert [r.status_code for r in burst] == [200] * len(burst), "a brief excess queues, then runs"
    assert search_after.status_code == 200 and after_notices == [], "the search recovers"


# -- F5 ---------------------------------------------------------------------------------------------


def _bucket_count(limiter: RateLimiter) -> int:
    storage: Any = limiter._storage
    return len(storage.events) + len(storage.storage)


async def _hammer(http: httpx.AsyncClient, n: int, request: Any) -> list[httpx.Response]:
    return [await request(http, i) for i in range(n)]


@pytest.mark.requirement("F5")
@pytest.mark.anyio
@pytest.mark.parametrize("scale", SCALES)
async def test_60_a_minute_per_key_whatever_the_headers_say(
    store: Store, workspace: Workspace, scale: Scale, figure: Figure
) -> None:
    limiter = RateLimiter("memory://")
    app = create_app(reliability_settings(), store, limiter=limiter)
    alice = {**workspace["alice"].pat_headers, **MCP_HEADERS}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with asgi(app) as http:
        mcp = await _hammer(http, 100, lambda h, i: h.post(MCP_PATH, json=ping, headers=alice))
        # Anonymous: the login route's budget is the client address's (10 a minute), and a forged
        # X-Forwarded-For from an untrusted peer changes nothing. A name per attempt, so that only
        # the address's budget is at play (one account's wait is the next test's subject).
        spoofed = await _hammer(
            http,
            30,
            lambda h, i: h.post(
                "/api/v1/login",
                json={"user": f"guess-{i}", "password": "wrong"},
                headers={"X-Forwarded-For": f"198.51.100.{i}, 10.0.0.{i}"},
            ),
        )
        # Guessed tokens, each with a fresh user id and a forged X-Forwarded-For: the address's
        # failed-authentication budget is spent after 10, and every later guess is refused unchecked.
        buckets_before = _bucket_count(limiter)
        bogus = await _hammer(
            http,
            scale.bogus_tokens,
            lambda h, i: h.get(
                "/api/v1/me",
                headers={
                    "X-User-Id": secrets.token_hex(8),
                    "X-Auth-Token": secrets.token_urlsafe(32),
                    "X-Forwarded-For": f"198.51.100.{i % 250}",
                },
            ),
        )
        buckets_after = _bucket_count(limiter)
        # A right token from that address now waits too: a guess that happens to be right is not
        # told apart from a wrong one.
        right_after_guessing = await http.get("/api/v1/me", headers=workspace["alice"].pat_headers)
    async with asgi(app, client_host="203.0.113.8") as other:
        other_address = await other.get("/api/v1/me", headers=workspace["alice"].pat_headers)
    guesses_checked = sum(r.status_code == 401 for r in bogus)
    guesses_refused = [r for r in bogus if r.status_code == 429]
    accepted = sum(r.status_code == 200 for r in mcp)
    refused = [r for r in mcp + spoofed + guesses_refused if r.status_code == 429]
    # Whole seconds rounded up from a reset time that is itself rounded up: at most the period + 1.
    with_retry_after = [r for r in refused if 1 <= int(r.headers.get("retry-after", "0")) <= 61]
    spoof_answered = sum(r.status_code == 401 for r in spoofed)
    figure(
        tried=len(mcp) + len(spoofed) + len(bogus),
        failed=(accepted != 60)
        + (spoof_answered != 10)
        + (len(with_retry_after) != len(refused))
        + (guesses_checked != AUTH_FAILURE_RATE_LIMIT.count)
        + (len(guesses_refused) != len(bogus) - AUTH_FAILURE_RATE_LIMIT.count)
        + (buckets_after - buckets_before > 1)
        + (right_after_guessing.status_code != 429)
        + (other_address.status_code != 200),
        mcp_accepted_of_100=accepted,
        refused_429=len(refused),
        retry_after_present=f"{len(with_retry_after)}/{len(refused)}",
        login_attempts_answered_of_30_with_forged_xff=spoof_answered,
        bogus_tokens=len(bogus),
        bogus_tokens_checked=guesses_checked,
        new_buckets_from_bogus_tokens=buckets_after - buckets_before,
        right_token_after_guessing=right_after_guessing.status_code,
        right_token_from_another_address=other_address.status_code,
    )
    assert accepted == 60
    assert spoof_answered == 10, "forged X-Forwarded-For minted no new budgets"
    assert len(with_retry_after) == len(refused) == 40 + 20 + scale.bogus_tokens - AUTH_FAILURE_RATE_LIMIT.count
    assert all(r.json()["error"]["code"] == -32000 for r in mcp if r.status_code == 429)
    assert guesses_checked == AUTH_FAILURE_RATE_LIMIT.count, "10 guesses a minute per address"
    assert all(r.json()["errorType"] == "error-too-many-requests" for r in guesses_refused)
    assert buckets_after - buckets_before <= 1, "rotating tokens and forged headers mint no budgets"
    assert right_after_guessing.status_code == 429
    assert other_address.status_code == 200, "another address keeps its own budget"


@pytest.mark.requirement("F5")
@pytest.mark.anyio
@pytest.mark.soak
@pytest.mark.timeout(900)
async def test_five_minutes_of_hammering_admit_at_most_the_budget(
    store: Store, workspace: Workspace, figure: Figure
) -> None:
    app = create_app(reliability_settings(), store, limiter=RateLimiter("memory://"))
    alice = {**workspace["alice"].pat_headers, **MCP_HEADERS}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    seconds, rate = SOAK.hammer_seconds, 5.0
    accepted = refused = 0
    async with asgi(app) as http:
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            response = await http.post(MCP_PATH, json=ping, headers=alice)
            accepted += response.status_code == 200
            refused += response.status_code == 429 and "retry-after" in response.headers
            await anyio.sleep(1 / rate)
    budget = 60 * (seconds / 60 + 1)
    figure(
        tried=accepted + refused,
        failed=int(accepted > budget),
        accepted=accepted,
        budget=budget,
        seconds=seconds,
    )
    assert accepted <= budget
    assert accepted >= 60 * (seconds / 60) * 0.8, "the budget refills: a steady caller keeps most of it"


@pytest.mark.requirement("F1")
def test_the_documented_limits_are_the_ones_in_force() -> None:
    assert DEFAULT_MAX_REQUEST_BODY_BYTES == DEFAULT_MAX_RESPONSE_BYTES == 5 * MIB
    assert (MAX_BATCH_ENTRIES, BATCH_WORKERS, TOOL_CALL_TIMEOUT_SECONDS) == (20, 4, 20.0)
