"""Serving the page: MIME types, cache headers, precompressed bodies, and nothing but the page."""

from __future__ import annotations

import re
from pathlib import Path

import brotli
import httpx
import pytest

from ai_search_server.encoding import accepted_codings
from ai_search_server.static import IMMUTABLE_CACHE, content_digest, page_source, versioned_static

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("path", "content_type", "cache"),
    [
        pytest.param("/", "text/html", "no-cache", id="page"),
        pytest.param("/py/files.json", "application/json", "no-cache", id="python-file-list"),
        pytest.param("/py/ai_search/__init__.py", "text/x-python", "no-cache", id="core-module"),
    ],
)
async def test_page_files_are_served_with_type_and_revalidation(
    client: httpx.AsyncClient, path: str, content_type: str, cache: str
) -> None:
    r = await client.get(path)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith(content_type)
    assert r.headers["cache-control"] == cache
    assert r.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/py/ai_search_server/settings.py", id="server-code"),
        pytest.param("/py/../pyproject.toml", id="dot-dot"),
        pytest.param("/static/../README.md", id="dot-dot-static"),
    ],
)
async def test_nothing_outside_the_page_is_served(client: httpx.AsyncClient, path: str) -> None:
    r = await client.get(path)
    assert r.status_code == 404


async def test_vendored_runtime_is_immutable_and_precompressed(client: httpx.AsyncClient) -> None:
    wasm = next((ROOT / "static" / "vendor").glob("pyodide-*/pyodide.asm.wasm"), None)
    if wasm is None:
        pytest.skip("static/vendor is not set up (scripts/setup vendors it)")
    url = "/" + wasm.relative_to(ROOT).as_posix()
    gz = await client.get(url, headers={"Accept-Encoding": "gzip"})
    assert gz.headers["content-type"] == "application/wasm"
    assert gz.headers["content-encoding"] == "gzip"
    assert gz.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert gz.content == wasm.read_bytes()  # httpx decodes the gzip body
    plain = await client.get(url, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert plain.content == wasm.read_bytes()


async def test_the_snapshot_setup_rebuilds_is_revalidated(client: httpx.AsyncClient) -> None:
    """scripts/setup remakes the Pyodide snapshot under the same name when the page's Python changes:
    a browser must not keep an old one for a year, as it keeps the rest of the vendored runtime."""
    snapshot = next((ROOT / "static" / "vendor").glob("pyodide-*/snapshot-v*.bin"), None)
    if snapshot is None:
        pytest.skip("static/vendor has no snapshot (scripts/setup makes it)")
    url = "/" + snapshot.relative_to(ROOT).as_posix()
    first = await client.get(url, headers={"Accept-Encoding": "gzip"})
    assert first.status_code == 200
    assert first.headers["cache-control"] == "no-cache"
    again = await client.get(url, headers={"Accept-Encoding": "gzip", "If-None-Match": first.headers["etag"]})
    assert again.status_code == 304


async def test_brotli_goes_first_where_the_browser_takes_it(client: httpx.AsyncClient) -> None:
    """The vendored wasm goes as setup's Brotli copy when the browser accepts br, gzip when it
    accepts only that, and as it is when it refuses both (q=0)."""
    wasm = next((ROOT / "static" / "vendor").glob("pyodide-*/pyodide.asm.wasm"), None)
    if wasm is None or not wasm.with_name(wasm.name + ".br").is_file():
        pytest.skip("static/vendor is not set up with Brotli copies (scripts/setup makes them)")
    url = "/" + wasm.relative_to(ROOT).as_posix()
    for header, coding in [
        ("gzip, deflate, br, zstd", "br"),
        ("gzip", "gzip"),
        ("br;q=0, gzip;q=0", None),
    ]:
        async with client.stream("GET", url, headers={"Accept-Encoding": header}) as r:
            raw = b"".join([chunk async for chunk in r.aiter_raw()])
        assert r.headers.get("content-encoding") == coding, header
        assert r.headers["vary"] == "Accept-Encoding"
        if coding == "br":
            assert brotli.decompress(raw) == wasm.read_bytes()
            assert len(raw) < len(wasm.with_name(wasm.name + ".gz").read_bytes())


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/static/fallback.js", id="page-script"),
        pytest.param("/py/ai_search/_grammar.py", id="page-module"),
    ],
)
async def test_the_pages_own_files_are_compressed_on_request(client: httpx.AsyncClient, path: str) -> None:
    """No precompressed copy: compressed when asked for (and kept), revalidated by an ETag of its own."""
    first = await client.get(path, headers={"Accept-Encoding": "br"})
    assert first.headers["content-encoding"] == "br"
    assert first.content == (ROOT / path.lstrip("/")).read_bytes()  # httpx decodes br
    again = await client.get(path, headers={"Accept-Encoding": "br", "If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    plain = await client.get(path, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert plain.headers["etag"] != first.headers["etag"]


@pytest.mark.parametrize(
    ("header", "codings"),
    [
        pytest.param("gzip, deflate, br, zstd", {"gzip", "deflate", "br", "zstd"}, id="chromium"),
        pytest.param("br;q=0, gzip", {"gzip"}, id="refused"),
        pytest.param("BR; q=0.5", {"br"}, id="weighted"),
        pytest.param("", set(), id="none"),
        pytest.param("gzip;q=x", {"gzip"}, id="bad-weight-accepts"),
    ],
)
def test_accept_encoding_is_read_with_its_weights(header: str, codings: set[str]) -> None:
    assert accepted_codings(header) == codings


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/", id="page"),
        pytest.param("/embed", id="widget-page"),
        pytest.param("/pyscript.toml", id="config"),
        pytest.param("/py/files.json", id="file-list"),
    ],
)
async def test_made_responses_are_compressed_and_revalidated(client: httpx.AsyncClient, path: str) -> None:
    """The pages and the config are made per request, yet a warm visit with nothing changed gets a
    304 without a body."""
    first = await client.get(path, headers={"Accept-Encoding": "br"})
    assert first.status_code == 200
    assert first.headers["content-encoding"] == "br"
    assert first.headers["cache-control"] == "no-cache"
    etag = first.headers["etag"]
    for sent in (etag, f'"other", W/{etag}', "*"):
        again = await client.get(path, headers={"Accept-Encoding": "br", "If-None-Match": sent})
        assert again.status_code == 304, sent
        assert again.content == b""
    changed = await client.get(path, headers={"Accept-Encoding": "gzip", "If-None-Match": etag})
    assert changed.status_code == 200  # another coding is another representation
    assert changed.headers["content-encoding"] == "gzip"


