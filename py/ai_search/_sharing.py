"""A shared answer as one reader may see it: nothing from a source in a room they cannot read.

An answer is written from its asker's sources. Shared by a link, it reaches people who may not read
all of them. `answer_for_reader` takes the stored answer and its numbered sources as this reader may
see them (`None` for one in a room they do not read, or that was deleted) and keeps only what the
visible sources say:

    >>> visible, hidden = AnswerSource("the deploy was rolled back at 10:05"), None
    >>> view = answer_for_reader("Rolled back at 10:05 [1]. The acquisition closes in March [2].", [visible, hidden])
    >>> view.answer, view.hidden_sources
    ('Rolled back at 10:05 [1].', 1)

When every source is visible the answer is shown as given. Otherwise, sentence by sentence:

- a sentence that cites only hidden sources is dropped;
- a sentence that also cites visible ones loses its hidden citations, and is kept only when every
  content word and number of it is in the visible sources it cites;
- a sentence that cites nothing is kept only when every content word and number of it is in some
  visible source (a model wrote the whole answer having read every source, so an uncited sentence
  may repeat a hidden one);
- a sentence that cites only visible sources is kept on the same condition, for the same reason.

The rule is lexical and errs on the side of dropping: a sentence is shown only if a reader could
have put it together from words they may read. What is kept is checked again against the visible
sources (`check_citations`), and `hidden_sources` counts the sources the reader cannot see that the
answer cited, so the page can say some are hidden. The question itself is the asker's and is shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ._answers import AnswerSource
from ._grounding import CheckedSentence, answer_sentences, check_citations, claim_numbers, source_words
from ._sentences import content_stems

__all__ = ["HIDDEN_ANSWER_NOTE", "HIDDEN_SOURCES_NOTE", "ReaderView", "answer_for_reader", "hidden_note"]

# What a reader is told when nothing of a shared answer can be shown to them.
HIDDEN_ANSWER_NOTE = (
    "Nothing of this answer can be shown to you: what it says comes from messages in rooms you cannot "
    "read, or deleted since. Only its question is shown."
)
HIDDEN_SOURCES_NOTE = (
    "Some sources of this answer are hidden from you (in rooms you cannot read, or deleted); "
    "what they said is left out."
)

_CITATION: Final = re.compile(r"\[([0-9]{1,6})\]")
_ANY_CITATION: Final = re.compile(r"\s*\[[0-9]{1,6}\??\]")
_SPACES: Final = re.compile(r"[ \t]{2,}")


@dataclass(frozen=True, slots=True)
class ReaderView:
    """The answer as one reader sees it: its text, its sentences checked against what they may read,
    how many cited sources are hidden from them, and how many sentences were left out."""

    answer: str
    sentences: tuple[CheckedSentence, ...]
    hidden_sources: int
    dropped_sentences: int


def _cited(text: str, count: int) -> list[int]:
    return [n for n in dict.fromkeys(int(m) for m in _CITATION.findall(text)) if 1 <= n <= count]


def answer_for_reader(answer: str, sources: Sequence[AnswerSource | None]) -> ReaderView:
    """The stored `answer` for a reader to whom `sources[n - 1]` is None when source `n` is hidden."""
    shown = [source if source is not None else AnswerSource("") for source in sources]
    hidden = {n for n, source in enumerate(sources, start=1) if source is None}
    cited_everywhere = set(_cited(answer, len(sources)))
    if not hidden:
        return ReaderView(answer, tuple(check_citations(answer, shown)), 0, 0)
    words = {n: source_words(source) for n, source in enumerate(sources, start=1) if source is not None}
    every_word = frozenset().union(*(w for w, _ in words.values())) if words else frozenset()
    every_number = frozenset().union(*(n for _, n in words.values())) if words else frozenset()
    kept: list[str] = []
    separators: list[str] = []
    dropped = 0
    previous_end = 0
    for sentence in answer_sentences(answer):
        cited = _cited(sentence.text, len(sources))
        visible = [n for n in cited if n not in hidden]
        text = sentence.text
        for n in cited:
            if n in hidden:
                text = re.sub(rf"\s*\[{n}\]", "", text)
        text = _SPACES.sub(" ", text).strip()
        pool_words = frozenset().union(*(words[n][0] for n in visible)) if visible else every_word
        pool_numbers = frozenset().union(*(words[n][1] for n in visible)) if visible else every_number
        bare = _ANY_CITATION.sub(" ", text)
        from_visible = content_stems(bare) <= pool_words and claim_numbers(bare) <= pool_numbers
        if (cited and not visible) or not from_visible or not bare.strip():
            dropped += 1
        else:
            separators.append("\n" if "\n" in answer[previous_end : sentence.start] else " ")
            kept.append(text)
        previous_end = sentence.end
    text = "".join(
        (sep if i else "") + part for i, (sep, part) in enumerate(zip(separators, kept, strict=True))
    )
    return ReaderView(
        text,
        tuple(check_citations(text, shown)),
        len(cited_everywhere & hidden),
        dropped,
    )


def hidden_note(view: ReaderView) -> str | None:
    """What the reader is told of what is hidden from them: nothing when nothing is,
    `HIDDEN_ANSWER_NOTE` when no sentence is left to show, `HIDDEN_SOURCES_NOTE` otherwise."""
    if not view.hidden_sources and not view.dropped_sentences:
        return None
    return HIDDEN_ANSWER_NOTE if not view.answer.strip() else HIDDEN_SOURCES_NOTE
