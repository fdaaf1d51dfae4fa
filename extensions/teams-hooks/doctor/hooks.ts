/**
 * The hooks half of doctor: for each event, which file would run and why, every candidate skipped or
 * shadowed and why, and whether the chosen file can really start the way the leader starts it (a `#!`
 * line, CRLF, the interpreter on PATH, bash for `.sh`); then the event's whole chain (gates/chain.ts:
 * the `on_<event>.d/` files and the team layer), each hook checked the same way and each skipped file
 * with its reason. The checks that start nothing (skipped files, settings lines, stray names) are
 * doctor/gate-checks.ts's, which `run` and `watch` warn with. Data only; doctor/diagnose.ts assembles
 * the report.
 */
import { constants as fsConstants, statSync, type Stats } from "node:fs";
import { access, open } from "node:fs/promises";
import path from "node:path";
import { gateDisplayName } from "../gates/chain.js";
import type { ChainDiscovery, ChainHook, ChainLayer, ChainSkip } from "../gates/chain.js";
import type { HookCommand } from "../contract/hook-run.js";
import type { HookEventName } from "../contract/contract.js";
import { hookCandidatePaths, insecurity, readHookSettings, type CandidateStatus } from "../gates/discover.js";
import { describeSettings, type HookSettingsRead } from "../settings/hook-line.js";
import { missingImportMessage, missingImportsOfFile } from "../runner/imports.js";
import { absoluteSearchPath } from "../runner/search-path.js";
import { syntaxError } from "../runner/syntax.js";
import { gateSyntaxMessage } from "../text/messages.js";
import type { HandlerReport } from "./handler-checks.js";
import {
  chainSkipChecks,
  exampleGateNeeds,
  layerLabel,
  settingsChecks,
  statOrNull,
  strayChecks,
  v1SkipChecks,
} from "./gate-checks.js";
import type { ChainDirs, Check, CheckLevel } from "./gate-checks.js";

export interface CandidateReport {
  path: string;
  /** `shadowed`: a file that exists after the chosen one in lookup order, so it never runs. */
  status: CandidateStatus | "shadowed";
  reason: string | null;
}

export interface EventHookReport {
  event: HookEventName;
  /** The global v1 file the lookup chose (`chain` says whether it runs); null when there is none. */
  hook: { path: string; command: string[] } | null;
  /** The global v1 lookup. */
  candidates: CandidateReport[];
  /** Findings about the global v1 file. */
  checks: Check[];
  chain: ChainReport;
}

/**
 * One hook of an event's chain. `name` is relative to its layer: `on_idle.sh`, `on_idle.d/10-lint`; a handler's is
 * `http:<name>`.
 */
export interface ChainHookReport {
  layer: ChainLayer;
  kind: ChainHook["kind"];
  name: string;
  path: string;
  command: string[];
  /** A file gate's own settings line, as applied (`timeout=300s mode=shadow`); absent when it has none. */
  settings?: string;
  /** A handler's settings and trust state (doctor/handler-checks.ts). */
  handler?: HandlerReport;
}

