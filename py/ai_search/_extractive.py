"""Extractive answers: the answer given when no LLM provider is configured.

The product still answers without a model (DESIGN decision 4): it quotes the source sentences that
best match the question, each followed by its citation `[N]`, numbered exactly as the LLM prompt
numbers them, so the page renders both kinds of answer the same way. The server labels the answer
as extractive.

    >>> sources = [AnswerSource("Lunch is at noon."), AnswerSource("The deploy failed. Disk was full.")]
    >>> print(build_extractive_answer("why did the deploy fail?", sources))
    The deploy failed. [2]

How it works, deterministically (no randomness, no model, no dictionary of word forms):

1. Take the first `MAX_SEARCH_ANSWER_MESSAGES` sources, each cut to `MAX_SEARCH_ANSWER_TEXT_LENGTH`
   characters, as the prompt does. Split each into sentences at line breaks and after `.`, `!`, `?`
   or `…` followed by whitespace.
2. Tokenise question and sentences the same way: NFKC, case-folded, runs of letters and digits.
   No stemming ("deploy" does not match "deployed"), which keeps it language-neutral. English stop
   words are dropped from the question, unless nothing else is left.
3. Score each sentence: the sum, over the distinct question terms it contains, of the term's
   inverse document frequency across all sentences, `ln(1 + n / df)`, so a term every sentence holds
   counts little and a rare one a lot. Sentences with no question term are out. A sentence gets a
   small bonus, `EXTRACTIVE_RETRIEVAL_SCORE_BONUS` x the source's retrieval score, so ties go to the
   source the search ranked higher. Remaining ties go to the earlier source, then earlier sentence.
4. Pick up to `max_sentences` in score order, at most one per source while other sources still have
   a scoring sentence, then fill up from the rest. Print them one per line, best first, each as
   `<sentence> [N]`.
5. When no sentence shares a term with the question, say so plainly and quote the first sentence of
   the top source (highest retrieval score, else the first), cited.

A `[N]` written inside a quoted message is rewritten to `(N)`, so quoted text can never pass for a
citation of another source.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ._answers import AnswerSource
from ._constants import MAX_SEARCH_ANSWER_MESSAGES, MAX_SEARCH_ANSWER_TEXT_LENGTH

__all__ = [
    "EXTRACTIVE_ANSWER_MAX_SENTENCES",
    "EXTRACTIVE_NO_MATCH_PREFIX",
    "EXTRACTIVE_NO_SOURCES_TEXT",
    "EXTRACTIVE_RETRIEVAL_SCORE_BONUS",
    "EXTRACTIVE_SENTENCE_MAX_CHARS",
    "EXTRACTIVE_STOP_WORDS",
    "build_extractive_answer",
]

# Sentences quoted in one extractive answer (sentences).
EXTRACTIVE_ANSWER_MAX_SENTENCES = 3
# Characters of one quoted sentence; a longer one is cut at a word boundary and ends with "…".
EXTRACTIVE_SENTENCE_MAX_CHARS = 300
# Score added per unit of retrieval score (0..1), in IDF units; below one rare-term match
# (ln 2 ~ 0.69 for a term in every sentence), so it only breaks near-ties.
EXTRACTIVE_RETRIEVAL_SCORE_BONUS = 0.25

EXTRACTIVE_NO_MATCH_PREFIX = (
    "None of the source messages mention the words in the question. The top-ranked source says:"
)
EXTRACTIVE_NO_SOURCES_TEXT = "There are no source messages to answer from."

# Common English words that name no topic; matching them would favour long, chatty sentences.
_STOP_WORDS_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves s t don doesn didn isn wasn
    anyone anything someone something tell know please
"""
EXTRACTIVE_STOP_WORDS: Final = frozenset(_STOP_WORDS_TEXT.split())

_SENTENCE_BREAK: Final = re.compile(r"(?<=[.!?…])\s+|\s*\n\s*")
_TOKEN: Final = re.compile(r"[^\W_]+")
_BRACKETED_NUMBER: Final = re.compile(r"\[([0-9]+)\]")


