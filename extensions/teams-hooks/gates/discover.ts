/**
 * Hook discovery (docs/hook-contract.md, "Which file runs"): which file in the hooks dir runs for an
 * event, and how to start it. The answer is data, never an exception: a missing or unreadable hooks dir
 * means "no hook", and every file looked at is reported with why it was or was not chosen, so that
 * `doctor` and the logs can explain a hook that "did not run".
 */
import type { Dirent, Stats } from "node:fs";
// Synchronous on purpose: discovery runs before every event, and each thread-pool round trip costs
// several times a small stat here (docs/performance.md); the answer is still given as a promise.
import {
  accessSync,
  closeSync,
  constants as fsConstants,
  fstatSync,
  lstatSync,
  openSync,
  readSync,
  readdirSync,
  readlinkSync,
  statSync,
} from "node:fs";
import path from "node:path";
import { HOOK_BASE_NAMES } from "../contract/contract.js";
import type { HookCommand } from "../contract/hook-run.js";
import type { HookEventName } from "../contract/contract.js";
import { HooksError, errnoCode } from "../contract/errors.js";
import { fileKind } from "../team/json-file.js";
import { closestName } from "../text/suggest.js";
import { typescriptLaunch } from "./typescript.js";
import { parseHookSettings, type HookSettingsRead } from "../settings/hook-line.js";

export type CandidateStatus = "chosen" | "skipped" | "absent";

/** One file name looked up, in lookup order. `reason` says why it was skipped, or why it is absent. */
export interface HookCandidate {
  path: string;
  status: CandidateStatus;
  reason?: string;
}

/** Why the hooks dir itself yielded nothing; absent when the dir could be searched. */
type HooksDirProblem = "missing" | "not_a_directory" | "unreadable";

export interface HookDiscovery {
  /** The hook to run, or null: nothing runs (and no log is written). */
  hook: HookCommand | null;
  /** Every candidate up to and including the chosen one, in lookup order. */
  candidates: HookCandidate[];
  dirProblem?: HooksDirProblem;
}

/** How a file starts, or (`unavailable`) why nothing on this machine can start it, with the fix. */
type Launch = Pick<HookCommand, "command" | "args"> | { unavailable: string };
type Launcher = (file: string) => Launch;

/**
 * The lookup order of contract v1, and `.ts` after it (additive). `.js` / `.mjs` run with the
 * leader's own node (`process.execPath`), so a hook gets the Node version the leader was tested with,
 * whatever `node` on PATH is. `bash` is looked up on PATH by the runner: a missing bash is a spawn
 * error the run result reports. `.ts` runs with tsx or Node's type stripping (gates/typescript.ts);
 * with neither it is skipped with the fix, and `doctor`, `watch` and `run` name it.
 */
const KINDS: ReadonlyArray<{ suffix: string; launch: Launcher; needsExecBit: boolean }> = [
  { suffix: "", launch: (file) => ({ command: file, args: [] }), needsExecBit: true },
  { suffix: ".sh", launch: (file) => ({ command: "bash", args: [file] }), needsExecBit: false },
  { suffix: ".js", launch: (file) => ({ command: process.execPath, args: [file] }), needsExecBit: false },
  { suffix: ".mjs", launch: (file) => ({ command: process.execPath, args: [file] }), needsExecBit: false },
  { suffix: ".ts", launch: launchTypeScript, needsExecBit: false },
];

function launchTypeScript(file: string): Launch {
  const found = typescriptLaunch(file);
  return found.ok ? found.command : { unavailable: found.reason };
}

/**
 * How a file starts, by its name: `.sh` with bash, `.js` / `.mjs` with the leader's own node,
 * anything else directly (which needs an execute bit). Shared with gates/chain.ts for `.d` files.
 */
export function launcherFor(file: string): { launch: Launcher; needsExecBit: boolean } {
  const ext = path.extname(file);
  const kind = KINDS.find((k) => k.suffix !== "" && k.suffix === ext) ?? KINDS[0];
  // it is a constant with five entries
  if (!kind) throw new HooksError("E_INTERNAL", "launcherFor: the table of launchers is empty");
  return kind;
}

/** The file names looked up for `event`, absolute, in lookup order. */
export function hookCandidatePaths(hooksDir: string, event: HookEventName): string[] {
  const base = path.resolve(hooksDir, HOOK_BASE_NAMES[event]);
  return KINDS.map((kind) => base + kind.suffix);
}

/**
 * Finds the hook for `event` in `hooksDir`: the first candidate that is a regular file (symlinks
 * followed), the bare name only with an execute bit. Never throws for anything on disk.
 */
