"""The dates of the search line: what `after:`, `before:`, `on:` and `during:` accept, and the days
each value means on a given day in a given time zone.

A value is kept as typed (folded to its canonical spelling: `Yesterday` is `yesterday`, `mon` is
`monday`), so a shared line means "yesterday" for whoever opens it; it is turned into days only
when a search runs or a chip is drawn, from a `today` the caller passes in (the browser's calendar
day, or the server's clock read in the zone the browser sent). Nothing here reads a clock or a zone.

    >>> today = datetime.date(2026, 12, 1)   # a Tuesday
    >>> [normalise_search_date(v) for v in ("2026-11-03", "Yesterday", "-7D", "mon", "2026-02-30")]
    ['2026-11-03', 'yesterday', '-7d', 'monday', None]
    >>> resolve_search_date("last-week", today)
    DatePeriod(first=datetime.date(2026, 11, 23), last=datetime.date(2026, 11, 29))
    >>> resolve_search_date("2026-10", today).last
    datetime.date(2026, 10, 31)

Every value names a period of whole days (`first`..`last`, both included): a day, a week, a month
or a year. The operators turn a period into bounds (`_operators`): `after:P` from the first day of
P on, `before:P` up to the first day of P (excluded), `on:P`/`during:P` the days of P. So
`after:yesterday` is yesterday and today, and `before:2026-10` ends when October begins.

Weeks start on Monday (ISO 8601). A weekday (`monday`) is the latest such day up to today (today
itself on a Monday); a month name (`october`) the latest October that has begun. `-Nd`, `-Nw`,
`-Nm` and `-Ny` count back from today (a month back from 31 March is the last day of February).
Days out of the calendar's range are clamped to it, never an error.

A keystroke module (`ai_search.KEYSTROKE_MODULES`): the page's MicroPython stage runs it too, so it
follows the convention of `_portable` (values are read by hand: MicroPython's `re` has no `{4}`).
"""

import datetime

from ._portable import FrozenRecord, fold, record, strip

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = [
    "MAX_RELATIVE_DATE_AMOUNT",
    "SEARCH_DATE_WORDS",
    "DatePeriod",
    "SearchDateRange",
    "day_after",
    "format_date_period",
    "normalise_search_date",
    "resolve_search_date",
    "search_date_bounds",
]

# The largest N of a relative value `-Nd`/`-Nw`/`-Nm`/`-Ny` (units): past this a value is a typo,
# and a thousand years back still fits the calendar from any year after 1000.
MAX_RELATIVE_DATE_AMOUNT = 999

_DIGITS = "0123456789"
_RELATIVE_UNITS = "dwmy"
_ONE_DAY = datetime.timedelta(days=1)

# Spelled out rather than read from `calendar` (locale-dependent, and a module the page need not load).
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_WEEKDAY_NAMES: "Mapping[str, int]" = dict(
    [(name, i) for i, name in enumerate(_WEEKDAYS)] + [(name[:3], i) for i, name in enumerate(_WEEKDAYS)]
)
_MONTH_NAMES: "Mapping[str, int]" = dict(
    [(name, i + 1) for i, name in enumerate(_MONTHS)] + [(name[:3], i + 1) for i, name in enumerate(_MONTHS)]
)


def _is_digits(text: str, start: int, end: int) -> bool:
    # ASCII digits only, as `[0-9]` reads them (`str.isdigit` also takes `٣` on CPython).
    return all(char in _DIGITS for char in text[start:end])


def _day_shape(value: str) -> bool:
    """`YYYY-MM-DD` in ASCII digits (the day may not exist)."""
    return (
        len(value) == 10
        and value[4] == "-"
        and value[7] == "-"
        and _is_digits(value, 0, 4)
        and _is_digits(value, 5, 7)
        and _is_digits(value, 8, 10)
    )


def _month_shape(value: str) -> bool:
    """`YYYY-MM` in ASCII digits."""
    return len(value) == 7 and value[4] == "-" and _is_digits(value, 0, 4) and _is_digits(value, 5, 7)


def _year_shape(value: str) -> bool:
    return len(value) == 4 and _is_digits(value, 0, 4)


