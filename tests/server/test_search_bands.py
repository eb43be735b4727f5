"""Bands through the search service: every hit says its band, the report counts them, a second
stage re-scores, and one that fails leaves the first stage's answer with a notice."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from ai_search_server.retrieval.embedded import EmbeddedPipeline
from ai_search_server.retrieval.index import EmbeddedIndex
from ai_search_server.retrieval.search_service import SearchOptions, SearchRequest, SearchService
from ai_search_server.retrieval.second_stage import Passage, SecondStageError, StageCoverage
from ai_search_server.retrieval.second_stage.bands import BandPolicy

from ._search_support import EMBED_WAIT_SECONDS, hits_json, open_test_index, report_json
from .conftest import Workspace

pytestmark = pytest.mark.anyio

POLICY = BandPolicy(
    strong=0.6,
    related=0.2,
    strong_coverage=0.6,
    related_coverage=0.25,
    stage_weight=1.0,
    keyword_weight={"words": 0.6, "phrase": 0.3},
)


class ScriptedStage:
    """A second stage at the network seam: scores from a table, or fails."""

    kind = "rerank"

    def __init__(self, scores: Mapping[str, float], *, model_id: str = "rerank:tei:test", fail: bool = False):
        self.scores = dict(scores)
        self.model_id = model_id
        self.fail = fail
        self.asked: list[list[str]] = []

    async def score(self, query: str, passages: Sequence[Passage]) -> Mapping[str, float]:
        self.asked.append([p.id for p in passages])
        if self.fail:
            raise SecondStageError(f"second stage {self.model_id}: the endpoint answered 500")
        return {p.id: self.scores[p.id] for p in passages if p.id in self.scores}

    def coverage(self) -> StageCoverage:
        return StageCoverage(3, 4)

    async def aclose(self) -> None:
        return None


@pytest.fixture
def index(workspace: Workspace, data_dir: Path) -> Iterator[EmbeddedIndex]:
    opened = open_test_index(workspace.store, data_dir)
    assert opened.wait_until_embedded(EMBED_WAIT_SECONDS)
    yield opened
    opened.close()


def service(
    index: EmbeddedIndex, workspace: Workspace, stage: ScriptedStage | None = None, **options
) -> SearchService:
    pipeline = EmbeddedPipeline(index, keyword_min_coverage=POLICY.related_coverage)
    return SearchService(
        workspace.store, pipeline, SearchOptions(bands=POLICY, **options), second_stage=stage
    )


async def test_every_hit_carries_its_band_and_the_report_counts_them(
    workspace: Workspace, index: EmbeddedIndex
) -> None:
    alice = workspace["alice"].user
    outcome = await service(index, workspace).search(alice, SearchRequest("deploy failed billing"))
    hits = hits_json(outcome)
    assert hits, "the ops message holds every word"
    assert hits[0]["msgId"] == workspace.messages["ops-3"].id
    assert hits[0]["band"] == "strong"
    bands = [h["band"] for h in hits]
    assert bands == sorted(bands, key=lambda b: b != "strong"), "strong results come first"
    retrieval = report_json(outcome)
    assert retrieval["bands"] == {"strong": bands.count("strong"), "related": bands.count("related")}


async def test_a_query_in_words_no_one_used_finds_nothing(workspace: Workspace, index: EmbeddedIndex) -> None:
    outcome = await service(index, workspace).search(
        workspace["alice"].user, SearchRequest("xyzzyplugh qwertzuiop")
    )
    assert outcome.hits == ()
    assert report_json(outcome)["bands"] == {"strong": 0, "related": 0}


async def test_the_second_stage_decides_order_and_band(workspace: Workspace, index: EmbeddedIndex) -> None:
    failed, fine = workspace.messages["ops-3"], workspace.messages["general-2"]
    # A stage calibrated with these thresholds: it believes the general message, not the ops one.
    stage = ScriptedStage({fine.id: 0.9, failed.id: 0.1})
    svc = service(index, workspace, stage, stage_thresholds=(0.6, 0.2))
    outcome = await svc.search(workspace["alice"].user, SearchRequest("why did the deploy go"))
    hits = hits_json(outcome)
    assert hits[0]["msgId"] == fine.id and hits[0]["band"] == "strong"
    assert stage.asked and fine.id in stage.asked[0]
    assert report_json(outcome)["secondStage"] == {
        "kind": "rerank",
        "model": "rerank:tei:test",
        "coverage": 0.75,
        "state": "ok",
    }


async def test_an_uncalibrated_stage_orders_within_bands_but_does_not_move_them(
    workspace: Workspace, index: EmbeddedIndex
) -> None:
    alice = workspace["alice"].user
    request = SearchRequest("deploy")
    plain = hits_json(await service(index, workspace).search(alice, request))
    ids = [h["msgId"] for h in plain]
    assert len(ids) >= 2
    reversed_scores = {msg_id: float(n) for n, msg_id in enumerate(ids)}  # the last first
    staged = hits_json(await service(index, workspace, ScriptedStage(reversed_scores)).search(alice, request))
    assert {(h["msgId"], h["band"]) for h in staged} == {(h["msgId"], h["band"]) for h in plain}
    strong = [h["msgId"] for h in staged if h["band"] == "strong"]
    assert strong == [i for i in reversed(ids) if i in strong]


async def test_a_failing_stage_leaves_the_first_stage_answer_and_says_so(
    workspace: Workspace, index: EmbeddedIndex
) -> None:
    alice = workspace["alice"].user
    request = SearchRequest("deploy failed billing")
    plain = hits_json(await service(index, workspace).search(alice, request))
    outcome = await service(index, workspace, ScriptedStage({}, fail=True)).search(alice, request)
    assert hits_json(outcome) == plain
    retrieval = report_json(outcome)
    assert retrieval["secondStage"]["state"] == "failed"
    assert any("Re-ranking is unavailable" in n for n in retrieval["notices"])


async def test_scoping_holds_with_bands(workspace: Workspace, index: EmbeddedIndex) -> None:
    """alice is not in #secret: no band, no stage score brings its message in."""
    secret = workspace.messages["secret-5"]
    stage = ScriptedStage({secret.id: 1.0})
    svc = service(index, workspace, stage, stage_thresholds=(0.6, 0.2))
    outcome = await svc.search(workspace["alice"].user, SearchRequest("acquisition closes in march"))
    assert secret.id not in [h["msgId"] for h in hits_json(outcome)]
    assert all(secret.id not in asked for asked in stage.asked)


