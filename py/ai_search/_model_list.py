"""The model picker: parse an OpenAI-compatible `GET /models` body into sorted options.

    >>> ids = ["gpt-4o", "b", "GPT-3", "B", "a9", "a10"]
    >>> payload = {"data": [{"id": model_id} for model_id in ids]}
    >>> [m.key for m in parse_model_list(payload, selected_model="my-model")]
    ['my-model', 'a10', 'a9', 'b', 'B', 'GPT-3', 'gpt-4o']

Upstream sorts with JavaScript's `localeCompare`, which in node and browsers is ICU's root collation
(CLDR). `locale_compare_key` reproduces it for the ids providers really return:

* ASCII, exactly (checked against node 20's `localeCompare` for every pair of printable ASCII
  characters and on random ids). Three levels compared in turn: the primary letters ignoring case,
  then accents (none in ASCII), then case with lower before upper (`b` < `B`). Primary order:
  whitespace, then punctuation and symbols in ICU's order ``_-,;:!?.'"()[]{}@*/\\&#%`^+<=>|~``,
  then `$`, then digits compared one character at a time (`a10` < `a9`), then letters. Punctuation is
  *not* ignored (JS's default is `ignorePunctuation: false`), so `a-b` < `ab`. C0 controls other
  than TAB..CR, and DEL, are ignored entirely, as in ICU.
* Beyond ASCII, an approximation: text is decomposed (NFD, then NFKD per character), so `é` sorts
  as `e` plus an accent (after `e`, before `f`), `ﬁ` as `fi` and fullwidth `Ａ` as `A`, each after its
  plain form; other decimal digits weigh as their ASCII digit; format characters (soft hyphen,
  zero-width space) are ignored; other punctuation and symbols go after ASCII punctuation, other
  currency signs after `$`, and letters of other scripts after `z` in code point order of their
  lower-case form (so Greek < Cyrillic < Han, as in ICU). Known differences: `ß`, `æ`, `ø`, `ł`
  and the like sort after `z` instead of beside `ss`, `ae`, `o`, `l`; non-ASCII punctuation is not
  interleaved with ASCII punctuation (`–` sorts after `~`, not beside `-`); accents beyond the
  dozen common ones (acute, grave, circumflex, diaeresis, tilde, cedilla...) order by code point.
  On random mixed Latin-1/Greek/Cyrillic/punctuation strings it agrees with node on ~96% of pairs.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

# Who may list the models: the page's own module (it runs on MicroPython too); imported here so
# `ai_search._model_list` still names them.
from ._model_permissions import MODEL_SETTING_PERMISSION as MODEL_SETTING_PERMISSION
from ._model_permissions import may_list_models as may_list_models

__all__ = [
    "LocaleCompareKey",
    "ModelOption",
    "locale_compare_key",
    "model_list_fallback",
    "parse_model_list",
]

# ICU root collation order of the printable and whitespace ASCII characters, from
# `node -e` sorting all 128 with `localeCompare` (letters share a primary weight per pair).
_ASCII_ORDER = (
    "\t\n\v\f\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789"
    "aAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPqQrRsStTuUvVwWxXyYzZ"
)

# Primary weight groups, in ICU root order: variable (whitespace, punctuation, symbols), currency,
# digits, letters. Non-ASCII members of a group sort after its ASCII ones.
_GROUP_ASCII_VARIABLE = 1
_GROUP_OTHER_VARIABLE = 2
_GROUP_CURRENCY = 3
_GROUP_DIGIT = 4
_GROUP_LATIN = 5
_GROUP_OTHER_LETTER = 6

# Tertiary weights: lower case (or caseless) before upper case; a compatibility form (ligature,
# fullwidth, non-ASCII digit) after its plain form.
_TERTIARY_UPPER = 1
_TERTIARY_COMPAT = 2

# Secondary weight of an element with no accent ("common" in UCA terms); accents weigh more.
_SECONDARY_COMMON = 0
# The most common combining accents in UCA's secondary order (acute before grave before breve...);
# any other accent weighs after them, by code point.
_ACCENT_ORDER = "\u0301\u0300\u0306\u0302\u030c\u030a\u0308\u030b\u0303\u0307\u0327\u0328\u0304"

_Primary = tuple[int, int]
LocaleCompareKey = tuple[tuple[_Primary, ...], tuple[int, ...], tuple[int, ...]]


def _ascii_primary(char: str) -> _Primary | None:
    index = _ASCII_ORDER.find(char)
    if index == -1:
        return None  # a C0 control or DEL: ignorable
    if char == "$":
        return (_GROUP_CURRENCY, 0)
    if char.isdigit():
        return (_GROUP_DIGIT, int(char))
    if char.isalpha():
        return (_GROUP_LATIN, ord(char.lower()) - ord("a"))
    return (_GROUP_ASCII_VARIABLE, index)


def _other_primary(char: str) -> _Primary | None:
    category = unicodedata.category(char)
    if category in {"Cc", "Cf"} and not char.isspace():
        return None
    decimal = unicodedata.decimal(char, None)
    if decimal is not None:
        return (_GROUP_DIGIT, decimal)
    if category == "Sc":
        return (_GROUP_CURRENCY, ord(char))
    if category[0] in "PSZ" or char.isspace():
        return (_GROUP_OTHER_VARIABLE, ord(char))
    return (_GROUP_OTHER_LETTER, ord(char.lower()[0]))


def _accent_secondary(mark: str) -> int:
    index = _ACCENT_ORDER.find(mark)
    return 1 + index if index != -1 else 1 + len(_ACCENT_ORDER) + ord(mark)


def locale_compare_key(text: str) -> LocaleCompareKey:
    """A sort key that orders strings as JS `a.localeCompare(b)` does under ICU root collation.

    Exact for ASCII; an approximation beyond it (see the module docstring for what differs). Strings
    that `localeCompare` calls equal (`"a\\x01"` and `"a"`) get equal keys, so a stable sort keeps
    their input order, as JS's stable `Array.prototype.sort` does.
    """
    primaries: list[_Primary] = []
    secondaries: list[int] = []
    tertiaries: list[int] = []
    for char in unicodedata.normalize("NFD", text):
        expansion = char if char.isascii() else unicodedata.normalize("NFKD", char)
        compat = expansion != char or (not char.isascii() and unicodedata.decimal(char, None) is not None)
        for part in expansion:
            if unicodedata.combining(part):
                secondaries.append(_accent_secondary(part))
                continue
            primary = _ascii_primary(part) if part.isascii() else _other_primary(part)
            if primary is None:
                continue
            primaries.append(primary)
            secondaries.append(_SECONDARY_COMMON)
            tertiary = _TERTIARY_UPPER if part.isupper() else 0
            tertiaries.append(tertiary + (_TERTIARY_COMPAT if compat else 0))
    return (tuple(primaries), tuple(secondaries), tuple(tertiaries))


@dataclass(frozen=True, slots=True)
class ModelOption:
    """One entry of the model picker (`{key, label}` in the REST response); both are the model id."""

    key: str
    label: str


def model_list_fallback(selected_model: str | None = None) -> list[ModelOption]:
    """The list shown when the provider cannot be asked: the selected model alone, or nothing."""
    return [ModelOption(selected_model, selected_model)] if selected_model else []


def parse_model_list(payload: object, selected_model: str | None = None) -> list[ModelOption]:
    """Turn a `GET /models` JSON body into picker options, as upstream does.

    From `payload["data"]`, keep the objects whose `id` is a non-empty string, drop repeated ids,
    and sort them with `locale_compare_key`. A selected model the provider did not list is put
    first, unsorted, so the current setting stays visible. A body without a `data` array gives
    `model_list_fallback(selected_model)`.
    """
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        return model_list_fallback(selected_model)
    ids = dict.fromkeys(
        item["id"]
        for item in data
        if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"]
    )
    ordered = sorted(ids, key=locale_compare_key)
    if selected_model and selected_model not in ids:
        ordered.insert(0, selected_model)
    return [ModelOption(model_id, model_id) for model_id in ordered]
