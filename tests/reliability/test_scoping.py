"""C. Scoping: no output of any route reveals a room the caller may not read.

C1 generates workspaces (users, rooms of every type, subscriptions, bans, messages) and drives the
real app in-process against a pipeline that answers with **every** message, half of them without a
room id: every route's whole answer is scanned for the ids, names and texts of rooms the caller may
not read, then the caller is unsubscribed and banned and searches again. C2 captures every prompt the
LLM receives and every MCP tool result. C3 breaks the subscription lookup and asks for foreign rooms
by id and name. C4 swaps tokens between users, guesses tokens, and inspects what reaches upstreams.
"""

from __future__ import annotations

import itertools
import json
import math
import secrets
import string
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from ai_search_server.answers.answer_service import AnswerService
from ai_search_server.answers.provider import OpenAICompatibleProvider, ProviderConfig
from ai_search_server.app import create_app
from ai_search_server.mcp import MCP_PATH
from ai_search_server.outbound import GuardedClient, OutboundPolicy
from ai_search_server.ratelimit import RateLimiter
from ai_search_server.retrieval.search_service import SearchOptions, SearchService
from ai_search_server.retrieval.wiring import SearchHandle
from ai_search_server.store import Attachment, open_store
from ai_search_server.store.base import AlreadyTaken, StorageFailure, Store
from tests.server._fake_openai import FakeOpenAI
from tests.server._legacy import write_legacy_room
from tests.server._search_fakes import ScriptedPipeline, hit
from tests.server.conftest import BASE_URL, Workspace

from ._fakes import RawUpstream
from .conftest import Figure, reliability_settings

T0 = datetime(2026, 11, 1, tzinfo=UTC)
LOOPBACK = OutboundPolicy(allow_hosts=("127.0.0.1",))
MCP_HEADERS = {"Accept": "application/json", "Content-Type": "application/json"}


@dataclass(frozen=True)
class Scale:
    trials: int  # generated workspaces (C1)
    guesses: int  # guessed tokens (C4)


DEFAULT = Scale(trials=40, guesses=300)
SOAK = Scale(trials=1000, guesses=10_000)
SCALES = [
    pytest.param(DEFAULT, id="default"),
    pytest.param(SOAK, id="soak", marks=[pytest.mark.soak, pytest.mark.timeout(3600)]),
]


def asgi(app: Starlette, client_host: str = "203.0.113.7") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(client_host, 50000), raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url=BASE_URL)


def rpc(method: str, params: dict[str, Any] | None = None, id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}}


def tool(tool_name: str, /, **arguments: Any) -> dict[str, Any]:
    return rpc("tools/call", {"name": tool_name, "arguments": arguments})


def prompt(prompt_name: str, /, **arguments: str) -> dict[str, Any]:
    return rpc("prompts/get", {"name": prompt_name, "arguments": arguments})


# -- C1: generated workspaces ---------------------------------------------------------------------


@st.composite
def workspaces(draw: st.DrawFn) -> dict[str, Any]:
    users = draw(st.integers(min_value=2, max_value=4))
    rooms = draw(st.lists(st.sampled_from("cpd"), min_size=2, max_size=5))
    membership = {
        (u, r): draw(st.sampled_from(["none", "member", "banned"]))
        for u in range(users)
        for r in range(len(rooms))
    }
    # (room, author, a reply in the thread of the room's previous message?, with a file?)
    messages = draw(
        st.lists(
            st.tuples(st.integers(0, len(rooms) - 1), st.integers(0, users - 1), st.booleans(), st.booleans()),
            min_size=1,
            max_size=12,
        )
    )
    direct = [r for r, kind in enumerate(rooms) if kind == "d"]
    # Rooms that try to take a DM's name: through channels.create (REST or MCP) as a random user
    # naming the DM's people as members, through the store, or written into the file as a store
    # without the name rule would have ("legacy": they exist, with random members and a message).
    twins = (
        draw(
            st.lists(
                st.tuples(st.sampled_from(direct), st.sampled_from(["rest", "mcp", "store", "legacy"]),
                          st.sampled_from("cp"), st.integers(0, users - 1)),
                max_size=3,
                unique_by=lambda twin: twin[0],
            )
        )
        if direct
        else []
    )  # fmt: skip
    twin_members = {(u, t): draw(st.booleans()) for u in range(users) for t in range(len(twins))}
    return {
        "users": users,
        "rooms": rooms,
        "membership": membership,
        "messages": messages,
        "twins": twins,
        "twin_members": twin_members,
        "caller": draw(st.integers(0, users - 1)),
        "search_type": draw(st.sampled_from([None, "keyword", "semantic"])),
        "leave": draw(st.sampled_from(["unsubscribe", "ban"])),
    }


