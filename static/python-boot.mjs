// Starts the page's Python (index.html and embed.html load this module): Pyodide from its memory
// snapshot (pyodide-loader.mjs), the page's modules written into its file system, then
// `import ai_search_web.main`, which takes over from static/fallback.js.
//
// Everything is requested at once, as the module runs: the snapshot, the interpreter, the list of
// the page's Python files (GET /py/files.json, each URL carrying its content digest, so a warm visit
// reads every one from the HTTP cache without asking) and the files themselves. Nothing waits for
// anything it does not need.
//
// If Python cannot start (a browser without WebAssembly, a broken download), the page stays on
// fallback.js, which searches and suggests as before; the status line says so in plain words and
// the console has the details. window.aiSearchPython is a promise of the interpreter, for tests
// and benchmarks.
import { completeStdlib, loadPyodide } from "./pyodide-loader.mjs";

const FILES_URL = "/py/files.json";
const NOT_STARTED = "Filters and suggestions are not available right now; searching still works. Reload the page to try again.";

async function fetchOk(url) {
  const response = await fetch(url, { credentials: "omit" });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response;
}

// [path in Pyodide's file system, bytes] of every page module.
async function pageFiles() {
  const { files } = await (await fetchOk(FILES_URL)).json();
  return Promise.all(
    Object.entries(files).map(async ([path, url]) => [path, new Uint8Array(await (await fetchOk(url)).arrayBuffer())]),
  );
}

async function start() {
  const files = pageFiles();
  files.catch(() => {}); // awaited below; a failure must not count as unhandled before that
  const pyodide = await loadPyodide();
  for (const [path, bytes] of await files) {
    pyodide.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    pyodide.FS.writeFile(path, bytes);
  }
  pyodide.pyimport("ai_search_web.main");
  completeStdlib(pyodide).catch((error) => console.warn("ai-search: the standard library is not complete;", error));
  return pyodide;
}

const python = start();
window.aiSearchPython = python;
python.catch((error) => {
  console.error("ai-search: the page's Python did not start;", error);
  document.documentElement.dataset.py = "failed";
  document.getElementById("status").textContent = NOT_STARTED;
});
