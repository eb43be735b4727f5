"""The pipeline seam: one protocol, and the client of a remote Intelligent-Search pipeline.

The search service talks to a ``Pipeline``; two implement it: ``EmbeddedPipeline`` (``embedded.py``,
in-process) and ``RemotePipeline`` here, which sends the upstream's exact request
(``POST {base}/pipelines/{id}/search`` with ``X-API-KEY`` and ``X-API-KEY-SECRET``, built by the pure
core) through the app's guarded outbound client: 10 s for the whole call, 5 MiB for the answer, no
redirects, destinations checked after DNS resolution. A search with conditions beyond room, author
and time also sends our extension field (``conditions.CONDITIONS_FIELD``); a pipeline that ignores
it answers as the contract says, and the search service checks those conditions on what it returned.

A pipeline that cannot answer raises ``PipelineError``; the service turns that into a degraded search
(the other branch's results, and a notice in ``meta``), never into a 500. ``PipelineError.reason`` is
written for the person searching and names no URL, key or upstream text.

    pipeline = RemotePipeline(config, services.outbound)
    raw = await pipeline.search("deploy", mode="keyword", classifications=["user"],
                                pipeline_filters={"room_id": {"$eq": "r1"}}, limit=20)
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from ai_search import (
    MAX_AI_SERVICE_RESPONSE_SIZE,
    CandidateSource,
    PipelineConfig,
    PipelineFilters,
    build_intelligent_search_request,
)

from ..outbound import (
    GuardedClient,
    OutboundBusy,
    OutboundError,
    OutboundHTTPError,
    OutboundProtocolError,
    OutboundRedirect,
    OutboundTimeout,
    OutboundTooLarge,
)
from .conditions import MessageConditions, with_conditions

__all__ = ["FailureKind", "Pipeline", "PipelineError", "RemotePipeline"]

log = logging.getLogger(__name__)

FailureKind = Literal["unavailable", "unreachable", "timeout", "busy", "http-error", "bad-response"]

# What the page may say for each failure: short, no URL, no upstream text.
_REASONS: dict[FailureKind, str] = {
    "unavailable": "is not available",
    "unreachable": "could not be reached",
    "timeout": "did not answer in time",
    "busy": "is busy right now",
    "http-error": "answered with an error",
    "bad-response": "sent an answer that could not be read",
}
# Outbound failures -> kind; the first matching class wins.
_OUTBOUND_KINDS: tuple[tuple[type[OutboundError], FailureKind], ...] = (
    (OutboundTimeout, "timeout"),
    (OutboundBusy, "busy"),
    (OutboundHTTPError, "http-error"),
    (OutboundRedirect, "http-error"),
    (OutboundTooLarge, "bad-response"),
    (OutboundProtocolError, "unreachable"),
    (OutboundError, "unreachable"),
)


class PipelineError(Exception):
    """One pipeline call gave no usable answer. `reason` is safe to show; `detail` is for logs."""

    def __init__(self, kind: FailureKind, *, branch: str, detail: str = "") -> None:
        self.kind = kind
        self.branch = branch
        self.detail = detail
        self.reason = f"the {branch} search {_REASONS[kind]}"
        super().__init__(f"{self.reason}: {detail}" if detail else self.reason)


class Pipeline(Protocol):
    """Where candidates come from. `search` returns the pipeline's raw JSON answer.

    Raises (from `search`): PipelineError.
    """

    @property
    def kind(self) -> str: ...

    @property
    def semantic_available(self) -> bool: ...

    async def search(
        self,
        query: str,
        *,
        mode: CandidateSource,
        classifications: Sequence[str],
        pipeline_filters: PipelineFilters,
        limit: int,
        conditions: MessageConditions | None = None,
    ) -> object: ...

    async def aclose(self) -> None: ...


def branch_name(mode: CandidateSource) -> str:
    return "keyword" if mode == "keyword" else "semantic"


class RemotePipeline:
    """A remote pipeline over HTTP, called through ``client`` (the app's; the app closes it).

    Raises:
        ValueError: the config is incomplete (from the constructor).
    """

    kind = "remote"
    semantic_available = True  # a remote pipeline's semantic branch is its own business

    def __init__(
        self,
        config: PipelineConfig,
        client: GuardedClient,
        *,
        timeout_seconds: float | None = None,
        max_bytes: int = MAX_AI_SERVICE_RESPONSE_SIZE,
        send_conditions: bool = True,
    ) -> None:
        if not config.is_configured:
            raise ValueError("the remote pipeline needs a base URL, a pipeline id, a key and a secret")
        self._config = config
        self._client = client
        self._timeout_seconds = timeout_seconds
        self._max_bytes = max_bytes
        # Off (`pipeline_conditions`): the contract's body alone, for a pipeline refusing unknown fields.
        self._send_conditions = send_conditions

    async def search(
        self,
        query: str,
        *,
        mode: CandidateSource,
        classifications: Sequence[str],
        pipeline_filters: PipelineFilters,
        limit: int,
        conditions: MessageConditions | None = None,
    ) -> object:
        request = build_intelligent_search_request(
            query,
            self._config,
            classifications=classifications,
            pipeline_filters=pipeline_filters,
            limit=limit,
            mode=mode,
        )
        branch = branch_name(mode)
        try:
            response = await self._client.request_json(
                request.method,
                request.url,
                headers=request.headers,
                json=with_conditions(request.body, conditions if self._send_conditions else None),
                timeout_seconds=self._timeout_seconds or request.timeout_seconds,
                max_bytes=self._max_bytes,
            )
        except OutboundError as exc:
            kind = next(k for cls, k in _OUTBOUND_KINDS if isinstance(exc, cls))
            # The outbound client reports a body that is not JSON as a protocol error; for the person
            # searching it is an unreadable answer, not an unreachable server.
            if isinstance(exc, OutboundProtocolError) and "not valid JSON" in exc.message:
                kind = "bad-response"
            raise PipelineError(kind, branch=branch, detail=exc.message) from exc
        body: Any = response.json
        if not isinstance(body, dict | list):
            raise PipelineError(
                "bad-response", branch=branch, detail="the answer is not a JSON object or array"
            )
        return body

    async def aclose(self) -> None:
        """Nothing to close: the client is the app's."""
