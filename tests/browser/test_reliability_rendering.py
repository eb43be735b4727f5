"""B2 and B3 (spec/security-and-reliability.md §2): no script runs from any sink, and the page works
under its enforced CSP. Each test writes its figure line (``tests/_figures.py``).

A server of our own for this module holds a hostile workspace: for each payload of ``PAYLOADS``
(OWASP filter-evasion forms, entity-encoded forms, forged ``<mark>`` and sentinels, ``javascript:``
and ``data:`` links, Markdown images, ``<script type="py">``, ``py-click``/``mpy-click``) a room named
by it, an author whose display name it is, and a message holding it; the fake OpenAI-compatible
provider answers with every payload and lists payloads as model ids. Then, one page load per sink
group, every payload goes through every place the page and the widget show text:

=================  ===========================================================================
page               result texts with highlights, room labels, author names, the signed-in name,
                   room and people suggestions, query text and chips (the empty state), the
                   answer, the answer's model label and the model picker
forged answers     what only a broken or hostile server could send (route-rewritten ai.search):
                   notices, forged highlight spans, room and author fields, timestamps
before Python      static/fallback.js's results and signed-in name (Python held back)
widget             static/embed.js on another site: the /embed page's results and answer
=================  ===========================================================================

Each payload's JavaScript assigns ``window.__xss`` and its Python ``window.__pyxss``; both are
counting setters installed before any script. ``py-click`` payloads name ``pwned``, a Python global
the test defines that assigns ``__pyxss``; every node of the sinks then gets a click, so a wired
handler would fire. PyScript wires ``py-*`` attributes of elements it sees, but the page's own DOM
writer (py/ai_search_web/dom.py) allows no such attribute and makes untrusted text text nodes, so no
payload can reach it. A positive control (a
``py-click`` element and a ``<script type="py">`` the test itself adds to a sink, and the page's own
interpreter calling ``pwned``) proves the audit finds such markup and both canaries count. Every tab also fails on
any console error, CSP violation, dialog or request off the server's origin (tests/browser/conftest.py).
Each sink is checked to show every payload as text, so nothing passes by never reaching a sink.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from ai_search import (
    SearchFilters,
    build_applied_filter_chips,
    parse_search_filter_text,
    serialize_search_query,
)
from ai_search_web.highlights import highlight_runs
from tests._figures import Figure

from .conftest import (
    LLM_MODEL,
    OWN_PYTHON_SCRIPT,
    PYTHON_READY_MS,
    SESSION_STORAGE_KEY,
    Server,
    Tabs,
    _start,
    _stop,
)
from .test_before_python import PAGE_PYTHON_FILES, STAGE_FILES
from .test_widget import HOST_JS, HOSTILE_CSS, HostSite, host_page, wait_event, widget_frame

pytestmark = pytest.mark.browser

WORD = "quokkasink"  # in every hostile message, so one search finds them all
VIEWER = "vera"  # signed in everywhere; an admin, so she gets the model picker
VIEWER_NAME = '<img src=x onerror="__xss=\'whoami\'"> Vera <script type="py">import js; js.window.__pyxss = "whoami"</script>'
# A date no message is before: a search with it shows the empty state (query words and chips).
NOTHING_BEFORE = "2001-01-01"

# {n} is the payload's number: a hit names the payload that ran.
_TEMPLATES = (
    "<script>__xss={n}</script>",
    '<img src=x onerror="__xss={n}">',
    "<IMG SRC=javascript:__xss={n}>",
    "<svg/onload=__xss={n}>",
    "<body onload=__xss={n}>",
    '<iframe src="javascript:__xss={n}"></iframe>',
    '<iframe srcdoc="<script>parent.__xss={n}</script>">',
    '<a href="javascript:__xss={n}">link{n}</a>',
    '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">data{n}</a>',
    "<details open ontoggle=__xss={n}>",
    "<math><mtext><table><mglyph><style><img src=x onerror=__xss={n}>",
    '"><script>__xss={n}</script>',
    "'-__xss={n}-'",
    "&lt;img src=x onerror=__xss={n}&gt;",
    "&#60;img src=x onerror=__xss={n}&#62;",
    "\\u003cimg src=x onerror=__xss={n}\\u003e",
    "%3Cimg%20src%3Dx%20onerror%3D__xss%3D{n}%3E",
    "<mark>forged{n}</mark><mark onmouseover=__xss={n}>m</mark>",
    "\ue000mark\ue001forged{n}\ue000/mark\ue001",
    "[click{n}](javascript:__xss={n})",
    "![img{n}](http://evil.example/{n}.png)",
    "![img{n}](data:image/svg+xml,<svg onload=__xss={n}>)",
    '<script type="py">import js; js.window.__pyxss = {n}</script>',
    '<script type="mpy">import js; js.window.__pyxss = {n}</script>',
    "<py-script>import js; js.window.__pyxss = {n}</py-script>",
    '<button py-click="pwned" id="py{n}">press</button>',
    '<div mpy-click="pwned">x{n}</div>',
    '<b py-click="pwned" py-mouseover="pwned" py-env="x">b{n}</b>',
    '<object data="javascript:__xss={n}"></object><embed src="javascript:__xss={n}">',
    '<form action="javascript:__xss={n}"><button>go{n}</button></form>',
    "<input autofocus onfocus=__xss={n}>",
    '<link rel=stylesheet href="http://evil.example/{n}.css"><base href="http://evil.example/">',
    '<meta http-equiv="refresh" content="0;url=javascript:__xss={n}">',
    '{{{{constructor.constructor("__xss={n}")()}}}}',
    "<scr<script>ipt>__xss={n}</scr</script>ipt>",
    "<img src=x onerror=alert({n})><svg><animate onbegin=confirm({n}) attributeName=x dur=1s>",
    '<a href="jav&#x09;ascript:alert({n})">tab{n}</a><a href=" &#14;  javascript:prompt({n})">ws{n}</a>',
    "javascript:/*--></title></style></textarea></script><svg/onload='+/\"/+/onmouseover=1/+/[*/[]/+__xss={n}//'>",
)
PAYLOADS = tuple(template.format(n=n) for n, template in enumerate(_TEMPLATES))


def room_name(n: int) -> str:
    """A unique room name holding payload ``n`` within the store's rules (100 characters, trimmed, and
    no '"', which the search line could not name: the payload's double quotes become single ones)."""
    return f"r{n}-{PAYLOADS[n]}".replace('"', "'")[:100].strip()


