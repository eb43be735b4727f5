"""What one export archive may cost, in total and not only per member, and how that is counted.

A bomb is small on disk and huge once decompressed, in one member or spread over many; millions of
empty members cost memory just to list. ``bundle.open_bundle`` reads every archive within an
``ArchiveLimits`` (the defaults are the constants below; a test passes smaller ones):

==========================  =============================================================================
``MAX_MEMBER_BYTES``        one member, decompressed, whatever the archive claims
``MAX_ARCHIVE_BYTES``       all members read (a zip) or copied out (a tar.gz), decompressed, together
``MAX_COMPRESSION_RATIO``   decompressed bytes per byte of the archive, once past ``RATIO_FREE_BYTES``
                            (a tar.gz counts its whole stream: headers and members it skips too)
``MAX_MEMBERS``             files in the archive (a zip's count is read from its end record by
                            ``zip_entry_count``, before ``zipfile`` makes an object per file)
==========================  =============================================================================

``ArchiveBudget`` counts what an archive has given and raises ``ArchiveLimitExceeded`` (a
``BundleError`` naming the member where the limit was reached) past any of them; ``tar_entries`` walks
a tar stream within them, forgetting each entry as it goes.
"""

from __future__ import annotations

import os
import struct
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_ARCHIVE_LIMITS",
    "MAX_ARCHIVE_BYTES",
    "MAX_COMPRESSION_RATIO",
    "MAX_MEMBERS",
    "MAX_MEMBER_BYTES",
    "RATIO_FREE_BYTES",
    "ArchiveBudget",
    "ArchiveLimitExceeded",
    "ArchiveLimits",
    "BundleError",
    "tar_entries",
    "zip_entry_count",
]

# Bytes of one member of an export, decompressed: a Slack day file is kilobytes, a Zulip messages
# chunk (1,000 messages) a few megabytes, a Mattermost JSONL of a large workspace some gigabytes
# (it is streamed, never held). The cap is there for bombs, not for real exports.
MAX_MEMBER_BYTES = 16 * 1024**3
# Bytes all the members read from one archive may decompress to, together (32 GiB): several times
# the JSON of the largest exports we know of. What is larger can be unpacked and imported as a folder.
MAX_ARCHIVE_BYTES = 32 * 1024**3
# Decompressed bytes per byte of archive: deflate cannot pass 1,032, a bomb sits near it; JSON
# exports compress 5 to 20 times (Slack's, with their repeated keys and profiles, the most).
MAX_COMPRESSION_RATIO = 100
# Bytes an archive may decompress to before the ratio is checked (64 MiB): a small export of very
# repetitive JSON is never refused for its ratio.
RATIO_FREE_BYTES = 64 * 1024**2
# Members (files) of an archive: a zip costs about 0.5 KiB of memory per member just to open, so a
# million is about 0.5 GiB. A Slack workspace of 300 channels over ten years has about a million day
# files; a larger one can be imported unzipped, as a folder (no limit on folders).
MAX_MEMBERS = 1_000_000
# A zip's end-of-central-directory record, its zip64 locator and zip64 record (APPNOTE.TXT 4.3.14-16).
_EOCD, _ZIP64_LOCATOR, _ZIP64_EOCD = b"PK\x05\x06", b"PK\x06\x07", b"PK\x06\x06"
_EOCD_BYTES, _ZIP64_LOCATOR_BYTES, _MAX_ZIP_COMMENT_BYTES = 22, 20, 65535


@dataclass(frozen=True)
class ArchiveLimits:
    """What one archive may cost (module docstring); the defaults are the constants above."""

    max_members: int = MAX_MEMBERS
    max_total_bytes: int = MAX_ARCHIVE_BYTES
    max_ratio: int = MAX_COMPRESSION_RATIO
    ratio_free_bytes: int = RATIO_FREE_BYTES
    max_member_bytes: int = MAX_MEMBER_BYTES


DEFAULT_ARCHIVE_LIMITS = ArchiveLimits()


