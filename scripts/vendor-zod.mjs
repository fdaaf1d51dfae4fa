// Build step (`npm run build`, after tsc): bundles zod into dist/teams-hooks/vendor/zod.js with only
// its English locale, copies the type declarations that describe it beside it (vendor/zod.d.ts and
// vendor/zod/), and points the compiled modules and their declarations at these files instead of
// `zod`. So the published package needs no zod installed: not to run, and not for its types (zod's
// package is 8 MB; the declarations it needs are about 0.2 MB).
//
// Why: zod's entry imports all of its ~50 locales eagerly (`export * as locales`), which is most of
// what loading zod costs: on the machine of docs/performance.md, importing zod takes 99–130 ms, the
// bundle 51–67 ms, and the process is ~5 MB smaller. The leader loads zod before it can watch, so
// this is start-up time. Error messages are zod's English ones either way (English is zod's default
// and the only locale this project uses). The step is required: zod is a dev dependency, so a build
// that kept importing `zod` would not run where the package is installed.
import { copyFile, mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { rolldown } from "rolldown";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const distDir = path.join(root, "dist", "teams-hooks");
const target = path.join(distDir, "vendor", "zod.js");
const ENTRY = "\0pi-teams-hooks:zod";
const LOCALES = "\0pi-teams-hooks:zod-locales";

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
        if (
          importer?.includes(`${path.sep}node_modules${path.sep}zod${path.sep}`) &&
          /(^|\/)locales\/index\.js$/.test(source)
        )
          return LOCALES;
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

// zod's declarations, from its entry's: every file they import, at the same place under vendor/zod/.
// Of the locales, only English, as in the bundle.
const zodDir = path.join(root, "node_modules", "zod");
const typesDir = path.join(distDir, "vendor", "zod");
const LOCALES_INDEX = path.join("v4", "locales", "index.d.ts");
const pending = ["index.d.ts"];
const copied = new Set();
while (pending.length > 0) {
  const rel = pending.pop();
  if (copied.has(rel)) continue;
  copied.add(rel);
  const text =
    rel === LOCALES_INDEX
      ? 'export { default as en } from "./en.js";\n'
      : await readFile(path.join(zodDir, rel), "utf8");
  await mkdir(path.dirname(path.join(typesDir, rel)), { recursive: true });
  await writeFile(path.join(typesDir, rel), text);
  for (const [, spec] of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)"(\.[^"]+)"/gm)) {
    pending.push(path.join(path.dirname(rel), spec.replace(/\.js$/, ".d.ts")));
  }
}
await copyFile(path.join(zodDir, "LICENSE"), path.join(typesDir, "LICENSE"));
await writeFile(
  path.join(distDir, "vendor", "zod.d.ts"),
  `// The types of zod.js: zod ${zodVersion}'s own declarations (MIT License, zod/LICENSE), with its English locale only.\nexport * from "./zod/index.js";\nexport { default } from "./zod/index.js";\n`,
);

// The compiled modules and their declarations, in every folder: `from "zod"` (and `import("zod")`)
// → the bundle, by a relative path (type-only imports are gone from the .js files, not the .d.ts).
let rewritten = 0;
for (const name of (await readdir(distDir, { recursive: true })).filter(
  (n) => /\.(js|d\.ts)$/.test(n) && !n.startsWith(`vendor${path.sep}`),
)) {
  const file = path.join(distDir, name);
  const text = await readFile(file, "utf8");
  let bundle = path.relative(path.dirname(file), target).split(path.sep).join("/");
  if (!bundle.startsWith(".")) bundle = `./${bundle}`;
  const next = text.replaceAll(/(\bfrom\s*|\bimport\(\s*)"zod"/g, `$1"${bundle}"`);
  if (next !== text) {
    await writeFile(file, next);
    if (name.endsWith(".js")) rewritten += 1;
  }
}
if (rewritten === 0) throw new Error("vendor-zod: no compiled module imports zod; is the build in dist/teams-hooks?");
// On stderr: `npm pack --json` runs the build (prepack) and its stdout must stay JSON.
console.error(
  `vendor-zod: zod ${zodVersion} → ${path.relative(root, target)}; ${rewritten} module(s) import it; ${copied.size} declaration file(s) beside it`,
);
