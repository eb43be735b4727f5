"""Pyodide's own start (page_python = "pyodide"): its memory snapshot from the server, the copy kept
in Cache Storage and checked, the core and the page modules it hands out, and a fresh start without
it. The page on MicroPython (the default) starts without any of this: tests/browser/test_start.py."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import PYTHON_READY_MS, PageRecord, Server, open_page

pytestmark = pytest.mark.browser


@pytest.fixture(scope="session")
def server(pyodide_server: Server) -> Server:
    """This module's pages run on Pyodide."""
    return pyodide_server


SNAPSHOT_URLS = "**/static/vendor/pyodide-*/snapshot-v*.bin"
SNAPSHOT_CACHE = "ai-search-pyodide-snapshot"  # static/pyodide-loader.mjs


def _chips_work(page: Any) -> None:
    page.fill("#search-box", "after:2026-11-01 ")
    page.dispatch_event("#search-box", "input")
    assert page.inner_text("#chips .chip-label") == "after:2026-11-01"


# The page's own record of its snapshot requests: [HTTP status, bytes on the wire] each.
SNAPSHOT_REQUESTS = """performance.getEntriesByType("resource").filter((e) => e.name.includes("/snapshot-v"))
  .map((e) => [e.responseStatus, e.transferSize])"""
# Bytes a response without a body stays under (headers only).
SMALL_RESPONSE_BYTES = 2048


def _forget_snapshots(page: Any, server: Server) -> None:
    """No snapshot kept in this origin's Cache Storage (the tests share one browser profile)."""
    # Chromium asks for /favicon.ico after showing a plain file, at a moment of its own (after goto
    # returns, sometimes after the next navigation began), so the answer stays routed for the test.
    page.route("**/favicon.ico", lambda route: route.fulfill(status=204))
    page.goto(server.url + "static/app.css")
    page.evaluate(f"caches.delete({SNAPSHOT_CACHE!r})")


def test_python_starts_from_the_servers_memory_snapshot(page: Any, server: Server) -> None:
    """scripts/setup makes a Pyodide memory snapshot in Node; the page restores it (a first visit
    too) and Python works the same: the grammar turns a finished filter into a chip."""
    _forget_snapshots(page, server)
    open_page(page, server)
    assert page.evaluate("[window.__pySnapshot, window.__pySnapshotFrom, window.__pySnapshotVia]") == [
        "loaded",
        "server",
        "network",
    ]
    _chips_work(page)


def test_a_warm_start_restores_the_kept_copy_and_checks_it(page: Any, server: Server) -> None:
    """After a first visit the server's snapshot is kept in Cache Storage; the next start restores
    that copy without downloading it, then asks once whether the server's changed (here: not, then
    yes, and the new one replaces the copy)."""
    _forget_snapshots(page, server)
    open_page(page, server)
    page.wait_for_function("() => window.__pySnapshotCopy === 'stored'", timeout=PYTHON_READY_MS)
    page.reload()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert page.evaluate("[window.__pySnapshotFrom, window.__pySnapshotVia]") == ["server", "cache"]
    page.wait_for_function("() => window.__pySnapshotCopy === 'current'", timeout=PYTHON_READY_MS)
    asked = page.evaluate(SNAPSHOT_REQUESTS)
    assert [status for status, _size in asked] == [304]  # one conditional request, nothing downloaded
    assert asked[0][1] < SMALL_RESPONSE_BYTES
    _chips_work(page)

    def rebuilt(route: Any) -> None:  # setup made a new snapshot since: another ETag
        response = route.fetch(
            headers={k: v for k, v in route.request.headers.items() if k != "if-none-match"}
        )
        route.fulfill(response=response, headers={**response.headers, "etag": '"rebuilt"'})

    page.route(SNAPSHOT_URLS, rebuilt)
    page.reload()
    page.wait_for_function("() => window.__pySnapshotCopy === 'replaced'", timeout=PYTHON_READY_MS)
    page.unroute(SNAPSHOT_URLS)
    page.reload()
    page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
    assert page.evaluate("[window.__pySnapshotFrom, window.__pySnapshotVia]") == ["server", "cache"]
    page.wait_for_function("() => window.__pySnapshotCopy !== undefined", timeout=PYTHON_READY_MS)
    _chips_work(page)


_RUN_PYTHON = """async (code) => {
  const interpreter = await window.aiSearchPython;
  return interpreter.runPython(code);
}"""
_CORE_LOADER = "import ai_search; type(ai_search.__spec__.loader).__name__"


def test_the_snapshot_hands_out_the_pure_core_it_was_made_with(page: Any, server: Server) -> None:
    """The server's snapshot already holds py/ai_search; the page takes it from there while the
    files it wrote are the same ones."""
    _forget_snapshots(page, server)  # the server's own, not a copy kept from an older build
    open_page(page, server)
    assert page.evaluate(_RUN_PYTHON, _CORE_LOADER) == "SnapshotCore"


