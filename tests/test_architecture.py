"""Imports under ``py/`` run one way, as docs/architecture.md states them.

The graph is read with the standard library's ``ast``, every ``import`` statement counted wherever it
stands (module level, inside a function, under ``TYPE_CHECKING``): a lazy import is still a dependency,
and a type-only one still couples two modules. The rules:

- the core (``ai_search``) imports only the standard library and itself: it runs under Pyodide too;
- the page (``ai_search_web``) imports the standard library, the core, itself and the browser runtime
  (``js``, ``pyodide``, ``pyscript``), never the server;
- the server (``ai_search_server``) never imports the page, and its parts import only parts in lower
  layers of ``SERVER_LAYERS`` (two parts of one layer do not import each other);
- outside the store, only its interface (``store``, ``store.base``, ``store.records``,
  ``store.rules``, ``store.names``) is imported, and the interface imports no implementation module;
- a private module (``_name``) is imported only from inside its own package;
- no import cycle, anywhere.

The rules are checked against synthetic graphs first (each rule can fail), then against the real tree.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PY = ROOT / "py"
ARCHITECTURE_DOC = ROOT / "docs" / "architecture.md"

CORE, PAGE, SERVER = "ai_search", "ai_search_web", "ai_search_server"
# Modules the browser runtime provides to the page (Pyodide's FFI, the DOM through ``js``, PyScript;
# ``jsffi``: MicroPython's FFI, for the keystroke stage, imported by ``ai_search_web.ffi`` only).
PAGE_RUNTIME = frozenset({"js", "jsffi", "pyodide", "pyscript"})
# The server's parts, highest layer first: a part imports only parts of the layers below its own.
# "" is the package itself (its __init__: the version). Mirrored by docs/architecture.md.
SERVER_LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__",),
    ("cli", "settings_docs"),
    ("workers",),
    ("app", "serving", "mirror_job", "pipeline_process"),
    ("routes", "mcp", "openapi"),
    ("oauth",),
    ("rest", "api_limits"),
    ("services",),
    ("answers", "import_dispatch", "rocketchat_sign_in"),
    ("retrieval", "importer"),
    ("imports",),
    ("redaction",),
    ("settings",),
    ("login_throttle",),
    ("store", "ratelimit", "outbound"),
    ("origin_middleware", "body_limit", "security_headers"),
    ("origins",),
    ("errors", "accept_header", "json_schema", "static", "demo", ""),
    ("encoding",),
)
# What the rest of the server may import of the store: the protocol, its records, its value rules and
# room names' Unicode rules.
# A second implementation (PostgreSQL) sits beside sqlite.py and imports these, never SQLite's modules.
STORE = f"{SERVER}.store"
STORE_INTERFACE = frozenset({STORE, f"{STORE}.base", f"{STORE}.records", f"{STORE}.rules", f"{STORE}.names"})

Graph = Mapping[str, frozenset[str]]


# -- reading the tree ------------------------------------------------------------------------------


def discover(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's __init__), for every .py file under ``root``."""
    found: dict[str, tuple[Path, bool]] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_package)
    return found


def imports_in(source: str, module: str, *, is_package: bool, known: Iterable[str]) -> frozenset[str]:
    """Every module ``source`` imports, relative imports resolved; ``from pkg import sub`` counts as
    importing ``pkg.sub`` when that is a module of ``known`` (and as ``pkg`` when any name is not)."""
    known = frozenset(known)
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, node.module] if node.module else base)
            submodules = {f"{target}.{alias.name}" for alias in node.names} & known
            found.update(submodules)
            if len(submodules) < len(node.names):
                found.add(target)
    return frozenset(found)


def import_graph(root: Path) -> dict[str, frozenset[str]]:
    modules = discover(root)
    return {
        name: imports_in(path.read_text(encoding="utf-8"), name, is_package=is_package, known=modules)
        for name, (path, is_package) in modules.items()
    }


# -- the rules -------------------------------------------------------------------------------------


def _top(module: str) -> str:
    return module.split(".", 1)[0]


