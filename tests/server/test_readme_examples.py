"""README's example queries return what README says, on the demo workspace with the local model.

The demo is loaded into a store, embedded by the real all-MiniLM-L6-v2 on the runtime the server
picks by default (seconds with ONNX int8, about 30 s with numpy, once for the module) and searched through ``GET /api/v1/ai.search`` with the options the
server builds from its settings (so the relevance floor is the calibrated one). The queries are
read from README itself, so an edited example is tested as it now reads.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from ai_search_server.app import create_app
from ai_search_server.demo import DEMO_USERS, generate_demo_messages
from ai_search_server.importer import import_rows
from ai_search_server.ratelimit import RateLimiter
from ai_search_server.retrieval.embedded import EmbeddedPipeline
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.local_embedder import load_local_embedder
from ai_search_server.retrieval.search_service import SearchService
from ai_search_server.retrieval.wiring import SearchHandle, search_options
from ai_search_server.settings import load_settings
from ai_search_server.store import open_store
from ai_search_server.store.base import Store

from .conftest import BASE_URL

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

README = Path(__file__).resolve().parents[2] / "README.md"
# Longest the demo's ~2,100 messages may take to embed on a busy machine (seconds).
EMBED_WAIT_SECONDS = 900
# The September failover thread in #incidents and its postmortem in #engineering (demo message ids).
FAILOVER_THREAD = re.compile(r"demo-pg-failover-\d{2}")
POSTMORTEM = "demo-pg-postmortem-01"
SCOPED_OUT_NOTICE = "None of the requested rooms is one you can read."


def readme_first_look_query() -> str:
    """The query README's "A first look" asks the reader to type."""
    text = README.read_text(encoding="utf-8")
    found = re.search(r"sign in as `bob` and type:\n\n```\n(?P<query>[^\n]+)\n```", text)
    assert found, "README's first-look example moved: update this test with it"
    return found["query"]


def readme_curl_queries() -> list[str]:
    """The one-line queries of README's curl examples (`--data-urlencode 'q=...'`)."""
    return re.findall(r"--data-urlencode 'q=([^']+)'", README.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def demo(
    tmp_path_factory: pytest.TempPathFactory, module_database_url: str
) -> Iterator[tuple[Store, SearchService, dict[str, str]]]:
    data_dir = tmp_path_factory.mktemp("readme-demo")
    store = open_store(data_dir, database_url=module_database_url)
    tokens = {}
    for person in DEMO_USERS:
        user = store.create_user(person.username, name=person.name, roles=(person.role,))
        _token, secret = store.create_token(user.id, "session", label="readme test")
        tokens[person.username] = f"{user.id}:{secret}"
    import_rows(store, generate_demo_messages())
    embedder = load_local_embedder()  # what the server runs by default: the fastest local runtime
    index = EmbeddedIndex.open(data_dir / INDEX_FILENAME, store, embedder)
    assert index.wait_until_embedded(EMBED_WAIT_SECONDS), "the demo did not finish embedding"
    settings = load_settings(environ={}, overrides={"site_url": BASE_URL, "embedder": "none"})
    service = SearchService(store, EmbeddedPipeline(index), search_options(settings, embedder.model_id))
    yield store, service, tokens
    index.close()
    store.close()


@pytest.fixture
async def client(demo: tuple[Store, SearchService, dict[str, str]]) -> AsyncIterator[httpx.AsyncClient]:
    store, service, _tokens = demo
    settings = load_settings(environ={}, overrides={"site_url": BASE_URL, "embedder": "none"})
    app: Starlette = create_app(settings, store, limiter=RateLimiter("memory://"))
    app.state.services.search = SearchHandle.ready(settings, store, service)
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as http:
        yield http


async def search(
    client: httpx.AsyncClient, demo: tuple[Store, SearchService, dict[str, str]], user: str, q: str
) -> dict[str, Any]:
    user_id, token = demo[2][user].split(":", 1)
    response = await client.get(
        "/api/v1/ai.search",
        params={"q": q, "intelligentCount": "50"},
        headers={"X-User-Id": user_id, "X-Auth-Token": token},
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _ids(body: dict[str, Any]) -> list[str]:
    return [r["_id"] for r in body["intelligent"]]


async def test_the_first_look_finds_the_september_failover_thread(
    client: httpx.AsyncClient, demo: tuple[Store, SearchService, dict[str, str]]
) -> None:
    query = readme_first_look_query()
    body = await search(client, demo, "bob", query)
    results = body["intelligent"]
    assert len(results) >= 5, "README promises the failover thread"
    assert {r["room"]["name"] for r in results} == {"incidents"}
    after = re.search(r"after:(\S+)", query)
    assert after is not None
    start = datetime.fromisoformat(after.group(1)).replace(tzinfo=UTC)
    assert all(datetime.fromisoformat(r["ts"].replace("Z", "+00:00")) >= start for r in results)
    top = _ids(body)[:5]
    assert sum(bool(FAILOVER_THREAD.fullmatch(i)) for i in top) >= 4, top
    assert {r["matchReason"] for r in results} & {"semantic", "both"}, "found by meaning"


async def test_after_the_incident_the_same_words_find_nothing_strong(
    client: httpx.AsyncClient, demo: tuple[Store, SearchService, dict[str, str]]
) -> None:
    assert "`after:2026-10-01`" in README.read_text(encoding="utf-8")
    query = re.sub(r"after:\S+", "after:2026-10-01", readme_first_look_query())
    body = await search(client, demo, "bob", query)
    # Nothing about a failover in #incidents after 1 October: no strong result (what comes near is
    # kept apart, as related), and nothing from the September failover thread.
    results = body["intelligent"]
    assert [r for r in results if r.get("band") != "related"] == [], "no strong match"
    assert not any(FAILOVER_THREAD.fullmatch(i) for i in _ids(body))
    assert body["meta"]["retrieval"]["bands"]["strong"] == 0


async def test_words_the_workspace_never_used_find_nothing(
    client: httpx.AsyncClient, demo: tuple[Store, SearchService, dict[str, str]]
) -> None:
    assert "`xyzzyplugh`" in README.read_text(encoding="utf-8")
    for query in ("xyzzyplugh", "xyzzyplugh qwertzuiop in:#random"):
        assert (await search(client, demo, "bob", query))["intelligent"] == [], query


async def test_grace_is_not_in_incidents_and_finds_the_postmortem_without_the_chip(
    client: httpx.AsyncClient, demo: tuple[Store, SearchService, dict[str, str]]
) -> None:
    query = readme_first_look_query()
    scoped_out = await search(client, demo, "grace", query)
    assert scoped_out["intelligent"] == []
    assert scoped_out["meta"]["retrieval"]["notices"] == [SCOPED_OUT_NOTICE]
    without_chip = await search(client, demo, "grace", re.sub(r"\s*in:#incidents\s*", " ", query).strip())
    assert POSTMORTEM in _ids(without_chip)[:3]
    assert without_chip["intelligent"][0]["room"]["name"] == "engineering"


async def test_the_curl_examples_find_what_they_ask_for(
    client: httpx.AsyncClient, demo: tuple[Store, SearchService, dict[str, str]]
) -> None:
    queries = readme_curl_queries()
    assert queries, "README's curl examples changed: update this test"
    for query in queries:
        body = await search(client, demo, "bob", query)
        rooms = set(re.findall(r"in:#(\S+)", query))
        assert body["intelligent"], query
        assert {r["room"]["name"] for r in body["intelligent"]} <= rooms, query
        assert any(FAILOVER_THREAD.fullmatch(i) for i in _ids(body)[:3]), query
