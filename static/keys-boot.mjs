// The page's Python on MicroPython (index.html and embed.html load this module first): the vendored
// MicroPython (170 KB of wasm, Brotli) runs the keystroke stage, the core's own grammar for the
// box's chips and suggestions, a few hundred milliseconds after navigation
// (py/ai_search_web/keys.py); then, where the page's Python is MicroPython (<html
// data-python="micropython">, the server's page_python setting), the whole page in the same
// interpreter: the rest of the glue from GET /py/page-bundle.json?v=<digest>, and `import
// ai_search_web.main`, which takes over from the stage as Pyodide's page would. A first visit then
// never downloads Pyodide. Where the page cannot start on MicroPython (an error at import or start),
// this module loads pyscript-boot.mjs and the page starts on Pyodide instead; the stage goes on
// until then. With data-python="pyodide" the page's own <script> block loads pyscript-boot.mjs.
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
// MicroPython instance once started (for tests and benchmarks); `page`, a promise settled once the
// page runs on MicroPython (true) or has been handed to Pyodide (false). If MicroPython fails, the
// page goes on as before: the fallback suggests until Pyodide is ready.
const FILES_URL = "/py/keys.json";
// The page's <link rel=preload> of each bundle (its URL carries the digest the server wrote in).
const BUNDLE_LINK = "keys-bundle";
const PAGE_BUNDLE_LINK = "page-bundle";
const PYODIDE_BOOT = "./pyscript-boot.mjs";
const RUNTIME = "./vendor/micropython-1.28.0-6/";
const LIBRARY = "/lib";
// MicroPython's heap (bytes), allocated once inside the wasm memory: the core and the glue compiled
// and a few keystrokes typed hold about 150 KB (gc.mem_alloc() after a collection); the rest is
// room for the GC between collections.
const HEAP_BYTES = 2 * 1024 * 1024;

let settle;
let settlePage;
const keys = (window.aiSearchKeys = {
  filters: "",
  ready: new Promise((resolve) => { settle = resolve; }),
  page: new Promise((resolve) => { settlePage = resolve; }),
});
const onMicroPython = document.documentElement.dataset.python === "micropython";

// A bundle's files, as [path, text or bytecode] (bytecode, .mpy where the server has mpy-cross,
// is imported without compiling the source), and its entry module.
async function bundleFiles(link) {
  const response = await fetch(link.href);
  if (!response.ok) throw new Error(`${link.href} answered ${response.status}`);
  const { files, compiled = {}, entry } = await response.json();
  const code = Object.entries(compiled).map(([path, data]) => [
    path.replace(/\.py$/, ".mpy"),
    Uint8Array.from(atob(data), (char) => char.charCodeAt(0)),
  ]);
  return { texts: [...Object.entries(files), ...code], entry };
}

function writeFiles(mp, texts) {
  for (const [path, text] of texts) {
    const slash = path.lastIndexOf("/");
    mp.FS.mkdirTree(`${LIBRARY}/${path.slice(0, slash)}`);
    mp.FS.writeFile(`${LIBRARY}/${path}`, text);
  }
}

function checkedModule(entry) {
  if (!/^[A-Za-z_][\w.]*$/.test(entry)) throw new Error(`not a module name: ${entry}`);
  return entry;
}

// The stage's sources: the bundle the page names (one immutable response), else the list and each
// file (a page served without its bundle's digest).
async function stageFiles() {
  const bundle = document.getElementById(BUNDLE_LINK);
  if (bundle && !bundle.href.includes("__")) {
    const files = await bundleFiles(bundle);
    performance.mark("ai-search:keys-files");
    return files;
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
  writeFiles(mp, texts);
  const module = checkedModule(entry);
  mp.runPython(`import ${module}`);
  performance.mark("ai-search:keys-imported");
  mp.runPython(`${module}.start()`);
  keys.interpreter = mp;
  return mp;
}

// The whole page on MicroPython, once the stage answers keystrokes: its files (preloaded by the
// page, so usually in already), then `import ai_search_web.main`, which starts the page.
async function startPage(mp) {
  const link = document.getElementById(PAGE_BUNDLE_LINK);
  if (!link || link.href.includes("__")) throw new Error("the page names no page bundle");
  const { texts, entry } = await bundleFiles(link);
  performance.mark("ai-search:page-files");
  writeFiles(mp, texts);
  mp.runPython(`import ${checkedModule(entry)}`);
  performance.mark("ai-search:page-imported");
}

// The page on Pyodide instead: whatever the page's Python had started on MicroPython stops
// listening first (dom.unlisten_all), so that only one page answers the box.
async function handToPyodide(mp, error) {
  console.warn("ai-search: the page did not start on MicroPython; starting it on Pyodide;", error);
  document.documentElement.dataset.python = "pyodide";
  if (mp) {
    try {
      mp.runPython("import ai_search_web.dom\nai_search_web.dom.unlisten_all()");
    } catch (cleanup) {
      console.warn("ai-search: could not stop the MicroPython page;", cleanup);
    }
  }
  settlePage(false);
  await import(PYODIDE_BOOT);
  return window.aiSearchPython;
}

if (document.documentElement.dataset.py === "ready") {
  settle(false);
  settlePage(false);
} else {
  const started = boot();
  started.then(
    () => settle(document.documentElement.dataset.keys === "ready"),
    (error) => {
      // Not an error of the page: the fallback goes on suggesting until the page's Python is ready.
      console.warn("ai-search: the keystroke stage did not start;", error);
      document.documentElement.dataset.keys = "failed";
      settle(false);
    },
  );
  if (onMicroPython) {
    // The page's interpreter, as pyscript-boot.mjs gives Pyodide's (for tests and benchmarks).
    window.aiSearchPython = started
      .then((mp) => startPage(mp).then(() => { settlePage(true); return mp; }, (error) => handToPyodide(mp, error)))
      .catch((error) => handToPyodide(null, error));
  } else {
    settlePage(false);
  }
}