def _part(module: str) -> str:
    """The server part a module belongs to: ``ai_search_server.routes.search`` -> ``routes``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer_of(part: str) -> int | None:
    return next((rank for rank, layer in enumerate(SERVER_LAYERS) if part in layer), None)


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _rule_broken(importer: str, imported: str, internal: frozenset[str]) -> str | None:
    """Why ``importer`` may not import ``imported`` (None: it may)."""
    origin, target = _top(importer), _top(imported)
    if origin == CORE and target != CORE and target not in sys.stdlib_module_names:
        return "the core imports only the standard library"
    if (origin, target) in ((PAGE, SERVER), (SERVER, PAGE)):
        return "the page and the server never import each other"
    if origin == PAGE and target not in {CORE, PAGE, *PAGE_RUNTIME} and target not in sys.stdlib_module_names:
        return "the page imports only the standard library, the core and the browser runtime"
    if imported not in internal:
        return None
    leaf_package, _, leaf = imported.rpartition(".")
    if leaf.startswith("_") and not leaf.startswith("__") and not _inside(importer, leaf_package):
        return f"a private module is imported only inside {leaf_package}"
    if origin != SERVER or target != SERVER:
        return None
    if _inside(imported, STORE):
        if not _inside(importer, STORE) and imported not in STORE_INTERFACE:
            return "outside the store, only its interface is imported (store, base, records, rules, names)"
        if importer in STORE_INTERFACE - {STORE} and imported not in STORE_INTERFACE:
            return "the store's interface imports no implementation"
    source_part, target_part = _part(importer), _part(imported)
    if source_part == target_part:
        return None
    source_layer, target_layer = _layer_of(source_part), _layer_of(target_part)
    if source_layer is None or target_layer is None:
        unknown = source_part if source_layer is None else target_part
        return f"{SERVER}.{unknown} is in no layer: add it to SERVER_LAYERS and docs/architecture.md"
    if target_layer < source_layer:
        return "the server's layers import downwards only"
    if target_layer == source_layer:
        return "two parts of one layer do not import each other"
    return None


def violations(graph: Graph) -> list[str]:
    """Every import against the rules, as ``importer -> imported: why``."""
    internal = frozenset(graph)
    found = []
    for importer in sorted(graph):
        for imported in sorted(graph[importer]):
            why = _rule_broken(importer, imported, internal)
            if why is not None:
                found.append(f"{importer} -> {imported}: {why}")
    return found


def cycles(graph: Graph) -> list[list[str]]:
    """The import cycles among the graph's own modules (Tarjan's strongly connected components of
    more than one module, or a module importing itself), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node] & graph.keys()):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


# -- the rules fail where they should ---------------------------------------------------------------


def _graph(**edges: str) -> dict[str, frozenset[str]]:
    """A synthetic graph: keyword ``a__b="x.y z"`` is module ``a.b`` importing ``x.y`` and ``z``."""
    graph = {name.replace("__", "."): frozenset(targets.split()) for name, targets in edges.items()}
    for targets in list(graph.values()):
        for target in targets:
            if _top(target) in (CORE, PAGE, SERVER):
                graph.setdefault(target, frozenset())
    return graph


S = SERVER
FAILING_GRAPHS = [
    pytest.param(
        _graph(ai_search="json httpx"), "the core imports only the standard library", id="core-third-party"
    ),
    pytest.param(
        _graph(ai_search___grammar=f"{S}.errors"),
        "the core imports only the standard library",
        id="core-imports-server",
    ),
    pytest.param(
        _graph(ai_search___grammar="ai_search_web.dom"), "only the standard library", id="core-imports-page"
    ),
    pytest.param(
        _graph(ai_search_web__page=f"{S}.errors"), "never import each other", id="page-imports-server"
    ),
    pytest.param(
        _graph(ai_search_server__rest="ai_search_web.api"),
        "never import each other",
        id="server-imports-page",
    ),
    pytest.param(_graph(ai_search_web__page="httpx"), "the browser runtime", id="page-third-party"),
    pytest.param(
        _graph(ai_search_server__rest=f"{S}.routes.search"), "downwards only", id="rest-imports-routes"
    ),
    pytest.param(
        _graph(ai_search_server__store__base=f"{S}.services"), "downwards only", id="store-imports-services"
    ),
    pytest.param(
        _graph(ai_search_server__retrieval__wiring=f"{S}.importer"), "two parts of one layer", id="siblings"
    ),
    pytest.param(
        _graph(ai_search_server__routes__search=f"{S}.mcp.catalog"), "two parts of one layer", id="routes-mcp"
    ),
    pytest.param(
        _graph(ai_search_server__answers__records=f"{S}.store.sqlite"),
        "only its interface is imported",
        id="service-imports-sqlite",
    ),
    pytest.param(
        _graph(ai_search_server__store__base=f"{S}.store.sqlite"),
        "the store's interface imports no implementation",
        id="protocol-imports-implementation",
    ),
    pytest.param(
        _graph(ai_search_server__answers__provider="ai_search._constants"),
        "a private module is imported only inside ai_search",
        id="private-module",
    ),
    pytest.param(_graph(ai_search_server__gadgets=f"{S}.errors"), "is in no layer", id="unknown-part"),
]


