/**
 * The private folder of one run: made by the leader for the run, `0700`, inside a folder of the
 * leader's own that no team can write or name, and outside any shared temp dir. It holds what the
 * run is made of: the context document (also the gate's stdin), a Claude Code gate's input, the
 * result file (created empty by the leader before the start), the copy of the gate's checked bytes
 * that starts, and, for a sandboxed run, the folder its view is built in. Removed whole at the end.
 *
 * The leader's runs folder (`runsRoot`): `$XDG_RUNTIME_DIR/pi-teams-hooks/runs` when that folder
 * is the user's own (a tmpfs on most systems: nothing of a run reaches a disk), else
 * `<state dir>/runs` (`~/.local/state/pi-teams-hooks/runs`), then a folder per installed package
 * (two releases side by side keep apart). A sandboxed gate sees none of it but its own run's folder.
 */
import {
  closeSync,
  constants as fsConstants,
  fstatSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmdirSync,
  rmSync,
  unlinkSync,
} from "node:fs";
import { execFile, spawnSync } from "node:child_process";
import { readdir, rm, rmdir, unlink } from "node:fs/promises";
import { createHash } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Worker } from "node:worker_threads";
import { describeError } from "../contract/errors.js";
import { sanitizeName } from "../team/paths.js";
import { userStateDir } from "../trust/trust-store.js";

/** The files of one run, in its private folder. */
export interface RunDir {
  dir: string;
  contextFile: string;
  resultFile: string;
  stdinFile: string;
  /** Where the sandbox builds the gate's view (runner/sandbox.ts): an empty folder until then. */
  root: string;
  /** The result file as the leader created it: what it must still be when read back. */
  result: { ino: number; dev: number; mode: number; uid: number };
  /**
   * A standby's: the result file's own folder (`out/`), bound writable in the view in place of the file
   * alone, so that each run of a view that serves several gets a result file made for it (newResultFile).
   */
  resultFolder: string | null;
}

type Env = Readonly<Record<string, string | undefined>>;

let ready: { env: string; root: string } | null = null;

/**
 * The leader's runs folder, made `0700` on first use, and checked to be the leader's own: a real
 * folder (no link), owned by this user, that no other user can write or enter. Throws with a
 * message naming the folder when it is not.
 */
export function runsRoot(env: Env = process.env): string {
  const key = `${env.XDG_RUNTIME_DIR ?? ""}\0${env.XDG_STATE_HOME ?? ""}\0${env.HOME ?? ""}`;
  if (ready?.env === key) return ready.root;
  const runtime = env.XDG_RUNTIME_DIR;
  const runs =
    runtime && path.isAbsolute(runtime) && isOwnPrivate(runtime)
      ? path.join(runtime, "pi-teams-hooks", "runs")
      : path.join(userStateDir(env), "runs");
  // One folder per installed package: two installs of pi-teams-hooks (two releases side by side)
  // each link their own package for their gates.
  const root = path.join(runs, createHash("sha256").update(ownPackageRoot()).digest("hex").slice(0, 12));
  // 0711: passed through, never listed or written by others (a `run-as=` gate's user reaches its own run).
  mkdirSync(root, { recursive: true, mode: 0o711 });
  for (const dir of [runs, root]) {
    const problem = notPrivate(dir);
    if (problem) throw new Error(`the leader's runs folder ${dir} ${problem}: no gate runs from it`);
  }
  ready = { env: key, root };
  return root;
}

/** Makes the private folder of a run, with its result file created empty (`0600`) by the leader. */
export function makeRunDir(runId: string, env: Env = process.env, opts: { resultFolder?: boolean } = {}): RunDir {
  const dir = mkdtempSync(path.join(runsRoot(env), `${sanitizeName(runId)}.`));
  const resultFolder = opts.resultFolder ? path.join(dir, "out") : null;
  if (resultFolder) mkdirSync(resultFolder, { mode: 0o700 });
  const resultFile = path.join(resultFolder ?? dir, "result.json");
  const result = createResultFile(resultFile);
  const root = path.join(dir, "root");
  mkdirSync(root, { mode: 0o700 });
  return {
    dir,
    contextFile: path.join(dir, "context.json"),
    resultFile,
    stdinFile: path.join(dir, "stdin.json"),
    root,
    result,
    resultFolder,
  };
}

