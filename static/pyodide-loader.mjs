// The interpreter module pyscript.toml names: the vendored Pyodide's loadPyodide, plus a memory
// snapshot that makes every start after the first one several times faster.
//
// A fresh Pyodide spends most of its start-up initialising CPython (about 1.5 s of the 2 s on a
// 2-core machine). Pyodide can instead restore a snapshot of the WebAssembly memory taken right after
// that initialisation. The first visit starts normally; once the page is ready, a worker
// (pyodide-snapshot-worker.mjs) starts a second, throwaway Pyodide in snapshot mode, imports the
// standard-library modules the page uses, and stores its memory in Cache Storage (about 31 MB, this
// origin only). Later starts restore it. The snapshot is taken in a worker because Pyodide's snapshot
// mode wraps `js` in a proxy that breaks DOM getters for the rest of that interpreter's life.
//
// The snapshot holds no page code and no data: only CPython and the standard library after start-up
// (the hash seed included: fixed per browser profile, which costs nothing here). Its key names the
// Pyodide version and SNAPSHOT_FORMAT; Pyodide itself refuses a snapshot of another build, and a
// refused or broken snapshot is deleted and the page starts fresh.
import { loadPyodide as loadVendored, version } from "./vendor/pyodide-314.0.2/pyodide.mjs";

export { version };

export const INDEX_URL = new URL("./vendor/pyodide-314.0.2/", import.meta.url).href;
// Bump when PRELOADED or the way the snapshot is made changes.
const SNAPSHOT_FORMAT = 1;
const SNAPSHOT_CACHE = "ai-search-pyodide-snapshot";
const SNAPSHOT_KEY = new URL(`./pyodide-snapshot-${version}-v${SNAPSHOT_FORMAT}.bin`, import.meta.url).href;
// Imported before the snapshot is taken, so restored pages find them loaded (all standard library).
export const PRELOADED =
  "import re, json, datetime, dataclasses, typing, collections, functools, codecs, urllib.parse, enum";
// Milliseconds after the page is ready before the snapshot worker starts: the first visit's own
// start-up and first requests get the CPU first.
const SNAPSHOT_DELAY_MS = 1000;

export async function writeSnapshot(bytes) {
  const cache = await caches.open(SNAPSHOT_CACHE);
  await cache.put(SNAPSHOT_KEY, new Response(bytes, { headers: { "content-type": "application/octet-stream" } }));
}

async function findSnapshot() {
  if (!globalThis.caches) return null; // not a secure context: no Cache Storage, no snapshot
  try {
    const cache = await caches.open(SNAPSHOT_CACHE);
    return (await cache.match(SNAPSHOT_KEY)) ?? null;
  } catch {
    return null;
  }
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

export async function loadPyodide(options = {}) {
  const base = { ...options, indexURL: INDEX_URL };
  const snapshot = await findSnapshot();
  if (snapshot) {
    try {
      // The body is read while the interpreter downloads and compiles (a promise is accepted).
      const pyodide = await loadVendored({ ...base, _loadSnapshot: snapshot.arrayBuffer() });
      globalThis.__pySnapshot = "loaded";
      return pyodide;
    } catch (error) {
      console.warn("ai-search: the Pyodide snapshot was refused; starting fresh.", error);
      await caches.delete(SNAPSHOT_CACHE);
    }
  }
  const pyodide = await loadVendored(base);
  globalThis.__pySnapshot = "none";
  if (globalThis.caches) makeSnapshotLater();
  return pyodide;
}
