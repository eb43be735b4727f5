"""The OpenAI-compatible embedder against a loopback /embeddings server, building from settings, and the
choice of local runtime (the fastest available, the fallbacks, a runtime named by the settings)."""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from ai_search_server.app import create_app
from ai_search_server.outbound import BlockingClient, GuardedClient, OutboundPolicy, blocking_client
from ai_search_server.retrieval import minilm_int8
from ai_search_server.retrieval.embedder import (
    MAX_EMBEDDING_BATCH_TEXTS,
    EmbedderUnavailable,
    EmbeddingFailed,
    OpenAIEmbedder,
)
from ai_search_server.retrieval.local_embedder import AUTO, LOCAL_RUNTIMES, load_local_embedder
from ai_search_server.retrieval.minilm import (
    MINILM_DIMENSIONS,
    MINILM_MODEL_ID,
    MiniLMEmbedder,
    packaged_model_dir,
)
from ai_search_server.retrieval.minilm_int8 import MINILM_INT8_MODEL_ID
from ai_search_server.retrieval.minilm_onnx import OnnxMiniLMEmbedder
from ai_search_server.retrieval.pipeline_client import RemotePipeline
from ai_search_server.retrieval.wiring import SearchHandle, build_embedder
from ai_search_server.settings import Settings, SettingsError, load_settings
from ai_search_server.settings_docs import settings_table

from ._search_support import UvicornThread
from .conftest import Workspace

LOOPBACK = OutboundPolicy(allow_hosts=("127.0.0.1",))


