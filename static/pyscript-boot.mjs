// Starts the page's Python (index.html and embed.html load this module): PyScript runs the page's
// `<script type="py" src="./py/ai_search_web/main.py" config="./pyscript.toml">`, which takes over
// from static/fallback.js. pyscript.toml names the interpreter (pyscript-interpreter.mjs: Pyodide
// from its memory snapshot, pyodide-loader.mjs) and the page's Python files ([files]).
//
// PyScript asks for the interpreter only once its own modules and pyscript.toml are in, and for
// the [files] only once the interpreter is ready. Neither has to wait: this module starts Pyodide
// (the snapshot and the wasm) as the page is parsed, and requests every file [files] names (GET
// /py/files.json lists the same URLs, each carrying its content digest and cached as immutable),
// so PyScript's own requests are answered by the HTTP cache.
//
// PyScript under the page's CSP (no 'unsafe-eval'): PyScript 0.7.31 builds its *worker* hooks with
// Function(...) from strings, and does so even for a main-thread script (polyscript's Hook
// constructor reads every worker hook getter). Its only default worker hook registers the
// `_pyscript` module inside PyScript workers; the page runs no PyScript worker, so that set is
// emptied before PyScript reads the hooks (once the interpreter has loaded).
//
// If Python cannot start (a browser without WebAssembly, a broken download), the page stays on
// fallback.js, which searches and suggests as before; the status line says so in plain words and
// the console has the details. window.aiSearchPython is a promise of the interpreter, for tests
// and benchmarks.
import { startPyodide } from "./pyodide-loader.mjs";

const FILES_URL = "/py/files.json";
const PYSCRIPT = "./vendor/pyscript-0.7.31/core.js";
const NOT_STARTED = "Filters and suggestions are not available right now; searching still works. Reload the page to try again.";

function failed(error) {
  console.error("ai-search: the page's Python did not start;", error);
  document.documentElement.dataset.py = "failed";
  document.getElementById("status").textContent = NOT_STARTED;
}

// Into the HTTP cache, for PyScript's [files]; a failure here only means PyScript asks itself.
async function prefetchPageFiles() {
  const response = await fetch(FILES_URL);
  if (!response.ok) return;
  const { files } = await response.json();
  await Promise.all(Object.values(files).map((url) => fetch(url).then((r) => r.arrayBuffer())));
}

// After the keystroke stage (keys-boot.mjs): on a slow link its few hundred KB would otherwise
// share the line with Pyodide's 6 MB; docs/page.md, "Start-up", has the measurements. A stage
// that takes longer than STAGE_WAIT_MS (a stalled request) no longer holds Pyodide back.
const STAGE_FIRST = true;
const STAGE_WAIT_MS = 3000;
const stageReady = STAGE_FIRST && window.aiSearchKeys
  ? Promise.race([window.aiSearchKeys.ready, new Promise((resolve) => setTimeout(resolve, STAGE_WAIT_MS))])
  : Promise.resolve();
const python = stageReady.then(() => startPyodide());
window.aiSearchPython = python;
python.catch(failed);
stageReady.then(() => prefetchPageFiles()).catch(() => {});

try {
  // PyScript waits for the interpreter anyway; its own start (a module graph run on the main
  // thread) waits for the stage too, so as not to delay the stage's first suggestion.
  await stageReady;
  const { hooks } = await import(PYSCRIPT);
  hooks.worker.onBeforeRunAsync.clear();
  hooks.main.onReady.add(() => performance.mark("ai-search:pyscript-ready"));
  hooks.main.onBeforeRunAsync.add(() => performance.mark("ai-search:pyscript-run"));
  // After PyScript's own Python (its package written to the file system, `import pyscript`).
  hooks.main.codeBeforeRunAsync.add('__import__("js").performance.mark("ai-search:pyscript-imported")');
} catch (error) {
  failed(error);
}