# The page's own static files each page names in a <script src> or <link rel=stylesheet>.
_OWN_STATIC = re.compile(r'(?:src|href)="\./static/((?!vendor/)[^"?]+)\?v=([0-9a-f]+)"')


@pytest.mark.parametrize(("path", "expected"), [("/", {"app.css", "fallback.js", "keys-boot.mjs"}),
                                                ("/embed", {"app.css", "embed.css", "embed-frame.js", "fallback.js", "keys-boot.mjs"})])  # fmt: skip
async def test_the_pages_name_their_own_files_at_their_digests(
    client: httpx.AsyncClient, path: str, expected: set[str]
) -> None:
    """A warm visit asks for none of the page's own scripts and styles: the page names each at its
    content digest, and that URL is immutable; the plain URL, or an old digest, is revalidated."""
    named = dict(_OWN_STATIC.findall((await client.get(path)).text))
    assert expected <= set(named), named
    for name, digest in named.items():
        assert digest == content_digest(ROOT / "static" / name), name
        kept = await client.get(f"/static/{name}?v={digest}")
        assert (kept.status_code, kept.headers["cache-control"]) == (200, IMMUTABLE_CACHE)
        for other in (f"/static/{name}", f"/static/{name}?v=0000000000000000"):
            assert (await client.get(other)).headers["cache-control"] == "no-cache", other


def test_modules_other_modules_import_keep_their_plain_url() -> None:
    """A module named by <link rel=modulepreload> is imported by another module by its plain URL;
    named at a digest it would be fetched and run twice."""
    html = ('<link rel="modulepreload" href="./static/pyodide-loader.mjs">'
            '<script type="module" src="./static/pyscript-boot.mjs"></script>'
            '<link rel="preload" href="./static/vendor/micropython-1.28.0-6/micropython.wasm" as="fetch">'
            '<script src="./static/no-such-file.js"></script>')  # fmt: skip
    digest = content_digest(ROOT / "static" / "pyscript-boot.mjs")
    assert versioned_static(html, ROOT) == html.replace("pyscript-boot.mjs", f"pyscript-boot.mjs?v={digest}")


@pytest.mark.parametrize("path", ["/", "/embed"])
async def test_both_pages_are_served_with_their_shared_part_written_in(
    client: httpx.AsyncClient, path: str
) -> None:
    """The interpreters' scripts (page-runtime.html) and the status line, results, answer and
    context (page-results.html) are written into both pages: each part once, without its readers'
    comment, and no line that named one is left."""
    html = (await client.get(path)).text
    for element_id in (
        'id="keys-bundle"',
        'id="status"',
        'id="result-list"',
        'id="answer"',
        'id="context-list"',
    ):
        assert html.count(element_id) == 1, element_id
    assert "<!-- part " not in html
    assert "cannot drift apart" not in html and "in one place" not in html


def test_a_page_naming_an_unknown_part_is_refused(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text("<body>\n  <!-- part secrets.txt -->\n</body>\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"secrets\.txt"):
        page_source(tmp_path, "page.html")
