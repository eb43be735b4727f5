"""Remote second stages: a ``POST /rerank`` endpoint (here) and an OpenAI-compatible embeddings model
(``embeddings.py``), both through the app's one ``GuardedClient``, and the factory that picks one.

A reranker reads the query and each passage together (a cross-encoder), which is what a second stage
is for; the common servers speak one of two shapes, chosen by ``second_stage_rerank_format``:

- ``tei`` (Text Embeddings Inference): ``POST {base}/rerank``
  ``{"query", "texts", "truncate": true, "raw_scores": false}`` answers ``[{"index", "score"}, ...]``;
- ``cohere`` (Cohere, and Jina and vLLM, whose ``/rerank`` and ``/v1/rerank`` accept it; the base may
  end in ``/v1`` or ``/v2``): ``{"model", "query", "documents", "top_n"}`` answers
  ``{"results": [{"index", "relevance_score"}, ...]}``.

What is sent is bounded (``MAX_RERANK_PASSAGES_PER_CALL`` passages a call, the calls of one scoring
run at once; ``MAX_PASSAGE_CHARS`` characters a passage), and so is what is read
(``MAX_RERANK_RESPONSE_BYTES``). The answer is checked strictly: one result for each passage sent,
each index in range and given once, each score a finite number; anything else fails the scoring as a
whole (``SecondStageError``), since a reranker that answers garbage for one passage cannot be trusted
for the others. The scores are the endpoint's own scale, uncalibrated here: the wiring reads them with
the configured thresholds, or keeps the first stage's bands.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import httpx

from ai_search import trim_trailing_slashes

from ...outbound import GuardedClient
from ...settings import Settings
from ._remote import (
    FULL_COVERAGE,
    MAX_PASSAGE_CHARS,
    REMOTE_STAGE_TIMEOUT_SECONDS,
    RemoteCaller,
    clip,
    excerpt,
    in_batches,
)
from .base import Passage, SecondStage, StageCoverage
from .embeddings import EmbeddingsStage

__all__ = [
    "FULL_COVERAGE",
    "MAX_PASSAGE_CHARS",
    "MAX_RERANK_PASSAGES_PER_CALL",
    "MAX_RERANK_RESPONSE_BYTES",
    "REMOTE_STAGE_TIMEOUT_SECONDS",
    "RERANK_FORMATS",
    "EmbeddingsStage",
    "RerankFormat",
    "RerankStage",
    "build_remote_stage",
]

RerankFormat = Literal["tei", "cohere"]
RERANK_FORMATS: tuple[RerankFormat, ...] = ("tei", "cohere")
# Passages sent in one /rerank call: TEI's default --max-client-batch-size, which answers 413 past it
# (Cohere takes 1000, vLLM and Jina more than 32); the 50 candidates of a search go in two calls at once.
MAX_RERANK_PASSAGES_PER_CALL = 32
# Body cap of one /rerank answer (bytes): results are a few dozen bytes each, but Jina echoes every
# document unless told not to: 32 passages of 4000 characters, JSON-escaped, fit in 1 MiB.
MAX_RERANK_RESPONSE_BYTES = 1024 * 1024

# Per format: the list of results in an answer, and the key of a result's score.
_SCORE_KEYS: Mapping[RerankFormat, str] = {"tei": "score", "cohere": "relevance_score"}


class RerankStage:
    """A remote ``POST {base}/rerank`` (see the module docstring); safe to call concurrently.

    ``api_key`` is sent as ``Authorization: Bearer`` when set and kept nowhere else (not in ``repr``,
    not in a message). ``model`` is sent in the Cohere shape when set (Cohere and Jina need it, vLLM
    takes its one served model without it); TEI serves one model and is never told.

    Raises:
        ValueError: an unknown ``rerank_format`` or a blank ``base_url`` (from the constructor).
    """

    def __init__(
        self,
        client: GuardedClient,
        base_url: str,
        *,
        rerank_format: str = "tei",
        model: str = "",
        api_key: str = "",
        timeout_seconds: float = REMOTE_STAGE_TIMEOUT_SECONDS,
    ) -> None:
        if rerank_format not in _SCORE_KEYS:
            raise ValueError(f"rerank format {rerank_format!r} is not one of {', '.join(RERANK_FORMATS)}")
        if not base_url.strip():
            raise ValueError("a rerank stage needs second_stage_url")
        self._format: RerankFormat = "tei" if rerank_format == "tei" else "cohere"
        self._url = f"{trim_trailing_slashes(base_url.strip())}/rerank"
        self._model = model.strip()
        self._headers = {"Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._model_id = f"rerank:{self._format}:{self._model or _host(self._url)}"
        self._caller = RemoteCaller(
            client, stage=self._model_id, api_key=api_key, timeout_seconds=timeout_seconds
        )

    def __repr__(self) -> str:
        return f"RerankStage({self._model_id!r})"

    @property
    def model_id(self) -> str:
        """``rerank:<format>:<model>``, or the endpoint's host (and port) when no model is named."""
        return self._model_id

    @property
    def kind(self) -> str:
        return "rerank"

    def coverage(self) -> StageCoverage:
        return FULL_COVERAGE

    async def aclose(self) -> None:
        """Nothing to release: the client is the app's."""

    async def score(self, query: str, passages: Sequence[Passage]) -> Mapping[str, float]:
        """A score for every passage, on the endpoint's scale (higher: more relevant).

        Raises:
            SecondStageError: any call failed, timed out or answered anything but one finite score for
                each passage it was sent.
        """
        if not passages:
            return {}
        batches = in_batches(passages, MAX_RERANK_PASSAGES_PER_CALL)
        with self._caller.deadline():
            scored = await self._caller.gather(
                [functools.partial(self._score_batch, clip(query), batch) for batch in batches]
            )
        return {
            passage.id: score
            for batch, scores in zip(batches, scored, strict=True)
            for passage, score in zip(batch, scores, strict=True)
        }

    async def _score_batch(self, query: str, batch: Sequence[Passage]) -> list[float]:
        texts = [clip(passage.text) for passage in batch]
        body = await self._caller.post(
            self._url, self._request(query, texts), headers=self._headers, max_bytes=MAX_RERANK_RESPONSE_BYTES
        )
        return self._scores(body, len(texts))

    def _request(self, query: str, texts: list[str]) -> dict[str, Any]:
        if self._format == "tei":
            # raw_scores false: TEI answers the sigmoid of the logit, in 0..1, as Cohere does.
            return {"query": query, "texts": texts, "truncate": True, "raw_scores": False}
        body: dict[str, Any] = {"query": query, "documents": texts, "top_n": len(texts)}
        if self._model:
            body = {"model": self._model, **body}
        return body

    def _scores(self, body: Any, count: int) -> list[float]:
        """The score of each of ``count`` passages, in the order sent; see the module docstring."""
        fail = self._caller.failure
        if self._format == "tei":
            results = body if isinstance(body, list) else None
            if results is None:
                raise fail("the answer is not a list of results")
        else:
            results = body.get("results") if isinstance(body, dict) else None
            if not isinstance(results, list):
                raise fail("the answer has no 'results' list")
        if len(results) != count:
            raise fail(f"the answer holds {len(results)} results for {count} passages")
        key = _SCORE_KEYS[self._format]
        scores: dict[int, float] = {}
        for position, result in enumerate(results):
            shown = excerpt(result, self._caller.redactor)
            if not isinstance(result, dict):
                raise fail(f"result {position} is not an object: {shown}")
            index, value = result.get("index"), result.get(key)
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
                raise fail(f"result {position} has no index from 0 to {count - 1}: {shown}")
            if index in scores:
                raise fail(f"index {index} is given twice")
            if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
                raise fail(f"result {position} has no finite {key!r}: {shown}")
            scores[index] = float(value)
        return [scores[index] for index in range(count)]  # every index, once: the count matched


def _host(url: str) -> str:
    """The host of ``url``, with its port when one is given: two servers on one host are two models."""
    parsed = httpx.URL(url)
    return f"{parsed.host}:{parsed.port}" if parsed.port is not None else parsed.host


def build_remote_stage(settings: Settings, client: GuardedClient) -> SecondStage | None:
    """The remote stage ``settings.second_stage`` names (``rerank`` or ``embeddings``), or None for any
    other choice (``auto``, ``local``, ``off``: the wiring decides those).

    The settings were checked when built: a remote choice comes with its URL (and, for embeddings, its
    model), so this raises only on a caller's bug (``ValueError``, ``EmbedderUnavailable``).
    """
    timeout = float(settings.second_stage_timeout_seconds)
    if settings.second_stage == "rerank":
        return RerankStage(
            client,
            settings.second_stage_url,
            rerank_format=settings.second_stage_rerank_format,
            model=settings.second_stage_model,
            api_key=settings.second_stage_api_key,
            timeout_seconds=timeout,
        )
    if settings.second_stage == "embeddings":
        return EmbeddingsStage(
            client,
            settings.second_stage_url,
            settings.second_stage_model,
            api_key=settings.second_stage_api_key,
            timeout_seconds=timeout,
        )
    return None
