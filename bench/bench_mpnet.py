"""all-mpnet-base-v2 (the second-stage model) on ONNX Runtime, float32 and int8, beside MiniLM int8.

For each model, in a fresh process per round (so that memory is its own): the load (graph written from
the safetensors, then ONNX Runtime's session), the resident memory after the load, throughput over the
demo workspace's distinct texts embedded in calls of the indexing thread's size with ``--threads``
workers, and one short query alone, p50 and p95. Medians over ``--rounds`` rounds, the models
interleaved in each round. all-mpnet-base-v2 must be prepared (scripts/setup, or
``python -m ai_search_server.retrieval.mpnet prepare``).

    .venv/bin/python bench/bench_mpnet.py [--rounds 3] [--threads 2] [--texts N] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _figures import Figure, Report, percentile
from ai_search_server.demo import generate_demo_messages
from ai_search_server.retrieval.index import EMBED_BATCH_TEXTS

# Rounds (the report shows their median).
ROUNDS = 3
# Worker threads per embedder (the machine the figures are for has two cores).
THREADS = 2
# The models, in the order each round runs them.
MODELS = ("mpnet-float32", "mpnet-int8", "minilm-int8")
QUERIES = ["postgres failover", "why did billing keep failing after the database switched to the replica",
           "v2.14.0", "who is leading the new platform team", "customer charged twice"]  # fmt: skip
# Times each query is embedded alone per round.
QUERY_REPEATS = 10
# The child's answer on stdout starts with this, so that log lines cannot be mistaken for it.
_ANSWER = "bench_mpnet:"
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def _rss_mib() -> float:
    """This process's resident memory now (MiB), from /proc/self/statm."""
    resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    return resident_pages * _PAGE_BYTES / 2**20


def _load(model: str, threads: int) -> Any:
    from ai_search_server.retrieval.minilm_onnx import OnnxMiniLMEmbedder
    from ai_search_server.retrieval.mpnet import load_mpnet

    if model == "minilm-int8":
        return OnnxMiniLMEmbedder.load(precision="int8", threads=threads)
    return load_mpnet("int8" if model == "mpnet-int8" else "float32", threads=threads)


def _graph_seconds(model: str) -> float:
    """Seconds to write the model's graph from its safetensors (the part of the load that is ours;
    the rest is ONNX Runtime opening the session). Read again, after the other measurements."""
    from ai_search_server.retrieval.minilm import packaged_model_dir, read_safetensors
    from ai_search_server.retrieval.minilm_graph import build_minilm_graph
    from ai_search_server.retrieval.minilm_int8 import load_ranges
    from ai_search_server.retrieval.mpnet import prepared_model_dir
    from ai_search_server.retrieval.mpnet.embedder import load_mpnet_ranges
    from ai_search_server.retrieval.mpnet.graph import build_mpnet_graph

    if model == "minilm-int8":
        path = packaged_model_dir() / "model.safetensors"
        ranges = load_ranges(path)
        started = time.perf_counter()
        build_minilm_graph(read_safetensors(path), ranges=ranges)
    else:
        path = prepared_model_dir() / "model.safetensors"
        mpnet_ranges = load_mpnet_ranges().ranges if model == "mpnet-int8" else None
        started = time.perf_counter()
        build_mpnet_graph(read_safetensors(path), ranges=mpnet_ranges)
    return time.perf_counter() - started


def child(model: str, threads: int, count: int) -> dict[str, Any]:
    """One round of one model, in this (fresh) process."""
    import onnx  # noqa: F401  # imported before the clock starts: its import is not the model's load

    texts = sorted({str(row["text"]) for row in generate_demo_messages()})[:count]
    rss_before = _rss_mib()
    started = time.perf_counter()
    embedder = _load(model, threads)
    load_s = time.perf_counter() - started
    rss_loaded = _rss_mib()
    embedder.embed(texts[:EMBED_BATCH_TEXTS])  # first touch
    started, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(texts), EMBED_BATCH_TEXTS):
        embedder.embed(texts[start : start + EMBED_BATCH_TEXTS])
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu
    single = []
    for query in QUERIES * QUERY_REPEATS:
        started = time.perf_counter()
        embedder.embed([query])
        single.append((time.perf_counter() - started) * 1000)
    model_id = embedder.model_id
    embedder.close()
    del embedder
    graph_s = _graph_seconds(model)
    return {
        "model_id": model_id,
        "texts": len(texts),
        "load_s": load_s,
        "graph_s": graph_s,
        "rss_loaded_mib": rss_loaded,
        "rss_model_mib": rss_loaded - rss_before,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "texts_per_s": len(texts) / seconds,
        "texts_per_cpu_s": len(texts) / cpu_seconds,
        "query_p50_ms": percentile(single, 0.50),
        "query_p95_ms": percentile(single, 0.95),
    }


