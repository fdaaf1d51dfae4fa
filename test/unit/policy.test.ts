import { describe, expect, it } from "vitest";
import { gateName, type ChainHook } from "../../extensions/teams-hooks/gates/chain.js";
import type { FailureAction, FollowupOwner, Task } from "../../extensions/teams-hooks/contract/team-files.js";
import type { HookEventName } from "../../extensions/teams-hooks/contract/contract.js";
import type { RunResult } from "../../extensions/teams-hooks/contract/hook-run.js";
import type { EffectivePolicy } from "../../extensions/teams-hooks/settings/options.js";
import { decide } from "../../extensions/teams-hooks/policy/decide.js";
import { describeFailure } from "../../extensions/teams-hooks/text/messages.js";
import {
  QUOTED_OUTPUT_BEGIN,
  QUOTED_OUTPUT_END,
  QUOTED_OUTPUT_LEFT_OUT,
  workDescription,
} from "../../extensions/teams-hooks/contract/contract.js";
import type { DecideInput } from "../../extensions/teams-hooks/policy/decide.js";
import type { RemediationPlan } from "../../extensions/teams-hooks/policy/plan.js";
import { actionText } from "../../extensions/teams-hooks/text/actions.js";

/** The plan's actions in the words the logs show (text/actions.ts). */
const said = (plan: RemediationPlan): string[] => plan.actions.map(actionText);

const NOW = "2025-03-01T12:00:00.000Z";
const KEY = "task_completed:3:2025-03-01T11:59:00.000Z";

function runResult(overrides: Partial<RunResult> = {}): RunResult {
  return {
    ran: true,
    hookPath: "/teams/_hooks/on_task_completed.sh",
    command: ["bash", "/teams/_hooks/on_task_completed.sh"],
    outcome: "failed",
    exitCode: 1,
    signal: null,
    timedOut: false,
    durationMs: 420,
    stdout: "running tests\n",
    stderr: "npm ERR! Test failed\nat line 2\n",
    stdoutDroppedBytes: 0,
    stderrDroppedBytes: 0,
    leftoverProcesses: 0,
    contextTruncated: false,
    runId: "run-1",
    contractVersion: 1,
    ...overrides,
  };
}

const PASSED = runResult({ outcome: "passed", exitCode: 0, stderr: "", durationMs: 1234.4 });

function task(overrides: Partial<Task> = {}, metadata: Record<string, unknown> = {}): Task {
  return {
    id: "3",
    subject: "Add login form",
    description: "Build it",
    owner: "alice",
    status: "completed",
    blocks: [],
    blockedBy: [],
    metadata: { completedAt: "2025-03-01T11:59:00.000Z", ...metadata },
    createdAt: "2025-03-01T10:00:00.000Z",
    updatedAt: "2025-03-01T11:59:00.000Z",
    ...overrides,
  };
}

function policy(
  failureAction: FailureAction,
  followupOwner: FollowupOwner = "member",
  maxReopensPerTask = 3,
): EffectivePolicy {
  return { failureAction, followupOwner, maxReopensPerTask };
}

function input(overrides: Partial<DecideInput> = {}): DecideInput {
  return {
    event: "task_completed",
    key: KEY,
    taskId: "3",
    result: runResult(),
    task: task(),
    policy: policy("reopen_followup"),
    hookName: "on_task_completed",
    member: "alice",
    leadName: "team-lead",
    now: NOW,
    timeoutMs: 60_000,
    ...overrides,
  };
}