def display_name(n: int) -> str:
    return f"{PAYLOADS[n]} m{n}"[:120].strip()


def hostile_answer() -> str:
    """The provider's answer: every payload, with citations of the first three sources between."""
    return " ".join(f"{payload} [{n % 3 + 1}]" for n, payload in enumerate(PAYLOADS))


# Runs first in every frame of a checked tab: counting canaries the payloads would assign.
CANARY = """(() => {
  if (Object.getOwnPropertyDescriptor(window, "__xss")) return;
  const js = [], py = [];
  Object.defineProperty(window, "__xss", { get: () => js.length, set: (v) => { js.push(String(v)); } });
  Object.defineProperty(window, "__pyxss", { get: () => py.length, set: (v) => { py.push(String(v)); } });
  window.__hits = () => ({ js: js.slice(), py: py.slice() });
})();"""
# The sinks: every element the page fills from data, and the ids of their roots.
SINKS = (
    "#result-list", "#answer-body", "#answer-label", "#answer-error", "#model-picker", "#notices", "#empty",
    "#chips", "#suggestions", "#fallback-results", "#whoami", "#status", "#login-error",
)  # fmt: skip
# What a sink may never hold: anything that runs, loads, embeds or submits.
FORBIDDEN = (
    "script, iframe, frame, img, svg, math, object, embed, style, link, meta, base, form, input, "
    "textarea, video, audio, source, template, py-script, mpy-script, py-config, details"
)
AUDIT = """async ([sinks, forbidden, settleMs]) => {
  const found = [];
  // The page's own icons (py/ai_search_web/dom.py, icon()): an <svg class="icon"> of one <path d>,
  // nothing else on either; an SVG of any other shape is reported like any forbidden element.
  const only = (n, names) => n.getAttributeNames().every((a) => names.includes(a));
  const pageIcon = (n) =>
    (n.matches("svg.icon") && only(n, ["viewBox", "aria-hidden", "focusable", "class"])
      && n.children.length === 1 && n.firstElementChild.matches("path") && only(n.firstElementChild, ["d"]))
    || (n.matches("svg.icon > path") && pageIcon(n.parentElement));
  for (const root of document.querySelectorAll(sinks.join(","))) {
    for (const node of root.querySelectorAll("*")) {
      if (node.matches(forbidden) && !pageIcon(node)) found.push("element " + node.tagName);
      for (const { name, value } of node.attributes) {
        const n = name.toLowerCase();
        if (n.startsWith("on") || n.startsWith("py-") || n.startsWith("mpy-") || ["src", "srcdoc", "style",
            "action", "formaction", "xlink:href", "background", "poster"].includes(n)
            || (n === "href" && !value.startsWith("#")))
          found.push(`attribute ${n}=${value.slice(0, 40)} on ${node.tagName}`);
      }
      // A click (and hover) on every node: a py-click handler that something had wired would run now.
      node.dispatchEvent(new Event("click", { bubbles: false }));
      node.dispatchEvent(new Event("mouseover", { bubbles: false }));
    }
  }
  // A wired handler may await the interpreter before it runs: a hit would land a little later (the
  // canaries count for the whole page's life, so only the last audit of a page needs to wait).
  if (settleMs) await new Promise((r) => setTimeout(r, settleMs));
  const own = document.querySelector(OWN_SCRIPT); // the page's own (main.py), the one allowed
  const pyScripts = [...document.querySelectorAll('script[type="py"], script[type="mpy"], py-script, mpy-script')]
    .filter((s) => s !== own);
  const marks = [...document.querySelectorAll("mark")].filter((m) => !m.closest(".result-text"));
  return {
    injected: found,
    python_scripts: pyScripts.length,
    marks_outside_results: marks.length,
    hits: window.__hits ? window.__hits() : { js: ["canary missing"], py: [] },
  };
}""".replace("OWN_SCRIPT", json.dumps(OWN_PYTHON_SCRIPT))
# Milliseconds the last audit of a page waits for a wired py-click handler to have run.
SETTLE_MS = 100
# The page's own Python global that py-click payloads name; a wired handler would call it.
DEFINE_PWNED = """async () => {
  const interpreter = await window.aiSearchPython;
  interpreter.runPython("import js\\ndef pwned(*_):\\n    js.window.__pyxss = 'py-click'\\n");
}"""
# The positive control, run through the same audit: a py-click element and a <script type="py"> put
# into a sink (what an injection that got through would leave), and the page's interpreter calling
# pwned (what a wired handler would do), so the audit and both canaries are seen to work.
CONTROL_SETUP = """async () => {
  const button = document.createElement("button");
  button.setAttribute("py-click", "pwned");
  const script = document.createElement("script");
  script.type = "py";
  script.textContent = "import js\\njs.window.__pyxss = 'control-script'";
  document.getElementById("notices").append(button, script);
  window.__xss = "control-js";
  (await window.aiSearchPython).runPython("pwned()");
}"""
CONTROL_TEARDOWN = """() => {
  document.querySelectorAll('#notices [py-click], #notices script[type="py"]').forEach((n) => n.remove());
}"""


