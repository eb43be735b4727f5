"""The citation check: for each sentence of an answer, the passage of its cited sources that supports it.

An answer (a model's or an extractive one) is split into sentences; each keeps the `[N]` citations
written in or right after it. For every sentence that cites something, the check looks in each
cited source for the passage (one sentence, or two in a row) that holds most of the sentence's
words, and calls the sentence *supported* when the passages of its cited sources together hold
enough of it:

    >>> sources = [AnswerSource("Patroni promoted pg-ledger-02 after 4m12s. Pods restarted."),
    ...            AnswerSource("Lunch is at noon.")]
    >>> [(c.supported, [(s.n, s.start, s.end) for s in c.spans]) for c in check_citations(
    ...     "The promotion of pg-ledger-02 took 4m12s [1]. Lunch was at 13:00 [2].", sources)]
    [(True, [(1, 0, 42)]), (False, [])]

How, deterministically:

1. *Sentences* as `_sentences` splits them; a run of citations that opens a sentence (`… back. [2]
   Next`) belongs to the sentence before it. `[N?]` (a citation without a source, as the server
   marks it) cites nothing.
2. *Claim words*: the sentence's content stems, without its citations; words that name no topic
   (`WEAK_WORDS`) weigh `WEAK_WORD_WEIGHT`, the others 1.
3. *Source words*: a passage's content stems, plus its source's author (username and display name),
   room and date (a sentence may say "Bob Lindqvist reported on Sep 17" of a message bob wrote that
   day), and the dates of the days its text names relative to it (`RELATIVE_DAYS`: "yesterday" in a
   message of Mar 29 offers Mar 28).
4. *Supported* when the best passages of the cited sources together hold `MIN_SUPPORT_SHARE` of the
   claim's weight, and also
   - every number of the claim is in them (`38 minutes` is not `4 minutes`; digits are compared as
     numbers, `1,400` is `1400`, and the words one to twelve count as their digits);
   - every person the claim names (the authors of the given sources, by username) is in them;
   - a claim that says "not" (`not`, `no`, `never`, `nothing`, `without`, `-n't` ...) has a passage
     that says it too, and a claim that does not uses no word a passage denies (the word right after
     its "not": "the captures had settled" is not "none of the captures had settled").
   A supported sentence lists its `spans`: for each cited source whose passage holds some of its
   words, `[start, end)` code-point offsets of that passage in the source's text.
5. A sentence that cites nothing is not checked (`supported` is None); one whose sources do not
   hold it is unsupported, whether it cites the wrong source or states what no source says.

What it cannot see (measured on `bench/citation_judgments.json`, figures in docs/answers.md): a
claim that reverses an order or a direction with the same words ("raised from 20s to 30s" for "30s
→ 20s", "lower" for "+2.3 points"), a claim made of the source's words with one word changed that is
not a number, a name or a negation ("the DNS provider was down" for "a 401 from the DNS provider"),
and paraphrases that share too few words with their source (those come out unsupported). It
compares words, not meanings; English word forms only, like `_sentences`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from ._answers import AnswerSource
from ._constants import MAX_SEARCH_ANSWER_TEXT_LENGTH
from ._sentences import STOP_WORDS, WEAK_WORDS, Sentence, content_stems, split_sentences, stem, tokens

__all__ = [
    "MAX_SPAN_SENTENCES",
    "MIN_SUPPORT_SHARE",
    "CheckedSentence",
    "SupportSpan",
    "answer_sentences",
    "check_citations",
    "claim_numbers",
    "denied_stems",
    "source_words",
]

# Share of a sentence's word weight the passages of its cited sources must hold (0..1).
MIN_SUPPORT_SHARE: Final = 0.65
# Consecutive source sentences one supporting passage may join (sentences): a claim often sums up
# a statement and the reason or the list that follows it.
MAX_SPAN_SENTENCES: Final = 3
# A "not" negates the next this many content words (words): "none of the captures has settled"
# denies the captures, "we don't know the new key" says nothing against a key rotated earlier.
NEGATION_SCOPE_WORDS: Final = 1
# Weight of a claim word that names no topic by itself, against 1.
WEAK_WORD_WEIGHT: Final = 0.5
# Words of a message that name a day relative to the day it was written (days from it).
RELATIVE_DAYS: Final = {"yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1}

_CITATION: Final = re.compile(r"\[([0-9]{1,6})\]")
_ANY_CITATION: Final = re.compile(r"\[[0-9]{1,6}\??\]")
_LEADING_CITATIONS: Final = re.compile(r"^(?:\[[0-9]{1,6}\??\][\s.,;:!?]*)+")
# A number standing on its own, or a dotted version (v4.3.2). Digits glued to letters (v2, SRE-14,
# pg-ledger-02, the 12 of 4m12s) are part of a name, which the words compare.
_NUMBER: Final = re.compile(r"(?<![A-Za-z0-9_])(?<![A-Za-z]-)(v\d+(?:\.\d+)+|\d+(?:[.,]\d+)*)")
_NEGATIONS: Final = frozenset(
    ["not", "no", "never", "none", "nothing", "nobody", "neither", "nor", "without", "cannot", "t"]
)
_NUMBER_WORDS: Final = {
    word: str(value)
    for value, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
}


@dataclass(frozen=True, slots=True)
class SupportSpan:
    """Where source `n` (1-based, as cited) supports a sentence: `text[start:end]`, code points."""

    n: int
    start: int
    end: int

    def to_json(self) -> dict[str, int]:
        return {"n": self.n, "start": self.start, "end": self.end}


@dataclass(frozen=True, slots=True)
class CheckedSentence:
    """One sentence of an answer, checked against the sources it cites.

    `start`/`end` locate it in the answer (code points); `citations` are the source numbers it
    cites (each once, in order; only numbers with a source behind them); `supported` is None when
    it cites nothing.
    """

    text: str
    start: int
    end: int
    citations: tuple[int, ...]
    supported: bool | None
    spans: tuple[SupportSpan, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "citations": list(self.citations),
            "supported": self.supported,
            "spans": [span.to_json() for span in self.spans],
        }


def answer_sentences(answer: str) -> list[Sentence]:
    """The sentences of `answer`, each with the citations that follow it (see the module docstring)."""
    out: list[Sentence] = []
    for sentence in split_sentences(answer):
        lead = _LEADING_CITATIONS.match(sentence.text)
        if lead and out:
            before = out[-1]
            cut = sentence.start + len(lead.group(0).rstrip())
            out[-1] = Sentence(answer[before.start : cut], before.start, cut)
            rest = answer[cut : sentence.end].strip()
            if rest:
                start = answer.index(rest, cut)
                out.append(Sentence(rest, start, start + len(rest)))
            continue
        out.append(sentence)
    return out


def claim_numbers(text: str) -> frozenset[str]:
    """The numbers a text states, compared as the check compares them (see the module docstring)."""
    return _numbers(text)


def source_words(source: AnswerSource) -> tuple[frozenset[str], frozenset[str]]:
    """Every content stem and number a source offers: its text's (as far as the prompt reads it),
    and its author's, room's and date's."""
    text = source.text[:MAX_SEARCH_ANSWER_TEXT_LENGTH]
    words, numbers = _meta(source, text)
    return content_stems(text) | words, _numbers(text) | numbers


