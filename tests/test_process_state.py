"""State a server process keeps for itself, read from the source: each kind is known and safe.

Several proxies on one workspace must not disagree (docs/deploy.md, "Several proxies"): whatever a
process keeps in memory must be a copy of something shared, or a cap on its own resources, never
the only record of something another process would need. Two shapes of such state are found here
with the standard library's ``ast``, in the server's code (``py/ai_search_server``):

- a module-level container that starts empty (``{}``, ``[]``, ``set()``, ``OrderedDict()``...) or a
  function cached for the process's life (``functools.cache``, ``lru_cache``): a cache, or a registry;
- a secret drawn while a module loads or an object is built (``secrets.*`` at module level or in an
  ``__init__``): a key that would differ between two processes, as the OAuth consent-ticket key did.

Each one found must be in :data:`KNOWN` with the reason it is safe per process; a new one fails
until it is moved to the store or Redis, or added here with its reason. State inside objects
(the search index, a listener queue, the Rocket.Chat sign-in cache) is not found this way; the
table in docs/deploy.md covers it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SERVER = Path(__file__).resolve().parents[1] / "py" / "ai_search_server"

# (module path under ai_search_server, name) -> why keeping it per process is safe.
KNOWN: dict[tuple[str, str], str] = {
    ("accept_header.py", "accepts"): "a pure function of the Accept header",
    ("encoding.py", "_cache"): "compressed copies of the release's page files",
    ("outbound/_transport.py", "_default_ssl_context"): "the system's CA bundle, loaded once",
    ("settings.py", "_hints"): "the Settings class's type hints",
    ("static.py", "_digests"): "digests of the release's page files, the same in every process",
    ("static.py", "_bundles"): "the keystroke stage's bundle per digest of its files, made from the release's files: the same in every process",
    ("store/names.py", "confusable_keys"): "a pure function of a room name",
    ("store/passwords.py", "_DUMMY_SALT"): "hashes a password for an unknown user, only for timing; never compared",
    ("store/rules.py", "check_username"): "a pure function of a username",
    ("store/rules.py", "check_room_name"): "a pure function of a room name",
}

_EMPTY_CONTAINER_CALLS = frozenset({"dict", "list", "set", "OrderedDict", "deque", "defaultdict"})


def _is_empty_container(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Dict):
        return not value.keys
    if isinstance(value, (ast.List, ast.Set)):
        return not value.elts
    if isinstance(value, ast.Call) and not value.args and not value.keywords:
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name in _EMPTY_CONTAINER_CALLS
    return False


def _draws_a_secret(node: ast.AST) -> bool:
    return any(
        isinstance(sub, ast.Call) and ast.unparse(sub.func).startswith("secrets.") for sub in ast.walk(node)
    )


def _targets(node: ast.Assign | ast.AnnAssign) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [ast.unparse(t) for t in targets]


def process_state(source: str) -> Iterator[tuple[str, str]]:
    """(name, what) of every piece of per-process state of the two shapes above in ``source``."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            if _is_empty_container(node.value):
                yield from ((name, "an empty container at module level") for name in _targets(node))
            elif node.value is not None and _draws_a_secret(node.value):
                yield from ((name, "a secret drawn at import") for name in _targets(node))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            "cache" in ast.unparse(d) for d in node.decorator_list
        ):
            yield node.name, "a function cached for the process's life"
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__" and _draws_a_secret(item):
                    yield f"{node.name}.__init__", "a secret drawn when an object is built"


def test_the_finder_sees_each_shape() -> None:
    source = (
        "import secrets, functools\n"
        "_seen = {}\n_TABLE = {'a': 1}\n_KEY = secrets.token_bytes(32)\n"
        "@functools.cache\ndef f(x): return x\n"
        "class Tickets:\n    def __init__(self):\n        self._key = secrets.token_bytes(32)\n"
        "    def issue(self):\n        return secrets.token_urlsafe(32)\n"
    )
    assert sorted(name for name, _ in process_state(source)) == ["Tickets.__init__", "_KEY", "_seen", "f"]


def test_every_piece_of_process_state_is_known_and_safe() -> None:
    found = {
        (path.relative_to(SERVER).as_posix(), name): what
        for path in sorted(SERVER.rglob("*.py"))
        for name, what in process_state(path.read_text(encoding="utf-8"))
    }
    unknown = {key: what for key, what in found.items() if key not in KNOWN}
    assert unknown == {}, (
        "per-process state that two proxies could disagree on: keep it in the store or Redis, or add it"
        f" to KNOWN with why it is safe per process: {unknown}"
    )
    gone = sorted(set(KNOWN) - set(found))
    assert gone == [], f"KNOWN names state the source no longer has: {gone}"
