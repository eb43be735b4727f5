"""Suggestions, chips, the room lookup and the AI toggle (`ai_search._suggestions`, `_room_lookup`)."""

from __future__ import annotations

import datetime
import inspect
import re
from typing import Any

import pytest

from ai_search import _room_lookup, _suggestions
from ai_search._constants import AI_SEARCH_FILTER_SUGGESTION_LIMIT, MAX_ROOM_SEARCH_PATTERN_LENGTH
from ai_search._grammar import ActiveSearchFilter, get_active_search_filter, remove_search_filter
from ai_search._operators import SearchFilters
from ai_search._room_lookup import build_room_search_query, get_room_lookup_text
from ai_search._suggestions import (
    FilterSuggestion,
    RoomOption,
    UserOption,
    build_applied_filter_chips,
    build_filter_suggestions,
    build_user_filter_suggestions,
    get_ai_search_button_tooltip,
    merge_filter_suggestions,
    translate_english,
)

TODAY = datetime.date(2026, 3, 1)


def echo(key: str, /, **params: str) -> str:
    """A translator that shows what it was asked, to check keys and parameters."""
    return key + "".join(f"|{name}={value}" for name, value in sorted(params.items()))


def active(text: str, caret: int | None = None) -> ActiveSearchFilter | None:
    return get_active_search_filter(text, caret)


@pytest.mark.parametrize("module", [_suggestions, _room_lookup], ids=lambda m: m.__name__)
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


# -- build_filter_suggestions ---------------------------------------------------------------------

ROOMS: list[Any] = [
    {"_id": "r1", "name": "general", "fname": "General"},
    {"rid": "r2", "name": "ops"},
    RoomOption("r3", "", "Team Room"),
    {"_id": "r4"},
    RoomOption("", "no-id"),
    *({"_id": f"x{i}", "name": f"extra{i}"} for i in range(5)),
]


def _view(suggestions: tuple[FilterSuggestion, ...]) -> list[tuple[str, ...]]:
    return [(s.key, s.title, s.value, s.filter_key, s.rid or "", s.group, s.icon) for s in suggestions]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("deploy", [], id="no-active-token-no-suggestions"),
        pytest.param("deploy in:gen ", [], id="a-finished-token-no-suggestions"),
        pytest.param(
            "in:gen",
            [
                ("in-r1", "General", "general", "in", "r1", "rooms", "hash"),
                ("in-r2", "ops", "ops", "in", "r2", "rooms", "hash"),
                ("in-r3", "Team Room", "Team Room", "in", "r3", "rooms", "hash"),
                ("in-no-id", "no-id", "no-id", "in", "", "rooms", "hash"),
                ("in-x0", "extra0", "extra0", "in", "x0", "rooms", "hash"),
            ],
            id="rooms-value-is-the-name-title-the-display-name-capped-nameless-skipped",
        ),
        pytest.param(
            "FROM:@ali",
            [("from-current", "from:ali", "ali", "from", "", "users", "user")],
            id="from-offers-the-typed-name-without-its-sigil",
        ),
        pytest.param(
            'from:"ann lee',
            [("from-current", "from:ann lee", "ann lee", "from", "", "users", "user")],
            id="from-offers-a-quoted-name-without-its-quote",
        ),
        pytest.param("from:", [], id="from-with-nothing-typed-offers-nothing"),
        pytest.param("from:@", [], id="from-with-only-a-sigil-offers-nothing"),
        pytest.param(
            "after:",
            [
                ("after-today", "after:today", "today", "after", "", "dates", "calendar"),
                ("after-yesterday", "after:yesterday", "yesterday", "after", "", "dates", "calendar"),
                ("after--7d", "after:-7d", "-7d", "after", "", "dates", "calendar"),
                ("after-last-week", "after:last-week", "last-week", "after", "", "dates", "calendar"),
                ("after-this-month", "after:this-month", "this-month", "after", "", "dates", "calendar"),
                ("after-pick", "Pick a date…", "", "after", "", "date-picker", "calendar"),
            ],
            id="after-offers-date-words-before-anything-is-typed",
        ),
        pytest.param(
            "x before:2025-1",
            [
                ("before-2025-12", "before:2025-12", "2025-12", "before", "", "dates", "calendar"),
                ("before-2025-11", "before:2025-11", "2025-11", "before", "", "dates", "calendar"),
                ("before-2025-10", "before:2025-10", "2025-10", "before", "", "dates", "calendar"),
                ("before-pick", "Pick a date…", "", "before", "", "date-picker", "calendar"),
            ],
            id="a-typed-prefix-narrows-to-the-months-it-starts",
        ),
    ],
)
def test_build_filter_suggestions(text: str, expected: list[tuple[str, ...]]) -> None:
    assert _view(build_filter_suggestions(active(text), ROOMS, today=TODAY)) == expected


