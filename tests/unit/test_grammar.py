"""The filter grammar (`ai_search._grammar`, `ai_search._operators`): one table of cases per function."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from ai_search import _grammar, _operators
from ai_search._constants import MAX_SEARCH_FILTER_VALUES
from ai_search._grammar import (
    ActiveSearchFilter,
    apply_search_filter_token,
    drop_unfinished_search_filters,
    extract_completed_search_filters,
    format_search_filter_value,
    get_active_search_filter,
    merge_search_filters,
    parse_search_filter_text,
    remove_search_filter,
    serialize_search_query,
)
from ai_search._operators import (
    SEARCH_FILTER_KEYS,
    SEARCH_FILTER_OPERATORS,
    SearchFilters,
    get_search_filter_operator,
)

F = SearchFilters
ROOMS_30 = [f"room{i}" for i in range(30)]


# -- the operator table ------------------------------------------------------------------------------


def test_every_operator_fills_a_field_of_search_filters() -> None:
    fields = {f.name: f.type for f in dataclasses.fields(SearchFilters)}
    for op in SEARCH_FILTER_OPERATORS:
        assert op.field in fields, op.key
        assert ("tuple" in str(fields[op.field])) == op.multiple, op.key


def test_the_keys_are_the_upstream_keys_and_ours_in_chip_order() -> None:
    assert (
        *("in", "-in", "from", "-from", "has", "-has", "is", "-is"),
        *("after", "before", "on", "during", "sort", "-"),
    ) == SEARCH_FILTER_KEYS


def test_an_unknown_key_is_refused_with_the_known_keys_named() -> None:
    with pytest.raises(ValueError, match=r"unknown search filter key 'to'; expected one of in, -in, from"):
        get_search_filter_operator("to")


@pytest.mark.parametrize("module", [_grammar, _operators], ids=lambda m: m.__name__)
def test_all_names_every_public_class_and_function_of_the_module(module: Any) -> None:
    defined_here = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == module.__name__
    }
    assert defined_here <= set(module.__all__)
    assert all(hasattr(module, name) for name in module.__all__)


# -- parse_search_filter_text --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "search_text", "filters"),
    [
        pytest.param("", "", F(), id="empty-text-gives-nothing"),
        pytest.param("deploy failed", "deploy failed", F(), id="plain-text-is-kept"),
        pytest.param(
            "deploy in:#ops,#infra from:@alice after:2026-11-01",
            "deploy",
            F(room_names=("ops", "infra"), from_usernames=("alice",), start_date="2026-11-01"),
            id="design-example-parses-every-key",
        ),
        pytest.param('in:"a,b" x', "x", F(room_names=("a,b",)), id="a-quoted-value-is-one-value"),
        pytest.param("in:a,b", "", F(room_names=("a", "b")), id="a-bare-value-splits-on-commas"),
        pytest.param(
            'in:"team room" notes', "notes", F(room_names=("team room",)), id="a-quoted-value-keeps-spaces"
        ),
        pytest.param(
            "notes after:2026-13 in:",
            "notes after:2026-13 in:",
            F(),
            id="tokens-with-no-valid-value-stay-in-the-text",
        ),
        pytest.param("in:", "in:", F(), id="in-alone-stays-in-the-text"),
        pytest.param('in:""', 'in:""', F(), id="an-empty-quoted-value-stays"),
        pytest.param('in:"   "', 'in:" "', F(), id="a-blank-quoted-value-stays-whitespace-collapsed"),
        pytest.param("in:,,", "in:,,", F(), id="only-commas-stays"),
        pytest.param("in:a,,b,", "", F(room_names=("a", "b")), id="empty-items-are-dropped"),
        pytest.param("in:a,@ x", "x", F(room_names=("a",)), id="a-lone-sigil-is-empty-and-dropped"),
        pytest.param("xin:general", "xin:general", F(), id="a-key-glued-to-a-word-is-text"),
        pytest.param("from:@@bob", "", F(from_usernames=("@bob",)), id="only-one-sigil-is-stripped"),
        pytest.param(
            "in:@ops from:#bob", "", F(("ops",), from_usernames=("bob",)), id="either-sigil-on-any-name"
        ),
        pytest.param(
            "IN:Ops FrOm:Alice AFTER:2026-01-02",
            "",
            F(room_names=("Ops",), from_usernames=("Alice",), start_date="2026-01-02"),
            id="keys-are-case-insensitive-values-keep-their-case",
        ),
        pytest.param("ＩＮ:ops", "ＩＮ:ops", F(), id="full-width-letters-are-not-a-key"),
        pytest.param("ın:ops İN:ops", "ın:ops İN:ops", F(), id="dotless-and-dotted-i-are-not-a-key"),
        pytest.param("to:2026-01-01", "to:2026-01-01", F(), id="an-unknown-key-is-text"),
        pytest.param(
            "in:Ops in:ops in:OPS in:dev",
            "",
            F(room_names=("Ops", "dev")),
            id="rooms-dedupe-case-insensitively-first-spelling-kept",
        ),
        pytest.param(
            "in:café,日本語 from:Zoë", "", F(("café", "日本語"), from_usernames=("Zoë",)), id="unicode-names"
        ),
        pytest.param("in:ops:eu", "", F(room_names=("ops:eu",)), id="a-colon-inside-a-value-is-kept"),
        pytest.param("in:in:ops", "", F(room_names=("in:ops",)), id="a-key-inside-a-value-is-a-value"),
        pytest.param(
            'in:"team room', 'in:"team room', F(), id="an-unclosed-quote-is-a-bare-value-with-a-quote-invalid"
        ),
        pytest.param('in:"a b"x', 'in:"a b"x', F(), id="a-closing-quote-must-end-the-token"),
        pytest.param('in:a"b', 'in:a"b', F(), id="a-value-holding-a-quote-is-invalid"),
        pytest.param(
            'in:"a from:b,c"d e"',
            "",
            F(room_names=("a e",), from_usernames=("b",)),
            id="a-token-taken-out-of-an-open-quote-lets-the-quote-close",
        ),
        pytest.param(
            'in:"a in:"x y" z"', "", F(room_names=("x y", "a z")), id="quotes-closed-by-taking-out-nest"
        ),
        pytest.param(
            'FROM:" in:"a from:"R" " :"',
            "",
            F(room_names=("a",), from_usernames=("R", ":")),
            id="an-earlier-open-quote-closes-once-a-later-one-is-taken-out",  # found by atheris (A2)
        ),
        pytest.param(
            'in:"a after:2026-13-01 from:b,c"d e" x',
            "x",
            F(room_names=("a after:2026-13-01 e",), from_usernames=("b",)),
            id="a-quote-closed-by-taking-out-holds-the-words-between",
        ),
        pytest.param(
            'in:"a from:b c"d',
            'in:"a c"d',
            F(from_usernames=("b",)),
            id="a-quote-that-still-cannot-close-stays-text",
        ),
        pytest.param('in:a,"b c"', 'c"', F(room_names=("a",)), id="quotes-only-count-around-the-whole-value"),
        pytest.param('after:"2026-01-01"', "", F(start_date="2026-01-01"), id="a-quoted-date"),
        pytest.param("after:2026-02-30", "after:2026-02-30", F(), id="an-impossible-date-stays"),
        pytest.param("after:2026-02-29", "after:2026-02-29", F(), id="february-29-of-a-common-year-stays"),
        pytest.param("after:2028-02-29", "", F(start_date="2028-02-29"), id="february-29-of-a-leap-year"),
        pytest.param("after:2026-1-1", "after:2026-1-1", F(), id="a-date-needs-two-digit-month-and-day"),
        pytest.param("after:2026-13-01", "after:2026-13-01", F(), id="month-13-stays"),
        pytest.param("after:0000-01-01", "after:0000-01-01", F(), id="year-zero-stays"),
        pytest.param("after:٢٠٢٦-٠١-٠١", "after:٢٠٢٦-٠١-٠١", F(), id="non-ascii-digits-are-not-a-date"),
        pytest.param("before:20260101", "before:20260101", F(), id="a-compact-date-stays"),
        pytest.param(
            "after:2026-01-01,2026-02-01",
            "after:2026-01-01,2026-02-01",
            F(),
            id="a-date-is-not-split-on-commas",
        ),
        pytest.param(
            "after:2026-01-01 after:2026-02-01 before:2026-03-01 before:2026-03-02",
            "",
            F(start_date="2026-02-01", end_date="2026-03-02"),
            id="the-last-date-wins",
        ),
        pytest.param(
            "after:2026-01-01 after:2026-02-30",
            "after:2026-02-30",
            F(start_date="2026-01-01"),
            id="an-invalid-later-date-does-not-replace-a-valid-one",
        ),
        pytest.param(
            "  a \t\n b   in:x  c ", "a b c", F(room_names=("x",)), id="whitespace-collapses-and-trims"
        ),
        pytest.param(
            "a\tin:x\u3000from:y", "a", F(("x",), from_usernames=("y",)), id="any-unicode-whitespace"
        ),
        pytest.param(
            "in:a in:a from:a", "", F(room_names=("a",), from_usernames=("a",)), id="keys-dedupe-separately"
        ),
    ],
)
def test_parse_search_filter_text(text: str, search_text: str, filters: SearchFilters) -> None:
    parsed = parse_search_filter_text(text)
    assert (parsed.search_text, parsed.filters) == (search_text, filters)


def test_parse_caps_each_list_at_the_maximum_after_dedupe() -> None:
    text = "in:" + ",".join(["ROOM0", *ROOMS_30]) + " from:" + ",".join(ROOMS_30[:3])
    filters = parse_search_filter_text(text).filters
    assert filters.room_names == ("ROOM0", *ROOMS_30[1:MAX_SEARCH_FILTER_VALUES])
    assert len(filters.room_names) == MAX_SEARCH_FILTER_VALUES
    assert filters.from_usernames == tuple(ROOMS_30[:3])


def test_a_token_whose_values_were_all_over_the_cap_still_leaves_the_text() -> None:
    text = " ".join(f"in:{room}" for room in ROOMS_30) + " tail"
    parsed = parse_search_filter_text(text)
    assert parsed.search_text == "tail"
    assert len(parsed.filters.room_names) == MAX_SEARCH_FILTER_VALUES


# -- extract_completed_search_filters --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "search_text", "filters", "has_completed"),
    [
        pytest.param(
            "mongo from:ren ", "mongo ", F(from_usernames=("ren",)), True, id="a-space-finishes-a-token"
        ),
        pytest.param("mongo from:ren", "mongo from:ren", F(), False, id="the-token-being-typed-stays"),
        pytest.param(
            "in:ops from:ren",
            "from:ren",
            F(room_names=("ops",)),
            True,
            id="the-last-token-stays-after-others",
        ),
        pytest.param("deploy in:", "deploy in:", F(), False, id="a-bare-key-being-typed-stays"),
        pytest.param('in:"team ro', 'in:"team ro', F(), False, id="an-unclosed-quote-is-being-typed"),
        pytest.param('in:"team ', 'in:"team ', F(), False, id="a-space-inside-an-open-quote-does-not-finish"),
        pytest.param('in:"team room"', 'in:"team room"', F(), False, id="a-closed-quote-at-the-end-stays"),
        pytest.param(
            'in:"team room" ', "", F(room_names=("team room",)), True, id="a-closed-quote-and-a-space-finish"
        ),
        pytest.param(
            'in:a "hello world',
            '"hello world',
            F(room_names=("a",)),
            True,
            id="a-quote-in-plain-text-is-text",
        ),
        pytest.param("  lead   in:ops   tail", "lead tail", F(("ops",)), True, id="whitespace-collapses"),
        pytest.param("lead in:ops   ", "lead ", F(("ops",)), True, id="only-the-start-is-trimmed"),
        pytest.param(
            "after:2026-02-30 x", "after:2026-02-30 x", F(), False, id="an-invalid-finished-token-stays"
        ),
        pytest.param("in: x", "in: x", F(), False, id="an-empty-finished-token-stays"),
        pytest.param(
            'in:"a from:b,c"d e"',
            'in:"a e"',
            F(from_usernames=("b",)),
            True,
            id="a-quote-closed-by-taking-out-at-the-end-is-being-typed",
        ),
        pytest.param(
            'in:"a from:b,c"d e" ',
            "",
            F(room_names=("a e",), from_usernames=("b",)),
            True,
            id="a-quote-closed-by-taking-out-and-a-space-finish",
        ),
        pytest.param("", "", F(), False, id="empty-text"),
    ],
)
def test_extract_completed_search_filters(
    text: str, search_text: str, filters: SearchFilters, has_completed: bool
) -> None:
    result = extract_completed_search_filters(text)
    assert (result.search_text, result.filters, result.has_completed_filters) == (
        search_text,
        filters,
        has_completed,
    )


# -- get_active_search_filter ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "caret", "expected"),
    [
        pytest.param("FROM:@ali", None, ("from", "@ali", 0, 9), id="key-lowered-value-keeps-its-sigil"),
        pytest.param('in:"team', None, ("in", '"team', 0, 8), id="value-keeps-its-open-quote"),
        pytest.param("deploy in:", None, ("in", "", 7, 10), id="an-empty-value-is-active"),
        pytest.param("deploy in:ops ", None, None, id="text-ending-with-whitespace-has-none"),
        pytest.param("deploy", None, None, id="plain-text-has-none"),
        pytest.param("", None, None, id="empty-text-has-none"),
        pytest.param("xin:gen", None, None, id="a-glued-key-is-not-a-token"),
        pytest.param("to:gen", None, None, id="an-unknown-key-is-not-a-token"),
        pytest.param("deploy in:gen x", 12, ("in", "gen", 7, 13), id="caret-mid-value-takes-the-whole-token"),
        pytest.param("in:ops", 3, ("in", "ops", 0, 6), id="caret-right-after-the-colon"),
        pytest.param("in:ops", 1, None, id="caret-inside-the-key-is-not-editing-a-value"),
        pytest.param("deploy in:ops", 3, None, id="caret-in-a-plain-word"),
        pytest.param("in:a from:b", 4, ("in", "a", 0, 4), id="caret-at-the-end-of-the-first-token"),
        pytest.param("in:a from:b", None, ("from", "b", 5, 11), id="the-last-token-by-default"),
        pytest.param(
            'in:"team ro deploy', 11, ("in", '"team ro', 0, 11), id="an-open-quote-stops-at-the-caret"
        ),
        pytest.param('in:"team room" x', 6, ("in", '"team room"', 0, 14), id="caret-inside-a-closed-quote"),
        pytest.param('x in:"a b', None, ("in", '"a b', 2, 9), id="an-open-quote-at-the-end-runs-to-the-end"),
        pytest.param("in:ops", 99, ("in", "ops", 0, 6), id="a-caret-past-the-end-is-clamped"),
        pytest.param("in:ops", -5, None, id="a-negative-caret-is-clamped-to-the-start"),
        pytest.param("after:2026-0", None, ("after", "2026-0", 0, 12), id="a-partial-date-is-active"),
    ],
)
def test_get_active_search_filter(
    text: str, caret: int | None, expected: tuple[str, str, int, int] | None
) -> None:
    active = get_active_search_filter(text, caret)
    assert (None if active is None else (active.key, active.value, active.start, active.end)) == expected


@pytest.mark.parametrize(
    ("value", "key", "lookup"),
    [
        pytest.param("#gen", "in", "gen", id="one-sigil-goes"),
        pytest.param('"team ro', "in", "team ro", id="an-open-quote-goes"),
        pytest.param('"#team room"', "in", "team room", id="both-quotes-and-the-sigil-go"),
        pytest.param("@@bob", "from", "@bob", id="only-one-sigil-goes"),
        pytest.param('"', "in", "", id="a-lone-quote-is-empty"),
        pytest.param("#2026", "after", "#2026", id="dates-have-no-sigil"),
    ],
)
def test_lookup_text_of_an_active_filter(value: str, key: str, lookup: str) -> None:
    assert ActiveSearchFilter(key, value, 0, 0).lookup_text == lookup


# -- apply_search_filter_token -------------------------------------------------------------------


def _active(text: str, caret: int | None = None) -> ActiveSearchFilter | None:
    return get_active_search_filter(text, caret)


@pytest.mark.parametrize(
    ("text", "active", "key", "value", "caret", "expected"),
    [
        pytest.param("", None, "after", "2026-01-01", None, ("after:2026-01-01 ", 17), id="upstream-example"),
        pytest.param("deploy", None, "in", "ops", None, ("deploy in:ops ", 14), id="appends-with-one-space"),
        pytest.param(
            "deploy   ", None, "in", "ops", None, ("deploy in:ops ", 14), id="trailing-spaces-become-one"
        ),
        pytest.param(
            "deploy in:op", _active("deploy in:op"), "in", "ops", None, ("deploy in:ops ", 14), id="end"
        ),
        pytest.param(
            "deploy in:gen x",
            _active("deploy in:gen x", 12),
            "in",
            "general",
            None,
            ("deploy in:general x", 18),
            id="mid-text-keeps-what-follows",
        ),
        pytest.param(
            "in:gen    x",
            _active("in:gen    x", 6),
            "in",
            "general",
            None,
            ("in:general x", 11),
            id="one-space",
        ),
        pytest.param(
            'in:"team ro',
            _active('in:"team ro'),
            "in",
            "team room",
            None,
            ('in:"team room" ', 15),
            id="quotes",
        ),
        pytest.param(
            'in:"team ro deploy',
            _active('in:"team ro deploy', 11),
            "in",
            "team room",
            None,
            ('in:"team room" deploy', 15),
            id="an-open-quote-mid-text-keeps-the-rest",
        ),
        pytest.param(
            "from:@ali", _active("from:@ali"), "from", "alice", None, ("from:alice ", 11), id="sigil-replaced"
        ),
        pytest.param(
            "deploy failed", None, "in", "ops", 3, ("deploy in:ops failed", 14), id="a-word-is-not-split"
        ),
        pytest.param("deploy", None, "in", "ops", 0, ("in:ops deploy", 7), id="insert-at-the-start"),
        pytest.param("a  b", None, "in", "ops", 2, ("a in:ops b", 9), id="insert-between-words"),
    ],
)
def test_apply_search_filter_token(
    text: str,
    active: ActiveSearchFilter | None,
    key: str,
    value: str,
    caret: int | None,
    expected: tuple[str, int],
) -> None:
    applied = apply_search_filter_token(text, active, key, value, caret)
    assert (applied.text, applied.caret) == expected


def test_apply_refuses_an_active_filter_outside_the_text() -> None:
    with pytest.raises(ValueError, match=r"active filter 3\.\.40 is outside a text of 6"):
        apply_search_filter_token("in:ops", ActiveSearchFilter("in", "x", 3, 40), "in", "ops")


def test_apply_refuses_an_unknown_key() -> None:
    with pytest.raises(ValueError, match="unknown search filter key 'to'"):
        apply_search_filter_token("x", None, "to", "alice")


# -- format_search_filter_value / serialize_search_query ---------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        pytest.param("in", "general", "in:general", id="plain"),
        pytest.param("in", "team room", 'in:"team room"', id="whitespace-is-quoted"),
        pytest.param("in", "a\tb", 'in:"a\tb"', id="a-tab-is-quoted"),
        pytest.param("in", "a,b", 'in:"a,b"', id="a-comma-is-quoted"),
        pytest.param("in", 'a"b', 'in:"ab"', id="a-quote-is-quoted-and-dropped"),
        pytest.param("in", "#general", "in:##general", id="a-name-starting-with-a-sigil-gets-one-more"),
        pytest.param("from", "@bob", "from:@@bob", id="a-user-starting-with-at"),
        pytest.param("from", "#x y", 'from:"@#x y"', id="the-extra-sigil-goes-inside-the-quotes"),
        pytest.param("after", "2026-01-01", "after:2026-01-01", id="a-date"),
        pytest.param("in", "日本語", "in:日本語", id="unicode-is-bare"),
        pytest.param("from", "", "from:", id="an-empty-value"),
    ],
)
def test_format_search_filter_value(key: str, value: str, expected: str) -> None:
    assert format_search_filter_value(key, value) == expected


@pytest.mark.parametrize(
    ("search_text", "filters", "expected"),
    [
        pytest.param("", F(), "", id="nothing"),
        pytest.param("  deploy   failed ", F(), "deploy failed", id="text-is-collapsed-and-trimmed"),
        pytest.param(
            "deploy",
            F(("ops", "team room"), ("r1",), ("alice",), "2026-01-01", "2026-02-01", "r2", "bob"),
            'in:ops in:"team room" from:alice after:2026-01-01 before:2026-02-01 deploy',
            id="table-order-then-text-and-no-rids",
        ),
        pytest.param("", F(room_names=("a,b",)), 'in:"a,b"', id="a-comma-name-is-quoted"),
        pytest.param("x", F(room_names=("", "a")), "in:a x", id="empty-values-are-dropped"),
    ],
)
def test_serialize_search_query(search_text: str, filters: SearchFilters, expected: str) -> None:
    assert serialize_search_query(search_text, filters) == expected


@pytest.mark.parametrize(
    "filters",
    [
        pytest.param(F(room_names=("a,b", "team room", "#x", "@y", "in:z")), id="awkward-room-names"),
        pytest.param(F(from_usernames=("@bob", "a b,c")), id="awkward-user-names"),
        pytest.param(F(start_date="2026-01-01", end_date="2028-02-29"), id="dates"),
        pytest.param(F(room_names=tuple(ROOMS_30[:MAX_SEARCH_FILTER_VALUES])), id="a-full-list"),
    ],
)
def test_serialize_then_parse_gives_the_filters_back(filters: SearchFilters) -> None:
    parsed = parse_search_filter_text(serialize_search_query("find this", filters))
    assert (parsed.search_text, parsed.filters) == ("find this", filters)


# -- merge_search_filters / remove_search_filter ----------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        pytest.param([], F(), id="no-input-is-empty"),
        pytest.param(
            [F(room_names=("Ops", "a")), F(room_names=("ops", "b"), from_usernames=("x",))],
            F(room_names=("Ops", "a", "b"), from_usernames=("x",)),
            id="lists-union-first-seen-case-insensitive",
        ),
        pytest.param(
            [F(rids=("R1",)), F(rids=("r1", "R1", ""))], F(rids=("R1", "r1")), id="rids-dedupe-exactly"
        ),
        pytest.param(
            [F(start_date="2026-01-01", rid="a"), F(start_date="", rid="b"), F(end_date="2026-02-01")],
            F(start_date="2026-01-01", end_date="2026-02-01", rid="b"),
            id="singles-take-the-last-non-empty",
        ),
        pytest.param(
            [F(room_names=tuple(ROOMS_30[:20])), F(room_names=tuple(ROOMS_30[15:]))],
            F(room_names=tuple(ROOMS_30[:MAX_SEARCH_FILTER_VALUES])),
            id="lists-are-capped",
        ),
        pytest.param([F(from_username="x"), F()], F(from_username="x"), id="from-username-kept"),
    ],
)
def test_merge_search_filters(inputs: list[SearchFilters], expected: SearchFilters) -> None:
    assert merge_search_filters(*inputs) == expected


@pytest.mark.parametrize(
    ("filters", "key", "value", "expected"),
    [
        pytest.param(F(("a", "B")), "in", "b", F(("a",)), id="a-room-case-insensitively"),
        pytest.param(F(("a",), from_usernames=("a",)), "from", "a", F(("a",)), id="only-under-its-key"),
        pytest.param(F(start_date="2026-01-01"), "after", "2026-01-01", F(), id="a-date"),
        pytest.param(F(("a",), rids=("r",)), "in", "zz", F(("a",), rids=("r",)), id="an-absent-value"),
    ],
)
def test_remove_search_filter(filters: SearchFilters, key: str, value: str, expected: SearchFilters) -> None:
    assert remove_search_filter(filters, key, value) == expected


# -- drop_unfinished_search_filters ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("deploy in:#", "deploy", id="a-room-key-with-only-its-sigil-goes"),
        pytest.param("deploy in:", "deploy", id="a-bare-key-goes"),
        pytest.param("in:# deploy from:@ failed", "deploy failed", id="several-anywhere-go"),
        pytest.param('deploy in:""', "deploy", id="an-empty-quoted-value-goes"),
        pytest.param('deploy in:"  "', "deploy", id="a-blank-quoted-value-goes"),
        pytest.param("after: x", "x", id="a-date-key-without-a-date-goes"),
        pytest.param("IN:# x", "x", id="keys-are-case-insensitive"),
        pytest.param("in:ops deploy", "in:ops deploy", id="a-filter-with-a-value-stays"),
        pytest.param("after:2026-13 x", "after:2026-13 x", id="an-invalid-value-is-left-to-the-grammar"),
        pytest.param("in:#, x", "in:#, x", id="commas-are-a-value"),
        pytest.param("xin: ops", "xin: ops", id="a-key-glued-to-a-word-is-text"),
        pytest.param("deploy failed", "deploy failed", id="text-without-tokens-is-untouched"),
        pytest.param("", "", id="empty-text"),
    ],
)
def test_drop_unfinished_search_filters(text: str, expected: str) -> None:
    assert drop_unfinished_search_filters(text) == expected


def test_a_search_for_an_unfinished_filter_searches_only_the_words() -> None:
    """What the page sends when Enter is pressed on `deploy in:#`: the word "deploy" alone."""
    parsed = parse_search_filter_text(drop_unfinished_search_filters("deploy in:#"))
    assert (parsed.search_text, parsed.filters) == ("deploy", SearchFilters())


# (typed, caret) -> (text, caret, filters taken out as a query line, or None): what the box does on
# each keystroke before its chips are drawn (the page's SearchBox and the keystroke stage alike).
TAKE_OUT_CASES = [
    ("deploy in:ops ", 14, ("deploy ", 7, "in:ops")),
    ("deploy in:ops", 13, ("deploy in:ops", 13, None)),  # still being typed
    ("in:ops failed", 7, ("failed", 0, "in:ops")),
    ("a in:ops  b", 9, ("a b", 2, "in:ops")),  # no doubled space where the filter stood
    ("a in:ops b", 2, ("a in:ops b", 2, None)),  # only the text before the caret is finished
    ('from:"Zoë L" x', 13, ("x", 0, 'from:"Zoë L"')),
    ("has:pdf x", 8, ("has:pdf x", 8, None)),  # refused: a word, not a chip
    ("", 0, ("", 0, None)),
]


@pytest.mark.parametrize(("typed", "caret", "expected"), TAKE_OUT_CASES)
def test_take_out_completed_search_filters(typed: str, caret: int, expected: tuple[str, int, str | None]) -> None:
    text, at, filters = _grammar.take_out_completed_search_filters(typed, caret)
    line = None if filters is None else _grammar.serialize_search_query("", filters)
    assert (text, at, line) == expected
