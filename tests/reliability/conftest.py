"""Fixtures of the reliability suite: requirement markers, figures, the soak switch, the real app.

- ``@pytest.mark.requirement("A4")`` ties a test to a row of ``_requirements.REQUIREMENTS``.
- ``figure(tried=..., failed=..., **metrics)`` writes the test's figure line (``_report``) under its
  requirement ID and prints it; the terminal summary lists every figure of the session.
- ``@pytest.mark.soak`` tests (the long counts) are skipped unless ``AI_SEARCH_SOAK=1`` (what
  ``scripts/test-reliability`` sets) or ``-m`` selects ``soak``; the default run keeps reduced counts.
- The workspace fixtures come from ``tests/server/conftest.py`` (alice, bob, carol and four rooms);
  ``settings`` here turns the local embedding model off, so search is keyword-only and starts at once.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from ai_search_server.app import create_app
from ai_search_server.ratelimit import RateLimiter
from ai_search_server.settings import Settings, load_settings
from tests.reliability._report import FigureWriter, report_path
from tests.reliability._requirements import REQUIREMENTS
from tests.server.conftest import BASE_URL, data_dir, store, workspace

__all__ = ["BASE_URL", "SOAK_ENV", "data_dir", "store", "workspace"]

SOAK_ENV = "AI_SEARCH_SOAK"
HERE = Path(__file__).resolve().parent
_writer: FigureWriter | None = None


def writer() -> FigureWriter:
    global _writer
    if _writer is None:
        _writer = FigureWriter(report_path())
    return _writer


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requirement(id): the reliability requirement (A1..I2) a test proves; see _requirements.py"
    )


def _soak_selected(config: pytest.Config) -> bool:
    if os.environ.get(SOAK_ENV) == "1":
        return True
    expression = str(config.getoption("markexpr", "") or "")
    return "soak" in expression and "not soak" not in expression


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _soak_selected(config):
        return
    skip = pytest.mark.skip(reason=f"soak: long counts; run scripts/test-reliability (or {SOAK_ENV}=1)")
    for item in items:
        if item.get_closest_marker("soak") and HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)


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


Figure = Callable[..., dict[str, Any]]


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


def reliability_settings(**overrides: Any) -> Settings:
    """The settings of the in-process app: MCP on, no embedding model (keyword search starts at once)."""
    values = {"site_url": BASE_URL, "mcp_enabled": True, "embedder": "none", **overrides}
    return load_settings(environ={}, overrides=values)


@pytest.fixture
def settings() -> Settings:
    return reliability_settings()


@pytest.fixture
def app(settings: Settings, store: Any) -> Starlette:
    return create_app(settings, store, limiter=RateLimiter("memory://"))


@pytest.fixture
async def client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as c:
        yield c
