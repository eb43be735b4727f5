"""The judged answer sets (bench/answer_judgments.json, bench/citation_judgments.json) still hold.

Every judged id is a demo message, each question's user can read its answering messages, and the
judged messages still say what was judged (see bench/README-answers.md).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from bench.halden.judgments import judged_text_digest

from ai_search import MAX_SEARCH_QUERY_LENGTH
from ai_search_server.demo import DEFAULT_DEMO_NOW, generate_demo_messages, rooms_of

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((BENCH / name).read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module")
def text_of() -> dict[str, str]:
    return {str(row["id"]): str(row["text"]) for row in generate_demo_messages()}


@pytest.fixture(scope="module")
def room_of() -> dict[str, str]:
    return {str(row["id"]): str(row["room"]) for row in generate_demo_messages()}


@pytest.mark.parametrize("name", ["answer_judgments.json", "citation_judgments.json"])
def test_made_on_the_default_dataset(name: str) -> None:
    dataset = load(name)["dataset"]
    assert dataset["seed"] == 2026
    assert datetime.fromisoformat(dataset["now"].replace("Z", "+00:00")) == DEFAULT_DEMO_NOW


def test_there_are_enough_questions_and_each_user_reads_its_answers(room_of: dict[str, str]) -> None:
    questions = load("answer_judgments.json")["questions"]
    kinds = Counter(q["kind"] for q in questions)
    assert kinds["answerable"] >= 40 and kinds["unanswerable"] >= 5
    assert len({q["id"] for q in questions}) == len(questions)
    problems = []
    for question in questions:
        assert bool(question["answers"]) == (question["kind"] == "answerable"), question["id"]
        assert 0 < len(question["question"]) <= MAX_SEARCH_QUERY_LENGTH
        readable = rooms_of(question["user"])
        for message_id in question["answers"]:
            if message_id not in room_of:
                problems.append(f"{question['id']}: {message_id} does not exist")
            elif room_of[message_id] not in readable:
                problems.append(f"{question['id']}: {question['user']} cannot read #{room_of[message_id]}")
    assert problems == []


def test_the_sentences_cite_their_own_sources(text_of: dict[str, str]) -> None:
    sentences = load("citation_judgments.json")["sentences"]
    assert len(sentences) >= 100
    labels = Counter(item["label"] for item in sentences)
    assert set(labels) == {"supported", "unsupported", "wrong-source"}
    assert min(labels.values()) >= 30
    for item in sentences:
        assert all(message_id in text_of for message_id in item["sources"]), item["id"]
        cited = [int(n) for n in item["sentence"].replace("]", "[").split("[")[1::2] if n.isdigit()]
        assert cited and all(1 <= n <= len(item["sources"]) for n in cited), item["id"]


@pytest.mark.parametrize(
    ("name", "key", "ids"),
    [
        pytest.param("answer_judgments.json", "questions", "answers", id="questions"),
        pytest.param("citation_judgments.json", "sentences", "sources", id="sentences"),
    ],
)
def test_judged_messages_still_say_what_was_judged(
    text_of: dict[str, str], name: str, key: str, ids: str
) -> None:
    """Editing a judged message changes this digest: re-judge what cites it, then update the digest."""
    judged = load(name)
    digest = judged_text_digest([{"relevant": item[ids]} for item in judged[key]], text_of)
    assert digest == judged["judged_text_sha256"], f"new digest: {digest}"


HALDEN_QUESTIONS = BENCH / "halden" / "answer_questions.json"


def test_the_held_out_halden_questions_hold() -> None:
    """bench/halden/answer_questions.json (issue 36's held-out questions on the Halden workspace):
    every answer is a Halden message its asker reads, answerable questions name answers and the
    unanswerable ones none, and every kind of question is there."""
    from bench.halden.build import WORKSPACE_PATH, load_workspace
    from bench.halden.workspace import rooms_of as halden_rooms_of

    questions = json.loads(HALDEN_QUESTIONS.read_text(encoding="utf-8"))["questions"]
    room_of = {str(row["id"]): str(row["room"]) for row in load_workspace(WORKSPACE_PATH)}
    assert len({q["id"] for q in questions}) == len(questions)
    assert {q["form"] for q in questions} == {"who", "when", "why", "how/what", "yes/no"}
    problems = []
    for question in questions:
        assert bool(question["answers"]) == (question["kind"] == "answerable"), question["id"]
        assert 0 < len(question["question"]) <= MAX_SEARCH_QUERY_LENGTH
        for message_id in question["answers"]:
            if message_id not in room_of:
                problems.append(f"{question['id']}: {message_id} does not exist")
            elif room_of[message_id] not in halden_rooms_of(question["user"]):
                problems.append(f"{question['id']}: {question['user']} cannot read #{room_of[message_id]}")
    assert problems == []
