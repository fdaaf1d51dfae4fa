/**
 * The hooks half of doctor: for each event, which file would run and why, every candidate skipped or
 * shadowed and why, and whether the chosen file can really start the way the leader starts it (a `#!`
 * line, CRLF, the interpreter on PATH, bash for `.sh`). Data only; doctor.ts assembles the report.
 */
import { constants as fsConstants, statSync, type Stats } from "node:fs";
import { access, open, stat } from "node:fs/promises";
import path from "node:path";
import type { HookCommand, HookEventName } from "./contract.js";
import { findHook, hookCandidatePaths, type CandidateStatus } from "./discover.js";

export type CheckLevel = "ok" | "info" | "warn" | "error";

/** One finding. `file` and `field` name what is wrong, when a file is. */
export interface Check {
  level: CheckLevel;
  message: string;
  file?: string;
  field?: string;
}

export interface CandidateReport {
  path: string;
  /** `shadowed`: a file that exists after the chosen one in lookup order, so it never runs. */
  status: CandidateStatus | "shadowed";
  reason: string | null;
}

export interface EventHookReport {
  event: HookEventName;
  /** What the leader would start; null when nothing runs for this event. */
  hook: { path: string; command: string[] } | null;
  candidates: CandidateReport[];
  checks: Check[];
}

type Env = Readonly<Record<string, string | undefined>>;

export async function diagnoseHooksDir(dir: string, source: "flag" | "env" | "default"): Promise<{ checks: Check[]; usable: boolean }> {
  const info = await statOrNull(dir);
  const named = source === "flag" ? "--hooks-dir" : source === "env" ? "PI_TEAMS_HOOKS_DIR" : "the default hooks dir";
  const unusable = (level: CheckLevel, why: string): { checks: Check[]; usable: boolean } => ({
    checks: [{ level, message: `${named} ${dir} ${why}: no gate runs`, file: dir }],
    usable: false,
  });
  // The default dir missing is the normal state of a team without gates; a dir someone named is a mistake.
  if (!info) return unusable(source === "default" ? "warn" : "error", `does not exist (pi-teams-hooks init${source === "default" ? "" : ` --hooks-dir ${dir}`} creates it)`);
  if (!info.isDirectory()) return unusable("error", "is not a directory");
  if (!(await can(dir, fsConstants.R_OK | fsConstants.X_OK))) return unusable("error", "cannot be read (permission denied)");
  const checks: Check[] = [{ level: "ok", message: `hooks dir ${dir} (${source === "default" ? "default: <teams root>/_hooks" : `from ${named}`})` }];
  if (worldWritable(info)) {
    checks.push({ level: "warn", message: `${dir} is world-writable: any user can replace a gate (chmod o-w ${dir})`, file: dir });
  }
  return { checks, usable: true };
}

export async function diagnoseEvent(dir: string, event: HookEventName, env: Env, cwd: string, dirUsable: boolean): Promise<EventHookReport> {
  const found = await findHook(dir, event);
  const looked = new Map(found.candidates.map((c) => [c.path, c]));
  const candidates: CandidateReport[] = hookCandidatePaths(dir, event).map((p) => {
    const c = looked.get(p);
    return { path: p, status: c?.status ?? "absent", reason: c?.reason ?? null };
  });
  if (!dirUsable) return { event, hook: null, candidates, checks: [] };

  const checks: Check[] = [];
  const hook = found.hook;
  for (const c of candidates) {
    if (c.status === "skipped") {
      const instead = hook ? `; ${path.basename(hook.hookPath)} runs instead` : ": no gate runs for this event";
      checks.push({ level: hook ? "warn" : "error", message: `skipped ${path.basename(c.path)}: ${c.reason ?? "unusable"}${instead}`, file: c.path });
    } else if (c.status === "absent" && hook && candidates.indexOf(c) > candidates.findIndex((x) => x.status === "chosen") && (await statOrNull(c.path))) {
      c.status = "shadowed";
      c.reason = `${path.basename(hook.hookPath)} comes first`;
      checks.push({ level: "info", message: `not used: ${path.basename(c.path)} (${c.reason})`, file: c.path });
    }
  }
  if (hook) checks.unshift(...(await checkRunnable(hook, env, cwd)));
  else if (checks.length === 0) checks.push({ level: "info", message: `no ${path.basename(candidates[0]?.path ?? event)}[.sh|.js|.mjs]: nothing runs` });
  return { event, hook: hook ? { path: hook.hookPath, command: [hook.command, ...hook.args] } : null, candidates, checks };
}

