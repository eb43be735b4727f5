"""The keyword branch on PostgreSQL full-text search (``keyword_index = "postgres"``).

Always on a real PostgreSQL (the session's throwaway cluster), whatever ``--store`` says:

- **the same answers as FTS5**: one workspace of identifiers, CJK, prefixes, stopwords, files,
  reactions, pins, threads, several rooms, authors and days; a table of queries (words, prefixes,
  phrases, identifiers, CJK, excluded words, required phrases, ``has:``/``is:``, authors, times,
  rooms) gives the same messages with the same coverage from both branches;
- **scoping** (a Hypothesis property): random rooms, memberships, bans and messages, searched through
  the search service with the PostgreSQL branch: no result from a room the caller may not read, and
  every readable message holding the word is found;
- **kept current**: this process's posts, edits and deletes show in the next search; another
  process's (a second store on the database, whose writes no listener here hears) within the
  follower's interval; two indexes on one database share one position in the change log;
- the setting: ``postgres`` without ``database_url`` is refused at start-up, naming both.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ai_search_server.retrieval.conditions import MessageConditions
from ai_search_server.retrieval.embedded import EmbeddedPipeline, doc_conditions
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.index_db import KeywordScope
from ai_search_server.retrieval.pg_keyword import (
    MAX_LEXEME_BYTES,
    TERMS_LAYOUT,
    PgKeywordIndex,
    term_query,
    tsvector_text,
)
from ai_search_server.retrieval.search_service import SearchOptions, SearchRequest, SearchService
from ai_search_server.retrieval.terms import query_terms
from ai_search_server.retrieval.tokens import text_tokens
from ai_search_server.settings import Settings, SettingsError, check_settings
from ai_search_server.store import open_store
from ai_search_server.store.base import Store
from ai_search_server.store.records import Attachment
from tests._postgres import PostgresCluster

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
# How long a test waits for the follower to apply another process's write (seconds).
FOLLOW_WAIT_SECONDS = 10.0


@pytest.fixture
def pg_url(pg_cluster: PostgresCluster) -> Iterator[str]:
    with pg_cluster.fresh_database() as url:
        yield url


@pytest.fixture
def pg_store(pg_url: str, tmp_path: Path) -> Iterator[Store]:
    store = open_store(tmp_path / "data", database_url=pg_url)
    yield store
    store.close()


# (room, author, text, attachments, reaction, pinned, reply to)
CORPUS = [
    ("general", "alice", "deploy failed on billing-api with ERR_CONN_RESET", (), False, False, None),
    ("general", "bob", "the deployment of v2.14.0 went fine", (), True, False, None),
    ("general", "carol", "InvalidProviderToken again from the auth gateway", (), False, True, None),
    ("general", "alice", "see pgbouncer.ini for the pool settings", ("pgbouncer.ini",), False, False, None),
    ("general", "bob", "graph of the latency attached", ("latency.png",), False, False, None),
    ("general", "carol", "老化测试 passed on the new boards", (), False, False, None),
    ("general", "alice", "DHCPの不具合 was fixed yesterday", (), False, False, None),
    ("general", "bob", "rolling back the canary now, canary window closed", (), False, False, 0),
    ("general", "carol", "why was the checkout slow last month", (), False, False, None),
    ("general", "alice", "too slow, it was gone", (), True, False, None),
    (
        "general",
        "bob",
        "checkout latency p99 is 2s; see https://grafana.example.org/d/checkout",
        (),
        False,
        False,
        None,
    ),
    ("ops", "alice", "deploy to prod is blocked by SRE-14", (), False, False, None),
    ("ops", "carol", "the pg16 upgrade needs a maintenance window", (), False, True, None),
    ("ops", "alice", "rolling back the deploy of billing", (), False, False, 11),
    ("ops", "carol", "deployments are frozen until monday", (), True, False, None),
    ("secret", "bob", "the acquisition closes in march, deploy quietly", (), False, False, None),
    ("secret", "carol", "Déploiement prévu: the café migration", (), False, False, None),
]
QUERIES: list[tuple[str, str, dict[str, object]]] = [
    ("word", "canary", {}),
    ("prefix", "deploy", {}),
    ("short words are whole words", "api", {}),
    ("identifier phrase", "ERR_CONN_RESET", {}),
    ("version phrase", "v2.14.0", {}),
    ("ticket phrase", "SRE-14", {}),
    ("identifier part", "provider", {}),
    ("word in a file name", "pgbouncer", {}),
    ("CJK run", "老化测试", {}),
    ("CJK pair", "测试", {}),
    ("CJK with Latin", "DHCPの不具合", {}),
    ("stopwords never decide", "why was the checkout slow last month", {}),
    ("only stopwords", "the was", {}),
    ("diacritics fold", "deploiement cafe", {}),
    ("digit part", "16", {}),
    ("excluded word", "deploy", {"not_words": ("billing",)}),
    ("excluded phrase", "rolling", {"not_words": ("canary window",)}),
    ("required phrase", "rolling", {"phrases": ("canary window",)}),
    ("has file", "see graph", {"has": ("file",)}),
    ("has image", "graph latency", {"has": ("image",)}),
    ("has link", "checkout", {"has": ("link",)}),
    ("has reaction", "deploy slow", {"has": ("reaction",)}),
    ("has thread", "deploy failed", {"has": ("thread",)}),
    ("not has thread", "deploy", {"not_has": ("thread",)}),
    ("is thread", "rolling", {"is_": ("thread",)}),
    ("is pinned", "upgrade InvalidProviderToken", {"is_": ("pinned",)}),
    ("not pinned", "upgrade InvalidProviderToken", {"not_is": ("pinned",)}),
    ("excluded author", "deploy", {"not_usernames": ("@alice",)}),
]
# Scopes: every room, one room, some authors, a window of time.
SCOPES = {
    "every room": lambda rooms: KeywordScope(list(rooms.values())),
    "ops only": lambda rooms: KeywordScope([rooms["ops"]]),
    "alice and carol": lambda rooms: KeywordScope(list(rooms.values()), users=["Alice", "carol"]),
    "from the fifth message on": lambda rooms: KeywordScope(
        list(rooms.values()), ts_min_ms=int((T0 + timedelta(hours=5)).timestamp() * 1000)
    ),
    "up to the twelfth": lambda rooms: KeywordScope(
        list(rooms.values()), ts_max_ms=int((T0 + timedelta(hours=12)).timestamp() * 1000)
    ),
}


@pytest.fixture
def corpus(pg_store: Store) -> tuple[Store, dict[str, str], list[str]]:
    store = pg_store
    users = {name: store.create_user(name).id for name in ("alice", "bob", "carol")}
    rooms = {
        name: store.create_room("c", name, members=list(users.values())).id
        for name in ("general", "ops", "secret")
    }
    ids: list[str] = []
    for n, (room, author, text, files, reaction, pinned, reply_to) in enumerate(CORPUS):
        message = store.post_message(
            rooms[room],
            users[author],
            text,
            ts=T0 + timedelta(hours=n),
            attachments=tuple(Attachment(name) for name in files),
            tmid=None if reply_to is None else ids[reply_to],
        )
        ids.append(message.id)
        if reaction:
            store.set_reaction(message.id, users["carol"], ":eyes:", True)
        if pinned:
            store.set_pinned(message.id, users["carol"])
    return store, rooms, ids


@pytest.mark.parametrize("scope_name", list(SCOPES))
@pytest.mark.parametrize(("label", "line", "conditions"), QUERIES, ids=[q[0] for q in QUERIES])
def test_the_same_messages_and_coverage_as_fts5(
    corpus: tuple[Store, dict[str, str], list[str]],
    pg_url: str,
    tmp_path: Path,
    scope_name: str,
    label: str,
    line: str,
    conditions: dict[str, object],
) -> None:
    store, rooms, _ids = corpus
    fts5 = EmbeddedIndex.open(tmp_path / INDEX_FILENAME, store, None)
    pg = PgKeywordIndex.open(pg_url, store, follow=False)
    try:
        terms = query_terms(line)
        scope = SCOPES[scope_name](rooms)
        asked = MessageConditions(**conditions) if conditions else None  # type: ignore[arg-type]
        expected = fts5.keyword_search(
            terms, scope, 50, conditions=None if asked is None else doc_conditions(asked)
        )
        found = pg.keyword_search(terms, scope, 50, conditions=asked)
        assert {h.msg_id: round(h.coverage, 6) for h in found} == {
            h.msg_id: round(h.coverage, 6) for h in expected
        }
        if label not in ("only stopwords",) and scope_name == "every room" and not conditions:
            assert expected, f"the table's query {line!r} is meant to find something"
        # Coverage first, as the FTS5 branch orders: the order differs only among equal coverage.
        assert [round(h.coverage, 9) for h in found] == sorted(
            (round(h.coverage, 9) for h in found), reverse=True
        )
    finally:
        pg.close()
        fts5.close()


def test_bm25_puts_the_rare_word_first(corpus: tuple[Store, dict[str, str], list[str]], pg_url: str) -> None:
    store, rooms, ids = corpus
    pg = PgKeywordIndex.open(pg_url, store, follow=False)
    try:
        hits = pg.keyword_search(query_terms("checkout slow"), KeywordScope(list(rooms.values())), 10)
        assert hits[0].msg_id == ids[8], "the message holding both words leads"
        assert all(a.bm25 <= b.bm25 for a, b in itertools.pairwise(hits) if a.coverage == b.coverage)
    finally:
        pg.close()


def test_tokens_become_a_tsvector_of_words_and_parts() -> None:
    text, tokens = tsvector_text(text_tokens("InvalidProviderToken it's"))
    assert text == "'invalidprovidertoken':1A 'it':2A 's':3A 'invalid':5B 'provider':6B 'token':7B"
    assert tokens == 6
    long_word = "x" * (MAX_LEXEME_BYTES + 1)
    text, _ = tsvector_text(text_tokens(f"short {long_word}"))
    assert text == "'short':1A", "a lexeme PostgreSQL refuses is left out, not the message"
    assert term_query(("a'b",)) == "'a''b'"
    assert term_query(("a\\b",)) == "'a\\\\b'"
    assert term_query(("deploy",)) == "'deploy':*"
    assert term_query(("err", "conn")) == "('err' <-> 'conn')"
    assert term_query(("err", "conn"), words_only=True) == "('err':A <-> 'conn':A)"


@pytest.mark.anyio
async def test_posts_edits_and_deletes_show_in_the_next_search(
    pg_store: Store, pg_url: str, tmp_path: Path
) -> None:
    store = pg_store
    alice = store.create_user("alice")
    room = store.create_room("c", "general", members=[alice.id])
    pg = PgKeywordIndex.open(pg_url, store, follow=False)
    index = EmbeddedIndex.open(tmp_path / INDEX_FILENAME, store, None)
    service = SearchService(store, EmbeddedPipeline(index, keyword=pg), SearchOptions())

    async def found(text: str) -> list[str]:
        outcome = await service.search(alice, SearchRequest(text=text, limit=10, search_type="keyword"))
        return [hit.message.id for hit in outcome.hits]

    try:
        posted = store.post_message(room.id, alice.id, "the zeppelin launch is on friday")
        assert await found("zeppelin") == [posted.id]
        store.edit_message(posted.id, "the blimp launch is on friday")
        assert await found("zeppelin") == []
        assert await found("blimp") == [posted.id]
        store.delete_message(posted.id)
        assert await found("blimp") == []
    finally:
        index.close()
        pg.close()


def _wait_for(predicate: object, seconds: float = FOLLOW_WAIT_SECONDS) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_another_process_writes_are_followed_once_for_every_index(
    pg_store: Store, pg_url: str, tmp_path: Path
) -> None:
    store = pg_store
    alice = store.create_user("alice")
    room = store.create_room("c", "general", members=[alice.id])
    early = store.post_message(room.id, alice.id, "an early zeppelin sighting")
    first = PgKeywordIndex.open(pg_url, store)
    other_store = open_store(tmp_path / "other", database_url=pg_url)
    second = PgKeywordIndex.open(pg_url, other_store)
    scope = KeywordScope([room.id])
    try:
        assert [h.msg_id for h in second.keyword_search(query_terms("zeppelin"), scope, 10)] == [early.id]
        # Written by a third process: a store no index listens to.
        writer = open_store(tmp_path / "writer", database_url=pg_url)
        try:
            later = writer.post_message(room.id, alice.id, "a second zeppelin over the bay")
            writer.edit_message(early.id, "an early balloon sighting")
            assert _wait_for(
                lambda: (
                    {h.msg_id for h in first.keyword_search(query_terms("zeppelin"), scope, 10)} == {later.id}
                )
            )
            writer.delete_message(later.id)  # gone in the delete's own transaction
            assert second.keyword_search(query_terms("zeppelin"), scope, 10) == []
        finally:
            writer.close()
        latest = store.latest_message_change()
        assert _wait_for(lambda: first._seen_change == latest and second._seen_change == latest)
        with psycopg.connect(pg_url) as conn:
            state = dict(conn.execute("SELECT key, value FROM message_terms_state").fetchall())
        assert state == {"layout": TERMS_LAYOUT, "change": str(latest)}, "one position, shared"
    finally:
        second.close()
        first.close()
        other_store.close()


def test_a_table_of_another_layout_is_rebuilt(pg_store: Store, pg_url: str) -> None:
    store = pg_store
    alice = store.create_user("alice")
    room = store.create_room("c", "general", members=[alice.id])
    posted = store.post_message(room.id, alice.id, "zeppelin")
    PgKeywordIndex.open(pg_url, store, follow=False).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE message_terms_state SET value = '0' WHERE key = 'layout'")
        conn.execute("UPDATE message_terms SET terms = ''::tsvector")
    pg = PgKeywordIndex.open(pg_url, store, follow=False)
    try:
        assert [h.msg_id for h in pg.keyword_search(query_terms("zeppelin"), KeywordScope([room.id]), 5)] == [
            posted.id
        ]
    finally:
        pg.close()


def test_postgres_keyword_index_needs_a_database() -> None:
    with pytest.raises(SettingsError, match=r"keyword_index.*database_url"):
        check_settings(Settings(keyword_index="postgres"))
    check_settings(Settings(keyword_index="postgres", database_url="postgresql://ai@db/workspace"))


# -- scoping, as a property ------------------------------------------------------------------------

MEMBERSHIP = st.sampled_from(["none", "member", "banned"])


@st.composite
def workspaces(draw: st.DrawFn) -> dict[str, object]:
    users = draw(st.integers(min_value=1, max_value=3))
    rooms = draw(st.lists(st.sampled_from(["c", "p"]), min_size=1, max_size=4))
    membership = {(u, r): draw(MEMBERSHIP) for u in range(users) for r in range(len(rooms))}
    messages = draw(
        st.lists(
            st.tuples(st.integers(0, len(rooms) - 1), st.integers(0, users - 1), st.booleans()),
            max_size=12,
        )
    )
    return {
        "users": users,
        "rooms": rooms,
        "membership": membership,
        "messages": messages,
        "caller": draw(st.integers(0, users - 1)),
        "asked": draw(st.lists(st.integers(0, len(rooms) - 1), max_size=2, unique=True)),
    }


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=workspaces())
def test_no_result_from_a_room_the_caller_may_not_read(pg_cluster: PostgresCluster, case: dict) -> None:  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as tmp, pg_cluster.fresh_database() as url:
        store = open_store(Path(tmp), database_url=url)
        try:
            users = [store.create_user(f"user{u}") for u in range(case["users"])]
            rooms = [store.create_room(kind, f"room{r}") for r, kind in enumerate(case["rooms"])]
            for (u, r), state in case["membership"].items():
                if state != "none":
                    store.subscribe(users[u].id, rooms[r].id)
                if state == "banned":
                    store.set_banned(users[u].id, rooms[r].id, True)
            stored = [
                (
                    store.post_message(
                        rooms[r].id, users[u].id, "zeppelin report" if hit else "weather report"
                    ),
                    hit,
                )
                for r, u, hit in case["messages"]
            ]
            pg = PgKeywordIndex.open(url, store, follow=False)
            index = EmbeddedIndex.open(Path(tmp) / INDEX_FILENAME, store, None)
            try:
                service = SearchService(store, EmbeddedPipeline(index, keyword=pg), SearchOptions())
                caller = users[case["caller"]]
                asked = [rooms[r] for r in case["asked"]]
                request = SearchRequest(
                    text="zeppelin", limit=50, rids=tuple(r.id for r in asked), search_type="keyword"
                )
                outcome = anyio.run(service.search, caller, request)
            finally:
                index.close()
                pg.close()
            readable = store.readable_room_ids(caller.id)
            in_scope = readable & {r.id for r in asked} if asked else readable
            results = {hit.message.id for hit in outcome.hits}
            assert {hit.message.room_id for hit in outcome.hits} <= in_scope, "a room the caller may not read"
            assert results == {m.id for m, hit in stored if hit and m.room_id in in_scope}
        finally:
            store.close()


@pytest.mark.anyio
async def test_the_pipeline_process_searches_postgresql_when_told(
    pg_store: Store, pg_url: str, tmp_path: Path
) -> None:
    """``ai-search pipeline serve`` with ``keyword_index = "postgres"``: its keyword branch is PostgreSQL's."""
    import anyio.lowlevel

    from ai_search_server.outbound import GuardedClient, OutboundPolicy
    from ai_search_server.pipeline_process import PipelineProcess
    from ai_search_server.settings import load_settings

    alice = pg_store.create_user("alice")
    room = pg_store.create_room("c", "general", members=[alice.id])
    posted = pg_store.post_message(room.id, alice.id, "the zeppelin launch is on friday")
    settings = load_settings(
        environ={},
        overrides={"embedder": "none", "keyword_index": "postgres", "database_url": pg_url},
    )
    (tmp_path / "pipeline").mkdir()
    async with GuardedClient(OutboundPolicy()) as outbound:
        process = PipelineProcess(
            settings, pg_store, tmp_path / "pipeline", outbound=outbound, progress=False
        )
        process.start(anyio.lowlevel.current_token())
        try:
            with anyio.fail_after(FOLLOW_WAIT_SECONDS):
                while process.status not in ("ready", "failed"):
                    await anyio.sleep(0.05)
            assert process.status == "ready"
            pipeline = await process.pipeline()
            assert isinstance(pipeline.keyword, PgKeywordIndex)
            body = {
                "query": "zeppelin",
                "type": "search",
                "filters": {"room_id": {"$in": [room.id]}},
                "params": {"k": 5},
            }
            assert [r["id"] for r in pipeline.handle(body)["results"]] == [posted.id]
        finally:
            process.close()
