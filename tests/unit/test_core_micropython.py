"""The keystroke core and the page modules give the same results on MicroPython as on CPython.

The search page answers its first keystrokes on MicroPython 1.28 (vendored under static/vendor)
before Pyodide has loaded, running the very modules of `ai_search.KEYSTROKE_MODULES`; the page's glue
runs there with `ai_search.PAGE_MODULES` besides (the answer's event stream, source links, follow-up
turns, who may pick a model). Here they are
written into MicroPython's file system in Node, with `_core_runner.py`, and a table of cases, then a
batch of hypothesis-generated query lines, runs through both interpreters; the JSON each writes must
be the same. Pyodide (CPython 3.14, the interpreter that takes over) is compared too. Skipped only
when node or the vendored runtime is missing (scripts/setup puts it there; CI has both).
"""

import itertools
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from ai_search import KEYSTROKE_MODULES, MAX_ROOM_SEARCH_PATTERN_LENGTH, PAGE_MODULES, SEARCH_FILTER_PREFIXES
from tests.unit import _core_runner

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "py" / "ai_search"
RUNNER = Path(_core_runner.__file__)
VENDOR = ROOT / "static" / "vendor" / "micropython-1.28.0-6"
# MicroPython's heap: loadMicroPython's default, which the core needs no more than (it runs in 256 KB).
HEAP_BYTES = 1024 * 1024
NODE_TIMEOUT_SECONDS = 60

# Writes the package and the runner into MicroPython's file system, runs the cases, prints the results.
_NODE_SCRIPT = r"""
import fs from "node:fs";
import { pathToFileURL } from "node:url";
const [vendor, packageDir, runner, cases, modules, heapsize] = process.argv.slice(2);
const { loadMicroPython } = await import(pathToFileURL(`${vendor}/micropython.mjs`).href);
let errors = "";
const mp = await loadMicroPython({
  url: `${vendor}/micropython.wasm`,
  heapsize: Number(heapsize),
  stdout: (line) => { errors += line + "\n"; },
  stderr: (line) => { errors += line + "\n"; },
});
mp.FS.mkdirTree("/lib/ai_search");
for (const name of ["__init__", ...modules.split(",")]) {
  mp.FS.writeFile(`/lib/ai_search/${name}.py`, fs.readFileSync(`${packageDir}/${name}.py`));
}
mp.FS.writeFile("/lib/core_runner.py", fs.readFileSync(runner));
mp.FS.writeFile("/cases.json", fs.readFileSync(cases));
try {
  mp.runPython("import sys\nsys.path.insert(0, '/lib')\nimport core_runner\ncore_runner.main('/cases.json', '/results.json')");
} catch (error) {
  process.stderr.write(errors + String(error && error.message || error));
  process.exit(1);
}
process.stdout.write(mp.FS.readFile("/results.json", { encoding: "utf8" }));
"""


# The same for Pyodide (CPython 3.14, the page's interpreter after the keystroke stage), without its
# memory snapshot: the whole package goes into its file system.
_PYODIDE_SCRIPT = r"""
import fs from "node:fs";
import { pathToFileURL } from "node:url";
const [vendor, packageDir, runner, cases] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(`${vendor}/pyodide.mjs`).href);
const py = await loadPyodide({ indexURL: `${vendor}/`, stdout: () => {}, stderr: (line) => process.stderr.write(line + "\n") });
py.FS.mkdirTree("/lib/ai_search");
for (const name of fs.readdirSync(packageDir)) {
  if (name.endsWith(".py")) py.FS.writeFile(`/lib/ai_search/${name}`, fs.readFileSync(`${packageDir}/${name}`));
}
py.FS.writeFile("/lib/core_runner.py", fs.readFileSync(runner));
py.FS.writeFile("/cases.json", fs.readFileSync(cases));
py.runPython("import sys\nsys.path.insert(0, '/lib')\nimport core_runner\ncore_runner.main('/cases.json', '/results.json')");
process.stdout.write(py.FS.readFile("/results.json", { encoding: "utf8" }));
"""


def _needs_micropython() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH (scripts/setup installs it)")
    if not (VENDOR / "micropython.mjs").is_file() or not (VENDOR / "micropython.wasm").is_file():
        pytest.skip(f"the vendored MicroPython is missing: {VENDOR.relative_to(ROOT)} (scripts/setup)")
    return node


