"""An answer's text as the panel draws it: sentences as the citation check judged them, and citations.

Pure (no ``js``), so it is tested on CPython (tests/browser/test_web_answer_text.py), and portable
(the page on MicroPython 1.28 as on Pyodide: the convention of ``ai_search/_portable.py``). The server checks
every sentence of an answer against the sources it cites (``ai_search.check_citations``) and sends
the verdicts as ``sentences``: each sentence's text, its valid ``citations``, ``supported`` (``None``
when it cites nothing) and the ``spans`` that support it (``{n, start, end}``: code points of source
``n``'s text). :func:`sentence_runs` cuts the answer at those sentences, in order, so the panel can
mark the unsupported ones; the answer's text comes out whole and exactly once, whatever the server
sent (a sentence it cannot find is left unmarked)::

    >>> checks = read_sentences([{"text": "It failed [1].", "citations": [1], "supported": False}])
    >>> [(text, run is not None and run.supported) for text, run in sentence_runs("It failed [1]. Sorry.", checks)]
    [('It failed [1].', False), (' Sorry.', False)]

:func:`answer_segments` cuts a run into plain text and the citation numbers that name a source, and
:func:`cited_ids` lists the messages an answer cited, for the next follow-up's ``turns``.

**One number per message.** The server numbers an answer's sources its own way (a follow-up's own
search, the replies of a source's thread after the sources, a shared answer's numbering of long
ago); the page numbers its result list. A message has one number on the page, the list's: each
``[n]`` of an answer is shown through :func:`citation_link` as the list's number of the message it
cites (``number_of``: the list's one mapping, ``ResultNumbers``), or, for a message the list does
not hold, as a link that names its author and room, never as a number that names another result::

    >>> cited = read_citations([{"n": 9, "msgId": "m21"}, {"n": 10, "msgId": "m99",
    ...     "u": {"username": "carol", "name": "Carol"}, "room": {"t": "c", "name": "ops"}}])
    >>> [citation_link(n, cited, {"m21": 21}.get).text for n in (9, 10)]
    ['[21]', '[Carol in #ops]']
"""

from ai_search import MAPPINGS, MICROPYTHON, FrozenRecord, Record, record

from .wording import room_label

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

__all__ = [
    "PENDING_CITATION",
    "UNSUPPORTED_LABEL",
    "CitationLink",
    "CitedMessage",
    "SentenceCheck",
    "Span",
    "Turn",
    "answer_segments",
    "citation_link",
    "cited_ids",
    "read_citations",
    "read_sentences",
    "sentence_runs",
    "unsupported_text",
]

# A span of a source's text (start, end: code points). At run time only a name for importers (answer.py
# builds its own aliases with it): MicroPython's tuple takes no parameters.
if TYPE_CHECKING:
    Span = tuple[int, int]
else:
    Span = tuple
# The flag's label on a sentence the citation check finds unsupported (its screen-reader text and
# tooltip).
UNSUPPORTED_LABEL = "Not supported by the messages it cites: check it against them."
# What a citation shows while the answer streams and the server has not yet said which message it
# names: no number, so it cannot name the wrong result.
PENDING_CITATION = "[…]"
# A citation in an answer's text: `[N]`, N of 1 to 3 decimal digits (what `\d` takes: any script's).
_CITATION_OPEN, _CITATION_CLOSE = "[", "]"
_MAX_CITATION_DIGITS = 3
# The zero of each run of ten decimal digits (Unicode category Nd, what `\d` and `str.isdecimal`
# take), for MicroPython, which knows ASCII digits only; tests/unit/test_glue_micropython.py checks
# it against CPython on every code point.
_DECIMAL_ZEROS = "30,660,6f0,7c0,966,9e6,a66,ae6,b66,be6,c66,ce6,d66,de6,e50,ed0,f20,1040,1090,17e0,1810,1946,19d0,1a80,1a90,1b50,1bb0,1c40,1c50,a620,a8d0,a900,a9d0,a9f0,aa50,abf0,ff10,104a0,10d30,11066,110f0,11136,111d0,112f0,11450,114d0,11650,116c0,11730,118e0,11950,11c50,11d50,11da0,16a60,16ac0,16b50,1d7ce,1d7d8,1d7e2,1d7ec,1d7f6,1e140,1e2f0,1e950,1fbf0"
_DIGITS_IN_A_RUN = 10
_decimal_zeros: "list[int]" = []


def _decimal_portable(char: str) -> int:
    """The value of `char` as a decimal digit (`int(char)` where `char.isdecimal()`), or -1."""
    if "0" <= char <= "9":
        return ord(char) - ord("0")
    if char < "\x80":
        return -1
    if not _decimal_zeros:
        _decimal_zeros.extend(int(zero, 16) for zero in _DECIMAL_ZEROS.split(","))
    code = ord(char)
    for zero in _decimal_zeros:
        if zero <= code < zero + _DIGITS_IN_A_RUN:
            return code - zero
    return -1


