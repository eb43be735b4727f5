"""The Halden workspace and its judged queries (bench/halden/): real chat, and judgments that stay true.

The workspace must look like a team's chat (threads, rooms of every type, many people, Chinese and
Japanese, distinct texts) and import as it is; the judgments must cite messages that exist and that
the searching user may read, paraphrases must really share no content word with their answers, and
the judged texts must still be the ones that were judged.

What every judged set must hold (files rebuilt, judged messages readable, paraphrases, filters,
scoping, digests, the import) is checked for each set in test_judged_sets.py.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest
from bench.halden.judgments import KINDS, shared_content_words
from bench.halden.workspace import PEOPLE, ROOMS, apply_gap

from ._judged_files import JUDGED_FILES
from ._judgments import Row, row_time

_CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return JUDGED_FILES["halden"].rows()


@pytest.fixture(scope="module")
def judgments() -> dict[str, Any]:
    return JUDGED_FILES["halden"].judgments()


@pytest.fixture(scope="module")
def queries(judgments: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = judgments["queries"]
    return found


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

