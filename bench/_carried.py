"""What the previous BENCHMARKS.md said of each bench, for the benches a run has no figures of.

``scripts/bench --only search`` re-runs one bench; the others' JSON reports are read from
``bench/out/reports/``, which a fresh clone does not have (it is git-ignored). Without this, the
report would then drop every other bench's figures. Instead ``report.py`` carries each such bench's
section, its rows of the Targets table and its row of the Benches table over from the file it is
about to replace, marked as carried over (stdlib only, like report.py).

    carried = previous_sections(Path("BENCHMARKS.md").read_text())   # script name -> Carried
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["CARRIED_NOTE_START", "Carried", "previous_sections", "row_cells"]

_SCRIPT = re.compile(r"`bench/(bench_\w+\.py)`")
_FIXED_SECTIONS = {"Machine", "Targets", "Benches"}
# How report.py's note on a carried section begins.
CARRIED_NOTE_START = "*Carried over from the previous BENCHMARKS.md"


@dataclass(frozen=True)
class Carried:
    """One bench's part of the previous report."""

    title: str
    section: list[str]  # its "## title" section, heading first, as written
    target_rows: list[list[str]] = field(default_factory=list)  # its rows of the Targets table, as cells
    overview: list[str] | None = None  # its row of the Benches table, as cells


def row_cells(line: str) -> list[str]:
    """The cells of one markdown table row ("| a | b |" -> ["a", "b"])."""
    return [cell.strip() for cell in line.strip().strip("|").split(" | ")]


def _sections(markdown: str) -> list[list[str]]:
    sections: list[list[str]] = []
    for line in markdown.splitlines():
        if line.startswith("## "):
            sections.append([line])
        elif sections:
            sections[-1].append(line)
    return sections


def previous_sections(markdown: str) -> dict[str, Carried]:
    """Each bench section of a report written by report.py, keyed by its script's file name."""
    sections = _sections(markdown)
    fixed = {
        section[0][3:].strip(): section for section in sections if section[0][3:].strip() in _FIXED_SECTIONS
    }
    targets = [row_cells(line) for line in fixed.get("Targets", []) if line.startswith("| ")][2:]
    overview = [row_cells(line) for line in fixed.get("Benches", []) if line.startswith("| ")][2:]
    carried: dict[str, Carried] = {}
    for section in sections:
        title = section[0][3:].strip()
        if title in _FIXED_SECTIONS or len(section) < 3:
            continue
        if len(section) > 3 and section[2].startswith(CARRIED_NOTE_START):
            section = [section[0], *section[3:]]  # carried before: the note is written again, once
        found = _SCRIPT.search(section[2]) if len(section) > 2 else None
        if found is None:
            continue
        script = found.group(1)
        while section and not section[-1].strip():
            section = section[:-1]
        carried[script] = Carried(
            title,
            section,
            [row for row in targets if len(row) == 5 and row[1].startswith(f"{title}: ")],
            next((row for row in overview if row and row[0] == f"`{script}`"), None),
        )
    return carried
