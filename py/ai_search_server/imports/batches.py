"""What every import shares: the report, rows sent to the store a batch at a time, the progress bar.

The JSONL importer and the importers of Slack, Mattermost and Zulip exports (and the live Rocket.Chat
mirror) feed records to one ``Batcher``. It numbers what it reads, turns each record into an
``ImportRow`` (or reports why not, with the record's position: ``line 12`` of a JSONL file,
``general/2026-11-02.json message 4`` of an export), and hands the store ``batch_size`` rows per
transaction, so an interrupted import keeps whole batches and a re-run completes it.

Two kinds of re-import: the JSONL file's rule is that a message whose id exists changes nothing at
all (an admin's edit since is never undone). A mirror of another system passes ``reconcile``: rows
whose message already exists go to it instead, to apply what the source changed since (a newer
edit, reactions, a pin, the link back), and only new rows are imported.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from ..store.base import Store
from ..store.records import ImportRow, Message
from ..store.rules import ID_LENGTH
from .mapping import NO_MAPPING, SourceMapping

__all__ = [
    "DEFAULT_IMPORT_BATCH_SIZE",
    "DEFAULT_OPTIONS",
    "MAX_REPORTED_BAD_LINES",
    "MAX_SUMMARY_BAD_LINES",
    "Batcher",
    "ImportOptions",
    "ImportReport",
    "Reconcile",
    "Where",
    "hashed_id",
    "progress_bar",
]

# Rows per store transaction: large enough to amortise the commit, small enough that the write lock
# is held for tens of milliseconds, not seconds, while the server runs beside the import.
DEFAULT_IMPORT_BATCH_SIZE = 2000
# Bad records kept with their reason in the report (records); beyond that they are only counted.
MAX_REPORTED_BAD_LINES = 1000
# Bad records printed by ImportReport.summary() (records).
MAX_SUMMARY_BAD_LINES = 20
# Each digest byte becomes one base62 character (byte mod 62). The slight bias leaves ~5.9 bits per
# character, ~100 bits per id: plenty against accidental collisions, and a table lookup is 20x faster
# than big-integer division at 100k lines per second.
_BYTE_TO_BASE62 = bytes((string.digits + string.ascii_letters).encode("ascii")[b % 62] for b in range(256))

Where = int | str  # a JSONL line number, or "file position" of a record in an export


@dataclass(frozen=True)
class ImportOptions:
    """How an import runs: a progress bar on stderr, rows per transaction, the source system's
    address for links back where the export does not hold it (``https://acme.slack.com``), and the
    admin's mapping of its people and conversations to accounts and rooms here (``mapping.py``)."""

    progress: bool = True
    batch_size: int = DEFAULT_IMPORT_BATCH_SIZE
    source_url: str | None = None
    mapping: SourceMapping = NO_MAPPING


DEFAULT_OPTIONS = ImportOptions()


# Rows whose message exists, each with its position and the stored message; returns how many it changed.
Reconcile = Callable[[Sequence[tuple[Where, ImportRow, Message]]], int]


def hashed_id(*parts: str) -> str:
    """ID_LENGTH base62 characters of SHA-256 over ``parts``: the deterministic id of a message
    known by other keys (a Slack channel and ts, a Mattermost channel, author and time)."""
    key = "\x1f".join(parts)
    return hashlib.sha256(key.encode("utf-8")).digest()[:ID_LENGTH].translate(_BYTE_TO_BASE62).decode("ascii")


@dataclass
class ImportReport:
    """What one import did. ``lines_read == imported + updated + unchanged + skipped_count + ignored``
    always holds (``lines_read`` counts the records of an export; ``unit`` names them)."""

    source: str
    lines_read: int = 0
    imported: int = 0
    unchanged: int = 0
    skipped_count: int = 0
    skipped: list[tuple[Where, str]] = field(default_factory=list)  # (position, reason), the first ones
    users_created: int = 0
    rooms_created: int = 0
    unit: str = "lines"
    updated: int = 0  # existing messages the source changed since: text, reactions, pin, link
    ignored: int = 0  # records that are no message to index: people, rooms, joins, leaves, tombstones
    deleted: int = 0  # messages the source no longer holds, deleted here too
    subscribed: int = 0
    unsubscribed: int = 0
    rooms_renamed: int = 0
    notes: list[str] = field(default_factory=list)  # remarks for people, one line each

    def skip(self, where: Where, reason: str) -> None:
        self.skipped_count += 1
        if len(self.skipped) < MAX_REPORTED_BAD_LINES:
            self.skipped.append((where, reason))

    def summary(self) -> str:
        """A few lines for people: the counts, then the first bad records."""
        lines = [
            f"{self.source}: {self.lines_read:,} {self.unit} read, {self.imported:,} messages imported, "
            f"{self.unchanged:,} unchanged, {self.skipped_count:,} skipped; "
            f"{self.users_created:,} users and {self.rooms_created:,} rooms created"
        ]
        changes = [
            f"{count:,} {what}"
            for count, what in (
                (self.updated, "updated"),
                (self.deleted, "deleted"),
                (self.ignored, "other records (people, rooms, joins, leaves, topic changes)"),
                (self.subscribed, "memberships added"),
                (self.unsubscribed, "memberships ended"),
                (self.rooms_renamed, "rooms renamed"),
            )
            if count
        ]
        if changes:
            lines.append("  " + ", ".join(changes))
        lines += [f"  {note}" for note in self.notes]
        lines += [
            f"  {'line ' if isinstance(where, int) else ''}{where}: {reason}"
            for where, reason in self.skipped[:MAX_SUMMARY_BAD_LINES]
        ]
        if self.skipped_count > MAX_SUMMARY_BAD_LINES:
            lines.append(f"  ... and {self.skipped_count - MAX_SUMMARY_BAD_LINES:,} more bad {self.unit}")
        return "\n".join(lines)


class Batcher:
    """Collects rows with their positions and sends them to the store a batch at a time.

    ``parse`` turns a record that is not yet an ImportRow into one (raising ValueError with the
    reason); ``reconcile`` (see the module docstring) handles rows whose message exists.
    """

    def __init__(
        self,
        store: Store,
        report: ImportReport,
        batch_size: int = DEFAULT_IMPORT_BATCH_SIZE,
        *,
        parse: Callable[[Any], ImportRow] | None = None,
        reconcile: Reconcile | None = None,
    ) -> None:
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        self.store = store
        self.report = report
        self.batch_size = batch_size
        self.parse = parse
        self.reconcile = reconcile
        self.wheres: list[Where] = []
        self.rows: list[ImportRow] = []

    def add(self, where: Where, record: object) -> None:
        self.report.lines_read += 1
        if isinstance(record, ImportRow):
            row = record
        else:
            try:
                if self.parse is None:
                    raise ValueError(f"not a message row: {type(record).__name__}")
                row = self.parse(record)
            except ValueError as error:
                self.report.skip(where, str(error))
                return
        self.wheres.append(where)
        self.rows.append(row)
        if len(self.rows) >= self.batch_size:
            self.flush()

    def reject(self, where: Where, reason: str) -> None:
        """A record read that cannot become a message."""
        self.report.lines_read += 1
        self.report.skip(where, reason)

    def ignore(self) -> None:
        """A record read that is no message to index (a join, a topic change)."""
        self.report.lines_read += 1
        self.report.ignored += 1

    def flush(self) -> None:
        if not self.rows:
            return
        wheres, rows = self.wheres, self.rows
        self.wheres, self.rows = [], []
        if self.reconcile is not None:
            stored = self.store.get_messages(row.message_id for row in rows)
            existing = [
                (w, r, stored[r.message_id])
                for w, r in zip(wheres, rows, strict=True)
                if r.message_id in stored
            ]
            if existing:
                changed = self.reconcile(existing)
                self.report.updated += changed
                self.report.unchanged += len(existing) - changed
                fresh = [(w, r) for w, r in zip(wheres, rows, strict=True) if r.message_id not in stored]
                wheres, rows = [w for w, _ in fresh], [r for _, r in fresh]
        if not rows:
            return
        result = self.store.import_messages(rows)
        report = self.report
        report.imported += result.imported
        report.unchanged += result.unchanged
        report.users_created += result.users_created
        report.rooms_created += result.rooms_created
        for index, reason in result.rejected:
            report.skip(wheres[index], reason)


@contextmanager
def progress_bar(
    label: str, total: int, *, enabled: bool, unit: str = "bytes"
) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr (Rich; nothing at all when not ``enabled``) by bytes read or, with
    ``unit="items"``, by things done (rooms of a live sync); yields ``advance(n)``."""
    amount = DownloadColumn() if unit == "bytes" else MofNCompleteColumn()
    speed = TransferSpeedColumn() if unit == "bytes" else TextColumn("")
    columns = (TextColumn("importing {task.description}"), BarColumn(), amount, speed, TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), disable=not enabled) as bar:
        task = bar.add_task(label, total=total)
        yield lambda size: bar.advance(task, size)
