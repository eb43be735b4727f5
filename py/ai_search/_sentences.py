"""Sentences and the words that carry their meaning: what extractive answers and the citation check compare.

Both sides of an answer are compared word by word: the question with the source sentences (to pick
the ones that answer, `_extractive`), and each answer sentence with the sentences of the sources it
cites (to find the span that supports it, `_grounding`). This module holds what they share, so that
a word means the same thing on both sides:

    >>> [s.text for s in split_sentences("Rolled back at 10:05. Why?\\nAll green again!")]
    ['Rolled back at 10:05.', 'Why?', 'All green again!']
    >>> sorted(content_stems("The deploys failed because the disk was full"))
    ['deploy', 'disk', 'fail', 'full']
    >>> is_question("why didn't the pool recover on its own")
    True

- **Sentences** end at a line break, or after `.`, `!`, `?` or `…` followed by whitespace. Each keeps
  its `[start, end)` code-point offsets in the text it came from, so a supporting span can be shown
  highlighted in the message.
- **Tokens** are runs of letters and digits after NFKC and case folding (`v2.14.1` gives `v2`, `14`,
  `1`; `ERR_CONN_RESET` gives three tokens).
- **Stems** fold the commonest English endings (`-ing`, `-ed`, `-es`, `-s`, a final `-e`), so
  "failed", "failing" and "fails" meet at "fail", and some thirty irregular verbs ("led" meets
  "leading", "found" meets "find"). The folding never leaves fewer than three letters
  and leaves digits alone. It is deliberately small: words of other languages mostly keep their form
  and match only themselves, which is what the plain token comparison did before.
- **Content stems** are the stems of tokens that are not stop words: the words that name something.
  Chinese and Japanese are written without spaces, so a run of their characters is read as its pairs
  of characters (`钢网` in `新的钢网` is the pair `钢网`; one character alone is itself), as the
  keyword search reads them.
- **Questions**: a sentence that ends with `?` (before any closing emoji or brackets), or that asks
  with a question word followed by an auxiliary ("why did", "how do", "what is"), even without the
  mark, as chat often leaves it out.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final

__all__ = [
    "STOP_WORDS",
    "WEAK_WORDS",
    "Sentence",
    "content_stems",
    "is_question",
    "split_sentences",
    "stem",
    "tokens",
]

# Common English words that name no topic; matching them would favour long, chatty sentences.
_STOP_WORDS_TEXT = """
    a about above after again against all am an and any are as at be been before being below between
    both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more
    most my myself no nor not now of off on once only or other our ours ourselves out over own same
    she should so some such than that the their theirs them themselves then there these they this
    those through to too under until up very was we were what when where which while who whom why
    will with would you your yours yourself yourselves s t don doesn didn isn wasn aren couldn won
    because much many
    anyone anything someone something tell know please get got let lets us ll ve re d m