@pytest.mark.parametrize(("graph", "why"), FAILING_GRAPHS)
def test_an_import_against_the_rules_is_found(graph: Graph, why: str) -> None:
    found = violations(graph)
    assert found, "the rule let the import through"
    assert any(why in line for line in found), found


def test_imports_the_rules_allow_are_not_reported() -> None:
    graph = _graph(
        ai_search="json re ai_search._grammar",
        ai_search___grammar="dataclasses",
        ai_search_web__page="js pyodide.ffi ai_search ai_search_web.dom",
        ai_search_web__dom="js",
        ai_search_server__routes__search=f"starlette {S}.rest {S}.store.records {S}.retrieval.search_service",
        ai_search_server__rest=f"{S}.services {S}.errors {S}.store.base",
        ai_search_server__services=f"{S}.store.base {S}.outbound",
        ai_search_server__store=f"{S}.store.base {S}.store.sqlite",
        ai_search_server__store__sqlite=f"sqlite3 {S}.store.base {S}.store.schema {S}.store.rules",
        ai_search_server__store__base=f"{S}.store.records",
        ai_search_server__outbound=f"{S}.outbound._client",
    )
    assert violations(graph) == []
    assert cycles(graph) == []


@pytest.mark.parametrize(
    ("graph", "cycle"),
    [
        pytest.param(_graph(a="b", b="a"), ["a", "b"], id="two"),
        pytest.param(_graph(a="b", b="c", c="a", d="a"), ["a", "b", "c"], id="three-and-a-tail"),
        pytest.param(_graph(a="a"), ["a"], id="itself"),
    ],
)
def test_a_cycle_is_found(graph: Graph, cycle: list[str]) -> None:
    assert cycles(graph) == [cycle]


@pytest.mark.parametrize(
    ("source", "module", "is_package", "expected"),
    [
        pytest.param(
            "from . import errors, Thing", "p.rest", False, {"p.errors", "p"}, id="sibling-and-name"
        ),
        pytest.param("from ..store import base", "p.routes.x", False, {"p.store.base"}, id="parent-package"),
        pytest.param("from .base import Store", "p.store", True, {"p.store.base"}, id="from-a-package"),
        pytest.param("import os.path, json", "p.x", False, {"os.path", "json"}, id="absolute"),
        pytest.param(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .errors import E\n"
            "def f():\n    from .store import open_store\n",
            "p.cli",
            False,
            {"typing", "p.errors", "p.store"},
            id="type-only-and-lazy-count",
        ),
    ],
)
def test_imports_are_read_as_python_resolves_them(
    source: str, module: str, is_package: bool, expected: set[str]
) -> None:
    known = {"p", "p.errors", "p.rest", "p.store", "p.store.base", "p.routes", "p.routes.x", "p.cli"}
    assert imports_in(source, module, is_package=is_package, known=known) == expected


# -- the real tree -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_graph() -> dict[str, frozenset[str]]:
    return import_graph(PY)


def test_the_real_graph_is_read_whole(real_graph: Graph) -> None:
    """Not vacuous: the three packages are found with the edges everyone knows of."""
    assert {CORE, PAGE, SERVER} <= real_graph.keys()
    assert f"{SERVER}.rest" in real_graph[f"{SERVER}.routes.search"]
    assert f"{SERVER}.store.base" in real_graph[f"{SERVER}.services"]
    assert CORE in real_graph[f"{PAGE}.page"]


def test_py_has_no_import_cycle(real_graph: Graph) -> None:
    assert cycles(real_graph) == []


def test_py_imports_run_one_way(real_graph: Graph) -> None:
    assert violations(real_graph) == []


def test_every_server_part_has_a_layer_and_the_document_names_it(real_graph: Graph) -> None:
    parts = {_part(name) for name in real_graph if _top(name) == SERVER}
    assert parts == {part for layer in SERVER_LAYERS for part in layer}, "SERVER_LAYERS is not the tree"
    doc = ARCHITECTURE_DOC.read_text(encoding="utf-8")
    missing = [part for part in parts if part and f"`{part}" not in doc]
    assert missing == [], f"docs/architecture.md does not place {missing}"
