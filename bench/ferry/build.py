"""Write ``workspace.jsonl``: the written conversations and the background, in the import format.

    .venv/bin/python -m bench.ferry.build          # rewrites bench/ferry/workspace.jsonl

The same rows as Halden's (``bench.halden.build.rows_of``): ``room``, ``room_type``, ``user``,
``name``, ``ts``, ``text``, ``id``, ``members`` on each room's first line, ``tmid`` on thread replies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.halden.build import load_workspace, rows_of, write_workspace

from .background import generate_background
from .workspace import PEOPLE, read_written

__all__ = ["WORKSPACE_PATH", "load_workspace", "workspace_rows"]

WORKSPACE_PATH = Path(__file__).resolve().parent / "workspace.jsonl"


def workspace_rows() -> list[dict[str, Any]]:
    written = read_written()
    return rows_of(written, generate_background({m.text for m in written}), PEOPLE)


def main() -> None:
    write_workspace(WORKSPACE_PATH, workspace_rows())


if __name__ == "__main__":
    main()
