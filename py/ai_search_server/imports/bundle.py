"""An export as named files, whatever holds them: a directory, a .zip, or a .tar.gz.

Slack hands out a zip, Mattermost a zip (or its bare JSONL), Zulip a tar.gz or its unpacked
directory. The importers read members by name (``users.json``, ``general/2026-11-02.json``) and never
care which it is. One leading folder that holds everything (``zulip-export-3f2a/``) is looked
through, so an export zipped with its folder reads like one zipped without.

Nothing is extracted to where a member's name points: a zip is read in place; a tar.gz (whose gzip
stream cannot seek) has its JSON members copied into a private temporary directory under the
``data`` extraction filter (no links, no absolute or ``..`` paths) and is read from there. Every
member read is capped at ``MAX_MEMBER_BYTES`` as it is decompressed, whatever the archive claims,
so a zip bomb stops at the cap instead of filling memory.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO, Any

__all__ = [
    "MAX_JSON_MEMBER_BYTES",
    "MAX_MEMBERS",
    "MAX_MEMBER_BYTES",
    "Bundle",
    "BundleError",
    "common_folder",
    "open_bundle",
]

# Bytes of one member of an export, decompressed: a Slack day file is kilobytes, a Zulip messages
# chunk (1,000 messages) a few megabytes, a Mattermost JSONL of a large workspace some gigabytes
# (it is streamed, never held). The cap is there for bombs, not for real exports.
MAX_MEMBER_BYTES = 16 * 1024**3
# Bytes of a member parsed as one JSON document (held in memory while it is parsed).
MAX_JSON_MEMBER_BYTES = 1024**3
# Members of an archive: far more than any export has (a Slack workspace of 1,000 channels over ten
# years has about 3.6 million day files, so this does cap the largest; they can be imported unzipped).
MAX_MEMBERS = 5_000_000
_READ_CHUNK_BYTES = 1024 * 1024


class BundleError(Exception):
    """A member cannot be read: the message names it and says why (``reason`` without the name)."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


class _CappedReader(io.RawIOBase):
    """Reads through ``raw`` and fails once more than ``limit`` bytes came out."""

    def __init__(self, raw: IO[bytes], name: str, limit: int) -> None:
        self.raw, self.name, self.limit, self.count = raw, name, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        self.count += len(data)
        if self.count > self.limit:
            raise BundleError(self.name, f"larger than {self.limit:,} bytes once decompressed")
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.raw.close()
        super().close()


class Bundle:
    """Members by relative POSIX name (``general/2026-11-02.json``), sizes, and readers."""

    def __init__(self, label: str, sizes: dict[str, int], opener: Any) -> None:
        self.label = label
        prefix = common_folder(sizes)
        self._real = {name[len(prefix) :]: name for name in sizes if name[len(prefix) :]}
        self._sizes = {short: sizes[real] for short, real in self._real.items()}
        self._opener = opener
        self.damage: str | None = None  # why part of the archive could not be read, if it could not

    def names(self) -> list[str]:
        return sorted(self._sizes)

    def __contains__(self, name: str) -> bool:
        return name in self._sizes

    def size(self, name: str) -> int:
        return self._sizes[name]

    def total_size(self, names: list[str] | None = None) -> int:
        return sum(self._sizes[n] for n in (self._sizes if names is None else names))

    @contextmanager
    def open(self, name: str, *, limit: int = MAX_MEMBER_BYTES) -> Iterator[IO[bytes]]:
        """The member as a binary stream, failing past ``limit`` decompressed bytes.

        Raises:
            BundleError: no such member, or it cannot be read.
        """
        if name not in self._real:
            raise BundleError(name, f"not in {self.label}")
        try:
            raw = self._opener(self._real[name])
        except (OSError, zipfile.BadZipFile, tarfile.TarError, RuntimeError) as error:
            raise BundleError(name, f"cannot be read ({error})") from None
        reader = io.BufferedReader(_CappedReader(raw, name, limit), _READ_CHUNK_BYTES)
        try:
            yield reader
        except (OSError, zipfile.BadZipFile, EOFError, RuntimeError) as error:
            raise BundleError(name, f"cannot be read ({error})") from None
        finally:
            reader.close()

    def read_json(self, name: str) -> Any:
        """The member parsed as one JSON document.

        Raises:
            BundleError: missing, unreadable, too large, not UTF-8 or not JSON; the message says which.
        """
        with self.open(name, limit=MAX_JSON_MEMBER_BYTES) as stream:
            data = stream.read()
        try:
            return json.loads(data.decode("utf-8-sig"))
        except UnicodeDecodeError:
            raise BundleError(name, "not valid UTF-8") from None
        except json.JSONDecodeError as error:
            raise BundleError(
                name, f"invalid JSON ({error.msg}, line {error.lineno} column {error.colno})"
            ) from None
        except RecursionError:
            raise BundleError(name, "invalid JSON (nested too deeply)") from None


