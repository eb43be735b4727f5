"""Pipeline contract: filters, request, percent helpers, candidate limit and candidate normalisation."""

from __future__ import annotations

import doctest
import json
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search import _pipeline
from ai_search._pipeline import (
    IntelligentSearchCandidate,
    PipelineConfig,
    build_intelligent_search_pipeline_filters,
    build_intelligent_search_request,
    get_intelligent_search_candidate_limit,
    get_semantic_distance_threshold,
    normalize_intelligent_search_candidates,
    normalize_similarity_percent,
    to_iso_timestamp,
    trim_trailing_slashes,
)

NOV_1 = datetime(2026, 11, 1, tzinfo=UTC)
NOV_30 = datetime(2026, 11, 30, 23, 59, 59, 999_999, tzinfo=UTC)
CONFIG = PipelineConfig("https://h", "pipe", "key-1", "secret-1")


def test_module_docstring_examples_hold() -> None:
    assert doctest.testmod(_pipeline).failed == 0


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        pytest.param("https://x/v1//", "https://x/v1", id="every-trailing-slash-goes"),
        pytest.param("https://x/v1", "https://x/v1", id="no-slash-unchanged"),
        pytest.param("https://x//v1/", "https://x//v1", id="inner-slashes-stay"),
        pytest.param("///", "", id="only-slashes-gives-empty"),
        pytest.param("", "", id="empty-stays-empty"),
    ],
)
def test_trim_trailing_slashes(url: str, expected: str) -> None:
    assert trim_trailing_slashes(url) == expected


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        pytest.param(NOV_1, "2026-11-01T00:00:00.000Z", id="utc-midnight-has-milliseconds-and-z"),
        pytest.param(
            datetime(2026, 11, 1, 1, 30, tzinfo=timezone(timedelta(hours=2))),
            "2026-10-31T23:30:00.000Z",
            id="offset-converted-to-utc-across-a-day",
        ),
        pytest.param(NOV_30, "2026-11-30T23:59:59.999Z", id="microseconds-truncated-not-rounded"),
        pytest.param(datetime(999, 1, 2, tzinfo=UTC), "0999-01-02T00:00:00.000Z", id="year-padded-to-4"),
    ],
)
def test_to_iso_timestamp(moment: datetime, expected: str) -> None:
    assert to_iso_timestamp(moment) == expected


def test_to_iso_timestamp_refuses_naive_datetime() -> None:
    with pytest.raises(ValueError, match="aware datetime"):
        to_iso_timestamp(datetime(2026, 11, 1))


ROOMS = ["a", "b", "c"]


@pytest.mark.parametrize(
    ("user_rooms", "kwargs", "expected"),
    [
        pytest.param([], {}, None, id="no-rooms-means-no-search"),
        pytest.param([], {"rids": ["a"]}, None, id="no-rooms-even-when-requested"),
        pytest.param(["a"], {}, {"room_id": {"$eq": "a"}}, id="one-room-is-eq"),
        pytest.param(ROOMS, {}, {"room_id": {"$in": ROOMS}}, id="nothing-requested-uses-all-rooms"),
        pytest.param(["a", "b", "a"], {}, {"room_id": {"$in": ["a", "b"]}}, id="subscriptions-deduped"),
        pytest.param(ROOMS, {"rids": ["c", "a"]}, {"room_id": {"$in": ["c", "a"]}}, id="request-order-kept"),
        pytest.param(
            ROOMS, {"rids": ["c"], "rid": "a"}, {"room_id": {"$in": ["c", "a"]}}, id="rids-then-rid"
        ),
        pytest.param(ROOMS, {"rids": ["b"], "rid": "b"}, {"room_id": {"$eq": "b"}}, id="rid-in-rids-once"),
        pytest.param(ROOMS, {"rid": "zz"}, None, id="unsubscribed-explicit-rid-rejected"),
        pytest.param(ROOMS, {"rids": ["x", "y"]}, None, id="unsubscribed-explicit-rids-rejected"),
        pytest.param(ROOMS, {"rids": ["x", "b"]}, {"room_id": {"$eq": "b"}}, id="unsubscribed-ones-dropped"),
        pytest.param(ROOMS, {"rids": [""]}, None, id="empty-requested-room-fails-closed"),
        pytest.param(ROOMS, {"rid": ""}, {"room_id": {"$in": ROOMS}}, id="empty-rid-means-not-given"),
    ],
)
def test_pipeline_filters_rooms(
    user_rooms: list[str], kwargs: dict[str, Any], expected: dict[str, Any] | None
) -> None:
    assert build_intelligent_search_pipeline_filters(user_rooms, **kwargs) == expected


