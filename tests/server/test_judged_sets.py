"""What every judged workspace must hold (bench/halden/, bench/ferry/), checked once for each set.

The files are what their sources build; rows are oldest first, authors are members, replies name an
earlier thread start in their room; the judgments cite messages that exist and that the searching
user may read, keep their filters, paraphrases share no content word with their answers, scoping
queries repeat another user's words with fewer rooms, and the judged texts are the ones judged; the
workspace imports as it is. What is particular to a set (Chinese and Japanese in Halden, the private
group of Ferry, the sizes) stays in that set's own test module.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bench.halden.judgments import shared_content_words

from ai_search_server.importer import import_rows
from ai_search_server.store.base import Store

from ._judged_files import JUDGED_FILES, JudgedFiles
from ._judgments import Row, filter_breaches, judged_text_digest, row_time


@pytest.fixture(scope="module", params=sorted(JUDGED_FILES))
def judged(request: pytest.FixtureRequest) -> JudgedFiles:
    files: JudgedFiles = JUDGED_FILES[request.param]
    return files


@pytest.fixture(scope="module")
def rows(judged: JudgedFiles) -> list[Row]:
    return judged.rows()


@pytest.fixture(scope="module")
def judgments(judged: JudgedFiles) -> dict[str, Any]:
    return judged.judgments()


@pytest.fixture(scope="module")
def queries(judgments: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = judgments["queries"]
    return found


def test_the_workspace_file_is_what_the_conversations_and_background_build(
    judged: JudgedFiles, rows: list[Row]
) -> None:
    """Edit bench/<set>/conversations/*.txt or background.py, then run `python -m bench.<set>.build`."""
    assert judged.workspace_rows() == rows


def test_the_judgments_file_is_what_queries_txt_builds(
    judged: JudgedFiles, rows: list[Row], judgments: dict[str, Any]
) -> None:
    """Edit bench/<set>/queries.txt, then run `python -m bench.<set>.judgments`."""
    assert judged.build_judgments(list(rows)) == judgments


def test_rows_are_oldest_first_in_utc(rows: list[Row]) -> None:
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(row["ts"])) for row in rows)
    assert [row_time(row) for row in rows] == sorted(row_time(row) for row in rows)


def test_every_author_is_a_member_and_each_room_names_its_members_first(
    judged: JudgedFiles, rows: list[Row]
) -> None:
    members = {room.name: room for room in judged.rooms}
    assert [row["id"] for row in rows if row["user"] not in members[str(row["room"])].members] == []
    first: dict[str, Row] = {}
    for row in rows:
        first.setdefault(str(row["room"]), row)
    for room in judged.rooms:
        assert first[room.name]["members"] == sorted(room.members)


def test_replies_name_an_earlier_thread_start_in_their_room(judged: JudgedFiles, rows: list[Row]) -> None:
    by_id = {str(row["id"]): row for row in rows}
    replies = [row for row in rows if "tmid" in row]
    assert len(replies) >= 200
    for reply in replies:
        root = by_id[str(reply["tmid"])]
        assert "tmid" not in root, f"{reply['id']}: a thread starts at a message that is no reply"
        assert root["room"] == reply["room"]
        assert row_time(root) <= row_time(reply)
    assert len(Counter(str(row["tmid"]) for row in replies)) >= judged.min_threads


def test_answerable_queries_judge_something_and_no_answer_ones_nothing(queries: list[dict[str, Any]]) -> None:
    assert [q["id"] for q in queries if (q["kind"] == "no-answer") == bool(q["relevant"])] == []
    assert all(grade in (1, 2) for q in queries for grade in q["relevant"].values())


def test_every_judged_message_exists_and_its_searcher_can_read_it(
    judged: JudgedFiles, rows: list[Row], queries: list[dict[str, Any]]
) -> None:
    room_of = {str(row["id"]): str(row["room"]) for row in rows}
    problems = [
        f"{q['id']}: {m}"
        for q in queries
        for m in q["relevant"]
        if m not in room_of or room_of[m] not in judged.rooms_of(q["user"])
    ]
    assert problems == []


def test_paraphrases_share_no_content_word_with_their_answers(
    rows: list[Row], queries: list[dict[str, Any]]
) -> None:
    text_of = {str(row["id"]): str(row["text"]) for row in rows}
    shared = {}
    for query in (q for q in queries if q["kind"] == "paraphrase"):
        answers = [text_of[m] for m, grade in query["relevant"].items() if grade == 2]
        assert answers, f"{query['id']} has no answer graded 2"
        found = shared_content_words(query["query"], answers)
        if found:
            shared[query["id"]] = sorted(found)
    assert shared == {}


def test_filtered_queries_judge_only_messages_their_filters_keep(
    rows: list[Row], queries: list[dict[str, Any]]
) -> None:
    assert filter_breaches(queries, rows) == []


def test_scoping_queries_repeat_another_users_words_with_fewer_rooms(
    judged: JudgedFiles, queries: list[dict[str, Any]]
) -> None:
    for scoped in (q for q in queries if q["kind"] == "scoping"):
        twins = [q for q in queries if q["query"] == scoped["query"] and q["user"] != scoped["user"]]
        assert twins, f"{scoped['id']} has no twin"
        assert all(judged.rooms_of(scoped["user"]) != judged.rooms_of(twin["user"]) for twin in twins)
        assert any(set(scoped["relevant"]) < set(twin["relevant"]) for twin in twins), scoped["id"]


def test_judged_messages_still_say_what_was_judged(rows: list[Row], judgments: dict[str, Any]) -> None:
    """Editing a judged message's text changes this digest: re-judge the queries that cite it first."""
    assert judged_text_digest(judgments["queries"], rows) == judgments["judged_text_sha256"]


@pytest.fixture
def store(tmp_path: Path, open_workspace: Callable[[Path], Store]) -> Iterator[Store]:
    opened = open_workspace(tmp_path / "data")
    yield opened
    opened.close()


def test_the_workspace_imports_and_memberships_follow_the_rooms(
    judged: JudgedFiles, store: Store, rows: list[Row]
) -> None:
    # People first, as the relevance bench does: a `members` list creates users it has not met yet
    # without their display name.
    for person in judged.people:
        store.create_user(person.username, name=person.name)
    report = import_rows(store, rows)
    assert (report.imported, report.skipped_count, report.users_created) == (len(rows), 0, 0)
    for person in judged.people:
        user = store.get_user_by_username(person.username)
        assert user is not None and user.name == person.name
        readable = {room.name for room in store.get_rooms(store.readable_room_ids(user.id)).values()}
        assert readable == judged.rooms_of(person.username)
