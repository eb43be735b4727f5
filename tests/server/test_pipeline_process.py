"""One pipeline process shared by two proxies on one PostgreSQL: ``ai-search pipeline serve`` for real.

The pipeline process keeps the only index (it follows the database's change log and embeds with the
packaged model); the two ``ai-search serve`` proxies point ``pipeline_base_url`` at it and keep none.
A message posted through one proxy is found through the other by keyword and by meaning; the proxy
hands the pipeline the caller's scope, so nobody gets a room they are not in; the pipeline stopped,
the proxies degrade with the remote pipeline's notice and recover once it is back on its port.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from ai_search_server.retrieval.floor import CALIBRATED_FLOORS, MODEL_FIELD
from ai_search_server.store import open_store
from tests._postgres import PostgresCluster

from ._live import START_TIMEOUT_SECONDS, free_port
from .conftest import Workspace, build_workspace

pytestmark = pytest.mark.slow

KEY, SECRET = "pipeline-key-0123456789", "pipeline-secret-0123456789"
# How long after a post the other proxy may take to find it: the follower's second, the embedding.
FIND_WITHIN_SECONDS = 20.0
# How long a proxy may take to answer from the pipeline again once it is back on its port.
RECOVER_WITHIN_SECONDS = 30.0
POSTED = "the primary database crashed at noon so we promoted the replica"
# Shares no word with POSTED: only the semantic branch can find it.
PARAPHRASE = "why did our db go down"
SECRET_WORDS = "acquisition closes"  # the only message of #secret (bob and carol)
GIBBERISH = "xyzzyplugh qwertzuiop"  # near nothing: the floor must leave it no result
MODEL_LIBRARY = "onnxruntime"  # what a process that loaded the local model has mapped


@dataclass
class Process:
    proc: subprocess.Popen[bytes]
    base: str
    log: Path

    def maps(self) -> str:
        return Path(f"/proc/{self.proc.pid}/maps").read_text()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _wait(url: str, process: Process, ready: Any) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.proc.poll() is not None:
            raise RuntimeError(f"exited with {process.proc.returncode}:\n{process.log.read_text(errors='replace')}")
        try:
            if ready(httpx.get(url, timeout=2.0)):
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    process.stop()
    raise RuntimeError(f"not up within {START_TIMEOUT_SECONDS} s:\n{process.log.read_text(errors='replace')}")


@contextmanager
def started(args: list[str], *, env: Mapping[str, str], log: Path, probe: str, ready: Any) -> Iterator[Process]:
    full_env = {**os.environ, "AI_SEARCH_LOG_LEVEL": "info", **env}
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ai_search_server", *args], stdout=out, stderr=subprocess.STDOUT, env=full_env
        )
    port = args[args.index("--port") + 1]
    process = Process(proc, f"http://127.0.0.1:{port}", log)
    try:
        _wait(process.base + probe, process, ready)
        yield process
    finally:
        process.stop()


def pipeline_env(database: str) -> dict[str, str]:
    return {
        "AI_SEARCH_DATABASE_URL": database,
        "AI_SEARCH_EMBEDDED_PIPELINE_API_KEY": KEY,
        "AI_SEARCH_EMBEDDED_PIPELINE_API_KEY_SECRET": SECRET,
        "AI_SEARCH_EMBEDDER": "local",
    }


@contextmanager
def pipeline_process(data: Path, database: str, port: int) -> Iterator[Process]:
    with started(
        ["pipeline", "serve", "--data", str(data), "--port", str(port)],
        env=pipeline_env(database),
        log=data.parent / "pipeline.log",
        probe="/pipeline/v1/health",
        ready=lambda r: r.status_code == 200 and r.json()["status"] == "ready",
    ) as process:
        yield process


@contextmanager
def proxy(data: Path, database: str, pipeline_port: int) -> Iterator[Process]:
    port = free_port()
    env = {
        "AI_SEARCH_DATABASE_URL": database,
        "AI_SEARCH_PIPELINE_BASE_URL": f"http://127.0.0.1:{pipeline_port}/pipeline/v1",
        "AI_SEARCH_PIPELINE_ID": "embedded",
        "AI_SEARCH_PIPELINE_API_KEY": KEY,
        "AI_SEARCH_PIPELINE_API_KEY_SECRET": SECRET,
        "AI_SEARCH_OUTBOUND_ALLOW_HOSTS": "127.0.0.1",
        # Left at the default on purpose: a proxy with a remote pipeline must not load it anyway.
        "AI_SEARCH_EMBEDDER": "local",
    }
    with started(
        ["serve", "--data", str(data), "--port", str(port)],
        env=env,
        log=data.parent / f"proxy-{port}.log",
        probe="/openapi.json",
        ready=lambda r: r.status_code == 200,
    ) as process:
        yield process


@dataclass
class Deployment:
    ws: Workspace
    pipeline: Process
    pipeline_data: Path
    pipeline_port: int
    proxies: tuple[Process, Process]
    proxy_data: tuple[Path, Path]
    database: str


@pytest.fixture(scope="module")
def deployment(pg_cluster: PostgresCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("shared-pipeline")
    with pg_cluster.fresh_database() as database:
        store = open_store(root / "seed", database_url=database)
        ws = build_workspace(store)
        store.close()
        port = free_port()
        with (
            pipeline_process(root / "pipeline", database, port) as pipeline,
            proxy(root / "proxy1", database, port) as one,
            proxy(root / "proxy2", database, port) as two,
        ):
            yield Deployment(ws, pipeline, root / "pipeline", port, (one, two), (root / "proxy1", root / "proxy2"), database)


def search(base: str, headers: dict[str, str], query: str, **params: str) -> dict[str, Any]:
    r = httpx.get(
        f"{base}/api/v1/ai.search", params={"query": query, "intelligentCount": "5", **params}, headers=headers, timeout=30
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def texts(body: dict[str, Any]) -> list[str]:
    return [item["text"] for item in body["intelligent"]]


def pipeline_call(deployment: Deployment, body: dict[str, Any], **headers: str) -> httpx.Response:
    keys = {"X-API-KEY": KEY, "X-API-KEY-SECRET": SECRET}
    return httpx.post(
        f"{deployment.pipeline.base}/pipeline/v1/pipelines/embedded/search",
        json=body,
        headers={**keys, **headers},
        timeout=30,
    )


def test_a_message_posted_through_one_proxy_is_found_through_the_other_by_keyword_and_meaning(
    deployment: Deployment,
) -> None:
    one, two = deployment.proxies
    alice = deployment.ws["alice"].headers
    ops = deployment.ws.rooms["ops"].id
    posted = httpx.post(f"{one.base}/api/v1/chat.postMessage", json={"roomId": ops, "text": POSTED}, headers=alice)
    assert posted.status_code == 200, posted.text
    found_keyword = found_meaning = False
    deadline = time.monotonic() + FIND_WITHIN_SECONDS
    while not (found_keyword and found_meaning):
        found_keyword = found_keyword or POSTED in texts(search(two.base, alice, "replica promoted", searchType="keyword"))
        meaning = search(two.base, alice, PARAPHRASE, searchType="semantic")
        found_meaning = found_meaning or (texts(meaning)[:1] == [POSTED])
        assert time.monotonic() < deadline, f"not found within {FIND_WITHIN_SECONDS} s: keyword {found_keyword}"
        time.sleep(0.3)
    hybrid = search(two.base, alice, PARAPHRASE)
    assert texts(hybrid)[0] == POSTED
    assert hybrid["meta"]["retrieval"]["pipeline"] == "remote"


def test_proxies_with_a_remote_pipeline_keep_no_index_and_load_no_model(deployment: Deployment) -> None:
    for data, process in zip(deployment.proxy_data, deployment.proxies, strict=True):
        assert not (data / "index.db").exists()
        assert MODEL_LIBRARY not in process.maps()
    # The pipeline process is the one that embeds (documents and queries).
    assert (deployment.pipeline_data / "index.db").exists()
    assert MODEL_LIBRARY in deployment.pipeline.maps()


def test_the_shared_pipeline_answers_only_from_the_scope_the_proxy_gives(deployment: Deployment) -> None:
    ws = deployment.ws
    secret_room = ws.rooms["secret"].id
    every_room = [room.id for room in ws.rooms.values()]
    alice_rooms = [ws.rooms[name].id for name in ("general", "ops", "dm")]

    def keyword_rooms(rooms: list[str] | None) -> httpx.Response:
        body: dict[str, Any] = {"query": SECRET_WORDS, "type": "search", "params": {"k": 10}}
        if rooms is not None:
            body["filters"] = {"room_id": {"$in": rooms}}
        return pipeline_call(deployment, body)

    # The pipeline holds #secret and answers from it when the scope names it...
    wide = keyword_rooms(every_room)
    assert wide.status_code == 200, wide.text
    assert secret_room in {r["metadata"]["room_id"] for r in wide.json()["results"]}
    # ...never outside the rooms the scope names, and never without a scope (it fails closed).
    narrow = keyword_rooms(alice_rooms)
    assert narrow.status_code == 200 and narrow.json()["results"] == []
    assert keyword_rooms(None).status_code == 400
    # Through either proxy, alice (not in #secret) never gets it, by any branch; bob (a member) does.
    for process in deployment.proxies:
        for search_type in ("keyword", "semantic", "hybrid"):
            found = search(process.base, ws["alice"].headers, SECRET_WORDS, searchType=search_type)
            assert secret_room not in {item["rid"] for item in found["intelligent"]}
        assert any("acquisition" in t for t in texts(search(process.base, ws["bob"].headers, SECRET_WORDS)))


def test_the_pipeline_holds_the_server_to_server_rules(deployment: Deployment) -> None:
    base = deployment.pipeline.base
    body = {"query": "deploy", "type": "search"}
    assert pipeline_call(deployment, body, **{"X-API-KEY": "wrong"}).status_code == 401
    assert pipeline_call(deployment, body, Host="evil.example").status_code == 421
    assert pipeline_call(deployment, body, Origin="https://evil.example").status_code == 403
    assert pipeline_call(deployment, body, **{"Sec-Fetch-Site": "cross-site"}).status_code == 403
    # No user routes, no page: only the contract and the health answer.
    for path in ("/", "/api/v1/ai.search", "/api/v1/login", "/openapi.json", "/api/v1/mcp"):
        assert httpx.get(base + path).status_code == 404
    bare = httpx.get(f"{base}/pipeline/v1/health").json()
    assert bare == {"status": "ready"}  # counts only for the key holders
    keyed = httpx.get(f"{base}/pipeline/v1/health", headers={"X-API-KEY": KEY, "X-API-KEY-SECRET": SECRET}).json()
    assert keyed["status"] == "ready" and keyed["messages"] >= 7 and keyed["semantic"] is True


@contextmanager
def one_process(data: Path, database: str) -> Iterator[Process]:
    """``ai-search serve`` with its own index and the local model: the topology a proxy must match."""
    with started(
        ["serve", "--data", str(data), "--port", str(free_port())],
        env={"AI_SEARCH_DATABASE_URL": database, "AI_SEARCH_EMBEDDER": "local"},
        log=data.parent / "one-process.log",
        probe="/openapi.json",
        ready=lambda r: r.status_code == 200,
    ) as process:
        yield process


def test_a_proxy_floors_semantic_matches_as_one_process_does(deployment: Deployment) -> None:
    """The pipeline names its model in each semantic answer, and the proxy applies its calibrated
    floor: gibberish answers nothing through both, a paraphrase still finds its message."""
    alice = deployment.ws["alice"].headers
    ops = deployment.ws.rooms["ops"].id
    answer = pipeline_call(
        deployment,
        {"query": GIBBERISH, "type": "similarity", "filters": {"room_id": {"$in": [ops]}}, "params": {"k": 5}},
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()[MODEL_FIELD] in CALIBRATED_FLOORS
    assert answer.json()["results"], "the nearest neighbours come back: the floor is the proxy's to apply"
    proxied = search(deployment.proxies[0].base, alice, GIBBERISH)
    root = deployment.proxy_data[0].parent
    with one_process(root / "one", deployment.database) as single:
        alone = search(single.base, alice, GIBBERISH)
        assert texts(alone) == [] and texts(proxied) == []
        for mode in ("semantic", "hybrid"):
            assert POSTED in texts(search(deployment.proxies[1].base, alice, PARAPHRASE, searchType=mode))
            assert POSTED in texts(search(single.base, alice, PARAPHRASE, searchType=mode))


def test_proxies_degrade_while_the_pipeline_is_down_and_recover_when_it_is_back(deployment: Deployment) -> None:
    alice = deployment.ws["alice"].headers
    deployment.pipeline.stop()
    try:
        for process in deployment.proxies:
            body = search(process.base, alice, "deploy failed")
            retrieval = body["meta"]["retrieval"]
            assert body["intelligent"] == [] and retrieval["degraded"] is True
            assert "The keyword search could not be reached; showing what else was found." in retrieval["notices"]
            assert "Traceback" not in str(body)
    finally:
        with pipeline_process(deployment.pipeline_data, deployment.database, deployment.pipeline_port) as back:
            deployment.pipeline = back
            deadline = time.monotonic() + RECOVER_WITHIN_SECONDS
            for process in deployment.proxies:
                while True:
                    body = search(process.base, alice, "deploy failed")
                    if not body["meta"]["retrieval"]["degraded"] and body["intelligent"]:
                        break
                    assert time.monotonic() < deadline, body["meta"]
                    time.sleep(0.3)
                assert "ERR_CONN_RESET" in texts(body)[0] or any("deploy" in t for t in texts(body))


def run_cli(*args: str, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ai_search_server", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env},
    )


def test_the_pipeline_refuses_to_start_without_keys(tmp_path: Path) -> None:
    done = run_cli("pipeline", "serve", "--data", str(tmp_path / "d"), "--port", str(free_port()), env={})
    assert done.returncode == 2
    assert "embedded_pipeline_api_key" in done.stderr and "Traceback" not in done.stderr


def test_the_pipeline_refuses_to_start_on_an_unreachable_database(tmp_path: Path) -> None:
    env = {**pipeline_env(f"postgresql://nobody@/absent?host={tmp_path}"), "AI_SEARCH_EMBEDDER": "none"}
    done = run_cli("pipeline", "serve", "--data", str(tmp_path / "d"), "--port", str(free_port()), env=env)
    assert done.returncode == 2, done.stderr
    assert "absent" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.anyio
async def test_until_the_index_is_open_searches_and_health_answer_503(tmp_path: Path) -> None:
    """No lifespan has run here, so the index is still 'starting': the contract answers 503 with a
    sentence (the proxies degrade), the health answer says so, and nothing is a 500."""
    from ai_search_server.pipeline_process import create_pipeline_app
    from ai_search_server.settings import load_settings

    settings = load_settings(
        environ={},
        overrides={"embedded_pipeline_api_key": KEY, "embedded_pipeline_api_key_secret": SECRET, "embedder": "none"},
    )
    store = open_store(tmp_path / "data")
    try:
        app = create_pipeline_app(settings, store, tmp_path / "data", site_url="http://127.0.0.1:8001")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8001") as client:
            keys = {"X-API-KEY": KEY, "X-API-KEY-SECRET": SECRET}
            body = {"query": "deploy", "type": "search", "filters": {"room_id": {"$in": ["r"]}}, "params": {"k": 5}}
            searched = await client.post("/pipeline/v1/pipelines/embedded/search", json=body, headers=keys)
            assert searched.status_code == 503
            assert searched.json() == {"error": "the pipeline search is not available"}
            health = await client.get("/pipeline/v1/health", headers=keys)
            assert health.status_code == 503 and health.json() == {"status": "starting"}
        assert not (tmp_path / "data" / "index.db").exists()
    finally:
        store.close()
