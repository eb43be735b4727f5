"""What the two remote stages share: one POST through the app's guarded client, the stage's deadline
over all of a scoring's calls, the caps on what is sent, and failures told as ``SecondStageError``.

Every failure is one sentence that starts with the stage (``second stage rerank:tei:10.0.0.5:8080:``)
and says what was wrong. It never holds the key: the outbound client's messages name only
``scheme://host:port/path``, and what the upstream itself said (which may quote the key it was sent)
goes to the debug log through the stage's ``SecretRedactor``, cut to a short excerpt.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio

from ...outbound import GuardedClient, OutboundError, OutboundHTTPError
from ...redaction import SecretRedactor
from ...settings import DEFAULT_SECOND_STAGE_TIMEOUT_SECONDS
from .base import SecondStageError, StageCoverage

__all__ = [
    "FULL_COVERAGE",
    "MAX_EXCERPT_CHARS",
    "MAX_PASSAGE_CHARS",
    "REMOTE_STAGE_TIMEOUT_SECONDS",
    "RemoteCaller",
    "clip",
    "excerpt",
    "in_batches",
]

log = logging.getLogger("ai_search_server.retrieval.second_stage")

# Characters of one passage (and of the query) sent to a remote stage: about 1000 tokens, twice the
# 512-token window of common rerankers and embedding models, which truncate the rest anyway; it bounds
# the request at 50 candidates to a few hundred KB whatever a message holds.
MAX_PASSAGE_CHARS = 4000
# Characters of an upstream's value or body quoted in an error or a debug line (after redaction).
MAX_EXCERPT_CHARS = 80
# Deadline of one scoring (seconds), all its calls together, when the caller names none: the setting's.
REMOTE_STAGE_TIMEOUT_SECONDS = DEFAULT_SECOND_STAGE_TIMEOUT_SECONDS
# A remote stage scores any text: nothing to fill in, nothing to count (``ratio`` is 1.0).
FULL_COVERAGE = StageCoverage(scored=0, total=0)

T = TypeVar("T")


def clip(text: str) -> str:
    """``text`` cut to ``MAX_PASSAGE_CHARS`` characters."""
    return text[:MAX_PASSAGE_CHARS]


def excerpt(value: object, redactor: SecretRedactor) -> str:
    """A short, redacted rendering of ``value`` for a message (redacted before it is cut, so a key cut
    in half at the edge cannot survive in part)."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else repr(value)
    shown = redactor.redact(text)
    return shown if len(shown) <= MAX_EXCERPT_CHARS else shown[: MAX_EXCERPT_CHARS - 1] + "…"


def in_batches(items: Sequence[T], size: int) -> list[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``."""
    return [items[start : start + size] for start in range(0, len(items), size)]


class RemoteCaller:
    """One stage's calls: its name in messages, its deadline, its key and the redaction of that key.

    ``deadline`` bounds a whole scoring, the wait for a slot of the app's call gate included (the
    gate's wait is otherwise outside a call's own deadline): a search waits for the second stage no
    longer than ``timeout_seconds``, then keeps the first stage's order.
    """

    def __init__(self, client: GuardedClient, *, stage: str, api_key: str, timeout_seconds: float) -> None:
        self.client = client
        self.stage = stage
        self.timeout_seconds = timeout_seconds
        self.redactor = SecretRedactor((api_key,))

    def failure(self, what: str) -> SecondStageError:
        return SecondStageError(f"second stage {self.stage}: {what}")

    @contextmanager
    def deadline(self) -> Iterator[None]:
        """Run a scoring under the stage's deadline; past it, ``SecondStageError``."""
        with anyio.move_on_after(self.timeout_seconds) as scope:
            yield
        if scope.cancelled_caught:
            raise self.failure(f"no answer within {self.timeout_seconds:g} s")

    async def post(self, url: str, body: Any, *, headers: Mapping[str, str], max_bytes: int) -> Any:
        """POST ``body`` as JSON and return the parsed answer.

        Raises:
            SecondStageError: refused, timed out, busy, non-2xx, too large, not JSON, empty.
        """
        try:
            response = await self.client.request_json(
                "POST",
                url,
                headers=headers,
                json=body,
                timeout_seconds=self.timeout_seconds,
                max_bytes=max_bytes,
            )
        except OutboundError as exc:
            raise self._outbound_failure(exc) from exc
        if response.json is None:
            raise self.failure("the answer is empty")
        return response.json

    def _outbound_failure(self, exc: OutboundError) -> SecondStageError:
        detail = exc.body_excerpt if isinstance(exc, OutboundHTTPError) else b""
        log.debug(
            "second stage %s: %s; body: %s",
            self.stage,
            self.redactor.redact(exc.message),
            excerpt(detail, self.redactor),
        )
        hint = ""
        if isinstance(exc, OutboundHTTPError) and exc.status in (401, 403):
            hint = " (is second_stage_api_key the endpoint's key?)"
        return self.failure(f"{self.redactor.redact(exc.message)}{hint}")

    async def gather(self, calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
        """Run ``calls`` at once and return their results in order; the first failure ends the others.

        Raises:
            SecondStageError: the first call's failure (the others are cancelled).
        """
        if len(calls) == 1:
            return [await calls[0]()]
        results: list[Any] = [None] * len(calls)

        async def run(index: int, call: Callable[[], Awaitable[T]]) -> None:
            results[index] = await call()

        try:
            async with anyio.create_task_group() as group:
                for index, call in enumerate(calls):
                    group.start_soon(run, index, call)
        except BaseExceptionGroup as failures:
            first = _first_stage_error(failures)
            if first is None:
                raise
            raise first from None
        return results


def _first_stage_error(group: BaseExceptionGroup[BaseException]) -> SecondStageError | None:
    """The first ``SecondStageError`` of a task group's failures when it holds nothing else (a bug or
    a cancellation is re-raised whole)."""
    matched, rest = group.split(SecondStageError)
    if matched is None or rest is not None:
        return None
    first: BaseException = matched
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first if isinstance(first, SecondStageError) else None
