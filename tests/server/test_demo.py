"""The demo workspace (``ai-search serve --demo``) and the judged queries built on it.

The data must be big, varied, true to its memberships and reproducible; the judgments in
bench/relevance_judgments.json must point at messages that exist and that the searching user may read,
and must still be the messages that were judged.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ai_search_server.demo import (
    DEFAULT_DEMO_NOW,
    DEMO_ROOMS,
    DEMO_SPAN_DAYS,
    DEMO_USERS,
    direct_room_name,
    generate_demo_messages,
    rooms_of,
)
from ai_search_server.demo import __main__ as demo_main
from ai_search_server.demo._script import apply_gap, render
from ai_search_server.importer import import_rows
from ai_search_server.store.base import Store

from ._judgments import filter_breaches, judged_text_digest

JUDGMENTS_PATH = Path(__file__).resolve().parents[2] / "bench" / "relevance_judgments.json"
OTHER_NOW = datetime(2027, 3, 10, 9, 30, tzinfo=UTC)

Row = dict[str, Any]


def _ts(row: Row) -> datetime:
    return datetime.fromisoformat(str(row["ts"]).replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return generate_demo_messages()


@pytest.fixture(scope="module")
def judgments() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(JUDGMENTS_PATH.read_text(encoding="utf-8"))
    return loaded


# -- size and shape ---------------------------------------------------------------------------------


def test_the_workspace_is_big_enough_to_search(rows: list[Row]) -> None:
    rooms = {row["room"]: row["room_type"] for row in rows}
    assert len(rows) >= 2000
    assert len(rooms) >= 8
    assert {"c", "p", "d"} <= set(rooms.values())
    assert len(DEMO_USERS) >= 6
    assert len({row["user"] for row in rows}) == len(DEMO_USERS), "every demo user says something"


def test_history_spans_at_least_ninety_days_and_ends_at_now(rows: list[Row]) -> None:
    first, last = _ts(rows[0]), _ts(rows[-1])
    assert DEFAULT_DEMO_NOW - first >= timedelta(days=90)
    assert DEFAULT_DEMO_NOW - first <= timedelta(days=DEMO_SPAN_DAYS + 1)
    assert last <= DEFAULT_DEMO_NOW
    assert DEFAULT_DEMO_NOW - last < timedelta(days=2), "the history runs up to now"


def test_rows_are_oldest_first_with_utc_timestamps(rows: list[Row]) -> None:
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(row["ts"])) for row in rows)
    assert [_ts(row) for row in rows] == sorted(_ts(row) for row in rows)


def test_ids_are_unique_and_safe_for_the_store(rows: list[Row]) -> None:
    ids = [str(row["id"]) for row in rows]
    assert len(set(ids)) == len(ids)
    assert all(
        re.fullmatch(r"demo-[a-z0-9_-]+-\d{2,4}", message_id) and len(message_id) <= 64 for message_id in ids
    )


def test_texts_are_at_least_ninety_percent_unique(rows: list[Row]) -> None:
    texts = [str(row["text"]) for row in rows]
    assert len(set(texts)) / len(texts) >= 0.9
    assert all(text.strip() and "{" not in text.replace("{id}", "") for text in texts), (
        "no unfilled placeholder"
    )


def test_no_room_dominates_and_every_room_has_a_conversation(rows: list[Row]) -> None:
    per_room = Counter(str(row["room"]) for row in rows)
    assert set(per_room) == {room.name for room in DEMO_ROOMS}
    assert max(per_room.values()) < 0.35 * len(rows)
    assert min(per_room.values()) >= 10


def test_people_chat_mostly_on_weekdays_in_working_hours(rows: list[Row]) -> None:
    moments = [_ts(row) for row in rows]
    weekdays = sum(moment.weekday() < 5 for moment in moments)
    working = sum(7 <= moment.hour < 19 for moment in moments)
    assert weekdays / len(moments) >= 0.9
    assert working / len(moments) >= 0.9


# -- determinism ------------------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_rows(rows: list[Row]) -> None:
    assert generate_demo_messages(2026) == rows


def test_another_seed_changes_the_background_but_not_the_scripted_facts(rows: list[Row]) -> None:
    other = generate_demo_messages(7)
    assert other != rows
    assert len(other) >= 2000

    def scripted(source: list[Row]) -> dict[str, str]:
        return {str(row["id"]): str(row["text"]) for row in source if re.search(r"-\d{2}$", str(row["id"]))}

    assert scripted(other) == scripted(rows)


def test_now_moves_the_whole_history() -> None:
    moved = generate_demo_messages(now=OTHER_NOW)
    assert len(moved) >= 2000
    assert _ts(moved[-1]) <= OTHER_NOW
    assert OTHER_NOW - _ts(moved[0]) >= timedelta(days=90)


def test_a_naive_now_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        generate_demo_messages(now=datetime(2026, 11, 30, 12, 0))


def test_the_module_writes_the_rows_as_json_lines(
    rows: list[Row], capsys: pytest.CaptureFixture[str]
) -> None:
    assert demo_main.main([]) == 0
    written = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert written == rows


# -- the script's small language --------------------------------------------------------------------

START = datetime(2026, 9, 17, 2, 14, tzinfo=UTC)


@pytest.mark.parametrize(
    ("gap", "expected"),
    [
        pytest.param("+12m", datetime(2026, 9, 17, 2, 26, tzinfo=UTC), id="minutes-add-up"),
        pytest.param("+3h", datetime(2026, 9, 17, 5, 14, tzinfo=UTC), id="hours-add-up"),
        pytest.param("@07:40", datetime(2026, 9, 17, 7, 40, tzinfo=UTC), id="a-clock-time-stays-on-the-day"),
        pytest.param("+1d@09:30", datetime(2026, 9, 18, 9, 30, tzinfo=UTC), id="next-day-at-a-time"),
    ],
)
def test_gaps_move_the_clock(gap: str, expected: datetime) -> None:
    assert apply_gap(START, gap) == expected


@pytest.mark.parametrize(
    "gap", [pytest.param(g, id=f"{g or 'empty'}-is-refused") for g in ("", "12m", "+2w", "@9:30")]
)
def test_a_malformed_gap_is_refused(gap: str) -> None:
    with pytest.raises(ValueError, match="bad gap"):
        apply_gap(START, gap)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "postmortem for the {d-4} failover", "postmortem for the Sep 13 failover", id="dates-count-back"
        ),
        pytest.param(
            "{dow+5} {d+5}, 10:00 UTC", "Tuesday Sep 22, 10:00 UTC", id="weekday-and-date-move-together"
        ),
        pytest.param("thanks {B}", "thanks Carol", id="roles-become-first-names"),
        pytest.param("GET /v2/invoices/{id}", "GET /v2/invoices/{id}", id="unknown-words-stay-as-written"),
    ],
)
def test_placeholders_fill_dates_and_names(text: str, expected: str) -> None:
    assert render(text, day=START.date(), names={"B": "Carol"}) == expected


# -- people and rooms -------------------------------------------------------------------------------


def test_users_have_stated_passwords_and_one_admin() -> None:
    assert [user.role for user in DEMO_USERS].count("admin") == 1
    assert all(user.password == f"demo-{user.username}" for user in DEMO_USERS)
    assert len({user.username for user in DEMO_USERS}) == len(DEMO_USERS)


def test_every_author_is_a_member_of_the_room(rows: list[Row]) -> None:
    members = {room.name: set(room.members) for room in DEMO_ROOMS}
    strangers = [row["id"] for row in rows if row["user"] not in members[str(row["room"])]]
    assert strangers == []


def test_the_first_row_of_each_room_names_its_members_and_type(rows: list[Row]) -> None:
    first: dict[str, Row] = {}
    for row in rows:
        first.setdefault(str(row["room"]), row)
    for room in DEMO_ROOMS:
        assert first[room.name]["members"] == sorted(room.members)
        assert {row["room_type"] for row in rows if row["room"] == room.name} == {room.type}


def test_direct_rooms_are_named_after_their_two_members() -> None:
    for room in (room for room in DEMO_ROOMS if room.type == "d"):
        assert len(room.members) == 2
        assert room.name == direct_room_name(*room.members) == "__".join(sorted(room.members))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param(a.username, b.username, id=f"{a.username}-and-{b.username}-read-different-rooms")
        for a, b in itertools.combinations(DEMO_USERS, 2)
    ],
)
def test_memberships_differ_between_users(first: str, second: str) -> None:
    assert rooms_of(first) != rooms_of(second)


@pytest.mark.parametrize(
    ("room", "members"),
    [
        pytest.param("leadership", {"alice", "erin", "frank"}, id="leadership-is-private-to-three-leads"),
        pytest.param("hiring-committee", {"alice", "bob", "dave"}, id="hiring-committee-is-private-to-three"),
        pytest.param("security-review", {"alice", "erin"}, id="security-review-is-private-to-two"),
    ],
)
def test_private_rooms_hold_only_their_few_members(room: str, members: set[str]) -> None:
    (found,) = (candidate for candidate in DEMO_ROOMS if candidate.name == room)
    assert found.type == "p"
    assert set(found.members) == members


def test_nobody_posts_before_joining(rows: list[Row]) -> None:
    joined = {user.username: DEFAULT_DEMO_NOW - timedelta(days=user.joined_days_ago) for user in DEMO_USERS}
    early = [row["id"] for row in rows if _ts(row).date() < joined[str(row["user"])].date()]
    assert early == []


# -- the judged queries -----------------------------------------------------------------------------


def test_judgments_were_made_on_the_default_dataset(judgments: dict[str, Any]) -> None:
    dataset = judgments["dataset"]
    assert dataset["seed"] == 2026
    assert datetime.fromisoformat(dataset["now"].replace("Z", "+00:00")) == DEFAULT_DEMO_NOW


def test_there_are_enough_queries_of_every_kind(judgments: dict[str, Any]) -> None:
    queries = judgments["queries"]
    assert len(queries) >= 30
    assert len({query["id"] for query in queries}) == len(queries)
    kinds = Counter(query["kind"] for query in queries)
    assert set(kinds) == set(judgments["kinds"])
    assert kinds["semantic"] >= 5 and kinds["identifier"] >= 5 and kinds["filtered"] >= 3
    assert kinds["no-answer"] >= 10


def test_every_judged_message_exists_and_its_searcher_can_read_it(
    rows: list[Row], judgments: dict[str, Any]
) -> None:
    room_of = {str(row["id"]): str(row["room"]) for row in rows}
    problems = []
    for query in judgments["queries"]:
        no_answer = query["kind"] == "no-answer"
        assert bool(query["relevant"]) != no_answer, f"{query['id']}: only no-answer queries judge nothing"
        readable = rooms_of(query["user"])
        for message_id, gain in query["relevant"].items():
            if gain not in (1, 2):
                problems.append(f"{query['id']}: {message_id} has gain {gain}")
            elif message_id not in room_of:
                problems.append(f"{query['id']}: {message_id} does not exist")
            elif room_of[message_id] not in readable:
                problems.append(f"{query['id']}: {query['user']} cannot read #{room_of[message_id]}")
    assert problems == []


def test_judged_messages_still_say_what_was_judged(rows: list[Row], judgments: dict[str, Any]) -> None:
    """Editing a judged message's text changes this digest: re-judge the queries, then update it."""
    assert judged_text_digest(judgments["queries"], rows) == judgments["judged_text_sha256"]


