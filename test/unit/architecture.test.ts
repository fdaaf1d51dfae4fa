/**
 * The folders of docs/architecture.md and their rules, enforced: a layer imports only the layers its
 * rule names (modules of one folder import each other freely, without cycles), the pure folders do no
 * I/O of their own, each package that touches the outside world is imported by one folder only, and
 * nothing imports the four entry files at the top. A feature that cuts across layers (trust, holds,
 * deferrals) has a folder that is one layer with its own rule, and its sides above it (the leader's,
 * the event's, the command's) sit in the layers they belong to, named for it. A new module needs no
 * edit here unless it breaks a rule; a new folder needs a rule.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve("extensions/teams-hooks");

/** The layers up to holds/, which every layer from doctor/ on may import. */
const UP_TO_HOLDS = [
  "contract",
  "text",
  "settings",
  "team",
  "gates",
  "trust",
  "deferrals",
  "runner",
  "policy",
  "holds",
];
/** Each layer and the layers it may import, lowest first. A layer is the folder of the same name. */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  contract: [],
  text: ["contract"],
  settings: ["contract", "text"],
  team: ["contract", "text", "settings"],
  gates: ["contract", "text", "settings", "team"],
  trust: ["contract", "text", "settings", "team", "gates"],
  deferrals: ["contract", "text", "settings", "team", "gates"],
  runner: ["contract", "text", "settings", "team", "gates", "trust"],
  policy: ["contract", "text", "settings", "team"],
  holds: ["contract", "text", "settings", "team", "gates", "trust", "policy"],
  logs: ["contract", "text", "settings", "team", "gates", "deferrals", "runner"],
  event: ["contract", "text", "settings", "team", "gates", "trust", "deferrals", "runner", "policy", "logs"],
  doctor: [...UP_TO_HOLDS, "logs"],
  dashboard: [...UP_TO_HOLDS, "logs", "event", "doctor"],
  leader: [...UP_TO_HOLDS, "logs", "event"],
  server: [...UP_TO_HOLDS, "logs", "event", "doctor", "dashboard"],
  cli: [...UP_TO_HOLDS, "logs", "event", "doctor", "dashboard", "leader", "server"],
  pi: [...UP_TO_HOLDS, "logs", "event", "doctor", "leader", "cli"],
};
/**
 * What in a module's name says which feature it is part of: it sits in the feature's folder, or in a
 * layer above it that uses it (its leader's, event's or command's side: leader/gate-trust.ts,
 * leader/deferrals.ts, event/deferral-decision.ts, cli/trust-command.ts).
 */
const FEATURE_NAMES: Readonly<Record<string, RegExp>> = {
  trust: /trust/,
  holds: /holds|held-events/,
  deferrals: /deferral|decision/,
};
/** The entry files: the pi extension, the library, the command, the helper gates import. */
const ENTRY_FILES = ["api.ts", "bin.ts", "hook.ts", "index.ts"];
/** No file system, processes or network of their own: what they need is passed in, or done through team/. */
const PURE = ["contract", "text", "settings", "policy"];
const IO = /^(node:)?(fs|fs\/promises|child_process|net|http|https|dgram|worker_threads)$|^chokidar(\/|$)/;
/** Packages only one folder may import. */
const OWNED_BY: Readonly<Record<string, string>> = { chokidar: "team", typebox: "pi" };
/**
 * Packages the sources may import without listing them in `dependencies`: zod is bundled into the
 * build (scripts/vendor-zod.mjs), and pi gives its extensions its own typebox.
 */
const NOT_INSTALLED = { zod: "bundled by the build", typebox: "given by pi" };

interface Import {
  /** Path of the importing module under SRC, e.g. `event/invoke.ts`. */
  from: string;
  spec: string;
  /** For relative imports: the imported module under SRC, e.g. `runner/run-hook.ts`. */
  target: string | null;
  typeOnly: boolean;
}

function modules(): string[] {
  return (fs.readdirSync(SRC, { recursive: true }) as string[])
    .filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))
    .map((f) => f.split(path.sep).join("/"))
    .sort();
}

function folderOf(module: string): string | null {
  return module.includes("/") ? (module.split("/")[0] ?? null) : null;
}

/** The layer a module belongs to: its folder (null for the entry files). */
function layerOf(module: string): string | null {
  return folderOf(module);
}