@dataclass(frozen=True, slots=True)
class _Sentence:
    source_number: int  # 1-based, as cited
    position: int  # index of the sentence within its source
    text: str
    terms: frozenset[str]
    bonus: float


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


def _clip(sentence: str) -> str:
    if len(sentence) <= EXTRACTIVE_SENTENCE_MAX_CHARS:
        return sentence
    cut = sentence[: EXTRACTIVE_SENTENCE_MAX_CHARS - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip() + "…"


def _quote(sentence: str, number: int) -> str:
    defused = _BRACKETED_NUMBER.sub(r"(\1)", _clip(sentence))
    return f"{defused} [{number}]"


def _sentences(sources: Sequence[AnswerSource]) -> list[_Sentence]:
    sentences = []
    for number, source in enumerate(sources[:MAX_SEARCH_ANSWER_MESSAGES], start=1):
        score = source.score if source.score is not None and math.isfinite(source.score) else 0.0
        bonus = EXTRACTIVE_RETRIEVAL_SCORE_BONUS * min(1.0, max(0.0, score))
        position = 0
        for part in _SENTENCE_BREAK.split(source.text[:MAX_SEARCH_ANSWER_TEXT_LENGTH]):
            terms = frozenset(_tokens(part))
            if terms:
                sentences.append(_Sentence(number, position, part.strip(), terms, bonus))
                position += 1
    return sentences


def _question_terms(query: str) -> frozenset[str]:
    tokens = frozenset(_tokens(query))
    return (tokens - EXTRACTIVE_STOP_WORDS) or tokens


def _pick(ranked: Sequence[_Sentence], max_sentences: int) -> list[_Sentence]:
    """The best `max_sentences` of `ranked` (best first), one per source before any source repeats."""
    picked: set[int] = set()
    used_sources: set[int] = set()
    for rank, sentence in enumerate(ranked):
        if len(picked) < max_sentences and sentence.source_number not in used_sources:
            picked.add(rank)
            used_sources.add(sentence.source_number)
    for rank in range(len(ranked)):
        if len(picked) < max_sentences:
            picked.add(rank)
    return [ranked[rank] for rank in sorted(picked)]


def build_extractive_answer(
    query: str,
    sources: Sequence[AnswerSource],
    max_sentences: int = EXTRACTIVE_ANSWER_MAX_SENTENCES,
) -> str:
    """Answer `query` by quoting the best-matching source sentences, each cited `[N]`, one per line.

    See the module docstring for the scoring. Returns `EXTRACTIVE_NO_SOURCES_TEXT` when no source
    has any text, and an explicit "no match" line citing the top source when nothing matches.

    Raises:
        ValueError: `max_sentences` is less than 1.
    """
    if max_sentences < 1:
        raise ValueError(f"max_sentences must be 1 or more, got {max_sentences}")
    sentences = _sentences(sources)
    if not sentences:
        return EXTRACTIVE_NO_SOURCES_TEXT
    document_frequency = Counter(term for sentence in sentences for term in sentence.terms)
    idf = {term: math.log(1 + len(sentences) / df) for term, df in document_frequency.items()}
    terms = _question_terms(query)
    ranked = []
    for sentence in sentences:
        # fsum is exact, so the score cannot depend on set order (string hashes vary per process).
        overlap = math.fsum(idf[term] for term in terms & sentence.terms)
        if overlap > 0:
            ranked.append((overlap + sentence.bonus, sentence))
    ranked.sort(key=lambda item: (-item[0], item[1].source_number, item[1].position))
    if not ranked:
        top = min(sentences, key=lambda s: (-s.bonus, s.source_number, s.position))
        return f"{EXTRACTIVE_NO_MATCH_PREFIX} {_quote(top.text, top.source_number)}"
    best = _pick([sentence for _, sentence in ranked], max_sentences)
    return "\n".join(_quote(s.text, s.source_number) for s in best)
