"""Message listeners told of committed writes in commit order: every store's delivery rule.

Each writer queues its events while it still holds its store's write lock (so the queue is in commit
order), then whoever holds the dispatch lock delivers the queue in order, and a write returns only
once its events are delivered. A listener may write to the store: its events are delivered right
after the batch being delivered (never nested, never deadlocked). A listener that raises is logged
and skipped; the write it reports is already durable.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Sequence

from .base import MessageListener
from .records import MessageEvent

__all__ = ["ListenerQueue"]

_log = logging.getLogger(__name__)


class ListenerQueue:
    """The listeners of one store and the events of its committed writes not yet delivered."""

    def __init__(self) -> None:
        self._listeners: tuple[MessageListener, ...] = ()
        self._pending: deque[tuple[tuple[MessageListener, ...], tuple[MessageEvent, ...]]] = deque()
        self._dispatch_lock = threading.Lock()
        self._dispatching = threading.local()  # .active: this thread is inside deliver

    @property
    def listeners(self) -> tuple[MessageListener, ...]:
        """The listeners a write starting now reports to."""
        return self._listeners

    def add(self, listener: MessageListener) -> None:
        """Call with the store's write lock held: writes already running keep the listeners they saw."""
        self._listeners = (*self._listeners, listener)

    def enqueue(self, listeners: tuple[MessageListener, ...], events: Sequence[MessageEvent]) -> None:
        """Call with the store's write lock held, right after the commit: the queue stays in commit order."""
        if events and listeners:
            self._pending.append((listeners, tuple(events)))

    def deliver(self) -> None:
        """Deliver every queued batch, in order; call after releasing the write lock."""
        if getattr(self._dispatching, "active", False):
            return  # a listener on this thread wrote; the loop below delivers that next
        with self._dispatch_lock:
            self._dispatching.active = True
            try:
                while self._pending:
                    self._notify(*self._pending.popleft())
            finally:
                self._dispatching.active = False

    @staticmethod
    def _notify(listeners: Sequence[MessageListener], events: Sequence[MessageEvent]) -> None:
        for listener in listeners:
            try:
                listener(events)
            except Exception:
                _log.exception("message listener %r failed; the write itself is committed", listener)