def test_pipeline_filters_have_no_room_cap() -> None:
    rooms = [f"r{i}" for i in range(1500)]
    assert build_intelligent_search_pipeline_filters(rooms) == {"room_id": {"$in": rooms}}


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param({}, None, id="no-usernames-no-key"),
        pytest.param({"from_username": "@alice"}, {"$eq": "alice"}, id="one-at-stripped-eq"),
        pytest.param({"from_username": "@@al"}, {"$eq": "@al"}, id="only-one-at-stripped"),
        pytest.param(
            {"from_usernames": ["bob", "@alice"], "from_username": "carol"},
            {"$in": ["bob", "alice", "carol"]},
            id="list-then-single-in-order",
        ),
        pytest.param(
            {"from_usernames": ["bob", "@bob"], "from_username": "bob"}, {"$eq": "bob"}, id="deduped"
        ),
        pytest.param({"from_usernames": ["", "@"]}, None, id="empty-names-dropped"),
        pytest.param({"from_username": ""}, None, id="empty-single-dropped"),
    ],
)
def test_pipeline_filters_usernames(kwargs: dict[str, Any], expected: dict[str, Any] | None) -> None:
    filters = build_intelligent_search_pipeline_filters(["a"], **kwargs)
    assert filters is not None
    assert filters.get("username") == expected


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param({}, None, id="no-dates-no-key"),
        pytest.param(
            {"start_date": NOV_1, "end_date": NOV_30},
            {"$ge": "2026-11-01T00:00:00.000Z", "$le": "2026-11-30T23:59:59.999Z"},
            id="both-bounds",
        ),
        pytest.param({"start_date": NOV_1}, {"$ge": "2026-11-01T00:00:00.000Z"}, id="start-only-ge-only"),
        pytest.param({"end_date": NOV_30}, {"$le": "2026-11-30T23:59:59.999Z"}, id="end-only-le-only"),
    ],
)
def test_pipeline_filters_dates(kwargs: dict[str, Any], expected: dict[str, str] | None) -> None:
    filters = build_intelligent_search_pipeline_filters(["a"], **kwargs)
    assert filters is not None
    assert filters.get("timestamp") == expected


def test_pipeline_filters_refuse_naive_dates() -> None:
    with pytest.raises(ValueError, match="aware"):
        build_intelligent_search_pipeline_filters(["a"], start_date=datetime(2026, 11, 1))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(61, 61, id="int-kept"),
        pytest.param(61.9, 61, id="floored"),
        pytest.param(-5, 0, id="clamped-low"),
        pytest.param(150, 100, id="clamped-high"),
        pytest.param("70", 70, id="numeric-string"),
        pytest.param(" 42 ", 42, id="padded-numeric-string"),
        pytest.param("1e1", 10, id="exponent-string"),
        pytest.param("", 0, id="blank-string"),
        pytest.param("abc", 0, id="non-numeric-string"),
        pytest.param("1_0", 0, id="python-only-underscore-form-refused"),
        pytest.param("inf", 0, id="python-only-inf-string-refused"),
        pytest.param("0x10", 0, id="hex-not-read"),
        pytest.param(None, 0, id="none"),
        pytest.param(math.nan, 0, id="nan"),
        pytest.param(math.inf, 0, id="infinity"),
        pytest.param(True, 0, id="bool-is-not-a-number"),
        pytest.param(10**400, 0, id="int-beyond-float-range"),
        pytest.param([70], 0, id="list"),
    ],
)
def test_normalize_similarity_percent(value: object, expected: int) -> None:
    assert normalize_similarity_percent(value) == expected


