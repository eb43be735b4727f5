"""What the keystroke modules need to run unchanged on CPython and on MicroPython.

The search page answers its first keystrokes on MicroPython 1.28 (a 170 KB wasm, ready in ~0.3 s)
until Pyodide (CPython, 6 MB) has loaded; both run the same modules, so the grammar stays one code
base. MicroPython lacks `dataclasses`, and its str methods know ASCII only, so this module gives
both interpreters:

- `Record` and `FrozenRecord`, with the `record` decorator: a class whose `_fields` (also its
  `__slots__`) name its fields gets `__eq__`, `__hash__`, `__repr__`, copying and `replace(**changes)`
  as a dataclass would (frozen ones refuse assignment). On CPython they also carry dataclass
  metadata, so `dataclasses.replace`, `fields` and `asdict` keep working for callers written against
  the dataclasses they were;
- `fold` (`str.lower`), `is_space`, `is_alnum`, `strip`, `lstrip`, `rstrip`, `split`, `find_space`,
  `collapse_spaces`: the str methods (and `\\s`) as CPython has them, Unicode included. On CPython
  they are the str methods; on MicroPython they read the tables of `_unicode_tables`, generated from
  CPython's str methods by scripts/unicode_tables.py (tests/unit/test_portable.py checks them against
  the str methods on every code point, the final sigma's context included).

The convention of a keystroke module (`ai_search.KEYSTROKE_MODULES`): tests/unit/test_core_portability.py
checks it on each, tests/unit/test_core_micropython.py runs them on MicroPython and compares.

- No `from __future__ import annotations` (MicroPython has no `__future__`): annotations must be
  valid at run time on CPython 3.11, quoted where they name a type imported for type checking only.
  `typing` and `collections.abc` only under `if TYPE_CHECKING:` (with `TYPE_CHECKING = False` at the
  top: mypy reads any name TYPE_CHECKING as true), type aliases and Protocols too.
- No `dataclasses`, `enum`, `unicodedata` or `re` at run time (MicroPython's `re` lacks counted
  repeats, named groups, lookarounds, flags, `finditer` and `fullmatch`): scan by hand.
- Syntax MicroPython does not parse, even in a branch that never runs there: `/` in a signature,
  `*` or `**` inside a list, tuple, set or dict display, `match`, `except*`.
- No str case or class method (`lower`, `isspace`, `strip()`, `split()`...) on text that may hold
  more than ASCII: use this module's. `strip(chars)` raises there when `chars` is not ASCII. No
  `dict | dict`, `str.removeprefix`, `str.isalnum` or `str.format_map` (MicroPython has none).
- MicroPython's dicts keep no insertion order and its sort is not stable: an order that shows (the
  choices, the keys, the hints) comes from a tuple or a list, and a sort breaks its ties.
"""

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dataclasses import Field
    from typing import Any, ClassVar, Self

__all__ = [
    "MAPPINGS",
    "MICROPYTHON",
    "FrozenInstanceError",
    "FrozenRecord",
    "Record",
    "collapse_spaces",
    "find_space",
    "fold",
    "is_alnum",
    "is_space",
    "lstrip",
    "record",
    "rstrip",
    "split",
    "strip",
]

#: Whether this is the page's keystroke stage (MicroPython) rather than CPython or Pyodide.
MICROPYTHON = sys.implementation.name == "micropython"

if not MICROPYTHON:
    import dataclasses
    import inspect
    from collections.abc import Mapping
    from dataclasses import FrozenInstanceError

    #: What `isinstance` takes for "a mapping" (data read from JSON, a record's fields):
    #: `collections.abc.Mapping` on CPython, `dict` on MicroPython, which has no `collections.abc`.
    MAPPINGS: "tuple[type[Mapping[Any, Any]], ...]" = (Mapping,)
else:

    class FrozenInstanceError(AttributeError):  # type: ignore[no-redef]
        """Assigning to a field of a frozen record (`dataclasses.FrozenInstanceError` on CPython)."""

    MAPPINGS = (dict,)


class Record:
    """A record whose fields are `_fields`, in order, and its `__slots__` (`__slots__ = _fields =
    ("a", "b")`: ruff sorts a `__slots__` written alone): equal to another of its class with equal
    fields, hashed and shown (`Name(a=1, b='x')`) as a dataclass is. Decorate each subclass with
    `record`; its `__init__` sets the fields (`self.a = a`, or `self._set("a", a)` when frozen)."""

    __slots__ = ()
    _fields: "tuple[str, ...]" = ()
    if TYPE_CHECKING:
        # What `record` adds on CPython: mypy then takes a record where dataclasses' functions want one.
        __dataclass_fields__: "ClassVar[dict[str, Field[Any]]]"
        __match_args__: "ClassVar[tuple[str, ...]]"

    def _values(self) -> "tuple[Any, ...]":
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        # MicroPython does not derive `!=` from `__eq__` for every comparison; CPython would.
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({fields})"

    def __reduce__(self) -> "tuple[Any, ...]":
        # copy, deepcopy and pickle rebuild through `__init__`: a frozen record refuses `setattr`.
        return self.__class__, self._values()

    def replace(self, **changes: "Any") -> "Self":
        """A copy with `changes` applied, as `dataclasses.replace` makes one.

        Raises:
            TypeError: a change names no field.
        """
        for name in self._fields:
            if name not in changes:
                changes[name] = getattr(self, name)
        return self.__class__(**changes)


