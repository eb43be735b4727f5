"""Follow-up questions: the earlier turns of an answer conversation, and what a follow-up asks.

A follow-up such as "and who fixed it?" means nothing on its own. The answer route takes the earlier
turns of the conversation (each turn: the question as asked and the ids of the messages its answer
drew on, never their texts) and reads the follow-up in their light:

    >>> resolve_follow_up("and who fixed it?", ["why did the postgres failover take so long"])
    'who fixed it? postgres failover'
    >>> resolve_follow_up("what did the pentest find?", ["why did the postgres failover take so long"])
    'what did the pentest find?'

A follow-up *leans on* the turn before it when it starts as a continuation ("and", "also", "what
about"), points back ("it", "that", "they", "there"...), or names at most `MAX_LEANING_WORDS`
content words of its own; it is then searched together with the words of the turn before that name
something (stop words and weak words such as "take" or "long" left out, and those the follow-up
already has). Each earlier turn is read in the light of the one before it, so "and who fixed it?"
after "and when?" after "why did the failover take so long" still carries "failover". A follow-up
that asks about something new is searched as it is. English wording, like `_sentences`.

`normalize_answer_turns` checks the request's `turns` the way `normalize_answer_sources` checks its
`messages`; `follow_up_sources` merges this turn's sources, what the new search found and the
earlier turns' sources into one list, within `MAX_SEARCH_ANSWER_MESSAGES`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

# The turns a client keeps, and their limits, live in the page's own module (it runs on MicroPython
# too); imported here, where the route reads them, so `ai_search._follow_ups` still names them.
from ._answer_turns import MAX_ANSWER_TURN_SOURCES, MAX_ANSWER_TURNS
from ._answer_turns import append_turn as append_turn
from ._answers import (
    AnswerSourceRef,
    InvalidAnswerRequestError,
    body_object,
    normalize_answer_query,
    source_ref,
)
from ._constants import MAX_SEARCH_ANSWER_MESSAGES, MAX_SEARCH_QUERY_LENGTH
from ._sentences import STOP_WORDS, WEAK_WORDS, content_stems, stem, tokens

__all__ = [
    "FOLLOW_UP_EARLIER_SOURCES",
    "FOLLOW_UP_SEARCH_RESULTS",
    "MAX_ANSWER_TURNS_BYTES",
    "MAX_LEANING_WORDS",
    "AnswerTurn",
    "follow_up_sources",
    "normalize_answer_turns",
    "resolve_follow_up",
    "resolve_turns",
]

# UTF-8 bytes of all earlier questions together (bytes): five questions of a few hundred characters.
MAX_ANSWER_TURNS_BYTES = 4096
# Results of the follow-up's own search that become sources (messages): half of an answer's sources,
# so the earlier turns keep the other half.
FOLLOW_UP_SEARCH_RESULTS = MAX_SEARCH_ANSWER_MESSAGES // 2
# Sources of the earlier turns an answer keeps (messages), the most recent turn's first.
FOLLOW_UP_EARLIER_SOURCES = MAX_SEARCH_ANSWER_MESSAGES - FOLLOW_UP_SEARCH_RESULTS
# Content words a follow-up may have and still lean on the turn before it (words): "when?", "why?",
# "who else?".
MAX_LEANING_WORDS = 1

_TURN_KEYS: Final = frozenset({"query", "messages"})
_CONTINUATION: Final = re.compile(
    r"^\W*(and|also|so|then|but|plus|what about|how about|and what about|and how about)\b\W*", re.IGNORECASE
)
_POINTERS_TEXT = "it its that this these those they them their there he she him her"
_POINTERS: Final = frozenset(_POINTERS_TEXT.split())


@dataclass(frozen=True, slots=True)
class AnswerTurn:
    """An earlier turn: the question as asked, and the messages its answer drew on."""

    query: str
    sources: tuple[AnswerSourceRef, ...]


def _turn(item: object, index: int) -> AnswerTurn:
    field = f"turns[{index}]"
    item = body_object(item, field, _TURN_KEYS, "query and messages")
    try:
        query = normalize_answer_query(item.get("query"))
    except InvalidAnswerRequestError as exc:
        raise InvalidAnswerRequestError(f"{field}.{exc}") from None
    messages = item.get("messages", [])
    if not isinstance(messages, list) or len(messages) > MAX_ANSWER_TURN_SOURCES:
        raise InvalidAnswerRequestError(
            f"{field}.messages must be an array of at most {MAX_ANSWER_TURN_SOURCES} {{_id, score?}} objects"
        )
    refs: dict[str, AnswerSourceRef] = {}
    for i, message in enumerate(messages):
        ref = source_ref(message, f"{field}.messages[{i}]")
        refs.setdefault(ref.msg_id, ref)
    return AnswerTurn(query, tuple(refs.values()))


def normalize_answer_turns(turns: object) -> list[AnswerTurn]:
    """Validate the body's `turns` (earlier turns, oldest first): at most `MAX_ANSWER_TURNS`, each a
    `{query, messages}` object, their questions at most `MAX_ANSWER_TURNS_BYTES` UTF-8 bytes together.

    Raises:
        InvalidAnswerRequestError: not a list, too many turns or bytes, or a turn that breaks the schema
            (the message names the field, `turns[1].messages[0]._id`).
    """
    if turns is None:
        return []
    if not isinstance(turns, list):
        raise InvalidAnswerRequestError("turns must be an array of {query, messages} objects")
    if len(turns) > MAX_ANSWER_TURNS:
        raise InvalidAnswerRequestError(f"turns must hold at most {MAX_ANSWER_TURNS} items, got {len(turns)}")
    parsed = [_turn(item, index) for index, item in enumerate(turns)]
    size = sum(len(turn.query.encode("utf-8")) for turn in parsed)
    if size > MAX_ANSWER_TURNS_BYTES:
        raise InvalidAnswerRequestError(
            f"the questions of turns must be at most {MAX_ANSWER_TURNS_BYTES} bytes together, got {size}"
        )
    return parsed


def _leans(query: str) -> bool:
    words = tokens(query)
    return (
        bool(_CONTINUATION.match(query))
        or any(word in _POINTERS for word in words)
        or len(content_stems(query)) <= MAX_LEANING_WORDS
    )


def resolve_follow_up(query: str, earlier: Sequence[str]) -> str:
    """What to search for `query`, asked after the (already resolved) questions `earlier`, oldest
    first: see the module docstring. At most `MAX_SEARCH_QUERY_LENGTH` characters."""
    if not earlier or not _leans(query):
        return query
    own = content_stems(query)
    carried = [
        word
        for word in tokens(earlier[-1])
        if word not in STOP_WORDS and stem(word) not in own and stem(word) not in WEAK_WORDS
    ]
    asked = _CONTINUATION.sub("", query).strip() or query.strip()
    return f"{asked} {' '.join(dict.fromkeys(carried))}".strip()[:MAX_SEARCH_QUERY_LENGTH]


def resolve_turns(query: str, turns: Sequence[AnswerTurn]) -> str:
    """`resolve_follow_up` for `query` after `turns`, each earlier turn read after the ones before it."""
    resolved: list[str] = []
    for turn in turns:
        resolved.append(resolve_follow_up(turn.query, resolved))
    return resolve_follow_up(query, resolved)


def follow_up_sources(
    current: Sequence[AnswerSourceRef], found: Sequence[AnswerSourceRef], turns: Sequence[AnswerTurn]
) -> list[AnswerSourceRef]:
    """One follow-up's sources: this turn's own, then up to `FOLLOW_UP_SEARCH_RESULTS` of its search,
    then up to `FOLLOW_UP_EARLIER_SOURCES` of the earlier turns (the most recent first); each id once
    (the first score given wins), `MAX_SEARCH_ANSWER_MESSAGES` in all."""
    merged: dict[str, AnswerSourceRef] = {}

    def add(refs: Sequence[AnswerSourceRef], limit: int) -> None:
        taken = 0
        for ref in refs:
            if taken >= limit or len(merged) >= MAX_SEARCH_ANSWER_MESSAGES:
                return
            if ref.msg_id not in merged:
                merged[ref.msg_id] = ref
                taken += 1

    add(current, MAX_SEARCH_ANSWER_MESSAGES)
    add(found, FOLLOW_UP_SEARCH_RESULTS)
    add([ref for turn in reversed(turns) for ref in turn.sources], FOLLOW_UP_EARLIER_SOURCES)
    return list(merged.values())
