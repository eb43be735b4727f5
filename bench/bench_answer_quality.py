"""Extractive answers on the judged sets: does the first cited sentence come from a message that answers?

Runs every question of ``bench/answer_judgments.json`` (the demo workspace), of
``bench/halden/judgments.json`` and ``bench/ferry/judgments.json`` (other workspaces, judged for the
relevance bench by other hands: see ``load_questions``) as its user the way the search page does: one
search through the real search service (the embedded pipeline with the fastest local model runtime,
hybrid, the app's search settings, 50 results, the caller's rooms only), the first 20 results (ids
and scores) sent to the answer service with no language model configured, so the answer is
extractive. Then, per question:

- **first cited sentence answers**: the answer's first sentence that cites a source cites a message
  judged to answer the question (answerable questions);
- **begins with a question**: the answer's first sentence is a question (ends with ``?``, or asks
  "why did / how did / what is ..."): an answer must never do that;
- **says so plainly**: for a question nothing readable answers, the answer cites nothing or says
  that the sources do not answer;
- **per kind**: the first figure for each kind of question, read from its first words by this
  script (who, when, why, how/what, yes/no; keyword: no question at all), before and after.

``--baseline-ref REF`` (for instance ``main``) also runs the same evaluation on that git revision's
``py/`` (``git archive``, in a child process, on its own copy of the workspace and index beside
``--data``) and prints both side by side, so a change is measured against the code it replaces on
the same machine.

    .venv/bin/python bench/bench_answer_quality.py [--set demo|halden|halden-asked|ferry|ferry-asked|all]
        [--per-question]
        [--baseline-ref main] [--json PATH]

A baseline revision's rows are kept in ``bench/out`` by its commit and set, so they are computed once.

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
HALDEN_JUDGMENTS = BENCH / "halden" / "judgments.json"
HALDEN_QUESTIONS = BENCH / "halden" / "answer_questions.json"
FERRY_JUDGMENTS = BENCH / "ferry" / "judgments.json"
FERRY_QUESTIONS = BENCH / "ferry" / "answer_questions.json"
DEFAULT_DATA = {
    "demo": BENCH / "out" / "relevance",
    "halden": BENCH / "out" / "relevance-halden",
    "halden-asked": BENCH / "out" / "relevance-halden",
    "ferry": BENCH / "out" / "relevance-ferry",
    "ferry-asked": BENCH / "out" / "relevance-ferry",
}
SETS = ("demo", "halden", "halden-asked", "ferry", "ferry-asked")
# The workspace each set asks about (bench/_judged_sets.py).
WORKSPACE = {
    "demo": "demo",
    "halden": "halden",
    "halden-asked": "halden",
    "ferry": "ferry",
    "ferry-asked": "ferry",
}
# Sets of written questions, each naming its answers; sets drawn from a relevance set's judgments.
ASKED = {"demo": JUDGMENTS, "halden-asked": HALDEN_QUESTIONS, "ferry-asked": FERRY_QUESTIONS}
FROM_RELEVANCE = {"halden": HALDEN_JUDGMENTS, "ferry": FERRY_JUDGMENTS}
# Results one search returns, as the page asks (`intelligentCount`).
SEARCH_RESULTS = 50
# Results the page sends to the answer route (MAX_SEARCH_ANSWER_MESSAGES).
ANSWER_SOURCES = 20
# The share of answerable questions whose first cited sentence should come from an answering message.
TARGET_FIRST_CITED_SHARE = 0.9
# The kinds of question, by their form (``question_form``), in the order the table shows them.
FORMS = ("who", "when", "why", "how/what", "yes/no", "keyword")

# Written here rather than imported, so the evaluation runs unchanged on an older revision's code.
_CITATION = re.compile(r"\[([0-9]{1,6})\]")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")
_ASKS = re.compile(
    r"\b(why|how|what|who|when|where|which)\s+(did|do|does|is|are|was|were|can|could|should|would|will|didn't|"
    r"doesn't|isn't|wasn't)\b",
    re.IGNORECASE,
)
# An answer that says the sources do not answer (the extractive answer's own words, before and after).
_SAYS_NO_ANSWER = re.compile(r"\bdo(es)? not answer\b", re.IGNORECASE)
# A question's form, from its first words: the kind of answer it asks for (``FORMS``). Written here
# (not the product's ``question_kinds``) so that the code measured cannot move its own yardstick.
_FORM_PATTERNS = (
    ("who", r"^(who|whom|whose)\b|^which\s+(person|people|engineer|team|one of us)\b"),
    ("when", r"^when\b|^(what|which)\s+(time|day|date|week|month)\b|^by when\b"),
    ("why", r"^(why|how come)\b|^what\s+(caused|causes|made|went wrong)\b"),
    ("yes/no", r"^(is|are|was|were|do|does|did|can|could|will|would|should|shall|has|have|had)\b"),
    ("how/what", r"^(how|what|which|where)\b"),
)


def question_form(question: str) -> str:
    """The form of a question (``FORMS``): who, when, why, how/what, yes/no, or keyword (no question)."""
    text = question.strip().casefold()
    for form, pattern in _FORM_PATTERNS:
        if re.search(pattern, text):
            return form
    return "keyword"


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


def says_no_answer(answer: str) -> bool:
    """Whether the answer says the sources do not answer (it may still show the closest messages)."""
    return bool(_SAYS_NO_ANSWER.search((answer.splitlines() or [""])[0]))


def load_questions(set_name: str) -> list[dict[str, Any]]:
    """The judged questions of a set, each ``{id, question, user, answers, form}`` (``answers`` empty:
    nothing the user reads answers it).

    demo: ``bench/answer_judgments.json``, written for these answers (and tuned on, before issue 36).
    halden-asked: ``bench/halden/answer_questions.json``, written for issue 36 by reading the Halden
    conversations before the answerer changed, never tuned on. halden: every query of
    ``bench/halden/judgments.json`` (written for the relevance bench, by other hands, on another
    workspace), its messages graded 2 ("answers the query": the cause for a why, the decision for
    what did we decide, the figure asked for) as its answers; a no-answer query has none. Queries
    that are no question (identifiers, keywords) ask Ask AI for a summary: its first citation should
    still be a message that answers. ferry-asked and ferry: the same two kinds over the Ferry
    workspace (``bench/ferry/answer_questions.json``, ``bench/ferry/judgments.json``), written before
    any answer was run on it.
    """
    if set_name in ASKED:
        found = json.loads(ASKED[set_name].read_text(encoding="utf-8"))["questions"]
        return [
            {"id": q["id"], "question": q["question"], "user": q["user"], "answers": q["answers"],
             "form": question_form(q["question"])}
            for q in found
        ]  # fmt: skip
    out = []
    for q in json.loads(FROM_RELEVANCE[set_name].read_text(encoding="utf-8"))["queries"]:
        answers = sorted(m for m, grade in q["relevant"].items() if grade >= 2)
        if not answers and q["kind"] != "no-answer":
            continue
        out.append(
            {"id": q["id"], "question": q["query"], "user": q["user"], "answers": answers,
             "form": question_form(_search_words(q["query"]))}
        )  # fmt: skip
    return out


def _search_words(line: str) -> str:
    """A query line's words without its filters (``in:#ops``): what the page asks the answer with."""
    return " ".join(word for word in line.split() if not re.match(r"^-?[a-z]+:\S", word))


