"""The keyword branch is bounded by what it returns: terms below the floor, long lists, the scope.

Each test of a branch runs on the FTS5 index and, under ``--store=postgres``, on PostgreSQL's
full-text search (``keyword_index = "postgres"``), which keeps the same bounds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ai_search_server.retrieval.index as index_module
from ai_search_server.outbound import GuardedClient, OutboundPolicy
from ai_search_server.retrieval.embedded import EmbeddedPipeline
from ai_search_server.retrieval.floor import KEYWORD_MIN_COVERAGE
from ai_search_server.retrieval.index import EmbeddedIndex, _essential_terms
from ai_search_server.retrieval.index_db import KeywordScope
from ai_search_server.retrieval.pg_keyword import PgKeywordIndex
from ai_search_server.retrieval.terms import Term, query_terms, term_coverage
from ai_search_server.retrieval.wiring import SearchHandle
from ai_search_server.settings import Settings

from ._search_support import EMBED_WAIT_SECONDS, open_test_index
from .conftest import Workspace


@pytest.fixture(params=["fts5", "postgres"])
def index(
    request: pytest.FixtureRequest, workspace: Workspace, data_dir: Path, store_kind: str, database_url: str
) -> Iterator[EmbeddedIndex | PgKeywordIndex]:
    """The keyword branch: FTS5 in index.db, or PostgreSQL's (only under ``--store=postgres``)."""
    if request.param == "postgres":
        if store_kind != "postgres":
            pytest.skip("the PostgreSQL keyword branch needs --store=postgres")
        with_pg = PgKeywordIndex.open(database_url, workspace.store)
        yield with_pg
        with_pg.close()
        return
    opened = open_test_index(workspace.store, data_dir)
    assert opened.wait_until_embedded(EMBED_WAIT_SECONDS)
    yield opened
    opened.close()


def search(
    index: EmbeddedIndex | PgKeywordIndex, query: str, rooms: list[str], min_coverage: float = 0.0
) -> list[str]:
    hits = index.keyword_search(query_terms(query), KeywordScope(rooms), 50, min_coverage=min_coverage)
    return [hit.msg_id for hit in hits]


def test_terms_that_alone_cannot_clear_the_floor_are_not_searched(
    workspace: Workspace, index: EmbeddedIndex | PgKeywordIndex
) -> None:
    general = workspace.rooms["general"].id
    alice = workspace["alice"].user.id
    for n in range(30):
        workspace.store.post_message(general, alice, f"weekly standup notes {n}")
    wanted = workspace.store.post_message(general, alice, "standup moved for the zeppelin launch")
    everything = index.keyword_search(query_terms("standup zeppelin"), KeywordScope([general]), 50)
    assert len(everything) == 31, "without a floor every message holding a term is a hit"
    assert search(index, "standup zeppelin", [general], min_coverage=0.4) == [wanted.id]
    # What the floor would keep of the unbounded search is exactly what the bounded one returns.
    assert [h.msg_id for h in everything if h.coverage >= 0.4] == [wanted.id]


@settings(max_examples=300, deadline=None)
@given(
    weights=st.lists(st.floats(min_value=0.01, max_value=12.0), min_size=1, max_size=8),
    floor=st.sampled_from([0.1, 0.25, 0.4, 0.6, 0.9]),
    data=st.data(),
)
def test_every_message_that_can_clear_the_floor_holds_a_searched_term(
    weights: list[float], floor: float, data: st.DataObject
) -> None:
    terms: list[Term] = [(f"w{n}",) for n in range(len(weights))]
    weight = dict(zip(terms, weights, strict=True))
    # The caller may have left some terms out already (common words): they count as left out.
    searched = data.draw(st.lists(st.sampled_from(terms), min_size=1, unique=True))
    essential = _essential_terms(searched, weight, floor)
    assert essential and set(essential) <= set(searched)
    held = data.draw(st.sets(st.sampled_from(terms)))
    if term_coverage(held, weight) >= floor and held & set(searched):
        assert held & set(essential), "a message clearing the floor holds a term that is searched"


def test_long_lists_rank_the_newest_matches_and_every_message_holding_all_terms(
    workspace: Workspace, index: EmbeddedIndex | PgKeywordIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "KEYWORD_EXACT_MAX_MATCHES", 5)
    monkeypatch.setattr(index_module, "KEYWORD_NEWEST_MATCHES", 3)
    general, ops = workspace.rooms["general"].id, workspace.rooms["ops"].id
    alice = workspace["alice"].user.id
    both = workspace.store.post_message(general, alice, "alpha and beta together, long ago")
    alphas = [workspace.store.post_message(general, alice, f"alpha only {n}").id for n in range(10)]
    betas = [workspace.store.post_message(general, alice, f"beta only {n}").id for n in range(3)]
    for n in range(5):  # newer still, but out of scope: they never take the place of a match in scope
        workspace.store.post_message(ops, alice, f"alpha beta elsewhere {n}")
    hits = search(index, "alpha beta", [general])
    assert hits[0] == both.id, "the message holding every term is found however old"
    assert set(hits[1:]) == set(betas), "then the newest matches in scope"
    assert not set(hits) & set(alphas)


def test_prefixes_and_phrases_still_match_on_long_lists(
    workspace: Workspace, index: EmbeddedIndex | PgKeywordIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "KEYWORD_EXACT_MAX_MATCHES", 1)
    general = workspace.rooms["general"].id
    alice = workspace["alice"].user.id
    phrase = workspace.store.post_message(general, alice, "saw ERR_CONN_RESET during the frobnication")
    workspace.store.post_message(general, alice, "err, the conn was reset")
    assert search(index, "frobnic", [general]) == [phrase.id]
    assert search(index, "ERR_CONN_RESET", [general]) == [phrase.id]


@pytest.mark.anyio
async def test_the_app_gives_its_embedded_pipeline_the_keyword_floor_its_service_applies(
    settings: Settings, workspace: Workspace, data_dir: Path
) -> None:
    async with GuardedClient(OutboundPolicy(allow_hosts=("127.0.0.1",))) as outbound:
        handle = SearchHandle(settings, workspace.store, outbound=outbound, data_dir=data_dir)
        service = await handle.get()
        try:
            assert isinstance(service.pipeline, EmbeddedPipeline)
            assert service.options.floor.keyword_coverage == KEYWORD_MIN_COVERAGE
            assert service.pipeline.keyword_min_coverage == service.options.floor.keyword_coverage
        finally:
            await handle.aclose()
