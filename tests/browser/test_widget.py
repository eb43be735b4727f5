"""The embeddable widget (docs/widget.md): host pages on other origins, the allow-list, the protocol.

Two tiny host sites run on their own loopback ports: one on the embed allow-list of a widget server
started for this module (the shared ``server`` knows no embedders), one not on it. The allowed host
page is hostile to styling (``* { color: red !important; font-size: 40px !important }``) and has a
strict CSP without ``'wasm-unsafe-eval'``: the widget must work there without anything leaking either
way. Tabs are checked as everywhere (console errors, CSP violations, dialogs), and a request may go
only to the widget server or the host sites.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from ai_search_server.static import page_source
from ai_search_web.embed_protocol import (
    HOST_REPLY_MS,
    HostMessage,
    host_origin,
    parse_allowed_origins,
    read_host_message,
    scoped_query,
    widget_message,
)

from .conftest import (
    PYTHON_READY_MS,
    SESSION_STORAGE_KEY,
    Server,
    Tabs,
    _free_port,
    _start,
    _stop,
)
from .test_config import MADE_BY_THE_SERVER

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
# Milliseconds the idle warm-up would wait at most (embed.js, IDLE_TIMEOUT_MS), plus a margin.
IDLE_WARMUP_MAX_MS = 4500
# Bytes of static/embed.js, gzip-compressed: the loader's promise to add almost nothing to a host page.
MAX_LOADER_GZIP_BYTES = 6 * 1024
HOSTILE_CSS = (
    "* { color: rgb(255, 0, 0) !important; font-size: 40px !important; font-family: serif !important }"
)
# The host page's own script: records the widget's DOM events (the loader's) and raw messages
# (the iframe form) so the test can read them; with window.__take set it takes open-message.
HOST_JS = """
window.__events = [];
for (const name of ["ready", "opened", "closed", "result-selected", "answer-shown", "open-message"]) {
  document.addEventListener(`ai-search:${name}`, (event) => {
    window.__events.push([name, event.detail]);
    if (name === "open-message" && window.__take) event.preventDefault();  // the host shows it itself
  });
}
window.__messages = [];
window.addEventListener("message", (event) => window.__messages.push([event.origin, event.data]));
"""
REFUSAL = "is not on the embed allow-list of"
SHADOW = "document.querySelector('ai-search-widget').shadowRoot"


# -- host sites ------------------------------------------------------------------------------------


class HostSite:
    """A static site on its own loopback port; ``pages`` maps a path to (content type, body)."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[str, str]] = {}
        self.csp = ""
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                content_type, body = site.pages.get(self.path.split("?")[0], ("text/plain", "not found"))
                data = body.encode()
                self.send_response(200 if self.path.split("?")[0] in site.pages else 404)
                self.send_header("content-type", f"{content_type}; charset=utf-8")
                self.send_header("content-length", str(len(data)))
                if site.csp:
                    self.send_header("content-security-policy", site.csp)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", _free_port()), Handler)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@dataclass
class Sites:
    allowed: HostSite
    refused: HostSite
    server: Server
    pages: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def sites() -> Iterator[Sites]:
    allowed, refused = HostSite(), HostSite()
    root = Path(tempfile.mkdtemp(prefix="ai-search-widget-"))
    env = {
        "AI_SEARCH_EMBEDDER": "none",
        "AI_SEARCH_LOG_LEVEL": "warning",
        "AI_SEARCH_EMBED_ALLOWED_ORIGINS": allowed.origin,
    }
    try:
        process, url = _start(root / "data", env, root / "server.log")
        server = Server(url, None)
        allowed.csp = (
            f"default-src 'self'; script-src 'self' {server.origin}; frame-src {server.origin}; "
            "style-src 'self'; img-src 'self' data:; connect-src 'self'"
        )
        for site in (allowed, refused):
            site.pages["/host.css"] = ("text/css", HOSTILE_CSS)
            site.pages["/host.js"] = ("text/javascript", HOST_JS)
        try:
            yield Sites(allowed, refused, server)
        finally:
            _stop(process)
    finally:
        allowed.close()
        refused.close()
        shutil.rmtree(root, ignore_errors=True)


