"""Benchmark the search page in headless Chromium: start-up, keystrokes, bytes, and the API client.

    .venv/bin/python bench/bench_page.py [--runs 5] [--json]

Starts the real app in-process (uvicorn on a free loopback port, a temp data dir with the demo
workspace, keyword-only retrieval so that no embedding runs in the background) and drives Debian's
chromium with a fresh profile per run. Prints medians over the runs (never asserted anywhere):

- cold: first visit (empty HTTP cache, no Pyodide snapshot);
- warm: a reload once the snapshot is stored (HTTP cache + snapshot: what a second visit gets);
- warm, no snapshot: a reload with the snapshot deleted (HTTP cache only);
- per start: navigation to first paint, to a usable box (plain HTML plus fallback.js), to Python
  ready (the page's own ``ai-search:python-ready`` mark); bytes on the wire (CDP encodedDataLength);
- keystrokes: p50/p95 of the Python input handler and of event-creation-to-handled, while typing
  filters (chips) and tokens (suggestions) as bob;
- API client: 20 ``ai.search`` calls from the page's Python with awaited ``fetch`` on the main thread,
  against a Pyodide worker calling through pyodide-http (synchronous XHR), plus that worker's start.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import demo_app_server

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]  # fmt: skip
SESSION_KEY = "ai-search.session"
# Milliseconds any one wait may take before the run counts as broken.
WAIT_MS = 120_000
# What the keystroke run types, as bob: finished filters (chips), tokens with suggestions, words.
TYPED = "deploy in:engin from:car after:2026-09-01 before:2026-11-30 postgres failover in:ops "
CLIENT_CALLS = 20
CLIENT_QUERY = "postgres failover"

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


@contextmanager
def serve() -> Iterator[str]:
    """The real app with the demo workspace, from a copy of the page files (plus the bench worker)."""
    work = Path(tempfile.mkdtemp(prefix="bench-page-"))
    site = work / "site"
    site.mkdir()
    for name in ("index.html", "pyscript.toml"):
        shutil.copy(ROOT / name, site / name)
    shutil.copytree(ROOT / "static", site / "static")
    shutil.copytree(ROOT / "py", site / "py", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (site / "static" / "bench-net-worker.mjs").write_text(NET_WORKER, encoding="utf-8")
    try:
        with demo_app_server(root=site) as url:
            yield url
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _login(url: str, username: str) -> dict[str, str]:
    import httpx

    data = httpx.post(f"{url}/api/v1/login", json={"user": username, "password": f"demo-{username}"}).json()[
        "data"
    ]
    return {"userId": data["userId"], "authToken": data["authToken"], "username": username, "name": ""}


class ByteCounter:
    """Bytes on the wire for the page's own requests (CDP Network.loadingFinished)."""

    def __init__(self, context: Any, page: Any) -> None:
        self.total = 0
        self.requests = 0
        session = context.new_cdp_session(page)
        session.send("Network.enable")
        session.on("Network.loadingFinished", self._finished)

    def _finished(self, event: dict[str, Any]) -> None:
        self.total += int(event.get("encodedDataLength", 0))
        self.requests += 1

    def reset(self) -> None:
        self.total = self.requests = 0


def _marks(page: Any) -> dict[str, float]:
    return page.evaluate(
        """() => {
          const mark = (name) => performance.getEntriesByName(name)[0]?.startTime ?? null;
          return { paint: mark("first-contentful-paint"), usable: mark("ai-search:usable"),
                   python: mark("ai-search:python-ready"), snapshot: window.__pySnapshot ?? null };
        }"""
    )


def _start(page: Any, counter: ByteCounter, reload: bool, url: str) -> dict[str, Any]:
    counter.reset()
    if reload:
        page.reload()
    else:
        page.goto(url)
    page.wait_for_selector("html[data-py=ready]", timeout=WAIT_MS)
    page.wait_for_load_state("networkidle")
    return {**_marks(page), "bytes": counter.total, "requests": counter.requests}


