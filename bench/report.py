"""Render BENCHMARKS.md from the JSON reports of one ``scripts/bench`` run (pure rendering, stdlib only).

``scripts/bench`` runs every ``bench/bench_*.py`` with ``--json bench/out/reports/<bench>.json`` and
writes beside each a run record ``<bench>.run.json`` (exit status, seconds, load average before and
after, quick or full), plus ``_machine.json`` (bench/_machine.py) and ``_run.json`` (the invocation:
command, wall time, load). This module reads whatever is there and writes the report:

    .venv/bin/python bench/report.py [--reports bench/out/reports] [--out BENCHMARKS.md]
        [--benches grammar,import,...]

``--benches`` names every bench the report should have, in order: one that failed, timed out or
wrote no figures is listed with its exit status instead of silently missing. A bench of the list
with nothing in the folder at all (``--only`` ran others, on a clone without the folder) keeps its
section, targets and row from the BENCHMARKS.md being replaced, marked as carried over
(``_carried.py``). The report is a pure function of the folder and that file (:func:`render`), so
it is unit-tested on sample reports.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _carried import CARRIED_NOTE_START, Carried, previous_sections

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REPORTS = ROOT / "bench" / "out" / "reports"
DEFAULT_OUT = ROOT / "BENCHMARKS.md"
# The issue asks for medians of at least this many runs; fewer is flagged beside the figure.
MIN_RUNS = 5
# Exit status of `timeout` (coreutils) when it stopped a bench that ran too long.
TIMEOUT_STATUS = 124
# Characters of a failed bench's last log line quoted in the report.
LOG_LINE_CHARS = 200
MET, MISSED, UNCHECKED = "✅ met", "❌ missed", "❔ not checked"
# How a carried-over target's result and a carried-over bench's status are marked.
_CARRIED_SUFFIX = " (carried over)"
_CARRIED_STATUS = "carried over from the previous report ("
# How to convert a text target's unit into the figure's unit: (target unit, figure unit) -> factor.
UNIT_FACTORS = {
    ("s", "ms"): 1000.0,
    ("ms", "s"): 0.001,
    ("ms", "µs"): 1000.0,
    ("µs", "ms"): 0.001,
    ("GB", "MB"): 1000.0,
    ("GiB", "MiB"): 1024.0,
}
_TEXT_TARGET = re.compile(r"^\s*(<=|>=|≤|≥)\s*(baseline|[\d][\d,]*(?:\.\d+)?)\s*(\S*)\s*$")
_OPERATORS = {"≤": "<=", "≥": ">=", "<=": "<=", ">=": ">="}
_SHOWN_OPERATORS = {"<=": "≤", ">=": "≥"}


# --------------------------------------------------------------------------- inputs


@dataclass
class BenchInput:
    """One bench as the folder knows it: its report (if it wrote one) and its run record (if run)."""

    name: str
    report: dict[str, Any] | None = None
    record: dict[str, Any] | None = None
    log_tail: str = ""
    # Not run this time: what the previous BENCHMARKS.md said of it (_carried.py).
    carried: Carried | None = None

    @property
    def status(self) -> int | None:
        return None if self.record is None else int(self.record.get("status", 0))

    @property
    def quick(self) -> bool:
        return bool(self.record and self.record.get("quick"))

    @property
    def failed(self) -> bool:
        """No figures (new or carried over), or a non-zero exit: the report lists it among the problems."""
        return (self.report is None and self.carried is None) or bool(self.status)


@dataclass
class Inputs:
    benches: list[BenchInput]
    machine: dict[str, Any] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _last_line(path: Path) -> str:
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [line for line in lines if line]
    return lines[-1][:LOG_LINE_CHARS] if lines else ""


def load(folder: Path, names: list[str], previous: str = "") -> Inputs:
    """Everything in ``folder``: the named benches first, in order, then any other report found there.

    A named bench with neither a report nor a run record in ``folder`` keeps what ``previous`` (the
    BENCHMARKS.md being replaced) said of it."""
    found = sorted(
        {p.name.removesuffix(".run.json") for p in folder.glob("*.run.json")}
        | {
            p.stem
            for p in folder.glob("*.json")
            if not p.name.startswith("_") and not p.name.endswith(".run.json")
        }
    )
    carried = previous_sections(previous)
    benches = []
    for name in [*names, *(n for n in found if n not in names)]:
        report = _read_json(folder / f"{name}.json")
        record = _read_json(folder / f"{name}.run.json")
        bench = BenchInput(name, report if isinstance(report, dict) else None, record)
        if bench.report is None and bench.record is None:
            bench.carried = carried.get(f"bench_{name.replace('-', '_')}.py")
        if bench.failed:
            bench.log_tail = _last_line(folder / f"{name}.log")
        benches.append(bench)
    return Inputs(benches, _read_json(folder / "_machine.json") or {}, _read_json(folder / "_run.json") or {})


# --------------------------------------------------------------------------- figures


def number(value: float | None) -> str:
    """A figure as a reader wants it: three significant digits, thousands separated."""
    if value is None:
        return "—"
    size = abs(value)
    if size >= 1000:
        return f"{value:,.0f}"
    if size >= 100:
        return f"{value:.0f}"
    if size >= 10:
        return f"{value:.1f}"
    if size >= 1:
        return f"{value:.2f}"
    return f"{value:#.3g}" if value else "0"


def with_unit(value: float | None, unit: str) -> str:
    text = number(value)
    return f"{text} {unit}" if unit and value is not None else text


def median_of(figure: dict[str, Any]) -> float:
    return float(figure.get("median", statistics.median(figure["runs"])))


def baseline_median(figure: dict[str, Any]) -> float | None:
    baseline = figure.get("baseline")
    if not baseline:
        return None
    return float(baseline.get("median", statistics.median(baseline["runs"])))


@dataclass(frozen=True)
class Verdict:
    """A figure's target as shown (``≤ 100 ms``) and whether the median meets it (None: not checkable)."""

    shown: str
    met: bool | None
    why: str = ""

    @property
    def label(self) -> str:
        if self.met is None:
            return f"{UNCHECKED} ({self.why})" if self.why else UNCHECKED
        return MET if self.met else MISSED