class WidgetTabs(Tabs):
    """Checked tabs whose requests may also reach the host sites."""

    def __init__(self, context: Any, sites: Sites) -> None:
        super().__init__(context, sites.server, also_allowed=(sites.allowed.origin, sites.refused.origin))


@pytest.fixture
def widget_tabs(context: Any, sites: Sites) -> Iterator[WidgetTabs]:
    tabs = WidgetTabs(context, sites)
    try:
        yield tabs
    finally:
        tabs.check()


def host_document(body: str) -> str:
    """A host page (its hostile CSS and recording script first) around ``body``."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Host</title>'
        '<link rel="icon" href="data:,"><link rel="stylesheet" href="/host.css">'
        f'<script src="/host.js"></script></head><body><h1>Host docs</h1>{body}</body></html>'
    )


def host_page(server: Server, **data: str) -> str:
    """A host page that embeds the widget with one script tag (``data`` become data-* attributes)."""
    attributes = "".join(f' data-{name}="{value}"' for name, value in data.items())
    return host_document(
        '<input id="host-field" aria-label="Host field">'
        f'<script src="{server.origin}/static/embed.js"{attributes}></script>'
    )


def sign_in_widget(page: Any, server: Server, username: str) -> None:
    """Seed a session in the widget's own storage (its origin only, never the host's)."""
    user_id, token = server.credentials(username)
    session = json.dumps({"userId": user_id, "authToken": token, "username": username, "name": ""})
    page.add_init_script(
        f"if (location.origin === {json.dumps(server.origin)})"
        f" sessionStorage.setItem({json.dumps(SESSION_STORAGE_KEY)}, {json.dumps(session)});"
    )


def widget_frame(page: Any, server: Server) -> Any:
    frames = [f for f in page.frames if f.url.startswith(f"{server.origin}/embed")]
    assert len(frames) == 1, [f.url for f in page.frames]
    return frames[0]


def events(page: Any, name: str) -> list[Any]:
    return [detail for event, detail in page.evaluate("() => window.__events") if event == name]


def wait_event(page: Any, name: str, count: int = 1, timeout: int = 15_000) -> None:
    page.wait_for_function(
        "([name, n]) => window.__events.filter((e) => e[0] === name).length >= n",
        arg=[name, count],
        timeout=timeout,
    )


def in_shadow(page: Any, expression: str) -> Any:
    """Evaluate ``expression`` with ``shadow`` bound to the loader's shadow root on the host page."""
    return page.evaluate(f"() => {{ const shadow = {SHADOW}; return {expression}; }}")


def dialog_open(page: Any) -> bool:
    return bool(in_shadow(page, "shadow.querySelector('dialog').open"))


def search_in(frame: Any, text: str) -> None:
    before = int(frame.evaluate("() => Number(document.documentElement.dataset.searches || 0)"))
    frame.locator("#search-box").press_sequentially(text)
    frame.locator("#search-box").press("Enter")
    frame.wait_for_function("n => Number(document.documentElement.dataset.searches || 0) > n", arg=before)


def violations(frame: Any) -> list[str]:
    return list(frame.evaluate("() => window.__violations || []"))


# -- the widget on an allowed host -----------------------------------------------------------------


