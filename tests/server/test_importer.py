"""The JSONL importer: counts, idempotent re-import, bad lines by number, members, users and rooms."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ai_search_server import importer
from ai_search_server.importer import ImportReport, derive_message_id, import_jsonl, import_rows
from ai_search_server.store import MessageEvent
from ai_search_server.store.base import Store
from ai_search_server.store.rules import MAX_MESSAGE_TEXT_LENGTH, to_ms

from ._exports import content_hash


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def store(open_workspace: Callable[[Path], Store], data_dir: Path) -> Iterator[Store]:
    opened = open_workspace(data_dir)
    yield opened
    opened.close()


def line(**fields: Any) -> dict[str, Any]:
    base = {"room": "ops", "room_type": "c", "user": "alice", "ts": "2026-11-02T09:15:00Z", "text": "deploy"}
    return {**base, **fields}


def write_jsonl(path: Path, lines: Sequence[dict[str, Any] | str | bytes]) -> Path:
    with path.open("wb") as out:
        for item in lines:
            if isinstance(item, dict):
                out.write(json.dumps(item).encode() + b"\n")
            elif isinstance(item, str):
                out.write(item.encode() + b"\n")
            else:
                out.write(item + b"\n")
    return path


HISTORY = [
    line(room="#ops", user="@alice", ts="2026-11-02T09:15:00Z", text="deploy failed", name="Alice Okafor"),
    line(room="ops", user="bob", ts="2026-11-02T09:16:00+01:00", text="rolling back", members=["carol"]),
    line(
        room="secret", room_type="p", user="bob", ts="2026-11-02T10:00:00", text="acquisition", id="m-secret"
    ),
    line(room="alice__bob", room_type="d", user="alice", ts="2026-11-02T11:00:00.250Z", text="lunch?"),
    line(room="alice__bob", room_type="d", user="Bob", ts="2026-11-02T11:01:00Z", text="sure"),
]


def test_a_history_imports_with_the_right_counts_and_contents(store: Store, tmp_path: Path) -> None:
    report = import_jsonl(store, write_jsonl(tmp_path / "h.jsonl", HISTORY), progress=False)
    assert (report.lines_read, report.imported, report.unchanged, report.skipped) == (5, 5, 0, [])
    assert (report.users_created, report.rooms_created) == (3, 3)
    ops, secret, direct = (store.get_room_by_name(n) for n in ("ops", "secret", "alice__bob"))
    assert ops is not None and secret is not None and direct is not None
    assert (ops.type, secret.type, direct.type) == ("c", "p", "d")
    alice = store.get_user_by_username("alice")
    assert alice is not None and alice.name == "Alice Okafor" and ops.creator_id == alice.id
    by_text = {m.text: m for batch in store.iter_messages() for m in batch}
    assert by_text["rolling back"].ts == datetime(2026, 11, 2, 8, 16, tzinfo=UTC)  # offset converted
    assert by_text["acquisition"].ts == datetime(2026, 11, 2, 10, 0, tzinfo=UTC)  # naive means UTC
    assert by_text["lunch?"].ts == datetime(2026, 11, 2, 11, 0, 0, 250000, tzinfo=UTC)
    assert by_text["acquisition"].id == "m-secret"
    assert by_text["sure"].username == "bob"  # "Bob" reuses the user bob
    deploy_ms = to_ms(datetime(2026, 11, 2, 9, 15, tzinfo=UTC))
    assert by_text["deploy failed"].id == derive_message_id("c", "ops", "alice", deploy_ms, "deploy failed")


def test_authors_and_members_are_subscribed(store: Store, tmp_path: Path) -> None:
    import_jsonl(store, write_jsonl(tmp_path / "h.jsonl", HISTORY), progress=False)
    ids = {n: store.get_user_by_username(n).id for n in ("alice", "bob", "carol")}  # type: ignore[union-attr]
    rooms = {n: store.get_room_by_name(n).id for n in ("ops", "secret", "alice__bob")}  # type: ignore[union-attr]
    assert store.readable_room_ids(ids["alice"]) == {rooms["ops"], rooms["alice__bob"]}
    assert store.readable_room_ids(ids["bob"]) == {rooms["ops"], rooms["secret"], rooms["alice__bob"]}
    assert store.readable_room_ids(ids["carol"]) == {rooms["ops"]}  # a member who never posted


def test_unknown_users_are_created_without_password_and_existing_ones_reused(
    store: Store, tmp_path: Path
) -> None:
    bob = store.create_user("bob", name="Bob Lindqvist", password="pw-bob", roles=("admin",))
    lines = [line(user="bob", name="Someone Else"), line(user="dave", name=" Dave B ", text="hi")]
    report = import_jsonl(store, write_jsonl(tmp_path / "h.jsonl", lines), progress=False)
    assert report.users_created == 1
    assert store.get_user(bob.id) == bob  # name, password and roles untouched
    dave = store.get_user_by_username("dave")
    assert dave is not None and not dave.has_password and dave.roles == ("user",) and dave.name == "Dave B"
    assert store.verify_password("dave", "anything") is None


def test_reimporting_the_same_file_changes_nothing(
    store: Store, data_dir: Path, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "h.jsonl", [*HISTORY, "not json"])
    first = import_jsonl(store, path, progress=False)
    before = content_hash(data_dir)
    again = import_jsonl(store, path, progress=False)
    assert (again.imported, again.unchanged, again.users_created, again.rooms_created) == (0, 5, 0, 0)
    assert again.skipped == first.skipped == [(6, "invalid JSON: Expecting value at column 1")]
    assert content_hash(data_dir) == before
    assert store.count_messages() == 5


def test_reimporting_does_not_undo_what_admins_did_since(store: Store, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "h.jsonl", HISTORY)
    import_jsonl(store, path, progress=False)
    carol, ops = store.get_user_by_username("carol"), store.get_room_by_name("ops")
    assert carol is not None and ops is not None
    store.unsubscribe(carol.id, ops.id)
    import_jsonl(store, path, progress=False)
    assert store.get_subscription(carol.id, ops.id) is None


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param(line(user="alice"), line(user="ALICE"), id="username-case"),
        pytest.param(line(user="alice"), line(user="@alice"), id="leading-at"),
        pytest.param(line(room="ops"), line(room="#OPS"), id="room-case-and-hash"),
        pytest.param(
            line(ts="2026-11-02T09:15:00Z"), line(ts="2026-11-02T10:15:00+01:00"), id="same-instant"
        ),
        pytest.param(line(ts="2026-11-02T09:15:00Z"), line(ts="2026-11-02T09:15:00"), id="naive-is-utc"),
        pytest.param(
            line(ts="2026-11-02T09:15:00.0001Z"), line(ts="2026-11-02T09:15:00Z"), id="sub-ms-dropped"
        ),
    ],
)
def test_the_same_message_spelled_differently_gets_the_same_id(
    store: Store, a: dict[str, Any], b: dict[str, Any]
) -> None:
    report = import_rows(store, [a, b])
    assert (report.imported, report.unchanged) == (1, 1)


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param(line(room_type="p", room="ops2"), id="room-type"),
        pytest.param(line(room="infra"), id="room"),
        pytest.param(line(user="bob"), id="user"),
        pytest.param(line(ts="2026-11-02T09:15:00.001Z"), id="time-by-one-ms"),
        pytest.param(line(text="Deploy"), id="text-case"),
        pytest.param(line(text="deploy "), id="text-whitespace"),
    ],
)
def test_any_real_difference_gives_another_message(store: Store, changed: dict[str, Any]) -> None:
    report = import_rows(store, [line(), changed])
    assert (report.imported, report.unchanged) == (2, 0)


def test_a_derived_id_is_a_17_character_base62_string() -> None:
    message_id = derive_message_id("c", "ops", "alice", 0, "x")
    assert len(message_id) == 17 and message_id.isalnum() and message_id.isascii()
    assert derive_message_id("c", "ops", "alice", 0, "x") == message_id


TOO_LONG = "x" * (MAX_MESSAGE_TEXT_LENGTH + 1)


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        pytest.param("{not json", "invalid JSON", id="invalid-json"),
        pytest.param("[1, 2]", "a line must hold one JSON object, not list", id="json-array"),
        pytest.param("", "empty line", id="empty-line"),
        pytest.param(b"\xff\xfe{}", "not valid UTF-8", id="invalid-utf8"),
        pytest.param({k: v for k, v in line().items() if k != "room"}, "missing field 'room'", id="no-room"),
        pytest.param({k: v for k, v in line().items() if k != "ts"}, "missing field 'ts'", id="no-ts"),
        pytest.param({k: v for k, v in line().items() if k != "text"}, "missing field 'text'", id="no-text"),
        pytest.param(line(user=""), "field 'user' is empty", id="empty-user"),
        pytest.param(line(text="   "), "field 'text' is empty", id="blank-text"),
        pytest.param(line(text=42), "field 'text' must be a string, not int", id="number-text"),
        pytest.param(line(room_type="x"), "room type must be one of c, p, d", id="bad-room-type"),
        pytest.param(line(ts="yesterday"), "not an ISO 8601 time: 'yesterday'", id="bad-ts"),
        pytest.param(line(ts="2026-02-30T00:00:00Z"), "not an ISO 8601 time", id="impossible-date"),
        pytest.param(
            line(ts="0001-01-01T00:00:00+01:00"), "field 'ts' is out of range", id="ts-before-year-1-utc"
        ),
        pytest.param(
            line(text=TOO_LONG), f"at most {MAX_MESSAGE_TEXT_LENGTH} characters", id="text-too-long"
        ),
        pytest.param(line(user="a b"), "may hold only letters", id="bad-username"),
        pytest.param(line(members="bob"), "'members' must be a list", id="members-not-a-list"),
        pytest.param(line(members=["ok", "b c"]), "may hold only letters", id="bad-member"),
        pytest.param(line(id=7), "field 'id' must be a string", id="numeric-id"),
        pytest.param(line(id="has space"), "a message id is", id="malformed-id"),
        pytest.param(
            line(room="ops", room_type="p"), "exists as a public channel (c), not p", id="room-type-clash"
        ),
        pytest.param(line(tmid=5), "field 'tmid' must be a string", id="numeric-tmid"),
        pytest.param(line(tmid="nope"), "thread's first message 'nope' is not in room", id="unknown-tmid"),
        pytest.param(line(attachments="a.png"), "'attachments' must be a list", id="attachments-not-a-list"),
        pytest.param(
            line(attachments=[{"title": "x"}]), "an attachment needs a name", id="attachment-no-name"
        ),
        pytest.param(line(attachments=[{"name": "a", "size": "big"}]), "size must be a whole", id="bad-size"),
        pytest.param(line(reactions=[":+1:"]), "'reactions' must map an emoji", id="reactions-not-a-map"),
        pytest.param(line(reactions={"bad emoji": ["bob"]}), "an emoji is a name", id="bad-emoji"),
        pytest.param(line(edited_at="soon"), "field 'edited_at' is not an ISO 8601 time", id="bad-edited-at"),
        pytest.param(line(pinned="yes"), "'pinned' must be true or false", id="pinned-not-a-bool"),
    ],
)
def test_a_bad_line_is_reported_by_number_and_its_neighbours_kept(
    store: Store, tmp_path: Path, bad: dict[str, Any] | str | bytes, reason: str
) -> None:
    lines = [line(text="before"), bad, line(text="after")]
    report = import_jsonl(store, write_jsonl(tmp_path / "h.jsonl", lines), progress=False)
    assert (report.lines_read, report.imported, report.skipped_count) == (3, 2, 1)
    [(line_no, why)] = report.skipped
    assert line_no == 2 and reason in why
    texts = sorted(m.text for batch in store.iter_messages() for m in batch)
    assert texts == ["after", "before"]


def test_an_over_long_line_is_skipped_without_losing_the_next(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importer, "MAX_IMPORT_LINE_BYTES", 200)
    lines = [line(text="short"), line(text="y" * 500), line(text="z" * 50), line(text="last")]
    report = import_jsonl(store, write_jsonl(tmp_path / "h.jsonl", lines), progress=False)
    assert report.skipped == [(2, "line longer than 200 bytes")]
    assert (report.lines_read, report.imported) == (4, 3)


def test_a_byte_order_mark_and_a_missing_final_newline_are_fine(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(
        b"\xef\xbb\xbf" + json.dumps(line()).encode() + b"\n" + json.dumps(line(text="end")).encode()
    )
    report = import_jsonl(store, path, progress=False)
    assert (report.lines_read, report.imported, report.skipped) == (2, 2, [])


def test_a_channel_and_a_direct_room_never_share_a_name(store: Store) -> None:
    report = import_rows(
        store,
        [
            line(room="alice__bob", room_type="d", text="dm"),
            line(room="alice__bob", room_type="c", text="channel"),
            line(room="aIice__bob", room_type="p", text="a look-alike group"),
        ],
    )
    assert (report.imported, report.rooms_created) == (1, 1)
    assert [n for n, _reason in report.skipped] == [2, 3]
    assert "already exists" in report.skipped[0][1] and "looks like" in report.skipped[1][1]


def test_listeners_hear_imported_messages_in_batches(store: Store) -> None:
    calls: list[list[str]] = []

    def listener(events: Sequence[MessageEvent]) -> None:
        assert {e.kind for e in events} == {"posted"}
        calls.append([e.message.text for e in events])

    store.add_message_listener(listener)
    import_rows(store, [line(text=f"m{n}") for n in range(5)], batch_size=2)
    assert calls == [["m0", "m1"], ["m2", "m3"], ["m4"]]
    import_rows(store, [line(text=f"m{n}") for n in range(5)], batch_size=2)
    assert len(calls) == 3  # nothing new, nothing heard


def test_rows_are_numbered_like_lines_across_batches(store: Store) -> None:
    rows = [line(text=f"m{n}") for n in range(5)]
    rows[3] = line(room_type="z")
    report = import_rows(store, rows, batch_size=2)
    assert [n for n, _ in report.skipped] == [4]
    assert report.imported == 4


def test_the_summary_names_counts_and_bad_lines() -> None:
    report = ImportReport(
        "h.jsonl", lines_read=30, imported=3, skipped_count=27, users_created=2, rooms_created=1
    )
    for n in range(27):
        report.skipped.append((n + 4, "empty line"))
    text = report.summary()
    assert text.startswith("h.jsonl: 30 lines read, 3 messages imported, 0 unchanged, 27 skipped; 2 users")
    assert "  line 4: empty line" in text and "... and 7 more bad lines" in text


def test_the_progress_bar_goes_to_stderr(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = import_jsonl(store, write_jsonl(tmp_path / "history.jsonl", HISTORY), progress=True)
    captured = capsys.readouterr()
    assert report.imported == 5
    assert "history.jsonl" in captured.err and captured.out == ""


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=5,
)
_iso_times = st.builds(
    lambda moment, hours: moment.replace(tzinfo=timezone(timedelta(hours=hours))).isoformat(),
    st.datetimes(),
    st.integers(-23, 23),
)
_fields = st.fixed_dictionaries(
    {},
    optional={
        "room": st.sampled_from(["ops", "#ops", "", "a b", "x" * 120]) | st.text(max_size=8) | _json_values,
        "room_type": st.sampled_from(["c", "p", "d", "x"]) | _json_values,
        "user": st.sampled_from(["alice", "@bob", "", "a,b"]) | st.text(max_size=8) | _json_values,
        "ts": st.sampled_from(["2026-11-02T09:15:00Z", "2026-11-02", "nope", ""]) | _iso_times | _json_values,
        "text": st.text(max_size=30) | _json_values,
        "id": st.sampled_from(["m1", "", "bad id"]) | _json_values,
        "members": st.lists(st.sampled_from(["bob", "@carol", "", "x y"]), max_size=3) | _json_values,
        "name": st.text(max_size=10) | _json_values,
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(_fields | _json_values, max_size=6))
def test_any_records_are_imported_or_reported_never_crash(store: Store, records: list[Any]) -> None:
    report = import_rows(store, records, batch_size=4)
    assert report.lines_read == len(records)
    assert report.imported + report.unchanged + report.skipped_count == len(records)
    assert all(reason for _, reason in report.skipped)


def test_threads_files_reactions_edits_and_pins_import_from_jsonl(store: Store, tmp_path: Path) -> None:
    lines = [
        line(id="p1", text="deploy of 2.14 failed", members=["bob"]),
        line(
            id="r1",
            user="bob",
            ts="2026-11-02T09:16:00Z",
            text="here is the pool config",
            tmid="p1",
            attachments=[{"name": "pgbouncer.ini", "title": "pool", "type": "text/plain", "size": 812}],
            reactions={":+1:": ["alice"], "eyes": ["@carol"]},
            edited_at="2026-11-02T09:20:00+01:00",
            pinned=True,
        ),
        line(id="r2", user="alice", ts="2026-11-02T09:17:00Z", text="reply to the reply", tmid="r1"),
    ]
    report = import_jsonl(store, write_jsonl(tmp_path / "h.jsonl", lines), progress=False)
    assert (report.imported, report.skipped_count) == (3, 0)
    got = store.get_messages(["p1", "r1", "r2"])
    assert (got["r1"].tmid, got["r2"].tmid) == ("p1", "p1")  # a reply to a reply joins the thread
    assert [a.name for a in got["r1"].attachments] == ["pgbouncer.ini"]
    assert {r.emoji: r.usernames for r in got["r1"].reactions} == {":+1:": ("alice",), ":eyes:": ("carol",)}
    assert got["r1"].edited_at == datetime(2026, 11, 2, 8, 20, tzinfo=UTC)
    assert got["r1"].pinned_at is not None and got["p1"].pinned_at is None
    assert store.thread_summaries(["p1"])["p1"].count == 2
    again = import_jsonl(store, write_jsonl(tmp_path / "h.jsonl", lines), progress=False)
    assert (again.imported, again.unchanged) == (0, 3)