def run_child(model: str, threads: int, count: int) -> dict[str, Any]:
    """One round of `model` in a fresh interpreter (this script with --child), its figures."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", model, "--threads", str(threads), "--texts", str(count)],
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(line for line in done.stdout.splitlines() if line.startswith(_ANSWER))
    figures: dict[str, Any] = json.loads(line.removeprefix(_ANSWER))
    return figures


# Rows of the table: (key, heading, format).
ROWS = (
    ("texts_per_s", "texts/s", "{:.0f}"),
    ("texts_per_cpu_s", "texts per CPU-second", "{:.0f}"),
    ("query_p50_ms", "one query p50 ms", "{:.1f}"),
    ("query_p95_ms", "one query p95 ms", "{:.1f}"),
    ("load_s", "load s", "{:.2f}"),
    ("graph_s", "of which the graph written s", "{:.2f}"),
    ("rss_loaded_mib", "RSS after load MiB", "{:.0f}"),
    ("rss_model_mib", "of which the model MiB", "{:.0f}"),
    ("peak_rss_mib", "peak RSS MiB", "{:.0f}"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds (median of these)")
    parser.add_argument("--threads", type=int, default=THREADS, help="worker threads per embedder")
    parser.add_argument("--texts", type=int, default=0, help="embed only the first N demo texts (0: all)")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma list of {', '.join(MODELS)}")
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/_figures.py Report)")
    parser.add_argument("--child", choices=MODELS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    count = args.texts or len({str(row["text"]) for row in generate_demo_messages()})
    if args.child:
        print(_ANSWER + json.dumps(child(args.child, args.threads, count)), flush=True)
        return
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    rounds: dict[str, list[dict[str, Any]]] = {m: [] for m in models}
    for n in range(args.rounds):
        for model in models:  # interleaved, so that a busy minute touches every model alike
            rounds[model].append(run_child(model, args.threads, count))
            shown = {k: round(v, 2) for k, v in rounds[model][-1].items() if isinstance(v, float)}
            print(f"# round {n + 1}/{args.rounds} {model}: {shown}", file=sys.stderr, flush=True)
    load_average = os.getloadavg()

    def median(model: str, key: str) -> float:
        return statistics.median(r[key] for r in rounds[model])

    print(f"median of {args.rounds} rounds; {count} distinct demo texts in calls of {EMBED_BATCH_TEXTS}, "
          f"{args.threads} worker threads; one query: {len(QUERIES)} queries x {QUERY_REPEATS}")  # fmt: skip
    print("| figure | " + " | ".join(models) + " |")
    print("|---" * (len(models) + 1) + "|")
    for key, heading, shape in ROWS:
        print(f"| {heading} | " + " | ".join(shape.format(median(m, key)) for m in models) + " |")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in load_average)}; {os.cpu_count()} cores")

    report = Report(
        "mpnet",
        "all-mpnet-base-v2 (second stage) on ONNX Runtime beside MiniLM int8",
        method=(
            f"Each model in a fresh process per round: load (graph written, session opened), resident memory "
            f"after it, the {count} distinct demo texts embedded in calls of {EMBED_BATCH_TEXTS} with "
            f"{args.threads} workers, then each of {len(QUERIES)} short queries alone {QUERY_REPEATS} times."
        ),
        parameters={
            "rounds": args.rounds,
            "texts": count,
            "threads": args.threads,
            "load average (1, 5, 15 min) at the end": [round(x, 1) for x in load_average],
            **{f"model id {m}": rounds[m][0]["model_id"] for m in models},
        },
    )
    units = {
        "texts_per_s": "texts/s",
        "texts_per_cpu_s": "texts/s",
        "query_p50_ms": "ms",
        "query_p95_ms": "ms",
    }
    for model in models:
        for key, heading, _ in ROWS:
            unit = units.get(key, "MiB" if key.endswith("_mib") else "s")
            better = "higher" if key.startswith("texts") else "lower"
            report.add(Figure(f"{model}, {heading}", unit, [r[key] for r in rounds[model]], better=better))
    report.write(args.json)


if __name__ == "__main__":
    main()
