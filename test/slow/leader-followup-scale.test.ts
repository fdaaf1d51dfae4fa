/**
 * A failing gate under a follow-up policy must not get slower as the task list grows: creating the
 * follow-up holds `.highwatermark.lock`, which every worker that creates a task waits for. Measured
 * here as the time from a completion's write to its event line, at 100 tasks and at 10,000 tasks,
 * with both leaders running and the completions taken in turns (so that the machine's load, which
 * comes and goes, falls on both sizes alike). The test writes each completion itself, with the
 * plain-JS team protocol a worker uses: a worker process started per completion would add its own
 * start, the noisiest part of the time, to both.
 */
import { writeFileSync } from "node:fs";
import { readFile, readdir } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";
import type { TempTeam } from "../helpers/temp-team.js";
import { type LeaderProcess, completeTasks, taskJson, useLeaderRig } from "../helpers/leader-rig.js";

const rig = useLeaderRig();

const EVENTS = 6;

interface List {
  team: TempTeam;
  size: number;
  leader: LeaderProcess;
  times: number[];
}

/**
 * Tasks 1..size, in progress. Written synchronously, a few hundred between turns of the event loop:
 * an awaited writeFile per file costs several times the CPU at 10,000 files (a thread-pool hand-off
 * for each open, write and close).
 */
async function writeTasks(team: TempTeam, size: number): Promise<void> {
  for (let n = 1; n <= size; n++) {
    const id = String(n);
    writeFileSync(team.taskFile(id), taskJson({ id, owner: "alice", status: "in_progress" }));
    if (n % 500 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
}

async function startList(size: number): Promise<List> {
  const team = await rig.team();
  await writeTasks(team, size);
  await rig.hook(team, "on_task_completed.sh", `echo "tests failed" >&2\nexit 1`);
  const leader = await rig.leader(team, ["--failure-action", "followup"], { startTimeoutMs: 60_000 });
  return { team, size, leader, times: [] };
}

/** The tasks the leader created: the files past those written at the start (10,000 reads would cost a second). */
async function createdTasks(list: List): Promise<Task[]> {
  const names = (await readdir(list.team.tasksDir)).filter((name) => {
    const match = /^(\d+)\.json$/.exec(name);
    return match !== null && Number(match[1]) > list.size;
  });
  return Promise.all(
    names.map(async (name) => JSON.parse(await readFile(path.join(list.team.tasksDir, name), "utf8")) as Task),
  );
}

const median = (times: number[]): number => [...times].sort((a, b) => a - b)[times.length >> 1] ?? Number.NaN;

describe("follow-up creation at scale", () => {
  it("a failing gate with a follow-up takes about as long in a list of 10,000 tasks as in one of 100", async () => {
    const lists = [await startList(100), await startList(10_000)];
    for (let n = 1; n <= EVENTS; n++) {
      for (const list of lists) {
        const began = performance.now();
        await completeTasks(list.team, [String(n)]);
        await list.leader.waitForEvents(n, () => true, 30_000);
        list.times.push(performance.now() - began);
      }
    }
    for (const list of lists) {
      expect(await list.leader.stop()).toMatchObject({ code: 0 });
      const followups = (await createdTasks(list)).filter(
        (t) => typeof t.metadata?.qualityGateFollowupFor === "string",
      );
      expect(followups).toHaveLength(EVENTS);
    }
    const [small = Number.NaN, large = Number.NaN] = lists.map((list) => median(list.times));
    // Generous: reading every task for each follow-up (seconds at 10,000 tasks) does not fit.
    expect(large).toBeLessThan(small * 2 + 500);
  }, 180_000);
});
