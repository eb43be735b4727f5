"""Fixtures shared by every test folder.

The requirement marks and the ``figure`` fixture of the reliability promises come from
``tests/_figures.py``: tests/reliability and tests/browser (the rendering promises) both use them.

``--store=postgres`` (or ``AI_SEARCH_TEST_STORE=postgres``) runs the tests that take the ``store``
fixture on PostgreSQL: a throwaway cluster for the session (``tests/_postgres.py``), a fresh database
per test. The default is SQLite.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from tests._figures import figure, pytest_configure, pytest_terminal_summary
from tests._postgres import PostgresCluster, find_pg_bin, running_cluster

__all__ = [
    "anyio_backend",
    "database_url",
    "figure",
    "pg_cluster",
    "pytest_addoption",
    "pytest_configure",
    "pytest_terminal_summary",
    "store_kind",
]

STORE_KINDS = ("sqlite", "postgres")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store",
        choices=STORE_KINDS,
        default=os.environ.get("AI_SEARCH_TEST_STORE") or "sqlite",
        help="the workspace store the server tests run on (default: sqlite, or $AI_SEARCH_TEST_STORE)",
    )


@pytest.fixture(scope="session")
def store_kind(request: pytest.FixtureRequest) -> str:
    """The store the tests' ``store`` fixture opens: ``--store``."""
    return str(request.config.getoption("--store"))


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PostgresCluster]:
    """One PostgreSQL cluster for the whole session, started on first use. Without Debian's server
    (``scripts/setup --test`` installs it) the tests that need it fail under CI and skip elsewhere."""
    pg_bin = find_pg_bin()
    if pg_bin is None:
        message = "PostgreSQL's initdb and pg_ctl are not installed (scripts/setup --test installs them)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with running_cluster(pg_bin) as cluster:
        yield cluster


@pytest.fixture
def database_url(store_kind: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh PostgreSQL database's URL under ``--store=postgres``; empty (SQLite) otherwise."""
    if store_kind != "postgres":
        yield ""
        return
    cluster: PostgresCluster = request.getfixturevalue("pg_cluster")
    with cluster.fresh_database() as url:
        yield url

# Tests assert behaviour, never speed (the benches measure it): a property's examples may take as
# long as a busy machine needs, so hypothesis's per-example deadline is off for every test.
settings.register_profile("ai-search", deadline=None)
settings.load_profile("ai-search")


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"
