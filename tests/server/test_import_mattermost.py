"""The Mattermost importer on the fixture bulk export: counts, rooms and members, plain text, threads,
people, bad lines by number, a second import that changes nothing, and a newer export."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ai_search_server.import_dispatch import import_path
from ai_search_server.imports.batches import ImportReport
from ai_search_server.store import SQLiteStore
from ai_search_server.store.records import Message

from ._exports import FIXTURES, content_hash, copy_fixture, edit_jsonl

SITE = "https://chat.acme.test"


@pytest.fixture
def export() -> Path:
    return FIXTURES / "mattermost" / "export.jsonl"


@pytest.fixture
def imported(store: SQLiteStore, export: Path) -> ImportReport:
    return import_path(store, export, progress=False, source_url=SITE)


def by_text(store: SQLiteStore, start: str) -> Message:
    [found] = [m for batch in store.iter_messages() for m in batch if m.text.startswith(start)]
    return found


def lines(path: Path) -> list[Any]:
    """The export's lines, parsed where they parse (the broken one stays a string)."""
    found: list[Any] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            found.append(json.loads(line))
        except json.JSONDecodeError:
            found.append(line)
    return found


def test_the_export_imports_with_the_right_counts(imported: ImportReport) -> None:
    r = imported
    assert (r.imported, r.skipped_count, r.users_created, r.rooms_created) == (12, 6, 6, 7)
    assert r.lines_read == r.imported + r.updated + r.unchanged + r.skipped_count + r.ignored


@pytest.mark.parametrize(
    ("name", "room_type", "fname", "members"),
    [
        pytest.param("town-square", "c", "Town Square", ["alice", "bob", "carol", "dave"], id="public"),
        pytest.param("incidents", "c", "Incidents 🚨", ["alice", "carol"], id="display-name-unicode"),
        pytest.param("leadership", "p", "Leadership", ["bob", "carol"], id="private"),
        pytest.param("labs-town-square", "c", "Town Square", ["alice"], id="second-team-same-name"),
        pytest.param("alice__bob", "d", "alice__bob", ["alice", "bob"], id="direct"),
        pytest.param(
            "alice__bob__carol", "d", "alice__bob__carol", ["alice", "bob", "carol"], id="group-direct"
        ),
        pytest.param(
            "bob__erin", "d", "bob__erin", ["bob", "erin"], id="direct-post-without-its-channel-line"
        ),
    ],
)
def test_channels_become_rooms_with_their_members(
    store: SQLiteStore, imported: ImportReport, name: str, room_type: str, fname: str, members: list[str]
) -> None:
    room = store.get_room_by_name(name)
    assert room is not None and (room.type, room.fname) == (room_type, fname)
    users = store.get_users(store.members_of(room.id))
    assert sorted(u.username for u in users.values()) == members


@pytest.mark.parametrize(
    ("start", "text"),
    [
        pytest.param(
            "Welcome",
            "Welcome to **Acme**! Read the handbook (https://handbook.acme.test/start) and join #incidents when on call",
            id="link-label-and-channel-link",
        ),
        pytest.param(
            "DiskUsageHigh", "DiskUsageHigh\ndb-primary /var/lib/postgresql at 91%", id="bot-attachment"
        ),
        pytest.param(
            "fixed with",
            "fixed with\nfind /var/lib/postgresql/wal_archive -mtime +7 -delete",
            id="code-fence",
        ),
        pytest.param("labs kickoff", "labs kickoff 🚀 — bienvenue", id="unicode"),
        pytest.param("runbook", "runbook-disk-full.pdf", id="file-only-post"),
    ],
)
def test_markdown_becomes_plain_text(
    store: SQLiteStore, imported: ImportReport, start: str, text: str
) -> None:
    assert by_text(store, start).text == text


def test_replies_are_the_posts_thread(store: SQLiteStore, imported: ImportReport) -> None:
    root = by_text(store, "Looking into the disk alert")
    replies, total = store.thread_messages(root.id, limit=10)
    assert (total, [r.text.split("\n")[0] for r in replies]) == (
        2,
        ["it is the WAL archive again", "fixed with"],
    )
    assert root.pinned_at is not None and replies[1].edited_at is not None
    assert [(r.emoji, r.usernames) for r in replies[1].reactions] == [(":tada:", ("alice",))]
    dm = by_text(store, "on it, @alice")
    assert dm.tmid == by_text(store, "can you review").id and dm.mentions == ("alice",)


