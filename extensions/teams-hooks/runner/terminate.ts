/**
 * Ending a hook and everything it started.
 *
 * A hook runs as the leader of its own process group (spawned `detached`), so one `kill(-pgid)` reaches
 * its background children even after they were orphaned, which a walk of parent links cannot
 * (docs/decisions/process-facts.md). Two nets catch what leaves the group: the hook's
 * descendants by their parent links in `/proc/<pid>/stat` (children that called setpgid/setsid while
 * their parent still lives, whatever their environment), and the run id, which every process of a
 * run inherits in `PI_TEAMS_HOOK_RUN_ID` and which `/proc/<pid>/environ` shows even after setsid and
 * after its parent exited.
 *
 * Liveness reads `/proc`, not `kill(pid, 0)` alone: PID 1 here reaps orphans lazily, and a zombie
 * still answers signal 0 although it holds no pipe and runs nothing. Nothing here throws for ESRCH
 * or EPERM: a process that is gone, or not ours, is simply not signalled.
 */
import { readdir, readFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { errnoCode } from "../contract/errors.js";

type KillSignal = "SIGTERM" | "SIGKILL";

/** How often liveness is re-checked while waiting for processes to die. */
const POLL_MS = 20;
/** After SIGKILL, how long to wait for the kernel to finish the processes before giving up. */
const KILL_SETTLE_MS = 1_000;

/** Sends `signal` to one pid. False when it is gone or not ours (ESRCH / EPERM). */
function signalProcess(pid: number, signal: KillSignal | 0): boolean {
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
  ppid: number;
  pgrp: number;
  flags: number;
  /** Clock ticks after boot: with the pid, what tells a process from a later one given its number. */
  startTime: string;
}

/** `/proc/<pid>/stat`, or undefined when the process is gone. The name may hold `)` and spaces. */
async function readStat(pid: number): Promise<ProcStat | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, "latin1");
    // The fields after the name, from the third (state) on: proc(5) numbers them from 1.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const state = fields[0];
    const ppid = Number(fields[1]);
    const pgrp = Number(fields[2]);
    const flags = Number(fields[6]);
    if (state === undefined || !Number.isInteger(pgrp) || !Number.isInteger(ppid)) return undefined;
    return { pid, state, ppid, pgrp, flags: Number.isInteger(flags) ? flags : 0, startTime: fields[19] ?? "" };
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

/**
 * Live descendants of `pid` that are not in group `pgid`: children (and theirs) that left the group
 * with setsid or setpgid. Found by parent links, so only while each parent on the way still lives:
 * an orphan's parent is init, and the run id is the net for those.
 */
async function escapedDescendants(pid: number, pgid: number): Promise<ProcStat[]> {
  const stats = (await Promise.all((await listPids()).map(readStat))).filter(
    (s): s is ProcStat => s !== undefined && s.state !== "Z",
  );
  const children = new Map<number, ProcStat[]>();
  for (const stat of stats) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), stat]);
  const tree = [...(children.get(pid) ?? [])];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]?.pid ?? -1) ?? []));
  return tree.filter((s) => s.pgrp !== pgid);
}

/** Those of `stats` still alive as the same processes (the same start time: not a reused pid). */
async function stillAlive(stats: readonly ProcStat[]): Promise<number[]> {
  const now = await Promise.all(stats.map((s) => readStat(s.pid)));
  return stats
    .filter((s, i) => now[i] !== undefined && now[i]?.state !== "Z" && now[i]?.startTime === s.startTime)
    .map((s) => s.pid);
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
  // The later hooks of a chain run as `<runId>.2`, `<runId>.3`… (event/invoke.ts): the whole family.
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
  const haystack =
    environ.length > 0 && environ[environ.length - 1] !== 0 ? Buffer.concat([environ, Buffer.from([0])]) : environ;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) {
    if (at === 0 || haystack[at - 1] === 0) return true;
  }
  return false;
}

/**
 * Sends `signal` to every live process carrying `runId` (with `chain`, also the run ids of the later
 * hooks of its chain); returns the pids signalled.
 */
export async function killRunId(runId: string, signal: KillSignal, opts: { chain?: boolean } = {}): Promise<number[]> {
  return (await findProcessesByRunId(runId, opts)).filter((pid) => signalProcess(pid, signal));
}

/** Every live process of a run: the group's members plus run-id carriers that left the group. */
async function runProcesses(pgid: number, runId?: string): Promise<number[]> {
  const [members, carriers] = await Promise.all([groupMembers(pgid), runId ? findProcessesByRunId(runId) : []]);
  return [...new Set([...members, ...carriers])];
}

interface TerminateOptions {
  /** Between SIGTERM and SIGKILL. */
  graceMs: number;
  /** Also end processes carrying this run id (escapees that left the group). */
  runId?: string;
  /**
   * The group leader has not exited (it is our child and not yet reaped), so its pid cannot have been
   * reused and its descendants may be found by their parent links. Never set this for a leader that
   * already exited.
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
 * SIGTERM to the group (and to the run's processes that left it: by run id, and by parent links while
 * the leader lives), SIGKILL to whatever is left `graceMs` later, then waits until they are gone.
 * Returns the pids that were alive at the start.
 */
export async function terminateGroup(pgid: number, opts: TerminateOptions): Promise<number[]> {
  const { runId } = opts;
  const [members, carriers] = await Promise.all([
    groupMembers(pgid),
    runId ? findProcessesByRunId(runId) : Promise.resolve<number[]>([]),
  ]);
  const groupIsOurs = !opts.confirmGroup || members.some((pid) => carriers.includes(pid));
  // A group that is not ours is left alone: from here on, only the run id identifies the run.
  const group = groupIsOurs ? pgid : undefined;
  const leaderRunning = opts.leaderRunning === true && groupIsOurs && isSafePid(pgid);
  const escaped = leaderRunning ? await escapedDescendants(pgid, pgid) : [];
  const initial = [...new Set([...(groupIsOurs ? members : []), ...carriers, ...escaped.map((s) => s.pid)])];
  if (initial.length === 0 && !leaderRunning) return initial;

  const targets: Targets = { group, runId, escaped };
  if (group !== undefined) signalGroup(group, "SIGTERM");
  for (const pid of initial) signalProcess(pid, "SIGTERM");
  if (!(await waitUntilGone(targets, opts.graceMs))) {
    if (group !== undefined) signalGroup(group, "SIGKILL");
    for (const pid of await liveOf(targets)) signalProcess(pid, "SIGKILL");
    await waitUntilGone(targets, KILL_SETTLE_MS);
  }
  return initial;
}

/** What belongs to one run being ended: its group (when ours), its run id, and its escaped descendants. */
interface Targets {
  group: number | undefined;
  runId: string | undefined;
  escaped: readonly ProcStat[];
}

async function liveOf(t: Targets): Promise<number[]> {
  const [ofRun, escaped] = await Promise.all([
    t.group !== undefined
      ? runProcesses(t.group, t.runId)
      : t.runId
        ? findProcessesByRunId(t.runId)
        : Promise.resolve<number[]>([]),
    stillAlive(t.escaped),
  ]);
  return [...new Set([...ofRun, ...escaped])];
}

/** Polls until no process of the run is alive; false when `ms` passed first. */
async function waitUntilGone(targets: Targets, ms: number): Promise<boolean> {
  const until = Date.now() + Math.max(0, ms);
  for (;;) {
    if ((await liveOf(targets)).length === 0) return true;
    if (Date.now() >= until) return false;
    await sleep(POLL_MS);
  }
}
