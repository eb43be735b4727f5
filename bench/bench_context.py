"""Conversation-aware retrieval, measured before it is built: what each way of adding context does.

A chat message is short; the meaning of "ok, rolling it back now" lives in its thread. This bench
gives every message of both judged workspaces a context — the earlier messages of its thread (Rocket.
Chat's ``tmid``), or, outside a thread, the earlier messages of its room within a time window — and
measures, on the judged queries, what each choice does to hybrid search through the real ranking:

- what is embedded: the message **alone** (today), the message **with its context** as one text, or
  **both** vectors with the better similarity of the two kept (max-pooled);
- **mix**: no new embedding at all, the message's vector plus ``w`` times the mean of its context's
  message vectors (the index already holds them), renormalised;
- the window: how many earlier messages (``k``), how far back in the room (minutes).

    .venv/bin/python bench/bench_context.py [--sets demo halden] [--k 1 2 4] [--window 30]

Only earlier messages are context, so a message's context is fixed when it is posted (an index can
compute it once). Each variant's floors are re-calibrated on Halden (the similarities move with
context), with the demo held out, as ``calibrate_floor.py`` does. Vectors are cached in
``bench/out/context-cache/``, per workspace and model.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt

from _judged_sets import JUDGED_SETS, JudgedSet
from ai_search import CandidateSource, PipelineConfig, PipelineFilters, build_intelligent_search_request
from ai_search_server.retrieval.conditions import MessageConditions
from ai_search_server.retrieval.embedded import EmbeddedPipeline, parse_pipeline_request
from ai_search_server.retrieval.floor import RelevanceFloor
from ai_search_server.retrieval.index import EmbeddedIndex
from ai_search_server.retrieval.search_service import SearchOptions, SearchService
from ai_search_server.store.base import Store
from ai_search_server.store.records import Message
from bench_relevance import NO_ANSWER, TARGET_NO_ANSWER, ndcg, prepare, request_for
from calibrate_floor import ReplayPipeline

CACHE = Path(__file__).resolve().parent / "out" / "context-cache"
# Characters of context kept before the message (the model reads 256 tokens; the message must fit).
CONTEXT_MAX_CHARS = 600
_CONFIG = PipelineConfig("http://variant.invalid", "variant", "k", "s")
Vectors = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Variant:
    name: str
    embedded: str  # alone | context | both | mix
    k: int = 0
    window_minutes: int = 30
    weight: float = 0.0  # mix only


def contexts(messages: Sequence[Message], k: int, window: timedelta) -> list[list[int]]:
    """For each message (by position), the positions of up to `k` earlier messages of its conversation."""
    position = {m.id: i for i, m in enumerate(messages)}
    thread: dict[str, list[int]] = defaultdict(list)
    room_run: dict[str, list[int]] = defaultdict(list)
    found: list[list[int]] = []
    for i, m in enumerate(messages):
        if m.tmid is not None and m.tmid in position:
            earlier = thread[m.tmid][-(k - 1) :] if k > 1 else []
            found.append([position[m.tmid], *earlier][-k:] if k else [])
            thread[m.tmid].append(i)
            continue
        run = [j for j in room_run[m.room_id][-k:] if m.ts - messages[j].ts <= window] if k else []
        found.append(run)
        room_run[m.room_id].append(i)
    return found


def context_texts(messages: Sequence[Message], context: list[list[int]]) -> list[str]:
    texts = []
    for m, earlier in zip(messages, context, strict=True):
        before = "\n".join(messages[j].text for j in earlier)[-CONTEXT_MAX_CHARS:]
        texts.append(f"{before}\n{m.text}" if before else m.text)
    return texts


def _model(index: EmbeddedIndex) -> str:
    """The embedder's model id as a file name part (cached vectors are per vector space)."""
    assert index.embedder is not None
    return "".join(c if c.isalnum() else "_" for c in index.embedder.model_id)


def _normalise(rows: Vectors) -> Vectors:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.maximum(norms, 1e-12)