def test_the_shortcut_opens_a_scoped_search_with_an_answer_and_escape_closes_it(
    widget_tabs: WidgetTabs, sites: Sites
) -> None:
    server = sites.server
    sites.allowed.pages["/"] = (
        "text/html",
        host_page(
            server,
            preload="idle",
            filters="in:#ops",
            theme="dark",
            accent="#7c3aed",
            placeholder="Search the ops room",
        ),
    )
    page, _record = widget_tabs.new()
    sign_in_widget(page, server, "bob")
    page.goto(f"{sites.allowed.origin}/")
    # Python warmed up while the host page was idle, before anything was opened.
    wait_event(page, "ready", timeout=PYTHON_READY_MS)
    assert not dialog_open(page)

    page.focus("#host-field")
    page.keyboard.press("Control+k")
    assert not dialog_open(page), "the shortcut was taken from the host's own text field"
    page.evaluate("() => document.activeElement.blur()")
    page.keyboard.press("Control+k")
    wait_event(page, "opened")
    assert dialog_open(page)
    assert events(page, "opened") == [{"python": True}]
    frame = widget_frame(page, server)
    assert frame.evaluate("() => document.activeElement.id") == "search-box"
    assert frame.get_attribute("#search-box", "placeholder") == "Search the ops room"
    assert frame.locator("#chips .chip-label").all_inner_texts() == ["#ops"]

    search_in(frame, "deploy")
    rooms = frame.locator("#result-list .result-room").all_inner_texts()
    assert rooms and set(rooms) == {"#ops"}

    frame.click("#ask")
    wait_event(page, "answer-shown", timeout=30_000)
    (answer,) = events(page, "answer-shown")
    assert answer["citations"] >= 1
    assert frame.locator("#answer-body a.cite").count() == answer["citations"]
    # A follow-up in the widget too: the first question moves up into the thread of questions.
    frame.fill("#follow-up", "and who fixed it?")
    frame.press("#follow-up", "Enter")
    page.wait_for_function("() => window.__events.filter(([name]) => name === 'answer-shown').length === 2")
    assert frame.locator("#answer-thread .answer-question").all_inner_texts() == ["deploy"]
    assert frame.inner_text("#answer-question") == "and who fixed it?"

    # A message the host page forges to itself is not the widget speaking.
    page.evaluate(
        """() => window.postMessage({aiSearch: 1, type: "result-selected", msgId: "forged", rid: "x"}, "*")"""
    )
    frame.click("#result-1")
    wait_event(page, "result-selected")
    ops = next(r for r in server.call("bob", "GET", "rooms.get")["update"] if r.get("name") == "ops")
    assert events(page, "result-selected") == [
        {"msgId": frame.get_attribute("#result-1", "data-msg-id"), "rid": ops["_id"], "position": 1}
    ]
    # The result opened in its conversation, in the results' place; Escape closes that first.
    frame.wait_for_selector("#context[data-state=ready]")
    page.keyboard.press("Escape")
    frame.wait_for_selector("#context", state="hidden")
    assert dialog_open(page)

    # Escape first closes the suggestion list, then the widget. Between the two, an "open" from the
    # host (its event API) is answered after anything the first Escape could have sent: no "close".
    frame.locator("#search-box").press("End")
    frame.locator("#search-box").press_sequentially(" in:")
    frame.wait_for_selector("#suggestions:not([hidden])")
    page.keyboard.press("Escape")
    frame.wait_for_selector("#suggestions", state="hidden")
    page.evaluate("() => document.dispatchEvent(new CustomEvent('ai-search:open'))")
    wait_event(page, "opened", 2)
    assert events(page, "closed") == [] and dialog_open(page)
    page.keyboard.press("Escape")
    wait_event(page, "closed")
    assert not dialog_open(page)

    # The button opens it again, and Escape gives focus back to the button.
    page.locator("ai-search-widget button").click()
    wait_event(page, "opened", 3)
    page.keyboard.press("Escape")
    wait_event(page, "closed", 2)
    assert page.evaluate("() => document.activeElement.shadowRoot?.activeElement?.tagName") == "BUTTON"

    # Nothing leaks: the host's `*` rules reach neither the widget nor the loader's button.
    box_style = frame.evaluate(
        "() => { const s = getComputedStyle(document.getElementById('search-box')); return [s.fontSize, s.color]; }"
    )
    assert box_style[0] == "16px" and box_style[1] != "rgb(255, 0, 0)"
    assert in_shadow(page, "getComputedStyle(shadow.querySelector('button')).fontSize") == "14px"
    assert page.evaluate("() => getComputedStyle(document.querySelector('h1')).color") == "rgb(255, 0, 0)"
    # The host's CSP has no 'wasm-unsafe-eval' and no inline styles, and nothing was refused.
    assert violations(page) == [] and violations(frame) == []