@pytest.mark.parametrize(
    ("text", "descriptions"),
    [
        pytest.param("in:g", ["Search_in_this_room"] * AI_SEARCH_FILTER_SUGGESTION_LIMIT, id="rooms"),
        pytest.param("from:al", ["Search_messages_from_this_username"], id="typed-user"),
        pytest.param(
            "after:",
            [
                "Search_date_today · 2026-03-01",
                "Search_date_yesterday · 2026-02-28",
                "Search_date_days_ago|count=7 · 2026-02-22",
                "Search_date_last_week · 2026-02-16 – 2026-02-22",
                "Search_date_this_month · 2026-03-01 – 2026-03-31",
                "Search_date_pick_description",
            ],
            id="dates",
        ),
    ],
)
def test_suggestion_descriptions_go_through_the_translator(text: str, descriptions: list[str]) -> None:
    suggestions = build_filter_suggestions(active(text), ROOMS, echo, TODAY)
    assert [s.description for s in suggestions] == descriptions


def test_suggestion_descriptions_default_to_english() -> None:
    suggestions = build_filter_suggestions(active("after:"), (), today=TODAY)
    assert [s.description for s in suggestions][:3] == [
        "Today · 2026-03-01",
        "Yesterday · 2026-02-28",
        "7 days ago · 2026-02-22",
    ]


def test_date_suggestions_default_to_the_local_calendar_date() -> None:
    before = datetime.date.today()
    first = build_filter_suggestions(active("after:"))[0].description
    assert first in {f"Today · {before.isoformat()}", f"Today · {datetime.date.today().isoformat()}"}


def test_a_week_ago_crosses_a_year_boundary() -> None:
    found = build_filter_suggestions(active("after:"), today=datetime.date(2027, 1, 3))
    assert [s.description.rsplit(" · ", 1)[1] for s in found[:3]] == [
        "2027-01-03",
        "2027-01-02",
        "2026-12-27",
    ]


def test_a_suggestion_value_applies_as_the_same_filter() -> None:
    from ai_search._grammar import apply_search_filter_token, parse_search_filter_text

    current = active("deploy in:tea")
    room = build_filter_suggestions(current, [RoomOption("r3", "team room")])[0]
    applied = apply_search_filter_token("deploy in:tea", current, room.filter_key, room.value)
    assert parse_search_filter_text(applied.text).filters.room_names == ("team room",)


# -- build_user_filter_suggestions / merge_filter_suggestions ------------------------------------

USERS: list[Any] = [
    {"_id": "u1", "username": "alice", "name": "Alice Liddell"},
    UserOption("u2", "bob"),
    {"_id": "u3"},
    *({"_id": f"v{i}", "username": f"user{i}"} for i in range(6)),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("in:al", [], id="not-a-from-token"),
        pytest.param("deploy", [], id="no-active-token"),
        pytest.param(
            "from:al",
            [
                ("from-u1", "@alice", "alice", "Alice Liddell"),
                ("from-u2", "@bob", "bob", "Search_messages_from_this_user"),
                ("from-v0", "@user0", "user0", "Search_messages_from_this_user"),
                ("from-v1", "@user1", "user1", "Search_messages_from_this_user"),
                ("from-v2", "@user2", "user2", "Search_messages_from_this_user"),
            ],
            id="users-value-is-the-username-capped-nameless-skipped",
        ),
    ],
)
def test_build_user_filter_suggestions(text: str, expected: list[tuple[str, ...]]) -> None:
    suggestions = build_user_filter_suggestions(active(text), USERS, echo)
    assert [(s.key, s.title, s.value, s.description) for s in suggestions] == expected
    assert all((s.filter_key, s.group, s.icon) == ("from", "users", "user") for s in suggestions)


def _suggestion(filter_key: str, value: str, key: str = "") -> FilterSuggestion:
    return FilterSuggestion(key or f"{filter_key}-{value}", "g", value, "", value, "i", filter_key)


