"""The search language beyond the four upstream keys: negation, phrases, has:/is:, dates, sort, aliases.

One table per function; the properties of the whole grammar are in test_grammar_properties.py.
"""

from __future__ import annotations

import datetime

import pytest

from ai_search._grammar import (
    RefusedSearchFilter,
    apply_search_filter_token,
    drop_unfinished_search_filters,
    extract_completed_search_filters,
    find_refused_search_filters,
    format_search_filter_value,
    get_active_search_filter,
    insert_search_filter_token,
    parse_search_filter_text,
    serialize_search_query,
)
from ai_search._operators import SearchFilters, operator_for_prefix
from ai_search._suggestions import (
    DATE_PICKER_GROUP,
    build_applied_filter_chips,
    build_filter_hints,
    build_filter_suggestions,
)

F = SearchFilters
TODAY = datetime.date(2026, 12, 1)


@pytest.mark.parametrize(
    ("text", "search_text", "filters"),
    [
        pytest.param("deploy -in:#random", "deploy", F(excluded_room_names=("random",)), id="excluded-room"),
        pytest.param("deploy -from:@bot", "deploy", F(excluded_usernames=("bot",)), id="excluded-author"),
        pytest.param(
            "-IN:a,b -In:A", "", F(excluded_room_names=("a", "b")), id="excluded-rooms-dedupe-any-case"
        ),
        pytest.param("deploy -canary", "deploy", F(excluded_words=("canary",)), id="excluded-word"),
        pytest.param(
            'deploy -"rolling back"', "deploy", F(excluded_words=("rolling back",)), id="excluded-phrase"
        ),
        pytest.param("deploy -a,b", "deploy", F(excluded_words=("a,b",)), id="an-excluded-word-is-no-list"),
        pytest.param("-Canary -canary", "", F(excluded_words=("Canary",)), id="excluded-words-dedupe"),
        pytest.param("a - b", "a - b", F(), id="a-lone-dash-is-a-word"),
        pytest.param(
            "--verbose -#tag -_x", "--verbose -#tag -_x", F(), id="a-dash-before-no-letter-is-a-word"
        ),
        pytest.param("state-of-the-art", "state-of-the-art", F(), id="a-dash-inside-a-word-is-a-word"),
        pytest.param("x -7", "x", F(excluded_words=("7",)), id="a-dash-before-a-digit-excludes-it"),
        pytest.param('"rolling back" now', '"rolling back" now', F(), id="a-phrase-stays-in-the-words"),
        pytest.param("has:link has:FILE", "", F(has=("link", "file")), id="has-values-fold-case"),
        pytest.param("has:link,image", "", F(has=("link", "image")), id="has-takes-a-list"),
        pytest.param("has:url has:attachment", "", F(has=("link", "file")), id="has-synonyms"),
        pytest.param(
            "has:reaction has:thread", "", F(has=("reaction", "thread")), id="has-reaction-and-thread"
        ),
        pytest.param("has:pdf deploy", "has:pdf deploy", F(), id="an-unknown-has-value-is-words"),
        pytest.param("has:pdf,link", "", F(has=("link",)), id="the-valid-values-of-a-list-count"),
        pytest.param("-has:link", "", F(excluded_has=("link",)), id="excluded-has"),
        pytest.param("is:thread is:DM is:pinned", "", F(is_=("thread", "dm", "pinned")), id="is-values"),
        pytest.param("is:reply", "", F(is_=("thread",)), id="a-reply-is-a-thread-message"),
        pytest.param("is:starred x", "is:starred x", F(), id="an-unknown-is-value-is-words"),
        pytest.param("-is:dm", "", F(excluded_is=("dm",)), id="excluded-is"),
        pytest.param("after:Yesterday", "", F(start_date="yesterday"), id="after-a-word"),
        pytest.param("after:-7d before:-2w", "", F(start_date="-7d", end_date="-2w"), id="relative-bounds"),
        pytest.param("on:2026-11-03", "", F(on_date="2026-11-03"), id="on-a-day"),
        pytest.param("date:2026-11-03", "", F(on_date="2026-11-03"), id="date-is-on"),
        pytest.param("during:2026-10", "", F(during="2026-10"), id="during-a-month"),
        pytest.param("during:last-week", "", F(during="last-week"), id="during-last-week"),
        pytest.param("after:mon", "", F(start_date="monday"), id="after-a-weekday"),
        pytest.param("on:a on:b", "on:a on:b", F(), id="invalid-dates-are-words"),
        pytest.param("on:2026-01-01 on:today", "", F(on_date="today"), id="the-last-date-wins"),
        pytest.param("sort:new", "", F(sort="new"), id="sort-new"),
        pytest.param("sort:Newest", "", F(sort="new"), id="sort-synonym"),
        pytest.param("sort:relevance sort:new", "", F(sort="new"), id="the-last-sort-wins"),
        pytest.param("sort:size", "sort:size", F(), id="an-unknown-sort-is-words"),
        pytest.param("channel:ops stream:dev", "", F(room_names=("ops", "dev")), id="room-aliases"),
        pytest.param(
            "sender:@al -sender:bot", "", F(from_usernames=("al",), excluded_usernames=("bot",)), id="sender"
        ),
        pytest.param("xhas:link a-in:b", "xhas:link a-in:b", F(), id="a-key-glued-to-a-word-is-a-word"),
        pytest.param("has:ıink", "has:ıink", F(), id="no-unicode-case-partners"),
    ],
)
def test_parse(text: str, search_text: str, filters: SearchFilters) -> None:
    assert parse_search_filter_text(text) == type(parse_search_filter_text(""))(search_text, filters)


