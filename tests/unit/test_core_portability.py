"""Each keystroke and page module keeps to the portable convention of `ai_search._portable` (read from
its AST).

The page's keystroke stage runs `ai_search.KEYSTROKE_MODULES` on MicroPython 1.28, and the page's glue
there `ai_search.PAGE_MODULES` besides. What MicroPython
lacks fails there only, at import or on the first keystroke that reaches it, while every CPython test
stays green; so these checks read the source. tests/unit/test_core_micropython.py runs the modules
there; this file keeps a later edit from using what it would not have caught.

A line ending in a `# portable: <why>` comment is exempt from the call checks (a sort whose ties are
broken, a dict iterated where order does not matter).
"""

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from ai_search import KEYSTROKE_MODULES, PAGE_MODULES

PACKAGE = Path(__file__).resolve().parents[2] / "py" / "ai_search"
# What MicroPython 1.28 (the vendored build) can import; `collections` without `collections.abc`.
MICROPYTHON_MODULES = {"datetime", "json", "sys", "collections", "math"}
# Only for type checkers, under `if TYPE_CHECKING:`.
TYPING_MODULES = {"typing", "collections.abc", "dataclasses", "typing_extensions"}
# str methods MicroPython lacks.
MISSING_METHODS = {
    "removeprefix", "removesuffix", "format_map", "casefold", "isalnum", "isascii", "isdecimal",
    "isnumeric", "isidentifier", "isprintable", "istitle", "title", "swapcase", "expandtabs",
    "maketrans", "translate", "zfill",
}
# str methods MicroPython knows for ASCII only: `_portable` has the Unicode-aware ones.
ASCII_ONLY_METHODS = {"lower", "upper", "isspace", "isalpha", "isdigit", "isupper", "islower", "capitalize"}
# With no argument they strip or split on ASCII whitespace only there; with a non-ASCII one they raise.
WHITESPACE_METHODS = {"strip", "lstrip", "rstrip", "split", "rsplit"}
# Calls whose result depends on dict order (MicroPython's dicts keep none) or on a stable sort (its
# sort is not stable): each needs a `# portable:` reason.
ORDER_CALLS = {"sorted", "sort", "items", "keys", "values", "fromkeys", "popitem"}
BUILTIN_GENERICS = {"dict", "list", "tuple", "set", "frozenset", "type"}
# `_portable` is where the str methods are used on purpose (its CPython branch and ASCII fallbacks).
TEXT_HELPERS = "_portable"


def _source(name: str) -> str:
    return (PACKAGE / f"{name}.py").read_text(encoding="utf-8")


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _cpython_only_body(node: ast.If) -> list[ast.stmt] | None:
    """The statements of `node` that run on CPython only: `if not MICROPYTHON:`, the `else` of
    `if MICROPYTHON:`, `if sys.implementation.name != "micropython":`."""
    test = node.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and ast.unparse(test.operand) == "MICROPYTHON":
        return node.body
    if isinstance(test, ast.Name) and test.id == "MICROPYTHON":
        return node.orelse
    if (
        isinstance(test, ast.Compare)
        and ast.unparse(test.left) == "sys.implementation.name"
        and isinstance(test.ops[0], ast.NotEq)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "micropython"
    ):
        return node.body
    return None


