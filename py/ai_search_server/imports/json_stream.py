"""The items of a JSON array read one at a time, so a large export member is never held whole.

    with bundle.open("general/2026-11-02.json") as stream:
        for message in json_items(stream):                      # [{...}, {...}, ...]
            ...
    for message in json_items(stream, key="zerver_message"):    # {"zerver_message": [...], ...}
        ...

The document is decoded as it is read (UTF-8, a leading BOM dropped); each item is handed to the
standard library's ``json`` decoder (``JSONDecoder.raw_decode``, its C scanner) once all of it has
been read, so an item means exactly what ``json.loads`` makes of it (floats, big integers, lone
surrogates, the same error messages) and only the item being decoded is held, at most
``max_item_chars`` characters of it. With ``key``, the document is an object, the array is the value
under that key, and the other values are read through without being kept (a Zulip messages file also
holds ``zerver_usermessage``, which can be larger than its messages).

Why not ijson (PyPI's streaming JSON parser): its fast backend is a C extension that the server's
environment would have to build or fetch, its pure-Python one is slower than this, and it yields
``Decimal`` for every number unless told otherwise; for arrays of small objects, which is all an
export streams, the standard library's scanner over one item at a time does the same work.

Errors are ``JSONStreamError``: ``reason`` is a sentence for people (``invalid JSON (Expecting ','
delimiter, line 40 column 3)``, as ``Bundle.read_json`` words it), and ``shape`` is true when the
document is JSON but not the array asked for. The items before an error have been yielded (before
bytes that are not UTF-8: those of the reads before, ``_READ_BYTES`` at a time).
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import IO, Any, NoReturn

__all__ = ["MAX_JSON_ITEM_CHARS", "JSONStreamError", "json_items"]

# Characters of one item (one Slack message, one user, one Zulip message): tens of kilobytes in real
# exports. A longer one is refused rather than held (a 256 MiB string in a bomb).
MAX_JSON_ITEM_CHARS = 16 * 1024 * 1024
# Bytes read from the stream at a time; more when an item is longer than what is buffered.
_READ_BYTES = 256 * 1024
# Characters before the end of the buffer within which a decoding error may only mean "read more"
# (a number, a literal or an escape cut by the buffer's end).
_CUT_TOKEN_CHARS = 16
_BLANKS = " \t\n\r"
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DELIMITER = re.compile(r"[ \t\n\r]*([,\]])")
_DECODER = json.JSONDecoder()


class JSONStreamError(ValueError):
    """The document cannot be read as the array asked for; ``reason`` says why, for people."""

    def __init__(self, reason: str, *, shape: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.shape = shape  # JSON, but not of the shape asked for


def json_items(
    stream: IO[bytes], *, key: str | None = None, max_item_chars: int = MAX_JSON_ITEM_CHARS
) -> Iterator[Any]:
    """Each item of the array that is the document, or that is under ``key`` of the object that is
    the document.

    Raises:
        JSONStreamError: not UTF-8, not JSON, an item longer than ``max_item_chars``, or not that shape.
    """
    reader = _Reader(stream, max_item_chars)
    if key is None:
        if reader.peek() != "[":
            reader.not_the_shape()
        yield from reader.array()
    else:
        yield from reader.keyed_array(key)
    reader.end()


class _Reader:
    """A window of decoded text over the stream: ``buf[pos:]`` is what is read and not yet used."""

    def __init__(self, stream: IO[bytes], max_item_chars: int) -> None:
        self.stream = stream
        self.max_item_chars = max_item_chars
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.lines_before = 0  # line breaks in the text dropped from the window
        self.column_before = 0  # characters of the current line dropped from the window

    # -- reading -------------------------------------------------------------------------------

    def fill(self, at_least: int = 0) -> bool:
        """Read more (at least ``at_least`` bytes); False at the end of the stream."""
        self._drop_used()
        while not self.eof:
            data = self.stream.read(max(_READ_BYTES, at_least))
            self.eof = not data
            try:
                text = self.decoder.decode(data, final=self.eof)
            except UnicodeDecodeError:
                raise JSONStreamError("not valid UTF-8") from None
            if text:
                self.buf += text
                return True
        return False

    def _drop_used(self) -> None:
        if not self.pos:
            return
        used = self.buf[: self.pos]
        breaks = used.count("\n")
        self.lines_before += breaks
        self.column_before = len(used) - used.rindex("\n") - 1 if breaks else self.column_before + len(used)
        self.buf, self.pos = self.buf[self.pos :], 0

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end), not consumed."""
        while True:
            self.pos = _WHITESPACE.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf) or not self.fill():
                return self.buf[self.pos : self.pos + 1]

    def take(self, expected: str, wanted: str) -> None:
        if self.peek() != expected:
            self.invalid(f"Expecting {wanted}", self.pos)
        self.pos += 1

    def value(self) -> Any:
        """The next JSON value, decoded once all of it is in the window."""
        if self.pos >= len(self.buf) or self.buf[self.pos] in _BLANKS:
            self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as error:
                cut = (
                    error.msg.startswith("Unterminated string")
                    or error.pos >= len(self.buf) - _CUT_TOKEN_CHARS
                )
                if not cut or self.eof:
                    self.invalid(error.msg, error.pos)
                self._read_more_of_an_item()
                continue
            except RecursionError:
                raise JSONStreamError("invalid JSON (nested too deeply)") from None
            if end > len(self.buf) - _CUT_TOKEN_CHARS and not self.eof:  # a number may go on (2.5|e3)
                self._read_more_of_an_item()
                continue
            if end - self.pos > self.max_item_chars:
                self._too_long()
            self.pos = end
            return value

    def _read_more_of_an_item(self) -> None:
        pending = len(self.buf) - self.pos
        if pending > self.max_item_chars:
            self._too_long()
        self.fill(at_least=pending)  # doubling: an item is decoded O(log n) times, not O(n)

    def _too_long(self) -> NoReturn:
        raise JSONStreamError(f"an item longer than {self.max_item_chars:,} characters")

    # -- shapes ----------------------------------------------------------------------------------

    def array(self) -> Iterator[Any]:
        self.take("[", "'['")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            yield self.value()
            delimiter = _DELIMITER.match(self.buf, self.pos)  # the usual case, within the window
            following = delimiter[1] if delimiter else self.peek()
            self.pos = delimiter.end() if delimiter else self.pos + 1
            if following == "]":
                return
            if following != ",":
                self.invalid("Expecting ',' delimiter", self.pos - 1)

    def keyed_array(self, key: str) -> Iterator[Any]:
        if self.peek() != "{":
            self.not_the_shape()
        self.pos += 1
        found = False
        if self.peek() == "}":
            self.pos += 1
        else:
            while True:
                if self.peek() != '"':
                    self.invalid("Expecting property name enclosed in double quotes", self.pos)
                name = self.value()
                self.take(":", "':' delimiter")
                if name == key and self.peek() == "[" and not found:
                    found = True
                    yield from self.array()
                elif self.peek() == "[":
                    for _skipped in self.array():  # read through, not kept
                        pass
                else:
                    self.value()
                following = self.peek()
                self.pos += 1
                if following == "}":
                    break
                if following != ",":
                    self.invalid("Expecting ',' delimiter", self.pos - 1)
        if not found:
            raise JSONStreamError(f"no list under {key!r}", shape=True)

    def not_the_shape(self) -> NoReturn:
        """The document does not start as asked: JSON of another shape, or no JSON at all."""
        self.value()  # raises for what is no JSON at all
        raise JSONStreamError("not the list asked for", shape=True)

    def end(self) -> None:
        if self.peek():
            self.invalid("Extra data", self.pos)

    def invalid(self, message: str, at: int) -> NoReturn:
        before = self.buf[:at]
        breaks = before.count("\n")
        line = self.lines_before + breaks + 1
        column = at - before.rindex("\n") if breaks else self.column_before + at + 1
        raise JSONStreamError(f"invalid JSON ({message}, line {line} column {column})")
