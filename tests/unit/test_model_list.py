"""Model picker: `GET /models` parsing and the JS `localeCompare` (ICU root) sort key.

The expected orders below were produced by node 20 (`a.localeCompare(b)`, ICU root collation) and
copied here; the tests do not run node.
"""

from __future__ import annotations

import doctest
import functools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search import _model_list
from ai_search._model_list import (
    ModelOption,
    locale_compare_key,
    may_list_models,
    model_list_fallback,
    parse_model_list,
)

# All 128 ASCII characters that ICU does not ignore, in node's `localeCompare` order.
ICU_ASCII_ORDER = (
    "\t\n\v\f\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789"
    "aAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPqQrRsStTuUvVwWxXyYzZ"
)
ICU_IGNORED_ASCII = [chr(c) for c in [*range(9), *range(14, 32), 127]]


def test_module_examples_hold() -> None:
    assert doctest.testmod(_model_list).failed == 0


def options(*ids: str) -> list[ModelOption]:
    return [ModelOption(model_id, model_id) for model_id in ids]


def body(*ids: object) -> dict[str, object]:
    return {"object": "list", "data": [{"id": model_id, "object": "model"} for model_id in ids]}


@pytest.mark.parametrize(
    ("payload", "selected", "expected"),
    [
        pytest.param(
            body("gpt-4o", "b", "GPT-3", "B", "a9", "a10"),
            None,
            options("a10", "a9", "b", "B", "GPT-3", "gpt-4o"),
            id="spec-example-order",
        ),
        pytest.param(body("b", "a"), "zz", options("zz", "a", "b"), id="missing-selected-prepended-unsorted"),
        pytest.param(body("b", "a"), "b", options("a", "b"), id="listed-selected-stays-in-place"),
        pytest.param(body("b", "a"), "", options("a", "b"), id="empty-selected-is-not-set"),
        pytest.param(body("m", "m", "M"), None, options("m", "M"), id="duplicates-dropped-case-sensitively"),
        pytest.param(
            {"data": [{"id": ""}, {"id": 3}, {"name": "x"}, "gpt-4o", None, [], {"id": None}, {"id": "ok"}]},
            None,
            options("ok"),
            id="only-objects-with-non-empty-string-id",
        ),
        pytest.param({"data": []}, "sel", options("sel"), id="empty-data-with-selected"),
        pytest.param({"data": []}, None, [], id="empty-data"),
        pytest.param({"models": ["a"]}, None, [], id="no-data-key"),
        pytest.param({"models": ["a"]}, "sel", options("sel"), id="no-data-key-with-selected"),
        pytest.param({"data": {"id": "a"}}, "sel", options("sel"), id="data-not-an-array"),
        pytest.param(["a", "b"], None, [], id="body-is-an-array"),
        pytest.param(None, "sel", options("sel"), id="body-is-null"),
        pytest.param("oops", None, [], id="body-is-a-string"),
    ],
)
def test_parse_model_list(payload: object, selected: str | None, expected: list[ModelOption]) -> None:
    assert parse_model_list(payload, selected) == expected


@pytest.mark.parametrize(
    ("selected", "expected"),
    [
        pytest.param("gpt-4o", options("gpt-4o"), id="selected"),
        pytest.param(None, [], id="none"),
        pytest.param("", [], id="empty-string-is-not-set"),
    ],
)
def test_model_list_fallback(selected: str | None, expected: list[ModelOption]) -> None:
    assert model_list_fallback(selected) == expected


def test_every_ascii_character_sorts_as_icu() -> None:
    printable = [chr(c) for c in range(128) if chr(c) not in ICU_IGNORED_ASCII]
    assert "".join(sorted(printable, key=locale_compare_key)) == ICU_ASCII_ORDER


@pytest.mark.parametrize("char", ICU_IGNORED_ASCII, ids=lambda c: f"U+{ord(c):04X}")
def test_ignorable_controls_do_not_count(char: str) -> None:
    assert locale_compare_key(f"a{char}b") == locale_compare_key("ab")


