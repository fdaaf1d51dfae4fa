/**
 * What the log says happened, happened: the leader (in this process, with real files, a real hook,
 * and a real second process holding the task's lock) does not report a reopen it could not write.
 * It tries the policy again, gives up loudly after its tries (the event stays open in the ledger, the
 * lead is told), and a later start finishes it exactly once.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startLeaderHere } from "../helpers/leader-here.js";
import type { Leader } from "../../extensions/teams-hooks/leader/leader.js";
import type { LeaderNotice } from "../../extensions/teams-hooks/leader/notices.js";
import { resolveTeamSetup } from "../../extensions/teams-hooks/team/setup.js";
import {
  readInboxFile,
  readLedger,
  readLogs,
  readTaskFile,
  startWorker,
  waitUntil,
  workerOp,
  type WorkerProcess,
} from "../helpers/leader-rig.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";
import { createRuntime } from "../../extensions/teams-hooks/runner/runtime.js";

const teams: TempTeam[] = [];
const leaders: Leader[] = [];
const workers: WorkerProcess[] = [];
afterEach(async () => {
  for (const worker of workers.splice(0)) {
    worker.child.kill("SIGKILL");
    await worker.result.catch(() => undefined);
  }
  for (const leader of leaders.splice(0)) await leader.stop();
  for (const team of teams.splice(0)) await team.cleanup();
});

/** A team whose gate waits for `go` in the team dir, then fails: time to take the task's lock first. */
async function gatedTeam(): Promise<TempTeam> {
  const team = await makeTempTeam({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
  teams.push(team);
  const hooks = path.join(team.teamsRoot, "_hooks");
  await mkdir(hooks, { recursive: true });
  const wait = 'while [ ! -f "$PI_TEAMS_TEAM_DIR/go" ]; do sleep 0.02; done';
  await writeFile(path.join(hooks, "on_task_completed.sh"), `${wait}\necho "lint failed: 3 problems" >&2\nexit 1\n`, {
    mode: 0o755,
  });
  return team;
}

interface Started {
  leader: Leader;
  notices: LeaderNotice[];
  warnings: () => string[];
}

async function startLeader(
  team: TempTeam,
  extra: Partial<ConstructorParameters<typeof Leader>[0]> = {},
): Promise<Started> {
  const env = { PATH: process.env.PATH ?? "" };
  const setup = await resolveTeamSetup({
    teamDir: team.teamDir,
    env,
    processCwd: team.teamsRoot,
    policyFlags: { failureAction: "reopen" },
  });
  const { leader, notices, warnings } = await startLeaderHere(setup, env, extra, leaders);
  return { leader, notices, warnings };
}

/** Completes task 1 as a worker does, takes its lock in another process, then lets the gate fail. */
async function completeWhileLocked(team: TempTeam, holdMs: number): Promise<WorkerProcess> {
  await workerOp("complete", { tasksDir: team.tasksDir, ids: ["1"] });
  const holder = startWorker("hold", { file: team.taskFile("1"), holdMs });
  workers.push(holder);
  await waitUntil("the other process to hold the task's lock", async () =>
    (await readFile(`${team.taskFile("1")}.lock`, "utf8").catch(() => "")).includes("team-worker hold"),
  );
  await writeFile(path.join(team.teamDir, "go"), "");
  return holder;
}

function events(notices: LeaderNotice[]) {
  return notices.flatMap((n) => (n.kind === "event" ? [n.report] : []));
}

describe("A1: a gate-metadata write that cannot get the task lock", () => {
  it("is tried again until it works: reopened once, logged as applied, done in the ledger once", async () => {
    const team = await gatedTeam();
    const { notices, warnings } = await startLeader(team);
    // Longer than the lock protocol's 10 s wait: the first attempt gives up on the lock.
    await completeWhileLocked(team, 11_000);
    await waitUntil("the event", () => events(notices).length === 1, { timeoutMs: 40_000 });

    expect(warnings().filter((w) => w.includes("policy not applied"))[0]).toMatch(
      /gate metadata not written: Timeout after 10000 ms acquiring lock .*1\.json\.lock: held by pid \d+ \(team-worker hold\).*; trying again in 1\.0s \(1 of 6\)/,
    );
    const [event] = events(notices);
    expect(event).toMatchObject({
      outcome: "failed",
      actions: ["reopened (1/3)", "reassigned to alice", "nudge alice"],
      policyApplied: true,
    });
    expect((await readTaskFile(team, "1")).status).toBe("pending");
    const [log] = await readLogs(team.teamDir);
    expect(log?.policy).toMatchObject({
      actions: ["reopened (1/3)", "reassigned to alice", "nudge alice"],
      errors: [],
    });
    expect(log?.policy).not.toHaveProperty("complete");
    expect((await readLedger(team.teamDir)).filter((r) => r.op === "done")).toHaveLength(1);
  }, 60_000);

  it("past its tries is held where the lead looks and tried again until written: never dropped, never accepted", async () => {
    const team = await gatedTeam();
    const first = await startLeader(team, {
      runtime: createRuntime({ lockTimeoutMs: 300, retryPolicyMs: [100, 100] }),
    });
    const holder = await completeWhileLocked(team, 60_000);
    await waitUntil(
      "the policy given up on, said",
      () => first.warnings().some((w) => w.includes("policy NOT applied after 3 tries")),
      { timeoutMs: 20_000 },
    );
    expect(first.warnings().filter((w) => w.includes("policy not applied"))).toHaveLength(2);
    expect(first.warnings()).toContainEqual(
      expect.stringMatching(
        /^task_completed:1:.*: policy NOT applied after 3 tries \(gate metadata not written: Timeout after 300 ms.*held: the leader keeps trying it/,
      ),
    );
    // Nothing reported as done, nothing of the policy on the task, and the event held where the lead looks.
    expect(events(first.notices)).toEqual([]);
    expect((await readTaskFile(team, "1")).status).toBe("completed");
    const holds = JSON.parse(await readFile(path.join(team.teamDir, "hook-state", "holds.json"), "utf8")) as {
      holds: Array<{ key: string; cause: string; reason: string }>;
    };
    expect(holds.holds).toEqual([
      expect.objectContaining({ cause: "fault", reason: expect.stringContaining("its policy cannot be written") }),
    ]);
    const key = holds.holds[0]?.key ?? "";
    expect((await readLedger(team.teamDir)).filter((r) => r.key === key).map((r) => r.op)).not.toContain("done");
    const lead = await readInboxFile(team, "team", team.leadName);
    expect(lead.map((m) => m.text)).toEqual([
      expect.stringContaining(`could not apply the quality-gate policy of task_completed #1 (${key})`),
    ]);

    // The lock goes (its holder killed: a stale lock, taken over): the next try writes it, once.
    holder.child.kill("SIGKILL");
    await holder.result.catch(() => undefined);
    await waitUntil("the event, its policy applied", () => events(first.notices).length === 1, { timeoutMs: 20_000 });
    expect(events(first.notices)[0]).toMatchObject({
      key,
      actions: ["reopened (1/3)", "reassigned to alice", "nudge alice"],
      policyApplied: true,
    });
    const after = JSON.parse(await readFile(path.join(team.teamDir, "hook-state", "holds.json"), "utf8")) as {
      holds: unknown[];
    };
    expect(after.holds).toEqual([]);
    await first.leader.stop();
    const task = await readTaskFile(team, "1");
    expect([task.status, task.metadata?.reopenedByQualityGateCount, task.metadata?.qualityGateFailureCount]).toEqual([
      "pending",
      1,
      1,
    ]);
    expect((await readLedger(team.teamDir)).filter((r) => r.key === key && r.op === "done")).toHaveLength(1);
    // The reopened task handed back (task_assignment), and the nudge: each once.
    expect(await readInboxFile(team, team.taskListId, "alice")).toHaveLength(2);
  }, 60_000);
});
