"""C5, before the DM exists: no channel or group may take a direct room's name.

A direct room is named after its members, their usernames joined by ``__`` (``alice__carol``, as
imports name them). Before alice and carol have a DM, someone could create a public channel
``alice__carol``: the DM made later would find its name taken, and ``#alice__carol`` would go on
meaning the channel. So a channel or group name that is two or more usernames of this workspace
joined by ``__``, in any order, case or look-alike form (a capital I for an l, a Cyrillic a, fullwidth
low lines, three people), is refused with a clear 400 by every route that creates or renames rooms:
REST ``channels.create``, the MCP tool over the same stack, and the store itself (groups, renames,
the mirror of an import). Names that only resemble the shape (nobody called ``team``; one
underscore; a suffix after the second person) stay free. An import of a channel literally named like
a DM is not lost: it comes in under a name of its own.

Real app in-process, real SQLite (PostgreSQL with ``--store=postgres``), the fixture Slack export.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from ai_search_server.import_dispatch import import_path
from ai_search_server.mcp import MCP_PATH
from ai_search_server.store import open_store
from ai_search_server.store.base import AlreadyTaken, Store
from tests.server._exports import copy_fixture, edit_json, pack, read_json
from tests.server.conftest import Workspace

from .conftest import Figure

MCP_HEADERS = {"Accept": "application/json", "Content-Type": "application/json"}

# Names a direct room of this workspace's people has or would have (alice, bob and carol exist; only
# alice and bob have a DM, alice__bob, which C5's first test covers).
DM_SHAPED = [
    pytest.param("alice__carol", id="two-people"),
    pytest.param("carol__alice", id="two-people-other-order"),
    pytest.param("Alice__Carol", id="capitals"),
    pytest.param("ALICE__CAROL", id="upper-case"),
    pytest.param("aIice__carol", id="capital-i-for-l"),
    pytest.param("\u0430lice__carol", id="cyrillic-a"),
    pytest.param("alice\uff3f\uff3fcarol", id="fullwidth-low-lines"),
    pytest.param("alice\u07fa\u07facarol", id="nko-lajanyalan-for-low-lines"),
    pytest.param("bob__carol__alice", id="three-people"),
    pytest.param("alice__bob__carol", id="three-people-with-an-existing-dm-inside"),
]
# Names of the same look that name no DM of people here: they stay free.
FREE = [
    pytest.param("team__alpha", id="nobody-by-those-names"),
    pytest.param("alice__zed", id="one-person-unknown"),
    pytest.param("alice_carol", id="one-underscore"),
    pytest.param("alice-carol", id="a-hyphen"),
    pytest.param("alice__carol-1a2b3c4d", id="a-suffix-after-the-second-person"),
]


def _tool(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


async def _every_way(client: httpx.AsyncClient, store: Store, workspace: Workspace, name: str) -> dict[str, str]:
    """Create or rename a room to ``name`` by every route there is: what each answered."""
    alice = workspace["alice"]
    out: dict[str, str] = {}
    rest = await client.post("/api/v1/channels.create", json={"name": name}, headers=alice.headers)
    out["rest channels.create"] = f"{rest.status_code} {rest.json().get('errorType', '')}".strip()
    mcp = await client.post(
        MCP_PATH, json=_tool("post_channels_create", name=name), headers={**alice.pat_headers, **MCP_HEADERS}
    )
    result = mcp.json()["result"]
    out["mcp post_channels_create"] = "refused" if result["isError"] else "created"
    a, c = workspace["alice"].user.id, workspace["carol"].user.id
    for kind in ("p", "c"):
        try:
            store.create_room(kind, name, members=[a, c])
            out[f"store create {kind}"] = "created"
        except AlreadyTaken:
            out[f"store create {kind}"] = "AlreadyTaken"
        plain = store.create_room(kind, f"plain-{kind}-{len(out)}", members=[a, c])
        try:
            store.update_room(plain.id, name=name)
            out[f"store rename {kind}"] = "renamed"
        except AlreadyTaken:
            out[f"store rename {kind}"] = "AlreadyTaken"
    return out


REFUSED = {
    "rest channels.create": "400 error-duplicate-channel-name",
    "mcp post_channels_create": "refused",
    "store create p": "AlreadyTaken",
    "store rename p": "AlreadyTaken",
    "store create c": "AlreadyTaken",
    "store rename c": "AlreadyTaken",
}


@pytest.mark.requirement("C5")
@pytest.mark.anyio
@pytest.mark.parametrize("name", DM_SHAPED)
async def test_a_dm_shaped_name_is_refused_by_every_route_before_the_dm_exists(
    client: httpx.AsyncClient, store: Store, workspace: Workspace, name: str, figure: Figure
) -> None:
    rooms_before = {r.id for r in store.get_rooms(store.readable_room_ids(workspace["alice"].user.id)).values()}
    outcomes = await _every_way(client, store, workspace, name)
    refusal = await client.post("/api/v1/channels.create", json={"name": name}, headers=workspace["alice"].headers)
    message = refusal.json().get("error", "")
    taken = store.get_room_by_name(name)
    wrong = {way: got for way, got in outcomes.items() if got != REFUSED[way]}
    figure(
        tried=len(outcomes),
        failed=len(wrong) + int(taken is not None and taken.type != "d"),
        name=name.encode("unicode_escape").decode(),
        outcomes=outcomes,
        error=message[:140],
    )
    assert wrong == {}
    assert "direct room" in message, "the refusal says why"
    assert taken is None or taken.type == "d"
    # The refused creations left nothing behind but the plain rooms the renames started from.
    after = {r.id for r in store.get_rooms(store.readable_room_ids(workspace["alice"].user.id)).values()}
    assert all(store.get_room(r).name.startswith("plain-") for r in after - rooms_before)  # type: ignore[union-attr]


@pytest.mark.requirement("C5")
@pytest.mark.anyio
@pytest.mark.parametrize("name", FREE)
async def test_a_name_that_only_resembles_a_dm_stays_free(
    client: httpx.AsyncClient, workspace: Workspace, name: str, figure: Figure
) -> None:
    created = await client.post("/api/v1/channels.create", json={"name": name}, headers=workspace["alice"].headers)
    figure(tried=1, failed=int(created.status_code != 200), name=name, status=created.status_code)
    assert created.status_code == 200, created.text


@pytest.mark.requirement("C5")
def test_the_dm_itself_can_still_be_made_and_an_import_of_a_dm_named_channel_comes_in_renamed(
    tmp_path: Path, database_url: str, figure: Figure
) -> None:
    """The Slack fixture plus a public channel literally named ``alice__carol`` (no DM of theirs yet)."""
    source = copy_fixture("slack", tmp_path / "src")
    channels = read_json(source / "channels.json")
    channels.append({**channels[0], "id": "C09DMNAME", "name": "alice__carol", "is_general": False,
                     "members": ["U01ALICE", "U03CAROL"]})  # fmt: skip
    edit_json(source / "channels.json", channels)
    (source / "alice__carol").mkdir()
    edit_json(
        source / "alice__carol" / "2026-11-03.json",
        [{"type": "message", "user": "U01ALICE", "text": "planted under a DM's name", "ts": "1793700000.000100"}],
    )
    store = open_store(tmp_path / "data", database_url=database_url)
    try:
        report = import_path(store, pack(source, "zip", tmp_path), progress=False)
        [message] = [m for batch in store.iter_messages() for m in batch if m.text == "planted under a DM's name"]
        room = store.get_room(message.room_id)
        assert room is not None
        taken = store.get_room_by_name("alice__carol")
        alice, carol = store.get_user_by_username("alice"), store.get_user_by_username("carol")
        assert alice is not None and carol is not None
        # The DM of alice and carol, made after the import, takes its name (the store allows a DM that),
        # and the name means the DM to both of them (the channel keeps the source's name for display).
        dm = store.create_room("d", "alice__carol", members=[alice.id, carol.id])
        meant = {p.username: store.readable_room_by_name(p.id, "alice__carol") for p in (alice, carol)}
    finally:
        store.close()
    skipped = [reason for _where, reason in report.skipped if "alice__carol" in reason]
    noted = [note for note in report.notes if "alice__carol" in note]
    figure(
        tried=1,
        failed=int(room.name == "alice__carol")
        + int(taken is not None and taken.name == "alice__carol")
        + len(skipped)
        + sum(r is None or r.id != dm.id for r in meant.values()),
        imported_as=room.name,
        import_note=noted[0][:160] if noted else "",
        room_type=room.type,
        dm_made_afterwards=dm.name,
    )
    assert room.type == "c" and room.name != "alice__carol" and room.name.startswith("alice__carol-")
    assert taken is None or taken.name != "alice__carol", "no channel holds the DM's name"
    assert dm.name == "alice__carol" and dm.type == "d"
    assert {u: r.id if r else None for u, r in meant.items()} == {"alice": dm.id, "carol": dm.id}
    assert skipped == [], "the channel is not skipped"
    assert noted, "the import says under which name the channel came in"
