// Build step (`npm run build`, last): bundles the command line. dist/teams-hooks/bin.js, as tsc wrote
// it, becomes one module with what every command loads (the argument parser, the command table, the
// help), each command's own code (the dynamic imports of cli/main.ts's table) a chunk of
// dist/teams-hooks/chunks/, and what two or more commands use one more chunk there, shared-*.js. The rest
// of dist/ stays as tsc wrote it: the package's exports (api.js, hook.js), the pi extension (index.js),
// the declarations.
//
// Why: Node loads an ES module file by file: it resolves each import, opens, reads and compiles each
// file. The leader loaded 84 modules before it could watch, a quarter of its CPU from spawn to stop;
// bundled, it loads six files (docs/performance.md, "The bundled command line").
//
// Paths: a module that finds a file from its own place (`new URL("../../../package.json",
// import.meta.url)`, the dashboard's assets/, the package's hooks/ and examples/) is given its place in
// tsc's layout, where that module's own compiled file still is, instead of the chunk's: each
// `import.meta.url` of a module becomes `new URL("<the module's file, relative to the chunk>",
// import.meta.url).href`. Node's modules and the package's dependencies (chokidar) stay imports, found
// as before; the rest is in the bundle, zod too (dist/teams-hooks/vendor/zod.js, from vendor-zod.mjs).
import { readFile, rm } from "node:fs/promises";
import { builtinModules } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { rolldown } from "rolldown";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const distDir = path.join(root, "dist", "teams-hooks");
const entry = path.join(distDir, "bin.js");
const CHUNKS = "chunks";
const dependencies = new Set(
  Object.keys(JSON.parse(await readFile(path.join(root, "package.json"), "utf8")).dependencies ?? {}),
);
/** What stands for a module's own file in a chunk until the chunk's place is known (never in real code). */
const PLACE = "pi-teams-hooks-bundle-place:";

const source = await readFile(entry, "utf8");
if (!source.includes('from "./cli/main.js"'))
  throw new Error("bundle-bin: dist/teams-hooks/bin.js is not tsc's (bundled twice?); run the whole `npm run build`");

/** `chokidar` of `chokidar/x.js`, `@scope/name` of `@scope/name/x.js`. */
const packageOf = (id) =>
  id
    .split("/")
    .slice(0, id.startsWith("@") ? 2 : 1)
    .join("/");

/** Each module's static imports, as rolldown parsed them. */
const importsOf = new Map();
let fromEntry;
/** The modules that bin.js loads before any command runs (its static imports, all the way down). */
function staticallyFromEntry() {
  if (fromEntry) return fromEntry;
  fromEntry = new Set();
  const pending = [entry];
  while (pending.length > 0) {
    const id = pending.pop();
    if (fromEntry.has(id)) continue;
    fromEntry.add(id);
    pending.push(...(importsOf.get(id) ?? []));
  }
  return fromEntry;
}

await rm(path.join(distDir, CHUNKS), { recursive: true, force: true });
const bundle = await rolldown({
  input: entry,
  platform: "node",
  logLevel: "warn",
  // bin.js exports nothing (nothing imports it), so rolldown may add exports to it for its chunks.
  preserveEntrySignatures: "allow-extension",
  // Node's modules, and the packages the package depends on (chokidar), are imported at run time as
  // before; anything else is bundled, such as the helper rolldown's code generator brings for a tagged
  // template that holds `</script` (dashboard/layout.ts), whose package is no dependency of ours.
  external: (id) => id.startsWith("node:") || builtinModules.includes(id) || dependencies.has(packageOf(id)),
  plugins: [
    {
      name: "static-imports",
      moduleParsed(info) {
        importsOf.set(info.id, info.importedIds);
      },
    },
    {
      name: "own-place",
      transform(code, id) {
        // (rolldown's own runtime, `\0rolldown/runtime.js`, keeps the chunk's.)
        if (id.startsWith("\0") || !code.includes("import.meta.url")) return null;
        const own = path.relative(distDir, id).split(path.sep).join("/");
        if (own.startsWith("..")) throw new Error(`bundle-bin: ${id} uses import.meta.url outside dist/teams-hooks`);
        return { code: code.replaceAll("import.meta.url", `new URL("${PLACE}${own}", import.meta.url).href`) };
      },
      renderChunk(code, chunk) {
        if (!code.includes(PLACE)) return null;
        const from = path.posix.dirname(chunk.fileName);
        return code.replaceAll(new RegExp(`${PLACE}([^"']+)`, "g"), (_, own) => {
          const rel = path.posix.relative(from, own);
          return rel.startsWith(".") ? rel : `./${rel}`;
        });
      },
    },
  ],
});
const { output } = await bundle.write({
  dir: distDir,
  format: "esm",
  entryFileNames: "bin.js",
  chunkFileNames: `${CHUNKS}/[name]-[hash].js`,
  // One chunk for what two or more commands share (the leader, the runner, the settings, zod), but not
  // what bin.js imports itself (the command table, the help): `--version` and `--help` stay small, and
  // `watch` loads six files instead of the 28 that automatic chunking makes of what the commands share
  // in differing sets (a leader's start-up to stop 205 → 177 ms of CPU; `logs` and `doctor`, which now
  // also load the leader's code, 0–8 ms more). The modules left out import only each other, so the
  // shared chunk imports them and never the other way round: no cycle, and the order they run in is
  // tsc's (what includeDependenciesRecursively, on by default, would otherwise ensure by pulling them in).
  codeSplitting: {
    groups: [
      {
        name: "shared",
        test: (id) => !staticallyFromEntry().has(id),
        minShareCount: 2,
        includeDependenciesRecursively: false,
      },
    ],
  },
});
await bundle.close();

// tsc's map of bin.js describes the file that is gone.
await rm(`${entry}.map`, { force: true });
const bin = await readFile(entry, "utf8");
if (!bin.startsWith("#!")) throw new Error("bundle-bin: the bundle lost bin.js's #! line");
for (const chunk of output) {
  if (chunk.type === "chunk" && chunk.code.includes(PLACE))
    throw new Error(`bundle-bin: ${chunk.fileName} still holds a module's place`);
}
// On stderr: `npm pack --json` runs the build (prepack) and its stdout must stay JSON.
const modules = output.reduce((n, c) => n + (c.type === "chunk" ? c.moduleIds.length : 0), 0);
console.error(`bundle-bin: ${path.relative(root, entry)} and ${output.length - 1} chunk(s), from ${modules} module(s)`);
