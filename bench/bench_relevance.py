"""Relevance of ai.search on the judged sets: nDCG@10, recall@10 and empty answers, per query kind.

The sets (``bench/_judged_sets.py``): the demo workspace with ``bench/relevance_judgments.json``, the
Halden workspace with ``bench/halden/judgments.json``, and the Ferry workspace (an open-source
project's support community) with ``bench/ferry/judgments.json``. Each is loaded into its own data dir under
``bench/out/`` with the embedded index and the local model (all-MiniLM-L6-v2; the first run embeds
about 2k messages per set, later runs reuse the durable index), then every judged query runs as its
user through the real search service (scoping, filters, fusion, the relevance floor), once per search
type. The figures of ``bench/relevance_baseline.json`` (the code before the relevance floor) are
printed beside today's.

    .venv/bin/python bench/bench_relevance.py [--sets demo halden ferry] [--embedder local|onnx-int8|onnx|numpy|none]
        [--per-query] [--semantic-weight 50] [--min-similarity P] [--semantic-floor S]
        [--query-floor S] [--cjk-floor S] [--keyword-coverage X] [--json PATH] [--write-baseline]
        [--database URL] [--keyword-index index|postgres]

``--database URL`` keeps each set's workspace on that PostgreSQL server instead (a database per set,
``bench/_pg_workspace.py``; the index beside it in ``bench/out/<set>-pg/``), and ``--keyword-index
postgres`` runs the keyword branch there (``retrieval/pg_keyword.py``) instead of FTS5, the
semantic branch unchanged: the same judged queries, one keyword index against the other.

The relevance floor defaults to the one calibrated for the embedder (``retrieval/floor.py``);
``--semantic-floor 0 --query-floor 0 --cjk-floor 0 --keyword-coverage 0`` turns it off.

Metrics (graded judgments: 2 answers the query, 1 is related), means over the queries of a kind:

- nDCG@10: DCG = sum (2^grade - 1) / log2(rank + 1) over the first 10 results, divided by the DCG of
  the ideal order of all judged messages (answerable queries only);
- recall@10: judged messages among the first 10 results / all judged messages, capped by 10;
- empty: the share of answerable queries that returned nothing (wrongly);
- no-answer precision: the share of no-answer queries (nothing in the workspace answers them) that
  returned nothing, which is what they should do.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from datetime import time as dtime
from pathlib import Path
from typing import Any

from _figures import Figure, Report, Target
from _judged_sets import JUDGED_SETS, JudgedSet
from _pg_workspace import bench_database
from ai_search import parse_search_filter_text
from ai_search_server.retrieval.embedded import EmbeddedPipeline
from ai_search_server.retrieval.embedder import Embedder
from ai_search_server.retrieval.floor import RelevanceFloor, floor_for
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.local_embedder import LOCAL_RUNTIMES
from ai_search_server.retrieval.pg_keyword import PgKeywordIndex
from ai_search_server.retrieval.search_service import SearchOptions, SearchRequest, SearchService
from ai_search_server.retrieval.second_stage import SecondStage
from ai_search_server.retrieval.second_stage.bands import bands_for
from ai_search_server.retrieval.second_stage.local import LocalStage
from ai_search_server.store import open_store
from ai_search_server.store.base import Store

ROOT = Path(__file__).resolve().parent
BASELINE = ROOT / "relevance_baseline.json"
# Results scored per query (the metrics' cut-off).
CUTOFF = 10
# How long to wait for the index to embed a workspace (seconds).
EMBED_WAIT_SECONDS = 1800
SEARCH_TYPES = ("keyword", "semantic", "hybrid")
NO_ANSWER = "no-answer"
# Targets on the judged sets: hybrid nDCG@10 overall and on paraphrases, no-answer precision.
TARGET_NDCG = 0.75
TARGET_PARAPHRASE_NDCG = 0.60
TARGET_NO_ANSWER = 0.90


def ndcg(ranked: list[str], grades: dict[str, int], k: int = CUTOFF) -> float:
    dcg = sum((2 ** grades.get(m, 0) - 1) / math.log2(i + 2) for i, m in enumerate(ranked[:k]))
    ideal = sorted(grades.values(), reverse=True)[:k]
    best = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / best if best else 0.0


def recall(ranked: list[str], grades: dict[str, int], k: int = CUTOFF) -> float:
    relevant = {m for m, g in grades.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant & set(ranked[:k])) / min(len(relevant), k)


@dataclass
class KindScores:
    """One search type's outcomes on the queries of one kind."""

    ndcg: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    empty: list[bool] = field(default_factory=list)
    # No result in the strong band (all results are strong where no bands apply).
    no_strong: list[bool] = field(default_factory=list)

    def add(self, ranked: list[str], grades: dict[str, int], strong: int | None = None) -> None:
        self.empty.append(not ranked)
        self.no_strong.append((len(ranked) if strong is None else strong) == 0)
        if grades:
            self.ndcg.append(ndcg(ranked, grades))
            self.recall.append(recall(ranked, grades))

    def summary(self) -> dict[str, float | int]:
        share_empty = statistics.fmean(self.empty) if self.empty else 0.0
        if not self.ndcg:  # no-answer queries: only "nothing strong" and "returned nothing" mean anything
            return {
                "queries": len(self.empty),
                "no_answer_precision": statistics.fmean(self.no_strong) if self.no_strong else 0.0,
                "no_answer_empty": share_empty,
            }
        return {
            "queries": len(self.empty),
            "ndcg": statistics.fmean(self.ndcg),
            "recall": statistics.fmean(self.recall),
            "empty": share_empty,
        }


