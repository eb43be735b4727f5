"""``ai-search sync rocketchat`` as a running job: one outbound client, the mirror, the index, signals.

The command checks what the person typed (``cli.py``); this runs it. The job has one
``GuardedClient`` under the server's outbound policy (``services.outbound_policy``, with the mirrored
server's host on the allow-list, as the setting ``rocketchat_url`` puts it there), and everything that
calls out uses it: the Rocket.Chat REST client, and an OpenAI-compatible embedder of the index, which
calls from its thread through ``BlockingClient``. After a run that changed something the index is
brought level (``retrieval.wiring.index_now``), so search finds what came in without a server.

With ``watch`` the mirror runs again every ``interval_seconds``; a server that stays unreachable is
tried again at the next turn, a refusal (a token, a permission) ends the job. SIGINT and SIGTERM stop
it between two of its steps: what was written stays, and the next run resumes from the saved cursors.
"""

from __future__ import annotations

import dataclasses
import functools
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.lowlevel
import anyio.to_thread

from .imports.mapping import NO_MAPPING, SourceMapping
from .imports.rocketchat import RocketChatSync
from .imports.rocketchat_api import Credentials, RocketChatAPI, RocketChatUnreachable
from .outbound import BlockingClient, GuardedClient
from .retrieval.wiring import index_now
from .services import outbound_policy
from .settings import Settings
from .store.base import Store

__all__ = ["MirrorJob", "run_mirror_job"]


@dataclass(frozen=True)
class MirrorJob:
    """What one ``ai-search sync rocketchat`` mirrors, where to, and how."""

    settings: Settings
    store: Store
    data_dir: Path
    url: str  # the Rocket.Chat server, checked by the command
    credentials: Credentials  # an admin's personal access token
    interval_seconds: int
    watch: bool
    quiet: bool
    mapping: SourceMapping = (
        NO_MAPPING  # the admin's mapping to accounts and rooms here, checked by the command
    )


def run_mirror_job(job: MirrorJob) -> bool:
    """Run the job until it ends, or until SIGINT or SIGTERM stops it; returns whether a signal did.

    Raises:
        RocketChatRefused: the server refused the token, a permission or a call.
        RocketChatUnreachable: the server stayed unreachable (without ``watch`` only).
    """
    return anyio.run(_run, job)


async def _run(job: MirrorJob) -> bool:
    stopped = False

    async def stop_on_signal(scope: anyio.CancelScope) -> None:
        nonlocal stopped
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _signal in signals:
                stopped = True
                scope.cancel()
                return

    # The URL comes from the person running the command: its host joins the allow-list as the
    # setting rocketchat_url's does, and nothing else does.
    policy = outbound_policy(dataclasses.replace(job.settings, rocketchat_url=job.url))
    try:
        async with GuardedClient(policy) as client, anyio.create_task_group() as group:
            group.start_soon(stop_on_signal, group.cancel_scope)
            await _mirror(job, client)
            group.cancel_scope.cancel()
    except ExceptionGroup as failed:
        # The task group wraps what the mirror raised; the command answers the mirror's own error.
        # (Not `except*`: before CPython 3.11.4 a raise inside it comes out wrapped again.)
        raise _first_error(failed) from None
    return stopped


def _first_error(group: BaseExceptionGroup[Exception]) -> Exception:
    """The first error inside ``group``, however deeply task groups nested it."""
    first: Exception | BaseExceptionGroup[Exception] = group
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first


async def _mirror(job: MirrorJob, client: GuardedClient) -> None:
    # The index's embedder (an OpenAI-compatible one) calls out from its thread through this client.
    blocking = BlockingClient(client, anyio.lowlevel.current_token())
    api = RocketChatAPI(job.url, job.credentials, client)
    sync = RocketChatSync(job.store, api, progress=not job.quiet, mapping=job.mapping)
    first = True
    while True:
        try:
            report = await sync.run()
        except RocketChatUnreachable as exc:
            if not job.watch:
                raise
            print(f"ai-search: {exc}; trying again in {job.interval_seconds} s", file=sys.stderr)
        else:
            changed = report.imported or report.updated or report.deleted
            if first or changed or report.skipped_count:
                print(report.summary(), flush=True)
            if first or changed:
                index = functools.partial(
                    index_now,
                    job.settings,
                    job.store,
                    job.data_dir,
                    client=blocking,
                    progress=not job.quiet and first,
                )
                await anyio.to_thread.run_sync(index)
            first = False
        if not job.watch:
            return
        sync.progress = False
        await anyio.sleep(job.interval_seconds)
