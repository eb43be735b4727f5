"""``has:``, ``is:``, excluded authors, words and phrases, and quoted phrases over the whole index.

The workspace holds 240 short "rollout" messages by bob (no attribute, each saying "green light")
and a few long ones by alice, each with one attribute: a link, a file, an image, a reaction, a pin, a
thread's first message, a reply, a direct message. By BM25 (and by similarity) every long one ranks
below every short one, past the 100 candidates a branch proposes, so a filter checked on the
candidates alone would find none of them. Each line runs through REST ``q=`` and the MCP search tool
(the same answers), on the embedded pipeline in process (its keyword branch on FTS5, and under
``--store=postgres`` on PostgreSQL's full-text search too, ``keyword_index = "postgres"``) and, over HTTP, on a pipeline that applies our
extension and on a contract-only stand-in that does not (the candidate check, said in
``meta.scope``). Edits (a reaction, a pin, an edit, a reply, a deletion) show in the next search, and
an index file of the previous schema is migrated in place, its vectors kept.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ai_search import PipelineConfig
from ai_search_server.outbound import GuardedClient, OutboundPolicy
from ai_search_server.retrieval.conditions import CONDITIONS_FIELD
from ai_search_server.retrieval.embedded import EmbeddedPipeline
from ai_search_server.retrieval.floor import NO_FLOOR
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.index_db import ROOT_MARK, DocConditions, IndexDatabase
from ai_search_server.retrieval.pg_keyword import PgKeywordIndex
from ai_search_server.retrieval.pipeline_client import RemotePipeline
from ai_search_server.retrieval.pipeline_http import pipeline_app
from ai_search_server.retrieval.search_service import SearchOptions, SearchRequest, SearchService
from ai_search_server.retrieval.wiring import SearchHandle
from ai_search_server.settings import Settings
from ai_search_server.store.records import Attachment, Message

from ._mcp_fixtures import call, mcp_headers, post, request, tool_text
from ._search_support import EMBED_WAIT_SECONDS, HashingEmbedder, UvicornThread, open_test_index
from .conftest import Workspace

pytestmark = pytest.mark.anyio

URL = "/api/v1/ai.search"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
# Short messages matching the words, ranked above every long one (messages): more than twice the
# 100 candidates a branch proposes.
FILLERS = 240
_SERVICES = ("billing", "checkout", "search", "auth", "payments", "gateway", "ledger", "mailer")
# Words that make a message long (BM25 ranks a longer message with the same word lower).
_LONG = (
    "after the review we went through the dashboards the alerts the error budget the on call notes "
    "and the customer reports from the weekend before deciding anything about the next steps"
)
LOOPBACK = OutboundPolicy(allow_hosts=("127.0.0.1",))
TARGETS = ("link", "file", "image", "reaction", "pinned", "root", "reply", "dm", "phrase")


def _build(workspace: Workspace) -> None:
    store, rooms = workspace.store, workspace.rooms
    alice, bob, carol = (workspace[n].user.id for n in ("alice", "bob", "carol"))
    start = NOW - timedelta(days=20)
    for n in range(FILLERS):
        text = f"rollout {n} of {_SERVICES[n % len(_SERVICES)]} green light"
        store.post_message(rooms["general"].id, bob, text, ts=start + timedelta(minutes=n))
    later = start + timedelta(days=5)

    def long(key: str, text: str, room: str = "general", **kw: Any) -> None:
        moment = later + timedelta(hours=len(workspace.messages))
        message = store.post_message(rooms[room].id, alice, f"{text} {_LONG}", ts=moment, **kw)
        workspace.messages[key] = message

    long("link", "rollout notes are at https://wiki.example.org/rollout")
    long("file", "rollout checklist attached", attachments=(Attachment("checklist.txt", type="text/plain"),))
    long("image", "rollout graph attached", attachments=(Attachment("graph.png", type="image/png"),))
    long("reaction", "rollout for the mobile apps is done")
    long("pinned", "rollout freeze starts on monday")
    long("root", "rollout of the new cache layer")
    quiet = store.post_message(rooms["general"].id, carol, "weekly sync notes", ts=later)
    workspace.messages["quiet-root"] = quiet
    workspace.messages["root-reply"] = store.post_message(
        rooms["general"].id,
        carol,
        "watching it",
        ts=later + timedelta(days=1),
        tmid=workspace.messages["root"].id,
    )
    long("reply", "rollout of the sync is on track", tmid=quiet.id)
    long("dm", "rollout party after the release?", room="dm")
    long("phrase", "the canary window for the rollout closes at noon")
    store.set_reaction(workspace.messages["reaction"].id, carol, ":tada:", True)
    store.set_pinned(workspace.messages["pinned"].id, alice)


@pytest.fixture
def conditions_workspace(workspace: Workspace) -> Workspace:
    _build(workspace)
    return workspace


@pytest.fixture
def index(conditions_workspace: Workspace, data_dir: Path) -> Iterator[EmbeddedIndex]:
    opened = open_test_index(conditions_workspace.store, data_dir)
    assert opened.wait_until_embedded(EMBED_WAIT_SECONDS)
    yield opened
    opened.close()


@pytest.fixture
async def outbound() -> AsyncIterator[GuardedClient]:
    async with GuardedClient(LOOPBACK) as client:
        yield client


class ContractOnly:
    """A pipeline that knows only the contract: it drops our extension field (recording that it
    came) and answers from the embedded index, acknowledging nothing."""

    def __init__(self, pipeline: EmbeddedPipeline) -> None:
        self.pipeline = pipeline
        self.extensions: list[object] = []

    async def search(self, request: Request) -> Response:
        body = await request.json()
        self.extensions.append(body.pop(CONDITIONS_FIELD, None))
        answer = await anyio.to_thread.run_sync(self.pipeline.handle_in_turn, body)
        return JSONResponse(answer)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/pipelines/{pid}/search", self.search, methods=["POST"])])


def _service(pipeline: Any, store: Any) -> SearchService:
    return SearchService(store, pipeline, SearchOptions(floor=NO_FLOOR), clock=lambda: NOW)


@pytest.fixture(params=["in-process", "served", "contract-only", "postgres"])
def pipeline_kind(request: pytest.FixtureRequest, store_kind: str) -> str:
    """Where the pipeline runs; ``postgres``: in process, its keyword branch in PostgreSQL (only
    under ``--store=postgres``, whose database it searches)."""
    if request.param == "postgres" and store_kind != "postgres":
        pytest.skip("the PostgreSQL keyword branch needs --store=postgres")
    return str(request.param)


@pytest.fixture
def pg_keyword(pipeline_kind: str, database_url: str, conditions_workspace: Workspace) -> Iterator[PgKeywordIndex | None]:
    if pipeline_kind != "postgres":
        yield None
        return
    opened = PgKeywordIndex.open(database_url, conditions_workspace.store)
    yield opened
    opened.close()


@pytest.fixture
def conditions_app(
    app: Starlette,
    settings: Settings,
    conditions_workspace: Workspace,
    index: EmbeddedIndex,
    outbound: GuardedClient,
    pipeline_kind: str,
    pg_keyword: PgKeywordIndex | None,
) -> Iterator[tuple[Starlette, ContractOnly | None]]:
    store = conditions_workspace.store
    embedded = EmbeddedPipeline(index, keyword=pg_keyword)
    if pipeline_kind in ("in-process", "postgres"):
        app.state.services.search = SearchHandle.ready(settings, store, _service(embedded, store))
        yield app, None
        return
    stand_in = ContractOnly(embedded)
    served = (
        pipeline_app(embedded, pipeline_id="p", api_key="k", api_key_secret="s")
        if pipeline_kind == "served"
        else stand_in.app()
    )
    with UvicornThread(served) as server:
        base = f"{server.url}/pipeline/v1" if pipeline_kind == "served" else server.url
        pipeline = RemotePipeline(PipelineConfig(base, "p", "k", "s"), outbound)
        app.state.services.search = SearchHandle.ready(settings, store, _service(pipeline, store))
        yield app, stand_in if pipeline_kind == "contract-only" else None


async def rest(
    client: httpx.AsyncClient, workspace: Workspace, line: str, kind: str = "keyword"
) -> dict[str, Any]:
    params = {"q": line, "searchType": kind, "intelligentCount": "50"}
    response = await client.get(URL, params=params, headers=workspace["alice"].headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def mcp(client: httpx.AsyncClient, workspace: Workspace, line: str) -> dict[str, Any]:
    headers = mcp_headers(workspace["alice"].pat_headers)
    listed = (await post(client, request("tools/list"), headers)).json()["result"]["tools"]
    (tool,) = [
        t["name"] for t in listed if "ai_search" in t["name"] and "q" in t["inputSchema"]["properties"]
    ]
    arguments = {"q": line, "searchType": "keyword", "intelligentCount": 50}
    is_error, body = tool_text(await post(client, call(tool, arguments), headers))
    assert not is_error, body
    return body  # type: ignore[no-any-return]


def _keys(workspace: Workspace, results: list[dict[str, Any]]) -> set[str]:
    names = {m.id: k for k, m in workspace.messages.items()}
    return {names.get(r["_id"], "filler") for r in results}


LONG = set(TARGETS)
LINES = [
    pytest.param("rollout has:link", {"link"}, "has:", id="has-link"),
    pytest.param("rollout has:file", {"file", "image"}, "has:", id="has-file-counts-images"),
    pytest.param("rollout has:image", {"image"}, "has:", id="has-image"),
    pytest.param("rollout has:reaction", {"reaction"}, "has:", id="has-reaction"),
    pytest.param("rollout has:thread", {"root"}, "has:", id="has-thread"),
    pytest.param("rollout is:thread", {"reply"}, "is:", id="is-thread-a-reply"),
    pytest.param("rollout is:pinned", {"pinned"}, "is:", id="is-pinned"),
    pytest.param("rollout is:dm", {"dm"}, "", id="is-dm-is-the-rooms"),
    pytest.param("rollout -green", LONG, "-word", id="excluded-word"),
    pytest.param('rollout -"green light"', LONG, "-word", id="excluded-phrase"),
    pytest.param("rollout -from:@bob", LONG, "-from:", id="excluded-author"),
    pytest.param(
        "rollout -green -has:link -has:file", LONG - {"link", "file", "image"}, "-has:", id="excluded-has"
    ),
    pytest.param(
        "rollout -green -is:pinned -is:thread", LONG - {"pinned", "reply"}, "-is:", id="excluded-is"
    ),
    pytest.param('rollout "canary window"', {"phrase"}, '"phrase"', id="a-quoted-phrase"),
    pytest.param("rollout has:link has:file", set(), "has:", id="every-has-must-hold"),
    pytest.param("rollout has:file -has:file", set(), "has:", id="a-contradiction-finds-nothing"),
]


@pytest.mark.parametrize(("line", "expected", "operator"), LINES)
async def test_a_filter_finds_what_ranks_past_the_candidates(
    conditions_app: tuple[Starlette, ContractOnly | None],
    client: httpx.AsyncClient,
    conditions_workspace: Workspace,
    pipeline_kind: str,
    line: str,
    expected: set[str],
    operator: str,
) -> None:
    _app, stand_in = conditions_app
    by_rest = await rest(client, conditions_workspace, line)
    by_mcp = await mcp(client, conditions_workspace, line)
    assert [r["_id"] for r in by_mcp["intelligent"]] == [r["_id"] for r in by_rest["intelligent"]]
    scope = by_rest["meta"]["scope"]
    found = _keys(conditions_workspace, by_rest["intelligent"])
    if stand_in is None or not operator:
        assert found == expected
        assert "note" not in scope
        return
    # A pipeline without the extension: what its candidates hold, never a message breaking the
    # filter, and the receipt says the filter saw the candidates only.
    assert stand_in.extensions[0] is not None  # it was sent (relaxed searches may carry none)
    assert found <= expected
    if expected and operator != '"phrase"':  # a rare phrase ranks high on its own
        assert found != expected, "the stand-in's candidates were expected to miss the long messages"
    assert operator in scope["note"] and "best 100 matches" in scope["note"]
    assert scope["text"].endswith(scope["note"]) and scope["candidatesChecked"] == 100


@pytest.mark.parametrize("pipeline_kind", ["in-process", "served"], indirect=True)
@pytest.mark.parametrize("kind", ["semantic", "hybrid"])
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("rollout has:image", {"image"}, id="has-image"),
        pytest.param("rollout is:pinned", {"pinned"}, id="is-pinned"),
        pytest.param("rollout has:thread", {"root"}, id="has-thread"),
        pytest.param("rollout -green", LONG, id="excluded-word"),
        pytest.param("rollout -from:@bob -is:dm", LONG - {"dm"}, id="excluded-author"),
    ],
)
async def test_the_semantic_branch_applies_them_over_every_vector(
    conditions_app: tuple[Starlette, ContractOnly | None],
    client: httpx.AsyncClient,
    conditions_workspace: Workspace,
    kind: str,
    line: str,
    expected: set[str],
) -> None:
    body = await rest(client, conditions_workspace, line, kind)
    # Without a floor the semantic branch also brings faint neighbours: the messages about the
    # rollout are the ones to compare.
    found = _keys(conditions_workspace, body["intelligent"]) & (LONG | {"filler"})
    assert found == expected
    assert body["meta"]["retrieval"]["branches"]["semantic"] == "ok"


@pytest.mark.parametrize("pipeline_kind", ["in-process"], indirect=True)
async def test_diagnosis_counts_past_the_candidates_and_caps_at_fifty_plus(
    conditions_app: tuple[Starlette, ContractOnly | None],
    client: httpx.AsyncClient,
    conditions_workspace: Workspace,
) -> None:
    meta = (await rest(client, conditions_workspace, "rollout is:dm has:link"))["meta"]
    diagnosis = meta["diagnosis"]
    assert (
        diagnosis["text"]
        == "0 in has:link is:dm; 1 without has:link; 1 without is:dm; 50+ without any filter"
    )
    counts = [(r["drop"], r["count"], r["more"]) for r in diagnosis["relaxations"]]
    assert counts == [("has", 1, False), ("is", 1, False), ("all", 50, True)]


@pytest.mark.parametrize("pipeline_kind", ["in-process", "served", "postgres"], indirect=True)
async def test_edits_show_in_the_next_search(
    conditions_app: tuple[Starlette, ContractOnly | None],
    client: httpx.AsyncClient,
    conditions_workspace: Workspace,
) -> None:
    ws = conditions_workspace
    store, alice, carol = ws.store, ws["alice"].user.id, ws["carol"].user.id

    async def found(line: str) -> set[str]:
        return _keys(ws, (await rest(client, ws, line))["intelligent"])

    store.set_reaction(ws.messages["reaction"].id, carol, ":tada:", False)
    assert await found("rollout has:reaction") == set()
    store.set_reaction(ws.messages["link"].id, carol, ":eyes:", True)
    assert await found("rollout has:reaction") == {"link"}
    store.set_pinned(ws.messages["pinned"].id, None)
    store.set_pinned(ws.messages["file"].id, alice)
    assert await found("rollout is:pinned") == {"file"}
    store.edit_message(ws.messages["link"].id, "rollout notes are on the wiki now")
    assert await found("rollout has:link") == set()
    store.edit_message(ws.messages["image"].id, "rollout graph at www.example.org/graph")
    assert await found("rollout has:link") == {"image"}
    store.delete_message(ws.messages["root-reply"].id)
    assert await found("rollout has:thread") == set()
    store.post_message(ws.rooms["general"].id, carol, "nice", tmid=ws.messages["phrase"].id)
    assert await found("rollout has:thread") == {"phrase"}
    store.delete_message(ws.messages["file"].id)  # a file gone with its message
    assert await found("rollout has:file") == {"image"}
    store.edit_message(ws.messages["dm"].id, "rollout party after the release, green light?")
    assert "dm" not in await found("rollout -green")


def _downgrade_to_schema_4(path: Path) -> None:
    """Make the index file what schema 4 wrote: no `tmid`, no marks, the old delete trigger."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        DROP TRIGGER docs_ad;
        DROP TRIGGER doc_terms_ai;
        DROP TRIGGER doc_terms_ad;
        DROP TRIGGER doc_terms_au;
        DROP TABLE docs_vocab;
        DROP TABLE docs_fts;
        -- Schema 4 and 5 kept the terms under the document's rowid, and had no room codes.
        UPDATE doc_terms SET rowid = rowid >> 24;
        DROP TABLE doc_rooms;
        CREATE VIRTUAL TABLE docs_fts USING fts5(
            words, parts, content='doc_terms', content_rowid='rowid',
            tokenize='unicode61 remove_diacritics 2', prefix='2 3'
        );
        INSERT INTO docs_fts (docs_fts) VALUES ('rebuild');
        DROP TRIGGER docs_root_ai;
        DROP TRIGGER docs_root_au;
        DROP TABLE doc_marks;
        DROP INDEX docs_replies;
        ALTER TABLE docs DROP COLUMN tmid;
        CREATE TRIGGER docs_ad AFTER DELETE ON docs BEGIN
            DELETE FROM doc_terms WHERE rowid = old.rowid;
            DELETE FROM doc_vectors WHERE rowid = old.rowid;
        END;
        -- A schema-4 digest hashed fewer fields: it matches no digest of today.
        UPDATE docs SET digest = zeroblob(8);
        PRAGMA user_version = 4;
        """
    )
    conn.close()


def test_an_index_of_schema_4_is_migrated_in_place_keeping_its_vectors(
    conditions_workspace: Workspace, data_dir: Path
) -> None:
    store = conditions_workspace.store
    first = EmbeddedIndex.open(data_dir / INDEX_FILENAME, store, HashingEmbedder())
    assert first.wait_until_embedded(EMBED_WAIT_SECONDS)
    first.close()
    _downgrade_to_schema_4(data_dir / INDEX_FILENAME)
    embedder = HashingEmbedder()
    index = EmbeddedIndex.open(data_dir / INDEX_FILENAME, store, embedder)
    try:
        assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
        assert embedder.texts_embedded == 0  # only the marks were added: no vector was made again
        allowed, _blocked = index.db.condition_rowids(DocConditions(marks=("file",)))
        assert allowed is not None
        found = {row.msg_id for row in index.db.rows([int(r) for r in allowed]).values()}
        assert found == {conditions_workspace.messages[k].id for k in ("file", "image")}
        roots, _blocked = index.db.condition_rowids(DocConditions(marks=(ROOT_MARK,)))
        assert roots is not None
        found = {row.msg_id for row in index.db.rows([int(r) for r in roots]).values()}
        assert found == {conditions_workspace.messages[k].id for k in ("root", "quiet-root")}
        assert index.db.get_meta("rescan") is None
    finally:
        index.close()
    # Opened again, nothing is compared twice: the change log carries on.
    again = EmbeddedIndex.open(data_dir / INDEX_FILENAME, store, HashingEmbedder())
    again.close()


def _doc(message_id: str, tmid: str | None = None) -> Message:
    return Message(message_id, "r1", "u1", "alice", "Alice", NOW, f"text of {message_id}", tmid=tmid)


@pytest.mark.parametrize(
    ("steps", "roots"),
    [
        pytest.param([("post", "p"), ("post", "r", "p")], {"p"}, id="a-reply-marks-its-parent"),
        pytest.param([("post", "r", "p"), ("post", "p")], {"p"}, id="a-reply-indexed-first"),
        pytest.param([("post", "p"), ("post", "r", "p"), ("delete", "r")], set(), id="the-last-reply-gone"),
        pytest.param(
            [("post", "p"), ("post", "r", "p"), ("post", "s", "p"), ("delete", "r")],
            {"p"},
            id="one-reply-left",
        ),
        pytest.param(
            [("post", "p"), ("post", "q"), ("post", "r", "p"), ("post", "r", "q")], {"q"}, id="moved"
        ),
        pytest.param(
            [("post", "p"), ("post", "r", "p"), ("delete", "p"), ("post", "p")], {"p"}, id="parent-back"
        ),
    ],
)
def test_a_threads_first_message_is_marked_while_a_reply_names_it(
    data_dir: Path, steps: list[tuple[str, ...]], roots: set[str]
) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    db = IndexDatabase(data_dir / INDEX_FILENAME)
    try:
        for kind, message_id, *parent in steps:
            with db.transaction() as conn:
                if kind == "post":
                    db.upsert(conn, [_doc(message_id, parent[0] if parent else None)])
                else:
                    db.delete(conn, [message_id])
        allowed, _blocked = db.condition_rowids(DocConditions(marks=(ROOT_MARK,)))
        assert allowed is not None
        assert {row.msg_id for row in db.rows([int(r) for r in allowed]).values()} == roots
    finally:
        db.close()


async def test_a_pipeline_told_nothing_of_the_extension_is_checked_on_its_candidates(
    conditions_workspace: Workspace, index: EmbeddedIndex, outbound: GuardedClient
) -> None:
    """`pipeline_conditions` off: the contract's body alone, and the receipt says what that costs."""
    stand_in = ContractOnly(EmbeddedPipeline(index))
    with UvicornThread(stand_in.app()) as server:
        config = PipelineConfig(server.url, "p", "k", "s")
        service = _service(
            RemotePipeline(config, outbound, send_conditions=False), conditions_workspace.store
        )
        request = SearchRequest(text="rollout", limit=10, has=("file",), search_type="keyword")
        outcome = await service.search(conditions_workspace["alice"].user, request)
    assert stand_in.extensions == [None]
    assert outcome.hits == ()
    scope = outcome.report.scope
    assert scope is not None
    assert (scope.candidates_checked, scope.checked_operators) == (100, ("has:",))
