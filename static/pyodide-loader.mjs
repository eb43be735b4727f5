// The vendored Pyodide, started from a memory snapshot instead of from scratch whenever one is at
// hand. Shared by the page's boot module (pyscript-boot.mjs), the worker that makes the browser's own
// snapshot (pyodide-snapshot-worker.mjs) and the script that makes the server's (scripts/
// pyodide-snapshot.mjs), so the three agree on the file names, the format and what is preloaded.
// Importing it starts nothing.
//
// A fresh Pyodide spends most of its start-up initialising CPython (about 3 s of a 4 s cold start
// on a 2-core machine; the wasm download and compile are a few hundred ms). Pyodide can instead
// restore a snapshot of the WebAssembly memory taken right after that initialisation. Two sources:
//
// 1. The server's snapshot, SHIPPED_SNAPSHOT: `scripts/setup` makes it once with the vendored
//    Pyodide in Node and the server sends it Brotli-compressed (3 MB) beside the other vendored
//    files, so even the first visit restores it.
// 2. Without it (a 404) or when Pyodide refuses it, the page starts fresh and, once ready, a worker
//    (pyodide-snapshot-worker.mjs) starts a throwaway Pyodide in snapshot mode and stores its memory
//    in Cache Storage (this origin only); later starts restore that one first. The worker is needed
//    because snapshot mode wraps `js` in a proxy that breaks DOM getters for the rest of that
//    interpreter's life.
//
// Both are stored packed (snapshot-format.mjs): as their difference from the wasm's initial memory,
// without the pages that are then all zero, so the browser decodes and copies 11.7 MB instead of
// 31 MB; unpackSnapshot puts the memory back together.
//
// Warm visits: reading the server's snapshot back from the HTTP cache means revalidating it and
// decoding 3 MB of Brotli into 11.7 MB, the longest step of a warm start. So a second after a first
// visit the page keeps the packed bytes it downloaded in Cache Storage too (this origin only, with the
// server's ETag), and later starts restore that copy directly; a second after each of those, one
// conditional request asks the server whether its snapshot changed, and a new one replaces the copy
// for the next visit. A copy older than the server's is still correct (the import hooks below check
// every file), only slower until it is replaced.
//
// The standard library (python_stdlib.zip, 2.5 MB that does not compress) is not needed to restore
// a snapshot: everything the page imports is loaded in it already. A restored Pyodide gets an empty
// zip in its place (EMPTY_STDLIB, which scripts/pyodide-snapshot.mjs writes beside the snapshot), so
// the first visit's path to a working page carries 2.5 MB less; completeStdlib() puts the real one
// in place once the page works, for the rare module a later code path imports. A fresh start
// (no snapshot) needs it from the beginning and gets it.
//
// Either snapshot holds no data: CPython and the standard library after start-up and PRELOADED,
// and the server's one also the pure core (py/ai_search, standard library only), kept aside by an
// import hook that hands it out only while the files the page wrote are byte for byte the ones it
// was made from (scripts/pyodide-snapshot.mjs). Its hash seed (and `random`'s state) is the same for
// everyone who restores it; the page uses neither for anything secret. Pyodide refuses a snapshot of
// another build (its build id is in the header); a refused or broken snapshot means a fresh start,
// and a refused one from Cache Storage is deleted.
//
// window.__pySnapshot tells tests and benchmarks what happened: "loaded" (restored; __pySnapshotFrom
// says "server" or "browser", __pySnapshotVia "network" or "cache"), "none" (started fresh), then
// "making", "stored" or "failed" while the worker makes the browser's own; __pySnapshotCopy is
// "stored", "current" or "replaced" once the server's copy has been kept or checked.
import { loadPyodide as loadVendored, version } from "./vendor/pyodide-314.0.2/pyodide.mjs";
import { initialMemory, packSnapshot, unpackSnapshot, zeroFreeMemory } from "./snapshot-format.mjs";

export { initialMemory, packSnapshot, unpackSnapshot, version, zeroFreeMemory };

export const INDEX_URL = new URL("./vendor/pyodide-314.0.2/", import.meta.url).href;
// Bump when PRELOADED, the packed format or the way the snapshot is made changes: both snapshots'
// names carry it, so a browser never restores an old one from its caches (a new core needs no
// bump, the import hook notices it).
export const SNAPSHOT_FORMAT = 5;
export const SHIPPED_SNAPSHOT = new URL(`./snapshot-v${SNAPSHOT_FORMAT}.bin`, INDEX_URL).href;
export const EMPTY_STDLIB = new URL("./python_stdlib-empty.zip", INDEX_URL).href;
const FULL_STDLIB = new URL("./python_stdlib.zip", INDEX_URL).href;
const WASM_URL = new URL("./pyodide.asm.wasm", INDEX_URL).href;
// Where Pyodide puts the standard library in its file system (Python 3.14).
const STDLIB_PATH = "/lib/python314.zip";
const SNAPSHOT_CACHE = "ai-search-pyodide-snapshot";
const SNAPSHOT_KEY = new URL(`./pyodide-snapshot-${version}-v${SNAPSHOT_FORMAT}.bin`, import.meta.url).href;
// Imported before the snapshot is taken, so restored pages find them loaded: the standard-library
// modules py/ai_search and py/ai_search_web import that a fresh Pyodide has not loaded yet.
export const PRELOADED =
  "import re, json, datetime, dataclasses, typing, collections, functools, codecs, urllib.parse, enum, " +
  "unicodedata, ipaddress, math, contextlib, asyncio, html";
