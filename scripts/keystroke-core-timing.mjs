// What the keystroke core costs on MicroPython (the page's keystroke stage), in Node, one fresh
// interpreter per run:  node scripts/keystroke-core-timing.mjs [runs]
// The first run is the cold one (a first visit: the wasm compiled, nothing warm); later runs of the
// same process reuse Node's compiled wasm and JIT, and come out faster.
//
// Prints one JSON line per run (milliseconds): loading the vendored wasm, writing the modules of
// ai_search.KEYSTROKE_MODULES into its file system, `import ai_search`, the first and a second parse
// of one line, then the first and a second keystroke of non-ASCII text (completed filters, chips,
// the active filter and its date suggestions: the first one decodes the Unicode tables).
import fs from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const vendor = `${root}static/vendor/micropython-1.28.0-6`;
const init = fs.readFileSync(`${root}py/ai_search/__init__.py`, "utf8");
const listed = init.match(/KEYSTROKE_MODULES[^=]*= \(([^)]*)\)/)[1];
const modules = ["__init__", ...[...listed.matchAll(/"(\w+)"/g)].map((m) => m[1])];
const { loadMicroPython } = await import(pathToFileURL(`${vendor}/micropython.mjs`).href);
const line = "deploy in:#ops,#infra from:@alice after:2026-11-01 -\\\"roll back\\\"";
const runs = Number(process.argv[2] || 1);

for (let run = 0; run < runs; run++) {
  const t0 = performance.now();
  const mp = await loadMicroPython({ url: `${vendor}/micropython.wasm`, stdout: () => {}, stderr: (l) => console.error(l) });
  const t1 = performance.now();
  mp.FS.mkdirTree("/lib/ai_search");
  for (const m of modules) mp.FS.writeFile(`/lib/ai_search/${m}.py`, fs.readFileSync(`${root}py/ai_search/${m}.py`));
  mp.runPython("import sys\nsys.path.insert(0, '/lib')");
  const t2 = performance.now();
  mp.runPython("import ai_search");
  const t3 = performance.now();
  mp.runPython(`p = ai_search.parse_search_filter_text("${line}")`);
  const t4 = performance.now();
  mp.runPython(`p = ai_search.parse_search_filter_text("${line}")`);
  const t5 = performance.now();
  const keystroke = [
    "c = ai_search.extract_completed_search_filters(t)",
    "ch = ai_search.build_applied_filter_chips(c.filters, today=d)",
    "s = ai_search.build_filter_suggestions(ai_search.get_active_search_filter(t), today=d)",
  ].join("\n");
  mp.runPython("import datetime\nt = 'in:#café from:@zoë ΟΔΟΣ after:2026-1'\nd = datetime.date(2026, 12, 1)");
  const t6 = performance.now();
  mp.runPython(keystroke);
  const t7 = performance.now();
  mp.runPython(keystroke);
  const t8 = performance.now();
  const ms = (x) => Number(x.toFixed(1));
  console.log(JSON.stringify({
    wasm: ms(t1 - t0), files: ms(t2 - t1), import: ms(t3 - t2), first_parse: ms(t4 - t3),
    second_parse: ms(t5 - t4), first_non_ascii_keystroke: ms(t7 - t6), second_non_ascii_keystroke: ms(t8 - t7),
  }));
}