describe("describeFailure (the summary)", () => {
  it.each<[string, Partial<RunResult>, number, string]>([
    ["exit code and first stderr line", {}, 60_000, "exit code 1 • npm ERR! Test failed"],
    [
      "skips blank lines and trims",
      { stderr: "\n  \r\n   FAIL src/a.test.ts  \nnext" },
      60_000,
      "exit code 1 • FAIL src/a.test.ts",
    ],
    ["no stderr", { stderr: "" }, 60_000, "exit code 1"],
    ["colour codes removed", { stderr: "\u001b[31mError:\u001b[39m boom\n" }, 60_000, "exit code 1 • Error: boom"],
    [
      "timeout (our SIGTERM is not reported)",
      { outcome: "error", exitCode: null, signal: "SIGTERM", timedOut: true, stderr: "" },
      500,
      "timeout after 500ms",
    ],
    [
      "timeout with stderr",
      { outcome: "error", exitCode: null, signal: "SIGKILL", timedOut: true, stderr: "waiting…\n" },
      1500,
      "timeout after 1500ms • waiting…",
    ],
    [
      "killed by a signal",
      { outcome: "error", exitCode: null, signal: "SIGKILL", stderr: "" },
      60_000,
      "killed by SIGKILL",
    ],
    [
      "spawn error",
      { outcome: "error", exitCode: null, error: "spawn bash ENOENT", errorCode: "ENOENT", stderr: "" },
      60_000,
      "spawn bash ENOENT",
    ],
    [
      "spawn error, first line only",
      { outcome: "error", exitCode: null, error: "spawn E2BIG\n  at x", stderr: "" },
      60_000,
      "spawn E2BIG",
    ],
    [
      "exit 127 from bash",
      { exitCode: 127, stderr: "bash: /x/hook: No such file or directory\n" },
      60_000,
      "exit code 127 • bash: /x/hook: No such file or directory",
    ],
    ["nothing known", { outcome: "error", exitCode: null, stderr: "" }, 60_000, "failed"],
  ])("%s", (_name, overrides, timeoutMs, expected) => {
    expect(describeFailure(runResult(overrides), timeoutMs)).toBe(expected);
  });

  it.each([
    [179, false],
    [180, false],
    [181, true],
    [5_000, true],
  ])("a stderr line of %i characters is cut to 180 with … (%s)", (length, cut) => {
    const line = "x".repeat(length);
    const summary = describeFailure(runResult({ stderr: `${line}\nsecond` }), 60_000);
    const shown = summary.replace("exit code 1 • ", "");
    expect(shown.length).toBe(Math.min(length, 180));
    expect(shown.endsWith("…")).toBe(cut);
  });
});

describe("decide: pass or fail", () => {
  it.each<[RunResult["outcome"], boolean]>([
    ["passed", true],
    ["failed", false],
    ["error", false],
  ])("outcome %s → passed %s", (outcome, passed) => {
    const plan = decide(input({ result: runResult(outcome === "passed" ? { outcome, exitCode: 0 } : { outcome }) }));
    expect(plan.passed).toBe(passed);
    expect(plan.metadataPatch?.qualityGateStatus).toBe(passed ? "passed" : "failed");
  });

  it("a pass records the gate and plans nothing else", () => {
    const plan = decide(
      input({ result: PASSED, task: task({}, { qualityGateFailureCount: 2, qualityGateReopenSuppressed: true }) }),
    );
    expect(plan.summary).toBe("passed in 1234ms");
    expect(plan.metadataPatch).toEqual({
      qualityGateOutcome: "passed",
      qualityGateHook: "on_task_completed",
      qualityGateAt: NOW,
      qualityGateStatus: "passed",
      qualityGateSummary: "passed in 1234ms",
      qualityGateEventKey: KEY,
      qualityGateLastSuccessAt: NOW,
      qualityGateReopenSuppressed: false,
    });
    expect(plan).toMatchObject({ reopen: null, followup: null, nudge: null, actions: [{ kind: "none" }] });
  });

  it("a failure records the gate, counts it, and keeps the summary", () => {
    const plan = decide(input({ policy: policy("warn"), task: task({}, { qualityGateFailureCount: 2 }) }));
    expect(plan.summary).toBe("exit code 1 • npm ERR! Test failed");
    expect(plan.metadataPatch).toEqual({
      qualityGateOutcome: "failed",
      qualityGateHook: "on_task_completed",
      qualityGateAt: NOW,
      qualityGateStatus: "failed",
      qualityGateSummary: "exit code 1 • npm ERR! Test failed",
      qualityGateEventKey: KEY,
      qualityGateFailureCount: 3,
      qualityGateLastFailureAt: NOW,
    });
  });

  it.each<[unknown, number]>([
    [undefined, 1],
    [0, 1],
    [4, 5],
    ["7", 1],
    [null, 1],
    [-3, 1],
    [2.7, 3],
    [{ n: 1 }, 1],
  ])("failure count from a stored %j → %i", (stored, expected) => {
    const plan = decide(input({ policy: policy("warn"), task: task({}, { qualityGateFailureCount: stored }) }));
    expect(plan.metadataPatch?.qualityGateFailureCount).toBe(expected);
  });

  it("uses the timeout it is given in the summary", () => {
    const plan = decide(
      input({
        timeoutMs: 750,
        result: runResult({ outcome: "error", exitCode: null, signal: "SIGTERM", timedOut: true, stderr: "" }),
      }),
    );
    expect(plan.summary).toBe("timeout after 750ms");
    expect(plan.metadataPatch?.qualityGateSummary).toBe("timeout after 750ms");
  });
});

