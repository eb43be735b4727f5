"""An admin's mapping of a source's people and rooms to accounts and rooms here (imports/mapping.py),
and what the mirror may do to each: files read or refused by line, names that are not here refused
before anything is imported, a mapped account linked and never changed, a mapped room that only
gains members and keeps its name, a type that does not match refused, the link remembered, and a
Rocket.Chat room an admin mapped that keeps its members when it is gone there.

The workspace is tests/server/conftest.py's (alice, bob, carol; general, ops, secret, alice__bob).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from ai_search_server.cli import main
from ai_search_server.import_dispatch import ImportFailed, import_path
from ai_search_server.imports.batches import ImportReport
from ai_search_server.imports.mapping import (
    MAX_MAPPING_FILE_BYTES,
    MappingError,
    SourceMapping,
    read_mapping,
)
from ai_search_server.imports.rocketchat import RocketChatSync, origin_of
from ai_search_server.imports.rocketchat_api import Credentials, RocketChatAPI
from ai_search_server.outbound import GuardedClient, OutboundPolicy
from ai_search_server.store import ExternalLink
from ai_search_server.store.base import Store

from ._fake_rocketchat import ADMIN_ID, ADMIN_TOKEN, FakeRocketChat
from .conftest import Workspace

T0 = 1793610000


def slack_export(folder: Path, *, users: list[dict[str, Any]], channels: list[dict[str, Any]] = (), groups: list[dict[str, Any]] = ()) -> Path:  # type: ignore[assignment]  # fmt: skip
    """A Slack export: its people, public channels and private groups, one message by the first
    person in each conversation."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "users.json").write_text(json.dumps([{"team_id": "TMAP", **u} for u in users]))
    (folder / "channels.json").write_text(json.dumps(list(channels)))
    (folder / "groups.json").write_text(json.dumps(list(groups)))
    for n, conversation in enumerate([*channels, *groups]):
        day = folder / conversation["name"]
        day.mkdir(exist_ok=True)
        message = {"type": "message", "user": users[0]["id"], "text": f"hello from {conversation['name']}", "ts": f"{T0 + n}.000000"}
        (day / "2026-11-02.json").write_text(json.dumps([message]))
    return folder


def mapping_file(tmp_path: Path, name: str, *lines: str) -> Path:
    path = tmp_path / name
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def members(store: Store, name: str) -> list[str]:
    room = store.get_room_by_name(name)
    assert room is not None
    return sorted(u.username for u in store.get_users(store.members_of(room.id)).values())


def author_of(store: Store, text: str) -> tuple[str, str]:
    """(username, room name) of the message with ``text``."""
    [message] = [m for batch in store.iter_messages() for m in batch if m.text == text]
    user, room = store.get_user(message.user_id), store.get_room(message.room_id)
    assert user is not None and room is not None
    return user.username, room.name


# -- the files ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "looked_up", "found"),
    [
        pytest.param(b"U024BE7LH = alice\n", ("U024BE7LH", "whoever"), "alice", id="by-id"),
        pytest.param(b"# people\n\n  Alice.Smith = @alice  \n", ("U1", "alice.smith"), "alice", id="by-name-any-case"),
        pytest.param(b"\xef\xbb\xbfU1 = bob\r\n", ("U1", ""), "bob", id="bom-and-crlf"),
        pytest.param(b"U1 = bob\n", ("U2", "U1x"), None, id="nobody-else"),
    ],
)  # fmt: skip
def test_a_mapping_file_maps_by_id_then_by_name(
    tmp_path: Path, content: bytes, looked_up: tuple[str, str], found: str | None
) -> None:
    path = tmp_path / "people.txt"
    path.write_bytes(content)
    assert read_mapping(users=path).user_for(*looked_up) == found


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        pytest.param(b"U1 alice\n", "line 1: write SOURCE = NAME-HERE", id="no-equals-sign"),
        pytest.param(b"# ok\nU1 = \n", "line 2: write SOURCE = NAME-HERE", id="nothing-here"),
        pytest.param(b" = alice\n", "line 1: write SOURCE", id="no-source"),
        pytest.param(b"U1 = alice\nu1 = bob\n", "line 2: 'u1' is mapped already (", id="a-source-twice"),
        pytest.param(b"U1 = alice\nU2 = ALICE\n", "line 2: 'ALICE' is mapped already (", id="one-account-twice"),
        pytest.param(b"U1 = al\xffice\n", "not UTF-8 text", id="not-utf-8"),
        pytest.param(b"U1 = a\n" * (MAX_MAPPING_FILE_BYTES // 7 + 1), "holds at most", id="too-large"),
    ],
)
def test_a_mapping_file_that_cannot_be_used_is_refused_by_line(tmp_path: Path, content: bytes, fragment: str) -> None:
    path = tmp_path / "people.txt"
    path.write_bytes(content)
    with pytest.raises(MappingError, match="^" + str(path).replace("\\", "\\\\")) as refused:
        read_mapping(users=path)
    assert fragment in str(refused.value)


