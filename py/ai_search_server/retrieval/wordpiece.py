"""BERT's uncased WordPiece tokenizer in plain Python, as the local embedding model was trained with.

Why not the `tokenizers` wheel: it is exact and fast, but it requires `huggingface-hub`, which brings
a second HTTP stack, `hf-xet`, PyYAML, fsspec and more (about 35 MB) for code we would never call.
Chat messages are short, so the Python version costs little next to the model's forward pass; it
reproduces `tokenizers`' `BertNormalizer` + `BertPreTokenizer` + `WordPiece` on the model's own
`tokenizer.json` (checked against `tokenizers` 0.23.3: see docs/retrieval.md).

    >>> tok = WordPieceTokenizer({"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "deploy": 3, "##ed": 4, "!": 5})
    >>> tok.encode("Deployed!")
    [1, 3, 4, 5, 2]
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from pathlib import Path

__all__ = ["MAX_CHARS_PER_WORD", "WordPieceTokenizer"]

# A word longer than this (characters) becomes [UNK] whole, as in BERT's reference tokenizer.
MAX_CHARS_PER_WORD = 100
_CONTINUATION = "##"
# Distinct words whose pieces are remembered; chat vocabularies repeat, memory stays bounded (words).
_CACHE_WORDS = 200_000
# CJK ideograph blocks: each ideograph is its own word, as in BERT's BasicTokenizer.
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_whitespace(char: str) -> bool:
    return char in " \t\n\r" or char.isspace()


def _is_control(char: str) -> bool:
    if char in "\t\n\r":
        return False
    return unicodedata.category(char).startswith("C")


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    # ASCII symbols such as $ + < = > ^ ` | ~ are not Unicode punctuation, but BERT splits them.
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK_RANGES)


def _normalise(text: str) -> str:
    """BertNormalizer: drop control characters, space out CJK, strip accents, lower-case."""
    out: list[str] = []
    for char in text:
        if char in ("\x00", "\ufffd") or _is_control(char):
            continue
        if _is_whitespace(char):
            out.append(" ")
        elif _is_cjk(char):
            out.extend((" ", char, " "))
        else:
            out.append(char)
    decomposed = unicodedata.normalize("NFD", "".join(out))
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn").lower()


def _words(text: str) -> list[str]:
    """BertPreTokenizer: split on whitespace, and make every punctuation character its own word."""
    words: list[str] = []
    current: list[str] = []
    for char in text:
        if _is_whitespace(char) or _is_punctuation(char):
            if current:
                words.append("".join(current))
                current = []
            if not _is_whitespace(char):
                words.append(char)
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words


class WordPieceTokenizer:
    """Text to token ids: `[CLS] pieces... [SEP]`, cut to `max_tokens` ids in all.

    Raises:
        KeyError: the vocabulary lacks `[UNK]`, `[CLS]` or `[SEP]`.
    """

    def __init__(self, vocab: Mapping[str, int], *, max_tokens: int = 256) -> None:
        self._vocab = dict(vocab)
        self._unk = self._vocab["[UNK]"]
        self._cls = self._vocab["[CLS]"]
        self._sep = self._vocab["[SEP]"]
        self._max_pieces = max_tokens - 2
        self._cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_tokenizer_json(cls, path: Path, *, max_tokens: int = 256) -> WordPieceTokenizer:
        """Read the vocabulary of a Hugging Face `tokenizer.json` whose model is WordPiece.

        Raises:
            ValueError: the file holds another kind of tokenizer.
        """
        data = json.loads(path.read_text(encoding="utf-8"))
        model = data.get("model", {})
        if model.get("type") != "WordPiece":
            raise ValueError(f"{path}: expected a WordPiece tokenizer, found {model.get('type')!r}")
        return cls(model["vocab"], max_tokens=max_tokens)

    def _pieces(self, word: str) -> tuple[int, ...]:
        """Greedy longest-match-first; a word with any unmatched piece is one [UNK]."""
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        result = self._split(word)
        if len(self._cache) < _CACHE_WORDS:
            self._cache[word] = result
        return result

    def _split(self, word: str) -> tuple[int, ...]:
        if len(word) > MAX_CHARS_PER_WORD:
            return (self._unk,)
        pieces: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else _CONTINUATION + word[start:end]
                found = self._vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return (self._unk,)
            pieces.append(found)
            start = end
        return tuple(pieces)

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for word in _words(_normalise(text)):
            ids.extend(self._pieces(word))
            if len(ids) >= self._max_pieces:
                break
        return [self._cls, *ids[: self._max_pieces], self._sep]
