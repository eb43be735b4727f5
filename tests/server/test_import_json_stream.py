"""``imports/json_stream.py``: a JSON list read an item at a time means what ``json.loads`` makes of it.

Property tests over generated documents, fed through a stream that hands out 1 to 100,000 bytes per
read (so every token is cut at every place), and a table of the faults an export can hold.
"""

from __future__ import annotations

import io
import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ai_search_server.imports.json_stream import JSONStreamError, json_items

_LEAVES = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)
_JSON = st.recursive(
    _LEAVES, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=20
)


class _Trickle(io.RawIOBase):
    """``data`` a few bytes at a time, the counts drawn from ``seed``."""

    def __init__(self, data: bytes, seed: int) -> None:
        self.data, self.at, self.sizes = data, 0, random.Random(seed)

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        count = self.sizes.choice((1, 2, 3, 7, 100, 100_000))
        chunk = self.data[self.at : self.at + min(count, size if size > 0 else count)]
        self.at += len(chunk)
        return chunk


def _read(text: str | bytes, seed: int = 0, **options: Any) -> tuple[list[Any], str | None]:
    data = text.encode() if isinstance(text, str) else text
    items: list[Any] = []
    try:
        for item in json_items(_Trickle(data, seed), **options):  # type: ignore[arg-type]
            items.append(item)
    except JSONStreamError as error:
        return items, error.reason
    return items, None


@settings(max_examples=150, deadline=None)
@given(st.lists(_JSON), st.sampled_from([None, 1]), st.booleans(), st.integers(0, 10_000))
def test_a_list_reads_as_json_loads_reads_it(
    items: list[Any], indent: int | None, ascii: bool, seed: int
) -> None:
    document = json.dumps(items, indent=indent, ensure_ascii=ascii)
    assert _read(document, seed) == (json.loads(document), None)
    keyed = json.dumps(
        {"zerver_usermessage": items, "zerver_message": items, "more": {"x": items}}, indent=indent
    )
    assert _read(keyed, seed, key="zerver_message") == (items, None)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=' [],{}:"0123456789.e-+tnulfrsa\\\n'), st.integers(0, 10_000))
def test_whatever_the_text_it_yields_what_json_loads_gives_or_says_why_not(text: str, seed: int) -> None:
    try:
        expected: Any = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        expected = None
    items, error = _read(text, seed)
    if error is None:
        assert items == expected
    else:
        assert not isinstance(expected, list) or expected[: len(items)] == items


@pytest.mark.parametrize(
    ("document", "items", "reason"),
    [
        pytest.param("\ufeff[1, 2]", [1, 2], None, id="bom"),
        pytest.param("[1, 2.5e3, -0, 1e400]", [1, 2500.0, 0, float("inf")], None, id="numbers-cut-anywhere"),
        pytest.param("[1,]", [1], "invalid JSON (Expecting value, line 1 column 4)", id="trailing-comma"),
        pytest.param(
            '[\n{"a": 1},\n{"b": tru}\n]',
            [{"a": 1}],
            "invalid JSON (Expecting value, line 3 column 7)",
            id="bad-literal",
        ),
        pytest.param(
            '[{"a": 1}] x', [{"a": 1}], "invalid JSON (Extra data, line 1 column 12)", id="extra-data"
        ),
        pytest.param(
            '[{"a": "cut',
            [],
            "invalid JSON (Unterminated string starting at, line 1 column 8)",
            id="cut-string",
        ),
        pytest.param(
            b'[1, "\xff"]', [], "not valid UTF-8", id="not-utf-8"
        ),  # the items of earlier reads only
        pytest.param("nope", [], "invalid JSON (Expecting value, line 1 column 1)", id="not-json"),
        pytest.param('{"a": 1}', [], "not the list asked for", id="an-object"),
        pytest.param(
            "[" + "[" * 100_000 + "]" * 100_000 + "]", [], "invalid JSON (nested too deeply)", id="deep"
        ),
    ],
)
def test_faults_are_told_after_the_items_before_them(
    document: str | bytes, items: list[Any], reason: str | None
) -> None:
    assert _read(document) == (items, reason)


def test_an_item_longer_than_the_cap_is_refused_without_holding_the_document() -> None:
    items, reason = _read('[1, "' + "a" * 5000 + '", 3]', max_item_chars=1000)
    assert (items, reason) == ([1], "an item longer than 1,000 characters")


def test_with_a_key_the_other_values_are_read_through_and_a_missing_key_is_a_shape_error() -> None:
    document = '{"zerver_usermessage": [[1, 2], [3]], "meta": {"a": [1]}, "zerver_message": [{"id": 1}]}'
    assert _read(document, key="zerver_message") == ([{"id": 1}], None)
    for other in ('{"zerver_message": {}}', '{"a": [1]}', "[1]"):
        assert _read(other, key="zerver_message")[1] in (
            "no list under 'zerver_message'",
            "not the list asked for",
        )