@pytest.mark.parametrize(
    ("option", "line", "fragment"),
    [
        pytest.param("users", "U1 = nobody", "no account here is named 'nobody'", id="no-such-account"),
        pytest.param("rooms", "C1 = nowhere", "no room here is named 'nowhere'", id="no-such-room"),
        pytest.param("rooms", "D1 = alice__bob", "'alice__bob' is a direct room", id="a-direct-room"),
    ],
)
def test_a_mapping_naming_nothing_here_stops_the_import_before_it_writes(
    store: Store, workspace: Workspace, tmp_path: Path, option: str, line: str, fragment: str
) -> None:
    export = slack_export(tmp_path / "export", users=[{"id": "U1", "name": "zed"}], channels=[{"id": "C1", "name": "news", "members": ["U1"]}])  # fmt: skip
    before = store.count_messages()
    mapping = read_mapping(**{option: mapping_file(tmp_path, "map.txt", line)})  # type: ignore[arg-type]
    with pytest.raises(ImportFailed, match=fragment):
        import_path(store, export, progress=False, mapping=mapping)
    assert store.count_messages() == before and store.get_user_by_username("zed") is None


def test_the_command_reads_the_files_and_refuses_with_a_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = slack_export(tmp_path / "export", users=[{"id": "U1", "name": "zed"}], channels=[{"id": "C1", "name": "news", "members": ["U1"]}])  # fmt: skip
    data = ["--data", str(tmp_path / "data")]
    bad = mapping_file(tmp_path, "people.txt", "U1 zed")
    assert main(["import", str(export), "--map-users", str(bad), "--quiet", *data]) == 2
    assert f"ai-search: {bad} line 1: write SOURCE = NAME-HERE" in capsys.readouterr().err
    assert main(["import", str(export), "--map-rooms", str(tmp_path / "missing.txt"), "--quiet", *data]) == 2
    assert "missing.txt: cannot be read (No such file or directory)" in capsys.readouterr().err
    jsonl = tmp_path / "h.jsonl"
    jsonl.write_text('{"room": "ops", "room_type": "c", "user": "zed", "ts": "2026-11-02T09:15:00Z", "text": "hi"}\n')
    good = mapping_file(tmp_path, "ok.txt", "U1 = zed")
    assert main(["import", str(jsonl), "--map-users", str(good), "--quiet", *data]) == 2
    assert "a mapping applies to a Slack, Mattermost or Zulip export" in capsys.readouterr().err


