/** Issue 5 in the policy: verdicts in the summary and metadata, and what a hook error counts as. */
import { describe, expect, it } from "vitest";
import type { RunResult } from "../../extensions/teams-hooks/contract/hook-run.js";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";
import { countsAsPass, decide, type DecideInput } from "../../extensions/teams-hooks/policy/decide.js";

function result(over: Partial<RunResult>): RunResult {
  return {
    ran: true,
    hookPath: "/h/on_task_completed.sh",
    command: ["bash", "/h/on_task_completed.sh"],
    outcome: "failed",
    exitCode: 1,
    signal: null,
    timedOut: false,
    durationMs: 40,
    stdout: "",
    stderr: "",
    stdoutDroppedBytes: 0,
    stderrDroppedBytes: 0,
    leftoverProcesses: 0,
    contextTruncated: false,
    runId: "r",
    contractVersion: 1,
    ...over,
  };
}

const TASK: Task = {
  id: "3",
  subject: "s",
  description: "d",
  owner: "alice",
  status: "completed",
  blocks: [],
  blockedBy: [],
  metadata: { completedAt: "2026-01-01T00:00:00.000Z" },
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
};

function input(over: Partial<DecideInput>): DecideInput {
  return {
    event: "task_completed",
    key: "task_completed:3:2026-01-01T00:00:00.000Z",
    taskId: "3",
    result: result({}),
    task: TASK,
    policy: { failureAction: "reopen", maxReopensPerTask: 3, followupOwner: "member" },
    hookName: "on_task_completed.sh",
    member: "alice",
    leadName: "lead",
    now: "2026-01-02T00:00:00.000Z",
    timeoutMs: 500,
    ...over,
  };
}

const TIMEOUT = result({ outcome: "error", errorKind: "timeout", timedOut: true, exitCode: null, signal: "SIGTERM" });

describe("countsAsPass", () => {
  it.each<[Partial<RunResult>, "closed" | "open", boolean]>([
    [{ outcome: "passed" }, "closed", true],
    [{ outcome: "failed" }, "open", false],
    [{ outcome: "error", errorKind: "timeout" }, "closed", false],
    [{ outcome: "error", errorKind: "timeout" }, "open", true],
    [{ outcome: "error", errorKind: "spawn" }, "open", true],
    [{ outcome: "error", errorKind: "invalid_verdict" }, "open", true],
    [{ outcome: "error", errorKind: "limit" }, "open", false],
  ])("%j under %s → %s", (over, mode, expected) => {
    expect(countsAsPass(result(over), mode)).toBe(expected);
  });
});

describe("decide with failure modes and verdicts", () => {
  it("a closed error fails the gate and says it was an error", () => {
    const plan = decide(input({ result: TIMEOUT, failureMode: "closed" }));
    expect(plan.passed).toBe(false);
    expect(plan.metadataPatch).toMatchObject({ qualityGateStatus: "failed", qualityGateOutcome: "error" });
    expect(plan.reopen?.kind).toBe("reopen");
  });

  it("an open error is allowed and logged: no reopen, no nudge, the summary says why", () => {
    const plan = decide(input({ result: TIMEOUT, failureMode: "open" }));
    expect(plan.passed).toBe(true);
    expect(plan.metadataPatch).toMatchObject({ qualityGateStatus: "passed", qualityGateOutcome: "error" });
    expect(plan.summary).toBe("allowed (failure mode open): timeout after 500ms");
    expect(plan).toMatchObject({ reopen: null, followup: null, nudge: null });
  });

  it("a denial puts its code, reason and message in the summary, the metadata and the nudge", () => {
    const verdict = {
      decision: "deny" as const,
      code: "lint.errors",
      reason: "3 lint errors",
      message: "src/a.ts:1 no-unused-vars\nmore",
      source: "file" as const,
    };
    const plan = decide(
      input({
        result: result({ exitCode: 0, verdict }),
        policy: { failureAction: "followup", maxReopensPerTask: 3, followupOwner: "member" },
      }),
    );
    expect(plan.summary).toBe("denied (lint.errors) • 3 lint errors • src/a.ts:1 no-unused-vars");
    expect(plan.metadataPatch).toMatchObject({
      qualityGateStatus: "failed",
      qualityGateOutcome: "failed",
      qualityGateCode: "lint.errors",
    });
    expect(plan.followup?.description).toContain("lint.errors");
    expect(plan.nudge?.text(null)).toContain("denied (lint.errors) • 3 lint errors");
  });

  it("an allowing verdict records its code", () => {
    const plan = decide(
      input({
        result: result({
          outcome: "passed",
          exitCode: 1,
          verdict: { decision: "allow", code: "ok.cached", source: "stdout" },
        }),
      }),
    );
    expect(plan.passed).toBe(true);
    expect(plan.metadataPatch).toMatchObject({ qualityGateOutcome: "passed", qualityGateCode: "ok.cached" });
  });
});
