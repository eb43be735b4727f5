"""Coverage-guided fuzz targets (atheris/libFuzzer) for A2; run one per process::

    python -m tests.reliability._fuzz_targets grammar STATS.json CORPUS_DIR -max_total_time=10

``grammar``: the filter grammar as the page and the server run it: parse, the completed filters,
the token under a caret, applying a suggestion, and the canonical-form property
``parse(serialize(parse(x))) == parse(x)``. Any exception is a crash.

A text whose canonical form re-parses differently is counted as a property violation (the A1
property, which test_bad_input asserts after the run), not a crash, so the run goes on looking for
crashes; the first few such texts are kept whole, to be replayed.

``query``: the ``ai.search`` query-string decoder: raw bytes as a query string, decoded by Starlette,
validated against the route's two parameter variants and turned into a search request. Only
``errors.InvalidParams`` is an expected refusal; anything else is a crash.

Inputs are capped at ``MAX_QUERY_LINE_CHARS`` (the longest ``q`` the API takes). Each target writes
``STATS.json`` (executions, inputs slower than ``SLOW_INPUT_SECONDS`` of CPU, the slowest) every
``STATS_EVERY`` executions and whenever an input is slow, because libFuzzer ends the process with
``exit()`` and Python's atexit handlers do not run then.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import atheris

# Only the code under test is instrumented, and each target imports only what it fuzzes: the
# grammar target starts without the server (numpy and all), in well under a second.
with atheris.instrument_imports(include=["ai_search"]):
    from ai_search import (
        apply_search_filter_token,
        extract_completed_search_filters,
        get_active_search_filter,
        parse_search_filter_text,
        serialize_search_query,
    )

__all__ = ["SEEDS", "SLOW_INPUT_SECONDS", "TARGETS", "main"]

# CPU seconds one input may take before it counts as a timeout (the plan's 100 ms).
SLOW_INPUT_SECONDS = 0.1
# Executions between two writes of the stats file.
STATS_EVERY = 2000
# Characters of one input: the longest `q` the API takes (routes.search.MAX_QUERY_LINE_CHARS).
MAX_INPUT_CHARS = 4096

SEEDS = [
    "deploy failed in:#ops,#infra from:@alice after:2026-11-01",
    'in:"team room" from:bob before:2026-02-28 "quoted words"',
    "IN:Ops FROM:@Carol after:2026-02-30 café ß İstanbul",
    'in:"unclosed quote from:@x',
    "q=deploy+in%3A%23ops&intelligentCount=5&searchType=hybrid",
    "query=outage&rids=a,b,c&roomNames=ops,%23infra&fromUsernames=alice&startDate=2026-11-01&endDate=",
    "q=%FF%FE&rid=&intelligentCount=1e400",
]


def _grammar(data: bytes) -> None:
    provider = atheris.FuzzedDataProvider(data)
    caret = provider.ConsumeIntInRange(-2, MAX_INPUT_CHARS + 2)
    text = provider.ConsumeUnicodeNoSurrogates(MAX_INPUT_CHARS)
    parsed = parse_search_filter_text(text)
    extract_completed_search_filters(text)
    active = get_active_search_filter(text, caret)
    apply_search_filter_token(text, active, "in", "ops", caret)
    again = parse_search_filter_text(serialize_search_query(parsed.search_text, parsed.filters))
    if again != parsed:
        _STATS.violation(text)


def _query_target() -> Callable[[bytes], None]:
    """The ai.search decoder: Starlette's query parsing, the route's validation, the search request."""
    with atheris.instrument_imports(
        include=["ai_search_server.rest", "ai_search_server.routes.search", "ai_search_server.routes.params"]
    ):
        from ai_search_server import errors
        from ai_search_server.rest import validate_params
        from ai_search_server.routes import search as search_route
    from starlette.datastructures import QueryParams

    route = next(r for r in search_route.router.routes if r.name == "ai.search")
    assert search_route.MAX_QUERY_LINE_CHARS == MAX_INPUT_CHARS

    def fuzz(data: bytes) -> None:
        query = QueryParams(data[: MAX_INPUT_CHARS * 4].decode("latin-1"))
        if any(len(query.getlist(key)) > 1 for key in query):
            return  # rest.read_raw_params refuses a repeated parameter before validation
        with contextlib.suppress(errors.InvalidParams):
            search_route._request(validate_params(route, dict(query)))  # type: ignore[arg-type]

    return fuzz


class _Stats:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.violations = 0
        self.violation_examples: list[str] = []
        self.execs = 0
        self.slow = 0
        self.slowest_ms = 0.0
        self.slow_examples: list[str] = []

    def violation(self, text: str) -> None:
        self.violations += 1
        if len(self.violation_examples) < 5:
            self.violation_examples.append(text)
            self.write()

    def write(self) -> None:
        if self.path is None:
            return
        data: dict[str, Any] = {
            "violations": self.violations,
            "violation_examples": self.violation_examples,
            "execs": self.execs,
            "slow": self.slow,
            "slowest_ms": round(self.slowest_ms, 3),
            "slow_examples": self.slow_examples,
        }
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        tmp.replace(self.path)

    def wrap(self, target: Callable[[bytes], None]) -> Callable[[bytes], None]:
        def timed(data: bytes) -> None:
            start = time.process_time()
            try:
                target(data)
            finally:
                spent = time.process_time() - start
                self.execs += 1
                self.slowest_ms = max(self.slowest_ms, spent * 1000)
                if spent > SLOW_INPUT_SECONDS:
                    self.slow += 1
                    if len(self.slow_examples) < 5:
                        self.slow_examples.append(data[:200].hex())
                    self.write()
                elif self.execs % STATS_EVERY == 0:
                    self.write()

        return timed


_STATS = _Stats(None)
TARGETS: dict[str, Callable[[], Callable[[bytes], None]]] = {
    "grammar": lambda: _grammar,
    "query": _query_target,
}


def main(argv: list[str]) -> None:
    target_name, stats_path, corpus = argv[1], Path(argv[2]), Path(argv[3])
    corpus.mkdir(parents=True, exist_ok=True)
    for n, seed in enumerate(SEEDS):
        seed_file = corpus / f"seed-{n}"
        if not seed_file.exists():
            seed_file.write_bytes(seed.encode())
    target = TARGETS[target_name]()
    for seed in SEEDS:  # warm-up outside the clock: first calls pay for lazy imports and caches
        target(seed.encode())
    _STATS.path = stats_path
    _STATS.write()
    atheris.Setup([argv[0], str(corpus), *argv[4:]], _STATS.wrap(target))
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
