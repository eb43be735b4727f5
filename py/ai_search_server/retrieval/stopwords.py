"""English stopwords: words that never decide a keyword match and are never highlighted.

The list is Snowball's English stop list (snowballstem.org, ``algorithms/english/stop.txt``), plus
the pieces the index's tokenizer cuts contractions into (``can't`` is the words ``can`` and ``t``,
``we're`` is ``we`` and ``re``), plus ``can``, ``will`` and ``just`` (in NLTK's English list too):
in chat they carry no topic. Words are folded as ``terms.fold_word`` folds them (lower case, no
diacritics).

Only English: the workspaces this product serves chat mostly in English, and a stopword list for
another language would drop words that are content in this one (``die``, ``los``, ``con``). Text in
Chinese and Japanese is matched by character pairs, where a particle never stands alone.
"""

from __future__ import annotations

__all__ = ["ENGLISH_STOPWORDS", "is_stopword"]

_SNOWBALL_ENGLISH = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her
hers herself it its itself they them their theirs themselves what which who whom this that these
those am is are was were be been being have has had having do does did doing would should could
ought a an the and but if or because as until while of at by for with about against between into
through during before after above below to from up down in out on off over under again further then
once here there when where why how all any both each few more most other some such no nor not only
own same so than too very cannot
"""
# What the tokenizer makes of the contractions in Snowball's list (i'm, you're, isn't, let's...).
_CONTRACTION_PIECES = """
m re s ve d ll t isn aren wasn weren hasn haven hadn doesn don didn won wouldn shan shouldn can
couldn mustn let
"""
_CHAT_EXTRAS = "will just"

ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    (_SNOWBALL_ENGLISH + _CONTRACTION_PIECES + _CHAT_EXTRAS).split()
)


def is_stopword(folded_word: str) -> bool:
    """True for a folded word that carries no topic ("the", "was", "don")."""
    return folded_word in ENGLISH_STOPWORDS
