"""Choose the relevance floor on judged data: sweep the semantic floor and the keyword coverage.

Calibrates on one judged set (default: Halden, the one with queries that have no answer) and reports
the other beside each row as held out, so a floor tuned to one workspace shows itself on the other.

    .venv/bin/python bench/calibrate_floor.py [--calibrate halden] [--semantic 0 0.3 0.35 ...]
        [--query 0 0.4 0.45 ...] [--coverage 0.3 0.4 0.5 ...] [--cjk 0.6 0.8 1.0]

Each query's pipeline answers (keyword hits with their coverage, semantic hits with their similarity)
are fetched once and replayed for every grid point through the real ``SearchService`` ranking, so the
sweep costs seconds. The objective is the mean over all queries of nDCG@10 (answerable queries) and
1 or 0 for "returned nothing" (no-answer queries): a floor that empties no-answer queries but also
answerable ones does not win. Precision (the share of the results returned that are judged relevant,
over the answerable queries that returned any) shows what nDCG does not: unrelated results below the
relevant ones. Two choices are printed: the best objective, and the best objective
among the floors that leave at least 90% of the no-answer queries empty (the target; the floor that
``retrieval/floor.py`` ships). Hybrid search only (the default search type).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from _judged_sets import JUDGED_SETS, JudgedSet
from ai_search import CandidateSource, PipelineFilters
from ai_search_server.retrieval.conditions import MessageConditions
from ai_search_server.retrieval.embedded import EmbeddedPipeline
from ai_search_server.retrieval.floor import RelevanceFloor
from ai_search_server.retrieval.search_service import SearchOptions, SearchService
from bench_relevance import NO_ANSWER, TARGET_NO_ANSWER, ndcg, prepare, request_for


class ReplayPipeline:
    """The embedded pipeline, each distinct call answered once and replayed after."""

    kind = "embedded"

    def __init__(self, pipeline: EmbeddedPipeline) -> None:
        self._pipeline = pipeline
        self._answers: dict[str, object] = {}

    @property
    def semantic_available(self) -> bool:
        return self._pipeline.semantic_available

    async def search(
        self,
        query: str,
        *,
        mode: CandidateSource,
        classifications: Sequence[str],
        pipeline_filters: PipelineFilters,
        limit: int,
        conditions: MessageConditions | None = None,
    ) -> object:
        wire = conditions.to_wire() if conditions is not None else None
        key = json.dumps([query, mode, list(classifications), pipeline_filters, limit, wire], sort_keys=True)
        if key not in self._answers:
            self._answers[key] = await self._pipeline.search(
                query,
                mode=mode,
                classifications=classifications,
                pipeline_filters=pipeline_filters,
                limit=limit,
                conditions=conditions,
            )
        return self._answers[key]

    async def aclose(self) -> None:
        """Nothing to release: the index belongs to the caller."""


async def score(
    judged: JudgedSet, store: Any, pipeline: ReplayPipeline, floor: RelevanceFloor
) -> dict[str, float]:
    service = SearchService(store, pipeline, replace(SearchOptions(), floor=floor))
    answered: list[float] = []
    paraphrase: list[float] = []
    empty_wrongly: list[bool] = []
    precision: list[float] = []
    no_answer: list[bool] = []
    for query in judged.queries():
        user = store.get_user_by_username(query["user"])
        outcome = await service.search(user, request_for(query["query"], "hybrid"))
        ranked = [hit.message.id for hit in outcome.hits]
        if query["kind"] == NO_ANSWER:
            no_answer.append(not ranked)
            continue
        value = ndcg(ranked, query["relevant"])
        if ranked:
            precision.append(sum(1 for m in ranked if m in query["relevant"]) / len(ranked))
        answered.append(value)
        empty_wrongly.append(not ranked)
        if query["kind"] == judged.paraphrase_kind:
            paraphrase.append(value)
    objective = statistics.fmean([*answered, *(1.0 if e else 0.0 for e in no_answer)])
    return {
        "objective": objective,
        "ndcg": statistics.fmean(answered),
        "paraphrase": statistics.fmean(paraphrase),
        "empty": statistics.fmean(empty_wrongly),
        "precision": statistics.fmean(precision) if precision else 0.0,
        "no_answer": statistics.fmean(no_answer) if no_answer else float("nan"),
    }


def _row(label: str, figures: dict[str, dict[str, float]], names: list[str]) -> str:
    cells = [label]
    for name in names:
        f = figures[name]
        cells += [f"{f['objective']:.3f}", f"{f['ndcg']:.3f}", f"{f['paraphrase']:.3f}", f"{f['empty']:.3f}"]
        cells.append(f"{f['precision']:.3f}")
        cells.append("" if f["no_answer"] != f["no_answer"] else f"{f['no_answer']:.3f}")
    return "| " + " | ".join(cells) + " |"


async def main_async(args: argparse.Namespace) -> None:
    names = [args.calibrate, *(n for n in JUDGED_SETS if n != args.calibrate)]
    loaded = {}
    for name in names:
        store, index = prepare(JUDGED_SETS[name], "local")
        loaded[name] = (store, index, ReplayPipeline(EmbeddedPipeline(index)))
    header = " | ".join(
        f"{n}{' (calibrated on)' if n == args.calibrate else ' (held out)'} objective | nDCG@10 | "
        f"{JUDGED_SETS[n].paraphrase_kind} | empty | precision | no-answer"
        for n in names
    )
    print(f"| semantic floor / query floor / CJK floor / keyword coverage | {header} |")
    print("|---" * (1 + 6 * len(names)) + "|")
    best: tuple[float, RelevanceFloor] | None = None
    best_on_target: tuple[float, RelevanceFloor] | None = None
    grid = [
        RelevanceFloor(
            semantic=s,
            semantic_query=q,
            semantic_cjk=c,
            keyword_coverage=k,
            keyword_opens_query_floor=o,
        )
        for o in args.opens
        for s in args.semantic
        for q in args.query
        for c in args.cjk
        for k in args.coverage
        if q == 0 or q >= s
    ]
    for floor in grid:
        figures = {}
        for name in names:
            store, _index, pipeline = loaded[name]
            figures[name] = await score(JUDGED_SETS[name], store, pipeline, floor)
        label = (
            f"{floor.semantic:.3f} / {floor.semantic_query:.3f} / {floor.semantic_cjk:.2f} / "
            f"{floor.keyword_coverage:.2f}{' / opens' if floor.keyword_opens_query_floor else ''}"
        )
        print(_row(label, figures, names), flush=True)
        mine = figures[args.calibrate]
        if best is None or mine["objective"] > best[0]:
            best = (mine["objective"], floor)
        on_target = mine["no_answer"] >= TARGET_NO_ANSWER
        if on_target and (best_on_target is None or mine["objective"] > best_on_target[0]):
            best_on_target = (mine["objective"], floor)
    for store, index, _pipeline in loaded.values():
        index.close()
        store.close()
    if best is not None:
        print(f"\nbest on {args.calibrate}: {best[1]} (objective {best[0]:.3f})")
    if best_on_target is not None:
        print(
            f"best on {args.calibrate} with no-answer precision >= {TARGET_NO_ANSWER}: {best_on_target[1]} "
            f"(objective {best_on_target[0]:.3f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrate", choices=sorted(JUDGED_SETS), default="halden")
    parser.add_argument(
        "--semantic", type=float, nargs="+", default=[0, 0.3, 0.35, 0.375, 0.4, 0.425, 0.45, 0.5]
    )
    parser.add_argument("--query", type=float, nargs="+", default=[0, 0.4, 0.425, 0.45, 0.475, 0.5])
    parser.add_argument("--cjk", type=float, nargs="+", default=[1.0])
    parser.add_argument(
        "--opens",
        type=lambda v: v == "yes",
        nargs="+",
        default=[True, False],
        help="whether a keyword result waives the query floor (yes/no)",
    )
    parser.add_argument("--coverage", type=float, nargs="+", default=[0.3, 0.4, 0.5, 0.6, 0.7])
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