def _structured(figure: dict[str, Any]) -> tuple[str, float | None, str] | str:
    """The target as (operator, bound in the figure's unit or None for the baseline, shown text),
    or a reason it cannot be checked."""
    target, unit = figure["target"], figure.get("unit", "")
    if isinstance(target, dict):
        op, value = _OPERATORS.get(str(target.get("op")), ""), target.get("value")
        if not op:
            return f"unknown operator {target.get('op')!r}"
        bound = None if value is None else float(value)
        shown = f"{_SHOWN_OPERATORS[op]} " + ("baseline" if bound is None else with_unit(bound, unit))
        return op, bound, shown
    match = _TEXT_TARGET.match(str(target))
    if not match:
        return "not an operator and a number"
    op, amount, target_unit = _OPERATORS[match[1]], match[2], match[3]
    if amount == "baseline":
        return op, None, f"{_SHOWN_OPERATORS[op]} baseline"
    bound = float(amount.replace(",", ""))
    if target_unit and target_unit != unit:
        factor = UNIT_FACTORS.get((target_unit, unit))
        if factor is None:
            return f"unit {target_unit} is not the figure's {unit or 'unitless'}"
        bound *= factor
    return op, bound, f"{_SHOWN_OPERATORS[op]} {amount} {target_unit or unit}".rstrip()


def verdict(figure: dict[str, Any]) -> Verdict | None:
    """Met or missed, computed from the median (and the baseline's, for ``≥ baseline``)."""
    if figure.get("target") in (None, ""):
        return None
    parsed = _structured(figure)
    if isinstance(parsed, str):
        return Verdict(str(figure["target"]), None, parsed)
    op, bound, shown = parsed
    if bound is None:
        bound = baseline_median(figure)
        if bound is None:
            return Verdict(shown, None, "no baseline measured")
    median = median_of(figure)
    return Verdict(shown, median <= bound if op == "<=" else median >= bound)


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def figure_row(figure: dict[str, Any], *, quick: bool = False) -> list[str]:
    """One table row: figure, median, min–max, runs, baseline median, ratio, target."""
    unit = figure.get("unit", "")
    runs = [float(v) for v in figure["runs"]]
    name = _cell(figure["name"]) + (f" — *{_cell(figure['note'])}*" if figure.get("note") else "")
    spread = f"{number(min(runs))}–{with_unit(max(runs), unit)}" if len(runs) > 1 else "—"
    count = f"{len(runs)}" + (" ⚠" if len(runs) < MIN_RUNS and not quick else "")
    base = baseline_median(figure)
    baseline = (
        f"{_cell(figure['baseline'].get('name', 'baseline'))}: {with_unit(base, unit)}"
        if base is not None
        else ""
    )
    ratio = f"{number(median_of(figure) / base)}×" if base else ""
    judged = verdict(figure)
    target = f"{judged.shown} {judged.label}" if judged else ""
    return [name, with_unit(median_of(figure), unit), spread, count, baseline, ratio, _cell(target)]


