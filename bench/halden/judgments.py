"""The judged queries over the Halden workspace: read ``queries.txt``, write ``judgments.json``.

    .venv/bin/python -m bench.halden.judgments      # rewrites bench/halden/judgments.json, checks it

``queries.txt`` is the source (compact, one block per query); ``judgments.json`` is what the
relevance bench reads, in the same shape as ``bench/relevance_judgments.json``. The paraphrase check
lives here too: a ``paraphrase`` query may share no content word with any message graded 2, where a
content word is a word as the keyword index reads it (letters and digits, folded), not an English
stopword (``retrieval.stopwords``), compared after Snowball's English stemmer (so "paged" and
"page" are one word, "pager" another).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import snowballstemmer

from ai_search_server.retrieval.stopwords import is_stopword
from ai_search_server.retrieval.terms import words_with_offsets

from .build import WORKSPACE_PATH

__all__ = [
    "JUDGMENTS_PATH",
    "KINDS",
    "QUERIES_PATH",
    "build_judgments",
    "content_stems",
    "judged_text_digest",
    "judgment_problems",
    "parse_queries",
    "shared_content_words",
    "write_judgments",
]

HERE = Path(__file__).resolve().parent
QUERIES_PATH = HERE / "queries.txt"
JUDGMENTS_PATH = HERE / "judgments.json"
KINDS = {
    "paraphrase": "the answers use other words: no content word of the query is in a message graded 2",
    "conversation": "asks about a conversation (a decision, a fix, an outcome) rather than one message",
    "no-answer": "nothing in the workspace answers it: success is no results",
    "keyword": "plain words that also appear in the relevant messages",
    "identifier": "an exact token (error code, version, config key, id): semantic search alone blurs it",
    "partial": "a word inside a longer identifier, a prefix or a camelCase part of a token",
    "cjk": "Chinese or Japanese words inside text written without spaces",
    "filtered": "inline filters (in:, from:, after:, before:) that must cut the result set",
    "scoping": "another query's words, by a user who reads fewer of its rooms: fewer results are correct",
}
# A query's header line; `prefix` is its set's id letter (h for Halden's h001).
_HEADER = r"(?P<id>{prefix}\d{{3}}) (?P<kind>[a-z-]+) (?P<user>[a-z]+) \| (?P<query>.+)"
_RANGE = re.compile(r"(?P<stem>.+)-(?P<first>\d{2})\.\.(?P<last>\d{2})")
_STEMMER = snowballstemmer.stemmer("english")


def _expand(token: str) -> list[str]:
    found = _RANGE.fullmatch(token)
    if found is None:
        return [token]
    first, last = int(found["first"]), int(found["last"])
    return [f"{found['stem']}-{n:02d}" for n in range(first, last + 1)]


def parse_queries(
    path: Path = QUERIES_PATH, kinds: Mapping[str, str] = KINDS, prefix: str = "h"
) -> list[dict[str, Any]]:
    """The queries of `path`; raises ValueError naming the line of a malformed one.

    Another set written in this format (bench/ferry) passes its own kinds and id prefix.
    """
    header_line = re.compile(_HEADER.format(prefix=re.escape(prefix)))
    queries: list[dict[str, Any]] = []
    for line_no, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        header = header_line.fullmatch(line)
        if header is not None:
            if header["kind"] not in kinds:
                raise ValueError(f"{path.name}:{line_no}: unknown kind {header['kind']!r}")
            queries.append(
                {
                    "id": header["id"],
                    "query": header["query"],
                    "user": header["user"],
                    "kind": header["kind"],
                    "note": "",
                    "relevant": {},
                }
            )
            continue
        if not queries:
            raise ValueError(f"{path.name}:{line_no}: a grade line before any query")
        query = queries[-1]
        label, _, rest = line.partition(":")
        if label == "note":
            query["note"] = rest.strip()
        elif label in ("1", "2"):
            for token in rest.split():
                for message_id in _expand(token):
                    if message_id in query["relevant"]:
                        raise ValueError(f"{path.name}:{line_no}: {message_id} graded twice")
                    query["relevant"][message_id] = int(label)
        else:
            raise ValueError(f"{path.name}:{line_no}: expected '2:', '1:' or 'note:', got {line!r}")
    return queries


def content_stems(text: str) -> set[str]:
    """The stemmed content words of a text (see the module docstring)."""
    words = [word for _start, _end, word in words_with_offsets(text) if not is_stopword(word)]
    return set(_STEMMER.stemWords(words))


def shared_content_words(query: str, texts: Iterable[str]) -> set[str]:
    """Stems the query shares with any of `texts` (empty for a true paraphrase)."""
    wanted = content_stems(query)
    shared: set[str] = set()
    for text in texts:
        shared |= wanted & content_stems(text)
    return shared


def judged_text_digest(queries: Iterable[Mapping[str, Any]], text_of: Mapping[str, str]) -> str:
    """SHA-256 over every judged message's id and text: editing a judged text changes it."""
    judged = sorted({message_id for query in queries for message_id in query["relevant"]})
    return hashlib.sha256("".join(f"{mid}\t{text_of[mid]}\n" for mid in judged).encode()).hexdigest()


def build_judgments(
    rows: list[dict[str, Any]],
    queries: list[dict[str, Any]] | None = None,
    kinds: Mapping[str, str] = KINDS,
    about: str = "Judged queries over the Halden workspace; see bench/halden/README.md.",
    workspace: str = "bench/halden/workspace.jsonl",
) -> dict[str, Any]:
    """The judgments file of `queries` (Halden's ``queries.txt`` by default) over `rows`."""
    queries = parse_queries() if queries is None else queries
    text_of = {str(row["id"]): str(row["text"]) for row in rows}
    return {
        "about": about,
        "dataset": {"workspace": workspace},
        "grades": {
            "2": "answers the query directly",
            "1": "related: context, a partial answer or a follow-up",
        },
        "kinds": dict(kinds),
        "judged_text_sha256": judged_text_digest(queries, text_of),
        "queries": queries,
    }


def main() -> None:
    from .build import load_workspace

    rows = load_workspace(WORKSPACE_PATH)
    write_judgments(JUDGMENTS_PATH, build_judgments(rows), rows)


def judgment_problems(judgments: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Unknown ids, and paraphrases sharing a content word with a message graded 2."""
    text_of = {str(row["id"]): str(row["text"]) for row in rows}
    problems = []
    for query in judgments["queries"]:
        missing = [m for m in query["relevant"] if m not in text_of]
        if missing:
            problems.append(f"{query['id']}: unknown ids {missing}")
            continue
        if query["kind"] == "paraphrase":
            answers = [text_of[m] for m, g in query["relevant"].items() if g == 2]
            shared = shared_content_words(query["query"], answers)
            if shared:
                problems.append(f"{query['id']}: shares {sorted(shared)} with its answers")
    return problems


def write_judgments(path: Path, judgments: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> None:
    """Write `judgments` to `path` and print any problem `judgment_problems` finds."""
    problems = judgment_problems(judgments, rows)
    path.write_text(json.dumps(judgments, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{path}: {len(judgments['queries'])} queries")
    for problem in problems:
        print("  problem:", problem)


if __name__ == "__main__":
    main()
