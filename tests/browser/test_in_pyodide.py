"""The pure core inside the page's own Pyodide: it imports, and the grammar works there as on CPython."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import Server, open_page

pytestmark = pytest.mark.browser


@pytest.fixture(scope="session")
def server(pyodide_server: Server) -> Server:
    """This module's pages run on Pyodide (the core inside CPython in the browser)."""
    return pyodide_server

# Runs inside the page's interpreter (the one static/pyscript-boot.mjs started); returns JSON.
SMOKE = r"""
import json, sys, pathlib
import ai_search
from ai_search import (
    SearchFilters, apply_search_filter_token, build_applied_filter_chips, build_filter_suggestions,
    get_active_search_filter, parse_search_filter_text, serialize_search_query,
)

parsed = parse_search_filter_text('deploy in:#ops in:"team room" FROM:@alice after:2026-11-01 before:2026-02-30')
line = serialize_search_query(parsed.search_text, parsed.filters)
again = parse_search_filter_text(line)
active = get_active_search_filter("x in:op", 7)
applied = apply_search_filter_token("x in:op y", get_active_search_filter("x in:op y", 7), "in", "ops", 7)
json.dumps({
    "version": list(sys.version_info[:2]),
    "platform": sys.platform,
    "exports": len(ai_search.__all__),
    "missing": [name for name in ai_search.__all__ if not hasattr(ai_search, name)],
    "files": sorted(p.name for p in pathlib.Path(ai_search.__file__).parent.glob("*.py")),
    "search_text": parsed.search_text,
    "rooms": list(parsed.filters.room_names),
    "users": list(parsed.filters.from_usernames),
    "start": parsed.filters.start_date,
    "line": line,
    "round_trip": again == parsed,
    "suggestions": [s.value for s in build_filter_suggestions(active, [{"_id": "r1", "name": "ops"}])],
    "chips": [c.label for c in build_applied_filter_chips(SearchFilters(room_names=("ops",)))],
    "applied": [applied.text, applied.caret],
})
"""


def test_ai_search_imports_and_works_inside_pyodide(page: Any, server: Server) -> None:
    open_page(page, server)
    raw = page.evaluate(
        """async (code) => {
            const interpreter = await window.aiSearchPython;
            return interpreter.runPython(code);
        }""",
        SMOKE,
    )
    result = json.loads(raw)
    assert result["platform"] == "emscripten"
    assert result["version"] >= [3, 14]
    assert result["missing"] == []
    assert result["files"] == sorted(p.name for p in Path("py/ai_search").glob("*.py"))
    assert result["search_text"] == "deploy before:2026-02-30"
    assert result["rooms"] == ["ops", "team room"]
    assert result["users"] == ["alice"]
    assert result["start"] == "2026-11-01"
    assert result["line"] == 'in:ops in:"team room" from:alice after:2026-11-01 deploy before:2026-02-30'
    assert result["round_trip"] is True
    assert result["suggestions"] == ["ops"]
    assert result["chips"] == ["#ops"]
    assert result["applied"] == ["x in:ops y", 9]


TYPINGS = Path("typings")
# Checked inside the page's interpreter: every name the stubs declare exists there, and the calls
# the stubs say can answer null do answer JsNull (not None) for a missing element or stored value.
STUBS_HOLD = r"""
import json, js, pyodide.ffi
names = json.loads(NAMES)
json.dumps({
    "js": [n for n in names["js"] if not hasattr(js, n)],
    "document": [n for n in names["document"] if not hasattr(js.document, n)],
    "storage": [n for n in names["storage"] if not hasattr(js.sessionStorage, n)],
    "ffi": [n for n in names["ffi"] if not hasattr(pyodide.ffi, n)],
    "undefined_is_none": js.undefined is None,
    "null_element": type(js.document.getElementById("no-such-element")).__name__,
    "null_stored": type(js.sessionStorage.getItem("no-such-key")).__name__,
    "null_is_false": bool(pyodide.ffi.jsnull) is False,
})
"""


def _declared(stub: Path, in_class: str | None = None) -> list[str]:
    """The public names a stub declares at its top level (or in class ``in_class``)."""
    body = ast.parse(stub.read_text(encoding="utf-8")).body
    if in_class is not None:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == in_class).body
    names = [n.target.id for n in body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
    names += [n.name for n in body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    return [name for name in names if not name.startswith("_")]


def test_the_browser_stubs_describe_the_runtime(page: Any, server: Server) -> None:
    """What typings/ tells mypy about ``js`` and ``pyodide.ffi`` is what the page's Pyodide has."""
    names = {
        "js": _declared(TYPINGS / "js.pyi"),
        "document": _declared(TYPINGS / "js.pyi", "_Document"),
        "storage": _declared(TYPINGS / "js.pyi", "_Storage"),
        "ffi": _declared(TYPINGS / "pyodide" / "ffi" / "__init__.pyi"),
    }
    assert {"document", "fetch", "URL"} <= set(names["js"]) and "JsProxy" in names["ffi"]
    open_page(page, server)
    raw = page.evaluate(
        """async (code) => {
            const interpreter = await window.aiSearchPython;
            return interpreter.runPython(code);
        }""",
        STUBS_HOLD.replace("NAMES", repr(json.dumps(names))),
    )
    assert json.loads(raw) == {
        "js": [], "document": [], "storage": [], "ffi": [], "undefined_is_none": True,
        "null_element": "JsNull", "null_stored": "JsNull", "null_is_false": True,
    }  # fmt: skip
