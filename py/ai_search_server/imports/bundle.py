"""An export as named files, whatever holds them: a directory, a .zip, or a .tar.gz.

Slack hands out a zip, Mattermost a zip (or its bare JSONL), Zulip a tar.gz or its unpacked
directory. The importers read members by name (``users.json``, ``general/2026-11-02.json``) and never
care which it is. One leading folder that holds everything (``zulip-export-3f2a/``) is looked
through, so an export zipped with its folder reads like one zipped without.

Nothing is extracted to where a member's name points: a zip is read in place; a tar.gz (whose gzip
stream cannot seek) has its JSON members copied into a private temporary directory under the
``data`` extraction filter (no links, no absolute or ``..`` paths) and is read from there. A large
JSON member is read an item at a time (``Bundle.items``, ``json_stream``), never held whole.

What an archive may cost is bounded in total, not only per member (``archive_limits``). A zip over
``MAX_MEMBERS`` is refused before anything is read. Any other limit stops the archive where it is
reached (``ArchiveLimitExceeded``): what was read before stays read, ``stopped`` and ``damage`` say
why, and every later ``open`` refuses, so the importers import what came before, report the rest as
missing and delete nothing. A tar.gz stops copying there, and its copied members are read as they are.
A member whose compressed data is damaged (a zip's ``zlib.error``, a bad CRC) is a ``BundleError``
naming it, like any unreadable member.
"""

from __future__ import annotations

import contextlib
import io
import json
import lzma
import os
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO, Any

from .archive_limits import (
    DEFAULT_ARCHIVE_LIMITS,
    MAX_MEMBER_BYTES,
    ArchiveBudget,
    ArchiveLimitExceeded,
    ArchiveLimits,
    BundleError,
    tar_entries,
    zip_entry_count,
)
from .json_stream import JSONStreamError, json_items

__all__ = [
    "MAX_JSON_MEMBER_BYTES",
    "ArchiveLimitExceeded",
    "ArchiveLimits",
    "Bundle",
    "BundleError",
    "common_folder",
    "open_bundle",
]

# Bytes of a member parsed as one JSON document (held in memory while it is parsed): Zulip's
# realm.json, its tables of people, streams and subscriptions. Every list an export can hold in bulk
# (Slack's day files and lists, Zulip's messages) is streamed instead (``Bundle.items``).
MAX_JSON_MEMBER_BYTES = 1024**3
_READ_CHUNK_BYTES = 1024 * 1024
# Errors of a member's compressed data as it is read: the stream ends early, a bad CRC, bad deflate,
# bzip2 or xz data (zipfile raises each codec's own).
_UNREADABLE = (OSError, zipfile.BadZipFile, EOFError, RuntimeError, zlib.error, lzma.LZMAError)


class _CappedReader(io.RawIOBase):
    """Reads through ``raw``; fails once more than ``limit`` bytes came out, or once the archive's
    budget (when it has one) is spent, which ``stop`` is told first. Damaged compressed data is a
    BundleError naming the member, whoever reads."""

    def __init__(
        self,
        raw: IO[bytes],
        name: str,
        limit: int,
        budget: ArchiveBudget | None,
        stop: Callable[[ArchiveLimitExceeded], None],
    ) -> None:
        self.raw, self.name, self.limit, self.budget, self.stop, self.count = (
            raw,
            name,
            limit,
            budget,
            stop,
            0,
        )

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self.raw.read(len(buffer))
        except _UNREADABLE as error:
            raise BundleError(self.name, f"cannot be read ({type(error).__name__}: {error})") from None
        self.count += len(data)
        if self.count > self.limit:
            raise BundleError(self.name, f"larger than {self.limit:,} bytes once decompressed")
        if self.budget is not None:
            try:
                self.budget.spend(len(data), self.name)
            except ArchiveLimitExceeded as error:
                self.stop(error)
                raise
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.raw.close()
        super().close()


