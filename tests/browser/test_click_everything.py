"""Click everything: no click or key on any visible element of the page or the widget ever breaks it.

For the search page and for the widget (``/embed`` framed by an allowed host), at 1280x800 and
360x740, in the light and the dark scheme, each state a person meets is set up in turn:

=============  ======================================================================================
results        signed in, a search with a chip, its results, an AI answer, the suggestion list open
empty          signed in, a search that finds nothing: the empty state with its "Search without" button
signed out     the sign-in form, after a wrong password (its error shown)
stale          results, then a search that failed: the results marked not updated, the Retry button
context        a thread reply opened in its conversation: the thread, its files and reactions, the
               view's controls (beside the results at 1280 px, in their place at 360 px)
=============  ======================================================================================

In each, every visible element is taken from the live DOM (so new markup is covered without touching
this test) and gets a real mouse click at a point where it is itself on top (its padding, when its
children cover the middle), and every focusable one gets Enter and Space from the keyboard. When a
click ends what the state promised (signed out, the chip removed, the results gone), the state is
set up again and the sweep goes on with the elements not yet done; a click that opens a message in
its conversation outside the state about it is followed by Escape, which must close it. Then the
page must have raised no ``pageerror``, logged no console error (the fixture's rule: the page's
boundary logs every Python exception there), shown no error box or traceback, and never said the
page itself failed.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Error as PlaywrightError

from ai_search_web.messages import UNEXPECTED_ERROR

from .conftest import PYTHON_READY_MS, SESSION_STORAGE_KEY, PageRecord, Server, Tabs, _start, _stop
from .test_widget import HostSite

pytestmark = pytest.mark.browser

VIEWPORTS = {"1280x800": {"width": 1280, "height": 800}, "360x740": {"width": 360, "height": 740}}
# Actions one sweep may take before it counts as stuck (a page that keeps making new elements).
MAX_ACTIONS = 3000
# Times one state may be set up again in a sweep (each destructive click costs one).
MAX_SETUPS = 60
# Milliseconds after the last action for late handlers (a search's answer, a timer) to run.
SETTLE_MS = 400
# Milliseconds a keyboard action may wait for its element to take focus.
KEY_TIMEOUT_MS = 1000
# Elements all the states together must show at least (each state also names the parts it must).
MIN_ELEMENTS = 80
HOST_CSS = "html, body { margin: 0 } iframe { border: 0; width: 100vw; height: 100vh; display: block }"
RESULTS_QUERY = "in:engineering postgres"
EMPTY_QUERY = "in:engineering zebra quartz nebula"
# Its first result is a reply in a thread with files and a reaction.
THREAD_QUERY = "in:incidents patroni"

# Every visible element, by a path of ids and child positions that stays the same when the state is
# set up again; whether it takes focus (keyboard actions) and whether it is a control.
TARGETS = """() => {
  const path = (el) => {
    if (el === document.body) return "body";
    if (el.id) return "#" + el.id;
    const parent = el.parentElement;
    return path(parent) + ">" + el.localName + ":" + [...parent.children].indexOf(el);
  };
  const out = [];
  for (const el of document.body.querySelectorAll("*")) {
    if (el.matches("script, style, link, template")) continue;
    if (!el.checkVisibility({ visibilityProperty: true, checkVisibilityCSS: true })) continue;
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) continue;
    const focusable = el.matches("a[href], button, input, select, textarea, [tabindex]") && !el.disabled;
    out.push({ path: path(el), focusable, text: el.matches("input:not([type=button],[type=submit]), textarea"),
               control: el.matches("a[href], button, input, select, textarea, [role=option], [tabindex]") });
  }
  return out;
}"""
# The element at a path, scrolled into view and marked (data-sweep) for a keyboard action: a point
# where it is itself on top (its own padding when its children cover the middle), else its middle;
# null when it is gone or hidden.
POINT = """(path) => {
  document.querySelectorAll("[data-sweep]").forEach((n) => n.removeAttribute("data-sweep"));
  const [first, ...rest] = path.split(">");
  let el = first === "body" ? document.body : document.getElementById(first.slice(1));
  for (const step of rest) el = el && el.children[Number(step.slice(step.lastIndexOf(":") + 1))];
  if (!el || !el.isConnected || !el.checkVisibility({ visibilityProperty: true, checkVisibilityCSS: true })) return null;
  el.scrollIntoView({ block: "center", inline: "center" });
  const r = el.getBoundingClientRect();
  if (r.width < 1 || r.height < 1) return null;
  el.setAttribute("data-sweep", "");
  const points = [[0.5, 0.5], [0.08, 0.5], [0.92, 0.5], [0.5, 0.1], [0.5, 0.9], [0.04, 0.08], [0.96, 0.92]];
  for (const [fx, fy] of points) {
    const x = r.left + Math.max(1, Math.min(r.width - 1, r.width * fx));
    const y = r.top + Math.max(1, Math.min(r.height - 1, r.height * fy));
    if (document.elementFromPoint(x, y) === el) return { x, y, own: true };
  }
  return { x: r.left + r.width / 2, y: r.top + r.height / 2, own: false };
}"""
# What the page shows of a state, to tell whether an action ended it.
STATE = """() => ({
  auth: document.documentElement.dataset.auth,
  chips: document.querySelectorAll("#chips .chip").length,
  results: document.querySelectorAll("#result-list .result").length,
  empty: !document.getElementById("empty").hidden,
  answer: document.getElementById("answer-body").textContent.length > 0,
  failed: !document.getElementById("search-failed").hidden,
  loginError: document.getElementById("login-error").textContent.length > 0,
  context: document.documentElement.dataset.context === "open",
})"""
# What must never be on screen: an error box (PyScript's, or anything like it), a traceback, or the
# page's own sentence for a failure inside it.
BROKEN = """(unexpected) => {
  const text = document.body.innerText;
  return {
    boxes: document.querySelectorAll(".py-error, py-error, .error-box, [class*=traceback]").length,
    traceback: /Traceback|PythonError|JsNull|AttributeError/.test(text),
    unexpected: text.includes(unexpected),
  };
}"""


@dataclass
class Surface:
    """The page, or the widget's frame inside its host page; both run the same sweep."""

    page: Any
    record: PageRecord
    open: Callable[[str], None]  # navigate (and sign in or not) to a query line
    frame: Any = None
    actions: int = 0
    setups: int = 0
    done: set[tuple[str, str, str]] = field(default_factory=set)  # (state, element, action)
    endings: list[str] = field(default_factory=list)  # what ended a state (for a failure's message)
    _offset: tuple[float, float] | None = None

    @property
    def doc(self) -> Any:
        return self.frame if self.frame is not None else self.page

    def offset(self) -> tuple[float, float]:
        """Where the widget's frame sits in its host page (it fills the window, so it never moves
        while a state is shown; asked once per setup, not once per click)."""
        if self.frame is None:
            return 0.0, 0.0
        if self._offset is None:
            box = self.frame.frame_element().bounding_box()
            self._offset = (box["x"], box["y"])
        return self._offset

    def act(self, path: str, action: str) -> bool:
        """One real mouse click, or one key on the focused element; False when it is not there."""
        point = self.doc.evaluate(POINT, path)
        if point is None:
            return False
        self.actions += 1
        if action == "click":
            dx, dy = self.offset()
            self.page.mouse.click(point["x"] + dx, point["y"] + dy)
            return True
        try:
            self.doc.focus("[data-sweep]", timeout=KEY_TIMEOUT_MS)
        except PlaywrightError:
            return False  # it went away (or cannot take focus) between finding and focusing it
        self.page.keyboard.press(action)
        return True


