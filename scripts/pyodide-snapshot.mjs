// Makes the server's Pyodide memory snapshot (static/pyodide-loader.mjs, SHIPPED_SNAPSHOT) with the
// vendored Pyodide in Node, so that even a first visit skips CPython's initialisation and the import
// of the pure core.
//
//   node scripts/pyodide-snapshot.mjs            (scripts/setup runs it after vendoring Pyodide)
//   node scripts/pyodide-snapshot.mjs --measure  what each part of the snapshot costs on the wire
//
// Writes the snapshot packed (static/snapshot-format.mjs: the allocator's free memory zeroed first,
// stored against the wasm's initial memory, unchanged pages left out; scripts/setup then writes
// its Brotli and gzip copies), then restores it once in a second Pyodide and imports the core there
// through the snapshot's hook, so a snapshot this Pyodide would refuse never reaches the page. The
// loader names what to preload, the format and where the file goes: one source for all.
import { readFileSync, readdirSync, writeFileSync, renameSync } from "node:fs";
import { fileURLToPath } from "node:url";

const loader = await import(new URL("../static/pyodide-loader.mjs", import.meta.url).href);
const { loadPyodide } = await import(new URL("pyodide.mjs", loader.INDEX_URL).href);
const indexURL = fileURLToPath(loader.INDEX_URL);
const target = fileURLToPath(loader.SHIPPED_SNAPSHOT);

// The pure core (py/ai_search, standard library only) is imported into the snapshot too, where the
// page will find it: PyScript writes [files] to ./ai_search/ under the interpreter's working
// directory. The modules are kept aside rather than in sys.modules; an import hook hands them out
// only if every file the page wrote is byte for byte the one imported here (a changed core, say
// during development before setup has run again, is imported from its files as usual).
const CORE = new URL("../py/ai_search/", import.meta.url);
const CORE_HOOK = `
import importlib.abc, importlib.util, os, sys

def _keep_core_aside():
    names = sorted(f[:-3] for f in os.listdir("ai_search") if f.endswith(".py") and f != "__init__.py")
    for name in ["ai_search", *("ai_search." + n for n in names)]:
        importlib.import_module(name)
    kept = {n: m for n, m in sys.modules.items() if n == "ai_search" or n.startswith("ai_search.")}
    digests = {}
    for name, module in kept.items():
        with open(module.__file__, "rb") as handle:
            digests[module.__file__] = importlib.util.source_hash(handle.read())
        del sys.modules[name]

    class SnapshotCore(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        """Hands out the core imported when the snapshot was made, while its files are unchanged."""

        same = None

        def find_spec(self, name, path=None, target=None):
            if name not in kept:
                return None
            if self.same is None:
                self.same = all(_digest(file) == digest for file, digest in digests.items())
            if not self.same:
                return None
            module = kept[name]
            return importlib.util.spec_from_loader(
                name, self, origin=module.__file__, is_package=hasattr(module, "__path__")
            )

        def create_module(self, spec):
            return kept[spec.name]

        def exec_module(self, module):
            pass

    def _digest(file):
        try:
            with open(file, "rb") as handle:
                return importlib.util.source_hash(handle.read())
        except OSError:
            return None

    sys.meta_path.insert(0, SnapshotCore())

_keep_core_aside()
del _keep_core_aside
`;

