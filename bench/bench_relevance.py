"""Relevance of ai.search on the demo workspace: nDCG@10 and recall@10, keyword vs semantic vs hybrid.

Loads the demo workspace (the dataset ``bench/relevance_judgments.json`` names) into a data dir, builds
the embedded index with the local model (all-MiniLM-L6-v2; the first run embeds ~2k messages, later
runs reuse the durable index), then runs every judged query as its user, through the real search
service (scoping, filters, fusion), once per search type, and prints the means per query kind.

    .venv/bin/python bench/bench_relevance.py [--data bench/out/relevance] [--embedder local|onnx-int8|onnx|numpy|none]
        [--per-query] [--min-similarity 0] [--semantic-weight 50] [--json PATH]

Metrics (graded judgments: 2 answers the query, 1 is related):

- nDCG@10: DCG = sum (2^grade - 1) / log2(rank + 1) over the first 10 results, divided by the DCG of
  the ideal order of all judged messages;
- recall@10: judged messages (grade 1 or 2) among the first 10 results / all judged messages, capped
  by 10 (a query with 29 judged messages can reach 1.0 with ten of them).
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
from datetime import UTC, date, datetime
from datetime import time as dtime
from pathlib import Path
from typing import Any

from _figures import Baseline, Figure, Report
from ai_search import parse_search_filter_text
from ai_search_server.demo import DEMO_USERS, generate_demo_messages
from ai_search_server.importer import import_rows
from ai_search_server.retrieval.embedded import EmbeddedPipeline
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.local_embedder import LOCAL_RUNTIMES
from ai_search_server.retrieval.service import (
    KEYWORD_FUSION_MIN_COVERAGE,
    SearchOptions,
    SearchRequest,
    SearchService,
)
from ai_search_server.store import open_store

ROOT = Path(__file__).resolve().parent
JUDGMENTS = ROOT / "relevance_judgments.json"
DEFAULT_DATA = ROOT / "out" / "relevance"
# Results scored per query (the metrics' cut-off).
CUTOFF = 10
# How long to wait for the index to embed the workspace (seconds).
EMBED_WAIT_SECONDS = 1800
SEARCH_TYPES = ("keyword", "semantic", "hybrid")


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


def prepare(data_dir: Path, embedder_name: str) -> tuple[Any, EmbeddedIndex]:
    store = open_store(data_dir)
    if store.count_messages() == 0:
        judgments = json.loads(JUDGMENTS.read_text(encoding="utf-8"))["dataset"]
        print(f"loading the demo workspace (seed {judgments['seed']}) into {data_dir}", file=sys.stderr)
        for user in DEMO_USERS:
            store.create_user(user.username, name=user.name, roles=(user.role,))
        import_rows(store, generate_demo_messages())
    embedder = None
    if embedder_name != "none":
        from ai_search_server.retrieval.local_embedder import load_local_embedder

        embedder = load_local_embedder("auto" if embedder_name == "local" else embedder_name)
    started = time.perf_counter()
    index = EmbeddedIndex.open(data_dir / INDEX_FILENAME, store, embedder, progress=True)
    if not index.wait_until_embedded(EMBED_WAIT_SECONDS):
        raise SystemExit("the index did not finish embedding in time")
    print(
        f"index ready in {time.perf_counter() - started:.1f} s: {index.db.count()} messages, "
        f"{index.vector_count} vectors",
        file=sys.stderr,
    )
    return store, index


async def evaluate(
    store: Any, index: EmbeddedIndex, options: SearchOptions, per_query: bool
) -> dict[str, Any]:
    judgments = json.loads(JUDGMENTS.read_text(encoding="utf-8"))["queries"]
    service = SearchService(store, EmbeddedPipeline(index), options)
    scores: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for query in judgments:
        user = store.get_user_by_username(query["user"])
        row = [query["id"], query["kind"]]
        for search_type in SEARCH_TYPES:
            outcome = await service.search(user, request_for(query["query"], search_type))
            ranked = [r["_id"] for r in outcome.results]
            pair = (ndcg(ranked, query["relevant"]), recall(ranked, query["relevant"]))
            scores[search_type][query["kind"]].append(pair)
            scores[search_type]["all"].append(pair)
            row.append(f"{pair[0]:.2f}/{pair[1]:.2f}")
        if per_query:
            print(" ".join(f"{cell:<12}" for cell in row), query["query"])
    return scores


def print_table(scores: dict[str, Any]) -> None:
    kinds = ["all", *sorted(k for k in scores["hybrid"] if k != "all")]
    print()
    print("| query kind (count) | " + " | ".join(f"{t} nDCG@10 | {t} recall@10" for t in SEARCH_TYPES) + " |")
    print("|---" * (1 + 2 * len(SEARCH_TYPES)) + "|")
    for kind in kinds:
        cells = []
        for search_type in SEARCH_TYPES:
            pairs = scores[search_type][kind]
            cells.append(f"{statistics.fmean(p[0] for p in pairs):.3f}")
            cells.append(f"{statistics.fmean(p[1] for p in pairs):.3f}")
        print(f"| {kind} ({len(scores['hybrid'][kind])}) | " + " | ".join(cells) + " |")


def build_report(scores: dict[str, Any], args: argparse.Namespace, messages: int) -> Report:
    """nDCG@10 and recall@10 over all judged queries, each search type beside keyword only."""
    queries = len(scores["hybrid"]["all"])
    report = Report(
        "relevance",
        "Search quality: nDCG@10 and recall@10",
        method=(
            f"The {queries} judged natural queries of bench/relevance_judgments.json (graded: 2 answers the "
            f"query, 1 is related) on the demo workspace ({messages:,} messages), each run as its user "
            "through the real search service (scoping, filters, fusion) once per search type, 10 results. "
            "nDCG@10 divides the DCG of the first 10 results by that of the ideal order of every judged "
            "message; recall@10 counts judged messages among the first 10, capped by 10. Means over the "
            "queries. Deterministic (same index, same queries, same scores), so one evaluation is one run; "
            "the baseline is the keyword-only branch (SQLite FTS5, BM25) on the same queries."
        ),
        parameters={
            "queries": queries,
            "embedder": args.embedder,
            "semantic weight": args.semantic_weight,
            "minimum similarity %": args.min_similarity,
            "recency weight": args.recency_weight,
            "keyword fusion coverage": args.fusion_coverage,
        },
    )
    for metric, position in (("nDCG@10", 0), ("recall@10", 1)):
        mean = {t: statistics.fmean(pair[position] for pair in scores[t]["all"]) for t in SEARCH_TYPES}
        for search_type in SEARCH_TYPES:
            report.add(
                Figure(
                    f"{search_type} {metric}",
                    "",
                    [mean[search_type]],
                    baseline=None
                    if search_type == "keyword"
                    else Baseline("keyword only", [mean["keyword"]]),
                    better="higher",
                    note="deterministic: one evaluation",
                )
            )
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--embedder",
        choices=("local", *LOCAL_RUNTIMES, "none"),
        default="local",
        help="local: the fastest local runtime available; or one runtime by name",
    )
    parser.add_argument("--per-query", action="store_true")
    parser.add_argument("--min-similarity", type=int, default=0)
    parser.add_argument("--semantic-weight", type=int, default=50)
    parser.add_argument("--recency-weight", type=int, default=0)
    parser.add_argument(
        "--fusion-coverage",
        type=float,
        default=KEYWORD_FUSION_MIN_COVERAGE,
        help="share of the query's weight a keyword hit needs to enter fusion (0..1)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/_figures.py Report)")
    args = parser.parse_args()
    store, index = prepare(args.data, args.embedder)
    options = SearchOptions(
        semantic_weight=args.semantic_weight,
        min_similarity_percent=args.min_similarity,
        recency_weight=args.recency_weight,
        keyword_fusion_min_coverage=args.fusion_coverage,
    )
    try:
        scores = asyncio.run(evaluate(store, index, options, args.per_query))
        messages = store.count_messages()
    finally:
        index.close()
        store.close()
    print_table(scores)
    print(
        f"\nsemantic weight {args.semantic_weight}, minimum similarity {args.min_similarity}%, "
        f"recency weight {args.recency_weight}, keyword fusion coverage {args.fusion_coverage}, "
        f"embedder {args.embedder}"
    )
    build_report(scores, args, messages).write(args.json)


if __name__ == "__main__":
    main()
