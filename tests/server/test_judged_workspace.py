"""The Halden workspace and its judged queries (bench/halden/): real chat, and judgments that stay true.

The workspace must look like a team's chat (threads, rooms of every type, many people, Chinese and
Japanese, distinct texts) and import as it is; the judgments must cite messages that exist and that
the searching user may read, paraphrases must really share no content word with their answers, and
the judged texts must still be the ones that were judged.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bench.halden.build import WORKSPACE_PATH, load_workspace, workspace_rows
from bench.halden.judgments import JUDGMENTS_PATH, KINDS, build_judgments, shared_content_words
from bench.halden.workspace import PEOPLE, ROOMS, apply_gap, rooms_of

from ai_search_server.importer import import_rows
from ai_search_server.store.base import Store

from ._judgments import Row, filter_breaches, judged_text_digest, row_time

_CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


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
    """Edit bench/halden/conversations/*.txt or background.py, then run `python -m bench.halden.build`."""
    assert workspace_rows() == rows


def test_the_judgments_file_is_what_queries_txt_builds(rows: list[Row], judgments: dict[str, Any]) -> None:
    """Edit bench/halden/queries.txt, then run `python -m bench.halden.judgments`."""
    assert build_judgments(list(rows)) == judgments


# -- the workspace looks like a team's chat ------------------------------------------------------------------


def test_the_workspace_is_big_varied_and_mostly_distinct(rows: list[Row]) -> None:
    texts = [str(row["text"]) for row in rows]
    assert len(rows) >= 1500
    assert len(set(texts)) / len(texts) >= 0.95
    assert len({row["user"] for row in rows}) == len(PEOPLE) >= 12
    assert {row["room_type"] for row in rows} == {"c", "p", "d"}
    assert len({row["room"] for row in rows}) == len(ROOMS)


def test_there_is_chinese_and_japanese(rows: list[Row]) -> None:
    kana = [row for row in rows if re.search(r"[\u3040-\u30ff]", str(row["text"]))]
    han_only = [row for row in rows if _CJK.search(str(row["text"])) and row not in kana]
    assert len(kana) >= 30, "Japanese"
    assert len(han_only) >= 30, "Chinese"


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
    threads = Counter(str(row["tmid"]) for row in replies)
    assert len(threads) >= 40


def test_some_conversations_are_runs_in_a_room_without_a_thread(rows: list[Row]) -> None:
    written = [row for row in rows if not str(row["id"]).startswith("bg-")]
    blocks = Counter(str(row["id"]).rsplit("-", 1)[0] for row in written if "tmid" not in row)
    assert sum(count >= 4 for count in blocks.values()) >= 10


@pytest.mark.parametrize(
    ("gap", "expected"),
    [
        pytest.param("+12m", "2027-01-14T09:04", id="minutes"),
        pytest.param("+3h", "2027-01-14T11:52", id="hours"),
        pytest.param("@07:40", "2027-01-14T07:40", id="a-clock-time-on-the-same-day"),
        pytest.param("+1d@09:30", "2027-01-15T09:30", id="next-day-at-a-time"),
        pytest.param(None, "2027-01-14T08:54", id="two-minutes-by-default"),
    ],
)
def test_gaps_move_the_conversation_clock(gap: str | None, expected: str) -> None:
    start = row_time({"ts": "2027-01-14T08:52:00Z"})
    assert apply_gap(start, gap).strftime("%Y-%m-%dT%H:%M") == expected


# -- the judgments ----------------------------------------------------------------------------------------------


def test_there_are_enough_queries_of_every_kind(queries: list[dict[str, Any]]) -> None:
    kinds = Counter(query["kind"] for query in queries)
    assert len(queries) >= 150
    assert len({query["id"] for query in queries}) == len(queries)
    assert set(kinds) == set(KINDS)
    assert kinds["paraphrase"] >= 50 and kinds["conversation"] >= 20 and kinds["no-answer"] >= 20


def test_answerable_queries_judge_something_and_no_answer_ones_nothing(queries: list[dict[str, Any]]) -> None:
    assert [q["id"] for q in queries if (q["kind"] == "no-answer") == bool(q["relevant"])] == []
    assert all(grade in (1, 2) for q in queries for grade in q["relevant"].values())


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


@pytest.mark.parametrize(
    ("query", "answer", "shared"),
    [
        pytest.param("why was it paged", "the pager went off", set(), id="pager-is-not-page"),
        pytest.param("who paged me", "any page on a weekend", {"page"}, id="paged-is-page"),
        pytest.param("the was and of", "the was and of", set(), id="stopwords-are-no-content"),
        pytest.param("Déploiement", "deploiement", {"deploiement"}, id="folded-like-the-index"),
    ],
)
def test_the_paraphrase_check_stems_and_drops_stopwords(query: str, answer: str, shared: set[str]) -> None:
    assert shared_content_words(query, [answer]) == shared


def test_filtered_queries_judge_only_messages_their_filters_keep(
    rows: list[Row], queries: list[dict[str, Any]]
) -> None:
    assert filter_breaches(queries, rows) == []


def test_scoping_queries_repeat_another_users_words_with_fewer_rooms(queries: list[dict[str, Any]]) -> None:
    for scoped in (q for q in queries if q["kind"] == "scoping"):
        twins = [q for q in queries if q["query"] == scoped["query"] and q["user"] != scoped["user"]]
        assert twins, f"{scoped['id']} has no twin"
        assert all(rooms_of(scoped["user"]) != rooms_of(twin["user"]) for twin in twins)
        assert any(set(scoped["relevant"]) < set(twin["relevant"]) for twin in twins), scoped["id"]


def test_judged_messages_still_say_what_was_judged(rows: list[Row], judgments: dict[str, Any]) -> None:
    """Editing a judged message's text changes this digest: re-judge the queries that cite it first."""
    assert judged_text_digest(judgments["queries"], rows) == judgments["judged_text_sha256"]


# -- it imports as it is --------------------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path, open_workspace: Callable[[Path], Store]) -> Iterator[Store]:
    opened = open_workspace(tmp_path / "data")
    yield opened
    opened.close()


def test_the_workspace_imports_and_memberships_follow_the_rooms(store: Store, rows: list[Row]) -> None:
    # People first, as the relevance bench does: a `members` list creates users it has not met yet
    # without their display name.
    for person in PEOPLE:
        store.create_user(person.username, name=person.name)
    report = import_rows(store, rows)
    assert (report.imported, report.skipped_count, report.users_created) == (len(rows), 0, 0)
    for person in PEOPLE:
        user = store.get_user_by_username(person.username)
        assert user is not None and user.name == person.name
        readable = {room.name for room in store.get_rooms(store.readable_room_ids(user.id)).values()}
        assert readable == rooms_of(person.username)
