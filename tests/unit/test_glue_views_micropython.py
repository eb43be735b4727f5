"""The page's view modules (results, context, answer, search_box, page) give on MicroPython 1.28 what
they give on CPython: their readings of the data the server sends (room labels, the empty state's
relaxations, the answer's provider label and citation spans, what the answer route is told) and of
the JavaScript values the fallback script and the keystroke stage leave (``ffi.to_py`` there).

MicroPython runs in Node (as in tests/unit/test_core_micropython.py), without a DOM: what the views
draw is the browser tests' (tests/browser/, with ``AI_SEARCH_PAGE_PYTHON=micropython``).
``_glue_views_runner.py`` runs the cases on both. Skipped when node or the vendored MicroPython is
missing.
"""

import datetime
import json
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit import _glue_views_runner
from tests.unit.test_core_micropython import (
    HEAP_BYTES,
    NODE_TIMEOUT_SECONDS,
    ROOT,
    VENDOR,
    _needs_micropython,
)

RUNNER = Path(_glue_views_runner.__file__)

_NODE_SCRIPT = r"""
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
const [vendor, root, runner, cases, heapsize] = process.argv.slice(2);
const { loadMicroPython } = await import(pathToFileURL(`${vendor}/micropython.mjs`).href);
let log = "";
const mp = await loadMicroPython({
  url: `${vendor}/micropython.wasm`,
  heapsize: Number(heapsize),
  stdout: (line) => { log += line + "\n"; },
  stderr: (line) => { log += line + "\n"; },
});
for (const pkg of ["ai_search", "ai_search_web"]) {
  mp.FS.mkdirTree(`/lib/${pkg}`);
  for (const name of fs.readdirSync(path.join(root, "py", pkg))) {
    if (name.endsWith(".py")) mp.FS.writeFile(`/lib/${pkg}/${name}`, fs.readFileSync(path.join(root, "py", pkg, name)));
  }
}
mp.FS.writeFile("/lib/glue_views_runner.py", fs.readFileSync(runner));
mp.FS.writeFile("/cases.json", fs.readFileSync(cases));
try {
  mp.runPython("import sys\nsys.path.insert(0, '/lib')\nimport glue_views_runner\nglue_views_runner.main('/cases.json', '/results.json')");
} catch (error) {
  process.stderr.write(log + String(error && error.message || error));
  process.exit(1);
}
process.stdout.write(mp.FS.readFile("/results.json", { encoding: "utf8" }));
"""

CASES: dict[str, Any] = {
    "rooms": [
        None,
        [],
        {"t": "c", "name": "ops"},
        {"t": "p", "fname": "Équipe Ω", "name": "equipe"},
        {"t": "d", "name": "alice__zoë__日本"},
        {"t": "d", "name": "__alice____bob__"},
        {"t": "d", "name": ""},
        {"t": "l", "fname": "", "name": "livechat"},
        {"t": 3, "name": 7},
    ],
    "digits": ["", "0", "12", "007", "١٢", "٣", "1a", " 1", "1.5", "-3", "²"],
    "relaxations": [
        [None, {}],
        [{"relaxations": "x"}, {}],
        [
            {
                "relaxations": [
                    {"q": "deploy", "count": 3, "drop": "in:#ops", "tokens": ["in:#ops"]},
                    {"q": "\u3000\u00a0", "count": 3},
                    {"q": "x", "count": 2, "more": True, "drop": "all"},
                    {"q": "y", "count": 1, "drop": "quotes"},
                    {"q": "z", "count": True},
                    {"q": "z", "count": 0},
                    {"q": "z", "count": 1.5},
                    {"q": "w", "count": 5, "drop": "from", "tokens": ["from:@zoë", 3, "-has:pdf"]},
                    {"q": "v", "count": 9, "drop": "sort", "tokens": "sort:new"},
                    {"q": 4, "count": 9},
                    "not an offer",
                ],
                "text": "Nothing matched all of it.",
            },
            {"in:#ops": "#ops", "from:@zoë": "@zoë"},
        ],
    ],
    "providers": [
        None,
        "openai",
        {},
        {"name": "extractive", "model": "x"},
        {"name": "openai", "model": "gpt-5.1"},
        {"model": "mistral-small"},
        {"name": "ollama"},
        {"name": 3, "model": ["m"]},
    ],
    "spans": [None, 7, "", "1,3", "3,1", "2,2", "0,10", "a,b", "1,", ",3", "١,٣", "1,3,5", " 1,3"],
    "sources": [
        {"_id": "a", "score": 0.5},
        {"_id": "b", "score": True},
        {"_id": "c"},
        {"_id": "d", "score": 2},
        {"_id": "e", "score": "0.9"},
        {"_id": "f", "score": None},
    ],
    "messages": [
        {"_id": "m1", "text": "deploy failed"},
        {"_id": "m2", "text": 3, "u": {"username": "zoë"}},
        {"_id": "m3", "msg": "kept?"},
    ],
    # JavaScript values (parsed from these texts in Node): MicroPython only.
    "js_values": [
        '{"intelligent": [{"_id": "a", "text": "é"}], "meta": {"n": 1.5, "ok": true}}',
        "[1, 2]",
        "3",
        '"x"',
    ],
    "fallbacks": [
        '{"rooms": [{"_id": "r1", "name": "ops"}, 1, "x", null]}',
        '{"rooms": "no"}',
        "{}",
        '{"rooms": null}',
    ],
    "stages": [
        '{"aiSearchKeys": {"filters": " in:#ops\u3000from:@zoë\u00a0"}}',
        '{"aiSearchKeys": {"filters": null}}',
        '{"aiSearchKeys": {}}',
        "{}",
    ],
}


