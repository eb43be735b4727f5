"""The page's pure helpers for conversations, on CPython: results in their bands, grouped by thread,
what a message carries (files, reactions), and the words for them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search_web.conversations import (
    MAX_HITS_PER_CONVERSATION,
    Conversation,
    ResultNumbers,
    group_by_conversation,
    message_id,
    split_bands,
    thread_of,
)
from ai_search_web.message_parts import (
    MAX_FILES_SHOWN,
    MAX_REACTIONS_SHOWN,
    UNKNOWN_SOURCE_LINK_TEXT,
    MessageFile,
    Reaction,
    SourceLink,
    emoji_for,
    list_field,
    message_files,
    message_reactions,
    object_field,
    source_link,
    text_field,
)
from ai_search_web.wording import file_size_text, more_in_thread_text, replies_text

pytestmark = pytest.mark.browser


def hit(msg_id: str, ts: str, thread: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"_id": msg_id, "msgId": msg_id, "ts": ts, "text": msg_id}
    if thread is not None:
        result["thread"] = {"_id": thread, "title": f"{thread} title", "replies": 9}
        if thread != msg_id:
            result["tmid"] = thread
    return result


def ids(groups: list[Conversation]) -> list[list[str]]:
    return [[message_id(h) for h in group.hits] for group in groups]


@pytest.mark.parametrize(
    ("results", "expected", "more"),
    [
        pytest.param(
            [hit("a", "2026-01-01T10:00:00.000Z"), hit("b", "2026-01-01T09:00:00.000Z")],
            [["a"], ["b"]],
            [0, 0],
            id="messages-outside-threads-keep-their-rank",
        ),
        pytest.param(
            [
                hit("r3", "2026-01-01T10:03:00.000Z", "t"),
                hit("x", "2026-01-02T00:00:00.000Z"),
                hit("r1", "2026-01-01T10:01:00.000Z", "t"),
            ],
            [["r3", "r1"], ["x"]],
            [0, 0],
            id="a-thread-takes-its-best-hits-rank-and-lists-it-first",
        ),
        pytest.param(
            [
                hit("r5", "2026-01-01T10:05:00.000Z", "t"),
                hit("r2", "2026-01-01T10:02:00.000Z", "t"),
                hit("t", "2026-01-01T10:00:00.000Z", "t"),
            ],
            [["r5", "t", "r2"]],
            [0],
            id="the-best-reply-comes-before-the-question-then-the-rest-as-written",
        ),
        pytest.param(
            [
                hit(f"r{n}", f"2026-01-01T10:{59 - n}:00.000Z", "t")
                for n in range(MAX_HITS_PER_CONVERSATION + 2)
            ],
            [["r0", *(f"r{n}" for n in reversed(range(1, MAX_HITS_PER_CONVERSATION)))]],
            [2],
            id="a-busy-thread-lists-its-best-hits-and-counts-the-rest",
        ),
        pytest.param(
            [hit("t", "2026-01-01T10:00:00.000Z", "t"), hit("r", "2026-01-01T09:00:00.000Z", "t")],
            [["t", "r"]],
            [0],
            id="the-first-message-is-a-hit-of-its-own-thread",
        ),
        pytest.param(
            [{"_id": "a", "thread": {"title": "no id"}}, {"_id": "b", "thread": "t"}],
            [["a"], ["b"]],
            [0, 0],
            id="a-malformed-thread-is-no-thread",
        ),
    ],
)
def test_results_group_by_conversation(
    results: list[Any], expected: list[list[str]], more: list[int]
) -> None:
    groups = group_by_conversation(results)
    assert ids(groups) == expected
    assert [len(group.more) for group in groups] == more


def test_a_thread_found_once_is_no_heading_but_one_with_more_hits_is() -> None:
    (alone,) = group_by_conversation([hit("r", "2026-01-01T00:00:00.000Z", "t")])
    assert alone.thread is not None and not alone.grouped
    (busy,) = group_by_conversation([hit("r1", "1", "t"), hit("r2", "2", "t")], max_hits=1)
    assert busy.grouped and [message_id(h) for h in busy.more] == ["r2"]


THREADS = st.sampled_from([None, "t1", "t2", "t3"])
RESULTS = st.lists(st.tuples(THREADS, st.integers(0, 50)), max_size=40).map(
    lambda rows: [
        hit(f"m{i}", f"2026-01-01T00:{minute:02d}:00.000Z", thread) for i, (thread, minute) in enumerate(rows)
    ]
)


@given(RESULTS, st.integers(1, 5))
def test_grouping_loses_and_repeats_nothing(results: list[dict[str, Any]], max_hits: int) -> None:
    """Every result is listed once or counted once; threads are never split; no thread lists more
    than ``max_hits``; each group sits at its best hit's rank and lists that hit first, then the
    others in time order."""
    groups = group_by_conversation(results, max_hits)
    listed = [message_id(h) for g in groups for h in g.hits]
    folded = [message_id(h) for g in groups for h in g.more]
    assert sorted(listed + folded) == sorted(message_id(r) for r in results)
    assert len(set(listed + folded)) == len(results)
    rank = {message_id(r): i for i, r in enumerate(results)}
    best = [min(rank[message_id(h)] for h in (*g.hits, *g.more)) for g in groups]
    assert best == sorted(best)
    threads = [g.thread["_id"] for g in groups if g.thread is not None]
    assert len(threads) == len(set(threads))
    for group in groups:
        assert len(group.hits) <= max_hits or group.thread is None
        ranks = [rank[message_id(h)] for h in group.hits]
        assert ranks[0] == min(ranks)
        times = [h["ts"] for h in group.hits[1:]]
        assert times == sorted(times)
        if group.more:
            assert max(rank[message_id(h)] for h in group.hits) < min(rank[message_id(h)] for h in group.more)


def test_sorted_by_time_a_thread_keeps_the_order_it_came_in() -> None:
    """``sort:new``: the list is newest first, and so is each thread (its best hit is its newest)."""
    results = [hit(f"r{n}", f"2026-01-01T10:0{9 - n}:00.000Z", "t") for n in range(3)]
    assert ids(group_by_conversation(results, by_time=True)) == [["r0", "r1", "r2"]]
    assert ids(group_by_conversation(results)) == [["r0", "r2", "r1"]]


def test_results_split_into_their_bands_in_the_order_given() -> None:
    results = [
        {"_id": "s1", "band": "strong"},
        {"_id": "n1"},
        {"_id": "r1", "band": "related"},
        {"_id": "s2", "band": "strong"},
        {"_id": "x", "band": "maybe"},
        {"_id": "r2", "band": "related"},
    ]
    strong, related = split_bands(results)
    assert [r["_id"] for r in strong] == ["s1", "n1", "s2", "x"], "no band, or one unknown, is strong"
    assert [r["_id"] for r in related] == ["r1", "r2"]
    assert split_bands([{"_id": "a"}]) == ([{"_id": "a"}], [])


def test_one_numbering_runs_through_the_strong_then_the_related_band() -> None:
    """The list's numbers: the strong band's conversations first, then the related band's, each
    grouped on its own (a thread found in both is one entry in each)."""
    results = [
        {**hit("s1", "2026-01-01T10:05:00.000Z", "t"), "band": "strong"},
        {**hit("s2", "2026-01-01T09:00:00.000Z"), "band": "strong"},
        {**hit("s3", "2026-01-01T10:01:00.000Z", "t"), "band": "strong"},
        {**hit("r1", "2026-01-01T10:03:00.000Z", "t"), "band": "related"},
        {**hit("r2", "2026-01-01T08:00:00.000Z"), "band": "related"},
    ]
    strong, related = split_bands(results)
    groups = group_by_conversation(strong) + group_by_conversation(related)
    assert ids(groups) == [["s1", "s3"], ["s2"], ["r1"], ["r2"]]
    listed = [h for g in groups for h in g.hits]
    numbers = ResultNumbers(listed)
    assert [numbers.number(i) for i in ("s1", "s3", "s2", "r1", "r2")] == [1, 2, 3, 4, 5]


def test_thread_of_reads_only_a_well_formed_thread() -> None:
    assert thread_of({"thread": {"_id": "t", "title": "x"}}) == {"_id": "t", "title": "x"}
    assert thread_of({"thread": {"_id": ""}}) is None
    assert thread_of({"thread": None}) is None
    assert message_id({"msgId": "a", "_id": "b"}) == "a"
    assert message_id({"_id": 7}) == ""


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param(
            {"files": [{"name": "pgbouncer.ini", "title": "ledger pool settings", "type": "text/plain"}]},
            [MessageFile("pgbouncer.ini", "ledger pool settings", "", "text/plain", 0)],
            id="a-search-result-names-title-and-type",
        ),
        pytest.param(
            {
                "files": [{"name": "plan.md", "type": "text/markdown", "size": 2048}],
                "attachments": [
                    {"type": "file", "title": "release plan", "description": "v2.14", "size": 2048}
                ],
            },
            [MessageFile("plan.md", "release plan", "v2.14", "text/markdown", 2048)],
            id="a-message-pairs-files-with-attachments-in-order",
        ),
        pytest.param(
            {"files": [{"name": "a.png", "type": "image/png"}], "attachments": [{"title": "a.png"}]},
            [MessageFile("a.png", "", "", "image/png", 0)],
            id="a-title-that-is-the-name-is-not-said-twice",
        ),
        pytest.param(
            {"files": [{"name": ""}, {"title": "x"}, "x", {"name": "ok", "size": True}], "attachments": "x"},
            [MessageFile("ok")],
            id="malformed-files-are-left-out",
        ),
        pytest.param({"files": {"name": "x"}}, [], id="files-must-be-a-list"),
        pytest.param(
            {"files": [{"name": f"f{i}"} for i in range(MAX_FILES_SHOWN + 5)]},
            [MessageFile(f"f{i}") for i in range(MAX_FILES_SHOWN)],
            id="at-most-the-files-a-message-shows",
        ),
    ],
)
def test_message_files(message: dict[str, Any], expected: list[MessageFile]) -> None:
    assert message_files(message) == expected


def test_message_reactions() -> None:
    message = {
        "reactions": {
            ":+1:": {"usernames": ["bob", "carol", 3]},
            ":party_parrot:": {"usernames": ["dave"]},
            ":tada:": {"usernames": []},
            ":x:": "bob",
            "": {"usernames": ["erin"]},
        }
    }
    assert message_reactions(message) == [
        Reaction(":+1:", "👍", ("bob", "carol")),
        Reaction(":party_parrot:", ":party_parrot:", ("dave",)),
    ]
    many = {"reactions": {f":r{i:02}:": {"usernames": ["bob"]} for i in range(MAX_REACTIONS_SHOWN + 3)}}
    assert [r.shortcode for r in message_reactions(many)] == [f":r{i:02}:" for i in range(MAX_REACTIONS_SHOWN)]
    # The most given first, ties by shortcode, whatever the object's order (MicroPython keeps none).
    given = {":zzz:": {"usernames": ["a"]}, ":eyes:": {"usernames": ["a", "b", "c"]}, ":abc:": {"usernames": ["a"]}}
    assert [r.shortcode for r in message_reactions({"reactions": given})] == [":eyes:", ":abc:", ":zzz:"]
    popular = {**{f":r{i:02}:": {"usernames": ["bob"]} for i in range(MAX_REACTIONS_SHOWN)}, ":top:": {"usernames": ["a", "b"]}}
    assert message_reactions({"reactions": popular})[0].shortcode == ":top:"
    assert message_reactions({"reactions": ["x"]}) == []
    assert emoji_for(":white_check_mark:") == "✅"


@pytest.mark.parametrize(
    ("size", "text"),
    [
        pytest.param(1, "1 byte", id="one-byte"),
        pytest.param(912, "912 bytes", id="bytes"),
        pytest.param(1024, "1 KB", id="a-kilobyte"),
        pytest.param(2_500, "2.4 KB", id="one-decimal-below-ten"),
        pytest.param(403 * 1024, "403 KB", id="whole-units-from-ten"),
        pytest.param(5 * 1024**3, "5 GB", id="gigabytes"),
        pytest.param(0, "", id="no-size"),
        pytest.param(-3, "", id="a-negative-size-is-none"),
        pytest.param(True, "", id="a-bool-is-no-size"),
        pytest.param("12", "", id="text-is-no-size"),
    ],
)
def test_file_sizes_in_words(size: Any, text: str) -> None:
    assert file_size_text(size) == text


@pytest.mark.parametrize(
    ("record", "key", "text", "obj", "items"),
    [
        pytest.param({"k": "ops"}, "k", "ops", {}, [], id="text"),
        pytest.param({"k": {"a": 1}}, "k", "", {"a": 1}, [], id="object"),
        pytest.param({"k": [1, "x"]}, "k", "", {}, [1, "x"], id="list"),
        pytest.param({"k": None}, "k", "", {}, [], id="null-is-empty"),
        pytest.param({}, "k", "", {}, [], id="missing-is-empty"),
        pytest.param({"k": 3}, "k", "", {}, [], id="a-number-is-none-of-them"),
        pytest.param({"k": True}, "k", "", {}, [], id="a-bool-is-none-of-them"),
        pytest.param(["k"], "k", "", {}, [], id="a-list-record-has-no-fields"),
        pytest.param(None, "k", "", {}, [], id="no-record"),
        pytest.param("k", "k", "", {}, [], id="a-text-record-has-no-fields"),
    ],
)
def test_a_field_is_read_as_its_type_or_as_empty(record: Any, key: str, text: str, obj: Any, items: Any) -> None:
    assert (text_field(record, key), object_field(record, key), list_field(record, key)) == (text, obj, items)


SLACK = "https://acme.slack.com/archives/C024BE91L/p1355517523000005"


@pytest.mark.parametrize(
    ("message", "link"),
    [
        pytest.param({"sourceUrl": SLACK}, SourceLink(SLACK, "Open in Slack"), id="slack"),
        pytest.param(
            {"sourceUrl": "https://chat.example.com/channel/ops?msg=Xk2"},
            SourceLink("https://chat.example.com/channel/ops?msg=Xk2", "Open in Rocket.Chat"),
            id="rocketchat-mirror",
        ),
        pytest.param(
            {"sourceUrl": "https://wiki.example.org/x"},
            SourceLink("https://wiki.example.org/x", UNKNOWN_SOURCE_LINK_TEXT),
            id="an-unknown-system-gets-our-own-words",
        ),
        pytest.param({"sourceUrl": "javascript:alert(1)"}, None, id="javascript"),
        pytest.param({"sourceUrl": "JAVASCRIPT:alert(1)"}, None, id="javascript-in-capitals"),
        pytest.param({"sourceUrl": "data:text/html,x"}, None, id="data"),
        pytest.param({"sourceUrl": "java\tscript:alert(1)"}, None, id="a-tab-inside-the-scheme"),
        pytest.param({"sourceUrl": " " + SLACK}, None, id="a-leading-space"),
        pytest.param({"sourceUrl": {"href": SLACK}}, None, id="not-text"),
        pytest.param({"sourceUrl": ""}, None, id="empty"),
        pytest.param({}, None, id="none"),
        pytest.param(None, None, id="no-message"),
    ],
)
def test_only_a_web_source_url_makes_a_link(message: Any, link: SourceLink | None) -> None:
    assert source_link(message) == link


def test_replies_and_more_in_words() -> None:
    assert [replies_text(n) for n in (0, 1, 6)] == ["0 replies", "1 reply", "6 replies"]
    assert replies_text("6") == replies_text(-1) == replies_text(True) == ""
    assert more_in_thread_text(2) == "2 more in this thread"
