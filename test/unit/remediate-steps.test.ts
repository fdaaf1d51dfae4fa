/**
 * The failure policy's steps (event/remediate.ts), driven by a gate the test controls (its verdict is
 * the test's), a clock the test moves, and the leader's memory of the tree's budget, on a real team dir
 * in a temp folder: each step says what it did as a typed action, stops the rest when it fails, and
 * does nothing twice when the remediation is tried again.
 */
import fs from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { blankResult, type RunResult } from "../../extensions/teams-hooks/contract/hook-run.js";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";
import { taskEvent } from "../../extensions/teams-hooks/contract/events.js";
import { decide } from "../../extensions/teams-hooks/policy/decide.js";
import type { EffectivePolicy } from "../../extensions/teams-hooks/settings/options.js";
import { type GateMemory, remediate } from "../../extensions/teams-hooks/event/remediate.js";
import { readInbox } from "../../extensions/teams-hooks/team/mailbox.js";
import { SentLog } from "../../extensions/teams-hooks/team/sent-log.js";
import { readTask } from "../../extensions/teams-hooks/team/tasks.js";
import { actionsText } from "../../extensions/teams-hooks/text/actions.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

let team: TempTeam | undefined;
afterEach(async () => {
  await team?.cleanup();
  team = undefined;
});