// The browser glue (py/ai_search_web) and PyScript's own Python package (which PyScript writes to
// ./pyscript/ before running the page, then imports) use `js` and the DOM, so they cannot be imported
// here; they are compiled here instead. A loader hands each module its code object when the file the
// page wrote has the same source hash, so a first visit never runs CPython's parser and compiler
// over them (in a restored interpreter that is slow: every wasm function it runs is compiled by V8 on
// first use; PyScript's 30 KB took 170-600 ms to compile on a loaded 2-core machine); any other file
// (a newer PyScript, an edited module) compiles as usual.
const WEB = new URL("../py/ai_search_web/", import.meta.url);
const COMPILED_PACKAGES = ["ai_search_web", "pyscript"];
const WEB_HOOK = `
import importlib.machinery, importlib.util, os, sys

def _compile_aside(packages):
    codes = {}
    for package in packages:
        if not os.path.isdir(package):
            continue
        for name in sorted(os.listdir(package)):
            if name.endswith(".py"):
                path = os.path.abspath(os.path.join(package, name))
                with open(path, "rb") as handle:
                    source = handle.read()
                codes[path] = (importlib.util.source_hash(source), compile(source, path, "exec", dont_inherit=True))

    class CompiledLoader(importlib.machinery.SourceFileLoader):
        """Returns the code compiled with the snapshot while the file's source hash is unchanged."""

        def get_code(self, fullname):
            path = self.get_filename(fullname)
            known = codes.get(path)
            if known is not None and known[0] == importlib.util.source_hash(self.get_data(path)):
                return known[1]
            return super().get_code(fullname)

    class CompiledAside:
        """Finds the modules of those packages as usual, loading them with CompiledLoader."""

        @staticmethod
        def find_spec(name, path=None, target=None):
            if name.partition(".")[0] not in packages:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is not None and isinstance(spec.loader, importlib.machinery.SourceFileLoader):
                spec.loader = CompiledLoader(spec.loader.name, spec.loader.path)
            return spec

    sys.meta_path.insert(0, CompiledAside)

_compile_aside(${JSON.stringify(COMPILED_PACKAGES).replaceAll('"', "'")})
del _compile_aside
`;

// PyScript's Python package, as PyScript writes it: the bundle holds it as one object literal of
// file name -> source ({pyscript:{"__init__.py": ...}}), passed to the function that writes it.
// Read from the vendored bundle; none found (another PyScript layout) means it is compiled in the
// page as before.
const PYSCRIPT_PACKAGE_MARK = "{pyscript:{";

function pyscriptPackage() {
  const vendor = new URL("../static/vendor/", import.meta.url);
  for (const folder of readdirSync(vendor).filter((n) => n.startsWith("pyscript-"))) {
    for (const name of readdirSync(new URL(`${folder}/`, vendor)).filter((n) => n.endsWith(".js"))) {
      const text = readFileSync(new URL(`${folder}/${name}`, vendor), "utf8");
      const at = text.indexOf(PYSCRIPT_PACKAGE_MARK);
      if (at >= 0) return JSON.parse(objectLiteral(text, at + PYSCRIPT_PACKAGE_MARK.length - 1));
    }
  }
  console.warn("pyodide-snapshot: PyScript's Python package not found in the bundle; not compiled aside");
  return {};
}

// The JSON object literal starting at `start` (a "{"), strings and nesting respected.
function objectLiteral(text, start) {
  let depth = 0;
  let quoted = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === "\\") i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return text.slice(start, i + 1);
  }
  throw new Error("pyodide-snapshot: an unterminated object literal in PyScript's bundle");
}

// A restored page starts with an empty standard library (everything it imports is in the snapshot).
// This finder, last on sys.meta_path, is its way to the real one: when an import of a module of the
// standard library (its top-level names, listed here from the full zip) finds nothing, it asks the
// page for the zip once (the loader's stdlibOnDemand, a synchronous request) and looks again.
const STDLIB_HOOK = `
import importlib.machinery, sys, zipfile, zipimport

def _stdlib_on_demand(zip_path):
    with zipfile.ZipFile(zip_path) as archive:
        names = frozenset(n.split("/")[0].removesuffix(".py") for n in archive.namelist())

    class StdlibOnDemand:
        """Finds nothing itself: fetches the full standard library for the first one it lacks."""

        @staticmethod
        def find_spec(name, path=None, target=None):
            import js

            if name.partition(".")[0] not in names or not hasattr(js, "__aiSearchLoadStdlib"):
                return None
            if not js.__aiSearchLoadStdlib():
                return None
            sys.path_importer_cache.pop(zip_path, None)
            getattr(zipimport, "_zip_directory_cache", {}).pop(zip_path, None)
            importlib.invalidate_caches()
            return importlib.machinery.PathFinder.find_spec(name, path, target)

    sys.meta_path.append(StdlibOnDemand)

_stdlib_on_demand("/lib/python314.zip")
del _stdlib_on_demand
`;