def test_filtered_queries_judge_only_messages_their_filters_keep(
    rows: list[Row], judgments: dict[str, Any]
) -> None:
    assert any(query["kind"] == "filtered" for query in judgments["queries"])
    assert filter_breaches(judgments["queries"], rows) == []


def test_scoping_queries_repeat_another_users_query_with_fewer_rooms(judgments: dict[str, Any]) -> None:
    queries = judgments["queries"]
    for scoped in (query for query in queries if query["kind"] == "scoping"):
        twins = [q for q in queries if q["query"] == scoped["query"] and q["user"] != scoped["user"]]
        assert twins, f"{scoped['id']} has no twin query by another user"
        assert any(
            set(scoped["relevant"]) < set(twin["relevant"])
            or set(scoped["relevant"]) != set(twin["relevant"])
            for twin in twins
        )


# -- loading into the store -------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path, open_workspace: Callable[[Path], Store]) -> Iterator[Store]:
    opened = open_workspace(tmp_path / "data")
    yield opened
    opened.close()


def test_the_demo_imports_cleanly_and_subscriptions_follow_memberships(
    store: Store, rows: list[Row]
) -> None:
    # As the CLI does: people first, so the import reuses them (no password here: hashing is slow).
    for user in DEMO_USERS:
        store.create_user(user.username, name=user.name, roles=(user.role,))
    report = import_rows(store, rows)
    assert (report.imported, report.unchanged, report.users_created) == (len(rows), 0, 0)
    assert store.count_messages() == len(rows)
    for user in DEMO_USERS:
        stored = store.get_user_by_username(user.username)
        assert stored is not None and stored.name == user.name
        readable = {room.name for room in store.get_rooms(store.readable_room_ids(stored.id)).values()}
        assert readable == rooms_of(user.username)
    again = import_rows(store, rows)
    assert (again.imported, again.unchanged) == (0, len(rows))


