"""Extractive answers: the answer given when no LLM provider is configured.

The product still answers without a model (DESIGN decision 4): it quotes the source sentences that
answer the question, each followed by its citation `[N]`, numbered as the LLM prompt numbers its
sources, so the page renders both kinds of answer the same way. The server labels it extractive.

    >>> sources = [AnswerSource("Why did the deploy fail?"), AnswerSource("It failed because the disk was full.")]
    >>> print(build_extractive_answer("why did the deploy fail?", sources))
    It failed because the disk was full. [2]

The sources are the messages the search returned (`[1]..[n]`) and, optionally, their *context*
(`[n+1]..`): the other messages of each source's conversation (its thread, or the turns of the room
around it), which the server loads under the caller's permissions. In a thread the reply that
settled a question is usually the answer, and it rarely repeats the question's words. Messages that
share an `AnswerSource.conversation` key form one conversation; a message without one is its own.

How a sentence is scored, deterministically (no randomness, no model):

1. Words as `_sentences` defines them: content stems, stop words dropped, English endings folded.
   Each question stem weighs `1 + ln(1 + M/df) / ln(1 + M)` over the M messages (between 1 and 2: a
   rare word counts up to twice a common one; the messages were found for this question, so its
   topic words are common among them and must still count), times `WEAK_WORD_WEIGHT` for words that
   name no topic ("take", "keep", "good"). A question word no message holds weighs
   `MISSING_WORD_WEIGHT` and is missing from every text. A *share* is the part of the question's
   weight a text holds.
2. *Conversation*: `CONVERSATION_WEIGHT` x its share (half what its messages hold together, half what
   its best message holds, so a long thread does not match everything by its sheer length), plus
   `RETRIEVAL_WEIGHT` x the best search score among its messages: the search ranks topics better
   than word overlap does, and every message of a conversation shares its best score.
3. *Sentence*: `SENTENCE_WEIGHT` x (its own share + `MESSAGE_WEIGHT` x its message's share).
4. *Usefulness* multiplies the sum: `1 + KIND_BONUS` for each kind of answer the question asks for
   that the sentence offers (`_answer_kinds`: a cause for "why", an amount for "how much", a name
   for "who", a decision for "should we"; "who fixed it" asks for a name and a fix), judged
   without the question's own words ("the certificate expired" gives no cause for "why did it
   expire"); `INFO_BONUS` per other number, date, name or decision (at most
   `MAX_INFO_FEATURES`); up to `POSITION_BONUS` by the place of a reply in its conversation (late for
   a fix, a decision or a yes/no, which settle a conversation; early for a cause, which comes right
   after the report of the problem). For a "why" or "how" question, a report of the problem (the
   opening message of a conversation, or a sentence holding `RESTATE_MIN_SHARE` of the question's
   words) scores `OPENER_FACTOR` of that unless it says why or how itself.
5. *Left out*: questions (the asker's words are not the answer), sentences that restate the question
   (holding `RESTATE_MIN_SHARE` of it and adding at most `RESTATE_MAX_NEW_WORDS` words, unless the
   question is a yes/no one, which the statement it turns into answers: "SRE-14 accepted!"), sentences
   of fewer than `MIN_CONTENT_WORDS` content words ("on it 👍"), and sentences of messages holding no
   question word whose conversation holds less than `MIN_CONTEXT_SHARE` of the question.
6. Up to `max_sentences` in score order (usefulness, not search rank), one per message while others
   remain; ties go to the earlier source, then the earlier sentence. One per line, `<sentence> [N]`.
7. When no sentence is left, or the best scores below `MIN_ANSWER_SCORE` (a weak match on every
   count), the answer says plainly that the sources do not answer (`EXTRACTIVE_NO_ANSWER_TEXT`) and
   quotes nothing.

The weights were chosen on the judged questions of `bench/answer_judgments.json`
(`bench/bench_answer_quality.py` measures them); the cue tables are English. A `[N]` written inside
a quoted message is rewritten to `(N)`, so quoted text can never pass for a citation of another source.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ._answer_kinds import question_kinds, sentence_kinds
from ._answers import AnswerSource
from ._constants import MAX_SEARCH_ANSWER_TEXT_LENGTH
from ._grounding import denied_stems
from ._sentences import WEAK_WORDS, content_stems, is_question, split_sentences, tokens

__all__ = [
    "EXTRACTIVE_ANSWER_MAX_SENTENCES",
    "EXTRACTIVE_NO_ANSWER_TEXT",
    "EXTRACTIVE_NO_SOURCES_TEXT",
    "EXTRACTIVE_SENTENCE_MAX_CHARS",
    "MAX_EXTRACTIVE_SOURCES",
    "build_extractive_answer",
]

# Sentences quoted in one extractive answer (sentences).
EXTRACTIVE_ANSWER_MAX_SENTENCES = 3
# Characters of one quoted sentence; a longer one is cut at a word boundary and ends with "…".
EXTRACTIVE_SENTENCE_MAX_CHARS = 300
# Sources and context messages read in all (messages): 20 sources and their conversations.
MAX_EXTRACTIVE_SOURCES = 200

# Conversation: CONVERSATION_WEIGHT x its share of the question + RETRIEVAL_WEIGHT x its best search score.
CONVERSATION_WEIGHT: Final = 0.5
RETRIEVAL_WEIGHT: Final = 2.0
# Sentence: SENTENCE_WEIGHT x (its share of the question + MESSAGE_WEIGHT x its message's share).
SENTENCE_WEIGHT: Final = 0.5
MESSAGE_WEIGHT: Final = 0.5
# Usefulness: 1 + KIND_BONUS per kind asked for and offered, + INFO_BONUS per informative feature.
KIND_BONUS: Final = 0.4
INFO_BONUS: Final = 0.05
MAX_INFO_FEATURES: Final = 3
_INFO_KINDS: Final = frozenset({"amount", "duration", "count", "time", "person", "decision"})
# Up to this much usefulness for where a reply sits in its conversation (see the module docstring).
POSITION_BONUS: Final = 0.2
_LATE_KINDS: Final = frozenset({"method", "decision", "polar"})
# A report of the problem scores this share (0..1) for a "why" or "how" it does not explain.
OPENER_FACTOR: Final = 0.6
_EXPLAINING_KINDS: Final = frozenset({"cause", "method"})
# Weight of a question word that names no topic by itself, against 1.
WEAK_WORD_WEIGHT: Final = 0.3

# Weight of a question word no message holds (against 1 to 2 for the others): the sources may say
# it in other words, so it counts less than a word they could have matched.
MISSING_WORD_WEIGHT: Final = 1.0
# Restating: holding this share of the question's weight (0..1) ...
RESTATE_MIN_SHARE: Final = 0.6
# ... while adding at most this many content words of its own (words).
RESTATE_MAX_NEW_WORDS: Final = 1
# Content words a sentence needs to say anything (words).
MIN_CONTENT_WORDS: Final = 3
# Share of the question a conversation needs for the sentences of its wordless messages (0..1).
MIN_CONTEXT_SHARE: Final = 0.25
# The search score of a source sent without one (0..1): an average match. Context messages have none
# of their own; they take their conversation's.
UNSCORED_SOURCE_SCORE: Final = 0.5
# The score the best sentence needs to be quoted at all, in the units of the score above: a weak
# search match with little of the question in its conversation and nothing of what was asked.
MIN_ANSWER_SCORE: Final = 1.7

EXTRACTIVE_NO_ANSWER_TEXT = "The source messages do not answer this question."
EXTRACTIVE_NO_SOURCES_TEXT = "There are no source messages to answer from."

_BRACKETED_NUMBER: Final = re.compile(r"\[([0-9]+)\]")


@dataclass(frozen=True, slots=True)
class _Candidate:
    number: int  # 1-based, as cited
    position: int  # index of the sentence within its message
    text: str
    stems: frozenset[str]
    message: int  # index into the messages list
    conversation: str


def _clip(sentence: str) -> str:
    if len(sentence) <= EXTRACTIVE_SENTENCE_MAX_CHARS:
        return sentence
    cut = sentence[: EXTRACTIVE_SENTENCE_MAX_CHARS - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip() + "…"


def _quote(sentence: str, number: int) -> str:
    defused = _BRACKETED_NUMBER.sub(r"(\1)", _clip(sentence))
    return f"{defused} [{number}]"


def _score(source: AnswerSource, default: float) -> float:
    score = source.score
    return min(1.0, max(0.0, score)) if score is not None and math.isfinite(score) else default


class _Scorer:
    """The weights of one question over one set of messages (see the module docstring)."""

    def __init__(self, query: str, messages: Sequence[AnswerSource]) -> None:
        texts = [m.text[:MAX_SEARCH_ANSWER_TEXT_LENGTH] for m in messages]
        self.message_stems = [content_stems(text) for text in texts]
        frequency = Counter(stem for stems in self.message_stems for stem in stems)
        question = content_stems(query) or frozenset(tokens(query))
        count = len(messages)
        ceiling = math.log(1 + count) or 1.0

        def weight(word: str) -> float:
            # Damped: a word rare among these messages weighs up to twice a common one; the messages
            # were found for this question, so its topic words are common here and must still count.
            base = 1.0 + math.log(1 + count / frequency[word]) / ceiling
            return base * (WEAK_WORD_WEIGHT if word in WEAK_WORDS else 1.0)

        self.weights = {s: weight(s) for s in question if frequency[s]}
        # A question word no message holds counts as missing from every sentence, at this weight.
        missing = math.fsum(
            MISSING_WORD_WEIGHT * (WEAK_WORD_WEIGHT if s in WEAK_WORDS else 1.0)
            for s in question
            if not frequency[s]
        )
        self.total = math.fsum(self.weights.values()) + missing
        self.question = question
        self.kinds = question_kinds(query)
        self.names = frozenset(m.username.casefold() for m in messages if m.username)

    def share(self, stems: frozenset[str]) -> float:
        # fsum is exact, so a share cannot depend on set order (string hashes vary per process).
        if not self.total:
            return 0.0
        return math.fsum(self.weights[s] for s in stems & self.weights.keys()) / self.total


def _candidates(messages: Sequence[AnswerSource]) -> list[_Candidate]:
    out = []
    for index, message in enumerate(messages):
        conversation = message.conversation or f"message:{index}"
        for position, sentence in enumerate(split_sentences(message.text[:MAX_SEARCH_ANSWER_TEXT_LENGTH])):
            stems = content_stems(sentence.text)
            if stems:
                out.append(_Candidate(index + 1, position, sentence.text, stems, index, conversation))
    return out


def _offers(scorer: _Scorer, candidate: _Candidate) -> frozenset[str]:
    offered = sentence_kinds(candidate.text, scorer.names, scorer.question)
    # A yes or no in other words: the sentence denies a word of the question ("no real money").
    if "polar" in scorer.kinds and denied_stems(candidate.text) & scorer.question:
        offered |= {"polar"}
    return offered


def _usefulness(scorer: _Scorer, candidate: _Candidate, place: float, own: float) -> float:
    """See the module docstring, step 4; `place` is 0 for a conversation's first message, 1 for its
    last, -1 for a message alone."""
    offered = _offers(scorer, candidate)
    useful = 1.0 + KIND_BONUS * len(offered & scorer.kinds)
    opener = place == 0.0
    if "cause" in scorer.kinds and place > 0.0:
        useful += POSITION_BONUS * (1.0 - place)
    elif scorer.kinds & _LATE_KINDS and place > 0.0:
        useful += POSITION_BONUS * place
    useful += INFO_BONUS * min(MAX_INFO_FEATURES, len(offered & _INFO_KINDS))
    # The opening message, or a sentence made of the question's own words, reports the problem; it
    # answers a "why" or "how" only by saying why or how.
    asks_why = scorer.kinds & _EXPLAINING_KINDS
    reports = opener or own >= RESTATE_MIN_SHARE
    return useful * (OPENER_FACTOR if asks_why and reports and not offered & asks_why else 1.0)


def _left_out(scorer: _Scorer, candidate: _Candidate, own: float, message: float, context: float) -> bool:
    if is_question(candidate.text) or len(candidate.stems) < MIN_CONTENT_WORDS:
        return True
    restates = own >= RESTATE_MIN_SHARE and len(candidate.stems - scorer.question) <= RESTATE_MAX_NEW_WORDS
    # A yes-or-no question is answered by the statement it turns into ("SRE-14 accepted!").
    if restates and "polar" not in scorer.kinds:
        return True
    return message == 0.0 and context < MIN_CONTEXT_SHARE


def _pick(ranked: Sequence[_Candidate], max_sentences: int) -> list[_Candidate]:
    """The best `max_sentences` of `ranked` (best first), one per message before any message repeats."""
    picked: list[_Candidate] = []
    used: set[int] = set()
    for candidate in ranked:
        if len(picked) < max_sentences and candidate.message not in used:
            picked.append(candidate)
            used.add(candidate.message)
    for candidate in ranked:
        if len(picked) < max_sentences and candidate not in picked:
            picked.append(candidate)
    return sorted(picked, key=ranked.index)


_Ranked = tuple[float, _Candidate, tuple[float, ...]]


def _conversations(
    scorer: _Scorer, messages: Sequence[AnswerSource], candidates: Sequence[_Candidate], sources: int
) -> tuple[dict[str, float], dict[str, float], dict[int, float]]:
    """Per conversation: its share and its best search score; per message: its place (0 first, 1 last)."""
    words: dict[str, set[str]] = {}
    best_message: dict[str, float] = {}
    found: dict[str, float] = {}
    members: dict[str, set[int]] = {}
    for c in candidates:
        words.setdefault(c.conversation, set()).update(c.stems)
        message_share = scorer.share(scorer.message_stems[c.message])
        best_message[c.conversation] = max(best_message.get(c.conversation, 0.0), message_share)
        default = UNSCORED_SOURCE_SCORE if c.message < sources else 0.0
        found[c.conversation] = max(found.get(c.conversation, 0.0), _score(messages[c.message], default))
        members.setdefault(c.conversation, set()).add(c.message)
    shares = {key: (scorer.share(frozenset(w)) + best_message[key]) / 2 for key, w in words.items()}
    place: dict[int, float] = {}
    for indexes in members.values():
        ordered = sorted(indexes, key=lambda i: (messages[i].ts or "", i))
        for position, index in enumerate(ordered):
            place[index] = position / (len(ordered) - 1) if len(ordered) > 1 else -1.0
    return shares, found, place


def _rank(query: str, messages: Sequence[AnswerSource], sources: int) -> list[_Ranked] | None:
    """Every sentence left in, best first, with its score and its parts (own share, message share,
    conversation share, search score, usefulness); the first `sources` messages are sources, the
    rest context. None when no message has any words."""
    candidates = _candidates(messages)
    if not candidates:
        return None
    scorer = _Scorer(query, messages)
    shares, found, place = _conversations(scorer, messages, candidates, sources)
    scored: list[_Ranked] = []
    for candidate in candidates:
        own = scorer.share(candidate.stems)
        message = scorer.share(scorer.message_stems[candidate.message])
        around = shares[candidate.conversation]
        if _left_out(scorer, candidate, own, message, around):
            continue
        search = found[candidate.conversation]
        relevance = CONVERSATION_WEIGHT * around + RETRIEVAL_WEIGHT * search
        relevance += SENTENCE_WEIGHT * (own + MESSAGE_WEIGHT * message)
        useful = _usefulness(scorer, candidate, place[candidate.message], own)
        scored.append((relevance * useful, candidate, (own, message, around, search, useful)))
    scored.sort(key=lambda item: (-item[0], item[1].number, item[1].position))
    return scored


def build_extractive_answer(
    query: str,
    sources: Sequence[AnswerSource],
    context: Sequence[AnswerSource] = (),
    max_sentences: int = EXTRACTIVE_ANSWER_MAX_SENTENCES,
) -> str:
    """Answer `query` by quoting the source sentences that answer it, each cited `[N]`, one per line.

    `sources` are numbered `[1]..[n]`, `context` `[n+1]..` (together at most
    `MAX_EXTRACTIVE_SOURCES`). See the module docstring for the scoring. Returns
    `EXTRACTIVE_NO_SOURCES_TEXT` when no source has any words, `EXTRACTIVE_NO_ANSWER_TEXT` when none
    answers.

    Raises:
        ValueError: `max_sentences` is less than 1.
    """
    if max_sentences < 1:
        raise ValueError(f"max_sentences must be 1 or more, got {max_sentences}")
    scored = _rank(query, [*sources, *context][:MAX_EXTRACTIVE_SOURCES], len(sources))
    if scored is None:
        return EXTRACTIVE_NO_SOURCES_TEXT
    if not scored or scored[0][0] < MIN_ANSWER_SCORE:
        return EXTRACTIVE_NO_ANSWER_TEXT
    best = _pick([candidate for _, candidate, _parts in scored], max_sentences)
    return "\n".join(_quote(c.text, c.number) for c in best)
