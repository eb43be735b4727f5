"""A. Bad input: the grammar and every route survive generated, fuzzed and hostile input.

A1 hypothesis over the grammar (any text; generated queries; chips), A2 atheris on the grammar and
the ai.search query decoder (a subprocess per target), A3 schemathesis over every operation of the
served OpenAPI document, A4 a corpus of hostile HTTP and JSON-RPC bodies, in-process and over TCP.
Known product bugs are listed in ``KNOWN_BUGS`` entries: they still run and count in the figures,
and each has its own strict xfail test, so a fix shows up as an XPASS to clean up.
"""

from __future__ import annotations

import json
import logging
import os
import re
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import checks as st_checks
from schemathesis.generation import GenerationMode
from starlette.applications import Starlette

from ai_search import (
    apply_search_filter_token,
    build_applied_filter_chips,
    extract_completed_search_filters,
    get_active_search_filter,
    parse_search_filter_text,
    serialize_search_query,
)
from ai_search_server.app import create_app
from ai_search_server.mcp import MCP_PATH
from ai_search_server.routes import all_routes
from ai_search_server.routes.search import MAX_QUERY_LINE_CHARS
from ai_search_server.store.base import Store
from tests.server.conftest import BASE_URL, Workspace
from tests.unit.test_grammar_properties import _FRAGMENTS, QUERY_LIKE_TEXT, valid_queries

from ._servers import ServedApp, raw_exchange
from .conftest import Figure, reliability_settings

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024


@dataclass(frozen=True)
class Scale:
    """How much of each kind of input one run tries."""

    hypothesis_examples: int  # per grammar property
    fuzz_seconds: int  # per atheris target
    schemathesis_examples: int  # per operation and generation mode


DEFAULT = Scale(hypothesis_examples=400, fuzz_seconds=3, schemathesis_examples=3)
SOAK = Scale(hypothesis_examples=10_000, fuzz_seconds=600, schemathesis_examples=200)
SCALES = [
    pytest.param(DEFAULT, id="default"),
    pytest.param(SOAK, id="soak", marks=[pytest.mark.soak, pytest.mark.timeout(3600)]),
]


# -- A1: the grammar under hypothesis -----------------------------------------------------------

# Long lines of query-like fragments, up to the longest `q` the API takes.
LONG_QUERY_TEXT = st.lists(_FRAGMENTS | st.text(max_size=4), max_size=1500).map(
    lambda parts: "".join(parts)[:MAX_QUERY_LINE_CHARS]
)


@dataclass
class Tally:
    """Runs and failures of one property, with the first failing example of each kind."""

    runs: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    slowest_ms: float = 0.0

    def check(self, kind: str, body: Callable[[], None], example: object) -> None:
        self.runs += 1
        start = time.perf_counter()
        try:
            body()
        except AssertionError as exc:
            self.failures[kind] += 1
            self.examples.setdefault(kind, f"{example!r}: {exc}"[:300])
        except Exception as exc:
            self.failures["exception"] += 1
            self.examples.setdefault("exception", f"{example!r}: {type(exc).__name__}: {exc}"[:300])
        self.slowest_ms = max(self.slowest_ms, (time.perf_counter() - start) * 1000)


def _no_crash(text: str, caret: int) -> None:
    parse_search_filter_text(text)
    extract_completed_search_filters(text)
    active = get_active_search_filter(text, caret)
    apply_search_filter_token(text, active, "from", "alice", caret)


def _round_trip(query: tuple[str, Any]) -> None:
    search_text, filters = query
    parsed = parse_search_filter_text(serialize_search_query(search_text, filters))
    assert (parsed.search_text, parsed.filters) == (search_text, filters), "round-trip mismatch"


def _chips_stable(query: tuple[str, Any]) -> None:
    search_text, filters = query
    chips = build_applied_filter_chips(filters)
    parsed = parse_search_filter_text(serialize_search_query(search_text, filters))
    assert build_applied_filter_chips(parsed.filters) == chips, "chips changed through the query line"


def _canonical(text: str) -> None:
    parsed = parse_search_filter_text(text)
    again = parse_search_filter_text(serialize_search_query(parsed.search_text, parsed.filters))
    assert again == parsed, "parse(serialize(parse(x))) != parse(x)"


