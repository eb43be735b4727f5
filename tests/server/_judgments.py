"""Checks shared by the judged sets (the demo's and bench/halden's): filters and the judged-text digest."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from bench.halden.judgments import judged_text_digest as digest_of_texts

Row = Mapping[str, Any]


def row_time(row: Row) -> datetime:
    return datetime.fromisoformat(str(row["ts"]).replace("Z", "+00:00"))


def inline_filters(query: str) -> Iterator[tuple[str, str]]:
    """(key, value) of each inline filter of a query line (`in:#ops` gives ("in", "ops"))."""
    for key, value in re.findall(r"\b(in|from|after|before):(\S+)", query):
        yield key, value.lstrip("#@")


_KEEPS = {
    "in": lambda row, value: row["room"] == value,
    "from": lambda row, value: row["user"] == value,
    "after": lambda row, value: row_time(row).date() >= datetime.fromisoformat(value).date(),
    "before": lambda row, value: row_time(row).date() < datetime.fromisoformat(value).date(),
}


def filter_breaches(queries: Iterable[Mapping[str, Any]], rows: Iterable[Row]) -> list[tuple[str, str]]:
    """(query id, message id) of each judged message that a filtered query's filters would drop."""
    by_id = {str(row["id"]): row for row in rows}
    breaches = []
    for query in (q for q in queries if q["kind"] == "filtered"):
        filters = list(inline_filters(query["query"]))
        if not filters:
            breaches.append((query["id"], "(no filter)"))
        for message_id in query["relevant"]:
            row = by_id[message_id]
            if not all(_KEEPS[key](row, value) for key, value in filters):
                breaches.append((query["id"], message_id))
    return breaches


def judged_text_digest(queries: Iterable[Mapping[str, Any]], rows: Iterable[Row]) -> str:
    """SHA-256 over every judged message's id and text: an edited judged text changes it."""
    return digest_of_texts(queries, {str(row["id"]): str(row["text"]) for row in rows})