class FrozenRecord(Record):
    """A `Record` whose fields cannot be assigned after `__init__`, as a frozen dataclass's."""

    __slots__ = ()

    def _set(self, name: str, value: "Any") -> None:
        """Set a field from `__init__` (assigning it raises `FrozenInstanceError`)."""
        object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: "Any") -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


def record(cls: "type[Any]") -> "type[Any]":
    """Finish a `Record` subclass (its fields are `_fields`). On CPython it also gets the
    dataclass metadata (`__dataclass_fields__`, `__match_args__`) that `dataclasses.replace`, `fields`,
    `asdict` and `match` read, built by `dataclasses.make_dataclass` from its annotations and the
    defaults of its `__init__`."""
    if not MICROPYTHON:
        if tuple(cls.__slots__) != cls._fields:
            raise TypeError(f"{cls.__name__}: __slots__ must be its _fields")
        _add_dataclass_metadata(cls)
    return cls


def _add_dataclass_metadata(cls: "type[Any]") -> None:
    parameters = inspect.signature(cls.__init__).parameters
    annotations = getattr(cls, "__annotations__", {})
    spec = []
    for name in cls._fields:
        default = parameters[name].default
        field = (
            dataclasses.field() if default is inspect.Parameter.empty else dataclasses.field(default=default)
        )
        spec.append((name, annotations.get(name, "Any"), field))
    # In the record's own module: dataclasses reads string annotations in the shadow's module, and
    # a core module Pyodide's snapshot hands out is not in sys.modules under its own name.
    # (`module` is 3.12's; on 3.11 the class body's `__module__` says the same.)
    where = (
        {"module": cls.__module__}
        if sys.version_info >= (3, 12)
        else {"namespace": {"__module__": cls.__module__}}
    )
    shadow = dataclasses.make_dataclass(cls.__name__, spec, frozen=issubclass(cls, FrozenRecord), **where)
    # Set by name: mypy knows none of the three on a class it did not see made by @dataclass.
    for name in ("__dataclass_fields__", "__dataclass_params__"):
        setattr(cls, name, getattr(shadow, name))
    setattr(cls, "__match_args__", cls._fields)  # noqa: B010


# -- text --------------------------------------------------------------------------------------------
# The fallbacks are defined on both interpreters, so that CPython's tests can check them against the
# str methods; the public names are the str methods on CPython, the fallbacks on MicroPython.

_decoded: "dict[str, Any]" = {}


def _tables() -> "Any":
    from . import _unicode_tables

    return _unicode_tables


def _numbers(text: str, group: int = 1) -> "list[int]":
    numbers, last = [], 0
    for index, digits in enumerate(text.split(",")):
        number = int(digits, 36)
        if index % group == 0:
            last += number
            number = last
        numbers.append(number)
    return numbers


def _table(name: str) -> "Any":
    # Decoded on first use: a page that only ever sees ASCII never pays for it.
    table = _decoded.get(name)
    if table is None:
        if name == "SPACES" or name == "LOWER_SPECIAL":
            table = getattr(_tables(), name)
        elif name == "LOWER_RUNS":
            flat = _numbers(_tables().LOWER_RUNS, 4)
            table = [flat[i : i + 4] for i in range(0, len(flat), 4)]
        else:
            table = _numbers(getattr(_tables(), name))
        _decoded[name] = table
    return table


def _in_runs(name: str, code: int) -> bool:
    bounds = _table(name)  # [start, end, start, end...]
    low, high = 0, len(bounds)
    while low < high:  # the number of bounds <= code
        middle = (low + high) // 2
        if bounds[middle] <= code:
            low = middle + 1
        else:
            high = middle
    return low % 2 == 1


def _lower_char(char: str) -> str:
    special = _table("LOWER_SPECIAL").get(char)
    if special is not None:
        return special  # type: ignore[no-any-return]
    code = ord(char)
    runs = _table("LOWER_RUNS")
    low, high = 0, len(runs)
    while low < high:  # the first run whose first code point is past `code`
        middle = (low + high) // 2
        if runs[middle][0] <= code:
            low = middle + 1
        else:
            high = middle
    if low:
        first, length, stride, delta = runs[low - 1]
        if code <= first + length and (code - first) % stride == 0:
            return chr(code + delta)
    return char


def _sigma(text: str, index: int) -> str:
    # CPython's Final_Sigma rule: a cased letter before (skipping ignorables), none after.
    before = index - 1
    while before >= 0 and _in_runs("IGNORABLE", ord(text[before])):
        before -= 1
    if before < 0 or not _in_runs("CASED", ord(text[before])):
        return "\u03c3"
    after = index + 1
    while after < len(text) and _in_runs("IGNORABLE", ord(text[after])):
        after += 1
    return "\u03c3" if after < len(text) and _in_runs("CASED", ord(text[after])) else "\u03c2"