@pytest.mark.parametrize(
    ("percent", "expected"),
    [
        pytest.param(61, 0.39, id="61-gives-0.39"),
        pytest.param(0, 1, id="0-gives-1"),
        pytest.param(100, 0, id="100-gives-0"),
        pytest.param(33, 0.67, id="33-gives-0.67"),
        pytest.param(12.34, 0.8766, id="four-decimals-half-up"),
    ],
)
def test_get_semantic_distance_threshold(percent: float, expected: float) -> None:
    assert get_semantic_distance_threshold(percent) == expected


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        pytest.param(-3, 20, id="negative-floors-to-min"),
        pytest.param(1, 20, id="small-floors-to-min"),
        pytest.param(5, 20, id="default-page"),
        pytest.param(7, 21, id="three-times-limit"),
        pytest.param(10, 30, id="ten-gives-thirty"),
        pytest.param(33, 99, id="just-under-max"),
        pytest.param(34, 100, id="capped-at-max"),
        pytest.param(50, 100, id="max-results-capped"),
    ],
)
def test_get_intelligent_search_candidate_limit(limit: int, expected: int) -> None:
    assert get_intelligent_search_candidate_limit(limit) == expected


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param(CONFIG, True, id="all-four-set"),
        pytest.param(PipelineConfig("", "p", "k", "s"), False, id="no-base-url"),
        pytest.param(PipelineConfig("https://h", "", "k", "s"), False, id="no-pipeline-id"),
        pytest.param(PipelineConfig("https://h", "p", "", "s"), False, id="no-key"),
        pytest.param(PipelineConfig("https://h", "p", "k", "  "), False, id="blank-secret"),
    ],
)
def test_pipeline_config_is_configured(config: PipelineConfig, expected: bool) -> None:
    assert config.is_configured is expected


def _request(config: PipelineConfig = CONFIG, **kwargs: Any) -> _pipeline.IntelligentSearchRequest:
    options: dict[str, Any] = {"classifications": ["user"], "pipeline_filters": {}, "limit": 20}
    options.update(kwargs)
    return build_intelligent_search_request(options.pop("query", "deploy"), config, **options)


@pytest.mark.parametrize(
    ("base_url", "pipeline_id", "expected"),
    [
        pytest.param("https://h", "pipe", "https://h/pipelines/pipe/search", id="bare-host"),
        pytest.param("https://h/api/v2", "p", "https://h/api/v2/pipelines/p/search", id="base-path-survives"),
        pytest.param("https://h/api/v2//", "p", "https://h/api/v2/pipelines/p/search", id="trailing-slashes"),
        pytest.param("https://h", "a b/c?d", "https://h/pipelines/a%20b%2Fc%3Fd/search", id="id-url-encoded"),
        pytest.param("https://h", "..", "https://h/pipelines/%2E%2E/search", id="dot-segment-id-encoded"),
    ],
)
def test_request_url(base_url: str, pipeline_id: str, expected: str) -> None:
    assert _request(PipelineConfig(base_url, pipeline_id, "k", "s")).url == expected


def test_request_method_headers_and_timeout() -> None:
    request = _request()
    assert request.method == "POST"
    assert request.headers == {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "X-API-KEY": "key-1",
        "X-API-KEY-SECRET": "secret-1",
    }
    assert request.timeout_seconds == 10.0


def test_request_and_config_repr_hide_secrets() -> None:
    for text in (repr(_request()), repr(CONFIG)):
        assert "key-1" not in text
        assert "secret-1" not in text


def test_semantic_request_body() -> None:
    filters = {"room_id": {"$eq": "a"}}
    body = _request(
        PipelineConfig("https://h", "p", "k", "s", minimum_similarity_percent=61),
        classifications=["user", "admin"],
        pipeline_filters=filters,
        limit=30,
    ).body
    assert body == {
        "query": "deploy",
        "type": "similarity",
        "classification": {"classifications": ["user", "admin"], "search_type": 2},
        "filters": filters,
        "params": {"k": 30, "threshold": 0.39},
    }
    assert list(body) == ["query", "type", "classification", "filters", "params"]
    assert json.loads(json.dumps(body)) == body


def test_keyword_request_omits_threshold() -> None:
    body = _request(
        PipelineConfig("https://h", "p", "k", "s", minimum_similarity_percent=61), mode="keyword"
    ).body
    assert body["type"] == "search"
    assert body["params"] == {"k": 20}


