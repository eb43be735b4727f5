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
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["MAX_EVENT_CHARS", "EventStreamParser", "ServerEvent"]

# Characters one event (and the line still arriving) may hold before the stream counts as broken:
# far above any answer (the server caps a provider's body at 5 MiB), it bounds memory if a stream
# never ends an event.
MAX_EVENT_CHARS = 8 * 1024 * 1024

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BYTE_ORDER_MARK = "\ufeff"


@dataclass(frozen=True, slots=True)
class ServerEvent:
    """One dispatched event: its type (``message`` when the stream names none) and its data."""

    event: str
    data: str


class EventStreamParser:
    """Incremental parser: :meth:`feed` returns the events a chunk completes, :meth:`close` ends it.

    Raises (from ``feed`` and ``close``):
        UnicodeDecodeError: with ``errors="strict"``, bytes that are not UTF-8.
        ValueError: one event grew past ``MAX_EVENT_CHARS``.
    """

    def __init__(self, *, errors: Literal["strict", "replace"] = "replace") -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors=errors)
        self._pieces: list[str] = []  # the line still arriving
        self._pending_chars = 0
        self._skip_lf = False  # a chunk ended with \r: a \n opening the next one is the same break
        self._at_start = True
        self._event = ""
        self._data: list[str] = []
        self._data_chars = 0

    def feed(self, chunk: bytes) -> list[ServerEvent]:
        return self._text(self._decoder.decode(chunk), final=False)

    def close(self) -> list[ServerEvent]:
        """The stream ended. An event that no blank line ended is dropped, as the standard says."""
        return self._text(self._decoder.decode(b"", final=True), final=True)

    def _text(self, text: str, *, final: bool) -> list[ServerEvent]:
        if self._at_start and text:
            self._at_start = False
            text = text.removeprefix(_BYTE_ORDER_MARK)
        if self._skip_lf and text:
            self._skip_lf = False
            text = text.removeprefix("\n")
        events: list[ServerEvent] = []
        start = 0
        for found in _LINE_BREAK.finditer(text):
            self._pieces.append(text[start : found.start()])
            line = "".join(self._pieces)
            self._pieces, self._pending_chars = [], 0
            start = found.end()
            event = self._line(line)
            if event is not None:
                events.append(event)
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

    def _line(self, line: str) -> ServerEvent | None:
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
        value = value.removeprefix(" ") if colon else ""
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
            self._data_chars += len(value)
        return None
