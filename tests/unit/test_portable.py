"""`ai_search._portable`: the records and text helpers the keystroke modules share with MicroPython.

The text fallbacks are what the page's MicroPython stage runs; here, on CPython, they are checked
against the str methods they stand in for, on every code point (lone surrogates aside: MicroPython's
strings cannot hold them).
"""

import copy
import dataclasses
import pickle
import re
import sys
import unicodedata

import pytest

from ai_search import _portable, _unicode_tables
from ai_search._portable import FrozenInstanceError, FrozenRecord, Record, record

_CODES = [code for code in range(sys.maxunicode + 1) if not 0xD800 <= code < 0xE000]
# Blocks whose case pairs and classes have not changed since Unicode 4: checked on any Unicode version.
_STABLE_BLOCKS = [(0x0000, 0x0250), (0x0370, 0x0400), (0x0400, 0x0500)]
_SAME_VERSION = unicodedata.unidata_version == _unicode_tables.UNICODE_VERSION


def _checked_codes() -> list[int]:
    if _SAME_VERSION:
        return _CODES
    return [code for low, high in _STABLE_BLOCKS for code in range(low, high)]


def test_the_tables_name_the_unicode_version_they_were_generated_from() -> None:
    # A newer Python brings a newer Unicode: regenerate (scripts/unicode_tables.py) so the page's two
    # interpreters agree again on the code points it added. The other tests check the stable blocks.
    if not _SAME_VERSION:
        pytest.skip(f"tables are Unicode {_unicode_tables.UNICODE_VERSION}, this Python {unicodedata.unidata_version}")


def test_fold_falls_back_to_str_lower_on_every_code_point() -> None:
    text = "".join(map(chr, _checked_codes()))
    assert _portable._fold(text) == text.lower()


def test_is_space_and_is_alnum_fall_back_to_the_str_methods_on_every_code_point() -> None:
    codes = _checked_codes()
    assert [c for c in codes if _portable._is_space(chr(c)) != chr(c).isspace()] == []
    assert [c for c in codes if _portable._is_alnum(chr(c)) != chr(c).isalnum()] == []


def test_fold_keeps_cpythons_final_sigma_around_every_bmp_code_point() -> None:
    # The Final_Sigma rule reads the code points around a capital sigma: each one, before and after.
    codes = [c for c in _checked_codes() if c < 0x10000] + _table_edges()
    wrong = []
    for code in codes:
        for text in ("A" + chr(code) + "Σ", "AΣ" + chr(code), chr(code) + "Σ", "ΑΣ" + chr(code) + "a"):
            if _portable._fold(text) != text.lower():
                wrong.append((hex(code), text))
    assert wrong == []


def _table_edges() -> list[int]:
    edges = []
    for name in ("IGNORABLE", "CASED"):
        for bound in _portable._table(name):
            edges += [bound - 1, bound]
    return [c for c in edges if 0 <= c <= sys.maxunicode and not 0xD800 <= c < 0xE000]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain",
        "  two  words  ",
        "a\xa0b\u2003c\u3000d\n\te",
        "\u2028\u2029\x1c\x1d\x1e\x1f\x85",
        "ΟΔΟΣ ΣΑ Σ'Σ Α.Σ ὈΔΥΣΣΕΎΣ",
        "İstanbul ǅemal Ǆ ǈ ß ẞ",
        "日本語 テスト ｆｕｌｌ\u3000ＷＩＤＴＨ",
        "Ünïcödé ÆØÅ Ĳ ŉ",
        "ДОМ Ёлка ΆΈΉ",
        "𐐀𐐨 𞤀",
    ],
)
def test_the_fallbacks_give_the_str_methods_on_whole_texts(text: str) -> None:
    assert _portable._fold(text) == text.lower()
    assert _portable._split(text) == text.split()
    assert _portable._collapse_spaces(text) == re.sub(r"\s+", " ", text)
    ends = [_portable._strip_ends(text, *sides) for sides in ((True, True), (True, False), (False, True))]
    assert ends == [
        text.strip(),
        text.lstrip(),
        text.rstrip(),
    ]
    assert _portable.collapse_spaces(text) == re.sub(r"\s+", " ", text)
    for start in range(len(text) + 1):
        found = re.compile(r"\s").search(text, start)
        assert _portable._find_space(text, start) == _portable.find_space(text, start) == (found.start() if found else -1)


# -- records -------------------------------------------------------------------------------------------


@record
class _Point(FrozenRecord):
    __slots__ = _fields = ("x", "y", "tags")
    x: int
    y: int
    tags: tuple[str, ...]

    def __init__(self, x: int, y: int = 0, tags: tuple[str, ...] = ()) -> None:
        self._set("x", x)
        self._set("y", y)
        self._set("tags", tags)


@record
class _Box(Record):
    __slots__ = _fields = ("size",)
    size: int

    def __init__(self, size: int) -> None:
        self.size = size


def test_a_record_compares_hashes_and_shows_as_a_dataclass_does() -> None:
    twin = dataclasses.make_dataclass(
        "_Point", [("x", int), ("y", int, 0), ("tags", tuple[str, ...], ())], frozen=True, slots=True
    )
    ours, theirs = _Point(1, 2, ("a",)), twin(1, 2, ("a",))
    assert repr(ours) == repr(theirs)
    assert hash(ours) == hash(theirs)
    assert ours == _Point(1, 2, ("a",))
    assert ours != _Point(1, 3, ("a",))
    assert ours != theirs  # another class: never equal, as between two dataclasses
    assert (ours == 1) is False
    assert ours.__eq__(1) is NotImplemented


def test_a_frozen_record_refuses_assignment_as_a_frozen_dataclass() -> None:
    point = _Point(1)
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'x'"):
        point.x = 2
    with pytest.raises(FrozenInstanceError):
        del point.y
    with pytest.raises(AttributeError):
        point.z = 3
    assert issubclass(FrozenInstanceError, AttributeError)
    box = _Box(1)
    box.size = 2
    assert box == _Box(2)


def test_a_record_is_copied_and_replaced_as_a_dataclass_is() -> None:
    point = _Point(1, 2, ("a",))
    assert point.replace(y=5) == _Point(1, 5, ("a",))
    assert dataclasses.replace(point, y=5) == _Point(1, 5, ("a",))
    assert copy.copy(point) == copy.deepcopy(point) == pickle.loads(pickle.dumps(point)) == point
    with pytest.raises(TypeError):
        point.replace(z=1)


def test_a_record_carries_the_dataclass_metadata_callers_read() -> None:
    fields = dataclasses.fields(_Point)
    assert [(f.name, f.type, f.default) for f in fields] == [
        ("x", int, dataclasses.MISSING),
        ("y", int, 0),
        ("tags", tuple[str, ...], ()),
    ]
    assert dataclasses.asdict(_Point(1)) == {"x": 1, "y": 0, "tags": ()}
    assert _Point.__match_args__ == ("x", "y", "tags")
    match _Point(1, 2):
        case _Point(x, y):
            assert (x, y) == (1, 2)
        case _:
            pytest.fail("no match")
