"""The project stands alone: everything its tests, benches and server read is inside the repository.

A user's clone has nothing beside it, so a file that reaches outside the repository (a sibling folder,
an absolute path of one machine, ``Path(__file__).parents[N]`` climbing past the root) works on the
machine it was written on and fails everywhere else. These checks read every tracked text file.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "tests" / "vendor"
# Files read as text by the scan: larger ones are data (schemas, locks, judged sets), not code.
SCAN_MAX_BYTES = 512 * 1024
# Written in pieces so that this file does not match itself.
_OUTSIDE = re.compile(
    "|".join(
        [
            re.escape(".." + "/shared"),
            re.escape("/" + "work/"),
            r"/home/[a-z]",
            re.escape("/" + "root/"),
        ]
    )
)
_PARENTS = re.compile(r"Path\(__file__\)\.resolve\(\)\.parents\[(\d+)\]")


def _tracked_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=30
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [ROOT / name for name in listed.decode().split("\0") if name]


def _text(path: Path) -> str | None:
    if not path.is_file() or path.stat().st_size > SCAN_MAX_BYTES:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def _outside_references(relative: Path, text: str) -> list[str]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if _OUTSIDE.search(line):
            found.append(f"{relative}:{number}: {line.strip()[:120]}")
        for match in _PARENTS.finditer(line):
            # parents[0] is the file's own folder; parents[len(folder parts)] is the root.
            if int(match.group(1)) > len(relative.parent.parts):
                found.append(f"{relative}:{number}: climbs above the repository: {match.group(0)}")
    return found


def test_no_file_refers_to_a_path_outside_the_repository() -> None:
    found = []
    for path in _tracked_files():
        # This file's own cases below spell what it refuses.
        text = None if path == Path(__file__).resolve() else _text(path)
        if text is not None:
            found += _outside_references(path.relative_to(ROOT), text)
    assert found == []


@pytest.mark.parametrize(
    ("line", "outside"),
    [
        pytest.param("ROOT = Path(__file__).resolve().parents[2]", False, id="the-root"),
        pytest.param("UP = Path(__file__).resolve().parents[3] / 'shared'", True, id="above-the-root"),
        pytest.param("TOOL = '" + ".." + "/shared/tools/x.py'", True, id="the-sibling-folder"),
        pytest.param("DATA = '/" + "work/main/data'", True, id="an-absolute-path"),
        pytest.param("VENDOR = ROOT / 'tests' / 'vendor'", False, id="inside"),
    ],
)
def test_the_scan_refuses_what_reaches_outside(line: str, outside: bool) -> None:
    assert bool(_outside_references(Path("tests/server/test_x.py"), line)) is outside


def test_vendored_files_are_the_upstream_copies_listed_in_their_readme() -> None:
    readme = (VENDOR / "README.md").read_text(encoding="utf-8")
    listed = dict(
        (name, digest) for digest, name in re.findall(r"^([0-9a-f]{64})  (\S+)$", readme, flags=re.MULTILINE)
    )
    on_disk = {
        str(path.relative_to(VENDOR)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in VENDOR.rglob("*")
        if path.is_file() and path.name != "README.md"
    }
    assert listed == on_disk
