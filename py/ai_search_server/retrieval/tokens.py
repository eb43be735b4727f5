"""How the keyword index cuts a text into tokens: words, character pairs for CJK, parts of identifiers.

FTS5's ``unicode61`` tokenizer sees a word as a run of letters and digits, so it cannot find a word
inside text written without spaces (``数据库切换了`` is one "word") nor a part of ``InvalidProviderToken``.
The index therefore stores, beside each message, its tokens as this module cuts them, and FTS5
indexes those (two columns, see ``index_db``):

- **words**: each run of letters and digits (as unicode61 sees them), folded (lower case, no
  diacritics), in order, so that phrases (``ERR_CONN_RESET``, ``v2.14.0``) still match adjacent
  words. A run that mixes scripts is cut where Chinese, Japanese or Korean meets anything else
  (``日本語FAQが`` gives ``日本語``, ``faq``, ``が``);
- **CJK runs become overlapping pairs** (bigrams: ``老化测试`` gives ``老化 化测 测试``), the classic
  way to search scripts without spaces without a dictionary: a query's pairs must follow each other,
  so ``老化测试`` matches the run and ``测试`` matches any text holding it. A run of one character
  is that character;
- **parts**, in a second column: the pieces of a word where its case or script changes
  (``InvalidProviderToken`` gives ``invalid provider token``, ``pg16`` gives ``pg 16``), and each
  single CJK character, so a one-character query finds them. Parts never take part in phrases.

    >>> [t.text for t in text_tokens("InvalidProviderToken 老化测试").words]
    ['invalidprovidertoken', '老化', '化测', '测试']
    >>> [t.text for t in text_tokens("InvalidProviderToken 老化测试").parts]
    ['invalid', 'provider', 'token', '老', '化', '测', '试']

Offsets are Python string indices into the text as given, so highlights mark exactly what matched.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["TextTokens", "Token", "fold_word", "is_cjk", "text_tokens", "token_column_text"]

# A word as unicode61's default `categories 'L* N* Co'` sees it: letters and digits of any script
# (`[^\W_]` is exactly what str.isalnum() accepts) and the private-use planes.
_WORD = re.compile(r"(?:[^\W_]|[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd])+")
# Scripts written without spaces between words, matched by character pairs: Han (with the
# iteration marks), Hiragana, Katakana (full and half width) and Hangul.
_CJK_CLASS = (
    "\u3005-\u3007\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002ffff"
)
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
_HAS_CJK = re.compile(f"[{_CJK_CLASS}]")


class Token(NamedTuple):
    start: int
    end: int
    text: str  # folded


@dataclass(frozen=True, slots=True)
class TextTokens:
    words: list[Token]  # in order: phrases match adjacent ones
    parts: list[Token]  # identifier parts and single CJK characters


def fold_word(word: str) -> str:
    """Lower case without diacritics: `Déploy` and `deploy` are the same word."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _fold_cjk(text: str) -> str:
    """CJK text folded: compatibility forms (half-width katakana) unified, voicing marks kept (が is not か)."""
    return unicodedata.normalize("NFKC", text)


def is_cjk(word: str) -> bool:
    """True when a token is written in a script matched by character pairs."""
    return bool(_HAS_CJK.match(word))


def _kind(char: str) -> int:
    """0 digit, 1 lower case or caseless letter, 2 upper case letter (for cutting identifiers)."""
    if char.isdigit():
        return 0
    return 2 if char.isupper() else 1


def _identifier_parts(word: str, start: int) -> list[Token]:
    """The pieces of a word at case and letter/digit changes; [] when it has only one piece.

    ``HTTPServer`` gives ``http server``: an upper-case run followed by a lower-case letter keeps
    its last capital for the next piece.
    """
    if word.isdigit() or (word.isalpha() and (word.islower() or word.isupper())):
        return []
    cuts = [0]
    kinds = [_kind(char) for char in word]
    for i in range(1, len(word)):
        before, here = kinds[i - 1], kinds[i]
        if (before == 0) != (here == 0) or (before == 1 and here == 2):
            cuts.append(i)
        elif before == 2 and here == 1 and i - 1 > cuts[-1]:
            cuts.append(i - 1)  # HTTPServer: "S" starts "Server"
    if len(cuts) == 1:
        return []
    cuts.append(len(word))
    return [Token(start + a, start + b, fold_word(word[a:b])) for a, b in itertools.pairwise(cuts)]


def _segments(word: str, start: int) -> list[tuple[int, str, bool]]:
    """(offset, text, is CJK) pieces of one unicode61 word, cut where CJK meets another script."""
    if not _HAS_CJK.search(word):
        return [(start, word, False)]
    pieces: list[tuple[int, str, bool]] = []
    at = 0
    for run in _CJK_RUN.finditer(word):
        if run.start() > at:
            pieces.append((start + at, word[at : run.start()], False))
        pieces.append((start + run.start(), run.group(), True))
        at = run.end()
    if at < len(word):
        pieces.append((start + at, word[at:], False))
    return pieces


def _add_cjk(words: list[Token], parts: list[Token], folded: str, offset: int, length: int) -> None:
    """Pairs (and single characters as parts) of a folded CJK run that spans `length` characters.

    Folding keeps the length but for half-width katakana with a separate voicing mark (ｶﾞ is ガ);
    there every token spans the whole run, so a highlight marks the run.
    """

    def span(i: int, size: int) -> tuple[int, int]:
        if len(folded) != length:
            return offset, offset + length
        return offset + i, offset + i + size

    if len(folded) == 1:
        words.append(Token(*span(0, 1), folded))
        return
    words.extend(Token(*span(i, 2), folded[i : i + 2]) for i in range(len(folded) - 1))
    parts.extend(Token(*span(i, 1), char) for i, char in enumerate(folded))


def text_tokens(text: str) -> TextTokens:
    """The index tokens of a text (see the module docstring)."""
    words: list[Token] = []
    parts: list[Token] = []
    for match in _WORD.finditer(text):
        for offset, piece, cjk in _segments(match.group(), match.start()):
            if not cjk:
                words.append(Token(offset, offset + len(piece), fold_word(piece)))
                parts.extend(_identifier_parts(piece, offset))
                continue
            _add_cjk(words, parts, _fold_cjk(piece), offset, len(piece))
    return TextTokens(words, parts)


def token_column_text(tokens: list[Token]) -> str:
    """What FTS5 indexes for a column: the folded tokens, one space apart (unicode61 keeps each whole)."""
    return " ".join(token.text for token in tokens)