@dataclass(frozen=True)
class State:
    name: str
    setup: Callable[[Surface], None]
    promises: Callable[[dict[str, Any]], bool]  # still the state it was set up to be
    # Where the sweep must have been, as path prefixes: the parts this state exists to show.
    must_reach: tuple[str, ...]


def _wait_search(doc: Any, before: int) -> None:
    doc.wait_for_function("n => Number(document.documentElement.dataset.searches || 0) > n", arg=before)


def _searches(doc: Any) -> int:
    return int(doc.evaluate("Number(document.documentElement.dataset.searches || 0)"))


def _results(surface: Surface) -> None:
    surface.open(RESULTS_QUERY)
    doc = surface.doc
    doc.wait_for_selector("#result-list .result")
    doc.click("#ask")
    doc.wait_for_selector("#answer[data-provider]:not([data-provider=''])")
    doc.wait_for_function("() => document.getElementById('ask').disabled === false")
    doc.focus("#search-box")
    doc.evaluate("document.getElementById('search-box').setSelectionRange(1e6, 1e6)")
    surface.page.keyboard.type(" in:")  # every room offered; Enter would search only what is there
    doc.wait_for_selector("#suggestions[data-by=python] [role=option]")


def _empty(surface: Surface) -> None:
    surface.open(EMPTY_QUERY)
    surface.doc.wait_for_selector("#empty .drop-filter")


