"""The Slack importer on the fixture export: counts, rooms and members, plain text, threads, people,
bad records by file and position, a second import that changes nothing, and a newer export."""

from __future__ import annotations

from pathlib import Path

import pytest

from ai_search_server.import_dispatch import import_path
from ai_search_server.imports.batches import ImportReport
from ai_search_server.imports.mirror import room_name
from ai_search_server.store import SQLiteStore
from ai_search_server.store.records import Message

from ._exports import content_hash, copy_fixture, edit_json, pack, read_json

BASE = "https://acme.slack.com"


@pytest.fixture
def export(tmp_path: Path) -> Path:
    """The fixture, zipped as Slack hands it out."""
    return pack(copy_fixture("slack", tmp_path / "src"), "zip", tmp_path)


@pytest.fixture
def imported(store: SQLiteStore, export: Path) -> ImportReport:
    return import_path(store, export, progress=False, source_url=BASE)


def messages(store: SQLiteStore) -> list[Message]:
    return [m for batch in store.iter_messages() for m in batch]


def by_text(store: SQLiteStore, start: str) -> Message:
    [found] = [m for m in messages(store) if m.text.startswith(start)]
    return found


def test_the_export_imports_with_the_right_counts(imported: ImportReport) -> None:
    r = imported
    assert (r.imported, r.unchanged, r.skipped_count, r.ignored) == (20, 0, 5, 4)
    assert (r.users_created, r.rooms_created) == (8, 6)
    # The members lists decide: an author who is no member (left, or deleted) does not join and leave.
    assert (r.subscribed, r.unsubscribed) == (15, 0)
    assert r.lines_read == r.imported + r.updated + r.unchanged + r.skipped_count + r.ignored


@pytest.mark.parametrize(
    ("name", "room_type", "members"),
    [
        pytest.param("general", "c", ["alice", "bob", "carol", "emile"], id="public-channel"),
        pytest.param("ops", "c", ["alice", "carol", "deploybot"], id="a-deleted-author-is-no-member"),
        pytest.param("announcements", "c", ["alice"], id="archived-without-messages"),
        pytest.param("secret", "p", ["bob", "carol"], id="private-channel"),
        pytest.param("alice__bob", "d", ["alice", "bob"], id="direct-message"),
        pytest.param("alice__bob__carol", "d", ["alice", "bob", "carol"], id="group-direct-message"),
    ],
)
def test_conversations_become_rooms_with_the_sources_members(
    store: SQLiteStore, imported: ImportReport, name: str, room_type: str, members: list[str]
) -> None:
    room = store.get_room_by_name(name)
    assert room is not None and room.type == room_type
    assert (
        sorted(store.get_users(store.members_of(room.id))[u].username for u in store.members_of(room.id))
        == members
    )


@pytest.mark.parametrize(
    ("start", "text"),
    [
        pytest.param(
            "Welcome",
            "Welcome @emile! See #ops and the onboarding doc (https://wiki.example.com/onboarding?step=1&lang=en)"
            " & say hi @here",
            id="mention-channel-link-labelled-url-entity-broadcast",
        ),
        pytest.param("Thanks!", "Thanks! :tada: 日本語のテスト — naïve café", id="unicode"),
        pytest.param(
            "rollback:",
            "rollback: kubectl rollout undo deploy/billing-api && echo <ok>",
            id="code-block-entities",
        ),
        pytest.param(
            "Deploy 42",
            "Deploy 42 failed\nbilling-api: ERR_CONN_RESET from db-primary",
            id="bot-attachment-text",
        ),
        pytest.param("sure", "sure @alice, the usual place", id="mention-in-a-dm"),
    ],
)
def test_markup_becomes_plain_text(store: SQLiteStore, imported: ImportReport, start: str, text: str) -> None:
    assert by_text(store, start).text == text


