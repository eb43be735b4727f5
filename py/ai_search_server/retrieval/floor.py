"""The relevance floor: what a candidate must hold to be a result at all.

A similarity search always returns the nearest messages, whatever the query: gibberish, or a topic
the workspace never discussed, still has neighbours. A keyword OR-query matches any message holding
one of its words. So, before fusion, both branches must clear a floor:

- **keyword**: a hit must hold at least `KEYWORD_MIN_COVERAGE` of the query's term weight (IDF; a
  word no message holds weighs the most, so "kubernetes node pool autoscaling" does not return the
  messages about a connection *pool*);
- **semantic**: a message found only by meaning must be at least `semantic` similar to the query,
  and the query's best match must reach `semantic_query`. The second is what tells an unanswerable
  query apart: on bench/halden the best similarity of a query with an answer is higher than that of
  a query without one in 88% of pairs (ROC AUC 0.876), while the answer itself is often less similar
  than the best match (median 0.35 for paraphrases, and 0.44 for a no-answer query's best).
  The scale of a cosine depends on the model, so the floors are calibrated per embedder
  (`CALIBRATED_FLOORS`, keyed by the embedder's `model_id`), and an unknown embedder gets none
  unless the `search_semantic_floor_percent` setting names one. For a query written mostly in
  Chinese, Japanese or Korean the floor is `semantic_cjk`: an English-only model gives such texts
  high similarities whether they are related or not (all-MiniLM-L6-v2: 0.9 for unrelated texts,
  0.4-0.5 for the answers, measured on bench/halden).

How the values were chosen: ``bench/calibrate_floor.py`` sweeps both floors over the Halden judged
set (bench/halden: 196 answerable queries and 24 with no answer) and keeps, among the floors that
leave at least 90% of the no-answer queries empty, the one with the best mean of nDCG@10 (answerable
queries) and "returned nothing" (no-answer queries); the demo's judged set is held out and reported
beside (docs/retrieval.md has both tables). A floor of 1.0 keeps every semantic-only candidate out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .minilm import MINILM_MODEL_ID
from .minilm_int8 import MINILM_INT8_MODEL_ID
from .tokens import is_cjk, text_tokens

__all__ = [
    "CALIBRATED_FLOORS",
    "CJK_QUERY_SHARE",
    "KEYWORD_MIN_COVERAGE",
    "KNOWN_TERMS_FIELD",
    "MODEL_FIELD",
    "NO_FLOOR",
    "RelevanceFloor",
    "floor_for",
    "is_cjk_query",
]

# Share of the query's term weight (0..1) a keyword hit must hold to be a result (calibrated).
KEYWORD_MIN_COVERAGE = 0.4
# Our extension to the pipeline contract: a semantic answer names the model that embedded the query
# (its `model_id`), so that a proxy applies the floor calibrated for it (docs/retrieval.md).
MODEL_FIELD = "ai_search_model"
# Our extension to a keyword answer: how many of the query's terms occur in the searched rooms at
# all. 0 says the query holds no word the workspace uses (gibberish): no related band from meaning alone.
KNOWN_TERMS_FIELD = "ai_search_known_terms"
# Share of a query's word characters written in CJK above which the CJK floor applies (0..1).
CJK_QUERY_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class RelevanceFloor:
    """Similarities are cosines (0..1); 0 means no floor."""

    semantic: float = 0.0
    semantic_query: float = 0.0  # the query's best match must reach this for any semantic-only result
    semantic_cjk: float = 0.0
    keyword_coverage: float = KEYWORD_MIN_COVERAGE
    keyword_opens_query_floor: bool = True  # a keyword result waives `semantic_query`

    def semantic_for(self, query: str) -> tuple[float, float]:
        """(candidate floor, query floor) for this query: the CJK floor raises both for CJK queries."""
        if is_cjk_query(query):
            return max(self.semantic, self.semantic_cjk), max(self.semantic_query, self.semantic_cjk)
        return self.semantic, self.semantic_query


NO_FLOOR = RelevanceFloor(0.0, 0.0, 0.0, 0.0)
# model_id -> the floor calibrated for it on bench/halden (see the module docstring). The numpy and
# float32 ONNX runtimes share one vector space; the int8 one has its own id, calibrated on its own
# vectors (the same floor came out best: docs/retrieval.md). A new model id needs its own row.
_MINILM_FLOOR = RelevanceFloor(semantic=0.25, semantic_query=0.45, semantic_cjk=1.0)
CALIBRATED_FLOORS: dict[str, RelevanceFloor] = {
    MINILM_MODEL_ID: _MINILM_FLOOR,
    MINILM_INT8_MODEL_ID: _MINILM_FLOOR,
}


def floor_for(model_id: str | None, semantic_percent: int | None = None) -> RelevanceFloor:
    """The floor for an embedder; `semantic_percent` (the setting, 0..100) replaces its semantic part.

    An embedder without a calibrated floor (or no embedder: a remote pipeline that does not name its
    model in `MODEL_FIELD`) gets the keyword floor only.
    """
    calibrated = CALIBRATED_FLOORS.get(model_id or "", RelevanceFloor())
    if semantic_percent is None:
        return calibrated
    share = min(max(semantic_percent, 0), 100) / 100
    return replace(calibrated, semantic=share, semantic_query=share)


def is_cjk_query(query: str) -> bool:
    """True when most of a query's word characters are Chinese, Japanese or Korean."""
    words = text_tokens(query).words
    cjk = sum(len(t.text) for t in words if is_cjk(t.text))
    total = sum(len(t.text) for t in words)
    return total > 0 and cjk / total > CJK_QUERY_SHARE