/** The clock the test moves: every write of the policy is stamped with its time. */
class Clock {
  #ms = Date.parse("2026-12-07T08:00:00.000Z");
  now(): string {
    return new Date(this.#ms).toISOString();
  }
  tick(ms = 60_000): void {
    this.#ms += ms;
  }
}

/** The gate the test controls: what it answers for the next completion. */
function gate(verdict: "allow" | "deny"): RunResult {
  const base = blankResult({ ran: true, hookPath: "/hooks/on_task_completed", command: ["x"], runId: "run" });
  return verdict === "allow"
    ? { ...base, exitCode: 0, verdict: { decision: "allow", source: "stdout" } }
    : {
        ...base,
        outcome: "failed",
        exitCode: 0,
        verdict: { decision: "deny", reason: "tests fail", source: "stdout" },
      };
}

/** The leader's memory of the tree's budget (leader/handle.ts ledgerMemory keeps it in the ledger). */
function memory(): GateMemory & { spentKeys: Map<string, string[]> } {
  const spentKeys = new Map<string, string[]>();
  const roots = new Map<string, string>();
  return {
    spentKeys,
    round: () => 0,
    root: (id) => roots.get(id),
    spent: (id) => spentKeys.get(id)?.length ?? 0,
    spentBy: (id, key) => spentKeys.get(id)?.includes(key) ?? false,
    spend: (id, key) => spentKeys.set(id, [...(spentKeys.get(id) ?? []), key]),
    adopt: (id, root) => roots.set(id, root),
  };
}

const POLICY: EffectivePolicy = { failureAction: "reopen_followup", followupOwner: "member", maxReopensPerTask: 3 };

async function readBack(id: string): Promise<Task> {
  const read = await readTask(team?.taskFile(id) ?? "");
  if (!read.ok) throw new Error(read.problem.message);
  return read.value;
}

/** One gate's verdict on the task's current completion, its policy applied at the clock's time. */
async function judge(
  clock: Clock,
  verdict: "allow" | "deny",
  opts: { memory?: GateMemory; policy?: EffectivePolicy; taskId?: string } = {},
) {
  const t = team as TempTeam;
  const taskId = opts.taskId ?? "1";
  const key = taskEvent(await readBack(taskId))?.key ?? "";
  const policy = opts.policy ?? POLICY;
  const now = clock.now();
  return remediate(
    {
      teamDir: t.teamDir,
      taskListId: t.taskListId,
      taskId,
      key,
      leadName: t.leadName,
      now,
      sent: new SentLog(t.teamDir),
      maxBudget: policy.maxReopensPerTask,
      ...(opts.memory ? { memory: opts.memory } : {}),
    },
    (task, tree) =>
      decide({
        event: "task_completed",
        key,
        taskId,
        result: gate(verdict),
        task,
        policy,
        hookName: "on_task_completed",
        member: "alice",
        leadName: t.leadName,
        now,
        timeoutMs: 60_000,
        budget: tree.budget,
      }),
  );
}

/** The worker completes the task again, at the clock's time. */
async function completeAgain(clock: Clock, id = "1"): Promise<void> {
  const task = await readBack(id);
  const now = clock.now();
  const next = { ...task, status: "completed", updatedAt: now, metadata: { ...task.metadata, completedAt: now } };
  fs.writeFileSync(team?.taskFile(id) ?? "", JSON.stringify(next, null, 2));
}

async function messages(namespace: string, member: string): Promise<string[]> {
  const inbox = await readInbox(team?.teamDir ?? "", namespace, member);
  if (!inbox.ok) return [];
  return inbox.messages.map((m) => String(m.message.qualityGateMessage ?? ""));
}

async function freshTeam(): Promise<TempTeam> {
  const clockStart = "2026-12-07T07:59:00.000Z";
  team = await makeTempTeam({
    teamId: "steps",
    tasks: [makeTask({ id: "1", owner: "alice", status: "completed", metadata: { completedAt: clockStart } })],
  });
  return team;
}

describe("remediate: the policy's steps, each said as a typed action", () => {
  it("a denial: reopened, handed back, a follow-up made, the owner nudged; the same event again repeats nothing", async () => {
    const t = await freshTeam();
    const clock = new Clock();
    const done = await judge(clock, "deny");
    expect(done.complete).toBe(true);
    expect(done.actions).toEqual([
      { kind: "reopened", count: 1, max: 3, earlier: false },
      { kind: "reassigned", to: "alice", sent: "now" },
      { kind: "followup", owner: "alice", taskId: "2", existing: false },
      { kind: "nudge", to: "alice", sent: "now" },
    ]);
    // The words the log's policy.actions and the leader's line have always had.
    expect(actionsText(done.actions)).toEqual([
      "reopened (1/3)",
      "reassigned to alice",
      "follow-up #2 for alice",
      "nudge alice",
    ]);
    expect(done.followupTaskId).toBe("2");
    expect((await readBack("1")).status).toBe("pending");
    expect((await readBack("1")).metadata?.qualityGateAt).toBe(clock.now());

    // The same event again (a leader that died after the steps and runs it again), a minute later.
    clock.tick();
    const retry = await remediateSameKey(clock, done.plan.metadataPatch?.qualityGateEventKey ?? "");
    expect(retry.complete).toBe(true);
    expect(actionsText(retry.actions)).toEqual([
      "already applied",
      "was reopened (1/3)",
      "reassigned to alice (sent before)",
      "follow-up #2 (existing) for alice",
      "nudge alice (sent before)",
    ]);
    expect(fs.existsSync(t.taskFile("3"))).toBe(false);
    expect((await readBack("1")).metadata?.reopenedByQualityGateCount).toBe(1);
    expect((await messages(t.taskListId, "alice")).sort()).toEqual(["assignment-2", "nudge", "reassign-1"]);
  });

  it("a step that fails stops the rest; tried again, the remediation finishes and does nothing twice", async () => {
    const t = await freshTeam();
    const clock = new Clock();
    // Alice's inbox cannot be written (a folder where its file goes): the first message step fails.
    const inbox = t.inboxFile(t.taskListId, "alice");
    fs.mkdirSync(inbox, { recursive: true });
    const key = taskEvent(await readBack("1"))?.key ?? "";
    const stopped = await judge(clock, "deny");
    expect(stopped.complete).toBe(false);
    expect(stopped.errors).toHaveLength(1);
    expect(stopped.errors[0]).toContain("alice");
    // The task write is done and said; nothing after the step that failed was tried (no follow-up made).
    expect(actionsText(stopped.actions)).toEqual(["reopened (1/3)"]);
    expect(fs.existsSync(t.taskFile("2"))).toBe(false);

    fs.rmSync(inbox, { recursive: true });
    clock.tick();
    const finished = await remediateSameKey(clock, key);
    expect(finished.complete).toBe(true);
    expect(actionsText(finished.actions)).toEqual([
      "already applied",
      "was reopened (1/3)",
      "reassigned to alice",
      "follow-up #2 for alice",
      "nudge alice",
    ]);
    expect((await readBack("1")).metadata?.reopenedByQualityGateCount).toBe(1);
    expect(fs.existsSync(t.taskFile("3"))).toBe(false);
  });

  it("rounds of denials spend the tree's budget in the leader's memory; once spent the lead is told once", async () => {
    const t = await freshTeam();
    const clock = new Clock();
    const mem = memory();
    const policy: EffectivePolicy = { failureAction: "reopen", followupOwner: "member", maxReopensPerTask: 2 };
    const words: string[][] = [];
    for (let round = 0; round < 4; round += 1) {
      const done = await judge(clock, "deny", { memory: mem, policy });
      expect(done.complete).toBe(true);
      words.push(actionsText(done.actions));
      clock.tick();
      await completeAgain(clock);
      clock.tick();
    }
    expect(words).toEqual([
      ["reopened (1/2)", "reassigned to alice", "nudge alice"],
      ["reopened (2/2)", "reassigned to alice", "nudge alice"],
      ["reopen suppressed (2/2)", "lead told the budget of task #1 is spent", "nudge alice"],
      // Escalated before and spent still: judged, the lead's note not again, the worker told nothing more.
      ["reopen suppressed (2/2)", "lead told the budget of task #1 is spent (before)"],
    ]);
    expect(mem.spentKeys.get("1")).toHaveLength(2);
    expect(await messages("team", t.leadName)).toEqual(["budget-spent"]);
    // A worker emptying the root's record of its budget changes nothing: the leader's memory counts.
    const task = await readBack("1");
    fs.writeFileSync(
      t.taskFile("1"),
      JSON.stringify({
        ...task,
        metadata: { ...task.metadata, qualityGateBudgetKeys: [], reopenedByQualityGateCount: 0 },
      }),
    );
    const after = await judge(clock, "deny", { memory: mem, policy });
    expect(actionsText(after.actions)[0]).toBe("reopen suppressed (2/2)");
  });

  it("a pass after a reopen: passed, the gate's note taken out of the description, nothing sent", async () => {
    const t = await freshTeam();
    const clock = new Clock();
    await judge(clock, "deny");
    expect((await readBack("1")).description).not.toBe("Build it");
    clock.tick();
    await completeAgain(clock);
    const passed = await judge(clock, "allow");
    expect(passed.actions).toEqual([{ kind: "none" }]);
    expect(passed.plan.gate).toEqual({ to: "passed" });
    const task = await readBack("1");
    expect(task.metadata?.qualityGateStatus).toBe("passed");
    expect(task.metadata?.qualityGateLastSuccessAt).toBe(clock.now());
    expect(task.description).toBe(makeTask({ id: "1" }).description);
    expect((await messages(t.taskListId, "alice")).filter((m) => m === "nudge")).toHaveLength(1);
  });
});

/** The remediation of one event key again (a retry), whatever the task's current event is now. */
async function remediateSameKey(clock: Clock, key: string) {
  const t = team as TempTeam;
  const now = clock.now();
  return remediate(
    {
      teamDir: t.teamDir,
      taskListId: t.taskListId,
      taskId: "1",
      key,
      leadName: t.leadName,
      now,
      sent: new SentLog(t.teamDir),
      maxBudget: POLICY.maxReopensPerTask,
    },
    (task, tree) =>
      decide({
        event: "task_completed",
        key,
        taskId: "1",
        result: gate("deny"),
        task,
        policy: POLICY,
        hookName: "on_task_completed",
        member: "alice",
        leadName: t.leadName,
        now,
        timeoutMs: 60_000,
        budget: tree.budget,
      }),
  );
}