def run_once(pw: Any, url: str, session: dict[str, str]) -> dict[str, Any]:
    profile = tempfile.mkdtemp(prefix="bench-profile-")
    context = pw.chromium.launch_persistent_context(
        profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    try:
        page = context.new_page()
        page.add_init_script(
            f"sessionStorage.setItem({json.dumps(SESSION_KEY)}, {json.dumps(json.dumps(session))})"
        )
        counter = ByteCounter(context, page)
        cold = _start(page, counter, False, url)
        page.wait_for_function("() => window.__pySnapshot === 'stored'", timeout=WAIT_MS)
        warm = _start(page, counter, True, url)
        page.evaluate("caches.delete('ai-search-pyodide-snapshot')")
        no_snapshot = _start(page, counter, True, url)
        page.wait_for_function("() => window.__pySnapshot === 'stored'", timeout=WAIT_MS)
        page.reload()
        page.wait_for_selector("html[data-py=ready]", timeout=WAIT_MS)
        page.wait_for_function("() => window.aiSearchPrefetched === true", timeout=WAIT_MS)
        page.click("#search-box")
        page.evaluate("window.aiSearchTimings.handler.length = 0; window.aiSearchTimings.latency.length = 0")
        page.keyboard.type(TYPED)
        keys = page.evaluate("({...window.aiSearchTimings})")
        return {"cold": cold, "warm": warm, "warm_no_snapshot": no_snapshot, "keys": keys}
    finally:
        context.close()
        shutil.rmtree(profile, ignore_errors=True)


def compare_clients(pw: Any, url: str, session: dict[str, str]) -> dict[str, Any]:
    profile = tempfile.mkdtemp(prefix="bench-profile-")
    context = pw.chromium.launch_persistent_context(
        profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    try:
        page = context.new_page()
        page.add_init_script(
            f"sessionStorage.setItem({json.dumps(SESSION_KEY)}, {json.dumps(json.dumps(session))})"
        )
        page.goto(url)
        page.wait_for_selector("html[data-py=ready]", timeout=WAIT_MS)
        page.evaluate(
            """async (code) => {
              const { whenDefined } = await import("/static/vendor/pyscript-0.7.31/core.js");
              const { interpreter } = await whenDefined("py");
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


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of tables")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    with serve() as url, sync_playwright() as pw:
        session = _login(url, "bob")
        runs = [run_once(pw, url, session) for _ in range(args.runs)]
        clients = compare_clients(pw, url, session)

    summary: dict[str, Any] = {"runs": args.runs}
    for phase in ("cold", "warm", "warm_no_snapshot"):
        summary[phase] = {
            key: _median([run[phase][key] for run in runs])
            for key in ("paint", "usable", "python", "bytes", "requests")
        }
        summary[phase]["python_each"] = [round(run[phase]["python"]) for run in runs]
    handler = [v for run in runs for v in run["keys"]["handler"]]
    latency = [v for run in runs for v in run["keys"]["latency"]]
    summary["keys"] = {
        "count": len(handler),
        "handler_p50": _percentile(handler, 0.5),
        "handler_p95": _percentile(handler, 0.95),
        "latency_p50": _percentile(latency, 0.5),
        "latency_p95": _percentile(latency, 0.95),
    }
    summary["clients"] = {
        "main_fetch_p50": _percentile(clients["main"], 0.5),
        "worker_sync_xhr_p50": _percentile(clients["worker"], 0.5),
        "plain_js_fetch_p50": _percentile(clients["js"], 0.5),
        "worker_ready_ms": clients["workerReady"],
    }
    if args.json:
        print(json.dumps(summary))
        return
    print(f"search page, {args.runs} runs, medians (ms from navigation start; bytes on the wire)")
    print(
        f"{'start':<18} {'paint':>7} {'usable':>7} {'python':>7} {'bytes':>11} {'requests':>8}  python per run"
    )
    for phase in ("cold", "warm", "warm_no_snapshot"):
        row = summary[phase]
        print(
            f"{phase:<18} {row['paint']:>7.0f} {row['usable']:>7.0f} {row['python']:>7.0f} "
            f"{row['bytes']:>11,.0f} {row['requests']:>8.0f}  {row['python_each']}"
        )
    keys = summary["keys"]
    print(
        f"keystrokes ({keys['count']}): handler p50 {keys['handler_p50']:.1f} ms, p95 {keys['handler_p95']:.1f} ms; "
        f"event to handled p50 {keys['latency_p50']:.1f} ms, p95 {keys['latency_p95']:.1f} ms"
    )
    c = summary["clients"]
    print(
        f"API client, {CLIENT_CALLS} x ai.search (p50): Python awaiting fetch on the main thread "
        f"{c['main_fetch_p50']:.1f} ms; Pyodide worker + pyodide-http (sync XHR) {c['worker_sync_xhr_p50']:.1f} ms "
        f"after a {c['worker_ready_ms']:.0f} ms start; plain JS fetch {c['plain_js_fetch_p50']:.1f} ms"
    )


if __name__ == "__main__":
    main()