@pytest.mark.requirement("A1")
@pytest.mark.parametrize("scale", SCALES)
def test_the_grammar_never_crashes_and_round_trips(scale: Scale, figure: Figure) -> None:
    tally = Tally()
    hypothesis_settings = settings(
        max_examples=scale.hypothesis_examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )

    @hypothesis_settings
    @given(QUERY_LIKE_TEXT | LONG_QUERY_TEXT, st.integers(min_value=-2, max_value=MAX_QUERY_LINE_CHARS + 2))
    def any_text(text: str, caret: int) -> None:
        tally.check("exception", lambda: _no_crash(text, caret), text)
        tally.check("canonical", lambda: _canonical(text), text)

    @hypothesis_settings
    @given(valid_queries())
    def generated_queries(query: tuple[str, Any]) -> None:
        tally.check("round-trip", lambda: _round_trip(query), query)
        tally.check("chips", lambda: _chips_stable(query), query)

    any_text()
    generated_queries()
    failed = sum(tally.failures.values())
    figure(
        tried=tally.runs,
        failed=failed,
        unexpected_exceptions=tally.failures["exception"],
        round_trip_mismatches=tally.failures["round-trip"] + tally.failures["chips"],
        canonical_mismatches=tally.failures["canonical"],
        slowest_parse_ms=tally.slowest_ms,
    )
    assert failed == 0, tally.examples


@pytest.mark.requirement("A1")
@pytest.mark.parametrize("text", ['in:"a from:b,c"d e"', 'in:"x from:@al,y"z w"'])
def test_words_never_become_a_filter_on_a_round_trip(text: str) -> None:
    _canonical(text)


# -- A2: atheris ----------------------------------------------------------------------------------

_DONE_LINE = re.compile(r"#(\d+)\s+DONE.*?rss: (\d+)Mb")
_STATUS_LINE = re.compile(r"#(\d+)\s+\w+.*?rss: (\d+)Mb")


# What libFuzzer prints when the process exits inside a unit (here: at -max_total_time).
_EXITED_AT_BUDGET = "libFuzzer: fuzz target exited"
# Seconds one artifact may take when run again on its own.
REPRODUCE_SECONDS = 120


def _reproduces(target: str, artifact: Path, env: dict[str, str]) -> bool:
    """Whether ``artifact`` fails the ``target`` again in a fresh process (an exception, or more CPU
    than the slow-input limit): the triage that tells a product crash from a harness exit."""
    check = (
        "import sys, time\n"
        "from tests.reliability._fuzz_targets import SLOW_INPUT_SECONDS, TARGETS\n"
        f"run = TARGETS[{target!r}]()\n"
        f"data = open({str(artifact)!r}, 'rb').read()\n"
        "start = time.process_time()\n"
        "run(data)\n"
        "sys.exit(3 if time.process_time() - start > SLOW_INPUT_SECONDS else 0)\n"
    )
    again = subprocess.run(
        [sys.executable, "-c", check], cwd=ROOT, env=env, capture_output=True, timeout=REPRODUCE_SECONDS
    )
    return again.returncode != 0


# libFuzzer's -rss_limit_mb reads the peak RSS of its process, which Linux carries over from the
# forking parent (a long test session can hold gigabytes). The fuzzer is started by a small process
# of its own, so the peak it reads is the fuzzer's alone.
_FRESH_PEAK = [sys.executable, "-c", "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"]


