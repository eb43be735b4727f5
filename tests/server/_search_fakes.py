"""A scripted `Pipeline` for the service tests: answers or fails per branch, records every call."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ai_search import CandidateSource, PipelineFilters
from ai_search_server.retrieval.conditions import MessageConditions
from ai_search_server.retrieval.pipeline_client import PipelineError

Answer = object | PipelineError | Callable[[str, PipelineFilters], object]


@dataclass
class Call:
    query: str
    mode: CandidateSource
    classifications: list[str]
    filters: PipelineFilters
    limit: int
    conditions: MessageConditions | None = None


@dataclass
class ScriptedPipeline:
    """`answers[mode]` is returned (a callable is called with the query and filters) or raised."""

    answers: dict[str, Answer] = field(default_factory=dict)
    kind: str = "scripted"
    semantic_available: bool = True
    calls: list[Call] = field(default_factory=list)

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
        self.calls.append(Call(query, mode, list(classifications), pipeline_filters, limit, conditions))
        answer: Any = self.answers.get(mode, {"results": []})
        if isinstance(answer, PipelineError):
            raise answer
        if callable(answer):
            return answer(query, pipeline_filters)
        return answer

    async def aclose(self) -> None:
        return None


def hit(
    msg_id: str, rid: str | None = None, *, similarity: float | None = None, ts: str | None = None
) -> dict:
    """One pipeline result item as a remote pipeline might send it."""
    item: dict[str, Any] = {"metadata": {"msg_id": msg_id}}
    if rid is not None:
        item["metadata"]["room_id"] = rid
    if similarity is not None:
        item["similarity"] = similarity
    if ts is not None:
        item["metadata"]["timestamp"] = ts
    return item