def run_on_micropython(
    cases: list[list[Any]], tmp_path: Path, modules: tuple[str, ...] = KEYSTROKE_MODULES + PAGE_MODULES
) -> list[Any]:
    node = _needs_micropython()
    script = tmp_path / "run.mjs"
    script.write_text(_NODE_SCRIPT, encoding="utf-8")
    source = tmp_path / "cases.json"
    source.write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")
    done = subprocess.run(
        [node, str(script), str(VENDOR), str(PACKAGE), str(RUNNER), str(source), ",".join(modules), str(HEAP_BYTES)],
        capture_output=True,
        timeout=NODE_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    results: list[Any] = json.loads(done.stdout.decode())
    return results


def run_on_pyodide(cases: list[list[Any]], tmp_path: Path) -> list[Any]:
    node = shutil.which("node")
    vendor = next(iter(sorted((ROOT / "static" / "vendor").glob("pyodide-*/pyodide.mjs"))), None)
    if node is None or vendor is None:
        pytest.skip("node or the vendored Pyodide is missing (scripts/setup)")
    script = tmp_path / "pyodide.mjs"
    script.write_text(_PYODIDE_SCRIPT, encoding="utf-8")
    source = tmp_path / "cases.json"
    source.write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")
    done = subprocess.run(
        [node, str(script), str(vendor.parent), str(PACKAGE), str(RUNNER), str(source)],
        capture_output=True,
        timeout=NODE_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    results: list[Any] = json.loads(done.stdout.decode())
    return results


def run_on_cpython(cases: list[list[Any]]) -> list[Any]:
    # Through JSON as well, so that both sides are compared as the same kind of value.
    results: list[Any] = json.loads(json.dumps(_core_runner.run(cases)))
    return results


def assert_same(
    cases: list[list[Any]], tmp_path: Path, run: Callable[[list[list[Any]], Path], list[Any]] = run_on_micropython
) -> None:
    expected = run_on_cpython(cases)
    got = run(cases, tmp_path)
    assert len(got) == len(expected)
    different = [
        f"{case!r}: {_difference(want, have)}"
        for case, want, have in zip(cases, expected, got, strict=True)
        if want != have
    ]
    assert not different, f"{len(different)} of {len(cases)} cases differ:\n" + "\n".join(different[:10])


def _difference(want: Any, have: Any, path: str = "") -> str:
    """Where two results first differ, and what each side holds there (CPython, then MicroPython)."""
    if isinstance(want, dict) and isinstance(have, dict):
        for key in sorted(set(want) | set(have)):
            if want.get(key, "<none>") != have.get(key, "<none>"):
                return _difference(want.get(key, "<none>"), have.get(key, "<none>"), f"{path}.{key}")
    if isinstance(want, list) and isinstance(have, list) and len(want) == len(have):
        for index, (a, b) in enumerate(zip(want, have, strict=True)):
            if a != b:
                return _difference(a, b, f"{path}[{index}]")
    return f"{path or '.'}: CPython {want!r}, the other {have!r}"


LONG = "x" * 600
LINES = [
    # plain text, filters, serialization
    "",
    " ",
    "deploy failed",
    'deploy in:#ops,#infra from:@alice after:2026-11-01',
    'deploy in:#ops in:"team room" FROM:@alice after:2026-11-01',
    '-in:#random has:link -"roll back" sort:new x',
    "channel:ops stream:infra sender:@bob date:yesterday on:2026-10",
    "has:links,url,FILES is:reply,dm -has:image -is:pinned sort:Newest",
    "-from:@bot -word --verbose - -#x -7d",
    'in:"a from:b,c"d e"',
    'in:"unclosed value',
    'in:"closed" after',
    'in:"x"y z',
    "in: in:# from:@ in:\"\" after:",
    "in:#ops in:OPS in:Ops",
    "in:" + ",".join(f"room{i}" for i in range(30)),
    "before:2026-12 after:2026-12-31 during:last-week",
    "after:today before:yesterday",
    "on:-3m during:-2y after:-999d before:-1000d",
    "after:2026-02-30 before:2026-13 on:0000 during:2026-02-29",
    "after:2024-02-29 on:mon during:Oct before:SEPTEMBER",
    "has:pdf is:archived sort:oldest after:someday",
    'in:we"ird from:"quote"d',
    "ın:ops İn:ops IN:ops In:ops",
    "\u212aeep in:k",
    # non-ASCII names and values
    "in:#café from:@zoë ΟΔΟΣ Σ ΣΑ",
    "in:Équipe,ÉQUIPE,équipe from:ПЁТР,пётр",
    "in:#日本語 from:@山田 検索 テスト",
    "in:ΟΔΟΣ in:οδος in:ὈΔΥΣΣΕΎΣ",
    "from:İstanbul from:istanbul from:i̇stanbul",
    "-日本 -über -ß -_x -٣",
    # Unicode whitespace
    "in:ops\u00a0from:alice",
    "in:ops\u3000from:alice\u2003deploy",
    "deploy\u2028in:ops\u2029has:link\x1cafter:today\x85x",
    "\t in:ops \n\n from:bob\r\n",
    "in:\"team\u00a0room\" -\"a\u3000b\"",
    # long input at the limits
    LONG,
    "in:" + "r" * 200 + " " + LONG,
    " ".join(f"-w{i}" for i in range(40)),
    "in:" + "é" * (MAX_ROOM_SEARCH_PATTERN_LENGTH + 10),
]
# Every prefix, in every case, alone and with a value: the keys and what each offers.
LINES += [prefix for prefix in SEARCH_FILTER_PREFIXES]
LINES += [prefix.upper() + "x" for prefix in SEARCH_FILTER_PREFIXES]
# Live tokens at the caret: suggestions for rooms, people, dates and choices.
LIVE: list[tuple[str, int | None]] = [
    ("deploy in:#op", None),
    ("deploy in:", None),
    ('in:"team r', None),
    ("in:#ops from:al", 8),
    ("from:", None),
    ("from:@Zoë", None),
    ("after:", None),
    ("after:2026-1", None),
    ("after:2026-11-0", None),
    ("before:-3", None),
    ("on:YES", None),
    ("during:la", None),
    ("after:mo", None),
    ("has:", None),
    ("has:im", None),
    ("-is:p", None),
    ("sort:", None),
    ("-word", None),
    ("x in:ops y", 5),
    ("x in:ops y", 2),
    ("x in:ops y", 100),
    ("x in:ops y", -4),
]
ROOM_QUERIES: list[list[Any]] = [
    ["Ops.Team", "#", [["platform-ops.team", "", "c"], ["ops", "", "d"]]],
    ["ops", "@", [["ops", "", "d"], ["ops", "", "c"]]],
    ["a*b+c?(d)[e]{f}|g^h$i\\j/k", None, [["a*b+c?(d)[e]{f}|g^h$i\\j/k", "", ""]]],
    ["50%_off\\", None, [["50%_OFF\\", "", ""]]],
    ["ÉQUIPE", None, [["", "équipe", "p"], ["EQUIPE", "", "c"]]],
    ["ΟΔΟΣ", None, [["οδος", "", "c"], ["ΟΔΟΣ", "", "c"], ["ὁδός", "", "c"]]],
    ["日本", "#", [["日本語", "", "c"]]],
    ["İ", None, [["i̇", "", ""], ["i", "", ""]]],
    ["é" * 100, None, [["é" * 100, "", ""]]],
    ["", None, [["anything", "", "c"]]],
]
TEXTS = [
    "",
    "ÉCOLE Ünïcode ΟΔΟΣ ΣΑ Σ İx ДОМ Ǆ ǅ ß ẞ",
    "a\u00a0b\u2003c\u3000d\n\te\x1c\x1f\x85\u2028",
    "ὈΔΥΣΣΕΎΣ Α.Σ Σ'Σ ΑΣ\u0301 ΑΣ\u0345",
    "日本語 ｆｕｌｌ ＷＩＤＴＨ 𐐀𐐨 𞤀",
    "٣٤ ² ½ _ a1 ǈ",
]
DATES = [
    "2026-11-03", "Yesterday", "-7D", "mon", "2026-02-30", "2026-10", "0000", "0001", "9999-12-31",
    " today ", "LAST-WEEK", "this-year", "-0d", "-01d", "-999y", "-1000d", "-12m", "octobre", "oct",
    "２０２６", "2026-1-1", "2026-01-01x", "", "SEPT", "sunday", "-5w",
]
FORMATS = [
    ["in", "team room"], ["in", "#ops"], ["from", "@bob"], ["-", "in:x"], ["-", "--v"], ["-", "日本"],
    ["-", "_x"], ["in", 'we"ird'], ["in", "a,b"], ["in", "a\u00a0b"], ["after", "2026-11-01"], ["to", "x"],
]


def _table() -> list[list[Any]]:
    cases: list[list[Any]] = [["line", line] for line in LINES]
    cases += [["active", text, caret] for text, caret in LIVE]
    cases += [["room_query", *query] for query in ROOM_QUERIES]
    cases += [["text", text] for text in TEXTS + LINES[25:36]]
    cases += [["date", value] for value in DATES]
    cases += [["format", key, value] for key, value in FORMATS]
    cases += [["translate", "Search_filter_in_rooms", {"rooms": "#a {b}"}]]
    cases += [["translate", "Search_filter_in_rooms", {}], ["translate", "No_such_key", {"x": "1"}]]
    cases += [["translate", "Search_filter_date_hint", {"token": "after:x", "choices": "c"}]]
    cases += [["tooltips"], ["operators"]]
    return cases


def test_the_table_of_cases_gives_the_same_results_on_micropython(tmp_path: Path) -> None:
    assert_same(_table(), tmp_path)


def test_the_runner_sees_a_fixed_today_and_every_keystroke_module() -> None:
    # The cases only compare what both interpreters give: these pin what they are given.
    assert _core_runner.TODAY.isoformat() == "2026-12-01"  # a Tuesday
    assert run_on_cpython([["operators"]])[0]["modules"] == list(KEYSTROKE_MODULES)


_FRAGMENTS = st.sampled_from(
    [
        *SEARCH_FILTER_PREFIXES,
        "IN:", "From:", "-IN:", "Has:", "-", "--", "link", "DM", "new", "-7d", "yesterday", "2026-10",
        "2026-11-0", "last-week", "mon", "#", "@", '"', '"', ",", " ", " ", "\t", "\u3000", "\u00a0",
        "\u2028", "\x1c", "\n", "2026-02-28", "2026-02-30", "ops", "Ops", "café", "ΟΔΟΣ", "Σ", "İ", "ı",
        "日本", "x", "ß", "\u212a",
    ]
)
QUERY_LINES = st.one_of(
    st.lists(_FRAGMENTS | st.text(max_size=3), max_size=12).map("".join),
    st.text(max_size=20),
)
BATCH_SIZE = 300


def generated_lines(count: int) -> list[str]:
    """`count` query lines drawn by hypothesis on CPython (fewer when it runs out of distinct ones)."""
    lines: list[str] = []

    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(QUERY_LINES)
    def collect(line: str) -> None:
        lines.append(line)

    collect()
    return lines


def test_generated_query_lines_give_the_same_results_on_micropython(tmp_path: Path) -> None:
    # One Node run for the whole batch: drawn first, then compared (a difference names its line).
    lines = generated_lines(BATCH_SIZE)
    assert len(set(lines)) > BATCH_SIZE // 2
    assert_same([["line", line] for line in lines], tmp_path)


def test_pyodide_gives_the_same_results_as_this_cpython(tmp_path: Path) -> None:
    # The page's second interpreter (CPython 3.14 in wasm) must agree with the server's and the stage's.
    lines = generated_lines(BATCH_SIZE // 3)
    assert_same(_table() + [["line", line] for line in lines], tmp_path, run_on_pyodide)


# -- the page modules -------------------------------------------------------------------------------

# Streams of server-sent events: every line ending, comments, ids, retry, unknown fields, a byte
# order mark, multi-byte characters (each is cut at every offset, so inside each character too),
# bytes that are not UTF-8 of every kind, and a stream cut off inside a character or an event.
EVENT_STREAMS: list[bytes] = [
    STREAM_BYTES := (
        b'event: delta\ndata: {"text": "caf\xc3\xa9 "}\n\n'
        b": a comment\r\n"
        b'event: delta\r\ndata: {"text": "[1]"}\r\n\r\n'
        b"data: line one\ndata: line two\nid: 7\n\n"
        b'event: done\rdata: {"answer": "caf\xc3\xa9 [1]"}\r\r'
    ),
    b"\xef\xbb\xbfdata: after a byte order mark\n\n\xef\xbb\xbfdata: a second one stays\n\n",
    "data: café € 😀 日本語 \u2028 ΟΔΟΣ\n\n".encode(),
    b"retry: 3000\nid: 42\nfoo: bar\ndata\ndata:no space\ndata:  two spaces\nevent\n\n",
    b"event: empty\n\n:only a comment\n\ndata: x\r\n\r\n",
    b"data: \xff\xfe \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80 \xe0\x80 \xf8\x88\x80\x80\x80 \x80\xbf x\n\n",
    b"data: \xe2\x82 \xf0\x9f\x98 \xc3\n\ndata: \xed\xa0\n\n",
    # Well formed but for one thing MicroPython's own decoder takes: a surrogate, a code point past
    # U+10FFFF, overlong forms; and Korean, whose ED 80..9F are no surrogates.
    b"data: caf\xc3\xa9 \xed\xa0\x80 x\n\n",
    b"data: caf\xc3\xa9 \xf4\x90\x80\x80 x\n\n",
    b"data: caf\xc3\xa9 \xc0\xaf \xe0\x80\x80 \xf0\x80\x80\x80 x\n\n",
    "data: 한국어 \ud7ff 𝄞\n\n".encode(),
    b"data: cut inside a character caf\xc3",
    b"data: an event never ended\n",
    b"\r\n\r\ndata: a\r\n\r\n",
]
SOURCE_URLS: list[Any] = [
    "https://acme.slack.com/archives/C024BE91L/p1355517523000005",
    "https://acme.slack.com/archives/C1/p1?thread_ts=1355517523.000005&cid=C1",
    "https://app.slack.com/client/T0123/C024BE91L",
    "https://notslack.com/archives/C1/p1",
    "https://acme.zulipchat.com/#narrow/channel/100-general/topic/deploy/near/1001",
    "https://chat.example.com/channel/ops?msg=Xk2",
    "https://chat.example.com/group/leads?m%73g=Xk2",
    "https://chat.example.com/direct/r1r2?msg=",
    "https://chat.example.com/channel/ops",
    "https://chat.example.com/acme/channels/town-square",
    "https://chat.example.com/acme/pl/8x1kq3",
    "HTTPS://Chat.Example.com/group/x?msg=1",
    "http://chat.internal:3000/channel/ops?msg=Xk2",
    "https://u:p@[::1]:3000/acme/pl/1",
    "https://a[::1]/acme/pl/1",
    "https://[v7.x]/acme/pl/1",
    "https://[1.2.3.4]/acme/pl/1",
    "https://[fe80::1%25eth0]/acme/pl/1",
    "https://[::1",
    "https://slac\u212a.com/x",
    "https://ex\u2100mple.com/acme/pl/1",
    "https://пример.com/acme/pl/1",
    "  \x00https://acme.slack.com/x",
    "ht\ttps://ac\nme.slack.com/x",
    "//acme.slack.com/x",
    "javascript:alert(1)",
    "https://chat.example.com/a b",
    "https://x.io/" + "a" * 2000,
    "",
    None,
    42,
]
TURNS: list[list[Any]] = [
    [[], "why did the failover take so long", ["m1", "m2", "m1"]],
    [[{"query": f"q{i}", "messages": [{"_id": f"m{i}"}]} for i in range(5)], "and then?", []],
    [[{"query": "a", "messages": []}], "b", [f"m{i % 23}" for i in range(60)]],
    [[], "", ["z", "a", "z", "m"]],
]
PERMISSIONS: list[list[str]] = [
    [],
    ["view-privileged-setting"],
    ["edit-privileged-setting", "x"],
    ["manage-selected-settings"],
    ["manage-selected-settings", "change-setting-llm_model"],
    ["change-setting-llm_model"],
]


def _page_table() -> list[list[Any]]:
    cases: list[list[Any]] = [["page_modules"]]
    for stream in EVENT_STREAMS:
        cases.append(["events_every_split", list(stream), "replace"])
        cases.append(["events", list(stream), [], "strict"])
        cases.append(["decode", list(stream), list(range(1, len(stream))), "replace"])
    cases.append(["events", [*b"data: " + b"x" * 10 + b"\n\n"], [3, 7], "replace"])
    cases += [["source", url] for url in SOURCE_URLS]
    cases += [["append_turn", *turn] for turn in TURNS]
    cases += [["may_list_models", permissions] for permissions in PERMISSIONS]
    return cases


def test_the_page_modules_give_the_same_results_on_micropython(tmp_path: Path) -> None:
    assert_same(_page_table(), tmp_path)


def test_the_page_modules_give_the_same_results_on_pyodide(tmp_path: Path) -> None:
    assert_same(_page_table(), tmp_path, run_on_pyodide)


# Every sequence of up to 3 bytes of each class UTF-8 tells apart, and of 4 of the lead and second
# bytes that decide a 4-byte form, after an ASCII letter: MicroPython's own decoder checks only the
# structure, so these pin what the portable decoder adds.
_CLASS_BYTES = [0x41, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED,
                0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF8, 0xFF]  # fmt: skip
_FOUR_BYTES = [0x80, 0x8F, 0x90, 0xBF, 0xC2, 0xF0, 0xF4]


def _byte_sequences() -> list[bytes]:
    sequences = [bytes(combo) for size in (1, 2, 3) for combo in itertools.product(_CLASS_BYTES, repeat=size)]
    sequences += [bytes((lead, *rest)) for lead in (0xF0, 0xF1, 0xF4, 0xF5) for rest in itertools.product(_FOUR_BYTES, repeat=3)]
    return [b"a" + sequence for sequence in sequences]


def test_every_short_byte_sequence_decodes_as_on_cpython(tmp_path: Path) -> None:
    items = [[list(sequence), errors] for sequence in _byte_sequences() for errors in ("replace", "strict")]
    assert_same([["decode_each", items[start : start + 2000]] for start in range(0, len(items), 2000)], tmp_path)


def test_the_page_table_covers_every_page_module() -> None:
    assert run_on_cpython([["page_modules"]])[0] == list(PAGE_MODULES)
    assert sum(1 for case in _page_table() if case[0] == "events_every_split") == len(EVENT_STREAMS)


_STREAM_PIECES = st.sampled_from(
    [b"data: ", b"data:", b"event: x", b": c", b"id: 1", b"retry: 5", b"\r", b"\n", b"\r\n", b"\n\n",
     "é€😀".encode(), b"\xc3", b"\xe2\x82", b"\xf0\x9f", b"\xed\xa0", b"\x80", b"\xff", b"\xef\xbb\xbf"]
)  # fmt: skip
GENERATED_STREAMS = st.tuples(
    st.lists(_STREAM_PIECES | st.binary(max_size=4), max_size=10).map(b"".join),
    st.lists(st.integers(1, 40), max_size=5),
    st.sampled_from(["replace", "strict"]),
)
_URL_PIECES = st.sampled_from(
    ["https:", "HTTP:", "x:", "//", "/", "@", ":", "[", "]", "[::1]", "[v1.x]", "[1.2.3.4]", "u:p@", ":80",
     "slack.com", "acme.slack.com", "slac\u212a.com", "\u2100", "channel", "/channel", "/acme", "/pl",
     "/channels", "?msg=1", "?m%73g=1", "&msg=", "#narrow/", "#", " ", "\x00", "\t", "%", "Σ", "İ"]
)  # fmt: skip
GENERATED_URLS = st.one_of(st.lists(_URL_PIECES, max_size=8).map("".join), st.text(max_size=20))


def _drawn(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    drawn: list[Any] = []

    @settings(max_examples=count, deadline=None, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value: Any) -> None:
        drawn.append(value)

    collect()
    return drawn


def test_generated_streams_and_links_give_the_same_results_on_micropython(tmp_path: Path) -> None:
    streams = _drawn(GENERATED_STREAMS, BATCH_SIZE // 2)
    urls = _drawn(GENERATED_URLS, BATCH_SIZE)
    cases: list[list[Any]] = [["events", list(data), cuts, errors] for data, cuts, errors in streams]
    cases += [["decode", list(data), cuts, errors] for data, cuts, errors in streams]
    cases += [["source", url] for url in urls]
    assert_same(cases, tmp_path)