class VariantPipeline:
    """Keyword answers from the real pipeline; semantic ones scored on a variant's vectors."""

    kind = "embedded"
    semantic_available = True

    def __init__(
        self,
        real: EmbeddedPipeline,
        index: EmbeddedIndex,
        messages: Sequence[Message],
        vectors: list[Vectors],
    ) -> None:
        self._keyword = ReplayPipeline(real)
        self._index = index
        self._messages = messages
        self._vectors = vectors  # one matrix, or two to max-pool
        self._rooms = np.array([m.room_id for m in messages])
        self._users = np.array([m.username.lower() for m in messages])
        self._ts = np.array([int(m.ts.timestamp() * 1000) for m in messages])
        self._query_vectors: dict[str, Vectors] = {}

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
        # The judged queries carry no has:/is: conditions: the semantic replay has none to apply.
        if mode == "keyword":
            return await self._keyword.search(
                query,
                mode=mode,
                classifications=classifications,
                pipeline_filters=pipeline_filters,
                limit=limit,
                conditions=conditions,
            )
        body = build_intelligent_search_request(
            query,
            _CONFIG,
            classifications=classifications,
            pipeline_filters=pipeline_filters,
            limit=limit,
            mode=mode,
        ).body
        parsed = parse_pipeline_request(body)
        if parsed.query not in self._query_vectors:
            self._query_vectors[parsed.query] = self._index.embed_query(parsed.query)
        q = self._query_vectors[parsed.query]
        sims = np.max(np.stack([v @ q for v in self._vectors]), axis=0)
        mask = np.isin(self._rooms, list(parsed.rooms))
        if parsed.users is not None:
            mask &= np.isin(self._users, [u.lower() for u in parsed.users])
        if parsed.ts_min_ms is not None:
            mask &= self._ts >= parsed.ts_min_ms
        if parsed.ts_max_ms is not None:
            mask &= self._ts <= parsed.ts_max_ms
        scored = np.where(mask, sims, -np.inf)
        top = np.argsort(-scored)[: parsed.k]
        results = []
        for i in top:
            if not np.isfinite(scored[i]):
                break
            m = self._messages[i]
            results.append(
                {
                    "id": m.id,
                    "metadata": {"msg_id": m.id, "room_id": m.room_id},
                    "similarity": float(scored[i]),
                }
            )
        return {"results": results}

    async def aclose(self) -> None:
        """Nothing to release."""


def variant_vectors(
    name: str, variant: Variant, index: EmbeddedIndex, messages: Sequence[Message], alone: Vectors
) -> list[Vectors]:
    if variant.embedded == "alone":
        return [alone]
    context = contexts(messages, variant.k, timedelta(minutes=variant.window_minutes))
    if variant.embedded == "mix":
        mixed = alone.copy()
        for i, earlier in enumerate(context):
            if earlier:
                mixed[i] = alone[i] + variant.weight * alone[earlier].mean(axis=0)
        return [_normalise(mixed)]
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{name}-{_model(index)}-k{variant.k}-w{variant.window_minutes}.npy"
    if path.exists():
        with_context = np.load(path)
    else:
        assert index.embedder is not None
        texts = context_texts(messages, context)
        print(f"{name}: embedding {len(texts)} texts with context (k={variant.k})", file=sys.stderr)
        with_context = np.asarray(index.embedder.embed(texts), dtype=np.float32)
        np.save(path, with_context)
    return [with_context] if variant.embedded == "context" else [alone, with_context]


async def score(
    judged: JudgedSet, store: Store, pipeline: VariantPipeline, floor: RelevanceFloor
) -> dict[str, float]:
    service = SearchService(store, pipeline, replace(SearchOptions(), floor=floor))
    by_kind: dict[str, list[float]] = defaultdict(list)
    no_answer: list[bool] = []
    for query in judged.queries():
        user = store.get_user_by_username(query["user"])
        outcome = await service.search(user, request_for(query["query"], "hybrid"))
        ranked = [hit.message.id for hit in outcome.hits]
        if query["kind"] == NO_ANSWER:
            no_answer.append(not ranked)
            continue
        value = ndcg(ranked, query["relevant"])
        by_kind["all"].append(value)
        by_kind[query["kind"]].append(value)
    figures = {kind: statistics.fmean(values) for kind, values in by_kind.items()}
    figures["no_answer"] = statistics.fmean(no_answer) if no_answer else float("nan")
    figures["objective"] = statistics.fmean([*by_kind["all"], *(1.0 if e else 0.0 for e in no_answer)])
    return figures