@pytest.fixture(scope="module")
def views() -> Iterator[types.ModuleType]:
    """The runner on CPython, with stand-ins for the browser's modules (the views call none of them
    in these cases); sys.modules is restored afterwards."""
    before = dict(sys.modules)
    ffi = types.ModuleType("pyodide.ffi")
    for name in ("JsException", "JsNull", "JsProxy"):
        setattr(ffi, name, type(name, (Exception,), {}))
    ffi.create_proxy = ffi.to_js = lambda value, **_options: value  # type: ignore[attr-defined]
    pyodide = types.ModuleType("pyodide")
    pyodide.ffi = ffi  # type: ignore[attr-defined]
    for name in [name for name in sys.modules if name.startswith("ai_search_web")]:
        sys.modules.pop(name)
    sys.modules.update({"js": types.ModuleType("js"), "pyodide": pyodide, "pyodide.ffi": ffi})
    try:
        yield _glue_views_runner
    finally:
        sys.modules.clear()
        sys.modules.update(before)


def run_on_micropython(tmp_path: Path) -> dict[str, Any]:
    node = _needs_micropython()
    (tmp_path / "run.mjs").write_text(_NODE_SCRIPT, encoding="utf-8")
    (tmp_path / "cases.json").write_text(json.dumps(CASES, ensure_ascii=False), encoding="utf-8")
    done = subprocess.run(
        [node, str(tmp_path / "run.mjs"), str(VENDOR), str(ROOT), str(RUNNER), str(tmp_path / "cases.json"),
         str(HEAP_BYTES * 4)],
        capture_output=True,
        timeout=NODE_TIMEOUT_SECONDS,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    results: dict[str, Any] = json.loads(done.stdout.decode())
    return results


def test_the_views_read_data_on_micropython_as_on_cpython(views: types.ModuleType, tmp_path: Path) -> None:
    got = run_on_micropython(tmp_path)
    expected = json.loads(json.dumps(views.run(CASES)))
    assert {key: got[key] for key in expected} == expected


def test_the_views_read_javascript_values_on_micropython_as_pyodide_converts_them(tmp_path: Path) -> None:
    got = run_on_micropython(tmp_path)["js"]
    converted = [json.loads(text) for text in CASES["js_values"]]
    assert got["js_dict"] == [
        _glue_views_runner._plain(value) if isinstance(value, dict) else None for value in converted
    ]
    assert got["items"] == [[[["_id", "r1"], ["name", "ops"]]], None, None, None]
    assert got["stage_filters"] == ["in:#ops\u3000from:@zoë", "", "", ""]
    assert abs(datetime.date.fromisoformat(got["today"]) - datetime.date.today()) <= datetime.timedelta(
        days=1
    )
    assert isinstance(got["time_zone"], str) and got["time_zone"]
