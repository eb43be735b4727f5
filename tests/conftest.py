"""Fixtures shared by every test folder, and the two tiers of the suite.

``scripts/test`` runs the quick tier: every layer (lint, types, the core, the server on SQLite, the
reliability promises at their reduced counts, the page in Chromium on its default interpreter), in
about ten minutes on two cores. ``scripts/test --all`` (what CI runs) adds the modules of
:data:`FULL_TIER`: each is a second interpreter, a second store, an outside tool, several processes
or a long sweep, whose behaviour the quick tier covers once already. They carry the ``full`` marker,
which ``-m "not full"`` leaves out; naming such a file on the command line runs it as usual.

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
    "FULL_TIER",
    "anyio_backend",
    "database_url",
    "figure",
    "pg_cluster",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_terminal_summary",
    "store_kind",
]

STORE_KINDS = ("sqlite", "postgres")

# Modules that only ``scripts/test --all`` runs, and why they can wait for it.
FULL_TIER: dict[str, str] = {
    "tests/browser/test_click_everything.py": "the click-through sweep of every control, both widths and themes",
    "tests/browser/test_start_pyodide.py": "the page on Pyodide (its snapshot and start), the other interpreter",
    "tests/browser/test_in_pyodide.py": "the core inside CPython in the browser, the other interpreter",
    "tests/unit/test_core_micropython.py": "the core's keystroke modules run again under MicroPython",
    "tests/unit/test_bench_report.py": "every bench script's arguments, each script started",
    "tests/server/test_openapi_fuzz.py": "schemathesis over every operation (A3 keeps a reduced run)",
    "tests/server/test_pg_keyword.py": "the keyword index inside PostgreSQL",
    "tests/server/test_store_postgres.py": "the PostgreSQL store's own checks",
    "tests/server/test_proxies.py": "several proxy processes over PostgreSQL and Redis",
    "tests/server/test_pipeline_process.py": "the pipeline as a process of its own",
    "tests/server/test_live_server.py": "ai-search serve with workers, started as a process",
    "tests/server/test_live_index.py": "the index following a live store, in processes",
    "tests/server/test_mcp_conformance.py": "the official MCP conformance runner (Node)",
    "tests/server/test_mcp_inspector.py": "the MCP Inspector's command line (Node)",
    "tests/server/test_readme_examples.py": "README's commands, each run as a person would",
    "tests/server/test_search_model.py": "the packaged embedding model, loaded and run",
    "tests/reliability/test_data_safety.py": "kill -9 during posting and importing, and a full disk",
}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks the tests of :data:`FULL_TIER`'s modules ``full``."""
    root = config.rootpath
    for item in items:
        if item.path.relative_to(root).as_posix() in FULL_TIER:
            item.add_marker(pytest.mark.full)


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