describe("decide: each failure action × each owner policy", () => {
  type Row = [FailureAction, FollowupOwner, "reopen" | null, string | null | "no follow-up", string[]];
  it.each<Row>([
    ["warn", "member", null, "no follow-up", ["nudge alice"]],
    ["warn", "lead", null, "no follow-up", ["nudge alice"]],
    ["warn", "none", null, "no follow-up", ["nudge alice"]],
    ["followup", "member", null, "bob", ["follow-up for bob", "nudge alice"]],
    ["followup", "lead", null, "team-lead", ["follow-up for team-lead", "nudge alice"]],
    ["followup", "none", null, null, ["follow-up (no owner)", "nudge alice"]],
    // A reopened task is handed back to its owner (a task_assignment), as a team runtime hands out work.
    ["reopen", "member", "reopen", "no follow-up", ["reopened (1/3)", "reassigned to alice", "nudge alice"]],
    ["reopen", "lead", "reopen", "no follow-up", ["reopened (1/3)", "reassigned to alice", "nudge alice"]],
    ["reopen", "none", "reopen", "no follow-up", ["reopened (1/3)", "reassigned to alice", "nudge alice"]],
    [
      "reopen_followup",
      "member",
      "reopen",
      "bob",
      ["reopened (1/3)", "reassigned to alice", "follow-up for bob", "nudge alice"],
    ],
    [
      "reopen_followup",
      "lead",
      "reopen",
      "team-lead",
      ["reopened (1/3)", "reassigned to alice", "follow-up for team-lead", "nudge alice"],
    ],
    [
      "reopen_followup",
      "none",
      "reopen",
      null,
      ["reopened (1/3)", "reassigned to alice", "follow-up (no owner)", "nudge alice"],
    ],
  ])("%s / owner %s", (action, ownerPolicy, reopen, followupOwner, actions) => {
    // The member who caused the event (bob) is not the task's owner (alice): the nudge goes to the owner.
    const plan = decide(input({ policy: policy(action, ownerPolicy), member: "bob" }));
    expect(plan.passed).toBe(false);
    expect(plan.reopen?.kind ?? null).toBe(reopen);
    if (followupOwner === "no follow-up") expect(plan.followup).toBeNull();
    else expect(plan.followup?.owner).toBe(followupOwner);
    expect(plan.nudge?.to).toBe("alice");
    expect(said(plan)).toEqual(actions);
  });

  it.each<[FollowupOwner, string | null, string | null, string | null]>([
    ["member", "bob", "alice", "bob"],
    ["member", null, "alice", "alice"],
    ["member", null, null, "team-lead"],
    ["member", "", "  ", "team-lead"],
    ["lead", "bob", "alice", "team-lead"],
    ["none", "bob", "alice", null],
  ])("follow-up owner %s with member %j and task owner %j → %j", (ownerPolicy, member, owner, expected) => {
    const plan = decide(input({ policy: policy("followup", ownerPolicy), member, task: task({ owner }) }));
    expect(plan.followup?.owner).toBe(expected);
    expect(plan.followup?.assignment === null).toBe(expected === null);
  });

  it.each<[string | null, string | null, string | null]>([
    ["alice", "bob", "alice"],
    [null, "bob", "bob"],
    [null, null, null],
  ])("nudge goes to the task owner %j, else the member %j → %j", (owner, member, expected) => {
    const plan = decide(input({ policy: policy("warn"), member, task: task({ owner }) }));
    expect(plan.nudge?.to).toBe(expected);
    expect(said(plan)).toEqual(expected ? [`nudge ${expected}`] : ["none"]);
  });
});

