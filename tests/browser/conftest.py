"""Browser fixtures: the real server (demo data) on loopback, Debian's chromium, strict page checks.

One server and one browser per session; each test gets a new page (its own sessionStorage, so its own
sign-in) in the shared persistent context, whose HTTP cache and Pyodide snapshot later pages reuse.

- ``server``: ``ai-search serve --demo`` in a subprocess on a free loopback port, with a temp data dir,
  keyword-only retrieval (no embedding model to load on 2 CI cores) and, when the server can use it,
  the fake OpenAI-compatible provider of ``tests/server/_fake_openai.py`` (else extractive answers).
- ``context``: chromium through Playwright (``executable_path``), external names unresolvable.
- ``page``: a fresh tab that records console errors, page errors, CSP violations, dialogs and every
  request; the test fails at teardown if any error happened or any request left the server's origin.
- ``sign_in(page, username)``: a session for a demo user (logged in once per user and session, via
  REST, so the login rate limit is never in the way), seeded into the tab before its scripts run.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
import pytest

from ai_search_server.settings import load_settings

from ._hostile import HOSTILE_ROOM, PAYLOADS, WORD

playwright_sync = pytest.importorskip("playwright.sync_api")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Nothing resolves but loopback: a request that would leave the machine fails at once.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
]
# Seconds the server may take to load the demo workspace and answer its first request.
SERVER_START_SECONDS = 90.0
# Milliseconds a page may take until Python is ready (a cold Pyodide start on a busy 2-core runner).
PYTHON_READY_MS = 60_000
# The page's own Python script, PyScript's entry (index.html, embed.html): the one <script type="py">
# a page may hold; the tests that look for injected Python scripts count every other.
OWN_PYTHON_SCRIPT = 'body > script[type="py"][src="./py/ai_search_web/main.py"][config="./pyscript.toml"]'
# Milliseconds Playwright waits for any other expectation.
EXPECT_MS = 15_000
SESSION_STORAGE_KEY = "ai-search.session"  # py/ai_search_web/auth.py
DEMO_PASSWORD = "demo-{username}"
LLM_MODEL = "gpt-4o"

_INIT_SCRIPT = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(e.violatedDirective + " " + e.blockedURI);
});
"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    url: str
    llm: Any  # the FakeOpenAI instance, or None in extractive mode
    # The interpreter its pages start (its page_python setting): what a page that started on another
    # one (MicroPython's page handed to Pyodide) is told apart from.
    python: str = "pyodide"
    tokens: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def origin(self) -> str:
        return self.url.rstrip("/")

    def credentials(self, username: str) -> tuple[str, str]:
        """(userId, authToken) of a demo user, logged in once per session."""
        if username not in self.tokens:
            response = httpx.post(
                f"{self.origin}/api/v1/login",
                json={"user": username, "password": DEMO_PASSWORD.format(username=username)},
                timeout=30,
            )
            response.raise_for_status()
            data = response.json()["data"]
            self.tokens[username] = (data["userId"], data["authToken"])
        return self.tokens[username]

    def call(self, username: str, method: str, route: str, **kwargs: Any) -> dict[str, Any]:
        user_id, token = self.credentials(username)
        headers = {"X-User-Id": user_id, "X-Auth-Token": token}
        response = httpx.request(
            method, f"{self.origin}/api/v1/{route}", headers=headers, timeout=30, **kwargs
        )
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result


def _start(data_dir: Path, env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    command = [sys.executable, "-m", "ai_search_server", "serve", "--demo", "--data", str(data_dir),
               "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    with log.open("ab") as output:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen(
            command, env={**os.environ, **env}, stdout=output, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}; see {log}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return process, url
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"the server did not answer within {SERVER_START_SECONDS} s; see {log}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def _answers_work(server: Server) -> bool:
    """Whether this server build turns the configured provider into answers (else: extractive)."""
    found = server.call("bob", "GET", "ai.search", params={"q": "deploy", "intelligentCount": "1"})[
        "intelligent"
    ]
    user_id, token = server.credentials("bob")
    response = httpx.post(
        f"{server.origin}/api/v1/ai.search.answer",
        headers={"X-User-Id": user_id, "X-Auth-Token": token},
        json={"query": "deploy", "messages": [{"_id": found[0]["_id"]}]},
        timeout=30,
    )
    return response.status_code == 200 and response.json().get("provider", {}).get("name") != "extractive"


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """The demo server with the page on the product's default interpreter (or the environment's
    AI_SEARCH_PAGE_PYTHON)."""
    yield from _serving({})


@pytest.fixture(scope="session")
def pyodide_server() -> Iterator[Server]:
    """The demo server with the page on Pyodide (page_python = "pyodide"): for the tests of
    Pyodide's own start (its snapshot, PyScript, the core inside CPython in the browser). A module
    uses it by naming it its ``server`` (tests/browser/test_start.py)."""
    yield from _serving({"AI_SEARCH_PAGE_PYTHON": "pyodide"})


@pytest.fixture(scope="session")
def extractive_server() -> Iterator[Server]:
    """The demo server with no language model: answers are extractive, as on the embedded default
    (what most people try first). A module uses it by naming it its ``server``."""
    yield from _serving({}, llm=False)


def _serving(extra_env: dict[str, str], *, llm: bool = True) -> Iterator[Server]:
    base_env = {"AI_SEARCH_EMBEDDER": "none", "AI_SEARCH_LOG_LEVEL": "warning", **extra_env}
    python = load_settings(environ={**os.environ, **base_env}).page_python
    root = Path(tempfile.mkdtemp(prefix="ai-search-browser-"))
    log = root / "server.log"
    fake = None
    thread = None
    try:
        from tests.server._fake_openai import FakeOpenAI

        if llm:
            fake = FakeOpenAI()
            thread = fake.serve().start()
    except ImportError:
        pass
    try:
        if fake is not None and thread is not None:
            llm_env = {
                "AI_SEARCH_LLM_BASE_URL": f"{thread.url}/v1",
                "AI_SEARCH_LLM_API_KEY": "sk-test",
                "AI_SEARCH_LLM_MODEL": LLM_MODEL,
                "AI_SEARCH_OUTBOUND_ALLOW_HOSTS": "127.0.0.1",
            }
            process, url = _start(root / "data", {**base_env, **llm_env}, log)
            server = Server(url, fake, python)
            if not _answers_work(server):
                _stop(process)  # this server build cannot reach a provider yet: extractive answers
                process, url = _start(root / "data", base_env, log)
                server = Server(url, None, python)
        else:
            process, url = _start(root / "data", base_env, log)
            server = Server(url, None, python)
        try:
            yield server
        finally:
            _stop(process)
    finally:
        if thread is not None:
            thread.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def context(server: Server) -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (scripts/setup --test installs Debian's chromium)")
    profile = tempfile.mkdtemp(prefix="ai-search-chromium-")
    with playwright_sync.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        context.set_default_timeout(EXPECT_MS)
        context.add_init_script(_INIT_SCRIPT)
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


@dataclass
class PageRecord:
    """What a tab did that a test may inspect; the fixture checks it when the test ends."""

    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    allowed_errors: list[str] = field(default_factory=list)
    # The tab's renderer crashed (Chromium's "Target crashed"): what it showed then, for the report.
    crashed: str = ""

    def allow_error(self, fragment: str) -> None:
        """Errors containing ``fragment`` are expected by this test (a provoked 502, say)."""
        self.allowed_errors.append(fragment)


def _same_origin(url: str, origin: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return True
    return f"{parts.scheme}://{parts.netloc}" == origin


# static/keys-boot.mjs's warning when the page could not start on MicroPython and went to Pyodide:
# a page of this suite that says it failed (the page must run on the interpreter it was served for).
HANDED_TO_PYODIDE = "the page did not start on MicroPython"


def _is_error(message: Any) -> bool:
    return bool(message.type == "error" or HANDED_TO_PYODIDE in message.text)


class Tabs:
    """Opens checked tabs in the shared context; :meth:`check` fails on anything a tab did wrong.

    ``also_allowed``: origins besides the server's that requests may reach (a widget's host sites).
    """

    # Tests that opened tabs in this session's one browser (a crash report says how many).
    tests_in_session = 0

    def __init__(self, context: Any, server: Server, also_allowed: tuple[str, ...] = ()) -> None:
        self.context = context
        self.server = server
        self.also_allowed = tuple(f"{origin}/" for origin in also_allowed)
        self.opened: list[tuple[Any, PageRecord]] = []
        self.requests: list[str] = []
        context.on("request", self._on_request)
        Tabs.tests_in_session += 1

    def _on_request(self, request: Any) -> None:
        # The context sees every request, the page's workers' included (the Pyodide snapshot worker).
        self.requests.append(request.url)

    def new(self) -> tuple[Any, PageRecord]:
        page = self.context.new_page()
        record = PageRecord()
        page.on("console", lambda m: _is_error(m) and record.errors.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: record.errors.append(f"pageerror: {e}"))
        page.on("dialog", lambda d: (record.dialogs.append(d.message), d.dismiss()))
        page.on("request", lambda r: record.requests.append(r.url))
        page.on("crash", lambda crashed: self._crashed(crashed, record))
        self.opened.append((page, record))
        return page, record

    def _crashed(self, page: Any, record: PageRecord) -> None:
        # Said plainly, with what may explain it: how long this session's browser has run, and the
        # interpreter the page ran on (a crash seen once, on a Pyodide page, not reproduced).
        record.crashed = f"{page.url} (the page's Python: {self.server.python})"
        record.errors.append(
            f"the tab's renderer crashed at {record.crashed}, in the {Tabs.tests_in_session}th test"
            " to open tabs in this browser"
        )

    def check(self) -> None:
        self.context.remove_listener("request", self._on_request)
        problems: list[str] = []
        for page, record in self.opened:
            if not page.is_closed():
                if not record.crashed:  # a crashed tab answers nothing; its record says why
                    violations = page.evaluate("window.__violations || []")
                    problems += [f"CSP violation: {v}" for v in violations]
                page.close()
            problems += [
                e for e in record.errors if not any(fragment in e for fragment in record.allowed_errors)
            ]
            problems += [f"dialog opened: {d}" for d in record.dialogs]
        problems += [
            f"request left the origin: {u}"
            for u in self.requests
            if not _same_origin(u, self.server.origin) and not u.startswith(self.also_allowed)
        ]
        assert not problems, "\n".join(problems)


@pytest.fixture
def tabs(context: Any, server: Server) -> Iterator[Tabs]:
    tabs = Tabs(context, server)
    try:
        yield tabs
    finally:
        tabs.check()


@pytest.fixture
def page_and_record(tabs: Tabs) -> tuple[Any, PageRecord]:
    return tabs.new()


@pytest.fixture
def page(page_and_record: tuple[Any, PageRecord]) -> Any:
    return page_and_record[0]


@pytest.fixture
def record(page_and_record: tuple[Any, PageRecord]) -> PageRecord:
    return page_and_record[1]


def open_page(page: Any, server: Server, query: str = "", *, username: str | None = None) -> None:
    """Navigate (signed in as ``username`` when given) and wait until Python has taken over."""
    if username is not None:
        user_id, token = server.credentials(username)
        session = json.dumps({"userId": user_id, "authToken": token, "username": username, "name": ""})
        # Once per tab: a later sign-out in the page must stick across reloads.
        page.add_init_script(
            "if (!sessionStorage.getItem('tests.seeded')) {"
            f" sessionStorage.setItem({json.dumps(SESSION_STORAGE_KEY)}, {json.dumps(session)});"
            " sessionStorage.setItem('tests.seeded', '1'); }"
        )
    page.goto(server.url + ("?" + urlencode({"q": query}) if query else ""))
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)


@pytest.fixture
def open_as(page: Any, server: Server) -> Callable[..., Any]:
    def go(username: str | None, query: str = "") -> Any:
        open_page(page, server, query, username=username)
        return page

    return go


@pytest.fixture(scope="session")
def hostile(server: Server) -> Iterator[None]:
    """Hostile messages (in #ops) and a hostile room name, posted by bob once per session."""
    for text in PAYLOADS:
        server.call("bob", "POST", "chat.postMessage", json={"channel": "#ops", "text": text})
    room = server.call("bob", "POST", "channels.create", json={"name": HOSTILE_ROOM})["channel"]
    server.call(
        "bob", "POST", "chat.postMessage", json={"roomId": room["_id"], "text": f"{WORD} hostile room"}
    )
    yield