def _relative_shape(value: str) -> "tuple[int, str] | None":
    """(N, unit) of `-Nd`, `-Nw`, `-Nm` or `-Ny` with N 1..999 written without leading zeros, else None."""
    if not 3 <= len(value) <= 5 or value[0] != "-" or value[-1] not in _RELATIVE_UNITS:
        return None
    if value[1] == "0" or not _is_digits(value, 1, len(value) - 1):
        return None
    return int(value[1:-1]), value[-1]


def _valid_day(value: str) -> bool:
    """Whether `YYYY-MM-DD` is a day of the calendar (not 2026-02-30, 2026-13-01 or 0000-01-01)."""
    year, month, day = int(value[:4]), int(value[5:7]), int(value[8:])
    return year >= 1 and 1 <= month <= 12 and 1 <= day <= _days_in_month(year, month)


def _iso_day(value: str) -> datetime.date:
    # `date.fromisoformat` of a valid `YYYY-MM-DD`, spelled out for MicroPython's datetime.
    return datetime.date(int(value[:4]), int(value[5:7]), int(value[8:]))


@record
class DatePeriod(FrozenRecord):
    """Whole days, `first` to `last` included."""

    __slots__ = _fields = ("first", "last")
    first: datetime.date
    last: datetime.date

    def __init__(self, first: datetime.date, last: datetime.date) -> None:
        self._set("first", first)
        self._set("last", last)


def _clamped(ordinal: int) -> datetime.date:
    return datetime.date.fromordinal(min(max(ordinal, 1), datetime.date.max.toordinal()))


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _day(day: datetime.date) -> DatePeriod:
    return DatePeriod(day, day)


def _month(year: int, month: int) -> DatePeriod:
    return DatePeriod(datetime.date(year, month, 1), datetime.date(year, month, _days_in_month(year, month)))


def _week(today: datetime.date, weeks_back: int) -> DatePeriod:
    monday = today.toordinal() - today.weekday() - 7 * weeks_back
    return DatePeriod(_clamped(monday), _clamped(monday + 6))


def _month_back(today: datetime.date, months: int) -> tuple[int, int]:
    """(year, month) `months` before today's month, clamped to the calendar's first month."""
    index = today.year * 12 + today.month - 1 - months
    if index < 12:  # before January of year 1
        return 1, 1
    year, month = divmod(index, 12)
    return year, month + 1


def _shift_months(today: datetime.date, months: int) -> datetime.date:
    if today.year * 12 + today.month - 1 - months < 12:
        return datetime.date.min
    year, month = _month_back(today, months)
    return datetime.date(year, month, min(today.day, _days_in_month(year, month)))


def _relative(amount: int, unit: str, today: datetime.date) -> DatePeriod:
    if unit == "d":
        return _day(_clamped(today.toordinal() - amount))
    if unit == "w":
        return _day(_clamped(today.toordinal() - 7 * amount))
    return _day(_shift_months(today, amount * (12 if unit == "y" else 1)))


def _this_month(today: datetime.date, back: int) -> DatePeriod:
    return _month(*_month_back(today, back))


def _this_year(today: datetime.date, back: int) -> DatePeriod:
    year = max(today.year - back, 1)
    return DatePeriod(datetime.date(year, 1, 1), datetime.date(year, 12, 31))


# The words a date value may be, and the period each means on `today`, in the order suggestions
# offer them (a list of pairs: MicroPython's dicts keep no order).
_WORD_PERIODS: "list[tuple[str, Callable[[datetime.date], DatePeriod]]]" = [
    ("today", _day),
    ("yesterday", lambda today: _day(_clamped(today.toordinal() - 1))),
    ("this-week", lambda today: _week(today, 0)),
    ("last-week", lambda today: _week(today, 1)),
    ("this-month", lambda today: _this_month(today, 0)),
    ("last-month", lambda today: _this_month(today, 1)),
    ("this-year", lambda today: _this_year(today, 0)),
    ("last-year", lambda today: _this_year(today, 1)),
]
_WORDS: "Mapping[str, Callable[[datetime.date], DatePeriod]]" = dict(_WORD_PERIODS)
#: Every word a date value may be, in the order suggestions offer them (weekdays and months too).
SEARCH_DATE_WORDS: tuple[str, ...] = tuple(word for word, _ in _WORD_PERIODS) + _WEEKDAYS + tuple(_MONTHS)


