"""The pipeline contract: request parsing, the embedded pipeline's answers, and serving it over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ai_search import PipelineConfig, build_intelligent_search_request
from ai_search_server.retrieval.embedded import (
    MAX_PIPELINE_K,
    EmbeddedPipeline,
    PipelineRequestError,
    parse_pipeline_request,
)
from ai_search_server.retrieval.index import EmbeddedIndex
from ai_search_server.retrieval.pg_keyword import PgKeywordIndex
from ai_search_server.retrieval.pipeline_client import PipelineError
from ai_search_server.retrieval.pipeline_http import MAX_PIPELINE_BODY_BYTES, pipeline_app, pipeline_routes

from ._search_support import EMBED_WAIT_SECONDS, open_test_index
from .conftest import Workspace

KEYS = {"X-API-KEY": "key-1", "X-API-KEY-SECRET": "secret-1"}
ROOMS = {"room_id": {"$in": ["r1", "r2"]}}


def body(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"query": "deploy", "type": "search", "filters": dict(ROOMS), "params": {"k": 5}}
    base.update(changes)
    return base


@pytest.mark.parametrize(
    ("request_body", "expected"),
    [
        pytest.param(
            body(),
            {"mode": "keyword", "rooms": ("r1", "r2"), "k": 5, "threshold": None},
            id="keyword-request",
        ),
        pytest.param(
            body(type="similarity", params={"k": 3, "threshold": 0.4}),
            {"mode": "semantic", "k": 3, "threshold": 0.4},
            id="semantic-request-keeps-threshold",
        ),
        pytest.param(
            body(params={"k": 3, "threshold": 0.4}),
            {"threshold": None},
            id="keyword-request-ignores-threshold",
        ),
        pytest.param(
            body(filters={"room_id": {"$eq": "r9"}, "username": {"$in": ["alice", "bob"]}}),
            {"rooms": ("r9",), "users": ("alice", "bob")},
            id="eq-and-in-operators",
        ),
        pytest.param(
            body(filters={**ROOMS, "timestamp": {"$ge": "2026-11-01T00:00:00.000Z"}}),
            {"ts_min_ms": 1793491200000, "ts_max_ms": None},
            id="start-bound-only",
        ),
        pytest.param(
            body(filters={**ROOMS, "timestamp": {"$le": "2026-11-01T00:00:00+01:00"}}),
            {"ts_max_ms": 1793487600000},
            id="offset-in-a-bound-is-honoured",
        ),
        pytest.param(
            body(filters={"room_id": {"$in": ["r1", "r1"]}}),
            {"rooms": ("r1",)},
            id="repeated-rooms-deduplicated",
        ),
    ],
)
def test_parse_valid_requests(request_body: dict[str, Any], expected: dict[str, Any]) -> None:
    parsed = parse_pipeline_request(request_body)
    assert {name: getattr(parsed, name) for name in expected} == expected


@pytest.mark.parametrize(
    ("request_body", "message"),
    [
        pytest.param([], "must be a JSON object", id="not-an-object"),
        pytest.param(body(query="  "), "query must be", id="blank-query"),
        pytest.param(body(query=7), "query must be", id="query-not-a-string"),
        pytest.param(body(type="hybrid"), "type must be", id="unknown-type"),
        pytest.param(body(filters=None), "room_id is required", id="no-filters-never-means-every-room"),
        pytest.param(body(filters={"username": {"$eq": "a"}}), "room_id is required", id="no-room-filter"),
        pytest.param(
            body(filters={**ROOMS, "tenant": {"$eq": "x"}}), "unknown filter", id="unknown-filter-key"
        ),
        pytest.param(body(filters={"room_id": {"$ne": "r1"}}), "room_id must be", id="unknown-operator"),
        pytest.param(
            body(filters={"room_id": {"$in": ["r1", 3]}}), "non-empty strings", id="non-string-room"
        ),
        pytest.param(body(filters={"room_id": {"$in": ["r1", ""]}}), "non-empty strings", id="empty-room"),
        pytest.param(
            body(filters={"room_id": {"$eq": "r1", "$in": ["r2"]}}), "room_id must be", id="two-operators"
        ),
        pytest.param(
            body(filters={**ROOMS, "timestamp": {"$gt": "2026-01-01"}}),
            "timestamp must hold",
            id="unknown-time-operator",
        ),
        pytest.param(
            body(filters={**ROOMS, "timestamp": {"$ge": "yesterday"}}),
            "not an ISO 8601",
            id="unreadable-time",
        ),
        pytest.param(body(params={"k": 0}), "params.k", id="k-zero"),
        pytest.param(body(params={"k": MAX_PIPELINE_K + 1}), "params.k", id="k-too-large"),
        pytest.param(body(params={"k": True}), "params.k", id="k-boolean"),
        pytest.param(body(params=None), "params must be", id="no-params"),
        pytest.param(
            body(type="similarity", params={"k": 5, "threshold": 3}), "threshold", id="threshold-out-of-range"
        ),
    ],
)
def test_parse_refuses_what_breaks_the_contract(request_body: object, message: str) -> None:
    with pytest.raises(PipelineRequestError, match=message):
        parse_pipeline_request(request_body)


def test_the_core_request_body_is_what_the_embedded_pipeline_parses() -> None:
    config = PipelineConfig(
        "https://h", "p", "k", "s", query_template="search: {query}", minimum_similarity_percent=60
    )
    request = build_intelligent_search_request(
        "deploy", config, classifications=["user"], pipeline_filters=ROOMS, limit=20, mode="semantic"
    )
    parsed = parse_pipeline_request(request.body)
    assert (parsed.query, parsed.mode, parsed.k, parsed.threshold) == ("search: deploy", "semantic", 20, 0.4)


@pytest.fixture
def index(workspace: Workspace, data_dir: Path) -> Iterator[EmbeddedIndex]:
    opened = open_test_index(workspace.store, data_dir)
    assert opened.wait_until_embedded(EMBED_WAIT_SECONDS)
    yield opened
    opened.close()


@pytest.fixture(params=["fts5", "postgres"])
def keyword(
    request: pytest.FixtureRequest, workspace: Workspace, store_kind: str, database_url: str
) -> Iterator[PgKeywordIndex | None]:
    """The keyword branch: the index's FTS5 (None), or PostgreSQL's under ``--store=postgres``."""
    if request.param == "fts5":
        yield None
        return
    if store_kind != "postgres":
        pytest.skip("the PostgreSQL keyword branch needs --store=postgres")
    opened = PgKeywordIndex.open(database_url, workspace.store)
    yield opened
    opened.close()


def scoped(workspace: Workspace, *rooms: str, **changes: Any) -> dict[str, Any]:
    return body(filters={"room_id": {"$in": [workspace.rooms[r].id for r in rooms]}}, **changes)


def test_keyword_answers_only_from_the_filtered_rooms(
    workspace: Workspace, index: EmbeddedIndex, keyword: PgKeywordIndex | None
) -> None:
    pipeline = EmbeddedPipeline(index, keyword=keyword)
    answer = pipeline.handle(scoped(workspace, "general"))
    deploy_in_general = workspace.messages["general-2"]
    assert [item["id"] for item in answer["results"]] == [deploy_in_general.id]
    item = answer["results"][0]
    assert item["metadata"] == {
        "msg_id": deploy_in_general.id,
        "room_id": deploy_in_general.room_id,
        "username": "bob",
        "timestamp": "2026-11-01T09:02:00.000Z",
    }
    assert isinstance(item["score"], float)
    both = pipeline.handle(scoped(workspace, "general", "ops"))
    assert {i["id"] for i in both["results"]} == {deploy_in_general.id, workspace.messages["ops-3"].id}


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        pytest.param({"username": {"$eq": "ALICE"}}, ["ops-3"], id="author-filter-case-insensitive"),
        pytest.param({"username": {"$eq": "carol"}}, [], id="author-without-hits"),
        pytest.param(
            {"timestamp": {"$le": "2026-11-01T09:02:00.000Z"}}, ["general-2"], id="end-bound-inclusive"
        ),
        pytest.param({"timestamp": {"$ge": "2026-11-01T09:02:00.001Z"}}, ["ops-3"], id="start-bound"),
    ],
)
def test_keyword_filters(
    workspace: Workspace,
    index: EmbeddedIndex,
    keyword: PgKeywordIndex | None,
    filters: dict,
    expected: list[str],
) -> None:
    rooms = {"room_id": {"$in": [workspace.rooms["general"].id, workspace.rooms["ops"].id]}}
    answer = EmbeddedPipeline(index, keyword=keyword).handle(body(filters={**rooms, **filters}))
    assert sorted(i["id"] for i in answer["results"]) == sorted(workspace.messages[k].id for k in expected)


def test_semantic_answers_carry_similarity_and_respect_the_threshold(
    workspace: Workspace, index: EmbeddedIndex
) -> None:
    pipeline = EmbeddedPipeline(index)
    wide = pipeline.handle(
        scoped(workspace, "ops", type="similarity", query="rolling back now", params={"k": 5})
    )
    first = wide["results"][0]
    assert first["id"] == workspace.messages["ops-4"].id
    assert first["similarity"] == pytest.approx(1.0, abs=1e-3)
    assert first["distance"] == pytest.approx(0.0, abs=1e-3)
    strict = pipeline.handle(
        scoped(
            workspace, "ops", type="similarity", query="rolling back now", params={"k": 5, "threshold": 0.1}
        )
    )
    assert [i["id"] for i in strict["results"]] == [workspace.messages["ops-4"].id]


def test_semantic_without_an_embedder_is_unavailable(workspace: Workspace, data_dir: Path) -> None:
    index = open_test_index(workspace.store, data_dir, embedder=False)
    try:
        with pytest.raises(PipelineError) as caught:
            EmbeddedPipeline(index).handle(scoped(workspace, "ops", type="similarity"))
        assert caught.value.kind == "unavailable"
    finally:
        index.close()


@pytest.fixture
async def served(workspace: Workspace, index: EmbeddedIndex) -> AsyncIterator[httpx.AsyncClient]:
    app = pipeline_app(EmbeddedPipeline(index), pipeline_id="p1", api_key="key-1", api_key_secret="secret-1")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://pipeline"
    ) as client:
        yield client


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "headers", "payload", "status", "error"),
    [
        pytest.param("/pipeline/v1/pipelines/p1/search", {}, None, 401, "X-API-KEY", id="no-keys"),
        pytest.param(
            "/pipeline/v1/pipelines/p1/search",
            {**KEYS, "X-API-KEY-SECRET": "nope"},
            None,
            401,
            "X-API-KEY",
            id="wrong-secret",
        ),
        pytest.param(
            "/pipeline/v1/pipelines/other/search", KEYS, None, 404, "no such pipeline", id="other-id"
        ),
        pytest.param(
            "/pipeline/v1/pipelines/p1/search", KEYS, b"{not json", 400, "not valid JSON", id="bad-json"
        ),
        pytest.param(
            "/pipeline/v1/pipelines/p1/search",
            KEYS,
            {"query": "x", "type": "search"},
            400,
            "room_id is required",
            id="contract-broken",
        ),
        pytest.param(
            "/pipeline/v1/pipelines/p1/search",
            KEYS,
            b"[" + b" " * MAX_PIPELINE_BODY_BYTES + b"]",
            413,
            "over",
            id="body-too-large",
        ),
    ],
)
async def test_http_refusals(
    served: httpx.AsyncClient, path: str, headers: dict, payload: object, status: int, error: str
) -> None:
    if isinstance(payload, bytes):
        response = await served.post(path, headers=headers, content=payload)
    else:
        response = await served.post(path, headers=headers, json=payload if payload is not None else body())
    assert response.status_code == status
    assert error in response.json()["error"]


@pytest.mark.anyio
async def test_http_answers_like_in_process(
    workspace: Workspace, index: EmbeddedIndex, served: httpx.AsyncClient
) -> None:
    request = scoped(workspace, "general", "ops")
    response = await served.post("/pipeline/v1/pipelines/p1/search", headers=KEYS, json=request)
    assert response.status_code == 200
    assert response.json() == EmbeddedPipeline(index).handle(request)


@pytest.mark.anyio
async def test_http_semantic_unavailable_is_503(workspace: Workspace, data_dir: Path) -> None:
    index = open_test_index(workspace.store, data_dir, embedder=False)
    app = pipeline_app(EmbeddedPipeline(index), pipeline_id="p1", api_key="key-1", api_key_secret="secret-1")
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://p") as client:
            response = await client.post(
                "/pipeline/v1/pipelines/p1/search",
                headers=KEYS,
                json=scoped(workspace, "ops", type="similarity"),
            )
        assert response.status_code == 503
        assert response.json() == {"error": "the semantic search is not available"}
    finally:
        index.close()


@pytest.mark.parametrize(
    ("pipeline_id", "key", "secret"),
    [
        pytest.param("", "k", "s", id="no-id"),
        pytest.param("p", "", "s", id="no-key"),
        pytest.param("p", "k", "", id="no-secret"),
    ],
)
def test_serving_without_keys_is_refused(pipeline_id: str, key: str, secret: str) -> None:
    async def source() -> EmbeddedPipeline:
        raise AssertionError("never called")

    with pytest.raises(ValueError, match="API key"):
        pipeline_routes(source, pipeline_id=pipeline_id, api_key=key, api_key_secret=secret)
