"""The page's I/O glue on MicroPython 1.28 gives what it gives on CPython: the REST client's query
strings (``urllib.parse.urlencode``'s, which MicroPython lacks), its calls and its reading of a
streamed answer from a ``ReadableStream``, and the session's record.

MicroPython runs in Node (as in tests/unit/test_core_micropython.py) with Node's own ``fetch``,
``Response`` and ``ReadableStream`` and a ``fetch`` of this test's making that answers each case;
``_glue_io_runner.py`` runs the cases there. The query encoder is also checked on CPython against
``urlencode`` itself, with hypothesis. Skipped when node or the vendored MicroPython is missing.
"""

import json
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from ai_search import EventStreamParser
from tests.unit.test_core_micropython import (
    HEAP_BYTES,
    NODE_TIMEOUT_SECONDS,
    ROOT,
    VENDOR,
    _needs_micropython,
)

# Runs the cases on MicroPython (it imports `js`: read, never imported here).
RUNNER = Path(__file__).resolve().parent / "_glue_io_runner.py"
# The browser of the cases: a fetch that answers `globalThis.scenario`, and counts cancels.
_FAKE_BROWSER = r"""
globalThis.cancelled = 0;
globalThis.unhandled = 0;
process.on("unhandledRejection", () => { globalThis.unhandled += 1; });
// The page's two stores: this tab's blocked (reading it throws, as in a sandboxed frame), this
// browser's a store of five characters at most (setItem throws past them, as over a quota).
globalThis.window = globalThis;
Object.defineProperty(globalThis, "sessionStorage", {
  configurable: true,
  enumerable: true,
  get() { throw new DOMException("The operation is insecure.", "SecurityError"); },
});
const kept = new Map();
globalThis.localStorage = {
  getItem: (key) => (kept.has(key) ? kept.get(key) : null),
  setItem: (key, value) => {
    if (String(value).length > 5) throw new DOMException("over the quota", "QuotaExceededError");
    kept.set(key, String(value));
  },
  removeItem: (key) => { kept.delete(key); },
};
globalThis.fetch = async (url, init) => {
  const s = globalThis.scenario;
  globalThis.lastCall = {
    url, method: init.method, headers: init.headers, signal: init.signal instanceof AbortSignal,
    credentials: init.credentials,
  };
  if (s.kind === "network") throw new TypeError("Failed to fetch");
  if (s.kind === "stream") {
    let next = 0;
    const body = new ReadableStream({
      pull(controller) {
        if (next < s.chunks.length) controller.enqueue(new Uint8Array(s.chunks[next++]));
        else if (s.broken) controller.error(new TypeError("network error"));
        else controller.close();
      },
      cancel() { globalThis.cancelled += 1; },
    }, { highWaterMark: 0 });
    return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
  }
  return new Response(s.text, { status: s.status, headers: s.headers });
};
"""

_NODE_SCRIPT = r"""
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
const [vendor, root, runner, cases, heapsize, fake] = process.argv.slice(2);
(0, eval)(fs.readFileSync(fake, "utf8"));
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
mp.FS.writeFile("/lib/glue_io_runner.py", fs.readFileSync(runner));
mp.FS.writeFile("/cases.json", fs.readFileSync(cases));
// A task, not a top-level await: MicroPython's top-level coroutine cannot be woken by asyncio.Event.
const finished = new Promise((resolve) => { globalThis.finished = resolve; });
try {
  mp.runPython("import sys\nsys.path.insert(0, '/lib')\nimport glue_io_runner\nglue_io_runner.start('/cases.json', '/results.json')");
  const failure = await finished;
  if (failure) throw new Error(failure);
} catch (error) {
  process.stderr.write(log + String(error && error.message || error));
  process.exit(1);
}
process.stdout.write(mp.FS.readFile("/results.json", { encoding: "utf8" }));
"""

_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_VALUES = st.one_of(_TEXT, st.integers(), st.booleans())
_PAIRS = st.lists(st.tuples(_TEXT, _VALUES), max_size=5)


