"""What each file of a first visit costs in each content coding: the measurement behind the
server's choice of Brotli (``ai_search_server/encoding.py``), printed by bench/bench_page.py.

For every file the page loaded from the site (API answers are data, not files, and are left out):
its size as it is, gzip at setup's level and Brotli at setup's quality (the ``.gz``/``.br``
siblings ``scripts/setup`` wrote, or the same settings computed here for the page's own files),
beside what the browser was actually sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ai_search_server.encoding import SETUP_BROTLI_QUALITY, SETUP_BROTLI_WINDOW_BITS, SETUP_GZIP_LEVEL
from ai_search_server.static import page_source

__all__ = ["FileCodings", "file_codings"]

# Paths the server makes per request, and the file each is made from.
_MADE = {"/": "index.html", "/embed": "embed.html", "/py/files.json": None}


@dataclass(frozen=True)
class FileCodings:
    path: str
    wire: int  # bytes on the wire in the visit (headers included)
    coding: str  # the content coding the server chose ("" for none)
    raw: int
    gzip: int
    brotli: int


def _sizes(file: Path, data: bytes | None = None) -> tuple[int, int, int]:
    """The file's bytes (or ``data``, what the server makes of it) as they are, gzip -9, Brotli 11."""
    import gzip

    import brotli

    data = file.read_bytes() if data is None else data
    siblings = [file.with_name(file.name + suffix) for suffix in (".gz", ".br")]
    gz = siblings[0].stat().st_size if siblings[0].is_file() else len(gzip.compress(data, SETUP_GZIP_LEVEL))
    br = (
        siblings[1].stat().st_size
        if siblings[1].is_file()
        else len(brotli.compress(data, quality=SETUP_BROTLI_QUALITY, lgwin=SETUP_BROTLI_WINDOW_BITS))
    )
    return len(data), gz, br


def file_codings(site: Path, files: dict[str, list[int | str]]) -> list[FileCodings]:
    """One row per file of ``files`` (URL -> [bytes on the wire, coding]) found under ``site``,
    largest first."""
    rows = []
    for url, (wire, coding) in files.items():
        path = urlparse(url).path
        if path.startswith("/api/"):
            continue
        name = _MADE.get(path, path.lstrip("/"))
        if name is None or not (site / name).is_file():
            continue
        # A page is served with its parts written in (static.page_source), and is measured so.
        made = page_source(site, name).encode("utf-8") if path in _MADE else None
        raw, gz, br = _sizes(site / name, made)
        rows.append(FileCodings(path, int(wire), str(coding), raw, gz, br))
    return sorted(rows, key=lambda row: -row.raw)
