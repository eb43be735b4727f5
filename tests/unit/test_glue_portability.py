"""The keystroke stage's glue (ai_search_server.static.KEYS_GLUE_MODULES, py/ai_search_web) runs on
MicroPython 1.28 beside the core: each module keeps the core's portable convention, read by the same
reader as tests/unit/test_core_portability.py, with what the glue may import besides (the browser's
``js`` and the bridge ``ffi`` picks, ``re``, ``asyncio``, ``io``, the core itself)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ai_search_server.static import KEYS_GLUE_MODULES
from tests.unit import test_core_portability as core

PACKAGE = Path(__file__).resolve().parents[2] / "py" / "ai_search_web"
# What MicroPython's webassembly port (the vendored build) has, for the glue: checked in its REPL.
# `collections` has OrderedDict, deque and namedtuple there, never `collections.abc`.
GLUE_RUNTIME_MODULES = {"js", "jsffi", "re", "asyncio", "io", "json", "sys", "datetime", "collections", "ai_search"}
# Builtin exceptions MicroPython 1.28 does not define (checked in its REPL): naming one is a NameError
# there. ruff's UP041 turns `asyncio.TimeoutError` into `TimeoutError`, which is one of them.
MISSING_BUILTINS = {
    "BlockingIOError",
    "BrokenPipeError",
    "BufferError",
    "ChildProcessError",
    "ConnectionError",
    "FileNotFoundError",
    "FloatingPointError",
    "InterruptedError",
    "IsADirectoryError",
    "ModuleNotFoundError",
    "PermissionError",
    "ProcessLookupError",
    "RecursionError",
    "ReferenceError",
    "TimeoutError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
}


class _GlueReader(core._Reader):
    siblings = KEYS_GLUE_MODULES
    siblings_are = "a glue module of the stage"

    def _imported(self, node: ast.stmt, module: str, bound: str) -> None:
        if self.type_checking:
            self.typing_names.add(bound)
        elif self.cpython_only or (
            module.split(".")[0] in GLUE_RUNTIME_MODULES and module not in core.TYPING_MODULES
        ):
            return
        else:
            self.note(node, f"imports {module} at run time: not in MicroPython's webassembly port")

    def visit_Try(self, node: ast.Try) -> None:
        # `try: import traceback / except ImportError:` is how a module takes what MicroPython lacks.
        optional = any(
            handler.type is not None and "ImportError" in ast.unparse(handler.type) for handler in node.handlers
        )
        self.cpython_only += optional
        for statement in node.body:
            self.visit(statement)
        self.cpython_only -= optional
        for part in (*node.handlers, *node.orelse, *node.finalbody):
            self.visit(part)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        # MicroPython compiles an async generator but cannot iterate it (no __aiter__).
        for inner in _own_yields(node):
            self.note(inner, f"{node.name}: an async generator: MicroPython has none (write __anext__)")
        self.visit_FunctionDef(node)  # type: ignore[arg-type]

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id in MISSING_BUILTINS and not self.cpython_only:
            self.note(node, f"{node.id}: not a builtin of MicroPython (asyncio.TimeoutError is its own)")
        super().visit_Name(node)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> None:
        # MicroPython compiles a comprehension as a function of its own, never a coroutine.
        if any(isinstance(inner, ast.Await) or getattr(inner, "is_async", 0) for inner in ast.walk(node)):
            self.note(node, "await in a comprehension: MicroPython has none (write the loop)")
        self.generic_visit(node)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_If(self, node: ast.If) -> None:
        # ffi.py: `if TYPE_CHECKING or RUNTIME != "micropython":` is the Pyodide branch.
        test = node.test
        if isinstance(test, ast.BoolOp) and "micropython" in ast.unparse(test) and "TYPE_CHECKING" in ast.unparse(test):
            self.cpython_only += 1
            for statement in node.body:
                self.visit(statement)
            self.cpython_only -= 1
            for statement in node.orelse:
                self.visit(statement)
            return
        super().visit_If(node)


def _own_yields(function: ast.AsyncFunctionDef) -> list[ast.expr]:
    """The ``yield`` expressions of ``function`` itself, not of the functions defined inside it."""
    found: list[ast.expr] = []
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Yield | ast.YieldFrom):
            found.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
    return found


class _PageReader(_GlueReader):
    # The whole page on MicroPython loads every glue module: any of them may import any other.
    siblings = tuple(path.stem for path in PACKAGE.glob("*.py"))
    siblings_are = "a glue module"

    def _imported(self, node: ast.stmt, module: str, bound: str) -> None:
        # The entry script main.py runs as a script, not in the package: `ai_search_web.<name>`.
        package, _, name = module.partition(".")
        if package == "ai_search_web" and name in self.siblings and not self.type_checking:
            return
        super()._imported(node, module, bound)


def _problems(name: str, reader_class: type[_GlueReader] = _GlueReader) -> list[str]:
    source = (PACKAGE / f"{name}.py").read_text(encoding="utf-8")
    reader = reader_class(name, source)
    reader.visit(ast.parse(source))
    return reader.found


@pytest.mark.parametrize("name", KEYS_GLUE_MODULES)
def test_a_glue_module_keeps_to_the_portable_convention(name: str) -> None:
    assert _problems(name) == []


# Every module of the page's glue: the whole page runs on MicroPython (page_python = "micropython").
_GLUE = sorted(path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__")


@pytest.mark.parametrize("name", _GLUE)
def test_every_page_module_keeps_to_the_portable_convention(name: str) -> None:
    assert _problems(name, _PageReader) == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        pytest.param("async def f():\n    yield 1\n", 1, id="an-async-generator"),
        pytest.param("async def f():\n    def g():\n        yield 1\n    return g\n", 0, id="a-generator-inside"),
        pytest.param("async def f():\n    await g()\n", 0, id="a-coroutine"),
        pytest.param("async def f():\n    return [await g(x) for x in y]\n", 1, id="await-in-a-comprehension"),
        pytest.param("async def f():\n    return [x async for x in y]\n", 1, id="async-for-in-a-comprehension"),
        pytest.param("try:\n    x()\nexcept TimeoutError:\n    pass\n", 1, id="a-builtin-micropython-lacks"),
        pytest.param("try:\n    x()\nexcept asyncio.TimeoutError:  # noqa: UP041\n    pass\n", 0, id="asyncio-s-own"),
    ],
)
def test_the_reader_finds_what_micropython_s_asyncio_cannot_run(source: str, found: int) -> None:
    reader = _GlueReader("example", source)
    reader.visit(ast.parse(source))
    assert len(reader.found) == found
