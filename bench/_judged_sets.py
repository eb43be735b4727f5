"""The judged sets the relevance bench runs: the demo workspace, the Halden workspace (bench/halden/) and
the Ferry workspace (bench/ferry/, an open-source project's support community).

Each set names its judgments file, where its data dir lives under ``bench/out/``, and how to fill an
empty store with its workspace (people first, so they keep their display names, then the messages).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ai_search_server.demo import DEMO_USERS, generate_demo_messages
from ai_search_server.importer import import_rows
from ai_search_server.store.base import Store
from halden.build import WORKSPACE_PATH, load_workspace
from halden.judgments import JUDGMENTS_PATH as HALDEN_JUDGMENTS
from halden.workspace import PEOPLE

__all__ = ["JUDGED_SETS", "JudgedSet"]

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"
FERRY_JUDGMENTS = ROOT / "ferry" / "judgments.json"


def _load_demo(store: Store) -> None:
    for user in DEMO_USERS:
        store.create_user(user.username, name=user.name, roles=(user.role,))
    import_rows(store, generate_demo_messages())


def _load_halden(store: Store) -> None:
    for person in PEOPLE:
        store.create_user(person.username, name=person.name)
    import_rows(store, load_workspace(WORKSPACE_PATH))


def _load_ferry(store: Store) -> None:
    # bench/ferry reuses Halden's parser and builder by their full names (bench.halden...), so the
    # repository's root must be importable, as it is under pytest or with PYTHONPATH=.
    if str(ROOT.parent) not in sys.path:
        sys.path.append(str(ROOT.parent))
    from bench.ferry.build import WORKSPACE_PATH as FERRY_WORKSPACE
    from bench.ferry.workspace import PEOPLE as FERRY_PEOPLE

    for person in FERRY_PEOPLE:
        store.create_user(person.username, name=person.name)
    import_rows(store, load_workspace(FERRY_WORKSPACE))


@dataclass(frozen=True)
class JudgedSet:
    name: str
    judgments: Path
    data_dir: Path
    load: Callable[[Store], None]
    paraphrase_kind: str  # the kind whose queries share few or no words with their answers

    def queries(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = json.loads(self.judgments.read_text(encoding="utf-8"))["queries"]
        return found


JUDGED_SETS: dict[str, JudgedSet] = {
    "demo": JudgedSet("demo", ROOT / "relevance_judgments.json", OUT / "relevance", _load_demo, "semantic"),
    "halden": JudgedSet("halden", HALDEN_JUDGMENTS, OUT / "relevance-halden", _load_halden, "paraphrase"),
    "ferry": JudgedSet("ferry", FERRY_JUDGMENTS, OUT / "relevance-ferry", _load_ferry, "paraphrase"),
}