def test_a_thread_across_days_keeps_its_replies_in_order(store: SQLiteStore, imported: ImportReport) -> None:
    parent = by_text(store, "Who owns the billing-api deploy")
    replies, total = store.thread_messages(parent.id, limit=10)
    assert total == 4
    assert [r.text for r in replies] == [
        "I do, rolling it out after lunch",
        "ping me if the canary looks off",
        "canary is green, promoting",
        "billing-api v2.14 is out, thanks @alice",
    ]
    assert replies[1].edited_at is not None and replies[0].edited_at is None
    assert replies[0].source_url == (
        f"{BASE}/archives/C01GENERAL/p1793610660000000?thread_ts=1793610600.000000&cid=C01GENERAL"
    )
    assert parent.source_url == f"{BASE}/archives/C01GENERAL/p1793610600000000"


def test_a_reply_to_a_deleted_first_message_stays_in_its_room(
    store: SQLiteStore, imported: ImportReport
) -> None:
    orphan = by_text(store, "the postmortem")
    assert orphan.tmid is None and store.get_room(orphan.room_id).name == "ops"  # type: ignore[union-attr]
    assert any("first message is not in the export" in note for note in imported.notes)


@pytest.mark.parametrize(
    ("start", "attachments", "reactions", "pinned", "mentions"),
    [
        pytest.param(
            "here is the pooler", ["pgbouncer.ini"], {}, False, (), id="file-kept-hidden-file-dropped"
        ),
        pytest.param(
            "Thanks!", [], {":+1:": ("alice", "carol"), ":wave:": ("emile",)}, False, (), id="reactions"
        ),
        pytest.param("rollback:", [], {}, True, (), id="pinned"),
        pytest.param("Welcome", [], {}, False, ("emile",), id="mention-recorded"),
    ],
)
def test_files_reactions_pins_and_mentions(
    store: SQLiteStore,
    imported: ImportReport,
    start: str,
    attachments: list[str],
    reactions: dict[str, tuple[str, ...]],
    pinned: bool,
    mentions: tuple[str, ...],
) -> None:
    message = by_text(store, start)
    assert [a.name for a in message.attachments] == attachments
    assert {r.emoji: r.usernames for r in message.reactions} == reactions
    assert (message.pinned_at is not None) == pinned
    assert message.mentions == mentions


@pytest.mark.parametrize(
    ("username", "name", "roles", "active"),
    [
        pytest.param("alice", "Alice Okafor", ("user",), True, id="person"),
        pytest.param("emile", "Émile Zoló", ("user",), True, id="unicode-name"),
        pytest.param("dave", "Dave Deleted", ("user",), False, id="deleted-user-deactivated"),
        pytest.param("deploybot", "Deploy Bot", ("bot",), True, id="bot-user-marked"),
        pytest.param(
            "ghost.contractor", "Former Contractor", ("user",), True, id="unknown-user-from-profile"
        ),
    ],
)
def test_people(
    store: SQLiteStore, imported: ImportReport, username: str, name: str, roles: tuple[str, ...], active: bool
) -> None:
    user = store.get_user_by_username(username)
    assert user is not None and (user.name, user.roles, user.active, user.has_password) == (
        name,
        roles,
        active,
        False,
    )


def test_bad_records_are_reported_by_file_and_position(imported: ImportReport) -> None:
    assert [(where, reason.split(" (")[0]) for where, reason in imported.skipped] == [
        ("users.json entry 8", "a user needs an id"),
        ("stray-folder/", "no channels.json, groups.json, dms.json or mpims.json entry names this folder"),
        ("general/2026-11-02.json message 8", "a message must be a JSON object"),
        ("general/2026-11-02.json message 9", "ts must be Slack's seconds.micros string, not None"),
        ("general/2026-11-04.json", "invalid JSON"),
    ]
    assert "general/2026-11-04.json: invalid JSON" in imported.summary()


def test_a_second_import_changes_nothing(store: SQLiteStore, export: Path, data_dir: Path) -> None:
    import_path(store, export, progress=False, source_url=BASE)
    before = content_hash(data_dir)
    again = import_path(store, export, progress=False, source_url=BASE)
    assert (again.imported, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 20)
    assert (again.users_created, again.rooms_created, again.subscribed, again.unsubscribed) == (0, 0, 0, 0)
    assert content_hash(data_dir) == before


