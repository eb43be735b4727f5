"""The judged queries over the Ferry workspace: read ``queries.txt``, write ``judgments.json``.

    .venv/bin/python -m bench.ferry.judgments                 # rewrites bench/ferry/judgments.json, checks it
    .venv/bin/python -m bench.ferry.judgments --candidates f012 f013
        # the review aid: every message the query's user reads (and its filters keep) that shares a
        # content word with the query and is not judged yet, to be read one by one

Halden's format and checks (``bench.halden.judgments``: ``<id> <kind> <user> | <query>``, then
``2:`` and ``1:`` lines of message ids, ``a-01..05`` for a run of one conversation), with Ferry's ids
(``f001``) and kinds: a support community is asked plain questions, so ``question`` is a kind here,
and there is no Chinese or Japanese.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from datetime import date
from pathlib import Path
from typing import Any

from bench.halden.judgments import build_judgments, content_stems, parse_queries, write_judgments

from .build import WORKSPACE_PATH, load_workspace
from .workspace import rooms_of

__all__ = ["JUDGMENTS_PATH", "KINDS", "QUERIES_PATH", "build", "candidates"]

HERE = Path(__file__).resolve().parent
QUERIES_PATH = HERE / "queries.txt"
JUDGMENTS_PATH = HERE / "judgments.json"
KINDS = {
    "paraphrase": "the answers use other words: no content word of the query is in a message graded 2",
    "question": "a short natural question sharing some words with its answers",
    "keyword": "plain words that also appear in the relevant messages",
    "identifier": "an exact token (error message, config key, version, CLI flag, issue or CVE number)",
    "conversation": "asks about a conversation (a decision, a fix, an outcome) rather than one message",
    "filtered": "inline filters (in:, from:, after:, before:) that must cut the result set",
    "scoping": "another query's words, by a user who reads fewer of its rooms: fewer results are correct",
    "no-answer": "nothing the user can read answers it: success is no results",
}
_FILTER = re.compile(r"^(in|from|after|before):(\S+)$")


def build(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``judgments.json`` as ``queries.txt`` says, over the workspace's rows."""
    return build_judgments(
        rows,
        parse_queries(QUERIES_PATH, KINDS, prefix="f"),
        KINDS,
        about="Judged queries over the Ferry workspace; see bench/ferry/README.md.",
        workspace="bench/ferry/workspace.jsonl",
    )


def _keeps(row: Mapping[str, Any], key: str, value: str) -> bool:
    day = date.fromisoformat(str(row["ts"])[:10])
    if key == "in":
        return row["room"] == value.lstrip("#")
    if key == "from":
        return row["user"] == value.lstrip("@")
    if key == "after":
        return day >= date.fromisoformat(value)
    return day < date.fromisoformat(value)


def candidates(query: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Messages the query's user reads, that its filters keep, sharing a content word with its words,
    and not judged yet: each is read before the query's judgments are final (near misses stay 0)."""
    words, filters = [], []
    for token in str(query["query"]).split():
        found = _FILTER.match(token)
        if found:
            filters.append((found[1], found[2]))
        else:
            words.append(token)
    wanted = content_stems(" ".join(words))
    readable = rooms_of(str(query["user"]))
    return [
        row
        for row in rows
        if row["room"] in readable
        and all(_keeps(row, key, value) for key, value in filters)
        and str(row["id"]) not in query["relevant"]
        and wanted & content_stems(str(row["text"]))
    ]


def main(argv: list[str]) -> None:
    rows = load_workspace(WORKSPACE_PATH)
    judgments = build(rows)
    if argv[:1] == ["--candidates"]:
        chosen = set(argv[1:])
        for query in judgments["queries"]:
            if chosen and query["id"] not in chosen:
                continue
            found = candidates(query, rows)
            print(f"\n## {query['id']} {query['kind']} {query['user']} | {query['query']} ({len(found)})")
            for row in found:
                shared = sorted(content_stems(query["query"]) & content_stems(str(row["text"])))
                print(f"  {row['id']:<24} #{row['room']:<13} {','.join(shared):<18} {row['text'][:150]}")
        return
    write_judgments(JUDGMENTS_PATH, judgments, rows)


if __name__ == "__main__":
    main(sys.argv[1:])
