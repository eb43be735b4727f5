// Makes the server's Pyodide memory snapshot (static/pyodide-loader.mjs, SHIPPED_SNAPSHOT) with the
// vendored Pyodide in Node, so that even a first visit skips CPython's initialisation.
//
//   node scripts/pyodide-snapshot.mjs        (scripts/setup runs it after vendoring Pyodide)
//
// Writes the snapshot and a gzip copy beside it (the server sends that to browsers accepting gzip),
// then restores it once in a second Pyodide and runs the preloaded imports there, so a snapshot
// this Pyodide would refuse never reaches the page. The loader names what to preload and where the
// file goes: one source for both.
import { writeFileSync, renameSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { gzipSync, constants } from "node:zlib";

const loader = await import(new URL("../static/pyodide-loader.mjs", import.meta.url).href);
const { loadPyodide } = await import(new URL("pyodide.mjs", loader.INDEX_URL).href);
const indexURL = fileURLToPath(loader.INDEX_URL);
const target = fileURLToPath(loader.SHIPPED_SNAPSHOT);

const maker = await loadPyodide({ indexURL, _makeSnapshot: true });
maker.runPython(loader.PRELOADED);
const bytes = maker.makeMemorySnapshot();

const check = await loadPyodide({ indexURL, _loadSnapshot: bytes });
const answer = check.runPython(`${loader.PRELOADED}\nimport sys\nsys.version.split()[0]`);

// Written under temporary names and renamed, so an interrupted run leaves no half file behind.
writeFileSync(`${target}.tmp`, bytes);
writeFileSync(`${target}.gz.tmp`, gzipSync(bytes, { level: constants.Z_BEST_COMPRESSION }));
renameSync(`${target}.tmp`, target);
renameSync(`${target}.gz.tmp`, `${target}.gz`);
console.log(`pyodide-snapshot: ${target} (${bytes.length} bytes, CPython ${answer})`);