function importsOf(module: string): Import[] {
  const text = fs.readFileSync(path.join(SRC, module), "utf8");
  const found: Import[] = [];
  const add = (spec: string, typeOnly: boolean): void => {
    const target = spec.startsWith(".")
      ? path.posix.join(path.posix.dirname(module), spec).replace(/\.js$/, ".ts")
      : null;
    found.push({ from: module, spec, target, typeOnly });
  };
  for (const match of text.matchAll(/^(import|export)\s+(type\s+)?[^;]*?from\s+"([^"]+)"/gms))
    add(match[3] ?? "", Boolean(match[2]));
  for (const match of text.matchAll(/import\("([^"]+)"\)/g)) add(match[1] ?? "", false);
  return found;
}

describe("architecture", () => {
  const all = modules();

  it("every module sits in a folder that has a rule, or is one of the entry files", () => {
    const stray = all.filter((m) => {
      if (folderOf(m) === null) return !ENTRY_FILES.includes(m);
      const layer = layerOf(m);
      return layer === null || !(layer in MAY_IMPORT) || m.split("/").length > 2;
    });
    expect(stray).toEqual([]);
  });

  it("a module named for a feature sits in its folder, or in a layer that uses it", () => {
    expect(Object.keys(FEATURE_NAMES).filter((feature) => !(feature in MAY_IMPORT))).toEqual([]);
    const astray = all.flatMap((m) => {
      const name = m.slice(m.lastIndexOf("/") + 1);
      const feature = Object.entries(FEATURE_NAMES).find(([, pattern]) => pattern.test(name))?.[0];
      if (feature === undefined || folderOf(m) === feature) return [];
      const layer = layerOf(m);
      const usesIt = layer !== null && (MAY_IMPORT[layer] ?? []).includes(feature);
      return usesIt ? [] : [`${m} belongs in ${feature}/`];
    });
    expect(astray).toEqual([]);
  });

  it("a layer imports only the layers its rule names, and nothing imports an entry file", () => {
    const wrong: string[] = [];
    for (const module of all) {
      const own = layerOf(module);
      for (const imp of importsOf(module)) {
        if (imp.target === null) continue;
        const theirs = layerOf(imp.target);
        if (theirs === null) {
          if (imp.target !== module) wrong.push(`${module} imports the entry file ${imp.target}`);
        } else if (own !== null && own !== theirs && !(MAY_IMPORT[own] ?? []).includes(theirs)) {
          const may = (MAY_IMPORT[own] ?? []).join(", ") || "nothing";
          wrong.push(`${module} (${own}) imports ${imp.target} (${theirs}): ${own} may import ${may}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it("the layers' rules go one way (a layer may import only layers listed before it)", () => {
    const order = Object.keys(MAY_IMPORT);
    const wrong = order.flatMap((folder, i) =>
      (MAY_IMPORT[folder] ?? [])
        .filter((dep) => order.indexOf(dep) < 0 || order.indexOf(dep) >= i)
        .map((dep) => `${folder} → ${dep}`),
    );
    expect(wrong).toEqual([]);
  });

  it("no module loads itself through a cycle (`import type` is gone at run time)", () => {
    const edges = new Map(
      all.map((m) => [m, importsOf(m).flatMap((i) => (i.target && i.target !== m && !i.typeOnly ? [i.target] : []))]),
    );
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const visit = (m: string, trail: string[]): void => {
      if (state.get(m) === "done") return;
      if (state.get(m) === "open") {
        cycles.push([...trail.slice(trail.indexOf(m)), m].join(" → "));
        return;
      }
      state.set(m, "open");
      for (const next of edges.get(m) ?? []) visit(next, [...trail, m]);
      state.set(m, "done");
    };
    for (const m of all) visit(m, []);
    expect(cycles).toEqual([]);
  });

  it("relative imports name a .js file that exists", () => {
    const wrong = all.flatMap((m) =>
      importsOf(m)
        .filter((i) => i.target !== null && (!i.spec.endsWith(".js") || !fs.existsSync(path.join(SRC, i.target))))
        .map((i) => `${m}: ${i.spec}`),
    );
    expect(wrong).toEqual([]);
  });

  it("every package the sources import is a dependency, and every dependency is imported (docs/decisions/dependencies.md)", async () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(SRC, "..", "..", "package.json"), "utf8")) as {
      dependencies?: Record<string, string>;
    };
    const declared = Object.keys(pkg.dependencies ?? {}).sort();
    const { builtinModules } = await import("node:module");
    const packageOf = (spec: string): string =>
      spec
        .split("/")
        .slice(0, spec.startsWith("@") ? 2 : 1)
        .join("/");
    const imported = new Map<string, string>();
    for (const m of all) {
      for (const i of importsOf(m)) {
        if (i.target !== null || i.typeOnly || i.spec.startsWith("node:") || builtinModules.includes(i.spec)) continue;
        imported.set(packageOf(i.spec), m);
      }
    }
    const undeclared = [...imported]
      .filter(([name]) => !declared.includes(name) && !(name in NOT_INSTALLED))
      .map(([name, m]) => `${name} (${m})`);
    expect(undeclared).toEqual([]);
    expect(declared.filter((name) => !imported.has(name))).toEqual([]);
  });

  it.each(Object.entries(OWNED_BY))("only one folder imports %s: %s/", (pkg, owner) => {
    const importers = all.filter((m) => importsOf(m).some((i) => i.spec === pkg || i.spec.startsWith(`${pkg}/`)));
    expect(importers.length).toBeGreaterThan(0);
    expect(importers.filter((m) => folderOf(m) !== owner)).toEqual([]);
  });

  it.each(PURE)("%s/ does no I/O of its own", (folder) => {
    const inFolder = all.filter((m) => folderOf(m) === folder);
    expect(inFolder.length).toBeGreaterThan(0);
    const io = inFolder.flatMap((m) =>
      importsOf(m)
        .filter((i) => !i.typeOnly && IO.test(i.spec))
        .map((i) => `${m}: ${i.spec}`),
    );
    expect(io).toEqual([]);
  });

  it("no console outside the command line", () => {
    const offenders = all.filter(
      (m) =>
        folderOf(m) !== "cli" && m !== "bin.ts" && /\bconsole\.\w+\(/.test(fs.readFileSync(path.join(SRC, m), "utf8")),
    );
    expect(offenders).toEqual([]);
  });

  it("pi loads only index.ts: no other TypeScript file sits directly in extensions/", () => {
    const direct = fs.readdirSync(path.resolve("extensions")).filter((f) => /\.(ts|js)$/.test(f));
    expect(direct).toEqual([]);
    expect(fs.existsSync(path.join(SRC, "index.ts"))).toBe(true);
  });
});