describe("decide: reopen", () => {
  it("reopens a completed task: status pending, count +1, the hook, the time and the key", () => {
    const plan = decide(input({ policy: policy("reopen"), task: task({}, { reopenedByQualityGateCount: 1 }) }));
    expect(plan.reopen).toEqual({
      kind: "reopen",
      count: 2,
      max: 3,
      patch: {
        status: "pending",
        // The gate's note at the head of the description: why, for the worker's redo (contract/gate-note.ts).
        description: expect.stringMatching(
          /^<!-- pi-teams-hooks: quality gate -->\nQuality gate: on_task_completed did not pass this task \(round 1\): /,
        ),
        metadata: {
          reopenedByQualityGateAt: NOW,
          reopenedByQualityGateHook: "on_task_completed",
          reopenedByQualityGateCount: 2,
          reopenedByQualityGateKey: KEY,
          // The leader ends the event: the task's next completion is keyed in round 1, whatever its stamp.
          qualityGateRound: 1,
        },
      },
    });
    expect(plan.metadataPatch).not.toHaveProperty("qualityGateReopenSuppressed");
  });

  type CapRow = [string, number, unknown, "reopen" | "suppressed", string];
  it.each<CapRow>([
    ["cap 0 never reopens", 0, undefined, "suppressed", "reopen suppressed (0/0)"],
    ["cap not reached", 3, 2, "reopen", "reopened (3/3)"],
    ["cap not reached (no count yet)", 1, undefined, "reopen", "reopened (1/1)"],
    ["cap reached", 3, 3, "suppressed", "reopen suppressed (3/3)"],
    ["cap passed (lowered since)", 2, 5, "suppressed", "reopen suppressed (5/2)"],
    ["a stored count that is not a number is 0", 1, "9", "reopen", "reopened (1/1)"],
  ])("%s", (_name, max, stored, kind, action) => {
    const plan = decide(
      input({ policy: policy("reopen", "member", max), task: task({}, { reopenedByQualityGateCount: stored }) }),
    );
    expect(plan.reopen?.kind).toBe(kind);
    expect(said(plan)[0]).toBe(action);
    if (kind === "suppressed") {
      expect(plan.metadataPatch?.qualityGateReopenSuppressed).toBe(true);
      expect(plan.metadataPatch?.qualityGateReopenSuppressedReason).toBe(
        plan.reopen?.kind === "suppressed" ? plan.reopen.reason : "?",
      );
      expect(plan.metadataPatch?.qualityGateReopenSuppressedReason).toMatch(
        max === 0 ? /reopening is off/ : /the gate budget of task #3 is spent \(\d+ of \d+ reopens and follow-ups\)/,
      );
      // Spent: the lead decides, once told; the worker is asked to wait, not to fix it alone.
      expect(plan.escalation?.root).toBe("3");
      expect(plan.metadataPatch?.qualityGateEscalated).toBe(true);
      expect(plan.nudge?.text(null)).not.toContain("remediate automatically");
    }
  });

  it("after an escalation, a further failure is judged and counted, but its worker is told nothing more until a pass", () => {
    const spent = { reopenedByQualityGateCount: 3 };
    const first = decide(input({ policy: policy("reopen", "member", 3), task: task({}, spent) }));
    expect(first.nudge?.to).toBe("alice");
    const again = decide(
      input({ policy: policy("reopen", "member", 3), task: task({}, { ...spent, qualityGateEscalated: true }) }),
    );
    expect(again.metadataPatch?.qualityGateStatus).toBe("failed");
    expect(again.nudge?.to).toBeNull();
    expect(said(again).some((a) => a.startsWith("nudge"))).toBe(false);
  });

  it.each<[Task["status"]]>([["pending"], ["in_progress"]])("does not reopen a task that is already %s", (status) => {
    const plan = decide(input({ policy: policy("reopen"), task: task({ status }) }));
    expect(plan.reopen).toBeNull();
    expect(said(plan)).toContain(`reopen skipped (task is ${status})`);
  });

  it.each<[FailureAction]>([["reopen"], ["reopen_followup"]])("task_failed never reopens (%s)", (action) => {
    for (const status of ["pending", "completed"] as const) {
      const plan = decide(
        input({
          event: "task_failed",
          key: "task_failed:3:2025-03-01T11:59:00.000Z",
          hookName: "on_task_failed",
          policy: policy(action),
          task: task({ status }),
        }),
      );
      expect(plan.reopen).toBeNull();
      expect(said(plan).some((a) => a.startsWith("reopen"))).toBe(false);
      expect(plan.metadataPatch).not.toHaveProperty("qualityGateReopenSuppressed");
      expect(plan.nudge?.text(null)).not.toContain("reopen");
    }
  });
});