@pytest.mark.requirement("A2")
@pytest.mark.parametrize("target", ["grammar", "query"])
@pytest.mark.parametrize("scale", SCALES)
def test_fuzzed_parsers_never_crash_nor_stall(
    target: str, scale: Scale, tmp_path: Path, figure: Figure
) -> None:
    pytest.importorskip("atheris", reason="atheris is not installed (dev extra: atheris==3.0.0)")
    stats_file = tmp_path / "stats.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "py"), str(ROOT)])}
    command = [
        sys.executable,
        "-m",
        "tests.reliability._fuzz_targets",
        target,
        str(stats_file),
        str(tmp_path / "corpus"),
        f"-max_total_time={scale.fuzz_seconds}",
        "-timeout=0",  # our own CPU clock counts slow inputs; libFuzzer's SIGALRM would kill at exit
        "-rss_limit_mb=2048",
        f"-max_len={MAX_QUERY_LINE_CHARS * 4}",
        f"-artifact_prefix={tmp_path}/",
        "-print_final_stats=1",
    ]
    done = subprocess.run(
        [*_FRESH_PEAK, *command],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=scale.fuzz_seconds + 120,
    )
    output = done.stdout + done.stderr
    stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    artifacts = [p for p in tmp_path.iterdir() if p.name.startswith(("crash-", "oom-", "timeout-"))]
    crashes = [p.name for p in artifacts if _reproduces(target, p, env)]
    # libFuzzer can end at its time budget while a unit runs ("fuzz target exited"), which it files
    # as a crash; such an input, run again on its own, passes. Counted apart, never as a crash.
    budget_exits = len(artifacts) - len(crashes) if _EXITED_AT_BUDGET in output else 0
    clean_exit = done.returncode == 0 or (budget_exits == len(artifacts) > 0)
    found = _DONE_LINE.findall(output) or _STATUS_LINE.findall(output)
    execs = int(found[-1][0]) if found else int(stats.get("execs", 0))
    violations = int(stats.get("violations", 0))
    failed = len(crashes) + (not clean_exit) + int(stats.get("slow", 0)) + violations
    figure(
        tried=execs,
        failed=failed,
        target=target,
        seconds=scale.fuzz_seconds,
        crashes=len(crashes),
        timeouts_over_100ms=int(stats.get("slow", 0)),
        slowest_input_ms=stats.get("slowest_ms"),
        peak_rss_mib=int(found[-1][1]) if found else None,
        canonical_form_violations=violations,
        violation_examples=stats.get("violation_examples", [])[:2],
        exit_code=done.returncode,
        exits_at_the_time_budget=budget_exits,
    )
    assert execs > 0, output[-3000:]
    assert (crashes, clean_exit) == ([], True), output[-3000:]
    assert stats.get("slow", 0) == 0, stats
    # The A1 property under coverage guidance: the full texts are in the figure's examples.
    assert violations == 0, stats.get("violation_examples")


# -- A3: schemathesis over the OpenAPI document ---------------------------------------------------

OPERATIONS = [(r.method, r.path) for r in all_routes()]
# Generated calls per operation and mode for the conformance check: it fails on the first operations.
CONFORMANCE_EXAMPLES = 3
# Status codes a generated call may get: the refusals every route can give (the OpenAPI document lists
# each operation's own, checked by test_every_answer_is_one_the_document_describes).
_EXPECTED_REFUSALS = {400, 401, 403, 404, 413, 429}


def fuzz_app(store: Store) -> Starlette:
    """The real app without rate limits: generated calls probe the handlers, not the limiter (F5)."""
    return create_app(reliability_settings(), store, limiter=None)


def _run_operations(
    app: Starlette,
    headers: dict[str, str],
    examples: int,
    check: Callable[[Any, Any], list[str]],
) -> tuple[Counter[str], dict[str, str], int, int]:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    problems: Counter[str] = Counter()
    first: dict[str, str] = {}
    cases = covered = 0
    for method, path in OPERATIONS:
        operation = schema[path][method.lower()]
        before = cases
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
            )
            def call(case: Any) -> None:
                nonlocal cases
                cases += 1
                response = case.call(headers=headers)
                for problem in check(case, response):
                    key = f"{case.method} {case.path}: {problem}"
                    problems[key] += 1
                    first.setdefault(key, case.as_curl_command(headers=headers)[:300])

            call()
        covered += cases > before
    return problems, first, cases, covered


def _server_errors(case: Any, response: Any) -> list[str]:
    text = response.text
    found = []
    if response.status_code >= 500:
        found.append(f"HTTP {response.status_code}")
    if "Traceback (most recent call last)" in text:
        found.append("traceback in the body")
    if response.status_code >= 400 and response.status_code not in _EXPECTED_REFUSALS:
        found.append(f"unexpected refusal {response.status_code}")
    return found


def _conformance(case: Any, response: Any) -> list[str]:
    conformance = [
        st_checks.status_code_conformance,
        st_checks.content_type_conformance,
        st_checks.response_schema_conformance,
    ]
    try:
        case.validate_response(response, checks=conformance)
    except BaseException as exc:  # schemathesis raises a BaseExceptionGroup of failures
        return [f"{type(sub).__name__} {response.status_code}" for sub in getattr(exc, "exceptions", [exc])]
    return []