def run_control(frame: Any) -> list[str]:
    """What the audit finds for the positive control: it must see all four kinds."""
    frame.evaluate(CONTROL_SETUP)
    found = frame.evaluate(AUDIT, [list(SINKS), FORBIDDEN, SETTLE_MS])
    frame.evaluate(CONTROL_TEARDOWN)
    seen = []
    if any("py-click" in entry for entry in found["injected"]):
        seen.append("py-click attribute found")
    if "py-click" in found["hits"]["py"]:
        seen.append("python canary counted")
    if found["python_scripts"] >= 1:
        seen.append("script type=py found")
    if "control-js" in found["hits"]["js"]:
        seen.append("js canary counted")
    return seen


@dataclass
class HostileSite:
    server: Server
    host: HostSite
    payload_rooms: dict[str, int] = field(default_factory=dict)


def _fill_workspace(data_dir: Path) -> None:
    from ai_search_server.importer import import_rows
    from ai_search_server.store import open_store

    data_dir.mkdir(parents=True)
    store = open_store(data_dir)
    try:
        store.create_user(VIEWER, name=VIEWER_NAME, password=f"demo-{VIEWER}", roles=("admin",))
        start = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
        rows = [
            {
                "room": room_name(n),
                "room_type": "c",
                "user": f"m{n}",
                "name": display_name(n),
                "ts": (start + timedelta(minutes=n)).isoformat(),
                "text": f"{WORD} {payload}",
                "members": [VIEWER],
            }
            for n, payload in enumerate(PAYLOADS)
        ]
        report = import_rows(store, rows)
        assert report.skipped == [] and report.imported == len(PAYLOADS), report.summary()
    finally:
        store.close()