class _Reader(ast.NodeVisitor):
    """Walks one module as MicroPython would run it, noting what breaks the convention."""

    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.lines = source.splitlines()
        self.found: list[str] = []
        self.typing_names: set[str] = set()
        self.cpython_only = 0  # inside a CPython-only branch
        self.type_checking = 0  # inside `if TYPE_CHECKING:`
        self.in_function = 0

    def note(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{self.name}.py:{getattr(node, 'lineno', '?')}: {what}")

    def exempt(self, node: ast.AST) -> bool:
        line = self.lines[getattr(node, "lineno", 1) - 1]
        return "# portable:" in line

    # -- imports --------------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._imported(node, alias.name, alias.asname or alias.name)

    # The sibling modules a module of this kind may import at run time (relative imports), and what
    # they are called in a finding; the glue's reader (test_glue_portability.py) names its own.
    siblings: "tuple[str, ...]" = tuple(KEYSTROKE_MODULES) + tuple(PAGE_MODULES)
    siblings_are = "in KEYSTROKE_MODULES or PAGE_MODULES"

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module == "__future__":
            self.note(node, "from __future__ import: MicroPython has no __future__")
            return
        if node.level:  # relative: only siblings that the stage loads too
            modules = [alias.name for alias in node.names] if node.module is None else [node.module]
            for module in modules:
                if module not in self.siblings and not self.cpython_only and not self.type_checking:
                    self.note(node, f"imports .{module}, which is not {self.siblings_are}")
            return
        for alias in node.names:
            self._imported(node, node.module or "", alias.asname or alias.name)

    def _imported(self, node: ast.stmt, module: str, bound: str) -> None:
        if self.type_checking:
            self.typing_names.add(bound)
        elif self.cpython_only:
            return
        elif module in TYPING_MODULES or module.split(".")[0] not in MICROPYTHON_MODULES or module == "collections.abc":
            self.note(node, f"imports {module} at run time: MicroPython has no such module (or only for typing)")

    # -- branches -------------------------------------------------------------------------------

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self.type_checking += 1
            for statement in node.body:
                self.visit(statement)
            self.type_checking -= 1
            for statement in node.orelse:
                self.visit(statement)
            return
        cpython = _cpython_only_body(node)
        self.visit(node.test)
        for branch in (node.body, node.orelse):
            only = branch is cpython
            self.cpython_only += only
            for statement in branch:
                self.visit(statement)
            self.cpython_only -= only

    # -- syntax MicroPython lacks ---------------------------------------------------------------

    def visit_Match(self, node: ast.Match) -> None:
        self.note(node, "match statement: MicroPython has none")
        self.generic_visit(node)

    def visit_TryStar(self, node: ast.TryStar) -> None:
        self.note(node, "except*: MicroPython has none")
        self.generic_visit(node)

    def visit_arguments(self, node: ast.arguments) -> None:
        if node.posonlyargs:
            self.note(node.posonlyargs[0], "positional-only parameters (`/`): MicroPython has no such syntax")
        self.generic_visit(node)

    def _starred_display(self, node: ast.List | ast.Tuple | ast.Set) -> None:
        if isinstance(getattr(node, "ctx", ast.Load()), ast.Load) and any(
            isinstance(item, ast.Starred) for item in node.elts
        ):
            self.note(node, "`*` in a list, tuple or set display: MicroPython has none (concatenate)")
        self.generic_visit(node)

    visit_List = visit_Tuple = visit_Set = _starred_display

    def visit_Dict(self, node: ast.Dict) -> None:
        if any(key is None for key in node.keys):
            self.note(node, "`**` in a dict display: MicroPython has none")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.BitOr) and any(_is_dict(side) for side in (node.left, node.right)):
            self.note(node, "dict | dict: MicroPython has none (dict(a, **b) or update)")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.value, ast.Name) and node.value.id in BUILTIN_GENERICS and not self.type_checking:
            self.note(node, f"{node.value.id}[...] at run time: MicroPython's builtins take no parameters")
        self.generic_visit(node)

    # -- annotations are not run by MicroPython, and must not need typing names on CPython ------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.visit(node.args)
        self._annotation(node.returns)
        self.in_function += 1
        for statement in node.body:
            self.visit(statement)
        self.in_function -= 1

    def visit_arg(self, node: ast.arg) -> None:
        self._annotation(node.annotation)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if not self.in_function:  # module and class annotations are evaluated on CPython 3.11
            self._annotation(node.annotation)
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def _annotation(self, annotation: ast.expr | None) -> None:
        if annotation is None or isinstance(annotation, ast.Constant):
            return  # none, or quoted: never evaluated
        for name in ast.walk(annotation):
            if isinstance(name, ast.Name) and name.id in self.typing_names and not self.type_checking:
                self.note(annotation, f"unquoted annotation names {name.id}, imported for type checking only")

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id in self.typing_names and not self.type_checking:
            self.note(node, f"{node.id} is used at run time, but imported for type checking only")

    # -- calls ------------------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        function = node.func.id if isinstance(node.func, ast.Name) else None
        if not self.cpython_only and not self.exempt(node):
            if method in MISSING_METHODS:
                self.note(node, f".{method}(): MicroPython's str has none")
            if self.name != TEXT_HELPERS:
                if method in ASCII_ONLY_METHODS:
                    self.note(node, f".{method}() is ASCII-only on MicroPython: use _portable (fold, is_space...)")
                if method in WHITESPACE_METHODS and not _ascii_literal_arguments(node):
                    self.note(node, f".{method}() without an ASCII literal: use _portable (strip, split...)")
            if method in ORDER_CALLS or function in ORDER_CALLS:
                self.note(node, f"{method or function}(): order differs on MicroPython; say why not with # portable:")
        self.generic_visit(node)


def _is_dict(node: ast.expr) -> bool:
    if isinstance(node, ast.Dict | ast.DictComp):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict"


def _ascii_literal_arguments(node: ast.Call) -> bool:
    return bool(node.args) and all(
        isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.isascii() for arg in node.args
    )


