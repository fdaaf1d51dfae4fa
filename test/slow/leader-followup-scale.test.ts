/**
 * A failing gate under a follow-up policy must not get slower as the task list grows: creating the
 * follow-up holds `.highwatermark.lock`, which every worker that creates a task waits for. Measured
 * here as the time from a completion's write to its event line, at 100 tasks and at 10,000 tasks, in
 * the same run (so that the machine's load cancels out).
 */
import { describe, expect, it } from "vitest";
import type { TempTeam } from "../helpers/temp-team.js";
import { readAllTaskFiles, seedTasks, useLeaderRig } from "../helpers/leader-rig.js";

const rig = useLeaderRig();

const EVENTS = 6;

async function medianEventMs(team: TempTeam, size: number): Promise<number> {
  await seedTasks(team, 1, size, () => ({ status: "in_progress" }));
  await rig.hook(team, "on_task_completed.sh", `echo "tests failed" >&2\nexit 1`);
  const leader = await rig.leader(team, ["--failure-action", "followup"], { startTimeoutMs: 60_000 });
  const times: number[] = [];
  for (let n = 1; n <= EVENTS; n++) {
    const began = performance.now();
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: [String(n)] });
    await leader.waitForEvents(n, () => true, 30_000);
    times.push(performance.now() - began);
  }
  expect(await leader.stop()).toMatchObject({ code: 0 });
  const followups = [...(await readAllTaskFiles(team)).values()].filter(
    (t) => typeof t.metadata?.qualityGateFollowupFor === "string",
  );
  expect(followups).toHaveLength(EVENTS);
  return times.sort((a, b) => a - b)[EVENTS >> 1] ?? Number.NaN;
}

describe("follow-up creation at scale", () => {
  it("a failing gate with a follow-up takes about as long in a list of 10,000 tasks as in one of 100", async () => {
    const small = await medianEventMs(await rig.team(), 100);
    const large = await medianEventMs(await rig.team(), 10_000);
    // Generous: the gate's run per event dominates both; reading every task for each follow-up
    // (seconds at 10,000 tasks) does not fit.
    expect(large).toBeLessThan(small * 2 + 500);
  }, 180_000);
});