def test_the_folder_and_the_zip_import_alike(store: SQLiteStore, tmp_path: Path, export: Path) -> None:
    folder = import_path(store, tmp_path / "src" / "slack", progress=False, source_url=BASE)
    again = import_path(store, export, progress=False, source_url=BASE)
    assert folder.imported == 20 and (again.imported, again.unchanged) == (0, 20)


def newer_export(folder: Path, *, keep_a_bad_record: bool = False) -> None:
    """What Slack would export a few days later: an edit, a deleted message, a reaction taken back,
    a pin, a renamed channel, a person who left a channel, a new day."""
    general = folder / "general" / "2026-11-02.json"
    day = read_json(general)
    welcome, thanks = day[1], day[2]
    assert welcome["text"].startswith("Welcome") and thanks["text"].startswith("Thanks!")
    thanks["text"] = "Thanks all! :tada:"
    thanks["edited"] = {"user": "U02BOB", "ts": "1793700000.000000"}
    thanks["reactions"][0]["users"] = ["U01ALICE"]
    day = [m for m in day if m is not welcome and (keep_a_bad_record or (isinstance(m, dict) and "ts" in m))]
    edit_json(general, day)
    if not keep_a_bad_record:
        (folder / "general" / "2026-11-04.json").unlink()
    edit_json(
        folder / "general" / "2026-11-05.json",
        [{"type": "message", "user": "U02BOB", "text": "retro notes are up", "ts": "1793869200.000100"}],
    )
    channels = read_json(folder / "channels.json")
    channels[0]["members"].remove("U03CAROL")
    channels[1]["name"] = "incident-ops"
    edit_json(folder / "channels.json", channels)
    (folder / "ops").rename(folder / "incident-ops")
    secret = read_json(folder / "secret" / "2026-11-02.json")
    secret[0]["pinned_to"] = ["G01SECRET"]
    edit_json(folder / "secret" / "2026-11-02.json", secret)


def test_a_newer_export_applies_edits_deletions_renames_and_memberships(
    store: SQLiteStore, tmp_path: Path
) -> None:
    folder = copy_fixture("slack", tmp_path / "src")
    import_path(store, pack(folder, "zip", tmp_path), progress=False, source_url=BASE)
    ops = store.get_room_by_name("ops")
    welcome = by_text(store, "Welcome")
    newer_export(folder)
    (tmp_path / "slack.zip").unlink()
    report = import_path(store, pack(folder, "zip", tmp_path), progress=False, source_url=BASE)
    assert (report.imported, report.updated, report.deleted, report.rooms_renamed) == (1, 2, 1, 1)
    assert (report.subscribed, report.unsubscribed) == (0, 1)
    assert store.get_message(welcome.id) is None
    edited = by_text(store, "Thanks all!")
    assert edited.edited_at is not None and {r.emoji: r.usernames for r in edited.reactions}[":+1:"] == (
        "alice",
    )
    assert by_text(store, "the acquisition").pinned_at is not None
    renamed = store.get_room_by_name("incident-ops")
    assert ops is not None and renamed is not None and renamed.id == ops.id
    carol = store.get_user_by_username("carol")
    general = store.get_room_by_name("general")
    assert carol is not None and general is not None and general.id not in store.readable_room_ids(carol.id)
    assert by_text(store, "retro notes").username == "bob"


def test_a_conversation_with_an_unreadable_record_deletes_nothing(store: SQLiteStore, tmp_path: Path) -> None:
    folder = copy_fixture("slack", tmp_path / "src")
    import_path(store, folder, progress=False, source_url=BASE)
    welcome = by_text(store, "Welcome")
    newer_export(folder, keep_a_bad_record=True)
    report = import_path(store, folder, progress=False, source_url=BASE)
    assert report.deleted == 0 and store.get_message(welcome.id) is not None
    assert any("were not deleted in 1 room (general)" in note for note in report.notes), report.notes


def test_without_a_source_url_messages_link_to_their_channel(store: SQLiteStore, export: Path) -> None:
    report = import_path(store, export, progress=False)
    assert by_text(store, "Welcome").source_url == "https://app.slack.com/client/T0ACMEHQ1/C01GENERAL"
    assert any("--source-url" in note for note in report.notes)
    again = import_path(store, export, progress=False, source_url=BASE)
    assert again.updated == 20 and by_text(store, "Welcome").source_url.startswith(f"{BASE}/archives/")  # type: ignore[union-attr]


