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


class _PageReader(_GlueReader):
    # The whole page on MicroPython loads every glue module: any of them may import any other.
    siblings = tuple(path.stem for path in PACKAGE.glob("*.py"))
    siblings_are = "a glue module"


def _problems(name: str, reader_class: type[_GlueReader] = _GlueReader) -> list[str]:
    source = (PACKAGE / f"{name}.py").read_text(encoding="utf-8")
    reader = reader_class(name, source)
    reader.visit(ast.parse(source))
    return reader.found


@pytest.mark.parametrize("name", KEYS_GLUE_MODULES)
def test_a_glue_module_keeps_to_the_portable_convention(name: str) -> None:
    assert _problems(name) == []


# The page's glue not yet on MicroPython (the whole page on MicroPython is under way): each name
# leaves this set when its module keeps the convention, and the test below then holds it there.
_NOT_YET_PORTABLE = {
    "answer_actions",
    "answer_text",
    "api",
    "auth",
    "clipboard",
    "conversations",
    "embed_bridge",
    "embed_protocol",
    "main",
    "message_parts",
    "message_view",
    "recent",
    "signin",
    "storage",
    "url_state",
    "wording",
}
_GLUE = sorted(path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason="not yet portable"))
        if name in _NOT_YET_PORTABLE
        else name
        for name in _GLUE
    ],
)
def test_every_page_module_keeps_to_the_portable_convention(name: str) -> None:
    assert _problems(name, _PageReader) == []
