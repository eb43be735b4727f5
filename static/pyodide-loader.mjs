// The interpreter module pyscript.toml names: the vendored Pyodide's loadPyodide, started from a
// memory snapshot instead of from scratch whenever one is at hand.
//
// A fresh Pyodide spends most of its start-up initialising CPython (about 3 s of a 4 s cold start
// on a 2-core machine; the wasm download and compile are a few hundred ms). Pyodide can instead
// restore a snapshot of the WebAssembly memory taken right after that initialisation. Two sources:
//
// 1. The server's snapshot, SHIPPED_SNAPSHOT: `scripts/setup` makes it once with the vendored
//    Pyodide in Node (scripts/pyodide-snapshot.mjs) and the server sends it gzip-compressed and
//    immutable beside the other vendored files, so even the first visit restores it (about 6 MB more
//    on the wire, against about 3 s less CPU).
// 2. Without it (a 404) or when Pyodide refuses it, the page starts fresh and, once ready, a worker
//    (pyodide-snapshot-worker.mjs) starts a throwaway Pyodide in snapshot mode and stores its memory
//    in Cache Storage (about 31 MB, this origin only); later starts restore that one first. The
//    worker is needed because snapshot mode wraps `js` in a proxy that breaks DOM getters for the
//    rest of that interpreter's life.
//
// Either snapshot holds no data: CPython and the standard library after start-up and PRELOADED,
// and the server's one also the pure core (py/ai_search, standard library only), kept aside by an
// import hook that hands it out only while the files the page wrote are byte for byte the ones it
// was made from (scripts/pyodide-snapshot.mjs). Its hash seed (and `random`'s state) is the same for
// everyone who restores it; the page uses neither for anything secret. Pyodide refuses a snapshot of another
// build (its build id is in the header); a refused or broken snapshot means a fresh start, and a
// refused one from Cache Storage is deleted.
//
// window.__pySnapshot tells tests and benchmarks what happened: "loaded" (restored; __pySnapshotFrom
// says "server" or "browser"), "none" (started fresh), then "making", "stored" or "failed" while the
// worker makes the browser's own.
import { loadPyodide as loadVendored, version } from "./vendor/pyodide-314.0.2/pyodide.mjs";

export { version };

export const INDEX_URL = new URL("./vendor/pyodide-314.0.2/", import.meta.url).href;
// Bump when PRELOADED or the way the snapshot is made changes: both snapshots' names carry it, so a
// browser never restores an old one from its caches (the server's is cached as immutable; a new
// core needs no bump, the import hook notices it).
export const SNAPSHOT_FORMAT = 3;
export const SHIPPED_SNAPSHOT = new URL(`./snapshot-v${SNAPSHOT_FORMAT}.bin`, INDEX_URL).href;
const SNAPSHOT_CACHE = "ai-search-pyodide-snapshot";
const SNAPSHOT_KEY = new URL(`./pyodide-snapshot-${version}-v${SNAPSHOT_FORMAT}.bin`, import.meta.url).href;
// Imported before the snapshot is taken, so restored pages find them loaded: the standard-library
// modules py/ai_search and py/ai_search_web import that a fresh Pyodide has not loaded yet.
export const PRELOADED =
  "import re, json, datetime, dataclasses, typing, collections, functools, codecs, urllib.parse, enum, " +
  "unicodedata, ipaddress, math, contextlib, asyncio, html";
// Milliseconds after the page is ready before the snapshot worker starts: the first visit's own
// start-up and first requests get the CPU first.
const SNAPSHOT_DELAY_MS = 1000;

// Raised inside the snapshot promise when the server has no snapshot: start fresh, no warning.
class NoShippedSnapshot extends Error {}

export async function writeSnapshot(bytes) {
  const cache = await caches.open(SNAPSHOT_CACHE);
  await cache.put(SNAPSHOT_KEY, new Response(bytes, { headers: { "content-type": "application/octet-stream" } }));
}

async function findCachedSnapshot() {
  if (!globalThis.caches) return null; // not a secure context: no Cache Storage
  try {
    const cache = await caches.open(SNAPSHOT_CACHE);
    return (await cache.match(SNAPSHOT_KEY)) ?? null;
  } catch {
    return null;
  }
}

// The server's snapshot as a promise of its bytes; Pyodide awaits it only after it has fetched and
// started compiling the interpreter, so the download runs alongside.
function shippedSnapshot() {
  return fetch(SHIPPED_SNAPSHOT).then((response) => {
    if (!response.ok) throw new NoShippedSnapshot(`${response.status}`);
    return response.arrayBuffer();
  });
}

function makeSnapshotLater() {
  setTimeout(() => {
    const worker = new Worker(new URL("./pyodide-snapshot-worker.mjs", import.meta.url), { type: "module" });
    globalThis.__pySnapshot = "making";
    worker.onmessage = () => {
      globalThis.__pySnapshot = "stored";
      worker.terminate();
    };
    worker.onerror = (event) => {
      globalThis.__pySnapshot = "failed";
      console.warn("ai-search: no Pyodide snapshot this time:", event.message);
      worker.terminate();
    };
  }, SNAPSHOT_DELAY_MS);
}

async function restore(base, bytes, from) {
  const pyodide = await loadVendored({ ...base, _loadSnapshot: bytes });
  globalThis.__pySnapshot = "loaded";
  globalThis.__pySnapshotFrom = from;
  return pyodide;
}

export async function loadPyodide(options = {}) {
  const base = { ...options, indexURL: INDEX_URL };
  performance.mark("ai-search:interpreter-start");
  const cached = await findCachedSnapshot();
  let pyodide = null;
  if (cached) {
    // Only made when the server's snapshot was missing or refused: tried first, so a refused
    // server snapshot is not fetched and refused again on every visit.
    try {
      pyodide = await restore(base, cached.arrayBuffer(), "browser");
    } catch (error) {
      console.warn("ai-search: the stored Pyodide snapshot was refused; starting fresh.", error);
      await caches.delete(SNAPSHOT_CACHE);
    }
  } else {
    const bytes = shippedSnapshot();
    // Pyodide awaits the bytes only once the interpreter is on its way, and a 404 can come first: a
    // rejection with no handler yet is reported as an uncaught error, so one is attached here (the
    // await below still sees the rejection).
    bytes.catch(() => {});
    try {
      pyodide = await restore(base, bytes, "server");
    } catch (error) {
      if (!(error instanceof NoShippedSnapshot)) {
        console.warn("ai-search: the server's Pyodide snapshot was refused; starting fresh.", error);
      }
    }
  }
  if (pyodide === null) {
    pyodide = await loadVendored(base);
    globalThis.__pySnapshot = "none";
    if (globalThis.caches) makeSnapshotLater();
  }
  performance.mark("ai-search:interpreter-ready");
  return pyodide;
}
