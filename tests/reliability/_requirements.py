"""The reliability and security promises, by requirement ID (spec/security-and-reliability.md §2).

In the manner of the MCP SDK's ``tests/interaction/_requirements.py``: one row per ID with the promise,
where the promise comes from, and the tests elsewhere in the suite that prove part of it already
(``also_proved_by``). Each proving test carries ``@pytest.mark.requirement("A4")``;
``test_requirements.py`` checks that every ID below has at least one, and that no test names an ID
that is not here. ``SECURITY.md``'s table is generated from these rows and the figures of the last run.

The proofs live in ``PROOF_MODULES``: every test module of ``tests/reliability``, and the browser
modules ``tests/browser/test_reliability_*.py`` for the promises that need Chromium (B2, B3). Those
stay in tests/browser because sync Playwright must run after every anyio test of a session, and
tests/browser is the folder that runs last. :func:`proof_tests` reads them all, from the modules
themselves (not from what one session collected), so the checks hold when only one file runs.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PROOF_MODULES", "REQUIREMENTS", "Requirement", "proof_tests", "requirement_marks"]

TESTS = Path(__file__).resolve().parents[1]
# (package under tests/, file pattern): where the proving tests are. Display names are relative to
# tests/reliability ("test_ssrf.py::test_x") or to tests/ ("browser/test_reliability_rendering.py::...").
PROOF_MODULES = (("reliability", "test_*.py"), ("browser", "test_reliability_*.py"))


@dataclass(frozen=True)
class Requirement:
    group: str
    promise: str
    source: str
    also_proved_by: tuple[str, ...] = ()


_SPEC = "spec/security-and-reliability.md §2"

REQUIREMENTS: dict[str, Requirement] = {
    "A1": Requirement(
        "Bad input",
        "The filter grammar never crashes, round-trips, and chips -> query -> chips is stable.",
        f"{_SPEC} A1; DESIGN decision 1",
        ("tests/unit/test_grammar_properties.py",),
    ),
    "A2": Requirement(
        "Bad input",
        "The grammar and the ai.search query decoder survive coverage-guided fuzzing (atheris).",
        f"{_SPEC} A2",
    ),
    "A3": Requirement(
        "Bad input",
        "Every operation of the OpenAPI document answers generated valid and invalid calls without a "
        "5xx, and within its documented responses.",
        f"{_SPEC} A3; schemathesis",
        ("tests/server/test_openapi_fuzz.py",),
    ),
    "A4": Requirement(
        "Bad input",
        "Hostile HTTP and JSON-RPC bodies (deep nesting, huge numbers, invalid UTF-8, 6 MiB...) get a "
        "clear 4xx, never a 5xx or a traceback; so does every parameter of the OAuth endpoints "
        "(/authorize, its sign-in and consent forms, /token, /revoke, /register) holding a quote, a "
        "backslash, DEL, non-ASCII, a bidi control, NUL, a lone surrogate or bytes that are no UTF-8.",
        f"{_SPEC} A4; MCP transports.mdx; third security review (issue 42: 15 500s on /authorize)",
        ("tests/server/test_mcp_endpoint.py::test_invalid_single_messages_get_400",),
    ),
    "A5": Requirement(
        "Bad input",
        "A string that is not Unicode text (a lone surrogate, undecodable query bytes) in any parameter "
        "of any route, REST or MCP, nested or as a key, is a 400 error-invalid-params (an isError tool "
        "result over MCP), never a 5xx or a -32603.",
        "security review 2026-12 (selector {\"name\": \"\\ud800\"}); RFC 8259 §8.2",
    ),
    "B1": Requirement(
        "Rendering",
        "The highlighter emits spans, never markup: the server's ranges and the page's runs stay in "
        "bounds, never overlap, and give back the original text, whatever the text and the query.",
        f"{_SPEC} B1; OWASP XSS prevention cheat sheet; bitrix24/b24ui#391",
        ("tests/server/test_search_terms.py",),
    ),
    "B2": Requirement(
        "Rendering",
        "No script runs from any sink of the page or the widget: hostile message texts, room and "
        "user names, queries, chips, suggestions, highlights, notices and LLM answers stay text; no "
        "injected JavaScript or Python runs, no dialog opens, no request leaves the site.",
        f"{_SPEC} B2; pyscript/pyscript#1396, #1435; OWASP LLM05",
        ("tests/browser/test_hostile_text.py",),
    ),
    "B3": Requirement(
        "Rendering",
        "The page works under its enforced CSP (no 'unsafe-eval', no 'unsafe-inline'): search, an "
        "answer and a chip edit raise no violation, and every HTML response carries the policy.",
        f"{_SPEC} B3; OWASP CSP cheat sheet",
        ("tests/server/test_security.py",),
    ),
    "B4": Requirement(
        "Rendering",
        "Prompt injection in retrieved messages cannot act or leak: no secret or foreign message "
        "reaches the client, no tool the model asks for runs, no URL the model emits is fetched.",
        f"{_SPEC} B4; OWASP LLM01, LLM05",
        (
            "tests/server/test_answers_route.py::test_an_injected_instruction_stays_inside_the_untrusted_sources_block",
            "tests/server/test_answers_route.py::test_model_output_reaches_the_client_as_inert_text",
        ),
    ),
    "B5": Requirement(
        "Rendering",
        "The server's configured secrets (LLM, pipeline, embeddings and served-pipeline keys) never "
        "reach a client nor the log, whatever an upstream hands back: answer text (JSON, streamed, a "
        "key split across chunks), model ids, MCP results and error bodies are redacted.",
        "security review 2026-12 (an LLM echoing its Authorization header); OWASP LLM02",
        ("tests/server/test_redaction.py",),
    ),
    "B6": Requirement(
        "Rendering",
        "Untrusted text cannot reorder the page: a bidi override, embedding or isolate left open in an "
        "answer reverses nothing after it (each control is isolated on its own), and the text keeps "
        "every character; nor does one in an OAuth client's name on the sign-in and consent pages "
        "(every name there sits in a bidi isolate).",
        "security review 2026-12 (U+202E in an answer); Unicode TR9 X5a-X6a; CVE-2021-42574; third "
        "security review (issue 42: a client name reversing the consent page)",
        ("tests/browser/test_web_pure.py::test_bidi_runs_isolate_every_formatting_character",),
    ),
    "B7": Requirement(
        "Rendering",
        "The feedback export cannot run in a spreadsheet: every CSV cell that starts with = + - @, a tab "
        "or a carriage return gets a leading ', every other cell and the JSON lines stay as stored.",
        "third security review 2026-12 (issue 42, finding 6: =HYPERLINK beside private answers); OWASP CSV Injection",
    ),
    "C1": Requirement(
        "Scoping",
        "No result, snippet, highlight, suggestion or count from a room the caller may not read, also "
        "right after an unsubscribe, even when the pipeline returns every room; keyword search counts "
        "words over the caller's rooms only, so what other rooms hold changes no keyword result, order "
        "or score.",
        f"{_SPEC} C1; DESIGN decision 3; OWASP LLM08; security review 2026-12 (issue 42 finding 4)",
        ("tests/server/test_search_scoping_property.py", "tests/server/test_keyword_statistics.py"),
    ),
    "C2": Requirement(
        "Scoping",
        "The LLM prompt and MCP tool results hold only messages the caller may read.",
        f"{_SPEC} C2",
    ),
    "C3": Requirement(
        "Scoping",
        "Scoping fails closed: a failing subscription lookup answers an error, a foreign room in a "
        "filter answers nothing.",
        f"{_SPEC} C3",
    ),
    "C4": Requirement(
        "Scoping",
        "Tokens: one user's token never works for another; tokens are unguessable; the client's "
        "credentials never travel upstream. OAuth: a code or error goes only to a redirect URI the "
        "client registered, compared as written but for an http loopback port, by the registration "
        "rule (no backslash, user information, bad port...); a code another client presents is spent "
        "and revokes what it gave; a token works on MCP only with the mcp scope (else 403 "
        "insufficient_scope). A Rocket.Chat sign-in (password or token, REST or MCP) is only ever the "
        "account the sync created for that Rocket.Chat id or an admin mapped it to.",
        f"{_SPEC} C4; MCP security best practices (token passthrough); third security review (issue 42: "
        "http://evil.example\\@127.0.0.1); RFC 6749 §4.1.2.1, §10.5; RFC 8252 §7.3; RFC 6750 §3.1",
        (
            "tests/server/test_rest_routes.py::test_a_token_only_works_with_its_own_user_id",
            "tests/server/test_oauth_store.py::test_a_code_another_client_presents_is_spent",
            "tests/server/test_rocketchat_sign_in.py",
        ),
    ),
    "C5": Requirement(
        "Scoping",
        "A DM's name cannot be taken over: no channel or group may share a name with any room (direct "
        "rooms included), nobody subscribes another person without the add-user-to-any-c-room "
        "permission, and a room name resolves only among the caller's rooms, a DM first, by every "
        "route that takes one (REST and MCP).",
        "security review 2026-12 (channels.create alice__grace); Rocket.Chat getValidRoomName",
        ("tests/server/test_store.py::test_a_name_resolves_only_among_the_callers_rooms_and_a_dm_first",),
    ),
    "C6": Requirement(
        "Scoping",
        "No room name may pass for another: names with invisible, format or bidi-control characters "
        "are refused, names are stored NFKC, and a name whose TR39 confusable skeleton meets an "
        "existing room's is refused without naming that room. An OAuth client's name follows the "
        "same character rules and is stored NFKC.",
        "security review 2026-12 (incidents\\u200b, ıncidents); Unicode TR39 §4, TR36; third security "
        "review (issue 42: a client name reversing the consent page)",
        ("tests/server/test_store.py::test_room_names_are_unique_and_unconfusable_across_all_rooms",),
    ),
    "C7": Requirement(
        "Scoping",
        "People: users.info and users.autocomplete follow one rule (a caller sees themself and the "
        "people who share a room they read), over REST and MCP, and a hidden person answers exactly as "
        "a name nobody has.",
        "security review 2026-12 (users.info as an enumeration oracle); OWASP authentication cheat sheet",
        ("tests/server/test_rest_routes.py::test_users_info_by_id_and_by_username",),
    ),
    "C8": Requirement(
        "Scoping",
        "Tokens end when they should: only a login session mints personal access tokens (so removing a "
        "leaked one is enough), logout refuses a personal access token instead of claiming to end it, "
        "and a session ends after 14 idle days or 90 days from the login (settings).",
        "security review 2026-12; OWASP session management cheat sheet; Rocket.Chat "
        "Accounts_LoginExpiration (90 days)",
    ),
    "C9": Requirement(
        "Scoping",
        "An import or a sync takes over no room and no account here: a person or conversation is "
        "matched only by the source's own id (linked by an earlier run) or an admin's mapping, never by "
        "name; what it did not create it never renames, deactivates or takes members out of, and one "
        "whose name is taken comes in under a name of its own.",
        "security review 2026-12 (issue 42: groups.json leadership, users.json alice deleted)",
        (
            "tests/server/test_import_mapping.py",
            "tests/server/test_store_sources.py::test_links_from_before_step_10_are_created_only_where_the_workspace_shows_it",
        ),
    ),
    "D1": Requirement(
        "SSRF",
        "Only configured upstreams are ever contacted, whatever URL-ish text a request, message or "
        "tool argument holds; bad outbound configuration is refused.",
        f"{_SPEC} D1; OWASP SSRF cheat sheet; DESIGN decision 7",
    ),
    "D2": Requirement(
        "SSRF",
        "Destinations are checked after resolution: decimal, hex, short, octal and IPv6-mapped forms "
        "of loopback, private and metadata addresses are refused.",
        f"{_SPEC} D2; python/cpython#113171",
        ("tests/server/test_outbound.py::test_non_public_destinations_are_refused_by_default",),
    ),
    "D3": Requirement(
        "SSRF",
        "Redirects are never followed and DNS rebinding cannot switch the checked address.",
        f"{_SPEC} D3",
        (
            "tests/server/test_outbound.py::test_redirects_are_refused_and_never_followed",
            "tests/server/test_outbound.py::test_rebinding_cannot_switch_the_checked_address",
        ),
    ),
    "D4": Requirement(
        "SSRF",
        "A setting that can never work (an origin without a scheme or with a wildcard, a base URL whose "
        "host is no valid domain name) stops start-up with a message naming the setting: never a raw "
        "exception, never a server that answers every request 500.",
        "security review 2026-12 (embed_allowed_origins '*', xn--localhost-.com); settings.py",
    ),
    "E1": Requirement(
        "Origin and Host",
        "Every Origin/Host rule holds on REST and MCP: 403 for a bad Origin, 421 for a bad Host; the "
        "server binds 127.0.0.1 by default.",
        f"{_SPEC} E1; MCP transports.mdx; upstream-mcp.md §8.4",
        ("tests/server/test_security.py", "tests/server/test_live_server.py::test_origin_rules_over_tcp"),
    ),
    "F1": Requirement(
        "Limits",
        "Request bodies are capped at 5 MiB (413), by length and by counting; a slow upload is cut at "
        "the 20 s body deadline (408).",
        f"{_SPEC} F1",
        ("tests/server/test_security.py::test_default_body_cap_is_5_mib",),
    ),
    "F2": Requirement(
        "Limits",
        "Upstream answers are capped at 5 MiB: a 50 MiB stream is cut after the cap plus one chunk.",
        f"{_SPEC} F2",
        ("tests/server/test_outbound.py::test_a_6_mib_body_is_cut_at_the_5_mib_cap",),
    ),
    "F3": Requirement(
        "Limits",
        "A 20 s total deadline holds against an upstream that drips or never answers.",
        f"{_SPEC} F3",
        ("tests/server/test_outbound.py::test_dripping_event_stream_is_cut_by_the_total_deadline",),
    ),
    "F4": Requirement(
        "Limits",
        "MCP batches hold at most 20 entries (21 refused before any work) and run at most 4 at once; "
        "outbound calls past the process cap wait briefly, then get 503.",
        f"{_SPEC} F4; upstream-mcp.md §8.2",
        ("tests/server/test_mcp_endpoint.py::test_batch_runs_at_most_four_at_once",),
    ),
    "F5": Requirement(
        "Limits",
        "60 requests a minute per key, answered 429 with Retry-After; spoofed X-Forwarded-For and "
        "bogus tokens mint no new budgets, and failed authentications (API tokens and the served "
        "pipeline's X-API-KEY pair alike) spend the address's own (10 a minute, then 429 before any "
        "credential is checked).",
        f"{_SPEC} F5; upstream-mcp.md §8.1",
        ("tests/server/test_ratelimit.py",),
    ),
    "F6": Requirement(
        "Limits",
        "Idle connections cannot hold the server: the head deadline runs from a connection's opening "
        "(a silent one is closed at it), and past the connection cap (max_connections, else what the "
        "descriptor limit leaves) the longest-idle connection makes room, so 300 idle sockets under a "
        "256-descriptor limit leave every real request served.",
        "security review 2026-12 (300 idle sockets, ECONNRESET); CWE-400 (slowloris)",
    ),
    "F7": Requirement(
        "Limits",
        "A hostile Rocket.Chat cannot make the sync page for ever: a listing reads no further than its "
        "first page's total (at most 1,000,000 items) and stops at a page whose offset is not the one "
        "asked for, that holds more than asked for or nothing new; a message cursor that does not move "
        "stops, a room reads at most 10,000 cursor pages a run; the report says which and why, and a "
        "cut listing changes no membership and takes no room for gone. The sync's admin token need not "
        "be on a command line (--token-file, --token -, AI_SEARCH_ROCKETCHAT_TOKEN); --token VALUE warns "
        "that every user of the machine can read it.",
        "third security review 2026-12 (issue 42, finding 8: total 10**12 created 59,700 users in 100 s; "
        "--token in the process list)",
        ("tests/server/test_rocketchat_token.py",),
    ),
    "F8": Requirement(
        "Limits",
        "An export archive is bounded in total, not only per member: 32 GiB decompressed, 100 times the "
        "archive's size past 64 MiB, 1,000,000 files; large JSON members are read an item at a time. A "
        "bomb or a damaged archive imports what came before, says why the rest is missing, and shows no "
        "traceback.",
        "third security review 2026-12 (issue 42, finding 7: a 261 KB zip reached 838 MB, a 2 MB tar.gz "
        "wrote 2 GiB, zlib.error as a traceback); CWE-409",
        ("tests/server/test_import_formats.py",),
    ),
    "G1": Requirement(
        "Load and soak",
        "Sustained load on search and MCP over loopback: no errors; requests/s and p99 reported.",
        f"{_SPEC} G1",
    ),
    "G2": Requirement(
        "Load and soak",
        "A soak of mixed traffic keeps memory and file descriptors flat, with no 5xx.",
        f"{_SPEC} G2",
    ),
    "H1": Requirement(
        "Faults",
        "Pipeline down, erroring or hanging: search degrades with a notice within the deadline, leaks "
        "no traceback, and recovers on the first request after the fault clears.",
        f"{_SPEC} H1",
        (
            "tests/server/test_search_remote.py::test_a_misbehaving_semantic_branch_degrades_to_keyword_results",
        ),
    ),
    "H2": Requirement(
        "Faults",
        "A slow LLM ends the answer by its deadline with a clear error while search still answers.",
        f"{_SPEC} H2",
        ("tests/server/test_answers_route.py::test_provider_failures_before_any_text_are_json_errors",),
    ),
    "H3": Requirement(
        "Faults",
        "Garbage and partial answers from the LLM or the pipeline give documented errors, never a "
        "5xx with a traceback, and a cut answer never passes for a whole one; Redis gone degrades "
        "rate limits to local budgets.",
        f"{_SPEC} H3",
        (
            "tests/server/test_answers_route.py::test_a_failure_after_the_first_text_ends_the_stream_with_an_error_event",
            "tests/server/test_ratelimit.py::test_redis_outage_falls_back_to_local_budgets_and_recovers",
        ),
    ),
    "I1": Requirement(
        "Data safety",
        "kill -9 during posting and importing: no corrupt database, no acknowledged write lost, "
        "re-import completes without duplicates.",
        f"{_SPEC} I1; SQLite WAL",
    ),
    "I2": Requirement(
        "Data safety",
        "Concurrent writers never surface 'database is locked'; a full disk answers 503 "
        "error-service-unavailable and writes resume once space is freed.",
        f"{_SPEC} I2",
        ("tests/server/test_store.py::test_a_full_database_fails_clearly_and_recovers",),
    ),
}


def proof_tests() -> Iterator[tuple[str, Callable[..., Any]]]:
    """(display name, function) of every ``test_*`` function of ``PROOF_MODULES``."""
    for package, pattern in PROOF_MODULES:
        for path in sorted((TESTS / package).glob(pattern)):
            module = importlib.import_module(f"tests.{package}.{path.stem}")
            prefix = "" if package == "reliability" else f"{package}/"
            for name, function in inspect.getmembers(module, inspect.isfunction):
                if name.startswith("test_") and function.__module__ == module.__name__:
                    yield f"{prefix}{path.name}::{name}", function


def requirement_marks() -> Iterator[tuple[str, str]]:
    """(display name, requirement ID) for every ``requirement`` mark of the proving tests."""
    for test, function in proof_tests():
        for mark in getattr(function, "pytestmark", []):
            if mark.name == "requirement":
                yield test, mark.args[0]