@pytest.mark.requirement("A3")
@pytest.mark.parametrize("scale", SCALES)
def test_no_generated_call_gets_a_server_error(
    store: Store, workspace: Workspace, scale: Scale, figure: Figure
) -> None:
    problems, first, cases, covered = _run_operations(
        fuzz_app(store), workspace["alice"].pat_headers, scale.schemathesis_examples, _server_errors
    )
    figure(
        tried=cases,
        failed=sum(problems.values()),
        operations_covered=covered,
        operations_total=len(OPERATIONS),
        server_errors=sum(v for k, v in problems.items() if "HTTP 5" in k),
    )
    assert covered == len(OPERATIONS)
    assert not problems, {k: (v, first[k]) for k, v in problems.items()}


@pytest.mark.requirement("A3")
def test_every_answer_is_one_the_document_describes(
    store: Store, workspace: Workspace, figure: Figure
) -> None:
    problems, first, cases, _covered = _run_operations(
        fuzz_app(store), workspace["alice"].pat_headers, CONFORMANCE_EXAMPLES, _conformance
    )
    figure(tried=cases, failed=sum(problems.values()), schema_violations=dict(problems))
    assert not problems, {k: (v, first[k]) for k, v in problems.items()}


@pytest.mark.requirement("A3")
@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "body"),
    [
        pytest.param("/api/v1/channels.create", {"name": "ops\x01"}, id="room-name"),
        pytest.param("/api/v1/users.generatePersonalAccessToken", {"tokenName": "ci\x00"}, id="token-label"),
    ],
)
async def test_schema_valid_input_the_store_refuses_is_refused_by_validation(
    client: httpx.AsyncClient,
    workspace: Workspace,
    caplog: pytest.LogCaptureFixture,
    path: str,
    body: dict[str, Any],
) -> None:
    with caplog.at_level(logging.ERROR):
        response = await client.post(path, json=body, headers=workspace["carol"].pat_headers)
    assert response.status_code == 400
    assert "unhandled store error" not in caplog.text


# -- A4: hostile bodies ---------------------------------------------------------------------------

ANSWER = "/api/v1/ai.search.answer"
POST = "/api/v1/chat.postMessage"
DEEP = 10_000


@dataclass(frozen=True)
class Hostile:
    """One hostile request and what it must get: a status in ``statuses``, and for JSON-RPC a code."""

    name: str
    method: str
    path: str
    body: bytes | None = None
    statuses: frozenset[int] = frozenset({400})
    code: int | None = None
    headers: tuple[tuple[str, str], ...] = ()
    bug: str | None = None


def _rpc(message: str | bytes) -> bytes:
    return message.encode() if isinstance(message, str) else message


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


_V2025_11 = (("MCP-Protocol-Version", "2025-11-25"),)
_PLAIN_TEXT = (("Content-Type", "text/plain"),)
_FORM = (("Content-Type", "application/x-www-form-urlencoded"),)
_NOT_5XX = frozenset({200, 400, 415})

