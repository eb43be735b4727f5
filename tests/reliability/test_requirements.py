"""The manifest holds: every requirement of the plan has a test, and every test names a real one.

Read from the proving modules themselves (``_requirements.proof_tests``: tests/reliability and the
rendering tests of tests/browser), not from what this session collected, so the check holds when
only one file runs.
"""

from __future__ import annotations

from ._requirements import REQUIREMENTS, requirement_marks

PLAN_IDS = [f"{group}{n}" for group, count in zip("ABCDEFGHI", (5, 7, 9, 4, 1, 8, 2, 3, 2), strict=True)
            for n in range(1, count + 1)]  # fmt: skip


def test_the_manifest_lists_exactly_the_plan() -> None:
    assert sorted(REQUIREMENTS) == sorted(PLAN_IDS)
    assert len(PLAN_IDS) == 41


def test_every_requirement_has_a_test() -> None:
    covered = {requirement for _test, requirement in requirement_marks()}
    missing = sorted(set(REQUIREMENTS) - covered)
    assert missing == [], f"requirements without a proving test: {missing}"


def test_every_mark_names_a_known_requirement() -> None:
    unknown = [
        (test, requirement) for test, requirement in requirement_marks() if requirement not in REQUIREMENTS
    ]
    assert unknown == []