def _numbers(text: str) -> frozenset[str]:
    found = {_plain_number(n) for n in _NUMBER.findall(text)}
    found.update(_NUMBER_WORDS[t] for t in tokens(text) if t in _NUMBER_WORDS)
    return frozenset(found)


def _plain_number(text: str) -> str:
    # "1,400" and "1400" are one number; so are "09" and "9". A decimal keeps its point.
    if text.startswith("v"):
        return text
    whole, _, fraction = text.replace(",", "").partition(".")
    whole = whole.lstrip("0") or "0"
    return f"{whole}.{fraction}" if fraction else whole


def denied_stems(text: str) -> frozenset[str]:
    """The stems a "not" in `text` denies: the next `NEGATION_SCOPE_WORDS` content words after it
    ("doesn't" is read as "doesn", "t": the "t" negates)."""
    denied: set[str] = set()
    words = tokens(text)
    for i, word in enumerate(words):
        if word in _NEGATIONS:
            following = [w for w in words[i + 1 :] if w not in STOP_WORDS and w not in _NEGATIONS]
            denied.update(stem(w) for w in following[:NEGATION_SCOPE_WORDS])
    return frozenset(denied)


def _negates(text: str) -> bool:
    return any(word in _NEGATIONS for word in tokens(text))


@dataclass(frozen=True, slots=True)
class _Passage:
    start: int
    end: int
    words: frozenset[str]
    numbers: frozenset[str]
    denied: frozenset[str]  # stems a "not" in the passage denies
    negated: bool  # the passage says "not" somewhere


@dataclass(frozen=True, slots=True)
class _Source:
    passages: tuple[_Passage, ...]
    meta_words: frozenset[str]
    meta_numbers: frozenset[str]


