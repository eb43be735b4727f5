"""Confidence bands instead of a cliff, and fusion by the kind of query.

The first stage used to end in a floor: a candidate above it was a result, one below was nothing.
The floor had to be high enough that a question the workspace cannot answer finds nothing, and so it
threw away the answers to paraphrased questions, which are often no more similar to the question than
an unrelated message is to an unanswerable one (on bench/halden 55% of paraphrase queries returned
nothing). Bands keep both promises:

- **strong**: the evidence is enough to say "this answers it" — a relevance score of at least
  `strong`, or a keyword hit holding `strong_coverage` of the query's term weight. The "no answer"
  promise is about this band: for a question nothing answers, no strong result;
- **related**: shown apart, collapsed and labelled, at most `related_limit` of them — a relevance
  score of at least `related`, or a keyword hit holding `related_coverage`;
- anything below is dropped. A query none of whose words occurs in the searched rooms (gibberish, a
  name no one used) needs a higher score (`unknown_words_related`) for a related result from meaning
  alone, so nonsense finds nothing.

The relevance score mixes the second stage's score (a stronger model, ``stage_weight`` of it) with the
first stage's similarity, and adds the keyword hit's coverage with a weight that depends on the query's
kind: a question or a sentence leans on meaning, identifiers, quoted phrases and one- or two-word
queries lean on words, and a query written in Chinese, Japanese or Korean is read by words only (the
local models are English-only and give unrelated CJK texts high similarities). A candidate the second
stage has not scored yet (its vector is still being computed) is read by the first stage alone.

Chosen on judged sets, never query by query: ``bench/tune_bands.py`` sweeps the values on bench/halden
and bench/ferry with five held-out folds and reports the demo set held out; docs/retrieval.md has the
tables. A strong result by meaning must also stand `strong_margin` above the median of the candidates:
in a workspace all about one thing, everything is close to a question about that thing. The bands are calibrated per first-stage model id, since cosines live on each model's
own scale; a model without a row keeps the plain floor (``floor.py``).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..floor import is_cjk_query
from ..minilm import MINILM_MODEL_ID
from ..minilm_int8 import MINILM_INT8_MODEL_ID

__all__ = [
    "CALIBRATED_BANDS",
    "RELATED_BAND_LIMIT",
    "Band",
    "BandPolicy",
    "Banded",
    "QueryKind",
    "Scored",
    "assign_bands",
    "bands_for",
    "query_kind",
    "stage_is_calibrated",
]

Band = Literal["strong", "related"]
QueryKind = Literal["cjk", "words", "question", "phrase", "symbols"]

# Related results kept at most (results): enough to find a paraphrased answer, not a page of padding.
RELATED_BAND_LIMIT = 20
# A query of this many words or fewer is read by its words (words).
_SHORT_QUERY_WORDS = 2
# A query of this many words or more reads as a sentence (words).
_SENTENCE_WORDS = 5
# A word that looks like an identifier: digits, `_ . / :` inside it, camelCase, or ALLCAPS.
_IDENTIFIER = re.compile(r"[A-Za-z]*\d|\w[_./:]\w|[a-z][A-Z]|^[A-Z]{2,}$")
_QUESTION_WORDS = frozenset(
    [
        "who",
        "what",
        "when",
        "where",
        "why",
        "how",
        "which",
        "did",
        "does",
        "do",
        "is",
        "are",
        "was",
        "were",
        "can",
        "could",
        "should",
        "would",
        "any",
    ]
)


def query_kind(text: str) -> QueryKind:
    """What a query leans on: `cjk` and `words` on words, `question` on meaning, `phrase` on both;
    `symbols` (emoji, punctuation: no letter or digit) on the symbols themselves."""
    if text.strip() and not any(ch.isalnum() for ch in text):
        return "symbols"
    if is_cjk_query(text):
        return "cjk"
    words = text.split()
    if '"' in text or len(words) <= _SHORT_QUERY_WORDS or any(_IDENTIFIER.search(w) for w in words):
        return "words"
    if text.rstrip().endswith("?") or words[0].lower() in _QUESTION_WORDS or len(words) >= _SENTENCE_WORDS:
        return "question"
    return "phrase"


@dataclass(frozen=True, slots=True)
class BandPolicy:
    """Scores are cosines (0..1), coverages shares of the query's squared term weight (0..1)."""

    strong: float
    related: float
    strong_coverage: float
    related_coverage: float
    # Share of the relevance score that is the second stage's (the rest is the first stage's).
    stage_weight: float
    # How much a keyword hit's coverage adds to the relevance score, by the query's kind.
    keyword_weight: Mapping[QueryKind, float] = field(default_factory=dict)
    related_limit: int = RELATED_BAND_LIMIT
    # The related band's score when no word of the query occurs in the searched rooms: the nearest
    # neighbours of nonsense reach about 0.33 (demo and Halden gibberish, all-MiniLM-L6-v2), a
    # paraphrase in words a small workspace never used (a "db" for a "database") more.
    unknown_words_related: float = 0.40
    # How far above the candidates' median relevance a result must be to be strong by meaning.
    strong_margin: float = 0.0
    # `strong` for a candidate the second stage has not scored (its relevance is the first stage's
    # similarity alone, on that model's scale); None: `strong`.
    first_stage_strong: float | None = None


