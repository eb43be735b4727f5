"""Property: whatever the pipeline returns, no result comes from a room the caller may not read.

Random workspaces (users, rooms of every type, subscriptions, bans, messages) and random requests
(room ids, room names, search types), against a pipeline that answers with **every** stored message,
half of them without a room id, in both branches. DESIGN decision 3: scoping holds without the
pipeline's help. 200 trials per run (`MAX_EXAMPLES`).

Direct rooms are named after two members (``user0__user1``), and some get a twin: a channel or group
of the same name, which the store must refuse, then written into the file as a store without that rule
would have (the rooms an old workspace may hold). A name then means, to each caller, the room of that
name they read, a direct room first; never one they cannot read.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ai_search_server.retrieval.search_service import SearchOptions, SearchRequest, SearchService
from ai_search_server.store import open_store
from ai_search_server.store.base import AlreadyTaken, Store
from ai_search_server.store.records import Room

from ._legacy import write_legacy_room
from ._search_fakes import ScriptedPipeline, hit
from ._search_support import hits_json

# Trials per run: each builds a fresh SQLite workspace (about 10 ms).
MAX_EXAMPLES = 200
T0 = datetime(2026, 11, 1, tzinfo=UTC)


@st.composite
def workspaces(draw: st.DrawFn) -> dict:
    users = draw(st.integers(min_value=1, max_value=4))
    rooms = draw(st.lists(st.sampled_from("cpd"), min_size=1, max_size=5))
    membership = {
        (u, r): draw(st.sampled_from(["none", "member", "banned"]))
        for u in range(users)
        for r in range(len(rooms))
    }
    messages = draw(
        st.lists(st.tuples(st.integers(0, len(rooms) - 1), st.integers(0, users - 1)), max_size=12)
    )
    direct = [r for r, kind in enumerate(rooms) if kind == "d"]
    twins = draw(st.lists(st.tuples(st.sampled_from(direct), st.sampled_from("cp")), max_size=2, unique_by=lambda t: t[0])) if direct else []
    twin_members = {
        (u, t): draw(st.booleans()) for u in range(users) for t in range(len(twins))
    }
    twin_messages = draw(st.lists(st.tuples(st.integers(0, max(len(twins) - 1, 0)), st.integers(0, users - 1)), max_size=4)) if twins else []
    caller = draw(st.integers(0, users - 1))
    asked_rooms = draw(st.lists(st.integers(0, len(rooms) - 1), max_size=3))
    by_name = draw(st.booleans())
    search_type = draw(st.sampled_from([None, "keyword", "semantic"]))
    return {
        "users": users, "rooms": rooms, "membership": membership, "messages": messages, "caller": caller,
        "asked_rooms": asked_rooms, "by_name": by_name, "search_type": search_type,
        "twins": twins, "twin_members": twin_members, "twin_messages": twin_messages,
    }  # fmt: skip


def _room_name(r: int, kind: str, users: int) -> str:
    return f"user{r % users}__user{(r + 1) % users}" if kind == "d" else f"room{r}"


def resolve(store: Store, rooms: list[Room], readable: frozenset[str], name: str) -> Room | None:
    """What a name must mean to a caller: a room they read with that exact name, a DM first, then
    the oldest (the model the store's readable_room_by_name must agree with)."""
    named = [r for r in rooms if r.id in readable and r.name.lower() == name.lower()]
    named.sort(key=lambda r: (r.type != "d", r.created_at, r.id))
    return named[0] if named else None


def check(case: dict, new_database: Callable[[], AbstractContextManager[str]] = lambda: nullcontext("")) -> None:
    with tempfile.TemporaryDirectory() as tmp, new_database() as url:
        store = open_store(Path(tmp), database_url=url)
        try:
            users = [store.create_user(f"user{u}") for u in range(case["users"])]
            rooms = [
                store.create_room(kind, _room_name(r, kind, case["users"])) for r, kind in enumerate(case["rooms"])
            ]
            for (u, r), state in case["membership"].items():
                if state != "none":
                    store.subscribe(users[u].id, rooms[r].id)
                if state == "banned":
                    store.set_banned(users[u].id, rooms[r].id, True)
            twin_of: dict[int, Room] = {}
            for t, (r, kind) in enumerate(case["twins"]):
                with pytest.raises(AlreadyTaken):  # the product never makes a twin of a DM's name
                    store.create_room(kind, rooms[r].name)
                if any(twin.name == rooms[r].name for twin in twin_of.values()):
                    continue  # two DMs may share a name; channels and groups never did
                members = [users[u].id for u in range(case["users"]) if case["twin_members"][(u, t)]]
                twin_of[t] = write_legacy_room(store, f"legacyTwinRoom{t:03d}", kind, rooms[r].name, members, created_at_ms=10**13 + t)
            twins = list(twin_of.values())
            stored = [
                store.post_message(rooms[r].id, users[u].id, f"message {n}", ts=T0 + timedelta(minutes=n))
                for n, (r, u) in enumerate(case["messages"])
            ]
            stored += [
                store.post_message(twin_of[t].id, users[u].id, f"message twin {n}", ts=T0 + timedelta(hours=n))
                for n, (t, u) in enumerate(case["twin_messages"])
                if t in twin_of and users[u].id in store.members_of(twin_of[t].id)
            ]
            everything = {
                "results": [
                    hit(m.id, m.room_id if n % 2 else None, similarity=0.9) for n, m in enumerate(stored)
                ]
            }
            pipeline = ScriptedPipeline({"keyword": everything, "semantic": everything})
            service = SearchService(store, pipeline, SearchOptions())
            caller = users[case["caller"]]
            readable = store.readable_room_ids(caller.id)
            every_room = [*rooms, *twins]
            asked = [rooms[r] for r in case["asked_rooms"]]
            if case["by_name"]:
                # By name, a name means what it means to this caller, whichever room it was drawn from.
                for name in {r.name for r in every_room}:
                    meant = resolve(store, every_room, readable, name)
                    assert store.readable_room_by_name(caller.id, name) == meant, f"{name!r} resolves apart"
                    assert store.readable_room_by_name(caller.id, f"#{name}") == meant
                names = [r.name for r in asked]
                asked = [m for m in (resolve(store, every_room, readable, n) for n in names) if m is not None]
            request = SearchRequest(
                text="message",
                limit=50,
                rids=() if case["by_name"] else tuple(r.id for r in asked),
                room_names=tuple(names) if case["by_name"] else (),
                search_type=case["search_type"],
            )
            outcome = anyio.run(service.search, caller, request)
            if case["by_name"] and names and not asked:
                assert hits_json(outcome) == [], "names the caller reads no room of answer nothing"
                return
            for result in hits_json(outcome):
                assert result["rid"] in readable, "a result from a room the caller may not read"
                assert store.get_message(result["_id"]) is not None
                if asked:
                    assert result["rid"] in {r.id for r in asked}, "a result outside the requested rooms"
            for call in pipeline.calls:
                room_filter = call.filters["room_id"]
                sent = [room_filter["$eq"]] if "$eq" in room_filter else room_filter["$in"]
                assert set(sent) <= readable, "the pipeline was asked about an unreadable room"
            expected = {
                m.id
                for m in stored
                if m.room_id in readable and (not asked or m.room_id in {r.id for r in asked})
            }
            assert {r["_id"] for r in hits_json(outcome)} == expected, "a readable message went missing"
        finally:
            store.close()


@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workspaces())
def test_no_result_from_a_room_the_caller_may_not_read(
    new_database: Callable[[], AbstractContextManager[str]], case: dict
) -> None:
    check(case, new_database)
