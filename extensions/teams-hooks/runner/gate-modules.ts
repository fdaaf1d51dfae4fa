/**
 * Where a JavaScript or TypeScript gate's imports resolve. The copy that runs sits in the run's
 * private folder (runner/run-dir.ts), so Node's lookups go up through the leader's own folders
 * only, never through the hooks dir's parents (a teams root the agents can write):
 *
 * - `pi-teams-hooks` (and `pi-teams-hooks/hook`) is the running leader's own package, always;
 * - any other package comes from the `node_modules` beside the gate, linked into the run's folder,
 *   when no other user can write that folder or the gate's own;
 * - a `.js` or `.ts` gate's module type comes from the nearest package.json above the gate in a
 *   folder no other user can write (one in a folder others can write is ignored, and `doctor`
 *   says so); the run's folder gets a package.json of that type.
 *
 * A gate's relative imports (`./lib.mjs`) resolve to the files beside the gate: each is linked into
 * the run's folder, and Node keeps the link's path as the module's (NODE_PRESERVE_SYMLINKS), so that
 * what they import resolves from the run's folder too.
 */
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ownPackageRoot } from "./run-dir.js";
import { VIEW_FILES } from "./sandbox.js";
import { othersCanWrite } from "../team/ownership.js";
import { existsNoFollow } from "../team/paths.js";

/** The package name every gate gets from the leader itself. */
const OWN_PACKAGE = "pi-teams-hooks";

/** Gates started with node, whose imports Node resolves. */
const NODE_GATE = /\.(?:js|mjs|cjs|ts|mts|cts)$/;
/** The extensions whose module type the nearest package.json decides. */
const TYPED_BY_PACKAGE = /\.(?:js|ts)$/;

/** How a node gate's modules are laid out for one run, or why they cannot be. */
export interface GateModules {
  /** `module` or `commonjs`, for the run folder's package.json (null: the gate's extension decides). */
  type: "module" | "commonjs" | null;
  /** The gate's own `node_modules`, when it can be used (null: none, or others can write it). */
  packages: string | null;
  /** Things a reader should know: a package.json or a node_modules ignored, and why. */
  notes: string[];
}

/** What a node gate at `gateFile` gets: its module type and its packages' folder. */
export function gateModules(gateFile: string): GateModules {
  const notes: string[] = [];
  const dir = path.dirname(path.resolve(gateFile));
  let packages: string | null = null;
  const own = path.join(dir, "node_modules");
  if (existsNoFollow(own)) {
    const unsafe = othersCanWrite(dir) ?? othersCanWrite(own);
    if (unsafe) notes.push(`${own} is not used: ${unsafe}, so another user could put a package there`);
    else packages = own;
  }
  return { type: TYPED_BY_PACKAGE.test(gateFile) ? moduleType(dir, notes) : null, packages, notes };
}

/** The `type` of the nearest package.json above `dir` in a folder no other user can write. */
function moduleType(dir: string, notes: string[]): "module" | "commonjs" {
  for (let at = dir; ; at = path.dirname(at)) {
    const manifest = path.join(at, "package.json");
    if (existsNoFollow(manifest)) {
      const unsafe = othersCanWrite(at);
      if (unsafe) notes.push(`${manifest} is not read for the gate's module type: ${unsafe}`);
      else return readType(manifest);
    }
    if (path.dirname(at) === at) return "commonjs";
  }
}

function readType(manifest: string): "module" | "commonjs" {
  try {
    const pkg = JSON.parse(readFileSync(manifest, "utf8")) as { type?: unknown };
    return pkg.type === "module" ? "module" : "commonjs";
  } catch {
    return "commonjs"; // not JSON: Node would refuse to run the gate; commonjs is what it says without a type
  }
}

/**
 * Lays out `runDir` for a node gate: a package.json of the gate's module type, and a node_modules with `pi-teams-hooks` (the leader's own) and each package of the
 * gate's own node_modules.
 */
export function layOutModules(runDir: string, gateFile: string, modules: GateModules): void {
  if (!NODE_GATE.test(gateFile)) return;
  if (modules.type) writeFileSync(path.join(runDir, "package.json"), `{"type":"${modules.type}"}\n`, { flag: "wx" });
  const linked = path.join(runDir, "node_modules");
  mkdirSync(linked);
  symlinkSync(ownPackageRoot(), path.join(linked, OWN_PACKAGE), "dir");
  if (!modules.packages) return;
  for (const name of readdirSync(modules.packages)) {
    if (name === OWN_PACKAGE || name.startsWith(".")) continue;
    symlinkSync(path.join(modules.packages, name), path.join(linked, name));
  }
}

/** The run folder's own names (runner/run-dir.ts), never shadowed by a file beside the gate. */
const RUN_FILES = new Set([
  "context.json",
  "stdin.json",
  "result.json",
  "out",
  "root",
  ...VIEW_FILES,
  "fstab.failed",
  "node_modules",
  "package.json",
]);

/**
 * Links each file beside the gate into the run's folder, where the gate's copy is: `$(dirname "$0")/lib.sh`
 * and a JavaScript gate's `./lib.mjs` are the gate's own helpers, read where they are (the gate's folder is
 * shown read-only in the sandbox). Returns the names linked.
 */
export function linkSiblings(runDir: string, gateFile: string): string[] {
  const gateDir = path.dirname(path.resolve(gateFile));
  const linked: string[] = [];
  for (const name of readdirSync(gateDir)) {
    if (name === path.basename(gateFile) || RUN_FILES.has(name)) continue;
    symlinkSync(path.join(gateDir, name), path.join(runDir, name));
    linked.push(name);
  }
  return linked;
}

/** Whether the package `name` is found for a gate laid out with `modules`. */
export function packageFound(name: string, modules: GateModules): boolean {
  if (name === OWN_PACKAGE) return true;
  return modules.packages !== null && existsNoFollow(path.join(modules.packages, name));
}
