"""An answer's text as the panel draws it: sentences as the citation check judged them, and citations.

Pure (no ``js``), so it is tested on CPython (tests/browser/test_web_answer_text.py). The server checks
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
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "UNSUPPORTED_LABEL",
    "SentenceCheck",
    "Span",
    "Turn",
    "answer_segments",
    "cited_ids",
    "read_citations",
    "read_sentences",
    "sentence_runs",
    "unsupported_text",
]

Span = tuple[int, int]
# The flag's label on a sentence the citation check finds unsupported (its screen-reader text and
# tooltip).
UNSUPPORTED_LABEL = "Not supported by the messages it cites: check it against them."
_CITATION = re.compile(r"\[(\d{1,3})\]")


@dataclass(frozen=True, slots=True)
class SentenceCheck:
    """The citation check's verdict on one sentence of an answer."""

    text: str
    citations: tuple[int, ...] = ()
    supported: bool | None = None
    spans: Mapping[int, Span] = field(default_factory=dict)  # source number -> its supporting span

    @property
    def unsupported(self) -> bool:
        return self.supported is False


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _spans(value: Any) -> dict[int, Span]:
    spans: dict[int, Span] = {}
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, Mapping):
            continue
        n, start, end = _whole(item.get("n")), _whole(item.get("start")), _whole(item.get("end"))
        if n is not None and start is not None and end is not None and start < end:
            spans.setdefault(n, (start, end))
    return spans


def read_sentences(value: Any) -> list[SentenceCheck]:
    """The response's ``sentences``, read defensively: anything that is not a sentence is skipped."""
    checks = []
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, Mapping) or not isinstance(item.get("text"), str) or not item["text"]:
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


def sentence_runs(answer: str, checks: Sequence[SentenceCheck]) -> list[tuple[str, SentenceCheck | None]]:
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


def answer_segments(text: str, valid: Callable[[int], bool]) -> list[str | int]:
    """``text`` split into plain runs (str) and citation numbers (int) that ``valid`` accepts;
    a ``[N]`` it refuses stays text."""
    segments: list[str | int] = []
    position = 0
    for match in _CITATION.finditer(text):
        number = int(match[1])
        if not valid(number):
            continue
        if match.start() > position:
            segments.append(text[position : match.start()])
        segments.append(number)
        position = match.end()
    if position < len(text):
        segments.append(text[position:])
    return segments


def cited_ids(answer: str, citations: Mapping[int, str]) -> list[str]:
    """The message ids ``answer`` cites, in the order it first cites them (``citations``: number ->
    message id, the server's list); the ids a follow-up's turn carries."""
    ids: list[str] = []
    for segment in answer_segments(answer, lambda n: n in citations):
        if isinstance(segment, int) and citations[segment] not in ids:
            ids.append(citations[segment])
    return ids


@dataclass
class Turn:
    """One question of the conversation and its answer, as the panel shows it."""

    question: str
    text: str = ""
    citations: dict[int, tuple[str, str]] = field(default_factory=dict)  # n -> (msgId, rid)
    checks: list[SentenceCheck] = field(default_factory=list)
    answer_id: str = ""
    truncated: bool = False
    done: bool = False
    note: str = ""  # a shared answer's: some of its sources are hidden from this reader


def read_citations(value: Any) -> dict[int, tuple[str, str]]:
    """The response's ``citations`` (``{n, msgId, rid}``) as number -> (message id, room id)."""
    cited: dict[int, tuple[str, str]] = {}
    for item in value if isinstance(value, list) else []:
        if (
            isinstance(item, Mapping)
            and isinstance(item.get("n"), int)
            and isinstance(item.get("msgId"), str)
        ):
            rid = item.get("rid")
            cited.setdefault(item["n"], (item["msgId"], rid if isinstance(rid, str) else ""))
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