@pytest.mark.parametrize(
    ("primary", "fallback", "expected_keys"),
    [
        pytest.param([], [], [], id="nothing"),
        pytest.param(
            [_suggestion("from", "alice", "from-u1")],
            [_suggestion("from", "Alice", "from-current"), _suggestion("from", "bob")],
            ["from-u1", "from-bob"],
            id="a-fallback-applying-the-same-filter-is-dropped-case-insensitively",
        ),
        pytest.param(
            [_suggestion("in", "x")],
            [_suggestion("from", "x")],
            ["in-x", "from-x"],
            id="the-same-value-under-another-key-is-kept",
        ),
        pytest.param(
            [],
            [_suggestion("in", "x", "a"), _suggestion("in", "X", "b")],
            ["a"],
            id="the-fallback-is-deduped-too",
        ),
    ],
)
def test_merge_filter_suggestions(
    primary: list[FilterSuggestion], fallback: list[FilterSuggestion], expected_keys: list[str]
) -> None:
    assert [s.key for s in merge_filter_suggestions(primary, fallback)] == expected_keys


# -- get_room_lookup_text -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "can", "expected"),
    [
        pytest.param("in:#gen", True, "gen", id="the-room-value-without-its-sigil"),
        pytest.param('in:"#team ro', True, "team ro", id="without-quote-and-sigil"),
        pytest.param("in:", True, "", id="nothing-typed-yet"),
        pytest.param("in:#gen", False, "", id="inline-filters-off"),
        pytest.param("from:gen", True, "", id="not-a-room-token"),
        pytest.param("gen", True, "", id="no-token"),
    ],
)
def test_get_room_lookup_text(text: str, can: bool, expected: str) -> None:
    assert get_room_lookup_text(active(text), can) == expected


# -- build_applied_filter_chips -------------------------------------------------------------------


def test_one_chip_per_value_in_table_order_with_english_titles() -> None:
    filters = SearchFilters(
        room_names=("ops", "Team Room"),
        rids=("r9",),
        from_usernames=("alice",),
        start_date="2026-01-01",
        end_date="2026-02-01",
        rid="r8",
        from_username="zed",
    )
    chips = [(c.key, c.filter_key, c.value, c.label, c.title) for c in build_applied_filter_chips(filters)]
    assert chips == [
        ("in:ops", "in", "ops", "#ops", "Only messages in #ops"),
        ("in:team room", "in", "Team Room", "#Team Room", "Only messages in #Team Room"),
        ("from:alice", "from", "alice", "@alice", "Only messages from @alice"),
        ("after:2026-01-01", "after", "2026-01-01", "after:2026-01-01", "Only messages after 2026-01-01"),
        ("before:2026-02-01", "before", "2026-02-01", "before:2026-02-01", "Only messages before 2026-02-01"),
    ]


def test_chip_titles_go_through_the_translator_with_their_parameter() -> None:
    filters = SearchFilters(room_names=("ops",), from_usernames=("al",), start_date="2026-01-01")
    assert [c.title for c in build_applied_filter_chips(filters, echo)] == [
        "Search_filter_in_rooms|rooms=#ops",
        "Search_filter_from_users|users=@al",
        "Search_filter_after_date|date=2026-01-01",
    ]


def test_no_filters_no_chips() -> None:
    assert build_applied_filter_chips(SearchFilters(rids=("r1",))) == ()


def test_each_chip_carries_what_removes_exactly_its_value() -> None:
    filters = SearchFilters(room_names=("a", "b"), from_usernames=("a",), end_date="2026-01-01")
    for chip in build_applied_filter_chips(filters):
        remaining = remove_search_filter(filters, chip.filter_key, chip.value)
        assert [c.key for c in build_applied_filter_chips(remaining)] == [
            c.key for c in build_applied_filter_chips(filters) if c.key != chip.key
        ]