CORPUS: list[Hostile] = [
    # REST bodies
    Hostile("rest-array-nested-10000-deep", "POST", POST, b"[" * DEEP + b"]" * DEEP),
    Hostile("rest-object-nested-10000-deep", "POST", POST, b'{"a":' * DEEP + b"1" + b"}" * DEEP),
    Hostile("rest-number-1e400", "POST", POST, b'{"channel":"#general","text":1e400}'),
    Hostile("rest-score-1e400", "POST", ANSWER, b'{"query":"x","messages":[{"_id":"a","score":1e400}]}'),
    Hostile("rest-integer-of-5000-digits", "POST", POST, b'{"channel":"#general","text":' + b"9" * 5000 + b"}"),
    Hostile("rest-invalid-utf8", "POST", POST, b'{"channel":"#general","text":"\xff\xfe\xc3"}'),
    Hostile("rest-lone-surrogate", "POST", POST, b'{"channel":"#general","text":"x\\ud800y"}'),
    Hostile("rest-lone-surrogate-login", "POST", "/api/v1/login", b'{"user":"\\udfff","password":"\\ud800"}'),
    Hostile("rest-nan-literal", "POST", POST, b'{"channel":"#general","text":NaN}'),
    Hostile("rest-duplicate-keys-last-wins", "POST", POST, b'{"channel":"#general","text":"a","text":"b"}',
            statuses=frozenset({200})),
    Hostile("rest-json-array-body", "POST", POST, b"[]"),
    Hostile("rest-json-null-body", "POST", POST, b"null"),
    Hostile("rest-form-encoded-body", "POST", POST, b"channel=%23general&text=x", headers=_FORM),
    Hostile("rest-text-plain-json", "POST", POST, b'{"channel":"#general","text":"x"}', statuses=_NOT_5XX,
            headers=_PLAIN_TEXT),
    Hostile("rest-message-over-5000-chars", "POST", POST, _json({"channel": "#general", "text": "x" * 5001})),
    Hostile("rest-20001-sources", "POST", ANSWER, _json({"query": "x", "messages": [{"_id": "a"}] * 20001})),
    Hostile("rest-6-mib-body", "POST", POST, b'{"text":"' + b"x" * (6 * MIB) + b'"}', statuses=frozenset({413})),
    Hostile("rest-empty-body", "POST", POST, b""),
    # REST query strings
    Hostile("query-selector-nested-1000-deep", "GET", "/api/v1/users.autocomplete?selector=" + "%5B" * 1000),
    Hostile("query-selector-1e400", "GET", "/api/v1/users.autocomplete?selector=%7B%22term%22%3A1e400%7D"),
    # Query bytes that are not UTF-8 are refused (400 naming the parameter), never searched as U+FFFD.
    Hostile("query-invalid-utf8", "GET", "/api/v1/ai.search?q=%FF%FEdeploy"),
    Hostile("query-lone-surrogate-utf8", "GET", "/api/v1/chat.getMessage?msgId=%ED%A0%80"),
    Hostile("query-repeated-parameter", "GET", "/api/v1/ai.search?q=a&q=b"),
    Hostile("query-count-1e400", "GET", "/api/v1/ai.search?query=x&intelligentCount=1e400"),
    Hostile("query-count-nan", "GET", "/api/v1/ai.search?query=x&intelligentCount=NaN"),
    Hostile("query-over-4096-chars", "GET", "/api/v1/ai.search?q=" + "a" * 5000),
    # JSON-RPC bodies
    Hostile("rpc-nested-10000-deep", "POST", MCP_PATH, b"[" * DEEP + b"]" * DEEP, code=-32700),
    Hostile("rpc-invalid-utf8", "POST", MCP_PATH, b'{"jsonrpc":"2.0","id":1,"method":"\xff"}', code=-32700),
    Hostile("rpc-nan-id", "POST", MCP_PATH, b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}', code=-32700),
    Hostile("rpc-integer-id-of-5000-digits", "POST", MCP_PATH,
            b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}', code=-32700),
    Hostile("rpc-id-1e400", "POST", MCP_PATH, b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
            statuses=frozenset({200, 400})),
    Hostile("rpc-lone-surrogate-id", "POST", MCP_PATH, b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
            statuses=frozenset({200, 400})),
    Hostile("rpc-lone-surrogate-method", "POST", MCP_PATH, b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}',
            statuses=frozenset({200}), code=-32601),
    Hostile("rpc-duplicate-keys", "POST", MCP_PATH, b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}',
            statuses=frozenset({200})),
    Hostile("rpc-text-plain", "POST", MCP_PATH, _rpc('{"jsonrpc":"2.0","id":1,"method":"ping"}'),
            statuses=_NOT_5XX, headers=_PLAIN_TEXT),
    Hostile("rpc-batch-at-2025-11-25", "POST", MCP_PATH, _rpc('[{"jsonrpc":"2.0","id":1,"method":"ping"}]'),
            code=-32600, headers=_V2025_11),
    Hostile("rpc-empty-batch", "POST", MCP_PATH, b"[]", code=-32600),
    Hostile("rpc-batch-of-21", "POST", MCP_PATH,
            _json([{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in range(21)]), code=-32600),
    Hostile("rpc-missing-id-is-a-notification", "POST", MCP_PATH, _rpc('{"jsonrpc":"2.0","method":"ping"}'),
            statuses=frozenset({202})),
    Hostile("rpc-null-id", "POST", MCP_PATH, _rpc('{"jsonrpc":"2.0","id":null,"method":"ping"}'), code=-32600),
    Hostile("rpc-unknown-method", "POST", MCP_PATH, _rpc('{"jsonrpc":"2.0","id":1,"method":"x/y"}'),
            statuses=frozenset({200}), code=-32601),
    Hostile("rpc-tool-name-of-wrong-type", "POST", MCP_PATH,
            _rpc('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}'),
            statuses=frozenset({200}), code=-32602),
    Hostile("rpc-arguments-of-wrong-type", "POST", MCP_PATH,
            _rpc('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_me","arguments":[1]}}'),
            statuses=frozenset({200}), code=-32602),
    Hostile("rpc-params-as-array", "POST", MCP_PATH, _rpc('{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}'),
            code=-32600),
    Hostile("rpc-version-1", "POST", MCP_PATH, _rpc('{"jsonrpc":"1.0","id":1,"method":"ping"}'), code=-32600),
    Hostile("rpc-null-body", "POST", MCP_PATH, b"null", code=-32600),
    Hostile("rpc-arguments-nested-500-deep", "POST", MCP_PATH,
            _rpc('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_chat_getMessage",'
                 '"arguments":{"msgId":' + "[" * 500 + "]" * 500 + "}}}"),
            statuses=frozenset({200})),
    Hostile("rpc-6-mib-body", "POST", MCP_PATH, b'{"x":"' + b"x" * (6 * MIB) + b'"}', statuses=frozenset({413}),
            code=-32000),
]  # fmt: skip


