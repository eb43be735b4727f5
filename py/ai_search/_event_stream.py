"""Server-sent events, parsed as the bytes arrive: an LLM provider's stream, the answer route's stream.

The WHATWG ``text/event-stream`` rules: lines end at ``\\r\\n``, ``\\n`` or ``\\r``; one byte order mark
at the start of the stream is dropped; ``data:`` lines of one event are joined with ``\\n``; a blank
line dispatches the event (one without any ``data`` line is not dispatched); ``:`` lines are
comments; ``id``, ``retry`` and unknown fields are ignored; one space after the colon is dropped; and
an event cut off by the end of the stream is dropped, so a truncated stream never looks complete. A
chunk may end anywhere, even inside a UTF-8 character or between the two bytes of ``\\r\\n``::

    >>> parser = EventStreamParser()
    >>> parser.feed(b'event: delta\\ndata: {"text": "Hel')
    []
    >>> parser.feed(b'lo"}\\n\\n')
    [ServerEvent(event='delta', data='{"text": "Hello"}')]

The server reads providers' streams strictly (``errors="strict"``: bytes that are not UTF-8 are a
broken stream, not replacement characters fed to the caller); the page reads the server's own
stream forgivingly (``errors="replace"``). Only the new text of each chunk is scanned, and a line
still arriving is kept as pieces, so a long stream costs linear time.

A page module (``ai_search.PAGE_MODULES``): the page reads the answer's stream on MicroPython too,
which has no ``codecs``. There :class:`Utf8Decoder` decodes: the incremental UTF-8 decoder of CPython,
written out (an undecoded tail of at most 3 bytes, invalid bytes replaced exactly as CPython replaces
them); CPython and Pyodide keep ``codecs``' own (tests/unit/test_event_stream.py checks that the two
agree on every chunking of hostile bytes).
"""

from ._portable import MICROPYTHON, FrozenRecord, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

if not MICROPYTHON:
    import codecs

__all__ = ["MAX_EVENT_CHARS", "EventStreamParser", "ServerEvent", "Utf8Decoder"]

# Characters one event (and the line still arriving) may hold before the stream counts as broken:
# far above any answer (the server caps a provider's body at 5 MiB), it bounds memory if a stream
# never ends an event.
MAX_EVENT_CHARS = 8 * 1024 * 1024

_BYTE_ORDER_MARK = "\ufeff"
_REPLACEMENT = "\ufffd"

# The UTF-8 sequences (RFC 3629), by lead byte: (lead bytes, first, last) -> how many continuation
# bytes follow, and the range the first of them must be in (the others: 0x80..0xBF). The narrow
# ranges refuse overlong forms (E0, F0), surrogates (ED) and code points past U+10FFFF (F4).
_SEQUENCES = (
    (0xC2, 0xDF, 1, 0x80, 0xBF),
    (0xE0, 0xE0, 2, 0xA0, 0xBF),
    (0xE1, 0xEC, 2, 0x80, 0xBF),
    (0xED, 0xED, 2, 0x80, 0x9F),
    (0xEE, 0xEF, 2, 0x80, 0xBF),
    (0xF0, 0xF0, 3, 0x90, 0xBF),
    (0xF1, 0xF3, 3, 0x80, 0xBF),
    (0xF4, 0xF4, 3, 0x80, 0x8F),
)
_CONTINUATION_FIRST, _CONTINUATION_LAST = 0x80, 0xBF
_SURROGATE_LEAD = 0xED
# What a decoder that checks only the structure takes and CPython's refuses: the lead bytes of
# overlong two-byte forms, and (lead, second byte's range) of overlong three- and four-byte forms,
# surrogates and code points past U+10FFFF; and any lead byte past F4.
_OVERLONG_2_BYTES = (b"\xc0", b"\xc1")
_LAX_SECOND_BYTES = ((0xE0, 0x80, 0x9F), (0xF0, 0x80, 0x8F), (0xED, 0xA0, 0xBF), (0xF4, 0x90, 0xBF))
_LAST_LEAD = 0xF4
# The longest sequence's bytes after its lead: the most an incomplete character keeps undecoded.
_MAX_TAIL_BYTES = 3


def _sequence(lead: int) -> "tuple[int, int, int] | None":
    """(continuation bytes, first byte's low, high) for a lead byte, or None: not a lead byte."""
    for first, last, length, low, high in _SEQUENCES:
        if first <= lead <= last:
            return length, low, high
    return None


