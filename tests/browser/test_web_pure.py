"""The pure helpers of the browser package, on CPython (they import no js): carets, error sentences,
lookup answers. The event-stream parser the page reads answers with is the core's
(tests/unit/test_event_stream.py)."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search import MAX_INTELLIGENT_SEARCH_RESULTS, MAX_SEARCH_QUERY_LENGTH, get_active_search_filter
from ai_search_web.caret import index_to_utf16, utf16_to_index
from ai_search_web.highlights import BIDI_FORMATTING_CHARACTERS, bidi_runs
from ai_search_web.lookups import MAX_CACHED_LOOKUPS, ROOM_LOOKUP, USER_LOOKUP, LookupCache, suggestions_for
from ai_search_web.messages import ERROR_MESSAGES, NETWORK_ERROR_TYPE, error_message, wait_words
from ai_search_web.wording import (
    COUNTER_FROM_CHARS,
    bands_text,
    count_text,
    counter_text,
    coverage_text,
    lockout_text,
    match_words,
    no_strong_text,
    reason_text,
    related_text,
    too_long_text,
)

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(
    ("text", "offset", "index"),
    [
        pytest.param("in:ops", 3, 3, id="ascii-is-the-same-in-both"),
        pytest.param("😀 in:ops", 2, 1, id="an-emoji-is-two-units-one-index"),
        pytest.param("😀 in:ops", 1, 1, id="inside-a-surrogate-pair-rounds-up"),
        pytest.param("😀😀x", 5, 3, id="past-the-end-clamps"),
        pytest.param("abc", -4, 0, id="negative-clamps-to-zero"),
        pytest.param("東京 in:", 3, 3, id="bmp-cjk-is-one-unit"),
    ],
)
def test_utf16_offsets_map_to_python_indices(text: str, offset: int, index: int) -> None:
    assert utf16_to_index(text, offset) == index


@given(st.text(), st.data())
def test_caret_conversion_round_trips(text: str, data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(text)))
    assert utf16_to_index(text, index_to_utf16(text, index)) == index
    assert index_to_utf16(text, len(text)) == len(text.encode("utf-16-le")) // 2


@pytest.mark.parametrize(
    ("error_type", "status", "expected"),
    [
        pytest.param("error-login-failed", 401, ERROR_MESSAGES["error-login-failed"], id="known-type-wins"),
        pytest.param(
            "error-brand-new", 503, "The server hit a problem. Try again in a moment.", id="unknown-5xx"
        ),
        pytest.param(
            "", 422, "The server refused the request. Check the query and try again.", id="unknown-4xx"
        ),
        pytest.param(None, None, ERROR_MESSAGES[NETWORK_ERROR_TYPE], id="no-answer-at-all"),
    ],
)
def test_every_error_reads_as_a_sentence(error_type: str | None, status: int | None, expected: str) -> None:
    assert error_message(error_type, status) == expected


def test_every_server_error_type_has_a_sentence() -> None:
    """Each errorType the answer, search and auth routes raise is in the table."""
    for error_type in (
        "error-ai-not-enabled", "error-ai-provider-not-configured", "error-ai-provider-request-failed",
        "error-ai-provider-empty-response", "error-invalid-search-answer-sources", "error-too-many-requests",
        "error-unauthorized", "error-invalid-params", "error-service-unavailable", "error-internal",
    ):  # fmt: skip
        assert error_type in ERROR_MESSAGES


ROOMS = [
    {"_id": "r1", "name": "ops", "fname": "ops"},
    {"_id": "r2", "name": "devops-guild", "fname": "DevOps guild"},
    {"_id": "r3", "name": "design", "fname": "Design"},
]


@pytest.mark.parametrize(
    ("stored", "asked", "expected"),
    [
        pytest.param({"": ROOMS}, "#OP", ["ops", "devops-guild"], id="complete-answer-filters-prefix-first"),
        pytest.param({"": ROOMS}, "guild", ["devops-guild"], id="display-name-matches-too"),
        pytest.param({"": ROOMS}, "zzz", [], id="complete-answer-knows-there-is-nothing"),
        pytest.param({"de": ROOMS[1:]}, "des", ["design"], id="a-longer-text-uses-a-shorter-complete-answer"),
        pytest.param({"ops": ROOMS[:1]}, "op", None, id="a-shorter-text-needs-the-server"),
        pytest.param({}, "", None, id="nothing-known"),
    ],
)
def test_lookups_are_answered_locally_when_a_complete_answer_covers_them(
    stored: dict[str, list[dict[str, str]]], asked: str, expected: list[str] | None
) -> None:
    cache = LookupCache(ROOM_LOOKUP)
    for text, items in stored.items():
        cache.store(text, items)
    found = cache.local(asked)
    assert (None if found is None else [item["name"] for item in found]) == expected


def test_a_full_answer_is_not_treated_as_complete() -> None:
    """An answer of exactly the route's limit may have left rooms out: longer texts ask the server."""
    cache = LookupCache(USER_LOOKUP)
    cache.store("", [{"_id": str(i), "username": f"user{i}"} for i in range(USER_LOOKUP.limit)])
    assert cache.local("") is not None
    assert cache.local("user1") is None