def test_a_result_opens_in_its_thread_in_the_widget_unless_the_host_takes_it(
    widget_tabs: WidgetTabs, sites: Sites
) -> None:
    """Keyboard only: the widget opened with a query, Tab to a thread reply, Enter. The host hears a
    cancellable ai-search:open-message; untaken, the widget shows the reply in its thread (parent and
    siblings as the server has them, the reply marked and focused); Escape closes the view first
    (the widget stays), then the widget. A host that calls preventDefault() keeps the view closed."""
    server = sites.server
    sites.allowed.pages["/"] = ("text/html", host_page(server, position="none", preload="idle"))
    page, _record = widget_tabs.new()
    sign_in_widget(page, server, "bob")
    page.goto(f"{sites.allowed.origin}/")
    wait_event(page, "ready", timeout=PYTHON_READY_MS)
    page.evaluate(
        "() => document.dispatchEvent(new CustomEvent('ai-search:open', {detail: {query: 'in:#incidents patroni'}}))"
    )
    wait_event(page, "opened")
    frame = widget_frame(page, server)
    frame.wait_for_selector("#result-list .result")
    for _ in range(30):
        page.keyboard.press("Tab")
        if frame.evaluate("() => document.activeElement.id") == "result-1":
            break
    msg_id = frame.get_attribute("#result-1", "data-msg-id")
    page.keyboard.press("Enter")
    frame.wait_for_selector("#context[data-state=ready]")
    expected = server.call("bob", "GET", "chat.getMessageContext", params={"msgId": msg_id})
    assert expected["kind"] == "thread" and expected["tmid"] != msg_id
    listed = frame.locator("#context-list .context-message").evaluate_all(
        "ns => ns.map(n => n.dataset.msgId)"
    )
    assert listed == [m["_id"] for m in expected["messages"]]
    assert frame.get_attribute("#context-list .is-hit", "data-msg-id") == msg_id
    assert frame.evaluate("() => document.activeElement.dataset.msgId") == msg_id
    (opening,) = events(page, "open-message")
    ops = next(r for r in server.call("bob", "GET", "rooms.get")["update"] if r.get("name") == "incidents")
    assert opening == {
        "msgId": msg_id,
        "rid": ops["_id"],
        "tmid": expected["tmid"],
        "position": 1,
        "via": "result",
    }
    assert events(page, "result-selected") == [{"msgId": msg_id, "rid": ops["_id"], "position": 1}]
    assert not frame.is_visible("#result-list"), "in the widget the view takes the results' place"

    page.keyboard.press("Escape")
    frame.wait_for_selector("#context", state="hidden")
    assert dialog_open(page) and events(page, "closed") == []
    assert frame.evaluate("() => document.activeElement.id") == "result-1"
    assert "msg=" not in frame.url

    page.evaluate("() => { window.__take = true; }")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    wait_event(page, "open-message", 2)
    taken = events(page, "open-message")[1]
    assert taken["msgId"] == frame.get_attribute("#result-2", "data-msg-id") and taken["position"] == 2
    # Past the longest the widget waits for a reply (HOST_REPLY_MS): it heard "taken", not silence.
    page.wait_for_timeout(HOST_REPLY_MS + 500)
    assert frame.is_hidden("#context")
    page.keyboard.press("Escape")
    wait_event(page, "closed")


