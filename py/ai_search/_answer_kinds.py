"""What a question asks for, and which sentences offer it: a cause, a way, a number, a time, a name...

An answer to "why" gives a cause; to "how many", a number; to "who", a name; to "what did we
decide", a decision. `question_kinds` reads the kinds a question asks for from its wording, and
`sentence_kinds` the kinds a sentence offers, so the extractive answerer can prefer a sentence that
offers what was asked over one that merely repeats the question's words:

    >>> sorted(question_kinds("why did the failover take so long"))
    ['cause', 'duration']
    >>> sorted(sentence_kinds("patroni promoted pg-ledger-02 after 4m12s because the ttl is 30s"))
    ['cause', 'duration', 'quantity']
    >>> sorted(sentence_kinds("decided: carol merged the fix on Sep 17", names=frozenset({"carol"})))
    ['decision', 'method', 'person', 'time']

Both are tables of regular expressions over English wording (the demo's and most teams' chat
language); a question in another language asks for no kind, and its sentences are then ranked by
the words they share with it alone. The cues are broad on purpose: a kind only adds weight, it never
excludes a sentence.

Not every cue says as much: "because" or "root cause" gives a cause outright, "failing since Oct 1"
gives one less surely, and "only" or "never" (in the broad table) may give one. `kind_strengths`
grades what a sentence offers, `CUE_STRONG` (an explicit cue: a causal connective, a calendar date, a
"decision:", "the fix", "since" an event, a yes or a no), `CUE_MEDIUM` (a failure named, a clock
time or a day named relative to today), or `CUE_WEAK` (the broad table alone):

    >>> kind_strengths("root cause: the sessions keep 6x more keys alive")["cause"] == CUE_STRONG
    True
    >>> kind_strengths("the renew job has been failing since Oct 1")["cause"] == CUE_MEDIUM
    True
"""

from __future__ import annotations

import re
from typing import Final

from ._sentences import stem

__all__ = [
    "ANSWER_KINDS",
    "CUE_MEDIUM",
    "CUE_STRONG",
    "CUE_WEAK",
    "kind_strengths",
    "question_kinds",
    "sentence_kinds",
]

# How surely a sentence offers a kind (0..1), by the cue that offers it (see the module docstring).
CUE_STRONG: Final = 1.0
CUE_MEDIUM: Final = 0.6
CUE_WEAK: Final = 0.3

_I = re.IGNORECASE

