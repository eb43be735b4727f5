"""The judged workspaces' files and what their checks need of each, in one table (test_judged_sets.py
checks them all alike; each set's own module checks what is particular to it)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.ferry import build as ferry_build
from bench.ferry import judgments as ferry_judgments
from bench.ferry import workspace as ferry_workspace
from bench.halden import build as halden_build
from bench.halden import judgments as halden_judgments
from bench.halden import workspace as halden_workspace

from ._judgments import Row

__all__ = ["JUDGED_FILES", "JudgedFiles"]


@dataclass(frozen=True)
class JudgedFiles:
    workspace_path: Path
    judgments_path: Path
    # Each set's own builders (bench/<set>/build.py, judgments.py); their row types differ in name only.
    load_workspace: Callable[[Path], Any]
    workspace_rows: Callable[[], Any]
    build_judgments: Callable[[Any], dict[str, Any]]
    rooms: Sequence[Any]
    people: Sequence[Any]
    rooms_of: Callable[[str], set[str]]
    min_threads: int  # threads the written conversations hold at least

    def rows(self) -> list[Row]:
        loaded: list[Row] = self.load_workspace(self.workspace_path)
        return loaded

    def judgments(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.judgments_path.read_text(encoding="utf-8"))
        return loaded


JUDGED_FILES: dict[str, JudgedFiles] = {
    "halden": JudgedFiles(
        halden_build.WORKSPACE_PATH,
        halden_judgments.JUDGMENTS_PATH,
        halden_build.load_workspace,
        halden_build.workspace_rows,
        halden_judgments.build_judgments,
        halden_workspace.ROOMS,
        halden_workspace.PEOPLE,
        halden_workspace.rooms_of,
        min_threads=40,
    ),
    "ferry": JudgedFiles(
        ferry_build.WORKSPACE_PATH,
        ferry_judgments.JUDGMENTS_PATH,
        ferry_build.load_workspace,
        ferry_build.workspace_rows,
        ferry_judgments.build,
        ferry_workspace.ROOMS,
        ferry_workspace.PEOPLE,
        ferry_workspace.rooms_of,
        min_threads=45,
    ),
}
