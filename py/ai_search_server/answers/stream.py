"""An answer's text as the client sees it, whole or streamed, and the server-sent events that carry it.

The model's raw text goes through three steps: citation groups ``【N†...】`` become ``[N]``
(``normalize_citations``), a ``[N]`` with no source behind it becomes ``[N?]``
(``mark_unknown_citations``), and the whole is trimmed. ``shape_answer_text`` does it at once;
``AnswerTextStream`` does it chunk by chunk, holding back only what a later chunk could still change
(an unfinished ``【...``, an unfinished ``[12``, trailing whitespace), so the streamed deltas joined
are exactly the final answer, however the provider split them:

    >>> s = AnswerTextStream(source_count=2)
    >>> [s.feed(" Rolled back【"), s.feed("1†L2】 ["), s.feed("9] "), s.flush()]
    ['Rolled back', ' [1]', ' [9?]', '']

Events (``text/event-stream``), one JSON object per ``data`` line; JSON escapes every line break, so
no answer text can end an event early or forge another one::

    event: delta     data: {"text": "..."}
    event: done      data: {"answer": "...", "citations": [...], "provider": {...}}
    event: error     data: {"errorType": "...", "error": "..."}
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from ai_search import (
    MAX_CITATION_NUMBER_DIGITS,
    CitationStreamNormalizer,
    mark_unknown_citations,
    normalize_citations,
)

from ..accept_header import accepts

__all__ = ["SSE_MEDIA_TYPE", "AnswerTextStream", "shape_answer_text", "sse_event", "wants_event_stream"]

SSE_MEDIA_TYPE = "text/event-stream"

# The end of a text that could still grow into a citation token `[N]`: `[` and up to the digits cap.
_UNFINISHED_CITATION: Final = re.compile(f"\\[[0-9]{{0,{MAX_CITATION_NUMBER_DIGITS}}}\\Z")


def shape_answer_text(raw: str, source_count: int) -> str:
    """The answer as shown: citations normalised, unknown ones marked ``[N?]``, trimmed."""
    return mark_unknown_citations(normalize_citations(raw), source_count).strip()


class _CitationMarker:
    """``mark_unknown_citations`` chunk by chunk: holds back a tail that may be an unfinished ``[N``.

    Tokens hold no ``[`` but their first character, so a cut at a ``[`` never splits one, and an
    unfinished token can only start at the last ``[``.
    """

    def __init__(self, source_count: int) -> None:
        self._source_count = source_count
        self._pending = ""

    def feed(self, chunk: str) -> str:
        text = self._pending + chunk
        cut = text.rfind("[")
        if cut == -1 or not _UNFINISHED_CITATION.match(text, cut):
            cut = len(text)
        ready, self._pending = text[:cut], text[cut:]
        return mark_unknown_citations(ready, self._source_count)

    def flush(self) -> str:
        text, self._pending = self._pending, ""
        return mark_unknown_citations(text, self._source_count)


class _Trimmer:
    """``str.strip`` chunk by chunk: drops leading whitespace, holds trailing whitespace until more text."""

    def __init__(self) -> None:
        self._started = False
        self._held = ""

    def feed(self, chunk: str) -> str:
        if not self._started:
            chunk = chunk.lstrip()
            self._started = bool(chunk)
        text = self._held + chunk
        body = text.rstrip()
        self._held = text[len(body) :]
        return body

    def flush(self) -> str:
        self._held = ""
        return ""


class AnswerTextStream:
    """``shape_answer_text`` for a streamed answer: ``"".join(feed(c) for c in chunks) + flush()``
    equals ``shape_answer_text("".join(chunks))``. One per answer."""

    def __init__(self, source_count: int) -> None:
        self._citations = CitationStreamNormalizer()
        self._marker = _CitationMarker(source_count)
        self._trimmer = _Trimmer()

    def feed(self, chunk: str) -> str:
        return self._trimmer.feed(self._marker.feed(self._citations.feed(chunk)))

    def flush(self) -> str:
        tail = self._trimmer.feed(self._marker.feed(self._citations.flush()))
        tail += self._trimmer.feed(self._marker.flush())
        return tail + self._trimmer.flush()


def sse_event(event: str, data: Any) -> bytes:
    """One server-sent event: its name and one line of JSON."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event}\ndata: {payload}\n\n".encode()


def wants_event_stream(accept: str | None) -> bool:
    """Whether an ``Accept`` header names ``text/event-stream`` (with a weight above 0).

    ``*/*`` does not count: a client gets the stream only when it asks for it by name, so plain
    JSON clients (curl, MCP tools, SDKs) keep the JSON shape.
    """
    return accepts(accept, SSE_MEDIA_TYPE, wildcards=False)
