"""Date values of the search line (`ai_search._search_dates`) and the days a query's date filters leave."""

from __future__ import annotations

import datetime
import zoneinfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ai_search._operators import SearchFilters, resolve_search_dates
from ai_search._search_dates import (
    MAX_RELATIVE_DATE_AMOUNT,
    SEARCH_DATE_WORDS,
    DatePeriod,
    SearchDateRange,
    format_date_period,
    normalise_search_date,
    resolve_search_date,
    search_date_bounds,
)

D = datetime.date
TUESDAY = D(2026, 12, 1)
PROPERTY_SETTINGS = settings(max_examples=300, deadline=None)


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        pytest.param("2026-11-03", "2026-11-03", id="iso-day"),
        pytest.param("2024-02-29", "2024-02-29", id="leap-day"),
        pytest.param("2026-02-29", None, id="no-leap-day-in-2026"),
        pytest.param("2026-02-30", None, id="february-30-is-refused"),
        pytest.param("2026-13-01", None, id="month-13-is-refused"),
        pytest.param("0000-01-01", None, id="year-zero-is-refused"),
        pytest.param("2026-10", "2026-10", id="month"),
        pytest.param("2026-00", None, id="month-zero-is-refused"),
        pytest.param("2026", "2026", id="year"),
        pytest.param("0000", None, id="year-zero-alone-is-refused"),
        pytest.param("26-10-01", None, id="two-digit-year-is-refused"),
        pytest.param("01/10/2026", None, id="dd-mm-yyyy-is-refused"),
        pytest.param("Yesterday", "yesterday", id="words-fold-case"),
        pytest.param(" today ", "today", id="words-are-trimmed"),
        pytest.param("-7d", "-7d", id="days-back"),
        pytest.param("-2W", "-2w", id="weeks-back-any-case"),
        pytest.param("-3m", "-3m", id="months-back"),
        pytest.param("-1y", "-1y", id="years-back"),
        pytest.param("-0d", None, id="zero-days-is-refused"),
        pytest.param("-07d", None, id="a-leading-zero-is-refused"),
        pytest.param(
            f"-{MAX_RELATIVE_DATE_AMOUNT}d", f"-{MAX_RELATIVE_DATE_AMOUNT}d", id="the-largest-amount"
        ),
        pytest.param(f"-{MAX_RELATIVE_DATE_AMOUNT + 1}d", None, id="past-the-largest-amount"),
        pytest.param("7d", None, id="an-amount-needs-its-minus"),
        pytest.param("-7h", None, id="hours-are-no-unit"),
        pytest.param("mon", "monday", id="weekday-abbreviation"),
        pytest.param("FRIDAY", "friday", id="weekday"),
        pytest.param("oct", "october", id="month-abbreviation"),
        pytest.param("last-week", "last-week", id="last-week"),
        pytest.param("lastweek", None, id="last-week-needs-its-dash"),
        pytest.param("tomorrow", None, id="the-future-is-no-word"),
        pytest.param("", None, id="empty"),
    ],
)
def test_normalise_search_date(raw: str, canonical: str | None) -> None:
    assert normalise_search_date(raw) == canonical