"""
STOP_WORDS: Final = frozenset(_STOP_WORDS_TEXT.split())

_BREAK: Final = re.compile(r"(?<=[.!?…])\s+|\s*\n\s*")
_TOKEN: Final = re.compile(r"[^\W_]+")
# English irregular verb forms, folded to the stem of their base form ("led" meets "leading").
_IRREGULAR: Final = {
    form: base
    for base, forms in {
        "lead": "led",
        "tak": "took taken",
        "mak": "made",
        "go": "went gone",
        "find": "found",
        "pay": "paid",
        "send": "sent",
        "build": "built",
        "break": "broke broken",
        "run": "ran",
        "say": "said",
        "think": "thought",
        "keep": "kept",
        "leav": "left",
        "los": "lost",
        "begin": "began begun",
        "choos": "chose chosen",
        "giv": "gave given",
        "know": "knew known",
        "meet": "met",
        "spend": "spent",
        "tell": "told",
        "writ": "wrote written",
        "win": "won",
        "buy": "bought",
        "bring": "brought",
        "catch": "caught",
        "hold": "held",
        "fall": "fell fallen",
        "ris": "rose risen",
        "shut": "shut",
        "sell": "sold",
        "teach": "taught",
        "understand": "understood",
    }.items()
    for form in forms.split()
}
# Endings folded by `stem`, tried in this order; the first that leaves 3+ letters wins.
_ENDINGS: Final = ("ing", "ed", "es", "s", "e")
# Shortest stem `stem` leaves (characters).
_MIN_STEM_CHARS: Final = 3
# Trailing characters a question mark may hide behind: spaces, brackets, quotes, emoji, dots.
_TRAILING: Final = re.compile(r"[\s)\]\"'»”’.…\U0001F300-\U0001FAFF\u2600-\u27BF\uFE0F]+$")
_QUESTION_WORDS: Final = "why|how|what|who|when|where|which|whose"
_AUXILIARIES: Final = (
    "did|do|does|is|are|was|were|can|could|should|would|will|has|have|had|didn't|doesn't|don't|isn't|"
    "wasn't|aren't|weren't|won't|can't|couldn't|shouldn't|come|long|many|much"
)
_ASKS: Final = re.compile(rf"\b(?:{_QUESTION_WORDS})\s+(?:{_AUXILIARIES})\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence of a text: its words (trimmed) and where they sit, `text[start:end]`."""

    text: str
    start: int
    end: int


def split_sentences(text: str) -> list[Sentence]:
    """The sentences of `text` in order, each trimmed, with its offsets; blank pieces are left out."""
    out = []
    position = 0
    for match in (*_BREAK.finditer(text), None):
        end = match.start() if match is not None else len(text)
        piece = text[position:end]
        stripped = piece.strip()
        if stripped:
            start = position + (len(piece) - len(piece.lstrip()))
            out.append(Sentence(stripped, start, start + len(stripped)))
        if match is not None:
            position = match.end()
    return out


def tokens(text: str) -> list[str]:
    """Runs of letters and digits of `text`, NFKC-normalised and case-folded, in order."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


def stem(token: str) -> str:
    """`token` with one common English ending folded ("failed" -> "fail"); digits stay as they are."""
    if not token.isalpha():
        return token
    if token in _IRREGULAR:
        return _IRREGULAR[token]
    for ending in _ENDINGS:
        if token.endswith(ending) and len(token) - len(ending) >= _MIN_STEM_CHARS:
            return token[: -len(ending)]
    return token


# Content words that name no topic by themselves ("take", "keep", "good"): they count for less when
# two texts are compared (stems).
_WEAK_WORDS_TEXT = """
    take took taken make made keep kept get go went come came give gave put say said see saw use used
    need want think thing things way lot good bad long short new old still again ever really also
    happen happened try tried work worked look looked like right left back first last next
"""
WEAK_WORDS: Final = frozenset(stem(word) for word in _WEAK_WORDS_TEXT.split())


# Characters of the scripts written without spaces between words: kana, CJK ideographs.
_UNSPACED: Final = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def _words(token: str) -> list[str]:
    """A token as words: itself, or, where it holds unspaced script, its other parts and each pair of
    consecutive unspaced characters (a lone character is itself)."""
    if not _UNSPACED.search(token):
        return [token]
    words: list[str] = []
    position = 0
    for run in _UNSPACED.finditer(token):
        if run.start() > position:
            words.append(token[position : run.start()])
        chars = run.group(0)
        words.extend([chars] if len(chars) == 1 else [chars[i : i + 2] for i in range(len(chars) - 1)])
        position = run.end()
    if position < len(token):
        words.append(token[position:])
    return words


def content_stems(text: str) -> frozenset[str]:
    """The stems of the tokens of `text` that are not stop words (unspaced script as character pairs)."""
    return frozenset(
        stem(word) for token in tokens(text) if token not in STOP_WORDS for word in _words(token)
    )


def is_question(sentence: str) -> bool:
    """Whether `sentence` asks rather than tells (see the module docstring)."""
    bare = _TRAILING.sub("", sentence)
    return sentence.rstrip().endswith("?") or bare.endswith("?") or bool(_ASKS.search(sentence))