def _meta(source: AnswerSource, text: str = "") -> tuple[frozenset[str], frozenset[str]]:
    """The words and numbers of a source's author, room and date, and of the days its `text` names
    relative to that date."""
    named = " ".join(part for part in (source.username, source.author_name, source.room_name) if part)
    words, numbers = set(content_stems(named)), set()
    if source.ts:
        try:
            moment = datetime.fromisoformat(source.ts.replace("Z", "+00:00"))
        except ValueError:
            moment = None
        if moment is not None:
            said = set(tokens(text))
            days = {0, *(offset for word, offset in RELATIVE_DAYS.items() if word in said)}
            for offset in sorted(days):
                day = moment + timedelta(days=offset)
                words |= content_stems(f"{day:%b %B %A}")
                numbers |= {str(day.day), str(day.year)}
    return frozenset(words), frozenset(numbers)


def _source(source: AnswerSource) -> _Source:
    text = source.text[:MAX_SEARCH_ANSWER_TEXT_LENGTH]
    sentences = split_sentences(text)
    passages = []
    for first in range(len(sentences)):
        for last in range(first, min(first + MAX_SPAN_SENTENCES, len(sentences))):
            start, end = sentences[first].start, sentences[last].end
            piece = text[start:end]
            passages.append(
                _Passage(
                    start, end, content_stems(piece), _numbers(piece), denied_stems(piece), _negates(piece)
                )
            )
    words, numbers = _meta(source, text)
    return _Source(tuple(passages), words, numbers)


class _Claim:
    def __init__(self, text: str, names: frozenset[str]) -> None:
        bare = _ANY_CITATION.sub(" ", text)
        self.words = content_stems(bare)
        self.numbers = _numbers(bare)
        self.names = frozenset(stem(t) for t in tokens(bare)) & names
        self.negated = _negates(bare)
        self.total = math.fsum(self.weight(w) for w in self.words)

    @staticmethod
    def weight(word: str) -> float:
        return WEAK_WORD_WEIGHT if word in WEAK_WORDS else 1.0

    def share(self, words: frozenset[str]) -> float:
        # fsum is exact, so a share cannot depend on set order (string hashes vary per process).
        if not self.total:
            return 0.0
        return math.fsum(self.weight(w) for w in self.words & words) / self.total


def _best_passage(claim: _Claim, source: _Source) -> _Passage | None:
    """The passage holding most of the claim; ties go to the shorter, then the earlier one."""
    best: tuple[float, int, int] | None = None
    chosen = None
    for passage in source.passages:
        key = (-claim.share(passage.words), passage.end - passage.start, passage.start)
        if claim.words & passage.words and (best is None or key < best):
            best, chosen = key, passage
    return chosen


def _check(claim: _Claim, cited: Sequence[tuple[int, _Source]]) -> tuple[bool, tuple[SupportSpan, ...]]:
    chosen = [(n, source, _best_passage(claim, source)) for n, source in cited]
    found = [(n, source, passage) for n, source, passage in chosen if passage is not None]
    if not found:
        return False, ()
    words = frozenset().union(*(p.words | s.meta_words for _, s, p in found))
    numbers = frozenset().union(*(p.numbers | s.meta_numbers for _, s, p in found))
    # A claim that says "not" needs a passage that does; one that does not must not use a word the
    # passage denies.
    if claim.negated:
        agrees = any(p.negated for _, _, p in found)
    else:
        agrees = not any(claim.words & p.denied for _, _, p in found)
    supported = (
        claim.share(words) >= MIN_SUPPORT_SHARE
        and claim.numbers <= numbers
        and claim.names <= words
        and agrees
    )
    spans = tuple(SupportSpan(n, p.start, p.end) for n, _, p in found) if supported else ()
    return supported, spans


def check_citations(answer: str, sources: Sequence[AnswerSource]) -> list[CheckedSentence]:
    """Every sentence of `answer`, with its citations checked against `sources` (`[1]` is the first).

    See the module docstring for the method and its limits. Citations of numbers with no source
    behind them are left out of `citations`.
    """
    parsed: dict[int, _Source] = {}
    names = frozenset(stem(s.username.casefold()) for s in sources if s.username)
    out = []
    for sentence in answer_sentences(answer):
        numbers = dict.fromkeys(int(m) for m in _CITATION.findall(sentence.text))
        cited = tuple(n for n in numbers if 1 <= n <= len(sources))
        supported: bool | None = None
        spans: tuple[SupportSpan, ...] = ()
        if cited:
            for n in cited:
                if n not in parsed:
                    parsed[n] = _source(sources[n - 1])
            supported, spans = _check(_Claim(sentence.text, names), [(n, parsed[n]) for n in cited])
        out.append(CheckedSentence(sentence.text, sentence.start, sentence.end, cited, supported, spans))
    return out
