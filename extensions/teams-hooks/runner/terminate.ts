/**
 * Ending a hook and everything it started.
 *
 * A hook runs as the leader of its own process group (spawned `detached`), so one `kill(-pgid)` reaches
 * its background children even after they were orphaned, which tree-kill's parent walk cannot
 * (docs/architecture.md, Facts this design rests on). Two nets catch what leaves the group: tree-kill
 * (children that called setpgid/setsid while their parent still lives; only when `ps` is on PATH, since
 * tree-kill 1.2.2 throws uncatchably without it) and the run id, which every process of a run inherits
 * in `PI_TEAMS_HOOK_RUN_ID` and which `/proc/<pid>/environ` shows even after setsid.
 *
 * Liveness reads `/proc`, not `kill(pid, 0)` alone: PID 1 here reaps orphans lazily, and a zombie
 * still answers signal 0 although it holds no pipe and runs nothing. Nothing here throws for ESRCH
 * or EPERM: a process that is gone, or not ours, is simply not signalled.
 */
import { constants as fsConstants } from "node:fs";
import { access, readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { errnoCode } from "../contract/errors.js";

export type KillSignal = "SIGTERM" | "SIGKILL";

/** How often liveness is re-checked while waiting for processes to die. */
const POLL_MS = 20;
/** After SIGKILL, how long to wait for the kernel to finish the processes before giving up. */
const KILL_SETTLE_MS = 1_000;

/** Sends `signal` to one pid. False when it is gone or not ours (ESRCH / EPERM). */
export function signalProcess(pid: number, signal: KillSignal | 0): boolean {
  if (!isSafePid(pid)) return false;
  return sendSignal(pid, signal);
}

/** Sends `signal` to every process of group `pgid`. False when the group is empty or not ours. */
export function signalGroup(pgid: number, signal: KillSignal | 0): boolean {
  // kill(-1) would signal every process we may signal, and kill(-0) our own group: never.
  if (!isSafePid(pgid)) return false;
  return sendSignal(-pgid, signal);
}

function isSafePid(pid: number): boolean {
  return Number.isInteger(pid) && pid > 1 && pid !== process.pid;
}

function sendSignal(target: number, signal: KillSignal | 0): boolean {
  try {
    process.kill(target, signal);
    return true;
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ESRCH" || code === "EPERM") return false;
    throw error;
  }
}

interface ProcStat {
  pid: number;
  state: string;
  pgrp: number;
  flags: number;
}

/** `/proc/<pid>/stat`, or undefined when the process is gone. The name may hold `)` and spaces. */
async function readStat(pid: number): Promise<ProcStat | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, "latin1");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const state = fields[0];
    const pgrp = Number(fields[2]);
    const flags = Number(fields[6]);
    if (state === undefined || !Number.isInteger(pgrp)) return undefined;
    return { pid, state, pgrp, flags: Number.isInteger(flags) ? flags : 0 };
  } catch {
    return undefined; // gone between readdir and read: not alive, which is what we report
  }
}

async function listPids(): Promise<number[]> {
  try {
    const names = await readdir("/proc");
    const pids: number[] = [];
    for (const name of names) {
      const pid = Number(name);
      if (Number.isInteger(pid) && pid > 1 && pid !== process.pid) pids.push(pid);
    }
    return pids;
  } catch {
    return []; // no /proc (not Linux): the group kill still works, only the extra nets are off
  }
}

/** Live (non-zombie) members of process group `pgid`. Cheap when the group is already empty. */
export async function groupMembers(pgid: number): Promise<number[]> {
  if (!signalGroup(pgid, 0)) return [];
  const stats = await Promise.all((await listPids()).map(readStat));
  return stats.filter((s): s is ProcStat => s !== undefined && s.pgrp === pgid && s.state !== "Z").map((s) => s.pid);
}

/**
 * Live processes whose environment holds exactly `PI_TEAMS_HOOK_RUN_ID=<runId>`. Matching the whole
 * variable (bounded by NULs) is the guard against reused pids: a recycled pid belongs to a process
 * that never had this run id. Processes of other users (EACCES) are skipped.
 */
export async function findProcessesByRunId(runId: string, opts: { chain?: boolean } = {}): Promise<number[]> {
  if (runId.length === 0 || runId.includes("\0")) return [];
  const needles = [Buffer.from(`PI_TEAMS_HOOK_RUN_ID=${runId}\0`)];
  // The later hooks of a chain run as `<runId>.2`, `<runId>.3`… (invoke/invoke.ts): the whole family.
  if (opts.chain) needles.push(Buffer.from(`PI_TEAMS_HOOK_RUN_ID=${runId}.`));
  const found = await Promise.all(
    (await listPids()).map(async (pid) => {
      const environ = await readEnviron(pid);
      return environ && needles.some((needle) => hasVariable(environ, needle)) ? pid : undefined;
    }),
  );
  return found.filter((pid): pid is number => pid !== undefined);
}

/** Retries for an empty environ of a live user process: see readEnviron. */
const ENVIRON_RETRIES = 5;
/** The `flags` bit of a kernel thread (`PF_KTHREAD`), whose environ is always empty. */
const PF_KTHREAD = 0x00200000;

/**
 * `/proc/<pid>/environ`, or undefined when the process is gone or not ours (EACCES). The file binds
 * the address space at open: a process that execs between our open and read (a `setsid sleep`
 * escapee doing exactly that as the hook exits) reads as empty, so an empty environ of a live,
 * non-kernel process is read again.
 */
