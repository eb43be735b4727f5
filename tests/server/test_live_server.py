"""The real server on loopback: ``ai-search serve`` in a subprocess, spoken to over TCP.

In-process tests cover behaviour in depth; these prove the same app holds when uvicorn serves it,
and that several processes share one rate-limit budget through Redis.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ai_search_server.store import open_store

from ._live import running_redis, running_server
from .conftest import Workspace, build_workspace, database_env

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def live_database(module_database_url: str) -> str:
    """The served workspace's PostgreSQL database under ``--store=postgres`` (empty: SQLite)."""
    return module_database_url


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory, live_database: str) -> tuple[Path, Workspace]:
    data = tmp_path_factory.mktemp("live") / "data"
    store = open_store(data, database_url=live_database)
    ws = build_workspace(store)
    store.close()
    assert (data / "workspace.db").exists() is not bool(live_database)  # the store the run asked for
    return data, ws


@pytest.fixture(scope="module")
def server(seeded: tuple[Path, Workspace], live_database: str) -> Iterator[str]:
    # The server finds its database as an operator's would: in the environment.
    with running_server(seeded[0], env=database_env(live_database)) as base:
        yield base


def test_login_and_tokens_over_tcp(server: str, seeded: tuple[Path, Workspace]) -> None:
    ws = seeded[1]
    r = httpx.post(f"{server}/api/v1/login", json={"user": "bob", "password": ws["bob"].password})
    assert r.status_code == 200
    data = r.json()["data"]
    session = {"X-User-Id": data["userId"], "X-Auth-Token": data["authToken"]}
    assert httpx.get(f"{server}/api/v1/me", headers=session).json()["username"] == "bob"
    assert httpx.get(f"{server}/api/v1/me", headers=ws["bob"].pat_headers).status_code == 200
    assert httpx.post(f"{server}/api/v1/logout", headers=session).status_code == 200
    assert httpx.get(f"{server}/api/v1/me", headers=session).status_code == 401


def test_scoping_holds_over_tcp(server: str, seeded: tuple[Path, Workspace]) -> None:
    ws = seeded[1]
    secret = ws.messages["secret-5"].id
    ok = httpx.get(f"{server}/api/v1/chat.getMessage", params={"msgId": secret}, headers=ws["bob"].headers)
    hidden = httpx.get(
        f"{server}/api/v1/chat.getMessage", params={"msgId": secret}, headers=ws["alice"].headers
    )
    assert ok.status_code == 200 and hidden.status_code == 404


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        pytest.param(None, 200, id="no-origin-native-client"),
        pytest.param("SITE", 200, id="same-origin"),
        pytest.param("https://evil.example", 403, id="foreign-origin"),
        pytest.param("null", 403, id="null-origin"),
    ],
)
def test_origin_rules_over_tcp(
    server: str, seeded: tuple[Path, Workspace], origin: str | None, status: int
) -> None:
    headers = dict(seeded[1]["alice"].headers)
    if origin is not None:
        headers["Origin"] = server if origin == "SITE" else origin
    assert httpx.get(f"{server}/api/v1/me", headers=headers).status_code == status