@pytest.mark.parametrize(
    ("percent", "threshold"),
    [
        pytest.param(0, 1, id="default-zero-percent-keeps-everything"),
        pytest.param(100, 0, id="hundred-percent"),
        pytest.param(70.9, 0.3, id="percent-floored"),
        pytest.param(-20, 1, id="negative-clamped"),
        pytest.param(math.nan, 1, id="nan-gives-zero-percent"),
    ],
)
def test_request_threshold_from_config(percent: float, threshold: float) -> None:
    config = PipelineConfig("https://h", "p", "k", "s", minimum_similarity_percent=percent)
    assert _request(config).body["params"]["threshold"] == threshold


@pytest.mark.parametrize(
    ("template", "query", "expected"),
    [
        pytest.param("", "deploy", "deploy", id="no-template-is-the-query"),
        pytest.param("find: {query}", "deploy", "find: deploy", id="placeholder-replaced"),
        pytest.param("{query} or {query}", "x", "x or {query}", id="only-first-placeholder"),
        pytest.param("fixed text", "x", "fixed text", id="template-without-placeholder-sent-as-is"),
        pytest.param("q={query}", "$& {query}", "q=$& {query}", id="query-inserted-literally"),
    ],
)
def test_request_query_template(template: str, query: str, expected: str) -> None:
    config = PipelineConfig("https://h", "p", "k", "s", query_template=template)
    assert _request(config, query=query).body["query"] == expected


def test_request_without_filters_omits_the_key() -> None:
    assert "filters" not in _request(pipeline_filters=None).body


@pytest.mark.parametrize(
    ("config", "kwargs", "message"),
    [
        pytest.param(PipelineConfig("https://h", "p", "", "s"), {}, "not configured", id="unconfigured"),
        pytest.param(CONFIG, {"mode": "hybrid"}, "unknown intelligent search mode", id="unknown-mode"),
        pytest.param(PipelineConfig("https://h/?a=1", "p", "k", "s"), {}, "query", id="base-url-query"),
        pytest.param(PipelineConfig("https://h/#x", "p", "k", "s"), {}, "fragment", id="base-url-fragment"),
    ],
)
def test_request_refuses_bad_input(config: PipelineConfig, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _request(config, **kwargs)


def _normalize(
    raw: object, rooms: list[str] | None = None, limit: int = 100, source: Any = "semantic"
) -> Any:
    return normalize_intelligent_search_candidates(raw, rooms or [], limit, source)


def _ids(raw: object, **kwargs: Any) -> list[str]:
    return [c.id for c in _normalize(raw, **kwargs).candidates]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param([{"id": "m1"}], ["m1"], id="a-list-is-the-results"),
        pytest.param({"results": [{"id": "m1"}]}, ["m1"], id="results-carrier"),
        pytest.param({"context": [{"id": "m1"}]}, ["m1"], id="context-carrier"),
        pytest.param({"documents": [{"id": "m1"}]}, ["m1"], id="documents-carrier"),
        pytest.param({"hits": [{"id": "m1"}]}, ["m1"], id="hits-carrier"),
        pytest.param({"data": [{"id": "m1"}]}, ["m1"], id="data-carrier"),
        pytest.param(
            {
                "data": [{"id": "d"}],
                "hits": [{"id": "h"}],
                "documents": [{"id": "o"}],
                "context": [{"id": "c"}],
                "results": [{"id": "r"}],
            },
            ["r"],
            id="results-beats-every-other-carrier",
        ),
        pytest.param({"data": [{"id": "d"}], "hits": [{"id": "h"}]}, ["h"], id="hits-beats-data"),
        pytest.param({"results": {"id": "r"}, "context": [{"id": "c"}]}, ["c"], id="first-array-wins"),
        pytest.param({"results": None}, [], id="no-array-no-results"),
        pytest.param("results", [], id="string-response"),
        pytest.param(None, [], id="null-response"),
        pytest.param(42, [], id="number-response"),
        pytest.param([], [], id="empty-list"),
    ],
)
def test_normalize_result_carriers(raw: object, expected: list[str]) -> None:
    assert _ids(raw) == expected


