/**
 * Whether a JavaScript or TypeScript gate's packages can be found where Node looks for them. A gate
 * that imports a package not installed beside it (`import { runGate } from "pi-teams-hooks/hook"` in a
 * hooks dir without `node_modules`) dies before any of its code runs, with Node's stack on stderr
 * (`node:internal/modules/esm/resolve:873`): it judged nothing, so it is the gate's error, not the
 * worker's. The runner checks a gate's static imports before it starts it, and reads Node's
 * ERR_MODULE_NOT_FOUND after a run for what a look at the text cannot see (a dynamic import, a module
 * that imports another); doctor checks the same before anything runs.
 */
import { readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import { gateModules, packageFound, type GateModules } from "./gate-modules.js";

/** What a gate imports and cannot find: the specifier, and its package (`pi-teams-hooks` of `pi-teams-hooks/hook`). */
interface MissingImport {
  specifier: string;
  packageName: string;
}

/** Gates started with node, whose imports Node resolves from the gate's folder. */
const NODE_GATE = /\.(?:js|mjs|cjs|ts|mts|cts)$/;

/**
 * The static imports (`import … from "x"`, `import "x"`, `export … from "x"`) and `require("x")`
 * calls of a gate's text whose package the gate's run will not find (runner/gate-modules.ts: the
 * leader's own `pi-teams-hooks`, else the gate's own node_modules). Bare specifiers only: a relative
 * import, `node:`, a builtin and a URL are Node's to report.
 */
export function missingImports(
  source: string,
  gateFile: string,
  modules: GateModules = gateModules(gateFile),
): MissingImport[] {
  if (!NODE_GATE.test(gateFile)) return [];
  const text = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const found = new Map<string, MissingImport>();
  const patterns = [
    /^\s*(?:import|export)\s[^;'"`]*?\bfrom\s*["']([^"']+)["']/gm,
    /^\s*import\s*["']([^"']+)["']/gm,
    /\brequire\(\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) {
      const specifier = match[1] ?? "";
      const packageName = barePackage(specifier);
      if (packageName === null || found.has(specifier)) continue;
      if (!packageFound(packageName, modules)) found.set(specifier, { specifier, packageName });
    }
  }
  return [...found.values()];
}

/** The gate's missing imports, read from its file; none when it cannot be read (discovery reports that). */
export function missingImportsOfFile(gateFile: string): MissingImport[] {
  try {
    return missingImports(readFileSync(gateFile, "utf8"), gateFile);
  } catch {
    return []; // gone or unreadable: the runner's and doctor's other checks say so
  }
}

/** One line for the lead: what cannot be found, from where, and the fix. */
export function missingImportMessage(gateFile: string, missing: readonly MissingImport[]): string {
  const dir = path.dirname(path.resolve(gateFile));
  const names = [...new Set(missing.map((m) => m.packageName))];
  const what = missing.map((m) => `"${m.specifier}"`).join(", ");
  const where = `${path.join(dir, "node_modules")} (a gate's packages are those beside it)`;
  const fix = `cd ${dir} && npm install ${names.join(" ")}`;
  return `${path.basename(gateFile)} imports ${what}, but ${names.join(", ")} is not installed in ${where} (${fix})`;
}

/**
 * Node's own report of a module it could not find, from a gate's stderr, as one line naming the gate
 * rather than the private copy that ran (`copy`); null when stderr holds no such report.
 */
export function moduleNotFound(stderr: string, copy: string, gateFile: string): string | null {
  const match = /Error \[ERR_MODULE_NOT_FOUND\]: (Cannot find (?:package|module) '[^']*') imported from (\S+)/.exec(
    stderr,
  );
  if (!match) return null;
  // The private copy (its name may come cut short, as runGate's crash line is): the gate's own name.
  const named = match[2] ?? copy;
  const from = named === copy || path.basename(named).includes(".pi-run-") ? gateFile : named;
  const what = match[1] ?? "Cannot find a module";
  const fix = what.startsWith("Cannot find package")
    ? "install it where the gate can import it"
    : "a file the gate imports is not there";
  return `${what} imported from ${from} (ERR_MODULE_NOT_FOUND): ${fix}`;
}

/** The package a bare specifier names (`@scope/name` or `name`), or null for anything else. */
function barePackage(specifier: string): string | null {
  if (specifier === "" || specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("#"))
    return null;
  if (/^[a-z][a-z0-9+.-]*:/i.test(specifier)) return null; // node:, data:, file:, https:
  const parts = specifier.split("/");
  const name = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? "");
  if (builtinModules.includes(name)) return null;
  return name;
}