def _strict_json(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


@dataclass
class Outcome:
    status: int
    problems: list[str]


async def _send(client: httpx.AsyncClient, case: Hostile, auth: dict[str, str]) -> Outcome:
    headers = {**auth, "Content-Type": "application/json", "Accept": "application/json"}
    headers.update(dict(case.headers))
    response = await client.request(case.method, case.path, content=case.body, headers=headers)
    problems = []
    if response.status_code not in case.statuses:
        problems.append(f"status {response.status_code}, expected {sorted(case.statuses)}")
    if "Traceback" in response.text or 'File "' in response.text:
        problems.append("a traceback in the body")
    if response.status_code != 202:
        try:
            body = _strict_json(response.text)
        except ValueError:
            problems.append(f"the body is not strict JSON: {response.text[:120]!r}")
        else:
            if case.code is not None:
                code = (body.get("error") or {}).get("code") if isinstance(body, dict) else None
                if code != case.code:
                    problems.append(f"JSON-RPC code {code}, expected {case.code}")
    return Outcome(response.status_code, problems)


def _asgi_client(app: Starlette) -> httpx.AsyncClient:
    # raise_app_exceptions=False: an unhandled exception becomes the 500 a real server would send.
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000), raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url=BASE_URL)


def _peak_rss_kib() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


@pytest.mark.requirement("A4")
@pytest.mark.anyio
async def test_hostile_bodies_get_a_clear_refusal(store: Store, workspace: Workspace, figure: Figure) -> None:
    app = create_app(reliability_settings(), store, limiter=None)
    rss_before = _peak_rss_kib()
    results: dict[str, Outcome] = {}
    async with _asgi_client(app) as client:
        for case in CORPUS:
            results[case.name] = await _send(client, case, workspace["alice"].pat_headers)
    failing = {name: o.problems for name, o in results.items() if o.problems}
    known = {case.name for case in CORPUS if case.bug}
    rpc_cases = [case for case in CORPUS if case.code is not None]
    figure(
        tried=len(CORPUS),
        failed=len(failing),
        server_errors=sum(o.status >= 500 for o in results.values()),
        tracebacks_in_bodies=sum(any("traceback" in p for p in o.problems) for o in results.values()),
        jsonrpc_codes_as_expected=f"{sum(not results[c.name].problems for c in rpc_cases)}/{len(rpc_cases)}",
        known_bugs=sorted(known & set(failing)),
        peak_rss_delta_mib=(_peak_rss_kib() - rss_before) / 1024,
    )
    unexpected = {name: problems for name, problems in failing.items() if name not in known}
    assert unexpected == {}


@pytest.mark.requirement("A4")
@pytest.mark.anyio
@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.name, marks=pytest.mark.xfail(strict=True, reason=c.bug)) for c in CORPUS if c.bug],
)
async def test_known_hostile_body_bugs(store: Store, workspace: Workspace, case: Hostile) -> None:
    """One strict xfail per corpus entry marked ``bug=``: a fix shows up as an XPASS to clean up.
    (With no known bug the parameter set is empty and pytest skips it.)"""
    app = create_app(reliability_settings(), store, limiter=None)
    async with _asgi_client(app) as client:
        outcome = await _send(client, case, workspace["alice"].pat_headers)
    assert outcome.problems == []


