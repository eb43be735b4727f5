"""Server fixtures: a real store (SQLite in a temp dir, or PostgreSQL with ``--store=postgres``), the
real app in-process, a small workspace.

The workspace has three people with different rooms, so scoping is visible in every test::

    alice (user)   #general  #ops                 dm alice-bob
    bob   (user)   #general        #secret (p)    dm alice-bob
    carol (admin)  #general  #ops  #secret (banned)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from ai_search_server.app import create_app
from ai_search_server.settings import Settings, load_settings
from ai_search_server.store import open_store
from ai_search_server.store.base import Store
from ai_search_server.store.records import Message, Room, User
from tests._postgres import PostgresCluster

BASE_URL = "http://testserver"
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


@dataclass
class Person:
    user: User
    password: str
    session: str  # a login token
    pat: str  # a personal access token

    @property
    def headers(self) -> dict[str, str]:
        return {"X-User-Id": self.user.id, "X-Auth-Token": self.session}

    @property
    def pat_headers(self) -> dict[str, str]:
        return {"X-User-Id": self.user.id, "X-Auth-Token": self.pat}


@dataclass
class Workspace:
    store: Store
    people: dict[str, Person]
    rooms: dict[str, Room]
    messages: dict[str, Message] = field(default_factory=dict)

    def __getitem__(self, username: str) -> Person:
        return self.people[username]


def cited(ws: Workspace, n: int, message: Message) -> dict[str, object]:
    """The ``citations`` item of an answer that cites ``message`` as ``[n]``: its ids, author and room."""
    room = next(r for r in ws.rooms.values() if r.id == message.room_id)
    return {
        "n": n,
        "msgId": message.id,
        "rid": room.id,
        "u": {"username": message.username, "name": message.user_name},
        "room": {"_id": room.id, "t": room.type, "name": room.name, "fname": room.fname},
    }


def build_workspace(store: Store) -> Workspace:
    people: dict[str, Person] = {}
    for username, roles in (("alice", ("user",)), ("bob", ("user",)), ("carol", ("admin",))):
        password = f"pw-{username}-123"
        user = store.create_user(username, name=username.title(), password=password, roles=roles)
        _t, session = store.create_token(user.id, "session", label="login")
        _t, pat = store.create_token(user.id, "pat", label="tests")
        people[username] = Person(user=user, password=password, session=session, pat=pat)
    a, b, c = (people[n].user.id for n in ("alice", "bob", "carol"))
    rooms = {
        "general": store.create_room("c", "general", members=[a, b, c]),
        "ops": store.create_room("c", "ops", members=[a, c]),
        "secret": store.create_room("p", "secret", fname="Secret Plans", members=[b, c]),
        "dm": store.create_room("d", "alice__bob", members=[a, b]),
    }
    store.set_banned(c, rooms["secret"].id, True)
    ws = Workspace(store=store, people=people, rooms=rooms)
    texts = {
        "general": [("alice", "welcome to the team"), ("bob", "the deploy went fine today")],
        "ops": [("alice", "deploy failed on billing-api with ERR_CONN_RESET"), ("carol", "rolling back now")],
        "secret": [("bob", "the acquisition closes in march")],
        "dm": [("alice", "lunch at noon?"), ("bob", "sure")],
    }
    n = 0
    for room_key, lines in texts.items():
        for username, text in lines:
            n += 1
            msg = store.post_message(
                rooms[room_key].id, people[username].user.id, text, ts=T0 + timedelta(minutes=n)
            )
            ws.messages[f"{room_key}-{n}"] = msg
    return ws


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def store(data_dir: Path, database_url: str) -> Iterator[Store]:
    """The workspace store: SQLite in ``data_dir``, or a fresh PostgreSQL database (``--store=postgres``)."""
    s = open_store(data_dir, database_url=database_url)
    yield s
    s.close()


@pytest.fixture(scope="module")
def module_database_url(store_kind: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A PostgreSQL database for a whole module's workspace under ``--store=postgres`` (empty: SQLite)."""
    if store_kind != "postgres":
        yield ""
        return
    cluster: PostgresCluster = request.getfixturevalue("pg_cluster")
    with cluster.fresh_database() as url:
        yield url


@pytest.fixture(scope="session")
def new_database(store_kind: str, request: pytest.FixtureRequest) -> Callable[[], AbstractContextManager[str]]:
    """Makes a fresh workspace database per call (a property's examples): a PostgreSQL database's URL
    under ``--store=postgres``, dropped when the context ends; empty (SQLite) otherwise."""
    if store_kind != "postgres":
        return lambda: nullcontext("")
    cluster: PostgresCluster = request.getfixturevalue("pg_cluster")
    return cluster.fresh_database


def database_env(url: str) -> dict[str, str]:
    """The environment that points ``ai-search`` at ``url`` (nothing for SQLite)."""
    return {"AI_SEARCH_DATABASE_URL": url} if url else {}


@pytest.fixture
def open_workspace(database_url: str) -> Callable[[Path], Store]:
    """Opens this test's workspace for a data dir: SQLite there, or the test's PostgreSQL database
    under ``--store=postgres`` (every call the same database, as every process of one deployment)."""
    return lambda data_dir: open_store(data_dir, database_url=database_url)


@pytest.fixture(params=["sqlite", "postgres"])
def each_store(request: pytest.FixtureRequest, data_dir: Path) -> Iterator[Store]:
    """The store on SQLite, then on a fresh PostgreSQL database: the store's own tests take this, so
    they hold both implementations to one behaviour whatever ``--store`` says."""
    if request.param == "sqlite":
        s = open_store(data_dir)
    else:
        url = request.getfixturevalue("_fresh_database_url")
        s = open_store(data_dir, database_url=url)
    yield s
    s.close()


@pytest.fixture
def _fresh_database_url(pg_cluster: PostgresCluster) -> Iterator[str]:
    with pg_cluster.fresh_database() as url:
        yield url


@pytest.fixture
def settings() -> Settings:
    # No embedding model in route tests: search tests bring their own small test embedder.
    return load_settings(
        environ={}, overrides={"site_url": BASE_URL, "mcp_enabled": True, "embedder": "none"}
    )


@pytest.fixture
def workspace(store: Store) -> Workspace:
    return build_workspace(store)


@pytest.fixture
def app(settings: Settings, store: Store) -> Starlette:
    from ai_search_server.ratelimit import RateLimiter

    return create_app(settings, store, limiter=RateLimiter("memory://"))


@pytest.fixture
async def client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as c:
        yield c
