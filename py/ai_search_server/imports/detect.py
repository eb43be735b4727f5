"""Which export a path holds, told by its content, not by its name.

=============  ==========================================================================
jsonl          a file whose first line is a JSON object with ``room`` (ai-search's own lines)
mattermost     a file (or a zip holding one) whose first line is ``{"type": "version", ...}``
slack          a zip or directory with ``channels.json``, ``users.json`` and friends
zulip          a directory or tar.gz with ``realm.json``
=============  ==========================================================================

A name that lies (``export.zip`` that is a tar.gz, a Mattermost file called ``.json``) is read for
what it is. Anything else is refused with a sentence naming the formats that are understood.
Looking costs what reading costs: a zip declaring more members than ``ArchiveLimits.max_members`` is
refused before ``zipfile`` opens it, and a tar.gz is walked within the same limits as its import
(``archive_limits.tar_entries``), forgetting each entry as it goes.
"""

from __future__ import annotations

import json
import lzma
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import Literal

from .archive_limits import (
    DEFAULT_ARCHIVE_LIMITS,
    ArchiveBudget,
    ArchiveLimitExceeded,
    ArchiveLimits,
    tar_entries,
    zip_entry_count,
)
from .bundle import common_folder

__all__ = ["Format", "UnknownFormat", "detect_format", "first_json_line"]

Format = Literal["jsonl", "mattermost", "slack", "zulip"]
# Bytes of a first line read to recognise a JSON lines file (a Mattermost version line is ~150).
_FIRST_LINE_BYTES = 64 * 1024
# Slack's top-level lists; an export has users.json and at least one of the conversation lists.
_SLACK_LISTS = ("channels.json", "groups.json", "dms.json", "mpims.json")
_GZIP_MAGIC = b"\x1f\x8b"
_UNDERSTOOD = (
    "ai-search reads its own JSONL, a Slack workspace export (.zip or its folder), a Mattermost bulk "
    "export (.jsonl or its .zip) and a Zulip realm export (.tar.gz or its folder)"
)


class UnknownFormat(ValueError):
    """The path is no export ai-search reads; the message says what it looked like."""


def first_json_line(head: bytes) -> object:
    """The first non-empty line of ``head`` parsed as JSON, or None when it is not JSON."""
    for raw in head.removeprefix(b"\xef\xbb\xbf").splitlines():
        if raw.strip():
            try:
                return json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                return None
    return None


def _lines_format(head: bytes) -> Format | None:
    first = first_json_line(head)
    if isinstance(first, dict) and first.get("type") == "version":
        return "mattermost"
    if isinstance(first, dict) and "room" in first:
        return "jsonl"
    return None


def _names_format(names: list[str]) -> Format | None:
    prefix = common_folder(names)
    top = {name[len(prefix) :] for name in names}
    if "realm.json" in top:
        return "zulip"
    if "users.json" in top and any(name in top for name in _SLACK_LISTS):
        return "slack"
    return None


def _zip_format(path: Path) -> Format | None:
    with zipfile.ZipFile(path) as archive:
        names = [i.filename for i in archive.infolist() if not i.is_dir()]
        found = _names_format(names)
        if found:
            return found
        for name in names:
            if name.endswith(".jsonl"):
                with archive.open(name) as member:
                    if _lines_format(member.read(_FIRST_LINE_BYTES)) == "mattermost":
                        return "mattermost"
    return None


def detect_format(path: Path, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS) -> Format:
    """The format of the export at ``path``.

    Raises:
        UnknownFormat: it is none of the formats ai-search reads.
        OSError: it cannot be read.
    """
    if path.is_dir():
        names = [p.relative_to(path).as_posix() for p in path.rglob("*.json*") if p.is_file()]
        found = _names_format(names)
        if found:
            return found
        for candidate in sorted(path.glob("*.jsonl")):
            with candidate.open("rb") as file:
                if _lines_format(file.read(_FIRST_LINE_BYTES)) == "mattermost":
                    return "mattermost"
        raise UnknownFormat(
            f"{path}: a folder without realm.json (Zulip), users.json (Slack) or a .jsonl; {_UNDERSTOOD}"
        )
    with path.open("rb") as file:
        head = file.read(_FIRST_LINE_BYTES)
    if zipfile.is_zipfile(path):
        declared = zip_entry_count(path)
        if declared is not None and declared > limits.max_members:
            raise UnknownFormat(
                f"{path}: a zip of {declared:,} files, more than {limits.max_members:,} (MAX_MEMBERS); "
                "unpack it and import the folder"
            )
        try:
            found = _zip_format(path)
        except (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, RuntimeError) as error:
            raise UnknownFormat(f"{path}: a damaged zip ({error}); {_UNDERSTOOD}") from None
        if found:
            return found
        raise UnknownFormat(
            f"{path}: a zip that holds neither a Slack export nor a Mattermost .jsonl; {_UNDERSTOOD}"
        )
    if head.startswith(_GZIP_MAGIC) or tarfile.is_tarfile(path):
        try:
            with tarfile.open(path, mode="r:*") as archive:
                for entry in tar_entries(archive, ArchiveBudget(path.stat().st_size, limits), limits):
                    if entry.name.rsplit("/", 1)[-1] == "realm.json":
                        return "zulip"
        except ArchiveLimitExceeded as error:
            raise UnknownFormat(f"{path}: no realm.json before {error.name}, where {error.reason}") from None
        except (tarfile.TarError, EOFError, OSError, zlib.error) as error:
            raise UnknownFormat(f"{path}: a damaged or unknown archive ({error}); {_UNDERSTOOD}") from None
        raise UnknownFormat(f"{path}: an archive without realm.json; {_UNDERSTOOD}")
    found = _lines_format(head)
    if found:
        return found
    raise UnknownFormat(f"{path}: not a format ai-search reads; {_UNDERSTOOD}")
