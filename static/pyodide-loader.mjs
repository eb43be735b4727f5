// The interpreter module named in pyscript.toml: Pyodide's own loadPyodide, plus a memory snapshot.
import { loadPyodide as loadVendored, version } from "./vendor/pyodide-314.0.2/pyodide.mjs";

export { version };

export const INDEX_URL = new URL("./vendor/pyodide-314.0.2/", import.meta.url).href;
const SNAPSHOT_CACHE = "ai-search-pyodide-snapshot";
const SNAPSHOT_KEY = new URL(`./pyodide-snapshot-${version}-v1.bin`, import.meta.url).href;
export const PRELOADED = "import re, json, datetime, dataclasses, typing, collections, functools";

async function readSnapshot() {
  if (!globalThis.caches) return null;
  try {
    const cache = await caches.open(SNAPSHOT_CACHE);
    const hit = await cache.match(SNAPSHOT_KEY);
    return hit ? new Uint8Array(await hit.arrayBuffer()) : null;
  } catch {
    return null;
  }
}

export async function writeSnapshot(bytes) {
  const cache = await caches.open(SNAPSHOT_CACHE);
  await cache.put(SNAPSHOT_KEY, new Response(bytes));
}

function makeSnapshotLater() {
  const worker = new Worker(new URL("./pyodide-snapshot-worker.mjs", import.meta.url), { type: "module" });
  worker.onmessage = () => { globalThis.__pySnapshot = "stored"; worker.terminate(); };
  worker.onerror = (e) => { console.warn("ai-search: no Pyodide snapshot", e.message); worker.terminate(); };
}

export async function loadPyodide(options = {}) {
  const base = { ...options, indexURL: INDEX_URL };
  const snapshot = await readSnapshot();
  if (snapshot) {
    try {
      const pyodide = await loadVendored({ ...base, _loadSnapshot: snapshot });
      globalThis.__pySnapshot = "loaded";
      return pyodide;
    } catch (error) {
      console.warn("ai-search: Pyodide snapshot refused, starting fresh", error);
      await caches.delete(SNAPSHOT_CACHE);
    }
  }
  const pyodide = await loadVendored(base);
  if (globalThis.caches) setTimeout(makeSnapshotLater, 1000);
  return pyodide;
}
