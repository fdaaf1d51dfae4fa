/**
 * The first start on a team dir with history, when it is not quiet: workers keep editing old tasks
 * while the leader scans, or the leader dies in the middle of its first scan. Either way what existed
 * before the first start is a baseline: no hook runs for it (only --catch-up runs history).
 */
import { access, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readLedger, readLogs, seedTasks, useLeaderRig, waitUntil } from "../helpers/leader-rig.js";

const rig = useLeaderRig();

const T0 = "2025-01-01T00:00:00.000Z";
const RECORD = `echo "$PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"`;

describe("the first start's baseline", () => {
  it("old completions edited by workers during the first scan are still a baseline, not run", async () => {
    const team = await rig.team();
    const ids = await seedTasks(team, 1, 3000, () => ({ status: "completed", metadata: { completedAt: T0 } }));
    await rig.hook(team, "on_task_completed.sh", RECORD);
    // Another member edits other fields of the old tasks (completedAt untouched: no new completion).
    const stopFile = path.join(team.teamsRoot, "stop-touch");
    const toucher = rig.backgroundWorker("touch", { tasksDir: team.tasksDir, ids, field: "comment", stopFile });
    await waitUntil("the first edits", async () => (await commentEdits(team.taskFile("1"))) > 0);

    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    await writeFile(stopFile, "");
    const { final } = (await toucher.result) as { final: Record<string, number> };
    expect(Object.keys(final).length).toBeGreaterThan(0);
    expect(leader.linesOf("ready")[0]).toMatchObject({ tasks: 3000 });

    // Everything the edits changed has been looked at again (reconcile), and nothing ran.
    await new Promise((resolve) => setTimeout(resolve, 200 * 4)); // a negative check: only time can show it
    expect(leader.events()).toEqual([]);
    expect(await readLogs(team.teamDir)).toEqual([]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  }, 60_000);

  it("a leader killed during its first scan leaves no half baseline: the next start still records history as a baseline", async () => {
    const team = await rig.team();
    await seedTasks(team, 1, 4000, () => ({ status: "completed", metadata: { completedAt: T0 } }));
    await rig.hook(team, "on_task_completed.sh", RECORD);
    const ledger = path.join(team.teamDir, "hook-state", "ledger.jsonl");

    // Killed as soon as its ledger exists: before the scan of 4,000 files can have finished.
    const first = await rig.leader(team, [], { waitForWatching: false });
    await waitUntil("the ledger file", () => access(ledger).then(() => true), { intervalMs: 1, timeoutMs: 20_000 });
    await first.kill();
    const written = await readLedger(team.teamDir);
    expect(written.filter((r) => r.op === "baseline").length).toBeLessThan(4000); // (else the kill came too late to matter)
    expect(first.linesOf("watching")).toEqual([]);

    const second = await rig.leader(team, ["--reconcile-ms", "200"]);
    expect(second.linesOf("ready")[0]).toMatchObject({ tasks: 4000, queued: 0 });
    await new Promise((resolve) => setTimeout(resolve, 200 * 3)); // a negative check: only time can show it
    expect(second.events()).toEqual([]);
    expect(await second.stop()).toMatchObject({ code: 0 });
  }, 60_000);
});

/** How many `comment` edits a task has had (0 before the first). */
async function commentEdits(file: string): Promise<number> {
  const task = JSON.parse(await readFile(file, "utf8")) as { metadata?: { comment?: number } };
  return task.metadata?.comment ?? 0;
}