@pytest.fixture(scope="module")
def site() -> Iterator[HostileSite]:
    from tests.server._fake_openai import FakeOpenAI

    root = Path(tempfile.mkdtemp(prefix="ai-search-hostile-"))
    fake = FakeOpenAI()
    fake.answer = hostile_answer()
    fake.chunks = tuple(fake.answer[i : i + 97] for i in range(0, len(fake.answer), 97))
    fake.models = (LLM_MODEL, PAYLOADS[1], PAYLOADS[22], PAYLOADS[25])
    thread = fake.serve().start()
    host = HostSite()
    host.pages["/host.css"] = ("text/css", HOSTILE_CSS)
    host.pages["/host.js"] = ("text/javascript", HOST_JS)
    try:
        _fill_workspace(root / "data")
        env = {
            "AI_SEARCH_EMBEDDER": "none",
            "AI_SEARCH_LOG_LEVEL": "warning",
            "AI_SEARCH_LLM_BASE_URL": f"{thread.url}/v1",
            "AI_SEARCH_LLM_API_KEY": "sk-test",
            "AI_SEARCH_LLM_MODEL": LLM_MODEL,
            "AI_SEARCH_OUTBOUND_ALLOW_HOSTS": "127.0.0.1",
            "AI_SEARCH_EMBED_ALLOWED_ORIGINS": host.origin,
        }
        process, url = _start(root / "data", env, root / "server.log")
        try:
            yield HostileSite(Server(url, fake), host)
        finally:
            _stop(process)
    finally:
        host.close()
        thread.stop()
        shutil.rmtree(root, ignore_errors=True)


class SiteTabs(Tabs):
    """Checked tabs of the hostile server; requests may also reach its host site (the widget's)."""

    def __init__(self, context: Any, site: HostileSite) -> None:
        super().__init__(context, site.server)
        self.host = site.host.origin

    def foreign_requests(self) -> list[str]:
        allowed = (self.server.origin, self.host)
        return [u for u in self.requests if urlsplit(u).scheme in ("http", "https", "ws", "wss")
                and f"{urlsplit(u).scheme}://{urlsplit(u).netloc}" not in allowed]  # fmt: skip

    def check(self) -> None:
        self.requests = [u for u in self.requests if not u.startswith(f"{self.host}/")]
        super().check()


@pytest.fixture
def site_tabs(context: Any, site: HostileSite) -> Iterator[SiteTabs]:
    tabs = SiteTabs(context, site)
    try:
        yield tabs
    finally:
        tabs.check()


@dataclass
class Tally:
    """Payloads shown as text per sink, and what the audits found."""

    shown: dict[str, int] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    injected: list[str] = field(default_factory=list)
    js_hits: list[str] = field(default_factory=list)
    py_hits: list[str] = field(default_factory=list)
    python_scripts: int = 0
    forged_marks: int = 0

    def expect(self, sink: str, texts: list[str], shown_in: str | list[str]) -> None:
        """Each of ``texts`` must appear in ``shown_in`` (a text, or one text per item)."""
        haystack = shown_in if isinstance(shown_in, str) else "\n".join(shown_in)
        self.shown[sink] = self.shown.get(sink, 0) + len(texts)
        self.missing += [f"{sink}: {t[:60]!r}" for t in texts if t not in haystack]

    def audit(self, frame: Any, *, last: bool = True) -> None:
        """Check the sinks of ``frame`` now; the ``last`` audit of a page also reads its canaries."""
        found = frame.evaluate(AUDIT, [list(SINKS), FORBIDDEN, SETTLE_MS if last else 0])
        self.injected += found["injected"]
        if last:
            self.js_hits += found["hits"]["js"]
            self.py_hits += found["hits"]["py"]
        self.python_scripts += found["python_scripts"]  # the page's own is not counted
        self.forged_marks += found["marks_outside_results"]

    def report(self, figure: Figure, tabs: SiteTabs, record: Any, **extra: Any) -> None:
        foreign = tabs.foreign_requests()
        failures = (
            len(self.missing) + len(self.injected) + len(self.js_hits) + len(self.py_hits)
            + self.python_scripts + self.forged_marks + len(record.dialogs) + len(foreign)
        )  # fmt: skip
        figure(
            tried=sum(self.shown.values()),
            failed=failures,
            payloads=len(PAYLOADS),
            sinks=len(self.shown),
            payloads_x_sinks=sum(self.shown.values()),
            shown_as_text=sum(self.shown.values()) - len(self.missing),
            xss_hits=len(self.js_hits),
            injected_python_runs=len(self.py_hits),
            dialogs=len(record.dialogs),
            requests_off_site=len(foreign),
            injected_nodes_or_attributes=len(self.injected),
            extra_python_scripts=self.python_scripts,
            forged_marks=self.forged_marks,
            **extra,
        )
        assert self.missing == [], self.missing
        assert self.js_hits == [] and self.py_hits == [], (self.js_hits, self.py_hits)
        assert self.injected == [] and self.python_scripts == 0 and self.forged_marks == 0, self.injected
        assert record.dialogs == [] and foreign == [], (record.dialogs, foreign)


