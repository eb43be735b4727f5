"""BERT's uncased WordPiece tokenizer in plain Python, as the local embedding model was trained with.

Why not the `tokenizers` wheel: it is exact and fast, but it requires `huggingface-hub`, which brings
a second HTTP stack, `hf-xet`, PyYAML, fsspec and more (about 35 MB) for code we would never call.
Chat messages are short, so the Python version costs little next to the model's forward pass; it
reproduces `tokenizers`' `BertNormalizer` + `BertPreTokenizer` + `WordPiece` on the model's own
`tokenizer.json` (checked against `tokenizers` 0.23.3: see docs/retrieval.md). The special tokens
around a text are the file's own: BERT's `[CLS] ... [SEP]` for all-MiniLM-L6-v2, RoBERTa-style
`<s> ... </s>` for all-mpnet-base-v2 (the same uncased WordPiece otherwise).

Special tokens written *inside* a text (a literal `[CLS]` or `<s>`) stay text: `tokenizers` would
turn them into the special ids, letting a message forge its own boundaries. No test text has them.

    >>> tok = WordPieceTokenizer({"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "deploy": 3, "##ed": 4, "!": 5})
    >>> tok.encode("Deployed!")
    [1, 3, 4, 5, 2]
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["BERT_SPECIAL_TOKENS", "MAX_CHARS_PER_WORD", "SpecialTokens", "WordPieceTokenizer"]

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




class SpecialTokens(NamedTuple):
    """The tokens that open and close every text, and the one an unmatched word becomes."""

    cls: str
    sep: str
    unk: str


BERT_SPECIAL_TOKENS = SpecialTokens(cls="[CLS]", sep="[SEP]", unk="[UNK]")


def _template_ends(processor: Mapping[str, Any]) -> tuple[str, str]:
    """TemplateProcessing: the special tokens before and after the single sequence."""
    specials = [part["SpecialToken"]["id"] for part in processor["single"] if "SpecialToken" in part]
    return specials[0], specials[-1]


def _pair_ends(processor: Mapping[str, Any]) -> tuple[str, str]:
    """BertProcessing / RobertaProcessing: `cls` and `sep` as [token, id]."""
    return processor["cls"][0], processor["sep"][0]


# How each kind of `tokenizer.json` post-processor names the tokens around a text.
_POST_PROCESSOR_ENDS: dict[str, Callable[[Mapping[str, Any]], tuple[str, str]]] = {
    "TemplateProcessing": _template_ends,
    "BertProcessing": _pair_ends,
    "RobertaProcessing": _pair_ends,
}
# What `_normalise` and `_words` implement: a tokenizer.json asking for anything else is refused.
_NORMALIZER = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "lowercase": True}
_PRE_TOKENIZER = "BertPreTokenizer"


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
    """Text to token ids: `cls pieces... sep` (`[CLS] ... [SEP]` by default), cut to `max_tokens`
    ids in all.

    Raises:
        KeyError: the vocabulary lacks one of `specials`.
    """

    def __init__(
        self, vocab: Mapping[str, int], *, max_tokens: int = 256, specials: SpecialTokens = BERT_SPECIAL_TOKENS
    ) -> None:
        self._vocab = dict(vocab)
        self._unk = self._vocab[specials.unk]
        self._cls = self._vocab[specials.cls]
        self._sep = self._vocab[specials.sep]
        self._max_pieces = max_tokens - 2
        self._cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_tokenizer_json(cls, path: Path, *, max_tokens: int = 256) -> WordPieceTokenizer:
        """Read a Hugging Face `tokenizer.json` whose model is WordPiece behind BERT's normaliser and
        pre-tokenizer: its vocabulary, its unknown token and the special tokens its post-processor
        puts around a text (BERT's when it names none).

        Raises:
            ValueError: the file holds another kind of tokenizer.
        """
        data = json.loads(path.read_text(encoding="utf-8"))
        model = data.get("model") or {}
        if model.get("type") != "WordPiece":
            raise ValueError(f"{path}: expected a WordPiece tokenizer, found {model.get('type')!r}")
        normalizer = data.get("normalizer") or {}
        if any(normalizer.get(key) != value for key, value in _NORMALIZER.items()) or normalizer.get(
            "strip_accents"
        ) not in (None, True):
            raise ValueError(f"{path}: expected BERT's uncased normaliser, found {normalizer!r}")
        pre_tokenizer = (data.get("pre_tokenizer") or {}).get("type")
        if pre_tokenizer != _PRE_TOKENIZER:
            raise ValueError(f"{path}: expected {_PRE_TOKENIZER}, found {pre_tokenizer!r}")
        processor = data.get("post_processor") or {}
        ends = _POST_PROCESSOR_ENDS.get(processor.get("type", ""))
        first, last = ends(processor) if ends else (BERT_SPECIAL_TOKENS.cls, BERT_SPECIAL_TOKENS.sep)
        specials = SpecialTokens(cls=first, sep=last, unk=model.get("unk_token", BERT_SPECIAL_TOKENS.unk))
        return cls(model["vocab"], max_tokens=max_tokens, specials=specials)

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