# set -> search type -> kind ("all" = every answerable query) -> summary
Summary = dict[str, dict[str, dict[str, dict[str, float | int]]]]


def _day(value: str | None) -> datetime | None:
    return datetime.combine(date.fromisoformat(value), dtime(), UTC) if value else None


def request_for(line: str, search_type: str) -> SearchRequest:
    parsed = parse_search_filter_text(line)
    f = parsed.filters
    return SearchRequest(
        text=parsed.search_text,
        limit=CUTOFF,
        room_names=f.room_names,
        from_usernames=f.from_usernames,
        start_date=_day(f.start_date),
        end_date=_day(f.end_date),
        search_type=search_type,  # type: ignore[arg-type]
    )


def prepare(judged: JudgedSet, embedder_name: str, database: str = "") -> tuple[Store, EmbeddedIndex]:
    """The set's store (SQLite in its data dir, or a database of its own on ``database``'s server)
    and its embedded index, every message embedded."""
    database_url = bench_database(database, f"relevance_{judged.name}") if database else ""
    if database_url:
        judged = replace(judged, data_dir=judged.data_dir.with_name(judged.data_dir.name + "-pg"))
    store = open_workspace(judged, database_url)
    embedder = None
    if embedder_name != "none":
        from ai_search_server.retrieval.local_embedder import load_local_embedder

        embedder = load_local_embedder("auto" if embedder_name == "local" else embedder_name)
    return store, open_index(judged, store, embedder)


def open_workspace(judged: JudgedSet, database_url: str = "") -> Store:
    """The set's store, its workspace loaded on first use."""
    judged.data_dir.mkdir(parents=True, exist_ok=True)
    store = open_store(judged.data_dir, database_url=database_url)
    if store.count_messages() == 0:
        where = "PostgreSQL" if database_url else judged.data_dir
        print(f"loading the {judged.name} workspace into {where}", file=sys.stderr)
        judged.load(store)
    return store


def open_index(
    judged: JudgedSet,
    store: Store,
    embedder: Embedder | None,
    index_type: type[EmbeddedIndex] = EmbeddedIndex,
) -> EmbeddedIndex:
    """The set's embedded index in its data dir, every message embedded by ``embedder``."""
    started = time.perf_counter()
    index = index_type.open(judged.data_dir / INDEX_FILENAME, store, embedder, progress=True)
    if not index.wait_until_embedded(EMBED_WAIT_SECONDS):
        raise SystemExit("the index did not finish embedding in time")
    print(
        f"{judged.name}: index ready in {time.perf_counter() - started:.1f} s: {index.db.count()} messages, "
        f"{index.vector_count} vectors",
        file=sys.stderr,
    )
    return index