describe("decide: idempotent per event key", () => {
  const retried = (metadata: Record<string, unknown>, status: Task["status"] = "pending"): RemediationPlan =>
    decide(
      input({
        policy: policy("reopen_followup"),
        task: task({ status }, { qualityGateEventKey: KEY, qualityGateStatus: "failed", ...metadata }),
      }),
    );

  it("a failure after a pass recorded for the same key counts (a hand-fired rerun, or a retry whose first run passed)", () => {
    const plan = decide(
      input({
        policy: policy("reopen"),
        task: task({}, { qualityGateEventKey: KEY, qualityGateStatus: "passed", qualityGateFailureCount: 0 }),
      }),
    );
    expect(plan.alreadyApplied).toBe(false);
    expect(plan.metadataPatch?.qualityGateFailureCount).toBe(1);
    expect(plan.reopen?.kind).toBe("reopen");
  });

  it("a retry after a reopen counts nothing again and does not reopen again", () => {
    const plan = retried({ qualityGateFailureCount: 2, reopenedByQualityGateCount: 1, reopenedByQualityGateKey: KEY });
    expect(plan.alreadyApplied).toBe(true);
    expect(plan.metadataPatch?.qualityGateFailureCount).toBe(2);
    expect(plan.reopen).toBeNull();
    expect(said(plan)).toEqual([
      "already applied",
      "was reopened (1/3)",
      "reassigned to alice",
      "follow-up for alice",
      "nudge alice",
    ]);
    expect(plan.nudge?.text(null)).toContain("Task #3 was reopened (back to pending; reopen 1 of 3).");
  });

  it("a retry finds the task completed again (same key) and still does not reopen it", () => {
    const plan = retried(
      { qualityGateFailureCount: 1, reopenedByQualityGateCount: 1, reopenedByQualityGateKey: KEY },
      "completed",
    );
    expect(plan.reopen).toBeNull();
    expect(plan.metadataPatch?.qualityGateFailureCount).toBe(1);
  });

  it("a retry after a suppressed reopen does not count again", () => {
    const plan = retried(
      { qualityGateFailureCount: 4, reopenedByQualityGateCount: 3, qualityGateReopenSuppressed: true },
      "completed",
    );
    expect(plan.reopen).toBeNull();
    expect(plan.metadataPatch?.qualityGateFailureCount).toBe(4);
    expect(said(plan)).toContain("reopen suppressed (3/3)");
  });

  it("the follow-up is still planned on a retry, marked with the key so remediate can find one already made", () => {
    const plan = retried({ qualityGateFailureCount: 1 });
    expect(plan.followup?.metadata.qualityGateFollowupFor).toBe(KEY);
  });

  it("a different key counts again and reopens", () => {
    const plan = decide(
      input({
        policy: policy("reopen"),
        task: task(
          {},
          { qualityGateEventKey: "task_completed:3:older", qualityGateFailureCount: 1, reopenedByQualityGateCount: 1 },
        ),
      }),
    );
    expect(plan.alreadyApplied).toBe(false);
    expect(plan.metadataPatch?.qualityGateFailureCount).toBe(2);
    expect(plan.reopen).toMatchObject({ kind: "reopen", count: 2 });
  });

  it("deciding twice on the same input gives the same plan", () => {
    const a = decide(input());
    const b = decide(input());
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  });
});

describe("decide: the task file is gone", () => {
  it("patches nothing, reopens nothing, and still plans the follow-up and the nudge", () => {
    const plan = decide(input({ task: null, member: "bob" }));
    expect(plan.passed).toBe(false);
    expect(plan.metadataPatch).toBeNull();
    expect(plan.reopen).toBeNull();
    expect(plan.followup?.subject).toBe("Quality gate failed: on_task_completed (task #3)");
    expect(plan.followup?.owner).toBe("bob");
    expect(plan.followup?.description).toContain("Original task: (task file missing)");
    expect(plan.nudge?.to).toBe("bob");
    expect(said(plan)).toEqual(["reopen skipped (task file missing)", "follow-up for bob", "nudge bob"]);
  });

  it("a pass patches nothing either", () => {
    expect(decide(input({ task: null, result: PASSED })).metadataPatch).toBeNull();
  });
});