async function readEnviron(pid: number): Promise<Buffer | undefined> {
  for (let attempt = 0; ; attempt++) {
    let environ: Buffer;
    try {
      environ = await readFile(`/proc/${pid}/environ`);
    } catch {
      return undefined; // gone, or not ours to read: either way not a process we can end
    }
    if (environ.length > 0 || attempt >= ENVIRON_RETRIES) return environ;
    const stat = await readStat(pid);
    if (!stat || stat.state === "Z" || (stat.flags & PF_KTHREAD) !== 0) return environ;
    await sleep(2);
  }
}

function hasVariable(environ: Buffer, needle: Buffer): boolean {
  // The last variable may lack its trailing NUL: compare as if it had one.
  const haystack = environ.length > 0 && environ[environ.length - 1] !== 0 ? Buffer.concat([environ, Buffer.from([0])]) : environ;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) {
    if (at === 0 || haystack[at - 1] === 0) return true;
  }
  return false;
}

/**
 * Sends `signal` to every live process carrying `runId` (with `chain`, also the run ids of the later
 * hooks of its chain); returns how many were signalled.
 */
export async function killRunId(runId: string, signal: KillSignal, opts: { chain?: boolean } = {}): Promise<number> {
  let count = 0;
  for (const pid of await findProcessesByRunId(runId, opts)) if (signalProcess(pid, signal)) count++;
  return count;
}

/** Every live process of a run: the group's members plus run-id carriers that left the group. */
export async function runProcesses(pgid: number, runId?: string): Promise<number[]> {
  const [members, carriers] = await Promise.all([groupMembers(pgid), runId ? findProcessesByRunId(runId) : []]);
  return [...new Set([...members, ...carriers])];
}

/** True while any process of group `pgid` (or carrying `runId`) is alive. */
export async function isRunAlive(pgid: number, runId?: string): Promise<boolean> {
  return (await runProcesses(pgid, runId)).length > 0;
}

export interface TerminateOptions {
  /** Between SIGTERM and SIGKILL. */
  graceMs: number;
  /** Also end processes carrying this run id (escapees that left the group). */
  runId?: string;
  /**
   * The group leader has not exited (it is our child and not yet reaped), so its pid cannot have been
   * reused and tree-kill may walk from it. Never set this for a leader that already exited.
   */
  leaderRunning?: boolean;
  /**
   * For a group known only from a record (a crashed leader's ledger): signal the group only if one of
   * its live members carries `runId`. A pgid stays reserved while its group has a member, so such a
   * member proves the group is the run's and not a stranger's that reused the number.
   */
  confirmGroup?: boolean;
}

/**
 * SIGTERM to the group (and its run-id escapees, and through tree-kill), SIGKILL to whatever is left
 * `graceMs` later, then waits until they are gone. Returns the pids that were alive at the start.
 */
export async function terminateGroup(pgid: number, opts: TerminateOptions): Promise<number[]> {
  const { runId } = opts;
  const [members, carriers] = await Promise.all([groupMembers(pgid), runId ? findProcessesByRunId(runId) : Promise.resolve<number[]>([])]);
  const groupIsOurs = !opts.confirmGroup || members.some((pid) => carriers.includes(pid));
  // A group that is not ours is left alone: from here on, only the run id identifies the run.
  const group = groupIsOurs ? pgid : undefined;
  const initial = [...new Set([...(groupIsOurs ? members : []), ...carriers])];
  const leaderRunning = opts.leaderRunning === true && groupIsOurs && isSafePid(pgid);
  if (initial.length === 0 && !leaderRunning) return initial;

  if (group !== undefined) signalGroup(group, "SIGTERM");
  for (const pid of initial) signalProcess(pid, "SIGTERM");
  const walking = leaderRunning ? treeKillSafely(pgid, "SIGTERM", opts.graceMs) : Promise.resolve();

  if (!(await waitUntilGone(group, runId, opts.graceMs))) {
    if (group !== undefined) signalGroup(group, "SIGKILL");
    for (const pid of await liveOf(group, runId)) signalProcess(pid, "SIGKILL");
    await waitUntilGone(group, runId, KILL_SETTLE_MS);
  }
  await walking;
  return initial;
}

async function liveOf(group: number | undefined, runId: string | undefined): Promise<number[]> {
  if (group !== undefined) return runProcesses(group, runId);
  return runId ? findProcessesByRunId(runId) : [];
}

/** Polls until no process of the run is alive; false when `ms` passed first. */
async function waitUntilGone(group: number | undefined, runId: string | undefined, ms: number): Promise<boolean> {
  const until = Date.now() + Math.max(0, ms);
  for (;;) {
    if ((await liveOf(group, runId)).length === 0) return true;
    if (Date.now() >= until) return false;
    await sleep(POLL_MS);
  }
}

/** tree-kill, only when `ps` is on PATH; its errors (EPERM on a pid not ours) are not ours to report. */
async function treeKillSafely(pid: number, signal: KillSignal, boundMs: number): Promise<void> {
  if (!(await psOnPath())) return;
  // Loaded on first use: only a timeout or a stop needs it, and the leader's start-up does not.
  const { default: treeKill } = await import("tree-kill");
  await new Promise<void>((resolve) => {
    // Its walk spawns one `ps` per process; bounded so that a stuck `ps` cannot hold the run.
    const timer = setTimeout(resolve, Math.max(0, boundMs));
    treeKill(pid, signal, () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

let psCache: { path: string; found: boolean } | undefined;

/** Whether tree-kill's `spawn("ps")` would find `ps` (it uses the leader's PATH). */
export async function psOnPath(): Promise<boolean> {
  const searchPath = process.env.PATH ?? "";
  if (psCache?.path === searchPath) return psCache.found;
  let found = false;
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir) continue;
    try {
      await access(path.join(dir, "ps"), fsConstants.X_OK);
      found = true;
      break;
    } catch {
      // not in this directory: try the next
    }
  }
  psCache = { path: searchPath, found };
  return found;
}
