"""The filter operators of the search line, as one table.

Each operator is a row: its key, the prefixes it is typed with (`in:`, `channel:`, `-in:`), the
kind of value it takes, whether it holds several values, the `SearchFilters` field it fills, how
one raw value is normalised (or rejected), how a stored value is written back, how it shows as a
chip and in suggestions, and the hint shown when a value is refused. The tokenizer and parser
(`_grammar`), the chips and the suggestions (`_suggestions`) only read this table, like Datasette's
`Filters`, so growing the grammar means adding a row and its field.

    >>> get_search_filter_operator("in").normalise("#ops ")
    'ops'
    >>> get_search_filter_operator("after").normalise("2026-02-30") is None
    True
    >>> operator_for_prefix("-channel:").key
    '-in'

The rows:

- `in:` (also `channel:`, `stream:`) rooms, any of them; `from:` (also `sender:`) authors, any of them;
- `has:` `link`, `file`, `image`, `reaction`, `thread` (a thread's first message), every one named;
  `is:` `thread` (a reply in a thread), `dm`, `pinned`, every one named;
- each of those four negated with a leading `-` (`-in:#random`, `-from:@bot`, `-has:link`): none of them;
- `after:`, `before:`, `on:` (also `date:`), `during:`: one date value each (`_search_dates`), the last
  one wins;
- `sort:` `relevance` (the default) or `new` (newest first);
- `-word` and `-"exact phrase"`: messages holding that word or phrase are left out.

A key is the canonical prefix without its colon (`in`, `-in`, `-` for excluded words).

A keystroke module (`ai_search.KEYSTROKE_MODULES`): the page's MicroPython stage runs it too, so it
follows the convention of `_portable` (records, not dataclasses; tables as pairs, since MicroPython's
dicts keep no order).
"""

import datetime