def _seed_session(page: Any, server: Server, name: str = VIEWER_NAME) -> None:
    user_id, token = server.credentials(VIEWER)
    session = json.dumps({"userId": user_id, "authToken": token, "username": VIEWER, "name": name})
    page.add_init_script(
        f"if (location.origin === {json.dumps(server.origin)})"
        f" sessionStorage.setItem({json.dumps(SESSION_STORAGE_KEY)}, {json.dumps(session)});"
    )


def _open(tabs: SiteTabs, path: str = "") -> tuple[Any, Any]:
    page, record = tabs.new()
    page.add_init_script(CANARY)
    _seed_session(page, tabs.server)
    page.goto(tabs.server.url + path)
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    page.wait_for_function("() => window.aiSearchPrefetched === true")
    page.evaluate(DEFINE_PWNED)
    return page, record


def _searches(frame: Any) -> int:
    return int(frame.evaluate("() => Number(document.documentElement.dataset.searches || 0)"))


def _search(frame: Any, query: str) -> None:
    """Run ``query`` as the address bar would (its filters replace the chips) and wait for the answer."""
    before = _searches(frame)
    frame.evaluate(
        "q => { history.pushState(null, '', '?q=' + encodeURIComponent(q));"
        " dispatchEvent(new PopStateEvent('popstate')); }",
        query,
    )
    frame.wait_for_function("n => Number(document.documentElement.dataset.searches || 0) > n", arg=before)


def _show_all(frame: Any) -> None:
    while frame.is_visible("#show-more"):
        frame.click("#show-more")


def _ask(frame: Any) -> None:
    frame.click("#ask")
    frame.wait_for_function(
        "() => document.getElementById('answer-label').textContent.match(/^(Written|Extractive)/)",
        timeout=30_000,
    )


def _results(frame: Any, tally: Tally) -> None:
    """Message texts, room labels and author names of every result, and our highlights only."""
    _show_all(frame)
    texts = frame.locator("#result-list .result-text").all_text_contents()
    tally.expect("message text", [f"{WORD} {p}" for p in PAYLOADS], texts)
    tally.expect("room name", [f"#{room_name(n)}" for n in range(len(PAYLOADS))],
                 frame.locator("#result-list .result-room").all_text_contents())  # fmt: skip
    tally.expect("display name", [display_name(n) for n in range(len(PAYLOADS))],
                 frame.locator("#result-list .result-author").all_text_contents())  # fmt: skip
    marks = frame.locator("#result-list mark").all_text_contents()
    tally.shown["highlight"] = len(PAYLOADS)
    if len(marks) < len(PAYLOADS) or {m.lower() for m in marks} != {WORD}:
        tally.missing.append(f"highlight: marks {sorted(set(marks))[:5]} are not ours alone")


def _answer(frame: Any, tally: Tally, *, with_model: bool) -> None:
    _ask(frame)
    body = frame.text_content("#answer-body") or ""
    tally.expect("LLM answer", list(PAYLOADS), body)
    links = frame.locator("#answer-body a").evaluate_all(
        "ns => ns.map(n => n.className + ' ' + n.getAttribute('href'))"
    )
    if not links or any(not (link.startswith("cite #result-")) for link in links):
        tally.missing.append(f"LLM answer: links other than citations: {links[:3]}")
    if with_model:
        options = frame.locator("#model-picker option").all_text_contents()
        tally.expect("model picker", [PAYLOADS[1], PAYLOADS[22], PAYLOADS[25]], options)
        tally.expect(
            "answer label", [frame.input_value("#model-picker")], frame.text_content("#answer-label") or ""
        )