describe("decide: the follow-up task", () => {
  it("has the subject, metadata and a description with everything needed to act", () => {
    const plan = decide(input({ policy: policy("followup", "lead"), logFile: "/teams/a/hook-logs/x.json" }));
    const followup = plan.followup;
    expect(followup?.subject).toBe("Quality gate failed: on_task_completed (task #3)");
    expect(followup?.metadata).toEqual({
      qualityGateFollowupFor: KEY,
      qualityGateSourceTaskId: "3",
      // Its tree's root (the task itself is a root): the budget it spends.
      qualityGateRootTaskId: "3",
      qualityGateFollowupHook: "on_task_completed",
      qualityGateFollowupEvent: "task_completed",
      qualityGateQuotedOutput: true,
    });
    const description = followup?.description ?? "";
    for (const expected of [
      "The quality gate on_task_completed failed for task #3.",
      "Failure: exit code 1 • npm ERR! Test failed",
      "Hook: on_task_completed (event task_completed)",
      "Command: bash /teams/_hooks/on_task_completed.sh",
      "Policy: followup (at most 3 reopens per task; follow-up owner: lead)",
      "Original task: #3 Add login form",
      `Event key: ${KEY}`,
      "Hook log: /teams/a/hook-logs/x.json",
      "stderr:\n```\nnpm ERR! Test failed\nat line 2\n```",
      "stdout:\n```\nrunning tests\n```",
    ]) {
      expect(description).toContain(expected);
    }
    // The quoted output sits between the marker lines, which gates are shown without it.
    const begin = description.indexOf(QUOTED_OUTPUT_BEGIN);
    expect(begin).toBeGreaterThan(description.indexOf("Hook log:"));
    expect(description.indexOf("npm ERR!", begin)).toBeGreaterThan(begin);
    expect(description.trimEnd().endsWith(QUOTED_OUTPUT_END)).toBe(true);
    const shown = workDescription({ description, metadata: followup?.metadata ?? {} });
    expect(shown).not.toContain("npm ERR!");
    expect(shown).toContain(QUOTED_OUTPUT_LEFT_OUT);
    expect(shown).toContain("Hook: on_task_completed (event task_completed)");
  });

  it("says what happened to the source task when it was also reopened", () => {
    const description = decide(input({ policy: policy("reopen_followup") })).followup?.description ?? "";
    expect(description).toContain("Reopen: Task #3 was reopened (back to pending; reopen 1 of 3).");
  });

  it("quotes a command argument with spaces", () => {
    const plan = decide(
      input({ policy: policy("followup"), result: runResult({ command: ["bash", "/my hooks/on_task_completed.sh"] }) }),
    );
    expect(plan.followup?.description).toContain("Command: bash '/my hooks/on_task_completed.sh'");
  });

  it("bounds the hook's output: head and tail of each stream, and what the runner dropped", () => {
    const stdout = `FIRST ${"o".repeat(50_000)} LAST`;
    const stderr = "e".repeat(20_000);
    const plan = decide(
      input({ policy: policy("followup"), result: runResult({ stdout, stderr, stdoutDroppedBytes: 12_345 }) }),
    );
    const description = plan.followup?.description ?? "";
    expect(description.length).toBeLessThan(8_000);
    expect(description).toContain("FIRST");
    expect(description).toContain("LAST");
    expect(description).toMatch(/… \d+ characters left out …/);
    expect(description).toContain("stdout (12345 more bytes were not captured; see the hook log):");
  });

  it("says when a stream is empty", () => {
    const description =
      decide(input({ policy: policy("followup"), result: runResult({ stdout: "", stderr: " \n" }) })).followup
        ?.description ?? "";
    expect(description).toContain("stderr: (empty)");
    expect(description).toContain("stdout: (empty)");
  });

  it("uses a longer fence when the output holds one", () => {
    const description =
      decide(input({ policy: policy("followup"), result: runResult({ stdout: "```js\nx\n```" }) })).followup
        ?.description ?? "";
    expect(description).toContain("stdout:\n````\n```js\nx\n```\n````");
  });

  it("builds the task_assignment for the owner once the task id is known", () => {
    const plan = decide(input({ policy: policy("followup", "lead") }));
    const assignment = plan.followup?.assignment?.("9");
    expect(assignment).toEqual({
      type: "task_assignment",
      taskId: "9",
      subject: "Quality gate failed: on_task_completed (task #3)",
      description: plan.followup?.description,
      assignedBy: "team-lead",
      timestamp: NOW,
    });
    expect(Object.keys(assignment ?? {})).toEqual([
      "type",
      "taskId",
      "subject",
      "description",
      "assignedBy",
      "timestamp",
    ]);
  });
});

