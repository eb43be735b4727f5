"""Follow-up questions: the earlier turns (questions and source ids), a new search as the caller, an
answer cited across both, the limits on turns, sources and bytes, through REST and MCP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from ai_search import FOLLOW_UP_SEARCH_RESULTS, MAX_ANSWER_TURNS, MAX_ANSWER_TURNS_BYTES
from ai_search_server.outbound import GuardedClient
from ai_search_server.retrieval.wiring import SearchHandle
from ai_search_server.settings import Settings
from ai_search_server.store.base import Store
from ai_search_server.store.records import Message

from ._fake_openai import FakeOpenAI
from ._mcp_fixtures import call, mcp_headers, post, tool_text
from ._search_support import search_stack
from .conftest import BASE_URL, T0, Workspace, cited
from .test_answers_route import ANSWER, LOOPBACK, SSE, build_app, events, llm

pytestmark = pytest.mark.anyio

FIRST = "why did the postgres failover take so long"
FOLLOW_UP = "and who fixed it?"


def say(ws: Workspace, room: str, who: str, text: str, minutes: int) -> Message:
    return ws.store.post_message(
        ws.rooms[room].id, ws[who].user.id, text, ts=T0 + timedelta(days=2, minutes=minutes)
    )


@pytest.fixture
def talk(workspace: Workspace) -> dict[str, Message]:
    """An incident alice can read in #ops, and a fix in #secret she cannot."""
    return {
        "slow": say(
            workspace, "ops", "alice", "the postgres failover took 4 minutes, patroni waited out its ttl", 0
        ),
        "fixed": say(
            workspace, "ops", "carol", "carol fixed the postgres failover: the patroni ttl is 20s now", 30
        ),
        "secret": say(
            workspace, "secret", "bob", "bob fixed the postgres failover in the secret cluster", 40
        ),
    }


@pytest.fixture
def search_app(
    app: Starlette, settings: Settings, workspace: Workspace, talk: dict[str, Message], data_dir: Path
) -> Iterator[Starlette]:
    service, index = search_stack(workspace.store, data_dir)
    app.state.services.search = SearchHandle.ready(settings, workspace.store, service)
    yield app
    index.close()


def follow_up(talk: dict[str, Message], **extra: Any) -> dict[str, Any]:
    return {"query": FOLLOW_UP, "turns": [{"query": FIRST, "messages": [{"_id": talk["slow"].id}]}], **extra}


async def test_a_follow_up_is_searched_again_and_cited_across_both_turns(
    search_app: Starlette, client: httpx.AsyncClient, workspace: Workspace, talk: dict[str, Message]
) -> None:
    r = await client.post(ANSWER, json=follow_up(talk), headers=workspace["alice"].headers)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["searched"] == "who fixed it? postgres failover"
    cited = {c["msgId"] for c in data["citations"]}
    assert talk["fixed"].id in cited
    # The earlier turn's source is among the sources too (it was loaded under alice's rooms).
    # "who fixed it": the person first (carol, named by the sentence), then what she did.
    assert data["answer"].splitlines()[0].startswith("Carol — carol fixed the postgres failover")
    assert talk["secret"].id not in cited
    assert "secret cluster" not in r.text


async def test_a_streamed_follow_up_says_what_it_searched(
    search_app: Starlette, client: httpx.AsyncClient, workspace: Workspace, talk: dict[str, Message]
) -> None:
    r = await client.post(ANSWER, json=follow_up(talk), headers={**workspace["alice"].headers, **SSE})
    kind, done = events(r)[-1]
    assert kind == "done"
    assert done["searched"] == "who fixed it? postgres failover"


