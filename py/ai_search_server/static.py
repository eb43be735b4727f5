"""Serving the page: the right MIME types, precompressed bodies and cache headers.

Vendored runtime files live in versioned folders (``static/vendor/pyodide-314.0.2/``), so they are
cached for a year as immutable; everything else (the page, its Python files) is revalidated with an
ETag on each load, so a deploy is seen at once. ``scripts/setup`` writes a ``.gz`` beside each large
vendored file; it is sent to browsers that accept gzip, so nothing is compressed per request.
"""

from __future__ import annotations

import mimetypes
import os
from pathlib import Path

from starlette.datastructures import Headers
from starlette.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

__all__ = ["IMMUTABLE_CACHE", "PROJECT_ROOT", "REVALIDATE_CACHE", "PageFiles"]

# The project root: index.html, pyscript.toml, py/ and static/ are served from here.
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


class PageFiles(StaticFiles):
    """StaticFiles with precompressed ``.gz`` siblings and cache headers by folder."""

    def __init__(self, *, directory: Path, immutable_prefixes: tuple[str, ...] = ()) -> None:
        super().__init__(directory=directory, check_dir=False)
        self.immutable_prefixes = immutable_prefixes

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
        immutable = any(rel.startswith(p) for p in self.immutable_prefixes)
        media_type = mimetypes.guess_type(path)[0] or "application/octet-stream"
        gz = path + ".gz"
        if "gzip" in request_headers.get("accept-encoding", "") and os.path.isfile(gz):
            response: Response = FileResponse(
                gz, status_code=status_code, media_type=media_type, stat_result=os.stat(gz)
            )
            response.headers["content-encoding"] = "gzip"
            response.headers["vary"] = "Accept-Encoding"
        else:
            response = super().file_response(full_path, stat_result, scope, status_code)
            response.headers["content-type"] = media_type + (
                "; charset=utf-8" if media_type.startswith("text/") else ""
            )
        response.headers["cache-control"] = IMMUTABLE_CACHE if immutable else REVALIDATE_CACHE
        return response
