/**
 * Held gates under SIGKILL: tasks complete a few at a time, every gate defers, a storm of `decide`
 * processes (some of them SIGKILLed too) settles the held gates with or without a leader, and the
 * leader is SIGKILLed at random moments and started again, again and again. Whatever the
 * interleaving — a kill mid-gate, between the held run's log and its deferral file, between the
 * decision and its application, a `decide` applying under the leader lock while a leader starts — at
 * the end every task's held event was decided once: one deferral file, applied, exactly two logs (the
 * held run's and the decision's), the policy applied once (one follow-up and three messages for a
 * denial, nothing for an allow), and its key closed in the ledger. Bounded: a fixed number of kills,
 * each leader living well under a second; the whole in about 20 s.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile, readdir } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { DeferralRecord } from "../../extensions/teams-hooks/deferrals/record.js";
import {
  BIN,
  type LeaderProcess,
  completeTasks,
  readAllTaskFiles,
  readInboxFile,
  readLedger,
  readLogs,
  runBin,
  useLeaderRig,
  waitUntil,
} from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const rig = useLeaderRig();
const TASKS = 12;
const KILLS = 10;
const ARGS = ["--reconcile-ms", "200"];

/** The same answer for a run whoever sends it, so that a decision sent twice is the same decision. */
const decisionOf = (runId: string): string[] =>
  (createHash("sha256").update(runId).digest()[0] ?? 0) % 2
    ? ["deny", "--code", "ci.red", "--reason", "red"]
    : ["allow"];
const between = (low: number, high: number): number => low + Math.floor(Math.random() * (high - low));
/** The storm's pace (random gaps between its blows), not a wait for anything. */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("held gates, a decide storm and SIGKILLs", () => {
  it("every held event is decided once: one policy application, two logs, its key closed", async () => {
    const team = await rig.team({
      tasks: Array.from({ length: TASKS }, (_, i) =>
        makeTask({ id: String(i + 1), owner: "alice", status: "in_progress" }),
      ),
      config: { hooks: { failureAction: "reopen_followup" } },
    });
    await rig.hook(
      team,
      "on_task_completed.sh",
      `sleep 0.0$((RANDOM % 8))\necho '{"decision":"defer","code":"ci.pending","reason":"waiting for CI"}'`,
    );
    const deferralsDir = path.join(team.teamDir, "hook-state", "deferrals");
    const deferrals = async (): Promise<DeferralRecord[]> => {
      const names = (await readdir(deferralsDir).catch(() => [])).filter((n) => n.endsWith(".json"));
      return Promise.all(
        names.map(async (n) => JSON.parse(await readFile(path.join(deferralsDir, n), "utf8")) as DeferralRecord),
      );
    };

    // The storm: up to two `decide` at a time, one in seven SIGKILLed a moment after it starts (each costs
    // a process start: two at a time still overlap one another and the leader's starts).
    let storming = true;
    const deciders = new Map<ChildProcess, string>(); // each with the run it decides
    const storm = (async () => {
      while (storming) {
        await pause(between(20, 80));
        const open = (await deferrals()).filter((d) => !d.applied);
        // One time in four any deferral not applied yet, so a decision is often sent again (the same one);
        // else one not decided yet nor being decided: a process start each costs ~0.2 s of CPU.
        const deciding = new Set(deciders.values());
        const pool = Math.random() < 0.25 ? open : open.filter((d) => !d.decision && !deciding.has(d.runId));
        const pick = pool[between(0, pool.length)];
        if (deciders.size >= 2 || !pick) continue;
        const child = spawn(
          process.execPath,
          [BIN, "decide", "--yes", "--team-dir", team.teamDir, pick.runId, ...decisionOf(pick.runId), "--by", "storm"],
          { stdio: "ignore" },
        );
        deciders.set(child, pick.runId);
        child.on("close", () => deciders.delete(child));
        if (Math.random() < 0.15) setTimeout(() => child.kill("SIGKILL"), between(20, 300));
      }
    })();

    let leader: LeaderProcess = await rig.leader(team, ARGS);
    let next = 1;
    for (let kill = 0; kill < KILLS; kill++) {
      if (next <= TASKS) {
        const ids = Array.from({ length: Math.min(between(1, 3), TASKS - next + 1) }, () => String(next++));
        await completeTasks(team, ids);
      }
      await pause(between(30, 400));
      await leader.kill();
      leader = await rig.leader(team, ARGS);
    }
    if (next <= TASKS)
      await completeTasks(
        team,
        Array.from({ length: TASKS - next + 1 }, (_, i) => String(next + i)),
      );
    storming = false;
    await storm;
    await waitUntil("the deciders to end", () => deciders.size === 0);

    // Settle what is left, with the last leader running.
    await waitUntil(
      "every task held and every deferral applied",
      async () => {
        const all = await deferrals();
        for (const d of all.filter((x) => !x.decision))
          await runBin([
            "decide",
            "--yes",
            "--team-dir",
            team.teamDir,
            d.runId,
            ...decisionOf(d.runId),
            "--by",
            "final",
          ]);
        return new Set(all.map((d) => d.taskId)).size === TASKS && all.every((d) => d.applied);
      },
      { timeoutMs: 60_000, intervalMs: 200, context: () => leader.describe() },
    );
    const lastOps = async () => new Map((await readLedger(team.teamDir)).map((r) => [r.key, r.op]));
    await waitUntil(
      "every held key closed",
      async () => [...(await lastOps())].every(([key, op]) => !key.startsWith("task_completed") || op === "done"),
      { context: () => leader.describe() },
    );
    expect(await leader.stop()).toMatchObject({ code: 0 });

    const all = await deferrals();
    const tasks = await readAllTaskFiles(team);
    const logs = await readLogs(team.teamDir);
    let denied = 0;
    for (let n = 1; n <= TASKS; n++) {
      const id = String(n);
      const mine = all.filter((d) => d.taskId === id);
      expect(mine, `task ${id}: one deferral`).toHaveLength(1);
      const [held] = mine;
      const decision = held?.decision?.decision;
      expect(held?.applied, `task ${id}: applied`).toBeDefined();
      expect(
        logs
          .filter((l) => l.key === held?.key)
          .map((l) => l.result.outcome)
          .sort(),
        `task ${id}: two logs`,
      ).toEqual(decision === "allow" ? ["deferred", "passed"] : ["deferred", "failed"]);
      const followups = [...tasks.values()].filter((t) => t.metadata?.qualityGateFollowupFor === held?.key);
      expect(followups, `task ${id}: follow-ups`).toHaveLength(decision === "allow" ? 0 : 1);
      const metadata = tasks.get(id)?.metadata ?? {};
      expect(metadata.qualityGateDecision, `task ${id}: the decision recorded`).toBe(decision);
      if (decision === "allow") expect(metadata.qualityGateFailureCount, `task ${id}: not counted`).toBeUndefined();
      else {
        denied += 1;
        expect(metadata, `task ${id}: counted and reopened once`).toMatchObject({
          qualityGateFailureCount: 1,
          reopenedByQualityGateCount: 1,
        });
      }
    }
    // A denial tells its member three times (the follow-up's assignment, the reopened task's
    // assignment, the nudge); nothing was sent twice.
    expect(await readInboxFile(team, team.taskListId, "alice")).toHaveLength(denied * 3);
    expect([...(await lastOps())].filter(([key, op]) => key.startsWith("task_completed") && op !== "done")).toEqual([]);
  });
});