def normalise_search_date(raw: str) -> str | None:
    """The canonical spelling of a date value, or None when it is none.

    Stricter than upstream (JS Date.parse takes 2026-02-30): a day must exist in the calendar, a
    month be 01-12, a year 0001-9999 and a relative amount 1..`MAX_RELATIVE_DATE_AMOUNT`.
    """
    value = fold(strip(raw))
    if _day_shape(value):
        return value if _valid_day(value) else None  # 2026-02-30, 2026-13-01, 0000-01-01
    if _month_shape(value):
        return value if int(value[:4]) >= 1 and 1 <= int(value[5:]) <= 12 else None
    if _year_shape(value):
        return value if int(value) >= 1 else None
    if _relative_shape(value) is not None or value in _WORDS:
        return value
    if value in _WEEKDAY_NAMES:
        return _WEEKDAYS[_WEEKDAY_NAMES[value]]
    if value in _MONTH_NAMES:
        return _MONTHS[_MONTH_NAMES[value] - 1]
    return None


def resolve_search_date(value: str, today: datetime.date) -> DatePeriod:
    """The days `value` (a canonical date value) means on `today`.

    Raises:
        ValueError: `value` is not a canonical date value (see `normalise_search_date`).
    """
    if normalise_search_date(value) != value:
        raise ValueError(f"not a canonical search date: {value!r}")
    if _day_shape(value):
        return _day(_iso_day(value))
    if _month_shape(value):
        return _month(int(value[:4]), int(value[5:]))
    if _year_shape(value):
        return DatePeriod(datetime.date(int(value), 1, 1), datetime.date(int(value), 12, 31))
    relative = _relative_shape(value)
    if relative is not None:
        return _relative(relative[0], relative[1], today)
    if value in _WORDS:
        return _WORDS[value](today)
    if value in _WEEKDAY_NAMES:
        return _day(_clamped(today.toordinal() - (today.weekday() - _WEEKDAY_NAMES[value]) % 7))
    month_number = _MONTH_NAMES[value]
    year = today.year if month_number <= today.month else today.year - 1
    return _month(year, month_number) if year >= 1 else _month(1, month_number)


@record
class SearchDateRange(FrozenRecord):
    """The days a query's date filters leave: from `start` (included) to `end` (excluded); None is open.

    `empty` when the filters contradict each other (`after:today before:yesterday`): nothing can match.
    """

    __slots__ = _fields = ("start", "end")
    start: datetime.date | None
    end: datetime.date | None

    def __init__(self, start: datetime.date | None = None, end: datetime.date | None = None) -> None:
        self._set("start", start)
        self._set("end", end)

    @property
    def empty(self) -> bool:
        return self.start is not None and self.end is not None and self.start >= self.end

    @property
    def bounded(self) -> bool:
        return self.start is not None or self.end is not None

    def narrowed(self, start: datetime.date | None, end: datetime.date | None) -> "SearchDateRange":
        """This range and [start, end) both: the later start, the earlier end."""
        starts = [d for d in (self.start, start) if d is not None]
        ends = [d for d in (self.end, end) if d is not None]
        return SearchDateRange(max(starts) if starts else None, min(ends) if ends else None)


def search_date_bounds(
    days: SearchDateRange, zone: datetime.tzinfo
) -> tuple[datetime.datetime | None, datetime.datetime | None]:
    """The instants (aware, UTC) where `days` begins and ends, at midnight in `zone`.

    `zone` is what the caller resolved from the browser's time zone (a `zoneinfo.ZoneInfo`, or a fixed
    offset when no zone database is at hand, which is exact only away from daylight-saving changes).
    A day is 23 or 25 hours long across a change; a midnight that does not exist in `zone` is read
    with the offset before the change (`fold=0`), as `zoneinfo` does. CPython only (the server):
    MicroPython's datetime has no zones.
    """

    def midnight(day: datetime.date | None) -> datetime.datetime | None:
        if day is None:
            return None
        return datetime.datetime.combine(day, datetime.time(), zone).astimezone(datetime.UTC)

    return midnight(days.start), midnight(days.end)


def format_date_period(period: DatePeriod) -> str:
    """`2026-11-03`, or `2026-10-01 – 2026-10-31` for several days: what a chip shows."""
    if period.first == period.last:
        return period.first.isoformat()
    return f"{period.first.isoformat()} – {period.last.isoformat()}"


def day_after(day: datetime.date) -> datetime.date | None:
    """The day after `day`, or None past the calendar's end (an open end)."""
    return None if day == datetime.date.max else day + _ONE_DAY
