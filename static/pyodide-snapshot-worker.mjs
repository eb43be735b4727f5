// Makes the browser's own Pyodide memory snapshot when the server sends none (or one Pyodide refuses):
// pyodide-loader.mjs starts this worker after a fresh start and restores the result next time.
import { loadPyodide } from "./vendor/pyodide-314.0.2/pyodide.mjs";
import { PRELOADED, baseOptions, writeSnapshot, zeroFreeMemory } from "./pyodide-loader.mjs";

const pyodide = await loadPyodide(baseOptions({ _makeSnapshot: true }));
pyodide.runPython(PRELOADED);
zeroFreeMemory(pyodide._module); // freed blocks hold garbage that would be stored with the memory
const bytes = pyodide.makeMemorySnapshot();
await writeSnapshot(bytes);
postMessage({ stored: bytes.length });
