"""What each ``[N]`` of an answer names, said by the server wherever the answer goes (issue 36).

The page shows a cited message by its own number in the result list, or by its author and room when
the list does not hold it (``ai_search_web.answer_text``); for that the server must say, for every
number an answer may cite, which message it is and whose, in the streamed answer before its text,
in the finished answer, and in the answer kept for sharing. An extractive answer numbers the
messages of its sources' conversations after the sources: those numbers must survive sharing too.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest

from ai_search_server.store.records import Message

from .conftest import T0, Workspace, cited
from .test_answers_route import ANSWER, SSE, events

pytestmark = pytest.mark.anyio

GET, SHARE = "/api/v1/ai.search.answer.get", "/api/v1/ai.search.answer.share"
QUESTION = "why did billing-api keep failing"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def post(ws: Workspace, who: str, text: str, minutes: int, tmid: str | None = None) -> Message:
    return ws.store.post_message(
        ws.rooms["ops"].id, ws[who].user.id, text, ts=T0 + timedelta(days=3, minutes=minutes), tmid=tmid
    )


def incident(ws: Workspace) -> list[Message]:
    """A thread of #ops whose cause is in a reply the client never sends."""
    first = post(ws, "alice", "billing-api is failing its health checks", 0)
    return [
        first,
        post(ws, "carol", "the pool kept connections to the old primary because keepalives are off", 9, first.id),
        post(ws, "alice", "restarted the pods, all green", 15, first.id),
    ]


def numbers(answer: str) -> list[int]:
    """The [N] of an answer's text, in order."""
    return [int(part.split("]", 1)[0]) for part in answer.split("[")[1:] if part.split("]", 1)[0].isdigit()]


async def test_citations_say_whose_message_each_number_is_and_where(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    thread = incident(workspace)
    body = {"query": QUESTION, "messages": [{"_id": thread[0].id, "score": 0.8}]}
    r = await client.post(ANSWER, json=body, headers=workspace["alice"].headers)
    assert r.status_code == 200, r.text
    data = r.json()
    by_id = {m.id: m for m in thread}
    assert data["citations"], data["answer"]
    for item in data["citations"]:
        assert item == cited(workspace, item["n"], by_id[item["msgId"]])
    # The reply that answers is numbered after the one source sent, and cited.
    assert any(c["n"] > 1 and c["msgId"] == thread[1].id for c in data["citations"])


async def test_the_stream_names_every_number_before_the_text(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    thread = incident(workspace)
    body = {"query": QUESTION, "messages": [{"_id": thread[0].id, "score": 0.8}]}
    r = await client.post(ANSWER, json=body, headers={**workspace["alice"].headers, **SSE})
    stream = events(r)
    assert stream[0][0] == "sources", "what each number names comes before any text"
    named = {c["n"]: c for c in stream[0][1]["citations"]}
    assert named[1] == cited(workspace, 1, thread[0])
    done = stream[-1][1]
    assert set(numbers(done["answer"])) <= set(named)
    for item in done["citations"]:
        assert named[item["n"]] == item


@pytest.mark.parametrize(
    ("reader", "sees_the_thread"),
    [
        pytest.param("alice", True, id="its-owner"),
        pytest.param("carol", True, id="a-reader-of-the-room"),
        pytest.param("bob", False, id="a-reader-without-the-room"),
    ],
)
async def test_a_shared_answer_keeps_what_each_number_names(
    client: httpx.AsyncClient, workspace: Workspace, reader: str, sees_the_thread: bool
) -> None:
    """A number of an extractive answer that names a reply of a source's thread still names that
    reply once the answer is shared (it was lost: only the sources were kept)."""
    thread = incident(workspace)
    body = {"query": QUESTION, "messages": [{"_id": thread[0].id, "score": 0.8}]}
    asked = await client.post(ANSWER, json=body, headers=workspace["alice"].headers)
    given: dict[str, Any] = asked.json()
    context = [c for c in given["citations"] if c["n"] > 1]
    assert context, given["answer"]
    shared = await client.post(SHARE, json={"answerId": given["answerId"]}, headers=workspace["alice"].headers)
    assert shared.status_code == 200, shared.text

    r = await client.get(GET, params={"answerId": given["answerId"]}, headers=workspace[reader].headers)
    assert r.status_code == 200, r.text
    opened = r.json()
    if sees_the_thread:
        assert opened["answer"] == given["answer"]
        assert opened["citations"] == given["citations"]
        assert opened["hiddenSources"] == 0
    else:
        assert opened["citations"] == []
        assert thread[1].id not in r.text
        assert "keepalives" not in r.text
