"""The filter operators of the search box (`in:`, `from:`, `after:`, `before:`), as one table.

Each operator is a row: its key, the kind of value it takes, whether it holds several values, the
`SearchFilters` field it fills, how one raw value is normalised (or rejected), how a stored value is
written back, and how it shows as a chip and in suggestions. The tokenizer and parser (`_grammar`),
the chips and the suggestions (`_suggestions`) only read this table, like Datasette's `Filters`, so
growing the grammar (negation, `on:`/`during:`, `has:`/`is:`) means adding a row and its field.

    >>> get_search_filter_operator("in").normalise("#ops ")
    'ops'
    >>> get_search_filter_operator("after").normalise("2026-02-30") is None
    True
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = [
    "SEARCH_FILTER_KEYS",
    "SEARCH_FILTER_OPERATORS",
    "SearchFilterKind",
    "SearchFilterOperator",
    "SearchFilters",
    "get_search_filter_operator",
]

# A name value may start with one of these as a hint (`#room`, `@user`); exactly one is stripped.
_SIGILS = ("#", "@")
_QUOTE = '"'
_DATE_SHAPE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")

SearchFilterKind = Literal["room", "user", "date"]


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """The filters of one query.

    `room_names`, `from_usernames`, `start_date` and `end_date` are written in the text; `rids`,
    `rid` and `from_username` come from the caller (a resolved suggestion, the current room) and are
    never parsed from or serialized into the text.
    """

    room_names: tuple[str, ...] = ()
    rids: tuple[str, ...] = ()
    from_usernames: tuple[str, ...] = ()
    start_date: str | None = None
    end_date: str | None = None
    rid: str | None = None
    from_username: str | None = None


def _normalise_name(raw: str) -> str | None:
    value = raw[1:] if raw.startswith(_SIGILS) else raw
    value = value.strip()
    # Serialization drops inner quotes, so a value holding one could not come back: never valid.
    if not value or _QUOTE in value:
        return None
    return value


def _normalise_date(raw: str) -> str | None:
    # Stricter than upstream (JS Date.parse takes 2026-02-30): the date must exist in the calendar.
    value = raw.strip()
    if not _DATE_SHAPE.fullmatch(value):
        return None
    try:
        datetime.date.fromisoformat(value)
    except ValueError:  # 2026-02-30, 2026-13-01, 0000-01-01
        return None
    return value


@dataclass(frozen=True, slots=True)
class SearchFilterOperator:
    """One filter key and everything the grammar, the chips and the suggestions need to know about it.

    `normalise` turns one raw value into the stored value, or None when it is invalid. `sigil` is
    the hint character of name values (`#`, `@`; empty for dates). `chip_label` is a format string
    with `{value}`; the chip's title is `chip_title_key` translated with one parameter,
    `chip_title_param`, set to `chip_title_value` (a format string with `{value}`).
    `kind` picks where suggestions come from; `suggestion_group` and `icon` are what the UI shows.
    """

    key: str
    kind: SearchFilterKind
    multiple: bool
    field: str
    normalise: Callable[[str], str | None]
    sigil: str
    chip_label: str
    chip_title_key: str
    chip_title_param: str
    chip_title_value: str
    pill_label_key: str
    suggestion_group: str
    icon: str

    def serialize(self, value: str) -> str:
        """The token value (before quoting) that parses back to `value`: a stored value that itself
        starts with a sigil gets one more, since the parser strips one."""
        if self.sigil and value.startswith(_SIGILS):
            return self.sigil + value
        return value

    def strip_sigil(self, value: str) -> str:
        """`value` without one leading sigil, for operators whose values take one."""
        return value[1:] if self.sigil and value.startswith(_SIGILS) else value

    def values_of(self, filters: SearchFilters) -> tuple[str, ...]:
        """The values this operator holds in `filters` (a single value as a one-item tuple)."""
        stored = getattr(filters, self.field)
        if self.multiple:
            return tuple(stored)
        return (stored,) if stored else ()

    def field_value(self, values: tuple[str, ...]) -> tuple[str, ...] | str | None:
        """What to store in `filters.<field>` for `values`: the tuple, or the last single value."""
        if self.multiple:
            return values
        return values[-1] if values else None

    def with_values(self, filters: SearchFilters, values: tuple[str, ...]) -> SearchFilters:
        changes: dict[str, Any] = {self.field: self.field_value(values)}
        return replace(filters, **changes)


SEARCH_FILTER_OPERATORS: tuple[SearchFilterOperator, ...] = (
    SearchFilterOperator(
        key="in",
        kind="room",
        multiple=True,
        field="room_names",
        normalise=_normalise_name,
        sigil="#",
        chip_label="#{value}",
        chip_title_key="Search_filter_in_rooms",
        chip_title_param="rooms",
        chip_title_value="#{value}",
        pill_label_key="Search_filter_in",
        suggestion_group="rooms",
        icon="hash",
    ),
    SearchFilterOperator(
        key="from",
        kind="user",
        multiple=True,
        field="from_usernames",
        normalise=_normalise_name,
        sigil="@",
        chip_label="@{value}",
        chip_title_key="Search_filter_from_users",
        chip_title_param="users",
        chip_title_value="@{value}",
        pill_label_key="Search_filter_from",
        suggestion_group="users",
        icon="user",
    ),
    SearchFilterOperator(
        key="after",
        kind="date",
        multiple=False,
        field="start_date",
        normalise=_normalise_date,
        sigil="",
        chip_label="after:{value}",
        chip_title_key="Search_filter_after_date",
        chip_title_param="date",
        chip_title_value="{value}",
        pill_label_key="Search_filter_after",
        suggestion_group="dates",
        icon="calendar",
    ),
    SearchFilterOperator(
        key="before",
        kind="date",
        multiple=False,
        field="end_date",
        normalise=_normalise_date,
        sigil="",
        chip_label="before:{value}",
        chip_title_key="Search_filter_before_date",
        chip_title_param="date",
        chip_title_value="{value}",
        pill_label_key="Search_filter_before",
        suggestion_group="dates",
        icon="calendar",
    ),
)
_OPERATORS = {op.key: op for op in SEARCH_FILTER_OPERATORS}
SEARCH_FILTER_KEYS: tuple[str, ...] = tuple(_OPERATORS)


def get_search_filter_operator(key: str) -> SearchFilterOperator:
    """The row of `key` (lower case, as the parser reports it).

    Raises:
        ValueError: `key` is not a filter key.
    """
    try:
        return _OPERATORS[key]
    except KeyError:
        raise ValueError(
            f"unknown search filter key {key!r}; expected one of {', '.join(SEARCH_FILTER_KEYS)}"
        ) from None
