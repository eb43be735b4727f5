"""The earlier turns a follow-up question carries: what a client keeps after each answer and sends
with the next question (the question as asked and the ids of the messages its answer cited, never
their texts), within the limits the answer route checks (``_follow_ups`` reads them there).

A page module (``ai_search.PAGE_MODULES``): the page keeps the turns on MicroPython too, so this
follows the convention of ``_portable``.
"""

from ._constants import MAX_SEARCH_ANSWER_MESSAGES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["MAX_ANSWER_TURNS", "MAX_ANSWER_TURN_SOURCES", "append_turn"]

# Earlier turns one follow-up may bring (turns): a conversation longer than this has moved on, and
# each turn's sources cost prompt space.
MAX_ANSWER_TURNS = 5
# Source ids of one earlier turn (messages): as many as one answer may cite.
MAX_ANSWER_TURN_SOURCES = MAX_SEARCH_ANSWER_MESSAGES


def append_turn(
    turns: "Sequence[Mapping[str, object]]", query: str, cited: "Sequence[str]"
) -> "list[dict[str, object]]":
    """The `turns` a client sends with its next follow-up, once `query` was answered citing the
    message ids `cited`: the earlier turns and this one, the last `MAX_ANSWER_TURNS` of them, each
    with at most `MAX_ANSWER_TURN_SOURCES` ids, oldest first; what the page and the widget keep.

        >>> append_turn([], "why did the failover take so long", ["m1", "m2", "m1"])
        [{'query': 'why did the failover take so long', 'messages': [{'_id': 'm1'}, {'_id': 'm2'}]}]
    """
    ids: list[str] = []
    for msg_id in cited:  # each id once, first cited first (a list: dicts keep no order everywhere)
        if msg_id not in ids:
            ids.append(msg_id)
    turn: dict[str, object] = {
        "query": query,
        "messages": [{"_id": msg_id} for msg_id in ids[:MAX_ANSWER_TURN_SOURCES]],
    }
    kept = [dict(t) for t in turns]
    kept.append(turn)
    return kept[-MAX_ANSWER_TURNS:]
