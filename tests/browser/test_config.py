"""The page's configuration cannot drift from the code: everything it loads is local and exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("index.html", "embed.html")


@pytest.mark.parametrize("name", PAGES)
def test_every_file_a_page_names_is_served_locally(name: str) -> None:
    html = (ROOT / name).read_text(encoding="utf-8")
    for reference in re.findall(r'(?:src|href)="([^"]+)"', html):
        assert reference.startswith(("./", "data:")), reference
        if reference.startswith("./") and "/vendor/" not in reference:
            assert (ROOT / reference).is_file(), reference


@pytest.mark.parametrize("name", PAGES)
def test_no_page_runs_pyscript_or_inline_python(name: str) -> None:
    """Python starts from static/python-boot.mjs; nothing in a page is Python for anything to run."""
    html = (ROOT / name).read_text(encoding="utf-8")
    assert 'src="./static/python-boot.mjs"' in html
    assert not re.search(r'type="m?py"|<py-|pyscript', html)


def test_the_vendored_versions_are_the_ones_the_page_names() -> None:
    """The loader, the snapshot worker and the pages name the versioned vendor folder setup creates."""
    package = (ROOT / "package.json").read_text(encoding="utf-8")
    pyodide = re.search(r'"pyodide": "([^"]+)"', package)
    assert pyodide
    for name in ("static/pyodide-loader.mjs", "static/pyodide-snapshot-worker.mjs", *PAGES):
        assert f"pyodide-{pyodide[1]}/" in (ROOT / name).read_text(encoding="utf-8"), name


def test_the_pages_preload_only_files_that_exist() -> None:
    """The modulepreload links of both pages name files that exist (a Pyodide upgrade renames its
    folder); each page preloads the loader and the two Pyodide modules it imports."""
    if not (ROOT / "static/vendor").is_dir():
        pytest.skip("static/vendor is not set up (scripts/setup vendors it)")
    for name in PAGES:
        html = (ROOT / name).read_text(encoding="utf-8")
        preloads = re.findall(r'<link rel="modulepreload" href="\./([^"]+)"', html)
        assert len(preloads) == 3, name
        for reference in preloads:
            assert (ROOT / reference).is_file(), f"{name}: {reference}"
