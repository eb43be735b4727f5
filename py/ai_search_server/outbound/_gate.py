"""The process-wide cap on outbound calls running at once (pipeline, LLM, embeddings).

Every upstream call holds a slot of a :class:`CallGate` from before it connects until its body is read
or its stream is closed. A call that finds every slot taken waits, first come first served, for at
most ``wait_seconds``, then fails with ``OutboundBusy`` (503): a burst of searches and answers queues
briefly instead of opening an unbounded number of connections and tasks against a provider that is
already slow, and a caller that cannot be served soon hears so at once rather than at its deadline.

Each ``GuardedClient`` owns one gate, and the app has one client, which the answers, the remote
pipeline and the embedder all call (the embedder from its thread, through ``BlockingClient``), so the
cap holds for the whole process without any registry.

Why not ``asyncio.Semaphore``: it binds to the first event loop that waits on it; this gate is
thread-safe and hands slots over with ``call_soon_threadsafe`` to whichever loop the waiter runs on,
so a client used by a test on several loops in turn still counts right.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

__all__ = ["CallGate", "GateBusy"]


class GateBusy(Exception):
    """No slot came free within the wait."""


@dataclass(eq=False)
class _Waiter:
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]
    granted: bool = False


@dataclass(eq=False)
class CallGate:
    """At most ``max_calls`` slots held at once; a caller waits at most ``wait_seconds`` for one."""

    max_calls: int
    wait_seconds: float
    _in_use: int = field(default=0, init=False)
    _waiters: deque[_Waiter] = field(default_factory=deque, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        if self.max_calls < 1:
            raise ValueError(f"max_calls must be at least 1, got {self.max_calls}")
        if not self.wait_seconds >= 0:
            raise ValueError(f"wait_seconds must be >= 0, got {self.wait_seconds}")

    @property
    def in_use(self) -> int:
        return self._in_use

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot for the body of the ``async with``.

        Raises:
            GateBusy: every slot stayed taken for ``wait_seconds``.
        """
        await self._acquire()
        try:
            yield
        finally:
            self._release()

    async def _acquire(self) -> None:
        with self._lock:
            if self._in_use < self.max_calls and not self._waiters:
                self._in_use += 1
                return
            loop = asyncio.get_running_loop()
            waiter = _Waiter(loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter.future), self.wait_seconds)
        except BaseException as exc:
            with self._lock:
                granted = waiter.granted
                if not granted:
                    self._waiters.remove(waiter)
            if granted and isinstance(exc, TimeoutError):
                return  # the slot arrived as the wait ended: take it
            if granted:
                self._release()  # cancelled after being handed a slot: pass it on
            if isinstance(exc, TimeoutError):
                raise GateBusy from None
            raise

    def _release(self) -> None:
        with self._lock:
            if not self._waiters:
                self._in_use -= 1
                return
            # Hand the slot straight to the first waiter: the count stays, nobody can overtake it.
            waiter = self._waiters.popleft()
            waiter.granted = True
        waiter.loop.call_soon_threadsafe(_resolve, waiter.future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