@pytest.mark.parametrize(
    ("username", "roles", "active"),
    [
        pytest.param("alice", ("user",), True, id="admin-there-is-a-user-here"),
        pytest.param("dave", ("user",), False, id="deactivated"),
        pytest.param("alertbot", ("bot",), True, id="bot"),
        pytest.param("erin", ("user",), True, id="only-named-by-a-direct-post"),
    ],
)
def test_people(
    store: SQLiteStore, imported: ImportReport, username: str, roles: tuple[str, ...], active: bool
) -> None:
    user = store.get_user_by_username(username)
    assert user is not None and (user.roles, user.active) == (roles, active)


def test_bad_lines_are_reported_by_number(imported: ImportReport) -> None:
    assert imported.skipped == [
        ("export.jsonl line 8", "a channel's type must be O (public) or P (private)"),
        ("export.jsonl line 14", "field 'username' must be a non-empty string"),
        ("export.jsonl line 15", "invalid JSON"),
        ("export.jsonl line 19 reply 3", "a post without a message, attachments or files"),
        ("export.jsonl line 23", "field 'create_at' must be milliseconds since 1970"),
        ("export.jsonl line 24", "channel 'acme/does-not-exist' is not in the export"),
    ]


def test_links_lead_to_the_channel(store: SQLiteStore, imported: ImportReport) -> None:
    assert by_text(store, "Welcome").source_url == f"{SITE}/acme/channels/town-square"
    assert by_text(store, "can you review").source_url is None  # a DM's address depends on who opens it


def test_a_second_import_and_the_zip_change_nothing(
    store: SQLiteStore, export: Path, data_dir: Path, tmp_path: Path
) -> None:
    import_path(store, export, progress=False, source_url=SITE)
    before = content_hash(data_dir)
    archive = tmp_path / "mattermost_export.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.write(export, "import.jsonl")
        out.writestr("data/2026/11/02/runbook-disk-full.pdf", b"%PDF-1.4")
    for path in (export, archive):
        again = import_path(store, path, progress=False, source_url=SITE)
        assert (again.imported, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 12)
    assert content_hash(data_dir) == before


def newer_export(path: Path) -> None:
    """A later export: an edit, a deleted post, bob out of #leadership, a new display name, a new post;
    the broken lines fixed (a broken line leaves deletions alone)."""
    kept: list[Any] = []
    for line in lines(path):
        if isinstance(line, str) or (line.get("type") == "user" and "username" not in line["user"]):
            continue
        body = line.get(line["type"]) if isinstance(line, dict) else None
        if (line["type"] == "channel" and body["type"] == "X") or (
            line["type"] == "post" and "create_at" not in body
        ):
            continue
        if line["type"] == "post" and body["channel"] == "leadership":
            continue  # deleted in Mattermost
        if line["type"] == "post" and body["channel"] == "does-not-exist":
            continue
        if line["type"] == "channel" and body["name"] == "incidents":
            body["display_name"] = "Incidents & on-call"
        if line["type"] == "user" and body["username"] == "bob":
            body["teams"][0]["channels"] = [{"name": "town-square"}]
        if line["type"] == "post" and body["message"] == "Looking into the disk alert":
            reply = body["replies"][1]
            reply["message"], reply["edit_at"] = (
                "fixed: old WAL segments removed",
                reply["edit_at"] + 86_400_000,
            )
            body["replies"] = body["replies"][:2]
        kept.append(line)
    kept.insert(
        -4,
        {
            "type": "post",
            "post": {
                "team": "acme",
                "channel": "incidents",
                "user": "carol",
                "message": "postmortem on Monday",
                "create_at": 1793700000000,
            },
        },
    )
    edit_jsonl(path, kept)


def test_a_newer_export_applies_edits_deletions_and_memberships(store: SQLiteStore, tmp_path: Path) -> None:
    export = copy_fixture("mattermost", tmp_path) / "export.jsonl"
    import_path(store, export, progress=False, source_url=SITE)
    reorg = by_text(store, "Q4 reorg")
    newer_export(export)
    report = import_path(store, export, progress=False, source_url=SITE)
    assert (report.skipped_count, report.imported, report.updated, report.deleted, report.unsubscribed) == (
        0,
        1,
        1,
        1,
        1,
    )
    assert store.get_message(reorg.id) is None
    assert by_text(store, "fixed: old WAL").tmid == by_text(store, "Looking into").id
    incidents = store.get_room_by_name("incidents")
    assert incidents is not None and incidents.fname == "Incidents & on-call"
    bob = store.get_user_by_username("bob")
    leadership = store.get_room_by_name("leadership")
    assert bob is not None and leadership is not None and leadership.id not in store.readable_room_ids(bob.id)