@pytest.mark.requirement("B2")
def test_no_payload_runs_from_any_sink_of_the_page(
    site: HostileSite, site_tabs: SiteTabs, figure: Figure
) -> None:
    page, record = _open(site_tabs)
    tally = Tally()
    tally.expect("signed-in name", [VIEWER_NAME], page.text_content("#whoami") or "")

    _search(page, WORD)
    _results(page, tally)
    _answer(page, tally, with_model=True)
    tally.audit(page, last=False)

    # Suggestions: each hostile room for in:, each hostile author for from:.
    box = page.locator("#search-box")
    rooms, people = [], []
    for n in range(len(PAYLOADS)):
        for token, title, sink in ((f"in:r{n}-", room_name(n), rooms), (f"from:m{n}", f"@m{n}", people)):
            box.fill(token)
            page.wait_for_function(
                "t => [...document.querySelectorAll('#suggestions:not([hidden]) .option-title')]"
                ".some((o) => o.textContent.replace(/^#/, '') === t)",
                arg=title,
            )
            sink.append(page.text_content("#suggestions") or "")
    tally.expect("room suggestion", [room_name(n) for n in range(len(PAYLOADS))], rooms)
    tally.expect("people suggestion", [display_name(n) for n in range(len(PAYLOADS))], people)
    box.fill("")
    tally.audit(page, last=False)

    # Query text and chips: each payload as the words, its room and author as filters, nothing found.
    words, chips = [], []
    expected_words, expected_chips = [], []
    for n, payload in enumerate(PAYLOADS):
        line = serialize_search_query(
            payload, SearchFilters(room_names=(room_name(n),), from_usernames=(f"m{n}",))
        )
        parsed = parse_search_filter_text(f"{line} before:{NOTHING_BEFORE}")
        if not parsed.search_text:
            continue
        _search(page, f"{line} before:{NOTHING_BEFORE}")
        expected_words.append(f"“{parsed.search_text}”")
        expected_chips += [chip.label for chip in build_applied_filter_chips(parsed.filters)]
        words.append(page.text_content("#empty") or "")
        chips.append(page.text_content("#chips") or "")
        tally.audit(page, last=False)
    tally.expect("query text", expected_words, words)
    tally.expect("chip", expected_chips, chips)
    tally.audit(page)

    tally.report(
        figure, site_tabs, record, answer_chars=len(hostile_answer()), positive_control=_control(page)
    )


def _control(frame: Any) -> str:
    seen = run_control(frame)
    assert len(seen) == 4, f"the canaries and the audit missed the positive control: only {seen}"
    return f"{len(seen)}/4"


# Highlight spans only a broken or hostile server would send, one set per result (the page must
# render exactly highlight_runs' runs: B1's DOM half).
FORGED_SPANS: tuple[list[Any], ...] = (
    [[0, 10**9]],
    [[-5, 3], [2, 8], [8, 8], [7, 2]],
    [[3, 6], [0, 4], [5, 12], [5, 12]],
    [[True, 5], [1.5, 3], "0,4", None, [1], [1, 2, 3], {"0": 1}, [[0, 1]]],
    [[10, 14], [0, 4]],
    [[2**53, 2**53 + 1], [-(2**53), 2]],
    [],
)


@pytest.mark.requirement("B2")
def test_no_payload_runs_from_what_a_hostile_server_could_send(
    site: HostileSite, site_tabs: SiteTabs, figure: Figure
) -> None:
    """Fields the server never lets through as they are (forged spans, notices, room and author
    fields, timestamps) rewritten in ai.search's answer on its way to the page."""
    page, record = _open(site_tabs)
    texts: dict[str, str] = {}

    def forge(route: Any) -> None:
        response = route.fetch()
        data = response.json()
        for i, result in enumerate(data["intelligent"]):
            payload = PAYLOADS[i % len(PAYLOADS)]
            result["highlights"] = FORGED_SPANS[i % len(FORGED_SPANS)]
            result["u"]["name"] = result["room"]["fname"] = result["ts"] = result["matchReason"] = payload
            result["msgId"] = payload
            texts[result["text"]] = payload
        data["meta"]["retrieval"]["notices"] = list(PAYLOADS)
        route.fulfill(response=response, json=data)

    page.route("**/api/v1/ai.search?*", forge)
    tally = Tally()
    _search(page, WORD)
    _show_all(page)
    tally.expect("notice", list(PAYLOADS), page.locator("#notices p").all_text_contents())
    tally.expect(
        "room field", [f"#{p}" for p in texts.values()], page.locator(".result-room").all_text_contents()
    )
    tally.expect("author field", list(texts.values()), page.locator(".result-author").all_text_contents())
    tally.expect(
        "timestamp field",
        list(texts.values()),
        page.locator(".result-time").evaluate_all("ns => ns.map(n => n.getAttribute('datetime'))"),
    )
    rendered = page.locator("#result-list .result-text").evaluate_all(
        "ps => ps.map(p => [...p.childNodes].map(n => [n.textContent, n.nodeName === 'MARK']))"
    )
    tally.shown["forged highlight"] = len(rendered)
    for i, runs in enumerate(rendered):
        text = "".join(run for run, _marked in runs)
        expected = [list(run) for run in highlight_runs(text, FORGED_SPANS[i % len(FORGED_SPANS)])]
        if text not in texts or runs != expected:
            tally.missing.append(f"forged highlight {i}: {runs[:4]} != {expected[:4]}")
    tally.audit(page)
    tally.report(figure, site_tabs, record, forged_span_sets=len(FORGED_SPANS), results=len(rendered))


# People per fallback search: static/fallback.js shows the first 5 results (FIRST_PAGE).
FALLBACK_PAGE = 5


