/**
 * Overflow: the leader is stopped (SIGSTOP) while 100 tasks are completed some 30 times each, one
 * task's writes back to back: locked, atomic writes, 7 inotify events each, in all 1.25 times the
 * kernel's queue (`/proc/sys/fs/inotify/max_queued_events`, read at run time; the number of writes
 * follows from it). The watcher loses the rest: the queue fills up with the writes of the first ~80
 * tasks, and the other ~20 leave no event at all, so only the reconcile scan can find them. A second
 * watcher, stopped beside the leader, shows that its queue did overflow. After SIGCONT every final
 * completion runs its hook exactly once, and the work is found within the reconcile interval: the
 * leader never sits idle longer than that while completions wait. Intermediate completions,
 * overwritten before the leader could see them, never run.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runs } from "../helpers/temp-team.js";
import { countLogs, readLedger, readLogs, seedTasks, useLeaderRig, waitUntil, elapse } from "../helpers/leader-rig.js";
import { exists } from "../fixtures/workers/protocol.mjs";

const rig = useLeaderRig();

const N = 100;
/**
 * inotify events of one write of the worker's protocol, none merged with the one before it: the lock
 * created and written, the temp file created and written, the rename (from and to), the lock deleted.
 */
const EVENTS_PER_WRITE = 7;
/** Events written, as a multiple of the kernel's queue: enough that a good share of the tasks leave none. */
const OVERFLOW = 1.25;
/** The scan of 100 files is cheap: half a second between scans costs the hooks nothing. */
const RECONCILE_MS = 500;
/** Slack on top of the reconcile interval for one scan of the list and a loaded machine. */
const SLACK_MS = 3000;

describe("inotify overflow while the leader is stopped", () => {
  it("100 completions written some 30 times each while SIGSTOPped all run exactly once after SIGCONT", async () => {
    const maxQueued = Number((await readFile("/proc/sys/fs/inotify/max_queued_events", "utf8")).trim());
    // Writes per task: 1 more or 1 less than `perTask` (by id), so tasks differ in how many times they complete.
    const perTask = Math.ceil((maxQueued * OVERFLOW) / EVENTS_PER_WRITE / N);
    const timesOf = (id: string): number => perTask - 1 + (Number(id) % 3);

    const team = await rig.team();
    const ids = await seedTasks(team, 1, N, () => ({ status: "in_progress" }));
    await rig.hook(
      team,
      "on_task_completed.sh",
      `echo "$PI_TEAMS_TASK_ID $PI_TEAMS_EVENT_TIMESTAMP" >> "$PI_TEAMS_TEAM_DIR/runs.txt"`,
    );
    const leader = await rig.leader(team, ["--concurrency", "4", "--reconcile-ms", String(RECONCILE_MS)]);
    const readyFile = path.join(team.teamsRoot, "witness-ready");
    const witness = rig.backgroundWorker("count-events", { dir: team.tasksDir, readyFile });
    await waitUntil("the witness to watch", () => exists(readyFile));

    leader.signal("SIGSTOP");
    witness.child.kill("SIGSTOP");
    const times = Object.fromEntries(ids.map((id) => [id, timesOf(id)]));
    const written = ids.reduce((sum, id) => sum + timesOf(id), 0) * EVENTS_PER_WRITE;
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
      witness.child.kill("SIGCONT");
      const keys = ids.map((id) => `task_completed:${id}:${final[id]}`).sort();

      await leader.waitForEvents(N, () => true, 120_000);
      await elapse(RECONCILE_MS * 2); // a negative check: only time can show it

      // The queue overflowed: more events were written than it holds, and a watch stopped as long as
      // the leader was got a full queue and lost the rest (it also counts the leader's own writes since).
      witness.child.kill("SIGTERM");
      const { events: delivered } = (await witness.result) as { events: number };
      expect(written).toBeGreaterThan(maxQueued);
      expect(delivered).toBeGreaterThanOrEqual(maxQueued);
      expect(delivered).toBeLessThan(written);

      // Exactly the final completions, each once.
      const ran = await runs(team);
      expect(ran).toHaveLength(N);
      expect(ran.map((line) => `task_completed:${line.replace(" ", ":")}`).sort()).toEqual(keys);
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
      // never leave a stopped process behind, whatever failed
      leader.signal("SIGCONT");
      witness.child.kill("SIGCONT");
    }
  }, 300_000);
});
