"""The page's configuration cannot drift from the code: everything it loads is local and exists."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from ai_search_server.static import BUNDLES, page_source

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("index.html", "embed.html")
# What the pages preload that the server makes per request rather than serves from a file:
# MicroPython's bundles, at the digest the server writes in (static.Bundle).
MADE_BY_THE_SERVER = tuple(bundle.placeholder for bundle in BUNDLES)


@pytest.mark.parametrize("name", PAGES)
def test_every_file_a_page_names_is_served_locally(name: str) -> None:
    html = page_source(ROOT, name)
    for reference in re.findall(r'(?:src|href)="([^"]+)"', html):
        assert reference.startswith(("./", "data:")), reference
        if reference.startswith("./") and "/vendor/" not in reference and reference not in MADE_BY_THE_SERVER:
            assert (ROOT / reference).is_file(), reference


@pytest.mark.parametrize("name", PAGES)
def test_pyscript_runs_the_one_entry_script_from_the_config(name: str) -> None:
    """PyScript starts the page's Python from pyscript.toml; nothing else in a page is Python for
    anything to run (no inline Python, no <py-*> elements, no MicroPython)."""
    html = page_source(ROOT, name)
    assert 'src="./static/pyscript-boot.mjs"' in html
    scripts = re.findall(r"<script\b[^>]*\btype=\"m?py\"[^>]*>", html)
    assert scripts == ['<script type="py" src="./py/ai_search_web/main.py" config="./pyscript.toml">']
    assert '<script type="py" src="./py/ai_search_web/main.py" config="./pyscript.toml"></script>' in html
    assert not re.search(r"<py-|<mpy-|type=\"mpy\"", html)


def test_the_config_lists_every_page_module_and_keeps_pyscript_quiet() -> None:
    """[files] is the one list of the page's Python files: every module of both packages, each to
    the same path in Pyodide's file system; the interpreter is ours and the error box is off."""
    config = tomllib.loads((ROOT / "pyscript.toml").read_text(encoding="utf-8"))
    expected = {
        f"./py/{package}/{path.name}": f"./{package}/{path.name}"
        for package in ("ai_search", "ai_search_web")
        for path in sorted((ROOT / "py" / package).glob("*.py"))
    }
    assert config["files"] == expected
    assert config["interpreter"] == "./static/pyscript-interpreter.mjs"
    assert "!error" in config["plugins"]
    assert "packages" not in config  # nothing through micropip: the page works offline


def test_the_vendored_versions_are_the_ones_the_page_names() -> None:
    """The loader, the snapshot worker and the pages name the versioned vendor folder setup creates."""
    package = (ROOT / "package.json").read_text(encoding="utf-8")
    pyodide = re.search(r'"pyodide": "([^"]+)"', package)
    assert pyodide
    for name in ("static/pyodide-loader.mjs", "static/pyodide-snapshot-worker.mjs", *PAGES):
        text = page_source(ROOT, name) if name in PAGES else (ROOT / name).read_text(encoding="utf-8")
        assert f"pyodide-{pyodide[1]}/" in text, name


def test_the_pages_preload_only_files_that_exist() -> None:
    """The modulepreload links of both pages name files that exist (a Pyodide or PyScript upgrade
    renames its folder, a PyScript upgrade its chunks); each page preloads the loader and its
    format, the two Pyodide modules, PyScript's two and MicroPython's (the keystroke stage)."""
    if not (ROOT / "static/vendor").is_dir():
        pytest.skip("static/vendor is not set up (scripts/setup vendors it)")
    for name in PAGES:
        html = page_source(ROOT, name)
        preloads = re.findall(r'<link rel="modulepreload" href="\./([^"]+)"', html)
        assert len(preloads) == 7, name
        for reference in preloads:
            assert (ROOT / reference).is_file(), f"{name}: {reference}"