# -- build_room_search_query -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "mention", "text", "pattern", "only", "exclude"),
    [
        pytest.param("ops", None, "ops", "ops", (), (), id="plain"),
        pytest.param("a.b*c", None, "a.b*c", r"a\.b\*c", (), (), id="metacharacters-are-escaped"),
        pytest.param(
            r"(x)[y]{z}|^$+?\/",
            None,
            r"(x)[y]{z}|^$+?\/",
            re.escape(r"(x)[y]{z}|^$+?\/").replace("/", r"\/"),
            (),
            (),
            id="every-javascript-syntax-character-and-slash",
        ),
        pytest.param("/" * 128, None, "/" * 64, r"\/" * 64, (), (), id="cut-to-64-before-escaping"),
        pytest.param("ali", "@", "ali", "ali", ("d",), (), id="at-mention-is-direct-messages-only"),
        pytest.param("ops", "#", "ops", "ops", (), ("d",), id="hash-mention-leaves-direct-messages-out"),
        pytest.param("ops", "", "ops", "ops", (), (), id="an-empty-mention-is-no-mention"),
        pytest.param("Café", None, "Café", "Café", (), (), id="unicode-is-kept"),
    ],
)
def test_build_room_search_query(
    value: str, mention: str | None, text: str, pattern: str, only: tuple[str, ...], exclude: tuple[str, ...]
) -> None:
    query = build_room_search_query(value, mention)
    assert (query.text, query.pattern, query.only_room_types, query.exclude_room_types) == (
        text,
        pattern,
        only,
        exclude,
    )
    assert query.fields == ("name", "fname")
    assert len(query.text) <= MAX_ROOM_SEARCH_PATTERN_LENGTH


@pytest.mark.parametrize(
    ("value", "name", "fname", "room_type", "mention", "matches"),
    [
        pytest.param("OPS", "platform-ops", "", "c", None, True, id="case-insensitive-substring-of-name"),
        pytest.param("team r", "t1", "Team Room", "p", None, True, id="or-of-the-display-name"),
        pytest.param("a.c", "abc", "", "c", None, False, id="a-dot-is-a-dot"),
        pytest.param("bob", "alice-bob", "", "d", "@", True, id="a-direct-message-for-at"),
        pytest.param("ops", "ops", "", "c", "@", False, id="not-a-direct-message-for-at"),
        pytest.param("bob", "alice-bob", "", "d", "#", False, id="direct-messages-left-out-for-hash"),
        pytest.param("ÉTÉ", "été-2026", "", "c", None, True, id="unicode-case-folding"),
    ],
)
def test_the_regex_and_the_plain_substring_agree(
    value: str, name: str, fname: str, room_type: str, mention: str | None, matches: bool
) -> None:
    query = build_room_search_query(value, mention)
    assert query.matches(name, fname, room_type) is matches
    regex = re.compile(query.pattern, re.IGNORECASE)
    type_ok = room_type not in query.exclude_room_types and (
        not query.only_room_types or room_type in query.only_room_types
    )
    assert (type_ok and any(regex.search(v) for v in (name, fname))) is matches


@pytest.mark.parametrize(
    ("value", "like"),
    [
        pytest.param("Ops", "%ops%", id="lower-cased-and-wrapped"),
        pytest.param("50%_off\\", "%50\\%\\_off\\\\%", id="like-wildcards-and-the-escape-are-escaped"),
    ],
)
def test_like_pattern(value: str, like: str) -> None:
    query = build_room_search_query(value)
    assert (query.needle, query.like_pattern) == (value.lower(), like)


# -- get_ai_search_button_tooltip / translate_english ------------------------------------------


@pytest.mark.parametrize(
    ("has_license", "enabled", "is_active", "key"),
    [
        pytest.param(False, True, True, "AI_Search_license_required_tooltip", id="no-license-comes-first"),
        pytest.param(False, False, False, "AI_Search_license_required_tooltip", id="no-license-and-disabled"),
        pytest.param(True, False, True, "AI_Search_disabled_tooltip", id="disabled-by-the-setting"),
        pytest.param(True, True, True, "Disable_AI_Search", id="active-offers-to-turn-off"),
        pytest.param(True, True, False, "Enable_AI_Search", id="inactive-offers-to-turn-on"),
    ],
)
def test_get_ai_search_button_tooltip(has_license: bool, enabled: bool, is_active: bool, key: str) -> None:
    assert get_ai_search_button_tooltip(has_license, enabled, is_active, echo) == key
    assert get_ai_search_button_tooltip(has_license, enabled, is_active) == translate_english(key) != key


@pytest.mark.parametrize(
    ("key", "params", "expected"),
    [
        pytest.param(
            "Search_filter_in_rooms", {"rooms": "#a {b}"}, "Only messages in #a {b}", id="fills-fields"
        ),
        pytest.param("Search_filter_in_rooms", {}, "Only messages in {rooms}", id="a-missing-field-stays"),
        pytest.param("No_such_key", {"x": "1"}, "No_such_key", id="an-unknown-key-is-returned"),
    ],
)
def test_translate_english(key: str, params: dict[str, str], expected: str) -> None:
    assert translate_english(key, **params) == expected
