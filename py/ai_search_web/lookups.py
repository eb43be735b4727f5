"""Autocomplete answers (rooms for ``in:``, people for ``from:``), kept and reused while people type.

The autocomplete routes return items whose name *contains* the text, at most a route limit. An
answer shorter than the limit is complete: every longer text that contains the same text is answered
from it locally, with the server's own rule (case-insensitive substring of a name, prefix matches
first). The page looks up the empty text once after sign-in, so for anyone with fewer rooms or
contacts than the limit, every later keystroke is answered without a request::

    >>> rooms = LookupCache(ROOM_LOOKUP)
    >>> rooms.store("", [{"_id": "r1", "name": "ops"}, {"_id": "r2", "name": "design"}])
    >>> [item["name"] for item in rooms.local("#OP") or []]
    ['ops']

Pure: no ``js`` import, so CPython tests cover it; portable (the keystroke stage, on MicroPython,
answers its suggestions from the fallback's lists with it).
"""

from ai_search import (
    AI_SEARCH_ROOM_LOOKUP_LIMIT,
    build_filter_suggestions,
    build_user_filter_suggestions,
    fold_text,
    get_search_filter_operator,
    merge_filter_suggestions,
    strip_text,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from datetime import date
    from typing import Any

    from ai_search import ActiveSearchFilter, FilterSuggestion

    Item = Mapping[str, Any]

__all__ = [
    "LOOKED_UP_KINDS",
    "MAX_CACHED_LOOKUPS",
    "ROOM_LOOKUP",
    "USER_LOOKUP",
    "LookupCache",
    "LookupKind",
    "suggestions_for",
]

# Distinct lookup texts kept per kind; the oldest is dropped past this (answers are small).
MAX_CACHED_LOOKUPS = 200
# Items users.autocomplete returns at most (the server's USER_AUTOCOMPLETE_LIMIT).
USER_LOOKUP_LIMIT = 10


def _text(item: "Item", key: str) -> str:
    value = item.get(key)
    return value if isinstance(value, str) else ""


class LookupKind:
    """One autocomplete route: its item limit, the name fields it matches, the field it sorts by,
    and the sigil its lookup text may start with (stripped, as the route does). Immutable by
    convention (a plain class: MicroPython has no dataclasses)."""

    __slots__ = ("fields", "limit", "sigil", "sort_field")

    def __init__(self, limit: int, fields: "tuple[str, ...]", sort_field: str, sigil: str) -> None:
        self.limit = limit
        self.fields = fields
        self.sort_field = sort_field
        self.sigil = sigil

    def __repr__(self) -> str:
        return f"LookupKind({self.limit!r}, {self.fields!r}, {self.sort_field!r}, {self.sigil!r})"

    def normalise(self, text: str) -> str:
        if text.startswith(self.sigil):
            text = text[len(self.sigil) :]
        return fold_text(strip_text(text))

    def matches(self, item: "Item", needle: str) -> bool:
        return any(needle in fold_text(_text(item, name)) for name in self.fields)

    def rank(self, item: "Item", needle: str) -> "tuple[bool, str, str]":
        name = _text(item, self.sort_field)
        return (not fold_text(name).startswith(needle), name, _text(item, "_id"))


ROOM_LOOKUP = LookupKind(AI_SEARCH_ROOM_LOOKUP_LIMIT, ("name", "fname"), "name", "#")
USER_LOOKUP = LookupKind(USER_LOOKUP_LIMIT, ("username", "name"), "username", "@")


class LookupCache:
    """Answers by normalised lookup text; :meth:`local` answers from them or says it cannot."""

    def __init__(self, kind: LookupKind) -> None:
        self.kind = kind
        self._answers: dict[str, tuple[Item, ...]] = {}

    def store(self, text: str, items: "Sequence[Item]") -> None:
        key = self.kind.normalise(text)
        self._answers.pop(key, None)
        if len(self._answers) >= MAX_CACHED_LOOKUPS:
            self._answers.pop(next(iter(self._answers)))
        self._answers[key] = tuple(items)

    def local(self, text: str) -> "list[Item] | None":
        """The answer for ``text`` without a request, or None when only the server knows it."""
        needle = self.kind.normalise(text)
        exact = self._answers.get(needle)
        if exact is not None:
            return list(exact)
        for key, items in self._answers.items():  # portable: any complete one gives the same items
            if len(items) < self.kind.limit and key in needle:
                found = [item for item in items if self.kind.matches(item, needle)]
                found.sort(key=lambda i: self.kind.rank(i, needle))  # portable: a total order (the id last)
                return found[: self.kind.limit]
        return None

    def clear(self) -> None:
        self._answers.clear()


# Filter kinds whose suggestions come from lookups (the server's, so only for someone signed in).
LOOKED_UP_KINDS = ("room", "user")


def suggestions_for(
    active: "ActiveSearchFilter | None",
    lookup: "Callable[[str, str], Sequence[Item] | None]",
    *,
    signed_in: bool,
    today: "date",
) -> "tuple[FilterSuggestion, ...] | None":
    """What the box offers for the filter at the caret: rooms and people from ``lookup(kind, text)``
    (None: not looked up yet), the typed name beside the people, date and choice values for the rest.
    None when there is nothing to offer (no filter at the caret, or a lookup for someone signed out):
    the list closes. The page's box and the keystroke stage both answer a keystroke with it."""
    if active is None:
        return None
    kind = get_search_filter_operator(active.key).kind
    if kind in LOOKED_UP_KINDS and not signed_in:
        return None
    if kind == "room":
        return build_filter_suggestions(active, lookup(kind, active.lookup_text) or ())
    if kind == "user":
        users = lookup(kind, active.lookup_text) or ()
        return merge_filter_suggestions(
            build_user_filter_suggestions(active, users), build_filter_suggestions(active)
        )
    return build_filter_suggestions(active, today=today)  # dates, has:/is:/sort: values
