"""Benchmark the search page in headless Chromium: start-up, keystrokes, bytes, and the API client.

    .venv/bin/python bench/bench_page.py [--runs 5] [--json PATH] [--python micropython|pyodide]
        [--against-python OTHER | --previous CHECKOUT] [--skip-baselines]

Starts the real app in-process (uvicorn on a free loopback port, a temp data dir with the demo
workspace, keyword-only retrieval so that no embedding runs in the background) and drives Debian's
chromium with a fresh profile per run. Prints medians over the runs (never asserted anywhere) and,
with ``--json PATH``, writes them as a ``bench/_figures.py`` Report. The page runs on the
interpreter ``--python`` names (the server's page_python setting; default, the setting's default):

- cold: a first visit (empty HTTP cache); on Pyodide, Python starts from the server's memory
  snapshot (``static/pyodide-loader.mjs``) when ``scripts/setup`` made one;
- warm: a reload of that page (HTTP cache; on Pyodide, the snapshot kept from it);
- the baseline, measured in the same run: by default the same visits to a second server of the
  same files with the other interpreter (``--against-python``; on MicroPython, the Pyodide page it
  replaced); or another checkout's page (``--previous``);
- on Pyodide, cold without the server snapshot: a first visit in another fresh profile to a server
  of the same files without the snapshot, so CPython initialises from scratch;
- per start: navigation to first paint, to a usable box (plain HTML plus fallback.js), to the
  interpreter (``ai-search:interpreter-ready``) and to Python ready (the page's own
  ``ai-search:python-ready`` mark); bytes on the wire (CDP encodedDataLength);
- per start, the figure a person feels: ``in:gen`` is typed as soon as the box is usable, and the
  time from navigation to the first suggestion list Python makes: the keystroke stage's
  (MicroPython running the core's grammar, ``data-by="keys"``) and the whole page's once it is
  ready (``#suggestions``' first options while ``<html data-py=ready>``), each noted by a
  MutationObserver the bench installs, so it reads any version of the page the same way; with the
  bytes on the wire until the stage's list (Resource Timing's ``transferSize`` of every response
  finished by then);
- with ``--previous CHECKOUT`` (another checkout of the project, set up with its own
  ``scripts/setup``): the same first and warm visits to that checkout's page, served by its own
  server code; with ``--skip-baselines`` and neither option, the figures BENCHMARKS.md last
  recorded are printed beside the new ones (``PREVIOUS``);
- keystrokes: p50/p95 of the Python input handler and of event-creation-to-handled, while typing
  filters (chips) and tokens (suggestions) as bob; per run, then the median over runs;
- on Pyodide, the API client: 20 ``ai.search`` calls from the page's Python with awaited ``fetch``
  on the main thread, against a Pyodide worker calling through pyodide-http (synchronous XHR),
  plus that worker's start.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _browser import WAIT_MS, ByteCounter
from _codings import FileCodings, file_codings
from _figures import Baseline, Figure, Report, Target, percentile
from _harness import PAGE_PYTHONS, add_python_options, baseline_python, demo_app_server
from _page_start import (
    LINKS,
    MARKS,
    READY_TYPED,
    Link,
    login,
    new_profile,
    seeded_page,
    serve_previous,
    start,
    visits,
)
from ai_search_server.static import PAGE_PARTS

ROOT = Path(__file__).resolve().parents[1]
# What the keystroke run types, as bob: finished filters (chips), tokens with suggestions, words.
TYPED = "deploy in:engin from:car after:2026-09-01 before:2026-11-30 postgres failover in:ops "
# The figures BENCHMARKS.md recorded before start-up worked this way (scripts/bench, 2026-11-30,
# quiet 2-core machine): Python ready, first visit and warm, in ms; the suggestion figure did not
# exist yet. Shown for orientation only: --previous measures an older page in the same run instead.
PREVIOUS = {"python ready, first visit": 1345, "python ready, warm": 642, "bytes, first visit": 13_300_000}
CLIENT_CALLS = 20
CLIENT_QUERY = "postgres failover"
# The server's Pyodide snapshot files (static/pyodide-loader.mjs, SHIPPED_SNAPSHOT): left out of
# the baseline's server.
SNAPSHOT_FILES = "snapshot-v*.bin*"
# The page's budgets (milliseconds): what a person should wait, at most.
PYTHON_READY_COLD_MS = 1500
PYTHON_READY_WARM_MS = 1000
SUGGESTIONS_COLD_MS = 1000
SUGGESTIONS_WARM_MS = 300
# The first visit's budgets on real links: the first Python suggestion (ms) on each emulated link,
# and the bytes on the wire (on every link the same).
SUGGESTIONS_COLD_ON_LINK_MS = {"20 Mbit/s, 40 ms": 2000, "10 Mbit/s, 100 ms": 4000}
FIRST_VISIT_BYTES = 3_000_000
KEYSTROKE_P95_MS = 16
# What is reported of each visit over an emulated link: (key of a start, figure, unit).
# What a page from before the keystroke stage measured instead of a stage figure (--previous).
PREVIOUS_KEYS = {"keys_suggest": "suggest"}
LINK_FIGURES = (
    ("bytes", "bytes on the wire", "bytes"),
    ("usable", "navigation → usable box", "ms"),
    ("first_suggest", "navigation → first Python suggestion", "ms"),
    ("bytes_to_first", "bytes on the wire to the first Python suggestion", "bytes"),
    ("keys_suggest", "navigation → the keystroke stage's first suggestion", "ms"),
    ("suggest", "navigation → first suggestion of the whole page", "ms"),
    ("python", "navigation → Python ready", "ms"),
)
# Files of the first visit listed one by one in the codings table; the rest are summed.
CODINGS_SHOWN = 12
# The worker of the client comparison: Pyodide plus the pyodide-http wheel (no micropip), answering
# {url, headers} messages with a synchronous urllib call, which pyodide-http turns into sync XHR.
NET_WORKER = """
import { loadPyodide } from "./vendor/pyodide-314.0.2/pyodide.mjs";
const started = performance.now();
const pyodide = await loadPyodide({ indexURL: new URL("./vendor/pyodide-314.0.2/", import.meta.url).href });
await pyodide.loadPackage(new URL("./vendor/wheels/pyodide_http-0.2.2-py3-none-any.whl", import.meta.url).href);
pyodide.runPython(`
import json, urllib.request, pyodide_http
pyodide_http.patch_all()
def get(url, headers):
    request = urllib.request.Request(url, headers=json.loads(headers))
    with urllib.request.urlopen(request) as response:
        return len(json.loads(response.read())["intelligent"])
`);
const get = pyodide.globals.get("get");
postMessage({ ready: performance.now() - started });
onmessage = ({ data }) => {
  const t = performance.now();
  const count = get(data.url, JSON.stringify(data.headers));
  postMessage({ ms: performance.now() - t, count });
};
"""

# Defines window.benchMainCall(): one ai.search through the page's own client (awaited fetch on the
# main thread), returning its milliseconds as measured in Python.
MAIN_THREAD_CLIENT = """
import json, time, js
from pyodide.ffi import create_proxy
from ai_search_web.api import ApiClient
stored = json.loads(js.sessionStorage.getItem("ai-search.session"))
api = ApiClient(lambda: (stored["userId"], stored["authToken"]), on_unauthorized=lambda: None)
async def call():
    started = time.perf_counter()
    await api.get("ai.search", {"q": QUERY, "intelligentCount": "50"})
    return (time.perf_counter() - started) * 1000
