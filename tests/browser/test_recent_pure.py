"""Recent searches (``ai_search_web.recent``) on CPython: what storage holds is untrusted, the newest
comes first, at most ten are kept, and the options end with one to clear them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search_web.recent import (
    CLEAR_RECENT_GROUP,
    MAX_RECENT_SEARCH_CHARS,
    RECENT_GROUP,
    RECENT_SEARCHES_KEPT,
    encode_recent_searches,
    recent_search_suggestions,
    recent_searches,
    with_recent_search,
)

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(
    ("stored", "kept"),
    [
        pytest.param(None, (), id="nothing-stored"),
        pytest.param("not json", (), id="not-json"),
        pytest.param('{"a": 1}', (), id="not-a-list"),
        pytest.param('["a", 1, null, " b ", "", "a"]', ("a", "b"), id="only-non-empty-strings-once"),
        pytest.param(json.dumps(["x" * (MAX_RECENT_SEARCH_CHARS + 1), "ok"]), ("ok",), id="too-long-dropped"),
        pytest.param(json.dumps([f"q{i}" for i in range(30)]), tuple(f"q{i}" for i in range(10)), id="ten-kept"),
    ],
)
def test_recent_searches_read_only_what_is_valid(stored: object, kept: tuple[str, ...]) -> None:
    assert recent_searches(stored) == kept


def test_the_newest_comes_first_once() -> None:
    kept = with_recent_search(("a", "b", "c"), " b ")
    assert kept == ("b", "a", "c")
    assert with_recent_search(kept, "") == kept


@given(st.lists(st.text(min_size=1, max_size=20), max_size=40))
def test_at_most_ten_and_they_survive_storage(lines: list[str]) -> None:
    kept: tuple[str, ...] = ()
    for line in lines:
        kept = with_recent_search(kept, line)
    assert len(kept) <= RECENT_SEARCHES_KEPT
    assert recent_searches(encode_recent_searches(kept)) == kept


def test_the_options_end_with_clear() -> None:
    options = recent_search_suggestions(("in:ops deploy", "rollback"))
    assert [(o.group, o.title, o.value) for o in options] == [
        (RECENT_GROUP, "in:ops deploy", "in:ops deploy"),
        (RECENT_GROUP, "rollback", "rollback"),
        (CLEAR_RECENT_GROUP, "Clear recent searches", ""),
    ]
    assert recent_search_suggestions(()) == ()
