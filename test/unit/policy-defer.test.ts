/**
 * The failure policy of a held gate, purely: what a `defer` writes to the task (deferPlan), and what a
 * later decision writes (decide with `decision`): the pass or failure as usual, plus who decided and
 * which deferral; never over a newer gate of the same task.
 */
import { describe, expect, it } from "vitest";
import { blankResult, type RunResult } from "../../extensions/teams-hooks/contract/hook-run.js";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";
import { type DecideInput, decide, deferPlan } from "../../extensions/teams-hooks/policy/decide.js";
import { actionText } from "../../extensions/teams-hooks/text/actions.js";
import type { RemediationPlan } from "../../extensions/teams-hooks/policy/plan.js";

/** The plan's actions in the words the logs show (text/actions.ts). */
const said = (plan: RemediationPlan): string[] => plan.actions.map(actionText);

const NOW = "2026-12-02T12:00:00.000Z";
const KEY = "task_completed:3:2026-12-02T11:59:00.000Z";

function result(overrides: Partial<RunResult> = {}): RunResult {
  return {
    ...blankResult({
      ran: true,
      hookPath: "/teams/_hooks/on_task_completed.sh",
      command: ["bash", "/teams/_hooks/on_task_completed.sh"],
      runId: "run-1",
    }),
    outcome: "deferred",
    exitCode: 0,
    durationMs: 40,
    hookSha256: "abc",
    verdict: { decision: "defer", reason: "waiting for CI", code: "ci.pending", source: "stdout" },
    ...overrides,
  };
}

function task(metadata: Record<string, unknown> = {}): Task {
  return {
    id: "3",
    subject: "Add login form",
    description: "Build it",
    owner: "alice",
    status: "completed",
    blocks: [],
    blockedBy: [],
    metadata: { completedAt: "2026-12-02T11:59:00.000Z", ...metadata },
    createdAt: "2026-12-02T10:00:00.000Z",
    updatedAt: "2026-12-02T11:59:00.000Z",
  };
}

const HELD = {
  qualityGateStatus: "deferred",
  qualityGateOutcome: "deferred",
  qualityGateEventKey: KEY,
  qualityGateAt: "2026-12-02T11:59:30.000Z",
  qualityGateDeferredRunId: "run-1",
  qualityGateDeferredReason: "waiting for CI",
  qualityGateDeferredUntil: "2026-12-03T11:59:30.000Z",
};

function decision(overrides: Partial<DecideInput> = {}): DecideInput {
  return {
    event: "task_completed",
    key: KEY,
    taskId: "3",
    result: result({
      outcome: "failed",
      verdict: { decision: "deny", code: "ci.failed", reason: "2 tests fail", source: "decision" },
    }),
    task: task(HELD),
    policy: { failureAction: "reopen_followup", followupOwner: "member", maxReopensPerTask: 3 },
    hookName: "on_task_completed",
    member: "alice",
    leadName: "team-lead",
    now: NOW,
    timeoutMs: 60_000,
    decision: { deferredRunId: "run-1", deferredReason: "waiting for CI", decision: "deny", by: "ci", at: NOW },
    ...overrides,
  };
}

describe("deferPlan: a held gate", () => {
  it("marks the task deferred with the reason, the run id and the deadline, and nothing else", () => {
    const plan = deferPlan({
      event: "task_completed",
      key: KEY,
      taskId: "3",
      result: result(),
      task: task(),
      hookName: "on_task_completed",
      now: NOW,
      deferredRunId: "run-1",
      expiresAt: "2026-12-03T12:00:00.000Z",
    });
    expect(plan).toMatchObject({
      passed: false,
      summary: "deferred (ci.pending): waiting for CI",
      reopen: null,
      followup: null,
      nudge: null,
      actions: [{ kind: "deferred", until: "2026-12-03T12:00:00.000Z" }],
    });
    expect(plan.metadataPatch).toMatchObject({
      qualityGateStatus: "deferred",
      qualityGateOutcome: "deferred",
      qualityGateCode: "ci.pending",
      qualityGateHook: "on_task_completed",
      qualityGateAt: NOW,
      qualityGateSummary: "deferred (ci.pending): waiting for CI",
      qualityGateEventKey: KEY,
      qualityGateHookSha256: "abc",
      qualityGateDeferredRunId: "run-1",
      qualityGateDeferredReason: "waiting for CI",
      qualityGateDeferredUntil: "2026-12-03T12:00:00.000Z",
    });
    // No counter moves while the gate is held.
    expect(plan.metadataPatch).not.toHaveProperty("qualityGateFailureCount");
    expect(plan.metadataPatch).not.toHaveProperty("qualityGateLastSuccessAt");
  });

  it("without a reason the summary is just `deferred`; without a task file nothing is written", () => {
    const plan = deferPlan({
      event: "task_failed",
      key: "task_failed:3:x",
      taskId: "3",
      result: result({ verdict: { decision: "defer", source: "file" } }),
      task: null,
      hookName: "on_task_failed",
      now: NOW,
      deferredRunId: "r",
      expiresAt: NOW,
    });
    expect(plan.summary).toBe("deferred");
    expect(plan.metadataPatch).toBeNull();
  });
});

