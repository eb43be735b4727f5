"""The citation check on judged answer sentences: how often it flags the sentences it should.

Every sentence of ``bench/citation_judgments.json`` cites one or more of its item's sources (real
messages of the demo workspace, by id); each was judged by reading them: *supported* (the cited
source says it), *unsupported* (no source says it: a wrong number, name or direction, an invented
fact) or *wrong-source* (another of the given sources says it, not the cited one). The check
(``ai_search.check_citations``, the same code the server and the page run) marks each sentence
supported or not; a sentence marked not supported is a *flag*.

- precision: flagged sentences that are unsupported or wrongly cited / all flagged sentences;
- recall: unsupported or wrongly cited sentences that are flagged / all of them;
- and the share of supported sentences left unflagged.

    .venv/bin/python bench/bench_citation_check.py [--per-sentence] [--json PATH]

Pure and deterministic: one evaluation is one figure.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "py"), str(ROOT / "bench")]

from _figures import Figure, Report  # noqa: E402
from ai_search import AnswerSource, check_citations  # noqa: E402
from ai_search_server.demo import generate_demo_messages  # noqa: E402

JUDGMENTS = ROOT / "bench" / "citation_judgments.json"


def evaluate() -> list[tuple[dict[str, object], bool]]:
    """Each judged sentence with the check's verdict (True: supported)."""
    rows = {str(r["id"]): r for r in generate_demo_messages()}
    out = []
    for item in json.loads(JUDGMENTS.read_text(encoding="utf-8"))["sentences"]:
        sources = [
            AnswerSource(str(rows[i]["text"]), str(rows[i]["user"]), str(rows[i]["room"]), str(rows[i]["ts"]))
            for i in item["sources"]
        ]
        (checked,) = check_citations(item["sentence"], sources)
        out.append((item, bool(checked.supported)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--per-sentence", action="store_true", help="print the sentences the check gets wrong"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/_figures.py Report)")
    args = parser.parse_args()
    results = evaluate()
    counts: Counter[tuple[str, bool]] = Counter(
        (str(item["label"]), flagged) for item, flagged in ((i, not supported) for i, supported in results)
    )
    flagged_bad = counts["unsupported", True] + counts["wrong-source", True]
    flagged_good = counts["supported", True]
    bad = sum(n for (label, _), n in counts.items() if label != "supported")
    good = sum(n for (label, _), n in counts.items() if label == "supported")
    precision = flagged_bad / (flagged_bad + flagged_good) if flagged_bad + flagged_good else 0.0
    recall = flagged_bad / bad if bad else 0.0
    if args.per_sentence:
        for item, supported in results:
            if (item["label"] == "supported") != supported:
                print(
                    f"{item['id']} {item['label']:<12} marked {'supported' if supported else 'unsupported'}: "
                    f"{item['sentence']}"
                )
    print(
        f"{len(results)} judged sentences: {good} supported, {counts['unsupported', True] + counts['unsupported', False]}"
        f" unsupported, {counts['wrong-source', True] + counts['wrong-source', False]} wrongly cited"
    )
    print(f"precision of the flags {precision:.3f}   recall {recall:.3f}")
    for label in ("supported", "unsupported", "wrong-source"):
        total = counts[label, True] + counts[label, False]
        print(f"  {label:<13} flagged {counts[label, True]:>3} of {total:>3}")
    report = Report(
        "citation-check",
        "Citation check: precision and recall of the unsupported flag",
        method=(
            f"The {len(results)} judged sentences of bench/citation_judgments.json (each citing real demo "
            "messages, judged supported, unsupported or wrongly cited by reading them), checked by "
            "ai_search.check_citations. Precision: flagged sentences that are unsupported or wrongly "
            "cited among all flagged; recall: flagged among all unsupported or wrongly cited. "
            "Deterministic: one evaluation."
        ),
        parameters={"sentences": len(results)},
    )
    report.add(Figure("precision of the unsupported flag", "", [precision], better="higher"))
    report.add(Figure("recall of the unsupported flag", "", [recall], better="higher"))
    report.add(
        Figure(
            "supported sentences left unflagged",
            "",
            [1 - flagged_good / good if good else 0.0],
            better="higher",
        )
    )
    report.write(args.json)


if __name__ == "__main__":
    main()
