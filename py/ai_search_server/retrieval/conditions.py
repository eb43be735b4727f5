"""``MessageConditions``: the search line's content and state filters, as a pipeline applies them.

The pipeline contract filters by room, author and time only (spec §6). What else a search line asks
of a message -- ``has:``, ``is:``, the excluded authors, words and phrases, and the quoted phrases a
result must hold -- travels beside it as **our extension** of the request: one optional top-level
field, ``CONDITIONS_FIELD``, that a pipeline which knows it applies over everything it holds and
acknowledges in its answer (``CONDITIONS_FIELD: "applied"``). A pipeline that does not know it
ignores an unknown field and acknowledges nothing; the search service then checks the conditions on
the candidates that pipeline proposed and says so in ``meta.scope`` (docs/search-language.md).

    request  {..., "ai_search_conditions": {"has": ["file"], "notHas": [], "is": ["pinned"],
              "notIs": [], "notUsernames": ["bot"], "notWords": ["canary", "rolling back"],
              "phrases": ["release train"]}}
    answer   {"results": [...], "ai_search_conditions": "applied"}

``is:dm`` never travels: whether a room is a direct message is the store's to say, so the search
service narrows the room filter instead (exact, whatever the pipeline).

Each list is optional and holds at most ``MAX_CONDITION_VALUES`` values; unknown keys or values are
refused (a pipeline that applied half of what it was asked would be silently wrong).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CONDITIONS_APPLIED",
    "CONDITIONS_FIELD",
    "MAX_CONDITION_VALUES",
    "MAX_CONDITION_VALUE_CHARS",
    "PIPELINE_HAS_VALUES",
    "PIPELINE_IS_VALUES",
    "ConditionsError",
    "MessageConditions",
    "conditions_applied",
    "parse_conditions",
    "with_conditions",
]

#: The request field (and answer field) of the extension; named so that no upstream field collides.
CONDITIONS_FIELD = "ai_search_conditions"
#: What a pipeline answers in ``CONDITIONS_FIELD`` when it applied every condition to all it holds.
CONDITIONS_APPLIED = "applied"
# Values one list may hold: the grammar keeps at most 25 per operator; room for a few operators more.
MAX_CONDITION_VALUES = 50
# Characters of one word or phrase: the search line itself is at most 500.
MAX_CONDITION_VALUE_CHARS = 500
#: `has:` values a pipeline applies (the grammar's canonical values).
PIPELINE_HAS_VALUES = ("link", "file", "image", "reaction", "thread")
#: `is:` values a pipeline applies; `dm` is a room's kind, applied by the service's room filter.
PIPELINE_IS_VALUES = ("thread", "pinned")
# Wire key -> (attribute, the values allowed or None for any non-empty string).
_FIELDS: Mapping[str, tuple[str, tuple[str, ...] | None]] = {
    "has": ("has", PIPELINE_HAS_VALUES),
    "notHas": ("not_has", PIPELINE_HAS_VALUES),
    "is": ("is_", PIPELINE_IS_VALUES),
    "notIs": ("not_is", PIPELINE_IS_VALUES),
    "notUsernames": ("not_usernames", None),
    "notWords": ("not_words", None),
    "phrases": ("phrases", None),
}


class ConditionsError(ValueError):
    """The extension field does not follow its shape; the message says which part."""


@dataclass(frozen=True, slots=True)
class MessageConditions:
    """What a message must be beyond room, author and time. Words and phrases are as typed; the
    pipeline matches them as its keyword branch matches words."""

    has: tuple[str, ...] = ()
    not_has: tuple[str, ...] = ()
    is_: tuple[str, ...] = ()
    not_is: tuple[str, ...] = ()
    not_usernames: tuple[str, ...] = ()
    not_words: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return any(getattr(self, attribute) for attribute, _values in _FIELDS.values())

    def to_wire(self) -> dict[str, list[str]]:
        """The extension field's value (empty lists left out)."""
        return {
            key: list(getattr(self, attribute))
            for key, (attribute, _values) in _FIELDS.items()
            if getattr(self, attribute)
        }

    def operators(self) -> tuple[str, ...]:
        """The operators these conditions hold, as typed (`has:`, `-word`), for a note on the receipt."""
        named = (
            ("has:", self.has),
            ("-has:", self.not_has),
            ("is:", self.is_),
            ("-is:", self.not_is),
            ("-from:", self.not_usernames),
            ("-word", self.not_words),
            ('"phrase"', self.phrases),
        )
        return tuple(name for name, values in named if values)


def _values(key: str, value: object, allowed: tuple[str, ...] | None) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > MAX_CONDITION_VALUES:
        raise ConditionsError(
            f"{CONDITIONS_FIELD}.{key} must be a list of at most {MAX_CONDITION_VALUES} strings"
        )
    for item in value:
        if not isinstance(item, str) or not item.strip() or len(item) > MAX_CONDITION_VALUE_CHARS:
            raise ConditionsError(
                f"{CONDITIONS_FIELD}.{key} values must be non-blank strings of at most "
                f"{MAX_CONDITION_VALUE_CHARS} characters"
            )
        if allowed is not None and item not in allowed:
            raise ConditionsError(f"{CONDITIONS_FIELD}.{key} takes {', '.join(allowed)}; got {item!r}")
    return tuple(dict.fromkeys(value))


def parse_conditions(value: object) -> MessageConditions | None:
    """The extension field of a request body (None when absent).

    Raises:
        ConditionsError: naming the first part that is wrong.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConditionsError(f"{CONDITIONS_FIELD} must be an object")
    unknown = sorted(set(value) - set(_FIELDS))
    if unknown:
        raise ConditionsError(
            f"unknown {CONDITIONS_FIELD} key(s) {', '.join(map(str, unknown))}; known: {', '.join(_FIELDS)}"
        )
    found: dict[str, Any] = {
        attribute: _values(key, value[key], allowed)
        for key, (attribute, allowed) in _FIELDS.items()
        if key in value
    }
    return MessageConditions(**found)


def conditions_applied(answer: object) -> bool:
    """Whether a pipeline's answer says it applied the conditions it was sent."""
    return isinstance(answer, Mapping) and answer.get(CONDITIONS_FIELD) == CONDITIONS_APPLIED


def with_conditions(body: Mapping[str, Any], conditions: MessageConditions | None) -> dict[str, Any]:
    """A contract request body with the extension field added (the body itself when there is none)."""
    if conditions is None or not conditions.active:
        return dict(body)
    return {**body, CONDITIONS_FIELD: conditions.to_wire()}