def common_folder(names: Iterable[str]) -> str:
    """``folder/`` when every name is inside that one folder, else empty."""
    names = list(names)
    firsts = {PurePosixPath(name).parts[0] for name in names if PurePosixPath(name).parts}
    if len(firsts) != 1 or any("/" not in name for name in names):
        return ""
    return f"{next(iter(firsts))}/"


def _directory(path: Path) -> Bundle:
    sizes: dict[str, int] = {}
    for root, _dirs, files in os.walk(path):
        for file in files:
            full = Path(root) / file
            if full.is_file() and not full.is_symlink():
                sizes[full.relative_to(path).as_posix()] = full.stat().st_size
    return Bundle(str(path), sizes, lambda name: (path / name).open("rb"))


def _copy_member(archive: tarfile.TarFile, member: tarfile.TarInfo, folder: Path) -> bool:
    """Copy one regular file of a tar archive under ``folder``; False (nothing written) when its name
    is absolute or climbs out with ``..``.

    Written out rather than ``TarFile.extract(filter="data")``: that filter is missing from the
    CPython 3.11 releases before 3.11.4, which the server supports. Only regular files reach here
    (links and devices are never copied), so the name is the one thing to check; the copy gets
    default permissions, never the archive's mode bits.
    """
    name = PurePosixPath(member.name)
    if name.is_absolute() or ".." in name.parts:
        return False
    target = folder.joinpath(*name.parts)
    if not target.resolve().is_relative_to(folder.resolve()):
        return False
    source = archive.extractfile(member)
    if source is None:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    with source, target.open("wb") as out:
        shutil.copyfileobj(source, out)
    return True


@contextmanager
def open_bundle(path: Path, *, members: tuple[str, ...] = (".json", ".jsonl")) -> Iterator[Bundle]:
    """The export at ``path``: a directory, a zip or a gzipped tar. A tar.gz has only the members
    whose names end with one of ``members`` copied out (uploads and avatars are not).

    Raises:
        BundleError: the archive is damaged or holds more than MAX_MEMBERS members.
        OSError: the path cannot be read.
    """
    if path.is_dir():
        yield _directory(path)
        return
    if zipfile.is_zipfile(path):
        try:
            archive = zipfile.ZipFile(path)
        except zipfile.BadZipFile as error:
            raise BundleError(str(path), f"a damaged zip ({error})") from None
        with archive:
            infos = [info for info in archive.infolist() if not info.is_dir()]
            if len(infos) > MAX_MEMBERS:
                raise BundleError(str(path), f"more than {MAX_MEMBERS:,} files")
            yield Bundle(str(path), {i.filename: i.file_size for i in infos}, archive.open)
        return
    try:
        archive_tar = tarfile.open(path, mode="r:*")  # noqa: SIM115 - closed by the with below
    except tarfile.TarError as error:
        raise BundleError(str(path), f"neither a directory, a zip nor a tar archive ({error})") from None
    with archive_tar, tempfile.TemporaryDirectory(prefix="ai-search-import-") as tmp:
        damage, count, refused, member = None, 0, [], None
        try:
            for count, member in enumerate(archive_tar, start=1):
                if count > MAX_MEMBERS:
                    raise BundleError(str(path), f"more than {MAX_MEMBERS:,} files")
                wanted = member.isfile() and member.name.endswith(members) and member.size <= MAX_MEMBER_BYTES
                if wanted and not _copy_member(archive_tar, member, Path(tmp)):
                    refused.append(member.name)  # a name pointing outside: never written
        except (tarfile.TarError, EOFError, OSError, zlib.error) as error:
            # A cut or damaged archive: what came before the damage is imported, and the report says so;
            # the member being copied when it broke is dropped rather than read half.
            damage = (
                f"the archive is damaged after its first {count - 1:,} files ({error}); the rest is missing"
            )
            if member is not None:
                with contextlib.suppress(OSError, ValueError):
                    partial = Path(tmp) / member.name
                    if partial.resolve().is_relative_to(Path(tmp).resolve()):
                        partial.unlink(missing_ok=True)
        if refused:
            names = ", ".join(refused[:3]) + (" ..." if len(refused) > 3 else "")
            damage = "; ".join(
                filter(None, [damage, f"{len(refused):,} files refused for their names ({names})"])
            )
        bundle = _directory(Path(tmp))
        bundle.label = str(path)
        bundle.damage = damage
        yield bundle
