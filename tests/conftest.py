"""Fixtures shared by every test folder.

The requirement marks and the ``figure`` fixture of the reliability promises come from
``tests/_figures.py``: tests/reliability and tests/browser (the rendering promises) both use them.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from tests._figures import figure, pytest_configure, pytest_terminal_summary

__all__ = ["anyio_backend", "figure", "pytest_configure", "pytest_terminal_summary"]

# Tests assert behaviour, never speed (the benches measure it): a property's examples may take as
# long as a busy machine needs, so hypothesis's per-example deadline is off for every test.
settings.register_profile("ai-search", deadline=None)
settings.load_profile("ai-search")


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"