if not MICROPYTHON:

    def _decimal(char: str) -> int:
        return int(char) if char.isdecimal() else -1

else:
    _decimal = _decimal_portable


def _citations(text: str) -> "list[tuple[int, int, int]]":
    """Each `[N]` of `text`, left to right and not overlapping, as (start, end, N): what
    `re.finditer(r"\\[(\\d{1,3})\\]", text)` finds (MicroPython's `re` has no counted repeats)."""
    found = []
    start = text.find(_CITATION_OPEN)
    while start >= 0:
        index, number = start + 1, 0
        while index < len(text) and index - start <= _MAX_CITATION_DIGITS + 1:
            digit = _decimal(text[index])
            if digit < 0:
                break
            number = number * 10 + digit
            index += 1
        digits = index - start - 1
        if 1 <= digits <= _MAX_CITATION_DIGITS and text.startswith(_CITATION_CLOSE, index):
            found.append((start, index + 1, number))
            start = text.find(_CITATION_OPEN, index + 1)
        else:
            start = text.find(_CITATION_OPEN, start + 1)
    return found


@record
class SentenceCheck(FrozenRecord):
    """The citation check's verdict on one sentence of an answer."""

    __slots__ = _fields = ("text", "citations", "supported", "spans")
    text: str
    citations: "tuple[int, ...]"
    supported: "bool | None"
    spans: "Mapping[int, Span]"  # source number -> its supporting span

    def __init__(
        self,
        text: str,
        citations: "tuple[int, ...]" = (),
        supported: "bool | None" = None,
        spans: "Mapping[int, Span] | None" = None,
    ) -> None:
        self._set("text", text)
        self._set("citations", citations)
        self._set("supported", supported)
        self._set("spans", {} if spans is None else spans)

    @property
    def unsupported(self) -> bool:
        return self.supported is False


def _whole(value: "Any") -> "int | None":
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _spans(value: "Any") -> "dict[int, Span]":
    spans: dict[int, Span] = {}
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, MAPPINGS):
            continue
        n, start, end = _whole(item.get("n")), _whole(item.get("start")), _whole(item.get("end"))
        if n is not None and start is not None and end is not None and start < end:
            spans.setdefault(n, (start, end))
    return spans


def read_sentences(value: "Any") -> "list[SentenceCheck]":
    """The response's ``sentences``, read defensively: anything that is not a sentence is skipped."""
    checks = []
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, MAPPINGS) or not isinstance(item.get("text"), str) or not item["text"]:
            continue
        citations = item.get("citations")
        numbers = tuple(
            n for n in (citations if isinstance(citations, list) else []) if _whole(n) is not None
        )
        supported = item.get("supported")
        checks.append(
            SentenceCheck(
                item["text"],
                numbers,
                supported if isinstance(supported, bool) else None,
                _spans(item.get("spans")),
            )
        )
    return checks


def sentence_runs(answer: str, checks: "Sequence[SentenceCheck]") -> "list[tuple[str, SentenceCheck | None]]":
    """``answer`` cut into runs, each with the sentence check it is (None between sentences); the runs
    join to ``answer`` exactly. Sentences are looked for in order; one not found is skipped."""
    runs: list[tuple[str, SentenceCheck | None]] = []
    cursor = 0
    for check in checks:
        found = answer.find(check.text, cursor)
        if found < 0:
            continue
        if found > cursor:
            runs.append((answer[cursor:found], None))
        runs.append((check.text, check))
        cursor = found + len(check.text)
    if cursor < len(answer):
        runs.append((answer[cursor:], None))
    return runs


def answer_segments(text: str, valid: "Callable[[int], bool]") -> "list[str | int]":
    """``text`` split into plain runs (str) and citation numbers (int) that ``valid`` accepts;
    a ``[N]`` it refuses stays text."""
    segments: list[str | int] = []
    position = 0
    for start, end, number in _citations(text):
        if not valid(number):
            continue
        if start > position:
            segments.append(text[position:start])
        segments.append(number)
        position = end
    if position < len(text):
        segments.append(text[position:])
    return segments


def cited_ids(answer: str, citations: "Mapping[int, str]") -> "list[str]":
    """The message ids ``answer`` cites, in the order it first cites them (``citations``: number ->
    message id, the server's list); the ids a follow-up's turn carries."""
    ids: list[str] = []
    for segment in answer_segments(answer, lambda n: n in citations):
        if isinstance(segment, int) and citations[segment] not in ids:
            ids.append(citations[segment])
    return ids