# (kind, what in a question asks for it, what in a sentence offers it)
_TABLE: Final[tuple[tuple[str, str, str], ...]] = (
    (
        "cause",
        r"^\W*(why|how come)\b|\bwhat\s+(caused|causes|made|broke|went wrong|happened)\b|\b(reason|cause)s?\b"
        r"|\b(and|or|but|out|see|know|explain|understand|wonder)\s+why\b",
        r"\b(because|due to|caused|causes|thanks to|that's why|which is why|the reason|means|assumes?|"
        r"driven by|because of|only|doesn't|don't|didn't|isn't|wasn't|won't|"
        r"expired|stalled|rotated|kept|without|instead of|never|blip|timed out|timeout|failed to|"
        r"exception|no space left)\b|\b[a-z]+_exception\b|\bERR_[A-Z_]+\b|,\s*so\b"
        r"|\bso\s+(we|they|it|the|every|each|all|our)\b",
    ),
    (
        "method",
        r"\bhow\s+(did|do|does|can|could|should|was|were|is|are|to|would)\b(?!\s+(many|much|long|often))"
        r"(?!.*\b(affect|affected|impact|impacted)\b)"
        r"|\b(fix|fixed|solve|solved|resolve|resolved|workaround)\b"
        r"|\bwhat\s+(did|do|does|have|has|are|were|will)\s+(we|you|they|i)\s+(do|done|doing|change|changed)\b"
        r"|\bwhat\s+(changed|changes)\b",
        r"\b(fix|fixed|fixes|fixing|resolved|restart|restarted|restarting|roll(ed)? back|revert|reverted|"
        r"refresh|refreshes|refreshed|forcing|replaced|switched|merged|shipped|deployed|is out|is live|"
        r"added|upgraded|patched|allowlist|instead|workaround|one at a time|concurrently)\b"
        r"|\bnow\s+\w+s\b|\bby\s+\w+ing\b",
    ),
    (
        "amount",
        r"\bhow\s+much\b|\bwhat\s+(amount|cost|costs|price)\b|\b(savings?|spend|cost)\b",
        r"[$€£¥]\s?\d|\d\s?[$€£¥]|\b\d+(\.\d+)?\s?(k|m|%|percent|points?)(?![a-z0-9])|\b\d+(\.\d+)?x\b",
    ),
    (
        "duration",
        r"\bhow\s+(long|late|fast|slow)\b|\bso\s+long\b|\b(longest|shortest|delay)\b",
        r"\b\d+(\.\d+)?\s?(ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hrs?|hours?|days?|weeks?|months?)\b"
        r"|\b\d+m\d+s\b|\b(an?|one|two|three|half an?)\s+(second|minute|hour|day|week|month)s?\b",
    ),
    (
        "count",
        r"\bhow\s+many\b|\bnumber\s+of\b|\b(affect|affected|impact|impacted)\b",
        r"\b\d[\d,]*\s+(?!(ms|s|sec|seconds?|m|min|minutes?|h|hours?|days?|weeks?|months?|years?)\b)[a-z]",
    ),
    (
        "change",
        r"\b(improve|improved|increase|increased|grow|grew|rise|rose|drop|dropped|decrease|decreased|"
        r"fall|fell|go up|went up|go down|went down|faster|slower|better|worse)\b",
        r"[+±−]\s?\d|\bvs\.?\s|\bfrom\s+\S+\s+to\b|\b(up|down)\s+(by\s+)?[~$€£]?\d|\bdown\s+to\b"
        r"|\b\d+(\.\d+)?x\b|→",
    ),
    (
        "quantity",
        r"\bwhat\s+(percentage|share|number|level|size|rate|limits?)\b|\b(most|least|total)\b",
        r"\d",
    ),
    (
        "time",
        r"^\W*when\b|\bwhat\s+(time|day|date|week|month)\b|\b(by|until)\s+when\b|\b(deadline|holidays?)\b"
        r"|\b(and|or|but)\s+when\b",
        r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d|\b\d{1,2}:\d{2}\b|"
        r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tomorrow|yesterday|tonight|"
        r"january|february|march|april|june|july|august|september|october|november|december|"
        r"next week|this week|q[1-4])\b|\b\d{4}-\d{2}-\d{2}\b",
    ),
    (
        "person",
        r"^\W*(who|whom|whose)\b|\bwhich\s+(person|people|engineer|team|one of us)\b"
        r"|\b(and|or|but)\s+(by\s+)?(who|whom)\b",
        r"@\w+",
    ),
    (
        "decision",
        r"\b(decide|decided|decision|agree|agreed|plan|planned|policy|rule|say|said)\b"
        r"|^\W*(should|shall)\b|^\W*(are|will|do)\s+we\s+(going|buying|doing|moving|keeping)\b",
        r"\b(decided|decision|agreed|agrees|approved|go for it|do it|let's|no new|keep|keeps|stays?|must|"
        r"accepted|declined|confirmed)\b|^\W*(yes|no)\b",
    ),
    (
        "polar",
        r"^\W*(is|are|was|were|do|does|did|can|could|will|would|should|has|have|had)\b",
        r"^\W*(yes|no|nope|yep)\b",
    ),
    (
        "place",
        r"^\W*where\b",
        r"\b(at|in|on)\s+the\b|\b(floor|room|office|cabins?|hotel|alley|building|site|bucket|repo|wiki)\b",
    ),
)

ANSWER_KINDS: Final = tuple(kind for kind, _asks, _offers in _TABLE)
_ASKS: Final = tuple((kind, re.compile(asks, _I)) for kind, asks, _offers in _TABLE)
_OFFERS: Final = tuple((kind, re.compile(offers, _I)) for kind, _asks, offers in _TABLE)
_WORD: Final = re.compile(r"[^\W_]+")
# Kinds that a number offers: a clock time, a version or an id offers none of them.
_NUMBER_KINDS: Final = frozenset({"amount", "duration", "count", "quantity", "change"})
# Numbers that count nothing: clock times, dates, versions, ticket and PR ids. A sentence offers a
# quantity only with a digit left once these are taken out.
_NOT_A_QUANTITY: Final = re.compile(
    r"\b\d{1,2}:\d{2}\b|\b\d{4}-\d{2}-\d{2}\b|\bv\d+(\.\d+)*\b|#\d+|\b[A-Za-z]+[-_]\d+\b|\b\d+(\.\d+){2,}\b"
    r"|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b",
    re.IGNORECASE,
)


