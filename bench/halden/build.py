"""Write ``workspace.jsonl``: the written conversations and the background, in the import format.

    .venv/bin/python -m bench.halden.build          # rewrites bench/halden/workspace.jsonl

One message a line, oldest first, as ``ai-search import`` reads it (README, "import"): ``room``,
``room_type``, ``user``, ``name`` (the author's display name), ``ts``, ``text``, ``id``, ``members`` on
each room's first line, and ``tmid`` on thread replies (the id of the thread's first message, as
Rocket.Chat names it; today's importer ignores fields it does not know).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .background import BackgroundMessage, generate_background
from .workspace import PEOPLE, Person, WrittenMessage, read_conversations

__all__ = ["WORKSPACE_PATH", "load_workspace", "rows_of", "workspace_rows", "write_workspace"]

WORKSPACE_PATH = Path(__file__).resolve().parent / "workspace.jsonl"


def workspace_rows() -> list[dict[str, Any]]:
    written = read_conversations()
    return rows_of(written, generate_background({m.text for m in written}), PEOPLE)


def rows_of(
    written: Sequence[WrittenMessage], background: Sequence[BackgroundMessage], people: Sequence[Person]
) -> list[dict[str, Any]]:
    """The import rows of a workspace's written and background messages, oldest first (any set
    written in this format: Halden's, bench/ferry's)."""
    names = {p.username: p.name for p in people}
    messages = [(m.ts, m.id, m.room, m.user, m.text, m.tmid) for m in written]
    messages += [(m.ts, m.id, m.room, m.user, m.text, None) for m in background]
    messages.sort(key=lambda m: (m[0], m[1]))
    rows: list[dict[str, Any]] = []
    seen_rooms: set[str] = set()
    for ts, message_id, room, user, text, tmid in messages:
        row: dict[str, Any] = {
            "id": message_id,
            "room": room.name,
            "room_type": room.type,
            "user": user,
            "name": names[user],
            "ts": ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "text": text,
        }
        if tmid is not None:
            row["tmid"] = tmid
        if room.name not in seen_rooms:
            seen_rooms.add(room.name)
            row["members"] = sorted(room.members)
        rows.append(row)
    return rows


def load_workspace(path: Path = WORKSPACE_PATH) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def write_workspace(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    print(f"{path}: {len(rows)} messages")


def main() -> None:
    write_workspace(WORKSPACE_PATH, workspace_rows())


if __name__ == "__main__":
    main()