@pytest.mark.parametrize(
    ("value", "today", "first", "last"),
    [
        pytest.param("2026-11-03", TUESDAY, D(2026, 11, 3), D(2026, 11, 3), id="a-day-is-itself"),
        pytest.param("2026-10", TUESDAY, D(2026, 10, 1), D(2026, 10, 31), id="a-month"),
        pytest.param("2024-02", TUESDAY, D(2024, 2, 1), D(2024, 2, 29), id="a-leap-february"),
        pytest.param("2026", TUESDAY, D(2026, 1, 1), D(2026, 12, 31), id="a-year"),
        pytest.param("today", TUESDAY, TUESDAY, TUESDAY, id="today"),
        pytest.param("yesterday", TUESDAY, D(2026, 11, 30), D(2026, 11, 30), id="yesterday-crosses-a-month"),
        pytest.param(
            "yesterday", D(2027, 1, 1), D(2026, 12, 31), D(2026, 12, 31), id="yesterday-crosses-a-year"
        ),
        pytest.param("-7d", TUESDAY, D(2026, 11, 24), D(2026, 11, 24), id="a-week-of-days-back"),
        pytest.param("-7d", D(2027, 1, 3), D(2026, 12, 27), D(2026, 12, 27), id="days-back-cross-a-year"),
        pytest.param("-2w", TUESDAY, D(2026, 11, 17), D(2026, 11, 17), id="weeks-back"),
        pytest.param("-1m", D(2026, 3, 31), D(2026, 2, 28), D(2026, 2, 28), id="a-month-back-from-march-31"),
        pytest.param("-1m", D(2024, 3, 31), D(2024, 2, 29), D(2024, 2, 29), id="a-month-back-in-a-leap-year"),
        pytest.param(
            "-1m", D(2026, 1, 15), D(2025, 12, 15), D(2025, 12, 15), id="a-month-back-crosses-a-year"
        ),
        pytest.param("-13m", D(2026, 1, 15), D(2024, 12, 15), D(2024, 12, 15), id="thirteen-months-back"),
        pytest.param("-1y", D(2024, 2, 29), D(2023, 2, 28), D(2023, 2, 28), id="a-year-back-from-a-leap-day"),
        pytest.param("monday", TUESDAY, D(2026, 11, 30), D(2026, 11, 30), id="the-last-monday"),
        pytest.param("tuesday", TUESDAY, TUESDAY, TUESDAY, id="a-weekday-is-today-on-that-day"),
        pytest.param("wednesday", TUESDAY, D(2026, 11, 25), D(2026, 11, 25), id="wednesday-was-last-week"),
        pytest.param("this-week", TUESDAY, D(2026, 11, 30), D(2026, 12, 6), id="this-week-monday-to-sunday"),
        pytest.param("last-week", TUESDAY, D(2026, 11, 23), D(2026, 11, 29), id="last-week"),
        pytest.param(
            "last-week", D(2027, 1, 3), D(2026, 12, 21), D(2026, 12, 27), id="last-week-on-a-sunday"
        ),
        pytest.param(
            "last-month", D(2026, 1, 10), D(2025, 12, 1), D(2025, 12, 31), id="last-month-crosses-a-year"
        ),
        pytest.param("this-month", D(2026, 2, 10), D(2026, 2, 1), D(2026, 2, 28), id="this-month"),
        pytest.param("last-year", TUESDAY, D(2025, 1, 1), D(2025, 12, 31), id="last-year"),
        pytest.param("october", TUESDAY, D(2026, 10, 1), D(2026, 10, 31), id="a-month-this-year"),
        pytest.param(
            "december", D(2026, 11, 5), D(2025, 12, 1), D(2025, 12, 31), id="a-month-not-begun-is-last-years"
        ),
        pytest.param("-999y", D(900, 6, 1), D(1, 1, 1), D(1, 1, 1), id="clamped-to-the-calendar"),
        pytest.param("yesterday", D(1, 1, 1), D(1, 1, 1), D(1, 1, 1), id="clamped-at-its-first-day"),
        pytest.param("this-week", D(9999, 12, 31), D(9999, 12, 27), D(9999, 12, 31), id="clamped-at-its-end"),
    ],
)
def test_resolve_search_date(
    value: str, today: datetime.date, first: datetime.date, last: datetime.date
) -> None:
    assert resolve_search_date(value, today) == DatePeriod(first, last)


def test_resolving_refuses_a_value_that_is_not_canonical() -> None:
    with pytest.raises(ValueError, match="not a canonical search date: 'Yesterday'"):
        resolve_search_date("Yesterday", TUESDAY)


@pytest.mark.parametrize(
    ("filters", "start", "end"),
    [
        pytest.param(SearchFilters(), None, None, id="no-dates-no-bounds"),
        pytest.param(
            SearchFilters(start_date="yesterday"), D(2026, 11, 30), None, id="after-includes-its-day"
        ),
        pytest.param(
            SearchFilters(end_date="2026-10"), None, D(2026, 10, 1), id="before-ends-where-it-starts"
        ),
        pytest.param(SearchFilters(on_date="2026-11-03"), D(2026, 11, 3), D(2026, 11, 4), id="on-is-one-day"),
        pytest.param(SearchFilters(during="2026-10"), D(2026, 10, 1), D(2026, 11, 1), id="during-a-month"),
        pytest.param(
            SearchFilters(during="last-week"), D(2026, 11, 23), D(2026, 11, 30), id="during-last-week"
        ),
        pytest.param(
            SearchFilters(start_date="-7d", during="2026-11"),
            D(2026, 11, 24),
            D(2026, 12, 1),
            id="filters-narrow-each-other",
        ),
        pytest.param(
            SearchFilters(start_date="today", end_date="yesterday"),
            TUESDAY,
            D(2026, 11, 30),
            id="contradicting-filters-leave-no-day",
        ),
    ],
)
def test_resolve_search_dates(
    filters: SearchFilters, start: datetime.date | None, end: datetime.date | None
) -> None:
    days = resolve_search_dates(filters, TUESDAY)
    assert (days.start, days.end) == (start, end)
    assert days.empty == (start is not None and end is not None and start >= end)