def table(header: list[str], rows: list[list[str]], align: str) -> list[str]:
    """A GitHub markdown table; ``align`` has one letter per column: l(eft) or r(ight)."""
    rule = ["---:" if a == "r" else "---" for a in align]
    return ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"] + [
        "| " + " | ".join(row) + " |" for row in rows
    ]


# --------------------------------------------------------------------------- sections


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = round(seconds)
    minutes, rest = divmod(seconds, 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def loads(values: Any) -> str:
    return " / ".join(f"{v:.2f}" for v in values) if isinstance(values, list) and values else "—"


def status_text(bench: BenchInput) -> str:
    if bench.record is None:
        return "no run record" if bench.report is not None else "not run"
    status = bench.status
    if status == TIMEOUT_STATUS:
        return f"timed out (exit status {status})"
    if status:
        return f"failed (exit status {status})"
    return "ok" if bench.report is not None else "wrote no report (exit status 0)"


def script_of(bench: BenchInput) -> str:
    return (bench.record or {}).get("script") or f"bench_{bench.name}.py"


def header_section(inputs: Inputs, generated_at: str) -> list[str]:
    run = inputs.run
    command = run.get("command") or "scripts/bench"
    lines = [
        "# Benchmarks",
        "",
        "<!-- Generated by scripts/bench (bench/report.py). Do not edit by hand: run scripts/bench again. -->",
        "",
        f"Generated by `{command}` on {generated_at} from the JSON reports in `bench/out/reports/`. "
        "Do not edit this file by hand: run `scripts/bench` again (or `scripts/bench --only mcp,server` "
        "for some benches; the others keep their last figures, each section says when it ran).",
    ]
    quick = [b.name for b in inputs.benches if b.quick]
    if quick:
        everything = len(quick) == sum(1 for b in inputs.benches if b.record is not None)
        lines += [
            "",
            "> [!WARNING]",
            "> **Quick smoke run, not the real figures.** "
            + ("Every bench with figures here" if everything else "These benches: " + ", ".join(quick) + ";")
            + " ran with `scripts/bench --quick` (fewer runs, shorter phases, smaller workspaces), only to "
            "check that the benchmarks work. Run `scripts/bench` on a quiet machine for figures to quote.",
        ]
    if run.get("wall_seconds") is not None:
        ran = run.get("benches") or []
        lines += [
            "",
            f"Wall time of `{command}`: **{duration(run['wall_seconds'])}** ({len(ran)} "
            f"bench{'es' if len(ran) != 1 else ''}, set-up included).",
        ]
    return lines


def machine_section(inputs: Inputs) -> list[str]:
    machine, run = inputs.machine, inputs.run
    memory = machine.get("memory_gib")
    facts = [
        ("CPU", machine.get("cpu", "unknown")),
        ("cores", machine.get("cores", "unknown")),
        ("memory", f"{memory} GiB" if memory is not None else "unknown"),
        ("OS", machine.get("os", "unknown")),
        ("Python", machine.get("python", "unknown")),
        ("Chromium", machine.get("chromium", "unknown")),
        (
            "load average (1 / 5 / 15 min)",
            f"{loads(run.get('load_before'))} before the run, {loads(run.get('load_after'))} after",
        ),
    ]
    return ["## Machine", "", *(f"- **{name}**: {value}" for name, value in facts)]


def targets_section(inputs: Inputs) -> list[str]:
    rows, counts = [], {MET: 0, MISSED: 0, UNCHECKED: 0}
    for bench in inputs.benches:
        if bench.report is None:
            continue
        for figure in bench.report.get("figures", []):
            judged = verdict(figure)
            if judged is None:
                continue
            unit = figure.get("unit", "")
            base = baseline_median(figure)
            rows.append(
                [
                    _cell(judged.shown),
                    f"{_cell(bench.report.get('title', bench.name))}: {_cell(figure['name'])}",
                    with_unit(median_of(figure), unit),
                    with_unit(base, unit) if base is not None else "",
                    judged.label,
                ]
            )
            counts[MET if judged.met else MISSED if judged.met is False else UNCHECKED] += 1
    for bench in inputs.benches:
        for row in bench.carried.target_rows if bench.carried else []:
            # Carried over twice or more, a row is still said to be carried over once.
            result = row[4].removesuffix(_CARRIED_SUFFIX)
            rows.append([*row[:4], f"{result}{_CARRIED_SUFFIX}"])
            counts[MET if result == MET else MISSED if result == MISSED else UNCHECKED] += 1
    # A bench without figures may have had targets: say they were not checked rather than leave them out.
    absent = [bench.name for bench in inputs.benches if bench.report is None and bench.carried is None]
    if absent:
        rows.append(
            ["—", "not measured in this report: " + ", ".join(absent) + " (see Benches)", "", "", UNCHECKED]
        )
    summary = f"{counts[MET]} met, {counts[MISSED]} missed, {counts[UNCHECKED]} not checked."
    if absent:
        summary += f" No figures from {len(absent)} bench{'es' if len(absent) != 1 else ''}."
    return [
        "## Targets",
        "",
        "Every figure with a target from the issue; met or missed is computed from the median.",
        "",
        *table(["target", "figure", "median", "baseline", "result"], rows, "llrrl"),
        "",
        summary,
    ]


def overview_section(inputs: Inputs) -> list[str]:
    rows = []
    for bench in inputs.benches:
        record = bench.record or {}
        old = bench.carried.overview if bench.carried else None
        if old is not None and len(old) == 5:
            status = old[1]
            if status.startswith(_CARRIED_STATUS) and status.endswith(")"):
                status = status.removeprefix(_CARRIED_STATUS).removesuffix(")")
            rows.append([old[0], f"{_CARRIED_STATUS}{status})", *old[2:]])
            continue
        rows.append(
            [
                f"`{script_of(bench)}`",
                status_text(bench) + (" · quick" if bench.quick else ""),
                str(record.get("finished", "—")),
                duration(record.get("seconds")),
                f"{loads(record.get('load_before'))} → {loads(record.get('load_after'))}",
            ]
        )
    lines = [
        "## Benches",
        "",
        *table(
            ["bench", "status", "finished (UTC)", "duration", "load average before → after"], rows, "llllr"
        ),
    ]
    problems = [b for b in inputs.benches if b.failed]
    if problems:
        lines += ["", "Benches without (complete) figures:", ""]
        for bench in problems:
            if bench.record is None:
                lines.append(f"- `{script_of(bench)}`: {status_text(bench)}.")
                continue
            log = bench.record.get("log") or f"bench/out/reports/{bench.name}.log"
            quoted = bench.log_tail.replace("`", "'")
            tail = f" Last line of its output: `{quoted}`." if quoted else ""
            lines.append(f"- `{script_of(bench)}`: {status_text(bench)}; see `{log}`.{tail}")
    return lines


def carried_section(carried: Carried) -> list[str]:
    """A bench's section as the previous report had it, said to be carried over."""
    note = (
        f"{CARRIED_NOTE_START}: this run has no figures of this bench"
        " (its JSON report was not in the reports folder).*"
    )
    return [carried.section[0], "", note, *carried.section[1:]]


def bench_section(bench: BenchInput) -> list[str]:
    report = bench.report
    assert report is not None
    record = bench.record or {}
    title = _cell(report.get("title", bench.name)) + (" (quick run)" if bench.quick else "")
    ran = [f"`bench/{script_of(bench)}`"]
    if record:
        ran += [f"finished {record.get('finished', '?')}", duration(record.get("seconds"))]
        ran.append(f"load {loads(record.get('load_before'))} → {loads(record.get('load_after'))}")
    lines = [f"## {title}", "", " · ".join(ran), ""]
    if bench.status:
        lines += [f"**This bench exited with {status_text(bench)}: its figures may be incomplete.**", ""]
    lines += [report.get("method", "").strip(), ""]
    parameters = report.get("parameters") or {}
    if parameters:
        lines += [
            "Parameters: " + " · ".join(f"{_cell(str(k))} {_cell(str(v))}" for k, v in parameters.items()),
            "",
        ]
    rows = [figure_row(figure, quick=bench.quick) for figure in report.get("figures", [])]
    lines += table(
        ["figure", "median", "min–max", "runs", "baseline (median)", "ratio", "target"], rows, "lrrrlrl"
    )
    if any(" ⚠" in row[3] for row in rows):
        lines += ["", f"⚠ fewer than {MIN_RUNS} runs (see the figure's note)."]
    return lines


def render(inputs: Inputs, *, generated_at: str) -> str:
    """The whole BENCHMARKS.md for ``inputs``."""
    sections = [
        header_section(inputs, generated_at),
        machine_section(inputs),
        targets_section(inputs),
        overview_section(inputs),
    ]
    for bench in inputs.benches:
        if bench.report is not None:
            sections.append(bench_section(bench))
        elif bench.carried is not None:
            sections.append(carried_section(bench.carried))
    return "\n\n".join("\n".join(section) for section in sections).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=Path, default=DEFAULT_REPORTS, help="folder of the JSON reports")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the markdown file to write")
    parser.add_argument(
        "--benches", default="", help="comma-separated benches the report must list, in order"
    )
    args = parser.parse_args()
    names = [name for name in args.benches.split(",") if name]
    previous = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    inputs = load(args.reports, names, previous)
    generated_at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    args.out.write_text(render(inputs, generated_at=generated_at), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
