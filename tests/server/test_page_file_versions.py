"""The page's Python files are named by content digest in pyscript.toml, so browsers keep them."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import httpx
import pytest

from ai_search_server.static import IMMUTABLE_CACHE, REVALIDATE_CACHE, content_digest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.anyio


async def test_the_served_config_names_every_python_file_by_its_digest(client: httpx.AsyncClient) -> None:
    served = tomllib.loads((await client.get("/pyscript.toml")).text)
    on_disk = tomllib.loads((ROOT / "pyscript.toml").read_text(encoding="utf-8"))
    assert served["interpreter"] == on_disk["interpreter"]
    expected = {
        f"{source}?v={content_digest(ROOT / source.removeprefix('./'))}": target
        for source, target in on_disk["files"].items()
    }
    assert served["files"] == expected


async def test_a_file_at_its_current_digest_is_immutable(client: httpx.AsyncClient) -> None:
    served = tomllib.loads((await client.get("/pyscript.toml")).text)
    source = next(s for s in served["files"] if "/_grammar.py?" in s)
    r = await client.get(source.removeprefix("."))
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
