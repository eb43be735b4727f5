"""``serve --workers N`` in-process: what travels to a worker, and what a worker builds from it.

The end-to-end run (two workers on one port, one killed and replaced) is in test_proxies.py; here the
parts that make it work are checked on their own, in milliseconds: the configuration pickles (it
crosses to every spawned worker), loading it builds the app and the product's protocol class with
the settings' caps, and the worker count is checked before anything starts.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from starlette.applications import Starlette

from ai_search_server.serving import HeadLimitedHttpToolsProtocol
from ai_search_server.settings import load_settings
from ai_search_server.workers import MAX_WORKERS, ServePlan, WorkerConfig, check_workers


def _plan(tmp_path: Path, **overrides: object) -> ServePlan:
    settings = load_settings(
        environ={}, overrides={"site_url": "http://127.0.0.1:8000", "embedder": "none", **overrides}
    )
    return ServePlan(tmp_path / "data", settings)


def test_the_workers_configuration_pickles_and_builds_the_app_in_the_worker(tmp_path: Path) -> None:
    plan = _plan(tmp_path, max_connections=77, rate_limit_storage="redis://127.0.0.1:1/0")
    config = WorkerConfig(plan, host="127.0.0.1", port=0, workers=2)
    arrived = pickle.loads(pickle.dumps(config))  # as multiprocessing's spawn hands it over
    assert isinstance(arrived, WorkerConfig) and arrived.plan == plan and arrived.workers == 2
    arrived.load()
    app = arrived.loaded_app
    try:
        assert isinstance(app, Starlette)
        protocol = arrived.http_protocol_class
        assert issubclass(protocol, HeadLimitedHttpToolsProtocol) and protocol.max_connections == 77
        assert (tmp_path / "data" / "workspace.db").exists()  # the worker opened the data dir's store
    finally:
        app.state.services.store.close()  # the app's shutdown would (close_store); no lifespan ran here


@pytest.mark.parametrize(
    ("count", "storage", "refusal"),
    [
        (1, "memory://", None),
        (MAX_WORKERS, "redis://cache.internal:6379/0", None),
        (2, "redis+unix:///run/redis.sock?db=0", None),
        (0, "redis://cache.internal:6379/0", f"from 1 to {MAX_WORKERS}, not 0"),
        (MAX_WORKERS + 1, "redis://cache.internal:6379/0", f"not {MAX_WORKERS + 1}"),
        (2, "memory://", "set rate_limit_storage to a Redis"),
    ],
)
def test_the_worker_count_is_checked_with_the_limits_storage(
    tmp_path: Path, count: int, storage: str, refusal: str | None
) -> None:
    plan = _plan(tmp_path, rate_limit_storage=storage)
    if refusal is None:
        check_workers(count, plan.settings)
    else:
        with pytest.raises(ValueError, match=refusal):
            check_workers(count, plan.settings)
