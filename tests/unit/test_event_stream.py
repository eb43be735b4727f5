"""The one server-sent-event parser (ai_search/_event_stream.py): the server reads providers' streams
with it, and the page the answer route's; the WHATWG rules, whatever the chunks."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ai_search import MAX_EVENT_CHARS, EventStreamParser, ServerEvent

STREAM = (
    b'event: delta\ndata: {"text": "caf\xc3\xa9 "}\n\n'
    b": a comment\r\n"
    b'event: delta\r\ndata: {"text": "[1]"}\r\n\r\n'
    b"data: line one\ndata: line two\nid: 7\n\n"
    b'event: done\rdata: {"answer": "caf\xc3\xa9 [1]"}\r\r'
)
EVENTS = [
    ServerEvent("delta", '{"text": "café "}'),
    ServerEvent("delta", '{"text": "[1]"}'),
    ServerEvent("message", "line one\nline two"),
    ServerEvent("done", '{"answer": "café [1]"}'),
]


def parse(
    data: bytes, cuts: Sequence[int] = (), errors: Literal["strict", "replace"] = "replace"
) -> list[ServerEvent]:
    parser = EventStreamParser(errors=errors)
    edges = [0, *sorted(c for c in cuts if c < len(data)), len(data)]
    events = [event for a, b in itertools.pairwise(edges) for event in parser.feed(data[a:b])]
    return events + parser.close()


def test_every_line_ending_and_field_is_read() -> None:
    assert parse(STREAM) == EVENTS


@given(st.lists(st.integers(0, len(STREAM)), max_size=12))
def test_chunks_may_end_anywhere(cuts: list[int]) -> None:
    """Inside a UTF-8 character or between CR and LF, the events are the same."""
    assert parse(STREAM, cuts) == EVENTS


_DATA = st.text(st.characters(exclude_characters="\r\n", exclude_categories=["Cs"]), max_size=8)


@given(
    events=st.lists(st.lists(_DATA, min_size=1, max_size=3), max_size=6),
    end=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(0, 400), max_size=10),
)
@settings(max_examples=300, deadline=None)
def test_data_lines_join_whatever_the_line_breaks_and_chunks(
    events: list[list[str]], end: str, cuts: list[int]
) -> None:
    """One kind of line break per stream: a CR then an LF would be one CRLF, not two breaks."""
    text = "".join("".join(f"data: {line}{end}" for line in lines) + end for lines in events)
    got = parse(text.encode(), cuts, errors="strict")
    assert got == [ServerEvent("message", "\n".join(lines)) for lines in events]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"data: cut off", [], id="an-unended-event-is-dropped"),
        pytest.param(b"data: one\n\ndata: two\n", [ServerEvent("message", "one")], id="only-ended-events"),
        pytest.param(b"event: ping\n\n", [], id="no-data-no-event"),
        pytest.param(b"\xef\xbb\xbfdata: x\n\n", [ServerEvent("message", "x")], id="byte-order-mark-dropped"),
        pytest.param(b"data\n\n", [ServerEvent("message", "")], id="a-field-without-colon"),
        pytest.param(
            b"data:  two spaces\n\n", [ServerEvent("message", " two spaces")], id="one-space-dropped"
        ),
        pytest.param(b"data: [DONE]\r\n\r\n", [ServerEvent("message", "[DONE]")], id="openai-end-marker"),
    ],
)
def test_the_standard_rules(data: bytes, expected: list[ServerEvent]) -> None:
    assert parse(data) == expected


def test_strict_decoding_refuses_bytes_that_are_not_utf8() -> None:
    with pytest.raises(UnicodeDecodeError):
        parse(b"data: \xff\xfe\n\n", errors="strict")
    assert parse(b"data: \xff\n\n") == [ServerEvent("message", "\ufffd")]


def test_strict_decoding_refuses_a_character_cut_by_the_end_of_the_stream() -> None:
    with pytest.raises(UnicodeDecodeError):
        parse(b"data: caf\xc3", errors="strict")


def test_an_endless_event_is_refused() -> None:
    parser = EventStreamParser()
    with pytest.raises(ValueError, match="over"):
        parser.feed(b"data: " + b"x" * (MAX_EVENT_CHARS + 1))
