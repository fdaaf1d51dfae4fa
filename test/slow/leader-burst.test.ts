/**
 * Burst: 150 tasks completed as fast as one worker can write them (lock, tmp file, rename), while
 * the leader watches: the writes are done in well under a second, long before the leader has run
 * the hooks, so completions pile up behind running hooks, and reconcile scans (every 300 ms) find the
 * same files the watcher reports. Exactly 150 hook runs, none missed, none repeated: counted by the
 * hooks themselves (each appends its task id to one file with O_APPEND), by the hook logs and by the
 * ledger.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { countLogs, readLedger, readLogs, seedTasks, useLeaderRig, elapse } from "../helpers/leader-rig.js";

const rig = useLeaderRig();

const N = 150;
const RECONCILE_MS = 300;

describe("burst", () => {
  it("150 completions written back to back run exactly 150 hooks", async () => {
    const team = await rig.team();
    const ids = await seedTasks(team, 1, N, () => ({ status: "in_progress" }));
    await rig.hook(team, "on_task_completed.sh", `echo "$PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/ids.txt"`);
    const leader = await rig.leader(team, ["--concurrency", "2", "--reconcile-ms", String(RECONCILE_MS)]);

    const { final } = await rig.worker<{ final: Record<string, string> }>("complete", { tasksDir: team.tasksDir, ids });
    await leader.waitForEvents(N, () => true, 280_000);
    await elapse(RECONCILE_MS * 2); // a negative check: only time can show it

    const keys = ids.map((id) => `task_completed:${id}:${final[id]}`).sort();
    // The hooks' own record.
    const ran = (await readFile(path.join(team.teamDir, "ids.txt"), "utf8")).split("\n").filter(Boolean);
    expect(ran).toHaveLength(N);
    expect(new Set(ran)).toEqual(new Set(ids));
    // The leader's output, logs and ledger.
    expect(
      leader
        .events()
        .map((e) => e.key)
        .sort(),
    ).toEqual(keys);
    expect(leader.events((e) => e.outcome !== "passed")).toEqual([]);
    expect(await countLogs(team.teamDir)).toBe(N);
    expect((await readLogs(team.teamDir)).map((l) => l.key).sort()).toEqual(keys);
    const done = (await readLedger(team.teamDir))
      .filter((r) => r.op === "done")
      .map((r) => r.key)
      .sort();
    expect(done).toEqual(keys);
    expect(leader.warnings()).toEqual([]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  }, 300_000);
});