def test_the_sync_checks_its_mapping_before_it_calls_out_or_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server (settings from the environment) is never reached: the mapping fails first."""
    for name, value in (("URL", "http://127.0.0.1:9"), ("USER_ID", "rcAdmin"), ("TOKEN", "not-used")):
        monkeypatch.setenv(f"AI_SEARCH_ROCKETCHAT_{name}", value)
    people = mapping_file(tmp_path, "people.txt", "uSomeone = nobody")
    assert main(["sync", "rocketchat", "--map-users", str(people), "--quiet", "--data", str(tmp_path / "data")]) == 2
    assert f"ai-search: {people} line 1: no account here is named 'nobody'" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["import"], ["sync", "rocketchat"]])
def test_both_commands_explain_the_mapping_options(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--map-users FILE people of the source who are accounts here" in out
    assert "--map-rooms FILE conversations of the source that are rooms here" in out
    assert "mapped room only gains members" in out


# -- what the mirror does with them ---------------------------------------------------------------


def test_a_mapped_person_is_linked_and_never_changed(store: Store, workspace: Workspace, tmp_path: Path) -> None:
    """Mapped to alice, a person the source deleted and calls Mallory posts as alice, and alice stays
    alice: her name, active flag, roles and password; the link is remembered for the next run."""
    alice = workspace["alice"].user
    users = [{"id": "UA", "name": "a.okafor", "real_name": "Mallory", "deleted": True}, {"id": "UN", "name": "newbie"}]
    export = slack_export(tmp_path / "export", users=users, channels=[{"id": "C1", "name": "news", "members": ["UA", "UN"]}])  # fmt: skip
    mapping = read_mapping(users=mapping_file(tmp_path, "people.txt", "UA = alice"))
    report = import_path(store, export, progress=False, mapping=mapping)
    assert author_of(store, "hello from news") == ("alice", "news")
    assert store.get_user(alice.id) == alice  # name, active flag, roles, password: all as they were
    assert store.verify_password("alice", workspace["alice"].password) is not None
    assert store.external_links("slack:TMAP", "user")["UA"] == ExternalLink(alice.id, "mapped")
    assert report.users_created == 1 and members(store, "news") == ["alice", "newbie"]
    again = import_path(store, export, progress=False)  # no file this time: the link stays
    assert (again.imported, again.users_created) == (0, 0)
    assert store.get_user(alice.id) == alice and author_of(store, "hello from news") == ("alice", "news")


def test_a_mapped_room_only_gains_members_and_keeps_its_name_and_topic(
    store: Store, workspace: Workspace, tmp_path: Path
) -> None:
    general = workspace.rooms["general"]
    users = [{"id": "UN", "name": "newbie"}, {"id": "UB", "name": "bob.m"}]
    channel = {"id": "CGEN", "name": "town-square", "members": ["UN", "UB"], "topic": {"value": "hijacked"}}
    folder = tmp_path / "export"
    export = slack_export(folder, users=users, channels=[channel])
    mapping = read_mapping(
        users=mapping_file(tmp_path, "people.txt", "bob.m = bob"),
        rooms=mapping_file(tmp_path, "rooms.txt", "town-square = #general"),
    )
    report = import_path(store, export, progress=False, mapping=mapping)
    assert members(store, "general") == ["alice", "bob", "carol", "newbie"]  # carol and alice stay
    assert author_of(store, "hello from town-square") == ("newbie", "general")
    assert (store.get_room(general.id).name, store.get_room(general.id).topic) == ("general", "")  # type: ignore[union-attr]
    assert report.unsubscribed == 0
    # A newer export: the channel renamed, bob gone from it. Nobody here is taken out; no rename.
    channel.update(name="town-hall", members=["UN"])
    (folder / "channels.json").write_text(json.dumps([channel]))
    (folder / "town-square").rename(folder / "town-hall")
    again = import_path(store, export, progress=False)
    assert members(store, "general") == ["alice", "bob", "carol", "newbie"]
    assert store.get_room(general.id).name == "general" and again.unsubscribed == again.rooms_renamed == 0  # type: ignore[union-attr]


def test_a_mapped_room_of_another_type_is_refused_and_nothing_pours_into_it(
    store: Store, workspace: Workspace, tmp_path: Path
) -> None:
    """A private group mapped to a public channel would publish it: the conversation is refused."""
    users = [{"id": "UN", "name": "newbie"}]
    export = slack_export(tmp_path / "export", users=users, groups=[{"id": "GX", "name": "board", "members": ["UN"]}])
    mapping = read_mapping(rooms=mapping_file(tmp_path, "rooms.txt", "GX = general"))
    report = import_path(store, export, progress=False, mapping=mapping)
    assert ("groups.json entry 1", "room 'board' cannot be mirrored: it is c here, the source says p") in report.skipped
    assert report.imported == 0 and members(store, "general") == ["alice", "bob", "carol"]


def test_one_account_is_one_person_of_a_source(store: Store, workspace: Workspace, tmp_path: Path) -> None:
    """A later file mapping a second person to an account the first already is: left out, and said."""
    users = [{"id": "UA", "name": "first"}, {"id": "UB", "name": "second"}]
    export = slack_export(tmp_path / "export", users=users, channels=[{"id": "C1", "name": "news", "members": ["UA", "UB"]}])  # fmt: skip
    import_path(store, export, progress=False, mapping=read_mapping(users=mapping_file(tmp_path, "a.txt", "UA = alice")))
    report = import_path(store, export, progress=False, mapping=read_mapping(users=mapping_file(tmp_path, "b.txt", "UB = alice")))
    assert any("'second' is mapped to 'alice', which another person of this source is already" in n for n in report.notes)
    assert members(store, "news") == ["alice", "second"]


def test_a_person_mapped_after_an_earlier_import_moves_to_the_account_and_says_so(
    store: Store, workspace: Workspace, tmp_path: Path
) -> None:
    export = slack_export(tmp_path / "export", users=[{"id": "UA", "name": "alice"}], channels=[{"id": "C1", "name": "news", "members": ["UA"]}])  # fmt: skip
    first = import_path(store, export, progress=False)
    assert members(store, "news") == ["alice-2"] and any("alice → alice-2" in n for n in first.notes)
    report = import_path(store, export, progress=False, mapping=read_mapping(users=mapping_file(tmp_path, "a.txt", "UA = alice")))
    assert any("is mapped to 'alice' now; what was imported before stays" in n for n in report.notes)
    assert members(store, "news") == ["alice"]  # the room the source created follows the source
    assert store.get_user_by_username("alice") == workspace["alice"].user


# -- Rocket.Chat ----------------------------------------------------------------------------------


def _sync(store: Store, server: FakeRocketChat, mapping: SourceMapping) -> ImportReport:
    async def run() -> ImportReport:
        async with GuardedClient(OutboundPolicy(allow_hosts=("127.0.0.1",))) as client:
            api = RocketChatAPI(server.url, Credentials(ADMIN_ID, ADMIN_TOKEN), client)
            return await RocketChatSync(store, api, mapping=mapping).run()

    return anyio.run(run)


def test_a_room_gone_from_rocket_chat_keeps_its_members_here_when_an_admin_mapped_it(
    store: Store, workspace: Workspace, tmp_path: Path
) -> None:
    server = FakeRocketChat().serve()
    try:
        server.add_user("uNew0000000000001", "newbie", "New Bie")
        server.add_room("rOps0000000000001", "c", "ops-rc", ["uNew0000000000001"])
        server.add_room("rMine000000000002", "c", "mine", ["uNew0000000000001"])
        mapping = read_mapping(rooms=mapping_file(tmp_path, "rooms.txt", "rOps0000000000001 = ops"))
        _sync(store, server, mapping)
        assert members(store, "ops") == ["alice", "carol", "newbie"] and members(store, "mine") == ["newbie"]
        links = store.external_links(origin_of(server.url), "room")
        assert (links["rOps0000000000001"].how, links["rMine000000000002"].how) == ("mapped", "created")
        server.remove_room("rOps0000000000001")
        server.remove_room("rMine000000000002")
        report = _sync(store, server, read_mapping())
    finally:
        server.stop()
    assert members(store, "ops") == ["alice", "carol", "newbie"]  # this workspace's room, not Rocket.Chat's
    mine = store.get_room_by_name("mine")
    assert mine is not None and store.members_of(mine.id) == [] and report.unsubscribed == 1
