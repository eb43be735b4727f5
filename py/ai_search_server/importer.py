"""``ai-search import FILE.jsonl``: load a chat history, one message per line.

Each line is one JSON object::

    {"room": "ops", "room_type": "c", "user": "alice", "ts": "2026-11-02T09:15:00Z",
     "text": "deploy failed", "id": "optional", "members": ["bob"], "name": "Alice Okafor"}

- ``room``, ``room_type`` (``c`` public, ``p`` private, ``d`` direct), ``user``, ``ts`` and ``text`` are
  required, non-empty strings. One leading ``#`` on ``room`` and ``@`` on usernames is dropped.
- ``ts`` is ISO 8601; a time without a zone is UTC. It is kept to the millisecond.
- ``room`` names the room. Direct rooms are keyed by it too (an export's ``alice__bob`` or its room
  id), among direct rooms only, so ``alice__bob`` the DM and a channel of that name never mix.
- ``members`` (on any line) are usernames subscribed to that room; the author always is.
- ``name`` is the author's display name, used only when the import creates that user.
- Optional, as Rocket.Chat models them: ``tmid`` (this line is a reply in the thread of the message
  with that ``id``, which must come earlier in the file, in the same room), ``attachments`` (a list
  of ``{"name", "title", "description", "type", "size"}``; only ``name`` is required, no file bytes),
  ``reactions`` (``{":+1:": ["bob", "carol"]}``), ``edited_at`` (ISO 8601: the text is the edited
  one) and ``pinned`` (true or false).
- Other fields are ignored, so richer exports load as they are.

Users that do not exist are created without a password (they cannot log in until an admin sets one);
rooms that do not exist are created with the line's author as creator. A line naming an existing
room with another type (``ops`` as ``p`` when ``ops`` is a public channel) is refused, so an import
can never pour private messages into a public room.

Re-importing changes nothing: a line without ``id`` gets a deterministic one (``derive_message_id``,
SHA-256 of room type, room, user, ts in ms and text), and a message whose id exists is counted as
unchanged with no side effect at all. Two identical lines therefore collapse into one message.

Bad lines (invalid UTF-8 or JSON, missing or empty fields, a bad room type or time, text over
MAX_MESSAGE_TEXT_LENGTH...) are reported with their line number and reason and skipped; the rest of
the file is imported. Rows go to the store in batches of ``batch_size``, one transaction each, so an
interrupted import keeps whole batches and a re-run completes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .imports.batches import (
    DEFAULT_IMPORT_BATCH_SIZE,
    MAX_REPORTED_BAD_LINES,
    MAX_SUMMARY_BAD_LINES,
    Batcher,
    ImportReport,
    hashed_id,
    progress_bar,
)
from .imports.lines import capped_lines
from .store.base import InvalidValue, Store
from .store.records import Attachment, ImportRow, Reaction
from .store.rules import (
    check_attachments,
    check_display_name,
    check_emoji,
    check_message_id,
    check_room_name,
    check_room_type,
    check_text,
    check_username,
    fold,
    to_ms,
)

__all__ = [
    "DEFAULT_IMPORT_BATCH_SIZE",
    "MAX_IMPORT_LINE_BYTES",
    "MAX_REPORTED_BAD_LINES",
    "MAX_SUMMARY_BAD_LINES",
    "ImportReport",
    "derive_message_id",
    "import_jsonl",
    "import_rows",
    "row_from_record",
]

# Bytes of one line; a longer line is reported and skipped without being held in memory.
MAX_IMPORT_LINE_BYTES = 1024 * 1024
# Characters of a rejected value quoted back in a reason.
_MAX_QUOTED_VALUE_LENGTH = 40


class _BadLine(Exception):
    """Why one line cannot be imported."""


def derive_message_id(room_type: str, room: str, username: str, ts_ms: int, text: str) -> str:
    """The id of a line that has none: SHA-256 over the room type, the room and username as the
    store compares them (ASCII case folded), the time in ms and the text, as ID_LENGTH base62
    characters. The same message written ``Alice``/``alice`` or ``...Z``/``...+00:00`` gets the same id."""
    return hashed_id(room_type, fold(room), fold(username), str(ts_ms), text)


def _quote(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_QUOTED_VALUE_LENGTH else text[:_MAX_QUOTED_VALUE_LENGTH] + "..."


def _string_field(record: Mapping[str, Any], name: str) -> str:
    value = record.get(name)
    if value is None:
        raise _BadLine(f"missing field {name!r}")
    if not isinstance(value, str):
        raise _BadLine(f"field {name!r} must be a string, not {type(value).__name__}")
    if not value.strip():
        raise _BadLine(f"field {name!r} is empty")
    return value


def _parse_ts(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise _BadLine(f"field 'ts' is not an ISO 8601 time: {_quote(value)}") from None
    try:
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 has no UTC datetime
        raise _BadLine(f"field 'ts' is out of range: {_quote(value)}") from None


def _members(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(member, str) for member in value):
        raise _BadLine("field 'members' must be a list of usernames")
    return tuple(dict.fromkeys(check_username(member.removeprefix("@")) for member in value))


def _parse_time(value: str, name: str) -> datetime:
    try:
        return _parse_ts(value)
    except _BadLine as error:
        raise _BadLine(str(error).replace("field 'ts'", f"field {name!r}")) from None


def _optional_string(record: Mapping[str, Any], name: str) -> str | None:
    value = record.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _BadLine(f"field {name!r} must be a string, not {type(value).__name__}")
    return value.strip() or None


def _attachments(value: object) -> tuple[Attachment, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise _BadLine("field 'attachments' must be a list of objects with a 'name'")
    found = []
    for item in value:
        texts = {key: item.get(key, "") for key in ("name", "title", "description", "type")}
        if not all(isinstance(text, str) for text in texts.values()):
            raise _BadLine("an attachment's name, title, description and type must be strings")
        size = item.get("size", 0)
        if isinstance(size, bool) or not isinstance(size, int):
            raise _BadLine("an attachment's size must be a whole number of bytes")
        found.append(Attachment(texts["name"], texts["title"], texts["description"], texts["type"], size))
    return check_attachments(found)


def _reactions(value: object) -> tuple[Reaction, ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping) or not all(
        isinstance(users, list) and all(isinstance(u, str) for u in users) for users in value.values()
    ):
        raise _BadLine("field 'reactions' must map an emoji to a list of usernames")
    return tuple(
        Reaction(check_emoji(emoji), tuple(dict.fromkeys(check_username(u.removeprefix("@")) for u in users)))
        for emoji, users in value.items()
        if users
    )


def row_from_record(record: object) -> ImportRow:
    """The store row of one parsed line.

    Raises:
        ValueError: the record cannot be imported; the message says why.
    """
    try:
        if not isinstance(record, Mapping):
            raise _BadLine(f"a line must hold one JSON object, not {type(record).__name__}")
        room = check_room_name(_string_field(record, "room").removeprefix("#"))
        room_type = check_room_type(_string_field(record, "room_type"))
        username = check_username(_string_field(record, "user").removeprefix("@"))
        ts = _parse_ts(_string_field(record, "ts"))
        ts_ms = to_ms(ts)
        text = check_text(_string_field(record, "text"))
        given_id = record.get("id")
        if given_id is not None and not isinstance(given_id, str):
            raise _BadLine(f"field 'id' must be a string, not {type(given_id).__name__}")
        message_id = (
            check_message_id(given_id)
            if given_id
            else derive_message_id(room_type, room, username, ts_ms, text)
        )
        name = record.get("name")
        if name is not None and not isinstance(name, str):
            raise _BadLine(f"field 'name' must be a string, not {type(name).__name__}")
        tmid = _optional_string(record, "tmid")
        edited = _optional_string(record, "edited_at")
        pinned = record.get("pinned", False)
        if not isinstance(pinned, bool):
            raise _BadLine("field 'pinned' must be true or false")
        return ImportRow(
            room=room,
            room_type=room_type,
            username=username,
            ts=ts,
            text=text,
            message_id=message_id,
            user_name=check_display_name(name.strip()) if name and name.strip() else None,
            members=_members(record.get("members")),
            tmid=None if tmid is None else check_message_id(tmid),
            attachments=_attachments(record.get("attachments")),
            reactions=_reactions(record.get("reactions")),
            edited_at=None if edited is None else _parse_time(edited, "edited_at"),
            pinned=pinned,
        )
    except (_BadLine, InvalidValue) as error:
        raise ValueError(str(error)) from None


def import_rows(
    store: Store,
    records: Iterable[Mapping[str, Any] | ImportRow],
    *,
    batch_size: int = DEFAULT_IMPORT_BATCH_SIZE,
    source: str = "rows",
) -> ImportReport:
    """Imports records already in memory: dicts shaped like the JSONL lines, or ready ImportRows.
    They are numbered from 1 in the report, as lines are.

    Raises:
        StorageFailure: the database failed; the batches before it are imported.
    """
    report = ImportReport(source)
    batcher = Batcher(store, report, batch_size, parse=row_from_record)
    for line_no, record in enumerate(records, start=1):
        batcher.add(line_no, record)
    batcher.flush()
    return report


def _record_of(line: bytes | None) -> object:
    if line is None:
        raise _BadLine(f"line longer than {MAX_IMPORT_LINE_BYTES} bytes")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise _BadLine("line is not valid UTF-8") from None
    if not text.strip():
        raise _BadLine("empty line")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise _BadLine(f"invalid JSON: {error.msg} at column {error.colno}") from None
    except RecursionError:
        raise _BadLine("invalid JSON: nested too deeply") from None


def import_jsonl(
    store: Store,
    path: Path,
    *,
    progress: bool = True,
    batch_size: int = DEFAULT_IMPORT_BATCH_SIZE,
) -> ImportReport:
    """Imports the JSONL file at ``path`` (format in the module docstring), with a progress bar on
    stderr by bytes read unless ``progress`` is False.

    Raises:
        OSError: the file cannot be read.
        StorageFailure: the database failed; the batches before it are imported, and importing the
            file again completes the job.
    """
    report = ImportReport(str(path))
    batcher = Batcher(store, report, batch_size, parse=row_from_record)
    with (
        path.open("rb") as file,
        progress_bar(path.name, path.stat().st_size, enabled=progress) as advance,
    ):
        for line_no, line in capped_lines(file, MAX_IMPORT_LINE_BYTES, advance):
            try:
                record = _record_of(line)
            except _BadLine as error:
                batcher.reject(line_no, str(error))
                continue
            batcher.add(line_no, record)
        batcher.flush()
    return report
