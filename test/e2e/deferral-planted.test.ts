/**
 * A deferral is decided only where this team's gates held it: one an agent made in a scratch copy of
 * its task, under a deferring gate of its own (`run --apply-policy --hooks-dir <own>`), and copied into
 * the team's deferrals, is refused by `decide` and by the leader, and the task's completion is judged
 * by the team's gate.
 */
import { copyFile, mkdir, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { readLogs, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

describe("a planted deferral", () => {
  it("made in another team and copied in: decide refuses it, and the team's gate judges the completion", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const at = "2026-12-01T09:00:00.000Z";
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    await rig.hook(team, "on_task_completed.sh", 'echo "FAIL: not done" >&2\nexit 1');
    // The agent's scratch team: the same task, completed, under a gate of its own that defers.
    const scratch = await rig.team({
      tasks: [makeTask({ id: "1", owner: "alice", status: "completed", metadata: { completedAt: at } })],
    });
    const own = path.join(scratch.teamsRoot, "own-hooks");
    await mkdir(own);
    await writeFile(path.join(own, "on_task_completed.sh"), '#!/usr/bin/env bash\necho \'{"decision":"defer"}\'\n', {
      mode: 0o755,
    });
    const deferred = await runBin([
      ...["run", "task_completed", "--team-dir", scratch.teamDir, "--task", "1"],
      ...["--hooks-dir", own, "--apply-policy", "--trust-changes"],
    ]);
    expect(deferred.code, deferred.stderr).toBe(3);
    const scratchDeferrals = path.join(scratch.teamDir, "hook-state", "deferrals");
    const [name] = await readdir(scratchDeferrals);
    const runId = (name ?? "").replace(/\.json$/, "");
    expect(runId).not.toBe("");

    const leader = await rig.leader(team);
    const deferrals = path.join(team.teamDir, "hook-state", "deferrals");
    await mkdir(deferrals, { recursive: true });
    await copyFile(path.join(scratchDeferrals, `${runId}.json`), path.join(deferrals, `${runId}.json`));
    const decided = await runBin(["decide", "--team-dir", team.teamDir, runId, "allow", "--by", "ci", "--yes"]);
    expect(decided.code).not.toBe(0);
    expect(decided.stdout + decided.stderr).toContain(
      `no gate held run ${runId}: the ledger has no such deferral, and its logFile`,
    );
    expect(decided.stdout + decided.stderr).toContain("is not a log of this team's");

    // The completion, with the same stamp: the team's own gate judges it.
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1, (e) => e.taskId === "1");
    expect(event).toMatchObject({ outcome: "failed", hook: "on_task_completed.sh" });
    expect((await readLogs(team.teamDir)).map((l) => l.result.outcome)).toEqual(["failed"]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
