"""What the server tells an agent about itself: the ``instructions`` of ``initialize`` and
``server/discover`` (every revision has the field).

The search grammar's lines come from the core's operator table (``SEARCH_FILTER_OPERATORS``), the
same one the search box and the server's parser read, so the instructions cannot describe a filter
that does not exist.
"""

from __future__ import annotations

from ai_search import (
    MAX_SEARCH_FILTER_VALUES,
    MAX_SEARCH_QUERY_LENGTH,
    SEARCH_FILTER_OPERATORS,
    SearchFilterOperator,
)

__all__ = ["server_instructions"]

# How each kind of filter value is written, with an example: one row per kind of the core's table.
# A `choice` row's example is its first value; its values are listed from the table itself.
_VALUE_OF_KIND = {
    "room": ("a room you can read, by name", "ops"),
    "user": ("an author, by username", "alice"),
    "date": ("a date, written as below", "2026-11-01"),
    "choice": ("one of", ""),
    "word": ("a word or a quoted phrase the messages must not contain", "standup"),
}


def _filter_line(op: SearchFilterOperator) -> str:
    meaning, example = _VALUE_OF_KIND[op.kind]
    if op.kind == "choice":
        meaning, example = f"{meaning} {', '.join(op.choices)}", op.choices[0]
    if op.negated and op.kind != "word":
        meaning = f"leaves out {meaning}"
    token = f"{op.prefix}{op.sigil}{example}"
    several = (
        f"; several: {token},{op.sigil}{example}2" if op.multiple and op.kind in {"room", "user"} else ""
    )
    return f"- {token} — {meaning}{several}"


def _filter_lines() -> list[str]:
    return [_filter_line(op) for op in SEARCH_FILTER_OPERATORS]


def server_instructions() -> str:
    """The instructions, as one text (built once per process by the protocol module)."""
    return "\n".join(
        [
            "ai-search searches a team-chat workspace as the signed-in person: every tool sees only the "
            "rooms that person can read, and writes (posting, creating channels) happen under their name.",
            "",
            "Searching: call get_ai_search_by_q with q, one line as typed in the search box: words, plus "
            'any of these filters (case-insensitive keys; quote a value with spaces, in:"team room"):',
            *_filter_lines(),
            "Dates: YYYY-MM-DD, YYYY-MM, YYYY, today, yesterday, -7d, -2w, -3m, -1y, a weekday, "
            "this-week, last-week, last-month; in the zone of the tz parameter (UTC without it).",
            f"The words are required (up to {MAX_SEARCH_QUERY_LENGTH} characters); each filter takes at "
            f'most {MAX_SEARCH_FILTER_VALUES} values. Example: q="deploy failed in:#ops after:2026-11-01". '
            "Results are ranked by keyword and meaning together; each has _id, the room, the author, the "
            "time, why it matched and its thread.",
            "",
            "Scoping: narrow with in: and from: rather than searching everything and filtering yourself; a "
            "room the person cannot read is never searched, so an empty result is not proof that nothing "
            "was said elsewhere. A quoted phrase matches as written.",
            "",
            "Reading: get_chat_getMessageContext shows a hit in its conversation (its thread, or the "
            "messages around it); get_channels_history, get_groups_history and get_im_history read a "
            "room between two times.",
            "",
            "Citing: name the message you rely on by its _id, with its room and time; quote it rather "
            "than paraphrase when the exact words matter. post_ai_search_answer writes an answer from "
            "the _ids a search returned and cites them as [1], [2]; keep its numbers with the answer.",
        ]
    )
