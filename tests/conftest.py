"""Fixtures shared by every test folder.

The requirement marks and the ``figure`` fixture of the reliability promises come from
``tests/_figures.py``: tests/reliability and tests/browser (the rendering promises) both use them.
"""

from __future__ import annotations

import pytest

from tests._figures import figure, pytest_configure, pytest_terminal_summary

__all__ = ["anyio_backend", "figure", "pytest_configure", "pytest_terminal_summary"]


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"
