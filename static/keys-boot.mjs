// The keystroke stage (index.html and embed.html load this module before pyscript-boot.mjs): the
// vendored MicroPython (170 KB of wasm, Brotli) runs the core's own grammar for the box's chips and
// suggestions a few hundred milliseconds after navigation, long before Pyodide (6 MB) is ready;
// py/ai_search_web/keys.py is the stage, and steps aside once the page's Python is ready.
//
// Everything comes from our server, under the page's CSP: MicroPython's JS evaluates no string
// (no eval, no Function), and compiling its wasm is what 'wasm-unsafe-eval' allows. GET
// /py/keys.json lists the stage's Python files (the core's KEYSTROKE_MODULES and the glue), each
// URL at its content digest and cached as immutable, like /py/files.json; they are written into
// MicroPython's file system under /lib and the listing's entry module's start() runs.
//
// window.aiSearchKeys: `ready`, a promise settled once the stage is ready or has failed (true or
// false: pyscript-boot.mjs starts Pyodide after it, so that on a slow link the stage's few hundred
// KB are not shared with Pyodide's 6 MB); `filters`, the stage's chips as a query line (the
// fallback's Enter search sends them, and the page's Python starts from them). If MicroPython
// fails, the page goes on as before: the fallback suggests until Pyodide is ready.
const FILES_URL = "/py/keys.json";
const RUNTIME = "./vendor/micropython-1.28.0-6/";
const LIBRARY = "/lib";
// MicroPython's heap (bytes): the core's modules compiled and the grammar's tables. Measured: the
// stage uses about ... after a few keystrokes; the heap is allocated once, inside the wasm memory.
const HEAP_BYTES = 8 * 1024 * 1024;

let settle;
const keys = (window.aiSearchKeys = { filters: "", ready: new Promise((resolve) => { settle = resolve; }) });

async function stageFiles() {
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
  return { texts, entry };
}

async function boot() {
  performance.mark("ai-search:keys-start");
  const [{ loadMicroPython }, { texts, entry }] = await Promise.all([
    import(`${RUNTIME}micropython.mjs`),
    stageFiles(),
  ]);
  const mp = await loadMicroPython({
    url: new URL(`${RUNTIME}micropython.wasm`, import.meta.url).href,
    heapsize: HEAP_BYTES,
    stdout: (line) => console.log(line),
    stderr: (line) => console.warn(line),
  });
  performance.mark("ai-search:keys-interpreter");
  for (const [path, text] of texts) {
    const slash = path.lastIndexOf("/");
    mp.FS.mkdirTree(`${LIBRARY}/${path.slice(0, slash)}`);
    mp.FS.writeFile(`${LIBRARY}/${path}`, text);
  }
  if (!/^[A-Za-z_][\w.]*$/.test(entry)) throw new Error(`not a module name: ${entry}`);
  keys.stage = mp.runPython(`import ${entry} as _stage\n_stage.start()`);
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
