// Makes the Pyodide memory snapshot that pyodide-loader.mjs restores (see there for why and when).
import { loadPyodide } from "./vendor/pyodide-314.0.2/pyodide.mjs";
import { INDEX_URL, PRELOADED, writeSnapshot } from "./pyodide-loader.mjs";

const pyodide = await loadPyodide({ indexURL: INDEX_URL, _makeSnapshot: true });
pyodide.runPython(PRELOADED);
const bytes = pyodide.makeMemorySnapshot();
await writeSnapshot(bytes);
postMessage({ stored: bytes.length });