describe("decide: the nudge", () => {
  it("says what failed, what was reopened and created, and asks to fix it", () => {
    const plan = decide(input({ policy: policy("reopen_followup", "lead"), logFile: "/l.json" }));
    expect(plan.nudge?.text("9")).toBe(
      [
        'Quality gate on_task_completed failed for task #3 "Add login form": exit code 1 • npm ERR! Test failed',
        "Task #3 was reopened (back to pending; reopen 1 of 3).",
        "Follow-up task #9 was created for team-lead.",
        "Please fix it and complete task #3 again; the gate runs again then.",
        "Hook log: /l.json",
        "Please remediate automatically and continue without waiting for user intervention.",
      ].join("\n"),
    );
  });

  it.each<[string, DecideInput, string[], string[]]>([
    ["warn", input({ policy: policy("warn") }), ["Please fix it and carry on."], ["reopened", "Follow-up"]],
    [
      "suppressed",
      input({ policy: policy("reopen", "member", 0) }),
      ["Task #3 was not reopened: reopening is off"],
      ["Follow-up"],
    ],
    [
      "follow-up without owner",
      input({ policy: policy("followup", "none") }),
      ["Follow-up task #9 was created (no owner)."],
      ["reopened ("],
    ],
    [
      "task_failed",
      input({ event: "task_failed", policy: policy("reopen_followup") }),
      ["Follow-up task #9 was created for alice.", "carry on"],
      ["reopen"],
    ],
  ])("%s", (_name, decideInput, contains, excludes) => {
    const text = decide(decideInput).nudge?.text("9") ?? "";
    for (const part of contains) expect(text).toContain(part);
    for (const part of excludes) expect(text).not.toContain(part);
  });

  it.each<[string, DecideInput]>([
    ["warn", input({ policy: policy("warn") })],
    ["reopen", input({ policy: policy("reopen") })],
    ["task_failed", input({ event: "task_failed", policy: policy("followup") })],
    ["with a hook log", input({ logFile: "/l.json" })],
  ])("%s: ends with the sentence pi-agent-teams' remediation looks for, on its own line", (_name, decideInput) => {
    const lines = (decide(decideInput).nudge?.text("9") ?? "").split("\n");
    expect(lines.at(-1)).toBe("Please remediate automatically and continue without waiting for user intervention.");
    expect(lines.filter((l) => l.includes("remediate automatically"))).toHaveLength(1);
  });

  it("never mentions a follow-up that was not created", () => {
    const plan = decide(input({ policy: policy("followup") }));
    expect(plan.nudge?.text(null)).not.toContain("Follow-up");
    expect(decide(input({ policy: policy("warn") })).nudge?.text("9")).not.toContain("Follow-up");
  });
});

describe("the gate's name in what the policy writes (chain.ts gateName)", () => {
  it.each<[string, Pick<ChainHook, "name" | "kind">, HookEventName, string]>([
    [
      "the v1 .sh file: its base name",
      { name: "on_task_completed.sh", kind: "v1" },
      "task_completed",
      "on_task_completed",
    ],
    ["the v1 .mjs file", { name: "on_task_failed.mjs", kind: "v1" }, "task_failed", "on_task_failed"],
    ["the bare v1 file", { name: "on_task_completed", kind: "v1" }, "task_completed", "on_task_completed"],
    [
      "a chain file: its place in the chain",
      { name: "10-lint.sh", kind: "chain" },
      "task_completed",
      "on_task_completed.d/10-lint.sh",
    ],
  ])("%s", (_name, hook, event, name) => {
    expect(gateName(hook, event)).toBe(name);
  });

  it.each([
    ["the v1 file", { name: "on_task_completed.sh", kind: "v1" as const }, "on_task_completed"],
    ["a chain file", { name: "10-lint.sh", kind: "chain" as const }, "on_task_completed.d/10-lint.sh"],
  ])("%s: the follow-up subject and every metadata field name it so", (_name, hook, name) => {
    const plan = decide(input({ hookName: gateName(hook, "task_completed"), policy: policy("reopen_followup") }));
    expect(plan.followup?.subject).toBe(`Quality gate failed: ${name} (task #3)`);
    expect(plan.metadataPatch?.qualityGateHook).toBe(name);
    expect(plan.reopen?.kind === "reopen" ? plan.reopen.patch.metadata.reopenedByQualityGateHook : null).toBe(name);
    expect(plan.followup?.metadata.qualityGateFollowupHook).toBe(name);
    expect(plan.nudge?.text(null)).toMatch(
      new RegExp(`^Quality gate ${name.replaceAll(".", "\\.")} failed for task #3`),
    );
  });
});