async def evaluate(data_dir: Path, set_name: str = "demo") -> list[dict[str, Any]]:
    """Every judged question's answer, as rows: id, answer, first cited msgId, cited msgIds."""
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

    store, index = prepare(dataclasses.replace(JUDGED_SETS[WORKSPACE[set_name]], data_dir=data_dir), "local")
    settings = load_settings(environ={}, overrides={})
    rows = []
    try:
        # The search settings the app runs with (the relevance floor of the embedder that loaded).
        model_id = index.embedder.model_id if index.embedder is not None else None
        search = SearchService(store, EmbeddedPipeline(index), search_options(settings, model_id))
        answers = AnswerService(settings, store, None)
        for question in load_questions(set_name):
            user = store.get_user_by_username(question["user"])
            outcome = await search.search(
                user, SearchRequest(text=question["question"], limit=SEARCH_RESULTS)
            )
            refs = [AnswerSourceRef(h.message.id, h.score) for h in outcome.hits[:ANSWER_SOURCES]]
            if not refs:
                rows.append({"id": question["id"], "answer": "", "first": None, "cited": []})
                continue
            asked = _search_words(question["question"]) or question["question"]
            result = await answers.answer(user, asked, refs)
            drawn = _drawn(store, answers, user, refs)
            by_number = {c.n: c.msg_id for c in result.citations}
            number = first_cited(result.answer)
            rows.append(
                {
                    "id": question["id"],
                    "answer": result.answer,
                    "first": by_number.get(number) if number is not None else None,
                    "cited": [c.msg_id for c in result.citations],
                    # Every message the answer could quote: its sources and their conversations.
                    "drawn": drawn,
                }
            )
    finally:
        index.close()
        store.close()
    return rows