def test_the_iframe_form_speaks_the_protocol_only_with_its_host(
    widget_tabs: WidgetTabs, sites: Sites
) -> None:
    server = sites.server
    src = f"{server.origin}/embed?" + urlencode({"host": sites.allowed.origin, "filters": "in:#ops"})
    sites.allowed.pages["/frame"] = (
        "text/html",
        host_document(f'<iframe id="search" title="Search" src="{src}" width="600" height="400"></iframe>'),
    )
    page, _record = widget_tabs.new()
    sign_in_widget(page, server, "bob")
    page.goto(f"{sites.allowed.origin}/frame")
    page.wait_for_function(
        "() => window.__messages.some(([, m]) => m?.type === 'ready')", timeout=PYTHON_READY_MS
    )
    frame = widget_frame(page, server)

    # A message from anywhere but the host (here: the widget's own window) is ignored.
    frame.evaluate("() => window.postMessage({aiSearch: 1, type: 'open', query: 'forged'}, '*')")
    frame.wait_for_function("() => document.documentElement.dataset.embedIgnored === '1'")

    page.evaluate(
        """origin => document.getElementById("search").contentWindow.postMessage(
            {aiSearch: 1, type: "open", query: "failover"}, origin)""",
        server.origin,
    )
    frame.wait_for_function("() => Number(document.documentElement.dataset.searches || 0) === 1")
    assert frame.locator("#chips .chip-label").all_inner_texts() == ["#ops"]
    assert frame.input_value("#search-box") == "failover"
    assert set(frame.locator("#result-list .result-room").all_inner_texts()) == {"#ops"}
    messages = page.evaluate("() => window.__messages")
    assert {origin for origin, _ in messages} == {server.origin}
    kinds = [m["type"] for _, m in messages]
    assert kinds[0] == "hello" and kinds.index("ready") < kinds.index("opened")
    heights = [m["height"] for _, m in messages if m["type"] == "resize"]
    assert heights and all(h > 0 for h in heights)

    # Without ?intercept=1 the host said it will not reply: open-message is news, the view opens at once.
    frame.click("#result-1")
    frame.wait_for_selector("#context[data-state=ready]")
    (opening,) = [m for _, m in page.evaluate("() => window.__messages") if m["type"] == "open-message"]
    assert opening["msgId"] == frame.get_attribute("#result-1", "data-msg-id") and opening["id"] == 1

    # This iframe has no allow="clipboard-write": "Copy link" shows the permalink selected, for
    # Ctrl+C, without asking the clipboard (which would log a permissions-policy violation; the
    # tabs' check fails on any console error).
    frame.click("#context-copy")
    frame.wait_for_selector("#context-status .context-link")
    link = f"{server.origin}/?msg={opening['msgId']}"
    assert frame.inner_text("#context-status .context-link") == link
    assert frame.evaluate("() => String(getSelection())") == link


def test_a_host_page_that_never_reaches_for_the_widget_pays_for_the_loader_alone(
    widget_tabs: WidgetTabs, sites: Sites
) -> None:
    """The default preload is intent: no iframe (so no Python runtime) until the pointer reaches the
    button, it gets focus or the widget is opened; the idle time the warm-up would wait passes."""
    server = sites.server
    sites.allowed.pages["/"] = ("text/html", host_page(server))
    page, _record = widget_tabs.new()
    asked: list[str] = []
    page.on("request", lambda r: r.url.startswith(server.origin) and asked.append(r.url))
    page.goto(f"{sites.allowed.origin}/")
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(IDLE_WARMUP_MAX_MS)
    assert asked == [f"{server.origin}/static/embed.js"]
    assert in_shadow(page, "shadow.querySelector('iframe')") is None
    page.hover("ai-search-widget")  # intent: the iframe starts warming up
    wait_event(page, "ready", timeout=PYTHON_READY_MS)
    assert not dialog_open(page)


# -- a host outside the allow-list -----------------------------------------------------------------


def test_a_host_outside_the_allow_list_can_neither_frame_the_widget_nor_call_the_api(
    widget_tabs: WidgetTabs, sites: Sites
) -> None:
    server = sites.server
    sites.refused.pages["/"] = ("text/html", host_page(server, preload="idle"))
    page, record = widget_tabs.new()
    for expected in (
        REFUSAL,
        'violates the following Content Security Policy directive: "frame-ancestors',
        "CORS policy",
        "Failed to load resource",
        "net::ERR_FAILED",
    ):
        record.allow_error(expected)
    sign_in_widget(page, server, "bob")
    with page.expect_console_message(lambda m: REFUSAL in m.text, timeout=PYTHON_READY_MS) as refusal:
        page.goto(f"{sites.refused.origin}/")
    assert refusal.value.type == "error"
    assert refusal.value.text == (
        f"ai-search: this site ({sites.refused.origin}) is not on the embed allow-list of {server.origin}; "
        "add it with AI_SEARCH_EMBED_ALLOWED_ORIGINS"
    )
    # The loader made its iframe, but the browser put its own error page there instead of ours.
    src = in_shadow(page, "shadow.querySelector('iframe').src")
    assert src.startswith(f"{server.origin}/embed?")
    assert len(page.frames) == 2
    assert not any(frame.url.startswith(server.origin) for frame in page.frames)
    assert page.evaluate("() => document.querySelector('ai-search-widget').style.display") == "none"
    assert page.evaluate("() => window.__messages") == []

    page.keyboard.press("Control+k")
    assert not dialog_open(page)

    user_id, token = server.credentials("bob")
    outcome = page.evaluate(
        """async ([url, headers]) => {
            const results = [];
            for (const init of [{}, {headers}]) {
              try { results.push((await fetch(url, init)).status); } catch (error) { results.push(error.name); }
            }
            return results;
        }""",
        [f"{server.origin}/api/v1/ai.search?q=deploy", {"X-User-Id": user_id, "X-Auth-Token": token}],
    )
    assert outcome == ["TypeError", "TypeError"]


