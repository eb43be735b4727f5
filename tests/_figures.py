"""Requirement marks and figure lines for every test folder (a pytest plugin of tests/conftest.py).

The promises of SECURITY.md are proved in two folders: ``tests/reliability``, and ``tests/browser``
for the rendering ones (B2, B3), whose sync Playwright must run after every anyio test and so stays
in the folder that runs last. Both use the same plumbing, from here:

- ``@pytest.mark.requirement("A4")`` ties a test to a row of ``tests/reliability/_requirements.py``.
- ``figure(tried=..., failed=..., **metrics)`` writes the test's figure line
  (``tests/reliability/_report.py``) under its requirement ID and prints it; a test marked
  ``soak`` writes ``mode: soak``, every other one ``mode: default``.
- The terminal summary lists every figure of the session and the file they went to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.reliability._report import FigureWriter, report_path
from tests.reliability._requirements import REQUIREMENTS

__all__ = ["Figure", "figure", "pytest_configure", "pytest_terminal_summary", "writer"]

Figure = Callable[..., dict[str, Any]]
_writer: FigureWriter | None = None


def writer() -> FigureWriter:
    """The session's one writer (created on first use, so a session without figures writes nothing)."""
    global _writer
    if _writer is None:
        _writer = FigureWriter(report_path())
    return _writer


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requirement(id): the reliability requirement (A1..I2) a test proves; see _requirements.py"
    )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = _writer.lines if _writer is not None else []
    if not lines:
        return
    terminalreporter.section("reliability figures")
    for line in lines:
        metrics = {k: v for k, v in line.items() if k not in ("id", "test", "mode", "at", "run")}
        name = line["test"].rsplit("::", 1)[-1]
        terminalreporter.write_line(f"{line['id']} [{line['mode']}] {name}: {metrics}")
    if _writer is not None and _writer.path is not None:
        terminalreporter.write_line(f"written to {_writer.path}")


@pytest.fixture
def figure(request: pytest.FixtureRequest) -> Figure:
    """``figure(tried=N, failed=M, **metrics)``: write and print this test's figure line."""
    marker = request.node.get_closest_marker("requirement")
    if marker is None or len(marker.args) != 1 or marker.args[0] not in REQUIREMENTS:
        raise pytest.UsageError(f"{request.node.nodeid}: a figure needs @pytest.mark.requirement(<known id>)")
    requirement: str = marker.args[0]
    mode = "soak" if request.node.get_closest_marker("soak") else "default"

    def record(*, tried: int, failed: int, **metrics: Any) -> dict[str, Any]:
        return writer().write(requirement, request.node.nodeid, mode, tried, failed, metrics)

    return record