def run_on_micropython(cases: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    node = _needs_micropython()
    (tmp_path / "run.mjs").write_text(_NODE_SCRIPT, encoding="utf-8")
    (tmp_path / "fake.js").write_text(_FAKE_BROWSER, encoding="utf-8")
    (tmp_path / "cases.json").write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")
    done = subprocess.run(
        [
            node,
            str(tmp_path / "run.mjs"),
            str(VENDOR),
            str(ROOT),
            str(RUNNER),
            str(tmp_path / "cases.json"),
            str(HEAP_BYTES * 4),
            str(tmp_path / "fake.js"),
        ],
        capture_output=True,
        timeout=NODE_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    results: dict[str, Any] = json.loads(done.stdout.decode())
    return results


# -- the query encoder on CPython -------------------------------------------------------------------


@pytest.fixture(scope="module")
def api() -> Iterator[types.ModuleType]:
    """``ai_search_web.api`` imported on CPython, with stand-ins for the browser's modules (it calls
    none of them at import but ``create_proxy``); sys.modules is restored afterwards."""
    before = dict(sys.modules)
    ffi = types.ModuleType("pyodide.ffi")
    for name in ("JsException", "JsNull", "JsProxy"):
        setattr(ffi, name, type(name, (Exception,), {}))
    ffi.create_proxy = ffi.to_js = lambda value, **_options: value  # type: ignore[attr-defined]
    pyodide = types.ModuleType("pyodide")
    pyodide.ffi = ffi  # type: ignore[attr-defined]
    for name in ("ai_search_web.api", "ai_search_web.ffi", "ai_search_web.messages"):
        sys.modules.pop(name, None)
    sys.modules.update({"js": types.ModuleType("js"), "pyodide": pyodide, "pyodide.ffi": ffi})
    try:
        import ai_search_web.api as module

        yield module
    finally:
        sys.modules.clear()
        sys.modules.update(before)


@given(_PAIRS)
def test_a_query_string_is_urlencodes_from_pairs(api: types.ModuleType, pairs: list[tuple[str, Any]]) -> None:
    assert api.encode_query(pairs) == urlencode(pairs)


@given(st.dictionaries(_TEXT, _VALUES, max_size=5))
def test_a_query_string_is_urlencodes_from_a_mapping(api: types.ModuleType, params: dict[str, Any]) -> None:
    assert api.encode_query(params) == urlencode(params)


@pytest.mark.parametrize(
    "params",
    [
        pytest.param({"q": "in:ops deploy", "intelligentCount": "6"}, id="the-search"),
        pytest.param({"selector": '{"term":"ops"}'}, id="a-lookup"),
        pytest.param({"msgId": "demo-pg-failover-12"}, id="a-context"),
        pytest.param({"q": "from:@zoë 日本 ~x_y.z-w +1 %20 &=?#/"}, id="every-kind-of-character"),
        pytest.param({}, id="nothing"),
    ],
)
def test_the_page_s_query_strings_are_urlencodes(api: types.ModuleType, params: dict[str, str]) -> None:
    assert api.encode_query(params) == urlencode(params)


# -- the same on MicroPython, with the calls and the stream -----------------------------------------


def _retry_after(value: Any) -> int | None:
    """The page's reading of Retry-After as it was written with str methods MicroPython lacks."""
    text = value.strip() if isinstance(value, str) else ""
    return int(text) if text.isdigit() and text.isascii() else None


def _chunks(text: str, size: int) -> list[list[int]]:
    data = text.encode()
    return [list(data[start : start + size]) for start in range(0, len(data), size)]


_EVENTS = (
    'event: delta\ndata: {"text": "Hel"}\n\nevent: delta\ndata: {"text": "lo wörld ✓"}\n\n: a comment\n\n'
    'event: done\ndata: {"answerId": "a1"}\n\n'
)
_STREAMS = [
    # (scenario, stop after this many events: 0 reads them all)
    ({"kind": "stream", "chunks": _chunks(_EVENTS, 5)}, 0),
    ({"kind": "stream", "chunks": _chunks(_EVENTS, 1000)}, 0),
    ({"kind": "stream", "chunks": _chunks(_EVENTS, 7)}, 1),
    ({"kind": "stream", "chunks": _chunks(_EVENTS[:40], 9), "broken": True}, 0),
    (
        {
            "kind": "json",
            "status": 200,
            "text": '{"answer": "é"}',
            "headers": {"content-type": "application/json"},
        },
        0,
    ),
    ({"kind": "json", "status": 200, "text": "[1]", "headers": {"content-type": "application/json"}}, 0),
    ({"kind": "json", "status": 503, "text": '{"errorType": "error-x"}', "headers": {}}, 0),
    ({"kind": "network"}, 0),
]
_JSON = {"content-type": "application/json"}
_GETS = [
    (
        {"kind": "json", "status": 200, "text": '{"data": {"x": [1, "é", null, true]}}', "headers": _JSON},
        [["q", "in:ops deploy"], ["intelligentCount", "6"]],
    ),
    ({"kind": "json", "status": 200, "text": "[1]", "headers": _JSON}, None),
    ({"kind": "json", "status": 200, "text": "not json", "headers": _JSON}, None),
    ({"kind": "json", "status": 401, "text": "{}", "headers": _JSON}, None),
    (
        {
            "kind": "json",
            "status": 429,
            "text": '{"errorType": "error-too-many"}',
            "headers": {"Retry-After": " 7 "},
        },
        None,
    ),
    ({"kind": "network"}, None),
]
_SIGNED_IN = [
    json.dumps({"userId": "u1", "authToken": "t", "username": "zoë", "name": "Zoë Ω"}),
    json.dumps({"userId": "u1", "authToken": "", "username": "a", "name": "b"}),
    json.dumps({"userId": "u1", "authToken": "t", "username": "a"}),
    "[1, 2]",
    "{not json",
]


def _expected_stream(scenario: dict[str, Any], stop: int) -> dict[str, Any]:
    if scenario["kind"] == "network":
        return {"events": [], "error": ["error-network", None], "cancelled": 0}
    if scenario["kind"] == "json":
        status, text = scenario["status"], scenario["text"]
        if status != 200:
            return {"events": [], "error": [json.loads(text)["errorType"], status], "cancelled": 0}
        data = json.loads(text)
        if not isinstance(data, dict):
            return {"events": [], "error": ["error-bad-response", status], "cancelled": 0}
        return {"events": [["done", json.dumps(data)]], "cancelled": 0}
    parser = EventStreamParser()
    events = [event for chunk in scenario["chunks"] for event in parser.feed(bytes(chunk))]
    if scenario.get("broken"):
        return {
            "events": [[e.event, e.data] for e in events],
            "error": ["error-network", None],
            "cancelled": 0,
        }
    events += parser.close()
    taken = events[:stop] if stop else events
    return {
        "events": [[e.event, e.data] for e in taken],
        "cancelled": 1 if stop and stop < len(events) else 0,
    }


def _parsed(streams: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each event's data as JSON reads it: the page parses it, and MicroPython's ``json.dumps``
    (the plain-JSON answer, re-encoded) writes non-ASCII as it is where CPython escapes it."""
    return [
        {**stream, "events": [[name, json.loads(data)] for name, data in stream["events"]]}
        for stream in streams
    ]


_HEADERS = {"Accept": "application/json", "X-User-Id": "u1", "X-Auth-Token": "t0k"}
_EXPECTED_GETS = [
    {
        "data": {"data": {"x": [1, "é", None, True]}},
        "url": "/api/v1/ai.search?q=in%3Aops+deploy&intelligentCount=6",
        "headers": _HEADERS,
        "method": "GET",
    },
    {"error": ["error-bad-response", 200, None]},
    {"error": ["error-bad-response", 200, None]},
    {"error": ["", 401, None]},
    {"error": ["error-too-many", 429, 7]},
    {"error": ["error-network", None, None]},
]


def _expected_signed_in(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    keys = ("userId", "authToken", "username", "name")
    if not isinstance(data, dict) or not all(isinstance(data.get(key), str) for key in keys):
        return None
    if not data["userId"] or not data["authToken"]:
        return None
    return {
        "fields": [data[key] for key in keys],
        "json": data,
        "round_trip": True,
        "other": data["name"] == "Other",
    }


@settings(max_examples=2, deadline=None, phases=[Phase.generate])  # each example is a Node run
@given(st.lists(_PAIRS, min_size=20, max_size=40))
def test_the_io_glue_gives_on_micropython_what_it_gives_on_cpython(
    tmp_path_factory: pytest.TempPathFactory, batch: list[list[tuple[str, Any]]]
) -> None:
    retry_after = ["7", " 12 ", "", "x", "1.5", "-3", "٣", "\u00a09\u00a0", None, 5]
    cases = {
        "query": [[list(pair) for pair in pairs] for pairs in batch],
        "query_dict": [{"q": "in:ops deploy"}, {}, {"selector": '{"term": "é"}'}],
        "retry_after": retry_after,
        "streams": [list(case) for case in _STREAMS],
        "gets": [list(case) for case in _GETS],
        "signed_in": _SIGNED_IN,
    }
    got = run_on_micropython(cases, tmp_path_factory.mktemp("glue-io"))
    assert got["query"] == [urlencode(pairs) for pairs in batch]
    assert got["query_dict"] == [urlencode(params) for params in cases["query_dict"]]
    assert got["retry_after"] == [_retry_after(value) for value in retry_after]
    assert _parsed(got["streams"]) == _parsed(
        [_expected_stream(scenario, stop) for scenario, stop in _STREAMS]
    )
    assert got["gets"] == _EXPECTED_GETS
    assert got["signed_in"] == [_expected_signed_in(text) for text in _SIGNED_IN]
    assert got["storage"] == {
        "blocked": [None, None],
        "kept": "abc",
        "over_the_quota": "abc",
        "removed": None,
        "python_raises_after": True,
    }
    assert got["import_failures"] == {}
    assert got["replies"] == {"taken": True, "silent": False, "left": 0}
    # Only the login sends (and keeps) cookies: its device cookie; every other call sends none.
    assert got["credentials"] == {"ai.search": "omit", "login": "same-origin", "logout": "omit"}