@pytest.mark.requirement("B2")
def test_no_payload_runs_from_the_page_before_python(
    site: HostileSite, site_tabs: SiteTabs, figure: Figure
) -> None:
    """static/fallback.js owns the page until Python is ready; here Python (the stage and Pyodide)
    is held back throughout."""
    page, record = site_tabs.new()
    page.add_init_script(CANARY)
    _seed_session(page, site.server)
    held: list[Any] = []
    page.route(PAGE_PYTHON_FILES, lambda route: held.append(route))  # Python never starts
    # Nor the keystroke stage, which would take the filters out of the box as chips: the fallback
    # alone, as a stage that failed leaves it (the stage's hostile names: test_keys_stage.py).
    page.route(STAGE_FILES, lambda route: held.append(route))
    page.goto(site.server.url)
    page.wait_for_selector("html[data-fallback=ready]")
    tally = Tally()
    tally.expect("fallback signed-in name", [VIEWER_NAME], page.text_content("#whoami") or "")
    items: list[str] = []
    for first in range(0, len(PAYLOADS), FALLBACK_PAGE):
        group = range(first, min(first + FALLBACK_PAGE, len(PAYLOADS)))
        query = f"{WORD} " + " ".join(f"from:m{n}" for n in group)
        page.fill("#search-box", query)
        page.press("#search-box", "Enter")
        page.wait_for_function(
            "q => window.aiSearchFallback.q === q && window.aiSearchFallback.data !== null", arg=query
        )
        items += page.locator("#fallback-results li").all_text_contents()
    assert page.get_attribute("html", "data-py") is None and held, "Python was not held back"
    tally.expect("fallback message text", [f"{WORD} {p}" for p in PAYLOADS], items)
    tally.expect("fallback room name", [f"#{room_name(n)}" for n in range(len(PAYLOADS))], items)
    tally.expect("fallback display name", [display_name(n) for n in range(len(PAYLOADS))], items)
    tally.audit(page)
    tally.report(figure, site_tabs, record, searches=len(range(0, len(PAYLOADS), FALLBACK_PAGE)))


@pytest.mark.requirement("B2")
def test_no_payload_runs_in_the_widget(site: HostileSite, site_tabs: SiteTabs, figure: Figure) -> None:
    """The widget on another site (static/embed.js, the /embed page in its iframe): results, the
    answer and the model picker, with the same payloads; nothing reaches the host page either."""
    server = site.server
    site.host.pages["/"] = ("text/html", host_page(server, preload="idle", placeholder=PAYLOADS[3]))
    page, record = site_tabs.new()
    page.add_init_script(CANARY)
    _seed_session(page, server)
    page.goto(f"{site.host.origin}/")
    wait_event(page, "ready", timeout=PYTHON_READY_MS)
    page.evaluate("() => document.dispatchEvent(new CustomEvent('ai-search:open'))")
    wait_event(page, "opened")
    frame = widget_frame(page, server)
    frame.wait_for_function("() => window.aiSearchPrefetched === true")
    frame.evaluate(DEFINE_PWNED)
    tally = Tally()
    tally.expect("widget placeholder", [PAYLOADS[3]], frame.get_attribute("#search-box", "placeholder") or "")
    tally.expect("widget signed-in name", [VIEWER_NAME], frame.text_content("#whoami") or "")
    _search(frame, WORD)
    _results(frame, tally)
    _answer(frame, tally, with_model=True)
    tally.shown = {
        f"widget {sink}" if not sink.startswith("widget") else sink: n for sink, n in tally.shown.items()
    }
    tally.audit(frame)
    host_hits = page.evaluate("() => window.__hits()")
    tally.js_hits += host_hits["js"]
    tally.py_hits += host_hits["py"]
    tally.report(figure, site_tabs, record, positive_control=_control(frame))


# HTML routes fetched directly as well as by the browser: every one must carry the enforced policy.
HTML_PATHS = (
    "/",
    f"/?q={WORD}",
    "/embed",
    "/embed?theme=dark",
    "/index.html",
    "/embed.html",
    "/no-such-page",
)
CONTROL_IMAGE = "http://evil.example/csp-control.png"
POLICY_CONTROL = """async (url) => {
  const before = window.__violations.length;
  const image = document.createElement("img");
  image.src = url;
  document.body.append(image);
  for (let i = 0; i < 100 && window.__violations.length === before; i++)
    await new Promise((r) => setTimeout(r, 20));
  image.remove();
  const seen = window.__violations.slice(before);
  window.__violations.length = before;  // the control's own violation is not the page's
  return seen.length === 1 && seen[0].startsWith("img-src");
}"""
REQUIRED_DIRECTIVES = ("script-src 'self' 'wasm-unsafe-eval'", "object-src 'none'", "base-uri 'none'")


