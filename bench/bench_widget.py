"""Benchmark the embeddable widget: what the loader costs a host page, and how fast it opens.

    .venv/bin/python bench/bench_widget.py [--runs 5] [--json PATH]

Starts the real app in-process (uvicorn on a free loopback port, a temp data dir with the demo
workspace, keyword-only retrieval) with a host page origin on its embed allow-list, and a static host
site on another port whose pages embed the widget with one script tag. Drives Debian's chromium with
a fresh profile per run and prints medians (never asserted anywhere); ``--json PATH`` also writes
them as a ``bench/_figures.py`` Report:

- bytes: what the host page downloads from our server before the widget is opened, on the wire
  (CDP encodedDataLength): with ``data-preload="none"`` only the loader (the default, ``intent``,
  is the same until the pointer reaches the button); with the idle warm-up
  (``data-preload="idle"``), the loader plus the iframe that starts Python (first visit, then from
  the HTTP cache);
- open: from the host asking to open (``ai-search:open``) to a usable box (``ai-search:opened``,
  the box has focus) and to a Python-ready box (``ai-search:ready``), for a first visit (cold: empty
  HTTP cache; Python from the server's Pyodide snapshot) and a second one (warm: HTTP cache), each without
  warm-up (``data-preload="none"``, opened right after load) and after the idle warm-up;
- warm-up: from navigation start to Python ready in the hidden iframe, cold and warm.
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
from _figures import Figure, Report
from _harness import demo_app_server, free_port

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
def serve(embedder_origin: str) -> Iterator[str]:
    """The real app with the demo workspace; ``embedder_origin`` is on its embed allow-list."""
    with demo_app_server({"embed_allowed_origins": [embedder_origin]}) as url:
        yield url


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
        # The next visit restores Python from the snapshot the first one stores (pyodide-loader.mjs).
        frame.wait_for_function(
            "() => ['stored', 'loaded'].includes(globalThis.__pySnapshot)", timeout=WAIT_MS
        )
        return {
            "before": before,
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
    "empty HTTP cache, Python from the server's Pyodide snapshot; second visit: HTTP cache). Times from "
    "the host's ai-search:open to the box being usable (focused) and to Python ready; bytes on the wire "
    "to our server before the widget is opened (CDP encodedDataLength)."
)


def build_report(runs: list[dict[str, dict[str, Any]]], loader: bytes) -> Report:
    report = Report(
        "widget",
        "Embeddable widget",
        method=METHOD,
        parameters={
            "runs": len(runs),
            "loader_bytes": len(loader),
            "loader_gzip_bytes": len(gzip.compress(loader, 9)),
        },
    )
    for name in SCENARIOS:
        label = LABELS[name]
        report.add(Figure(f"open → usable, {label}", "ms", [run[name]["usable_ms"] for run in runs]))
        report.add(Figure(f"open → Python ready, {label}", "ms", [run[name]["python_ms"] for run in runs]))
    for name in ("cold_idle", "warm_idle"):
        report.add(
            Figure(
                f"navigation → Python ready in the hidden iframe, {LABELS[name].split(',')[0]}",
                "ms",
                [run[name]["warmup_ready_ms"] for run in runs],
            )
        )
    for name in ("cold_none", "cold_idle", "warm_idle"):
        report.add(
            Figure(
                f"bytes before opening, {LABELS[name]}",
                "bytes",
                [run[name]["before"]["bytes"] for run in runs],
            )
        )
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="pairs of fresh browser profiles (default 5)")
    parser.add_argument(
        "--json", type=Path, metavar="PATH", help="also write the figures there (bench/_figures.py)"
    )
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    loader = (ROOT / "static" / "embed.js").read_bytes()
    host_port = free_port()
    host_origin = f"http://127.0.0.1:{host_port}"
    with serve(host_origin) as server, host_site(server, host_port) as host, sync_playwright() as pw:
        runs = [run_once(pw, server, host) for _ in range(args.runs)]

    build_report(runs, loader).write(args.json)
    print(f"widget, {args.runs} runs, medians")
    print(
        f"loader static/embed.js: {len(loader):,} bytes as served, {len(gzip.compress(loader, 9)):,} gzip-compressed"
    )
    print(
        f"{'visit':<12} {'bytes before open':>17} {'requests':>8} {'open->usable':>13} "
        f"{'open->python':>13} {'warm-up ready':>14}  open->python per run"
    )
    for name in SCENARIOS:
        row = {
            "before_bytes": _median([run[name]["before"]["bytes"] for run in runs]),
            "before_requests": _median([run[name]["before"]["requests"] for run in runs]),
            "usable_ms": _median([run[name]["usable_ms"] for run in runs]),
            "python_ms": _median([run[name]["python_ms"] for run in runs]),
            "warmup_ready_ms": _median([run[name]["warmup_ready_ms"] for run in runs]),
        }
        each = [round(run[name]["python_ms"]) for run in runs]
        warmup = "" if row["warmup_ready_ms"] is None else f"{row['warmup_ready_ms']:.0f} ms"
        print(
            f"{name:<12} {row['before_bytes']:>17,.0f} {row['before_requests']:>8.0f} "
            f"{row['usable_ms']:>10.0f} ms {row['python_ms']:>10.0f} ms {warmup:>14}  {each}"
        )
    print("cold: empty HTTP cache; warm: second visit. none: data-preload=none, opened after load;")
    print("idle: data-preload=idle (the warm-up; the default is intent), opened once Python was ready.")
    print("Times: ms from the host's open request.")


if __name__ == "__main__":
    main()
