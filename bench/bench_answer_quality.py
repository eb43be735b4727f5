"""Extractive answers on the demo workspace: does the first cited sentence come from a message that answers?

Runs every question of ``bench/answer_judgments.json`` as its user the way the search page does: one
search through the real search service (the embedded pipeline with the fastest local model runtime,
hybrid, the app's search settings, 50 results, the caller's rooms only), the first 20 results (ids
and scores) sent to the answer service with no language model configured, so the answer is
extractive. Then, per question:

- **first cited sentence answers**: the answer's first sentence that cites a source cites a message
  judged to answer the question (answerable questions);
- **begins with a question**: the answer's first sentence is a question (ends with ``?``, or asks
  "why did / how did / what is ..."): an answer must never do that;
- **says so plainly**: for a question nothing readable answers, the answer cites nothing.

``--baseline-ref REF`` (for instance ``main``) also runs the same evaluation on that git revision's
``py/`` (``git archive``, in a child process, on its own copy of the workspace and index beside
``--data``) and prints both side by side, so a change is measured against the code it replaces on
the same machine.

    .venv/bin/python bench/bench_answer_quality.py [--data bench/out/relevance] [--per-question]
        [--baseline-ref main] [--json PATH]

Deterministic: the same index, questions and code give the same answers, so one run is one figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
JUDGMENTS = BENCH / "answer_judgments.json"
DEFAULT_DATA = BENCH / "out" / "relevance"
# Results one search returns, as the page asks (`intelligentCount`).
SEARCH_RESULTS = 50
# Results the page sends to the answer route (MAX_SEARCH_ANSWER_MESSAGES).
ANSWER_SOURCES = 20
# The share of answerable questions whose first cited sentence should come from an answering message.
TARGET_FIRST_CITED_SHARE = 0.8

# Written here rather than imported, so the evaluation runs unchanged on an older revision's code.
_CITATION = re.compile(r"\[([0-9]{1,6})\]")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")
_ASKS = re.compile(
    r"\b(why|how|what|who|when|where|which)\s+(did|do|does|is|are|was|were|can|could|should|would|will|didn't|"
    r"doesn't|isn't|wasn't)\b",
    re.IGNORECASE,
)


def sentences(answer: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(answer) if part.strip()]


def is_question(sentence: str) -> bool:
    bare = _CITATION.sub("", sentence).strip()
    return bare.endswith("?") or bool(_ASKS.search(bare))


def first_cited(answer: str) -> int | None:
    for sentence in sentences(answer):
        found = _CITATION.search(sentence)
        if found:
            return int(found.group(1))
    return None


async def evaluate(data_dir: Path) -> list[dict[str, Any]]:
    """Every judged question's answer, as rows: id, kind, answer, first cited msgId, verdicts."""
    sys.path.insert(0, str(BENCH))
    import dataclasses

    from _judged_sets import JUDGED_SETS
    from ai_search import AnswerSourceRef
    from ai_search_server.answers.answer_service import AnswerService
    from ai_search_server.retrieval.embedded import EmbeddedPipeline
    from ai_search_server.retrieval.search_service import SearchRequest, SearchService
    from ai_search_server.retrieval.wiring import search_options
    from ai_search_server.settings import load_settings
    from bench_relevance import prepare

    store, index = prepare(dataclasses.replace(JUDGED_SETS["demo"], data_dir=data_dir), "local")
    settings = load_settings(environ={}, overrides={})
    rows = []
    try:
        # The search settings the app runs with (the relevance floor of the embedder that loaded).
        model_id = index.embedder.model_id if index.embedder is not None else None
        search = SearchService(store, EmbeddedPipeline(index), search_options(settings, model_id))
        answers = AnswerService(settings, store, None)
        for question in json.loads(JUDGMENTS.read_text(encoding="utf-8"))["questions"]:
            user = store.get_user_by_username(question["user"])
            outcome = await search.search(
                user, SearchRequest(text=question["question"], limit=SEARCH_RESULTS)
            )
            refs = [AnswerSourceRef(h.message.id, h.score) for h in outcome.hits[:ANSWER_SOURCES]]
            if not refs:
                rows.append({"id": question["id"], "answer": "", "first": None, "cited": []})
                continue
            result = await answers.answer(user, question["question"], refs)
            by_number = {c.n: c.msg_id for c in result.citations}
            number = first_cited(result.answer)
            rows.append(
                {
                    "id": question["id"],
                    "answer": result.answer,
                    "first": by_number.get(number) if number is not None else None,
                    "cited": [c.msg_id for c in result.citations],
                }
            )
    finally:
        index.close()
        store.close()
    return rows


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    questions = {q["id"]: q for q in json.loads(JUDGMENTS.read_text(encoding="utf-8"))["questions"]}
    answerable = [r for r in rows if questions[r["id"]]["answers"]]
    unanswerable = [r for r in rows if not questions[r["id"]]["answers"]]
    first_ok = [r for r in answerable if r["first"] in questions[r["id"]]["answers"]]
    any_ok = [r for r in answerable if set(r["cited"]) & set(questions[r["id"]]["answers"])]
    asks = [r for r in rows if r["answer"] and is_question(sentences(r["answer"])[0])]
    plain = [r for r in unanswerable if not r["cited"]]
    return {
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "first_cited_share": len(first_ok) / len(answerable),
        "any_cited_share": len(any_ok) / len(answerable),
        "begins_with_question": len(asks),
        "plain_share": len(plain) / len(unanswerable) if unanswerable else 0.0,
        "misses": [r["id"] for r in answerable if r not in first_ok],
        "asking": [r["id"] for r in asks],
    }


