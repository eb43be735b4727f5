// Runs bench/bench_grammar.py inside the vendored Pyodide (the page's interpreter) in Node, with the
// pure core copied into its file system as PyScript does for the page. Arguments go to the script.
//
//   node bench/_pyodide_run.mjs --repeats 7 --calls 2000     (bench/bench_grammar.py --pyodide)
import { readFileSync, readdirSync } from "node:fs";

const loader = await import(new URL("../static/pyodide-loader.mjs", import.meta.url).href);
const { loadPyodide } = await import(new URL("pyodide.mjs", loader.INDEX_URL).href);
const pyodide = await loadPyodide({ indexURL: new URL(".", loader.INDEX_URL).pathname });

const root = new URL("../", import.meta.url);
const copy = (from, to) => {
  pyodide.FS.mkdirTree(to);
  for (const name of readdirSync(new URL(from, root))) {
    if (name.endsWith(".py")) {
      pyodide.FS.writeFile(`${to}/${name}`, readFileSync(new URL(from + name, root)));
    }
  }
};
copy("py/ai_search/", "/bench/py/ai_search");
copy("bench/", "/bench/bench");
pyodide.setStdout({ batched: (line) => console.log(line) });
pyodide.setStderr({ batched: (line) => console.error(line) });
const args = JSON.stringify(["bench/bench_grammar.py", ...process.argv.slice(2)]);
try {
  await pyodide.runPythonAsync(`
import os, runpy, sys
os.chdir("/bench")
sys.argv = ${args}
runpy.run_path("bench/bench_grammar.py", run_name="__main__")
`);
} catch (error) {
  console.error(String(error));
  process.exit(1);
}