# Malformed HTTP that no client library sends, against the real server: uvicorn's parser answers.
_REFUSED = frozenset(range(400, 500))
_HOST = b"Host: 127.0.0.1\r\n"


@dataclass(frozen=True)
class RawRequest:
    name: str
    data: bytes
    statuses: frozenset[int] = _REFUSED
    bug: str | None = None


RAW_REQUESTS = [
    RawRequest("no-request-line", b"GARBAGE\r\n\r\n"),
    # The head cap (serving.MAX_REQUEST_HEAD_BYTES, 64 KiB): a head under it is served, one over it is
    # refused 431 whether it arrives whole or is still coming (8 MiB is never read to its end).
    RawRequest("60-kb-header", b"GET / HTTP/1.1\r\n" + _HOST + b"X-Big: " + b"a" * 60_000 + b"\r\n\r\n",
               statuses=frozenset({200})),
    RawRequest("70-kb-header", b"GET / HTTP/1.1\r\n" + _HOST + b"X-Big: " + b"a" * 70_000 + b"\r\n\r\n",
               statuses=frozenset({431})),
    RawRequest("8-mib-of-headers", b"GET / HTTP/1.1\r\n" + _HOST + b"X-Big: " + b"a" * (8 * MIB) + b"\r\n\r\n",
               statuses=frozenset({431})),
    RawRequest("10000-small-headers", b"GET / HTTP/1.1\r\n" + _HOST + b"X-A: b\r\n" * 10_000 + b"\r\n",
               statuses=frozenset({431})),
    RawRequest("length-not-a-number", b"POST /api/v1/login HTTP/1.1\r\n" + _HOST + b"Content-Length: abc\r\n\r\n{}"),
    RawRequest("bad-chunk-size", b"POST /api/v1/login HTTP/1.1\r\n" + _HOST
               + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"),
    RawRequest("length-and-chunked", b"POST /api/v1/login HTTP/1.1\r\n" + _HOST
               + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    RawRequest("non-ascii-auth-headers", b"GET /api/v1/me HTTP/1.1\r\n" + _HOST
               + b"X-User-Id: \xff\xfe\r\nX-Auth-Token: \x80\r\n\r\n"),
    RawRequest("dot-dot-path", b"GET /api/v1/../../etc/passwd HTTP/1.1\r\n" + _HOST + b"\r\n"),
    RawRequest("nul-in-path", b"GET /%00%ff HTTP/1.1\r\n" + _HOST + b"\r\n"),
]  # fmt: skip


def _raw_statuses(store: Store, requests: list[RawRequest]) -> tuple[dict[str, int | None], bool]:
    settings = reliability_settings(site_url="http://127.0.0.1:8000", allowed_hosts=["127.0.0.1"])
    statuses: dict[str, int | None] = {}
    with ServedApp(create_app(settings, store, limiter=None)) as server:
        for request in requests:
            match = re.match(rb"HTTP/1\.[01] (\d{3})", raw_exchange(server.port, request.data))
            statuses[request.name] = int(match.group(1)) if match else None
        alive = httpx.get(f"{server.url}/openapi.json", headers={"Host": "127.0.0.1"}).status_code == 200
    return statuses, alive


@pytest.mark.requirement("A4")
def test_malformed_http_gets_a_4xx_from_the_real_server(store: Store, figure: Figure) -> None:
    statuses, alive = _raw_statuses(store, RAW_REQUESTS)
    wrong = {r.name: statuses[r.name] for r in RAW_REQUESTS if statuses[r.name] not in r.statuses}
    figure(
        tried=len(statuses),
        failed=len(wrong),
        statuses=statuses,
        known_bugs=sorted(r.name for r in RAW_REQUESTS if r.bug and r.name in wrong),
        server_alive_after=alive,
    )
    assert {name: status for name, status in wrong.items() if not _raw_bug(name)} == {}
    assert alive


def _raw_bug(name: str) -> str | None:
    return next(r.bug for r in RAW_REQUESTS if r.name == name)


@pytest.mark.requirement("A4")
@pytest.mark.parametrize(
    "request_case",
    [
        pytest.param(r, id=r.name, marks=pytest.mark.xfail(strict=True, reason=r.bug))
        for r in RAW_REQUESTS
        if r.bug
    ],
)
def test_known_malformed_http_bugs(store: Store, request_case: RawRequest) -> None:
    statuses, _alive = _raw_statuses(store, [request_case])
    assert statuses[request_case.name] in request_case.statuses
