/**
 * How a TypeScript gate (`.ts`) starts, when anything on this machine can start it: with tsx, when
 * the package is in the gate's own node_modules, which no other user can write, or
 * with the running Node's own type stripping (`process.features.typescript`, Node ≥ 22.6 with the
 * flag, ≥ 22.18 without), or, with an execute bit, by its own `#!` line. tsx is preferred when installed: it runs all
 * of TypeScript (enums, namespaces, `paths`), where type stripping only erases types. tsx is never a dependency of
 * ours: a team that writes TypeScript gates installs it beside them. Resolved at each lookup, so a tsx installed while
 * the leader runs is used from the next event on.
 */
import { accessSync, constants as fsConstants, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { HookCommand } from "../contract/hook-run.js";
import { othersCanWrite } from "../team/ownership.js";

/** How a `.ts` gate starts, or why it cannot (one line with the fix). */
type TypeScriptLaunch = { ok: true; command: Pick<HookCommand, "command" | "args"> } | { ok: false; reason: string };

/** The Node flags that switch type stripping on, passed on to the gate when the leader itself runs with one. */
const STRIP_FLAGS = ["--experimental-strip-types", "--experimental-transform-types"];

export function typescriptLaunch(file: string): TypeScriptLaunch {
  const tsx = tsxCli(file);
  if (tsx) return { ok: true, command: { command: process.execPath, args: [tsx, file] } };
  if (nodeStripsTypes()) {
    const flags = process.execArgv.filter((arg) => STRIP_FLAGS.includes(arg));
    return { ok: true, command: { command: process.execPath, args: [...flags, file] } };
  }
  // With an execute bit, the file's own `#!` line says how it runs (`#!/usr/bin/env -S npx tsx`), as a `.ts` in a chain
  // folder always did.
  if (executable(file)) return { ok: true, command: { command: file, args: [] } };
  const dir = path.dirname(file);
  const base = path.basename(file, ".ts");
  return {
    ok: false,
    reason: `a .ts gate needs tsx where it can be found from ${dir} (cd ${dir} && npm install --save-dev tsx) or a Node with type stripping (this is Node ${process.versions.node}); or compile it to ${base}.js with tsc`,
  };
}

/** Whether the running Node erases TypeScript types itself (`process.features.typescript`: "strip" or "transform"). */
export function nodeStripsTypes(): boolean {
  const features = process.features as unknown as Record<string, unknown>;
  return typeof features.typescript === "string" && features.typescript !== "";
}

function executable(file: string): boolean {
  try {
    accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false; // EACCES: no execute bit for us (or the file is gone: discovery reports that)
  }
}

/**
 * tsx's command-line entry, found from the gate's folder up (node_modules as Node looks it up); null
 * when tsx is not installed there. `tsx/cli` is an export of every tsx release; `bin` in its
 * package.json is the fallback for a layout that does not export it.
 */
function tsxCli(file: string): string | null {
  // Only the gate's own node_modules, and only when no other user can write it: tsx runs as the leader.
  const dir = path.dirname(path.resolve(file));
  const own = path.join(dir, "node_modules");
  if (othersCanWrite(dir) !== null || othersCanWrite(own) !== null) return null;
  const found = tsxFrom(file);
  return found?.startsWith(`${own}${path.sep}`) ? found : null;
}

function tsxFrom(file: string): string | null {
  const require = createRequire(file);
  try {
    return require.resolve("tsx/cli");
  } catch {
    // not exported under the require condition, or not installed: try the package's bin
  }
  try {
    const manifest = require.resolve("tsx/package.json");
    const pkg = JSON.parse(readFileSync(manifest, "utf8")) as { bin?: unknown };
    const bin =
      typeof pkg.bin === "string"
        ? pkg.bin
        : pkg.bin && typeof pkg.bin === "object"
          ? (pkg.bin as Record<string, unknown>).tsx
          : undefined;
    return typeof bin === "string" ? path.resolve(path.dirname(manifest), bin) : null;
  } catch {
    return null; // MODULE_NOT_FOUND (no tsx), ERR_PACKAGE_PATH_NOT_EXPORTED, or an unreadable manifest: no tsx to use
  }
}
