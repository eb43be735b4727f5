"""Figures: one JSON line per test run, appended to ``reports/reliability.jsonl`` and printed.

Each line is ``{"id", "test", "mode", "tried", "failed", ...metrics, "at", "run"}``: ``id`` is the
test's requirement ID, ``run`` names the pytest session that wrote it, ``mode`` is ``default`` (the reduced counts of every CI run) or ``soak`` (the full
counts of ``scripts/test-reliability``). Lines are only ever appended, so runs can be compared; the
script empties the file before a full run, so that ``SECURITY.md`` shows that run alone.

``AI_SEARCH_RELIABILITY_REPORT`` names another file (an empty value turns writing off). Several
sessions may append to one file at once (every ``scripts/test`` run writes its default figures); the
``run`` field keeps them apart.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_REPORT_PATH", "REPORT_ENV", "FigureWriter", "read_figures", "report_path"]

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_REPORT_PATH = ROOT / "reports" / "reliability.jsonl"
REPORT_ENV = "AI_SEARCH_RELIABILITY_REPORT"


def report_path() -> Path | None:
    raw = os.environ.get(REPORT_ENV)
    if raw is None:
        return DEFAULT_REPORT_PATH
    return Path(raw) if raw.strip() else None


def _plain(value: Any) -> Any:
    """Round floats so that lines stay readable; everything else as JSON has it."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class FigureWriter:
    """Appends figure lines to one file and keeps this session's lines for the terminal summary."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.run = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}"
        self.lines: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def write(
        self, requirement: str, test: str, mode: str, tried: int, failed: int, metrics: Mapping[str, Any]
    ) -> dict[str, Any]:
        reserved = {"id", "test", "mode", "tried", "failed", "at", "run"} & set(metrics)
        if reserved:
            raise ValueError(f"metric names {sorted(reserved)} are reserved")
        line = {
            "id": requirement,
            "test": test,
            "mode": mode,
            "tried": tried,
            "failed": failed,
            **_plain(metrics),
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "run": self.run,
        }
        with self._lock:
            self.lines.append(line)
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(line, ensure_ascii=False) + "\n")
        print(f"figure {json.dumps(line, ensure_ascii=False)}")
        return line


def read_figures(path: Path) -> list[dict[str, Any]]:
    """Every figure line of ``path`` in file order; lines that are not JSON objects are skipped."""
    if not path.is_file():
        return []
    figures = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and "id" in line:
            figures.append(line)
    return figures