def _drawn(store: Any, answers: Any, user: Any, refs: list[Any]) -> list[str]:
    """The ids of every message an extractive answer over ``refs`` reads (sources and context)."""
    from ai_search_server.answers.context import load_context
    from ai_search_server.answers.sources import loaded_source

    try:
        sources = answers.load_sources(user, refs)
    except Exception:  # no source with text: the answer reads nothing
        return []
    rooms = store.get_rooms({s.rid for s in sources})
    readable = store.readable_room_ids(user.id)
    drawn = load_context(store, readable, sources, lambda message: loaded_source(message, rooms))
    return [s.msg_id for s in (*drawn.sources, *drawn.context)]


def _verdict(question: dict[str, Any], row: dict[str, Any]) -> bool:
    """Answerable: the answer does not say it cannot answer, and its first citation answers.
    Unanswerable: it cites nothing, or says plainly that the sources do not answer."""
    if question["answers"]:
        return not says_no_answer(row["answer"]) and row["first"] in question["answers"]
    return not row["cited"] or says_no_answer(row["answer"])


def score(rows: list[dict[str, Any]], set_name: str = "demo") -> dict[str, Any]:
    questions = {q["id"]: q for q in load_questions(set_name)}
    answerable = [r for r in rows if questions[r["id"]]["answers"]]
    unanswerable = [r for r in rows if not questions[r["id"]]["answers"]]
    first_ok = [r for r in answerable if _verdict(questions[r["id"]], r)]
    any_ok = [r for r in answerable if set(r["cited"]) & set(questions[r["id"]]["answers"])]
    asks = [r for r in rows if r["answer"] and is_question(sentences(r["answer"])[0])]
    plain = [r for r in unanswerable if _verdict(questions[r["id"]], r)]
    # Older rows (a kept baseline) may not say what their answer read: no figure then.
    knows = any("drawn" in r for r in rows)
    reachable = [r for r in answerable if set(r.get("drawn", ())) & set(questions[r["id"]]["answers"])]
    forms: dict[str, dict[str, float]] = {}
    for form in FORMS:
        mine = [r for r in answerable if questions[r["id"]]["form"] == form]
        if mine:
            forms[form] = {
                "n": len(mine),
                "first": sum(1 for r in mine if r in first_ok) / len(mine),
                "any": sum(1 for r in mine if r in any_ok) / len(mine),
                "reachable": sum(1 for r in mine if r in reachable) / len(mine),
            }
    return {
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "first_cited_share": len(first_ok) / len(answerable),
        "any_cited_share": len(any_ok) / len(answerable),
        "begins_with_question": len(asks),
        "plain_share": len(plain) / len(unanswerable) if unanswerable else 0.0,
        # Answerable questions with an answering message among what the answer read (the search's part).
        "reachable_share": len(reachable) / len(answerable) if knows else None,
        "forms": forms,
        "misses": [r["id"] for r in answerable if r not in first_ok],
        "asking": [r["id"] for r in asks],
    }