// Pyodide's lock file lists the packages loadPackage can fetch; the page loads none, so Pyodide is
// given an empty one of its own ABI instead of fetching and parsing the 113 KB file.
const EMPTY_LOCK = JSON.stringify({
  info: { abi_version: "2026_0", arch: "wasm32", platform: "emscripten_5_0_3", python: "3.14.0" },
  packages: {},
});
// Milliseconds after the page is ready before the snapshot worker starts: the first visit's own
// start-up and first requests get the CPU first.
const SNAPSHOT_DELAY_MS = 1000;

function snapshotReady(memory) {
  performance.mark("ai-search:snapshot-ready"); // its bytes in memory, unpacked
  return memory;
}

// Raised inside the snapshot promise when the server has no snapshot: start fresh, no warning.
class NoShippedSnapshot extends Error {}

// Headers of a stored snapshot: which one it is ("server" or "browser"), and the server's ETag.
const FROM_HEADER = "x-ai-search-from";
const ETAG_HEADER = "x-ai-search-etag";

async function store(packed, from, etag = "") {
  const cache = await caches.open(SNAPSHOT_CACHE);
  const headers = { "content-type": "application/octet-stream", [FROM_HEADER]: from, [ETAG_HEADER]: etag };
  await cache.put(SNAPSHOT_KEY, new Response(packed, { headers }));
}

/** The wasm's initial memory (snapshot-format.mjs), read from the same immutable URL the
 * interpreter is compiled from, so the HTTP cache serves it after the first download. */
export async function wasmImage(response = fetch(WASM_URL)) {
  const answer = await response;
  if (!answer.ok) throw new Error(`${WASM_URL}: HTTP ${answer.status}`);
  return initialMemory(new Uint8Array(await answer.arrayBuffer()));
}