_MONTHS: Final = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_WEEKDAYS: Final = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
# (kind, strong cue, medium cue): what offers a kind outright, and what offers it less surely. The
# broad table above is the weakest grade of every kind.
_GRADED: Final[tuple[tuple[str, str, str], ...]] = (
    (
        "cause",
        r"\b(because|due to|caused by|root cause|(the|its|the real) (cause|reason)\s*(is|was|:)|reason (is|was)|"
        r"the real (bug|problem|issue|cause)|turns? out|turned out|that's why|which is why|this is why|"
        r"as a result|led to|leads to)\b|\b(is|was|are|were)\s+caused\b"
        r"|\bsince\s+(?:(?:the|our|their|his|her|its|we|they|it)\s+(?!(?:morning|afternoon|evening|night|"
        r"weekend|week|month|year|start|beginning|day)\b)\w|v?\d+\.\d+)",
        r"\b(fails?|failed|failing|errors?|errors out|exception|timed out|timeout|refused|refuses|"
        r"revoked|revokes|rotated|expired|no longer|runs out|ran out|gives up|gave up|"
        r"too (slow|many|much|small|big)|over the limit|stalled|sized for|"
        r"permission denied|no ack)\b|,\s*so\b|\bERR_[A-Z_]+\b|\b[a-z]+_exception\b|\b[A-Z][a-z]+Exception\b",
    ),
    (
        "time",
        rf"\b{_MONTHS}\s+\d{{1,2}}\b|\b\d{{1,2}}(st|nd|rd|th)?\s+{_MONTHS}(?![a-z])|\b\d{{4}}-\d{{2}}-\d{{2}}\b"
        rf"|\b(on|by|from|until|since|before|after|next|this|last)\s+{_WEEKDAYS}\b"
        r"|\b(in|by|from|until|since|before|after)\s+(january|february|march|april|june|july|august|"
        r"september|october|november|december)\b",
        rf"\b\d{{1,2}}:\d{{2}}\b|\b{_WEEKDAYS}\b|\b(today|tomorrow|yesterday|tonight|this morning|"
        r"last night|midnight|noon|next week|this week|next month)\b|\bq[1-4]\b",
    ),
    (
        "decision",
        r"^\W*(decision|decided|final|approved|agreed|ok(ay)?\s*[:,]|yes\b|no\b)|\b(decision|decided|"
        r"we decided|agreed|approved|going with|go with|final:|from now on|going forward)\b",
        r"\b(let's|we'll|we will|we won't|must|no more)\b",
    ),
    (
        "method",
        r"\b(the fix|real fix|fix for|fix:|fixed (it|by|the|in)|resolved by|workaround|the plan)\b"
        r"|\(1\)|^\W*1[.)]\s",
        r"\b(fixed|patched|restarted|rolled back|reverted|replaced|switched|added|raised|lowered|"
        r"increased|bumped|moved|set up|enabled|disabled|pinned|deployed|shipped|merged)\b",
    ),
    ("polar", r"^\W*(yes|no|nope|yep|yeah)\b", r"\b(not|never|none|nothing)\b"),
)
_STRONG: Final = tuple((kind, re.compile(strong, _I)) for kind, strong, _medium in _GRADED)
_MEDIUM: Final = tuple((kind, re.compile(medium, _I)) for kind, _strong, medium in _GRADED)


def kind_strengths(
    sentence: str, names: frozenset[str] = frozenset(), ignore: frozenset[str] = frozenset()
) -> dict[str, float]:
    """What `sentence` offers, each kind with how surely (`CUE_STRONG`, `CUE_MEDIUM` or `CUE_WEAK`); the
    question's own words (`ignore`, stems) offer nothing, as in `sentence_kinds`."""
    graded = {kind: CUE_WEAK for kind in sentence_kinds(sentence, names, ignore)}
    masked = _masked(sentence, ignore)
    for table, strength in ((_MEDIUM, CUE_MEDIUM), (_STRONG, CUE_STRONG)):
        for kind, pattern in table:
            if pattern.search(masked):
                graded[kind] = max(graded.get(kind, 0.0), strength)
    # A proposal or a fix that names a failure ("let's alert when a job has failed 3 times", "the fix
    # for the real problem") says what to do about it more surely than why it happened.
    if "cause" in graded and max(graded.get("decision", 0.0), graded.get("method", 0.0)) >= CUE_MEDIUM:
        graded["cause"] = {CUE_STRONG: CUE_MEDIUM, CUE_MEDIUM: CUE_WEAK}.get(graded["cause"], CUE_WEAK)
    return graded


def _masked(sentence: str, ignore: frozenset[str]) -> str:
    if not ignore:
        return sentence
    return _WORD.sub(lambda m: "qq" if stem(m.group(0).casefold()) in ignore else m.group(0), sentence)


def question_kinds(question: str) -> frozenset[str]:
    """The kinds of answer `question` asks for (empty when its wording names none)."""
    return frozenset(kind for kind, pattern in _ASKS if pattern.search(question))


def sentence_kinds(
    sentence: str, names: frozenset[str] = frozenset(), ignore: frozenset[str] = frozenset()
) -> frozenset[str]:
    """The kinds of answer `sentence` offers; `names` (case-folded) are people it may name.

    Words whose stem is in `ignore` (the question's own words) offer nothing: "the certificate
    expired" does not give the cause of "why did the certificate expire", nor "SRE-14" a number.
    """
    sentence = _masked(sentence, ignore)
    kinds = {kind for kind, pattern in _OFFERS if pattern.search(sentence)}
    if kinds & _NUMBER_KINDS:
        counted = _NOT_A_QUANTITY.sub(" ", sentence)
        kinds -= {kind for kind, pattern in _OFFERS if kind in _NUMBER_KINDS and not pattern.search(counted)}
    if names and any(word.casefold() in names for word in _WORD.findall(sentence)):
        kinds.add("person")
    return frozenset(kinds)
