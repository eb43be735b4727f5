"""The app's one ``GuardedClient``, called from a thread that blocks (the search index's embedder).

Embedding is blocking work: the embedded index runs it in a thread of its own, and a search's query
vector is computed in a worker thread. An OpenAI-compatible embedder there still calls out, and must
do so through the same client as every other outbound call, so that the allow-list, the deadline,
the byte cap and the process's cap of calls at once hold for it too. ``BlockingClient`` hands each
call to the event loop that owns the client (``anyio.from_thread.run`` with that loop's token) and
waits for the answer, so the call runs on the client's own connection pool.

Why not a synchronous httpx client beside the async one: it would need a second pinned transport (the
address check after DNS lives in an async network backend) and a second call gate that blocks
threads; two paths to keep equal instead of one. Why not a private event loop per embedder: that
was a second client with a pool, a policy and a gate of its own.

    blocking = BlockingClient(services.outbound, anyio.lowlevel.current_token())  # on the app's loop
    answer = blocking.request_json("POST", url, json=body)  # from any other thread

A command with no app (``ai-search import``) runs a client on a loop of its own::

    with blocking_client(policy) as blocking:
        index = EmbeddedIndex.open(path, store, OpenAIEmbedder(url, model, client=blocking))
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel

from ai_search_server.outbound._client import GuardedClient, OutboundResponse
from ai_search_server.outbound._errors import OutboundError
from ai_search_server.outbound._policy import OutboundPolicy

__all__ = ["BlockingClient", "blocking_client"]


class BlockingClient:
    """``GuardedClient.request_json`` for threads: runs on the loop named by ``token`` and blocks.

    Never call it on that loop's own thread (it would wait for itself); anyio refuses with RuntimeError.
    """

    def __init__(self, client: GuardedClient, token: anyio.lowlevel.EventLoopToken) -> None:
        self.client = client
        self._token = token

    @property
    def policy(self) -> OutboundPolicy:
        return self.client.policy

    def request_json(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        timeout_seconds: float | None = None,
        max_bytes: int | None = None,
    ) -> OutboundResponse:
        """Raises OutboundError (any subclass; a plain one once the client's loop has stopped)."""
        call = functools.partial(
            self.client.request_json,
            method,
            url,
            headers=headers,
            json=json,
            timeout_seconds=timeout_seconds,
            max_bytes=max_bytes,
        )
        try:
            return anyio.from_thread.run(call, token=self._token)
        except RuntimeError as exc:
            # The loop is closed, or the client is: the app is shutting down under this call.
            raise OutboundError(
                f"outbound {method.upper()}: the outbound client has stopped ({exc})"
            ) from None


@contextmanager
def blocking_client(policy: OutboundPolicy) -> Iterator[BlockingClient]:
    """A client on an event loop of its own, in a thread, for the length of the block."""
    with anyio.from_thread.start_blocking_portal() as portal:
        client = GuardedClient(policy)
        try:
            yield BlockingClient(client, portal.call(anyio.lowlevel.current_token))
        finally:
            portal.call(client.aclose)
