"""Several stateless proxies on one PostgreSQL and one Redis: real ``ai-search serve`` processes.

Three proxies, each with its own data dir (its own search index), on one database of the test
cluster (``tests/_postgres.py``) and one ``redis-server`` (Debian's, ``scripts/setup --test``):

- a message posted through any proxy is found by search through every other, within seconds;
- a login session made through one proxy works and ends through the others;
- a rate limit, and the lockout of an address that guessed tokens, spent through some proxies
  refuses through the others;
- an answer made through one proxy is shared, read and rated through the others;
- an OAuth sign-in answered by one proxy is consented to through another (no sticky sessions);
- under a stream of concurrent writes spread over the three, one proxy is killed (SIGKILL): every
  write acknowledged with a 2xx is in the database, and the two others keep serving.

And ``ai-search serve --workers 2`` end to end: a post through its port, found by search after.

Cost: six proxy processes and two `--workers 2` servers in all (the three proxies that none of the
tests kills are shared by those tests); about 60 s on a 2-core machine at load 5 to 10, most of it
processes starting and a worker being replaced.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import pytest
import redis

from ai_search_server.store import open_store
from tests._postgres import PostgresCluster

from ._live import ServerProcess, running_redis, running_servers
from ._oauth_flow import OAuthClient
from .conftest import Workspace, build_workspace

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not installed"),
]

PROXIES = 3
# Seconds a message posted through one proxy may take to be found through another: each proxy's index
# reads the change log every second (FOLLOW_INTERVAL_SECONDS), plus a busy machine.
CROSS_PROXY_SEARCH_WAIT_S = 20.0
# The write stream of the kill test: writers at once, writes each (each writer is its own user, so
# the stream stays inside chat.postMessage's 60 a minute per user), and after how many acknowledged
# writes one proxy is killed.
WRITERS = 6
WRITES_PER_WRITER = 30
KILL_AFTER_ACKNOWLEDGED = 60
# Seconds the stream may take to reach that many acknowledged writes.
STREAM_WAIT_S = 60.0
# Seconds uvicorn's supervisor may take to notice a dead worker (it looks every 0.5 s) and to start
# its replacement (a fresh interpreter that imports the app and opens the store).
WORKER_RESTART_WAIT_S = 60.0
# Seconds one write may take before it counts as not acknowledged.
WRITE_TIMEOUT_S = 15.0
# Seconds any other request may take: behaviour is asserted, not speed, and a 2-core machine shared
# with other work (a worker starting beside the one answering) can be slow for a while.
REQUEST_TIMEOUT_S = 30.0
get = functools.partial(httpx.get, timeout=REQUEST_TIMEOUT_S)
post = functools.partial(httpx.post, timeout=REQUEST_TIMEOUT_S)


@dataclass
class Deployment:
    """The shared parts: the workspace's database (seeded) and the Redis the proxies share."""

    database_url: str
    redis_url: str
    workspace: Workspace
    root: Path

    @property
    def env(self) -> dict[str, str]:
        return {"AI_SEARCH_DATABASE_URL": self.database_url, "AI_SEARCH_RATE_LIMIT_STORAGE": self.redis_url}

    def data_dirs(self, name: str, count: int = PROXIES) -> list[Path]:
        return [self.root / name / f"proxy-{n}" / "data" for n in range(count)]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_redis(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(scope="module")
def deployment(
    pg_cluster: PostgresCluster, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    """One database with the test workspace for the module, and its Redis."""
    root = tmp_path_factory.mktemp("proxies")
    with pg_cluster.fresh_database() as url:
        store = open_store(root / "seed", database_url=url)
        try:
            workspace = build_workspace(store)
        finally:
            store.close()
        yield Deployment(url, redis_url, workspace, root)


@pytest.fixture(autouse=True)
def _fresh_budgets(redis_url: str) -> None:
    """Each test starts with every rate limit unspent (one test spends the login budget on purpose)."""
    redis.Redis.from_url(redis_url).flushdb()


# The public address every proxy of the trio is configured with, as behind one load balancer; no
# server listens on it: requests go to a proxy's own port with this Host header (RoundRobin below).
SITE_PORT = 1


@pytest.fixture(scope="module")
def trio(deployment: Deployment) -> Iterator[list[ServerProcess]]:
    """Three proxies for the tests that kill none of them (MCP and OAuth on, one site_url)."""
    env = {
        **deployment.env,
        "AI_SEARCH_SITE_URL": f"http://127.0.0.1:{SITE_PORT}",
        "AI_SEARCH_MCP_ENABLED": "true",
        "AI_SEARCH_MCP_OAUTH_ENABLED": "true",
    }
    with running_servers(deployment.data_dirs("trio"), env=env) as proxies:
        yield proxies
    for proxy in proxies:
        assert "Traceback" not in proxy.output(), proxy.output()


def found_by(base: str, headers: dict[str, str], query: str, message_id: str) -> bool:
    answer = get(
        f"{base}/api/v1/ai.search", params={"query": query, "searchType": "keyword"}, headers=headers
    )
    assert answer.status_code == 200, answer.text
    return message_id in [hit["_id"] for hit in answer.json()["intelligent"]]


def wait_until_found(base: str, headers: dict[str, str], query: str, message_id: str) -> None:
    deadline = time.monotonic() + CROSS_PROXY_SEARCH_WAIT_S
    while not found_by(base, headers, query, message_id):
        assert time.monotonic() < deadline, f"{message_id} not found through {base} in {CROSS_PROXY_SEARCH_WAIT_S} s"
        time.sleep(0.2)


def test_a_message_posted_through_any_proxy_is_found_through_every_other(
    deployment: Deployment, trio: list[ServerProcess]
) -> None:
    ws, proxies = deployment.workspace, trio
    words = ["zanzibar", "quokka", "xylophone"]
    # A login session made through one proxy works through the next and ends through the third.
    login = post(f"{proxies[0].url}/api/v1/login", json={"user": "bob", "password": ws["bob"].password})
    assert login.status_code == 200, login.text
    session = {"X-User-Id": login.json()["data"]["userId"], "X-Auth-Token": login.json()["data"]["authToken"]}
    assert get(f"{proxies[1].url}/api/v1/me", headers=session).json()["username"] == "bob"
    assert post(f"{proxies[2].url}/api/v1/logout", headers=session).status_code == 200
    assert get(f"{proxies[0].url}/api/v1/me", headers=session).status_code == 401
    posted: list[tuple[int, str, str]] = []
    for n, (proxy, word) in enumerate(zip(proxies, words, strict=True)):
        answer = post(
            f"{proxy.url}/api/v1/chat.postMessage",
            json={"roomId": ws.rooms["ops"].id, "text": f"the {word} failover drill starts at noon"},
            headers=ws["alice"].headers,
        )
        assert answer.status_code == 200, answer.text
        posted.append((n, word, answer.json()["message"]["_id"]))
    for n, word, message_id in posted:
        for other in (p for m, p in enumerate(proxies) if m != n):
            wait_until_found(other.url, ws["carol"].headers, f"{word} failover", message_id)
            # Scoping holds on every proxy: bob is not in #ops.
            assert not found_by(other.url, ws["bob"].headers, f"{word} failover", message_id)


def test_a_rate_limit_spent_through_one_proxy_refuses_through_the_others(
    deployment: Deployment, trio: list[ServerProcess]
) -> None:
    """The login route allows 10 attempts a minute per client address, and an address may fail to
    authenticate 10 times a minute (AUTH_FAILURE_RATE_LIMIT), whichever proxies answer. (A name per
    attempt: one name's own budget of failed sign-ins would end it sooner: login_throttle.py.)"""
    ws = deployment.workspace
    first, second, third = trio
    spent = [
        post(f"{first.url}/api/v1/login", json={"user": f"x{n}", "password": "y"}).status_code
        for n in range(10)
    ]
    refused = [post(f"{p.url}/api/v1/login", json={"user": "x", "password": "y"}) for p in (second, third)]
    assert spent == [401] * 10
    assert [r.status_code for r in refused] == [429, 429]
    assert all(int(r.headers["retry-after"]) >= 1 for r in refused)
    # Guessing tokens: the guesses spread over two proxies, the lockout holds on the third, even
    # for a valid token from that address (a right guess looks like a wrong one).
    alice = ws["alice"].user.id
    guesses = [
        get(f"{p.url}/api/v1/me", headers={"X-User-Id": alice, "X-Auth-Token": f"guess-{n}"}).status_code
        for n, p in enumerate([first, second] * 5)
    ]
    assert guesses == [401] * 10
    locked = get(f"{third.url}/api/v1/me", headers=ws["alice"].pat_headers)
    assert locked.status_code == 429 and int(locked.headers["retry-after"]) >= 1


def test_an_answer_made_on_one_proxy_is_shared_read_and_rated_through_the_others(
    deployment: Deployment, trio: list[ServerProcess]
) -> None:
    """Kept answers and their ratings are the store's: made through one proxy (extractive, no LLM
    configured), shared through the second, read and rated by another person through the third, and
    the rating seen through the first."""
    ws = deployment.workspace
    first, second, third = trio
    question = {
        "query": "how did the deploy go?",
        "messages": [{"_id": ws.messages["general-2"].id}, {"_id": ws.messages["ops-3"].id}],
    }
    made = post(f"{first.url}/api/v1/ai.search.answer", json=question, headers=ws["alice"].headers)
    assert made.status_code == 200, made.text
    answer_id = made.json()["answerId"]
    shared = post(f"{second.url}/api/v1/ai.search.answer.share", json={"answerId": answer_id}, headers=ws["alice"].headers)
    assert shared.status_code == 200, shared.text
    read = get(f"{third.url}/api/v1/ai.search.answer.get", params={"answerId": answer_id}, headers=ws["carol"].headers)
    assert read.status_code == 200 and read.json()["answer"] == made.json()["answer"], read.text
    rating = {"answerId": answer_id, "rating": "up", "reason": "found it"}
    assert post(f"{third.url}/api/v1/ai.search.answer.feedback", json=rating, headers=ws["carol"].headers).status_code == 200
    seen = get(f"{first.url}/api/v1/ai.search.answer.get", params={"answerId": answer_id}, headers=ws["carol"].headers)
    assert seen.json()["feedback"] == {"rating": "up", "reason": "found it"}


class RoundRobin(httpx.AsyncBaseTransport):
    """A load balancer in the client: each request goes to the next proxy, its Host header kept (the
    site's), as a reverse proxy in front of several servers passes it on. ``sent`` records which
    proxy answered each path."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.sent: list[tuple[str, str, int]] = []
        self._next = 0
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        port = self.ports[self._next % len(self.ports)]
        self._next += 1
        self.sent.append((request.method, request.url.path, port))
        body = await request.aread()
        forwarded = httpx.Request(
            request.method, request.url.copy_with(port=port), headers=request.headers, content=body
        )
        return await self._inner.handle_async_request(forwarded)

    async def aclose(self) -> None:
        await self._inner.aclose()


def test_an_oauth_sign_in_on_one_proxy_is_consented_to_on_another(
    deployment: Deployment, trio: list[ServerProcess]
) -> None:
    """Registration, sign-in, consent, code exchange and the MCP call each reach the next proxy; the
    consent ticket the sign-in issued is redeemed by another process (tickets live in Redis)."""
    ws = deployment.workspace
    transport = RoundRobin([p.port for p in trio])

    async def flow() -> httpx.Response:
        async with httpx.AsyncClient(transport=transport) as http:
            client = OAuthClient(http, f"http://127.0.0.1:{SITE_PORT}")
            assert (await client.register()).status_code == 201
            tokens = await client.tokens("alice", ws["alice"].password)
            return await http.post(
                f"{client.origin}/api/v1/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={
                    "Authorization": f"Bearer {tokens['access_token']}",
                    "Accept": "application/json",
                    "MCP-Protocol-Version": "2025-06-18",
                },
            )

    listed = anyio.run(flow)
    assert listed.status_code == 200, listed.text
    assert listed.json()["result"]["tools"], listed.text
    posts = [(path, port) for method, path, port in transport.sent if method == "POST" and path == "/authorize"]
    (sign_in, sign_in_port), (consent, consent_port) = posts
    assert sign_in == consent == "/authorize" and sign_in_port != consent_port


@dataclass
class WriteLog:
    """What the writers saw: each acknowledged write's id and text, and each proxy's outcomes."""

    acknowledged: dict[str, str] = field(default_factory=dict)
    refused: list[tuple[int, str]] = field(default_factory=list)  # (proxy index, what happened)
    after_kill: dict[int, list[int]] = field(default_factory=dict)  # proxy index -> statuses
    lock: threading.Lock = field(default_factory=threading.Lock)
    killed: threading.Event = field(default_factory=threading.Event)


def _writer(
    proxies: list[ServerProcess], room_id: str, headers: dict[str, str], name: str, log: WriteLog
) -> None:
    with httpx.Client(timeout=WRITE_TIMEOUT_S) as http:
        for n in range(WRITES_PER_WRITER):
            index = n % len(proxies)
            text = f"stream {name} write {n}"
            killed = log.killed.is_set()
            try:
                answer = http.post(
                    f"{proxies[index].url}/api/v1/chat.postMessage",
                    json={"roomId": room_id, "text": text},
                    headers=headers,
                )
            except httpx.TransportError as exc:
                with log.lock:
                    log.refused.append((index, type(exc).__name__))
                continue
            with log.lock:
                if killed:
                    log.after_kill.setdefault(index, []).append(answer.status_code)
                if 200 <= answer.status_code < 300:
                    log.acknowledged[answer.json()["message"]["_id"]] = text
                else:
                    log.refused.append((index, str(answer.status_code)))


def test_killing_one_proxy_under_writes_loses_no_acknowledged_write(
    deployment: Deployment, tmp_path: Path
) -> None:
    ws = deployment.workspace
    store = open_store(tmp_path / "writers", database_url=deployment.database_url)
    try:
        writers: list[tuple[str, dict[str, str]]] = []
        for n in range(WRITERS):
            user = store.create_user(f"writer{n}", password=f"pw-writer-{n}-123", roles=("user",))
            store.subscribe(user.id, ws.rooms["general"].id)
            _token, pat = store.create_token(user.id, "pat", label="stream")
            writers.append((f"writer{n}", {"X-User-Id": user.id, "X-Auth-Token": pat}))
    finally:
        store.close()
    log = WriteLog()
    with running_servers(deployment.data_dirs("kill"), env=deployment.env) as proxies:
        victim = proxies[-1]
        threads = [
            threading.Thread(target=_writer, args=(proxies, ws.rooms["general"].id, headers, name, log))
            for name, headers in writers
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + STREAM_WAIT_S
        while len(log.acknowledged) < KILL_AFTER_ACKNOWLEDGED:
            assert time.monotonic() < deadline, f"{len(log.acknowledged)} writes acknowledged in {STREAM_WAIT_S} s"
            time.sleep(0.01)
        victim.kill()
        log.killed.set()
        for thread in threads:
            thread.join()
        survivors = proxies[:-1]
        # The survivors keep serving: every write sent to them after the kill was acknowledged ...
        assert log.after_kill, "no write was sent after the kill"
        for index, statuses in log.after_kill.items():
            assert index != len(proxies) - 1 and statuses and all(s == 200 for s in statuses), log.after_kill
        # ... and they read and search what went through the dead one.
        last_id = next(reversed(log.acknowledged))
        for survivor in survivors:
            read = get(
                f"{survivor.url}/api/v1/chat.getMessage", params={"msgId": last_id}, headers=ws["carol"].headers
            )
            assert read.status_code == 200, read.text
    for survivor in survivors:
        assert "Traceback" not in survivor.output(), survivor.output()
    # Only the dead proxy's writes failed (some did: it died mid-stream), and none that were
    # acknowledged is missing.
    assert {index for index, _ in log.refused} == {len(proxies) - 1}, log.refused
    assert len(log.acknowledged) + len(log.refused) == WRITERS * WRITES_PER_WRITER
    store = open_store(tmp_path / "check", database_url=deployment.database_url)
    try:
        missing = [i for i, text in log.acknowledged.items() if (m := store.get_message(i)) is None or m.text != text]
    finally:
        store.close()
    assert missing == [], f"{len(missing)} acknowledged writes are not in the database"


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_serve_with_two_workers_serves_and_finds_a_post(
    deployment: Deployment, tmp_path: Path, kind: str
) -> None:
    """``--workers 2`` on one port: a post through it is read and found by search through it after.
    On SQLite both workers share the data dir's workspace.db and index.db."""
    if kind == "postgres":
        ws = deployment.workspace
        env = deployment.env
        (data,) = deployment.data_dirs("workers", 1)
    else:
        data = tmp_path / "sqlite" / "data"
        store = open_store(data)
        try:
            ws = build_workspace(store)
        finally:
            store.close()
        env = {"AI_SEARCH_RATE_LIMIT_STORAGE": deployment.redis_url}
    # Info logs: the supervisor's account of the workers (started, died, replaced) is in the log.
    with running_servers([data], env={**env, "AI_SEARCH_LOG_LEVEL": "info"}, workers=2) as (server,):
        base = server.url
        posted = post(
            f"{base}/api/v1/chat.postMessage",
            json={"roomId": ws.rooms["ops"].id, "text": "the marzipan failover drill starts at noon"},
            headers=ws["alice"].headers,
        )
        assert posted.status_code == 200, posted.text
        message_id = posted.json()["message"]["_id"]
        # Each request a fresh connection: the kernel hands them to either worker.
        wait_until_found(base, ws["carol"].headers, "marzipan failover", message_id)
        for _ in range(6):
            assert found_by(base, ws["carol"].headers, "marzipan failover", message_id)
        # A worker that dies is replaced, and the port answers all along.
        workers = server.worker_pids()
        assert len(workers) == 2, workers
        os.kill(min(workers), signal.SIGKILL)
        deadline = time.monotonic() + WORKER_RESTART_WAIT_S
        while len(server.worker_pids() - workers) < 1:
            assert time.monotonic() < deadline, f"no worker replaced {min(workers)} in {WORKER_RESTART_WAIT_S} s"
            # A route without a rate limit: a slow replacement must not spend carol's search budget.
            assert get(f"{base}/openapi.json").status_code == 200
            time.sleep(0.2)
        assert len(server.worker_pids()) == 2
        assert found_by(base, ws["carol"].headers, "marzipan failover", message_id)
    assert "Traceback" not in server.output(), server.output()
    if kind == "sqlite":
        assert (data / "workspace.db").exists() and (data / "index.db").exists()
