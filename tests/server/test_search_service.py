"""The search service with a scripted pipeline: degrading, the three scoping steps, ranking."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ai_search_server.retrieval.floor import RelevanceFloor
from ai_search_server.retrieval.pipeline_client import PipelineError
from ai_search_server.retrieval.search_service import SearchOptions, SearchRequest, SearchService

from ._search_fakes import ScriptedPipeline, hit
from ._search_support import hits_json, report_json
from .conftest import Workspace

pytestmark = pytest.mark.anyio


def every_message(workspace: Workspace, *, with_rid: bool = True, similarity: float = 0.5) -> dict:
    """A pipeline answer holding every stored message, whatever the filters said."""
    return {
        "results": [
            hit(m.id, m.room_id if with_rid else None, similarity=similarity)
            for m in workspace.messages.values()
        ]
    }


def service(workspace: Workspace, pipeline: ScriptedPipeline, **options: object) -> SearchService:
    return SearchService(workspace.store, pipeline, SearchOptions(**options))  # type: ignore[arg-type]


async def run(svc: SearchService, workspace: Workspace, user: str, text: str = "anything", **kw: object):
    return await svc.search(workspace[user].user, SearchRequest(text=text, limit=50, **kw))  # type: ignore[arg-type]


def keys(workspace: Workspace, results: list[dict]) -> list[str]:
    names = {m.id: k for k, m in workspace.messages.items()}
    return [names[r["_id"]] for r in results]


@pytest.mark.parametrize(
    ("failing", "branches", "reasons"),
    [
        pytest.param("semantic", {"keyword": "ok", "semantic": "failed"}, {"keyword"}, id="semantic-fails"),
        pytest.param("keyword", {"keyword": "failed", "semantic": "ok"}, {"semantic"}, id="keyword-fails"),
    ],
)
async def test_a_failing_branch_degrades_to_the_other(
    workspace: Workspace, failing: str, branches: dict, reasons: set[str]
) -> None:
    answers: dict[str, object] = {
        "keyword": {"results": [hit(workspace.messages["ops-3"].id)]},
        "semantic": {"results": [hit(workspace.messages["ops-4"].id, similarity=0.7)]},
    }
    answers[failing] = PipelineError("timeout", branch=failing, detail="http://pipeline.internal took 10 s")
    outcome = await run(service(workspace, ScriptedPipeline(answers)), workspace, "alice")
    assert len(hits_json(outcome)) == 1
    assert {r["matchReason"] for r in hits_json(outcome)} == reasons
    assert report_json(outcome)["branches"] == branches
    assert report_json(outcome)["degraded"] is True
    assert report_json(outcome)["notices"] == [
        f"The {failing} search did not answer in time; showing what else was found."
    ]
    assert "pipeline.internal" not in str(report_json(outcome))


async def test_both_branches_failing_gives_an_empty_degraded_answer(workspace: Workspace) -> None:
    pipeline = ScriptedPipeline(
        {
            "keyword": PipelineError("http-error", branch="keyword"),
            "semantic": PipelineError("unreachable", branch="semantic"),
        }
    )
    outcome = await run(service(workspace, pipeline), workspace, "alice")
    assert hits_json(outcome) == []
    assert report_json(outcome)["degraded"] is True
    assert report_json(outcome)["branches"] == {"keyword": "failed", "semantic": "failed"}


async def test_the_pipeline_filter_holds_only_readable_rooms(workspace: Workspace) -> None:
    pipeline = ScriptedPipeline()
    await run(
        service(workspace, pipeline),
        workspace,
        "carol",
        rids=(workspace.rooms["secret"].id, workspace.rooms["ops"].id),
    )
    readable_ops = workspace.rooms["ops"].id
    assert [c.filters["room_id"] for c in pipeline.calls] == [{"$eq": readable_ops}] * 2
    assert pipeline.calls[0].classifications == ["user", "admin"]


async def test_no_readable_requested_room_means_no_pipeline_call(workspace: Workspace) -> None:
    pipeline = ScriptedPipeline()
    outcome = await run(service(workspace, pipeline), workspace, "alice", room_names=("secret",))
    assert hits_json(outcome) == []
    assert pipeline.calls == []
    assert report_json(outcome)["notices"] == ["None of the requested rooms is one you can read."]


@pytest.mark.parametrize(
    "with_rid", [pytest.param(True, id="with-room-ids"), pytest.param(False, id="without-room-ids")]
)
async def test_a_pipeline_ignoring_the_filter_leaks_nothing(workspace: Workspace, with_rid: bool) -> None:
    pipeline = ScriptedPipeline(
        {mode: every_message(workspace, with_rid=with_rid) for mode in ("keyword", "semantic")}
    )
    outcome = await run(service(workspace, pipeline), workspace, "alice")
    assert sorted(keys(workspace, hits_json(outcome))) == [
        "dm-6",
        "dm-7",
        "general-1",
        "general-2",
        "ops-3",
        "ops-4",
    ]


async def test_a_ban_during_the_pipeline_call_counts(workspace: Workspace) -> None:
    general = workspace.rooms["general"].id
    alice = workspace["alice"].user.id

    def ban_then_answer(_query: str, _filters: object) -> object:
        workspace.store.set_banned(alice, general, True)
        return every_message(workspace)

    outcome = await run(
        service(workspace, ScriptedPipeline({"keyword": ban_then_answer})),
        workspace,
        "alice",
        search_type="keyword",
    )
    assert sorted(keys(workspace, hits_json(outcome))) == ["dm-6", "dm-7", "ops-3", "ops-4"]


async def test_deleted_and_unknown_messages_are_dropped(workspace: Workspace) -> None:
    workspace.store.delete_message(workspace.messages["ops-4"].id)
    answer = {
        "results": [
            hit(workspace.messages["ops-4"].id),
            hit("never-existed"),
            hit(workspace.messages["ops-3"].id),
        ]
    }
    outcome = await run(
        service(workspace, ScriptedPipeline({"keyword": answer})), workspace, "alice", search_type="keyword"
    )
    assert keys(workspace, hits_json(outcome)) == ["ops-3"]


@pytest.mark.parametrize(
    ("request_filters", "expected"),
    [
        pytest.param({"from_usernames": ("bob",)}, ["dm-7", "general-2"], id="author-rechecked-on-the-store"),
        pytest.param(
            {"start_date": datetime(2026, 11, 1, 9, 6, tzinfo=UTC)}, ["dm-6", "dm-7"], id="start-rechecked"
        ),
        pytest.param(
            {"end_date": datetime(2026, 11, 1, 9, 1, tzinfo=UTC)}, ["general-1"], id="end-rechecked"
        ),
        pytest.param({"room_names": ("ops",)}, ["ops-3", "ops-4"], id="room-filter-rechecked"),
    ],
)
async def test_filters_are_enforced_on_stored_messages(
    workspace: Workspace, request_filters: dict, expected: list[str]
) -> None:
    pipeline = ScriptedPipeline({"keyword": every_message(workspace)})
    outcome = await run(
        service(workspace, pipeline), workspace, "alice", search_type="keyword", **request_filters
    )
    assert sorted(keys(workspace, hits_json(outcome))) == expected


async def test_fusion_puts_messages_both_branches_found_first(workspace: Workspace) -> None:
    m = workspace.messages
    pipeline = ScriptedPipeline(
        {
            "keyword": {"results": [hit(m["general-1"].id), hit(m["ops-3"].id)]},
            "semantic": {"results": [hit(m["ops-4"].id, similarity=0.9), hit(m["ops-3"].id, similarity=0.8)]},
        }
    )
    outcome = await run(service(workspace, pipeline), workspace, "alice")
    assert keys(workspace, hits_json(outcome)) == ["ops-3", "ops-4", "general-1"]
    assert [r["matchReason"] for r in hits_json(outcome)] == ["both", "semantic", "keyword"]
    assert [r.get("score") for r in hits_json(outcome)] == [0.8, 0.9, None]


async def test_minimum_similarity_drops_weak_semantic_hits(workspace: Workspace) -> None:
    m = workspace.messages
    pipeline = ScriptedPipeline(
        {"semantic": {"results": [hit(m["ops-4"].id, similarity=0.69), hit(m["ops-3"].id, similarity=0.7)]}}
    )
    outcome = await run(
        service(workspace, pipeline, min_similarity_percent=70), workspace, "alice", search_type="semantic"
    )
    assert keys(workspace, hits_json(outcome)) == ["ops-3"]


async def test_recency_boost_lifts_newer_messages(workspace: Workspace) -> None:
    m = workspace.messages
    answer = {
        "results": [
            hit(m["general-1"].id, ts="2026-10-01T00:00:00Z"),
            hit(m["dm-7"].id, ts="2026-11-01T09:07:00Z"),
        ]
    }
    now = datetime(2026, 11, 2, tzinfo=UTC)
    plain = await run(
        service(workspace, ScriptedPipeline({"keyword": answer})), workspace, "alice", search_type="keyword"
    )
    boosted_service = SearchService(
        workspace.store,
        ScriptedPipeline({"keyword": answer}),
        SearchOptions(recency_weight=100, recency_half_life_days=1),
        clock=lambda: now,
    )
    boosted = await run(boosted_service, workspace, "alice", search_type="keyword")
    assert keys(workspace, hits_json(plain)) == ["general-1", "dm-7"]
    assert keys(workspace, hits_json(boosted)) == ["dm-7", "general-1"]


async def test_disabled_search_never_calls_the_pipeline(workspace: Workspace) -> None:
    pipeline = ScriptedPipeline({"keyword": every_message(workspace)})
    svc = service(workspace, pipeline, enabled=False)
    outcome = await run(svc, workspace, "alice")
    assert hits_json(outcome) == []
    assert pipeline.calls == []
    assert svc.status().enabled is False


async def test_limit_cuts_the_results(workspace: Workspace) -> None:
    pipeline = ScriptedPipeline({"keyword": every_message(workspace)})
    outcome = await service(workspace, pipeline).search(
        workspace["alice"].user, SearchRequest(text="x", limit=2, search_type="keyword")
    )
    assert len(hits_json(outcome)) == 2
    assert pipeline.calls[0].limit == 20  # candidates: max(limit, 5) x 3, at least 20


@pytest.mark.parametrize("search_type", [pytest.param(t, id=t) for t in ("hybrid", "keyword")])
async def test_keyword_hits_below_the_coverage_floor_are_no_results(
    workspace: Workspace, search_type: str
) -> None:
    m = workspace.messages
    keyword = {
        "results": [
            {**hit(m["general-1"].id), "id": m["general-1"].id, "coverage": 0.2},
            {**hit(m["ops-3"].id), "id": m["ops-3"].id, "coverage": 0.9},
        ]
    }
    semantic = {"results": [hit(m["ops-4"].id, similarity=0.6)]}
    pipeline = ScriptedPipeline({"keyword": keyword, "semantic": semantic})
    outcome = await run(
        service(workspace, pipeline, floor=RelevanceFloor(keyword_coverage=0.4)),
        workspace,
        "alice",
        search_type=search_type,
    )
    expected = {"hybrid": ["ops-3", "ops-4"], "keyword": ["ops-3"]}[search_type]
    assert sorted(keys(workspace, hits_json(outcome))) == expected


async def test_a_remote_pipelines_keyword_hits_carry_no_coverage_and_all_count(workspace: Workspace) -> None:
    pipeline = ScriptedPipeline({"keyword": {"results": [hit(workspace.messages["ops-3"].id)]}})
    svc = service(workspace, pipeline, floor=RelevanceFloor(keyword_coverage=0.9))
    outcome = await run(svc, workspace, "alice", search_type="keyword")
    assert keys(workspace, hits_json(outcome)) == ["ops-3"]


def _semantic(workspace: Workspace, similarities: dict[str, float]) -> dict:
    return {"results": [hit(workspace.messages[k].id, similarity=s) for k, s in similarities.items()]}


@pytest.mark.parametrize(
    ("floor", "similarities", "keyword_hits", "text", "expected"),
    [
        pytest.param(
            RelevanceFloor(semantic=0.3),
            {"ops-3": 0.5, "ops-4": 0.2},
            [],
            "deploy",
            ["ops-3"],
            id="a-semantic-only-hit-below-the-floor-is-no-result",
        ),
        pytest.param(
            RelevanceFloor(semantic=0.3),
            {"ops-3": 0.5, "ops-4": 0.2},
            ["ops-4"],
            "deploy",
            ["ops-3", "ops-4"],
            id="a-hit-the-keyword-branch-found-too-stands-on-its-words",
        ),
        pytest.param(
            RelevanceFloor(semantic=0.1, semantic_query=0.6),
            {"ops-3": 0.5, "ops-4": 0.4},
            [],
            "deploy",
            [],
            id="a-query-whose-best-match-is-weak-has-no-semantic-results",
        ),
        pytest.param(
            RelevanceFloor(semantic=0.1, semantic_query=0.6),
            {"ops-3": 0.5, "ops-4": 0.4},
            ["general-1"],
            "deploy",
            ["general-1", "ops-3", "ops-4"],
            id="a-keyword-result-waives-the-query-floor",
        ),
        pytest.param(
            RelevanceFloor(semantic=0.1, semantic_query=0.6, keyword_opens_query_floor=False),
            {"ops-3": 0.5, "ops-4": 0.4},
            ["general-1"],
            "deploy",
            ["general-1"],
            id="unless-told-not-to",
        ),
        pytest.param(
            RelevanceFloor(semantic=0.1, semantic_cjk=0.95),
            {"ops-3": 0.9, "ops-4": 0.4},
            [],
            "老化测试",
            [],
            id="a-cjk-query-has-the-cjk-floor",
        ),
        pytest.param(
            RelevanceFloor(semantic=0.1, semantic_cjk=0.95),
            {"ops-3": 0.9, "ops-4": 0.4},
            [],
            "burn-in test",
            ["ops-3", "ops-4"],
            id="a-latin-query-does-not",
        ),
    ],
)
async def test_the_relevance_floor(
    workspace: Workspace,
    floor: RelevanceFloor,
    similarities: dict[str, float],
    keyword_hits: list[str],
    text: str,
    expected: list[str],
) -> None:
    keyword = {"results": [hit(workspace.messages[k].id) for k in keyword_hits]}
    pipeline = ScriptedPipeline({"keyword": keyword, "semantic": _semantic(workspace, similarities)})
    outcome = await run(service(workspace, pipeline, floor=floor), workspace, "alice", text=text)
    assert sorted(keys(workspace, hits_json(outcome))) == expected


async def test_the_semantic_only_search_has_the_floor_too(workspace: Workspace) -> None:
    pipeline = ScriptedPipeline({"semantic": _semantic(workspace, {"ops-3": 0.5, "ops-4": 0.2})})
    svc = service(workspace, pipeline, floor=RelevanceFloor(semantic=0.3))
    outcome = await run(svc, workspace, "alice", search_type="semantic")
    assert keys(workspace, hits_json(outcome)) == ["ops-3"]
