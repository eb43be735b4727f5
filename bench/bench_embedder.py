"""The local embedding model on each runtime, side by side: texts/s per length band, agreement, load.

Runtimes: ``numpy`` (retrieval/minilm.py, one BLAS thread), ``onnx`` and ``onnx-int8``
(retrieval/minilm_onnx.py) with one worker per core, and the ONNX runtimes again with one worker (a
figure less sensitive to other work on a shared machine; with ``texts per CPU-second`` it shows what a
core does). Texts are the demo workspace's distinct messages, cut into bands by words (1-5, 6-15,
16-40); each band is embedded in calls of the indexing thread's size (``EMBED_BATCH_TEXTS``), as an
index build does. Each of ``--rounds`` rounds loads every runtime, embeds every band, and times one
short query alone (the search path); the median over the rounds is printed.

    .venv/bin/python bench/bench_embedder.py [--rounds 3] [--runtimes numpy,onnx,onnx-int8] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _figures import Baseline, Figure, Report, Target, percentile
from ai_search_server.demo import generate_demo_messages
from ai_search_server.retrieval.index import EMBED_BATCH_TEXTS
from ai_search_server.retrieval.local_embedder import LOCAL_RUNTIMES, load_local_embedder
from ai_search_server.retrieval.minilm_onnx import default_threads

# Rounds (the report shows their median).
ROUNDS = 3
# Word-count bands of chat messages (inclusive); longer texts count in "all" only.
BANDS = {"1-5 words": (1, 5), "6-15 words": (6, 15), "16-40 words": (16, 40)}
ALL = "all"
QUERIES = ["postgres failover", "why did billing keep failing after the database switched to the replica",
           "v2.14.0", "who is leading the new platform team", "customer charged twice"]  # fmt: skip
# Times each query is embedded alone per round.
QUERY_REPEATS = 8
# The index-build throughput the fast path is built for (distinct texts/s on a 2-core machine).
TARGET_TEXTS_PER_SECOND = 1500


@dataclass(frozen=True)
class Variant:
    """One runtime at one worker count, as the report names it."""

    runtime: str
    threads: int

    @property
    def label(self) -> str:
        if self.runtime == "numpy":
            return "numpy"
        return f"{self.runtime} x{self.threads}"


def banded_texts() -> dict[str, list[str]]:
    texts = sorted({row["text"] for row in generate_demo_messages()})
    bands = {name: [t for t in texts if low <= len(t.split()) <= high] for name, (low, high) in BANDS.items()}
    return {**bands, ALL: texts}


def one_round(variant: Variant, bands: dict[str, list[str]]) -> dict[str, Any]:
    """Load, embed every band in index-sized calls, one query alone: seconds, texts/s, vectors."""
    started = time.perf_counter()
    embedder = load_local_embedder(variant.runtime, threads=variant.threads)
    figures: dict[str, Any] = {"load_s": time.perf_counter() - started}
    embed: Callable[[list[str]], np.ndarray] = embedder.embed  # type: ignore[assignment]
    embed(bands[ALL][:EMBED_BATCH_TEXTS])  # first touch of the weights
    total_seconds = total_cpu = 0.0
    for band, texts in bands.items():
        if band == ALL:
            continue
        started, cpu = time.perf_counter(), time.process_time()
        for start in range(0, len(texts), EMBED_BATCH_TEXTS):
            embed(texts[start : start + EMBED_BATCH_TEXTS])
        seconds = time.perf_counter() - started
        total_seconds += seconds
        total_cpu += time.process_time() - cpu
        figures[band] = len(texts) / seconds
    banded = sum(len(texts) for band, texts in bands.items() if band != ALL)
    figures[ALL] = banded / total_seconds
    figures["per_cpu_second"] = banded / total_cpu
    single = []
    for query in QUERIES * QUERY_REPEATS:
        started = time.perf_counter()
        embed([query])
        single.append((time.perf_counter() - started) * 1000)
    figures["query_p50_ms"] = percentile(single, 0.50)
    figures["vectors"] = embed(bands[ALL])
    figures["model_id"] = embedder.model_id
    close = getattr(embedder, "close", None)
    if close is not None:
        close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds (median of these)")
    parser.add_argument("--runtimes", default=",".join(reversed(LOCAL_RUNTIMES)), help="comma list")
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/_figures.py Report)")
    args = parser.parse_args()
    runtimes = [r.strip() for r in args.runtimes.split(",") if r.strip()]
    cores = default_threads()
    variants = [Variant("numpy", 1)] if "numpy" in runtimes else []
    for runtime in (r for r in runtimes if r != "numpy"):
        variants += [Variant(runtime, cores)] + ([Variant(runtime, 1)] if cores > 1 else [])
    bands = banded_texts()
    rounds: dict[Variant, list[dict[str, Any]]] = {v: [] for v in variants}
    for n in range(args.rounds):
        for variant in variants:  # interleaved, so that a busy minute touches every runtime alike
            rounds[variant].append(one_round(variant, bands))
            shown = {k: round(v, 1) for k, v in rounds[variant][-1].items() if isinstance(v, float)}
            print(f"# round {n + 1}/{args.rounds} {variant.label}: {shown}", file=sys.stderr)
    load_average = os.getloadavg()

    reference = rounds[variants[0]][0]["vectors"]
    agreement = {v: (rounds[v][0]["vectors"] * reference).sum(axis=1) for v in variants}

    def median(variant: Variant, key: str) -> float:
        return statistics.median(r[key] for r in rounds[variant])

    columns = [*BANDS, ALL]
    print(f"median of {args.rounds} rounds; {len(bands[ALL])} distinct demo texts; texts/s per band")
    print("| runtime | " + " | ".join(f"{c} ({len(bands[c])})" for c in columns)
          + " | texts per CPU-second | one query p50 ms | load s | cosine to numpy (min / mean) |")  # fmt: skip
    print("|---" * (len(columns) + 5) + "|")
    for v in variants:
        cells = [f"{median(v, c):.0f}" for c in columns]
        cells += [
            f"{median(v, 'per_cpu_second'):.0f}",
            f"{median(v, 'query_p50_ms'):.1f}",
            f"{median(v, 'load_s'):.2f}",
        ]
        cells.append(f"{agreement[v].min():.4f} / {agreement[v].mean():.4f}")
        print(f"| {v.label} | " + " | ".join(cells) + " |")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in load_average)}; {cores} cores")

    report = Report(
        "embedder",
        "Local embedding model: texts/s per runtime and length band",
        method=(
            f"all-MiniLM-L6-v2 on each local runtime, in-process: numpy (one BLAS thread), ONNX Runtime "
            f"float32 and int8 with {cores} workers and with 1. Texts: the {len(bands[ALL])} distinct demo "
            "messages, in bands by words; each band embedded in calls of "
            f"{EMBED_BATCH_TEXTS} texts (the indexing thread's call). 'all' is the banded texts' count over "
            "the bands' total time; texts per CPU-second divides by the process's CPU time instead (less "
            "sensitive to other work on the machine). One query: each of "
            f"{len(QUERIES)} queries alone {QUERY_REPEATS} times, p50. Rounds interleave the runtimes. "
            "Agreement: cosine of each text's vector to the numpy runtime's."
        ),
        parameters={
            "rounds": args.rounds,
            "texts": len(bands[ALL]),
            "cores": cores,
            "load average (1, 5, 15 min) at the end": [round(x, 1) for x in load_average],
            **{f"model id {v.label}": rounds[v][0]["model_id"] for v in variants},
        },
    )
    base = variants[0] if variants[0].runtime == "numpy" else None
    fastest = max(variants, key=lambda v: median(v, ALL))
    for v in variants:
        for column in columns:
            runs = [r[column] for r in rounds[v]]
            report.add(
                Figure(
                    f"{v.label}, {column}",
                    "texts/s",
                    runs,
                    baseline=Baseline("numpy", [r[column] for r in rounds[base]])
                    if base and v != base
                    else None,
                    target=Target(">=", TARGET_TEXTS_PER_SECOND) if v == fastest and column == ALL else None,
                    better="higher",
                )
            )
        report.add(
            Figure(
                f"{v.label}, texts per CPU-second",
                "texts/s",
                [r["per_cpu_second"] for r in rounds[v]],
                better="higher",
            )
        )
        report.add(Figure(f"{v.label}, one query p50", "ms", [r["query_p50_ms"] for r in rounds[v]]))
        report.add(Figure(f"{v.label}, load", "s", [r["load_s"] for r in rounds[v]]))
        if v != variants[0]:
            report.add(
                Figure(f"{v.label}, cosine to numpy, min", "", [float(agreement[v].min())], better="higher")
            )
            report.add(
                Figure(f"{v.label}, cosine to numpy, mean", "", [float(agreement[v].mean())], better="higher")
            )
    report.write(args.json)


if __name__ == "__main__":
    main()
