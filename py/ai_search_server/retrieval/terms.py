"""Query terms: the FTS5 match expression of the keyword branch, and highlight ranges in a message.

Both read words the way the index's tokenizer does (`unicode61 remove_diacritics 2`): a word is a run
of letters, digits and private-use characters; everything else separates words; case and diacritics
are ignored. So a highlight marks exactly what the keyword branch could have matched.

A query is cut on whitespace into pieces; a piece holding one word is a **term** (a word of
`PREFIX_MATCH_MIN_CHARS` or more also matches longer words: "deploy" finds "deployment"); a piece
holding several words is a **phrase** whose words must follow each other: identifiers such as
`ERR_CONN_RESET`, `v2.14.0` or `SRE-14` match themselves, not every message with "err" or "14".

    >>> terms = query_terms("Déploy ERR_CONN_RESET?")
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
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence

__all__ = [
    "MAX_QUERY_TERMS",
    "PREFIX_MATCH_MIN_CHARS",
    "Term",
    "fold_word",
    "fts_match_expression",
    "highlight_ranges",
    "is_prefix_term",
    "matched_terms",
    "query_terms",
    "term_coverage",
    "term_weights",
    "words_with_offsets",
]

# A single-word term this long or longer also matches longer words ("deploy" finds "deployment");
# shorter ones match whole words only, or "the" would match "then", "there" and "theme" (characters).
PREFIX_MATCH_MIN_CHARS = 4
# Distinct terms one keyword query uses; a pasted paragraph must not become a 500-way OR (terms).
MAX_QUERY_TERMS = 32
# A word as unicode61's default `categories 'L* N* Co'` sees it: letters and digits of any script
# (`[^\W_]` is exactly what str.isalnum() accepts) and the private-use planes.
_WORD = re.compile(r"(?:[^\W_]|[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd])+")

# One word, or the words of a phrase in order; folded.
Term = tuple[str, ...]


def fold_word(word: str) -> str:
    """Lower case without diacritics: `Déploy` and `deploy` are the same word."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def words_with_offsets(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, folded word) for each word of `text`, in order."""
    for match in _WORD.finditer(text):
        yield match.start(), match.end(), fold_word(match.group())


def query_terms(query: str) -> tuple[Term, ...]:
    """The distinct terms of a query, first-seen order, at most `MAX_QUERY_TERMS`."""
    terms: dict[Term, None] = {}
    for piece in query.split():
        words = tuple(word for _start, _end, word in words_with_offsets(piece) if word)
        if words:
            terms.setdefault(words, None)
        if len(terms) >= MAX_QUERY_TERMS:
            break
    return tuple(terms)


def is_prefix_term(term: Term) -> bool:
    """True for a single word long enough to match longer words too."""
    return len(term) == 1 and len(term[0]) >= PREFIX_MATCH_MIN_CHARS


def _quote(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def fts_match_expression(terms: Sequence[Term]) -> str:
    """An FTS5 MATCH string: every word quoted (no FTS syntax gets through), terms OR-ed.

    OR rather than AND: a natural question ("why did the deploy fail") holds words no message
    has, and BM25 already ranks messages holding more (and rarer) terms first. A phrase's words
    are joined with FTS5's `+` (adjacent, in order). Returns "" for no terms, which the caller
    must not send to MATCH.
    """
    parts = []
    for term in terms:
        if is_prefix_term(term):
            parts.append(_quote(term[0]) + "*")
        else:
            parts.append(" + ".join(_quote(word) for word in term))
    return " OR ".join(parts)


def _word_matches(word: str, term: Term) -> bool:
    return word == term[0] or (is_prefix_term(term) and word.startswith(term[0]))


def highlight_ranges(text: str, terms: Sequence[Term]) -> list[tuple[int, int]]:
    """[start, end) ranges of `text` that a term or phrase matches, in order, merged when touching."""
    if not terms:
        return []
    words = list(words_with_offsets(text))
    found: list[tuple[int, int]] = []
    for index, (start, _end, word) in enumerate(words):
        for term in terms:
            span = words[index : index + len(term)]
            if (
                len(span) == len(term)
                and _word_matches(word, term)
                and all(w == t for (_s, _e, w), t in zip(span[1:], term[1:], strict=True))
            ):
                found.append((start, span[-1][1]))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def matched_terms(text: str, terms: Sequence[Term]) -> set[Term]:
    """The terms of `terms` that occur in `text` (by the same rules as the highlights)."""
    words = [word for _start, _end, word in words_with_offsets(text)]
    present = set(words)
    found: set[Term] = set()
    for term in terms:
        if len(term) == 1:
            if term[0] in present or (is_prefix_term(term) and any(w.startswith(term[0]) for w in present)):
                found.add(term)
        elif term[0] in present and any(
            tuple(words[i : i + len(term)]) == term for i, w in enumerate(words) if w == term[0]
        ):
            found.add(term)
    return found


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
    """The share of the query's weight a message matches, 0..1 (0 when the query weighs nothing)."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return min(1.0, sum(weights.get(term, 0.0) for term in set(matched)) / total)
