"""GET /py/keys.json and /py/keys-bundle.json: the keystroke stage's files (static/keys-boot.mjs runs them on MicroPython), one
list built from the core's KEYSTROKE_MODULES and PAGE_MODULES and the stage's glue modules, each URL at its digest
and the same URL the page's own list names, so one HTTP cache entry serves both runtimes."""

from __future__ import annotations

import ast
import base64
import json
import re
from pathlib import Path

import httpx
import pytest

from ai_search import KEYSTROKE_MODULES, PAGE_MODULES
from ai_search_server.static import (
    IMMUTABLE_CACHE,
    KEYS_ENTRY,
    KEYS_GLUE_MODULES,
    REVALIDATE_CACHE,
    _mpy_cross,
    content_digest,
    keys_bundle,
    keys_bundle_url,
    keys_files,
)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.anyio


def _expected() -> dict[str, str]:
    names = [("ai_search", "__init__"), *(("ai_search", name) for name in KEYSTROKE_MODULES + PAGE_MODULES)]
    names += [("ai_search_web", name) for name in KEYS_GLUE_MODULES]
    return {
        f"{package}/{name}.py": f"/py/{package}/{name}.py?v={content_digest(ROOT / 'py' / package / f'{name}.py')}"
        for package, name in names
    }


async def test_the_stage_list_is_the_cores_keystroke_modules_and_the_glue(client: httpx.AsyncClient) -> None:
    response = await client.get("/py/keys.json")
    assert response.status_code == 200
    assert response.headers["cache-control"] == REVALIDATE_CACHE
    listing = response.json()
    assert listing == {"files": _expected(), "entry": KEYS_ENTRY}
    assert next(iter(listing["files"])) == "ai_search/__init__.py"  # the package before its modules


async def test_the_stage_files_are_the_pages_urls_and_immutable(client: httpx.AsyncClient) -> None:
    stage = (await client.get("/py/keys.json")).json()["files"]
    page = (await client.get("/py/files.json")).json()["files"]
    assert stage.items() <= page.items()
    for path, url in stage.items():
        r = await client.get(url)
        assert r.status_code == 200, url
        assert r.headers["cache-control"] == IMMUTABLE_CACHE, url
        assert r.content == (ROOT / "py" / path).read_bytes()


def test_the_glue_imports_only_the_stage_and_the_core() -> None:
    """Every ai_search_web module a glue module imports is in the stage's list (MicroPython would
    fail on a missing one only in the browser), and the entry module is one of them."""
    glue = set(KEYS_GLUE_MODULES)
    assert KEYS_ENTRY.removeprefix("ai_search_web.") in glue
    for name in glue:
        tree = ast.parse((ROOT / "py" / "ai_search_web" / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                assert node.module.split(".")[0] in glue, f"{name}.py imports .{node.module}"


def test_a_module_the_core_lists_but_lacks_is_left_unversioned(tmp_path: Path) -> None:
    """The list follows the files on disk: a listed file that is missing keeps its plain URL (the
    stage then fails to start and the page goes on without it)."""
    (tmp_path / "py" / "ai_search").mkdir(parents=True)
    files = keys_files(tmp_path)
    assert files["ai_search/_grammar.py"] == "/py/ai_search/_grammar.py"


async def test_the_pages_name_the_bundle_of_the_same_files_at_its_digest(client: httpx.AsyncClient) -> None:
    """The stage fetches its files in one body, named by the page at its digest (one request on a
    first visit, none on a warm one); the bundle holds exactly the listed files, as they are."""
    listing = (await client.get("/py/keys.json")).json()
    for page in ("/", "/embed"):
        html = (await client.get(page)).text
        found = re.search(r'<link rel="preload" id="keys-bundle" href="\.(/py/keys-bundle\.json\?v=[0-9a-f]{16})"', html)
        assert found, page
        url = found[1]
    r = await client.get(url)
    assert r.status_code == 200
    assert r.headers["cache-control"] == IMMUTABLE_CACHE
    bundle = r.json()
    assert bundle["entry"] == listing["entry"] == KEYS_ENTRY
    assert set(bundle["files"]) | set(bundle["compiled"]) == set(listing["files"])
    assert not set(bundle["files"]) & set(bundle["compiled"])
    for path, source in bundle["files"].items():
        assert source == (ROOT / "py" / path).read_text(encoding="utf-8")
    for code in bundle["compiled"].values():  # MicroPython 1.28's .mpy: "M", format version 6
        assert base64.b64decode(code)[:2] == b"M\x06"
    stale = await client.get("/py/keys-bundle.json?v=0000000000000000")
    assert stale.headers["cache-control"] == REVALIDATE_CACHE


def test_the_bundle_digest_follows_the_files(tmp_path: Path) -> None:
    core = ("__init__", *KEYSTROKE_MODULES, *PAGE_MODULES)
    for package, names in (("ai_search", core), ("ai_search_web", KEYS_GLUE_MODULES)):
        (tmp_path / "py" / package).mkdir(parents=True)
        for name in names:
            (tmp_path / "py" / package / f"{name}.py").write_text(f"NAME = {name!r}\n", encoding="utf-8")
    before = keys_bundle_url(tmp_path)
    digest, body = keys_bundle(tmp_path)
    assert before.endswith(f"?v={digest}")
    sent = json.loads(body)
    assert "ai_search_web/keys.py" in {**sent["files"], **sent["compiled"]}
    (tmp_path / "py" / "ai_search" / "_grammar.py").write_text("NAME = 'changed'\n", encoding="utf-8")
    assert keys_bundle_url(tmp_path) != before


@pytest.mark.skipif(_mpy_cross() is None, reason="mpy-cross is not installed (the bundle carries sources)")
def test_with_mpy_cross_every_stage_module_is_sent_as_bytecode() -> None:
    _digest, body = keys_bundle(ROOT)
    sent = json.loads(body)
    assert sent["files"] == {}
    assert set(sent["compiled"]) == set(keys_files(ROOT))
