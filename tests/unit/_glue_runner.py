"""Runs cases through the page's pure glue modules and writes what each gives as JSON: on CPython, on
MicroPython and on Pyodide.

tests/unit/test_glue_micropython.py runs this file on the three interpreters (on MicroPython and
Pyodide in Node, written into their file systems with ``ai_search`` and the glue modules) and compares
the outputs exactly. So it follows the portable convention itself (the core runner's, _core_runner.py).

A case is ``[operation, argument...]`` (see ``_OPERATIONS``). Records come out as ``{field: value}``,
tuples and frozensets as lists (a frozenset sorted), dict keys as text, an exception as
``{"error": its class name}``.
"""

import json

from ai_search_web import answer_text, conversations, embed_protocol, message_parts, recent, wording

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def plain(value: "Any") -> "Any":
    """`value` as JSON can hold it."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [plain(item) for item in value]
    if isinstance(value, frozenset):
        return sorted(plain(item) for item in value)  # portable: text, a total order
    if isinstance(value, dict):  # compared as JSON objects: their order does not count
        return {str(key): plain(item) for key, item in value.items()}
    fields = getattr(value, "_fields", None)
    if fields is not None:
        return {name: plain(getattr(value, name)) for name in fields}
    raise TypeError("not plain: " + type(value).__name__)


def _call(function: "Callable[..., Any]", *args: "Any") -> "Any":
    try:
        return function(*args)
    except Exception as error:  # the class is the result
        return {"error": type(error).__name__}


def _reactions(message: "Any") -> "Any":
    # The reactions themselves, by shortcode: their order is the object's, which MicroPython's dicts
    # do not keep (message_reactions' docstring); how many are shown is compared as it is.
    found = message_parts.message_reactions(message)
    return {"count": len(found), "by_shortcode": {reaction.shortcode: plain(reaction) for reaction in found}}


def _groups(results: "list[Any]", max_hits: int) -> "Any":
    groups = conversations.group_by_conversation(results, max_hits)
    return [{"group": plain(group), "grouped": group.grouped} for group in groups]


def _sentences(value: "Any") -> "Any":
    return [{"check": plain(check), "unsupported": check.unsupported} for check in answer_text.read_sentences(value)]


def _runs(answer: str, sentences: "Any") -> "Any":
    return plain(answer_text.sentence_runs(answer, answer_text.read_sentences(sentences)))


def _segments(text: str, valid: "list[int]") -> "Any":
    return plain(answer_text.answer_segments(text, lambda number: number in valid))


def _cited(answer: str, pairs: "list[list[Any]]") -> "Any":
    return answer_text.cited_ids(answer, {number: msg_id for number, msg_id in pairs})


def _turn() -> "Any":
    turn = answer_text.Turn("why?")
    turn.text = "because [1]"
    turn.citations[1] = answer_text.CitedMessage("m1", "r1", "Carol", "#ops")
    return plain(turn)


_OPERATIONS: "dict[str, Callable[..., Any]]" = {
    # embed_protocol
    "allowed_origins": lambda text: plain(embed_protocol.parse_allowed_origins(text)),
    "host_origin": lambda requested, allowed, framed, parent: embed_protocol.host_origin(
        requested, allowed, framed=framed, parent_origin=parent
    ),
    "host_message": lambda data: plain(embed_protocol.read_host_message(data)),
    "widget_message": lambda kind, fields: embed_protocol.widget_message(kind, **fields),
    "scoped_query": embed_protocol.scoped_query,
    # message_parts
    "files": lambda message: plain(message_parts.message_files(message)),
    "reactions": _reactions,
    "reactions_shown": lambda message: len(message_parts.message_reactions(message)),
    "source_link": lambda record: plain(message_parts.source_link(record)),
    "fields": lambda record, key: [
        message_parts.text_field(record, key),
        plain(message_parts.object_field(record, key)),
        plain(message_parts.list_field(record, key)),
    ],
    "emoji": message_parts.emoji_for,
    # recent
    "recent": lambda stored: plain(recent.recent_searches(stored)),
    "with_recent": lambda kept, line: plain(recent.with_recent_search(kept, line)),
    "encode_recent": recent.encode_recent_searches,
    "recent_options": lambda kept: plain(recent.recent_search_suggestions(kept)),
    # wording
    "count_text": wording.count_text,
    "bands_text": wording.bands_text,
    "related_text": wording.related_text,
    "no_strong_text": wording.no_strong_text,
    "coverage_text": wording.coverage_text,
    "too_long_text": wording.too_long_text,
    "counter_text": lambda length, limit: wording.counter_text(length, limit) if limit else wording.counter_text(length),
    "lockout_text": wording.lockout_text,
    "match_words": wording.match_words,
    "reason_text": wording.reason_text,
    "replies_text": wording.replies_text,
    "more_in_thread_text": wording.more_in_thread_text,
    "file_size_text": wording.file_size_text,
    "casefold": lambda text: wording._casefold(text),
    "room_label": wording.room_label,
    # conversations
    "groups": _groups,
    "groups_by_time": lambda results: [plain(group) for group in conversations.group_by_conversation(results, by_time=True)],
    "bands": lambda results: plain(conversations.split_bands(results)),
    "message_id": conversations.message_id,
    "thread_of": lambda result: plain(conversations.thread_of(result)),
    "numbers": lambda results, ids: [conversations.ResultNumbers(results).number(i) for i in ids],
    # answer_text
    "sentences": _sentences,
    "runs": _runs,
    "segments": _segments,
    "cited": _cited,
    "citations": lambda value: plain(answer_text.read_citations(value)),
    "unsupported_text": answer_text.unsupported_text,
    "citation_link": lambda n, value, listed: plain(
        answer_text.citation_link(n, answer_text.read_citations(value), {k: v for k, v in listed}.get)
    ),
    "turn": _turn,
}


def run(cases: "list[list[Any]]") -> "list[Any]":
    """The result of each case, in order."""
    results = []
    for case in cases:
        results.append(plain(_call(_OPERATIONS[case[0]], *case[1:])))
    return results


def main(source: str, target: str) -> None:
    with open(source, encoding="utf-8") as handle:
        cases = json.load(handle)
    with open(target, "w", encoding="utf-8") as handle:
        json.dump(run(cases), handle)
