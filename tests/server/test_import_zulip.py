"""The Zulip importer on the fixture realm export: counts, streams and members, topics as threads,
plain text, people, bad records by file and position, re-import, and a newer export."""

from __future__ import annotations

from pathlib import Path

import pytest

from ai_search_server.import_dispatch import import_path
from ai_search_server.imports.batches import ImportReport
from ai_search_server.store import SQLiteStore
from ai_search_server.store.records import Message

from ._exports import content_hash, copy_fixture, edit_json, pack, read_json

SITE = "https://acme.zulipchat.com"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return copy_fixture("zulip", tmp_path / "src") / "zulip-export-acme"


@pytest.fixture
def export(folder: Path, tmp_path: Path) -> Path:
    """The fixture as Zulip hands it out: a tar.gz with the export's folder inside."""
    return pack(folder, "tar.gz", tmp_path)


@pytest.fixture
def imported(store: SQLiteStore, export: Path) -> ImportReport:
    return import_path(store, export, progress=False, source_url=SITE)


def by_text(store: SQLiteStore, start: str) -> Message:
    [found] = [m for batch in store.iter_messages() for m in batch if m.text.startswith(start)]
    return found


def test_the_export_imports_with_the_right_counts(imported: ImportReport) -> None:
    r = imported
    assert (r.imported, r.skipped_count, r.users_created, r.rooms_created) == (161, 3, 7, 6)
    assert (r.subscribed, r.unsubscribed) == (13, 0)  # subscriptions decide, not who wrote
    assert r.lines_read == r.imported + r.updated + r.unchanged + r.skipped_count + r.ignored


@pytest.mark.parametrize(
    ("name", "room_type", "members"),
    [
        pytest.param(
            "general", "c", ["alice", "alice-2", "bob", "carol"], id="stream-an-unsubscribed-author-is-out"
        ),
        pytest.param("design", "c", ["alice", "carol"], id="stream"),
        pytest.param("leadership 'core'", "p", ["bob", "carol"], id="invite-only-name-with-a-quote"),
        pytest.param("empty stream", "c", [], id="no-subscribers"),
        pytest.param("alice__bob", "d", ["alice", "bob"], id="one-to-one-dm"),
        pytest.param("alice__bob__carol", "d", ["alice", "bob", "carol"], id="group-dm"),
    ],
)
def test_streams_and_dms_become_rooms(
    store: SQLiteStore, imported: ImportReport, name: str, room_type: str, members: list[str]
) -> None:
    room = store.get_room_by_name(name)
    assert room is not None and room.type == room_type
    assert sorted(u.username for u in store.get_users(store.members_of(room.id)).values()) == members


def test_a_topic_is_a_thread_whatever_its_case(store: SQLiteStore, imported: ImportReport) -> None:
    first = by_text(store, "deploy billing-api\n")
    replies, total = store.thread_messages(first.id, limit=10)
    assert total == 3
    assert [r.text for r in replies] == [
        "canary at 5%, p99 latency flat",
        "promoting to 100%",
        "@alice has marked this topic as resolved.",
    ]
    huge = by_text(store, "incident 4711\n")
    assert store.thread_messages(huge.id, limit=1)[1] == 149
    assert by_text(store, "build 991").tmid is None  # no topic, no thread


@pytest.mark.parametrize(
    ("start", "text"),
    [
        pytest.param(
            "deploy billing-api\n",
            "deploy billing-api\nRolling out v2.14 now, @bob please watch #design > logo review",
            id="mention-by-id-and-stream-topic-link",
        ),
        pytest.param(
            "logo review",
            "logo review\nmockups (https://figma.test/file/abc) are up, feedback by Friday",
            id="link",
        ),
        pytest.param("farewell", "farewell\nlast day! see you around", id="code-fence"),
        pytest.param("offsite", "offsite in 東京 next spring?", id="unicode-group-dm"),
    ],
)
def test_markdown_becomes_plain_text(
    store: SQLiteStore, imported: ImportReport, start: str, text: str
) -> None:
    assert by_text(store, start).text == text


