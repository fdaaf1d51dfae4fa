/**
 * Overflow: the leader is stopped (SIGSTOP) while 1,000 tasks are completed five to seven times each,
 * one task's writes back to back (6,000 locked, atomic writes, some 42,000 inotify events: far past
 * the kernel's queue of 16,384, so the watcher loses most of them; the queue fills up with the writes
 * of the first ~400 tasks, and the other ~600 tasks leave no event at all, so only the reconcile scan
 * can find them). After SIGCONT every final completion runs its hook exactly once, and the work is
 * found within the reconcile interval: the leader never sits idle longer than that while completions
 * wait. Intermediate completions, overwritten before the leader could see them, never run.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { countLogs, readLedger, readLogs, seedTasks, useLeaderRig } from "../helpers/leader-rig.js";

const rig = useLeaderRig();

const N = 1000;
/** Writes of each task: 5 to 7, 6,000 in all (each ~7 inotify events: lock, temp file, rename, unlock). */
const timesOf = (id: string): number => (Number(id) % 3) + 5;
/**
 * 1 s, not less: a scan of the list takes a hundred ms or more on a loaded machine, and back-to-back scans slow the
 * hooks.
 */
const RECONCILE_MS = 1000;
/** Slack on top of the reconcile interval for one scan of the list and a loaded machine. */
const SLACK_MS = 2500;

describe("inotify overflow while the leader is stopped", () => {
  it("1,000 completions written five to seven times each while " +
    "SIGSTOPped all run exactly once after SIGCONT", async () => {
    const team = await rig.team();
    const ids = await seedTasks(team, 1, N, () => ({ status: "in_progress" }));
    await rig.hook(
      team,
      "on_task_completed.sh",
      `echo "$PI_TEAMS_TASK_ID $PI_TEAMS_EVENT_TIMESTAMP" >> "$PI_TEAMS_TEAM_DIR/runs.txt"`,
    );
    const leader = await rig.leader(team, ["--concurrency", "4", "--reconcile-ms", String(RECONCILE_MS)]);

    leader.signal("SIGSTOP");
    const times = Object.fromEntries(ids.map((id) => [id, timesOf(id)]));
    let resumed = 0;
    try {
      // Task by task, each one's writes back to back: the later tasks' events are all lost.
      const { final } = await rig.worker<{ final: Record<string, string> }>("complete", {
        tasksDir: team.tasksDir,
        ids,
        times,
      });
      resumed = performance.now();
      leader.signal("SIGCONT");
      const keys = ids.map((id) => `task_completed:${id}:${final[id]}`).sort();

      await leader.waitForEvents(N, () => true, 550_000);
      await new Promise((resolve) => setTimeout(resolve, RECONCILE_MS * 2)); // a negative check: only time can show it

      // Exactly the final completions, each once.
      const runs = (await readFile(path.join(team.teamDir, "runs.txt"), "utf8")).split("\n").filter(Boolean);
      expect(runs).toHaveLength(N);
      expect(runs.map((line) => `task_completed:${line.replace(" ", ":")}`).sort()).toEqual(keys);
      expect(
        leader
          .events()
          .map((e) => e.key)
          .sort(),
      ).toEqual(keys);
      expect(await countLogs(team.teamDir)).toBe(N);
      expect((await readLogs(team.teamDir)).map((l) => l.key).sort()).toEqual(keys);
      expect(
        (await readLedger(team.teamDir))
          .filter((r) => r.op === "begin")
          .map((r) => r.key)
          .sort(),
      ).toEqual(keys);

      // Found within the reconcile interval: work starts at once, and never pauses longer than that.
      const finished = leader.events().map((e) => Date.parse(e.time));
      const first = Math.min(...finished);
      const resumedAt = Date.now() - (performance.now() - resumed);
      expect(first - resumedAt).toBeLessThan(RECONCILE_MS + SLACK_MS);
      const gaps = finished.slice(1).map((t, i) => t - (finished[i] ?? t));
      expect(Math.max(...gaps)).toBeLessThan(RECONCILE_MS + SLACK_MS);
      expect(await leader.stop()).toMatchObject({ code: 0 });
    } finally {
      leader.signal("SIGCONT"); // never leave a stopped process behind, whatever failed
    }
  }, 600_000);
});
