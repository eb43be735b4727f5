"""The Ferry workspace and its judged queries (bench/ferry/): a support community, and judgments that stay true.

The same checks as Halden's (test_judged_workspace.py) on the third judged set: the files are what
their sources build, the workspace looks like a support community's chat (threads, rooms of every
type, distinct texts, a private group that scoping queries need), it imports as it is, and the
judgments cite messages that exist and that the searching user may read, keep their filters,
paraphrases share no content word with their answers, and the judged texts are the ones judged.
Sharing Halden's code must not change Halden: its test checks its files are still what they build.

What every judged set must hold (files rebuilt, judged messages readable, paraphrases, filters,
scoping, digests, the import) is checked for each set in test_judged_sets.py.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from bench.ferry.build import WORKSPACE_PATH
from bench.ferry.judgments import KINDS
from bench.ferry.workspace import PEOPLE, ROOMS, rooms_of

from ._judged_files import JUDGED_FILES
from ._judgments import Row

ANSWER_QUESTIONS = Path(WORKSPACE_PATH).parent / "answer_questions.json"


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return JUDGED_FILES["ferry"].rows()


@pytest.fixture(scope="module")
def judgments() -> dict[str, Any]:
    return JUDGED_FILES["ferry"].judgments()


@pytest.fixture(scope="module")
def queries(judgments: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = judgments["queries"]
    return found


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


def test_background_is_never_judged(queries: list[dict[str, Any]]) -> None:
    """The background stays off the judged topics by construction, so no query cites it."""
    assert [f"{q['id']}: {m}" for q in queries for m in q["relevant"] if m.startswith("bg-")] == []


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