class Bundle:
    """Members by relative POSIX name (``general/2026-11-02.json``), sizes, and readers."""

    def __init__(
        self,
        label: str,
        sizes: dict[str, int],
        opener: Callable[[str], IO[bytes]],
        budget: ArchiveBudget | None = None,
    ) -> None:
        self.label = label
        prefix = common_folder(sizes)
        self._real = {name[len(prefix) :]: name for name in sizes if name[len(prefix) :]}
        self._sizes = {short: sizes[real] for short, real in self._real.items()}
        self._opener = opener
        self._budget = budget  # None: the members are files on disk already (a folder, a copied tar)
        self.damage: str | None = None  # why part of the archive could not be read, if it could not
        self.stopped: ArchiveLimitExceeded | None = None  # the limit that ended reading, if one did

    def names(self) -> list[str]:
        return sorted(self._sizes)

    def __contains__(self, name: str) -> bool:
        return name in self._sizes

    def size(self, name: str) -> int:
        return self._sizes[name]

    def total_size(self, names: list[str] | None = None) -> int:
        return sum(self._sizes[n] for n in (self._sizes if names is None else names))

    def stop(self, error: ArchiveLimitExceeded) -> None:
        """Read nothing more of the archive: ``error`` says which limit, reached reading which member."""
        if self.stopped is None:
            self.stopped = error
            self.damage = (
                f"stopped reading at {error.name}: {error.reason}; the rest of the archive is not imported"
            )

    @contextmanager
    def open(self, name: str, *, limit: int = MAX_MEMBER_BYTES) -> Iterator[IO[bytes]]:
        """The member as a binary stream, failing past ``limit`` decompressed bytes.

        Raises:
            ArchiveLimitExceeded: the archive went past its limits (now or earlier): nothing more is read.
            BundleError: no such member, or it cannot be read.
        """
        if self.stopped is not None:
            raise ArchiveLimitExceeded(name, f"not read: {self.stopped.reason}")
        if name not in self._real:
            raise BundleError(name, f"not in {self.label}")
        try:
            raw = self._opener(self._real[name])
        except (OSError, zipfile.BadZipFile, tarfile.TarError, RuntimeError) as error:
            raise BundleError(name, f"cannot be read ({error})") from None
        reader = io.BufferedReader(
            _CappedReader(raw, name, limit, self._budget, self.stop), _READ_CHUNK_BYTES
        )
        try:
            yield reader
        except _UNREADABLE as error:
            raise BundleError(name, f"cannot be read ({type(error).__name__}: {error})") from None
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

    def items(self, name: str, *, key: str | None = None, shape: str | None) -> Iterator[Any]:
        """The items of the JSON array that member ``name`` is (with ``key``: that is under ``key`` of
        the object it is), one at a time: a day file or a messages file is never held whole.

        Raises:
            BundleError: missing, unreadable, past a limit, not UTF-8, not JSON or an item too long,
                once the items before the fault were yielded; or JSON of another shape, with the reason
                ``shape`` (None: such a member holds no items, and nothing is raised).
        """
        with self.open(name) as stream:
            try:
                yield from json_items(stream, key=key)
            except JSONStreamError as error:
                if error.shape and shape is None:
                    return
                raise BundleError(name, shape if error.shape and shape else error.reason) from None


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


