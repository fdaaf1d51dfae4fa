/**
 * The served team member (`rig.worker`, `workerOp`: team-worker.mjs --serve), which most leader tests
 * use as "another process": it is one, with a pid of its own; it runs ops side by side; a failed op
 * rejects with the op's error; when it dies, its callers hear it and the next op starts a new one; an
 * op still out when its test ends is given up and its process ended, so it writes nothing afterwards.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readTaskFile, useLeaderRig, waitUntil, workerOp } from "../helpers/leader-rig.js";

const rig = useLeaderRig();

/** The pid in a plain-JS lock file, once it is there. */
async function holder(file: string): Promise<number> {
  return waitUntil(`${file}.lock`, async () => {
    const text = await readFile(`${file}.lock`, "utf8").catch(() => "");
    return text === "" ? false : (JSON.parse(text) as { pid: number }).pid;
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("the served team member", () => {
  it("runs ops in another process, side by side, and rejects a failed op with its error", async () => {
    const team = await rig.team({ tasks: [{ id: "1", status: "in_progress" }] });
    const held = rig.worker("hold", { file: path.join(team.teamDir, "a"), holdMs: 60_000 });
    const pid = await holder(path.join(team.teamDir, "a"));
    expect(pid).not.toBe(process.pid);

    // Done while the hold is still out, by the same process.
    const { final } = await rig.worker<{ final: Record<string, string> }>("complete", {
      tasksDir: team.tasksDir,
      ids: ["1"],
    });
    expect(await readTaskFile(team, "1")).toMatchObject({ status: "completed", metadata: { completedAt: final["1"] } });
    const second = rig.worker("hold", { file: path.join(team.teamDir, "b"), holdMs: 60_000 });
    expect(await holder(path.join(team.teamDir, "b"))).toBe(pid);

    await expect(rig.worker("complete", { tasksDir: team.tasksDir, ids: ["9"] })).rejects.toThrow(
      /worker complete failed: Error: ENOENT.*9\.json/,
    );
    await expect(rig.worker("no-such-op", {})).rejects.toThrow(/unknown op no-such-op/);

    // It dies: both holds hear it, and the next op runs in a new process.
    const heard = Promise.all([
      expect(held).rejects.toThrow(/worker hold: the team-worker process exited with SIGKILL/),
      expect(second).rejects.toThrow(/exited with SIGKILL/),
    ]);
    process.kill(pid, "SIGKILL");
    await heard;
    const next = rig.worker("hold", { file: path.join(team.teamDir, "c"), holdMs: 60_000 });
    const nextPid = await holder(path.join(team.teamDir, "c"));
    expect(nextPid).not.toBe(pid);
    process.kill(nextPid, "SIGKILL");
    await expect(next).rejects.toThrow(/exited with SIGKILL/);
  });

  it("gives up an op still out when its test ends, and ends the process that ran it", async () => {
    const team = await rig.team({ tasks: [{ id: "1", status: "in_progress" }] });
    let finish: (() => Promise<void>) | undefined;
    const scoped = rig.scoped({ onTestFinished: (fn) => (finish = fn as () => Promise<void>) });
    const stuck = scoped.worker("hold", { file: team.taskFile("1"), holdMs: 60_000 });
    const pid = await holder(team.taskFile("1"));

    const givenUp = expect(stuck).rejects.toThrow(/worker hold was still running when its test ended/);
    await finish?.();
    await givenUp;
    await waitUntil("the served process that ran it to end", () => !alive(pid));
    // The next op has a process of its own; the task's lock (left by the killed one) is stale to it.
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    expect(await readTaskFile(team, "1")).toMatchObject({ status: "completed" });
  });

  it("the plain call (workerOp) goes to the same process as the rig's", async () => {
    const team = await rig.team();
    const held = workerOp("hold", { file: path.join(team.teamDir, "a"), holdMs: 60_000 });
    const viaRig = rig.worker("hold", { file: path.join(team.teamDir, "b"), holdMs: 60_000 });
    const pid = await holder(path.join(team.teamDir, "a"));
    expect(await holder(path.join(team.teamDir, "b"))).toBe(pid);
    const heard = Promise.all([
      expect(held).rejects.toThrow(/exited with SIGKILL/),
      expect(viaRig).rejects.toThrow(/exited with SIGKILL/),
    ]);
    process.kill(pid, "SIGKILL");
    await heard;
  });
});