@pytest.mark.parametrize(
    ("filters", "line"),
    [
        pytest.param(F(excluded_room_names=("random",)), "-in:random x", id="excluded-room"),
        pytest.param(F(excluded_room_names=("#x",)), "-in:##x x", id="an-excluded-room-keeps-its-sigil"),
        pytest.param(
            F(excluded_words=("rolling back",)), '-"rolling back" x', id="an-excluded-phrase-is-quoted"
        ),
        pytest.param(F(excluded_words=("in:x",)), '-"in:x" x', id="an-excluded-word-that-reads-as-a-key"),
        pytest.param(F(excluded_words=("--v",)), '-"--v" x', id="an-excluded-word-starting-with-a-dash"),
        pytest.param(F(excluded_words=("a,b",)), '-"a,b" x', id="an-excluded-word-with-a-comma"),
        pytest.param(F(has=("link",), is_=("dm",), sort="new"), "has:link is:dm sort:new x", id="choices"),
        pytest.param(
            F(room_names=("a",), start_date="-7d", during="2026-10", excluded_words=("b",)),
            "in:a after:-7d during:2026-10 -b x",
            id="table-order-words-last",
        ),
    ],
)
def test_serialize_writes_the_canonical_line(filters: SearchFilters, line: str) -> None:
    assert serialize_search_query("x", filters) == line
    assert parse_search_filter_text(line).filters == filters


@pytest.mark.parametrize(
    ("text", "caret", "expected"),
    [
        pytest.param("x -in:#ra", None, ("-in", "#ra", 2, 9), id="an-excluded-room-being-typed"),
        pytest.param("x has:li", None, ("has", "li", 2, 8), id="has-being-typed"),
        pytest.param("x -roll", None, ("-", "roll", 2, 7), id="an-excluded-word-being-typed"),
        pytest.param('x -"roll ba', None, ("-", '"roll ba', 2, 11), id="an-excluded-phrase-being-typed"),
        pytest.param("after:-7d x", 7, ("after", "-7d", 0, 9), id="caret-inside-a-relative-date"),
        pytest.param("Channel:op", None, ("in", "op", 0, 10), id="an-alias-is-its-row"),
        pytest.param("x - y", 3, ("-", "", 2, 3), id="a-dash-just-typed-may-become-an-excluded-word"),
        pytest.param("x --v", None, ("-", "-v", 2, 5), id="its-value-decides-when-it-is-finished"),
    ],
)
def test_get_active_search_filter(
    text: str, caret: int | None, expected: tuple[str, str, int, int] | None
) -> None:
    found = get_active_search_filter(text, caret)
    assert (None if found is None else (found.key, found.value, found.start, found.end)) == expected