async def evaluate(
    judged: JudgedSet,
    store: Store,
    index: EmbeddedIndex,
    options: SearchOptions,
    per_query: bool,
    keyword: PgKeywordIndex | None = None,
    stage: SecondStage | None = None,
) -> dict[str, dict[str, dict[str, float | int]]]:
    """search type -> kind -> summary, for one set (`keyword`: the keyword branch on PostgreSQL;
    `stage`: the second stage, or None for the first stage alone)."""
    # As the app wires it: the pipeline knows the least keyword coverage the service can use.
    least = options.floor.keyword_coverage
    if options.bands is not None:
        least = min(least, options.bands.related_coverage)
    pipeline = EmbeddedPipeline(index, keyword_min_coverage=least, keyword=keyword)
    service = SearchService(store, pipeline, options, second_stage=stage)
    scores: dict[str, dict[str, KindScores]] = defaultdict(lambda: defaultdict(KindScores))
    for query in judged.queries():
        user = store.get_user_by_username(query["user"])
        assert user is not None, query["user"]
        row = [query["id"], query["kind"]]
        for search_type in SEARCH_TYPES:
            outcome = await service.search(user, request_for(query["query"], search_type))
            ranked = [hit.message.id for hit in outcome.hits]
            strong = outcome.report.strong
            scores[search_type][query["kind"]].add(ranked, query["relevant"], strong)
            if query["relevant"]:
                scores[search_type]["all"].add(ranked, query["relevant"], strong)
                row.append(f"{ndcg(ranked, query['relevant']):.2f}/{len(ranked)}")
            else:
                row.append(f"{'empty' if not ranked else len(ranked)}/{strong}")
        if per_query:
            print(" ".join(f"{cell:<12}" for cell in row), query["query"])
    return {t: {kind: s.summary() for kind, s in kinds.items()} for t, kinds in scores.items()}


def _cell(now: dict[str, Any] | None, before: dict[str, Any] | None, metric: str) -> str:
    if now is None or metric not in now:
        return ""
    text = f"{now[metric]:.3f}"
    if before is not None and metric in before:
        text += f" ({before[metric]:.3f})"
    return text


def print_table(name: str, summary: dict[str, Any], baseline: dict[str, Any] | None) -> None:
    """Per kind: nDCG@10, recall@10 and empty share of each search type; baseline in parentheses."""
    kinds = ["all", *sorted(k for k in summary["hybrid"] if k not in ("all", NO_ANSWER))]
    print(f"\n### {name} (today, baseline in parentheses)\n")
    header = " | ".join(f"{t} nDCG@10 | {t} recall@10 | {t} empty" for t in SEARCH_TYPES)
    print(f"| query kind (count) | {header} |")
    print("|---" * (1 + 3 * len(SEARCH_TYPES)) + "|")
    for kind in kinds:
        cells = []
        for search_type in SEARCH_TYPES:
            now = summary[search_type].get(kind)
            before = (baseline or {}).get(search_type, {}).get(kind)
            cells += [_cell(now, before, m) for m in ("ndcg", "recall", "empty")]
        print(f"| {kind} ({summary['hybrid'][kind]['queries']}) | " + " | ".join(cells) + " |")
    if NO_ANSWER in summary["hybrid"]:
        cells = []
        for search_type in SEARCH_TYPES:
            before = (baseline or {}).get(search_type, {}).get(NO_ANSWER)
            cells.append(_cell(summary[search_type][NO_ANSWER], before, "no_answer_precision"))
        count = summary["hybrid"][NO_ANSWER]["queries"]
        print(
            f"\nno-answer precision ({count} queries; share returning nothing): "
            + ", ".join(f"{t} {c}" for t, c in zip(SEARCH_TYPES, cells, strict=True))
        )


