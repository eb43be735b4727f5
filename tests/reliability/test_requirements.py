"""The manifest holds: every requirement of the plan has a test here, and every test names a real one.

Read from the test modules themselves (their ``requirement`` marks), not from what this session
collected, so the check holds when only one file runs.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path

from ._requirements import NOT_HERE, REQUIREMENTS

HERE = Path(__file__).resolve().parent
PLAN_IDS = [f"{group}{n}" for group, count in zip("ABCDEFGHI", (4, 4, 4, 3, 1, 5, 2, 3, 2), strict=True)
            for n in range(1, count + 1)]  # fmt: skip


def marked_tests() -> Iterator[tuple[str, str]]:
    """(test name, requirement ID) for every requirement mark in tests/reliability/test_*.py."""
    for path in sorted(HERE.glob("test_*.py")):
        module = importlib.import_module(f"tests.reliability.{path.stem}")
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if not name.startswith("test_"):
                continue
            for mark in getattr(function, "pytestmark", []):
                if mark.name == "requirement":
                    yield f"{path.stem}::{name}", mark.args[0]


def test_the_manifest_lists_exactly_the_plan() -> None:
    assert sorted(REQUIREMENTS) == sorted(PLAN_IDS)
    assert len(PLAN_IDS) == 28


def test_every_requirement_but_the_browser_ones_has_a_test() -> None:
    covered = {requirement for _test, requirement in marked_tests()}
    missing = sorted(set(REQUIREMENTS) - NOT_HERE - covered)
    assert missing == [], f"requirements without a test in tests/reliability: {missing}"


def test_every_mark_names_a_known_requirement() -> None:
    unknown = [(test, requirement) for test, requirement in marked_tests() if requirement not in REQUIREMENTS]
    assert unknown == []