def test_the_page_and_its_runtime_are_served_with_the_right_headers(server: str) -> None:
    page = httpx.get(f"{server}/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "'wasm-unsafe-eval'" in csp and "'unsafe-eval'" not in csp and "'unsafe-inline'" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    wasm = next((ROOT / "static" / "vendor").glob("pyodide-*/pyodide.asm.wasm"), None)
    if wasm is None:
        pytest.skip("static/vendor is not set up (scripts/setup vendors it)")
    url = f"{server}/{wasm.relative_to(ROOT).as_posix()}"
    with httpx.stream("GET", url, headers={"Accept-Encoding": "gzip"}) as r:
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/wasm"
        assert r.headers["content-encoding"] == "gzip"
        assert "immutable" in r.headers["cache-control"]


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not installed")
def test_two_processes_share_one_rate_limit_budget_through_redis(tmp_path: Path) -> None:
    """Login allows 10 attempts a minute per client address; two servers sharing Redis allow 10 in all.
    (A name per attempt: one name's own budget, the next test's subject, would end it sooner.)"""
    with running_redis(tmp_path) as redis_url:
        env = {"AI_SEARCH_RATE_LIMIT_STORAGE": redis_url}
        data_a, data_b = tmp_path / "a", tmp_path / "b"
        with running_server(data_a, env=env) as a, running_server(data_b, env=env) as b:
            statuses = [
                httpx.post(f"{base}/api/v1/login", json={"user": f"x{i}", "password": "y"}).status_code
                for i, base in enumerate([a, b] * 6)
            ]
    assert statuses[:10] == [401] * 10
    assert statuses[10:] == [429, 429]


def test_two_processes_share_one_accounts_sign_in_wait_through_redis(tmp_path: Path) -> None:
    """Five failures for one username, alternating between two servers on one Redis, start its wait
    on both: the next attempt is refused by either, with Retry-After (login_throttle.py). The first
    wait is 1 s of real time, so on a machine too busy to send the sixth within it the seventh (2 s)
    is the one refused."""
    with running_redis(tmp_path) as redis_url:
        env = {"AI_SEARCH_RATE_LIMIT_STORAGE": redis_url}
        with running_server(tmp_path / "a", env=env) as a, running_server(tmp_path / "b", env=env) as b:
            answers = [
                httpx.post(f"{base}/api/v1/login", json={"user": "x", "password": "y"})
                for base in [a, b, a, b, a, b, a]
            ]
    statuses = [r.status_code for r in answers]
    assert statuses[:5] == [401] * 5
    refused = [r for r in answers[5:] if r.status_code == 429]
    assert refused and refused[0].headers["retry-after"] in ("1", "2")


# Seconds a message posted through one server may take to be found by keyword through another: the
# index follows the store's change log every second (FOLLOW_INTERVAL_SECONDS), plus a busy machine.
CROSS_PROCESS_SEARCH_WAIT_S = 20.0


def test_a_message_posted_through_one_server_is_read_and_found_through_another(
    tmp_path: Path, seeded: tuple[Path, Workspace], live_database: str
) -> None:
    """Two server processes on one workspace: on PostgreSQL each with its own data dir (its own
    search index), on SQLite both on the same data dir."""
    ws = seeded[1]
    env = database_env(live_database)
    if live_database:
        dirs = (tmp_path / "a", tmp_path / "b")
    else:
        dirs = (tmp_path / "data", tmp_path / "data")
        shutil.copytree(seeded[0], dirs[0])
    with running_server(dirs[0], env=env) as a, running_server(dirs[1], env=env) as b:
        posted = httpx.post(
            f"{a}/api/v1/chat.postMessage",
            json={"roomId": ws.rooms["ops"].id, "text": "the zanzibar failover drill starts at noon"},
            headers=ws["alice"].headers,
        )
        assert posted.status_code == 200, posted.text
        message_id = posted.json()["message"]["_id"]
        read = httpx.get(f"{b}/api/v1/chat.getMessage", params={"msgId": message_id}, headers=ws["carol"].headers)
        assert read.status_code == 200 and "zanzibar" in read.json()["message"]["msg"]
        deadline = time.monotonic() + CROSS_PROCESS_SEARCH_WAIT_S
        found: list[str] = []
        while time.monotonic() < deadline and message_id not in found:
            answer = httpx.get(
                f"{b}/api/v1/ai.search",
                params={"query": "zanzibar failover", "searchType": "keyword"},
                headers=ws["carol"].headers,
            )
            assert answer.status_code == 200, answer.text
            found = [hit["_id"] for hit in answer.json()["intelligent"]]
            time.sleep(0.5)
        assert message_id in found
        hidden = httpx.get(
            f"{b}/api/v1/ai.search", params={"query": "zanzibar failover"}, headers=ws["bob"].headers
        )
        assert message_id not in [hit["_id"] for hit in hidden.json()["intelligent"]]  # bob is not in #ops
    if live_database:
        assert not (dirs[0] / "workspace.db").exists() and (dirs[1] / "index.db").exists()