# Each list is in node's `localeCompare` order.
@pytest.mark.parametrize(
    "ordered",
    [
        pytest.param(["a10", "a9", "b", "B", "GPT-3", "gpt-4o"], id="spec-example"),
        pytest.param(["aB", "Ab"], id="case-compared-left-to-right-after-letters"),
        pytest.param(["a b", "a_b", "a-b", "a.b", "ab"], id="punctuation-not-ignored-and-before-letters"),
        pytest.param(["llama3:8b", "llama3.1:8b"], id="colon-before-period"),
        pytest.param(["a", "A", "ab", "aB", "Ab", "AB", "b"], id="primary-then-tertiary"),
        pytest.param(["gpt-4", "gpt-4-turbo", "gpt-4o", "gpt-4o-mini", "GPT-4o-mini"], id="openai-like-ids"),
        pytest.param(["$5", "0", "9", "a"], id="currency-before-digits-before-letters"),
        pytest.param(["e", "E", "é", "É", "f"], id="accent-after-case-before-next-letter"),
        pytest.param(["ea", "éa", "eb"], id="letters-before-accents"),
        pytest.param(["é", "è", "ê", "ë"], id="acute-grave-circumflex-diaeresis"),
        pytest.param(["1", "¹", "½"], id="superscript-after-digit"),
        pytest.param(["fi", "ﬁ"], id="ligature-after-letters"),
        pytest.param(["a", "Ａ"], id="fullwidth-after-ascii"),
        pytest.param(["z", "α", "Ω", "я", "中"], id="scripts-after-latin"),
        pytest.param(["°", "$", "€", "0"], id="symbols-currency-digits"),
    ],
)
def test_locale_compare_key_matches_node(ordered: list[str]) -> None:
    for shuffled in (list(reversed(ordered)), ordered[1:] + ordered[:1]):
        assert sorted(shuffled, key=locale_compare_key) == ordered


@pytest.mark.parametrize(
    ("left", "right"),
    [
        pytest.param("a\u0301", "á", id="decomposed-equals-composed"),
        pytest.param("a\u00adb", "ab", id="soft-hyphen-ignored"),
        pytest.param("a\u200bb", "ab", id="zero-width-space-ignored"),
    ],
)
def test_strings_node_calls_equal_get_equal_keys(left: str, right: str) -> None:
    assert locale_compare_key(left) == locale_compare_key(right)


def test_equal_keys_keep_input_order_like_a_stable_js_sort() -> None:
    payload = {"data": [{"id": "a\x01"}, {"id": "a"}, {"id": "\x02a"}]}
    assert [m.key for m in parse_model_list(payload)] == ["a\x01", "a", "\x02a"]


def _case_insensitive_then_lower_first(left: str, right: str) -> int:
    # For letters and digits only, ICU root reduces to: compare case-folded, then lower before upper
    # at the first case difference.
    if left.lower() != right.lower():
        return -1 if left.lower() < right.lower() else 1
    for a, b in zip(left, right, strict=True):
        if a != b:
            return -1 if a.islower() else 1
    return 0


@given(st.lists(st.text(alphabet="aAbBzZ019", max_size=5), max_size=12))
def test_alphanumeric_ids_sort_case_insensitively_then_lower_first(ids: list[str]) -> None:
    expected = sorted(ids, key=functools.cmp_to_key(_case_insensitive_then_lower_first))
    assert sorted(ids, key=locale_compare_key) == expected


@pytest.mark.parametrize(
    ("permissions", "allowed"),
    [
        pytest.param({"view-privileged-setting"}, True, id="view"),
        pytest.param({"edit-privileged-setting"}, True, id="edit"),
        pytest.param(
            {"manage-selected-settings", "change-setting-llm_model"}, True, id="selected-plus-setting"
        ),
        pytest.param({"manage-selected-settings"}, False, id="selected-alone"),
        pytest.param({"change-setting-llm_model"}, False, id="setting-alone"),
        pytest.param({"access-mcp", "create-c"}, False, id="member-permissions"),
    ],
)
def test_who_may_list_models(permissions: set[str], allowed: bool) -> None:
    assert may_list_models(frozenset(permissions)) is allowed
