"""The local embedding model (all-MiniLM-L6-v2 in numpy): load time, throughput, one query, tokenizer share.

Texts are the demo workspace's messages. Prints: the load time (weights memory-mapped, transposed
once), sentences per second embedding batches of 64 and of 256 (what the indexing thread hands the
model at once; the model sorts a call's texts by length), the latency of one short
query (the search path), and how much of the time the pure-Python WordPiece tokenizer takes.

    .venv/bin/python bench/bench_embedder.py [--texts 2048] [--blas-threads 1]

``--blas-threads 0`` keeps OpenBLAS's default thread count (the product caps it at 1, see
``minilm.limit_blas_threads``).
"""

from __future__ import annotations

import argparse
import statistics
import time

from ai_search_server.demo import generate_demo_messages
from ai_search_server.retrieval.index import EMBED_BATCH_TEXTS
from ai_search_server.retrieval.minilm import MiniLMEmbedder, limit_blas_threads

QUERIES = ["postgres failover", "why did billing keep failing after the database switched to the replica",
           "v2.14.0", "who is leading the new platform team", "customer charged twice"]  # fmt: skip
BATCH = 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2048)
    parser.add_argument("--blas-threads", type=int, default=1)
    args = parser.parse_args()
    started = time.perf_counter()
    model = MiniLMEmbedder.load(single_threaded_blas=False)
    load_seconds = time.perf_counter() - started
    if args.blas_threads:
        limit_blas_threads(args.blas_threads)
    demo = [row["text"] for row in generate_demo_messages()]
    texts = (demo * (args.texts // len(demo) + 1))[: args.texts]
    model.embed(texts[:BATCH])  # first touch of the mapped weights
    started = time.perf_counter()
    tokens = [len(model.tokenize(text)) for text in texts]
    tokenize_seconds = time.perf_counter() - started
    throughput = {}
    for batch in (BATCH, EMBED_BATCH_TEXTS):
        started = time.perf_counter()
        for start in range(0, len(texts), batch):
            model.embed(texts[start : start + batch])
        throughput[batch] = time.perf_counter() - started
    embed_seconds = throughput[BATCH]
    single = []
    for query in QUERIES * 40:
        started = time.perf_counter()
        model.embed([query])
        single.append(time.perf_counter() - started)
    single.sort()
    print(f"load: {load_seconds:.2f} s")
    for batch, seconds in throughput.items():
        print(
            f"batches of {batch}: {len(texts) / seconds:.1f} sentences/s "
            f"({len(texts)} demo texts, {statistics.fmean(tokens):.1f} tokens on average)"
        )
    print(f"tokenizer share of that: {tokenize_seconds / embed_seconds * 100:.1f} %")
    print(
        f"one query: p50 {single[len(single) // 2] * 1000:.1f} ms, p99 {single[int(len(single) * 0.99)] * 1000:.1f} ms"
    )
    print(f"BLAS threads: {args.blas_threads or 'default'}")


if __name__ == "__main__":
    main()