def test_reactions_files_edits_and_links(store: SQLiteStore, imported: ImportReport) -> None:
    first = by_text(store, "deploy billing-api\n")
    assert [(r.emoji, r.usernames) for r in first.reactions] == [(":thumbs_up:", ("bob", "carol"))]
    assert first.mentions == ("bob",)
    assert [(a.name, a.size) for a in by_text(store, "reorg").attachments] == [("reorg-memo.pdf", 48213)]
    assert by_text(store, "logo review").edited_at is not None
    assert first.source_url == f"{SITE}/#narrow/channel/100-general/topic/deploy.20billing-api/near/1001"
    assert by_text(store, "lunch today").source_url == f"{SITE}/#narrow/near/1007"


@pytest.mark.parametrize(
    ("username", "name", "roles", "active"),
    [
        pytest.param("alice", "Alice Okafor", ("user",), True, id="email-local-part"),
        pytest.param("alice-2", "Alice Partner", ("user",), True, id="same-local-part-made-unique"),
        pytest.param("dave", "Dave Deactivated", ("user",), False, id="deactivated"),
        pytest.param("deploy-bot", "Deploy Bot", ("bot",), True, id="bot"),
        pytest.param("notification-bot", "notification-bot@zulip.com", ("bot",), True, id="cross-realm-bot"),
    ],
)
def test_people(
    store: SQLiteStore, imported: ImportReport, username: str, name: str, roles: tuple[str, ...], active: bool
) -> None:
    user = store.get_user_by_username(username)
    assert user is not None and (user.name, user.roles, user.active) == (name, roles, active)


def test_bad_records_are_reported_by_file_and_position(imported: ImportReport) -> None:
    assert [(where, reason.split(" (")[0]) for where, reason in imported.skipped] == [
        ("realm.json user 7", "a user needs a numeric id"),
        ("messages-000001.json message 11", "a message needs numeric id, sender and recipient"),
        ("messages-000003.json", "invalid JSON"),
    ]


def test_a_second_import_changes_nothing_folder_or_archive(
    store: SQLiteStore, export: Path, folder: Path, data_dir: Path
) -> None:
    import_path(store, export, progress=False, source_url=SITE)
    before = content_hash(data_dir)
    for path in (export, folder):
        again = import_path(store, path, progress=False, source_url=SITE)
        assert (again.imported, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 161)
    assert content_hash(data_dir) == before


def test_a_newer_export_applies_edits_deletions_renames_and_memberships(
    store: SQLiteStore, folder: Path
) -> None:
    import_path(store, folder, progress=False, source_url=SITE)
    design = store.get_room_by_name("design")
    canary = by_text(store, "canary at 5%")
    (folder / "messages-000003.json").unlink()  # the damaged file: with it, nothing would be deleted
    chunk = read_json(folder / "messages-000001.json")
    rows = [m for m in chunk["zerver_message"] if m.get("id") not in (1002, 1011)]
    for row in rows:
        if row["id"] == 1005:
            row["content"], row["last_edit_time"] = "final mockups are up", row["date_sent"] + 90_000
    rows.append(dict(rows[0], id=1013, content="v2.15 next week", date_sent=rows[0]["date_sent"] + 7200))
    edit_json(folder / "messages-000001.json", {"zerver_message": rows, "zerver_usermessage": []})
    realm = read_json(folder / "realm.json")
    realm["zerver_stream"][1]["name"] = "product-design"
    realm["zerver_subscription"] = [
        s for s in realm["zerver_subscription"] if (s["user_profile"], s["recipient"]) != (12, 201)
    ]
    edit_json(folder / "realm.json", realm)
    report = import_path(store, folder, progress=False, source_url=SITE)
    assert (report.imported, report.updated, report.deleted, report.rooms_renamed, report.unsubscribed) == (
        1,
        1,
        1,
        1,
        1,
    )
    assert store.get_message(canary.id) is None
    renamed = store.get_room_by_name("product-design")
    assert design is not None and renamed is not None and renamed.id == design.id
    assert by_text(store, "logo review").text == "logo review\nfinal mockups are up"
    assert by_text(store, "v2.15").tmid == by_text(store, "deploy billing-api\n").id