async def test_sort_new_keeps_strong_above_related(workspace: Workspace, index: EmbeddedIndex) -> None:
    alice = workspace["alice"].user
    outcome = await service(index, workspace).search(
        alice, replace(SearchRequest("deploy failed billing"), sort="new")
    )
    bands = [h["band"] for h in hits_json(outcome)]
    assert bands == sorted(bands, key=lambda b: b != "strong")


@pytest.fixture
def banded_app(app, settings, workspace: Workspace, index: EmbeddedIndex):  # type: ignore[no-untyped-def]
    from ai_search_server.retrieval.wiring import SearchHandle

    stage = ScriptedStage({m.id: 0.9 for m in workspace.messages.values()})
    svc = service(index, workspace, stage, stage_thresholds=(0.6, 0.2))
    app.state.services.search = SearchHandle.ready(settings, workspace.store, svc)
    return app


async def test_the_rest_answer_carries_bands_and_the_stage(banded_app, client, workspace: Workspace) -> None:  # type: ignore[no-untyped-def]
    response = await client.get(
        "/api/v1/ai.search", params={"q": "deploy failed billing"}, headers=workspace["alice"].headers
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert [r["band"] for r in body["intelligent"]][:1] == ["strong"]
    retrieval = body["meta"]["retrieval"]
    assert retrieval["bands"]["strong"] == sum(r["band"] == "strong" for r in body["intelligent"])
    assert retrieval["secondStage"]["coverage"] == 0.75


async def test_the_status_route_says_how_far_the_second_stage_has_come(  # type: ignore[no-untyped-def]
    banded_app, client, workspace: Workspace
) -> None:
    response = await client.get("/api/v1/ai.search.status", headers=workspace["bob"].headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["searchEnabled"] is True
    assert body["index"] == {"messages": len(workspace.messages), "pendingEmbeddings": 0}
    assert body["secondStage"] == {
        "kind": "rerank",
        "model": "rerank:tei:test",
        "coverage": 0.75,
        "scored": 3,
        "total": 4,
    }
    assert (await client.get("/api/v1/ai.search.status")).status_code == 401