def test_the_demo_has_threads_files_edits_reactions_and_pins(rows: list[Row], tmp_path: Path, open_workspace: Callable[[Path], Store]) -> None:
    with open_workspace(tmp_path / "data") as store:  # type: ignore[attr-defined]
        for user in DEMO_USERS:
            store.create_user(user.username, name=user.name, password=user.password)
        report = import_rows(store, rows)
        assert report.skipped_count == 0
        by_id = store.get_messages(row["id"] for row in rows)
    replies = [m for m in by_id.values() if m.tmid]
    threads = {m.tmid for m in replies}
    assert len(replies) >= 150 and len(threads) >= 25
    # Every reply sits in the room of its thread's first message, which is no reply itself.
    assert all(by_id[m.tmid].room_id == m.room_id and by_id[m.tmid].tmid is None for m in replies if m.tmid)
    assert sum(bool(m.attachments) for m in by_id.values()) >= 10
    assert sum(m.edited_at is not None for m in by_id.values()) >= 5
    assert sum(bool(m.reactions) for m in by_id.values()) >= 5
    assert sum(m.pinned_at is not None for m in by_id.values()) >= 5
    rooms_of_people = {u.username: set(rooms_of(u.username)) for u in DEMO_USERS}
    for message in by_id.values():  # people react only where they read
        room_name = next(r["room"] for r in rows if r["id"] == message.id)
        for reaction in message.reactions:
            assert all(room_name in rooms_of_people[u] for u in reaction.usernames), (message.id, reaction)