def test_a_day_across_a_daylight_saving_change_is_23_or_25_hours() -> None:
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    spring = search_date_bounds(SearchDateRange(D(2026, 3, 29), D(2026, 3, 30)), paris)
    autumn = search_date_bounds(SearchDateRange(D(2026, 10, 25), D(2026, 10, 26)), paris)
    assert spring == (
        datetime.datetime(2026, 3, 28, 23, tzinfo=datetime.UTC),
        datetime.datetime(2026, 3, 29, 22, tzinfo=datetime.UTC),
    )
    assert autumn[1] - autumn[0] == datetime.timedelta(hours=25)


def test_relative_dates_across_a_daylight_saving_change_start_at_local_midnight() -> None:
    new_york = zoneinfo.ZoneInfo("America/New_York")
    today = D(2026, 11, 3)  # two days after the clocks went back on 1 November
    days = resolve_search_dates(SearchFilters(start_date="-7d", end_date="yesterday"), today)
    start, end = search_date_bounds(days, new_york)
    assert start == datetime.datetime(2026, 10, 27, 4, tzinfo=datetime.UTC)  # EDT, UTC-4
    assert end == datetime.datetime(2026, 11, 2, 5, tzinfo=datetime.UTC)  # EST, UTC-5


def test_a_fixed_offset_zone_gives_fixed_midnights() -> None:
    zone = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
    start, end = search_date_bounds(SearchDateRange(D(2026, 11, 3), None), zone)
    assert (start, end) == (datetime.datetime(2026, 11, 2, 18, 30, tzinfo=datetime.UTC), None)


@pytest.mark.parametrize(
    ("period", "text"),
    [
        pytest.param(DatePeriod(D(2026, 11, 3), D(2026, 11, 3)), "2026-11-03", id="a-day"),
        pytest.param(DatePeriod(D(2026, 10, 1), D(2026, 10, 31)), "2026-10-01 – 2026-10-31", id="a-range"),
    ],
)
def test_format_date_period(period: DatePeriod, text: str) -> None:
    assert format_date_period(period) == text


# -- properties -----------------------------------------------------------------------------------

_TODAYS = st.dates(min_value=D(1, 1, 1), max_value=D(9999, 12, 31))
_RELATIVE = st.builds(
    lambda amount, unit: f"-{amount}{unit}",
    st.integers(min_value=1, max_value=MAX_RELATIVE_DATE_AMOUNT),
    st.sampled_from("dwmy"),
)
_VALUES = st.one_of(
    st.sampled_from(SEARCH_DATE_WORDS),
    _RELATIVE,
    st.dates(min_value=D(1, 1, 1)).map(datetime.date.isoformat),
    st.dates(min_value=D(1, 1, 1)).map(lambda d: d.isoformat()[:7]),
    st.integers(min_value=1, max_value=9999).map(lambda y: f"{y:04d}"),
)


@PROPERTY_SETTINGS
@given(_VALUES, _TODAYS)
def test_every_canonical_value_names_days_that_exist_in_order(value: str, today: datetime.date) -> None:
    assert normalise_search_date(value) == value
    assert normalise_search_date(value.upper()) == value
    period = resolve_search_date(value, today)
    assert period.first <= period.last


@PROPERTY_SETTINGS
@given(_RELATIVE, _TODAYS)
def test_relative_values_never_name_a_day_after_today(value: str, today: datetime.date) -> None:
    period = resolve_search_date(value, today)
    assert period.first == period.last <= today


@PROPERTY_SETTINGS
@given(st.integers(min_value=1, max_value=400), st.dates(min_value=D(2000, 1, 1), max_value=D(2100, 1, 1)))
def test_days_back_are_exactly_that_many_days(amount: int, today: datetime.date) -> None:
    assert resolve_search_date(f"-{amount}d", today).first == today - datetime.timedelta(days=amount)


@PROPERTY_SETTINGS
@given(st.text(max_size=12))
def test_normalising_never_raises_and_is_idempotent(raw: str) -> None:
    value = normalise_search_date(raw)
    assert value is None or normalise_search_date(value) == value


_ZONES = st.sampled_from(["Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "UTC"])


@PROPERTY_SETTINGS
@given(_ZONES, st.dates(min_value=D(1971, 1, 1), max_value=D(2099, 12, 30)))
def test_a_day_lasts_what_its_zone_says_it_lasts(zone_name: str, day: datetime.date) -> None:
    zone = zoneinfo.ZoneInfo(zone_name)
    start, end = search_date_bounds(SearchDateRange(day, day + datetime.timedelta(days=1)), zone)
    assert start is not None and end is not None
    local_start = start.astimezone(zone)
    local_end = end.astimezone(zone)
    assert (local_start.date(), local_end.date()) == (day, day + datetime.timedelta(days=1))
    offsets = local_end.utcoffset() - local_start.utcoffset()  # type: ignore[operator]
    assert end - start == datetime.timedelta(hours=24) - offsets