export interface ChainReport {
  /** Everything that runs for the event, in order, from both layers. */
  hooks: ChainHookReport[];
  /** Every file looked at that does not run, with why (as gates/chain.ts reports it). */
  skipped: ChainSkip[];
  /** Findings beyond the global v1 file (those are in the event's `checks`): each other hook, each skip. */
  checks: Check[];
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The global hooks dir. `teamHooks`: the team layer has hooks of its own, so an unusable dir does not mean "no gate".
 */
export async function diagnoseHooksDir(
  dir: string,
  source: "flag" | "env" | "default",
  teamHooks = false,
): Promise<{ checks: Check[]; usable: boolean }> {
  const info = await statOrNull(dir);
  const named = source === "flag" ? "--hooks-dir" : source === "env" ? "PI_TEAMS_HOOKS_DIR" : "the default hooks dir";
  const unusable = (level: CheckLevel, why: string): { checks: Check[]; usable: boolean } => ({
    checks: [
      teamHooks
        ? {
            level: level === "warn" ? "info" : level,
            message: `${named} ${dir} ${why}: only the team layer's hooks run`,
            file: dir,
          }
        : { level, message: `${named} ${dir} ${why}: no gate runs`, file: dir },
    ],
    usable: false,
  });
  // The default dir missing is the normal state of a team without gates; a dir someone named is a mistake.
  if (!info)
    return unusable(
      source === "default" ? "warn" : "error",
      `does not exist (pi-teams-hooks init${source === "default" ? "" : ` --hooks-dir ${dir}`} creates it)`,
    );
  if (!info.isDirectory()) return unusable("error", "is not a directory");
  if (!(await can(dir, fsConstants.R_OK | fsConstants.X_OK)))
    return unusable("error", "cannot be read (permission denied)");
  const checks: Check[] = [
    {
      level: "ok",
      message: `hooks dir ${dir} (${source === "default" ? "default: <teams root>/_hooks" : `from ${named}`})`,
    },
  ];
  checks.push(...strayChecks(dir));
  if (worldWritable(info)) {
    checks.push({
      level: "warn",
      message: `${dir} is world-writable: any user can replace a gate (chmod o-w ${dir})`,
      file: dir,
    });
  }
  return { checks, usable: true };
}

/** The team's hooks layer (`<teamDir>/hooks`): nothing when there is none, said once for every event. */
export async function diagnoseTeamLayer(dir: string, globalDir: string): Promise<Check[]> {
  if (path.resolve(dir) === path.resolve(globalDir))
    return [{ level: "info", message: `team hooks layer ${dir} is the hooks dir itself: one layer` }];
  const info = await statOrNull(dir);
  if (!info) return []; // no team layer: the usual case
  if (!info.isDirectory())
    return [
      {
        level: "warn",
        message: `team hooks layer ${dir} is not a directory: ignored, the global hooks run`,
        file: dir,
      },
    ];
  if (!(await can(dir, fsConstants.R_OK | fsConstants.X_OK))) {
    return [
      {
        level: "error",
        message: `team hooks layer ${dir} cannot be read (permission denied): its hooks and .disabled files are ignored`,
        file: dir,
      },
    ];
  }
  const checks: Check[] = [
    { level: "ok", message: `team hooks layer ${dir} (its files replace the global ones of the same name)` },
  ];
  checks.push(...strayChecks(dir));
  if (worldWritable(info))
    checks.push({
      level: "warn",
      message: `${dir} is world-writable: any user can replace a gate (chmod o-w ${dir})`,
      file: dir,
    });
  return checks;
}

/**
 * One event: the global v1 lookup as before (`checks`), then the rest of the chain (`chain.checks`).
 * `chain` comes from discoverChain for the same global dir and `teamDir` layer.
 */
export async function diagnoseEvent(
  dir: string,
  event: HookEventName,
  env: Env,
  cwd: string,
  dirUsable: boolean,
  chain: ChainDiscovery,
  teamDir: string | null,
): Promise<EventHookReport> {
  const found = chain.v1.global;
  const looked = new Map(found.candidates.map((c) => [c.path, c]));
  const candidates: CandidateReport[] = hookCandidatePaths(dir, event).map((p) => {
    const c = looked.get(p);
    return { path: p, status: c?.status ?? "absent", reason: c?.reason ?? null };
  });
  const chainReport = await diagnoseChain(event, chain, { global: dir, team: teamDir }, env, cwd);
  if (!dirUsable) return { event, hook: null, candidates, checks: [], chain: chainReport };

  // The lookup's skipped candidates come before the one chosen, the shadowed ones after it.
  const checks: Check[] = v1SkipChecks(event, chain);
  const hook = found.hook;
  const v1 = chain.hooks.find((h) => h.kind === "v1");
  for (const c of candidates) {
    if (
      c.status === "absent" &&
      hook &&
      candidates.indexOf(c) > candidates.findIndex((x) => x.status === "chosen") &&
      (await statOrNull(c.path))
    ) {
      c.status = "shadowed";
      c.reason = `${path.basename(hook.hookPath)} comes first`;
      checks.push({ level: "info", message: `not used: ${path.basename(c.path)} (${c.reason})`, file: c.path });
    }
  }
  const off = hook && v1?.layer !== "global" ? chain.skipped.find((s) => s.path === hook.hookPath) : undefined;
  if (hook && off)
    checks.unshift({
      level: "info",
      message: `${path.basename(hook.hookPath)} does not run: ${off.reason}`,
      file: hook.hookPath,
    });
  else if (hook) checks.unshift(...(await checkRunnable(hook, env, cwd)));
  else if (checks.length === 0 && chain.hooks.length === 0) {
    checks.push({
      level: "info",
      message: `no ${path.basename(candidates[0]?.path ?? event)}[.sh|.js|.mjs|.ts]: nothing runs`,
    });
  }
  return {
    event,
    hook: hook ? { path: hook.hookPath, command: [hook.command, ...hook.args] } : null,
    candidates,
    checks,
    chain: chainReport,
  };
}

/** Every hook of the chain but the global v1 file (checked above) checked like it, and every skip explained. */
async function diagnoseChain(
  event: HookEventName,
  chain: ChainDiscovery,
  dirs: ChainDirs,
  env: Env,
  cwd: string,
): Promise<ChainReport> {
  const label = layerLabel(dirs);
  // Each file gate's settings line, read once for its checks and its row.
  const reads = new Map(
    chain.hooks.map((h) => [h, h.kind === "http" ? null : readHookSettings(h.hook.hookPath, event)] as const),
  );
  const settingsOf = (h: ChainHook): HookSettingsRead | null => reads.get(h) ?? null;
  const checks: Check[] = [];
  for (const h of chain.hooks) {
    if (h.kind === "http") continue; // not a file: doctor/handler-checks.ts checks it
    checks.push(...settingsChecks(settingsOf(h), h.hook.hookPath, label(h.layer, h.hook.hookPath), event));
    const needs = exampleGateNeeds(h.hook.hookPath, cwd, env);
    if (needs) checks.push({ level: "warn", message: needs, file: h.hook.hookPath });
    // The global v1 file: checked above.
    if (h.layer === "global" && h.kind === "v1") continue;
    checks.push(...(await checkRunnable(h.hook, env, cwd, label(h.layer, h.hook.hookPath))));
  }
  checks.push(...chainSkipChecks(chain, dirs));
  const hooks = chain.hooks.map((h) => ({
    layer: h.layer,
    kind: h.kind,
    name: gateDisplayName(h, event),
    path: h.hook.hookPath,
    command: [h.hook.command, ...h.hook.args],
    ...settingsField(settingsOf(h)),
  }));
  return { hooks, skipped: chain.skipped, checks };
}

/** The report's `settings` of a file gate that has a readable settings line. */
function settingsField(read: HookSettingsRead | null): { settings?: string } {
  return read?.ok && read.settings ? { settings: describeSettings(read.settings) } : {};
}

/**
 * Whether a hook can start as the leader would start it: the first check says so (`ok` or `error`),
 * the rest are worth knowing (a `.sh` with another `#!`, a file others can rewrite). `label` names it
 * in messages (default: its file name). Also gate readiness's `executable` (doctor/readiness.ts).
 */
export async function checkRunnable(hook: HookCommand, env: Env, cwd: string, label?: string): Promise<Check[]> {
  const file = hook.hookPath;
  const name = label ?? path.basename(file);
  const checks: Check[] = [];
  const fail = (message: string): Check[] => [{ level: "error", message: `${name}: ${message}`, file }, ...checks];
  // A gate that starts but whose own file does not parse fails every run before it judges anything: the
  // runner holds its events for the lead (runner/run-hook.ts), and doctor says so.
  const ok = async (message: string): Promise<Check[]> => {
    const broken = await syntaxError(hook, file, head ?? "");
    return broken ? fail(gateSyntaxMessage(broken)) : [{ level: "ok", message, file }, ...checks];
  };
  const info = await statOrNull(file);
  const insecure = info ? insecurity(info, process.getuid?.() ?? null) : null;
  if (insecure)
    checks.push({
      level: "error",
      message: `${name} is ${insecure}: the leader refuses it (insecure_hook) unless started with --allow-insecure-hooks`,
      file,
      kind: "gate_insecure",
    });
  const head = await readHead(file);
  if (head === null) return fail("cannot be read");
  const firstLine = head.split("\n")[0] ?? "";
  const crlf = firstLine.endsWith("\r");

  const ext = path.extname(file);
  if (hook.command === process.execPath) {
    const missing = missingImportsOfFile(file);
    if (missing.length > 0)
      return fail(`cannot start: ${missingImportMessage(file, missing)}; its events are held until it can`);
  }
  if (ext === ".js" || ext === ".mjs") return ok(`${name} runs with node (${hook.command})`);
  // A .ts gate the runner starts with node (gates/typescript.ts): through tsx's CLI, or Node's own
  // type stripping. Only one it starts by its own `#!` line goes on to the checks of a direct start.
  if (ext === ".ts" && hook.command !== file) {
    const tsx =
      hook.args.length > 1 && hook.args.at(-1) === file
        ? hook.args.find((a) => a !== file && !a.startsWith("-"))
        : undefined;
    const how = tsx ? `with tsx (${hook.command} ${tsx})` : `with node's type stripping (${hook.command})`;
    return [{ level: "ok", message: `${name} runs ${how}`, file }, ...checks];
  }
  if (ext === ".sh") {
    const bash = findOnPath("bash", env, cwd);
    if (!bash) return fail("bash is not on PATH, and .sh hooks run with bash");
    if (crlf || head.includes("\r\n"))
      return fail(`has CRLF line endings: bash reads each \\r as part of a command (fix: sed -i 's/\\r$//' ${file})`);
    const shebang = firstLine.startsWith("#!") ? parseShebang(firstLine) : null;
    const program = shebang ? path.basename(shebang.program ?? shebang.interpreter) : null;
    if (program && !["bash", "sh"].includes(program)) {
      checks.push({
        level: "warn",
        message: `${name} starts with "${firstLine}", but a .sh hook runs with bash; rename it without .sh to use its #! line`,
        file,
      });
    }
    return ok(`${name} runs with bash (${bash})`);
  }

  if (head.startsWith("\u007fELF"))
    return [{ level: "ok", message: `${name} runs directly (a binary executable)`, file }, ...checks];
  if (!firstLine.startsWith("#!"))
    return fail("no #! line, so the system cannot start it (ENOEXEC); add one (#!/usr/bin/env bash) or name it .sh");
  if (crlf) {
    const named = JSON.stringify(firstLine.slice(2).trimStart().split(/[ \t]/)[0] ?? "");
    return fail(
      `its #! line ends in CRLF, so the system looks for an interpreter named ${named}, which does not exist (fix: sed -i 's/\\r$//' ${file})`,
    );
  }
  const shebang = parseShebang(firstLine);
  const interpreter = await statOrNull(shebang.interpreter);
  if (!interpreter?.isFile()) return fail(`interpreter ${shebang.interpreter} (from "${firstLine}") does not exist`);
  if (!(await can(shebang.interpreter, fsConstants.X_OK)))
    return fail(`interpreter ${shebang.interpreter} is not executable`);
  if (shebang.problem) return fail(shebang.problem);
  if (shebang.program !== null) {
    const found = findOnPath(shebang.program, env, cwd);
    if (!found) return fail(`"${firstLine}": ${shebang.program} is not on PATH, so env exits 127 and the gate fails`);
    return ok(`${name} runs directly with ${shebang.program} (${found})`);
  }
  return ok(`${name} runs directly with ${shebang.interpreter}`);
}

interface Shebang {
  interpreter: string;
  /** For `#!/usr/bin/env X`: X, looked up on PATH. */
  program: string | null;
  problem: string | null;
}

/** Linux reads `#!interpreter [one argument]`: everything after the interpreter is a single argument. */
function parseShebang(line: string): Shebang {
  const body = line.slice(2).trim();
  const space = body.search(/[ \t]/);
  const interpreter = space === -1 ? body : body.slice(0, space);
  const arg = space === -1 ? "" : body.slice(space).trim();
  if (path.basename(interpreter) !== "env" || arg === "") return { interpreter, program: null, problem: null };
  if (arg.startsWith("-S")) {
    const words = arg.slice(2).trim().split(/\s+/);
    const program = words.find((w) => w !== "" && !w.startsWith("-") && !w.includes("=")) ?? null;
    return { interpreter, program, problem: null };
  }
  if (/\s/.test(arg)) {
    return {
      interpreter,
      program: null,
      problem: `"${line}": env gets "${arg}" as one program name and exits 127; write #!${interpreter} -S ${arg}`,
    };
  }
  return { interpreter, program: arg.startsWith("-") ? null : arg, problem: null };
}

/**
 * The first executable `name` on the hook's PATH (the leader's environment), or null: through its absolute
 * folders only, as the runner searches it (runner/search-path.ts).
 */
function findOnPath(name: string, env: Env, cwd: string): string | null {
  if (name.includes("/")) return isExecutableFile(path.resolve(cwd, name)) ? path.resolve(cwd, name) : null;
  for (const dir of absoluteSearchPath(env.PATH ?? "/usr/bin:/bin").split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Small file helpers

export async function can(file: string, mode: number): Promise<boolean> {
  try {
    await access(file, mode);
    return true;
  } catch {
    return false;
  }
}

/** Synchronous on purpose: a PATH walk is a handful of stat calls, and doctor is a one-shot command. */
function isExecutableFile(file: string): boolean {
  try {
    const info = statSync(file);
    return info.isFile() && (info.mode & 0o111) !== 0;
  } catch {
    return false; // ENOENT on most PATH entries: not there
  }
}

function worldWritable(info: Stats): boolean {
  // A sticky world-writable dir (like /tmp) still lets only owners replace their files.
  return (info.mode & 0o002) !== 0 && !(info.isDirectory() && (info.mode & 0o1000) !== 0);
}

/** The first 512 bytes as text (latin1 keeps the ELF magic byte intact); null when unreadable. */
async function readHead(file: string): Promise<string | null> {
  try {
    const handle = await open(file, "r");
    try {
      const buffer = Buffer.alloc(512);
      const { bytesRead } = await handle.read(buffer, 0, 512, 0);
      return buffer.subarray(0, bytesRead).toString("latin1");
    } finally {
      await handle.close();
    }
  } catch {
    return null;
  }
}