VARIANTS = (
    Variant("message alone (today)", "alone"),
    *(Variant(f"mix k={k} w={w}", "mix", k=k, weight=w) for k in (1, 2, 4) for w in (0.3, 0.6, 1.0)),
    *(Variant(f"message+context k={k}", "context", k=k) for k in (1, 2, 4)),
    *(Variant(f"both max-pooled k={k}", "both", k=k) for k in (1, 2, 4)),
    Variant("both max-pooled k=2, 10 min", "both", k=2, window_minutes=10),
    Variant("both max-pooled k=2, 120 min", "both", k=2, window_minutes=120),
)
FLOORS = tuple(
    RelevanceFloor(semantic=s, semantic_query=q, semantic_cjk=1.0)
    for s in (0.25, 0.3, 0.35)
    for q in (0.0, 0.4, 0.45, 0.5, 0.55)
)


async def main_async(args: argparse.Namespace) -> None:
    loaded: dict[str, tuple[Store, EmbeddedIndex, list[Message], Vectors]] = {}
    for name in args.sets:
        store, index = prepare(JUDGED_SETS[name], "local")
        messages = [m for batch in store.iter_messages(batch_size=2000) for m in batch]
        messages.sort(key=lambda m: (m.ts, m.id))
        assert index.embedder is not None
        path = CACHE / f"{name}-{_model(index)}-alone.npy"
        CACHE.mkdir(parents=True, exist_ok=True)
        if path.exists():
            alone = np.load(path)
        else:
            alone = np.asarray(index.embedder.embed([m.text for m in messages]), dtype=np.float32)
            np.save(path, alone)
        loaded[name] = (store, index, messages, alone)
    calibrate = "halden" if "halden" in args.sets else args.sets[0]
    print(
        "| variant | floor (candidate / query) | "
        + " | ".join(
            f"{n} objective | nDCG@10 | {JUDGED_SETS[n].paraphrase_kind} | conversation | no-answer"
            for n in args.sets
        )
        + " | unfloored: "
        + " | ".join(f"{n} nDCG@10 | {JUDGED_SETS[n].paraphrase_kind}" for n in args.sets)
        + " |"
    )
    print("|---" * (2 + 5 * len(args.sets) + 2 * len(args.sets)) + "|")
    for variant in VARIANTS:
        if variant.k and variant.k not in args.k:
            continue
        pipelines = {}
        for name, (_store, index, messages, alone) in loaded.items():
            vectors = variant_vectors(name, variant, index, messages, alone)
            pipelines[name] = VariantPipeline(EmbeddedPipeline(index), index, messages, vectors)
        best: tuple[float, RelevanceFloor, dict[str, dict[str, float]]] | None = None
        for floor in FLOORS:
            figures = {n: await score(JUDGED_SETS[n], loaded[n][0], pipelines[n], floor) for n in args.sets}
            mine = figures[calibrate]
            if mine["no_answer"] >= TARGET_NO_ANSWER and (best is None or mine["objective"] > best[0]):
                best = (mine["objective"], floor, figures)
        open_floor = RelevanceFloor(semantic=0.0, semantic_query=0.0, semantic_cjk=1.0)
        unfloored = {
            n: await score(JUDGED_SETS[n], loaded[n][0], pipelines[n], open_floor) for n in args.sets
        }
        cells = [variant.name]
        if best is None:
            cells += ["no floor reaches the no-answer target"] + [""] * (5 * len(args.sets))
        else:
            _objective, floor, figures = best
            cells.append(f"{floor.semantic:.2f} / {floor.semantic_query:.2f}")
            for n in args.sets:
                f = figures[n]
                para = JUDGED_SETS[n].paraphrase_kind
                cells += [
                    f"{f['objective']:.3f}",
                    f"{f['all']:.3f}",
                    f"{f[para]:.3f}",
                    f"{f.get('conversation', float('nan')):.3f}",
                    f"{f['no_answer']:.3f}",
                ]
        for n in args.sets:
            cells += [f"{unfloored[n]['all']:.3f}", f"{unfloored[n][JUDGED_SETS[n].paraphrase_kind]:.3f}"]
        print("| " + " | ".join(c.replace("nan", "") for c in cells) + " |", flush=True)
    for store, index, _messages, _alone in loaded.values():
        index.close()
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=sorted(JUDGED_SETS), default=sorted(JUDGED_SETS))
    parser.add_argument("--k", type=int, nargs="+", default=[1, 2, 4])
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
