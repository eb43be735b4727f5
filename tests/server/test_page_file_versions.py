"""The page's Python files are listed by content digest (pyscript.toml as served, GET
/py/files.json), so browsers keep them, and the pages carry the server's query limit."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import httpx
import pytest

from ai_search import MAX_SEARCH_QUERY_LENGTH
from ai_search_server.app import MAX_QUERY_PLACEHOLDER
from ai_search_server.static import (
    IMMUTABLE_CACHE,
    PAGE_CONFIG,
    PAGE_PACKAGES,
    REVALIDATE_CACHE,
    content_digest,
    python_files,
)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.anyio


async def test_the_file_list_names_every_page_module_by_its_digest(client: httpx.AsyncClient) -> None:
    """Every module of both page packages, and nothing else (the server's own code is not listed)."""
    served = (await client.get("/py/files.json")).json()["files"]
    expected = {
        f"{package}/{path.name}": f"/py/{package}/{path.name}?v={content_digest(path)}"
        for package in PAGE_PACKAGES
        for path in (ROOT / "py" / package).glob("*.py")
    }
    assert served == expected
    assert {path.split("/")[0] for path in served} == {"ai_search", "ai_search_web"}


def test_the_file_list_is_the_configs_files(tmp_path: Path) -> None:
    """GET /py/files.json is pyscript.toml's [files], with each source at its digest; a file the
    config names but the folder lacks keeps its plain URL (PyScript reports it)."""
    (tmp_path / "py" / "ai_search_web").mkdir(parents=True)
    (tmp_path / "py" / "ai_search_web" / "brand_new.py").write_text("X = 1\n", encoding="utf-8")
    (tmp_path / PAGE_CONFIG).write_text(
        '[files]\n"./py/ai_search_web/brand_new.py" = "./ai_search_web/brand_new.py"\n'
        '"./py/ai_search_web/gone.py" = "./ai_search_web/gone.py"\n',
        encoding="utf-8",
    )
    digest = content_digest(tmp_path / "py" / "ai_search_web" / "brand_new.py")
    assert python_files(tmp_path) == {
        "ai_search_web/brand_new.py": f"/py/ai_search_web/brand_new.py?v={digest}",
        "ai_search_web/gone.py": "/py/ai_search_web/gone.py",
    }


async def test_the_served_config_names_the_same_urls(client: httpx.AsyncClient) -> None:
    """PyScript reads pyscript.toml with the digests added; the boot module prefetches the list's
    URLs, so both must be the same for the HTTP cache to answer PyScript."""
    served = (await client.get("/py/files.json")).json()["files"]
    config = tomllib.loads((await client.get(f"/{PAGE_CONFIG}")).text)
    assert {source.removeprefix("."): target for source, target in config["files"].items()} == {
        url: "./" + path for path, url in served.items()
    }
    assert config["interpreter"] == "./static/pyscript-interpreter.mjs"


async def test_a_file_at_its_current_digest_is_immutable(client: httpx.AsyncClient) -> None:
    served = (await client.get("/py/files.json")).json()["files"]
    r = await client.get(served["ai_search/_grammar.py"])
    assert r.status_code == 200
    assert r.headers["cache-control"] == IMMUTABLE_CACHE
    assert r.content == (ROOT / "py/ai_search/_grammar.py").read_bytes()


@pytest.mark.parametrize(
    "query", [pytest.param("", id="no-version"), pytest.param("?v=0123456789abcdef", id="stale-version")]
)
async def test_any_other_version_is_revalidated(client: httpx.AsyncClient, query: str) -> None:
    """An old page's URL (or none) still gets today's file, but never one a browser may keep."""
    r = await client.get(f"/py/ai_search/_grammar.py{query}")
    assert r.status_code == 200
    assert r.headers["cache-control"] == REVALIDATE_CACHE


def test_a_digest_changes_with_the_content(tmp_path: Path) -> None:
    path = tmp_path / "module.py"
    path.write_text("A = 1\n", encoding="utf-8")
    first = content_digest(path)
    path.write_text("A = 22\n", encoding="utf-8")
    assert content_digest(path) != first
    assert re.fullmatch(r"[0-9a-f]{16}", first)


@pytest.mark.parametrize("path", [pytest.param("/", id="page"), pytest.param("/embed", id="widget")])
async def test_the_search_box_holds_what_the_server_takes(client: httpx.AsyncClient, path: str) -> None:
    """One number: the box's maxlength is the limit ai.search checks (MAX_SEARCH_QUERY_LENGTH)."""
    html = (await client.get(path)).text
    assert MAX_QUERY_PLACEHOLDER not in html
    box = re.search(r'<input id="search-box"[^>]*>', html, re.DOTALL)
    assert box is not None and f'maxlength="{MAX_SEARCH_QUERY_LENGTH}"' in box[0]
