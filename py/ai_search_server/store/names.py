"""Room names people can tell apart: one visible form per name, and no name that looks like another.

Two rooms whose names look the same on screen (``incidents`` and ``ıncidents`` with a dotless i,
``incidents`` and ``incidents`` + a zero-width space, a DM's ``alice__grace`` and a channel's
``aIice__grace``) let one pose as the other in suggestions, chips and results. So a room name is:

1. free of characters that show nothing or reorder text: controls, format characters (zero-width
   spaces and joiners, bidi embeddings, overrides and isolates, the BOM, tags), line and paragraph
   separators, surrogates, spaces other than the plain one (they pass for it), and Unicode's other
   Default_Ignorable_Code_Points (fillers, variation selectors): :func:`invisible_character`.
   Private-use and unassigned code points stay allowed: they show (as a glyph or a box), and
   Python's Unicode tables lag behind the newest emoji, which would read as unassigned;
2. stored in NFKC form (``ｏｐｓ`` is ``ops``; ``ﬁle`` is ``file``): :func:`normal_room_name`;
3. kept apart from every other room by its confusable keys, the Unicode TR39 skeleton of the name and
   of its case fold (``disarm.skeleton_key``, from Unicode's confusables.txt): :func:`confusable_keys`.
   A new channel or group whose keys meet an existing room's keys is refused (the store's
   ``AlreadyTaken``), whatever that room's type, direct rooms included.

``KEY_VERSION`` names the key function; a change to it (a new disarm, so new Unicode data) comes with a
schema migration that recomputes the stored keys (``schema.MIGRATIONS``).
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from disarm import skeleton_key

__all__ = ["KEY_VERSION", "confusable_keys", "invisible_character", "normal_room_name"]

KEY_VERSION = "disarm-0.17.2-skeleton_key"

# General categories no room name may hold: Cc control, Cf format (ZWSP, ZWJ, LRM/RLM, LRE..RLO,
# LRI..PDI, BOM, soft hyphen, tags), Cs surrogate, Zl/Zp line and paragraph separators.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 15) outside the categories above:
# letters and marks that render as nothing (Hangul fillers, Khmer inherent vowels, Mongolian free
# variation selectors, the combining grapheme joiner, variation selectors).
_INVISIBLE_RANGES = (
    (0x034F, 0x034F),  # COMBINING GRAPHEME JOINER
    (0x115F, 0x1160),  # HANGUL CHOSEONG / JUNGSEONG FILLER
    (0x17B4, 0x17B5),  # KHMER VOWEL INHERENT AQ / AA
    (0x180B, 0x180F),  # MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
    (0x2800, 0x2800),  # BRAILLE PATTERN BLANK (not ignorable, but a blank that is no space)
    (0x3164, 0x3164),  # HANGUL FILLER
    (0xFE00, 0xFE0F),  # VARIATION SELECTORS 1-16
    (0xFFA0, 0xFFA0),  # HALFWIDTH HANGUL FILLER
    (0x1D173, 0x1D17A),  # MUSICAL SYMBOL BEGIN BEAM .. END PHRASE
    (0xE0100, 0xE01EF),  # VARIATION SELECTORS 17-256
)
# The one space a room name may hold. The others (no-break, em, ideographic...) look like it, so a
# name holding one would pass for the name with a plain space: refused rather than silently folded.
_SPACE = " "


def invisible_character(text: str) -> str | None:
    """The first character of ``text`` that shows nothing or reorders text, as ``U+XXXX NAME``, or None."""
    for ch in text:
        code = ord(ch)
        if unicodedata.category(ch) in _REFUSED_CATEGORIES or any(
            low <= code <= high for low, high in _INVISIBLE_RANGES
        ):
            return f"U+{code:04X} {unicodedata.name(ch, 'unnamed character')}"
        if ch.isspace() and ch != _SPACE:
            return f"U+{code:04X} {unicodedata.name(ch, 'space')}"
    return None


def normal_room_name(name: str) -> str:
    """``name`` in NFKC form: one stored spelling for names that only differ in compatibility forms."""
    return unicodedata.normalize("NFKC", name)


@lru_cache(maxsize=4096)
def confusable_keys(name: str) -> frozenset[str]:
    """The keys two look-alike names share: the TR39 skeleton of the name and of its case fold.

    Both, because TR39's skeleton keeps case (``I`` looks like ``l``, so ``paypaI`` meets ``paypal``)
    while room names compare without case (``ІNCIDENTS``, Cyrillic І, must meet ``incidents``).
    """
    return frozenset({skeleton_key(name), skeleton_key(name.casefold())}) - {""}
