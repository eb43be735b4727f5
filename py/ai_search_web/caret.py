"""Caret offsets between the DOM and Python.

The DOM counts ``selectionStart`` in UTF-16 code units; the grammar in ``ai_search`` counts code
points (Python string indices). They differ after any character outside the Basic Multilingual Plane
(emoji, some CJK), which takes two units in the DOM and one index in Python::

    >>> utf16_to_index("😀 in:ops", 2), index_to_utf16("😀 in:ops", 1)
    (1, 2)

Pure: no ``js`` import, so CPython tests cover it; portable (the keystroke stage uses it on
MicroPython).
"""

__all__ = ["index_to_utf16", "utf16_to_index"]

# Code points above this take a surrogate pair (two UTF-16 units) in the DOM.
_BMP_LAST = 0xFFFF


def utf16_to_index(text: str, offset: int) -> int:
    """The Python index of the DOM offset ``offset`` in ``text``, clamped to ``0..len(text)``.

    An offset that falls between the two halves of a surrogate pair (the DOM allows it) maps to the
    index after the character, so a caret is never inside one.
    """
    if offset <= 0:
        return 0
    units = 0
    for index, char in enumerate(text):
        units += 2 if ord(char) > _BMP_LAST else 1
        if units >= offset:
            return index + 1
    return len(text)


def index_to_utf16(text: str, index: int) -> int:
    """The DOM offset (UTF-16 units) of the Python index ``index`` in ``text``, clamped."""
    index = max(0, min(index, len(text)))
    return index + sum(1 for char in text[:index] if ord(char) > _BMP_LAST)
