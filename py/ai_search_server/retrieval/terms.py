"""Query terms: the FTS5 match expression of the keyword branch, and highlight ranges in a message.

Both read text the way the index does (``tokens.text_tokens``): a word is a run of letters and digits
folded to lower case without diacritics, Chinese, Japanese and Korean runs are cut into overlapping
character pairs, and the parts of an identifier (``InvalidProviderToken``: ``invalid provider
token``) are findable too. So a highlight marks exactly what the keyword branch could have matched.

A query is cut on whitespace into pieces (a quoted phrase, `"rolling back"`, is one piece); a piece holding one word is a **term** (a word of
`PREFIX_MATCH_MIN_CHARS` or more also matches longer words: "deploy" finds "deployment"); a piece
holding several words is a **phrase** whose words must follow each other: identifiers such as
`ERR_CONN_RESET`, `v2.14.0` or `SRE-14` match themselves, not every message with "err" or "14". A
CJK run is the phrase of its pairs (``老化测试``); a piece mixing CJK with other letters gives one
term per script (``DHCPの不具合``: ``dhcp`` and the pairs of ``の不具合``). **Stopwords never decide a
match**: a term made only of English stopwords ("the", "was", "can't") is dropped, so it neither
finds a message nor highlights one.

    >>> terms = query_terms("Déploy the ERR_CONN_RESET?")
    >>> terms
    (('deploy',), ('err', 'conn', 'reset'))
    >>> fts_match_expression(terms)
    '"deploy"* OR "err" + "conn" + "reset"'
    >>> highlight_ranges("deployment hit ERR_CONN_RESET", terms)
    [(0, 10), (15, 29)]

Offsets are Python string indices (Unicode code points) into the text as stored; the page slices the
same Python string (Pyodide) and renders each range as a text node, never as HTML.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence

from .stopwords import is_stopword
from .tokens import TextTokens, Token, fold_word, is_cjk, text_tokens

__all__ = [
    "MAX_QUERY_TERMS",
    "PREFIX_MATCH_MIN_CHARS",
    "Term",
    "TermMatcher",
    "fold_word",
    "fts_match_expression",
    "highlight_ranges",
    "is_prefix_term",
    "matched_terms",
    "query_terms",
    "quoted_phrases",
    "term_coverage",
    "term_weights",
    "value_term",
    "words_with_offsets",
]

# A single-word term this long or longer also matches longer words ("deploy" finds "deployment");
# shorter ones match whole words only, or "api" would match "apis", "apiary" and "apico" (characters).
PREFIX_MATCH_MIN_CHARS = 4
# Distinct terms one keyword query uses; a pasted paragraph must not become a 500-way OR (terms).
MAX_QUERY_TERMS = 32

# One word, or the words of a phrase in order; folded.
Term = tuple[str, ...]
# A quoted phrase: a quote, something, the next quote.
_QUOTED = re.compile(r'"([^"]*)"')


def words_with_offsets(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, folded word) for each word token of `text`, in order (CJK runs as pairs)."""
    for token in text_tokens(text).words:
        yield token.start, token.end, token.text


def _piece_terms(piece: str) -> Iterator[Term]:
    """The terms of one whitespace-separated piece: its words, cut where CJK meets another script."""
    run: list[str] = []
    for token in text_tokens(piece).words:
        if run and is_cjk(run[-1]) != is_cjk(token.text):
            yield tuple(run)
            run = []
        run.append(token.text)
    if run:
        yield tuple(run)


def _pieces(query: str) -> Iterator[tuple[str, bool]]:
    """The query's pieces in order, each with whether it was a quoted phrase: `"rolling back" now`
    is the phrase `rolling back`, then the word `now`. A quote that never closes is a word's."""
    position = 0
    for match in _QUOTED.finditer(query):
        yield from ((piece, False) for piece in query[position : match.start()].split())
        if match[1].strip():
            yield match[1], True
        position = match.end()
    yield from ((piece, False) for piece in query[position:].split())


def _phrase_of(piece: str) -> Term:
    return tuple(token.text for token in text_tokens(piece).words)


def query_terms(query: str) -> tuple[Term, ...]:
    """The distinct terms of a query, first-seen order, stopword-only terms left out; at most
    `MAX_QUERY_TERMS`. A quoted phrase is one term whose words must follow each other."""
    terms: dict[Term, None] = {}
    for piece, quoted in _pieces(query):
        for term in (_phrase_of(piece),) if quoted else _piece_terms(piece):
            if term and not all(is_stopword(word) for word in term):
                terms.setdefault(term, None)
            if len(terms) >= MAX_QUERY_TERMS:
                return tuple(terms)
    return tuple(terms)


def quoted_phrases(query: str) -> tuple[Term, ...]:
    """The quoted phrases of a query as terms (stopword-only ones left out): what a result must hold."""
    phrases = (_phrase_of(piece) for piece, quoted in _pieces(query) if quoted)
    return tuple(dict.fromkeys(p for p in phrases if p and not all(is_stopword(w) for w in p)))


def value_term(value: str) -> Term:
    """An excluded word or phrase (`-canary`, `-"rolling back"`) as the term that finds it."""
    return _phrase_of(value)


def is_prefix_term(term: Term) -> bool:
    """True for a single word long enough to match longer words too (never a CJK pair)."""
    return len(term) == 1 and len(term[0]) >= PREFIX_MATCH_MIN_CHARS and not is_cjk(term[0])


