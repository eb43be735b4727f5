"""Properties of the filter grammar: it never raises, it round-trips, and its output is canonical."""

from __future__ import annotations

import datetime
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ai_search._constants import MAX_SEARCH_FILTER_VALUES
from ai_search._grammar import (
    apply_search_filter_token,
    drop_unfinished_search_filters,
    extract_completed_search_filters,
    find_refused_search_filters,
    format_search_filter_value,
    get_active_search_filter,
    parse_search_filter_text,
    serialize_search_query,
)
from ai_search._operators import (
    HAS_VALUES,
    IS_VALUES,
    SEARCH_FILTER_OPERATORS,
    SEARCH_FILTER_PREFIXES,
    SORT_VALUES,
    SearchFilters,
    get_search_filter_operator,
    resolve_search_dates,
)
from ai_search._search_dates import SEARCH_DATE_WORDS
from ai_search._suggestions import build_applied_filter_chips, build_filter_hints, build_filter_suggestions

PROPERTY_SETTINGS = settings(max_examples=300, deadline=None)

# Text that looks like queries: filter keys in any case, sigils, quotes, commas, dates, odd spaces.
_FRAGMENTS = st.sampled_from(
    [
        *SEARCH_FILTER_PREFIXES,
        "IN:",
        "From:",
        "-IN:",
        "Has:",
        "-",
        "--",
        "link",
        "DM",
        "new",
        "-7d",
        "yesterday",
        "2026-10",
        "last-week",
        "#",
        "@",
        '"',
        ",",
        " ",
        "\t",
        "\u3000",
        "\n",
        "2026-02-28",
        "2026-02-30",
        "ops",
        "Ops",
        "café",
        "x",
    ]
)
QUERY_LIKE_TEXT = st.one_of(st.text(), st.lists(_FRAGMENTS | st.text(max_size=3)).map("".join))

_NAME_CHARACTERS = st.characters(exclude_categories=["Cs"], exclude_characters='"')
VALID_NAMES = (
    st.one_of(
        st.sampled_from(["#x", "@x", "##", "a,b", "team room", "in:x", "from:y z", "ß", "İstanbul", "a\tb"]),
        st.text(_NAME_CHARACTERS, min_size=1, max_size=12),
    )
    .map(str.strip)
    .filter(bool)
)
NAME_LISTS = st.lists(VALID_NAMES, max_size=MAX_SEARCH_FILTER_VALUES, unique_by=str.lower).map(tuple)
DATES = st.none() | st.one_of(
    st.dates(min_value=datetime.date(1, 1, 1)).map(datetime.date.isoformat),
    st.dates(min_value=datetime.date(1, 1, 1)).map(lambda day: day.isoformat()[:7]),
    st.sampled_from(SEARCH_DATE_WORDS),
    st.integers(min_value=1, max_value=999).map(lambda n: f"-{n}d"),
)
_WORDS = (
    st.one_of(
        st.sampled_from(["a,b", "two words", "in:x", "--v", "#x", "-", "x-y", "7"]),
        st.text(_NAME_CHARACTERS, min_size=1, max_size=12),
    )
    .map(str.strip)
    .filter(bool)
)


def _choices(values: dict[str, str] | Any) -> st.SearchStrategy[tuple[str, ...]]:
    return st.lists(st.sampled_from(sorted(set(values.values()))), unique=True).map(tuple)


@st.composite
def valid_queries(draw: st.DrawFn) -> tuple[str, SearchFilters]:
    """A search text that is already canonical (what parsing leaves) and filters the grammar can hold."""
    search_text = parse_search_filter_text(draw(QUERY_LIKE_TEXT)).search_text
    filters = SearchFilters(
        room_names=draw(NAME_LISTS),
        from_usernames=draw(NAME_LISTS),
        start_date=draw(DATES),
        end_date=draw(DATES),
        excluded_room_names=draw(NAME_LISTS),
        excluded_usernames=draw(NAME_LISTS),
        has=draw(_choices(HAS_VALUES)),
        excluded_has=draw(_choices(HAS_VALUES)),
        is_=draw(_choices(IS_VALUES)),
        excluded_is=draw(_choices(IS_VALUES)),
        on_date=draw(DATES),
        during=draw(DATES),
        sort=draw(st.none() | st.sampled_from(sorted(set(SORT_VALUES.values())))),
        excluded_words=draw(
            st.lists(_WORDS, max_size=MAX_SEARCH_FILTER_VALUES, unique_by=str.lower).map(tuple)
        ),
    )
    return search_text, filters


@PROPERTY_SETTINGS
@given(QUERY_LIKE_TEXT, st.integers(min_value=-2, max_value=300))
def test_nothing_raises_on_any_text(text: str, caret: int) -> None:
    parse_search_filter_text(text)
    extract_completed_search_filters(text)
    active = get_active_search_filter(text, caret)
    apply_search_filter_token(text, active, "in", "ops", caret)


@PROPERTY_SETTINGS
@given(valid_queries())
def test_parse_gives_back_what_serialize_wrote(query: tuple[str, SearchFilters]) -> None:
    search_text, filters = query
    parsed = parse_search_filter_text(serialize_search_query(search_text, filters))
    assert (parsed.search_text, parsed.filters) == (search_text, filters)


