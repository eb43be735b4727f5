"""The page's pure glue gives the same results on MicroPython as on CPython and Pyodide.

The whole page is moving to MicroPython 1.28 (vendored under static/vendor). Its pure glue modules
(no ``js``: the widget protocol, a message's parts, recent searches, the page's wording, results as
conversations, an answer's text) are written into MicroPython's and Pyodide's file systems in Node
with the core and ``_glue_runner.py``; a table of cases per module runs through each interpreter and
the JSON each writes must be the same as this CPython's. Here too: the tables that stand in on
MicroPython for what it lacks (casefold, Unicode decimal digits), checked on every code point, and the
hand-written forms against the code they replaced. Skipped only when node or a vendored runtime is
missing (scripts/setup puts them there; CI has both).
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search import KEYSTROKE_MODULES, PAGE_MODULES
from ai_search_web import answer_text, recent, wording
from tests.unit import _glue_runner
from tests.unit.test_core_micropython import (
    HEAP_BYTES,
    NODE_TIMEOUT_SECONDS,
    VENDOR,
    _difference,
    _needs_micropython,
)

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "py" / "ai_search"
GLUE = ROOT / "py" / "ai_search_web"
RUNNER = Path(_glue_runner.__file__)
# The glue modules compared here, and the glue they import.
PURE_GLUE_MODULES = ("embed_protocol", "message_parts", "recent", "wording", "conversations", "answer_text")
GLUE_IMPORTED = ("highlights", "messages")

# Writes the files of a manifest ({path in the runtime: path here}) and runs the runner's main.
_NODE_SCRIPT = r"""
import fs from "node:fs";
import { pathToFileURL } from "node:url";
const [runtime, vendor, manifest, heapsize] = process.argv.slice(2);
const files = JSON.parse(fs.readFileSync(manifest, "utf8"));
let output = "";
let py;
if (runtime === "micropython") {
  const { loadMicroPython } = await import(pathToFileURL(`${vendor}/micropython.mjs`).href);
  py = await loadMicroPython({
    url: `${vendor}/micropython.wasm`,
    heapsize: Number(heapsize),
    stdout: (line) => { output += line + "\n"; },
    stderr: (line) => { output += line + "\n"; },
  });
} else {
  const { loadPyodide } = await import(pathToFileURL(`${vendor}/pyodide.mjs`).href);
  py = await loadPyodide({ indexURL: `${vendor}/`, stdout: () => {}, stderr: (line) => { output += line + "\n"; } });
}
for (const [target, source] of Object.entries(files)) {
  py.FS.mkdirTree(target.slice(0, target.lastIndexOf("/")));
  py.FS.writeFile(target, fs.readFileSync(source));
}
try {
  py.runPython("import sys\nsys.path.insert(0, '/lib')\nimport glue_runner\nglue_runner.main('/lib/cases.json', '/lib/results.json')");
} catch (error) {
  process.stderr.write(output + String(error && error.message || error));
  process.exit(1);
}
process.stdout.write(py.FS.readFile("/lib/results.json", { encoding: "utf8" }));
"""


def _manifest(cases_file: Path, whole_core: bool) -> dict[str, str]:
    core = [path.stem for path in CORE.glob("*.py")] if whole_core else ["__init__", *KEYSTROKE_MODULES, *PAGE_MODULES]
    files = {f"/lib/ai_search/{name}.py": str(CORE / f"{name}.py") for name in core}
    for name in ("__init__", *PURE_GLUE_MODULES, *GLUE_IMPORTED):
        files[f"/lib/ai_search_web/{name}.py"] = str(GLUE / f"{name}.py")
    files["/lib/glue_runner.py"] = str(RUNNER)
    files["/lib/cases.json"] = str(cases_file)
    return files


def _run_in_node(runtime: str, cases: list[list[Any]], tmp_path: Path) -> list[Any]:
    if runtime == "micropython":
        node, vendor = _needs_micropython(), VENDOR
    else:
        node = shutil.which("node")
        found = next(iter(sorted((ROOT / "static" / "vendor").glob("pyodide-*/pyodide.mjs"))), None)
        if node is None or found is None:
            pytest.skip("node or the vendored Pyodide is missing (scripts/setup)")
        vendor = found.parent
    script = tmp_path / "run.mjs"
    script.write_text(_NODE_SCRIPT, encoding="utf-8")
    source = tmp_path / "cases.json"
    source.write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps(_manifest(source, whole_core=runtime != "micropython")), encoding="utf-8")
    done = subprocess.run(
        [node, str(script), runtime, str(vendor), str(manifest), str(HEAP_BYTES)],
        capture_output=True,
        timeout=NODE_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    results: list[Any] = json.loads(done.stdout.decode())
    return results


def _assert_same(cases: list[list[Any]], tmp_path: Path, runtime: str) -> None:
    expected = json.loads(json.dumps(_glue_runner.run(cases)))
    got = _run_in_node(runtime, cases, tmp_path)
    assert len(got) == len(expected)
    different = [
        f"{case!r}: {_difference(want, have)}" for case, want, have in zip(cases, expected, got, strict=True) if want != have
    ]
    assert not different, f"{len(different)} of {len(cases)} cases differ:\n" + "\n".join(different[:10])


# -- the tables ---------------------------------------------------------------------------------------

EMBED_CASES: list[list[Any]] = [
    ["allowed_origins", "https://a.example https://b.example\u3000https://a.example\n"],
    ["allowed_origins", ""],
    ["host_origin", "https://a.example", ["https://a.example"], True, None],
    ["host_origin", "https://a.example", ["https://a.example"], True, "https://evil.example"],
    ["host_origin", "https://a.example", ["https://a.example"], False, None],
    ["host_origin", "https://c.example", ["https://a.example"], True, "https://c.example"],
    ["host_message", {"aiSearch": 1, "type": "open", "query": "\u3000 deploy in:#ops \u00a0"}],
    ["host_message", {"aiSearch": 1, "type": "open", "query": "x" * 600}],
    ["host_message", {"aiSearch": 1, "type": "open", "query": 7}],
    ["host_message", {"aiSearch": 1, "type": "close", "query": "x"}],
    ["host_message", {"aiSearch": 1, "type": "open-message-reply", "id": 3, "taken": True}],
    ["host_message", {"aiSearch": 1, "type": "open-message-reply", "id": 3.0, "taken": 1}],
    ["host_message", {"aiSearch": 1, "type": "open-message-reply", "id": 2.5}],
    ["host_message", {"aiSearch": 1, "type": "open-message-reply", "id": 0}],
    ["host_message", {"aiSearch": 1, "type": "open-message-reply", "id": 2**53}],
    ["host_message", {"aiSearch": 1, "type": "open-message-reply", "id": 1e300}],
    ["host_message", {"aiSearch": 1, "type": "open-message-reply", "id": True}],
    ["host_message", {"aiSearch": 2, "type": "open"}],
    ["host_message", {"aiSearch": 1, "type": "hello"}],
    ["host_message", ["aiSearch", 1]],
    ["host_message", None],
    ["widget_message", "resize", {"height": 320}],
    ["widget_message", "result-selected", {"msgId": "m1", "rid": "r1", "position": 2}],
    ["widget_message", "nope", {}],
    ["scoped_query", "deploy in:#ops", "in:#support"],
    ["scoped_query", "", "in:#support from:@bob"],
    ["scoped_query", "in:\"team room\" café", ""],
]
MESSAGE_CASES: list[list[Any]] = [
    ["files", {"files": [{"name": "pgbouncer.ini", "type": "text/plain", "size": 912}], "attachments": [{"title": "ledger pool"}]}],
    ["files", {"files": [{"name": "a.png", "type": "image/png", "title": "a.png"}, {"name": ""}, "x", {"name": "b", "size": True}],
               "attachments": [{"title": "t", "description": "d", "size": 5}, None]}],
    ["files", {"files": [{"name": f"f{i}"} for i in range(14)]}],
    ["files", {"files": "nope"}],
    ["reactions", {"reactions": {":+1:": {"usernames": ["bob", "carol"]}}}],
    ["reactions", {"reactions": {":tada:": {"usernames": ["a", "", 3]}, ":x:": {"usernames": []}, ":zzz:": {"usernames": ["z"]}, "": {"usernames": ["y"]}}}],
    # Past MAX_REACTIONS_SHOWN the most given are shown, ties by shortcode: the same on every
    # interpreter, although MicroPython's dicts keep no order.
    ["reactions", {"reactions": {f":r{i}:": {"usernames": ["bob"] * (1 + i % 3)} for i in range(23)}}],
    ["reactions_shown", {"reactions": {f":r{i}:": {"usernames": ["bob"]} for i in range(23)}}],
    ["reactions", {"reactions": ["x"]}],
    ["source_link", {"sourceUrl": "https://acme.slack.com/archives/C024BE91L/p1355517523000005"}],
    ["source_link", {"sourceUrl": "https://chat.example.com/channel/ops?msg=Xk2"}],
    ["source_link", {"sourceUrl": "https://wiki.example.org/page"}],
    ["source_link", {"sourceUrl": "javascript:alert(1)"}],
    ["source_link", {"sourceUrl": 7}],
    ["source_link", "https://x.io/"],
    ["fields", {"a": "text", "b": {"x": 1}, "c": [1, 2]}, "a"],
    ["fields", {"a": "text", "b": {"x": 1}, "c": [1, 2]}, "b"],
    ["fields", {"a": "text", "b": {"x": 1}, "c": [1, 2]}, "c"],
    ["fields", [1], "a"],
    ["emoji", ":rocket:"],
    ["emoji", ":no_such:"],
]
RECENT_CASES: list[list[Any]] = [
    ["recent", '["deploy", " deploy ", "in:#ops", "", 3, "\u3000x\u3000", "deploy"]'],
    ["recent", json.dumps([f"q{i}" for i in range(15)])],
    ["recent", '{"a": 1}'],
    ["recent", "not json"],
    ["recent", None],
    ["recent", json.dumps(["x" * 4097, "ok"])],
    ["with_recent", ["a", "b", "c"], "b"],
    ["with_recent", [f"q{i}" for i in range(10)], "new"],
    ["with_recent", ["a"], "\u3000 "],
    ["with_recent", ["a"], " café\u00a0"],
    ["encode_recent", ["café", 'a"b\\c', "tab\there", "\x01\x08\x0c\x1f", "😀\u2028"]],
    ["encode_recent", []],
    ["recent_options", ["a"]],
    ["recent_options", ["a", "b"]],
    ["recent_options", []],
]
WORDING_CASES: list[list[Any]] = [
    ["count_text", 0], ["count_text", 1], ["count_text", 12], ["count_text", 50], ["count_text", 80],
    ["bands_text", 3, 12], ["bands_text", 1, 1], ["bands_text", 0, 7], ["bands_text", 5, 0], ["bands_text", 0, 0],
    ["related_text", 1], ["related_text", 12], ["no_strong_text", 1], ["no_strong_text", 7],
    ["too_long_text", 612],
    ["counter_text", 400, None], ["counter_text", 480, None], ["counter_text", 499, None], ["counter_text", 500, None],
    ["counter_text", 9, 10],
    ["lockout_text", 1], ["lockout_text", 42], ["lockout_text", 61], ["lockout_text", 3600],
    ["match_words", "Deploy failed, deploy DEPLOY straße STRASSE Σίσυφος ΣΊΣΥΦΟΣ", [[0, 6], [15, 21], [22, 28], [29, 36], [37, 44], [45, 52], [53, 60]]],
    ["match_words", "a\u3000b", [[0, 3]]],
    ["match_words", "nothing", "not spans"],
    ["match_words", "ꭰꭱ ᎠᎡ ﬃ ffi", [[0, 2], [3, 5], [6, 7], [8, 11]]],
    ["reason_text", "keyword", ["deploy", "failed"]],
    ["reason_text", "both", ["a", "b", "c", "d", "e"]],
    ["reason_text", "keyword", []],
    ["reason_text", "semantic", ["x"]],
    ["reason_text", "unknown", ["x"]],
    ["reason_text", 3, ["x"]],
    ["replies_text", 1], ["replies_text", 6], ["replies_text", -1], ["replies_text", True], ["replies_text", "2"],
    ["more_in_thread_text", 2],
]
WORDING_CASES += [["file_size_text", size] for size in (
    1, 2, 512, 1023, 1024, 1025, 1126, 1177, 2304, 2406, 10188, 10189, 10240, 10752, 11776, 245760, 1048575,
    1048576, 2516582, 2621440, 1073741824, 1099511627776, 1125899906842624, 2**53 + 1, 2**60 + 12345, 0, -5, True,
)]  # fmt: skip
WORDING_CASES += [["file_size_text", "12"], ["file_size_text", None], ["file_size_text", 1.5]]
WORDING_CASES += [["room_label", room] for room in (
    {"t": "c", "name": "ops", "fname": "Ops Team"}, {"t": "p", "name": "ça"}, {"t": "d", "name": "alice__ça"},
    {"t": "d", "name": ""}, {"t": "c"}, "ops", None,
)]  # fmt: skip
WORDING_CASES += [["coverage_text", share] for share in (
    0, 0.0001, 0.29, 0.57, 0.6249, 0.62, 0.9999, 0.999999, 1, 1.0, 1.5, -0.1, True, "0.5", None,
)]  # fmt: skip
WORDING_CASES += [["coverage_text", round(steps / 10_000, 4)] for steps in range(0, 10_000, 37)]
WORDING_CASES += [["casefold", text] for text in ("", "ASCII Only", "Straße ΣΊΣΥΦΟΣ ς ﬁ ǅ İ ẞ ꭰ Ꭰ ᏸ µ ᾳ ῼ")]
RESULTS = [
    {"msgId": "a", "ts": "2026-11-03T10:00:00Z", "thread": {"_id": "t1", "title": "Deploy", "replies": 4}},
    {"msgId": "b", "ts": "2026-11-03T09:00:00Z", "thread": {"_id": "t1"}},
    {"_id": "c", "ts": "2026-11-02T09:00:00Z"},
    {"msgId": "d", "ts": "2026-11-03T09:00:00Z", "thread": {"_id": "t1"}},
    {"msgId": "e", "ts": "2026-11-03T08:00:00Z", "thread": {"_id": "t1"}},
    {"msgId": "f", "thread": {"_id": ""}},
    {"ts": 5},
    {"msgId": "g", "ts": "2026-11-01T09:00:00Z", "thread": {"_id": "t2"}},
    {"msgId": "h", "ts": "2026-11-01T09:00:00Z", "thread": {"_id": "t2"}},
]
CONVERSATION_CASES: list[list[Any]] = [
    ["groups", RESULTS, 3], ["groups", RESULTS, 1], ["groups", RESULTS, 0], ["groups", [], 3],
    ["groups_by_time", RESULTS], ["bands", [{"_id": "a", "band": "related"}, {"_id": "b"}, {"_id": "c", "band": "strong"}, {"_id": "d", "band": 3}]],
    ["message_id", {"msgId": "", "_id": "x"}], ["message_id", {"msgId": 3}], ["message_id", {}],
    ["thread_of", {"thread": {"_id": "t", "title": "T"}}], ["thread_of", {"thread": {"_id": 1}}], ["thread_of", {"thread": "t"}],
    ["numbers", RESULTS, ["a", "h", "g", "", "nope"]], ["numbers", [], ["a"]],
]
SENTENCES = [
    {"text": "It failed [1].", "citations": [1, "2", -1, True, 3], "supported": False,
     "spans": [{"n": 1, "start": 0, "end": 4}, {"n": 1, "start": 5, "end": 9}, {"n": 2, "start": 4, "end": 4}, "x"]},
    {"text": "", "citations": [1]},
    {"text": "Then it worked [2].", "supported": True},
    {"text": "Nobody knows.", "supported": None},
    "not a sentence",
]
ANSWER_CASES: list[list[Any]] = [
    ["sentences", SENTENCES],
    ["sentences", "nope"],
    ["runs", "It failed [1]. Then it worked [2]. Sorry.", SENTENCES],
    ["runs", "Nothing matches.", SENTENCES],
    ["runs", "Then it worked [2]. It failed [1].", SENTENCES],
    ["segments", "a [1] b [2][3] [4] [1234] [12] [] [x] [٣] [١٢٣] [𝟙] [0] [99", [1, 2, 3, 12, 0, 123]],
    ["segments", "[[1]] [1]] [[[2]", [1, 2]],
    ["segments", "", [1]],
    ["cited", "See [2], then [1] and [2] again, [9] is not listed.", [[1, "m1"], [2, "m2"]]],
    ["cited", "[1][1] [3]", [[1, "m1"], [3, "m1"]]],
    ["citations", [{"n": 1, "msgId": "m1", "rid": "r1"}, {"n": 1, "msgId": "m9"}, {"n": 2, "msgId": "m2"}, {"n": "3", "msgId": "m3"}, 5]],
    ["unsupported_text", 0], ["unsupported_text", 1], ["unsupported_text", 3],
    ["citations", [{"n": 2, "msgId": "m", "u": {"username": "ça", "name": "Çé"}, "room": {"t": "d", "name": "a__ça"}}, {"n": 3, "msgId": "x", "u": 5}]],
    ["citation_link", 9, [{"n": 9, "msgId": "m21", "u": {"name": "Çé"}, "room": {"t": "c", "name": "ops"}}], [["m21", 21]]],
    ["citation_link", 9, [{"n": 9, "msgId": "m9", "u": {"name": "Çé"}, "room": {"t": "c", "name": "ops"}}], [["m21", 21]]],
    ["citation_link", 8, [{"n": 9, "msgId": "m9"}], []],
    ["turn"],
]
TABLES = {
    "embed_protocol": EMBED_CASES,
    "message_parts": MESSAGE_CASES,
    "recent": RECENT_CASES,
    "wording": WORDING_CASES,
    "conversations": CONVERSATION_CASES,
    "answer_text": ANSWER_CASES,
}


def _all_cases() -> list[list[Any]]:
    return [case for name in PURE_GLUE_MODULES for case in TABLES[name]]


def test_every_pure_glue_module_has_a_table() -> None:
    assert sorted(TABLES) == sorted(PURE_GLUE_MODULES)
    assert all(TABLES[name] for name in PURE_GLUE_MODULES)
    # No case errs on CPython except where the table means it to (an unknown widget message).
    errors = [case for case, result in zip(_all_cases(), _glue_runner.run(_all_cases()), strict=True) if isinstance(result, dict) and "error" in result]
    assert errors == [["widget_message", "nope", {}]]


def test_the_pure_glue_gives_the_same_results_on_micropython(tmp_path: Path) -> None:
    _assert_same(_all_cases(), tmp_path, "micropython")


def test_the_pure_glue_gives_the_same_results_on_pyodide(tmp_path: Path) -> None:
    _assert_same(_all_cases(), tmp_path, "pyodide")


# -- what stands in on MicroPython, against what it stands in for --------------------------------------


def _code_points() -> list[str]:
    return [chr(code) for code in range(sys.maxunicode + 1) if not 0xD800 <= code < 0xE000]


def test_the_portable_casefold_is_cpythons_on_every_code_point() -> None:
    assert [char for char in _code_points() if wording._casefold_portable(char) != char.casefold()] == []


@given(st.text(max_size=30))
def test_the_portable_casefold_of_text_is_cpythons(text: str) -> None:
    text = "".join(char for char in text if not 0xD800 <= ord(char) < 0xE000)
    assert wording._casefold_portable(text) == text.casefold()


def test_the_portable_decimal_digits_are_cpythons_on_every_code_point() -> None:
    # The table's runs are exactly CPython's decimal digits; the lookup reads them (checked around
    # each run, and on a spread of the other code points: the lookup is slow for all of them).
    zeros = [int(zero, 16) for zero in answer_text._DECIMAL_ZEROS.split(",")]
    assert {chr(zero + value): value for zero in zeros for value in range(10)} == {
        char: int(char) for char in _code_points() if char.isdecimal()
    }
    probed = {chr(code) for zero in zeros for code in range(zero - 3, zero + 13)} | set(_code_points()[::97])
    probed = {char for char in probed if not 0xD800 <= ord(char) < 0xE000}
    assert [c for c in probed if answer_text._decimal_portable(c) != (int(c) if c.isdecimal() else -1)] == []


_CITATION_REGEX = re.compile(r"\[(\d{1,3})\]")


@given(st.text(alphabet=st.sampled_from("[]0123456789٣١𝟙x "), max_size=24))
def test_citations_are_found_as_the_regular_expression_found_them(text: str) -> None:
    expected = [(found.start(), found.end(), int(found[1])) for found in _CITATION_REGEX.finditer(text)]
    assert answer_text._citations(text) == expected


def _float_size_text(size: int) -> str:
    # wording.file_size_text as it was, on floats (the oracle).
    value, unit = float(size), 0
    while value >= 1024 and unit < 4:
        value /= 1024
        unit += 1
    if unit == 0:
        return f"{size} byte{'s' if size != 1 else ''}"
    shown = f"{value:.1f}".removesuffix(".0") if value < 10 else f"{value:.0f}"
    return f"{shown} {('bytes', 'KB', 'MB', 'GB', 'TB')[unit]}"


@given(st.one_of(st.integers(1, 2**20), st.integers(1, 2**64), st.integers(1, 9).map(lambda k: 1024**k // 3 * 2)))
def test_file_sizes_round_as_cpythons_floats_did(size: int) -> None:
    assert wording.file_size_text(size) == _float_size_text(size)


def test_file_sizes_round_ties_to_even_as_cpythons_floats_did() -> None:
    # x.x5 exactly (binary fractions), and every size near each unit's edges.
    ties = [int(tenths * 1024**unit / 20) for unit in range(1, 5) for tenths in range(1, 400)]
    edges = [1024**unit + delta for unit in range(1, 5) for delta in range(-600, 600)]
    assert [size for size in ties + edges if size > 0 and wording.file_size_text(size) != _float_size_text(size)] == []


@given(st.lists(st.text(max_size=8), max_size=5))
def test_recent_searches_are_written_as_json_dumps_writes_them(kept: list[str]) -> None:
    assert recent.encode_recent_searches(kept) == json.dumps(kept, ensure_ascii=False)
