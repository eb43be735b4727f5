"""The one shape every benchmark reports in, so that ``scripts/bench`` can build BENCHMARKS.md.

Each ``bench_*.py`` prints its own readable table and, given ``--json PATH``, also writes one
:class:`Report` there. A figure keeps every run's value (the report shows their median and spread)
and, where the figure is compared with something measured in the same run (bare FTS5 beside
``ai.search``, the official MCP SDK server beside ours), that baseline's runs too.

    report = Report("search", "Search latency", method="...")
    report.add(Figure("ai.search p99 at 100k", "ms", runs=[...], baseline=Baseline("bare FTS5", [...]),
                      target=Target("<=", 100), better="lower"))
    report.write(args.json)

A target is a :class:`Target` so that BENCHMARKS.md can compute met or missed from the median:
``Target("<=", 100)`` is a bound in the figure's own unit, ``Target(">=")`` (no value) means "at least
the baseline measured in the same run". A plain string (``"<= 100 ms"``) is still accepted and shown,
and ``bench/report.py`` checks it when it reads as an operator, a number and the figure's unit.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

# The report format; bump when a field changes meaning.
REPORT_FORMAT = 1


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile of ``values`` (``share`` in 0..1)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


@dataclass(frozen=True)
class Baseline:
    """What a figure is compared with, measured in the same run (same machine, same minute)."""

    name: str
    runs: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.runs)


# The comparisons a target may make.
TARGET_OPERATORS = ("<=", ">=")


@dataclass(frozen=True)
class Target:
    """A budget a figure's median is checked against: a bound in the figure's unit, or the baseline."""

    op: Literal["<=", ">="]
    # The bound in the figure's unit; None compares with the baseline's median from the same run.
    value: float | None = None

    def __post_init__(self) -> None:
        if self.op not in TARGET_OPERATORS:
            raise ValueError(f"a target's operator is one of {TARGET_OPERATORS}, not {self.op!r}")

    def met(self, median: float, baseline_median: float | None = None) -> bool | None:
        """Whether ``median`` meets the target; None when it needs a baseline that was not measured."""
        bound = self.value if self.value is not None else baseline_median
        if bound is None:
            return None
        return median <= bound if self.op == "<=" else median >= bound

    def describe(self, unit: str) -> str:
        """The target as a reader sees it: "<= 100 ms", ">= baseline"."""
        if self.value is None:
            return f"{self.op} baseline"
        return f"{self.op} {self.value:g} {unit}".rstrip()


@dataclass
class Figure:
    """One measured quantity: every run's value, its unit, and what it is judged against."""

    name: str
    unit: str
    runs: list[float]
    baseline: Baseline | None = None
    # The budget from the issue: a Target (checked), or as text ("<= 1500 ms"), or None.
    target: Target | str | None = None
    # Which direction is good: decides how the ratio to the baseline reads.
    better: Literal["lower", "higher"] = "lower"
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def met(self) -> bool | None:
        """Whether the median meets a structured target (None: no Target, or its baseline is missing)."""
        if not isinstance(self.target, Target):
            return None
        return self.target.met(self.median, self.baseline.median if self.baseline else None)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["median"] = self.median
        if isinstance(self.target, Target):
            data["target"] = {**data["target"], "text": self.target.describe(self.unit)}
        if self.baseline is not None:
            data["baseline"]["median"] = self.baseline.median
        return data


@dataclass
class Report:
    """Everything one benchmark script measured in one invocation."""

    bench: str
    title: str
    method: str
    figures: list[Figure] = field(default_factory=list)
    # Settings of this invocation worth printing beside the figures (sizes, run counts, versions).
    parameters: dict[str, Any] = field(default_factory=dict)

    def add(self, figure: Figure) -> Figure:
        self.figures.append(figure)
        return figure

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": REPORT_FORMAT,
            "bench": self.bench,
            "title": self.title,
            "method": self.method,
            "parameters": self.parameters,
            "figures": [figure.as_dict() for figure in self.figures],
        }

    def write(self, path: Path | None) -> None:
        """Write the report as JSON to ``path`` (nothing when no ``--json`` was given)."""
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(self.as_dict(), indent=2) + "\n", encoding="utf-8")
