"""Bytes to lines to server-sent-event ``data`` payloads, incrementally and without I/O.

Lines end at ``\\r\\n``, ``\\n`` or ``\\r`` (the SSE grammar), decoded as strict UTF-8: invalid bytes are
a protocol error, not replacement characters silently fed to a model's caller. Events follow the
WHATWG event-stream rules: ``data:`` lines of one event are joined with ``\\n``, a blank line dispatches
the event, ``:`` lines are comments, other fields (``event``, ``id``, ``retry``) are ignored, and an
event cut off by the end of the stream is dropped, so a truncated stream never looks complete.
"""

from __future__ import annotations

import codecs
import re

__all__ = ["LineDecoder", "SSEParser"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class LineDecoder:
    """Feed byte chunks, get complete lines (without their line break).

    Only the new text is scanned and a partial line is kept as pieces, so a long stream costs linear
    time. A ``\r`` ending a chunk ends the line at once; a ``\n`` opening the next chunk is then
    dropped, as ``\r\n`` is one break, not two.

    Raises (from ``feed``/``flush``):
        UnicodeDecodeError: the bytes are not valid UTF-8.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
        self._pieces: list[str] = []
        self._skip_lf = False

    def feed(self, chunk: bytes) -> list[str]:
        return self._split(self._decoder.decode(chunk), final=False)

    def flush(self) -> list[str]:
        """The lines left at end of stream, including a last line that has no line break."""
        return self._split(self._decoder.decode(b"", final=True), final=True)

    def _split(self, text: str, *, final: bool) -> list[str]:
        if self._skip_lf and text:
            self._skip_lf = False
            text = text.removeprefix("\n")
        lines: list[str] = []
        start = 0
        for found in _LINE_BREAK.finditer(text):
            self._pieces.append(text[start : found.start()])
            lines.append("".join(self._pieces))
            self._pieces = []
            start = found.end()
        if start < len(text):
            self._pieces.append(text[start:])
        if text.endswith("\r"):
            self._skip_lf = True
        if final and self._pieces:
            lines.append("".join(self._pieces))
            self._pieces = []
        return lines


class SSEParser:
    """Feed lines, get the ``data`` payload of each complete event."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self._first_line = True

    def feed_line(self, line: str) -> str | None:
        if self._first_line:
            self._first_line = False
            line = line.removeprefix("\ufeff")
        if line == "":
            if not self._data:
                return None
            payload = "\n".join(self._data)
            self._data = []
            return payload
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if name == "data":
            self._data.append(value.removeprefix(" ") if colon else "")
        return None
