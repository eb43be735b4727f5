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

**What is asked decides what is quoted, and how.** The kinds of answer a question asks for come
from its wording (`_answer_kinds.question_kinds`), and each line is written for them:

- *who*: the sentence that names the person who did or decided it, led by the name: the person it
  names, or its author when it names nobody and its author is the one who acted (the first person,
  a decision, chat's subjectless "fixed it, PR #2291"); a sentence that says who in other words
  ("the contractor doing the exports") is quoted as it is;
- *when*: the sentence that says when, led by the date written out ("Feb 3, 2027") when the sentence
  gives only a clock time or a relative day ("at midnight", "yesterday": resolved against the
  message's own date, UTC);
- *why*: the cause ("because", "root cause", "the real bug", "due to", "since"...), wherever it sits
  in the conversation; *how* and *what*: the steps, the fix or the decision; *yes or no*: the
  decision, the yes or the no;
- a *keyword query* (no question at all: "postgres failover"): a summary of what the results say,
  the best sentence that holds its words (`KEYWORD_SENTENCE_WEIGHT`) of each of the best
  `KEYWORD_SUMMARY_CONVERSATIONS` conversations, each led by when and by whom ("Sep 21, 2026, Bob
  Lindqvist — …"); it says the sources do not answer only when no sentence holds any of its words;
- *nothing answers*: the answer says so (`EXTRACTIVE_NO_ANSWER_TEXT`) and shows the closest
  `EXTRACTIVE_CLOSEST_SENTENCES` sentences, led by when and by whom, so the reader sees what was
  found and judges for themselves.

Every lead is made of the cited message's own date, author and words, so the citation check
(`_grounding`: a source's date and author count as its words) checks each line like any other.

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
4. *Usefulness* multiplies the sum: `1 + KIND_BONUS` x how surely (`_answer_kinds.kind_strengths`:
   an explicit cue counts fully, a likely one `CUE_MEDIUM`, a broad one `CUE_WEAK`) the sentence offers each
   kind the question asks for, judged without the question's own words ("the certificate expired"
   gives no cause for "why did it expire"); a person for "who" is one the sentence names (an author
   of the conversation, by username or name, an @mention, a name's possessive) or, less surely, its
   author acting in the first person or deciding; `REPLY_BONUS` for a reply to a question of the same
   kind asked in its conversation ("who made the gist?" -> the next message); `INFO_BONUS` per other
   number, date, name or decision (at most `MAX_INFO_FEATURES`); up to `POSITION_BONUS` late in a
   conversation for a fix, a decision or a yes/no, which settle it. For a "why" or "how" question,
   a report of the problem (the opening message of a conversation, or a sentence holding
   `RESTATE_MIN_SHARE` of the question's words) scores `OPENER_FACTOR` of that unless it says why or
   how itself.
5. *Left out*: questions (the asker's words are not the answer), sentences that restate the question
   (holding `RESTATE_MIN_SHARE` of it and adding at most `RESTATE_MAX_NEW_WORDS` words, unless the
   question is a yes/no one, which the statement it turns into answers: "SRE-14 accepted!", a "who" or
   a "when", which the statement answers by its author or its date, or a keyword query), sentences
   of fewer than `MIN_CONTENT_WORDS` content words ("on it 👍"), and sentences of messages holding no
   question word whose conversation holds less than `MIN_CONTEXT_SHARE` of the question.
6. Up to `max_sentences` in score order (usefulness, not search rank), one per message while others
   remain; ties go to the earlier source, then the earlier sentence. One per line, `<sentence> [N]`,
   with its lead.
7. When no sentence is left, or the best scores below `MIN_ANSWER_SCORE` (a weak match on every
   count), the answer says plainly that the sources do not answer; a keyword query is summarised
   unless no sentence holds any of its words.

The cue tables are English and general (connectives, dates, decision words), not a set's wording.
They were written for issue 36 from the form of questions; `bench/bench_answer_quality.py` measures
them per kind of question on the demo's judged questions (which the weights were first chosen on)
and on the Halden workspace's, which nothing here was tuned on. A `[N]` written inside a quoted
message is rewritten to `(N)`, so quoted text can never pass for a citation of another source.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from ._answer_kinds import CUE_MEDIUM, CUE_STRONG, CUE_WEAK, kind_strengths, question_kinds
from ._answers import AnswerSource
from ._constants import MAX_SEARCH_ANSWER_TEXT_LENGTH
from ._grounding import RELATIVE_DAYS, denied_stems
from ._sentences import WEAK_WORDS, content_stems, is_question, split_sentences, tokens

__all__ = [
    "EXTRACTIVE_ANSWER_MAX_SENTENCES",
    "EXTRACTIVE_CLOSEST_SENTENCES",
    "EXTRACTIVE_CLOSEST_TEXT",
    "EXTRACTIVE_NO_ANSWER_TEXT",
    "EXTRACTIVE_NO_SOURCES_TEXT",
    "EXTRACTIVE_SENTENCE_MAX_CHARS",
    "KEYWORD_SUMMARY_CONVERSATIONS",
    "MAX_EXTRACTIVE_SOURCES",
    "build_extractive_answer",
    "is_keyword_query",
]

# Sentences quoted in one extractive answer (sentences).
EXTRACTIVE_ANSWER_MAX_SENTENCES = 3
# Characters of one quoted sentence; a longer one is cut at a word boundary and ends with "…".
EXTRACTIVE_SENTENCE_MAX_CHARS = 300
# Sources and context messages read in all (messages): 20 sources and their conversations.
MAX_EXTRACTIVE_SOURCES = 200
# Sentences shown under "the sources do not answer", closest first (sentences).
EXTRACTIVE_CLOSEST_SENTENCES = 2
# Conversations a keyword query's summary quotes, one sentence each (conversations).
KEYWORD_SUMMARY_CONVERSATIONS = 3

# Conversation: CONVERSATION_WEIGHT x its share of the question + RETRIEVAL_WEIGHT x its best search score.
CONVERSATION_WEIGHT: Final = 0.5
RETRIEVAL_WEIGHT: Final = 2.0
# Sentence: SENTENCE_WEIGHT x (its share of the question + MESSAGE_WEIGHT x its message's share);
# EXPLAINING_SENTENCE_WEIGHT instead for a "why" or a "how": a cause or a fix rarely repeats the
# question's words, the report of the problem does.
# KEYWORD_SENTENCE_WEIGHT for a keyword query: a summary quotes what each result says of its words.
SENTENCE_WEIGHT: Final = 0.5
EXPLAINING_SENTENCE_WEIGHT: Final = 0.25
KEYWORD_SENTENCE_WEIGHT: Final = 1.0
MESSAGE_WEIGHT: Final = 0.5
# Usefulness: 1 + KIND_BONUS x how surely each kind asked for is offered, + INFO_BONUS per feature.
KIND_BONUS: Final = 0.5
INFO_BONUS: Final = 0.05
MAX_INFO_FEATURES: Final = 3
_INFO_KINDS: Final = frozenset({"amount", "duration", "count", "time", "person", "decision"})
# Usefulness of a reply to a question of the kind asked, asked in its own conversation.
REPLY_BONUS: Final = 0.3
# For a keyword query, which asks for no kind: usefulness per kind a sentence offers at least
# likely (a cause, a fix, a decision, a date, a name, a figure), up to MAX_INFO_FEATURES kinds.
KEYWORD_KIND_BONUS: Final = 0.2
# The kinds a question asks for that each get a sentence of their own, when a sentence offers them
# at least likely ("when did it expire and why": a date, and a cause).
_COVERED_KINDS: Final = ("person", "time", "cause", "method", "decision", "amount", "count", "duration")
# Up to this much usefulness late in a conversation, for what settles one (see the module docstring).
POSITION_BONUS: Final = 0.2
_LATE_KINDS: Final = frozenset({"method", "decision", "polar"})
# Kinds a statement of the question's own words answers (with its author, its date, its truth).
_STATED_KINDS: Final = frozenset({"polar", "person", "time"})
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
MIN_ANSWER_SCORE: Final = 1.4

EXTRACTIVE_NO_ANSWER_TEXT = "The source messages do not answer this question."
EXTRACTIVE_NO_SOURCES_TEXT = "There are no source messages to answer from."
EXTRACTIVE_CLOSEST_TEXT = "The closest messages say:"
# Between a line's lead (a name, a date) and its quote.
_LEAD_SEPARATOR: Final = " — "

_BRACKETED_NUMBER: Final = re.compile(r"\[([0-9]+)\]")
# A question's first words that make it one, even without "?" ("who won the chess tournament").
_QUESTION_START: Final = re.compile(
    r"^\W*(?:(?:and|so|but|then|also|ok|okay)\W+)?(?:(?:for|to|by|from|with|in|on|at|since|until)\s+)?"
    r"(who|whom|whose|what|when|where|which|why|how|is|are|was|were|do|does|did|can|could|will|would|"
    r"should|shall|has|have|had|any|anyone|tell me)\b",
    re.IGNORECASE,
)
# A sentence whose author is the one who acts or decides, though it names nobody: the first person,
# a decision, or chat's subjectless report of what was done ("fixed it, PR #2291").
_AGENT: Final = re.compile(
    r"\b(i|i'll|i'm|i've|i'd|my|me|we'll)\b|^\W*(decision|decided|final|approved|agreed|ok(ay)?\s*[:,])"
    r"|^\W*(fixed|fix:|merged|shipped|deployed|restarted|issued|added|rolled|reverted|wrote|built|set up|"
    r"switched|moved|raised|lowered|patched|implemented|resized|sent|created|updated|done)\b",
    re.IGNORECASE,
)
# Words around a person's name that make them the one who acts: "by carol", "decision from ingrid",
# "captain: tomas"; "carol fixed", "tomas did it", "jonah owns the alert", "priya will".
_AGENT_BEFORE: Final = frozenset({"by", "from", "captain", "owner", "with", "and"})
_AGENT_AFTER_TEXT = """
    did does will would is was has had owns own took takes wrote writes made makes said says decided
    approved agreed fixed found set sets ll picks picked leads led runs ran handles handled
"""
_AGENT_AFTER: Final = frozenset(_AGENT_AFTER_TEXT.split())
# A name's possessive, capitalised ("Erik's developer account"): a person though no author.
_POSSESSIVE: Final = re.compile(r"(?<![\w.])([A-Z][a-z]{1,20})'s\b")
_MENTION: Final = re.compile(r"@([\w.-]+)")
# What a relative day becomes in a "when" answer's date (days from the message).
_RELATIVE_WORDS: Final = tuple(sorted(RELATIVE_DAYS.items()))


@dataclass(frozen=True, slots=True)
class _Candidate:
    number: int  # 1-based, as cited
    position: int  # index of the sentence within its message
    text: str
    stems: frozenset[str]
    message: int  # index into the messages list
    conversation: str


def is_keyword_query(query: str) -> bool:
    """Whether `query` is words to search for rather than a question ("postgres failover",
    "ERR_POOL_TIMEOUT"): no question mark and no question word or auxiliary leading it."""
    return not is_question(query) and not _QUESTION_START.search(query)


def _clip(sentence: str) -> str:
    if len(sentence) <= EXTRACTIVE_SENTENCE_MAX_CHARS:
        return sentence
    cut = sentence[: EXTRACTIVE_SENTENCE_MAX_CHARS - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip() + "…"


def _quote(sentence: str, number: int, lead: str = "") -> str:
    defused = _BRACKETED_NUMBER.sub(r"(\1)", _clip(sentence))
    return f"{lead}{_LEAD_SEPARATOR if lead else ''}{defused} [{number}]"


def _score(source: AnswerSource, default: float) -> float:
    score = source.score
    return min(1.0, max(0.0, score)) if score is not None and math.isfinite(score) else default


def _moment(source: AnswerSource) -> datetime | None:
    if not source.ts:
        return None
    try:
        return datetime.fromisoformat(source.ts.replace("Z", "+00:00"))
    except ValueError:
        return None


def _date_text(moment: datetime) -> str:
    """A date as people write it, the way the citation check reads a source's date: "Feb 3, 2027"."""
    return f"{moment:%b} {moment.day}, {moment.year}"


def _author(source: AnswerSource) -> str:
    return (source.author_name or source.username or "").strip()


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
        self.keyword = is_keyword_query(query)
        # The people of these messages, by every word they go by (username, each word of their
        # name), to the name a line leads with.
        self.people: dict[str, str] = {}
        for m in messages:
            if not m.username:
                continue
            name = _author(m)
            for word in {m.username.casefold(), *tokens(m.author_name or "")}:
                if len(word) > 2 and word not in self.question:
                    self.people.setdefault(word, name)
        self.names = frozenset(self.people)

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


def _named(scorer: _Scorer, text: str) -> tuple[str, bool] | None:
    """The person a sentence names (an author of these messages, an @mention, a name's possessive),
    and whether it names them as the one who acts: first, after "by" or "from", or before a verb
    ("tomas did it", "jonah owns the alert"), not as the one acted on ("pages go to alice")."""
    words = tokens(text)
    for index, word in enumerate(words):
        if word in scorer.people:
            before = words[index - 1] if index else ""
            after = words[index + 1] if index + 1 < len(words) else ""
            acts = not before or before in _AGENT_BEFORE or after in _AGENT_AFTER or after.endswith("ed")
            return scorer.people[word], acts
    mention = _MENTION.search(text)
    if mention:
        return mention.group(1), True
    possessive = _POSSESSIVE.search(text)
    return (possessive.group(1), True) if possessive and possessive.start() > 0 else None


def _offers(scorer: _Scorer, candidate: _Candidate) -> dict[str, float]:
    offered = kind_strengths(candidate.text, scorer.names, scorer.question)
    # A failure named in the question's own words is the problem reported ("webhook deliveries
    # failing since 00:00"); named of something else, it may be its cause ("the renew job failing").
    if offered.get("cause") == CUE_MEDIUM and candidate.stems & scorer.question:
        offered["cause"] = CUE_WEAK
    if "person" in scorer.kinds:
        # A person named outright, or the author acting in the first person or deciding.
        named = _named(scorer, candidate.text)
        if named is not None and named[1]:
            offered["person"] = CUE_STRONG
        elif named is not None or _AGENT.search(candidate.text):
            offered["person"] = max(offered.get("person", 0.0), CUE_MEDIUM)
    # A yes or no in other words: the sentence denies a word of the question ("no real money").
    if "polar" in scorer.kinds and denied_stems(candidate.text) & scorer.question:
        offered["polar"] = max(offered.get("polar", 0.0), CUE_MEDIUM)
    return offered


def _usefulness(
    scorer: _Scorer,
    candidate: _Candidate,
    place: float,
    shares: tuple[float, float],
    replies_to: frozenset[str],
) -> float:
    """See the module docstring, step 4; `place` is 0 for a conversation's first message, 1 for its
    last, -1 for a message alone; `shares` the question's share in the sentence and in its message;
    `replies_to` the kinds the message before it in its conversation asked for."""
    own, message = shares
    offered = _offers(scorer, candidate)
    asked = scorer.kinds
    # A "yes" or a "no" answers a question only as a reply to one ("no blockers" in a standup is none).
    if offered.get("polar") == CUE_STRONG and not replies_to:
        offered["polar"] = CUE_WEAK
    useful = 1.0 + KIND_BONUS * math.fsum(offered.get(kind, 0.0) for kind in sorted(asked))
    if replies_to & asked:
        useful += REPLY_BONUS
    if asked & _LATE_KINDS and not asked & _STATED_KINDS and place > 0.0:
        useful += POSITION_BONUS * place
    useful += INFO_BONUS * min(MAX_INFO_FEATURES, len(offered.keys() & _INFO_KINDS))
    if scorer.keyword:
        telling = sum(1 for kind in _COVERED_KINDS if offered.get(kind, 0.0) >= CUE_MEDIUM)
        useful += KEYWORD_KIND_BONUS * min(MAX_INFO_FEATURES, telling)
    # The opening message, or a sentence made of the question's own words, reports the problem; it
    # answers a "why" or "how" only by saying why or how.
    # (A "who" or a "when" is answered by the statement of what was done, however it restates.)
    asks_why = asked & _EXPLAINING_KINDS if not asked & _STATED_KINDS else frozenset()
    reports = place == 0.0 or own >= RESTATE_MIN_SHARE or message >= RESTATE_MIN_SHARE
    # A fix verb names a fix; a failure word names the symptom a report is about, not its cause.
    explains = offered.get("method", 0.0) >= CUE_MEDIUM if "method" in asks_why else False
    explains = explains or ("cause" in asks_why and offered.get("cause", 0.0) >= CUE_STRONG)
    return useful * (OPENER_FACTOR if asks_why and reports and not explains else 1.0)


def _left_out(scorer: _Scorer, candidate: _Candidate, own: float, message: float, context: float) -> bool:
    if is_question(candidate.text) or len(candidate.stems) < MIN_CONTENT_WORDS:
        return True
    restates = own >= RESTATE_MIN_SHARE and len(candidate.stems - scorer.question) <= RESTATE_MAX_NEW_WORDS
    # A yes-or-no question is answered by the statement it turns into ("SRE-14 accepted!"), a "who"
    # or a "when" by the statement of what was done, with its author or its date ("restarted the
    # pods"); a keyword query asks for what the results say about its words, which may be all.
    if restates and not scorer.kinds & _STATED_KINDS and not scorer.keyword:
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


def _cover(
    scorer: _Scorer, ranked: Sequence[_Candidate], picked: list[_Candidate], max_sentences: int
) -> list[_Candidate]:
    """`picked` (best first), with the best sentence offering each kind the question asks for that
    none of them offers yet ("when ... and why": a date, then a cause), within `max_sentences`."""
    chosen = list(picked[:1])
    offers = {id(c): _offers(scorer, c) for c in ranked}

    def gives(candidate: _Candidate, kind: str) -> bool:
        # A time answers "when" when it is said of what was asked about (a date of the question's
        # own words), not of some other event of the conversation ("failing since Oct 1").
        about = kind != "time" or bool(candidate.stems & scorer.question)
        return about and offers[id(candidate)].get(kind, 0.0) >= CUE_MEDIUM

    for kind in _COVERED_KINDS:
        if kind not in scorer.kinds or len(chosen) >= max_sentences or any(gives(c, kind) for c in chosen):
            continue
        offering = [c for c in ranked if c not in chosen and gives(c, kind)]
        if kind == "time":
            # The date of the very thing asked about: the most of the question's words, then rank.
            offering.sort(key=lambda c: -scorer.share(c.stems))
        if offering:
            chosen.append(offering[0])
    for candidate in picked:
        if len(chosen) < max_sentences and candidate not in chosen:
            chosen.append(candidate)
    return chosen


def _pick_conversations(ranked: Sequence[_Candidate], count: int) -> list[_Candidate]:
    """The best sentence of each of the best `count` conversations, best first; fewer conversations
    than that give more of their messages' sentences (one per message first)."""
    picked: list[_Candidate] = []
    seen: set[str] = set()
    for candidate in ranked:
        if candidate.conversation not in seen and len(picked) < count:
            picked.append(candidate)
            seen.add(candidate.conversation)
    rest = [c for c in _pick(ranked, count) if c not in picked]
    return picked + rest[: count - len(picked)]


_Ranked = tuple[float, _Candidate, tuple[float, ...]]


@dataclass(frozen=True, slots=True)
class _Conversations:
    """Per conversation: its share and best search score; per message: its place (0 first, 1 last)
    and the kinds asked by the question just before it in its conversation."""

    shares: dict[str, float]
    found: dict[str, float]
    place: dict[int, float]
    replies_to: dict[int, frozenset[str]]


def _conversations(
    scorer: _Scorer, messages: Sequence[AnswerSource], candidates: Sequence[_Candidate], sources: int
) -> _Conversations:
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
    replies_to: dict[int, frozenset[str]] = {}
    for indexes in members.values():
        ordered = sorted(indexes, key=lambda i: (messages[i].ts or "", i))
        for position, index in enumerate(ordered):
            place[index] = position / (len(ordered) - 1) if len(ordered) > 1 else -1.0
            if position:
                replies_to[index] = _asks(messages[ordered[position - 1]].text)
    return _Conversations(shares, found, place, replies_to)


def _asks(text: str) -> frozenset[str]:
    """The kinds of answer the questions of a message ask for ("who made the gist?": a person)."""
    asked: set[str] = set()
    for sentence in split_sentences(text[:MAX_SEARCH_ANSWER_TEXT_LENGTH]):
        if is_question(sentence.text):
            asked |= question_kinds(sentence.text)
    return frozenset(asked)


def _rank(query: str, messages: Sequence[AnswerSource], sources: int) -> tuple[_Scorer, list[_Ranked]] | None:
    """Every sentence left in, best first, with its score and its parts (own share, message share,
    conversation share, search score, usefulness); the first `sources` messages are sources, the
    rest context. None when no message has any words."""
    candidates = _candidates(messages)
    if not candidates:
        return None
    scorer = _Scorer(query, messages)
    around = _conversations(scorer, messages, candidates, sources)
    scored: list[_Ranked] = []
    for candidate in candidates:
        own = scorer.share(candidate.stems)
        message = scorer.share(scorer.message_stems[candidate.message])
        conversation = around.shares[candidate.conversation]
        if _left_out(scorer, candidate, own, message, conversation):
            continue
        search = around.found[candidate.conversation]
        relevance = CONVERSATION_WEIGHT * conversation + RETRIEVAL_WEIGHT * search
        weight = SENTENCE_WEIGHT
        if scorer.keyword:
            weight = KEYWORD_SENTENCE_WEIGHT
        elif scorer.kinds & _EXPLAINING_KINDS and not scorer.kinds & _STATED_KINDS:
            weight = EXPLAINING_SENTENCE_WEIGHT
        relevance += weight * (own + MESSAGE_WEIGHT * message)
        replies_to = around.replies_to.get(candidate.message, frozenset())
        place = around.place[candidate.message]
        useful = _usefulness(scorer, candidate, place, (own, message), replies_to)
        scored.append((relevance * useful, candidate, (own, message, conversation, search, useful)))
    scored.sort(key=lambda item: (-item[0], item[1].number, item[1].position))
    return scorer, scored


def _by_search(messages: Sequence[AnswerSource], sources: int) -> list[_Candidate]:
    """The sources' sentences that say something (no question, enough words), best search score
    first: the closest ones when none shares a word with the question. A context message is found
    by nothing of its own, so none is among them."""
    kept = [
        c
        for c in _candidates(messages[:sources])
        if not is_question(c.text) and len(c.stems) >= MIN_CONTENT_WORDS
    ]
    return sorted(
        kept, key=lambda c: (-_score(messages[c.message], UNSCORED_SOURCE_SCORE), c.number, c.position)
    )


def _attribution(source: AnswerSource) -> str:
    """When and by whom a message was written: "Sep 21, 2026, Bob Lindqvist"."""
    moment = _moment(source)
    parts = [_date_text(moment) if moment is not None else "", _author(source)]
    return ", ".join(part for part in parts if part)


def _when(source: AnswerSource, text: str) -> str:
    """The date a sentence speaks of, written out, unless it writes one itself: its message's date,
    moved by the relative day it names ("yesterday")."""
    moment = _moment(source)
    if moment is None or kind_strengths(text).get("time", 0.0) >= CUE_STRONG:
        return ""
    said = set(tokens(text))
    offset = next((days for word, days in _RELATIVE_WORDS if word in said and days), 0)
    return _date_text(moment + timedelta(days=offset))


def _lead(scorer: _Scorer, candidate: _Candidate, source: AnswerSource) -> str:
    """What a line of an answer to this question starts with (see the module docstring)."""
    if "person" in scorer.kinds:
        # The person it names, or its author when the author is the one who acted; a sentence that
        # says who in other words ("the contractor doing the exports") is led by no name.
        named = _named(scorer, candidate.text)
        if named is not None and named[1]:
            return named[0]
        if _AGENT.search(candidate.text):
            return _author(source)
        return named[0] if named is not None else ""
    if "time" in scorer.kinds:
        return _when(source, candidate.text)
    return ""


def build_extractive_answer(
    query: str,
    sources: Sequence[AnswerSource],
    context: Sequence[AnswerSource] = (),
    max_sentences: int = EXTRACTIVE_ANSWER_MAX_SENTENCES,
) -> str:
    """Answer `query` by quoting the source sentences that answer it, each cited `[N]`, one per line.

    `sources` are numbered `[1]..[n]`, `context` `[n+1]..` (together at most
    `MAX_EXTRACTIVE_SOURCES`). See the module docstring for the scoring and the lines. Returns
    `EXTRACTIVE_NO_SOURCES_TEXT` when no source has any words, `EXTRACTIVE_NO_ANSWER_TEXT` (and the
    closest sentences) when none answers.

    Raises:
        ValueError: `max_sentences` is less than 1.
    """
    if max_sentences < 1:
        raise ValueError(f"max_sentences must be 1 or more, got {max_sentences}")
    messages = [*sources, *context][:MAX_EXTRACTIVE_SOURCES]
    ranked = _rank(query, messages, len(sources))
    if ranked is None:
        return EXTRACTIVE_NO_SOURCES_TEXT
    scorer, scored = ranked
    order = [candidate for _, candidate, _parts in scored]
    saying = [candidate for _, candidate, parts in scored if parts[0] > 0.0]
    if scorer.keyword and order:
        # A keyword query: what the best conversations say of its words (or, when none says them,
        # what the conversations the search found say), when and by whom.
        summary = _pick_conversations(saying or order, min(max_sentences, KEYWORD_SUMMARY_CONVERSATIONS))
        return "\n".join(_quote(c.text, c.number, _attribution(messages[c.message])) for c in summary)
    if not scored or scored[0][0] < MIN_ANSWER_SCORE:
        closest = _pick(order or _by_search(messages, len(sources)), EXTRACTIVE_CLOSEST_SENTENCES)
        lines = [_quote(c.text, c.number, _attribution(messages[c.message])) for c in closest]
        head = (
            f"{EXTRACTIVE_NO_ANSWER_TEXT} {EXTRACTIVE_CLOSEST_TEXT}" if lines else EXTRACTIVE_NO_ANSWER_TEXT
        )
        return "\n".join([head, *lines])
    best = _cover(scorer, order, _pick(order, max_sentences), max_sentences)
    return "\n".join(_quote(c.text, c.number, _lead(scorer, c, messages[c.message])) for c in best)