export async function findHook(hooksDir: string, event: HookEventName): Promise<HookDiscovery> {
  const paths = hookCandidatePaths(hooksDir, event);
  const dirProblem = checkHooksDir(path.resolve(hooksDir));
  if (dirProblem) {
    const { status, reason } = dirProblem;
    return { hook: null, candidates: paths.map((p) => ({ path: p, status, reason })), dirProblem: dirProblem.problem };
  }

  const candidates: HookCandidate[] = [];
  for (const [index, file] of paths.entries()) {
    const kind = KINDS[index];
    if (!kind) break; // paths and KINDS have the same length; this keeps the index checked
    const verdict = inspectCandidate(file, kind.needsExecBit);
    if (verdict.status === "chosen") {
      const launch = kind.launch(file);
      if ("unavailable" in launch) {
        candidates.push({ path: file, status: "skipped", reason: launch.unavailable });
        continue;
      }
      candidates.push({ path: file, status: "chosen" });
      return { hook: { hookPath: file, ...launch }, candidates };
    }
    candidates.push({ path: file, ...verdict });
  }
  return { hook: null, candidates };
}

interface DirVerdict {
  problem: HooksDirProblem;
  status: CandidateStatus;
  reason: string;
}

/**
 * Checks the hooks dir once, so that a dir-level failure gives one clear reason on every candidate
 * instead of four errno codes. A dir we may stat but not search (mode 000 for a non-root leader) is
 * caught here too: `X_OK` on a directory is the search permission that `stat` of its entries needs.
 */
function checkHooksDir(dir: string): DirVerdict | null {
  let info: Stats;
  try {
    info = statSync(dir);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT") return { problem: "missing", status: "absent", reason: `hooks dir missing: ${dir}` };
    if (code === "ENOTDIR")
      return { problem: "not_a_directory", status: "absent", reason: `hooks dir is not a directory: ${dir}` };
    return { problem: "unreadable", status: "skipped", reason: `hooks dir unreadable (${code ?? "error"}): ${dir}` };
  }
  if (!info.isDirectory()) {
    return { problem: "not_a_directory", status: "absent", reason: `hooks dir is not a directory: ${dir}` };
  }
  if (!searchable(dir)) {
    return { problem: "unreadable", status: "skipped", reason: `hooks dir unreadable (EACCES): ${dir}` };
  }
  return null;
}

function searchable(dir: string): boolean {
  try {
    accessSync(dir, fsConstants.X_OK);
    return true;
  } catch {
    // EACCES (or anything else that stops access): the entries cannot be stat'ed either.
    return false;
  }
}

type Verdict = { status: "chosen" } | { status: "skipped" | "absent"; reason?: string };

/**
 * Whether `file` can run as a hook: chosen, skipped with why (a directory, a broken symlink, no exec
 * bit when `needsExecBit`…), or absent. Never throws.
 */
export function inspectCandidate(file: string, needsExecBit: boolean): Verdict {
  let info: Stats;
  try {
    info = statSync(file); // follows symlinks: a link to a regular file is a hook
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT") return danglingLink(file);
    if (code === "ELOOP") return { status: "skipped", reason: "symlink loop" };
    // ENOTDIR cannot happen (the dir was checked); EACCES here means a race with a chmod.
    return { status: "skipped", reason: `cannot stat (${code ?? "error"})` };
  }
  if (info.isDirectory()) return { status: "skipped", reason: "is a directory, not a file" };
  if (!info.isFile()) return { status: "skipped", reason: `not a regular file (${fileKind(info)})` };
  if (needsExecBit && (info.mode & 0o111) === 0) {
    return { status: "skipped", reason: `not executable (chmod +x ${file})` };
  }
  return { status: "chosen" };
}

/** ENOENT from `stat` is either no file or a symlink whose target is gone; the second deserves a word. */
function danglingLink(file: string): Verdict {
  try {
    const link = lstatSync(file);
    if (!link.isSymbolicLink()) return { status: "absent" };
    return { status: "skipped", reason: `broken symlink (to ${readlinkSync(file)})` };
  } catch {
    // ENOENT: really no file of that name. Anything else: the stat above already said it is not usable.
    return { status: "absent" };
  }
}

/**
 * The settings line of `file`, for a gate of `event`: null when it has none. Never throws: a file
 * that cannot be read has no settings here (the run that follows reports why it cannot start).
 */
export function readHookSettings(file: string, event: HookEventName): HookSettingsRead {
  let head: string;
  try {
    head = readHead(file);
  } catch {
    return { ok: true, settings: null };
  }
  return parseHookSettings(head, event, path.basename(file));
}

