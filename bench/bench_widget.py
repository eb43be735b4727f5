"""Benchmark the embeddable widget: what the loader costs a host page, and how fast it opens.

    .venv/bin/python bench/bench_widget.py [--runs 5] [--json PATH] [--python micropython|pyodide]
        [--against-python OTHER | --skip-baselines]

Starts the real app in-process (uvicorn on a free loopback port, a temp data dir with the demo
workspace, keyword-only retrieval) with a host page origin on its embed allow-list, and a static host
site on another port whose pages embed the widget with one script tag. Drives Debian's chromium with
a fresh profile per run and prints medians (never asserted anywhere); ``--json PATH`` also writes
them as a ``bench/_figures.py`` Report:

- bytes: what the host page downloads from our server before the widget is opened, on the wire
  (CDP encodedDataLength): with ``data-preload="none"`` only the loader (the default, ``intent``,
  is the same until the pointer reaches the button); with the idle warm-up
  (``data-preload="idle"``), the loader plus the iframe that starts Python (first visit, then from
  the HTTP cache); and in all, once the opened widget's Python is ready and the network is idle;
- open: from the host asking to open (``ai-search:open``) to a usable box (``ai-search:opened``,
  the box has focus) and to a Python-ready box (``ai-search:ready``), for a first visit (cold: empty
  HTTP cache) and a second one (warm: HTTP cache), each without warm-up (``data-preload="none"``,
  opened right after load) and after the idle warm-up;
- warm-up: from navigation start to Python ready in the hidden iframe, cold and warm.

The widget's Python runs on the interpreter ``--python`` names (the server's page_python setting;
default, the setting's default); the same runs against a server whose widget runs on the other one
are the baseline, measured in the same run (``--against-python``; none with ``--skip-baselines``).
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import statistics
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _browser import CHROMIUM, CHROMIUM_ARGS, WAIT_MS, ByteCounter
from _figures import Baseline, Figure, Report
from _harness import PAGE_PYTHONS, add_python_options, baseline_python, demo_app_server, free_port

ROOT = Path(__file__).resolve().parents[1]
# Milliseconds of network silence after load before the "before opening" bytes are read.
SETTLE_MS = 1500
# The host page's script: timestamps (ms since navigation start) of the widget's events.
HOST_JS = """
window.__t = { ready: null, opened: null, python: null };
document.addEventListener("ai-search:ready", () => { window.__t.ready ??= performance.now(); });
document.addEventListener("ai-search:opened", (event) => {
  window.__t.opened ??= performance.now();
  window.__t.python = event.detail.python;
});
window.benchOpen = () => {
  window.__t.open = performance.now();
  document.dispatchEvent(new CustomEvent("ai-search:open"));
};
"""


@contextmanager
def host_site(server: str, port: int) -> Iterator[str]:
    """The host site: ``/idle`` (``data-preload="idle"``: the warm-up) and ``/none``."""

    def page(preload: str) -> str:
        attribute = f' data-preload="{preload}"'
        return (
            '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Host</title>'
            '<link rel="icon" href="data:,"><script src="/host.js"></script></head>'
            "<body><h1>A host page</h1><p>Some documentation.</p>"
            f'<script src="{server}/static/embed.js"{attribute}></script></body></html>'
        )

    files = {
        "/idle": ("text/html", page("idle")),
        "/none": ("text/html", page("none")),
        "/host.js": ("text/javascript", HOST_JS),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            content_type, body = files.get(self.path, ("text/plain", "not found"))
            data = body.encode()
            self.send_response(200 if self.path in files else 404)
            self.send_header("content-type", f"{content_type}; charset=utf-8")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextmanager
def serve(embedder_origin: str, python: str) -> Iterator[str]:
    """The real app with the demo workspace, its pages' Python on ``python``; ``embedder_origin``
    is on its embed allow-list."""
    with demo_app_server({"embed_allowed_origins": [embedder_origin], "page_python": python}) as url:
        yield url


def measured(pw: Any, python: str, runs: int) -> list[dict[str, dict[str, Any]]]:
    """``runs`` runs against a server whose widget runs on ``python``, from a host site of its own."""
    host_port = free_port()
    with serve(f"http://127.0.0.1:{host_port}", python) as server, host_site(server, host_port) as host:
        return [run_once(pw, server, host) for _ in range(runs)]


def _visit(context: Any, server: str, host: str, preload: str) -> dict[str, Any]:
    """One host page visit: bytes before opening, then open and time it."""
    page = context.new_page()
    counter = ByteCounter(context, page, server)
    try:
        page.goto(f"{host}/{preload}")
        if preload == "idle":
            page.wait_for_function("() => window.__t.ready !== null", timeout=WAIT_MS)
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(SETTLE_MS)
        before = counter.read()
        page.evaluate("() => window.benchOpen()")
        page.wait_for_function(
            "() => window.__t.opened !== null && window.__t.ready !== null", timeout=WAIT_MS
        )
        times = page.evaluate("() => ({ ...window.__t })")
        frame = next(f for f in page.frames if f.url.startswith(f"{server}/embed"))
        # The next visit restores Python from the snapshot the first one stores (pyodide-loader.mjs);
        # on MicroPython there is nothing to keep but the HTTP cache.
        frame.wait_for_function(
            """() => document.documentElement.dataset.python === 'micropython'
                     || ['stored', 'loaded'].includes(globalThis.__pySnapshot)""",
            timeout=WAIT_MS,
        )
        page.wait_for_load_state("networkidle")
        return {
            "before": before,
            "opened": counter.read(),
            "usable_ms": times["opened"] - times["open"],
            "python_ms": max(times["ready"], times["open"]) - times["open"],
            "opened_by_python": times["python"],
            "warmup_ready_ms": times["ready"] if preload == "idle" else None,
        }
    finally:
        page.close()


def run_once(pw: Any, server: str, host: str) -> dict[str, dict[str, Any]]:
    """Two fresh profiles: cold then warm without warm-up (and warm with it); cold with warm-up."""
    results: dict[str, dict[str, Any]] = {}
    for plan in (
        (("cold_none", "none"), ("warm_none", "none"), ("warm_idle", "idle")),
        (("cold_idle", "idle"),),
    ):
        profile = tempfile.mkdtemp(prefix="bench-widget-profile-")
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            for name, preload in plan:
                results[name] = _visit(context, server, host, preload)
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)
    return results


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


SCENARIOS = ("cold_none", "warm_none", "cold_idle", "warm_idle")
LABELS = {
    "cold_none": "first visit, opened without warm-up",
    "warm_none": "second visit, opened without warm-up",
    "cold_idle": "first visit, opened after the idle warm-up",
    "warm_idle": "second visit, opened after the idle warm-up",
}
METHOD = (
    "The real app with the demo workspace on loopback, a host page on another loopback origin embedding "
    "the widget with one script tag, headless Debian chromium, two fresh profiles per run (first visit: "
    "empty HTTP cache; second visit: HTTP cache); the widget's Python on {python}. Times from "
    "the host's ai-search:open to the box being usable (focused) and to Python ready; bytes on the wire "
    "to our server before the widget is opened and once it is open with Python ready (CDP "
    "encodedDataLength). Baseline: {baseline}."
)


def build_report(
    runs: list[dict[str, dict[str, Any]]],
    loader: bytes,
    *,
    python: str = "pyodide",
    baseline: list[dict[str, dict[str, Any]]] | None = None,
    label: str = "",
) -> Report:
    """The figures of ``runs`` (the widget on ``python``), each beside the same figure of
    ``baseline`` (the widget on the other interpreter, measured in the same run)."""
    report = Report(
        "widget",
        "Embeddable widget",
        method=METHOD.format(
            python=PAGE_PYTHONS[python],
            baseline=f"{label}, measured in the same run" if baseline else "none",
        ),
        parameters={
            "runs": len(runs),
            "python": python,
            "loader_bytes": len(loader),
            "loader_gzip_bytes": len(gzip.compress(loader, 9)),
        },
    )

    def add(name: str, unit: str, value: Any) -> None:
        before = Baseline(label, [value(run) for run in baseline]) if baseline else None
        report.add(Figure(name, unit, [value(run) for run in runs], baseline=before))

    for name in SCENARIOS:
        said = LABELS[name]
        add(f"open → usable, {said}", "ms", lambda run, n=name: run[n]["usable_ms"])
        add(f"open → Python ready, {said}", "ms", lambda run, n=name: run[n]["python_ms"])
    for name in ("cold_idle", "warm_idle"):
        add(
            f"navigation → Python ready in the hidden iframe, {LABELS[name].split(',')[0]}",
            "ms",
            lambda run, n=name: run[n]["warmup_ready_ms"],
        )
    for name in ("cold_none", "cold_idle", "warm_idle"):
        add(f"bytes before opening, {LABELS[name]}", "bytes", lambda run, n=name: run[n]["before"]["bytes"])
    for name in ("cold_none", "warm_none"):
        add(
            f"bytes once opened and Python ready, {LABELS[name]}",
            "bytes",
            lambda run, n=name: run[n]["opened"]["bytes"],
        )
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="pairs of fresh browser profiles (default 5)")
    parser.add_argument(
        "--json", type=Path, metavar="PATH", help="also write the figures there (bench/_figures.py)"
    )
    baselines = add_python_options(parser, "the widget")
    baselines.add_argument("--skip-baselines", action="store_true", help="no baseline runs (quicker checks)")
    args = parser.parse_args()
    against = baseline_python(parser, args.python, args.against_python, wanted=not args.skip_baselines)

    from playwright.sync_api import sync_playwright

    loader = (ROOT / "static" / "embed.js").read_bytes()
    with sync_playwright() as pw:
        runs = measured(pw, args.python, args.runs)
        baseline = measured(pw, against, args.runs) if against else None

    label = f"{PAGE_PYTHONS[against]} widget (--against-python)" if against else ""
    build_report(runs, loader, python=args.python, baseline=baseline, label=label).write(args.json)
    for title, measured_runs in ((f"{PAGE_PYTHONS[args.python]} widget", runs), (label, baseline)):
        if measured_runs:
            _print_runs(title, measured_runs, args.runs)


def _print_runs(title: str, runs: list[dict[str, dict[str, Any]]], count: int) -> None:
    loader = (ROOT / "static" / "embed.js").read_bytes()
    print(f"{title}, {count} runs, medians")
    print(
        f"loader static/embed.js: {len(loader):,} bytes as served, {len(gzip.compress(loader, 9)):,} gzip-compressed"
    )
    print(
        f"{'visit':<12} {'bytes before open':>17} {'requests':>8} {'bytes opened':>13} {'open->usable':>13} "
        f"{'open->python':>13} {'warm-up ready':>14}  open->python per run"
    )
    for name in SCENARIOS:
        row = {
            "before_bytes": _median([run[name]["before"]["bytes"] for run in runs]),
            "before_requests": _median([run[name]["before"]["requests"] for run in runs]),
            "opened_bytes": _median([run[name]["opened"]["bytes"] for run in runs]),
            "usable_ms": _median([run[name]["usable_ms"] for run in runs]),
            "python_ms": _median([run[name]["python_ms"] for run in runs]),
            "warmup_ready_ms": _median([run[name]["warmup_ready_ms"] for run in runs]),
        }
        each = [round(run[name]["python_ms"]) for run in runs]
        warmup = "" if row["warmup_ready_ms"] is None else f"{row['warmup_ready_ms']:.0f} ms"
        print(
            f"{name:<12} {row['before_bytes']:>17,.0f} {row['before_requests']:>8.0f} {row['opened_bytes']:>13,.0f} "
            f"{row['usable_ms']:>10.0f} ms {row['python_ms']:>10.0f} ms {warmup:>14}  {each}"
        )
    print("cold: empty HTTP cache; warm: second visit. none: data-preload=none, opened after load;")
    print("idle: data-preload=idle (the warm-up; the default is intent), opened once Python was ready.")
    print("Times: ms from the host's open request.")


if __name__ == "__main__":
    main()
