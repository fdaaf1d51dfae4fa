/**
 * A hold ends when its cause does: a gate held by the leader's own fault (out of file descriptors) runs
 * again at the reconcile scan that sees the fault cleared, not at its next try (a minute away by then).
 */
import { execFile as execFileCb } from "node:child_process";
import { readdir } from "node:fs/promises";
import { promisify } from "node:util";
import { describe, it } from "vitest";
import { readTaskFile, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const execFile = promisify(execFileCb);

describe("a fault hold", () => {
  it("runs at the reconcile scan that sees its fault cleared, not at its next try", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    const limit = async (n: string): Promise<void> =>
      void (await execFile("prlimit", ["--pid", String(leader.pid), `--nofile=${n}:`]));
    const before = (
      await execFile("prlimit", ["--pid", String(leader.pid), "--nofile", "--raw", "--noheadings", "--output", "SOFT"])
    ).stdout.trim();
    // Room for one file at a time, none for a gate's pipes: its start fails with EMFILE, the leader's fault.
    await limit(String((await readdir(`/proc/${leader.pid}/fd`)).length + 2));
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    // Held, then tried again by itself after 2 s and 10 s, held each time: its next try is a minute away.
    await leader.waitForEvents(3, (e) => e.taskId === "1" && e.held === "fault", 30_000);
    await limit(before);
    const [passed] = await leader.waitForEvents(1, (e) => e.taskId === "1" && e.outcome === "passed", 20_000);
    expect(passed).toMatchObject({ retry: true });
    expect((await readTaskFile(team, "1")).metadata).toMatchObject({ qualityGateStatus: "passed" });
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
