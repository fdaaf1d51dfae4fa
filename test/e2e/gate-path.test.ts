/**
 * A gate's PATH holds only the absolute folders of the leader's: an empty or relative folder would be searched
 * from the gate's working directory, which the agents write, so that a file planted there and named like the
 * gate's interpreter (`bash`, for a `.sh` gate) would run in its place and decide the verdict. Sandboxed or not,
 * started at the event or from a standby: the gate that runs is the one that was trusted.
 */
import { chmod, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { completeTasks, readLogs, runBin, useLeaderRig, saidLines } from "../helpers/leader-rig.js";
import { aStandby } from "../helpers/standbys.js";
import { makeTask, testTempDir } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

/** What an agent plants: a `bash` that passes every gate it stands in for. */
const PLANTED_BASH = '#!/bin/sh\necho "planted bash ran"\nexit 0\n';

/** The leader's PATH with an empty folder (the working directory) and a relative one in front. */
const LEADER_PATH = `:rel-bin:${process.env.PATH ?? "/usr/bin:/bin"}`;
/** What the gate must see: the leader's absolute folders, in their order. */
const ABSOLUTE_PATH = LEADER_PATH.split(":")
  .filter((folder) => folder.startsWith("/"))
  .join(":");

/** A failing gate that says its PATH and its pid. */
const GATE = ['echo "path=$PATH"', 'echo "pid=$$"', "exit 1"].join("\n");

/** `bash` planted in `dir` and in its `rel-bin/`, as the empty and the relative folder of LEADER_PATH find them. */
async function plantBash(dir: string): Promise<void> {
  await mkdir(path.join(dir, "rel-bin"), { recursive: true });
  for (const file of [path.join(dir, "bash"), path.join(dir, "rel-bin", "bash")]) {
    await writeFile(file, PLANTED_BASH);
    await chmod(file, 0o755);
  }
}

describe.concurrent("a gate's PATH", () => {
  it.for([
    ["sandboxed", ""],
    ["with sandbox=off", "# pi-teams-hooks: sandbox=off\n"],
  ])(
    "keeps only the leader's absolute folders, so a bash planted in its working directory does not run (%s)",
    async ([, line], context) => {
      const { expect } = context;
      const rig = outerRig.scoped(context);
      const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })] });
      await rig.hook(team, "on_task_completed.sh", `${line}${GATE}`);
      const work = await testTempDir(context, "gate-path-work-");
      await plantBash(work);

      const out = await runBin(
        ["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--cwd", work, "--json"],
        { env: { PATH: LEADER_PATH } },
      );
      const record = JSON.parse(out.stdout.trim().split("\n").at(-1) ?? "null") as {
        result: { outcome: string; stdout: string; sandbox?: string };
      };
      expect(record.result.stdout).not.toContain("planted bash ran");
      expect(record.result).toMatchObject({ outcome: "failed", sandbox: line === "" ? "on" : "off" });
      expect(saidLines(record.result.stdout).get("path")).toBe(ABSOLUTE_PATH);
    },
  );

  it("is the same for a leader's run that starts from a standby", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: ["1", "2", "3"].map((id) => makeTask({ id, owner: "alice", status: "in_progress" })),
    });
    await rig.hook(team, "on_task_completed.sh", GATE);
    // The leader's working directory is the gates' (the teams root here).
    await plantBash(team.teamsRoot);
    const leader = await rig.leader(team, [], { env: { PATH: LEADER_PATH } });

    for (const [n, id] of ["1", "2"].entries()) {
      await completeTasks(team, [id]);
      await leader.waitForEvents(n + 1);
    }
    const [standby] = await aStandby(leader);
    await completeTasks(team, ["3"]);
    await leader.waitForEvents(3);

    const runs = (await readLogs(team.teamDir)).sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    for (const run of runs) expect(run.result.stdout).not.toContain("planted bash ran");
    expect(runs.map((r) => r.result.outcome)).toEqual(["failed", "failed", "failed"]);
    const third = saidLines(runs[2]?.result.stdout ?? "");
    expect(third.get("pid")).toBe(String(standby?.pid));
    for (const run of runs) expect(saidLines(run.result.stdout).get("path")).toBe(ABSOLUTE_PATH);
  });
});
