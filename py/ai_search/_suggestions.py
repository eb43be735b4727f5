"""What the search box shows around the grammar: suggestions, chips and the AI toggle's tooltip.

    >>> from ai_search._grammar import get_active_search_filter
    >>> active = get_active_search_filter("deploy in:#op")
    >>> [s.value for s in build_filter_suggestions(active, [{"_id": "r1", "name": "ops"}])]
    ['ops']
    >>> [c.label for c in build_applied_filter_chips(SearchFilters(room_names=("ops", "infra")))]
    ['#ops', '#infra']

Suggestions follow upstream's newest client: `value` is the raw filter value (apply it with
`apply_search_filter_token`), `filter_key` names the operator, and a room carries its `rid`. Rooms
and users come in as `RoomOption`/`UserOption` records or as the JSON mappings the REST routes return
(`_id` or `rid`, `name`, `fname`, `t`; `_id`, `username`, `name`). Text goes through `t(key, **params)`;
`translate_english` (the default) knows every key used here.

A keystroke module (`ai_search.KEYSTROKE_MODULES`): the page's MicroPython stage builds the first
chips and suggestions with it, so it follows the convention of `_portable`.
"""

import datetime

from ._constants import AI_SEARCH_FILTER_SUGGESTION_LIMIT
from ._grammar import ActiveSearchFilter, RefusedSearchFilter, format_search_filter_value
from ._operators import (
    SEARCH_FILTER_OPERATORS,
    SearchFilterOperator,
    SearchFilters,
    get_search_filter_operator,
)
from ._portable import FrozenRecord, fold, record
from ._search_dates import (
    SEARCH_DATE_WORDS,
    DatePeriod,
    format_date_period,
    normalise_search_date,
    resolve_search_date,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any, Protocol

__all__ = [
    "DATE_PICKER_GROUP",
    "DATE_SUGGESTION_MONTHS_BACK",
    "ENGLISH_MESSAGES",
    "FilterChip",
    "FilterSuggestion",
    "RoomOption",
    "Translate",
    "UserOption",
    "build_applied_filter_chips",
    "build_filter_hints",
    "build_filter_suggestions",
    "build_user_filter_suggestions",
    "get_ai_search_button_tooltip",
    "merge_filter_suggestions",
    "translate_english",
]

ENGLISH_MESSAGES: "Mapping[str, str]" = {
    "Search_filter_in_rooms": "Only messages in {rooms}",
    "Search_filter_from_users": "Only messages from {users}",
    "Search_filter_after_date": "Only messages after {date}",
    "Search_filter_before_date": "Only messages before {date}",
    "Search_filter_on_date": "Only messages on {date}",
    "Search_filter_during_date": "Only messages during {date}",
    "Search_filter_in_rooms_excluded": "No messages in {rooms}",
    "Search_filter_from_users_excluded": "No messages from {users}",
    "Search_filter_has_link": "Only messages with a link",
    "Search_filter_has_file": "Only messages with a file",
    "Search_filter_has_image": "Only messages with an image",
    "Search_filter_has_reaction": "Only messages with a reaction",
    "Search_filter_has_thread": "Only messages that start a thread",
    "Search_filter_has_excluded_link": "No messages with a link",
    "Search_filter_has_excluded_file": "No messages with a file",
    "Search_filter_has_excluded_image": "No messages with an image",
    "Search_filter_has_excluded_reaction": "No messages with a reaction",
    "Search_filter_has_excluded_thread": "No messages that start a thread",
    "Search_filter_is_thread": "Only replies in threads",
    "Search_filter_is_dm": "Only direct messages",
    "Search_filter_is_pinned": "Only pinned messages",
    "Search_filter_is_excluded_thread": "No replies in threads",
    "Search_filter_is_excluded_dm": "No direct messages",
    "Search_filter_is_excluded_pinned": "No pinned messages",
    "Search_filter_sort_relevance": "Most relevant first",
    "Search_filter_sort_new": "Newest first",
    "Search_filter_excluded_words": "No messages holding “{words}”",
    "Search_filter_has_hint": "has: takes {choices}; “{token}” is searched as words",
    "Search_filter_is_hint": "is: takes {choices}; “{token}” is searched as words",
    "Search_filter_sort_hint": "sort: takes {choices}; “{token}” is searched as words",
    "Search_filter_date_hint": (
        "a date is 2026-11-03, 2026-11, 2026, today, yesterday, -7d, -2w, monday, october or "
        "last-week; “{token}” is searched as words"
    ),
    "Search_filter_typed": "{token}: {title}",
    "Search_date_today": "Today",
    "Search_date_yesterday": "Yesterday",
    "Search_date_days_ago": "{count} days ago",
    "Search_date_weeks_ago": "{count} weeks ago",
    "Search_date_months_ago": "{count} months ago",
    "Search_date_years_ago": "{count} years ago",
    "Search_date_this_week": "This week",
    "Search_date_last_week": "Last week",
    "Search_date_this_month": "This month",
    "Search_date_last_month": "Last month",
    "Search_date_this_year": "This year",
    "Search_date_last_year": "Last year",
    "Search_date_pick": "Pick a date…",
    "Search_date_pick_description": "a calendar, by keyboard or mouse",
    "Search_in_this_room": "Search in this room",
    "Search_messages_from_this_username": "Search messages from this username",
    "Search_messages_from_this_user": "Search messages from this user",
    "AI_Search_license_required_tooltip": "AI search is not included in this workspace's license",
    "AI_Search_disabled_tooltip": "AI search is turned off by the workspace administrator",
    "Enable_AI_Search": "Turn on AI search",
    "Disable_AI_Search": "Turn off AI search",
}


if TYPE_CHECKING:

    class Translate(Protocol):
        def __call__(self, __key: str, **params: str) -> str: ...

else:

    class Translate:
        """What translates a message key: `t(key, **params) -> str` (a Protocol for type checkers)."""


def translate_english(__key: str, **params: str) -> str:
    """The English text of the key with `{name}` fields filled from `params`; an unknown key is
    returned as it is, like i18n libraries do, so a missing text shows up instead of failing.

    The key is positional-only by its name (`__key`, which type checkers read so), not by `key, /`:
    MicroPython has no such syntax, and a parameter named `key` could take no `key` field."""
    template = ENGLISH_MESSAGES.get(__key)
    return __key if template is None else _fill(template, params)


def _fill(template: str, params: "Mapping[str, str]") -> str:
    """`template.format_map(params)` for templates of plain `{name}` fields (MicroPython has no
    `format_map`); a field nobody passed stays `{name}` in the text rather than raising in the
    middle of the UI."""
    pieces: list[str] = []
    position = 0
    while True:
        start = template.find("{", position)
        end = template.find("}", start + 1) if start >= 0 else -1
        if end < 0:
            break
        name = template[start + 1 : end]
        pieces += (
            template[position:start],
            str(params[name]) if name in params else template[start : end + 1],
        )
        position = end + 1
    pieces.append(template[position:])
    return "".join(pieces)


@record
class RoomOption(FrozenRecord):
    __slots__ = _fields = ("rid", "name", "fname", "room_type")
    rid: str
    name: str
    fname: str
    room_type: str

    def __init__(self, rid: str, name: str = "", fname: str = "", room_type: str = "") -> None:
        self._set("rid", rid)
        self._set("name", name)
        self._set("fname", fname)
        self._set("room_type", room_type)

    @classmethod
    def from_mapping(cls, data: "Mapping[str, Any]") -> "RoomOption":
        """A room from REST JSON (`_id` or `rid`, `name`, `fname`, `t`); missing keys read as empty."""
        return cls(
            str(data.get("_id") or data.get("rid") or ""),
            str(data.get("name") or ""),
            str(data.get("fname") or ""),
            str(data.get("t") or ""),
        )


@record
class UserOption(FrozenRecord):
    __slots__ = _fields = ("user_id", "username", "name")
    user_id: str
    username: str
    name: str

    def __init__(self, user_id: str, username: str, name: str = "") -> None:
        self._set("user_id", user_id)
        self._set("username", username)
        self._set("name", name)

    @classmethod
    def from_mapping(cls, data: "Mapping[str, Any]") -> "UserOption":
        """A user from REST JSON (`_id`, `username`, `name`); missing keys read as empty."""
        return cls(str(data.get("_id") or ""), str(data.get("username") or ""), str(data.get("name") or ""))


@record
class FilterSuggestion(FrozenRecord):
    """One completion: `key` is unique in a list (for the UI), `value` the raw filter value."""

    __slots__ = _fields = ("key", "group", "title", "description", "value", "icon", "filter_key", "rid")
    key: str
    group: str
    title: str
    description: str
    value: str
    icon: str
    filter_key: str
    rid: str | None

    def __init__(
        self,
        key: str,
        group: str,
        title: str,
        description: str,
        value: str,
        icon: str,
        filter_key: str,
        rid: str | None = None,
    ) -> None:
        self._set("key", key)
        self._set("group", group)
        self._set("title", title)
        self._set("description", description)
        self._set("value", value)
        self._set("icon", icon)
        self._set("filter_key", filter_key)
        self._set("rid", rid)


@record
class FilterChip(FrozenRecord):
    """One applied value; remove it with `remove_search_filter(filters, chip.filter_key, chip.value)`.

    `token` is the value as the line writes it (`after:-7d`): what editing the chip puts back in the
    box. `negated` chips leave out what they name; a date chip's `label` is the days it means.
    """

    __slots__ = _fields = ("key", "filter_key", "value", "label", "title", "token", "negated")
    key: str
    filter_key: str
    value: str
    label: str
    title: str
    token: str
    negated: bool

    def __init__(
        self,
        key: str,
        filter_key: str,
        value: str,
        label: str,
        title: str,
        token: str = "",
        negated: bool = False,
    ) -> None:
        self._set("key", key)
        self._set("filter_key", filter_key)
        self._set("value", value)
        self._set("label", label)
        self._set("title", title)
        self._set("token", token)
        self._set("negated", negated)


if TYPE_CHECKING:
    _Rooms = Iterable[RoomOption | Mapping[str, Any]]


def _rooms(rooms: "_Rooms") -> "Iterable[RoomOption]":
    return (room if isinstance(room, RoomOption) else RoomOption.from_mapping(room) for room in rooms)


def _room_suggestions(
    op: SearchFilterOperator,
    active: ActiveSearchFilter,
    rooms: "_Rooms",
    t: "Translate",
    today: datetime.date,
) -> "list[FilterSuggestion]":
    suggestions = []
    for room in _rooms(rooms):
        value = room.name or room.fname
        if not value:  # nothing to put after `in:`
            continue
        suggestions.append(
            FilterSuggestion(
                key=f"{op.key}-{room.rid or value}",
                group=op.suggestion_group,
                # The display name, without `#`: the icon already says "room" (upstream's newest spec).
                title=room.fname or room.name,
                description=t("Search_in_this_room"),
                value=value,
                icon=op.icon,
                filter_key=op.key,
                rid=room.rid or None,
            )
        )
        if len(suggestions) == AI_SEARCH_FILTER_SUGGESTION_LIMIT:
            break
    return suggestions


def _typed_user_suggestion(
    op: SearchFilterOperator,
    active: ActiveSearchFilter,
    rooms: "_Rooms",
    t: "Translate",
    today: datetime.date,
) -> "list[FilterSuggestion]":
    value = active.lookup_text
    if not value:  # `from:` alone: applying it would leave an invalid token; user lookups fill in
        return []
    return [
        FilterSuggestion(
            key=f"{op.key}-current",
            group=op.suggestion_group,
            title=f"{op.key}:{value}",
            description=t("Search_messages_from_this_username"),
            value=value,
            icon=op.icon,
            filter_key=op.key,
        )
    ]


#: The group of the last date suggestion: it opens a date picker instead of applying a value.
DATE_PICKER_GROUP = "date-picker"
# Date words offered before anything is typed, in this order (the rest come as typing narrows them).
_FIRST_DATE_WORDS = ("today", "yesterday", "-7d", "last-week", "this-month")
# Relative amounts offered as typing narrows (`-3` offers -3d and -3w).
_RELATIVE_UNITS = ("d", "w")
# Months back from this one whose `YYYY-MM` is offered as typing narrows (months).
DATE_SUGGESTION_MONTHS_BACK = 24
_DATE_WORD_DESCRIPTIONS: "Mapping[str, str]" = {
    "today": "Search_date_today",
    "yesterday": "Search_date_yesterday",
    "this-week": "Search_date_this_week",
    "last-week": "Search_date_last_week",
    "this-month": "Search_date_this_month",
    "last-month": "Search_date_last_month",
    "this-year": "Search_date_this_year",
    "last-year": "Search_date_last_year",
}


_RELATIVE_DESCRIPTIONS: "Mapping[str, str]" = {
    "d": "Search_date_days_ago",
    "w": "Search_date_weeks_ago",
    "m": "Search_date_months_ago",
    "y": "Search_date_years_ago",
}


def _date_candidates(typed: str, today: datetime.date) -> "Iterable[str]":
    """Date values worth offering for `typed`, most useful first: words, relative amounts, months,
    years, then the days of a month being typed (`2026-11-0` offers 2026-11-01 .. 09)."""
    yield from _FIRST_DATE_WORDS
    yield from SEARCH_DATE_WORDS
    amount = (typed[1:] if typed.startswith("-") else typed).rstrip("dwmy")
    # ASCII digits: what `str.isdigit` also takes (`٣`) makes no valid value, so it offered nothing.
    if typed.startswith("-") and amount and all("0" <= char <= "9" for char in amount):
        yield from (f"-{amount}{unit}" for unit in _RELATIVE_UNITS)
    index = today.year * 12 + today.month - 1
    for back in range(DATE_SUGGESTION_MONTHS_BACK):
        year, month = divmod(index - back, 12)
        if year >= 1:
            yield f"{year:04d}-{month + 1:02d}"
    yield from (f"{year:04d}" for year in (today.year, today.year - 1) if year >= 1)
    if len(typed) >= len("2026-11-") - 1 and normalise_search_date(typed[:7]) == typed[:7]:
        first = resolve_search_date(typed[:7], today)
        day = first.last
        while day >= first.first:
            yield day.isoformat()
            day -= datetime.timedelta(days=1)
    yield typed


def _date_description(value: str, period: DatePeriod, t: "Translate") -> str:
    days = format_date_period(period)
    key = _DATE_WORD_DESCRIPTIONS.get(value)
    if key is not None:
        return f"{t(key)} · {days}"
    unit = _RELATIVE_DESCRIPTIONS.get(value[-1:]) if value.startswith("-") else None
    if unit is not None:
        return f"{t(unit, count=value[1:-1])} · {days}"
    return days


def _date_suggestions(
    op: SearchFilterOperator,
    active: ActiveSearchFilter,
    rooms: "_Rooms",
    t: "Translate",
    today: datetime.date,
) -> "list[FilterSuggestion]":
    """Date values that start with what is typed (`after:2026-1` offers 2026-12, 2026-11, 2026-10),
    each described by the days it means today."""
    typed = fold(active.lookup_text)
    suggestions: list[FilterSuggestion] = []
    seen: set[str] = set()
    for candidate in _date_candidates(typed, today):
        # Candidates are canonical but the typed text itself: only a prefix match is normalised.
        if not candidate.startswith(typed) or candidate in seen:
            continue
        value = normalise_search_date(candidate)
        if value is None or value in seen:
            continue
        seen.update((value, candidate))
        suggestions.append(
            FilterSuggestion(
                key=f"{op.key}-{value}",
                group=op.suggestion_group,
                title=f"{op.prefix}{value}",
                description=_date_description(value, resolve_search_date(value, today), t),
                value=value,
                icon=op.icon,
                filter_key=op.key,
            )
        )
        if len(suggestions) == AI_SEARCH_FILTER_SUGGESTION_LIMIT:
            break
    suggestions.append(
        FilterSuggestion(
            key=f"{op.key}-pick",
            group=DATE_PICKER_GROUP,
            title=t("Search_date_pick"),
            description=t("Search_date_pick_description"),
            value="",
            icon=op.icon,
            filter_key=op.key,
        )
    )
    return suggestions


def _choice_suggestions(
    op: SearchFilterOperator,
    active: ActiveSearchFilter,
    rooms: "_Rooms",
    t: "Translate",
    today: datetime.date,
) -> "list[FilterSuggestion]":
    """The values of `has:`, `is:` or `sort:` that start with what is typed, in the table's order."""
    typed = fold(active.lookup_text)
    return [
        FilterSuggestion(
            key=f"{op.key}-{value}",
            group=op.suggestion_group,
            title=f"{op.prefix}{value}",
            description=t(op.title_key(value), **{op.chip_title_param: value}),
            value=value,
            icon=op.icon,
            filter_key=op.key,
        )
        for value in op.choices
        if value.startswith(typed)
    ][:AI_SEARCH_FILTER_SUGGESTION_LIMIT]


def _no_suggestions(
    op: SearchFilterOperator,
    active: ActiveSearchFilter,
    rooms: "_Rooms",
    t: "Translate",
    today: datetime.date,
) -> "list[FilterSuggestion]":
    return []


if TYPE_CHECKING:
    _Suggester = Callable[
        [
            SearchFilterOperator,
            ActiveSearchFilter,
            _Rooms,
            Translate,
            datetime.date,
        ],
        list[FilterSuggestion],
    ]
# Where each kind of operator gets its suggestions from; a new operator of a known kind needs nothing here.
_SUGGESTERS: "Mapping[str, _Suggester]" = {
    "room": _room_suggestions,
    "user": _typed_user_suggestion,
    "date": _date_suggestions,
    "choice": _choice_suggestions,
    "word": _no_suggestions,
}


def build_filter_suggestions(
    active: ActiveSearchFilter | None,
    rooms: "_Rooms" = (),
    t: "Translate | None" = None,
    today: datetime.date | None = None,
) -> "tuple[FilterSuggestion, ...]":
    """Completions for the token under the caret: up to `AI_SEARCH_FILTER_SUGGESTION_LIMIT` of
    `rooms` for `in:`, the typed name for `from:`, the date values starting with what is typed
    (today, yesterday, -7d... before anything is), and the values of `has:`, `is:` and `sort:`.

    `rooms` are the answer to a lookup by `get_room_lookup_text(active)` (`_room_lookup`). `today`
    defaults to the local calendar date (never UTC: a user near midnight means their own today).
    """
    if active is None:
        return ()
    op = get_search_filter_operator(active.key)
    day = today if today is not None else datetime.date.today()
    return tuple(_SUGGESTERS[op.kind](op, active, rooms, t or translate_english, day))


def build_user_filter_suggestions(
    active: ActiveSearchFilter | None,
    users: "Iterable[UserOption | Mapping[str, Any]]",
    t: "Translate | None" = None,
) -> "tuple[FilterSuggestion, ...]":
    """Up to `AI_SEARCH_FILTER_SUGGESTION_LIMIT` of `users` for a `from:` token, else nothing."""
    if active is None or get_search_filter_operator(active.key).kind != "user":
        return ()
    op = get_search_filter_operator(active.key)
    translate = t or translate_english
    suggestions = []
    for item in users:
        user = item if isinstance(item, UserOption) else UserOption.from_mapping(item)
        if not user.username:
            continue
        suggestions.append(
            FilterSuggestion(
                key=f"{op.key}-{user.user_id or user.username}",
                group=op.suggestion_group,
                title=f"@{user.username}",
                description=user.name or translate("Search_messages_from_this_user"),
                value=user.username,
                icon=op.icon,
                filter_key=op.key,
            )
        )
        if len(suggestions) == AI_SEARCH_FILTER_SUGGESTION_LIMIT:
            break
    return tuple(suggestions)


def merge_filter_suggestions(
    primary: "Iterable[FilterSuggestion]", fallback: "Iterable[FilterSuggestion]"
) -> "tuple[FilterSuggestion, ...]":
    """`primary`, then the `fallback` items that would apply a different filter (same key and value,
    compared case-insensitively as the grammar does, counts as the same)."""
    merged = list(primary)
    seen = {(s.filter_key, fold(s.value)) for s in merged}
    for suggestion in fallback:
        identity = (suggestion.filter_key, fold(suggestion.value))
        if identity not in seen:
            seen.add(identity)
            merged.append(suggestion)
    return tuple(merged)


def build_applied_filter_chips(
    filters: SearchFilters, t: "Translate | None" = None, today: datetime.date | None = None
) -> "tuple[FilterChip, ...]":
    """One chip per value, in the table's order (rooms, excluded rooms, users, ..., dates, sort,
    excluded words), so each value can be removed on its own. `rids` have no name to show and get
    no chip.

    With `today` (the caller's calendar day), a date chip shows the days its value means
    (`after:-7d` reads `after:2026-11-24`) and its title the words typed; without it, a date chip
    shows the value as typed.
    """
    translate = t or translate_english
    chips = []
    for op in SEARCH_FILTER_OPERATORS:
        for value in op.values_of(filters):
            shown = value
            if op.kind == "date" and today is not None:
                shown = format_date_period(resolve_search_date(value, today))
            token = format_search_filter_value(op.key, value)
            param = op.chip_title_value.format(value=shown)
            title = translate(op.title_key(value), **{op.chip_title_param: param})
            if shown != value:
                title = translate("Search_filter_typed", token=token, title=title)
            chips.append(
                FilterChip(
                    key=f"{op.key}:{fold(value)}",
                    filter_key=op.key,
                    value=value,
                    label=op.chip_label.format(value=shown),
                    title=title,
                    token=token,
                    negated=op.negated,
                )
            )
    return tuple(chips)


def build_filter_hints(
    refused: "Iterable[RefusedSearchFilter]", t: "Translate | None" = None
) -> tuple[str, ...]:
    """Why each refused token stays in the words (`has:pdf`: has: takes link, file, ...), once per
    token; tokens of operators without a hint (a name holding a quote) say nothing."""
    translate = t or translate_english
    hints: list[str] = []  # a list, not a dict: MicroPython's dicts keep no order
    for item in refused:
        op = get_search_filter_operator(item.key)
        if op.hint_key:
            hint = translate(op.hint_key, choices=", ".join(op.choices), token=item.token)
            if hint not in hints:
                hints.append(hint)
    return tuple(hints)


def get_ai_search_button_tooltip(
    has_license: bool, enabled: bool, active: bool, t: "Translate | None" = None
) -> str:
    """The AI toggle's tooltip: why it is unavailable (license first, then the setting), else what a
    click does."""
    translate = t or translate_english
    if not has_license:
        return translate("AI_Search_license_required_tooltip")
    if not enabled:
        return translate("AI_Search_disabled_tooltip")
    return translate("Disable_AI_Search" if active else "Enable_AI_Search")
