"""The remote pipeline client on loopback: against the embedded pipeline served over HTTP, and against
a misbehaving pipeline (slow, 500, garbage JSON, a 6 MiB body, a redirect, a closed port)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ai_search import PipelineConfig
from ai_search_server.outbound import GuardedClient, OutboundPolicy
from ai_search_server.retrieval.embedded import EmbeddedPipeline
from ai_search_server.retrieval.index import EmbeddedIndex
from ai_search_server.retrieval.pipeline_client import PipelineError, RemotePipeline
from ai_search_server.retrieval.pipeline_http import pipeline_app
from ai_search_server.retrieval.search_service import SearchOptions, SearchRequest, SearchService

from ._search_support import EMBED_WAIT_SECONDS, UvicornThread, hits_json, open_test_index, report_json
from .conftest import Workspace

pytestmark = pytest.mark.anyio

LOOPBACK = OutboundPolicy(allow_hosts=("127.0.0.1",))
# The client's deadline in the slow-server test (seconds); the server holds its answer longer.
CLIENT_TIMEOUT_SECONDS = 0.5
SLOW_SERVER_SECONDS = 3.0
SIX_MIB = 6 * 1024 * 1024


@pytest.fixture
def index(workspace: Workspace, data_dir: Path) -> Iterator[EmbeddedIndex]:
    opened = open_test_index(workspace.store, data_dir)
    assert opened.wait_until_embedded(EMBED_WAIT_SECONDS)
    yield opened
    opened.close()


@pytest.fixture
def served_pipeline(index: EmbeddedIndex) -> Iterator[str]:
    app = pipeline_app(EmbeddedPipeline(index), pipeline_id="demo", api_key="k-1", api_key_secret="s-1")
    with UvicornThread(app) as server:
        yield f"{server.url}/pipeline/v1"


@pytest.fixture
async def outbound() -> AsyncIterator[GuardedClient]:
    """The one outbound client an app would lend its remote pipeline."""
    async with GuardedClient(LOOPBACK) as client:
        yield client


def remote(client: GuardedClient, base_url: str, pipeline_id: str = "demo", **kw: Any) -> RemotePipeline:
    return RemotePipeline(PipelineConfig(base_url, pipeline_id, "k-1", "s-1"), client, **kw)


def request(text: str, **kw: Any) -> SearchRequest:
    return SearchRequest(text=text, limit=10, **kw)


@pytest.mark.parametrize(
    ("user", "text", "search_type"),
    [
        pytest.param("alice", "deploy failed", None, id="hybrid"),
        pytest.param("alice", "deploy", "keyword", id="keyword"),
        pytest.param("bob", "acquisition march", "semantic", id="semantic-private-room"),
        pytest.param("carol", "acquisition", None, id="banned-caller"),
    ],
)
async def test_remote_client_against_the_served_embedded_pipeline_matches_in_process(
    workspace: Workspace,
    index: EmbeddedIndex,
    served_pipeline: str,
    user: str,
    text: str,
    search_type: str | None,
    outbound: GuardedClient,
) -> None:
    over_http = SearchService(workspace.store, remote(outbound, served_pipeline), SearchOptions())
    in_process = SearchService(workspace.store, EmbeddedPipeline(index), SearchOptions())
    caller = workspace[user].user
    try:
        via_http = await over_http.search(caller, request(text, search_type=search_type))
    finally:
        await over_http.aclose()
    direct = await in_process.search(caller, request(text, search_type=search_type))
    assert hits_json(via_http) == hits_json(direct)
    assert report_json(via_http)["pipeline"] == "remote"
    assert report_json(via_http)["degraded"] is False


async def test_wrong_keys_fail_the_branch_not_the_search(
    workspace: Workspace, served_pipeline: str, outbound: GuardedClient
) -> None:
    pipeline = RemotePipeline(PipelineConfig(served_pipeline, "demo", "k-1", "wrong"), outbound)
    service = SearchService(workspace.store, pipeline, SearchOptions())
    try:
        outcome = await service.search(workspace["alice"].user, request("deploy"))
    finally:
        await service.aclose()
    assert hits_json(outcome) == []
    assert report_json(outcome)["branches"] == {"keyword": "failed", "semantic": "failed"}


class Misbehaving:
    """A pipeline whose semantic branch misbehaves as its id says; its keyword branch answers `keyword`."""

    def __init__(self, keyword_hit: str) -> None:
        self.keyword_hit = keyword_hit
        self.requests: list[dict[str, Any]] = []
        self.redirect_followed = 0

    async def search(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append({"headers": dict(request.headers), "body": body})
        if body["type"] == "search":
            return JSONResponse({"results": [{"metadata": {"msg_id": self.keyword_hit}}]})
        behaviour = request.path_params["behaviour"]
        if behaviour == "slow":
            await asyncio.sleep(SLOW_SERVER_SECONDS)
            return JSONResponse({"results": []})
        if behaviour == "status-500":
            return JSONResponse({"error": "internal upstream secret detail"}, status_code=500)
        if behaviour == "garbage":
            return Response(b"{'results': [oops", media_type="application/json")
        if behaviour == "huge":
            return Response(
                b'{"results": [], "pad": "' + b"x" * SIX_MIB + b'"}', media_type="application/json"
            )
        if behaviour == "redirect":
            return RedirectResponse("/elsewhere", status_code=302)
        if behaviour == "scalar":
            return JSONResponse(42)
        raise AssertionError(f"unknown behaviour {behaviour}")

    async def elsewhere(self, _request: Request) -> Response:
        self.redirect_followed += 1
        return JSONResponse({"results": []})

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/pipelines/{behaviour}/search", self.search, methods=["POST"]),
                Route("/elsewhere", self.elsewhere, methods=["GET", "POST"]),
            ]
        )


@pytest.fixture
def misbehaving(workspace: Workspace) -> Iterator[tuple[Misbehaving, str]]:
    fake = Misbehaving(workspace.messages["ops-3"].id)
    with UvicornThread(fake.app()) as server:
        yield fake, server.url


@pytest.mark.parametrize(
    ("behaviour", "kind", "notice"),
    [
        pytest.param("slow", "timeout", "did not answer in time", id="slow-server-times-out"),
        pytest.param("status-500", "http-error", "answered with an error", id="server-error"),
        pytest.param("garbage", "bad-response", "could not be read", id="garbage-json"),
        pytest.param("huge", "bad-response", "could not be read", id="six-mib-body-over-the-cap"),
        pytest.param("redirect", "http-error", "answered with an error", id="redirect-refused"),
        pytest.param("scalar", "bad-response", "could not be read", id="json-that-is-not-an-answer"),
    ],
)
async def test_a_misbehaving_semantic_branch_degrades_to_keyword_results(
    workspace: Workspace,
    misbehaving: tuple[Misbehaving, str],
    behaviour: str,
    kind: str,
    notice: str,
    outbound: GuardedClient,
) -> None:
    fake, url = misbehaving
    pipeline = remote(outbound, url, behaviour, timeout_seconds=CLIENT_TIMEOUT_SECONDS)
    with pytest.raises(PipelineError) as caught:
        await pipeline.search(
            "deploy",
            mode="semantic",
            classifications=["user"],
            pipeline_filters={"room_id": {"$eq": "r"}},
            limit=20,
        )
    assert caught.value.kind == kind
    service = SearchService(workspace.store, pipeline, SearchOptions())
    try:
        outcome = await service.search(workspace["alice"].user, request("deploy"))
    finally:
        await service.aclose()
    assert [r["_id"] for r in hits_json(outcome)] == [workspace.messages["ops-3"].id]
    assert report_json(outcome)["branches"] == {"keyword": "ok", "semantic": "failed"}
    assert report_json(outcome)["degraded"] is True
    assert notice in report_json(outcome)["notices"][0]
    assert "secret detail" not in str(report_json(outcome))
    assert fake.redirect_followed == 0


async def test_requests_carry_the_keys_and_the_contract_body(
    workspace: Workspace, misbehaving: tuple[Misbehaving, str], outbound: GuardedClient
) -> None:
    fake, url = misbehaving
    pipeline = remote(outbound, url, "scalar")
    await pipeline.search(
        "deploy",
        mode="keyword",
        classifications=["user"],
        pipeline_filters={"room_id": {"$eq": "r1"}},
        limit=20,
    )
    await pipeline.aclose()
    sent = fake.requests[-1]
    assert (sent["headers"]["x-api-key"], sent["headers"]["x-api-key-secret"]) == ("k-1", "s-1")
    assert sent["body"] == {
        "query": "deploy",
        "type": "search",
        "classification": {"classifications": ["user"], "search_type": 2},
        "filters": {"room_id": {"$eq": "r1"}},
        "params": {"k": 20},
    }


async def test_a_closed_port_is_unreachable(workspace: Workspace, outbound: GuardedClient) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    service = SearchService(workspace.store, remote(outbound, f"http://127.0.0.1:{port}"), SearchOptions())
    outcome = await service.search(workspace["alice"].user, request("deploy"))
    assert hits_json(outcome) == []
    assert report_json(outcome)["branches"] == {"keyword": "failed", "semantic": "failed"}
    assert report_json(outcome)["notices"][0].endswith("could not be reached; showing what else was found.")


async def test_a_private_address_is_refused_without_an_allow_list(
    workspace: Workspace, served_pipeline: str
) -> None:
    async with GuardedClient(OutboundPolicy()) as strict:
        pipeline = RemotePipeline(PipelineConfig(served_pipeline, "demo", "k-1", "s-1"), strict)
        with pytest.raises(PipelineError) as caught:
            await pipeline.search(
                "deploy",
                mode="keyword",
                classifications=["user"],
                pipeline_filters={"room_id": {"$eq": "r"}},
                limit=5,
            )
    assert caught.value.kind == "unreachable"
    assert "refused" in caught.value.detail