@PROPERTY_SETTINGS
@given(valid_queries())
def test_serialization_is_stable(query: tuple[str, SearchFilters]) -> None:
    line = serialize_search_query(*query)
    parsed = parse_search_filter_text(line)
    assert serialize_search_query(parsed.search_text, parsed.filters) == line


@PROPERTY_SETTINGS
@given(QUERY_LIKE_TEXT)
def test_any_text_parses_to_a_canonical_query(text: str) -> None:
    parsed = parse_search_filter_text(text)
    again = parse_search_filter_text(serialize_search_query(parsed.search_text, parsed.filters))
    assert again == parsed
    assert parse_search_filter_text(parsed.search_text).filters == SearchFilters()


# Quotes opened by a key that close only once a token between is taken out (`in:"a from:b,c"d e"`).
_OPEN_QUOTE_PIECES = ['in:"a ', 'from:b,c"d ', 'in:"x y" ', "after:2026-13-01 ", 'e"', 'e" ', '"', " ", "z"]
_OPEN_QUOTE_TEXT = st.lists(st.sampled_from(_OPEN_QUOTE_PIECES), max_size=12).map("".join)


@PROPERTY_SETTINGS
@given(_OPEN_QUOTE_TEXT)
def test_taking_tokens_out_of_open_quotes_leaves_no_filter_in_the_words(text: str) -> None:
    parsed = parse_search_filter_text(text)
    assert parse_search_filter_text(parsed.search_text).filters == SearchFilters()
    assert parse_search_filter_text(serialize_search_query(parsed.search_text, parsed.filters)) == parsed
    completed = extract_completed_search_filters(text + " ")
    assert parse_search_filter_text(completed.search_text).filters == SearchFilters()


@PROPERTY_SETTINGS
@given(QUERY_LIKE_TEXT.map(lambda text: text.replace('"', "")))
def test_a_trailing_space_finishes_every_token(text: str) -> None:
    # Without quotes, text being typed and finished text differ only in the last token.
    completed = extract_completed_search_filters(text + " ")
    parsed = parse_search_filter_text(text)
    assert completed.filters == parsed.filters
    assert completed.search_text.strip() == parsed.search_text


@PROPERTY_SETTINGS
@given(QUERY_LIKE_TEXT, st.integers(min_value=0, max_value=300), VALID_NAMES)
def test_applying_a_suggestion_replaces_only_the_active_token(text: str, caret: int, name: str) -> None:
    active = get_active_search_filter(text, caret)
    applied = apply_search_filter_token(text, active, "in", name, caret)
    if active is not None:
        typed_prefix = text[active.start : active.end - len(active.value)]
        assert typed_prefix.lower() in get_search_filter_operator(active.key).prefixes
        assert text[active.start : active.end].endswith(active.value)
        assert applied.text[: active.start] == text[: active.start]
        assert applied.text[applied.caret :] == text[active.end :].lstrip()
    token = format_search_filter_value("in", name)
    assert applied.text[: applied.caret].endswith(token + " ")
    start = applied.caret - len(token) - 1
    assert start == 0 or applied.text[start - 1].isspace()
    assert parse_search_filter_text(token).filters.room_names == (name,)


#: A filter key left without a value: the prefix alone, in empty quotes, or (for a room or person
#: key, whose values take a sigil) a lone `#`/`@`. `after:#` is not one: it has a value, a wrong one,
#: which the grammar refuses with a hint rather than dropping.
_UNFINISHED = re.compile(
    r"(?:^|(?<=\s))(?:"
    + "|".join(
        re.escape(prefix) + (r'(?:[#@]|"\s*")?' if op.sigil else r'(?:"\s*")?')
        for op in SEARCH_FILTER_OPERATORS
        for prefix in sorted(op.prefixes, key=len, reverse=True)
        if prefix != "-"
    )
    + r")(?=\s|$)",
    re.IGNORECASE,
)


@PROPERTY_SETTINGS
@given(QUERY_LIKE_TEXT)
def test_dropping_unfinished_filters_keeps_every_filter_and_leaves_none_unfinished(text: str) -> None:
    dropped = drop_unfinished_search_filters(text)
    assert parse_search_filter_text(dropped).filters == parse_search_filter_text(text).filters
    assert not _UNFINISHED.search(dropped)
    assert drop_unfinished_search_filters(dropped) == dropped


@PROPERTY_SETTINGS
@given(QUERY_LIKE_TEXT, st.integers(min_value=0, max_value=300), st.dates(min_value=datetime.date(1, 1, 1)))
def test_chips_hints_and_suggestions_never_raise_and_chips_edit_back(
    text: str, caret: int, today: datetime.date
) -> None:
    filters = parse_search_filter_text(text).filters
    for chip in build_applied_filter_chips(filters, today=today):
        alone = parse_search_filter_text(chip.token).filters
        assert get_search_filter_operator(chip.filter_key).values_of(alone) == (chip.value,)
    build_filter_hints(find_refused_search_filters(text))
    build_filter_suggestions(get_active_search_filter(text, caret), today=today)
    resolve_search_dates(filters, today)


@PROPERTY_SETTINGS
@given(QUERY_LIKE_TEXT)
def test_refused_tokens_are_words_of_the_search_text(text: str) -> None:
    words = parse_search_filter_text(drop_unfinished_search_filters(text)).search_text
    for refused in find_refused_search_filters(text):
        assert refused.token in words
