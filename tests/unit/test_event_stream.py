"""The one server-sent-event parser (ai_search/_event_stream.py): the server reads providers' streams
with it, and the page the answer route's; the WHATWG rules, whatever the chunks."""

from __future__ import annotations

import codecs
import itertools
from collections.abc import Sequence
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ai_search import MAX_EVENT_CHARS, EventStreamParser, ServerEvent, Utf8Decoder, _event_stream

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


# -- the portable decoder (MicroPython's, which has no codecs) against CPython's own ----------------

# Bytes where UTF-8 has its edges: ASCII, line breaks, continuation bytes, every kind of lead byte
# (overlong C0/C1 and E0 80, surrogates ED A0, past U+10FFFF F4 90, never-valid F5..FF).
_EDGE_BYTES = st.sampled_from(
    [0x00, 0x0A, 0x0D, 0x20, 0x3A, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xC3,
     0xDF, 0xE0, 0xE1, 0xE2, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFE, 0xFF]
)  # fmt: skip
_HOSTILE_BYTES = st.one_of(
    st.lists(_EDGE_BYTES, max_size=24).map(bytes),
    st.text(max_size=12).map(lambda text: text.encode("utf-8", "surrogatepass")),
    st.binary(max_size=24),
)


def _decoded(decoder: object, data: bytes, cuts: Sequence[int]) -> list[str]:
    """What each chunk gives, then the end; or the error's class where the decoder refuses."""
    edges = [0, *sorted(c for c in cuts if c < len(data)), len(data)]
    out: list[str] = []
    try:
        for a, b in itertools.pairwise(edges):
            out.append(decoder.decode(data[a:b]))  # type: ignore[attr-defined]
        out.append(decoder.decode(b"", final=True))  # type: ignore[attr-defined]
    except UnicodeDecodeError as error:
        out.append(f"UnicodeDecodeError at chunk {len(out)}: {error.reason}")
    return out


@settings(max_examples=400)
@given(_HOSTILE_BYTES, st.lists(st.integers(0, 24), max_size=6), st.sampled_from(["strict", "replace"]))
def test_the_portable_decoder_gives_what_codecs_gives_chunk_by_chunk(data: bytes, cuts: list[int], errors: str) -> None:
    expected = _decoded(codecs.getincrementaldecoder("utf-8")(errors=errors), data, cuts)
    assert _decoded(Utf8Decoder(errors), data, cuts) == expected


def test_the_portable_decoder_keeps_at_most_three_bytes_and_every_tail_as_codecs_does() -> None:
    # Every tail of up to 4 edge bytes after an ASCII letter: the same text now, the same bytes kept.
    # One byte of each class UTF-8 tells apart (a lead's, the first continuation's range), 4 at most.
    edges = [0x41, 0x80, 0x90, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xE1, 0xED, 0xF0, 0xF1, 0xF4, 0xF5]
    for size in range(1, 5):
        for tail in itertools.product(edges, repeat=size):
            data = b"a" + bytes(tail)
            ours, theirs = Utf8Decoder("replace"), codecs.getincrementaldecoder("utf-8")(errors="replace")
            assert (ours.decode(data), ours._tail) == (theirs.decode(data), theirs.getstate()[0]), data
            assert len(ours._tail) <= 3
            assert ours.decode(b"", final=True) == theirs.decode(b"", final=True), data


def test_the_portable_decoder_takes_only_the_two_errors_modes() -> None:
    with pytest.raises(ValueError, match="errors"):
        Utf8Decoder("ignore")


@settings(max_examples=300)
@given(
    st.lists(st.sampled_from([b"data: ", b"event: x", b":c", b"\r", b"\n", b"\r\n", b"id: 1", b"retry: 5"]) | _HOSTILE_BYTES, max_size=10).map(b"".join),
    st.lists(st.integers(0, 80), max_size=8),
)
def test_the_parser_reads_the_same_events_with_the_portable_decoder(data: bytes, cuts: list[int]) -> None:
    # What the page's parser gives on MicroPython, where Utf8Decoder stands in for codecs'.
    def events(portable: bool) -> list[ServerEvent]:
        parser = EventStreamParser()
        if portable:
            parser._decoder = Utf8Decoder("replace")  # type: ignore[assignment]
        edges = [0, *sorted(c for c in cuts if c < len(data)), len(data)]
        got = [event for a, b in itertools.pairwise(edges) for event in parser.feed(data[a:b])]
        return got + parser.close()

    assert events(portable=True) == events(portable=False)


@given(_HOSTILE_BYTES)
def test_what_a_lax_decoder_takes_is_refused_where_cpython_refuses_it(data: bytes) -> None:
    # MicroPython's decoder checks only the structure; for bytes that decode with surrogates (CPython's
    # surrogatepass), the check says what CPython's strict decoder says (overlong forms and code points
    # past U+10FFFF: the table below and the MicroPython comparison, tests/unit/test_core_micropython.py).
    try:
        data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return
    try:
        data.decode("utf-8")
        strict = True
    except UnicodeDecodeError:
        strict = False
    assert _event_stream._shortest_forms_only(data) is strict if data else True


@pytest.mark.parametrize(
    ("data", "ok"),
    [(b"\xed\x9f\xbf", True), (b"\xed\xa0\x80", False), (b"\xf4\x8f\xbf\xbf", True), (b"\xf4\x90\x80\x80", False),
     (b"\xf5\x80\x80\x80", False), ("한국어 €".encode(), True), (b"\xc0\xaf", False), (b"\xc1\xbf", False),
     (b"\xe0\x9f\xbf", False), (b"\xe0\xa0\x80", True), (b"\xf0\x8f\xbf\xbf", False), (b"\xf0\x90\x80\x80", True)],
)  # fmt: skip
def test_overlong_forms_surrogates_and_code_points_past_unicode_are_found(data: bytes, ok: bool) -> None:
    assert _event_stream._shortest_forms_only(data) is ok
