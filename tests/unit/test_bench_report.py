"""bench/report.py: the rows, the met-or-missed verdicts and the list of benches without figures.

Sample reports are built with bench/_figures.py (what every bench writes) into a folder laid out as
scripts/bench leaves it, then rendered.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


figures = _load("bench_figures_under_test", BENCH / "_figures.py")
_load("_carried", BENCH / "_carried.py")  # report.py imports it by that name, as bench/ scripts do
report = _load("bench_report_under_test", BENCH / "report.py")
Baseline, Figure, Report, Target = figures.Baseline, figures.Figure, figures.Report, figures.Target


def as_dict(figure: Any) -> dict[str, Any]:
    """A figure as the report reads it: through the JSON a bench writes."""
    return json.loads(json.dumps(figure.as_dict()))


def record(tmp: Path, name: str, status: int, *, quick: bool = False) -> None:
    (tmp / f"{name}.run.json").write_text(
        json.dumps(
            {
                "bench": name,
                "script": f"bench_{name}.py",
                "status": status,
                "seconds": 75,
                "quick": quick,
                "finished": "2026-11-30 09:00",
                "load_before": [0.5, 0.4, 0.3],
                "load_after": [1.5, 0.9, 0.5],
                "log": f"bench/out/reports/{name}.log",
            }
        )
    )


def write_report(tmp: Path, name: str, *figs: Any, runs: int = 5) -> None:
    sample = Report(name, f"The {name} bench", method=f"How {name} measures.", parameters={"runs": runs})
    for fig in figs:
        sample.add(fig)
    sample.write(tmp / f"{name}.json")


def test_a_row_shows_median_spread_runs_baseline_ratio_and_target() -> None:
    fig = Figure(
        "tools/call throughput",
        "req/s",
        runs=[100, 120, 110, 90, 130],
        baseline=Baseline("official SDK reference", [50, 60, 55, 45, 65]),
        target=Target(">="),
        better="higher",
    )
    assert report.figure_row(as_dict(fig)) == [
        "tools/call throughput",
        "110 req/s",
        "90.0–130 req/s",
        "5",
        "official SDK reference: 55.0 req/s",
        "2.00×",
        "≥ baseline ✅ met",
    ]


def test_a_row_without_baseline_or_target_leaves_those_cells_empty_and_flags_few_runs() -> None:
    row = report.figure_row(as_dict(Figure("parse | extract", "µs", runs=[32.81, 30.0], note="per call")))
    assert row == ["parse \\| extract — *per call*", "31.4 µs", "30.0–32.8 µs", "2 ⚠", "", "", ""]
    # A quick run has fewer runs on purpose: no warning there.
    assert report.figure_row(as_dict(Figure("parse", "µs", runs=[32.81, 30.0])), quick=True)[3] == "2"


@pytest.mark.parametrize(
    ("fig", "met"),
    [
        (Figure("p99", "ms", runs=[90, 100, 120], target=Target("<=", 100)), True),
        (Figure("p99", "ms", runs=[90, 101, 120], target=Target("<=", 100)), False),
        (
            Figure(
                "rps", "req/s", runs=[10, 20, 30], baseline=Baseline("ref", [19, 20, 21]), target=Target(">=")
            ),
            True,
        ),
        (
            Figure(
                "rps", "req/s", runs=[10, 19, 30], baseline=Baseline("ref", [19, 20, 21]), target=Target(">=")
            ),
            False,
        ),
        # Text targets still work when they read as operator, number and unit (converted).
        (Figure("ready", "ms", runs=[1400, 1450, 1600], target="<= 1.5 s"), True),
        (Figure("ready", "ms", runs=[1400, 1550, 1600], target="<= 1.5 s"), False),
        (Figure("memory", "MB", runs=[280, 290, 310], target="≤ 300 MB"), True),
        (
            Figure("rps", "req/s", runs=[5, 6, 7], baseline=Baseline("ref", [6, 6, 6]), target=">= baseline"),
            True,
        ),
    ],
)
def test_met_or_missed_is_computed_from_the_median(fig: Any, met: bool) -> None:
    judged = report.verdict(as_dict(fig))
    assert judged.met is met
    assert judged.label == (report.MET if met else report.MISSED)
    # The figure itself agrees for structured targets.
    if isinstance(fig.target, Target):
        assert fig.met is met


@pytest.mark.parametrize(
    ("fig", "why"),
    [
        (Figure("rps", "req/s", runs=[1, 2, 3], target=Target(">=")), "no baseline measured"),
        (Figure("ready", "ms", runs=[1, 2, 3], target="fast enough"), "not an operator and a number"),
        (
            Figure("memory", "MB", runs=[1, 2, 3], target="<= 3 furlongs"),
            "unit furlongs is not the figure's MB",
        ),
    ],
)
def test_a_target_that_cannot_be_checked_says_why(fig: Any, why: str) -> None:
    judged = report.verdict(as_dict(fig))
    assert judged.met is None
    assert judged.label == f"{report.UNCHECKED} ({why})"


def test_no_target_no_verdict() -> None:
    assert report.verdict(as_dict(Figure("x", "ms", runs=[1, 2, 3]))) is None


def test_a_bad_operator_is_refused_where_the_target_is_made() -> None:
    with pytest.raises(ValueError, match="operator"):
        Target("<", 3)


def test_benches_without_figures_are_listed_with_their_exit_status(tmp_path: Path) -> None:
    write_report(tmp_path, "grammar", Figure("parse", "µs", runs=[30, 31, 32, 33, 34]))
    record(tmp_path, "grammar", 0)
    record(tmp_path, "page", 2)
    (tmp_path / "page.log").write_text("starting\nerror: unrecognized arguments: --json out.json\n\n")
    record(tmp_path, "search", 124)
    record(tmp_path, "embedder", 0)  # exited 0 but wrote nothing
    names = ["grammar", "page", "search", "embedder", "widget"]
    text = report.render(report.load(tmp_path, names), generated_at="2026-11-30 09:30 UTC")

    assert (
        "- `bench_page.py`: failed (exit status 2); see `bench/out/reports/page.log`. "
        "Last line of its output: `error: unrecognized arguments: --json out.json`."
    ) in text
    assert "- `bench_search.py`: timed out (exit status 124); see" in text
    assert "- `bench_embedder.py`: wrote no report (exit status 0); see" in text
    assert "- `bench_widget.py`: not run." in text
    assert (
        "| `bench_grammar.py` | ok | 2026-11-30 09:00 | 1 min 15 s | 0.50 / 0.40 / 0.30 → 1.50 / 0.90 / 0.50 |"
        in text
    )
    assert "not measured in this report: page, search, embedder, widget (see Benches)" in text
    assert "## The grammar bench" in text
    assert "## The page bench" not in text
    assert "- `bench_grammar.py`" not in text  # a bench with figures is not among the problems


def test_the_targets_table_lists_every_targeted_figure_with_its_result(tmp_path: Path) -> None:
    write_report(
        tmp_path,
        "mcp",
        Figure(
            "rps",
            "req/s",
            runs=[900] * 5,
            baseline=Baseline("ref", [500] * 5),
            target=Target(">="),
            better="higher",
        ),
        Figure("p50", "ms", runs=[2] * 5, baseline=Baseline("ref", [3] * 5)),
    )
    write_report(tmp_path, "search", Figure("p99 at 100k", "ms", runs=[120] * 5, target=Target("<=", 100)))
    text = report.render(report.load(tmp_path, ["mcp", "search"]), generated_at="now")
    assert "| ≥ baseline | The mcp bench: rps | 900 req/s | 500 req/s | ✅ met |" in text
    assert "| ≤ 100 ms | The search bench: p99 at 100k | 120 ms |  | ❌ missed |" in text
    assert "The mcp bench: p50" not in text.split("## Benches")[0]
    assert "1 met, 1 missed, 0 not checked." in text


def test_a_quick_run_says_so_and_a_full_run_does_not(tmp_path: Path) -> None:
    write_report(tmp_path, "grammar", Figure("parse", "µs", runs=[30, 31, 32, 33, 34]))
    record(tmp_path, "grammar", 0, quick=True)
    (tmp_path / "_run.json").write_text(json.dumps({"command": "scripts/bench --quick", "wall_seconds": 61}))
    quick = report.render(report.load(tmp_path, ["grammar"]), generated_at="now")
    assert "**Quick smoke run, not the real figures.**" in quick
    assert "## The grammar bench (quick run)" in quick
    assert "Generated by `scripts/bench --quick`" in quick
    assert "Wall time of `scripts/bench --quick`: **1 min 01 s**" in quick

    record(tmp_path, "grammar", 0, quick=False)
    (tmp_path / "_run.json").write_text(json.dumps({"command": "scripts/bench", "wall_seconds": 61}))
    full = report.render(report.load(tmp_path, ["grammar"]), generated_at="now")
    assert "Quick smoke run" not in full
    assert "(quick run)" not in full


def test_a_bench_that_failed_after_writing_figures_is_shown_with_a_warning(tmp_path: Path) -> None:
    write_report(tmp_path, "server", Figure("rps", "req/s", runs=[1, 2, 3, 4, 5], better="higher"))
    record(tmp_path, "server", 1)
    text = report.render(report.load(tmp_path, ["server"]), generated_at="now")
    assert "**This bench exited with failed (exit status 1): its figures may be incomplete.**" in text
    assert "- `bench_server.py`: failed (exit status 1)" in text


def test_the_machine_section_names_the_hardware_and_the_load(tmp_path: Path) -> None:
    (tmp_path / "_machine.json").write_text(
        json.dumps(
            {
                "cpu": "AMD EPYC",
                "cores": 2,
                "memory_gib": 23.5,
                "os": "Debian 12",
                "python": "CPython 3.11.7",
                "chromium": "Chromium 156",
            }
        )
    )
    (tmp_path / "_run.json").write_text(json.dumps({"load_before": [0.1, 0.2, 0.3], "load_after": [1, 2, 3]}))
    text = report.render(report.load(tmp_path, []), generated_at="now")
    for line in (
        "- **CPU**: AMD EPYC",
        "- **cores**: 2",
        "- **memory**: 23.5 GiB",
        "- **Chromium**: Chromium 156",
        "- **load average (1 / 5 / 15 min)**: 0.10 / 0.20 / 0.30 before the run, 1.00 / 2.00 / 3.00 after",
    ):
        assert line in text


@pytest.mark.parametrize(
    ("value", "shown"),
    [(1886.6, "1,887"), (548.5, "548"), (32.81, "32.8"), (2.135, "2.13"), (0.5702, "0.570"), (0, "0")],
)
def test_numbers_keep_three_significant_digits(value: float, shown: str) -> None:
    assert report.number(value) == shown


def test_benches_not_run_keep_what_the_previous_report_said(tmp_path: Path) -> None:
    first = tmp_path / "first"
    first.mkdir()
    write_report(
        first, "mcp", Figure("rps", "req/s", runs=[900] * 5, target=Target(">=", 800), better="higher")
    )
    record(first, "mcp", 0)
    write_report(first, "search", Figure("p99", "ms", runs=[120] * 5, target=Target("<=", 100)))
    record(first, "search", 0)
    previous = report.render(report.load(first, ["mcp", "search"]), generated_at="then")

    second = tmp_path / "second"  # only search ran again, on a clone without the first folder
    second.mkdir()
    write_report(second, "search", Figure("p99", "ms", runs=[80] * 5, target=Target("<=", 100)))
    record(second, "search", 0)
    text = report.render(report.load(second, ["mcp", "search"], previous), generated_at="now")

    assert "## The mcp bench\n\n*Carried over from the previous BENCHMARKS.md" in text
    assert "| rps | 900 req/s |" in text.split("## The mcp bench")[1]
    assert "| ≥ 800 req/s | The mcp bench: rps | 900 req/s |  | ✅ met (carried over) |" in text
    assert "| ≤ 100 ms | The search bench: p99 | 80.0 ms |  | ✅ met |" in text
    assert "120" not in text  # the search bench's old figures are replaced, not carried
    assert "| `bench_mcp.py` | carried over from the previous report (ok) | 2026-11-30 09:00 |" in text
    assert "2 met, 0 missed, 0 not checked." in text
    assert "not measured in this report" not in text
    # Carried twice, it is still there, once.
    again = report.render(report.load(second, ["mcp", "search"], text), generated_at="later")
    assert again.count("## The mcp bench") == 1 and again.count("*Carried over") == 1
    # ... and its target row, result count and overview row are said to be carried over once.
    assert "| ≥ 800 req/s | The mcp bench: rps | 900 req/s |  | ✅ met (carried over) |" in again
    assert "(carried over) (carried over)" not in again
    assert "| `bench_mcp.py` | carried over from the previous report (ok) | 2026-11-30 09:00 |" in again
    assert "2 met, 0 missed, 0 not checked." in again


def _bench_table() -> list[tuple[str, str]]:
    """(script, arguments for --quick) of every row of scripts/bench's table."""
    rows = []
    for line in (ROOT / "scripts" / "bench").read_text(encoding="utf-8").splitlines():
        fields = line.strip().strip('"').split("|")
        if len(fields) == 6 and fields[1].endswith(".py"):
            rows.append((fields[1], fields[4]))
    return rows


def test_every_quick_argument_is_one_its_bench_accepts() -> None:
    """`scripts/bench --quick` passes each bench its row's arguments; one the script's parser does not
    know stops that bench before it measures anything."""
    rows = _bench_table()
    assert len(rows) >= 10, rows
    for script, quick in rows:
        shown = subprocess.run(
            [sys.executable, str(BENCH / script), "--help"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": f"{ROOT / 'py'}:{BENCH}"},
            check=True,
        ).stdout
        for option in (word for word in quick.split() if word.startswith("--")):
            assert option in shown, f"{script} does not take {option}"
