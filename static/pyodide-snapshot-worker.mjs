// Makes the browser's own Pyodide memory snapshot when the server sends none (or one Pyodide refuses):
// pyodide-loader.mjs starts this worker after a fresh start and restores the result next time.
import { loadPyodide } from "./vendor/pyodide-314.0.2/pyodide.mjs";
import { INDEX_URL, PRELOADED, writeSnapshot } from "./pyodide-loader.mjs";

const pyodide = await loadPyodide({ indexURL: INDEX_URL, _makeSnapshot: true });
pyodide.runPython(PRELOADED);
const bytes = pyodide.makeMemorySnapshot();
await writeSnapshot(bytes);
postMessage({ stored: bytes.length });
