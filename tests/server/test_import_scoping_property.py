"""Property: over any imported workspace, no search result comes from a room the caller is not in.

Random workspaces (people, public and private channels, DMs and group DMs with random members,
messages by members and by people who left, threads), written as a Slack export or a Mattermost bulk
export and imported with the real importer, then searched as every person against a pipeline that
answers with **every** stored message, half of them without a room id. The imported memberships alone
decide what each person gets, as in the source. 60 trials a run (``MAX_EXAMPLES``); each builds and
imports a fresh export (about 40 ms).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ai_search_server.import_dispatch import import_path
from ai_search_server.retrieval.search_service import SearchOptions, SearchRequest, SearchService
from ai_search_server.store import open_store

from ._search_fakes import ScriptedPipeline, hit

MAX_EXAMPLES = 60
T0 = 1793610000
LISTS = {"c": "channels.json", "p": "groups.json", "d": "dms.json", "m": "mpims.json"}


@st.composite
def exports(draw: st.DrawFn) -> dict[str, Any]:
    people = draw(st.integers(min_value=2, max_value=5))
    kinds = draw(st.lists(st.sampled_from("cpdm"), min_size=1, max_size=5))
    rooms = []
    for n, kind in enumerate(kinds):
        low = 1 if kind in "cp" else min(3, people)
        size = 2 if kind == "d" else draw(st.integers(min_value=low, max_value=people))
        members = draw(
            st.lists(
                st.integers(0, people - 1),
                min_size=min(size, people),
                max_size=min(size, people),
                unique=True,
            )
        )
        rooms.append({"kind": kind, "n": n, "members": members})
    messages = draw(
        st.lists(
            st.tuples(st.integers(0, len(rooms) - 1), st.integers(0, people - 1), st.booleans()),
            min_size=1,
            max_size=15,
        )
    )
    return {"people": people, "rooms": rooms, "messages": messages}


def write_export(case: dict[str, Any], folder: Path) -> None:
    users = [
        {"id": f"U{p:04d}", "team_id": "TPROP", "name": f"person{p}", "real_name": f"Person {p}"}
        for p in range(case["people"])
    ]
    (folder / "users.json").write_text(json.dumps(users))
    lists: dict[str, list[dict[str, Any]]] = {name: [] for name in LISTS.values()}
    folders = []
    for room in case["rooms"]:
        key = f"{room['kind'].upper()}{room['n']:04d}"
        members = [f"U{p:04d}" for p in room["members"]]
        name = (
            f"room-{room['n']}"
            if room["kind"] in "cp"
            else f"mpdm-{room['n']}"
            if room["kind"] == "m"
            else ""
        )
        entry: dict[str, Any] = {"id": key, "members": members, **({"name": name} if name else {})}
        lists[LISTS[room["kind"]]].append(entry)
        folders.append(name or key)
    for name, entries in lists.items():
        (folder / name).write_text(json.dumps(entries))
    days: dict[str, list[dict[str, Any]]] = {}
    last: dict[int, str] = {}
    for n, (room, author, reply) in enumerate(case["messages"]):
        ts = f"{T0 + n * 60}.000000"
        message: dict[str, Any] = {
            "type": "message",
            "user": f"U{author:04d}",
            "text": f"message {n} in room {room}",
            "ts": ts,
        }
        if reply and room in last:
            message["thread_ts"] = last[room]
        else:
            last[room] = ts
        days.setdefault(folders[room], []).append(message)
    for name, messages in days.items():
        (folder / name).mkdir()
        (folder / name / "2026-11-02.json").write_text(json.dumps(messages))


def write_mattermost_export(case: dict[str, Any], folder: Path) -> None:
    """The same workspace as Mattermost's bulk export: one team, channels, users with their channel
    memberships, direct channels, posts with their replies nested (as Mattermost writes them)."""
    rooms = case["rooms"]
    channels = [room for room in rooms if room["kind"] in "cp"]
    lines: list[dict[str, Any]] = [
        {"type": "version", "version": 1},
        {"type": "team", "team": {"name": "prop", "display_name": "Property", "type": "O"}},
    ]
    lines += [
        {
            "type": "channel",
            "channel": {
                "team": "prop",
                "name": f"room-{room['n']}",
                "display_name": f"Room {room['n']}",
                "type": "O" if room["kind"] == "c" else "P",
            },
        }
        for room in channels
    ]
    for person in range(case["people"]):
        joined = [{"name": f"room-{room['n']}"} for room in channels if person in room["members"]]
        lines.append(
            {
                "type": "user",
                "user": {
                    "username": f"person{person}",
                    "email": f"person{person}@prop.test",
                    "teams": [{"name": "prop", "channels": joined}],
                },
            }
        )
    lines += [
        {"type": "direct_channel", "direct_channel": {"members": [f"person{p}" for p in room["members"]]}}
        for room in rooms
        if room["kind"] in "dm"
    ]
    roots: dict[int, dict[str, Any]] = {}
    posts: list[dict[str, Any]] = []
    for n, (r, author, reply) in enumerate(case["messages"]):
        post: dict[str, Any] = {
            "user": f"person{author}",
            "message": f"message {n} in room {r}",
            "create_at": (T0 + n * 60) * 1000,
        }
        if reply and r in roots:
            roots[r].setdefault("replies", []).append(post)
            continue
        room = rooms[r]
        if room["kind"] in "cp":
            post.update({"team": "prop", "channel": f"room-{room['n']}"})
            record = {"type": "post", "post": post}
        else:
            post["channel_members"] = [f"person{p}" for p in room["members"]]
            record = {"type": "direct_post", "direct_post": post}
        roots[r] = post
        posts.append(record)
    (folder / "export.jsonl").write_text("".join(json.dumps(line) + "\n" for line in [*lines, *posts]))


WRITERS = {"slack": write_export, "mattermost": write_mattermost_export}


def check(
    case: dict[str, Any],
    fmt: str = "slack",
    new_database: Callable[[], AbstractContextManager[str]] = lambda: nullcontext(""),
) -> None:
    with tempfile.TemporaryDirectory() as tmp, new_database() as url:
        export = Path(tmp) / "export"
        export.mkdir()
        WRITERS[fmt](case, export)
        store = open_store(Path(tmp) / "data", database_url=url)
        try:
            report = import_path(store, export, progress=False)
            assert report.skipped_count == 0, report.summary()
            stored = [m for batch in store.iter_messages() for m in batch]
            assert len(stored) == len(case["messages"])
            everything = {
                "results": [
                    hit(m.id, m.room_id if n % 2 else None, similarity=0.9) for n, m in enumerate(stored)
                ]
            }
            for person in range(case["people"]):
                user = store.get_user_by_username(f"person{person}")
                assert user is not None
                pipeline = ScriptedPipeline({"keyword": everything, "semantic": everything})
                outcome = anyio.run(
                    SearchService(store, pipeline, SearchOptions()).search,
                    user,
                    SearchRequest(text="message", limit=50),
                )
                member_of = {
                    store.get_room_by_name(f"room-{r['n']}").id  # type: ignore[union-attr]
                    for r in case["rooms"]
                    if r["kind"] in "cp" and person in r["members"]
                }
                readable = store.readable_room_ids(user.id)
                assert member_of <= readable
                for found_hit in outcome.hits:
                    assert found_hit.message.room_id in readable, "a result from a room the person is not in"
                expected = {m.id for m in stored if m.room_id in readable}
                assert {h.message.id for h in outcome.hits} == expected, (
                    "a message of the person's rooms went missing"
                )
                for room in case["rooms"]:
                    if person not in room["members"] and room["kind"] in "cp":
                        found = store.get_room_by_name(f"room-{room['n']}")
                        assert found is not None and found.id not in readable, (
                            "a left or never-joined room is readable"
                        )
        finally:
            store.close()


@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exports(), st.sampled_from(sorted(WRITERS)))
def test_no_result_from_a_room_the_person_is_not_in(
    new_database: Callable[[], AbstractContextManager[str]], case: dict[str, Any], fmt: str
) -> None:
    check(case, fmt, new_database)
