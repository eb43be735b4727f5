"""Property: whatever the pipeline returns, no result comes from a room the caller may not read.

Random workspaces (users, rooms of every type, subscriptions, bans, messages) and random requests
(room ids, room names, search types), against a pipeline that answers with **every** stored message,
half of them without a room id, in both branches. DESIGN decision 3: scoping holds without the
pipeline's help. 200 trials per run (`MAX_EXAMPLES`).
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ai_search_server.retrieval.service import SearchOptions, SearchRequest, SearchService
from ai_search_server.store import open_store

from ._search_fakes import ScriptedPipeline, hit

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
    caller = draw(st.integers(0, users - 1))
    asked_rooms = draw(st.lists(st.integers(0, len(rooms) - 1), max_size=3))
    by_name = draw(st.booleans())
    search_type = draw(st.sampled_from([None, "keyword", "semantic"]))
    return {
        "users": users, "rooms": rooms, "membership": membership, "messages": messages, "caller": caller,
        "asked_rooms": asked_rooms, "by_name": by_name, "search_type": search_type,
    }  # fmt: skip


def check(case: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp))
        try:
            users = [store.create_user(f"user{u}") for u in range(case["users"])]
            rooms = [store.create_room(kind, f"room{r}") for r, kind in enumerate(case["rooms"])]
            for (u, r), state in case["membership"].items():
                if state != "none":
                    store.subscribe(users[u].id, rooms[r].id)
                if state == "banned":
                    store.set_banned(users[u].id, rooms[r].id, True)
            stored = [
                store.post_message(rooms[r].id, users[u].id, f"message {n}", ts=T0 + timedelta(minutes=n))
                for n, (r, u) in enumerate(case["messages"])
            ]
            everything = {
                "results": [
                    hit(m.id, m.room_id if n % 2 else None, similarity=0.9) for n, m in enumerate(stored)
                ]
            }
            pipeline = ScriptedPipeline({"keyword": everything, "semantic": everything})
            service = SearchService(store, pipeline, SearchOptions())
            caller = users[case["caller"]]
            asked = [rooms[r] for r in case["asked_rooms"]]
            request = SearchRequest(
                text="message",
                limit=50,
                rids=() if case["by_name"] else tuple(r.id for r in asked),
                room_names=tuple(r.name for r in asked) if case["by_name"] else (),
                search_type=case["search_type"],
            )
            outcome = anyio.run(service.search, caller, request)
            readable = store.readable_room_ids(caller.id)
            for result in outcome.results:
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
            assert {r["_id"] for r in outcome.results} == expected, "a readable message went missing"
        finally:
            store.close()


@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workspaces())
def test_no_result_from_a_room_the_caller_may_not_read(case: dict) -> None:
    check(case)