/** A gate's settings line read from its bytes (a snapshot the run starts from), as readHookSettings reads the file. */
export function settingsOfBytes(bytes: Buffer, event: HookEventName, name: string): HookSettingsRead {
  return parseHookSettings(headText(bytes.subarray(0, HEAD_BYTES), bytes.length > HEAD_BYTES), event, name);
}

/**
 * The first HEAD_BYTES of a gate as text; a line cut by the end of the head is not kept (half a settings line would be
 * wrong settings).
 */
function headText(head: Buffer, cut: boolean): string {
  const text = head.toString("utf8");
  return cut ? text.slice(0, text.lastIndexOf("\n") + 1) : text;
}

/** The settings line is near the top; a gate that is a binary has none. */
const HEAD_BYTES = 8 * 1024;

/**
 * The first bytes of a gate file, or "" when it is not a regular file any more. Opened non-blocking
 * and checked after the open: a FIFO put in the gate's place since discovery cannot hang the leader.
 */
function readHead(file: string): string {
  const fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY);
  try {
    if (!fstatSync(fd).isFile()) return "";
    const buffer = Buffer.alloc(HEAD_BYTES);
    const n = readSync(fd, buffer, 0, HEAD_BYTES, 0);
    return headText(buffer.subarray(0, n), n >= HEAD_BYTES);
  } finally {
    closeSync(fd);
  }
}

/** A file or folder in a hooks dir that looks meant as a gate, but never runs: why, and the likely name. */
export interface StrayHookFile {
  path: string;
  reason: string;
  suggestion: string | null;
}

/**
 * Names starting with `on_` or `on-` in `dir` that discovery never looks at: an unsupported extension
 * (`.py`), a `.ts` gate that nothing here can run (and no `.js` / `.mjs` of the same name replaces), an event name that
 * is not quite one (`on_task_complete.sh`, `on-idle.sh`), a chain folder of no event (`on_task_complete.d`). Each comes
 * with the name it was probably meant to have. A missing or unreadable dir has none (discovery reports that).
 */
export function findStrayHookFiles(dir: string): StrayHookFile[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const bases = Object.values(HOOK_BASE_NAMES);
  const supported = KINDS.map((k) => k.suffix);
  const out: StrayHookFile[] = [];
  const names = new Set(entries.map((e) => e.name));
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const name = entry.name;
    if (!/^on[_-]/i.test(name) || /(~|\.bak|\.swp|\.disabled)$/.test(name)) continue;
    const isDir = entry.isDirectory() && name.endsWith(".d");
    const stem = isDir ? name.slice(0, -2) : name.slice(0, name.length - path.extname(name).length);
    const ext = isDir ? ".d" : path.extname(name);
    const file = path.join(dir, name);
    if (bases.includes(stem)) {
      if (ext === ".ts" && !isDir) {
        // Named only when it cannot run, and nothing compiled from it runs in its place.
        const launch = launchTypeScript(file);
        const compiled = [".js", ".mjs"].some((e) => names.has(stem + e));
        if ("unavailable" in launch && !compiled)
          out.push({ path: file, reason: launch.unavailable, suggestion: null });
        continue;
      }
      if (isDir || supported.includes(ext)) continue; // a gate discovery looks at
      out.push({
        path: file,
        reason: `a ${ext} file is never run (a gate is ${stem}, ${stem}.sh, ${stem}.js, ${stem}.mjs or ${stem}.ts)`,
        suggestion: `${stem}.sh (or ${stem} with a #! line and an execute bit)`,
      });
      continue;
    }
    const closest = closestName(stem.replaceAll("-", "_"), bases);
    const suggestion = closest ? `${closest}${ext}` : null;
    out.push({
      path: file,
      reason: `${isDir ? "a chain folder of" : "the gate of"} no event (events: ${bases.join(", ")})`,
      suggestion,
    });
  }
  return out;
}

/** Why a gate's owner or mode lets others rewrite it, or null. Root's files are as safe as the leader's. */
export function insecurity(fp: { mode: number; uid: number }, leaderUid: number | null): string | null {
  if ((fp.mode & 0o002) !== 0)
    return `world-writable (mode ${(fp.mode & 0o777).toString(8).padStart(4, "0")}): any user can rewrite it (chmod o-w)`;
  if (leaderUid !== null && fp.uid !== leaderUid && fp.uid !== 0)
    return `owned by uid ${fp.uid}, not by the leader's uid ${leaderUid} (or root): that user can rewrite it`;
  return null;
}
