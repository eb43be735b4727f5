"""Content codings for the page's files: Brotli where the browser takes it, else gzip, else none.

The first visit's bytes are mostly the Python runtime (Pyodide's wasm and its memory snapshot), and
Brotli at its highest setting sends them about a quarter smaller than gzip (the wasm: 2.77 MB
against 3.60 MB gzip -9; ``docs/page.md``, "Bytes on the wire"). Those large files are compressed
once, by ``scripts/setup`` (:func:`precompress`, a ``.br`` and a ``.gz`` beside each); the page's own
small files (its HTML, CSS, scripts and Python modules) are compressed on their first request and
kept in memory per file version, at a quality that costs a few milliseconds.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import brotli

__all__ = [
    "CODINGS",
    "COMPRESSIBLE_SUFFIXES",
    "MIN_COMPRESSIBLE_BYTES",
    "accepted_codings",
    "compress",
    "encode_small",
    "precompress",
]

# (content coding, suffix of its precompressed sibling), best first.
CODINGS = (("br", ".br"), ("gzip", ".gz"))
# Files smaller than this go as they are: a coding's framing and the header cost more than it saves.
MIN_COMPRESSIBLE_BYTES = 1024
# A compressed copy is kept only when it saves at least this share of the file (an already
# compressed file such as a zip would only cost the browser a decode).
MIN_SAVING_SHARE = 0.1
COMPRESSIBLE_SUFFIXES = frozenset(
    {".js", ".mjs", ".css", ".html", ".json", ".wasm", ".py", ".toml", ".svg", ".bin", ".txt"}
)
# setup's Brotli: the highest quality with a 16 MiB window (the largest browsers decode), minutes of
# CPU once per vendored file for the fewest bytes on every first visit.
SETUP_BROTLI_QUALITY = 11
SETUP_BROTLI_WINDOW_BITS = 24
SETUP_GZIP_LEVEL = 9
# Per-request Brotli for the page's own small files (at most a few hundred KB): a few ms each,
# once per file version, within a few percent of the highest quality on text.
ON_REQUEST_BROTLI_QUALITY = 5
ON_REQUEST_GZIP_LEVEL = 6
# Larger files are never compressed per request (a vendored file setup has not precompressed yet
# would hold the event loop for a second); they go as they are.
MAX_ON_REQUEST_BYTES = 1_000_000
# Compressed copies kept in memory: the page's files are a few dozen, so this only bounds a
# server whose files keep changing (the cache starts over when it is full).
MAX_CACHED_COPIES = 512

_cache: dict[tuple[str, int, int, str], bytes] = {}


def accepted_codings(header: str) -> set[str]:
    """The content codings an ``Accept-Encoding`` header accepts (``q=0`` refuses one)."""
    accepted = set()
    for item in header.split(","):
        name, _, params = item.strip().partition(";")
        quality = params.strip().removeprefix("q=").strip() if params.strip().startswith("q=") else "1"
        try:
            refused = float(quality) <= 0
        except ValueError:
            refused = False
        if name and not refused:
            accepted.add(name.strip().lower())
    return accepted


def _encode(data: bytes, coding: str, *, setup: bool) -> bytes:
    if coding == "br":
        if setup:
            return bytes(brotli.compress(data, quality=SETUP_BROTLI_QUALITY, lgwin=SETUP_BROTLI_WINDOW_BITS))
        return bytes(brotli.compress(data, quality=ON_REQUEST_BROTLI_QUALITY))
    level = SETUP_GZIP_LEVEL if setup else ON_REQUEST_GZIP_LEVEL
    return gzip.compress(data, compresslevel=level, mtime=0)


def encode_small(data: bytes, coding: str) -> bytes:
    """A small body made per request (a page, its file list) in ``coding``: a millisecond or two."""
    return _encode(data, coding, setup=False)


def compress(path: str, coding: str, stat: os.stat_result) -> bytes | None:
    """The file's body in ``coding``, or None when compressing it is not worth it (or too slow)."""
    if not MIN_COMPRESSIBLE_BYTES <= stat.st_size <= MAX_ON_REQUEST_BYTES:
        return None
    key = (path, stat.st_mtime_ns, stat.st_size, coding)
    if key not in _cache:
        if len(_cache) >= MAX_CACHED_COPIES:
            _cache.clear()
        with open(path, "rb") as handle:
            data = handle.read()
        packed = _encode(data, coding, setup=False)
        _cache[key] = packed if len(packed) <= len(data) * (1 - MIN_SAVING_SHARE) else b""
    return _cache[key] or None


def precompress(folder: Path) -> list[Path]:
    """``scripts/setup``: a ``.br`` and a ``.gz`` beside every compressible file under ``folder``
    that lacks one or is newer than it; returns the files written."""
    written = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.suffix not in COMPRESSIBLE_SUFFIXES:
            continue
        if path.stat().st_size < MIN_COMPRESSIBLE_BYTES:
            continue
        data = None
        for coding, suffix in CODINGS:
            target = path.with_name(path.name + suffix)
            if target.is_file() and target.stat().st_mtime_ns >= path.stat().st_mtime_ns:
                continue
            data = path.read_bytes() if data is None else data
            packed = _encode(data, coding, setup=True)
            target.unlink(missing_ok=True)
            if len(packed) <= len(data) * (1 - MIN_SAVING_SHARE):
                partial = target.with_name(target.name + ".tmp")
                partial.write_bytes(packed)
                partial.rename(target)  # never a half-written copy under the served name
                written.append(target)
    return written


if __name__ == "__main__":
    import sys

    for root in sys.argv[1:]:
        for written_path in precompress(Path(root)):
            print(f"precompressed {written_path} ({written_path.stat().st_size:,} bytes)")