def _quote(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def fts_match_expression(terms: Sequence[Term]) -> str:
    """An FTS5 MATCH string: every word quoted (no FTS syntax gets through), terms OR-ed.

    OR rather than AND: a natural question ("why did the deploy fail") holds words no message
    has, and the ranking (coverage, then BM25) puts messages holding more (and rarer) terms first.
    A phrase's words are joined with FTS5's `+` (adjacent, in order). Returns "" for no terms,
    which the caller must not send to MATCH.
    """
    parts = []
    for term in terms:
        if is_prefix_term(term):
            parts.append(_quote(term[0]) + "*")
        else:
            parts.append(" + ".join(_quote(word) for word in term))
    return " OR ".join(parts)


class _TermIndex:
    """The terms of a query arranged for one pass over a text's words: sets and tuples, no loops."""

    def __init__(self, terms: Sequence[Term]) -> None:
        self.exact = {term[0]: term for term in terms if len(term) == 1}
        self.prefixes = tuple(term[0] for term in terms if is_prefix_term(term))
        self.phrases: dict[str, list[Term]] = {}
        for term in terms:
            if len(term) > 1:
                self.phrases.setdefault(term[0], []).append(term)

    def singles(self, word: str) -> list[Term]:
        """The single-word terms matching `word`, exactly or as a prefix."""
        found: list[Term] = [(p,) for p in self.prefixes if word.startswith(p)] if self.prefixes else []
        exact = self.exact.get(word)
        if exact is not None and exact not in found:
            found.append(exact)
        return found

    def phrases_at(self, words: Sequence[str], index: int) -> Iterator[Term]:
        """The phrases whose words follow each other from `words[index]` on."""
        for phrase in self.phrases.get(words[index], ()):
            if tuple(words[index : index + len(phrase)]) == phrase:
                yield phrase


def highlight_ranges(text: str, terms: Sequence[Term]) -> list[tuple[int, int]]:
    """[start, end) ranges of `text` that a term or phrase matches, in order, merged when touching."""
    if not terms:
        return []
    index = _TermIndex(terms)
    tokens = text_tokens(text)
    words = [token.text for token in tokens.words]
    found: list[tuple[int, int]] = []
    for position, token in enumerate(tokens.words):
        if index.singles(token.text):
            found.append((token.start, token.end))
        for phrase in index.phrases_at(words, position):
            found.append((token.start, tokens.words[position + len(phrase) - 1].end))
    found.extend((part.start, part.end) for part in tokens.parts if index.singles(part.text))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def matched_terms(text: str, terms: Sequence[Term]) -> set[Term]:
    """The terms of `terms` that occur in `text` (by the same rules as the highlights)."""
    return TermMatcher(terms).matched(text)


class TermMatcher:
    """`matched_terms` for many texts against one query: the keyword branch checks ~200 per search.

    The text is cut once; single words are set lookups (words and parts), prefixes one scan of the
    distinct tokens, phrases a look at the positions of their first word.
    """

    def __init__(self, terms: Sequence[Term]) -> None:
        self._index = _TermIndex(terms)

    def matched(self, text: str) -> set[Term]:
        return self.matched_tokens(text_tokens(text))

    def matched_tokens(self, tokens: TextTokens) -> set[Term]:
        return self.matched_words([token.text for token in tokens.words], _texts(tokens.parts))

    def matched_columns(self, words: str, parts: str) -> set[Term]:
        """As `matched`, from the index's stored token columns (``token_column_text``): no re-cutting."""
        return self.matched_words(words.split(), parts.split())

    def matched_words(self, words: list[str], parts: Iterable[str]) -> set[Term]:
        present = set(words).union(parts)
        index = self._index
        found: set[Term] = {term for word, term in index.exact.items() if word in present}
        for prefix in index.prefixes:
            if any(word.startswith(prefix) for word in present):
                found.add((prefix,))
        for first in index.phrases:
            if first in present:
                for position, word in enumerate(words):
                    if word == first:
                        found.update(index.phrases_at(words, position))
        return found


def _texts(tokens: Iterable[Token]) -> Iterator[str]:
    return (token.text for token in tokens)


def term_weights(document_counts: Mapping[Term, int], total_documents: int) -> dict[Term, float]:
    """Each term's inverse document frequency, BM25's: ln(1 + (N - n + 0.5) / (n + 0.5)).

    A word in every other message ("the", "was") weighs almost nothing; a rare one a lot.
    """
    total = max(total_documents, 0)
    weights = {}
    for term, count in document_counts.items():
        n = min(max(count, 0), total)
        weights[term] = math.log(1 + (total - n + 0.5) / (n + 0.5))
    return weights


def term_coverage(matched: Iterable[Term], weights: Mapping[Term, float]) -> float:
    """The share of the query's squared weight a message matches, 0..1 (0 when the query weighs nothing).

    Squared, so the query's rare words decide: for "parking near the new office" a message holding
    only "parking" (in one message) covers more than one holding "new" and "office" (in dozens),
    and a query whose weight lies mostly in words no message holds ("kubernetes node pool
    autoscaling") leaves every message far below the relevance floor. Measured on both judged sets
    (docs/retrieval.md): hybrid nDCG@10 and keyword-kind nDCG@10 rose on each, against plain weights.
    """
    total = sum(w * w for w in weights.values())
    if total <= 0:
        return 0.0
    return min(1.0, sum(weights.get(term, 0.0) ** 2 for term in set(matched)) / total)
