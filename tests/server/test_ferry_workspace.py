"""The Ferry workspace and its judged queries (bench/ferry/): a support community, and judgments that stay true.

The same checks as Halden's (test_judged_workspace.py) on the third judged set: the files are what
their sources build, the workspace looks like a support community's chat (threads, rooms of every
type, distinct texts, a private group that scoping queries need), it imports as it is, and the
judgments cite messages that exist and that the searching user may read, keep their filters,
paraphrases share no content word with their answers, and the judged texts are the ones judged.
Sharing Halden's code must not change Halden: its test checks its files are still what they build.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bench.ferry.build import WORKSPACE_PATH, load_workspace, workspace_rows
from bench.ferry.judgments import JUDGMENTS_PATH, KINDS, build
from bench.ferry.workspace import PEOPLE, ROOMS, rooms_of
from bench.halden.judgments import shared_content_words

from ai_search_server.importer import import_rows
from ai_search_server.store.base import Store

from ._judgments import Row, filter_breaches, judged_text_digest, row_time

ANSWER_QUESTIONS = Path(WORKSPACE_PATH).parent / "answer_questions.json"


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return load_workspace(WORKSPACE_PATH)


@pytest.fixture(scope="module")
def judgments() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(JUDGMENTS_PATH.read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module")
def queries(judgments: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = judgments["queries"]
    return found


# -- the files are what their sources say ---------------------------------------------------------------


def test_the_workspace_file_is_what_the_conversations_and_background_build(rows: list[Row]) -> None:
    """Edit bench/ferry/conversations/*.txt or background.py, then run `python -m bench.ferry.build`."""
    assert workspace_rows() == rows


def test_the_judgments_file_is_what_queries_txt_builds(rows: list[Row], judgments: dict[str, Any]) -> None:
    """Edit bench/ferry/queries.txt, then run `python -m bench.ferry.judgments`."""
    assert build(list(rows)) == judgments


# -- the workspace looks like a support community's chat ---------------------------------------------------


def test_the_workspace_is_big_varied_and_distinct(rows: list[Row]) -> None:
    texts = [str(row["text"]) for row in rows]
    written = [row for row in rows if not str(row["id"]).startswith("bg-")]
    assert len(rows) >= 1000 and 300 <= len(written) <= 400
    assert len(set(texts)) == len(texts)
    assert len({row["user"] for row in rows}) == len(PEOPLE) >= 20
    assert {row["room_type"] for row in rows} == {"c", "p", "d"}
    assert len({row["room"] for row in rows}) == len(ROOMS) >= 10
    days = sorted({str(row["ts"])[:10] for row in rows})
    assert days[0] >= "2025-09-01" and days[-1] <= "2025-12-31"


def test_rows_are_oldest_first_in_utc(rows: list[Row]) -> None:
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(row["ts"])) for row in rows)
    assert [row_time(row) for row in rows] == sorted(row_time(row) for row in rows)


def test_every_author_is_a_member_and_each_room_names_its_members_first(rows: list[Row]) -> None:
    members = {room.name: room for room in ROOMS}
    assert [row["id"] for row in rows if row["user"] not in members[str(row["room"])].members] == []
    first: dict[str, Row] = {}
    for row in rows:
        first.setdefault(str(row["room"]), row)
    for room in ROOMS:
        assert first[room.name]["members"] == sorted(room.members)


def test_replies_name_an_earlier_thread_start_in_their_room(rows: list[Row]) -> None:
    by_id = {str(row["id"]): row for row in rows}
    replies = [row for row in rows if "tmid" in row]
    assert len(replies) >= 200
    for reply in replies:
        root = by_id[str(reply["tmid"])]
        assert "tmid" not in root, f"{reply['id']}: a thread starts at a message that is no reply"
        assert root["room"] == reply["room"]
        assert row_time(root) <= row_time(reply)
    assert len(Counter(str(row["tmid"]) for row in replies)) >= 45


def test_some_conversations_are_runs_in_a_room_without_a_thread(rows: list[Row]) -> None:
    written = [row for row in rows if not str(row["id"]).startswith("bg-")]
    threaded = {str(row["id"]).rsplit("-", 1)[0] for row in written if "tmid" in row}
    runs = Counter(str(row["id"]).rsplit("-", 1)[0] for row in written)
    assert sum(count >= 4 for block, count in runs.items() if block not in threaded) >= 5


def test_the_private_group_and_the_public_rooms_read_differently() -> None:
    """Scoping needs people who cannot read #maintainers, #dev or a DM, and people who can."""
    readers = {room.name: set(room.members) for room in ROOMS}
    everyone = {p.username for p in PEOPLE if p.username != "buildbot"}
    assert readers["help"] == everyone
    assert next(room.type for room in ROOMS if room.name == "maintainers") == "p"
    assert len(readers["maintainers"]) < len(readers["dev"]) < len(everyone)
    assert sum(room.type == "d" for room in ROOMS) == 3


# -- the judgments ----------------------------------------------------------------------------------------------


def test_there_are_enough_queries_of_every_kind(queries: list[dict[str, Any]]) -> None:
    kinds = Counter(query["kind"] for query in queries)
    assert len(queries) >= 100
    assert len({query["id"] for query in queries}) == len(queries)
    assert set(kinds) == set(KINDS)
    assert kinds["paraphrase"] >= 30 and kinds["no-answer"] >= 15
    assert min(kinds.values()) >= 4


def test_answerable_queries_judge_something_and_no_answer_ones_nothing(queries: list[dict[str, Any]]) -> None:
    assert [q["id"] for q in queries if (q["kind"] == "no-answer") == bool(q["relevant"])] == []
    assert all(grade in (1, 2) for q in queries for grade in q["relevant"].values())
    assert [q["id"] for q in queries if q["relevant"] and 2 not in q["relevant"].values()] == []


def test_every_judged_message_exists_and_its_searcher_can_read_it(
    rows: list[Row], queries: list[dict[str, Any]]
) -> None:
    room_of = {str(row["id"]): str(row["room"]) for row in rows}
    problems = [
        f"{q['id']}: {m}"
        for q in queries
        for m in q["relevant"]
        if m not in room_of or room_of[m] not in rooms_of(q["user"])
    ]
    assert problems == []


def test_background_is_never_judged(queries: list[dict[str, Any]]) -> None:
    """The background stays off the judged topics by construction, so no query cites it."""
    assert [f"{q['id']}: {m}" for q in queries for m in q["relevant"] if m.startswith("bg-")] == []


def test_paraphrases_share_no_content_word_with_their_answers(
    rows: list[Row], queries: list[dict[str, Any]]
) -> None:
    text_of = {str(row["id"]): str(row["text"]) for row in rows}
    shared = {}
    for query in (q for q in queries if q["kind"] == "paraphrase"):
        answers = [text_of[m] for m, grade in query["relevant"].items() if grade == 2]
        found = shared_content_words(query["query"], answers)
        if found:
            shared[query["id"]] = sorted(found)
    assert shared == {}


def test_filtered_queries_judge_only_messages_their_filters_keep(
    rows: list[Row], queries: list[dict[str, Any]]
) -> None:
    assert filter_breaches(queries, rows) == []


def test_scoping_queries_repeat_another_users_words_with_fewer_rooms(queries: list[dict[str, Any]]) -> None:
    for scoped in (q for q in queries if q["kind"] == "scoping"):
        twins = [q for q in queries if q["query"] == scoped["query"] and q["user"] != scoped["user"]]
        assert twins, f"{scoped['id']} has no twin"
        assert all(rooms_of(scoped["user"]) != rooms_of(twin["user"]) for twin in twins), scoped["id"]
        assert all(set(scoped["relevant"]) < set(twin["relevant"]) for twin in twins), scoped["id"]


def test_judged_messages_still_say_what_was_judged(rows: list[Row], judgments: dict[str, Any]) -> None:
    """Editing a judged message's text changes this digest: re-judge the queries that cite it first."""
    assert judged_text_digest(judgments["queries"], rows) == judgments["judged_text_sha256"]


def test_the_answer_questions_name_messages_their_askers_read(rows: list[Row]) -> None:
    """bench/ferry/answer_questions.json: every kind of question, answers that exist and are readable,
    and unanswerable questions that name none."""
    questions = json.loads(ANSWER_QUESTIONS.read_text(encoding="utf-8"))["questions"]
    room_of = {str(row["id"]): str(row["room"]) for row in rows}
    assert len({q["id"] for q in questions}) == len(questions) >= 25
    assert {q["form"] for q in questions} == {"who", "when", "why", "how/what", "yes/no"}
    for question in questions:
        assert bool(question["answers"]) == (question["kind"] == "answerable"), question["id"]
        for message_id in question["answers"]:
            assert room_of[message_id] in rooms_of(question["user"]), (question["id"], message_id)


# -- it imports as it is --------------------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path, open_workspace: Callable[[Path], Store]) -> Iterator[Store]:
    opened = open_workspace(tmp_path / "data")
    yield opened
    opened.close()


def test_the_workspace_imports_and_memberships_follow_the_rooms(store: Store, rows: list[Row]) -> None:
    for person in PEOPLE:
        store.create_user(person.username, name=person.name)
    report = import_rows(store, rows)
    assert (report.imported, report.skipped_count, report.users_created) == (len(rows), 0, 0)
    for person in PEOPLE:
        user = store.get_user_by_username(person.username)
        assert user is not None and user.name == person.name
        readable = {room.name for room in store.get_rooms(store.readable_room_ids(user.id)).values()}
        assert readable == rooms_of(person.username)