/** Creates the run's result file, empty (`0600`, never through a file already there), and says what it is. */
function createResultFile(file: string): RunDir["result"] {
  const fd = openSync(file, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o600);
  try {
    const st = fstatSync(fd);
    return { ino: st.ino, dev: st.dev, mode: st.mode & 0o777, uid: st.uid };
  } finally {
    closeSync(fd);
  }
}

/**
 * A new result file for the next run of a standby's folder (its result folder holds the last run's only):
 * the old one removed, a new one made in its place. A process that kept the old one open writes into a
 * file no run reads. False (nothing usable) when the folder holds anything else, or the file is not the
 * leader's own any more.
 */
export function newResultFile(run: RunDir): boolean {
  if (!run.resultFolder) return false;
  try {
    const names = readdirSync(run.resultFolder);
    if (names.length !== 1 || names[0] !== path.basename(run.resultFile)) return false;
    const st = lstatSync(run.resultFile);
    const pin = run.result;
    if (!st.isFile() || st.ino !== pin.ino || st.dev !== pin.dev || st.uid !== pin.uid) return false;
    unlinkSync(run.resultFile);
    run.result = createResultFile(run.resultFile);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether `dir` belongs to another user than the leader's: a `run-as=` gate's run folder, handed to its user by a
 * leader running as root. That user can swap a folder inside it for a link between a listing and the removal
 * under it, which a removal by name follows (root would then remove files elsewhere).
 */
function handedOver(dir: string): boolean {
  try {
    return lstatSync(dir).uid !== process.getuid?.();
  } catch {
    return false;
  }
}

/**
 * The command that removes a folder handed over to another user: coreutils' `rm -r` (at a path of the base
 * system's own, never looked for through PATH), which walks it by open folders, never through a link (openat and
 * unlinkat with O_NOFOLLOW), so no link put in meanwhile leads it elsewhere. Null where there is no such `rm`: the
 * folder is left (the next start tries again).
 */
function removeHandedOverCommand(dir: string): { file: string; args: string[] } | null {
  for (const file of ["/usr/bin/rm", "/bin/rm"]) {
    try {
      if (lstatSync(file).isFile()) return { file, args: ["-rf", "--one-file-system", "--", dir] };
    } catch {
      // not there
    }
  }
  return null;
}

/** Removes a run's folder and all in it; a failure leaves a `0700` folder of the leader's, never an error. */
export function removeRunDir(dir: string): void {
  if (handedOver(dir)) {
    const rm = removeHandedOverCommand(dir);
    if (rm) spawnSync(rm.file, rm.args, { stdio: "ignore", timeout: 60_000 });
    return;
  }
  try {
    removeTree(dir);
  } catch {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // A mount still held inside it (a sandbox whose namespace is ending): the next start removes it.
    }
  }
}

/**
 * `removeRunDir` off the leader's thread: from the 17th, on a thread of its own (the remover), where each
 * removal is one message, instead of a dozen operations each handed to the thread pool and awaited on the
 * leader's thread; in the thread pool, one entry at a time, before then and when that thread cannot be had.
 * Settles once done, never rejects.
 */
export async function removeRunDirLater(dir: string): Promise<void> {
  if (handedOver(dir)) {
    const rm = removeHandedOverCommand(dir);
    if (rm) await new Promise<void>((resolve) => execFile(rm.file, rm.args, () => resolve()));
    return;
  }
  // A thread's start costs some 30 ms of CPU: a leader that removes a few folders does it in the thread pool.
  const thread = ++asked > THREAD_POOL_FIRST ? remover() : null;
  if (thread) {
    const id = ++removals;
    const removed = new Promise<boolean>((resolve) => waiting.set(id, resolve));
    if (waiting.size === 1) thread.ref(); // a removal under way keeps the process up, as the thread pool's would
    thread.postMessage({ id, dir });
    if (await removed) return;
  }
  try {
    await removeTreeLater(dir);
  } catch {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

// The remover's code: removeTree, then rmSync for what that left (a folder made by a gate's user). Written
// out here rather than loaded from this module, so that the thread starts with nothing but node:fs to load.
const REMOVER = `
const { parentPort } = require("node:worker_threads");
const fs = require("node:fs");
const path = require("node:path");
function tree(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const inside = path.join(dir, entry.name);
    if (entry.isDirectory()) tree(inside);
    else fs.unlinkSync(inside);
  }
  fs.rmdirSync(dir);
}
parentPort.on("message", ({ id, dir }) => {
  try {
    tree(dir);
  } catch {
    try { fs.rmSync(dir, { recursive: true, force: true }); } catch {}
  }
  parentPort.postMessage(id);
});
`;

let thread: Worker | null | undefined;
let removals = 0;
let asked = 0;
const THREAD_POOL_FIRST = 16;
/** Each removal asked of the remover, by id: resolved true once done, false when the remover went. */
const waiting = new Map<number, (done: boolean) => void>();

/**
 * Ends the remover once no removal is under way (a leader's stop, after it waited for its removals): a
 * process that starts leaders again and again (pi) keeps no idle thread of each. The next removals start
 * from the thread pool again.
 */
export function stopRemover(): void {
  const started = thread;
  if (!started || waiting.size > 0) return;
  thread = undefined;
  asked = 0;
  // Not waited for: its removals are done, and an idle thread keeps no process up (unref) as it ends.
  void started.terminate().catch(() => undefined);
}

/** The remover, started on first use; null once it failed (the thread pool does the removals then). */
function remover(): Worker | null {
  if (thread !== undefined) return thread;
  try {
    // node:worker_threads loaded only here: a process that starts no remover does without it (its start-up).
    const { Worker } = process.getBuiltinModule("node:worker_threads");
    const started = new Worker(REMOVER, { eval: true, resourceLimits: { maxOldGenerationSizeMb: 16 } });
    started.unref(); // idle, it keeps no process up
    started.on("message", (id: number) => {
      waiting.get(id)?.(true);
      waiting.delete(id);
      if (waiting.size === 0) started.unref();
    });
    const gone = (): void => {
      if (thread !== started) return; // ended by stopRemover: a later one may be running
      thread = null;
      for (const resolve of waiting.values()) resolve(false);
      waiting.clear();
    };
    started.on("error", gone);
    started.on("exit", gone);
    thread = started;
  } catch {
    thread = null;
  }
  return thread;
}

// A run's folder holds what the leader wrote: files, links and folders it made, so the listing's types are
// enough (no lstat of each entry, as a general recursive removal makes).
function removeTree(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const inside = path.join(dir, entry.name);
    if (entry.isDirectory()) removeTree(inside);
    else unlinkSync(inside);
  }
  rmdirSync(dir);
}

async function removeTreeLater(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const inside = path.join(dir, entry.name);
    if (entry.isDirectory()) await removeTreeLater(inside);
    else await unlink(inside);
  }
  await rmdir(dir);
}

/**
 * The folders made for the runs of `runId` in the runs folder of `env`: the event's run id and its chain's
 * `<runId>.N`, which sanitizeName turns into `<runId>-N` (`<run id>[-N].XXXXXX`).
 */
export function runDirsOf(runId: string, env: Env = process.env): string[] {
  let root: string;
  let names: string[];
  try {
    root = runsRoot(env);
    names = readdirSync(root);
  } catch {
    return [];
  }
  const stem = sanitizeName(runId);
  return names
    .filter((name) => name.startsWith(stem) && /^(-\d+)?\.[A-Za-z0-9]{6}$/.test(name.slice(stem.length)))
    .map((name) => path.join(root, name));
}

/**
 * Why `dir` is not a folder only this user can list and write (null when it is). Others may pass
 * through it (0711): a `run-as=` gate's user reaches its run's folder by its random name.
 */
function notPrivate(dir: string): string | null {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(dir);
  } catch (error) {
    return `cannot be read (${describeError(error)})`;
  }
  if (st.isSymbolicLink()) return "is a symbolic link";
  if (!st.isDirectory()) return "is not a folder";
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) return `belongs to uid ${st.uid}, not to this user (uid ${uid})`;
  if ((st.mode & 0o066) !== 0) return `has mode ${(st.mode & 0o777).toString(8)}, not 700 (or 711)`;
  return null;
}

function isOwnPrivate(dir: string): boolean {
  return notPrivate(dir) === null;
}

/** The root of the package this module belongs to (the folder of its package.json). */
export function ownPackageRoot(): string {
  // dist/teams-hooks/runner/run-dir.js (or extensions/teams-hooks/runner/run-dir.ts): three folders down.
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
}