# -- the server's side -----------------------------------------------------------------------------


def _frame_ancestors(response: httpx.Response) -> list[str]:
    csp = response.headers["content-security-policy"]
    directive = next(d.strip() for d in csp.split(";") if d.strip().startswith("frame-ancestors"))
    return directive.split()[1:]


def test_only_the_widget_page_may_be_framed_and_only_by_allowed_hosts(sites: Sites) -> None:
    origin = sites.server.origin
    embed = httpx.get(f"{origin}/embed")
    assert embed.status_code == 200
    assert _frame_ancestors(embed) == ["'self'", sites.allowed.origin]
    assert "x-frame-options" not in embed.headers
    assert f'data-embed-origins="{origin} {sites.allowed.origin}"' in embed.text
    page = httpx.get(f"{origin}/")
    assert _frame_ancestors(page) == ["'none'"]
    assert page.headers["x-frame-options"] == "DENY"
    loader = httpx.get(f"{origin}/static/embed.js")
    assert loader.headers["content-type"].startswith("text/javascript")
    assert "cross-origin-resource-policy" not in loader.headers  # a <script src> from any site loads it


@pytest.mark.parametrize(
    ("host", "status", "cors"),
    [
        pytest.param("allowed", 200, True, id="an-allowed-host-may-call-the-api-with-cors"),
        pytest.param("refused", 403, False, id="any-other-host-is-refused-without-cors"),
    ],
)
def test_the_allow_list_drives_the_api_origin_check(sites: Sites, host: str, status: int, cors: bool) -> None:
    origin = getattr(sites, host).origin
    user_id, token = sites.server.credentials("bob")
    response = httpx.get(
        f"{sites.server.origin}/api/v1/me",
        headers={"Origin": origin, "X-User-Id": user_id, "X-Auth-Token": token},
    )
    assert response.status_code == status
    assert (response.headers.get("access-control-allow-origin") == origin) is cors


# -- files -----------------------------------------------------------------------------------------


def test_the_widget_page_has_every_element_the_python_page_needs() -> None:
    ids = re.compile(r'\bid="([^"]+)"')
    page = set(ids.findall(page_source(ROOT, "index.html")))
    embed = page_source(ROOT, "embed.html")
    assert page <= set(ids.findall(embed))
    for reference in re.findall(r'(?:src|href)="([^"]+)"', embed):
        assert reference.startswith(("./", "data:")), reference
        if reference.startswith("./") and "/vendor/" not in reference and reference not in MADE_BY_THE_SERVER:
            assert (ROOT / reference).is_file(), reference


def test_the_loader_stays_small() -> None:
    assert len(gzip.compress((ROOT / "static" / "embed.js").read_bytes())) <= MAX_LOADER_GZIP_BYTES


# -- the protocol, pure ----------------------------------------------------------------------------

HOST = "https://docs.example.com"
ALLOWED = parse_allowed_origins(f"https://search.example.com  {HOST}\n")


