"""Write ``workspace.jsonl``: the written conversations and the background, in the import format.

    .venv/bin/python -m bench.halden.build          # rewrites bench/halden/workspace.jsonl

One message a line, oldest first, as ``ai-search import`` reads it (README, "import"): ``room``,
``room_type``, ``user``, ``name`` (the author's display name), ``ts``, ``text``, ``id``, ``members`` on
each room's first line, and ``tmid`` on thread replies (the id of the thread's first message, as
Rocket.Chat names it; today's importer ignores fields it does not know).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .background import generate_background
from .workspace import PEOPLE, read_conversations

__all__ = ["WORKSPACE_PATH", "load_workspace", "workspace_rows"]

WORKSPACE_PATH = Path(__file__).resolve().parent / "workspace.jsonl"
_NAMES = {p.username: p.name for p in PEOPLE}


def workspace_rows() -> list[dict[str, Any]]:
    written = read_conversations()
    background = generate_background({m.text for m in written})
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
            "name": _NAMES[user],
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


def main() -> None:
    rows = workspace_rows()
    WORKSPACE_PATH.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8"
    )
    print(f"{WORKSPACE_PATH}: {len(rows)} messages")


if __name__ == "__main__":
    main()