def _valid_prefix(data: "bytes", start: int, end: int, waiting: bool = False) -> int:
    """How many bytes from `start` (a lead byte), at most to `end`, belong to its sequence: all of it
    when it is complete, fewer when the bytes stop or one does not continue it (0: not a lead byte).
    `waiting`: as CPython judges a sequence the chunk ends inside, which lets ED take any continuation
    byte (the surrogates' ED A0..BF wait for their third byte too, and are replaced once it comes)."""
    sequence = _sequence(data[start])
    if sequence is None:
        return 0
    length, low, high = sequence
    if waiting and data[start] == _SURROGATE_LEAD:
        high = _CONTINUATION_LAST
    index = start + 1
    while index < end and index <= start + length:
        byte = data[index]
        if index == start + 1:
            if not low <= byte <= high:
                break
        elif not _CONTINUATION_FIRST <= byte <= _CONTINUATION_LAST:
            break
        index += 1
    return index - start


def _incomplete_tail(data: "bytes") -> int:
    """Where the character that `data` ends in the middle of starts (len(data) when it ends none):
    a lead byte in the last 3 whose sequence is valid so far and not complete."""
    end = len(data)
    for start in range(end - 1, max(end - 1 - _MAX_TAIL_BYTES, -1), -1):
        byte = data[start]
        if _CONTINUATION_FIRST <= byte <= _CONTINUATION_LAST:
            continue  # a continuation byte: its lead is further back
        sequence = _sequence(byte)
        if sequence is not None and _valid_prefix(data, start, end, True) == end - start <= sequence[0]:
            return start
        return end
    return end


def _shortest_forms_only(data: "bytes") -> bool:
    """Whether `data`, well formed but for what a lax decoder takes, holds no overlong form (C0, C1;
    E0 80..9F; F0 80..8F), no surrogate (ED A0..BF) and no code point past U+10FFFF (F4 90..BF, a
    lead byte past F4). Found by `find`: fast on text, Korean (ED 80..9F) included."""
    if max(data) > _LAST_LEAD or _OVERLONG_2_BYTES[0] in data or _OVERLONG_2_BYTES[1] in data:
        return False
    for lead, low, high in _LAX_SECOND_BYTES:
        marker = bytes((lead,))
        at = data.find(marker)
        while at >= 0:
            if at + 1 < len(data) and low <= data[at + 1] <= high:
                return False
            at = data.find(marker, at + 1)
    return True


def _refuse(data: "bytes", start: int, end: int, reason: str) -> None:
    if MICROPYTHON:
        raise UnicodeError(f"'utf-8' codec can't decode bytes in position {start}-{end - 1}: {reason}")
    raise UnicodeDecodeError("utf-8", bytes(data), start, end, reason)


def _decode(data: "bytes", end: int, errors: str) -> str:
    """`data[:end]` as text, each maximal invalid part replaced by U+FFFD as CPython's decoder does
    (the Unicode standard's "maximal subpart" practice), or refused (`errors="strict"`). The bytes
    past `end` (a character still arriving) only say whether a sequence before them stopped early."""
    head = data[:end]
    try:
        text = head.decode("utf-8")
    except UnicodeError:
        text = None  # not UTF-8: read sequence by sequence
    # CPython's decoder is strict. MicroPython's checks only the structure (lead bytes, how many
    # continuation bytes) and keeps the bytes as they are: its text is taken when it is ASCII, or the
    # bytes hold no overlong form, surrogate or code point past U+10FFFF.
    if text is not None and (not MICROPYTHON or len(text) == end or _shortest_forms_only(head)):
        return text
    out = []
    index, plain = 0, 0
    while index < end:
        if data[index] < _CONTINUATION_FIRST:
            index += 1
            continue
        taken = _valid_prefix(data, index, len(data))
        sequence = _sequence(data[index])
        if sequence is not None and taken == sequence[0] + 1:
            index += taken  # a whole character: decoded with its run below
            continue
        if errors == "strict":
            reason = (
                "invalid start byte"
                if taken == 0
                else ("unexpected end of data" if index + taken == len(data) else "invalid continuation byte")
            )
            _refuse(data, index, index + max(taken, 1), reason)
        out.append(data[plain:index].decode("utf-8"))
        out.append(_REPLACEMENT)
        index += max(taken, 1)
        plain = index
    out.append(data[plain:end].decode("utf-8"))
    return "".join(out)