def test_the_lookup_cache_is_bounded() -> None:
    cache = LookupCache(ROOM_LOOKUP)
    for i in range(MAX_CACHED_LOOKUPS + 5):
        cache.store(f"x{i}", ROOMS[:1] * ROOM_LOOKUP.limit)
    assert cache.local("x0") is None
    assert cache.local(f"x{MAX_CACHED_LOOKUPS + 4}") is not None


@given(st.text(alphabet="ab \u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200f\u05d0"))
def test_bidi_runs_isolate_every_formatting_character(text: str) -> None:
    runs = bidi_runs(text)
    assert "".join(run for run, _ in runs) == text
    for run, control in runs:
        assert run, "no empty runs"
        assert control == (run in BIDI_FORMATTING_CHARACTERS)
        if not control:
            assert not BIDI_FORMATTING_CHARACTERS.intersection(run), "each control has a run of its own"


# -- wording: what the page says about what it shows ----------------------------------------------


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        pytest.param(1, "1 result.", id="one"),
        pytest.param(12, "12 results.", id="some"),
        pytest.param(MAX_INTELLIGENT_SEARCH_RESULTS - 1, "49 results.", id="just-under-the-cap"),
        pytest.param(
            MAX_INTELLIGENT_SEARCH_RESULTS, "50+ results: the best 50 are shown.", id="at-the-cap-says-plus"
        ),
    ],
)
def test_counts_say_plus_at_the_cap(count: int, expected: str) -> None:
    assert count_text(count) == expected


@pytest.mark.parametrize(
    ("strong", "related", "expected"),
    [
        pytest.param(3, 12, "3 strong matches · 12 related.", id="both-bands"),
        pytest.param(1, 1, "1 strong match · 1 related.", id="one-of-each-is-singular"),
        pytest.param(7, 0, "7 strong matches.", id="strong-only"),
        pytest.param(1, 0, "1 strong match.", id="one-strong"),
        pytest.param(0, 7, "No strong match · 7 related.", id="related-only-says-no-strong-match"),
        pytest.param(0, 0, "No results.", id="nothing"),
        pytest.param(MAX_INTELLIGENT_SEARCH_RESULTS, 20, "50 strong matches · 20 related.", id="no-cap-wording"),
    ],
)
def test_banded_counts_say_how_many_are_strong_and_how_many_related(
    strong: int, related: int, expected: str
) -> None:
    assert bands_text(strong, related) == expected


def test_the_related_section_is_labelled_with_its_count() -> None:
    assert related_text(12) == "12 related results — less certain matches"
    assert related_text(1) == "1 related result — a less certain match"
    assert no_strong_text(7) == "No strong match. 7 related results may help."
    assert no_strong_text(1) == "No strong match. 1 related result may help."


@pytest.mark.parametrize(
    ("coverage", "expected"),
    [
        pytest.param(0.62, "re-ranking covers 62% of messages", id="a-share"),
        pytest.param(0.6299, "re-ranking covers 62% of messages", id="rounded-down"),
        pytest.param(0.29, "re-ranking covers 29% of messages", id="no-float-error-below"),
        pytest.param(0.9999, "re-ranking covers 99% of messages", id="never-100-before-all"),
        pytest.param(0.999999, "re-ranking covers 99% of messages", id="never-100-unrounded"),
        pytest.param(0, "re-ranking covers 0% of messages", id="none-yet"),
        pytest.param(1, "", id="all-says-nothing"),
        pytest.param(1.0, "", id="all-as-float"),
        pytest.param(1.5, "", id="beyond-is-nonsense"),
        pytest.param(-0.1, "", id="negative-is-nonsense"),
        pytest.param(float("nan"), "", id="nan"),
        pytest.param(True, "", id="a-bool-is-no-share"),
        pytest.param("0.5", "", id="text-is-no-share"),
        pytest.param(None, "", id="absent"),
    ],
)
def test_coverage_is_said_rounded_down_until_it_is_all(coverage: object, expected: str) -> None:
    assert coverage_text(coverage) == expected


