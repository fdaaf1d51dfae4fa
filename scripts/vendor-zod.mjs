// Build step (`npm run build`, after tsc): bundles zod into dist/teams-hooks/vendor/zod.js with only
// its English locale, and points the compiled modules at that file instead of `zod`.
//
// Why: zod's entry imports all of its ~50 locales eagerly (`export * as locales`), which is most of
// what loading zod costs: on the machine of docs/performance.md, importing zod takes 99–130 ms, the
// bundle 51–67 ms, and the process is ~5 MB smaller. The leader loads zod before it can watch, so
// this is start-up time. Error messages are zod's English ones either way (English is zod's default
// and the only locale this project uses). Without rolldown (a production install without dev
// dependencies), the compiled modules keep importing `zod` from node_modules: slower, same behaviour.
import { readFile, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const distDir = path.join(root, "dist", "teams-hooks");
const target = path.join(distDir, "vendor", "zod.js");
const ENTRY = "\0pi-teams-hooks:zod";
const LOCALES = "\0pi-teams-hooks:zod-locales";

let rolldown;
try {
  ({ rolldown } = await import("rolldown"));
} catch {
  console.warn("vendor-zod: rolldown is not installed; the build keeps importing zod from node_modules");
  process.exit(0);
}

const zodVersion = JSON.parse(await readFile(path.join(root, "node_modules", "zod", "package.json"), "utf8")).version;
const bundle = await rolldown({
  input: ENTRY,
  platform: "node",
  logLevel: "warn",
  plugins: [
    {
      name: "zod-english-only",
      resolveId(source, importer) {
        if (source === ENTRY) return ENTRY;
        // zod's own `../locales/index.js` (from core and classic): English only.
        if (importer?.includes(`${path.sep}node_modules${path.sep}zod${path.sep}`) && /(^|\/)locales\/index\.js$/.test(source)) return LOCALES;
        return null;
      },
      load(id) {
        if (id === ENTRY) return 'export * from "zod";\nexport { default } from "zod";\n';
        if (id === LOCALES) return 'export { default as en } from "zod/v4/locales/en.js";\n';
        return null;
      },
    },
  ],
});
await bundle.write({
  file: target,
  format: "esm",
  banner: `// zod ${zodVersion} (MIT License, https://github.com/colinhacks/zod), bundled by scripts/vendor-zod.mjs with its English locale only.`,
});
await bundle.close();

// The compiled modules, in every folder: `from "zod"` → the bundle, by a relative path (type-only imports are gone from the .js files).
let rewritten = 0;
for (const name of (await readdir(distDir, { recursive: true })).filter((n) => n.endsWith(".js") && !n.startsWith(`vendor${path.sep}`))) {
  const file = path.join(distDir, name);
  const text = await readFile(file, "utf8");
  let bundle = path.relative(path.dirname(file), target).split(path.sep).join("/");
  if (!bundle.startsWith(".")) bundle = `./${bundle}`;
  const next = text.replaceAll(/(\bfrom\s*)"zod"/g, `$1"${bundle}"`);
  if (next !== text) {
    await writeFile(file, next);
    rewritten += 1;
  }
}
if (rewritten === 0) throw new Error("vendor-zod: no compiled module imports zod; is the build in dist/teams-hooks?");
console.log(`vendor-zod: zod ${zodVersion} → ${path.relative(root, target)}; ${rewritten} module(s) import it`);