def _signed_out(surface: Surface) -> None:
    surface.open("")
    doc = surface.doc
    if doc.evaluate("document.documentElement.dataset.auth") == "in":
        doc.click("#logout")
        doc.wait_for_selector("#login-form", state="visible")
    surface.record.allow_error("status of 401 (Unauthorized)")  # the wrong password this state sends
    doc.fill("#login-user", "bob")
    doc.fill("#login-password", "not-the-password")
    doc.click("#login-form button")
    doc.wait_for_selector("#login-error:not(:empty)")


def _stale(surface: Surface) -> None:
    surface.open(RESULTS_QUERY)
    doc = surface.doc
    doc.wait_for_selector("#result-list .result")
    surface.record.allow_error("net::ERR_FAILED")  # the search this state makes fail
    surface.page.route("**/api/v1/ai.search?*", lambda route: route.abort())
    before = _searches(doc)
    doc.fill("#search-box", "postgres vacuum")
    doc.press("#search-box", "Enter")
    _wait_search(doc, before)
    doc.wait_for_selector("#search-failed:not([hidden]) #retry")


def _context(surface: Surface) -> None:
    surface.open(THREAD_QUERY)
    doc = surface.doc
    doc.wait_for_selector("#result-list .result")
    doc.click("#result-1")
    doc.wait_for_selector("#context[data-state=ready] .file")


def _close_context(surface: Surface) -> None:
    """A message opened outside the state about it: Escape from inside the view closes it."""
    doc = surface.doc
    # Settled, whatever it shows (the thread, a refusal, a message it no longer finds).
    doc.wait_for_selector("#context:not([data-state=loading])", state="attached")
    doc.focus("#context")
    surface.page.keyboard.press("Escape")
    doc.wait_for_selector("html:not([data-context])")


STATES = [
    State(
        "results",
        _results,
        lambda s: s["auth"] == "in" and s["chips"] > 0 and s["results"] > 0,
        (
            "#suggestion-0",
            "#chips>li:",
            "#result-1>article:",
            "#answer-body>p:0>a:",
            "#ask",
            "#search-box",
        ),
    ),
    State(
        "empty",
        _empty,
        lambda s: s["auth"] == "in" and s["empty"] and s["chips"] > 0,
        ("#empty>p:", "#empty>ul:", "#empty>div:", "#chips>li:"),
    ),
    State(
        "signed-out",
        _signed_out,
        lambda s: s["auth"] == "out",
        ("#login-user", "#login-password", "#login-error", "#login-form>label:", "#login-form>button:"),
    ),
    State(
        "stale",
        _stale,
        lambda s: s["auth"] == "in" and s["failed"] and s["results"] > 0,
        ("#retry", "#search-failed-text", "#result-1>article:", "#status"),
    ),
    State(
        "context",
        _context,
        lambda s: s["auth"] == "in" and s["context"],
        (
            "#context-close",
            "#context-copy",
            "#context-title",
            "#context-message-0>article:",
            "#context-list>li:",
        ),
    ),
]


def _order(target: dict[str, Any]) -> tuple[int, str]:
    # The suggestion list first (any click elsewhere closes it), plain elements next, controls last:
    # a control's click is the one that may end the state.
    in_list = target["path"].startswith("#suggestions")
    return (0 if in_list else 1 + int(target["control"]), target["path"])


def _actions(target: dict[str, Any]) -> tuple[str, ...]:
    """A click for everything; Enter and Space for what takes focus (a text field: Enter only,
    Space would just type)."""
    if target["text"]:
        return ("click", "Enter")
    return ("click", "Enter", "Space") if target["focusable"] else ("click",)