/** Keep the browser's own snapshot (the worker, after a fresh start). */
export async function writeSnapshot(memory) {
  await store(packSnapshot(memory, await wasmImage()), "browser");
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

// The server's snapshot as a promise of its memory; Pyodide awaits it only once it has the
// interpreter's script, so the download runs alongside the wasm's. `downloaded` gets the packed
// bytes and their ETag, to be kept in Cache Storage later.
function shippedSnapshot(downloaded, image) {
  return fetch(SHIPPED_SNAPSHOT).then(async (response) => {
    if (!response.ok) throw new NoShippedSnapshot(`${response.status}`);
    const packed = await response.arrayBuffer();
    downloaded.packed = packed;
    downloaded.etag = response.headers.get("etag") ?? "";
    return snapshotReady(unpackSnapshot(packed, await image));
  });
}

// A second after the start (the page's own first requests go first): keep the downloaded snapshot,
// or ask whether the kept copy is still the server's. Failures only cost the next visit its speed.
function keepServerCopyLater(downloaded, storedEtag) {
  setTimeout(async () => {
    try {
      if (downloaded.packed) {
        await store(downloaded.packed, "server", downloaded.etag);
        globalThis.__pySnapshotCopy = "stored";
        return;
      }
      const response = await fetch(SHIPPED_SNAPSHOT, { cache: "no-store", headers: { "If-None-Match": storedEtag } });
      if (response.status === 200) {
        await store(await response.arrayBuffer(), "server", response.headers.get("etag") ?? "");
        globalThis.__pySnapshotCopy = "replaced";
      } else {
        await response.body?.cancel();
        globalThis.__pySnapshotCopy = "current";
      }
    } catch (error) {
      console.warn("ai-search: the Pyodide snapshot was not kept for next time:", error);
    }
  }, SNAPSHOT_DELAY_MS);
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

// Pyodide compiles its wasm only once it holds the snapshot. The page compiles it while it
// downloads instead (compileStreaming), and Pyodide's own instantiateStreaming is handed that
// module: about 100 ms (first visit) or 40 ms (warm, from V8's code cache) less on the path to a
// working page. The same download gives the wasm's initial memory, which the packed snapshot is
// stored against. Pyodide's own request names the same immutable URL: the HTTP cache answers it.
function interpreterDownload() {
  const response = fetch(WASM_URL);
  const compiled = WebAssembly.compileStreaming(response.then((r) => r.clone()));
  compiled.then(() => performance.mark("ai-search:wasm-compiled"), () => {}); // a failure: Pyodide compiles it
  const image = wasmImage(response);
  image.catch(() => {}); // awaited with the snapshot; a failure means starting fresh
  return { compiled, image };
}

async function withCompiled(compiled) {
  const { default: createModule } = await import(new URL("pyodide.asm.mjs", INDEX_URL).href);
  return (settings) => {
    const instantiateWasm = settings.instantiateWasm;
    settings.instantiateWasm = (imports, receive) => {
      const streaming = WebAssembly.instantiateStreaming;
      // Pyodide calls it once, a few microtasks from here (after adding its own imports).
      WebAssembly.instantiateStreaming = async (response, importObject) => {
        WebAssembly.instantiateStreaming = streaming;
        try {
          const module = await compiled;
          return { module, instance: await WebAssembly.instantiate(module, importObject) };
        } catch {
          return streaming(response, importObject);
        }
      };
      return instantiateWasm(imports, receive);
    };
    return createModule(settings);
  };
}

async function restore(base, memory, from, via) {
  const pyodide = await loadVendored({ ...base, _loadSnapshot: memory, stdLibURL: EMPTY_STDLIB });
  stdlibOnDemand(pyodide);
  globalThis.__pySnapshot = "loaded";
  globalThis.__pySnapshotFrom = from;
  globalThis.__pySnapshotVia = via;
  return pyodide;
}

/** A restored Pyodide's way to the real standard library, which it starts without: the snapshot's
 * last import finder (scripts/pyodide-snapshot.mjs) calls this, synchronously, the first time an
 * import of a standard-library module finds nothing, and then looks again. No code path of the page
 * does so today (everything it imports is in the snapshot), so a visit normally never downloads
 * the 2.5 MB; a synchronous request on that rare path is the price of an import that just works. */
function stdlibOnDemand(pyodide) {
  globalThis.__aiSearchLoadStdlib = () => {
    delete globalThis.__aiSearchLoadStdlib; // once: a failure is not retried on every import
    const request = new XMLHttpRequest();
    request.open("GET", FULL_STDLIB, false); // synchronous: an import cannot wait for a promise
    request.overrideMimeType("text/plain; charset=x-user-defined"); // bytes as char codes
    request.send();
    if (request.status !== 200) return false;
    const text = request.responseText;
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i) & 0xff;
    pyodide.FS.writeFile(STDLIB_PATH, bytes);
    globalThis.__pyStdlib = "complete";
    return true;
  };
}

/** Options every Pyodide of the page gets: the vendored files (Node passes its own path), no lock
 * file to fetch. */
export function baseOptions(options = {}) {
  return { indexURL: INDEX_URL, lockFileContents: EMPTY_LOCK, ...options };
}

/** The page's Pyodide: restored from a snapshot when one is at hand, else started fresh. */
export async function loadPyodide(options = {}) {
  performance.mark("ai-search:interpreter-start");
  const { compiled, image } = interpreterDownload();
  const base = baseOptions({ ...options, createPyodideModule: await withCompiled(compiled) });
  const cached = await findCachedSnapshot();
  const from = cached?.headers.get(FROM_HEADER) === "server" ? "server" : "browser";
  let pyodide = null;
  if (cached) {
    try {
      const memory = Promise.all([cached.arrayBuffer(), image]).then(([b, i]) => snapshotReady(unpackSnapshot(b, i)));
      pyodide = await restore(base, memory, from, "cache");
      if (from === "server") keepServerCopyLater({}, cached.headers.get(ETAG_HEADER) ?? "");
    } catch (error) {
      console.warn("ai-search: the stored Pyodide snapshot was refused; starting without it.", error);
      await caches.delete(SNAPSHOT_CACHE);
    }
  }
  // A browser-made snapshot exists only because the server's was missing or refused: it is not
  // fetched and refused again on every visit.
  if (pyodide === null && !(cached && from === "browser")) {
    const downloaded = {};
    const memory = shippedSnapshot(downloaded, image);
    // Pyodide awaits the memory only once the interpreter is on its way, and a 404 can come first:
    // a rejection with no handler yet is reported as an uncaught error, so one is attached here
    // (the await below still sees the rejection).
    memory.catch(() => {});
    try {
      pyodide = await restore(base, memory, "server", "network");
      if (globalThis.caches) keepServerCopyLater(downloaded, "");
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

let started = null;

/** The page's one Pyodide, started on the first call (the boot module calls it as the page is
 * parsed, so everything downloads at once) and handed to every later caller: PyScript asks for it
 * through pyscript-interpreter.mjs once its own modules and configuration are in. */
export function startPyodide() {
  started ??= loadPyodide();
  return started;
}