def build_report(summary: Summary, args: argparse.Namespace, messages: dict[str, int]) -> Report:
    """Hybrid figures per set, with the targets."""
    report = Report(
        "relevance",
        "Search quality on the judged sets: nDCG@10, recall@10, no-answer precision",
        method=(
            "The judged queries of "
            + ", ".join(
                f"{JUDGED_SETS[name].judgments.relative_to(ROOT.parent)} ({name} workspace, "
                f"{messages.get(name, 0):,} messages)"
                for name in summary
            )
            + ", graded 2 (answers) and 1 (related), each run as its "
            "user through the real search service (scoping, filters, fusion, relevance floor), 10 results. "
            "nDCG@10 divides the DCG of the first 10 results by that of the ideal order of every judged "
            "message; recall@10 counts judged messages among the first 10, capped by 10; no-answer "
            "precision is the share of queries with no answer in the workspace that return nothing. "
            "Means over the queries; deterministic, so one evaluation is one run."
        ),
        parameters={
            "sets": " ".join(summary),
            "embedder": args.embedder,
            "semantic weight": args.semantic_weight,
            "minimum similarity %": args.min_similarity,
            "semantic floor": args.semantic_floor,
            "query floor": args.query_floor,
            "CJK floor": args.cjk_floor,
            "keyword coverage": args.keyword_coverage,
        },
    )
    for name, by_type in summary.items():
        hybrid = by_type["hybrid"]
        paraphrase = JUDGED_SETS[name].paraphrase_kind
        rows: list[tuple[str, float, Target | None]] = [
            (f"{name}: hybrid nDCG@10", float(hybrid["all"]["ndcg"]), Target(">=", TARGET_NDCG)),
            (f"{name}: hybrid recall@10", float(hybrid["all"]["recall"]), None),
            (
                f"{name}: hybrid nDCG@10 on {paraphrase}",
                float(hybrid[paraphrase]["ndcg"]),
                Target(">=", TARGET_PARAPHRASE_NDCG),
            ),
            (f"{name}: hybrid answerable queries returning nothing", float(hybrid["all"]["empty"]), None),
        ]
        if NO_ANSWER in hybrid:
            rows.append(
                (
                    f"{name}: hybrid no-answer precision",
                    float(hybrid[NO_ANSWER]["no_answer_precision"]),
                    Target(">=", TARGET_NO_ANSWER),
                )
            )
        for label, value, target in rows:
            report.add(Figure(label, "", [value], target=target, better="higher", note="deterministic"))
    return report


def open_stage(judged: JudgedSet, store: Store) -> LocalStage:
    """The local second stage over the set's index, every message's vectors filled first."""
    from ai_search_server.retrieval.mpnet import load_mpnet

    started = time.perf_counter()
    stage = LocalStage.open(load_mpnet(), store, judged.data_dir, judged.data_dir / INDEX_FILENAME)
    stage.run_backfill(until_done=True)
    coverage = stage.coverage()
    print(
        f"{judged.name}: second stage {stage.model_id} ready in {time.perf_counter() - started:.1f} s: "
        f"{coverage.scored}/{coverage.total} messages",
        file=sys.stderr,
    )
    return stage


def print_side_by_side(name: str, runs: dict[str, Any]) -> None:
    """Hybrid search per kind with the second stage off and on."""
    off, on = runs["off"]["hybrid"], runs["local"]["hybrid"]
    print(f"\n### {name}: hybrid, second stage off → on\n")
    print("| query kind (count) | nDCG@10 | recall@10 | empty |")
    print("|---|---|---|---|")
    kinds = ["all", *sorted(k for k in on if k not in ("all", NO_ANSWER))]
    for kind in kinds:
        cells = [f"{off[kind][m]:.3f} → {on[kind][m]:.3f}" for m in ("ndcg", "recall", "empty")]
        print(f"| {kind} ({on[kind]['queries']}) | " + " | ".join(cells) + " |")
    if NO_ANSWER in on:
        a, b = off[NO_ANSWER], on[NO_ANSWER]
        print(
            f"\nno-answer ({b['queries']} queries): no strong result {a['no_answer_precision']:.3f} → "
            f"{b['no_answer_precision']:.3f}; nothing at all {a['no_answer_empty']:.3f} → {b['no_answer_empty']:.3f}"
        )


