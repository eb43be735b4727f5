"""The page's configuration cannot drift from the code: pyscript.toml maps every module."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


def test_pyscript_toml_lists_every_module_of_both_packages() -> None:
    config = tomllib.loads((ROOT / "pyscript.toml").read_text(encoding="utf-8"))
    expected = {
        f"./py/{package}/{path.name}": f"./{package}/{path.name}"
        for package in ("ai_search", "ai_search_web")
        for path in (ROOT / "py" / package).glob("*.py")
    }
    assert config["files"] == expected


def test_the_interpreter_and_every_page_file_are_served_locally() -> None:
    config = tomllib.loads((ROOT / "pyscript.toml").read_text(encoding="utf-8"))
    assert config["interpreter"] == "./static/pyodide-loader.mjs"
    assert "packages" not in config  # micropip would need the network
    html = (ROOT / "index.html").read_text(encoding="utf-8")
    for reference in re.findall(r'(?:src|href)="([^"]+)"', html):
        assert reference.startswith(("./", "data:")), reference
        if reference.startswith("./") and "/vendor/" not in reference:
            assert (ROOT / reference).is_file(), reference


def test_the_vendored_versions_are_the_ones_the_page_names() -> None:
    """index.html, the boot and loader modules name the versioned vendor folders setup creates."""
    package = (ROOT / "package.json").read_text(encoding="utf-8")
    pyscript = re.search(r'"@pyscript/core": "([^"]+)"', package)
    pyodide = re.search(r'"pyodide": "([^"]+)"', package)
    assert pyscript and pyodide
    texts = [(ROOT / name).read_text(encoding="utf-8") for name in
             ("static/pyscript-boot.js", "static/pyodide-loader.mjs", "index.html")]  # fmt: skip
    assert f"pyscript-{pyscript[1]}/" in texts[0]
    assert f"pyodide-{pyodide[1]}/" in texts[1]
    assert f"pyscript-{pyscript[1]}/" in texts[2] and f"pyodide-{pyodide[1]}/" in texts[2]


def test_the_pages_preload_only_files_that_exist() -> None:
    """The modulepreload links of both pages name vendored files scripts/setup really made (a
    PyScript or Pyodide upgrade renames its chunks)."""
    if not (ROOT / "static/vendor").is_dir():
        pytest.skip("static/vendor is not set up (scripts/setup vendors it)")
    for name in ("index.html", "embed.html"):
        html = (ROOT / name).read_text(encoding="utf-8")
        preloads = re.findall(r'<link rel="modulepreload" href="\./([^"]+)"', html)
        assert len(preloads) >= 10, name
        for reference in preloads:
            assert (ROOT / reference).is_file(), f"{name}: {reference}"
