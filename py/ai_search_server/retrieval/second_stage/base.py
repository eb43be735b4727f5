"""What every second stage is: scores for (query, passage) pairs, and how much it covers.

A stage scores on its own scale (a cosine for an embedding model, a logit or a probability for a
cross-encoder); the bands it is read with are calibrated per ``model_id`` (``bands.py``), so two
stages are never compared by raw score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Passage", "SecondStage", "SecondStageError", "StageCoverage"]


@dataclass(frozen=True, slots=True)
class Passage:
    """One candidate to re-score: the message's id and the text the stage reads."""

    id: str
    text: str


@dataclass(frozen=True, slots=True)
class StageCoverage:
    """How far a stage has come: messages it can score out of all messages (a local stage fills its
    vectors in the background; a remote stage scores any text, so it covers everything)."""

    scored: int
    total: int

    @property
    def ratio(self) -> float:
        return 1.0 if self.total <= 0 else min(1.0, self.scored / self.total)


class SecondStageError(Exception):
    """One scoring call failed (a timeout, an error answer, garbage). The search goes on with the
    first stage's order and bands and says so; the message names the stage, never a key."""


class SecondStage(Protocol):
    """Re-scores candidates. Safe to call concurrently; ``score`` must honour its own deadline."""

    @property
    def model_id(self) -> str:
        """Names the score's scale: bands are calibrated per id."""
        ...

    @property
    def kind(self) -> str:
        """`local`, `rerank` or `embeddings`: what the status route and the receipt say."""
        ...

    async def score(self, query: str, passages: Sequence[Passage]) -> Mapping[str, float]:
        """Score of each passage id for `query`; an id left out has no score yet (not covered).

        Raises:
            SecondStageError: the call failed as a whole.
        """
        ...

    def coverage(self) -> StageCoverage: ...

    async def aclose(self) -> None: ...
