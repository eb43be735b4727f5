"""How the keyword branch ranks a match: coverage, then BM25, both from the caller's scope alone.

A term's weight depends on how many messages hold it, and so does everything the keyword branch
decides with it: the coverage a message holds (the share of the query's squared IDF weight), the
common-term cut, MaxScore's essential terms, the choice between ranking every match and the newest
ones, and BM25. Counted over the whole workspace, those numbers let a caller learn how often a word
occurs in rooms they cannot read: with a marker word used 10 times in a private room, an outsider's
own message holding it stopped coming back for ``flibbertyx <word>`` (security review 2026-12,
issue 42 finding 4). So every statistic here is a `ScopeStatistics`, counted over the rooms of the
caller's ``KeywordScope`` only (``index_db.IndexDatabase.scope_counts``, and
``pg_keyword.PgKeywordIndex`` from its own per-room counts), and ties are broken by the matches'
own order, never by anything another room holds.

FTS5's ``bm25()`` cannot be given such statistics (it reads the document count, the mean length and
each phrase's matches from the whole index), so the FTS5 branch ranks its matches here, from the
tokens the index stored (``TokenRanker``), with FTS5's own formula: k1 1.2, b 0.75, a part of an
identifier half a word (`PART_WEIGHT`), IDF ``ln((N - n + 0.5) / (n + 0.5))`` floored at 1e-6. The
PostgreSQL branch computes the same formula in its statement (``pg_keyword._Ranking``).

    >>> deploy, zeppelin = ("deploy",), ("zeppelin",)
    >>> ranker = TokenRanker([deploy, zeppelin], [deploy], {deploy: 1.0, zeppelin: 1.0}, {deploy: 2.0}, 3.0)
    >>> ranker.score("deployment went fine", "")  # half the weight; a word of average length: 2 x 1
    (0.5, -2.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .terms import Term, is_prefix_term

__all__ = ["BM25_B", "BM25_K1", "MIN_IDF", "PART_WEIGHT", "ScopeStatistics", "TokenRanker", "bm25_idf"]

#: BM25's term-frequency saturation (FTS5's constant).
BM25_K1 = 1.2
#: BM25's length normalisation (FTS5's constant).
BM25_B = 0.75
#: What an occurrence among the parts (identifier parts, single CJK characters) counts for, against
#: one among the words (share): the weights the FTS5 branch gave ``bm25()`` for its two columns.
PART_WEIGHT = 0.5
#: FTS5's floor on a term's IDF: a term in over half the messages still counts a little.
MIN_IDF = 1e-6


@dataclass(frozen=True, slots=True)
class ScopeStatistics:
    """What one search weighs its terms by, counted over its scope's rooms only.

    `counts` holds, per query term, the messages holding it: a prefix sums the words it starts (an
    upper bound), a phrase takes its rarest word's (an upper bound: positions are not counted).
    """

    documents: int
    tokens: int
    counts: Mapping[Term, int]

    @property
    def mean_tokens(self) -> float:
        """BM25's mean length (tokens per message), at least 1, as FTS5 floors it."""
        return max(self.tokens / self.documents, 1.0) if self.documents > 0 else 1.0


def bm25_idf(count: int, total: int) -> float:
    """BM25's IDF as FTS5 computes it, ln((N - n + 0.5) / (n + 0.5)), floored at `MIN_IDF`; a count
    past the total (a prefix's sum over its words) counts as every message."""
    if total <= 0:
        return MIN_IDF
    count = min(max(count, 0), total)
    return max(math.log((total - count + 0.5) / (count + 0.5)), MIN_IDF)


def _pattern(term: Term) -> str:
    """What `term` looks like inside a token column whose blanks are doubled (``_spaced``): each token
    then has a blank of its own on either side, so ``str.count`` counts every occurrence."""
    if is_prefix_term(term):
        return " " + term[0]  # any token starting with it
    return " " + "  ".join(term) + " "  # the word, or the phrase's words one after the other


def _spaced(column: str) -> str:
    return " " + column.replace(" ", "  ") + " " if column else ""


class TokenRanker:
    """The (coverage, BM25) of a match from its stored token columns, for one query and one scope.

    Coverage reads every query term as ``TermMatcher`` does (the highlights' rule: a word or prefix
    in either column, a phrase among the words only); BM25 the `searched` ones (those the index was
    asked for), each with its `idf`, the message's length in tokens (words and parts) against
    `mean_tokens`. BM25 is negative, as SQLite's ``bm25()``: the smaller, the better.

    Counted with ``str.count`` on the columns (a few hundred nanoseconds a term), not by splitting
    them into tokens: a search ranks every match in scope, thousands on a common word. A phrase's
    occurrences are counted without overlap (FTS5 would count "a a a" twice for the phrase "a a").
    """

    def __init__(
        self,
        terms: Sequence[Term],
        searched: Sequence[Term],
        weights: Mapping[Term, float],
        idf: Mapping[Term, float],
        mean_tokens: float,
    ) -> None:
        # (pattern, a phrase?, squared weight, IDF when searched else 0)
        self._terms = [
            (_pattern(term), len(term) > 1, weights.get(term, 0.0) ** 2, idf.get(term, 0.0) if term in searched else 0.0)
            for term in terms
        ]
        self._total = sum(w * w for w in weights.values())
        self._mean_tokens = max(mean_tokens, 1.0)

    def score(self, words: str, parts: str) -> tuple[float, float]:
        spaced_words, spaced_parts = _spaced(words), _spaced(parts)
        length = (words.count(" ") + 1 if words else 0) + (parts.count(" ") + 1 if parts else 0)
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / self._mean_tokens)
        covered = 0.0
        score = 0.0
        for pattern, phrase, share, idf in self._terms:
            in_words = spaced_words.count(pattern)
            in_parts = spaced_parts.count(pattern) if spaced_parts else 0
            if in_words or (in_parts and not phrase):
                covered += share
            if idf and (in_words or in_parts):
                frequency = in_words + PART_WEIGHT * in_parts
                score += idf * frequency * (BM25_K1 + 1) / (frequency + norm)
        coverage = min(1.0, covered / self._total) if self._total > 0 else 0.0
        return coverage, -score