def chosen_floor(args: argparse.Namespace, model_id: str | None) -> RelevanceFloor:
    """The floor calibrated for the embedder, with the command line's values in its place."""
    calibrated = floor_for(model_id)
    return RelevanceFloor(
        semantic=calibrated.semantic if args.semantic_floor is None else args.semantic_floor,
        semantic_query=calibrated.semantic_query if args.query_floor is None else args.query_floor,
        semantic_cjk=calibrated.semantic_cjk if args.cjk_floor is None else args.cjk_floor,
        keyword_coverage=calibrated.keyword_coverage
        if args.keyword_coverage is None
        else args.keyword_coverage,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=sorted(JUDGED_SETS), default=sorted(JUDGED_SETS))
    parser.add_argument(
        "--embedder",
        choices=("local", *LOCAL_RUNTIMES, "none"),
        default="local",
        help="local: the fastest local runtime available; or one runtime by name",
    )
    parser.add_argument("--per-query", action="store_true")
    defaults = SearchOptions()
    parser.add_argument("--min-similarity", type=int, default=defaults.min_similarity_percent)
    parser.add_argument("--semantic-weight", type=int, default=defaults.semantic_weight)
    parser.add_argument("--recency-weight", type=int, default=defaults.recency_weight)
    parser.add_argument("--semantic-floor", type=float, help="similarity a semantic-only hit needs (0..1)")
    parser.add_argument(
        "--query-floor", type=float, help="similarity the query's best match needs for any semantic-only hit"
    )
    parser.add_argument("--cjk-floor", type=float, help="the same for a query written mostly in CJK (0..1)")
    parser.add_argument(
        "--keyword-coverage", type=float, help="share of the query's term weight a keyword hit needs (0..1)"
    )
    parser.add_argument(
        "--stage",
        choices=("local", "off", "both"),
        default="both",
        help="the second stage (all-mpnet-base-v2, local): on, off, or both side by side (the default)",
    )
    parser.add_argument(
        "--no-bands", action="store_true", help="the plain floor instead of the confidence bands"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/_figures.py Report)")
    parser.add_argument("--database", default="", help="a PostgreSQL server URL: each set's workspace there")
    parser.add_argument(
        "--keyword-index",
        choices=("index", "postgres"),
        default="index",
        help="the keyword branch on FTS5 (index.db) or on PostgreSQL (needs --database)",
    )
    parser.add_argument(
        "--write-baseline", action="store_true", help=f"store this run's figures as {BASELINE.name}"
    )
    args = parser.parse_args()
    if args.keyword_index == "postgres" and not args.database:
        parser.error("--keyword-index postgres needs --database URL")
    options = replace(
        defaults,
        semantic_weight=args.semantic_weight,
        min_similarity_percent=args.min_similarity,
        recency_weight=args.recency_weight,
    )
    baseline = json.loads(BASELINE.read_text(encoding="utf-8")) if BASELINE.exists() else {}
    summary: Summary = {}
    messages: dict[str, int] = {}
    stages = ("off", "local") if args.stage == "both" else (args.stage,)
    side: dict[str, dict[str, Any]] = {}
    for name in args.sets:
        judged = JUDGED_SETS[name]
        store, index = prepare(judged, args.embedder, args.database)
        keyword = None
        if args.keyword_index == "postgres":
            url = bench_database(args.database, f"relevance_{name}")
            keyword = PgKeywordIndex.open(url, store, progress=True)
        model_id = None if index.embedder is None else index.embedder.model_id
        options = replace(
            options,
            floor=chosen_floor(args, model_id),
            bands=None if args.no_bands else bands_for(model_id),
            model_bands=None,
        )
        try:
            for stage_name in stages:
                stage = open_stage(judged, store) if stage_name == "local" else None
                try:
                    result = asyncio.run(
                        evaluate(judged, store, index, options, args.per_query, keyword, stage)
                    )
                finally:
                    if stage is not None:
                        stage.close()
                side.setdefault(name, {})[stage_name] = result
                summary[name] = result
            messages[name] = store.count_messages()
        finally:
            if keyword is not None:
                keyword.close()
            index.close()
            store.close()
        label = "second stage on" if stages[-1] == "local" else "first stage only"
        print_table(
            f"{name} workspace ({messages[name]:,} messages), {label}", summary[name], baseline.get(name)
        )
        if len(stages) == 2:
            print_side_by_side(name, side[name])
    floor = options.floor
    print(
        f"\nsemantic weight {options.semantic_weight}, minimum similarity {options.min_similarity_percent}%, "
        f"recency weight {options.recency_weight}, floor: semantic {floor.semantic}, query "
        f"{floor.semantic_query}, CJK {floor.semantic_cjk}, "
        f"keyword coverage {floor.keyword_coverage}; embedder {args.embedder} ({model_id}); keyword index "
        f"{args.keyword_index}, store {'PostgreSQL' if args.database else 'SQLite'}"
    )
    if args.write_baseline:
        rounded = json.loads(json.dumps({**baseline, **summary}), parse_float=lambda x: round(float(x), 4))
        BASELINE.write_text(json.dumps(rounded, indent=1) + "\n", encoding="utf-8")
        print(f"baseline written to {BASELINE}", file=sys.stderr)
    build_report(summary, args, messages).write(args.json)


if __name__ == "__main__":
    main()