class BundleError(Exception):
    """A member cannot be read: the message names it and says why (``reason`` without the name)."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


class ArchiveLimitExceeded(BundleError):
    """The archive as a whole went past one of its limits while ``name`` was read: nothing after it is."""


class ArchiveBudget:
    """What one archive has given, decompressed, against its ``ArchiveLimits``.

    ``spend`` counts the bytes of members read or copied out (against ``max_total_bytes`` and the
    ratio); ``at`` checks a position in a decompressed stream (a tar.gz's, skipped members included)
    against the ratio. Either raises ArchiveLimitExceeded naming the member and the limit.
    """

    def __init__(self, archive_bytes: int, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS) -> None:
        self.archive_bytes = archive_bytes
        self.limits = limits
        self.ratio_allows = max(limits.ratio_free_bytes, limits.max_ratio * archive_bytes)
        self.spent = 0

    def spend(self, count: int, name: str) -> None:
        self.spent += count
        if self.spent > self.limits.max_total_bytes:
            raise ArchiveLimitExceeded(
                name,
                f"the archive decompresses to more than {self.limits.max_total_bytes:,} bytes in all "
                "(MAX_ARCHIVE_BYTES); unpack it and import the folder",
            )
        self.at(self.spent, name)

    def at(self, position: int, name: str) -> None:
        if position > self.ratio_allows:
            raise ArchiveLimitExceeded(
                name,
                f"the archive decompresses to more than {self.ratio_allows:,} bytes, over "
                f"{self.limits.max_ratio} times its own {self.archive_bytes:,} (MAX_COMPRESSION_RATIO): "
                "a decompression bomb, or an export to unpack and import as a folder",
            )


def zip_entry_count(path: Path) -> int | None:
    """The number of entries the zip at ``path`` declares in its end record (zip64's too), read
    without building an object per entry as ``zipfile.ZipFile`` does; None when it has no such record.

    Raises:
        OSError: the file cannot be read.
    """
    with path.open("rb") as file:
        size = file.seek(0, os.SEEK_END)
        tail_bytes = min(size, _EOCD_BYTES + _MAX_ZIP_COMMENT_BYTES + _ZIP64_LOCATOR_BYTES)
        file.seek(size - tail_bytes)
        tail = file.read(tail_bytes)
        at = tail.rfind(_EOCD)
        if at < 0 or len(tail) - at < _EOCD_BYTES:
            return None
        (entries,) = struct.unpack_from("<H", tail, at + 10)
        locator = at - _ZIP64_LOCATOR_BYTES
        if entries == 0xFFFF and locator >= 0 and tail[locator : locator + 4] == _ZIP64_LOCATOR:
            (record_at,) = struct.unpack_from("<Q", tail, locator + 8)
            file.seek(record_at)
            record = file.read(56)
            if len(record) == 56 and record[:4] == _ZIP64_EOCD:
                (entries,) = struct.unpack_from("<Q", record, 32)
        return int(entries)


def tar_entries(
    archive: tarfile.TarFile, budget: ArchiveBudget, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS
) -> Iterator[tarfile.TarInfo]:
    """Each entry of a tar archive read as a stream, forgotten once the next is read (``TarFile``
    keeps every entry it has read otherwise: gigabytes for millions of them).

    Raises:
        ArchiveLimitExceeded: more than ``limits.max_members`` entries, or the decompressed stream
            (up to the end of this entry's data, as its header declares it) past the budget's ratio.
        tarfile.TarError, EOFError, OSError, zlib.error: the archive is damaged.
    """
    count = 0
    while (member := archive.next()) is not None:
        archive.members.clear()  # type: ignore[attr-defined]  # (undeclared in typeshed, but long-standing)
        count += 1
        if count > limits.max_members:
            raise ArchiveLimitExceeded(
                member.name, f"the archive holds more than {limits.max_members:,} files (MAX_MEMBERS)"
            )
        budget.at(archive.offset, member.name)
        yield member
