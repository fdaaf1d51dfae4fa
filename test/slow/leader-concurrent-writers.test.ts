/**
 * Concurrent writers: while the leader reopens tasks (a failing gate under `--failure-action reopen`),
 * one worker keeps completing the same tasks again and two others keep updating other fields of them,
 * all under the lock protocol; a reader that never locks parses every task and inbox file over and
 * over meanwhile. No update is lost (each writer's field ends with the last value it wrote, the
 * worker's completion fields survive the leader's writes, the leader's counters match its logs) and
 * no file is ever unparsable.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { splitRound } from "../../extensions/teams-hooks/contract/events.js";
import { readAllTaskFiles, readInboxFile, readLogs, seedTasks, useLeaderRig, elapse } from "../helpers/leader-rig.js";

const rig = useLeaderRig();

const TASKS = 20;
const ROUNDS = 4;
const RECONCILE_MS = 300;

describe("concurrent writers", () => {
  it("the leader's reopens and other members' edits of the same tasks all survive, and every file always parses", async () => {
    const team = await rig.team();
    const ids = await seedTasks(team, 1, TASKS, () => ({ status: "in_progress" }));
    await rig.hook(team, "on_task_completed.sh", `echo "still broken" >&2\nexit 1`);
    const leader = await rig.leader(team, [
      "--failure-action",
      "reopen",
      "--max-reopens",
      "1000",
      "--concurrency",
      "2",
      "--reconcile-ms",
      String(RECONCILE_MS),
    ]);

    const stopFile = path.join(team.teamsRoot, "stop");
    const reader = rig.backgroundWorker("read-storm", {
      dirs: [team.tasksDir, path.dirname(team.inboxFile(team.taskListId, "alice"))],
      stopFile,
      pauseMs: 5,
    });
    // (the reader and the editors pause a few ms after each pass over the tasks: they overlap the leader's
    // writes as much, for less CPU while the test lasts)
    const editorA = rig.backgroundWorker("touch", {
      tasksDir: team.tasksDir,
      ids,
      field: "noteA",
      stopFile,
      pauseMs: 5,
    });
    const editorB = rig.backgroundWorker("touch", {
      tasksDir: team.tasksDir,
      ids: [...ids].reverse(),
      field: "noteB",
      stopFile,
      pauseMs: 5,
    });
    // The owner completes every task again and again (after each reopen, or over a completion the
    // leader has not looked at yet).
    const { final } = await rig.worker<{ final: Record<string, string> }>("complete", {
      tasksDir: team.tasksDir,
      ids,
      times: ROUNDS,
      wave: true,
      pauseMs: 5,
    });
    const finalKeys = ids.map((id) => `task_completed:${id}:${final[id]}`);
    // (a completion after a reopen is keyed in its gate round: `<key>#r<n>`)
    await leader.waitFor(
      "the gate of every task's last completion",
      () => finalKeys.every((key) => leader.events().some((e) => splitRound(e.key).base === key)),
      { timeoutMs: 120_000 },
    );

    await writeFile(stopFile, "");
    const a = (await editorA.result) as { final: Record<string, number> };
    const b = (await editorB.result) as { final: Record<string, number> };
    const read = (await reader.result) as { reads: number; bad: unknown[] };
    await elapse(RECONCILE_MS * 3); // a negative check: only time can show it
    expect(await leader.stop()).toMatchObject({ code: 0 });

    expect(read.bad).toEqual([]);
    expect(read.reads).toBeGreaterThan(TASKS * 10);

    const logs = await readLogs(team.teamDir);
    const keys = logs.map((l) => l.key);
    expect(new Set(keys).size).toBe(keys.length); // no completion gated twice
    const tasks = await readAllTaskFiles(team);
    expect(tasks.size).toBe(TASKS);
    for (const id of ids) {
      const task = tasks.get(id);
      const mine = logs.filter((l) => l.invocation.completedTask?.id === id);
      const reopened = mine.filter(
        (l) => (l.policy?.reopen as { kind?: string } | null | undefined)?.kind === "reopen",
      ).length;
      const record = task as unknown as Record<string, unknown> | undefined;
      expect({
        id,
        noteA: task?.metadata?.noteA,
        noteATop: record?.noteATop,
        noteB: task?.metadata?.noteB,
        noteBTop: record?.noteBTop,
        completedAt: task?.metadata?.completedAt,
        result: task?.metadata?.result,
        status: task?.status,
        failures: task?.metadata?.qualityGateFailureCount,
        reopens: task?.metadata?.reopenedByQualityGateCount,
      }).toEqual({
        id,
        noteA: a.final[id],
        noteATop: a.final[id],
        noteB: b.final[id],
        noteBTop: b.final[id],
        completedAt: final[id],
        result: `done (${ROUNDS})`,
        status: "pending", // the last completion's gate failed too
        failures: mine.length,
        reopens: reopened,
      });
      expect(reopened).toBeGreaterThan(0);
    }
    // Per failed gate, one nudge, and one assignment for each reopen; none lost to a concurrent
    // rewrite of the inbox.
    const reopens = logs.filter(
      (l) => (l.policy?.reopen as { kind?: string } | null | undefined)?.kind === "reopen",
    ).length;
    expect(await readInboxFile(team, team.taskListId, "alice")).toHaveLength(logs.length + reopens);
  }, 180_000);
});