@given(st.integers(0, 9999))
def test_coverage_of_any_four_decimal_share_is_its_whole_percent(steps: int) -> None:
    """The server rounds coverage to 4 decimals: every such share reads as its floor percent."""
    assert coverage_text(round(steps / 10_000, 4)) == f"re-ranking covers {steps // 100}% of messages"


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        pytest.param(0, "", id="empty-box-says-nothing"),
        pytest.param(MAX_SEARCH_QUERY_LENGTH - COUNTER_FROM_CHARS - 1, "", id="far-from-the-limit"),
        pytest.param(
            MAX_SEARCH_QUERY_LENGTH - COUNTER_FROM_CHARS, "50 characters left.", id="near-the-limit"
        ),
        pytest.param(MAX_SEARCH_QUERY_LENGTH - 1, "1 character left.", id="one-left"),
        pytest.param(MAX_SEARCH_QUERY_LENGTH, "A search holds at most 500 characters.", id="at-the-limit"),
    ],
)
def test_the_box_counts_down_near_the_servers_limit(length: int, expected: str) -> None:
    assert counter_text(length) == expected


def test_a_query_over_the_limit_is_explained_with_both_numbers() -> None:
    assert too_long_text(719) == (
        "This search is 719 characters long; a search holds at most 500. Shorten it, then press Enter."
    )


@pytest.mark.parametrize(
    ("reason", "words", "expected"),
    [
        pytest.param("keyword", ["deploy", "failed"], "Matches “deploy”, “failed”", id="words"),
        pytest.param(
            "keyword", ["a", "b", "c", "d", "e"], "Matches “a”, “b”, “c” and 2 more", id="many-words"
        ),
        pytest.param("keyword", [], "Matches your words", id="words-the-spans-do-not-show"),
        pytest.param("semantic", ["ignored"], "Similar in meaning", id="meaning"),
        pytest.param("both", ["deploy"], "Matches “deploy”, and similar in meaning", id="both"),
        pytest.param("vector-magic", ["x"], "", id="an-unknown-reason-says-nothing"),
        pytest.param(None, [], "", id="no-reason"),
    ],
)
def test_match_reasons_are_words_never_scores(reason: object, words: list[str], expected: str) -> None:
    assert reason_text(reason, words) == expected
    assert "%" not in reason_text(reason, words)


def test_match_words_are_the_marked_words_once_each() -> None:
    """Case-folded duplicates count once (first spelling kept); malformed spans are skipped."""
    assert match_words("deploy failed", [[0, 6], [7, 13], "junk", [50, 60]]) == ["deploy", "failed"]
    assert match_words("Deploy deploy", [[0, 6], [7, 13]]) == ["Deploy"]
    assert match_words("text", "not spans") == []


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        pytest.param(1, "1 second", id="one-second"),
        pytest.param(42, "42 seconds", id="seconds"),
        pytest.param(60, "1 minute", id="a-minute"),
        pytest.param(61, "2 minutes", id="rounded-up"),
    ],
)
def test_waits_are_said_as_people_say_them(seconds: int, expected: str) -> None:
    assert wait_words(seconds) == expected


def test_a_refusal_for_too_many_requests_says_the_real_wait() -> None:
    assert error_message("error-too-many-requests", 429, retry_after=42) == (
        "Too many requests in a short time. Try again in 42 seconds."
    )
    assert error_message("error-too-many-requests", 429) == ERROR_MESSAGES["error-too-many-requests"]
    assert lockout_text(58) == "Too many sign-in attempts. Try again in 58 seconds."


_LOOKED_UP = {
    "room": [{"_id": "r1", "name": "ops", "t": "c"}, {"_id": "r2", "name": "design", "t": "c"}],
    "user": [{"_id": "u1", "username": "carol", "name": "Carol N"}],
}


# (typed, signed in) -> the values offered (None: the list closes), as the box and the stage offer them.
@pytest.mark.parametrize(
    ("typed", "signed_in", "expected"),
    [
        ("in:op", True, ["ops"]),
        ("in:op", False, None),  # rooms are the server's: nothing for someone signed out
        ("from:car", True, ["carol", "car"]),  # the person found, then the name as typed
        ("has:fi", False, ["file"]),  # choices need no lookup
        ("deploy", True, None),  # no filter at the caret
    ],
)
def test_suggestions_for_the_filter_at_the_caret(typed: str, signed_in: bool, expected: list[str] | None) -> None:
    asked: list[tuple[str, str]] = []

    def lookup(kind: str, text: str) -> list[dict[str, str]]:
        asked.append((kind, text))  # answered as the server would: names containing the text
        return [item for item in _LOOKED_UP[kind] if text.lower() in item.get("username", item["name"])]

    offered = suggestions_for(
        get_active_search_filter(typed), lookup, signed_in=signed_in, today=datetime.date(2026, 12, 2)
    )
    assert (None if offered is None else [s.value for s in offered]) == expected
    assert not asked if not signed_in or expected is None else asked