def sweep(surface: Surface, state: State) -> None:
    """Every action on every element the state shows, setting it up again whenever it ends."""
    surface.page.unroute("**/api/v1/ai.search?*")
    state.setup(surface)
    surface.setups += 1
    while True:
        targets = sorted(surface.doc.evaluate(TARGETS), key=_order)
        pending = [
            (state.name, t["path"], action)
            for t in targets
            for action in _actions(t)
            if (state.name, t["path"], action) not in surface.done
        ]
        if not pending:
            break
        ended = False
        for item in pending:
            surface.done.add(item)
            if not surface.act(item[1], item[2]):
                continue
            assert surface.actions < MAX_ACTIONS, f"{state.name}: no end to new elements"
            shown = surface.doc.evaluate(STATE)
            if state.name != "context" and shown["context"]:
                _close_context(surface)
                shown = surface.doc.evaluate(STATE)
            if not state.promises(shown):
                surface.endings.append(" ".join(item))
                ended = True
                break
        if ended:
            assert surface.setups < MAX_SETUPS, f"set up again {surface.setups} times: {surface.endings}"
            surface.page.unroute("**/api/v1/ai.search?*")
            state.setup(surface)
            surface.setups += 1
    surface.page.wait_for_timeout(SETTLE_MS)
    reached = {path for name, path, _ in surface.done if name == state.name}
    missed = [p for p in state.must_reach if not any(path.startswith(p) for path in reached)]
    assert missed == [], f"{state.name}: the sweep never reached {missed}"
    broken = surface.doc.evaluate(BROKEN, UNEXPECTED_ERROR)
    assert broken == {"boxes": 0, "traceback": False, "unexpected": False}, (state.name, broken)
    surface.page.unroute("**/api/v1/ai.search?*")


# The search route's requests (GET ai.search?q=...), replayed like the answers.
SEARCHES = re.compile(r"/api/v1/ai\.search\?")


class Replay:
    """Answers a route with the server's own first answer to the same request from then on.

    A sweep presses Ask, loads the page and searches again dozens of times a minute (on MicroPython
    the page starts fast enough to search more than twice a second); the answer route allows ten a
    minute, the model list five (as upstream) and the search 120, so after the first real answer to
    a request the page gets that same answer again instead of a refusal the sweep itself caused.
    """

    def __init__(self) -> None:
        self.answers: dict[tuple[str, str, str], Any] = {}

    def __call__(self, route: Any) -> None:
        request = route.request
        key = (request.method, request.url, request.post_data or "")
        if key not in self.answers:
            self.answers[key] = route.fetch()
        route.fulfill(response=self.answers[key])


def _prepare(page: Any, server: Server, size: str, scheme: str) -> None:
    """Signed in as bob in every frame the tab loads (each state starts from a fresh load), at the
    size and scheme asked for. Sign-in and sign-out are answered here, at the network seam: a real
    sign-out would revoke the token the next state starts with, and wrong passwords would spend the
    address's failed-authentication budget. Answers, searches and the model list are replayed
    (:class:`Replay`)."""
    user_id, token = server.credentials("bob")
    session = json.dumps({"userId": user_id, "authToken": token, "username": "bob", "name": "Bob Lindqvist"})
    page.add_init_script(f"sessionStorage.setItem({json.dumps(SESSION_STORAGE_KEY)}, {json.dumps(session)})")
    page.route("**/api/v1/logout", lambda route: route.fulfill(json={"status": "success"}))
    page.route(
        "**/api/v1/login",
        lambda route: route.fulfill(
            status=401, json={"success": False, "status": "error", "errorType": "error-login-failed"}
        ),
    )
    replay = Replay()
    page.route("**/api/v1/ai.search.answer", replay)
    page.route("**/api/v1/ai.llm.models", replay)
    page.route(SEARCHES, replay)
    page.set_viewport_size(VIEWPORTS[size])
    page.emulate_media(color_scheme=scheme)


def _check(surface: Surface) -> None:
    assert [e for e in surface.record.errors if e.startswith("pageerror")] == []
    reached = {path for _, path, _ in surface.done}
    assert len(reached) > MIN_ELEMENTS, f"the sweep reached only {len(reached)} elements"


# -- the server, the host site, and the widget -------------------------------------------------------------------------------------


@dataclass
class WidgetSite:
    host: HostSite
    server: Server


