"""The search page's starts, measured: what bench/bench_page.py drives each browser profile through.

A start navigates (or reloads), types ``READY_TYPED`` into the box the moment it exists, and waits for
the first suggestion list *Python* shows (``FIRST_SUGGESTION_WATCH``, which reads any version of the
page the same way); it returns the page's own marks, that moment, the moment of the keystroke
stage's first list (MicroPython, before Pyodide) with the bytes on the wire until then, and bytes
on the wire.
``serve_previous`` serves another checkout of the project by its own server code, for a baseline
measured in the same run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _browser import CHROMIUM, CHROMIUM_ARGS, WAIT_MS, ByteCounter

__all__ = [
    "LINKS",
    "MARKS",
    "READY_TYPED",
    "Link",
    "kept_for_next_time",
    "login",
    "new_profile",
    "seeded_page",
    "serve_previous",
    "start",
    "visits",
]

SESSION_KEY = "ai-search.session"  # py/ai_search_web/auth.py
# What is typed at once on every start: the first Python suggestion for it is the ready figure.
READY_TYPED = "in:gen"
# Seconds another checkout's server may take to answer its first request.
PREVIOUS_START_SECONDS = 120
# Notes, in every frame, when Python first shows suggestions (options in #suggestions while
# <html data-py=ready>); the page before Python (static/fallback.js) marks its own lists
# data-by="fallback", which do not count. And when the keystroke stage (MicroPython, before
# Pyodide) first shows a list (data-by="keys"), with the bytes on the wire up to that moment: the
# transferSize of every response finished by then (Resource Timing), the document's included.
FIRST_SUGGESTION_WATCH = """
new MutationObserver((_changes, observer) => {
  const list = document.getElementById("suggestions");
  if (!list || window.__firstPythonSuggestion !== undefined) return;
  if (document.documentElement.dataset.py === "ready" && list.dataset.by !== "fallback"
      && list.dataset.by !== "keys" && list.querySelector('[role="option"]')) {
    window.__firstPythonSuggestion = performance.now();
    observer.disconnect();
  }
}).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-py", "data-by"] });
new MutationObserver((_changes, observer) => {
  const list = document.getElementById("suggestions");
  if (!list || window.__firstKeysSuggestion !== undefined) return;
  if (list.dataset.by === "keys" && list.querySelector('[role="option"]')) {
    const now = performance.now();
    window.__firstKeysSuggestion = now;
    const done = [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")]
      .filter((entry) => entry.responseEnd <= now);
    window.__bytesToKeys = done.reduce((sum, entry) => sum + (entry.transferSize || 0), 0);
    observer.disconnect();
  }
}).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-by"] });
"""


@dataclass(frozen=True)
class Link:
    """A network the browser is made to see (Chromium's emulation, CDP
    ``Network.emulateNetworkConditions``): throughput each way and the added round-trip time."""

    name: str
    megabits_per_second: float | None  # None: loopback as it is
    latency_ms: float = 0

    def emulate(self, cdp: Any) -> None:
        if self.megabits_per_second is None:
            return
        bytes_per_second = self.megabits_per_second * 1_000_000 / 8
        cdp.send("Network.enable")
        cdp.send(
            "Network.emulateNetworkConditions",
            {
                "offline": False,
                "latency": self.latency_ms,
                "downloadThroughput": bytes_per_second,
                "uploadThroughput": bytes_per_second,
            },
        )


# The links every start is measured on: loopback, and two real connections (a good home or office
# line, a slow one).
LINKS = (
    Link("loopback", None),
    Link("20 Mbit/s, 40 ms", 20, 40),
    Link("10 Mbit/s, 100 ms", 10, 100),
)


def login(url: str, username: str) -> dict[str, str]:
    import httpx

    data = httpx.post(f"{url}/api/v1/login", json={"user": username, "password": f"demo-{username}"}).json()[
        "data"
    ]
    return {"userId": data["userId"], "authToken": data["authToken"], "username": username, "name": ""}


# The page's own marks, in the order a start passes them (an older page lacks some).
MARKS = {
    "usable": "ai-search:usable",
    "keys_start": "ai-search:keys-start",
    "keys_runtime": "ai-search:keys-runtime",
    "keys_files": "ai-search:keys-files",
    "keys_interpreter": "ai-search:keys-interpreter",
    "keys_imported": "ai-search:keys-imported",
    "keys": "ai-search:keys-ready",
    "page_files": "ai-search:page-files",  # the page on MicroPython: its bundle in
    "page_imported": "ai-search:page-imported",  # and imported (static/keys-boot.mjs)
    "loader": "ai-search:interpreter-start",
    "wasm": "ai-search:wasm-compiled",
    "snapshot_in": "ai-search:snapshot-ready",
    "interpreter": "ai-search:interpreter-ready",
    "python": "ai-search:python-ready",
}


def _marks(page: Any) -> dict[str, Any]:
    return page.evaluate(
        """(names) => {
          const mark = (name) => performance.getEntriesByName(name)[0]?.startTime ?? null;
          const out = Object.fromEntries(Object.entries(names).map(([key, name]) => [key, mark(name)]));
          out.paint = mark("first-contentful-paint");
          out.snapshot = [window.__pySnapshotFrom ?? window.__pySnapshot, window.__pySnapshotVia]
            .filter(Boolean).join(" via ") || null;
          return out;
        }""",
        MARKS,
    )


def _type_at_once(cdp: Any) -> None:
    """``READY_TYPED`` into the box the moment it exists, as one input event (a paste, or a fast
    typist's burst). Raw CDP, not Playwright's waits: those inject their own script into the new
    document and poll it, which under load took 0.3-1 s longer than the page needed."""
    deadline = time.monotonic() + WAIT_MS / 1000
    focus = "(() => { const box = document.getElementById('search-box'); box?.focus(); return document.activeElement === box && !!box; })()"
    while not cdp.send("Runtime.evaluate", {"expression": focus, "returnByValue": True})["result"].get(
        "value"
    ):
        if time.monotonic() > deadline:
            raise TimeoutError("the search box never appeared")
        time.sleep(0.005)
    cdp.send("Input.insertText", {"text": READY_TYPED})


def start(page: Any, counter: ByteCounter, reload: bool, url: str) -> dict[str, Any]:
    """One start: ``in:gen`` typed as soon as the box takes it, then wait for Python's suggestions."""
    counter.reset()
    cdp = page.context.new_cdp_session(page)
    try:
        if reload:
            page.reload(wait_until="commit")
        else:
            page.goto(url, wait_until="commit")
        _type_at_once(cdp)
    finally:
        cdp.detach()
    page.wait_for_function("() => window.__firstPythonSuggestion !== undefined", timeout=WAIT_MS)
    bytes_to_suggest = counter.total  # what the way to a working box cost; the rest comes after
    page.wait_for_load_state("networkidle")
    suggest = page.evaluate("window.__firstPythonSuggestion")
    stage = page.evaluate("[window.__firstKeysSuggestion ?? null, window.__bytesToKeys ?? null]")
    page.fill("#search-box", "")
    # The first Python-made list a person sees: the stage's, unless the whole page's came first (a
    # warm page on MicroPython can take over before the stage has shown one).
    stage_first = stage[0] is not None and stage[0] <= suggest
    return {
        **_marks(page),
        "suggest": suggest,
        "keys_suggest": stage[0],  # None: no stage list (an older page, it failed, or the page came first)
        "bytes_to_keys": stage[1],
        "first_suggest": stage[0] if stage_first else suggest,
        "bytes_to_first": stage[1] if stage_first else bytes_to_suggest,
        "bytes": counter.total,
        "bytes_to_suggest": bytes_to_suggest,
        "requests": counter.requests,
        "files": {url: list(sent) for url, sent in counter.files.items()},
    }


def new_profile(pw: Any) -> tuple[Any, str]:
    profile = tempfile.mkdtemp(prefix="bench-profile-")
    context = pw.chromium.launch_persistent_context(
        profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    return context, profile


def seeded_page(context: Any, session: dict[str, str]) -> Any:
    page = context.new_page()
    page.add_init_script(
        f"sessionStorage.setItem({json.dumps(SESSION_KEY)}, {json.dumps(json.dumps(session))})"
    )
    page.add_init_script(FIRST_SUGGESTION_WATCH)
    return page


@contextmanager
def serve_previous(checkout: Path) -> Iterator[str]:
    """Another checkout's page, served by that checkout's own server code (a subprocess on a free
    loopback port, the demo workspace, keyword-only retrieval), for the baseline of --previous."""
    import httpx

    from _harness import free_port

    data = Path(tempfile.mkdtemp(prefix="bench-previous-"))
    port = free_port()
    # No bytecode written: the other checkout (the main one, say) is only read.
    env = {**os.environ, "PYTHONPATH": str(checkout / "py"), "AI_SEARCH_EMBEDDER": "none",
           "AI_SEARCH_LOG_LEVEL": "warning", "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
    command = [sys.executable, "-m", "ai_search_server", "serve", "--demo", "--data", str(data / "data"),
               "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + PREVIOUS_START_SECONDS
        while True:
            try:
                if httpx.get(url + "/", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the previous checkout's server did not start ({checkout})")
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        process.wait(10)
        shutil.rmtree(data, ignore_errors=True)


def kept_for_next_time(page: Any) -> None:
    """Wait until what the page keeps for its next start is kept, as it would be before a person's
    next visit: the browser's own snapshot after a fresh start, or the server's in Cache Storage
    (static/pyodide-loader.mjs; an older page keeps neither). A page on MicroPython keeps nothing
    but the HTTP cache, which is written by the time the network is idle."""
    page.wait_for_function(
        """() => document.documentElement.dataset.python === 'micropython'
                 || window.__pySnapshot === 'stored' || window.__pySnapshotCopy !== undefined
                 || (window.__pySnapshot === 'loaded' && window.__pySnapshotVia === undefined)""",
        timeout=WAIT_MS,
    )


def visits(
    pw: Any,
    url: str,
    session: dict[str, str],
    then: Callable[[Any], Any] | None = None,
    link: Link = LINKS[0],
) -> dict[str, Any]:
    """A first visit in a fresh profile, then a warm one (after what the page keeps is kept), both
    over ``link``; ``then`` runs on the same page before the profile goes, its result under ``"then"``."""
    context, profile = new_profile(pw)
    try:
        page = seeded_page(context, session)
        counter = ByteCounter(context, page)
        link.emulate(counter.session)
        cold = start(page, counter, False, url)
        kept_for_next_time(page)
        warm = start(page, counter, True, url)
        extra = then(page) if then is not None else None
    finally:
        context.close()
        shutil.rmtree(profile, ignore_errors=True)
    return {"cold": cold, "warm": warm, "then": extra}