@pytest.mark.parametrize(
    ("item", "rid", "msg_id"),
    [
        pytest.param(
            {"metadata": {"room_id": "m-room", "rid": "m-rid"}, "room_id": "room", "rid": "rid", "id": "x"},
            "m-room",
            "x",
            id="metadata-room-id-first",
        ),
        pytest.param(
            {"metadata": {"rid": "m-rid"}, "room_id": "room", "id": "x"},
            "m-rid",
            "x",
            id="metadata-rid-second",
        ),
        pytest.param({"room_id": "room", "rid": "rid", "id": "x"}, "room", "x", id="room-id-before-rid"),
        pytest.param(
            {"rid": "", "room_id": 7, "metadata": {"rid": None}, "id": "x"},
            None,
            "x",
            id="non-strings-and-empty-rids-ignored",
        ),
        pytest.param(
            {"metadata": {"msg_id": "a", "message_id": "b"}, "msg_id": "c", "message_id": "d", "id": "e"},
            None,
            "a",
            id="metadata-msg-id-first",
        ),
        pytest.param(
            {"metadata": {"message_id": "b"}, "msg_id": "c", "id": "e"},
            None,
            "b",
            id="metadata-message-id-second",
        ),
        pytest.param({"msg_id": "c", "message_id": "d", "id": "e"}, None, "c", id="msg-id-before-message-id"),
        pytest.param({"message_id": "d", "id": "e"}, None, "d", id="message-id-before-id"),
        pytest.param({"id": 5, "rid": "r"}, "r", None, id="numeric-id-is-not-an-id"),
        pytest.param({"external_identifier": "r7:a:b"}, "r7", "a:b", id="split-at-first-colon"),
        pytest.param({"external_identifier": ":m5"}, None, ":m5", id="leading-colon-no-split"),
        pytest.param({"external_identifier": "r6:"}, None, "r6:", id="trailing-colon-no-split"),
        pytest.param({"external_identifier": "m9"}, None, "m9", id="no-colon-whole-is-msg-id"),
        pytest.param({"rid": "own", "external_identifier": "r7:m1"}, "own", "m1", id="split-fills-only-msg"),
        pytest.param({"id": "own", "external_identifier": "r7:m1"}, "r7", "own", id="split-fills-only-rid"),
        pytest.param(
            {"id": "own", "rid": "r", "external_identifier": "r7:m1"},
            "r",
            "own",
            id="both-ids-known-identifier-ignored",
        ),
        pytest.param({"id": "own", "external_identifier": "m9"}, None, "own", id="no-split-keeps-msg-id"),
        pytest.param({"rid": "r", "external_identifier": ""}, "r", None, id="empty-identifier-ignored"),
        pytest.param({"rid": "r", "external_identifier": ["r7", "m"]}, "r", None, id="non-string-identifier"),
        pytest.param({"id": "x", "metadata": "not-a-dict"}, None, "x", id="non-object-metadata-ignored"),
    ],
)
def test_normalize_ids(item: dict[str, Any], rid: str | None, msg_id: str | None) -> None:
    (candidate,) = _normalize([item]).candidates
    assert (candidate.rid, candidate.msg_id) == (rid, msg_id)


def test_normalize_synthetic_id_counts_raw_position() -> None:
    raw = ["junk", {"text": "no ids"}, {"rid": "r1"}, {"rid": "r1"}]
    assert _ids(raw) == ["intelligent-semantic-2", "intelligent-semantic-3"]
    assert _ids(raw, source="keyword") == ["intelligent-keyword-2", "intelligent-keyword-3"]


@pytest.mark.parametrize(
    ("raw", "rooms", "expected"),
    [
        pytest.param(
            [{"id": "m1", "rid": "a"}, {"id": "m2", "rid": "z"}], ["a"], ["m1"], id="other-room-dropped"
        ),
        pytest.param([{"id": "m1"}], ["a"], ["m1"], id="no-rid-passes-for-later-check"),
        pytest.param([{"id": "m1", "rid": "z"}], [], ["m1"], id="no-room-list-no-filter"),
        pytest.param([{"external_identifier": "z:m1"}], ["a"], [], id="rid-from-identifier-is-checked"),
    ],
)
def test_normalize_room_filter(raw: list[Any], rooms: list[str], expected: list[str]) -> None:
    assert _ids(raw, rooms=rooms) == expected


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        pytest.param({"text": "t", "content": "c"}, "t", id="text-first"),
        pytest.param({"text": "", "content": "c", "document": "d"}, "c", id="empty-text-skipped"),
        pytest.param({"document": "d", "page_content": "p"}, "d", id="document-before-page-content"),
        pytest.param(
            {"page_content": "p", "metadata": {"text": "m"}}, "p", id="page-content-before-metadata"
        ),
        pytest.param({"metadata": {"text": "m"}}, "m", id="metadata-text-last"),
        pytest.param({"text": 5, "content": ["x"]}, "", id="non-strings-give-empty"),
    ],
)
def test_normalize_text(item: dict[str, Any], expected: str) -> None:
    (candidate,) = _normalize([{"id": "m", **item}]).candidates
    assert candidate.text == expected