def test_a_changed_core_file_is_imported_from_the_files(page: Any, server: Server) -> None:
    """A core module that differs from the snapshot's (edited after setup ran) is never served from
    the snapshot: the whole core is imported from the files the page wrote."""

    def changed(route: Any) -> None:
        response = route.fetch()
        route.fulfill(response=response, body=response.text() + "\nCHANGED_AFTER_SETUP = True\n")

    page.route("**/py/ai_search/_grammar.py*", changed)
    open_page(page, server)
    assert page.evaluate(_RUN_PYTHON, _CORE_LOADER) == "SourceFileLoader"
    assert page.evaluate(_RUN_PYTHON, "import ai_search._grammar as g; g.CHANGED_AFTER_SETUP") is True
    _chips_work(page)


_LOADER_OF = "import importlib; type(importlib.import_module({name!r}).__spec__.loader).__name__"
_CODE_FROM_SNAPSHOT = (
    "import importlib, sys; m = importlib.import_module({name!r}); "
    "any(getattr(f, '__name__', '') == 'CompiledAside' for f in sys.meta_path) and "
    "m.__spec__.loader.get_code(m.__name__) is m.__spec__.loader.get_code(m.__name__)"
)


@pytest.mark.parametrize(
    "module",
    [
        pytest.param("ai_search_web.page", id="page-module"),
        pytest.param("pyscript.web", id="pyscript-package"),
    ],
)
def test_the_snapshot_hands_out_the_page_modules_compiled(page: Any, server: Server, module: str) -> None:
    """The page modules and PyScript's own package cannot be imported into the snapshot (they use
    the DOM) but are compiled into it: while a file is the one compiled, its module runs that code
    object (the same object on every call, where a compile would make a new one)."""
    _forget_snapshots(page, server)
    open_page(page, server)
    assert page.evaluate(_RUN_PYTHON, _LOADER_OF.format(name=module)) == "CompiledLoader"
    assert page.evaluate(_RUN_PYTHON, _CODE_FROM_SNAPSHOT.format(name=module)) is True


def test_a_changed_page_module_is_compiled_from_its_file(page: Any, server: Server) -> None:
    def changed(route: Any) -> None:
        response = route.fetch()
        route.fulfill(response=response, body=response.text() + "\nCHANGED_AFTER_SETUP = True\n")

    page.route("**/py/ai_search_web/page.py*", changed)
    open_page(page, server)
    assert page.evaluate(_RUN_PYTHON, "import ai_search_web.page as m; m.CHANGED_AFTER_SETUP") is True
    assert page.evaluate(_RUN_PYTHON, _CODE_FROM_SNAPSHOT.format(name="ai_search_web.page")) is False
    _chips_work(page)


def _without_the_servers_snapshot(page: Any, server: Server, route: Any) -> None:
    """Open the page with ``route`` answering the snapshot; it starts fresh, then stores its own
    snapshot, which the next start restores. Cache Storage is cleared again for the other tests."""
    try:
        _forget_snapshots(page, server)  # a copy kept from an earlier visit would be restored instead
        page.route(SNAPSHOT_URLS, route)
        open_page(page, server)
        assert page.evaluate("window.__pySnapshot") in ("none", "making", "stored")
        _chips_work(page)
        page.wait_for_function("() => window.__pySnapshot === 'stored'", timeout=PYTHON_READY_MS)
        page.reload()
        page.wait_for_selector("html[data-py=ready]", timeout=PYTHON_READY_MS)
        assert page.evaluate("[window.__pySnapshot, window.__pySnapshotFrom]") == ["loaded", "browser"]
        _chips_work(page)
    finally:
        page.evaluate(f"caches.delete({SNAPSHOT_CACHE!r})")


def test_without_a_server_snapshot_python_starts_fresh(page: Any, record: PageRecord, server: Server) -> None:
    """A server without the snapshot (setup never made one) answers 404: the page starts CPython
    from scratch, then keeps a snapshot of its own in Cache Storage for the next start."""
    record.allow_error("404 (Not Found)")
    _without_the_servers_snapshot(page, server, lambda route: route.fulfill(status=404, body="not found"))


def test_a_refused_server_snapshot_means_a_fresh_start(page: Any, record: PageRecord, server: Server) -> None:
    """Bytes Pyodide refuses (another build's snapshot, a broken file) cost a fresh start, never a
    broken page; the browser's own snapshot then takes over."""
    broken = bytes(4096)  # no snapshot magic number
    _without_the_servers_snapshot(
        page,
        server,
        lambda route: route.fulfill(status=200, body=broken, content_type="application/octet-stream"),
    )