@pytest.mark.parametrize(
    ("text", "search_text", "filters"),
    [
        pytest.param(
            "-in:ops -dep", "-dep", F(excluded_room_names=("ops",)), id="the-last-token-is-being-typed"
        ),
        pytest.param("-dep ", "", F(excluded_words=("dep",)), id="a-space-finishes-an-excluded-word"),
        pytest.param('-"roll back', '-"roll back', F(), id="an-open-phrase-is-being-typed"),
        pytest.param('-"roll back" ', "", F(excluded_words=("roll back",)), id="a-closed-phrase-is-finished"),
    ],
)
def test_extract_completed(text: str, search_text: str, filters: SearchFilters) -> None:
    completed = extract_completed_search_filters(text)
    assert (completed.search_text, completed.filters) == (search_text, filters)


@pytest.mark.parametrize(
    ("text", "dropped"),
    [
        pytest.param("deploy -in: has: sort:", "deploy", id="unfinished-new-keys-are-dropped"),
        pytest.param("a - b", "a - b", id="a-lone-dash-is-kept"),
        pytest.param("has:pdf", "has:pdf", id="a-refused-value-is-kept-for-the-grammar"),
    ],
)
def test_drop_unfinished(text: str, dropped: str) -> None:
    assert drop_unfinished_search_filters(text) == dropped


def test_apply_puts_a_negated_token_in_place() -> None:
    text = "deploy -in:#ra"
    applied = apply_search_filter_token(text, get_active_search_filter(text), "-in", "random")
    assert applied.text == "deploy -in:random "
    assert parse_search_filter_text(applied.text).filters.excluded_room_names == ("random",)


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        pytest.param("x has:pdf", [("has", "has:pdf")], id="unknown-has"),
        pytest.param("x is:starred -is:x", [("is", "is:starred"), ("-is", "-is:x")], id="unknown-is"),
        pytest.param(
            "after:2026-13-01 on:someday", [("after", "after:2026-13-01"), ("on", "on:someday")], id="dates"
        ),
        pytest.param("sort:size", [("sort", "sort:size")], id="sort"),
        pytest.param("in: has: x", [], id="unfinished-keys-are-no-refusal"),
        pytest.param("--x - y", [], id="dashes-are-words"),
        pytest.param("has:link after:today", [], id="valid-tokens-are-no-refusal"),
    ],
)
def test_find_refused_search_filters(text: str, refused: list[tuple[str, str]]) -> None:
    assert find_refused_search_filters(text) == tuple(RefusedSearchFilter(k, t) for k, t in refused)


def test_hints_say_what_a_refused_key_takes() -> None:
    hints = build_filter_hints(find_refused_search_filters("has:pdf is:x after:soon"))
    assert hints == (
        "has: takes link, file, image, reaction, thread; “has:pdf” is searched as words",
        "is: takes thread, dm, pinned; “is:x” is searched as words",
        "a date is 2026-11-03, 2026-11, 2026, today, yesterday, -7d, -2w, monday, october or last-week; "
        "“after:soon” is searched as words",
    )


@pytest.mark.parametrize(
    ("line", "label", "title", "negated"),
    [
        pytest.param("-in:random", "not #random", "No messages in #random", True, id="excluded-room"),
        pytest.param("-from:bot", "not @bot", "No messages from @bot", True, id="excluded-author"),
        pytest.param(
            '-"roll back"', "not “roll back”", "No messages holding “roll back”", True, id="excluded-phrase"
        ),
        pytest.param("has:image", "has:image", "Only messages with an image", False, id="has"),
        pytest.param("-has:link", "not has:link", "No messages with a link", True, id="excluded-has"),
        pytest.param("is:thread", "is:thread", "Only replies in threads", False, id="is"),
        pytest.param("sort:new", "sort:new", "Newest first", False, id="sort"),
        pytest.param("on:2026-11-03", "on:2026-11-03", "Only messages on 2026-11-03", False, id="an-iso-day"),
        pytest.param(
            "after:-7d",
            "after:2026-11-24",
            "after:-7d: Only messages after 2026-11-24",
            False,
            id="relative-day",
        ),
        pytest.param(
            "during:last-week",
            "during:2026-11-23 – 2026-11-29",
            "during:last-week: Only messages during 2026-11-23 – 2026-11-29",
            False,
            id="a-relative-period",
        ),
    ],
)
def test_chips(line: str, label: str, title: str, negated: bool) -> None:
    (chip,) = build_applied_filter_chips(parse_search_filter_text(line).filters, today=TODAY)
    assert (chip.label, chip.title, chip.negated, chip.token) == (label, title, negated, line)