@pytest.mark.parametrize(
    ("item", "score", "similarity", "distance", "outside"),
    [
        pytest.param({"similarity": 0.8}, 0.8, 0.8, 1 - 0.8, 0, id="similarity"),
        pytest.param({"similarity": -0.5}, 0.0, -0.5, 1.5, 0, id="negative-similarity-scores-zero"),
        pytest.param({"similarity": 1.5}, 1.0, 1.0, 0.0, 1, id="similarity-clamped-and-counted"),
        pytest.param({"similarity": -3}, 0.0, -1.0, 2.0, 1, id="similarity-clamped-low"),
        pytest.param({"similarity": " 0.25 "}, 0.25, 0.25, 0.75, 0, id="numeric-string"),
        pytest.param({"metadata": {"similarity": 0.5}}, 0.5, 0.5, 0.5, 0, id="metadata-similarity"),
        pytest.param({"similarity": 0.9, "score": 0.5}, 0.9, 0.9, 1 - 0.9, 0, id="similarity-beats-distance"),
        pytest.param({"score": 0.25}, 0.75, 0.75, 0.25, 0, id="score-is-a-distance"),
        pytest.param({"distance": 1.2}, 0.0, 1 - 1.2, 1.2, 0, id="no-percent-heuristic"),
        pytest.param({"distance": 45}, 0.0, -1.0, 2.0, 1, id="distance-45-clamped-to-2"),
        pytest.param({"distance": -0.1}, 1.0, 1.0, 0.0, 1, id="negative-distance-clamped"),
        pytest.param({"score": None, "distance": 0.5}, 0.5, 0.5, 0.5, 0, id="null-skipped"),
        pytest.param({"score": "  ", "distance": 0.5}, 0.5, 0.5, 0.5, 0, id="blank-string-skipped"),
        pytest.param({"score": math.nan, "distance": 0.5}, 0.5, 0.5, 0.5, 0, id="nan-skipped"),
        pytest.param({"score": math.inf, "distance": 0.5}, 0.5, 0.5, 0.5, 0, id="infinity-skipped"),
        pytest.param({"score": True, "distance": 0.5}, 0.5, 0.5, 0.5, 0, id="bool-skipped"),
        pytest.param(
            {"similarity": "high", "metadata": {"score": 0.1}},
            0.9,
            0.9,
            0.1,
            0,
            id="metadata-score-after-bad-similarity",
        ),
        pytest.param({"metadata": {"distance": 0.3}}, 0.7, 0.7, 0.3, 0, id="metadata-distance-last"),
        pytest.param({"score": "abc"}, None, None, None, 0, id="no-number-no-score"),
        pytest.param({}, None, None, None, 0, id="no-score-fields"),
    ],
)
def test_normalize_semantic_scores(
    item: dict[str, Any], score: float | None, similarity: float | None, distance: float | None, outside: int
) -> None:
    result = _normalize([{"id": "m", **item}])
    (candidate,) = result.candidates
    got = (candidate.score, candidate.semantic_similarity, candidate.semantic_distance)
    assert got == pytest.approx((score, similarity, distance))
    assert result.out_of_range_count == outside


def test_keyword_candidates_never_get_scores() -> None:
    result = _normalize([{"id": "m", "score": 12, "similarity": 3, "distance": 0.1}], source="keyword")
    (candidate,) = result.candidates
    assert candidate.source == "keyword"
    assert (candidate.score, candidate.semantic_similarity, candidate.semantic_distance) == (None, None, None)
    assert result.out_of_range_count == 0


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        pytest.param({"metadata": {"timestamp": "m"}, "timestamp": "t"}, "m", id="metadata-timestamp-first"),
        pytest.param({"metadata": {"timestamp": ""}, "timestamp": "t"}, "t", id="top-level-timestamp"),
        pytest.param({"timestamp": 1700000000}, None, id="numeric-timestamp-ignored"),
    ],
)
def test_normalize_timestamp(item: dict[str, Any], expected: str | None) -> None:
    for source in ("semantic", "keyword"):
        (candidate,) = _normalize([{"id": "m", **item}], source=source).candidates
        assert candidate.ts == expected


