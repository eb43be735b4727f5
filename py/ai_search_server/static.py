"""Serving the page: the right MIME types, precompressed bodies and cache headers.

Vendored runtime files live in versioned folders (``static/vendor/pyodide-314.0.2/``), so they are
cached for a year as immutable; everything else (the page, its Python files) is revalidated with an
ETag on each load, so a deploy is seen at once. The page's Python files are the exception that
needs no revalidation: ``GET /py/files.json`` lists them with each URL carrying its content digest
(``/py/ai_search/_grammar.py?v=…``, :func:`python_files`), and a request whose ``v`` is the file's
current digest is cached as immutable, so a warm visit fetches none of them. ``scripts/setup`` writes a ``.gz`` beside each large
vendored file; it is sent to browsers that accept gzip, so nothing is compressed per request.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import re
from pathlib import Path
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.responses import FileResponse, Response
from starlette.staticfiles import NotModifiedResponse, StaticFiles
from starlette.types import Scope

__all__ = [
    "IMMUTABLE_CACHE",
    "PAGE_PACKAGES",
    "PROJECT_ROOT",
    "REVALIDATE_CACHE",
    "PageFiles",
    "content_digest",
    "python_files",
]

# The project root: index.html, embed.html, py/ and static/ are served from here.
PROJECT_ROOT = Path(__file__).resolve().parents[2]
IMMUTABLE_CACHE = "public, max-age=31536000, immutable"
REVALIDATE_CACHE = "no-cache"

# Set explicitly so serving does not depend on the machine's mime.types file.
for _ext, _type in {
    ".wasm": "application/wasm",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".toml": "text/plain",
    ".py": "text/x-python",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".json": "application/json",
    ".css": "text/css",
    ".svg": "image/svg+xml",
}.items():
    mimetypes.add_type(_type, _ext)


# Hex digits of SHA-256 in a versioned URL: enough that two versions of a file never share one.
DIGEST_HEX_CHARS = 16
# The folders of py/ the page runs in Pyodide (every module of each; the server's own is not the
# page's business). static/python-boot.mjs writes them into Pyodide's file system.
PAGE_PACKAGES = ("ai_search", "ai_search_web")
_digests: dict[tuple[str, int, int], str] = {}
# Files under an immutable prefix that scripts/setup rebuilds in place (the Pyodide memory snapshot,
# remade whenever the page's Python changes, under a name that stays): revalidated, so a browser
# never keeps one that no longer matches the page.
_REBUILT_IN_PLACE = re.compile(r"/snapshot-v\d+\.bin$")


def content_digest(path: str | os.PathLike[str]) -> str:
    """The file's SHA-256 prefix, remembered per (path, mtime, size) so a request costs a stat."""
    stat = os.stat(path)
    key = (os.fspath(path), stat.st_mtime_ns, stat.st_size)
    if key not in _digests:
        with open(path, "rb") as handle:
            _digests[key] = hashlib.sha256(handle.read()).hexdigest()[:DIGEST_HEX_CHARS]
    return _digests[key]


def python_files(root: Path) -> dict[str, str]:
    """Each page module's path in Pyodide's file system -> its URL at its current digest.

    Read from the folders on every call (a stat per file), so a module added or edited is served
    at once and none can be left out of a hand-kept list.
    """
    return {
        f"{package}/{path.name}": f"/py/{package}/{path.name}?v={content_digest(path)}"
        for package in PAGE_PACKAGES
        for path in sorted((root / "py" / package).glob("*.py"))
    }


class PageFiles(StaticFiles):
    """StaticFiles with precompressed ``.gz`` siblings and cache headers by folder.

    ``versioned``: a request whose ``v`` query parameter is the file's :func:`content_digest` is
    immutable (any other ``v``, or none, is revalidated as usual).
    """

    def __init__(
        self, *, directory: Path, immutable_prefixes: tuple[str, ...] = (), versioned: bool = False
    ) -> None:
        super().__init__(directory=directory, check_dir=False)
        self.immutable_prefixes = immutable_prefixes
        self.versioned = versioned

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        request_headers = Headers(scope=scope)
        path = str(full_path)
        rel = scope.get("path", "")
        immutable = any(rel.startswith(p) for p in self.immutable_prefixes) and not _REBUILT_IN_PLACE.search(
            rel
        )
        if self.versioned and not immutable:
            wanted = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("v", [])
            immutable = wanted == [content_digest(path)]
        media_type = mimetypes.guess_type(path)[0] or "application/octet-stream"
        gz = path + ".gz"
        if "gzip" in request_headers.get("accept-encoding", "") and os.path.isfile(gz):
            response: Response = FileResponse(
                gz, status_code=status_code, media_type=media_type, stat_result=os.stat(gz)
            )
            response.headers["content-encoding"] = "gzip"
            response.headers["vary"] = "Accept-Encoding"
            if self.is_not_modified(response.headers, request_headers):
                response = NotModifiedResponse(response.headers)
        else:
            response = super().file_response(full_path, stat_result, scope, status_code)
            response.headers["content-type"] = media_type + (
                "; charset=utf-8" if media_type.startswith("text/") else ""
            )
        response.headers["cache-control"] = IMMUTABLE_CACHE if immutable else REVALIDATE_CACHE
        return response