@dataclass(frozen=True, slots=True)
class Scored:
    """One candidate's evidence. None: that source did not find or score it."""

    id: str
    similarity: float | None = None  # the first stage's semantic similarity
    stage: float | None = None  # the second stage's score
    coverage: float | None = None  # the keyword hit's share of the query's term weight


@dataclass(frozen=True, slots=True)
class Banded:
    id: str
    band: Band
    score: float  # the relevance score plus the keyword part: the order within a band


def _relevance(policy: BandPolicy, item: Scored, kind: QueryKind) -> float:
    if kind == "cjk":
        return 0.0
    first = item.similarity or 0.0
    if item.stage is None:
        return first
    return policy.stage_weight * item.stage + (1.0 - policy.stage_weight) * first


def assign_bands(
    policy: BandPolicy,
    query: str,
    items: Sequence[Scored],
    *,
    known_words: bool = True,
    all_words_known: bool = False,
) -> list[Banded]:
    """The strong results, then at most `related_limit` related ones, each band best first.

    `known_words` False (no word of the query occurs in the searched rooms: gibberish, or a name no
    one used) raises the related band's score for meaning alone to `unknown_words_related`: the
    nearest neighbour of nonsense is noise. `all_words_known` True (every word of the query occurs in
    the searched rooms) waives `strong_margin`: the margin is for a question naming something no one
    mentioned ("running ferry in FreeBSD jails" where nothing says FreeBSD), not for a topic many
    messages answer.
    """
    kind = query_kind(query)
    weight = policy.keyword_weight.get(kind, 0.0)
    relevances = [_relevance(policy, item, kind) for item in items]
    # How far a candidate stands out from the candidates' typical relevance: in a workspace that is
    # all about one thing (a product's own name in every message), everything is similar to a
    # question about it, and only a candidate that stands out answers it.
    typical = statistics.median(relevances) if relevances else 0.0
    margin = 0.0 if all_words_known else policy.strong_margin
    strong: list[Banded] = []
    related: list[Banded] = []
    for item, relevance in zip(items, relevances, strict=True):
        coverage = item.coverage or 0.0
        score = relevance + weight * coverage
        # The models read emoji and punctuation poorly (every emoji is close to every other): a
        # symbols query is strong only where the message holds the symbols (`coverage`).
        threshold = policy.strong
        if item.stage is None and policy.first_stage_strong is not None:
            threshold = policy.first_stage_strong
        by_meaning = (
            kind != "symbols" and relevance >= threshold and relevance - typical >= margin
        )
        if by_meaning or (item.coverage is not None and coverage >= policy.strong_coverage):
            strong.append(Banded(item.id, "strong", score))
        elif relevance >= (policy.related if known_words else policy.unknown_words_related) or (
            item.coverage is not None and coverage >= policy.related_coverage
        ):
            related.append(Banded(item.id, "related", score))
    strong.sort(key=lambda b: (-b.score, b.id))
    related.sort(key=lambda b: (-b.score, b.id))
    return strong + related[: policy.related_limit]


# Chosen by bench/tune_bands.py on bench/halden and bench/ferry pooled, five held-out folds (the
# values most folds chose), the demo set held out: docs/retrieval.md, "Bands". `first_stage_strong`
# is the same sweep with the second stage off (while its vectors are filled, or without it).
_MINILM_BANDS = BandPolicy(
    strong=0.42,
    related=0.25,
    strong_coverage=0.5,
    related_coverage=0.25,
    stage_weight=0.6,
    keyword_weight={"cjk": 1.0, "symbols": 1.0, "words": 0.6, "phrase": 0.3, "question": 0.0},
    strong_margin=0.15,
    first_stage_strong=0.48,
)
# first-stage model id -> its bands. A model without a row keeps the plain floor.
CALIBRATED_BANDS: dict[str, BandPolicy] = {
    MINILM_MODEL_ID: _MINILM_BANDS,
    MINILM_INT8_MODEL_ID: _MINILM_BANDS,
}


def bands_for(model_id: str | None) -> BandPolicy | None:
    return CALIBRATED_BANDS.get(model_id or "")


# Second-stage models the bands' `stage_weight` and thresholds were calibrated with (by model id
# prefix: both precisions of the local model). Another stage's scores are on a scale of their own.
CALIBRATED_STAGE_PREFIXES = ("local:all-mpnet-base-v2:",)


def stage_is_calibrated(model_id: str) -> bool:
    return model_id.startswith(CALIBRATED_STAGE_PREFIXES)
