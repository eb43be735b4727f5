// The keystroke stage (index.html and embed.html load this module before pyscript-boot.mjs): the
// vendored MicroPython (170 KB of wasm, Brotli) runs the core's own grammar for the box's chips and
// suggestions a few hundred milliseconds after navigation, long before Pyodide (6 MB) is ready;
// py/ai_search_web/keys.py is the stage, and steps aside once the page's Python is ready.
//
// Everything comes from our server, under the page's CSP: MicroPython's JS evaluates no string
// (no eval, no Function), and compiling its wasm is what 'wasm-unsafe-eval' allows. GET
// /py/keys.json lists the stage's Python files (the core's KEYSTROKE_MODULES and the glue), each
// URL at its content digest and cached as immutable, like /py/files.json; the page itself names
// GET /py/keys-bundle.json?v=<digest>, the same files in one immutable body, which is what the
// stage fetches (one request, and none on a warm visit). They are written into MicroPython's file
// system under /lib and the entry module's start() runs.
//
// window.aiSearchKeys: `ready`, a promise settled once the stage is ready or has failed (true or
// false: pyscript-boot.mjs starts Pyodide after it, so that on a slow link the stage's few hundred
// KB are not shared with Pyodide's 6 MB); `filters`, the stage's chips as a query line (the
// fallback's Enter search sends them, and the page's Python starts from them); `interpreter`, the
// MicroPython instance once started (for tests and benchmarks). If MicroPython fails, the page
// goes on as before: the fallback suggests until Pyodide is ready.
const FILES_URL = "/py/keys.json";
// The page's <link rel=preload> of the bundle (its URL carries the digest the server wrote in).
const BUNDLE_LINK = "keys-bundle";
const RUNTIME = "./vendor/micropython-1.28.0-6/";
const LIBRARY = "/lib";
// MicroPython's heap (bytes), allocated once inside the wasm memory: the core and the glue compiled
// and a few keystrokes typed hold about 150 KB (gc.mem_alloc() after a collection); the rest is
// room for the GC between collections.
const HEAP_BYTES = 2 * 1024 * 1024;

let settle;
const keys = (window.aiSearchKeys = { filters: "", ready: new Promise((resolve) => { settle = resolve; }) });

// The stage's sources: the bundle the page names (one immutable response), else the list and each
// file (a page served without its bundle's digest).
async function stageFiles() {
  const bundle = document.getElementById(BUNDLE_LINK);
  if (bundle && !bundle.href.includes("__")) {
    const response = await fetch(bundle.href);
    if (!response.ok) throw new Error(`${bundle.href} answered ${response.status}`);
    const { files, compiled = {}, entry } = await response.json();
    performance.mark("ai-search:keys-files");
    // Bytecode (.mpy, where the server has mpy-cross) is imported without compiling the source.
    const code = Object.entries(compiled).map(([path, data]) => [
      path.replace(/\.py$/, ".mpy"),
      Uint8Array.from(atob(data), (char) => char.charCodeAt(0)),
    ]);
    return { texts: [...Object.entries(files), ...code], entry };
  }
  const response = await fetch(FILES_URL);
  if (!response.ok) throw new Error(`${FILES_URL} answered ${response.status}`);
  const { files, entry } = await response.json();
  const texts = await Promise.all(
    Object.entries(files).map(async ([path, url]) => {
      const file = await fetch(url);
      if (!file.ok) throw new Error(`${url} answered ${file.status}`);
      return [path, await file.text()];
    }),
  );
  performance.mark("ai-search:keys-files");
  return { texts, entry };
}

async function startInterpreter() {
  const { loadMicroPython } = await import(`${RUNTIME}micropython.mjs`);
  performance.mark("ai-search:keys-runtime");
  const mp = await loadMicroPython({
    url: new URL(`${RUNTIME}micropython.wasm`, import.meta.url).href,
    heapsize: HEAP_BYTES,
    stdout: (line) => console.log(line),
    stderr: (line) => console.warn(line),
  });
  performance.mark("ai-search:keys-interpreter");
  return mp;
}

// The interpreter starts while the sources download: neither needs the other.
async function boot() {
  performance.mark("ai-search:keys-start");
  const [mp, { texts, entry }] = await Promise.all([startInterpreter(), stageFiles()]);
  for (const [path, text] of texts) {
    const slash = path.lastIndexOf("/");
    mp.FS.mkdirTree(`${LIBRARY}/${path.slice(0, slash)}`);
    mp.FS.writeFile(`${LIBRARY}/${path}`, text);
  }
  if (!/^[A-Za-z_][\w.]*$/.test(entry)) throw new Error(`not a module name: ${entry}`);
  mp.runPython(`import ${entry}`);
  performance.mark("ai-search:keys-imported");
  mp.runPython(`${entry}.start()`);
  keys.interpreter = mp;
}

if (document.documentElement.dataset.py === "ready") {
  settle(false);
} else {
  boot().then(
    () => settle(document.documentElement.dataset.keys === "ready"),
    (error) => {
      // Not an error of the page: the fallback goes on suggesting until Pyodide is ready.
      console.warn("ai-search: the keystroke stage did not start;", error);
      document.documentElement.dataset.keys = "failed";
      settle(false);
    },
  );
}