def test_a_date_chip_without_today_shows_what_was_typed() -> None:
    (chip,) = build_applied_filter_chips(F(start_date="-7d"))
    assert (chip.label, chip.title) == ("after:-7d", "Only messages after -7d")


@pytest.mark.parametrize(
    ("text", "values"),
    [
        pytest.param("has:", ["link", "file", "image", "reaction", "thread"], id="has-offers-every-value"),
        pytest.param("-has:i", ["image"], id="typing-narrows"),
        pytest.param("is:", ["thread", "dm", "pinned"], id="is"),
        pytest.param("sort:n", ["new"], id="sort"),
        pytest.param("has:z", [], id="nothing-starts-so"),
        pytest.param("-word", [], id="an-excluded-word-has-no-suggestions"),
        pytest.param("after:2026-1", ["2026-12", "2026-11", "2026-10"], id="a-date-prefix-offers-its-months"),
        pytest.param(
            "on:2026-11-2", ["2026-11-29", "2026-11-28", "2026-11-27", "2026-11-26", "2026-11-25"], id="days"
        ),
        pytest.param("during:last", ["last-week", "last-month", "last-year"], id="date-words"),
        pytest.param("before:-3", ["-3d", "-3w"], id="amounts"),
        pytest.param("after:2026-11-03", ["2026-11-03"], id="a-full-date-offers-itself"),
        pytest.param("after:someday", [], id="nothing-for-an-invalid-date"),
    ],
)
def test_suggestions(text: str, values: list[str]) -> None:
    offered = build_filter_suggestions(get_active_search_filter(text), today=TODAY)
    found = [s for s in offered if s.group != DATE_PICKER_GROUP]
    assert [s.value for s in found] == values
    is_date = text.split(":")[0] in ("after", "before", "on", "during")
    assert [s.group for s in offered if s not in found] == ([DATE_PICKER_GROUP] if is_date else [])
    for suggestion in found:
        token = format_search_filter_value(suggestion.filter_key, suggestion.value)
        assert parse_search_filter_text(token).filters != F(), token


def test_every_prefix_finds_its_row() -> None:
    assert [operator_for_prefix(p).key for p in ("in:", "-channel:", "sender:", "-", "date:")] == [
        "in",
        "-in",
        "from",
        "-",
        "on",
    ]
    with pytest.raises(ValueError, match="unknown search filter prefix 'to:'"):
        operator_for_prefix("to:")


@pytest.mark.parametrize(
    ("text", "caret", "token", "new_text", "new_caret"),
    [
        pytest.param("", None, "after:-7d", "after:-7d", 9, id="into-an-empty-box"),
        pytest.param("deploy", None, "after:-7d", "deploy after:-7d", 16, id="at-the-end"),
        pytest.param("deploy failed", 0, "-in:ops", "-in:ops deploy failed", 7, id="at-the-start"),
        pytest.param("deploy failed", 3, "has:link", "deploy has:link failed", 15, id="a-word-is-not-split"),
        pytest.param("a  b", 2, '-"x y"', 'a -"x y" b', 8, id="spaces-collapse-around-it"),
    ],
)
def test_insert_a_chip_token_for_editing(
    text: str, caret: int | None, token: str, new_text: str, new_caret: int
) -> None:
    inserted = insert_search_filter_token(text, caret, token)
    assert (inserted.text, inserted.caret) == (new_text, new_caret)
    # Still being typed: the token stays in the box and is the one under the caret.
    before = inserted.text[: inserted.caret]
    assert extract_completed_search_filters(before).filters == F()
    active = get_active_search_filter(inserted.text, inserted.caret)
    assert active is not None and inserted.text[active.start : active.end] == token