@record
class CitedMessage(FrozenRecord):
    """What an answer's ``[n]`` cites: the message and its room (ids), and, in words, who wrote it
    (``author``: the name, else the username) and where (``room``: ``#ops``, ``Direct: a, b``)."""

    __slots__ = _fields = ("msg_id", "rid", "author", "room")
    msg_id: str
    rid: str
    author: str
    room: str

    def __init__(self, msg_id: str, rid: str = "", author: str = "", room: str = "") -> None:
        self._set("msg_id", msg_id)
        self._set("rid", rid)
        self._set("author", author)
        self._set("room", room)

    @property
    def name(self) -> str:
        """The message in words, for a page that does not list it: ``Carol in #ops``."""
        if self.author and self.room:
            return f"{self.author} in {self.room}"
        if self.author or self.room:
            return self.author or f"a message in {self.room}"
        return "a message"


@record
class CitationLink(FrozenRecord):
    """How one ``[n]`` of an answer is shown: the message it opens, the list's ``number`` of it (None:
    the list does not hold it), the link's ``text`` and its accessible name (``label``)."""

    __slots__ = _fields = ("msg_id", "rid", "number", "text", "label")
    msg_id: str
    rid: str
    number: "int | None"
    text: str
    label: str

    def __init__(self, msg_id: str, rid: str, number: "int | None", text: str, label: str) -> None:
        self._set("msg_id", msg_id)
        self._set("rid", rid)
        self._set("number", number)
        self._set("text", text)
        self._set("label", label)


def citation_link(
    n: int, citations: "Mapping[int, CitedMessage]", number_of: "Callable[[str], int | None]"
) -> "CitationLink | None":
    """The answer's ``[n]`` as the page shows it: the list's number of the message it cites
    (``number_of``), or its author and room when the list does not hold it; None when the server
    has not said which message ``n`` is (yet)."""
    cited = citations.get(n)
    if cited is None:
        return None
    number = number_of(cited.msg_id)
    if isinstance(number, int) and not isinstance(number, bool) and number > 0:
        return CitationLink(cited.msg_id, cited.rid, number, f"[{number}]", f"Result {number}")
    name = cited.name
    return CitationLink(
        cited.msg_id, cited.rid, None, f"[{name}]", f"{name}: a message not among the results"
    )


@record
class Turn(Record):
    """One question of the conversation and its answer, as the panel shows it (it fills in as the
    answer streams: its fields are assigned)."""

    __slots__ = _fields = (
        "question",
        "text",
        "citations",
        "checks",
        "answer_id",
        "truncated",
        "done",
        "note",
    )
    question: str
    text: str
    citations: "dict[int, CitedMessage]"  # the server's n -> the message it cites
    checks: "list[SentenceCheck]"
    answer_id: str
    truncated: bool
    done: bool
    note: str  # a shared answer's: some of its sources are hidden from this reader

    def __init__(
        self,
        question: str,
        text: str = "",
        citations: "dict[int, CitedMessage] | None" = None,
        checks: "list[SentenceCheck] | None" = None,
        answer_id: str = "",
        truncated: bool = False,
        done: bool = False,
        note: str = "",
    ) -> None:
        self.question = question
        self.text = text
        self.citations = {} if citations is None else citations
        self.checks = [] if checks is None else checks
        self.answer_id = answer_id
        self.truncated = truncated
        self.done = done
        self.note = note


def _text(value: "Any") -> str:
    return value if isinstance(value, str) else ""


def read_citations(value: "Any") -> "dict[int, CitedMessage]":
    """The response's ``citations`` (``{n, msgId, rid, u?, room?}``, also the stream's ``sources``)
    as number -> the message it cites; anything malformed is left out (the first item of a number
    counts)."""
    cited: dict[int, CitedMessage] = {}
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, MAPPINGS) or _whole(item.get("n")) is None or not _text(item.get("msgId")):
            continue
        user = item.get("u")
        user = user if isinstance(user, MAPPINGS) else {}
        author = _text(user.get("name")) or _text(user.get("username"))
        room = item.get("room")
        where = room_label(room) if isinstance(room, dict) else ""
        if item["n"] not in cited:
            cited[item["n"]] = CitedMessage(item["msgId"], _text(item.get("rid")), author, where)
    return cited


def unsupported_text(count: int) -> str:
    """What the panel says under an answer with ``count`` sentences the citation check flagged."""
    if count <= 0:
        return ""
    sentences = "1 sentence" if count == 1 else f"{count} sentences"
    verb = "is" if count == 1 else "are"
    return (
        f"{sentences} of this answer {verb} not supported by the messages cited (marked with !): "
        "check against the sources before relying on it."
    )