class FakeEmbeddings:
    """POST /v1/embeddings: vector [len(text), 1, 0] per input, answered in reverse order with `index`."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[dict[str, Any]] = []

    async def embeddings(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append({"auth": request.headers.get("authorization"), "body": body})
        if self.mode == "500":
            return JSONResponse({"error": {"message": "quota"}}, status_code=500)
        items = [{"index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(body["input"])]
        if self.mode == "short":
            items = items[:-1]
        if self.mode == "wide":
            items = [{**item, "embedding": [*item["embedding"], 0.0]} for item in items]
        if self.mode == "strings":
            items = [{**item, "embedding": ["a", "b", "c"]} for item in items]
        return JSONResponse({"object": "list", "data": list(reversed(items)), "model": body["model"]})


@pytest.fixture
def client() -> Iterator[BlockingClient]:
    """An outbound client on a loop of its own, as ``ai-search import`` has (the app lends its own)."""
    with blocking_client(LOOPBACK) as blocking:
        yield blocking


@pytest.fixture
def fake() -> Iterator[tuple[FakeEmbeddings, str]]:
    server = FakeEmbeddings()
    app = Starlette(routes=[Route("/v1/embeddings", server.embeddings, methods=["POST"])])
    with UvicornThread(app) as running:
        yield server, f"{running.url}/v1"


def test_vectors_come_back_in_input_order_and_unit_length(
    fake: tuple[FakeEmbeddings, str], client: BlockingClient
) -> None:
    server, url = fake
    embedder = OpenAIEmbedder(url, "nomic-embed-text", "sk-test", client=client)
    vectors = embedder.embed(["abc", "a", "abcdefg"])
    assert embedder.dimensions == 3
    expected = np.array([[3, 1, 0], [1, 1, 0], [7, 1, 0]], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected)
    assert server.requests[0]["auth"] == "Bearer sk-test"
    assert server.requests[0]["body"] == {"model": "nomic-embed-text", "input": ["abc", "a", "abcdefg"]}
    assert embedder.model_id == "openai:nomic-embed-text"


def test_long_inputs_are_sent_in_batches(fake: tuple[FakeEmbeddings, str], client: BlockingClient) -> None:
    server, url = fake
    embedder = OpenAIEmbedder(url, "m", client=client)
    vectors = embedder.embed([f"text {n}" for n in range(MAX_EMBEDDING_BATCH_TEXTS * 2 + 1)])
    assert vectors.shape == (MAX_EMBEDDING_BATCH_TEXTS * 2 + 1, 3)
    assert [len(r["body"]["input"]) for r in server.requests] == [MAX_EMBEDDING_BATCH_TEXTS] * 2 + [1]
    assert server.requests[0]["auth"] is None


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        pytest.param("500", "embeddings endpoint failed", id="server-error"),
        pytest.param("short", "without 2 items", id="one-vector-missing"),
        pytest.param("strings", "not lists of numbers", id="vectors-not-numbers"),
    ],
)
def test_a_bad_answer_is_an_embedding_failure(
    fake: tuple[FakeEmbeddings, str], client: BlockingClient, mode: str, message: str
) -> None:
    server, url = fake
    server.mode = mode
    embedder = OpenAIEmbedder(url, "m", client=client)
    with pytest.raises(EmbeddingFailed, match=message):
        embedder.embed(["a", "b"])


def test_a_change_of_dimensions_is_refused(fake: tuple[FakeEmbeddings, str], client: BlockingClient) -> None:
    server, url = fake
    embedder = OpenAIEmbedder(url, "m", client=client)
    embedder.embed(["a"])
    server.mode = "wide"
    with pytest.raises(EmbeddingFailed, match="4 dimensions, expected 3"):
        embedder.embed(["a"])


def test_a_client_whose_loop_has_stopped_is_an_embedding_failure(fake: tuple[FakeEmbeddings, str]) -> None:
    """After the app (here: the command's loop) shut down, the index's thread gets an error it retries,
    not a hang or a crash."""
    _server, url = fake
    with blocking_client(LOOPBACK) as stopped:
        pass
    with pytest.raises(EmbeddingFailed, match="outbound client has stopped"):
        OpenAIEmbedder(url, "m", client=stopped).embed(["a"])


@pytest.mark.parametrize(
    ("base_url", "model"),
    [pytest.param("", "m", id="no-base-url"), pytest.param("http://127.0.0.1:9", " ", id="no-model")],
)
def test_an_unconfigured_endpoint_is_unavailable(base_url: str, model: str, client: BlockingClient) -> None:
    with pytest.raises(EmbedderUnavailable, match="embedding_base_url and embedding_model"):
        OpenAIEmbedder(base_url, model, client=client)


@pytest.mark.parametrize(
    ("overrides", "kind"),
    [
        pytest.param({"embedder": "none"}, type(None), id="none-means-keyword-only"),
        pytest.param(
            {"embedder": "openai", "embedding_base_url": "http://127.0.0.1:9/v1", "embedding_model": "m"},
            OpenAIEmbedder,
            id="openai-configured",
        ),
    ],
)
def test_build_embedder_from_settings(
    settings: Settings, client: BlockingClient, overrides: dict[str, Any], kind: type
) -> None:
    embedder = build_embedder(dataclasses.replace(settings, **overrides), client)
    assert isinstance(embedder, kind)


@pytest.mark.anyio
async def test_a_configured_remote_pipeline_is_used_instead_of_the_index(
    settings: Settings, workspace: Workspace, data_dir: Path
) -> None:
    remote = dataclasses.replace(
        settings,
        pipeline_base_url="https://pipeline.example/api",
        pipeline_id="p",
        pipeline_api_key="k",
        pipeline_api_key_secret="s",
    )
    async with GuardedClient(LOOPBACK) as outbound:
        handle = SearchHandle(remote, workspace.store, outbound=outbound, data_dir=data_dir)
        service = await handle.get()
        try:
            assert isinstance(service.pipeline, RemotePipeline)
            assert not (data_dir / "index.db").exists()
        finally:
            await handle.aclose()


def test_the_app_builds_the_index_at_start_up_and_serves_the_pipeline(
    settings: Settings, workspace: Workspace, data_dir: Path
) -> None:
    served = dataclasses.replace(
        settings,
        embedder="none",
        embedded_pipeline_http=True,
        embedded_pipeline_api_key="k-1",
        embedded_pipeline_api_key_secret="s-1",
    )
    app = create_app(served, workspace.store)
    with TestClient(app, base_url="http://testserver") as client:
        handle = app.state.services.search
        assert handle.index is not None  # built by the lifespan, before any request
        assert (data_dir / "index.db").exists()
        found = client.get(
            "/api/v1/ai.search", params={"query": "deploy"}, headers=workspace["alice"].headers
        )
        assert found.status_code == 200
        assert found.json()["meta"]["retrieval"]["branches"] == {"keyword": "ok", "semantic": "unavailable"}
        body = {
            "query": "deploy",
            "type": "search",
            "filters": {"room_id": {"$eq": workspace.rooms["ops"].id}},
            "params": {"k": 5},
        }
        answer = client.post(
            "/pipeline/v1/pipelines/embedded/search",
            json=body,
            headers={"X-API-KEY": "k-1", "X-API-KEY-SECRET": "s-1"},
        )
        assert answer.status_code == 200
        assert [item["id"] for item in answer.json()["results"]] == [workspace.messages["ops-3"].id]
        refused = client.post("/pipeline/v1/pipelines/embedded/search", json=body)
        assert refused.status_code == 401
    assert handle.index is None  # closed by the lifespan


def test_the_pipeline_is_not_served_by_default(settings: Settings, workspace: Workspace) -> None:
    app = create_app(dataclasses.replace(settings, embedder="none"), workspace.store)
    client = TestClient(app, base_url="http://testserver")
    response = client.post("/pipeline/v1/pipelines/embedded/search", json={})
    assert response.status_code == 404


def test_index_now_indexes_the_data_dir_for_a_batch_job(
    settings: Settings, workspace: Workspace, data_dir: Path
) -> None:
    from ai_search_server.retrieval.wiring import index_now

    count = index_now(
        dataclasses.replace(settings, embedder="none"),
        workspace.store,
        data_dir,
        policy=LOOPBACK,
        progress=False,
    )
    assert count == len(workspace.messages)
    assert (data_dir / "index.db").exists()


def test_index_now_embeds_through_one_client_of_its_own(
    settings: Settings, workspace: Workspace, data_dir: Path, fake: tuple[FakeEmbeddings, str]
) -> None:
    """``ai-search import`` has no app: the OpenAI-compatible embedder gets a client for the job."""
    from ai_search_server.retrieval.wiring import index_now

    server, url = fake
    openai = dataclasses.replace(settings, embedder="openai", embedding_base_url=url, embedding_model="m")
    assert index_now(openai, workspace.store, data_dir, policy=LOOPBACK, progress=False) == len(
        workspace.messages
    )
    embedded = sum(len(request["body"]["input"]) for request in server.requests)
    assert embedded >= len({m.text for m in workspace.messages.values()})


def test_the_app_embeds_through_its_one_outbound_client(
    settings: Settings, workspace: Workspace, fake: tuple[FakeEmbeddings, str]
) -> None:
    """The index's thread calls the app's client (its policy, pool and call cap), not one of its own."""
    server, url = fake
    openai = dataclasses.replace(
        settings,
        embedder="openai",
        embedding_base_url=url,
        embedding_model="m",
        outbound_allow_hosts=["127.0.0.1"],
    )
    app = create_app(openai, workspace.store)
    with TestClient(app, base_url="http://testserver") as http:
        index = app.state.services.search.index
        assert index is not None and index.wait_until_embedded(30)
        found = http.get("/api/v1/ai.search", params={"query": "deploy"}, headers=workspace["alice"].headers)
        assert found.status_code == 200
        assert found.json()["meta"]["retrieval"]["branches"] == {"keyword": "ok", "semantic": "ok"}
        embedder = index.embedder
        assert isinstance(embedder, OpenAIEmbedder)
        assert embedder.client.client is app.state.services.outbound
    assert server.requests  # documents at start-up, then the query


def _block_onnxruntime(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine without the wheel: `import onnxruntime` raises ImportError."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)


@pytest.fixture(scope="module")
def local_model_installed() -> None:
    try:
        packaged_model_dir()
    except EmbedderUnavailable as exc:
        pytest.skip(str(exc))


@pytest.mark.slow
def test_auto_picks_int8_on_onnx_runtime_and_says_so(
    local_model_installed: None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="ai_search_server.retrieval.local_embedder"):
        embedder = load_local_embedder("auto", threads=1)
    assert isinstance(embedder, OnnxMiniLMEmbedder)
    assert embedder.precision == "int8"
    assert embedder.model_id == MINILM_INT8_MODEL_ID
    assert "all-MiniLM-L6-v2 on onnx-int8 with 1 threads" in caplog.text
    assert "the fastest available" in caplog.text


@pytest.mark.slow
def test_auto_falls_back_to_numpy_without_onnx_runtime(
    local_model_installed: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _block_onnxruntime(monkeypatch)
    with caplog.at_level(logging.INFO, logger="ai_search_server.retrieval.local_embedder"):
        embedder = load_local_embedder("auto")
    assert isinstance(embedder, MiniLMEmbedder)
    assert embedder.model_id == MINILM_MODEL_ID
    assert "onnx-int8 is not available here (onnxruntime is not installed" in caplog.text
    assert "all-MiniLM-L6-v2 on numpy" in caplog.text
    assert embedder.embed(["deploy failed"]).shape == (1, MINILM_DIMENSIONS)


@pytest.mark.slow
def test_auto_falls_back_to_float32_when_the_int8_ranges_do_not_fit_the_weights(
    local_model_installed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(minilm_int8, "weights_digest", lambda path: "0" * 64)
    embedder = load_local_embedder("auto", threads=1)
    assert isinstance(embedder, OnnxMiniLMEmbedder)
    assert embedder.precision == "float32"
    assert embedder.model_id == MINILM_MODEL_ID  # the numpy model's vectors: nothing to re-embed


def test_a_named_runtime_that_cannot_load_is_unavailable_not_replaced(
    monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    _block_onnxruntime(monkeypatch)
    with pytest.raises(EmbedderUnavailable, match="onnxruntime is not installed"):
        load_local_embedder("onnx")
    # From the settings the search goes keyword-only, as for any embedder that cannot start.
    local = dataclasses.replace(settings, embedder="local", embedder_runtime="onnx")
    assert build_embedder(local, None) is None


def test_an_unknown_runtime_is_refused(settings: Settings) -> None:
    with pytest.raises(ValueError, match="unknown local embedder runtime 'gpu'"):
        load_local_embedder("gpu")
    with pytest.raises(
        SettingsError,
        match=r"'embedder_runtime' \(env AI_SEARCH_EMBEDDER_RUNTIME\): expected auto, onnx-int8, onnx or numpy",
    ):
        load_settings(environ={"AI_SEARCH_EMBEDDER_RUNTIME": "gpu"})
    with pytest.raises(SettingsError, match="'embedder_runtime': expected auto, onnx-int8, onnx or numpy"):
        dataclasses.replace(settings, embedder_runtime="gpu")


def test_the_settings_offer_every_runtime() -> None:
    help_text = next(row[3] for row in settings_table() if row[0] == "embedder_runtime")
    for runtime in (AUTO, *LOCAL_RUNTIMES):
        assert load_settings(environ={"AI_SEARCH_EMBEDDER_RUNTIME": runtime}).embedder_runtime == runtime
        assert runtime in help_text