/** Whether the chosen file can start as the leader would start it. */
async function checkRunnable(hook: HookCommand, env: Env, cwd: string): Promise<Check[]> {
  const file = hook.hookPath;
  const name = path.basename(file);
  const checks: Check[] = [];
  const fail = (message: string): Check[] => [{ level: "error", message: `${name}: ${message}`, file }, ...checks];
  const info = await statOrNull(file);
  if (info && worldWritable(info)) checks.push({ level: "warn", message: `${name} is world-writable: any user can change this gate (chmod o-w ${file})`, file });
  const head = await readHead(file);
  if (head === null) return fail("cannot be read");
  const firstLine = head.split("\n")[0] ?? "";
  const crlf = firstLine.endsWith("\r");

  const ext = path.extname(name);
  if (ext === ".js" || ext === ".mjs") return [{ level: "ok", message: `${name} runs with node (${hook.command})`, file }, ...checks];
  if (ext === ".sh") {
    const bash = findOnPath("bash", env, cwd);
    if (!bash) return fail("bash is not on PATH, and .sh hooks run with bash");
    if (crlf || head.includes("\r\n")) return fail(`has CRLF line endings: bash reads each \\r as part of a command (fix: sed -i 's/\\r$//' ${file})`);
    const shebang = firstLine.startsWith("#!") ? parseShebang(firstLine) : null;
    const program = shebang ? path.basename(shebang.program ?? shebang.interpreter) : null;
    if (program && !["bash", "sh"].includes(program)) {
      checks.push({ level: "warn", message: `${name} starts with "${firstLine}", but a .sh hook runs with bash; rename it without .sh to use its #! line`, file });
    }
    return [{ level: "ok", message: `${name} runs with bash (${bash})`, file }, ...checks];
  }

  if (head.startsWith("\u007fELF")) return [{ level: "ok", message: `${name} runs directly (a binary executable)`, file }, ...checks];
  if (!firstLine.startsWith("#!")) return fail("no #! line, so the system cannot start it (ENOEXEC); add one (#!/usr/bin/env bash) or name it .sh");
  if (crlf) {
    const named = JSON.stringify(firstLine.slice(2).trimStart().split(/[ \t]/)[0] ?? "");
    return fail(`its #! line ends in CRLF, so the system looks for an interpreter named ${named}, which does not exist (fix: sed -i 's/\\r$//' ${file})`);
  }
  const shebang = parseShebang(firstLine);
  const interpreter = await statOrNull(shebang.interpreter);
  if (!interpreter || !interpreter.isFile()) return fail(`interpreter ${shebang.interpreter} (from "${firstLine}") does not exist`);
  if (!(await can(shebang.interpreter, fsConstants.X_OK))) return fail(`interpreter ${shebang.interpreter} is not executable`);
  if (shebang.problem) return fail(shebang.problem);
  if (shebang.program !== null) {
    const found = findOnPath(shebang.program, env, cwd);
    if (!found) return fail(`"${firstLine}": ${shebang.program} is not on PATH, so env exits 127 and the gate fails`);
    return [{ level: "ok", message: `${name} runs directly with ${shebang.program} (${found})`, file }, ...checks];
  }
  return [{ level: "ok", message: `${name} runs directly with ${shebang.interpreter}`, file }, ...checks];
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
    return { interpreter, program: null, problem: `"${line}": env gets "${arg}" as one program name and exits 127; write #!${interpreter} -S ${arg}` };
  }
  return { interpreter, program: arg.startsWith("-") ? null : arg, problem: null };
}

/** The first executable `name` on the hook's PATH (the leader's environment), or null. */
function findOnPath(name: string, env: Env, cwd: string): string | null {
  if (name.includes("/")) return isExecutableFile(path.resolve(cwd, name)) ? path.resolve(cwd, name) : null;
  for (const dir of (env.PATH ?? "/usr/bin:/bin").split(path.delimiter)) {
    const candidate = path.resolve(cwd, dir || ".", name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Small file helpers

export async function statOrNull(file: string): Promise<Stats | null> {
  try {
    return await stat(file);
  } catch {
    return null; // ENOENT, ENOTDIR, EACCES: for these checks, "not there" either way; callers say what they needed
  }
}

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

export function worldWritable(info: Stats): boolean {
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