def run_baseline(ref: str, data_dir: Path) -> list[dict[str, Any]]:
    """The evaluation on revision ``ref``'s ``py/``, in a child process, on a data dir of its own
    beside ``data_dir`` (a store this revision migrated is refused by older code); its rows."""
    data_dir = data_dir.with_name(f"{data_dir.name}-{re.sub(r'[^A-Za-z0-9_.-]', '_', ref)}")
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", ref, "py"], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        out = Path(tmp) / "rows.json"
        code = (
            "import asyncio, json, sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]; "
            "import bench_answer_quality as b; "
            "open(sys.argv[4], 'w').write(json.dumps(asyncio.run(b.evaluate(b.Path(sys.argv[3])))))"
        )
        subprocess.run(
            [sys.executable, "-c", code, str(Path(tmp) / "py"), str(BENCH), str(data_dir), str(out)],
            check=True,
        )
        rows: list[dict[str, Any]] = json.loads(out.read_text(encoding="utf-8"))
        return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    questions = {q["id"]: q for q in json.loads(JUDGMENTS.read_text(encoding="utf-8"))["questions"]}
    for row in rows:
        question = questions[row["id"]]
        ok = row["first"] in question["answers"] if question["answers"] else not row["cited"]
        first_line = (row["answer"].splitlines() or [""])[0]
        print(f"{row['id']} {'ok  ' if ok else 'MISS'} {question['question']}\n     {first_line[:160]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="data dir of the demo and its index")
    parser.add_argument("--per-question", action="store_true", help="print each question's first line")
    parser.add_argument("--baseline-ref", help="also evaluate this git revision's py/ (e.g. main)")
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/_figures.py Report)")
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT / "py"), str(BENCH)]
    from _figures import Baseline, Figure, Report, Target

    baseline = score(run_baseline(args.baseline_ref, args.data)) if args.baseline_ref else None
    rows = asyncio.run(evaluate(args.data))
    figures = score(rows)
    if args.per_question:
        print_rows(rows)
    label = f"{args.baseline_ref}" if args.baseline_ref else ""
    print(f"\n{figures['answerable']} answerable and {figures['unanswerable']} unanswerable questions")
    for key, name in (
        ("first_cited_share", "first cited sentence from an answering message"),
        ("any_cited_share", "some citation to an answering message"),
        ("begins_with_question", "answers that begin with a question"),
        ("plain_share", "unanswerable questions answered plainly (no citation)"),
    ):
        before = f"   ({label}: {baseline[key]:.3g})" if baseline else ""
        print(f"{name:<58} {figures[key]:.3g}{before}")
    print(f"misses: {' '.join(figures['misses']) or '-'}; asking: {' '.join(figures['asking']) or '-'}")

    report = Report(
        "answer-quality",
        "Extractive answers: first cited sentence from an answering message",
        method=(
            f"The {figures['answerable'] + figures['unanswerable']} judged questions of "
            "bench/answer_judgments.json, each searched as its user through the real search service "
            f"(embedded pipeline, local model, hybrid, {SEARCH_RESULTS} results) and answered by the answer "
            f"service with no language model from the first {ANSWER_SOURCES} results. Share of answerable "
            "questions whose first cited sentence cites a judged answering message; answers whose first "
            "sentence is a question. Deterministic: one evaluation."
            + (f" Baseline: the same evaluation on {args.baseline_ref}'s code." if baseline else "")
        ),
        parameters={
            "questions": len(rows),
            "search results": SEARCH_RESULTS,
            "answer sources": ANSWER_SOURCES,
        },
    )

    def base(key: str) -> Baseline | None:
        return Baseline(f"{args.baseline_ref}'s code", [baseline[key]]) if baseline else None

    report.add(
        Figure(
            "first cited sentence answers",
            "",
            [figures["first_cited_share"]],
            baseline=base("first_cited_share"),
            target=Target(">=", TARGET_FIRST_CITED_SHARE),
            better="higher",
        )
    )
    report.add(
        Figure(
            "answers beginning with a question",
            "answers",
            [figures["begins_with_question"]],
            baseline=base("begins_with_question"),
            target=Target("<=", 0),
            better="lower",
        )
    )
    report.add(
        Figure(
            "unanswerable questions said plainly",
            "",
            [figures["plain_share"]],
            baseline=base("plain_share"),
            better="higher",
        )
    )
    report.write(args.json)


if __name__ == "__main__":
    main()