@pytest.mark.parametrize(
    ("requested", "framed", "parent", "expected"),
    [
        pytest.param(HOST, True, HOST, HOST, id="an-allowed-parent-that-is-the-named-host"),
        pytest.param(HOST, True, None, HOST, id="no-ancestor-origins-relies-on-the-target-origin"),
        pytest.param(HOST, False, None, None, id="a-page-that-is-not-framed-has-no-host"),
        pytest.param("https://evil.example", True, "https://evil.example", None, id="a-host-off-the-list"),
        pytest.param(HOST, True, "https://evil.example", None, id="a-parent-that-is-not-the-named-host"),
        pytest.param("https://docs.example.com:443", True, None, None, id="only-serialised-origins-match"),
        pytest.param("", True, None, None, id="no-host-named"),
    ],
)
def test_the_widget_talks_only_to_an_allowed_parent(
    requested: str, framed: bool, parent: str | None, expected: str | None
) -> None:
    assert host_origin(requested, ALLOWED, framed=framed, parent_origin=parent) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param({"aiSearch": 1, "type": "open"}, HostMessage("open"), id="open"),
        pytest.param(
            {"aiSearch": 1, "type": "open", "query": " deploy "},
            HostMessage("open", "deploy"),
            id="open-with-a-query",
        ),
        pytest.param(
            {"aiSearch": 1, "type": "open", "query": "x" * 600},
            HostMessage("open", "x" * 500),
            id="a-long-query-is-cut-to-the-route-limit",
        ),
        pytest.param(
            {"aiSearch": 1, "type": "open", "query": 7}, HostMessage("open"), id="a-query-must-be-text"
        ),
        pytest.param(
            {"aiSearch": 1, "type": "close", "query": "x"}, HostMessage("close"), id="close-has-no-query"
        ),
        pytest.param(
            {"aiSearch": 1, "type": "open-message-reply", "id": 3, "taken": True},
            HostMessage("open-message-reply", request=3, taken=True),
            id="a-reply-that-takes-the-message",
        ),
        pytest.param(
            {"aiSearch": 1, "type": "open-message-reply", "id": 4.0, "taken": "yes"},
            HostMessage("open-message-reply", request=4),
            id="a-reply-takes-only-with-true",
        ),
        pytest.param(
            {"aiSearch": 1, "type": "open-message-reply", "id": 0}, None, id="requests-count-from-1"
        ),
        pytest.param({"aiSearch": 1, "type": "open-message-reply", "id": 1.5}, None, id="a-request-is-whole"),
        pytest.param(
            {"aiSearch": 1, "type": "open-message-reply", "id": True}, None, id="a-request-is-no-bool"
        ),
        pytest.param({"aiSearch": 1, "type": "open-message-reply"}, None, id="a-reply-names-its-request"),
        pytest.param({"aiSearch": 2, "type": "open"}, None, id="another-protocol-version"),
        pytest.param({"type": "open"}, None, id="not-our-protocol"),
        pytest.param({"aiSearch": 1, "type": "ready"}, None, id="a-widget-message-is-not-a-host-message"),
        pytest.param("open", None, id="a-string"),
        pytest.param(None, None, id="nothing"),
    ],
)
def test_host_messages_are_read_strictly(data: Any, expected: HostMessage | None) -> None:
    assert read_host_message(data) == expected


@pytest.mark.parametrize(
    ("query", "defaults", "expected"),
    [
        pytest.param("deploy", "in:#support", "in:support deploy", id="default-filters-scope-the-query"),
        pytest.param("deploy in:#ops", "in:#support", "in:support in:ops deploy", id="the-query-adds-rooms"),
        pytest.param("deploy from:@alice", "", "from:alice deploy", id="no-defaults"),
        pytest.param("deploy", "not a filter", "deploy", id="defaults-that-are-no-filters-add-nothing"),
    ],
)
def test_an_open_request_keeps_the_default_filters(query: str, defaults: str, expected: str) -> None:
    assert scoped_query(query, defaults) == expected


def test_widget_messages_carry_the_protocol_and_refuse_unknown_kinds() -> None:
    assert widget_message("resize", height=300) == {"aiSearch": 1, "type": "resize", "height": 300}
    with pytest.raises(ValueError, match="not a widget message type"):
        widget_message("open")
