"""The fixture exports (tests/server/data/imports/) and what the import tests do with them.

Each fixture is written from its format's public documentation (Slack's "How to read Slack data
exports", Mattermost's "Bulk loading data format", Zulip's ``zerver/lib/export.py``) and holds the
awkward cases on purpose: deleted and unknown users, bots, a renamed channel, threads across days,
a tombstone, unicode, a code block, a damaged file, records missing fields. A test copies a fixture
into its own temp dir (``copy_fixture``), changes it there to make "a newer export", and packs it as
the source packs it (``pack``: a zip for Slack and Mattermost, a tar.gz for Zulip).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import tarfile
import zipfile
from pathlib import Path
from typing import Any

__all__ = ["FIXTURES", "content_hash", "copy_fixture", "edit_json", "edit_jsonl", "pack", "read_json"]

FIXTURES = Path(__file__).parent / "data" / "imports"


def content_hash(data_dir: Path) -> str:
    """Every row of every table, in a stable order: equal hashes mean nothing changed."""
    digest = hashlib.sha256()
    conn = sqlite3.connect(data_dir / "workspace.db")
    try:
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in sorted(tables):
            for row in sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr):
                digest.update(repr((table, row)).encode())
    finally:
        conn.close()
    return digest.hexdigest()


def copy_fixture(name: str, into: Path) -> Path:
    """A private copy of fixture ``name`` (``slack``, ``mattermost``, ``zulip``) under ``into``."""
    target = into / name
    shutil.copytree(FIXTURES / name, target)
    return target


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def edit_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def edit_jsonl(path: Path, lines: list[Any]) -> None:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")


def pack(folder: Path, kind: str, into: Path) -> Path:
    """``folder`` packed as its source hands it out: ``zip`` (members relative to the folder) or
    ``tar.gz`` (the folder itself as the archive's top directory, as Zulip's export does)."""
    if kind == "zip":
        target = into / f"{folder.name}.zip"
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
            for file in sorted(folder.rglob("*")):
                if file.is_file():
                    archive.write(file, file.relative_to(folder).as_posix())
        return target
    target = into / f"{folder.name}.tar.gz"
    with tarfile.open(target, "w:gz") as archive:
        archive.add(folder, arcname=folder.name)
    return target