def _copy_member(
    archive: tarfile.TarFile, member: tarfile.TarInfo, folder: Path, budget: ArchiveBudget
) -> bool:
    """Copy one regular file of a tar archive under ``folder``, charging the budget for each byte
    written; False (nothing written) when its name is absolute or climbs out with ``..``.

    Written out rather than ``TarFile.extract(filter="data")``: that filter is missing from the
    CPython 3.11 releases before 3.11.4, which the server supports. Only regular files reach here
    (links and devices are never copied), so the name is the one thing to check; the copy gets
    default permissions, never the archive's mode bits.

    Raises:
        ArchiveLimitExceeded: the budget ran out during the copy (the part written is left for the
            caller to remove).
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
        while chunk := source.read(_READ_CHUNK_BYTES):
            budget.spend(len(chunk), member.name)
            out.write(chunk)
    return True


@contextmanager
def open_bundle(
    path: Path,
    *,
    members: tuple[str, ...] = (".json", ".jsonl"),
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
) -> Iterator[Bundle]:
    """The export at ``path``: a directory, a zip or a gzipped tar. A tar.gz has only the members
    whose names end with one of ``members`` copied out (uploads and avatars are not).

    Raises:
        BundleError: the zip is damaged or holds more than ``limits.max_members`` members.
        OSError: the path cannot be read.
    """
    if path.is_dir():
        yield _directory(path)
        return
    budget = ArchiveBudget(path.stat().st_size, limits)
    if zipfile.is_zipfile(path):
        declared = zip_entry_count(path)
        if declared is not None and declared > limits.max_members:
            raise BundleError(
                str(path), f"holds {declared:,} files, more than {limits.max_members:,} (MAX_MEMBERS)"
            )
        try:
            archive = zipfile.ZipFile(path)
        except zipfile.BadZipFile as error:
            raise BundleError(str(path), f"a damaged zip ({error})") from None
        with archive:
            infos = [info for info in archive.infolist() if not info.is_dir()]
            if len(infos) > limits.max_members:
                raise BundleError(str(path), f"holds more than {limits.max_members:,} files (MAX_MEMBERS)")
            yield Bundle(str(path), {i.filename: i.file_size for i in infos}, archive.open, budget)
        return
    try:
        archive_tar = tarfile.open(path, mode="r:*")  # noqa: SIM115 - closed by the with below
    except tarfile.TarError as error:
        raise BundleError(str(path), f"neither a directory, a zip nor a tar archive ({error})") from None
    with archive_tar, tempfile.TemporaryDirectory(prefix="ai-search-import-") as tmp:
        yield _copied(archive_tar, Path(tmp), str(path), members, budget)


def _copied(
    archive: tarfile.TarFile, folder: Path, label: str, members: tuple[str, ...], budget: ArchiveBudget
) -> Bundle:
    """The wanted members of a tar archive copied under ``folder``, as a Bundle of that folder whose
    ``damage`` says where the archive broke or went past a limit, if it did: what was copied whole
    before is read as it is."""
    damage, done, refused, too_large = None, 0, [], []
    copying: tarfile.TarInfo | None = None
    try:
        for member in tar_entries(archive, budget, budget.limits):
            wanted = member.isfile() and member.name.endswith(members)
            if wanted and member.size > budget.limits.max_member_bytes:
                too_large.append(member.name)
                wanted = False
            copying = member
            if wanted and not _copy_member(archive, member, folder, budget):
                refused.append(member.name)  # a name pointing outside: never written
            copying = None
            done += 1
    except ArchiveLimitExceeded as error:
        damage = (
            f"stopped after its first {done:,} files, at {error.name}: {error.reason}; "
            "the rest is not imported"
        )
    except (tarfile.TarError, EOFError, OSError, zlib.error) as error:
        # A cut or damaged archive: what came before the damage is imported, and the report says so.
        damage = f"the archive is damaged after its first {done:,} files ({error}); the rest is missing"
    if copying is not None:  # the member being copied when it broke is dropped rather than read half
        with contextlib.suppress(OSError, ValueError):
            partial = folder / copying.name
            if partial.resolve().is_relative_to(folder.resolve()):
                partial.unlink(missing_ok=True)
    for skipped, why in (
        (refused, "refused for their names"),
        (
            too_large,
            f"not read, each larger than {budget.limits.max_member_bytes:,} bytes (MAX_MEMBER_BYTES)",
        ),
    ):
        if skipped:
            names = ", ".join(skipped[:3]) + (" ..." if len(skipped) > 3 else "")
            files = f"{len(skipped):,} file{'s' * (len(skipped) != 1)}"
            damage = "; ".join(filter(None, [damage, f"{files} {why} ({names})"]))
    bundle = _directory(folder)
    bundle.label = label
    bundle.damage = damage
    return bundle
