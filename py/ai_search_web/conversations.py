"""Results as conversations: the hits of one thread listed together, under the thread's title.

A search for an incident finds its thread five times; read as five separate results it says less
than the thread does. So the list shows conversations: each thread (the replies' ``tmid``, the
``thread._id`` that ``ai.search`` gives a reply and a thread's first message) takes the rank of its
best hit. Its best hit comes first, the answer the search found, then its other hits in the order
they were written, so they read as the conversation did. A message outside any thread is a
conversation of its own. A thread shows its ``MAX_HITS_PER_CONVERSATION`` best hits; the others are
counted ("2 more in this thread") and are one click away, highlighted in the thread's context view.

Results come in two bands (``ai.search``'s ``band``): strong ones answer the query, related ones are
less certain and listed apart, after them (:func:`split_bands`; a result without a band is strong).
Each band is grouped on its own, and the page numbers the hits in this order (``[N]``), the strong
ones first, and answers cite them in it. Pure (no ``js``), so CPython tests cover it::

    strong, related = split_bands(results)
    groups = group_by_conversation(strong) + group_by_conversation(related)
    shown = [hit for group in groups for hit in group.hits]   # the list, top to bottom

Portable (the page on MicroPython 1.28 as on Pyodide: the convention of ``ai_search/_portable.py``).
"""

from ai_search import MAPPINGS, FrozenRecord, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    Result = Mapping[str, Any]

__all__ = [
    "MAX_HITS_PER_CONVERSATION",
    "RELATED_BAND",
    "STRONG_BAND",
    "Conversation",
    "ResultNumbers",
    "group_by_conversation",
    "message_id",
    "split_bands",
    "thread_of",
]

# Hits of one thread listed under it: enough to show why the thread matched, few enough that one busy
# thread cannot fill the first page and push every other conversation below the fold.
MAX_HITS_PER_CONVERSATION = 3
# ai.search's bands: strong results answer the query; related ones are less certain, listed apart.
STRONG_BAND = "strong"
RELATED_BAND = "related"


@record
class Conversation(FrozenRecord):
    """One entry of the list: a thread's hits (``thread`` set), or a single message (``thread``
    None, unless the message is a thread's only hit)."""

    __slots__ = _fields = ("key", "thread", "hits", "more")
    key: str
    thread: "Mapping[str, Any] | None"
    hits: "tuple[Result, ...]"  # the best first, then the others in the order they were written
    more: "tuple[Result, ...]"  # hits of this thread found but not listed, best first

    def __init__(
        self,
        key: str,
        thread: "Mapping[str, Any] | None",
        hits: "tuple[Result, ...]",
        more: "tuple[Result, ...]" = (),
    ) -> None:
        self._set("key", key)
        self._set("thread", thread)
        self._set("hits", hits)
        self._set("more", more)

    @property
    def grouped(self) -> bool:
        """Whether the list shows a conversation heading over several hits."""
        return self.thread is not None and len(self.hits) + len(self.more) > 1


def message_id(result: "Result") -> str:
    """The message id of a search result or a message (``msgId`` or ``_id``), or ``""``."""
    for key in ("msgId", "_id"):
        value = result.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def thread_of(result: "Result") -> "Mapping[str, Any] | None":
    """The result's thread ``{_id, title, replies}`` when it has a well-formed one."""
    thread = result.get("thread")
    if not isinstance(thread, MAPPINGS) or not isinstance(thread.get("_id"), str) or not thread["_id"]:
        return None
    return thread


def _written(result: "Result") -> str:
    ts = result.get("ts")
    return ts if isinstance(ts, str) else ""


def split_bands(results: "Sequence[Result]") -> "tuple[list[Result], list[Result]]":
    """``results`` as (strong, related), each in the order given. A result whose ``band`` is not
    ``related`` is strong: a server without calibrated bands sends none, and all of it is the list."""
    strong: list[Result] = []
    related: list[Result] = []
    for result in results:
        (related if result.get("band") == RELATED_BAND else strong).append(result)
    return strong, related


def group_by_conversation(
    results: "Sequence[Result]", max_hits: int = MAX_HITS_PER_CONVERSATION, *, by_time: bool = False
) -> "list[Conversation]":
    """``results`` (best first) as conversations, best first; each thread lists its best ``max_hits``
    hits: the best of them first, then the others in the order they were written (ISO times compare
    as text; ties keep their rank). ``by_time``: the results are sorted newest first (``sort:new``),
    and each thread keeps that order."""
    order: list[str] = []  # the keys, first found first: the dicts below are only looked up
    hits: dict[str, list[Result]] = {}
    threads: dict[str, Mapping[str, Any] | None] = {}
    for index, result in enumerate(results):
        thread = thread_of(result)
        key = f"thread:{thread['_id']}" if thread is not None else f"message:{message_id(result) or index}"
        if key not in hits:
            order.append(key)
            hits[key] = []
            threads[key] = thread
        hits[key].append(result)
    groups = []
    for key in order:
        found = hits[key]
        cut = max(1, max_hits) if threads[key] is not None else len(found)
        kept, more = found[:cut], found[cut:]
        if not by_time:
            # The best hit first: it is what the search found, the answer, often a reply deep in the
            # thread; listed by time it would sit under the question that started the thread, and a
            # reader (and an answer's [1]) would meet the question first. The others follow as they
            # were written, so the rest of the group still reads as the conversation did.
            rest = sorted(range(1, len(kept)), key=lambda i: (_written(kept[i]), i))  # portable: ties by rank
            kept = [kept[0]] + [kept[i] for i in rest]
        groups.append(Conversation(key, threads[key], tuple(kept), tuple(more)))
    return groups


class ResultNumbers:
    """The page's one numbering of messages: result ``n`` of the list (1-based, in the list's order,
    shown or behind "Show more") is ``[n]``, and so is every citation of its message in every answer
    (``answer_text.citation_link``). Built once per result list; "Show more" reveals, never renumbers.

        >>> ResultNumbers([{"_id": "a"}, {"_id": "b"}]).number("b")
        2
    """

    def __init__(self, results: "Sequence[Result]" = ()) -> None:
        self._numbers: dict[str, int] = {}
        for index, result in enumerate(results):
            msg_id = message_id(result)
            if msg_id and msg_id not in self._numbers:
                self._numbers[msg_id] = index + 1
        self._count = len(results)

    def number(self, msg_id: str) -> "int | None":
        """The list's number of this message, or None when the list does not hold it."""
        return self._numbers.get(msg_id) if msg_id else None

    def __len__(self) -> int:
        return self._count
