"""Looking rooms up for the `in:` token: what to look up, and a query any store can run.

    >>> query = build_room_search_query("Ops.Team", mention="#")
    >>> query.pattern, query.needle, query.exclude_room_types
    ('Ops\\\\.Team', 'ops.team', ('d',))
    >>> query.matches("platform-ops.team", room_type="c")
    True

The lookup text is cut to `MAX_ROOM_SEARCH_PATTERN_LENGTH` characters before anything else, so a
long paste cannot make a long pattern and an escape is never cut in half.

A keystroke module (`ai_search.KEYSTROKE_MODULES`): the page's MicroPython stage runs it too, so it
follows the convention of `_portable` (escapes by a scan of the characters, not `re.sub`).
"""

from ._constants import MAX_ROOM_SEARCH_PATTERN_LENGTH
from ._grammar import ActiveSearchFilter
from ._operators import get_search_filter_operator
from ._portable import FrozenRecord, fold, record

__all__ = [
    "DIRECT_ROOM_TYPE",
    "LIKE_ESCAPE",
    "RoomSearchQuery",
    "build_room_search_query",
    "get_room_lookup_text",
]

# The room type of direct messages in Rocket.Chat's data model (`t: "d"`).
DIRECT_ROOM_TYPE = "d"
# The escape character of `RoomSearchQuery.like_pattern` (for `LIKE ? ESCAPE '\\'`).
LIKE_ESCAPE = "\\"


def get_room_lookup_text(active: ActiveSearchFilter | None, can_use_inline_filters: bool = True) -> str:
    """The text to look rooms up by: the room token's value without quotes and `#`, else ''."""
    if not can_use_inline_filters or active is None:
        return ""
    if get_search_filter_operator(active.key).kind != "room":
        return ""
    return active.lookup_text


# What upstream's escapeRegExp escapes (JavaScript's syntax characters and `/`); both JavaScript and
# Python regexes read each escape as the literal character.
_REGEX_SPECIAL = ".*+?^${}()|[]\\/"
_LIKE_SPECIAL = "%_\\"


def _escaped(text: str, special: str, escape: str) -> str:
    return "".join(escape + char if char in special else char for char in text)


@record
class RoomSearchQuery(FrozenRecord):
    """A backend-neutral room lookup: `text` (cut, unescaped) as a case-insensitive substring of any
    of `fields`, restricted by room type.

    A document store uses `pattern` (escaped regex, case-insensitive); a SQL store binds `needle`
    with `instr(lower_column, ?)` or `like_pattern` with `LIKE ? ESCAPE '\\'`. Lower-case the column in
    Python (a registered function or a stored lower-cased column): SQLite's `lower()` folds ASCII only.
    """

    __slots__ = _fields = ("text", "pattern", "fields", "only_room_types", "exclude_room_types")
    text: str
    pattern: str
    fields: tuple[str, ...]
    only_room_types: tuple[str, ...]
    exclude_room_types: tuple[str, ...]

    def __init__(
        self,
        text: str,
        pattern: str,
        fields: tuple[str, ...] = ("name", "fname"),
        only_room_types: tuple[str, ...] = (),
        exclude_room_types: tuple[str, ...] = (),
    ) -> None:
        self._set("text", text)
        self._set("pattern", pattern)
        self._set("fields", fields)
        self._set("only_room_types", only_room_types)
        self._set("exclude_room_types", exclude_room_types)

    @property
    def needle(self) -> str:
        return fold(self.text)

    @property
    def like_pattern(self) -> str:
        return "%" + _escaped(self.needle, _LIKE_SPECIAL, LIKE_ESCAPE) + "%"

    def matches(self, name: str, fname: str = "", room_type: str = "") -> bool:
        """Whether a room passes, the way a store must decide it (for in-memory lists and tests)."""
        if self.only_room_types and room_type not in self.only_room_types:
            return False
        if room_type in self.exclude_room_types:
            return False
        needle = self.needle
        return any(needle in fold(value) for value in (name, fname))


def build_room_search_query(value: str, mention: str | None = None) -> RoomSearchQuery:
    """Rooms whose name or display name contains `value` (its first `MAX_ROOM_SEARCH_PATTERN_LENGTH`
    characters, cut before escaping so escapes cannot be split); `mention` `"@"` keeps direct
    messages only, any other non-empty mention (`"#"`) leaves them out."""
    text = value[:MAX_ROOM_SEARCH_PATTERN_LENGTH]
    pattern = _escaped(text, _REGEX_SPECIAL, "\\")
    if mention == "@":
        return RoomSearchQuery(text, pattern, only_room_types=(DIRECT_ROOM_TYPE,))
    if mention:
        return RoomSearchQuery(text, pattern, exclude_room_types=(DIRECT_ROOM_TYPE,))
    return RoomSearchQuery(text, pattern)