def _fold(text: str) -> str:
    if len(text.encode()) == len(text):
        return text.lower()  # ASCII: MicroPython's own does
    out = []
    for index, char in enumerate(text):
        if char < "\x80":
            out.append(char.lower())
        elif char == "\u03a3":
            out.append(_sigma(text, index))
        else:
            out.append(_lower_char(char))
    return "".join(out)


def _is_space(char: str) -> bool:
    return len(char) == 1 and char in _table("SPACES")


def _is_alnum(char: str) -> bool:
    if char < "\x80":
        return len(char) == 1 and (char.isalpha() or char.isdigit())
    return len(char) == 1 and _in_runs("ALNUM", ord(char))


def _strip_ends(text: str, start: bool, end: bool) -> str:
    # By index: MicroPython's `str.strip(chars)` raises UnicodeError when `chars` is not ASCII.
    spaces = _table("SPACES")
    first, last = 0, len(text)
    while start and first < last and text[first] in spaces:
        first += 1
    while end and last > first and text[last - 1] in spaces:
        last -= 1
    return text[first:last]


def _find_space(text: str, start: int) -> int:
    spaces = _table("SPACES")
    for index in range(start, len(text)):
        if text[index] in spaces:
            return index
    return -1


def _split(text: str) -> "list[str]":
    spaces = _table("SPACES")
    words, start = [], -1
    for index, char in enumerate(text):
        if char in spaces:
            if start >= 0:
                words.append(text[start:index])
                start = -1
        elif start < 0:
            start = index
    if start >= 0:
        words.append(text[start:])
    return words


def _collapse_spaces(text: str) -> str:
    spaces = _table("SPACES")
    out = []
    index, length = 0, len(text)
    while index < length:
        if text[index] in spaces:
            out.append(" ")
            index += 1
            while index < length and text[index] in spaces:
                index += 1
            continue
        start = index
        while index < length and text[index] not in spaces:
            index += 1
        out.append(text[start:index])
    return "".join(out)


if not MICROPYTHON:
    import re

    _WHITESPACE = re.compile(r"\s")
    _WHITESPACE_RUN = re.compile(r"\s+")

    def fold(text: str) -> str:
        """`text` in lower case, as `str.lower` gives it (Unicode, final sigma included)."""
        return text.lower()

    def is_space(char: str) -> bool:
        """Whether `char` (one code point) is whitespace, as `str.isspace` says."""
        return char.isspace()

    def is_alnum(char: str) -> bool:
        """Whether `char` (one code point) is a letter or a digit, as `str.isalnum` says."""
        return char.isalnum()

    def find_space(text: str, start: int = 0) -> int:
        """The index of the first whitespace (`str.isspace`) at or after `start`, or -1."""
        found = _WHITESPACE.search(text, start)
        return -1 if found is None else found.start()

    def strip(text: str) -> str:
        """`text` without whitespace (`str.isspace`) at either end, as `str.strip()` gives it."""
        return text.strip()

    def lstrip(text: str) -> str:
        """`text` without whitespace at its start, as `str.lstrip()`."""
        return text.lstrip()

    def rstrip(text: str) -> str:
        """`text` without whitespace at its end, as `str.rstrip()`."""
        return text.rstrip()

    def split(text: str) -> "list[str]":
        """The runs of `text` between whitespace, as `str.split()`."""
        return text.split()

    def collapse_spaces(text: str) -> str:
        """`text` with each run of whitespace replaced by one space, as `re.sub(r"\\s+", " ", text)`
        gives it: the ends are kept (one space each where there was any)."""
        return _WHITESPACE_RUN.sub(" ", text)

else:

    def fold(text: str) -> str:
        """`text` in lower case, as CPython's `str.lower` gives it (Unicode, final sigma included)."""
        return _fold(text)

    def is_space(char: str) -> bool:
        """Whether `char` (one code point) is whitespace, as CPython's `str.isspace` says."""
        return _is_space(char)

    def is_alnum(char: str) -> bool:
        """Whether `char` (one code point) is a letter or a digit, as CPython's `str.isalnum` says."""
        return _is_alnum(char)

    def find_space(text: str, start: int = 0) -> int:
        """The index of the first whitespace (CPython's `str.isspace`) at or after `start`, or -1."""
        return _find_space(text, start)

    def strip(text: str) -> str:
        """`text` without whitespace at either end, as CPython's `str.strip()` gives it."""
        return _strip_ends(text, True, True)

    def lstrip(text: str) -> str:
        """`text` without whitespace at its start, as CPython's `str.lstrip()`."""
        return _strip_ends(text, True, False)

    def rstrip(text: str) -> str:
        """`text` without whitespace at its end, as CPython's `str.rstrip()`."""
        return _strip_ends(text, False, True)

    def split(text: str) -> "list[str]":
        """The runs of `text` between whitespace, as CPython's `str.split()`."""
        return _split(text)

    def collapse_spaces(text: str) -> str:
        """`text` with each run of whitespace replaced by one space, as CPython's
        `re.sub(r"\\s+", " ", text)` gives it: the ends are kept (one space each where there was any)."""
        return _collapse_spaces(text)