def run_baseline(ref: str, data_dir: Path, set_name: str = "demo") -> list[dict[str, Any]]:
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
            "open(sys.argv[4], 'w').write(json.dumps(asyncio.run(b.evaluate(b.Path(sys.argv[3]), sys.argv[5]))))"
        )
        subprocess.run(
            [sys.executable, "-c", code, str(Path(tmp) / "py"), str(BENCH), str(data_dir), str(out), set_name],
            check=True,
        )
        rows: list[dict[str, Any]] = json.loads(out.read_text(encoding="utf-8"))
        return rows


def print_rows(rows: list[dict[str, Any]], set_name: str, baseline: list[dict[str, Any]] | None) -> None:
    questions = {q["id"]: q for q in load_questions(set_name)}
    before = {r["id"]: r for r in baseline or []}
    for row in rows:
        question = questions[row["id"]]
        ok = _verdict(question, row)
        was = ""
        if row["id"] in before:
            was = " (was ok)" if _verdict(question, before[row["id"]]) else " (was MISS)"
        first_line = (row["answer"].splitlines() or [""])[0]
        unread = question["answers"] and not set(row.get("drawn", ())) & set(question["answers"])
        was += " (no answering message read)" if unread else ""
        print(
            f"{row['id']} {'ok  ' if ok else 'MISS'}{was} [{question['form']}] {question['question']}\n"
            f"     {first_line[:160]}"
        )


def print_forms(set_name: str, figures: dict[str, Any], baseline: dict[str, Any] | None, label: str) -> None:
    """The per-kind table: first cited sentence answers, and some citation answers, before and after."""
    print(f"\n{set_name}: per kind of question (first cited answers / some citation answers)")
    head = f"{'kind':<10} {'n':>3}  {'first, ' + label if baseline else '':>14} {'first, now':>11}"
    head += f"  {'any, ' + label if baseline else '':>12} {'any, now':>9} {'reachable':>10}"
    print(head)
    for form in FORMS:
        now = figures["forms"].get(form)
        if now is None:
            continue
        was = baseline["forms"].get(form) if baseline else None
        first_was = f"{was['first']:.2f}" if was else ""
        any_was = f"{was['any']:.2f}" if was else ""
        print(
            f"{form:<10} {int(now['n']):>3}  {first_was:>14} {now['first']:>11.2f}  {any_was:>12} {now['any']:>9.2f}"
            f" {now['reachable']:>10.2f}"
        )


