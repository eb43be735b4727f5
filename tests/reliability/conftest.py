"""Fixtures of the reliability suite: the soak switch and the real app (marks and figures are shared).

- ``@pytest.mark.requirement("A4")`` and the ``figure`` fixture come from ``tests/_figures.py``
  (shared with the browser tests of the rendering promises).
- ``@pytest.mark.soak`` tests (the long counts) are skipped unless ``AI_SEARCH_SOAK=1`` (what
  ``scripts/test-reliability`` sets) or ``-m`` selects ``soak``; the default run keeps reduced counts.
- The workspace, ``app`` and ``client`` fixtures come from ``tests/server/conftest.py`` (alice, bob,
  carol and four rooms), and ``new_database`` (a fresh workspace database per property example);
  ``settings`` here turns the local embedding model off, so search is keyword-only and starts at once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ai_search_server.settings import Settings, load_settings
from tests._figures import Figure
from tests.server.conftest import BASE_URL, app, client, data_dir, new_database, store, workspace

__all__ = ["BASE_URL", "SOAK_ENV", "Figure", "app", "client", "data_dir", "new_database", "store", "workspace"]

SOAK_ENV = "AI_SEARCH_SOAK"
HERE = Path(__file__).resolve().parent


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


def reliability_settings(**overrides: Any) -> Settings:
    """The settings of the in-process app: MCP on, no embedding model (keyword search starts at once)."""
    values = {"site_url": BASE_URL, "mcp_enabled": True, "embedder": "none", **overrides}
    return load_settings(environ={}, overrides=values)


@pytest.fixture
def settings() -> Settings:
    return reliability_settings()