def _problems(name: str) -> list[str]:
    source = _source(name)
    reader = _Reader(name, source)
    reader.visit(ast.parse(source))
    return reader.found


def _modules() -> Iterator[str]:
    yield from KEYSTROKE_MODULES
    yield from PAGE_MODULES
    yield "__init__"


@pytest.mark.parametrize("name", list(_modules()))
def test_a_keystroke_module_keeps_to_the_portable_convention(name: str) -> None:
    assert _problems(name) == []


def test_every_keystroke_module_is_a_file_of_the_package() -> None:
    # The server builds the stage's file list from KEYSTROKE_MODULES (and the page's from PAGE_MODULES
    # after them): each name is one file, in one list only.
    listed = KEYSTROKE_MODULES + PAGE_MODULES
    assert [name for name in listed if not (PACKAGE / f"{name}.py").is_file()] == []
    assert len(set(listed)) == len(listed)


def test_the_page_modules_import_only_what_loads_before_them() -> None:
    # In import order: a page module's relative imports name keystroke modules or earlier page modules.
    for index, name in enumerate(PAGE_MODULES):
        before = set(KEYSTROKE_MODULES) | set(PAGE_MODULES[:index])
        imported = {
            node.module
            for node in ast.walk(ast.parse(_source(name)))
            if isinstance(node, ast.ImportFrom) and node.level and node.module
        }
        assert imported <= before, (name, imported - before)


@pytest.mark.parametrize(
    ("source", "complaint"),
    [
        pytest.param("from __future__ import annotations\n", "__future__", id="future"),
        pytest.param("import re\n", "imports re", id="re"),
        pytest.param("from dataclasses import dataclass\n", "imports dataclasses", id="dataclasses"),
        pytest.param("from collections.abc import Mapping\n", "imports collections.abc", id="collections-abc"),
        pytest.param("from ._answers import x\n", "not in KEYSTROKE_MODULES", id="cpython-only-module"),
        pytest.param("from ._model_list import x\n", "or PAGE_MODULES", id="cpython-only-page-neighbour"),
        pytest.param(
            "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from typing import Any\nx = Any\n",
            "used at run time",
            id="typing-name-at-run-time",
        ),
        pytest.param(
            "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from typing import Any\ndef f(x: Any) -> None: ...\n",
            "unquoted annotation",
            id="unquoted-typing-annotation",
        ),
        pytest.param("def f(a, /): ...\n", "positional-only", id="positional-only"),
        pytest.param("x = (*a, *b)\n", "display", id="star-in-tuple"),
        pytest.param("x = {**a}\n", "dict display", id="star-star-in-dict"),
        pytest.param("x = {} | y\n", "dict | dict", id="dict-or"),
        pytest.param("class X(dict[str, str]): ...\n", "builtins take no parameters", id="generic-builtin"),
        pytest.param("match x:\n    case 1: pass\n", "match", id="match"),
        pytest.param("y = x.lower()\n", "ASCII-only", id="lower"),
        pytest.param("y = x.isspace()\n", "ASCII-only", id="isspace"),
        pytest.param("y = x.strip()\n", "ASCII literal", id="strip-whitespace"),
        pytest.param('y = x.strip("\\u3000")\n', "ASCII literal", id="strip-non-ascii"),
        pytest.param("y = x.removeprefix('-')\n", "has none", id="removeprefix"),
        pytest.param("y = tuple(sorted(x))\n", "order", id="sort"),
        pytest.param("y = list(d.items())\n", "order", id="dict-order"),
    ],
)
def test_the_reader_notices_what_micropython_lacks(source: str, complaint: str) -> None:
    reader = _Reader("example", source)
    reader.visit(ast.parse(source))
    assert any(complaint in problem for problem in reader.found), reader.found


@pytest.mark.parametrize(
    "source",
    [
        pytest.param('y = x.strip(" ")\nz = x.split(",")\n', id="ascii-strip-and-split"),
        pytest.param("if not MICROPYTHON:\n    import re\n", id="cpython-branch"),
        pytest.param("y = sorted(x, key=k)  # portable: ties broken by index\n", id="a-reason"),
        pytest.param("TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from typing import Any\ndef f(x: 'Any') -> None: ...\n", id="quoted"),
        pytest.param("def f() -> None:\n    x: dict[str, int] = {}\n", id="local-annotation"),
        pytest.param("a, *b = c\n", id="star-target"),
    ],
)
def test_the_reader_leaves_the_portable_forms_alone(source: str) -> None:
    reader = _Reader("example", source)
    reader.visit(ast.parse(source))
    assert reader.found == []
