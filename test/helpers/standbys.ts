/**
 * The standbys a leader keeps (runner/standby.ts): the processes waiting inside a gate's view for its next run,
 * found in /proc as the leader's children whose command line is a standby's `sh`.
 */
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { type LeaderProcess, waitUntil } from "./leader-rig.js";

/** A process as `pid start-time` (/proc/<pid>/stat's 22nd field): a pid comes round again, the pair does not. */
export function processId(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return `${pid} ${stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]}`;
}

/** The standbys a leader has waiting: its children whose command line is a standby's, with their run folder. */
export function standbysOf(leader: LeaderProcess): Array<{ pid: number; id: string; runDir: string }> {
  const found: Array<{ pid: number; id: string; runDir: string }> = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== leader.pid) continue;
      const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      // The `sh` that waits (`sh -c WAIT pi-teams-standby <env file> ...`), not the chain's one before it.
      if (argv[0] === "/bin/sh" && argv[3] === "pi-teams-standby")
        found.push({ pid: Number(name), id: processId(Number(name)), runDir: path.dirname(argv[4] ?? "") });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** The leader's standbys, once it has one (waited for). */
export function aStandby(leader: LeaderProcess): Promise<Array<{ pid: number; id: string; runDir: string }>> {
  return waitUntil("a standby of the leader's", () => {
    const found = standbysOf(leader);
    return found.length > 0 ? found : false;
  });
}