def test_a_huge_thread_across_many_days_and_batches(store: SQLiteStore, tmp_path: Path) -> None:
    folder = copy_fixture("slack", tmp_path / "src")
    start = 1793610000
    parent = f"{start + 50000}.000000"
    for day in range(12):
        replies = [
            {
                "type": "message",
                "user": ("U01ALICE", "U02BOB", "U03CAROL")[n % 3],
                "text": f"shard {n % 13} replica lag {day * 100 + n} ms",
                "ts": f"{start + 86400 * day + 60000 + n}.{n:06d}",
                "thread_ts": parent,
            }
            for n in range(125)
        ]
        if day == 0:
            replies.insert(
                0, {"type": "message", "user": "U03CAROL", "text": "incident 4711: replica lag", "ts": parent}
            )
        edit_json(folder / "ops" / f"2026-12-{day + 1:02d}.json", replies)
    report = import_path(store, folder, progress=False, batch_size=200)
    first = by_text(store, "incident 4711")
    replies, total = store.thread_messages(first.id, limit=5, offset=1495)
    assert total == 1500 and [r.text for r in replies] == [
        f"shard {n % 13} replica lag {1100 + n} ms" for n in range(120, 125)
    ]
    assert report.skipped_count == 5


@pytest.mark.parametrize(
    ("wish", "stored"),
    [
        pytest.param("ops\u200bteam", "opsteam", id="zero-width-space-dropped"),
        pytest.param("ops\u202eteam", "opsteam", id="bidi-override-dropped"),
        pytest.param("ops\u00a0team", "ops team", id="no-break-space-made-plain"),
        pytest.param("ops\nteam", "ops team", id="line-break-made-plain"),
        pytest.param("#ops", "ops", id="leading-hash"),
        pytest.param('the "core" team', "the 'core' team", id="double-quote"),
        pytest.param("ｏｐｓ-ｈｅｌｐ", "ops-help", id="fullwidth-to-nfkc"),
        pytest.param("\u200b\u200d", "C9FALLBACK", id="nothing-visible-takes-the-id"),
    ],
)
def test_a_channel_name_becomes_a_room_name_people_can_see(wish: str, stored: str) -> None:
    assert room_name(wish, "C9FALLBACK") == stored


def test_look_alike_channels_come_in_under_names_of_their_own(store: SQLiteStore, tmp_path: Path) -> None:
    folder = copy_fixture("slack", tmp_path / "src")
    channels = read_json(folder / "channels.json")
    twins = [("C07LATIN", "incidents"), ("C08CYRIL", "іncidents"), ("C09SPACE", "ops\u200b")]
    for key, name in twins:
        channels.append({"id": key, "name": name, "members": ["U01ALICE", "U02BOB"]})
        (folder / name).mkdir()
        edit_json(
            folder / name / "2026-11-05.json",
            [{"type": "message", "user": "U01ALICE", "text": f"note in {key}", "ts": "1793869200.000100"}],
        )
    edit_json(folder / "channels.json", channels)
    report = import_path(store, folder, progress=False, source_url=BASE)
    rooms = {by_text(store, f"note in {key}").room_id: key for key, _name in twins}
    assert len(rooms) == 3, "each conversation is a room of its own, none skipped"
    cyrillic = store.get_room(next(r for r, key in rooms.items() if key == "C08CYRIL"))
    assert cyrillic is not None and cyrillic.name.startswith("іncidents-") and cyrillic.fname == "іncidents"
    spaced = store.get_room(next(r for r, key in rooms.items() if key == "C09SPACE"))
    assert spaced is not None and spaced.name.startswith("ops-") and "\u200b" not in spaced.name
    assert sum("looks like" in note for note in report.notes) == 1, report.notes
    before = content_hash(tmp_path / "data")
    assert import_path(store, folder, progress=False, source_url=BASE).imported == 0
    assert content_hash(tmp_path / "data") == before