def test_normalize_full_candidate() -> None:
    raw = {
        "results": [
            {
                "external_identifier": "r1:m1",
                "text": "deploy failed",
                "similarity": 0.7,
                "metadata": {"timestamp": "2026-11-02T10:00:00.000Z"},
            }
        ]
    }
    (candidate,) = _normalize(raw, rooms=["r1"]).candidates
    assert candidate.semantic_distance == pytest.approx(0.3)
    assert replace(candidate, semantic_distance=None) == IntelligentSearchCandidate(
        id="m1",
        rid="r1",
        msg_id="m1",
        text="deploy failed",
        source="semantic",
        score=0.7,
        semantic_similarity=0.7,
        ts="2026-11-02T10:00:00.000Z",
    )


@pytest.mark.parametrize(
    ("raw", "limit", "expected"),
    [
        pytest.param(
            [{"id": "m1"}, {"id": "m1"}, {"id": "m2"}, {"id": "m3"}],
            2,
            ["m1", "m2"],
            id="limit-counts-unique-candidates",
        ),
        pytest.param(
            [{"id": "m1", "rid": "z"}, {"id": "m2"}, {"id": "m3"}], 1, ["m2"], id="limit-counts-accepted-only"
        ),
        pytest.param([{"id": "m1"}], 0, [], id="zero-limit-gives-nothing"),
        pytest.param([{"id": "m1"}], -1, [], id="negative-limit-gives-nothing"),
    ],
)
def test_normalize_limit_and_duplicates(raw: list[Any], limit: int, expected: list[str]) -> None:
    assert _ids(raw, rooms=["a"], limit=limit) == expected


def test_duplicates_keep_the_first_and_are_not_counted_out_of_range() -> None:
    result = _normalize([{"id": "m1", "text": "first", "similarity": 0.5}, {"id": "m1", "similarity": 9}])
    assert [(c.text, c.score) for c in result.candidates] == [("first", 0.5)]
    assert result.out_of_range_count == 0


def test_out_of_range_scores_are_counted_per_candidate() -> None:
    raw = [{"id": "a", "distance": 12}, {"id": "b", "similarity": 0.5}, {"id": "c", "similarity": -2}]
    assert _normalize(raw).out_of_range_count == 2


JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**300, max_value=10**400)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.sampled_from(["r1", "r2", "m1", "m2", "r1:m1", ":x", "x:", " 0.5 ", "1e400", "NaN"])
)
KEYS = st.sampled_from(
    [
        "results",
        "data",
        "hits",
        "metadata",
        "id",
        "msg_id",
        "rid",
        "room_id",
        "external_identifier",
        "similarity",
        "score",
        "distance",
        "text",
        "timestamp",
        "message_id",
    ]
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(KEYS | st.text(max_size=4), children, max_size=6)
    ),
    max_leaves=40,
)


@given(
    raw=JSON_VALUES,
    rooms=st.lists(st.sampled_from(["r1", "r2"]), max_size=2),
    limit=st.integers(min_value=-2, max_value=6),
    source=st.sampled_from(["semantic", "keyword"]),
)
def test_normalize_never_raises_and_keeps_its_promises(
    raw: object, rooms: list[str], limit: int, source: Any
) -> None:
    result = normalize_intelligent_search_candidates(raw, rooms, limit, source)
    ids = [c.id for c in result.candidates]
    assert len(ids) == len(set(ids)) <= max(0, limit)
    assert 0 <= result.out_of_range_count <= len(ids)
    for c in result.candidates:
        assert c.source == source
        assert c.rid is not None or c.msg_id is not None
        assert not rooms or c.rid is None or c.rid in rooms
        if source == "keyword" or c.score is None:
            assert (c.score, c.semantic_similarity, c.semantic_distance) == (None, None, None)
        else:
            assert c.semantic_similarity is not None and c.semantic_distance is not None
            assert 0 <= c.score <= 1
            assert -1 <= c.semantic_similarity <= 1
            assert 0 <= c.semantic_distance <= 2