@dataclass
class Leaks:
    checks: int = 0
    foreign_items: int = 0
    count_leaks: int = 0
    stale_after_leaving: int = 0
    takeovers_accepted: int = 0
    misresolved_names: int = 0
    twins_made: int = 0
    name_lookups: int = 0
    examples: list[str] | None = None

    def note(self, kind: str, what: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if self.examples is None:
            self.examples = []
        if len(self.examples) < 5:
            self.examples.append(f"{kind}: {what}")

    @property
    def total(self) -> int:
        return (
            self.foreign_items
            + self.count_leaks
            + self.stale_after_leaving
            + self.takeovers_accepted
            + self.misresolved_names
        )


@dataclass
class Built:
    store: Store
    app: Starlette
    caller: Any
    headers: dict[str, str]
    readable: set[str]
    rooms: list[Any]
    messages: list[Any]
    people: list[Any]
    tokens: list[str]  # each person's PAT, in people's order


# Names, ids and texts are scanned for in whole answers, so every token must be one that nothing else
# can spell: ids are 17 base62 characters and timestamps are digits, so each token holds a letter
# between hyphens (a message's "msg-12-zq"), which neither can produce.
def _room_name(r: int, kind: str, users: int) -> str:
    """A DM is named after two people, as imports name them; every other room by its number."""
    if kind == "d":
        return f"dm-{r}-user{r % users}x__user{(r + 1) % users}x"
    return f"room-{r}-{kind}"


def _message_text(n: int) -> str:
    return f"message msg-{n}-zq about deploy"


def _file_name(n: int) -> str:
    return f"file-{n}-qz.txt"


async def _try_takeover(app: Starlette, token: str, person: Any, name: str, members: list[str], via: str) -> int:
    """channels.create with a DM's name and its people, as ``person``; the HTTP status, or 200 for an
    MCP result that is not an error."""
    headers = {"X-User-Id": person.id, "X-Auth-Token": token}
    async with asgi(app) as http:
        if via == "rest":
            response = await http.post("/api/v1/channels.create", json={"name": name, "members": members}, headers=headers)
            return response.status_code
        call = tool("post_channels_create", name=name, members=members)
        response = await http.post(MCP_PATH, json=call, headers={**headers, **MCP_HEADERS})
        return 400 if response.json()["result"]["isError"] else 200


async def _make_twins(case: dict[str, Any], store: Store, app: Starlette, people: list[Any], tokens: list[str],
                rooms: list[Any], leaks: Leaks) -> list[Any]:
    """Every attempt to take a DM's name is refused; legacy twins are written into the file."""
    twins = []
    for t, (r, via, kind, by) in enumerate(case["twins"]):
        dm = rooms[r]
        if via in ("rest", "mcp"):
            members = sorted({u.username for u in store.get_users(store.members_of(dm.id)).values()})
            status = await _try_takeover(app, tokens[by], people[by], dm.name, members, via)
            accepted = status < 400
        elif via == "store":
            try:
                store.create_room(kind, dm.name)
                accepted = True
            except AlreadyTaken:
                accepted = False
        else:
            member_ids = [people[u].id for u in range(case["users"]) if case["twin_members"][(u, t)]]
            twins.append(write_legacy_room(store, f"legacyTwinRoom{t:03d}", kind, dm.name, member_ids, created_at_ms=10**13 + t))
            continue
        leaks.checks += 1
        if accepted:
            leaks.note("takeovers_accepted", f"{via} made a {kind} room named after the DM {dm.name}")
    leaks.twins_made += len(twins)
    return twins


async def _build(case: dict[str, Any], data_dir: Path, leaks: Leaks) -> Built:
    store = open_store(data_dir)
    people = [store.create_user(f"user{u}x") for u in range(case["users"])]
    tokens = [store.create_token(person.id, "pat", label="c1")[1] for person in people]
    rooms = [
        store.create_room(kind, _room_name(r, kind, case["users"])) for r, kind in enumerate(case["rooms"])
    ]
    for (u, r), state in case["membership"].items():
        if state != "none":
            store.subscribe(people[u].id, rooms[r].id)
        if state == "banned":
            store.set_banned(people[u].id, rooms[r].id, True)
    settings = reliability_settings(mcp_expose_extended_api=True)  # rooms.info by name is extended
    app = create_app(settings, store, limiter=None)
    twins = await _make_twins(case, store, app, people, tokens, rooms, leaks)
    messages = []
    previous: dict[int, str] = {}  # room index -> the id of its latest message
    for n, (r, u, reply, with_file) in enumerate(case["messages"]):
        posted = store.post_message(
            rooms[r].id,
            people[u].id,
            _message_text(n),
            ts=T0 + timedelta(minutes=n),
            tmid=previous.get(r) if reply else None,
            attachments=(Attachment(_file_name(n)),) if with_file else (),
        )
        previous[r] = posted.id
        messages.append(posted)
    for t, twin in enumerate(twins):  # one message in each legacy twin, by one of its members
        members = store.members_of(twin.id)
        if members:
            n = len(messages)
            messages.append(store.post_message(twin.id, members[0], _message_text(n), ts=T0 + timedelta(hours=t)))
    rooms = [*rooms, *twins]
    everything = {
        "results": [hit(m.id, m.room_id if n % 2 else None, similarity=0.9) for n, m in enumerate(messages)]
    }
    service = SearchService(
        store, ScriptedPipeline({"keyword": everything, "semantic": everything}), SearchOptions()
    )
    app.state.services.search = SearchHandle.ready(settings, store, service)
    caller = people[case["caller"]]
    plain = tokens[case["caller"]]
    readable = {rooms[r].id for r in range(len(case["rooms"])) if case["membership"][(case["caller"], r)] == "member"}
    readable |= {twin.id for t, twin in enumerate(twins) if caller.id in store.members_of(twin.id)}
    return Built(
        store,
        app,
        caller,
        {"X-User-Id": caller.id, "X-Auth-Token": plain},
        readable,
        rooms,
        messages,
        people,
        tokens,
    )


def _foreign_tokens(built: Built, readable: set[str]) -> dict[str, str]:
    """Strings that must not appear in an answer to the caller: foreign rooms and their messages."""
    tokens = {}
    # A legacy twin shares its DM's name: a name the caller reads a room of is theirs to see.
    readable_names = {room.name.lower() for room in built.rooms if room.id in readable}
    for room in built.rooms:
        if room.id not in readable:
            tokens[room.id] = f"room id of {room.name}"
            if room.name.lower() not in readable_names:
                tokens[room.name] = f"room name {room.name}"
    for message in built.messages:
        if message.room_id not in readable:
            tokens[message.id] = f"message id in {message.room_id}"
            tokens[message.text.split()[1]] = f"message text in {message.room_id}"
            for attachment in message.attachments:
                tokens[attachment.name] = f"file name in {message.room_id}"
    return tokens


async def _read_conversations(
    http: httpx.AsyncClient,
    built: Built,
    readable: set[str],
    leaks: Leaks,
    kind: str,
    answers: dict[str, httpx.Response],
) -> None:
    """Every conversation route for every message and room: a foreign one answers 404; a readable
    reply's thread and context show nothing of another room (scanned with the other answers)."""
    h = built.headers
    for message in built.messages:
        calls = {
            "chat.getMessageContext": await http.get("/api/v1/chat.getMessageContext", params={"msgId": message.id}, headers=h),
            "chat.getThreadMessages": await http.get("/api/v1/chat.getThreadMessages", params={"tmid": message.tmid or message.id}, headers=h),
            "chat.react": await http.post("/api/v1/chat.react", json={"messageId": message.id, "emoji": ":eyes:"}, headers=h),
        }  # fmt: skip
        for route, response in calls.items():
            answers[f"{route} {message.id}"] = response
            leaks.checks += 1
            if message.room_id not in readable and response.status_code != 404:
                leaks.note(kind, f"{route} of a foreign message answered {response.status_code}")
    for room in built.rooms:
        history = {"c": "channels.history", "p": "groups.history", "d": "im.history"}[room.type]
        calls = {
            "chat.getThreadsList": await http.get("/api/v1/chat.getThreadsList", params={"rid": room.id}, headers=h),
            "chat.getPinnedMessages": await http.get("/api/v1/chat.getPinnedMessages", params={"roomId": room.id}, headers=h),
            history: await http.get(f"/api/v1/{history}", params={"roomId": room.id}, headers=h),
            "chat.search": await http.get("/api/v1/chat.search", params={"roomId": room.id, "searchText": "deploy"}, headers=h),
            "rooms.info": await http.get("/api/v1/rooms.info", params={"roomId": room.id}, headers=h),
            "channels.members": await http.get("/api/v1/channels.members", params={"roomId": room.id}, headers=h),
        }  # fmt: skip
        for route, response in calls.items():
            answers[f"{route} {room.id}"] = response
            leaks.checks += 1
            if (room.id in readable) != (response.status_code == 200):
                leaks.note(kind, f"{route} of a {'readable' if room.id in readable else 'foreign'} room answered {response.status_code}")


def _meant(built: Built, readable: set[str], name: str) -> Any:
    """What ``name`` must mean to the caller: a room they read of that name, a DM first, then the
    oldest; None when they read none (the model of Store.readable_room_by_name)."""
    named = [r for r in built.rooms if r.id in readable and r.name.lower() == name.lower()]
    named.sort(key=lambda r: (r.type != "d", r.created_at, r.id))
    return named[0] if named else None


async def _look_names_up(
    http: httpx.AsyncClient,
    built: Built,
    readable: set[str],
    leaks: Leaks,
    answers: dict[str, httpx.Response],
) -> None:
    """Every route that takes a room name, REST and MCP, for every name of the workspace: a post lands
    in the room the name means to the caller (or nowhere), rooms.info and channels.members show that
    room, and a search by name searches only that room."""
    mcp = {**built.headers, **MCP_HEADERS}
    for n, name in enumerate(sorted({room.name for room in built.rooms})):
        meant = _meant(built, readable, name)
        want = meant.id if meant is not None else None
        probe = f"probe-{n}-pq"
        posts = {
            "chat.postMessage": await http.post("/api/v1/chat.postMessage", json={"channel": f"#{name}", "text": probe}, headers=built.headers),
            "mcp postMessage": await http.post(MCP_PATH, json=tool("post_chat_postMessage_by_channel", channel=f"#{name}", text=probe), headers=mcp),
        }  # fmt: skip
        for route, response in posts.items():
            body = response.json()
            if route.startswith("mcp"):
                result = body["result"]
                body = {} if result["isError"] else json.loads(result["content"][0]["text"])
            landed = body.get("message", {}).get("rid")
            leaks.name_lookups += 1
            if landed != want:
                leaks.note("misresolved_names", f"{route} #{name} went to {landed}, not {want}")
            answers[f"{route} #{name}"] = response
        infos = {
            "rooms.info": await http.get("/api/v1/rooms.info", params={"roomName": name}, headers=built.headers),
            "mcp rooms.info": await http.post(MCP_PATH, json=tool("get_rooms_info_by_roomName", roomName=name), headers=mcp),
        }  # fmt: skip
        for route, response in infos.items():
            body = response.json()
            if route.startswith("mcp"):
                result = body["result"]
                body = {} if result["isError"] else json.loads(result["content"][0]["text"])
            shown = body.get("room", {}).get("_id")
            leaks.name_lookups += 1
            if shown != want:
                leaks.note("misresolved_names", f"{route} {name} showed {shown}, not {want}")
            answers[f"{route} {name}"] = response
        members = await http.get("/api/v1/channels.members", params={"roomName": name}, headers=built.headers)
        leaks.name_lookups += 1
        member_names = sorted(m["username"] for m in members.json().get("members", []))
        meant_members = sorted(
            u.username for u in built.store.get_users(built.store.members_of(want)).values()
        ) if want else None
        if (member_names if members.status_code == 200 else None) != meant_members:
            leaks.note("misresolved_names", f"channels.members {name} listed {member_names}, not {meant_members}")
        answers[f"channels.members {name}"] = members
        searches = {
            "ai.search in:": await http.get("/api/v1/ai.search", params={"q": f"in:#{name} deploy"}, headers=built.headers),
            "ai.search roomNames": await http.get("/api/v1/ai.search", params={"query": "deploy", "roomNames": name}, headers=built.headers),
            "mcp ai.search in:": await http.post(MCP_PATH, json=tool("get_ai_search_by_q", q=f"in:#{name} deploy"), headers=mcp),
        }  # fmt: skip
        for route, response in searches.items():
            body = response.json()
            if route.startswith("mcp"):
                body = json.loads(body["result"]["content"][0]["text"])
            rids = {result["rid"] for result in body.get("intelligent", [])}
            leaks.name_lookups += 1
            if rids - ({want} if want else set()):
                leaks.note("misresolved_names", f"{route} #{name} searched {sorted(rids)}, not {want}")
            answers[f"{route} #{name}"] = response


async def _scan_routes(
    built: Built, readable: set[str], search_type: str | None, leaks: Leaks, kind: str
) -> None:
    foreign = _foreign_tokens(built, readable)
    params = {
        "query": "deploy",
        "intelligentCount": "50",
        **({"searchType": search_type} if search_type else {}),
    }
    expected = [m for m in built.messages if m.room_id in readable]
    async with asgi(built.app) as http:
        answers = {
            "ai.search": await http.get("/api/v1/ai.search", params=params, headers=built.headers),
            "ai.search q": await http.get("/api/v1/ai.search", params={"q": "deploy"}, headers=built.headers),
            "rooms.get": await http.get("/api/v1/rooms.get", headers=built.headers),
            "channels.list.joined": await http.get("/api/v1/channels.list.joined", headers=built.headers),
            "rooms.autocomplete": await http.get(
                "/api/v1/rooms.autocomplete.channelAndPrivate",
                params={"selector": '{"name":""}'},
                headers=built.headers,
            ),
            "users.autocomplete": await http.get(
                "/api/v1/users.autocomplete", params={"selector": '{"term":""}'}, headers=built.headers
            ),
        }
        for message in built.messages:
            got = await http.get(
                "/api/v1/chat.getMessage", params={"msgId": message.id}, headers=built.headers
            )
            if message.room_id not in readable:
                answers[f"chat.getMessage {message.id}"] = got
                leaks.checks += 1
                if got.status_code != 404:
                    leaks.note(kind, f"chat.getMessage of a foreign message answered {got.status_code}")
        for room in built.rooms:
            if room.id not in readable:
                got = await http.get(
                    "/api/v1/ai.search", params={"query": "deploy", "rid": room.id}, headers=built.headers
                )
                answers[f"ai.search rid={room.name}"] = got
                name = await http.get(
                    "/api/v1/ai.search", params={"q": f"in:#{room.name} deploy"}, headers=built.headers
                )
                answers[f"ai.search in:#{room.name}"] = name
        await _look_names_up(http, built, readable, leaks, answers)
        await _read_conversations(http, built, readable, leaks, kind, answers)
    for route, response in answers.items():
        leaks.checks += 1
        # Only a room's name may be echoed (the request typed it); ids, texts and files never.
        echo_free = _without_echo(response)
        for token, what in foreign.items():
            if token in (echo_free if what.startswith("room name") else response.text):
                leaks.note(kind, f"{route} shows {what}")
    results = answers["ai.search"].json()["intelligent"]
    leaks.checks += 1
    if len(results) != len(expected):
        leaks.note("count_leaks", f"{len(results)} results, {len(expected)} readable messages")
    for result in results:
        text = result["text"]
        for start, end in result["highlights"]:
            if not 0 <= start < end <= len(text):
                leaks.note(kind, f"highlight {start}-{end} outside a text of {len(text)}")


def _users_sharing_a_room(case: dict[str, Any], built: Built, readable: set[str]) -> set[str]:
    shared = {built.caller.username}  # the caller always finds themself
    for (u, r), state in case["membership"].items():
        if state != "none" and built.rooms[r].id in readable:
            shared.add(built.people[u].username)
    return shared


async def _check_case(case: dict[str, Any], leaks: Leaks) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        built = await _build(case, Path(tmp), leaks)
        try:
            await _scan_routes(built, built.readable, case["search_type"], leaks, "foreign_items")
            async with asgi(built.app) as http:
                people = await http.get(
                    "/api/v1/users.autocomplete", params={"selector": '{"term":""}'}, headers=built.headers
                )
            allowed = _users_sharing_a_room(case, built, built.readable)
            allowed |= {
                u.username
                for room_id in built.readable
                for u in built.store.get_users(built.store.members_of(room_id)).values()
            }
            leaks.checks += 1
            for item in people.json()["items"]:
                if item["username"] not in allowed:
                    leaks.note("foreign_items", f"users.autocomplete offers {item['username']}")
            if built.readable:  # leave one room, then every answer must forget it at once
                left = sorted(built.readable)[0]
                if case["leave"] == "ban":
                    built.store.set_banned(built.caller.id, left, True)
                else:
                    built.store.unsubscribe(built.caller.id, left)
                await _scan_routes(
                    built, built.readable - {left}, case["search_type"], leaks, "stale_after_leaving"
                )
        finally:
            built.store.close()


@pytest.mark.requirement("C1")
@pytest.mark.parametrize("scale", SCALES)
def test_no_route_reveals_a_room_the_caller_may_not_read(scale: Scale, figure: Figure) -> None:
    leaks = Leaks()
    trials = 0

    @settings(
        max_examples=scale.trials, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(workspaces())
    def trial(case: dict[str, Any]) -> None:
        nonlocal trials
        trials += 1
        anyio.run(_check_case, case, leaks)

    trial()
    figure(
        tried=leaks.checks,
        failed=leaks.total,
        workspaces=trials,
        foreign_items=leaks.foreign_items,
        count_leaks=leaks.count_leaks,
        stale_after_leaving=leaks.stale_after_leaving,
        takeovers_accepted=leaks.takeovers_accepted,
        legacy_twins=leaks.twins_made,
        name_lookups=leaks.name_lookups,
        misresolved_names=leaks.misresolved_names,
    )
    assert leaks.total == 0, leaks.examples


# -- C2: the LLM's context and MCP tool results -----------------------------------------------------


@pytest.fixture(scope="module")
def llm() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    with fake.serve() as server:
        yield fake, f"{server.url}/v1"


@asynccontextmanager
async def llm_app(store: Store, llm_url: str, **overrides: Any) -> AsyncIterator[Starlette]:
    """The real app answering with the fake LLM through a guarded client allowed to reach loopback."""
    settings = reliability_settings(
        llm_base_url=llm_url, llm_model="gpt-4o", llm_api_key="sk-c-test", **overrides
    )
    async with GuardedClient(LOOPBACK) as outbound:
        app = create_app(settings, store, limiter=RateLimiter("memory://"))
        config = ProviderConfig(settings.llm_base_url, settings.llm_model, settings.llm_api_key)
        app.state.services.answers = AnswerService(
            settings, store, OpenAICompatibleProvider(outbound, config)
        )
        yield app


def _foreign_to(ws: Workspace, username: str) -> dict[str, str]:
    readable = ws.store.readable_room_ids(ws[username].user.id)
    return {m.text: m.id for m in ws.messages.values() if m.room_id not in readable} | {
        m.id: m.id for m in ws.messages.values() if m.room_id not in readable
    }


@pytest.mark.requirement("C2")
@pytest.mark.anyio
async def test_prompts_and_tool_results_hold_only_readable_messages(
    store: Store, workspace: Workspace, llm: tuple[FakeOpenAI, str], figure: Figure
) -> None:
    fake, url = llm
    fake.reset()
    all_ids = [m.id for m in workspace.messages.values()]
    inspected = leaks = 0
    examples: list[str] = []
    async with llm_app(store, url, mcp_expose_extended_api=True) as app, asgi(app) as http:
        for username in ("alice", "bob", "carol"):
            person = workspace[username]
            foreign = _foreign_to(workspace, username)
            readable = [m.id for m in workspace.messages.values() if m.id not in foreign.values()]
            before = len(fake.completions())
            answers = [
                await http.post(
                    "/api/v1/ai.search.answer",
                    json={"query": "what happened?", "messages": [{"_id": i} for i in all_ids[:20]]},
                    headers=person.headers,
                ),
                await http.post(
                    "/api/v1/ai.search.answer",
                    json={"query": "what happened?", "messages": [{"_id": i} for i in readable]},
                    headers=person.headers,
                ),
            ]
            results = [
                await http.post(MCP_PATH, json=call, headers={**person.pat_headers, **MCP_HEADERS})
                for call in [
                    tool("get_ai_search_by_query", query="deploy"),
                    tool("get_ai_search_by_q", q="the"),
                    tool("get_rooms_get"),
                    tool("get_subscriptions_get"),
                    tool("get_channels_list_joined"),
                    tool("get_rooms_autocomplete_channelAndPrivate", selector='{"name":""}'),
                    tool("post_ai_search_answer", query="what?", messages=[{"_id": i} for i in all_ids[:20]]),
                    tool("post_ai_search_answer", query="what?", messages=[{"_id": i} for i in readable]),
                    *(tool("get_chat_getMessage", msgId=i) for i in all_ids),
                    *(tool("get_chat_getMessageContext", msgId=i) for i in all_ids),
                    *(tool("get_chat_getThreadMessages", tmid=i) for i in all_ids),
                ]
            ]
            # Prompts are filled by the same tools, as the caller: every room named, readable or not.
            room_ids = list({m.room_id for m in workspace.messages.values()})
            filled = [
                await http.post(MCP_PATH, json=call, headers={**person.pat_headers, **MCP_HEADERS})
                for call in [
                    *(
                        prompt("summarise_room", room=room.name, since="2000-01-01")
                        for room in workspace.store.get_rooms(room_ids).values()
                    ),
                    prompt("find_decision", topic="the"),
                    prompt("what_did_i_miss", since="2000-01-01"),
                ]
            ]
            assert sum("result" in r.json() for r in filled) >= 3, [r.text[:200] for r in filled]
            results += filled
            prompts = [json.dumps(r.body) for r in fake.completions()[before:]]
            for text in prompts + [r.text for r in results + answers]:
                inspected += 1
                found = [token for token in foreign if token in text]
                if found:
                    leaks += 1
                    examples.append(f"{username}: {found[:2]} in {text[:200]}")
            assert answers[0].status_code == 400, "a foreign source refuses the whole answer"
            assert answers[1].status_code == 200, answers[1].text
    figure(tried=inspected, failed=leaks, prompts=len(fake.completions()), foreign_message_ids=leaks)
    assert leaks == 0, examples


# -- C3: fail closed --------------------------------------------------------------------------------


class BrokenLookups:
    """The store, except that every subscription lookup fails the way ``failure`` says."""

    def __init__(self, store: Store, failure: BaseException) -> None:
        self._store = store
        self._failure = failure

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise self._failure

    readable_room_ids = get_subscription = subscriptions_of = readable_room_by_name = _fail

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


FAILURES = [
    pytest.param(StorageFailure("cannot read the workspace: the database failed"), id="lookup-raises"),
    pytest.param(
        StorageFailure(
            "cannot read: the workspace database stayed locked by another process for more than 5000 ms"
        ),
        id="lookup-times-out",
    ),
    pytest.param(RuntimeError("bug in the lookup"), id="lookup-has-a-bug"),
]


@pytest.mark.requirement("C3")
@pytest.mark.anyio
@pytest.mark.parametrize("failure", FAILURES)
async def test_a_failing_subscription_lookup_answers_an_error_never_data(
    store: Store, workspace: Workspace, failure: BaseException, figure: Figure
) -> None:
    settings = reliability_settings()
    app = create_app(settings, BrokenLookups(store, failure), limiter=None)
    alice = workspace["alice"]
    texts = [m.text for m in workspace.messages.values()]
    requests: list[tuple[str, str, dict[str, Any]]] = [
        ("GET", "/api/v1/ai.search", {"params": {"query": "deploy"}}),
        ("GET", "/api/v1/ai.search", {"params": {"q": "in:#ops deploy"}}),
        ("GET", "/api/v1/chat.getMessage", {"params": {"msgId": workspace.messages["ops-3"].id}}),
        ("GET", "/api/v1/rooms.get", {}),
        ("GET", "/api/v1/users.autocomplete", {"params": {"selector": '{"term":""}'}}),
        ("POST", "/api/v1/ai.search.answer", {"json": {"query": "x", "messages": [{"_id": workspace.messages["ops-3"].id}]}}),
        ("POST", "/api/v1/chat.postMessage", {"json": {"channel": "#ops", "text": "hello"}}),
    ]  # fmt: skip
    unfiltered = 0
    statuses = []
    async with asgi(app) as http:
        for method, path, kwargs in requests:
            response = await http.request(method, path, headers=alice.headers, **kwargs)
            statuses.append(response.status_code)
            if response.status_code < 400 or any(text in response.text for text in texts):
                unfiltered += 1
    figure(tried=len(requests), failed=unfiltered, statuses=statuses)
    assert unfiltered == 0, statuses


def _without_echo(response: httpx.Response) -> str:
    """The answer's text without the parts that only repeat the request's own words: a search's
    ``meta.scope.unknown`` ("no room #x that you are in", worded the same whether or not #x exists)
    and ``meta.diagnosis`` (the request's tokens, and counts of searches run as the caller, which
    tests/server/test_search_language_routes.py shows never count a foreign room's messages)."""
    try:
        body = response.json()
    except ValueError:
        return response.text
    inner = body
    if isinstance(body, dict) and isinstance(body.get("result"), dict):  # MCP: the tool result's text
        content = body["result"].get("content") or [{}]
        try:
            inner = json.loads(content[0].get("text", ""))
        except (ValueError, AttributeError):
            return response.text
    meta = inner.get("meta") if isinstance(inner, dict) else None
    if not isinstance(meta, dict) or not ({"scope", "diagnosis"} & meta.keys()):
        return response.text
    meta = dict(meta)
    scope = dict(meta.get("scope") or {})
    scope.pop("unknown", None)
    meta["scope"] = scope
    meta.pop("diagnosis", None)
    return json.dumps({**inner, "meta": meta})


def _answers_nothing(response: httpx.Response) -> bool:
    """An error, an empty result list, or an MCP tool result that is an error or empty."""
    if response.status_code != 200:
        return True
    body = response.json()
    if "result" in body:  # MCP: the REST answer is the tool result's text
        if body["result"]["isError"]:
            return True
        body = json.loads(body["result"]["content"][0]["text"])
    return bool(body.get("intelligent") == [])


@pytest.mark.requirement("C3")
@pytest.mark.anyio
async def test_foreign_rooms_named_in_a_request_answer_nothing(
    client: httpx.AsyncClient, workspace: Workspace, figure: Figure
) -> None:
    secret, secret_msg = workspace.rooms["secret"], workspace.messages["secret-5"]
    alice = workspace["alice"]
    mcp = {**alice.pat_headers, **MCP_HEADERS}
    checks: list[tuple[str, httpx.Response, int]] = [
        ("rid", await client.get("/api/v1/ai.search", params={"query": "acquisition", "rid": secret.id}, headers=alice.headers), 200),
        ("rids", await client.get("/api/v1/ai.search", params={"query": "acquisition", "rids": secret.id}, headers=alice.headers), 200),
        ("roomNames", await client.get("/api/v1/ai.search", params={"query": "acquisition", "roomNames": "secret"}, headers=alice.headers), 200),
        ("in:#secret", await client.get("/api/v1/ai.search", params={"q": "in:#secret acquisition"}, headers=alice.headers), 200),
        ("getMessage", await client.get("/api/v1/chat.getMessage", params={"msgId": secret_msg.id}, headers=alice.headers), 404),
        ("post by id", await client.post("/api/v1/chat.postMessage", json={"roomId": secret.id, "text": "hi"}, headers=alice.headers), 404),
        ("post by name", await client.post("/api/v1/chat.postMessage", json={"channel": "#secret", "text": "hi"}, headers=alice.headers), 404),
        ("answer source", await client.post("/api/v1/ai.search.answer", json={"query": "x", "messages": [{"_id": secret_msg.id}]}, headers=alice.headers), 400),
        ("mcp getMessage", await client.post(MCP_PATH, json=tool("get_chat_getMessage", msgId=secret_msg.id), headers=mcp), 200),
        ("mcp search rid", await client.post(MCP_PATH, json=tool("get_ai_search_by_query", query="acquisition", rid=secret.id), headers=mcp), 200),
    ]  # fmt: skip
    wrong = []
    for name, response, status in checks:
        leaked = "acquisition closes" in response.text or secret_msg.id in response.text
        if response.status_code != status or leaked or not _answers_nothing(response):
            wrong.append(f"{name}: {response.status_code} {response.text[:160]}")
    figure(tried=len(checks), failed=len(wrong), answered_nothing=f"{len(checks) - len(wrong)}/{len(checks)}")
    assert wrong == []


# -- C4: tokens and sessions ------------------------------------------------------------------------

_TOKEN_ALPHABET = string.ascii_letters + string.digits + "-_"


@pytest.mark.requirement("C4")
@pytest.mark.anyio
@pytest.mark.parametrize("scale", SCALES)
async def test_no_token_works_for_anyone_but_its_owner(
    store: Store, workspace: Workspace, scale: Scale, figure: Figure
) -> None:
    # No rate limiter, so that every guess reaches the token check: with one, the address's
    # failed-authentication budget answers 429 after 10 guesses (test_limits.py proves that).
    async with asgi(create_app(reliability_settings(), store, limiter=None)) as client:
        await _no_token_works(client, store, workspace, scale, figure)


async def _no_token_works(
    client: httpx.AsyncClient, store: Store, workspace: Workspace, scale: Scale, figure: Figure
) -> None:
    alice, bob = workspace["alice"], workspace["bob"]
    mcp_ping = rpc("tools/call", {"name": "get_rooms_get", "arguments": {}})
    accepted: list[str] = []

    async def attempt(label: str, user_id: str, token: str) -> None:
        rest = await client.get("/api/v1/me", headers={"X-User-Id": user_id, "X-Auth-Token": token})
        mcp = await client.post(
            MCP_PATH, json=mcp_ping, headers={"X-User-Id": user_id, "X-Auth-Token": token, **MCP_HEADERS}
        )
        if rest.status_code != 401 or mcp.status_code != 401:
            accepted.append(f"{label}: REST {rest.status_code}, MCP {mcp.status_code}")

    await attempt("alice's id with bob's login token", alice.user.id, bob.session)
    await attempt("alice's id with bob's PAT", alice.user.id, bob.pat)
    await attempt("bob's id with alice's PAT", bob.user.id, alice.pat)
    for neighbour in {alice.pat[:-1] + c for c in "AaZz09-_"} - {alice.pat}:
        await attempt("a neighbour of alice's PAT", alice.user.id, neighbour)
    for _ in range(scale.guesses):
        await attempt(
            "a guessed token", alice.user.id, "".join(secrets.choice(_TOKEN_ALPHABET) for _ in alice.pat)
        )
    tried = 3 + 7 + scale.guesses
    # A login token is a session: it works on REST, never on MCP (PATs only).
    session_on_mcp = await client.post(MCP_PATH, json=mcp_ping, headers={**alice.headers, **MCP_HEADERS})
    # Sessions are not authentication: the endpoint issues none, and a session id sent along changes nothing.
    init = await client.post(
        MCP_PATH,
        json=rpc(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        ),
        headers={**alice.pat_headers, **MCP_HEADERS},
    )
    as_bob = await client.post(
        MCP_PATH,
        json=mcp_ping,
        headers={**bob.pat_headers, **MCP_HEADERS, "Mcp-Session-Id": "alice-session-1"},
    )
    bob_rooms = {r["_id"] for r in json.loads(as_bob.json()["result"]["content"][0]["text"])["update"]}
    tokens = [store.create_token(alice.user.id, "pat", label=f"entropy-{n}")[1] for n in range(50)]
    alphabet = set(itertools.chain.from_iterable(tokens))
    bits = min(len(t) for t in tokens) * math.log2(64)
    figure(
        tried=tried + 2,
        failed=len(accepted)
        + (session_on_mcp.status_code != 401)
        + (bob_rooms != set(store.readable_room_ids(bob.user.id))),
        cross_user_uses_accepted=len(accepted),
        guessed_tokens=scale.guesses,
        session_ids_issued=int("mcp-session-id" in init.headers),
        token_entropy_bits=round(bits),
    )
    assert accepted == []
    assert session_on_mcp.status_code == 401
    assert "mcp-session-id" not in init.headers
    assert bob_rooms == set(store.readable_room_ids(bob.user.id))
    assert alphabet <= set(_TOKEN_ALPHABET) and len(set(tokens)) == len(tokens)
    assert bits >= 128


@pytest.mark.requirement("C4")
@pytest.mark.anyio
async def test_the_clients_credentials_never_travel_upstream(
    store: Store, workspace: Workspace, llm: tuple[FakeOpenAI, str], figure: Figure
) -> None:
    fake, url = llm
    fake.reset()
    alice = workspace["alice"]
    client_secret = "client-bearer-secret-9f8e7d"
    with RawUpstream() as pipeline:
        pipeline.answer = {"results": [{"metadata": {"msg_id": workspace.messages["ops-3"].id}}]}
        overrides = {
            "pipeline_base_url": pipeline.url,
            "pipeline_id": "p1",
            "pipeline_api_key": "pk-1",
            "pipeline_api_key_secret": "ps-1",
            "outbound_allow_hosts": ["127.0.0.1"],
        }
        async with llm_app(store, url, **overrides) as app, asgi(app) as http:
            headers = {
                **alice.pat_headers,
                "Authorization": f"Bearer {client_secret}",
                "Cookie": f"s={client_secret}",
            }
            await http.get("/api/v1/ai.search", params={"query": "deploy"}, headers=headers)
            await http.post(
                "/api/v1/ai.search.answer",
                json={"query": "x", "messages": [{"_id": workspace.messages["ops-3"].id}]},
                headers=headers,
            )
            await http.post(
                MCP_PATH,
                json=tool("get_ai_search_by_query", query="deploy"),
                headers={**headers, **MCP_HEADERS},
            )
        upstream = [json.dumps(r.headers) for r in fake.requests] + [
            json.dumps(r.headers) for r in pipeline.requests
        ]
    carrying = [h for h in upstream if client_secret in h or alice.pat in h]
    figure(
        tried=len(upstream),
        failed=len(carrying),
        upstream_requests=len(upstream),
        carrying_client_credentials=len(carrying),
    )
    assert len(upstream) >= 3
    assert carrying == []
