/**
 * The suite's set-up (test/helpers/global-setup.ts) removes what a killed run of the suite left: its temp
 * folder, whose `owner` file names the run's process (`pid start-time`), and the processes started in it. Only
 * folders of this user's whose process is gone: a live run's, another user's, or a link named like one stay.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { chownSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "vitest";
import { removeKilledRuns } from "../helpers/global-setup.js";
import { waitUntil } from "../helpers/leader-rig.js";
import { testTempDir } from "../helpers/temp-team.js";

const PREFIX = "pi-teams-hooks-tests-";

function processId(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return `${pid} ${stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]}`;
}

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

describe("the set-up's clean-up of killed runs", () => {
  it("removes a folder of this user's whose run is gone, with its processes, and leaves a live run's, another user's and a link", async (context) => {
    const { expect, onTestFinished } = context;
    const parent = await testTempDir(context, "killed-runs-");
    const started: ChildProcess[] = [];
    onTestFinished(() => {
      for (const child of started) if (alive(child)) child.kill("SIGKILL");
    });
    /** A run's folder named by `owner`, with a process started in it (TMPDIR), as `uid` when given. */
    const run = (name: string, owner: string, uid?: number): { dir: string; child: ChildProcess } => {
      const dir = path.join(parent, `${PREFIX}${name}`);
      mkdirSync(dir, { mode: 0o1777 });
      writeFileSync(path.join(dir, "owner"), owner);
      if (uid !== undefined) chownSync(dir, uid, uid);
      const child = spawn("sleep", ["60"], { env: { ...process.env, TMPDIR: dir }, stdio: "ignore", uid });
      started.push(child);
      return { dir, child };
    };
    // A pid past pid_max: no process has it.
    const gone = "4194305 1";
    const killed = run("killed", gone);
    const live = run("live", processId(process.pid));
    const root = process.getuid?.() === 0;
    const others = root ? run("others", gone, 65534) : null;
    const target = await testTempDir(context, "killed-runs-target-");
    writeFileSync(path.join(target, "owner"), gone);
    symlinkSync(target, path.join(parent, `${PREFIX}link`));
    await waitUntil("the runs' processes started", () => started.every((child) => child.pid !== undefined));

    removeKilledRuns([parent]);

    expect(existsSync(killed.dir)).toBe(false);
    await waitUntil("the killed run's process ended", () => !alive(killed.child));
    expect(existsSync(path.join(live.dir, "owner"))).toBe(true);
    expect(alive(live.child)).toBe(true);
    if (others) {
      expect(existsSync(path.join(others.dir, "owner"))).toBe(true);
      expect(alive(others.child)).toBe(true);
    }
    expect(existsSync(path.join(parent, `${PREFIX}link`))).toBe(true);
    expect(existsSync(path.join(target, "owner"))).toBe(true);
  });
});