class Utf8Decoder:
    """An incremental UTF-8 decoder: what `codecs.getincrementaldecoder("utf-8")(errors)` gives
    (`errors` "strict" or "replace"), the same text for the same bytes however they are cut."""

    __slots__ = ("_errors", "_tail")

    def __init__(self, errors: str = "strict") -> None:
        if errors not in ("strict", "replace"):
            raise ValueError(f"errors must be 'strict' or 'replace', not {errors!r}")
        self._errors = errors
        self._tail = b""

    def decode(self, chunk: "bytes", final: bool = False) -> str:
        """The text `chunk` completes; a character it ends inside waits for the next chunk (or, with
        `final`, is replaced or refused).

        Raises:
            UnicodeError: with errors="strict", bytes that are not UTF-8 (UnicodeDecodeError on CPython).
        """
        data = self._tail + bytes(chunk) if self._tail else bytes(chunk)
        cut = len(data) if final else _incomplete_tail(data)
        self._tail = data[cut:]
        return _decode(data, cut, self._errors) if cut else ""


@record
class ServerEvent(FrozenRecord):
    """One dispatched event: its type (``message`` when the stream names none) and its data."""

    __slots__ = _fields = ("event", "data")
    event: str
    data: str

    def __init__(self, event: str, data: str) -> None:
        self._set("event", event)
        self._set("data", data)


class EventStreamParser:
    """Incremental parser: :meth:`feed` returns the events a chunk completes, :meth:`close` ends it.

    Raises (from ``feed`` and ``close``):
        UnicodeDecodeError: with ``errors="strict"``, bytes that are not UTF-8.
        ValueError: one event grew past ``MAX_EVENT_CHARS``.
    """

    def __init__(self, *, errors: "Literal['strict', 'replace']" = "replace") -> None:
        # CPython's own decoder where there is one; the same one written out on MicroPython.
        self._decoder = (
            Utf8Decoder(errors) if MICROPYTHON else codecs.getincrementaldecoder("utf-8")(errors=errors)
        )
        self._pieces: list[str] = []  # the line still arriving
        self._pending_chars = 0
        self._skip_lf = False  # a chunk ended with \r: a \n opening the next one is the same break
        self._at_start = True
        self._event = ""
        self._data: list[str] = []
        self._data_chars = 0

    def feed(self, chunk: bytes) -> "list[ServerEvent]":
        return self._text(self._decoder.decode(chunk), final=False)

    def close(self) -> "list[ServerEvent]":
        """The stream ended. An event that no blank line ended is dropped, as the standard says."""
        return self._text(self._decoder.decode(b"", final=True), final=True)

    def _text(self, text: str, *, final: bool) -> "list[ServerEvent]":
        if self._at_start and text:
            self._at_start = False
            if text.startswith(_BYTE_ORDER_MARK):
                text = text[1:]
        if self._skip_lf and text:
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        events: list[ServerEvent] = []
        start = 0
        # Line breaks \r\n, \r or \n, found by `find` (MicroPython's `re` has no `finditer`): the
        # next of each kind is looked for again only once passed, so the scan stays linear.
        next_cr, next_lf = text.find("\r"), text.find("\n")
        while next_cr >= 0 or next_lf >= 0:
            if next_lf < 0 or 0 <= next_cr < next_lf:
                found, after = next_cr, next_cr + (2 if text.startswith("\n", next_cr + 1) else 1)
            else:
                found, after = next_lf, next_lf + 1
            self._pieces.append(text[start:found])
            line = "".join(self._pieces)
            self._pieces, self._pending_chars = [], 0
            start = after
            event = self._line(line)
            if event is not None:
                events.append(event)
            if next_cr < start and next_cr >= 0:
                next_cr = text.find("\r", start)
            if next_lf < start and next_lf >= 0:
                next_lf = text.find("\n", start)
        if start < len(text):
            self._pieces.append(text[start:])
            self._pending_chars += len(text) - start
        if text:
            self._skip_lf = text.endswith("\r")
        if self._data_chars + self._pending_chars > MAX_EVENT_CHARS:
            raise ValueError(f"an event of the stream is over {MAX_EVENT_CHARS} characters")
        if final:
            # A last line without a line break can only add to an event that never ends: dropped.
            self._pieces, self._pending_chars = [], 0
            self._event, self._data, self._data_chars = "", [], 0
        return events

    def _line(self, line: str) -> "ServerEvent | None":
        if not line:
            if not self._data:
                self._event = ""
                return None
            event = ServerEvent(self._event or "message", "\n".join(self._data))
            self._event, self._data, self._data_chars = "", [], 0
            return event
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        value = (value[1:] if value.startswith(" ") else value) if colon else ""
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
            self._data_chars += len(value)
        return None
