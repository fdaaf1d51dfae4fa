/**
 * The module map of docs/architecture.md, enforced: imports go one way (a module imports only from
 * lower layers, plus the leaves errors.ts and contract.ts; `import type` may also look sideways), and
 * each third-party package that touches the outside world has one importer.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve("extensions/teams-hooks");

const LAYERS: Readonly<Record<string, number>> = {
  errors: 0, contract: 0, paths: 0, events: 0, capture: 0, queue: 0, messages: 0, verdict: 0,
  "json-file": 0.5, options: 1, lock: 1, terminate: 1, watch: 1, "hooks-config": 1.5,
  policy: 2, tasks: 2, mailbox: 2, "team-config": 2, "sent-log": 2, discover: 2, chain: 2.5, run: 2, "hook-log": 2, ledger: 2, "leader-lock": 2, hook: 2,
  "logs-record": 2.2, "logs-filter": 2.4, "logs-format": 2.4, "logs-stats": 2.6, "logs-follow": 3.5,
  remediate: 3, sources: 3, "team-setup": 3, "doctor-hooks": 3, logs: 3, trust: 3,
  invoke: 4, doctor: 4,
  leader: 5,
  "cli-io": 5, "cli-help": 6, "cli-run": 6, "cli-watch": 6, "cli-demo": 6, "cli-doctor": 6, "cli-init": 6, "cli-policy": 6, "cli-schema": 6, "cli-logs": 6, "cli-trust": 6, "text-diff": 0,
  cli: 7,
  bin: 8, api: 8, index: 8,
};
const LEAVES = new Set(["errors", "contract"]);
const PURE = ["errors", "contract", "paths", "events", "capture", "queue", "messages", "policy", "verdict", "text-diff"];
const SOLE_IMPORTER: Readonly<Record<string, string>> = { execa: "run", "tree-kill": "terminate", chokidar: "watch" };

interface Import {
  from: string;
  spec: string;
  typeOnly: boolean;
}

function modules(): string[] {
  return fs.readdirSync(SRC).filter((f) => f.endsWith(".ts")).map((f) => f.slice(0, -3)).sort();
}

function importsOf(name: string): Import[] {
  const text = fs.readFileSync(path.join(SRC, `${name}.ts`), "utf8");
  const found: Import[] = [];
  for (const match of text.matchAll(/^(import|export)\s+(type\s+)?[^;]*?from\s+"([^"]+)"/gms)) {
    found.push({ from: name, spec: match[3] ?? "", typeOnly: Boolean(match[2]) });
  }
  for (const match of text.matchAll(/import\("([^"]+)"\)/g)) found.push({ from: name, spec: match[1] ?? "", typeOnly: false });
  return found;
}

describe("architecture", () => {
  it("every module has a layer", () => {
    expect(modules().filter((m) => !(m in LAYERS))).toEqual([]);
  });

  it("imports go one way", () => {
    const wrong: string[] = [];
    for (const name of modules()) {
      for (const imp of importsOf(name)) {
        if (!imp.spec.startsWith("./")) continue;
        const target = imp.spec.replace(/^\.\//, "").replace(/\.js$/, "");
        const [own, theirs] = [LAYERS[name] ?? -1, LAYERS[target] ?? 99];
        const ok = LEAVES.has(target) || theirs < own || (imp.typeOnly && theirs <= own);
        if (!ok) wrong.push(`${name} (L${own}) imports ${target} (L${theirs})`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("relative imports name their .js file", () => {
    const wrong = modules().flatMap((name) => importsOf(name).filter((i) => i.spec.startsWith(".") && !i.spec.endsWith(".js")).map((i) => `${name}: ${i.spec}`));
    expect(wrong).toEqual([]);
  });

  it.each(Object.entries(SOLE_IMPORTER))("only %s's one module imports it", (pkg, owner) => {
    const importers = modules().filter((name) => importsOf(name).some((i) => i.spec === pkg || i.spec.startsWith(`${pkg}/`)));
    expect(importers).toEqual([owner]);
  });

  it.each(PURE)("%s does no I/O", (name) => {
    const io = importsOf(name).filter((i) => !i.typeOnly && /^(node:)?(fs|fs\/promises|child_process|net|http|https)$|^(fs-extra|execa|chokidar|tree-kill)$/.test(i.spec));
    expect(io.map((i) => i.spec)).toEqual([]);
  });

  it("no console outside the command line", () => {
    const offenders = modules().filter((name) => !name.startsWith("cli") && name !== "bin" && /\bconsole\.\w+\(/.test(fs.readFileSync(path.join(SRC, `${name}.ts`), "utf8")));
    expect(offenders).toEqual([]);
  });

  it("pi loads only index.ts: no other TypeScript file sits directly in extensions/", () => {
    const direct = fs.readdirSync(path.resolve("extensions")).filter((f) => /\.(ts|js)$/.test(f));
    expect(direct).toEqual([]);
    expect(fs.existsSync(path.join(SRC, "index.ts"))).toBe(true);
  });
});