const PYSCRIPT = pyscriptPackage();

function writePackage(pyodide, folder, url) {
  pyodide.FS.mkdirTree(folder);
  for (const name of readdirSync(url).filter((n) => n.endsWith(".py"))) {
    pyodide.FS.writeFile(`${folder}/${name}`, readFileSync(new URL(name, url)));
  }
}

function writeCore(pyodide) {
  writePackage(pyodide, "ai_search", CORE);
  writePackage(pyodide, "ai_search_web", WEB);
  pyodide.FS.mkdirTree("pyscript");
  for (const [name, source] of Object.entries(PYSCRIPT)) {
    if (typeof source === "string") pyodide.FS.writeFile(`pyscript/${name}`, source);
  }
}

// The empty standard library a restored page starts with (the loader's EMPTY_STDLIB): a zip of
// nothing, its end-of-central-directory record alone.
writeFileSync(fileURLToPath(loader.EMPTY_STDLIB), Buffer.from([0x50, 0x4b, 0x05, 0x06, ...new Array(18).fill(0)]));

// What goes into the snapshot, in order; `--measure` makes one snapshot per prefix of this list and
// prints what each costs on the wire (docs/page.md, "Bytes on the wire").
const STAGES = [
  ["CPython after start-up", () => {}],
  ["+ the standard-library modules the page imports (PRELOADED)", (p) => p.runPython(loader.PRELOADED)],
  ["+ the pure core, imported", (p) => { writeCore(p); p.runPython(CORE_HOOK); }],
  ["+ the browser glue and PyScript's package, compiled", (p) => p.runPython(WEB_HOOK)],
  ["+ the standard library on demand", (p) => p.runPython(STDLIB_HOOK)],
];
const image = loader.initialMemory(readFileSync(new URL("pyodide.asm.wasm", loader.INDEX_URL)));

async function snapshotOf(stages) {
  const maker = await loadPyodide(loader.baseOptions({ indexURL, _makeSnapshot: true }));
  for (const [, run] of stages) run(maker);
  maker.runPython("import gc; gc.collect()");
  loader.zeroFreeMemory(maker._module);
  const bytes = maker.makeMemorySnapshot();
  return { bytes, packed: loader.packSnapshot(bytes, image) };
}

if (process.argv.includes("--measure")) {
  const { brotliCompressSync, gzipSync, constants } = await import("node:zlib");
  // setup's settings (ai_search_server/encoding.py: SETUP_BROTLI_*, SETUP_GZIP_LEVEL).
  const brotli = (data) => brotliCompressSync(data, { params: {
    [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_LGWIN]: 24, [constants.BROTLI_PARAM_SIZE_HINT]: data.length } });
  console.log("snapshot contents: memory / packed / gzip -9 / Brotli 11 (bytes)");
  for (let n = 1; n <= STAGES.length; n++) {
    const { bytes, packed } = await snapshotOf(STAGES.slice(0, n));
    const sizes = [bytes.length, packed.length, gzipSync(packed, { level: 9 }).length, brotli(packed).length];
    console.log(`${STAGES[n - 1][0].padEnd(62)} ${sizes.map((s) => s.toLocaleString("en").padStart(11)).join(" ")}`);
  }
  process.exit(0);
}

const { bytes, packed } = await snapshotOf(STAGES);

const check = await loadPyodide(
  loader.baseOptions({
    indexURL,
    _loadSnapshot: loader.unpackSnapshot(packed, image),
    stdLibURL: fileURLToPath(loader.EMPTY_STDLIB),
  }),
);
writeCore(check);
const answer = check.runPython(
  `${loader.PRELOADED}\nimport sys, ai_search\nassert ai_search.__spec__.loader.__class__.__name__ == "SnapshotCore"\nsys.version.split()[0]`,
);

// Written under temporary names and renamed, so an interrupted run leaves no half file behind.
writeFileSync(`${target}.tmp`, packed);
renameSync(`${target}.tmp`, target);
console.log(`pyodide-snapshot: ${target} (${packed.length} bytes packed from ${bytes.length}, CPython ${answer})`);
