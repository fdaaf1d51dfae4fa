/**
 * A cgroup (v2) of a view's own, where the kernel gives the leader a cgroup folder it can write: a standby's
 * process is put in it before its gate is told to go, so every process of the gate's is made in it, and none
 * can leave it: the view hides every cgroup2 file system behind an empty read-only tmpfs (sandbox.ts fstabOf; a
 * read-only mount would not do: clone3's CLONE_INTO_CGROUP makes a child in the cgroup of any folder it can open
 * whose modes let it write), and a process of another user namespace cannot reach the leader's root through
 * /proc. The end of a run then reads that cgroup's own list (`cgroup.procs`, `cgroup.events`) and ends it at
 * once (`cgroup.kill`), instead of reading the root of every process of the machine (sandbox.ts endRun), which a
 * loaded machine makes slow. Where there is no such folder (no cgroup2 mount, one the leader's user cannot write,
 * a kernel before `cgroup.kill`), runs are looked for in every process, as before.
 *
 * The folders: `<the leader's own cgroup>/pi-teams-hooks.<leader pid>/view.<n>`, one a view, removed with it;
 * the leader's own at its stop, and those of a leader that died at the next leader's start.
 * `PI_TEAMS_HOOKS_CGROUPS=off` in the leader's environment makes none (a service manager that owns the leader's
 * cgroup and has not delegated it).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";

/** A view's cgroup: its folder. */
export interface RunGroup {
  dir: string;
}

const PREFIX = "pi-teams-hooks.";

/** This leader's folder of view cgroups, made on first use; null where the machine gives none. */
let base: string | null | undefined;
let made = 0;
/** Groups that were not empty yet when let go (a killed process still exiting): removed at a later chance. */
const pending = new Set<string>();

/** The folder of this process's own cgroup on the cgroup2 file system, or null where there is none to see. */
function ownCgroupDir(): string | null {
  try {
    const own = readFileSync("/proc/self/cgroup", "utf8")
      .split("\n")
      .find((line) => line.startsWith("0::"))
      ?.slice(3);
    if (!own?.startsWith("/")) return null;
    for (const line of readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
      const [before, after] = line.split(" - ");
      if (!before || !after?.startsWith("cgroup2 ")) continue;
      const fields = before.split(" ");
      const root = unescapeMount(fields[3] ?? "");
      const point = unescapeMount(fields[4] ?? "");
      if (root === "/") return path.join(point, own);
      if (own === root || own.startsWith(`${root}/`)) return path.join(point, own.slice(root.length));
    }
  } catch {
    // no /proc to read
  }
  return null;
}

/** A path as mountinfo writes it (a space, a tab, a line break, a backslash as octal escapes). */
function unescapeMount(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** This leader's folder of view cgroups, made now if it is not yet; null where it cannot be. */
function leaderBase(): string | null {
  if (base !== undefined) return base;
  base = null;
  if (process.env.PI_TEAMS_HOOKS_CGROUPS === "off") return base;
  const own = ownCgroupDir();
  if (!own) return base;
  const dir = path.join(own, `${PREFIX}${process.pid}`);
  try {
    mkdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") return base;
  }
  // A cgroup of its own has `cgroup.kill` where the kernel has it (5.14 on; the root cgroup never has it).
  if (existsSync(path.join(dir, "cgroup.kill"))) base = dir;
  else removeGroupDir(dir);
  return base;
}

/** A new cgroup for a view; null where the machine gives none (the run's end then reads every process). */
export function newGroup(): RunGroup | null {
  retryPending();
  const parent = leaderBase();
  if (!parent) return null;
  const dir = path.join(parent, `view.${++made}`);
  try {
    mkdirSync(dir);
  } catch {
    return null;
  }
  return { dir };
}

/**
 * Moves process `pid` (a standby's, before its `go`) into `group`, on the thread pool: the kernel can wait there
 * for a grace period of its own (a millisecond or more), which the main thread does not. False when it could
 * not be moved (the process is gone).
 */
export async function joinGroup(group: RunGroup, pid: number): Promise<boolean> {
  try {
    await writeFile(path.join(group.dir, "cgroup.procs"), String(pid));
    return true;
  } catch {
    return false;
  }
}

/**
 * Ends every process left in `group` (`cgroup.kill`, which no fork escapes): `killed`, the processes it
 * listed; `settled`, none was there, the cgroup holding no task at all (`populated 0`). Null when the
 * cgroup's files cannot be read or written (the caller then reads every process).
 */
export function endGroup(group: RunGroup): { killed: number[]; settled: boolean } | null {
  try {
    const listed = readFileSync(path.join(group.dir, "cgroup.procs"), "latin1")
      .split("\n")
      .filter((line) => /^\d+$/.test(line))
      .map(Number);
    const populated = !/^populated 0$/m.test(readFileSync(path.join(group.dir, "cgroup.events"), "latin1"));
    if (listed.length > 0 || populated) writeFileSync(path.join(group.dir, "cgroup.kill"), "1");
    return { killed: listed, settled: listed.length === 0 && !populated };
  } catch {
    return null;
  }
}

/** Removes `group`'s folder: at once when it is empty, else at a later chance (its processes still ending). */
export function letGo(group: RunGroup): void {
  if (!removeGroupDir(group.dir)) pending.add(group.dir);
}

function removeGroupDir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT";
  }
}

function retryPending(): void {
  for (const dir of pending) if (removeGroupDir(dir)) pending.delete(dir);
}

/**
 * At a leader's stop, once its views are let go: their cgroups and the leader's folder of them removed (one
 * whose processes are still ending is left to the next leader's start).
 */
export function stopGroups(): void {
  retryPending();
  if (base && pending.size === 0 && removeGroupDir(base)) base = undefined;
}

/**
 * At a leader's start: the cgroup folders of leaders that are gone, removed with their views' cgroups (those
 * still holding a process, a gate of a leader killed while it ran, are left for a later start).
 */
export function removeOrphanGroups(): number {
  const own = ownCgroupDir();
  if (!own) return 0;
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(own);
  } catch {
    return 0;
  }
  for (const name of names) {
    if (!name.startsWith(PREFIX)) continue;
    const pid = Number(name.slice(PREFIX.length));
    if (!Number.isInteger(pid) || pid === process.pid || existsSync(`/proc/${pid}`)) continue;
    const dir = path.join(own, name);
    try {
      for (const view of readdirSync(dir, { withFileTypes: true }))
        if (view.isDirectory()) removeGroupDir(path.join(dir, view.name));
    } catch {
      continue;
    }
    if (removeGroupDir(dir)) removed += 1;
  }
  return removed;
}
