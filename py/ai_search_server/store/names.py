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
   ``AlreadyTaken``), whatever that room's type, direct rooms included;
4. for a channel or group, not a direct room's name before that direct room exists: people's
   usernames joined by ``__`` (``alice__frank``, as imports name direct rooms), in any order and in
   any of the forms above (``Alice__Frank``, ``aIice__frank``, ``alice＿＿frank``, three people):
   :func:`names_people`, also the store's ``AlreadyTaken``. A direct room made later under that name
   would otherwise find it taken, and ``#alice__frank`` would keep meaning the channel.

``KEY_VERSION`` names the key function; a change to it (a new disarm, so new Unicode data) comes with a
schema migration that recomputes the stored keys (``schema.MIGRATIONS``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable
from functools import lru_cache

from disarm import skeleton_key

__all__ = [
    "DIRECT_NAME_SEPARATOR",
    "KEY_VERSION",
    "confusable_keys",
    "direct_name_reason",
    "invisible_character",
    "names_people",
    "normal_room_name",
]

KEY_VERSION = "disarm-0.17.2-skeleton_key"
# What joins the members' usernames in a direct room's name (``imports/mirror.py``'s ``direct_name``).
DIRECT_NAME_SEPARATOR = "__"

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


def _person_keys(text: str) -> frozenset[str]:
    """What a username, or a part of a room name, is compared by: its case fold and its confusable keys."""
    return confusable_keys(text) | {text.casefold()}


def names_people(name: str, usernames: Callable[[], Iterable[str]]) -> bool:
    """Whether ``name`` (a room name in stored form) is, or looks like, a direct room's name: two or
    more parts joined by :data:`DIRECT_NAME_SEPARATOR`, each part a username of ``usernames`` (by case
    fold or confusable keys), in any order.

    The name's own form, its case fold and its two skeletons are each split, so a fullwidth or
    look-alike separator or letter counts as the real one. ``usernames`` (every account's; a scan of
    the users table) is only asked when some form holds the separator at all, which most names do not.
    """
    forms = {name, name.casefold(), *confusable_keys(name)}
    forms = {form for form in forms if DIRECT_NAME_SEPARATOR in form}
    if not forms:
        return False
    people: set[str] = set()
    for username in usernames():
        people |= _person_keys(username)

    def is_person(part: str) -> bool:
        return not _person_keys(part).isdisjoint(people)

    return any(_joins_people(form, is_person) for form in forms)


def direct_name_reason(name: str) -> str:
    """Why a channel or group may not take a direct room's name (both stores say it alike)."""
    return (
        f"room name {name!r} is shaped like a direct room's name (people's usernames joined by "
        f"{DIRECT_NAME_SEPARATOR!r}): such names are kept for direct rooms; choose another"
    )


def _joins_people(form: str, is_person: Callable[[str], bool]) -> bool:
    """Whether ``form`` splits at separators into two or more parts that are all people. Every split
    is tried (a username may itself hold ``_``, so ``a___b`` is ``a_`` + ``b`` or ``a`` + ``_b``)."""
    width = len(DIRECT_NAME_SEPARATOR)
    # Where a part may begin: the start, or just after a separator ending a run of people.
    starts = [0]
    for cut in range(1, len(form) - width):
        if form.startswith(DIRECT_NAME_SEPARATOR, cut) and any(
            start < cut and is_person(form[start:cut]) for start in starts
        ):
            starts.append(cut + width)
    return any(is_person(form[start:]) for start in starts[1:] if start < len(form))
