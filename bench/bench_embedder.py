"""The local embedding model (all-MiniLM-L6-v2 in numpy): load time, throughput, one query, tokenizer share.

Texts are the demo workspace's messages. Each of ``--rounds`` rounds loads the model (weights
memory-mapped, transposed once), embeds the texts in batches of 64 and of 256 (what the indexing
thread hands the model at once; the model sorts a call's texts by length), times one short query
(the search path) 40 times, and times the pure-Python WordPiece tokenizer alone; the median over the
rounds is printed.

    .venv/bin/python bench/bench_embedder.py [--texts 512] [--rounds 5] [--blas-threads 1] [--json PATH]

``--blas-threads 0`` keeps OpenBLAS's default thread count (the product caps it at 1, see
``minilm.limit_blas_threads``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _figures import Figure, Report, percentile
from ai_search_server.demo import generate_demo_messages
from ai_search_server.retrieval.index import EMBED_BATCH_TEXTS
from ai_search_server.retrieval.minilm import MiniLMEmbedder, limit_blas_threads

QUERIES = ["postgres failover", "why did billing keep failing after the database switched to the replica",
           "v2.14.0", "who is leading the new platform team", "customer charged twice"]  # fmt: skip
BATCH = 64
# Rounds (the report shows their median), texts embedded per batch size in a round, and how often
# each query is embedded alone in a round.
ROUNDS = 5
TEXTS = 512
QUERY_REPEATS = 8


def one_round(texts: list[str], blas_threads: int) -> dict[str, float]:
    """Load the model and measure it once: seconds, sentences/s per batch size, one-query ms."""
    started = time.perf_counter()
    model = MiniLMEmbedder.load(single_threaded_blas=False)
    figures = {"load_s": time.perf_counter() - started}
    if blas_threads:
        limit_blas_threads(blas_threads)
    model.embed(texts[:BATCH])  # first touch of the mapped weights
    started = time.perf_counter()
    for text in texts:
        model.tokenize(text)
    tokenize_seconds = time.perf_counter() - started
    for batch in (BATCH, EMBED_BATCH_TEXTS):
        started = time.perf_counter()
        for start in range(0, len(texts), batch):
            model.embed(texts[start : start + batch])
        seconds = time.perf_counter() - started
        figures[f"batch_{batch}"] = len(texts) / seconds
        if batch == BATCH:
            figures["tokenizer_share"] = tokenize_seconds / seconds * 100
    single = []
    for query in QUERIES * QUERY_REPEATS:
        started = time.perf_counter()
        model.embed([query])
        single.append((time.perf_counter() - started) * 1000)
    figures["query_p50_ms"] = percentile(single, 0.50)
    figures["query_p95_ms"] = percentile(single, 0.95)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=TEXTS, help="texts embedded per batch size and round")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds (median of these)")
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/_figures.py Report)")
    args = parser.parse_args()
    demo = [row["text"] for row in generate_demo_messages()]
    texts = (demo * (args.texts // len(demo) + 1))[: args.texts]
    rounds = []
    for n in range(args.rounds):
        rounds.append(one_round(texts, args.blas_threads))
        print(f"# round {n + 1}/{args.rounds}: {rounds[-1]}", file=sys.stderr)
    tokens = statistics.fmean(len(MiniLMEmbedder.load().tokenize(text)) for text in texts)

    def median(key: str) -> float:
        return statistics.median(r[key] for r in rounds)

    print(f"median of {args.rounds} rounds; {len(texts)} demo texts, {tokens:.1f} tokens on average")
    print(f"load: {median('load_s'):.2f} s")
    for batch in (BATCH, EMBED_BATCH_TEXTS):
        print(f"batches of {batch}: {median(f'batch_{batch}'):.1f} sentences/s")
    print(f"tokenizer share of batches of {BATCH}: {median('tokenizer_share'):.1f} %")
    print(f"one query: p50 {median('query_p50_ms'):.1f} ms, p95 {median('query_p95_ms'):.1f} ms")
    print(f"BLAS threads: {args.blas_threads or 'default'}")

    report = Report(
        "embedder",
        "Embedding model: load, throughput, one query",
        method=(
            "The packaged all-MiniLM-L6-v2 run in numpy (retrieval/minilm.py), in-process. Each round "
            "loads the model (weights memory-mapped; after the first round they are in the page cache), "
            f"embeds {len(texts)} demo-workspace messages ({tokens:.1f} WordPiece tokens on average) in "
            f"batches of {BATCH} and of {EMBED_BATCH_TEXTS} (what the indexing thread hands the model), "
            f"then embeds each of {len(QUERIES)} search queries alone {QUERY_REPEATS} times (the search "
            "path; p50 and p95 of those), and times the pure-Python tokenizer over the texts. "
            f"BLAS threads: {args.blas_threads or 'OpenBLAS default'}."
        ),
        parameters={
            "rounds": args.rounds,
            "texts": len(texts),
            "mean tokens": round(tokens, 1),
            "BLAS threads": args.blas_threads or "default",
        },
    )
    runs = {key: [r[key] for r in rounds] for key in rounds[0]}
    report.add(Figure("model load", "s", runs["load_s"]))
    report.add(
        Figure(f"embedding, batches of {BATCH}", "sentences/s", runs[f"batch_{BATCH}"], better="higher")
    )
    report.add(
        Figure(
            f"embedding, batches of {EMBED_BATCH_TEXTS}",
            "sentences/s",
            runs[f"batch_{EMBED_BATCH_TEXTS}"],
            better="higher",
            note="the indexing thread's batch",
        )
    )
    report.add(Figure("one query, p50", "ms", runs["query_p50_ms"]))
    report.add(Figure("one query, p95", "ms", runs["query_p95_ms"]))
    report.add(Figure(f"tokenizer share of batches of {BATCH}", "%", runs["tokenizer_share"]))
    report.write(args.json)


if __name__ == "__main__":
    main()
