"""The worker processes of ``ai-search serve --workers N``: N copies of the app behind one port.

uvicorn's supervisor binds the port once, starts N processes (spawned: each a fresh interpreter),
hands each the listening socket, replaces a worker that dies, and stops them all on SIGINT or SIGTERM.
Each worker builds its own app from one :class:`ServePlan` (the data dir and the settings the command
line resolved), exactly as a separate ``ai-search serve`` would: its own store connections
(``workspace.db`` in WAL mode, or a pool to PostgreSQL), its own search index object on the data
dir's ``index.db`` (shared by the workers, kept current from the store's change log), and its rate
limits and OAuth consent tickets in the Redis of ``rate_limit_storage``.

That last part is why N > 1 needs Redis (:func:`check_workers`): with ``memory://`` every worker
would count every limit on its own, so N workers would admit N times each budget (the failed
sign-in budget among them), and a consent page served by one worker could not be answered through
another. A product that quietly divided or multiplied its limits by the worker count would be
hard to reason about; refusing to start, with the setting named, is the one behaviour an operator
cannot miss.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

from .app import create_app
from .ratelimit import RateLimiter, redis_url
from .serving import server_options
from .settings import Settings
from .store import StorageFailure, open_store

__all__ = [
    "MAX_WORKERS",
    "WORKER_HEALTHCHECK_SECONDS",
    "ServePlan",
    "WorkerConfig",
    "check_workers",
    "serve_workers",
]

# Worker processes one ``serve`` may start (processes). Each holds its own copy of the search index's
# vectors and of the embedding model in memory and its own database pool (database_pool_size
# connections), so memory and the database's max_connections run out long before 32 cores do; past
# one machine, run more machines behind a load balancer (docs/deploy.md).
MAX_WORKERS = 32
# Seconds a worker may take to answer the supervisor's health check before it is killed as hung and
# replaced (uvicorn's default is 5). A worker answers from a thread of its own, but only once it has
# imported the app (a second or two on an idle machine, several on a busy one), and a busy worker's
# thread waits its turn for the interpreter: 5 s would kill workers that are merely slow to start, and
# each replacement would start as slowly.
WORKER_HEALTHCHECK_SECONDS = 30


@dataclass(frozen=True)
class ServePlan:
    """What every worker builds its app from; pickled to each spawned worker, so plain values only.

    The settings (secrets among them) reach the workers through the pipe multiprocessing spawns them
    with, never on a command line or in the environment.
    """

    data_dir: Path
    settings: Settings


def check_workers(count: int, settings: Settings) -> None:
    """Whether ``count`` workers may serve with these settings.

    Raises:
        ValueError: a sentence for the person at the terminal: the count is out of range, or N > 1
            workers with rate limits in process memory.
    """
    if not 1 <= count <= MAX_WORKERS:
        raise ValueError(f"--workers is a number of processes from 1 to {MAX_WORKERS}, not {count}")
    if count > 1 and redis_url(settings.rate_limit_storage) is None:
        raise ValueError(
            f"--workers {count} needs the rate limits shared between the workers: set rate_limit_storage "
            f"to a Redis (redis://host:6379/0; now {settings.rate_limit_storage!r}); in process memory "
            f"each worker would count on its own and admit {count} times every limit"
        )


def build_worker_app(plan: ServePlan) -> Starlette:
    """One worker's app, around a store it opens (and its app's shutdown closes).

    A failure to open the store ends the worker with uvicorn's start-up failure status, which stops
    the supervisor instead of making it start the worker again and again.
    """
    settings = plan.settings
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    try:
        store = open_store(
            plan.data_dir, database_url=settings.database_url, pool_size=settings.database_pool_size
        )
    except StorageFailure as exc:
        print(f"ai-search: worker {os.getpid()}: {exc}", file=sys.stderr)
        sys.exit(STARTUP_FAILURE)
    return create_app(settings, store, limiter=RateLimiter(settings.rate_limit_storage), close_store=True)


class WorkerConfig(uvicorn.Config):
    """uvicorn's configuration of the workers: the app and the protocol class are made in each worker.

    The configuration is pickled to every spawned worker, and neither an app around open connections
    nor :func:`serving.server_options`'s protocol class (a class made at run time) pickles; so the app
    is a factory of the plan, and the protocol class is made when a worker loads its configuration.
    """

    def __init__(self, plan: ServePlan, **options: Any) -> None:
        self.plan = plan
        uvicorn_options = {key: value for key, value in self._server_options().items() if key != "http"}
        app = functools.partial(build_worker_app, plan)  # pickles: a module function and plain values
        super().__init__(app=app, factory=True, **uvicorn_options, **options)

    def _server_options(self) -> dict[str, Any]:
        return server_options(max_connections=self.plan.settings.max_connections)

    def load(self) -> None:
        self.http = self._server_options()["http"]
        super().load()


def serve_workers(plan: ServePlan, *, host: str, port: int, workers: int) -> None:
    """Serve ``plan`` on ``host:port`` with ``workers`` processes until SIGINT or SIGTERM."""
    config = WorkerConfig(
        plan,
        host=host,
        port=port,
        workers=workers,
        log_level=plan.settings.log_level,
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS,
    )
    sock = config.bind_socket()
    try:
        Multiprocess(config, sockets=[sock]).run()
    finally:
        sock.close()
