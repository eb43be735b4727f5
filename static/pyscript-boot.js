// Loads PyScript (vendored) so that it runs under the page's CSP, which has no 'unsafe-eval'.
//
// PyScript 0.7.31 builds its *worker* hooks with Function(...) from strings, and does so even for a
// main-thread script (polyscript's Hook constructor reads every worker hook getter). Its only default
// worker hook registers the `_pyscript` module inside PyScript workers; this page runs no PyScript
// worker, so emptying that set before any <script type="py"> is processed removes the one eval.
// Module scripts run in document order after parsing, and PyScript reads the hooks only once the
// interpreter has loaded, so this runs in time.
import { hooks } from "./vendor/pyscript-0.7.31/core.js";

hooks.worker.onBeforeRunAsync.clear();