js.window.benchMainCall = create_proxy(call)
"""


# pyscript-boot.mjs starts Pyodide once the keystroke stage is ready; --pyodide-with-stage measures
# the other order (both at once) by turning this switch off in the served copy.
STAGE_FIRST_SWITCH = "const STAGE_FIRST = true;"


@dataclass(frozen=True)
class Served:
    """The servers of one bench run, all from one copy of the page files (``site``): ``url`` runs
    the page on ``python``; ``bare_url`` (Pyodide only) has no server snapshot; ``other_url`` runs
    it on the other interpreter (for --against-python)."""

    url: str
    site: Path
    bare_url: str | None = None
    other_url: str | None = None


@contextmanager
def serve(
    *, python: str, stage_first: bool = True, bare: bool = True, other: str | None = None
) -> Iterator[Served]:
    """The real app with the demo workspace on ``python``, from a copy of the page files (plus the
    bench worker); with ``bare``, a second one from the same files without the Pyodide snapshot;
    with ``other``, one whose page runs on that interpreter instead."""
    work = Path(tempfile.mkdtemp(prefix="bench-page-"))
    site = work / "site"
    site.mkdir()
    for name in ("index.html", "embed.html", "pyscript.toml", *PAGE_PARTS):
        shutil.copy(ROOT / name, site / name)
    shutil.copytree(ROOT / "static", site / "static")
    if not stage_first:
        boot = site / "static" / "pyscript-boot.mjs"
        text = boot.read_text(encoding="utf-8")
        if STAGE_FIRST_SWITCH not in text:
            raise SystemExit(f"--pyodide-with-stage: {boot.name} has no {STAGE_FIRST_SWITCH!r}")
        boot.write_text(text.replace(STAGE_FIRST_SWITCH, "const STAGE_FIRST = false;"), encoding="utf-8")
    shutil.copytree(ROOT / "py", site / "py", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (site / "static" / "bench-net-worker.mjs").write_text(NET_WORKER, encoding="utf-8")
    try:
        with ExitStack() as servers:
            url = servers.enter_context(demo_app_server({"page_python": python}, root=site))
            bare_url = other_url = None
            if bare:
                without = work / "bare"
                shutil.copytree(
                    site, without, copy_function=os.link, ignore=shutil.ignore_patterns(SNAPSHOT_FILES)
                )
                bare_url = servers.enter_context(demo_app_server({"page_python": python}, root=without))
            if other is not None:
                other_url = servers.enter_context(demo_app_server({"page_python": other}, root=site))
            yield Served(url, site, bare_url, other_url)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _keystrokes(page: Any) -> dict[str, Any]:
    """Per-key timings while ``TYPED`` is typed as bob (window.aiSearchTimings)."""
    page.wait_for_function("() => window.aiSearchPrefetched === true", timeout=WAIT_MS)
    page.click("#search-box")
    page.evaluate("window.aiSearchTimings.handler.length = 0; window.aiSearchTimings.latency.length = 0")
    page.keyboard.type(TYPED)
    timings: dict[str, Any] = page.evaluate("({...window.aiSearchTimings})")
    return timings


def on_links(pw: Any, url: str, session: dict[str, str]) -> dict[str, Any]:
    """A first and a warm visit over each emulated link (loopback is ``run_once``'s)."""
    return {link.name: visits(pw, url, session, link=link) for link in LINKS if link.megabits_per_second}


def first_visit(pw: Any, url: str, session: dict[str, str], link: Link = LINKS[0]) -> dict[str, Any]:
    """A first visit alone, in a fresh profile, over ``link``."""
    context, profile = new_profile(pw)
    try:
        page = seeded_page(context, session)
        counter = ByteCounter(context, page)
        link.emulate(counter.session)
        return start(page, counter, False, url)
    finally:
        context.close()
        shutil.rmtree(profile, ignore_errors=True)


def run_once(
    pw: Any,
    url: str,
    session: dict[str, str],
    bare: tuple[str, dict[str, str]] | None = None,
) -> dict[str, Any]:
    """One fresh profile: a cold start, a warm one, then keystrokes; then a first and a warm visit
    over each emulated link, a fresh profile each. With ``bare`` (a server without the Pyodide
    snapshot, and its session), a first visit there on loopback and over each link too (what the
    snapshot costs or saves on that link)."""
    run = visits(pw, url, session, then=_keystrokes)
    # The other server has a store of its own, hence its own session.
    fresh = first_visit(pw, *bare) if bare else None
    links = on_links(pw, url, session)
    for link in LINKS:
        if link.megabits_per_second and bare:
            links[link.name]["cold_no_snapshot"] = first_visit(pw, *bare, link)
    return {
        "cold": run["cold"],
        "warm": run["warm"],
        "cold_no_snapshot": fresh,
        "keys": run["then"],
        "links": links,
    }


def compare_clients(pw: Any, url: str, session: dict[str, str]) -> dict[str, Any]:
    context, profile = new_profile(pw)
    try:
        page = seeded_page(context, session)
        page.goto(url)
        page.wait_for_selector("html[data-py=ready]", timeout=WAIT_MS)
        page.evaluate(
            """async (code) => {
              const interpreter = await window.aiSearchPython;
              await interpreter.runPythonAsync(code);
            }""",
            MAIN_THREAD_CLIENT.replace("QUERY", json.dumps(CLIENT_QUERY)),
        )
        # The three clients take turns, so that load on the machine falls on all of them alike.
        return page.evaluate(
            """async ({calls, query, session}) => {
              const started = performance.now();
              const worker = new Worker("/static/bench-net-worker.mjs", { type: "module" });
              const next = () => new Promise((resolve) => { worker.onmessage = ({ data }) => resolve(data); });
              await next();
              const workerReady = performance.now() - started;
              const url = location.origin + "/api/v1/ai.search?" + new URLSearchParams({ q: query, intelligentCount: "50" });
              const headers = { "X-User-Id": session.userId, "X-Auth-Token": session.authToken };
              const out = { workerReady, main: [], worker: [], js: [] };
              for (let i = 0; i < calls; i++) {
                out.main.push(await window.benchMainCall());
                let t = performance.now();
                const reply = next();
                worker.postMessage({ url, headers });
                await reply;
                out.worker.push(performance.now() - t);
                t = performance.now();
                await (await fetch(url, { headers })).json();
                out.js.push(performance.now() - t);
              }
              worker.terminate();
              return out;
            }""",
            {"calls": CLIENT_CALLS, "query": CLIENT_QUERY, "session": session},
        )
    finally:
        context.close()
        shutil.rmtree(profile, ignore_errors=True)


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


PHASES = ("cold", "warm", "cold_no_snapshot")


def _method(python: str, baseline: str) -> str:
    start = (
        "Python restored from the server's Pyodide memory snapshot"
        if python == "pyodide"
        else "the keystroke stage and then the whole page on MicroPython (page_python = micropython)"
    )
    return (
        "The real app with the demo workspace on loopback (keyword-only retrieval), headless Debian "
        f"chromium, a fresh profile per run. Cold: a first visit (empty HTTP cache), {start}; warm: a "
        "reload (HTTP cache). On every start in:gen is typed as soon as the box exists; 'first Python "
        "suggestion' is navigation to the first suggestion list Python shows for it: the keystroke "
        "stage's (the core's grammar on MicroPython, the list marked data-by=keys), with the whole "
        "page's first list reported beside it ('first suggestion of the whole page'); a page from before "
        f"the stage (--previous) has only the latter, which is its baseline. Baseline: {baseline}. The same "
        "first and warm visits again over Chromium's emulated 20 Mbit/s / 40 ms and 10 Mbit/s / 100 ms "
        "links. Times from navigation start to the page's marks; bytes on the wire (CDP "
        "encodedDataLength); keystrokes typed as bob, the Python input handler's own time per key (each "
        "run's percentile)."
    )


def _phase_values(runs: list[dict[str, Any]], phase: str, key: str) -> list[float]:
    return [float(run[phase][key]) for run in runs if run.get(phase) and run[phase][key] is not None]


def _link_values(runs: list[dict[str, Any]], link: Link, phase: str, key: str) -> list[float]:
    visits_on = [run["links"][link.name] for run in runs if link.name in run.get("links", {})]
    return _phase_values(visits_on, phase, key)


def _link_figures(
    report: Report,
    link: Link,
    runs: list[dict[str, Any]],
    previous: list[dict[str, Any]] | None,
    label: str,
) -> None:
    """First and warm visits over one emulated link: bytes, a usable box, the first Python suggestion."""

    def before(phase: str, key: str) -> Baseline | None:
        # A page from before the stage has no stage figures: its first Python suggestion was Pyodide's.
        values = _link_values(previous or [], link, phase, key) or _link_values(
            previous or [], link, phase, PREVIOUS_KEYS.get(key, key)
        )
        return Baseline(label, values) if values else None

    # The budgets are for the first Python-made suggestion: the keystroke stage's or the whole
    # page's, whichever the person sees first (both run the core's own grammar).
    budgets = {"bytes": FIRST_VISIT_BYTES, "first_suggest": SUGGESTIONS_COLD_ON_LINK_MS.get(link.name)}
    for phase, visit in (("cold", "first visit"), ("warm", "warm")):
        for key, what, unit in LINK_FIGURES:
            budget = budgets.get(key) if phase == "cold" else None
            report.add(
                Figure(
                    f"{link.name}: {what}, {visit}",
                    unit,
                    _link_values(runs, link, phase, key),
                    baseline=before(phase, key),
                    target=Target("<=", budget) if budget else None,
                )
            )
    if not _link_values(runs, link, "cold_no_snapshot", "bytes"):
        return  # the page runs on MicroPython: no snapshot to leave out
    for key, what in (
        ("bytes", "bytes on the wire"),
        ("suggest", "navigation → first suggestion of the whole page"),
    ):
        report.add(
            Figure(
                f"{link.name}: {what}, first visit, no server snapshot",
                "bytes" if key == "bytes" else "ms",
                _link_values(runs, link, "cold_no_snapshot", key),
            )
        )


def build_report(
    runs: list[dict[str, Any]],
    clients: dict[str, Any] | None,
    previous: list[dict[str, Any]] | None = None,
    codings: Sequence[FileCodings] = (),
    *,
    python: str = "pyodide",
    label: str = "previous page (--previous)",
) -> Report:
    """The figures of ``runs`` on ``python``, with ``previous`` (another page measured in the same
    run: another checkout's, or the same files on the other interpreter) as the baseline, ``label``."""

    def each(phase: str, key: str) -> list[float]:
        return _phase_values(runs, phase, key)

    def before(phase: str, key: str, fallback: Baseline | None = None) -> Baseline | None:
        # A page from before the stage has no stage figures: its first Python suggestion was Pyodide's.
        values = _phase_values(previous or [], phase, key) or _phase_values(
            previous or [], phase, PREVIOUS_KEYS.get(key, key)
        )
        return Baseline(label, values) if values else fallback

    def keys(kind: str, share: float) -> list[float]:
        return [percentile(run["keys"][kind], share) for run in runs if run["keys"][kind]]

    recorded = (
        f"BENCHMARKS.md recorded before: Python ready {PREVIOUS['python ready, first visit']} ms on a first "
        f"visit, {PREVIOUS['python ready, warm']} ms warm, {PREVIOUS['bytes, first visit'] / 1e6:.1f} MB"
    )
    no_snapshot = (
        Baseline("no server snapshot", each("cold_no_snapshot", "python"))
        if each("cold_no_snapshot", "python")
        else None
    )
    baseline_said = (
        f"{label}, measured in the same run"
        if previous
        else "a first visit to the same site without the snapshot file (CPython initialised from scratch)"
        if no_snapshot
        else "none measured in this run"
    )
    report = Report(
        "page",
        "Search page",
        method=_method(python, baseline_said),
        parameters={"runs": len(runs), "typed": TYPED, "python": python},
    )
    report.add(
        Figure(
            f"navigation → first suggestion of the whole page ({READY_TYPED} typed at once), first visit",
            "ms",
            each("cold", "suggest"),
            baseline=before("cold", "suggest"),
            note="" if previous else recorded,
        )
    )
    report.add(
        Figure(
            f"navigation → first suggestion of the whole page ({READY_TYPED} typed at once), warm",
            "ms",
            each("warm", "suggest"),
            baseline=before("warm", "suggest"),
        )
    )
    for phase, visit, budget in (
        ("cold", "first visit", SUGGESTIONS_COLD_MS),
        ("warm", "warm", SUGGESTIONS_WARM_MS),
    ):
        report.add(
            Figure(
                f"navigation → first Python suggestion ({READY_TYPED} typed at once), {visit}",
                "ms",
                each(phase, "first_suggest"),
                baseline=before(phase, "first_suggest"),
                target=Target("<=", budget),
                note="the keystroke stage's list or the whole page's, whichever came first",
            )
        )
        report.add(
            Figure(
                f"navigation → the keystroke stage's first suggestion ({READY_TYPED} typed at once), {visit}",
                "ms",
                each(phase, "keys_suggest"),
                baseline=before(phase, "keys_suggest"),
            )
        )
        report.add(
            Figure(
                f"bytes on the wire to the first Python suggestion, {visit}",
                "bytes",
                each(phase, "bytes_to_first"),
                baseline=before(phase, "bytes_to_first"),
                # No budget of its own: the 3 MB is for the whole first visit (below).
            )
        )
    report.add(Figure("navigation → keystroke stage ready, cold", "ms", each("cold", "keys")))
    report.add(Figure("navigation → usable input, cold", "ms", each("cold", "usable")))
    report.add(Figure("navigation → usable input, warm", "ms", each("warm", "usable")))
    report.add(
        Figure(
            "navigation → Python ready, cold",
            "ms",
            each("cold", "python"),
            baseline=before("cold", "python", no_snapshot),
            target=Target("<=", PYTHON_READY_COLD_MS),
        )
    )
    report.add(
        Figure(
            "navigation → Python ready, warm",
            "ms",
            each("warm", "python"),
            baseline=before("warm", "python"),
            target=Target("<=", PYTHON_READY_WARM_MS),
        )
    )
    if no_snapshot:
        report.add(
            Figure(
                "navigation → Python ready, cold, no server snapshot",
                "ms",
                each("cold_no_snapshot", "python"),
            )
        )
    for phase, visit in (("cold", "cold"), ("warm", "warm")):
        if each(phase, "interpreter"):  # Pyodide's own mark (pyscript-interpreter.mjs)
            report.add(Figure(f"navigation → interpreter ready, {visit}", "ms", each(phase, "interpreter")))
    report.add(Figure("keystroke → chips and suggestions, p50", "ms", keys("handler", 0.5)))
    report.add(
        Figure(
            "keystroke → chips and suggestions, p95",
            "ms",
            keys("handler", 0.95),
            target=Target("<=", KEYSTROKE_P95_MS),
        )
    )
    report.add(Figure("keystroke event → handled, p95", "ms", keys("latency", 0.95)))
    report.add(
        Figure(
            "bytes on the wire, cold",
            "bytes",
            each("cold", "bytes"),
            baseline=before(
                "cold",
                "bytes",
                Baseline("no server snapshot", each("cold_no_snapshot", "bytes")) if no_snapshot else None,
            ),
            target=Target("<=", FIRST_VISIT_BYTES),
        )
    )
    report.add(
        Figure("bytes on the wire, warm", "bytes", each("warm", "bytes"), baseline=before("warm", "bytes"))
    )
    for link in LINKS:
        if link.megabits_per_second is not None:
            _link_figures(report, link, runs, previous, label)
    if codings:
        report.add(
            Figure(
                "first visit's files, Brotli 11 (bodies)",
                "bytes",
                [sum(row.brotli for row in codings)],
                baseline=Baseline("gzip -9", [sum(row.gzip for row in codings)]),
                note=f"the {len(codings)} files of one first visit; as they are: {sum(r.raw for r in codings):,} bytes",
            )
        )
    # A figure no run measured is left out: the stage's list where the whole page always came
    # first, Pyodide's own marks on a MicroPython page.
    report.figures = [figure for figure in report.figures if figure.runs]
    if clients is None:
        return report
    report.add(
        Figure(
            "ai.search from the page's Python (awaited fetch), p50",
            "ms",
            [percentile(clients["main"], 0.5)],
            baseline=Baseline("plain JS fetch", [percentile(clients["js"], 0.5)]),
            note=f"one profile, {CLIENT_CALLS} calls each; a Pyodide worker with pyodide-http took "
            f"{percentile(clients['worker'], 0.5):.1f} ms per call after a {clients['workerReady']:.0f} ms start",
        )
    )
    return report


def _print_phases(label: str, runs: list[dict[str, Any]], phases: tuple[str, ...]) -> None:
    keys = ("paint", "usable", "keys_suggest", "interpreter", "python", "suggest", "first_suggest")
    for phase in phases:
        row = {
            key: _median([run[phase].get(key) for run in runs])
            for key in (*keys, "bytes", "bytes_to_keys", "bytes_to_suggest", "requests")
        }
        each = [f"{run[phase]['suggest']:.0f} ({run[phase]['snapshot'] or '-'})" for run in runs]
        cells = " ".join(f"{'-' if row[k] is None else format(row[k], '.0f'):>7}" for k in keys)
        print(
            f"{label + phase:<27} {cells} {row['bytes_to_keys'] or 0:>11,.0f} {row['bytes_to_suggest'] or 0:>11,.0f}"
            f" {row['bytes'] or 0:>11,.0f} {row['requests'] or 0:>8.0f}  {', '.join(each)}"
        )


def _print_links(label: str, runs: list[dict[str, Any]]) -> None:
    for link in LINKS:
        if link.megabits_per_second is None:
            continue
        on = [run["links"][link.name] for run in runs if link.name in run.get("links", {})]
        phases = (
            ("cold", "warm", "cold_no_snapshot")
            if all("cold_no_snapshot" in v for v in on)
            else ("cold", "warm")
        )
        _print_phases(f"{label}{link.name} ", on, phases)


def _codings(site: Path, visit: dict[str, Any]) -> list[FileCodings]:
    return file_codings(site, visit["files"])


def _print_codings(rows: list[FileCodings]) -> None:
    """The first visit's files in each coding (bytes), largest first; the small ones summed."""
    print("first visit's files: as sent / none / gzip -9 / Brotli 11 (bytes; the server sends Brotli)")
    shown, rest = rows[:CODINGS_SHOWN], rows[CODINGS_SHOWN:]
    for row in shown:
        print(
            f"  {row.path[:58]:<58} {row.wire:>10,} {row.coding or '-':>4} {row.raw:>11,} {row.gzip:>10,}"
            f" {row.brotli:>10,}"
        )
    if rest:
        print(
            f"  {f'{len(rest)} smaller files':<58} {sum(r.wire for r in rest):>10,} {'':>4}"
            f" {sum(r.raw for r in rest):>11,} {sum(r.gzip for r in rest):>10,} {sum(r.brotli for r in rest):>10,}"
        )
    print(
        f"  {'all':<58} {sum(r.wire for r in rows):>10,} {'':>4} {sum(r.raw for r in rows):>11,}"
        f" {sum(r.gzip for r in rows):>10,} {sum(r.brotli for r in rows):>10,}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh browser profiles (default 5)")
    parser.add_argument(
        "--json", type=Path, metavar="PATH", help="also write the figures there (bench/_figures.py)"
    )
    baselines = add_python_options(parser, "the page")
    baselines.add_argument(
        "--previous",
        type=Path,
        metavar="CHECKOUT",
        help="the baseline: another checkout's page (set up with its own scripts/setup)",
    )
    parser.add_argument(
        "--pyodide-with-stage",
        action="store_true",
        help="on Pyodide, start it at once, beside the keystroke stage, instead of after it (to compare)",
    )
    parser.add_argument(
        "--skip-baselines",
        action="store_true",
        help="leave out the baseline page, the no-snapshot visits and the API client comparison (quicker checks)",
    )
    args = parser.parse_args()
    if args.pyodide_with_stage and args.python != "pyodide":
        parser.error("--pyodide-with-stage needs --python pyodide")
    wanted = args.previous is None and not args.skip_baselines
    against = baseline_python(parser, args.python, args.against_python, wanted=wanted)
    on_pyodide = args.python == "pyodide"

    from playwright.sync_api import sync_playwright

    previous: list[dict[str, Any]] | None = None
    label = (
        "previous page (--previous)"
        if args.previous
        else f"{PAGE_PYTHONS[against]} page (--against-python)"
        if against
        else ""
    )
    with (
        serve(
            python=args.python,
            stage_first=not args.pyodide_with_stage,
            bare=on_pyodide and not args.skip_baselines,
            other=against,
        ) as served,
        sync_playwright() as pw,
    ):
        session = login(served.url, "bob")
        bare = (served.bare_url, login(served.bare_url, "bob")) if served.bare_url else None
        runs = [run_once(pw, served.url, session, bare) for _ in range(args.runs)]
        # The client comparison runs Python through Pyodide's own API (runPythonAsync, pyodide.ffi).
        clients = compare_clients(pw, served.url, session) if on_pyodide and not args.skip_baselines else None
        if served.other_url is not None:
            other_session = login(served.other_url, "bob")
            previous = [
                {
                    **visits(pw, served.other_url, other_session),
                    "links": on_links(pw, served.other_url, other_session),
                }
                for _ in range(args.runs)
            ]
        elif args.previous is not None:
            with serve_previous(args.previous.resolve()) as previous_url:
                previous_session = login(previous_url, "bob")
                previous = [
                    {
                        **visits(pw, previous_url, previous_session),
                        "links": on_links(pw, previous_url, previous_session),
                    }
                    for _ in range(args.runs)
                ]

        codings = _codings(served.site, runs[0]["cold"])

    build_report(runs, clients, previous, codings, python=args.python, label=label).write(args.json)
    print(
        f"search page on {args.python}, {args.runs} runs, medians (ms from navigation start; bytes on the wire)"
    )
    print(
        f"{'start':<27} {'paint':>7} {'usable':>7} {'stage':>7} {'interp.':>7} {'python':>7} {'suggest':>7} {'first':>7}"
        f" {'to stage':>11} {'to suggest':>11} {'bytes':>11} {'requests':>8}  first Python suggestion per run (snapshot)"
    )
    _print_phases("", runs, PHASES if all(run["cold_no_snapshot"] for run in runs) else PHASES[:2])
    _print_links("", runs)
    _print_codings(codings)
    for phase in ("cold", "warm"):
        steps = ", ".join(
            f"{key} {_median([run[phase][key] for run in runs]):.0f}"
            for key in (*MARKS, "keys_suggest", "suggest", "first_suggest")
            if _median([run[phase][key] for run in runs]) is not None
        )
        print(f"  {phase} marks (medians, ms): {steps}")
    if previous:
        print(f"baseline: {label}")
        _print_phases("baseline ", previous, ("cold", "warm"))
        _print_links("baseline ", previous)
    else:
        print(
            f"previous (BENCHMARKS.md): Python ready {PREVIOUS['python ready, first visit']} ms first visit, "
            f"{PREVIOUS['python ready, warm']} ms warm; {PREVIOUS['bytes, first visit']:,} bytes first visit"
        )
    handler = [v for run in runs for v in run["keys"]["handler"]]
    latency = [v for run in runs for v in run["keys"]["latency"]]
    print(
        f"keystrokes ({len(handler)}, all runs pooled): handler p50 {percentile(handler, 0.5):.1f} ms, "
        f"p95 {percentile(handler, 0.95):.1f} ms; event to handled p50 {percentile(latency, 0.5):.1f} ms, "
        f"p95 {percentile(latency, 0.95):.1f} ms"
    )
    if clients is None:
        return
    print(
        f"API client, {CLIENT_CALLS} x ai.search (p50): Python awaiting fetch on the main thread "
        f"{percentile(clients['main'], 0.5):.1f} ms; Pyodide worker + pyodide-http (sync XHR) "
        f"{percentile(clients['worker'], 0.5):.1f} ms after a {clients['workerReady']:.0f} ms start; "
        f"plain JS fetch {percentile(clients['js'], 0.5):.1f} ms"
    )


if __name__ == "__main__":
    main()