describe("decide with a decision", () => {
  it("a denial counts, reopens and follows up as any failure, and the task says who decided which deferral", () => {
    const plan = decide(decision());
    expect(plan.passed).toBe(false);
    expect(plan.summary).toBe("denied (ci.failed) • 2 tests fail");
    expect(plan.reopen).toMatchObject({ kind: "reopen", count: 1 });
    expect(said(plan)).toEqual(["reopened (1/3)", "reassigned to alice", "follow-up for alice", "nudge alice"]);
    expect(plan.metadataPatch).toMatchObject({
      qualityGateStatus: "failed",
      qualityGateFailureCount: 1,
      qualityGateDeferredRunId: "run-1",
      qualityGateDeferredReason: "waiting for CI",
      qualityGateDecision: "deny",
      qualityGateDecidedBy: "ci",
      qualityGateDecidedAt: NOW,
    });
    // The deadline goes: the gate is no longer held (undefined is dropped when the task is written).
    expect(plan.metadataPatch?.qualityGateDeferredUntil).toBeUndefined();
  });

  it("an allow passes", () => {
    const plan = decide(
      decision({
        result: result({ outcome: "passed", verdict: { decision: "allow", source: "decision" } }),
        decision: { deferredRunId: "run-1", decision: "allow", by: "ada", at: NOW },
      }),
    );
    expect(plan).toMatchObject({ passed: true, actions: [{ kind: "none" }], nudge: null });
    expect(plan.metadataPatch).toMatchObject({
      qualityGateStatus: "passed",
      qualityGateDecision: "allow",
      qualityGateDecidedBy: "ada",
      qualityGateSummary: "allowed by ada",
    });
    const said = decide(
      decision({
        result: result({
          outcome: "passed",
          verdict: { decision: "allow", reason: "pipeline 8812 green", source: "decision" },
        }),
        decision: { deferredRunId: "run-1", decision: "allow", by: "api:ci", at: NOW },
      }),
    );
    expect(said.summary).toBe("allowed by api:ci: pipeline 8812 green");
  });

  it("an expiry is a closed error (defer_expired) even where hook errors are open", () => {
    const expired = result({
      outcome: "error",
      exitCode: null,
      errorKind: "defer_expired",
      error: "no decision within 1000ms (hooks.deferTimeoutMs)",
      verdict: undefined,
    });
    const plan = decide(
      decision({
        result: expired,
        failureMode: "open",
        decision: { deferredRunId: "run-1", decision: "expired", by: "pi-teams-hooks", at: NOW },
      }),
    );
    expect(plan.passed).toBe(false);
    expect(plan.summary).toBe("no decision within 1000ms (hooks.deferTimeoutMs)");
    expect(plan.metadataPatch).toMatchObject({
      qualityGateStatus: "failed",
      qualityGateOutcome: "error",
      qualityGateDecision: "expired",
    });
  });

  it("applied again (a crash before the log), a denial is not counted or reopened twice", () => {
    const after = task({
      ...HELD,
      qualityGateStatus: "failed",
      qualityGateFailureCount: 1,
      reopenedByQualityGateKey: KEY,
      reopenedByQualityGateCount: 1,
    });
    const plan = decide(decision({ task: { ...after, status: "pending" } }));
    expect(plan.alreadyApplied).toBe(true);
    expect(plan.reopen).toBeNull();
    expect(plan.metadataPatch?.qualityGateFailureCount).toBe(1);
  });

  it("a decision that comes after a newer gate of the task leaves that gate's record and work alone", () => {
    const newer = task({
      qualityGateStatus: "passed",
      qualityGateEventKey: "task_completed:3:2026-12-02T13:00:00.000Z",
      completedAt: "2026-12-02T13:00:00.000Z",
    });
    const plan = decide(decision({ task: newer }));
    expect(plan.metadataPatch).toBeNull();
    expect(plan.reopen).toBeNull();
    expect(said(plan)).toEqual(["task metadata left (a newer gate is recorded)", "follow-up for alice", "nudge alice"]);
    const allowed = decide(
      decision({
        task: newer,
        result: result({ outcome: "passed", verdict: { decision: "allow", source: "decision" } }),
      }),
    );
    expect(allowed).toMatchObject({ metadataPatch: null, actions: [{ kind: "overtaken" }] });
  });

  it("a decision on a hold that a newer hold of the same event replaced leaves the newer one alone", () => {
    const plan = decide(decision({ task: task({ ...HELD, qualityGateDeferredRunId: "run-2" }) }));
    expect(plan.metadataPatch).toBeNull();
    expect(said(plan)[0]).toBe("task metadata left (a newer gate is recorded)");
  });

  it("a gate that was not deferred clears what an earlier deferral left", () => {
    const plan = decide({
      ...decision({ result: result({ outcome: "passed", verdict: undefined }) }),
      decision: undefined,
    });
    expect(plan.metadataPatch).toMatchObject({ qualityGateStatus: "passed" });
    for (const field of [
      "qualityGateDeferredRunId",
      "qualityGateDeferredReason",
      "qualityGateDeferredUntil",
      "qualityGateDecision",
      "qualityGateDecidedBy",
      "qualityGateDecidedAt",
    ]) {
      expect(plan.metadataPatch).toHaveProperty(field, undefined);
    }
  });
});