@pytest.fixture(scope="module")
def widget_site() -> Iterator[WidgetSite]:
    """A server of this module's own (extractive answers; rate limits nobody else spends) and a host
    site on its embed allow-list."""
    host = HostSite()
    root = Path(tempfile.mkdtemp(prefix="ai-search-click-"))
    env = {
        "AI_SEARCH_EMBEDDER": "none",
        "AI_SEARCH_LOG_LEVEL": "warning",
        "AI_SEARCH_EMBED_ALLOWED_ORIGINS": host.origin,
    }
    try:
        process, url = _start(root / "data", env, root / "server.log")
        host.csp = f"default-src 'self'; frame-src {url.rstrip('/')}; style-src 'self'; img-src data:"
        host.pages["/host.css"] = ("text/css", HOST_CSS)
        try:
            yield WidgetSite(host, Server(url, None))
        finally:
            _stop(process)
    finally:
        host.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def host_tabs(context: Any, widget_site: WidgetSite) -> Iterator[Tabs]:
    """Checked tabs whose requests may also reach the host site."""
    tabs = Tabs(context, widget_site.server, also_allowed=(widget_site.host.origin,))
    try:
        yield tabs
    finally:
        tabs.check()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_every_element_of_the_widget_survives_every_click_and_key(
    host_tabs: Tabs, widget_site: WidgetSite, size: str, scheme: str
) -> None:
    """The widget page in an allowed host's iframe, filling the host's window, as the loader's
    overlay does on a phone; its own theme set to the scheme."""
    host, server = widget_site.host, widget_site.server
    page, record = host_tabs.new()
    _prepare(page, server, size, scheme)
    surface = Surface(page, record, lambda _query: None)

    def open_widget(query: str) -> None:
        params = {"host": host.origin, "theme": scheme, **({"q": query} if query else {})}
        host.pages["/"] = (
            "text/html",
            '<!doctype html><html lang="en"><head><title>Host</title><link rel="icon" href="data:,">'
            '<link rel="stylesheet" href="/host.css"></head><body>'
            f'<iframe title="Search" src="{server.url}embed?{urlencode(params)}"></iframe></body></html>',
        )
        page.goto(host.origin + "/")
        frame = next(f for f in page.frames if "/embed?" in f.url)
        frame.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
        surface.frame = frame
        surface._offset = None

    surface.open = open_widget
    for state in STATES:
        sweep(surface, state)
    _check(surface)


# -- the search page --------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_every_element_of_the_page_survives_every_click_and_key(
    host_tabs: Tabs, widget_site: WidgetSite, size: str, scheme: str
) -> None:
    """The search page of a server of this module's own (its rate limits are the sweep's alone)."""
    server = widget_site.server
    page, record = host_tabs.new()
    _prepare(page, server, size, scheme)

    def open_page(query: str) -> None:
        page.goto(server.url + ("?" + urlencode({"q": query}) if query else ""))
        page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)

    surface = Surface(page, record, open_page)
    for state in STATES:
        sweep(surface, state)
    _check(surface)


# -- the page before Pyodide: the keystroke stage ----------------------------------------------------


def _stage(surface: Surface) -> None:
    """Pyodide held back: the keystroke stage's chips and its suggestion list open, typed words."""
    surface.open("")
    doc = surface.doc
    doc.focus("#search-box")
    surface.page.keyboard.type("deploy in:ops in:gen")
    doc.wait_for_selector("#suggestions[data-by=keys] [role=option]")


STAGE_STATE = State(
    "stage",
    _stage,
    lambda s: s["auth"] == "in" and s["chips"] > 0,
    ("#suggestion-0", "#chips>li:", "#search-box"),
)


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_every_element_of_the_page_survives_every_click_and_key_before_pyodide(
    host_tabs: Tabs, widget_site: WidgetSite, size: str
) -> None:
    """The page while Pyodide is held back (its configuration never arrives): the fallback and the
    keystroke stage (MicroPython) answer everything; no click or key may break them either."""
    from .test_before_python import HeldPython

    server = widget_site.server
    page, record = host_tabs.new()
    _prepare(page, server, size, "light")
    HeldPython(page)

    def open_page(query: str) -> None:
        page.goto(server.url + ("?" + urlencode({"q": query}) if query else ""), wait_until="commit")
        page.wait_for_selector("html[data-keys=ready]", timeout=PYTHON_READY_MS)

    surface = Surface(page, record, open_page)
    sweep(surface, STAGE_STATE)
    assert page.get_attribute("html", "data-py") is None  # it was the stage's page throughout
    assert [e for e in record.errors if e.startswith("pageerror")] == []
