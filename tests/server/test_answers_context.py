"""Extractive answers draw on each source's conversation: its thread, or the turns of its room.

Only messages of the sources' rooms are read, only rooms the caller reads, and the reply that answers
is cited by its own id even though the client never sent it.
"""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from ai_search_server.answers.context import CONTEXT_ROOM_GAP_MINUTES, load_context
from ai_search_server.answers.sources import LoadedSource, loaded_source
from ai_search_server.store.base import Store
from ai_search_server.store.records import Message

from .conftest import T0, Workspace

ANSWER = "/api/v1/ai.search.answer"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def post(ws: Workspace, room: str, who: str, text: str, minutes: int, tmid: str | None = None) -> Message:
    return ws.store.post_message(
        ws.rooms[room].id, ws[who].user.id, text, ts=T0 + timedelta(days=3, minutes=minutes), tmid=tmid
    )


def loaded(store: Store, message: Message) -> LoadedSource:
    return loaded_source(message, store.get_rooms({message.room_id}), 0.8)


def incident(ws: Workspace) -> list[Message]:
    first = post(ws, "ops", "alice", "billing-api is failing its health checks", 0)
    return [
        first,
        post(ws, "ops", "carol", "is the pool still handing out dead sockets?", 4, first.id),
        post(
            ws,
            "ops",
            "carol",
            "the pool kept connections to the old primary because keepalives are off",
            9,
            first.id,
        ),
        post(ws, "ops", "alice", "restarted the pods, all green", 15, first.id),
    ]


def test_a_reply_brings_its_thread(workspace: Workspace) -> None:
    store = workspace.store
    thread = incident(workspace)
    readable = store.readable_room_ids(workspace["alice"].user.id)
    drawn = load_context(store, readable, [loaded(store, thread[1])], lambda m: loaded(store, m))
    assert [s.msg_id for s in drawn.context] == [thread[0].id, thread[2].id, thread[3].id]
    keys = {s.source.conversation for s in (*drawn.sources, *drawn.context)}
    assert keys == {f"thread:{thread[0].id}"}


def test_a_first_message_brings_its_replies(workspace: Workspace) -> None:
    store = workspace.store
    thread = incident(workspace)
    readable = store.readable_room_ids(workspace["alice"].user.id)
    drawn = load_context(store, readable, [loaded(store, thread[0])], lambda m: loaded(store, m))
    assert [s.msg_id for s in drawn.context] == [m.id for m in thread[1:]]


def test_a_message_outside_threads_brings_the_turns_of_its_room(workspace: Workspace) -> None:
    store = workspace.store
    far = CONTEXT_ROOM_GAP_MINUTES + 60
    turns = [
        post(workspace, "ops", "alice", "the cert for hooks expired at midnight", 0),
        post(workspace, "ops", "carol", "renew job logs show a 401 since Oct 1", 5),
        post(workspace, "ops", "alice", "lunch is at noon, who is in", 5 + far),
        post(workspace, "ops", "carol", "the renew job reads the token from the vault now", 5 + 2 * far),
    ]
    readable = store.readable_room_ids(workspace["alice"].user.id)
    drawn = load_context(store, readable, [loaded(store, turns[0])], lambda m: loaded(store, m))
    # The quick reply, then (past the gap) only the later turn that shares the conversation's words.
    ids = [s.msg_id for s in drawn.context]
    assert turns[1].id in ids
    assert turns[2].id not in ids


def test_nothing_is_read_from_a_room_the_caller_does_not_read(workspace: Workspace) -> None:
    store = workspace.store
    thread = incident(workspace)
    bob_reads = store.readable_room_ids(workspace["bob"].user.id)
    assert workspace.rooms["ops"].id not in bob_reads
    drawn = load_context(store, bob_reads, [loaded(store, thread[1])], lambda m: loaded(store, m))
    assert drawn.context == ()


@pytest.mark.anyio
async def test_the_answer_cites_the_reply_that_answers_by_its_own_id(
    client: httpx.AsyncClient, workspace: Workspace
) -> None:
    thread = incident(workspace)
    body = {"query": "why did billing-api keep failing", "messages": [{"_id": thread[0].id, "score": 0.8}]}
    r = await client.post(ANSWER, json=body, headers=workspace["alice"].headers)
    assert r.status_code == 200, r.text
    data = r.json()
    first_line = data["answer"].splitlines()[0]
    assert first_line.startswith("the pool kept connections to the old primary because keepalives are off [")
    cited = {c["n"]: c["msgId"] for c in data["citations"]}
    number = int(first_line.rsplit("[", 1)[1].rstrip("]"))
    assert number > 1
    assert cited[number] == thread[2].id
    assert not any("?" in line for line in data["answer"].splitlines())


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "first"),
    [
        pytest.param(
            "who restarted the pods",
            "Alice — restarted the pods, all green [",
            id="who-leads-with-the-authors-name",
        ),
        pytest.param(
            "when did billing-api start failing its health checks",
            "Nov 4, 2026 — billing-api is failing its health checks [",
            id="when-leads-with-the-messages-date",
        ),
    ],
)
async def test_the_answer_leads_with_what_was_asked_and_the_check_supports_it(
    client: httpx.AsyncClient, workspace: Workspace, query: str, first: str
) -> None:
    """Issue 36: the server hands the extractive answerer each message's author name and date, and
    the line that leads with them is supported by the citation check like any quote."""
    thread = incident(workspace)
    body = {"query": query, "messages": [{"_id": m.id, "score": 0.8} for m in thread]}
    r = await client.post(ANSWER, json=body, headers=workspace["alice"].headers)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["answer"].splitlines()[0].startswith(first), data["answer"]
    assert data["sentences"][0]["supported"] is True