describe("decide: a member whose name is not a safe file name gets no message", () => {
  // "a/b" would be written to the inbox file of "a-b", another member.
  it("an unsafe owner is not nudged; the actions and the refusals say why", () => {
    const plan = decide(input({ policy: policy("reopen"), task: task({ owner: "a/b" }), member: "a/b" }));
    expect(plan.nudge?.to).toBeNull();
    expect(said(plan)).toContain('no nudge to "a/b"');
    expect(plan.refused).toEqual([
      expect.stringMatching(
        /^no nudge to "a\/b": "a\/b" is not a safe name \(only A-Z, a-z, 0-9, _ and - are: it would share the file of "a-b"\)/,
      ),
    ]);
    expect(plan.reopen?.kind).toBe("reopen"); // the gate's own decision stands
  });

  it("an unsafe follow-up owner: the follow-up is made without an owner and no assignment is sent", () => {
    const plan = decide(input({ policy: policy("followup", "member"), member: "x.y", task: task({ owner: "alice" }) }));
    expect(plan.followup).toMatchObject({ owner: null, assignment: null });
    expect(said(plan)).toEqual(
      expect.arrayContaining(["follow-up (no owner)", 'no follow-up owner "x.y"', "nudge alice"]),
    );
    expect(plan.refused).toEqual([expect.stringContaining('no follow-up owner "x.y": "x.y" is not a safe name')]);
  });

  it("safe names: nothing refused", () => {
    expect(decide(input()).refused).toEqual([]);
    expect(decide(input({ result: PASSED })).refused).toEqual([]);
  });
});

describe("a pass of a completion its own reopen left pending (a leader killed after the reopen)", () => {
  const REOPENED_AT = "2025-03-01T11:59:30.000Z";
  const reopened = (overrides: Partial<Task> = {}): Task =>
    task(
      { status: "pending", updatedAt: REOPENED_AT, description: "<!-- note -->\nBuild it", ...overrides },
      {
        qualityGateStatus: "failed",
        qualityGateEventKey: KEY,
        reopenedByQualityGateKey: KEY,
        reopenedByQualityGateAt: REOPENED_AT,
        qualityGateRound: 1,
      },
    );

  it("untouched since: the reopen undone, back to the round it was completed in, and said", () => {
    const plan = decide(input({ result: PASSED, task: reopened(), member: "alice", policy: policy("reopen") }));
    expect(plan.undoReopen).toEqual({ round: 0 });
    expect(plan.metadataPatch).toMatchObject({ qualityGateStatus: "passed", qualityGateEventKey: KEY });
    expect(plan.gate).toEqual({ to: "passed" });
    expect(plan.reassign).toBeNull();
    expect(said(plan)).toEqual(["reopen undone"]);
  });

  it("taken up again (in progress, another owner, a later write): left alone, its owner handed it again", () => {
    for (const changed of [
      reopened({ status: "in_progress" }),
      reopened({ owner: "bob" }),
      reopened({ updatedAt: "2025-03-01T11:59:45.000Z" }),
    ]) {
      const plan = decide(input({ result: PASSED, task: changed, member: "alice", policy: policy("reopen") }));
      expect(plan.undoReopen).toBeNull();
      expect(plan.metadataPatch).toBeNull();
      expect(plan.gate).toEqual({ to: "reopened" });
      expect(plan.reassign).toMatchObject({ to: changed.owner, message: { type: "task_assignment", taskId: "3" } });
      expect(said(plan)).toEqual([`reopen kept (task is ${changed.status}: the pass not written)`]);
    }
  });

  it("any other pass is a pass as ever: another event's reopen, a completion since, a decision", () => {
    const other = reopened();
    other.metadata = { ...other.metadata, reopenedByQualityGateKey: "task_completed:3:2025-03-01T11:00:00.000Z" };
    const completed = reopened({ status: "completed" });
    for (const t of [other, completed]) {
      const plan = decide(input({ result: PASSED, task: t, member: "alice", policy: policy("reopen") }));
      expect(plan.undoReopen).toBeNull();
      expect(plan.gate).toEqual({ to: "passed" });
      expect(said(plan)).toEqual(["none"]);
    }
  });
});