def _enforced(headers: dict[str, str]) -> bool:
    policy = headers.get("content-security-policy", "")
    return (
        bool(policy)
        and "content-security-policy-report-only" not in headers
        and "'unsafe-eval'" not in policy
        and "'unsafe-inline'" not in policy
        and all(directive in policy for directive in REQUIRED_DIRECTIVES)
    )


@pytest.mark.requirement("B3")
def test_the_page_works_under_its_enforced_csp(
    site: HostileSite, site_tabs: SiteTabs, figure: Figure
) -> None:
    """Sign in through the form, search, ask, and edit a chip with the keyboard, under the policy the
    server sends; the conftest's listener for securitypolicyviolation runs before any script."""
    page, record = site_tabs.new()
    html: list[tuple[str, bool]] = []
    refused: list[str] = []
    page.on("response", lambda r: refused.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on(
        "response",
        lambda r: (
            html.append((r.url, _enforced(r.headers)))
            if "text/html" in r.headers.get("content-type", "")
            else None
        ),
    )
    page.goto(site.server.url)
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    page.fill("#login-user", VIEWER)
    page.fill("#login-password", f"demo-{VIEWER}")
    page.click("#login-form button[type=submit]")
    page.wait_for_selector("html[data-auth=in]")
    page.wait_for_function("() => window.aiSearchPrefetched === true")

    before = _searches(page)
    page.click("#search-box")
    page.keyboard.type(WORD)
    page.keyboard.press("Enter")
    page.wait_for_function("n => Number(document.documentElement.dataset.searches) > n", arg=before)
    found = page.locator("#result-list .result").count()
    _ask(page)
    cited = page.locator("#answer-body a.cite").count()

    page.click("#search-box")
    page.keyboard.press("End")
    page.keyboard.type(" in:r3-")
    page.wait_for_selector("#suggestions:not([hidden]) .option")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")  # the suggestion replaces the token...
    page.keyboard.type(" ")  # ...and becomes a chip once a space follows
    page.wait_for_function("() => document.querySelectorAll('#chips .chip').length === 1")
    chips = page.locator("#chips .chip-label").all_text_contents()
    chip_added = chips == [f"#{room_name(3)}"]
    before = _searches(page)
    page.keyboard.press("Home")
    page.keyboard.press("Backspace")  # to the chip
    page.keyboard.press("Backspace")  # removes it; the search runs again without it
    page.wait_for_function("n => Number(document.documentElement.dataset.searches) > n", arg=before)
    chip_removed = page.locator("#chips .chip").count() == 0

    violations = page.evaluate("() => window.__violations")
    # The positive control: the listener does see a violation (an image from another host, which
    # img-src 'self' blocks before any request), so "0 violations" is a measurement, not a silence.
    record.allow_error(CONTROL_IMAGE)
    control = page.evaluate(POLICY_CONTROL, CONTROL_IMAGE)
    site_tabs.requests = [url for url in site_tabs.requests if url != CONTROL_IMAGE]
    probed: list[tuple[str, bool]] = []
    not_html: list[str] = []
    for path in HTML_PATHS:
        response = httpx.get(site.server.origin + path, timeout=30)
        if "text/html" in response.headers.get("content-type", ""):
            probed.append((path, _enforced(dict(response.headers))))
        else:
            not_html.append(f"{path} {response.status_code} {response.headers.get('content-type', '')}")
    everything = html + probed
    with_policy = sum(1 for _url, ok in everything if ok)
    steps = {
        "signed_in": True,
        "results": found,
        "cited": cited,
        "chip_added": chips,
        "chip_removed": chip_removed,
    }
    figure(
        tried=len(everything),
        failed=len(violations) + len(everything) - with_policy,
        securitypolicyviolation_events=len(violations),
        html_responses=len(everything),
        html_responses_with_the_enforced_policy=f"{with_policy}/{len(everything)} "
        f"({100 * with_policy // max(1, len(everything))}%)",
        browser_html_responses=len(html),
        probed_html_paths=[path for path, _ok in probed],
        probed_not_html=not_html,
        steps=steps,
        positive_control=f"{int(control)}/1",
    )
    assert control, "the securitypolicyviolation listener missed the control violation"
    assert violations == []
    assert html and with_policy == len(everything), [url for url, ok in everything if not ok]
    assert found and cited and chip_added and chip_removed, steps
    assert [e for e in record.errors if CONTROL_IMAGE not in e] == [], refused