def baseline_rows(ref: str, data_dir: Path, set_name: str) -> list[dict[str, Any]]:
    """``run_baseline``'s rows, kept under ``bench/out`` by the commit ``ref`` names: a revision's
    answers do not change, so they are computed once per commit and set."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    kept = BENCH / "out" / f"answer-baseline-{set_name}-{commit[:12]}.json"
    if kept.exists():
        rows: list[dict[str, Any]] = json.loads(kept.read_text(encoding="utf-8"))
        return rows
    rows = run_baseline(commit, data_dir, set_name)
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps(rows), encoding="utf-8")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=(*SETS, "all"), default="all", help="the judged set(s) to run")
    parser.add_argument("--data", type=Path, help="data dir of the set and its index (one set only)")
    parser.add_argument("--per-question", action="store_true", help="print each question's first line")
    parser.add_argument("--baseline-ref", help="also evaluate this git revision's py/ (e.g. main)")
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/_figures.py Report)")
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT / "py"), str(BENCH)]
    from _figures import Baseline, Figure, Report, Target

    chosen = SETS if args.set == "all" else (args.set,)
    label = f"{args.baseline_ref}" if args.baseline_ref else ""
    report = Report(
        "answer-quality",
        "Extractive answers: first cited sentence from an answering message, per kind of question",
        method=(
            "The judged questions of bench/answer_judgments.json (demo) and every query of "
            "bench/halden/judgments.json with a message graded 2 or none by design (halden: written for "
            "the relevance bench on another workspace), each searched as its user through the real "
            f"search service (embedded pipeline, local model, hybrid, {SEARCH_RESULTS} results) and "
            f"answered by the answer service with no language model from the first {ANSWER_SOURCES} "
            "results. Share of answerable questions whose answer does not say it cannot answer and "
            "whose first cited sentence cites a judged answering message, per kind of question (by its "
            "first words: who, when, why, how/what, yes/no; keyword: no question); answers whose first "
            "sentence is a question. Deterministic: one evaluation."
            + (f" Baseline: the same evaluation on {args.baseline_ref}'s code." if args.baseline_ref else "")
        ),
        parameters={"search results": SEARCH_RESULTS, "answer sources": ANSWER_SOURCES},
    )
    for set_name in chosen:
        data_dir = args.data if args.data is not None and len(chosen) == 1 else DEFAULT_DATA[set_name]
        before_rows = baseline_rows(args.baseline_ref, data_dir, set_name) if args.baseline_ref else None
        baseline = score(before_rows, set_name) if before_rows is not None else None
        rows = asyncio.run(evaluate(data_dir, set_name))
        figures = score(rows, set_name)
        if args.per_question:
            print_rows(rows, set_name, before_rows)
        print(
            f"\n{set_name}: {figures['answerable']} answerable and {figures['unanswerable']} unanswerable questions"
        )
        for key, name in (
            ("first_cited_share", "first cited sentence from an answering message"),
            ("any_cited_share", "some citation to an answering message"),
            ("begins_with_question", "answers that begin with a question"),
            ("plain_share", "unanswerable questions answered plainly"),
            ("reachable_share", "an answering message among what the answer read"),
        ):
            if figures[key] is None:
                continue
            was = baseline.get(key) if baseline else None
            before = f"   ({label}: {was:.3g})" if was is not None else ""
            print(f"{name:<58} {figures[key]:.3g}{before}")
        print_forms(set_name, figures, baseline, label)
        print(f"misses: {' '.join(figures['misses']) or '-'}; asking: {' '.join(figures['asking']) or '-'}")

        def base(key: str, form: str | None = None, b: dict[str, Any] | None = baseline) -> Baseline | None:
            if b is None:
                return None
            value = b[key] if form is None else b["forms"].get(form, {}).get("first")
            return Baseline(f"{args.baseline_ref}'s code", [value]) if value is not None else None

        report.add(
            Figure(
                f"{set_name}: first cited sentence answers",
                "",
                [figures["first_cited_share"]],
                baseline=base("first_cited_share"),
                target=Target(">=", TARGET_FIRST_CITED_SHARE),
                better="higher",
            )
        )
        for form, now in figures["forms"].items():
            report.add(
                Figure(
                    f"{set_name}: first cited sentence answers, {form} ({int(now['n'])})",
                    "",
                    [now["first"]],
                    baseline=base("forms", form),
                    better="higher",
                )
            )
        report.add(
            Figure(
                f"{set_name}: answers beginning with a question",
                "answers",
                [figures["begins_with_question"]],
                baseline=base("begins_with_question"),
                target=Target("<=", 0),
                better="lower",
            )
        )
        report.add(
            Figure(
                f"{set_name}: unanswerable questions said plainly",
                "",
                [figures["plain_share"]],
                baseline=base("plain_share"),
                better="higher",
            )
        )
    report.write(args.json)


if __name__ == "__main__":
    main()
