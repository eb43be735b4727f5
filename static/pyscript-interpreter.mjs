// The interpreter module pyscript.toml names (`interpreter = ...`): PyScript imports it and calls
// its loadPyodide() where it would otherwise fetch Pyodide from a CDN. It hands PyScript the page's
// one Pyodide, already on its way since the page was parsed (pyscript-boot.mjs) and restored from
// the memory snapshot (pyodide-loader.mjs); PyScript's options (its stdout and stderr, which are
// the console's anyway, and an indexURL next to this file) do not apply to it.
import { startPyodide, version } from "./pyodide-loader.mjs";

export { version };

export function loadPyodide(_options) {
  return startPyodide();
}
