/**
 * Stopping `pi-teams-hooks watch`: SIGINT and SIGTERM stop taking events, let a running hook finish (or
 * end it at its timeout), exit 0 and leave no hook process; events not run yet are left for the next
 * start. And one leader per team dir: a second one is refused while the first runs.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { UNTIL_RELEASED, readLogs, stopThenRelease, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const rig = useLeaderRig();

/**
 * Appends `start <task>` when it begins, runs until the test releases it, then appends `end <task>`, to marks.txt in
 * the team dir.
 */
const HELD_HOOK = [
  `echo "start $PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/marks.txt"`,
  UNTIL_RELEASED,
  `echo "end $PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/marks.txt"`,
].join("\n");

async function marks(team: TempTeam): Promise<string[]> {
  return (await readFile(path.join(team.teamDir, "marks.txt"), "utf8").catch(() => "")).split("\n").filter(Boolean);
}

const working = (id: string) => makeTask({ id, owner: "alice", status: "in_progress" });

describe("SIGINT / SIGTERM", () => {
  it.each(["SIGINT", "SIGTERM"] as const)(
    "%s: the running hook finishes, the waiting event is left for the next start, exit 0",
    async (signal) => {
      const team = await rig.team({ tasks: [working("1"), working("2")] });
      await rig.hook(team, "on_task_completed.sh", HELD_HOOK);
      const leader = await rig.leader(team, ["--concurrency", "1"]);
      await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
      await leader.waitFor("the first hook to start", async () => (await marks(team)).includes("start 1"));
      // Task 2's event now waits behind task 1's running hook.
      const done = await rig.worker<{ final: Record<string, string> }>("complete", {
        tasksDir: team.tasksDir,
        ids: ["2"],
      });

      const stopped = await stopThenRelease(leader, signal);
      expect(stopped).toMatchObject({ code: 0, signal: null });
      expect(stopped.ms).toBeLessThan(5000);
      expect(await marks(team)).toEqual(["start 1", "end 1"]); // finished, not cut off; task 2 never started
      expect(leader.events().map((e) => [e.taskId, e.outcome])).toEqual([["1", "passed"]]);
      // Dropped from the queue if the leader had noticed it before the signal; either way never started.
      expect(leader.linesOf("stopped")).toEqual([{ type: "stopped", dropped: expect.any(Number) }]);

      // Nothing was lost: the next start runs task 2's completion.
      const next = await rig.leader(team, ["--once"], { waitForWatching: false });
      expect(await next.exited).toEqual({ code: 0, signal: null });
      expect(next.events().map((e) => e.key)).toEqual([`task_completed:2:${done.final["2"]}`]);
      expect((await readLogs(team.teamDir)).map((l) => l.invocation.completedTask?.id).sort()).toEqual(["1", "2"]);
    },
  );

  it("SIGTERM with a hook that ignores SIGTERM and hangs: it is ended at its timeout, exit 0, nothing left", async () => {
    const TIMEOUT_MS = 1500;
    const team = await rig.team({ tasks: [working("1")] });
    await rig.hook(
      team,
      "on_task_completed.sh",
      `trap '' TERM\necho "start $PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/marks.txt"\nsleep 60 & wait\nsleep 60`,
    );
    const leader = await rig.leader(team, ["--timeout-ms", String(TIMEOUT_MS)]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await leader.waitFor("the hook to start", async () => (await marks(team)).includes("start 1"));
    const stopped = await leader.stop("SIGTERM");
    expect(stopped).toMatchObject({ code: 0, signal: null });
    expect(stopped.ms).toBeLessThan(TIMEOUT_MS + 1000 + 5000); // timeout, then the SIGKILL grace, then slack
    expect(leader.events()).toEqual([expect.objectContaining({ taskId: "1", outcome: "error", timedOut: true })]);
    const [log] = await readLogs(team.teamDir);
    expect(log?.result).toMatchObject({ timedOut: true });
    // (the rig fails the test if any process of the hook is still alive)
  });

  it("--once: SIGTERM stops taking events too (a cron job's time limit)", async () => {
    const team = await rig.team({ tasks: [working("1"), working("2"), working("3"), working("4")] });
    await rig.hook(team, "on_task_completed.sh", HELD_HOOK);
    // A first --once records the (empty) baseline; then four completions wait for the next run.
    const first = await rig.leader(team, ["--once"], { waitForWatching: false });
    expect(await first.exited).toMatchObject({ code: 0 });
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1", "2", "3", "4"] });

    const leader = await rig.leader(team, ["--once", "--concurrency", "1"]);
    await leader.waitFor("the first hook to start", async () => (await marks(team)).length > 0);
    const stopped = await stopThenRelease(leader, "SIGTERM");
    expect(stopped).toMatchObject({ code: 0, signal: null });
    // The running hook finishes; the three waiting events are not started.
    expect(leader.events()).toHaveLength(1);
    expect(leader.linesOf("stopped")).toEqual([{ type: "stopped", dropped: 3 }]);
    expect(stopped.ms).toBeLessThan(3000);
  });
});

describe("one leader per team dir", () => {
  it("a second leader is refused (exit 2, naming the first one's pid) while the first runs, and may start once it stopped", async () => {
    const team = await rig.team({ tasks: [working("1")] });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    const first = await rig.leader(team);
    const second = await rig.leader(team, [], { waitForWatching: false });
    expect(await second.exited).toEqual({ code: 2, signal: null });
    expect(second.stderr).toContain(`pid ${first.pid}`);
    expect(second.linesOf("watching")).toEqual([]);

    // The first one is unaffected.
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await first.waitForEvents(1);
    expect(await first.stop()).toMatchObject({ code: 0 });

    const third = await rig.leader(team);
    expect(third.linesOf("ready")[0]).toMatchObject({ queued: 0 });
    expect(await third.stop()).toMatchObject({ code: 0 });
  });
});
