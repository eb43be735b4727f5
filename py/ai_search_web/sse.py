"""Server-sent events, parsed as they arrive: what the streamed answer route sends.

Feed raw bytes as they come; whole events come out (the WHATWG ``text/event-stream`` rules that the
answer route uses: ``event:`` and ``data:`` fields, lines joined by ``\\n``, a blank line ends an
event; comments and unknown fields ignored; a chunk may end anywhere, even inside a UTF-8 character)::

    >>> parser = EventStreamParser()
    >>> parser.feed(b'event: delta\\ndata: {"text": "Hel')
    []
    >>> parser.feed(b'lo"}\\n\\n')
    [ServerEvent(event='delta', data='{"text": "Hello"}')]

Pure: no ``js`` import, so CPython tests cover it.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

__all__ = ["MAX_EVENT_CHARS", "EventStreamParser", "ServerEvent"]

# Characters one event may hold before the stream counts as broken. The answer route caps an answer
# far below this (the provider body cap is 5 MiB); it bounds memory if a stream never ends an event.
MAX_EVENT_CHARS = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ServerEvent:
    event: str
    data: str


class EventStreamParser:
    """Incremental parser; :meth:`feed` returns the events completed by a chunk.

    Raises:
        ValueError: (from :meth:`feed`) one event grew past ``MAX_EVENT_CHARS``.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._event = ""
        self._data: list[str] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[ServerEvent]:
        self._buffer += self._decoder.decode(chunk)
        events: list[ServerEvent] = []
        while True:
            cut = _line_end(self._buffer)
            if cut is None:
                break
            end, after = cut
            line, self._buffer = self._buffer[:end], self._buffer[after:]
            event = self._line(line)
            if event is not None:
                events.append(event)
        if self._size + len(self._buffer) > MAX_EVENT_CHARS:
            raise ValueError(f"an event of the stream is over {MAX_EVENT_CHARS} characters")
        return events

    def close(self) -> list[ServerEvent]:
        """The stream ended: a CR left at the very end ends its line after all. An event that no
        blank line ended is dropped, as the standard says."""
        events: list[ServerEvent] = []
        if self._buffer.endswith("\r"):
            events += self.feed(b"\n")
        return events

    def _line(self, line: str) -> ServerEvent | None:
        if not line:
            if not self._data and not self._event:
                return None
            event = ServerEvent(self._event or "message", "\n".join(self._data))
            self._event, self._data, self._size = "", [], 0
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
            self._size += len(value)
        return None


def _line_end(buffer: str) -> tuple[int, int] | None:
    """Where the first line of ``buffer`` ends and the next starts (CRLF, LF or CR), or None.

    A CR at the very end may be the first half of a CRLF still in flight, so it waits for more.
    """
    lf, cr = buffer.find("\n"), buffer.find("\r")
    if cr == -1 or (lf != -1 and lf < cr):
        return None if lf == -1 else (lf, lf + 1)
    if cr + 1 == len(buffer):
        return None
    return cr, cr + (2 if buffer[cr + 1] == "\n" else 1)