async def test_the_model_sees_the_earlier_questions_and_both_turns_sources(
    store: Store, workspace: Workspace, talk: dict[str, Message], data_dir: Path
) -> None:
    fake = FakeOpenAI()
    service, index = search_stack(store, data_dir)
    with fake.serve() as server:
        async with GuardedClient(LOOPBACK) as outbound:
            app = build_app(store, outbound, **llm(f"{server.url}/v1"))
            services = app.state.services
            services.search = SearchHandle.ready(services.settings, store, service)
            transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
            async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as http:
                r = await http.post(ANSWER, json=follow_up(talk), headers=workspace["alice"].headers)
    index.close()
    assert r.status_code == 200, r.text
    (request,) = fake.completions()
    user = request.body["messages"][1]["content"]
    assert f"User question (untrusted):\n{FOLLOW_UP}\n\n" in user
    assert f"Earlier questions of this conversation, oldest first (untrusted):\n- {FIRST}\n\n" in user
    assert talk["slow"].text in user and talk["fixed"].text in user
    assert talk["secret"].text not in user


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        pytest.param(
            {"turns": [{"query": FIRST, "messages": []}] * (MAX_ANSWER_TURNS + 1)},
            f"at most {MAX_ANSWER_TURNS}",
            id="too-many-turns",
        ),
        pytest.param(
            {"turns": [{"query": "é" * 500, "messages": []}] * MAX_ANSWER_TURNS},
            f"at most {MAX_ANSWER_TURNS_BYTES} bytes",
            id="too-many-bytes",
        ),
        pytest.param({"turns": [{"query": FIRST, "text": "x"}]}, "text", id="a-turn-cannot-carry-text"),
        pytest.param({"turns": [{"query": "  ", "messages": []}]}, "query", id="blank-earlier-question"),
        pytest.param({"turns": []}, "messages must hold 1 to 20 items, got 0", id="no-turns-and-no-messages"),
        pytest.param(
            {"turns": [{"query": FIRST, "messages": [{"_id": "x"}] * 21}]}, "messages", id="too-many-sources"
        ),
    ],
)
async def test_bad_turns_are_refused_clearly(
    search_app: Starlette,
    client: httpx.AsyncClient,
    workspace: Workspace,
    talk: dict[str, Message],
    change: dict[str, Any],
    needle: str,
) -> None:
    r = await client.post(ANSWER, json={"query": FOLLOW_UP, **change}, headers=workspace["alice"].headers)
    assert r.status_code == 400, r.text
    assert needle in r.json()["error"]


async def test_an_earlier_source_the_caller_cannot_read_refuses_the_follow_up(
    search_app: Starlette, client: httpx.AsyncClient, workspace: Workspace, talk: dict[str, Message]
) -> None:
    body = {"query": FOLLOW_UP, "turns": [{"query": FIRST, "messages": [{"_id": talk["secret"].id}]}]}
    r = await client.post(ANSWER, json=body, headers=workspace["alice"].headers)
    assert r.status_code == 400
    assert r.json()["errorType"] == "error-invalid-search-answer-sources"


async def test_a_follow_up_keeps_its_own_sources_first_and_at_most_twenty(
    search_app: Starlette, client: httpx.AsyncClient, workspace: Workspace, talk: dict[str, Message]
) -> None:
    body = follow_up(talk, messages=[{"_id": talk["fixed"].id, "score": 0.9}])
    r = await client.post(ANSWER, json=body, headers=workspace["alice"].headers)
    assert r.status_code == 200, r.text
    assert cited(workspace, 1, talk["fixed"]) in r.json()["citations"]
    assert FOLLOW_UP_SEARCH_RESULTS < 20


async def test_follow_ups_work_through_mcp(
    search_app: Starlette, client: httpx.AsyncClient, workspace: Workspace, talk: dict[str, Message]
) -> None:
    r = await post(
        client, call("post_ai_search_answer", follow_up(talk)), mcp_headers(workspace["alice"].pat_headers)
    )
    is_error, body = tool_text(r)
    assert not is_error, body
    assert body["searched"] == "who fixed it? postgres failover"
    assert talk["fixed"].id in {c["msgId"] for c in body["citations"]}