from ._portable import FrozenRecord, fold, is_alnum, is_space, record, strip
from ._search_dates import (
    DatePeriod,
    SearchDateRange,
    day_after,
    normalise_search_date,
    resolve_search_date,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any, Literal

__all__ = [
    "HAS_VALUES",
    "IS_VALUES",
    "SEARCH_FILTER_KEYS",
    "SEARCH_FILTER_OPERATORS",
    "SEARCH_FILTER_PREFIXES",
    "SORT_VALUES",
    "SearchFilterKind",
    "SearchFilterOperator",
    "SearchFilters",
    "get_search_filter_operator",
    "operator_for_prefix",
    "resolve_search_dates",
]

# A name value may start with one of these as a hint (`#room`, `@user`); exactly one is stripped.
_SIGILS = ("#", "@")
_QUOTE = '"'

if TYPE_CHECKING:
    SearchFilterKind = Literal["room", "user", "date", "choice", "word"]
    # A date operator's bounds: (first day included, first day excluded) of a period, None is open.
    DateBounds = Callable[[DatePeriod], tuple[datetime.date | None, datetime.date | None]]
else:
    SearchFilterKind = str  # at run time, the kinds are the strings the Literal names


def _needs_quotes(value: str) -> bool:
    """Whether `value` holds whitespace, a comma or a quote: then it is written in quotes."""
    return any(char == "," or char == _QUOTE or is_space(char) for char in value)


def _excluded_word(raw: str) -> bool:
    """A bare excluded word starts with a letter or digit: `-` alone, `--verbose` or `-#x` are words."""
    return raw != "" and is_alnum(raw[0])


def _unique(values: "Iterable[str]") -> tuple[str, ...]:
    """`values` in order, each once."""
    out: list[str] = []
    for value in values:
        if value not in out:
            out.append(value)
    return tuple(out)


# The words each choice row takes and what each means, as pairs: the order of `choices` (and of
# the suggestions) is theirs, and MicroPython's dicts keep no order.
_HAS_WORDS = (
    ("link", "link"),
    ("links", "link"),
    ("url", "link"),
    ("file", "file"),
    ("files", "file"),
    ("attachment", "file"),
    ("image", "image"),
    ("images", "image"),
    ("reaction", "reaction"),
    ("reactions", "reaction"),
    ("thread", "thread"),
    ("replies", "thread"),
)
_IS_WORDS = (
    ("thread", "thread"),
    ("reply", "thread"),
    ("dm", "dm"),
    ("direct", "dm"),
    ("pinned", "pinned"),
    ("pin", "pinned"),
)
_SORT_WORDS = (
    ("relevance", "relevance"),
    ("best", "relevance"),
    ("new", "new"),
    ("newest", "new"),
    ("recent", "new"),
)
#: What `has:` takes, and the words that mean the same.
HAS_VALUES: "Mapping[str, str]" = dict(_HAS_WORDS)
#: What `is:` takes, and the words that mean the same.
IS_VALUES: "Mapping[str, str]" = dict(_IS_WORDS)
#: What `sort:` takes, and the words that mean the same.
SORT_VALUES: "Mapping[str, str]" = dict(_SORT_WORDS)


@record
class SearchFilters(FrozenRecord):
    """The filters of one query.

    Every field but `rids`, `rid` and `from_username` is written in the text; those three come from
    the caller (a resolved suggestion, the current room) and are never parsed from or serialized
    into the text. Date fields hold the value as typed (`2026-11-01`, `yesterday`, `-7d`): what they
    mean depends on the day they are read (`resolve_search_dates`).
    """

    __slots__ = _fields = (
        "room_names",
        "rids",
        "from_usernames",
        "start_date",
        "end_date",
        "rid",
        "from_username",
        "excluded_room_names",
        "excluded_usernames",
        "has",
        "excluded_has",
        "is_",
        "excluded_is",
        "on_date",
        "during",
        "sort",
        "excluded_words",
    )
    room_names: tuple[str, ...]
    rids: tuple[str, ...]
    from_usernames: tuple[str, ...]
    start_date: str | None
    end_date: str | None
    rid: str | None
    from_username: str | None
    excluded_room_names: tuple[str, ...]
    excluded_usernames: tuple[str, ...]
    has: tuple[str, ...]
    excluded_has: tuple[str, ...]
    is_: tuple[str, ...]
    excluded_is: tuple[str, ...]
    on_date: str | None
    during: str | None
    sort: str | None
    excluded_words: tuple[str, ...]

    def __init__(
        self,
        room_names: tuple[str, ...] = (),
        rids: tuple[str, ...] = (),
        from_usernames: tuple[str, ...] = (),
        start_date: str | None = None,
        end_date: str | None = None,
        rid: str | None = None,
        from_username: str | None = None,
        excluded_room_names: tuple[str, ...] = (),
        excluded_usernames: tuple[str, ...] = (),
        has: tuple[str, ...] = (),
        excluded_has: tuple[str, ...] = (),
        is_: tuple[str, ...] = (),
        excluded_is: tuple[str, ...] = (),
        on_date: str | None = None,
        during: str | None = None,
        sort: str | None = None,
        excluded_words: tuple[str, ...] = (),
    ) -> None:
        self._set("room_names", room_names)
        self._set("rids", rids)
        self._set("from_usernames", from_usernames)
        self._set("start_date", start_date)
        self._set("end_date", end_date)
        self._set("rid", rid)
        self._set("from_username", from_username)
        self._set("excluded_room_names", excluded_room_names)
        self._set("excluded_usernames", excluded_usernames)
        self._set("has", has)
        self._set("excluded_has", excluded_has)
        self._set("is_", is_)
        self._set("excluded_is", excluded_is)
        self._set("on_date", on_date)
        self._set("during", during)
        self._set("sort", sort)
        self._set("excluded_words", excluded_words)


def _normalise_name(raw: str) -> str | None:
    value = raw[1:] if raw.startswith(_SIGILS) else raw
    value = strip(value)
    # Serialization drops inner quotes, so a value holding one could not come back: never valid.
    if not value or _QUOTE in value:
        return None
    return value


def _normalise_word(raw: str) -> str | None:
    value = strip(raw)
    return value if value and _QUOTE not in value else None


def _choice(values: "Mapping[str, str]") -> "Callable[[str], str | None]":
    def normalise(raw: str) -> str | None:
        return values.get(fold(strip(raw)))

    return normalise


@record
class SearchFilterOperator(FrozenRecord):
    """One filter key and everything the grammar, the chips and the suggestions need to know about it.

    `prefixes` are how it is typed, the canonical one first (`in:`, then `channel:`, `stream:`).
    `normalise` turns one raw value into the stored value, or None when it is invalid; `splits` says
    whether a bare value is a comma list; `bare_value`, when set, tells whether a value may be written
    without quotes (else it is written in quotes; a test, not a regex: MicroPython's `re` has no
    `fullmatch`). `sigil` is the hint character of name
    values (`#`, `@`; empty otherwise). `negated` rows leave out what they name. `chip_label` is a
    format string with `{value}`; the chip's title is `chip_title_key` translated with one parameter,
    `chip_title_param`, set to `chip_title_value` (a format string with `{value}`). `kind` picks
    where suggestions come from, `choices` are the values of a `choice` row, `bounds` what a date
    row's period bounds; `suggestion_group` and `icon` are what the UI shows; `hint_key` names the
    text shown when a typed value is refused (empty: none).
    """

    __slots__ = _fields = (
        "key",
        "prefixes",
        "kind",
        "multiple",
        "field",
        "normalise",
        "sigil",
        "chip_label",
        "chip_title_key",
        "chip_title_param",
        "chip_title_value",
        "suggestion_group",
        "icon",
        "negated",
        "splits",
        "bare_value",
        "choices",
        "bounds",
        "hint_key",
        "drop_when_empty",
    )
    key: str
    prefixes: tuple[str, ...]
    kind: "SearchFilterKind"
    multiple: bool
    field: str
    normalise: "Callable[[str], str | None]"
    sigil: str
    chip_label: str
    chip_title_key: str
    chip_title_param: str
    chip_title_value: str
    suggestion_group: str
    icon: str
    negated: bool
    splits: bool
    bare_value: "Callable[[str], bool] | None"
    choices: tuple[str, ...]
    bounds: "DateBounds | None"
    hint_key: str
    drop_when_empty: bool

    def __init__(
        self,
        key: str,
        prefixes: tuple[str, ...],
        kind: "SearchFilterKind",
        multiple: bool,
        field: str,
        normalise: "Callable[[str], str | None]",
        sigil: str,
        chip_label: str,
        chip_title_key: str,
        chip_title_param: str,
        chip_title_value: str,
        suggestion_group: str,
        icon: str,
        negated: bool = False,
        splits: bool = True,
        bare_value: "Callable[[str], bool] | None" = None,
        choices: tuple[str, ...] = (),
        bounds: "DateBounds | None" = None,
        hint_key: str = "",
        drop_when_empty: bool = True,
    ) -> None:
        self._set("key", key)
        self._set("prefixes", prefixes)
        self._set("kind", kind)
        self._set("multiple", multiple)
        self._set("field", field)
        self._set("normalise", normalise)
        self._set("sigil", sigil)
        self._set("chip_label", chip_label)
        self._set("chip_title_key", chip_title_key)
        self._set("chip_title_param", chip_title_param)
        self._set("chip_title_value", chip_title_value)
        self._set("suggestion_group", suggestion_group)
        self._set("icon", icon)
        self._set("negated", negated)
        self._set("splits", splits)
        self._set("bare_value", bare_value)
        self._set("choices", choices)
        self._set("bounds", bounds)
        self._set("hint_key", hint_key)
        self._set("drop_when_empty", drop_when_empty)

    @property
    def prefix(self) -> str:
        """The canonical prefix: what serialization writes."""
        return self.prefixes[0]

    def title_key(self, value: str) -> str:
        """The message key of a chip's title: one per value for a `choice` row (`has:image` reads
        "with an image"), else `chip_title_key`."""
        return f"{self.chip_title_key}_{value}" if self.kind == "choice" else self.chip_title_key

    def serialize(self, value: str) -> str:
        """The token value (before quoting) that parses back to `value`: a stored value that itself
        starts with a sigil gets one more, since the parser strips one."""
        if self.sigil and value.startswith(_SIGILS):
            return self.sigil + value
        return value

    def needs_quotes(self, value: str) -> bool:
        """Whether `value` must be written in quotes to parse back as itself."""
        if _needs_quotes(value):
            return True
        return self.bare_value is not None and not self.bare_value(value)

    def strip_sigil(self, value: str) -> str:
        """`value` without one leading sigil, for operators whose values take one."""
        return value[1:] if self.sigil and value.startswith(_SIGILS) else value

    def values_of(self, filters: "SearchFilters") -> tuple[str, ...]:
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

    def with_values(self, filters: "SearchFilters", values: tuple[str, ...]) -> "SearchFilters":
        changes: dict[str, Any] = {self.field: self.field_value(values)}
        return filters.replace(**changes)


def _negation_of(op: SearchFilterOperator, field_name: str) -> SearchFilterOperator:
    """The row that leaves out what `op` names: `-` before each prefix, "not" in its chip."""
    return op.replace(
        key="-" + op.key,
        prefixes=tuple("-" + prefix for prefix in op.prefixes),
        field=field_name,
        negated=True,
        chip_label="not " + op.chip_label,
        chip_title_key=op.chip_title_key + "_excluded",
        hint_key=op.hint_key,
    )


def _after(period: DatePeriod) -> tuple[datetime.date | None, datetime.date | None]:
    return period.first, None


def _before(period: DatePeriod) -> tuple[datetime.date | None, datetime.date | None]:
    return None, period.first


def _within(period: DatePeriod) -> tuple[datetime.date | None, datetime.date | None]:
    return period.first, day_after(period.last)


def _date_row(key: str, field_name: str, bounds: "DateBounds", *aliases: str) -> SearchFilterOperator:
    return SearchFilterOperator(
        key=key,
        prefixes=(f"{key}:",) + tuple(f"{alias}:" for alias in aliases),  # noqa: RUF005 (MicroPython has no `*` in a tuple)
        kind="date",
        multiple=False,
        field=field_name,
        normalise=normalise_search_date,
        sigil="",
        chip_label=key + ":{value}",
        chip_title_key=f"Search_filter_{key}_date",
        chip_title_param="date",
        chip_title_value="{value}",
        suggestion_group="dates",
        icon="calendar",
        bounds=bounds,
        hint_key="Search_filter_date_hint",
    )


_IN = SearchFilterOperator(
    key="in",
    prefixes=("in:", "channel:", "stream:"),
    kind="room",
    multiple=True,
    field="room_names",
    normalise=_normalise_name,
    sigil="#",
    chip_label="#{value}",
    chip_title_key="Search_filter_in_rooms",
    chip_title_param="rooms",
    chip_title_value="#{value}",
    suggestion_group="rooms",
    icon="hash",
)
_FROM = SearchFilterOperator(
    key="from",
    prefixes=("from:", "sender:"),
    kind="user",
    multiple=True,
    field="from_usernames",
    normalise=_normalise_name,
    sigil="@",
    chip_label="@{value}",
    chip_title_key="Search_filter_from_users",
    chip_title_param="users",
    chip_title_value="@{value}",
    suggestion_group="users",
    icon="user",
)
_HAS = SearchFilterOperator(
    key="has",
    prefixes=("has:",),
    kind="choice",
    multiple=True,
    field="has",
    normalise=_choice(HAS_VALUES),
    sigil="",
    chip_label="has:{value}",
    chip_title_key="Search_filter_has",
    chip_title_param="value",
    chip_title_value="{value}",
    suggestion_group="has",
    icon="paperclip",
    choices=_unique(value for _, value in _HAS_WORDS),
    hint_key="Search_filter_has_hint",
)
_IS = SearchFilterOperator(
    key="is",
    prefixes=("is:",),
    kind="choice",
    multiple=True,
    field="is_",
    normalise=_choice(IS_VALUES),
    sigil="",
    chip_label="is:{value}",
    chip_title_key="Search_filter_is",
    chip_title_param="value",
    chip_title_value="{value}",
    suggestion_group="is",
    icon="tag",
    choices=_unique(value for _, value in _IS_WORDS),
    hint_key="Search_filter_is_hint",
)

SEARCH_FILTER_OPERATORS: tuple[SearchFilterOperator, ...] = (
    _IN,
    _negation_of(_IN, "excluded_room_names"),
    _FROM,
    _negation_of(_FROM, "excluded_usernames"),
    _HAS,
    _negation_of(_HAS, "excluded_has"),
    _IS,
    _negation_of(_IS, "excluded_is"),
    _date_row("after", "start_date", _after),
    _date_row("before", "end_date", _before),
    _date_row("on", "on_date", _within, "date"),
    _date_row("during", "during", _within),
    SearchFilterOperator(
        key="sort",
        prefixes=("sort:",),
        kind="choice",
        multiple=False,
        field="sort",
        normalise=_choice(SORT_VALUES),
        sigil="",
        chip_label="sort:{value}",
        chip_title_key="Search_filter_sort",
        chip_title_param="value",
        chip_title_value="{value}",
        suggestion_group="sort",
        icon="sort",
        choices=_unique(value for _, value in _SORT_WORDS),
        hint_key="Search_filter_sort_hint",
    ),
    SearchFilterOperator(
        key="-",
        prefixes=("-",),
        kind="word",
        multiple=True,
        field="excluded_words",
        normalise=_normalise_word,
        sigil="",
        chip_label="not “{value}”",
        chip_title_key="Search_filter_excluded_words",
        chip_title_param="words",
        chip_title_value="{value}",
        suggestion_group="words",
        icon="minus",
        negated=True,
        splits=False,
        bare_value=_excluded_word,
        drop_when_empty=False,
    ),
)
_OPERATORS = {op.key: op for op in SEARCH_FILTER_OPERATORS}
_BY_PREFIX = {prefix: op for op in SEARCH_FILTER_OPERATORS for prefix in op.prefixes}
SEARCH_FILTER_KEYS: tuple[str, ...] = tuple(op.key for op in SEARCH_FILTER_OPERATORS)
_PREFIXES_IN_ORDER = [prefix for op in SEARCH_FILTER_OPERATORS for prefix in op.prefixes]
#: Every prefix, longest first (in the table's order among equals), as the tokenizer tries them
#: (`-in:` before `-`).
SEARCH_FILTER_PREFIXES: tuple[str, ...] = tuple(
    sorted(_PREFIXES_IN_ORDER, key=lambda p: (-len(p), _PREFIXES_IN_ORDER.index(p)))  # portable: no ties
)


def get_search_filter_operator(key: str) -> SearchFilterOperator:
    """The row of `key` (`in`, `-in`, `-`...: the canonical prefix without its colon).

    Raises:
        ValueError: `key` is not a filter key.
    """
    try:
        return _OPERATORS[key]
    except KeyError:
        raise ValueError(
            f"unknown search filter key {key!r}; expected one of {', '.join(SEARCH_FILTER_KEYS)}"
        ) from None


def operator_for_prefix(prefix: str) -> SearchFilterOperator:
    """The row typed with `prefix` (lower case, colon included: `channel:`, `-in:`, `-`).

    Raises:
        ValueError: `prefix` is no filter prefix.
    """
    try:
        return _BY_PREFIX[prefix]
    except KeyError:
        raise ValueError(f"unknown search filter prefix {prefix!r}") from None


def resolve_search_dates(filters: SearchFilters, today: datetime.date) -> SearchDateRange:
    """The days every date filter of `filters` leaves, read on `today` (the caller's calendar day)."""
    days = SearchDateRange()
    for op in SEARCH_FILTER_OPERATORS:
        if op.bounds is None:
            continue
        for value in op.values_of(filters):
            days = days.narrowed(*op.bounds(resolve_search_date(value, today)))
    return days
