import { describe, expect, it } from "vitest";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";
import { taskEvent } from "../../extensions/teams-hooks/contract/events.js";
import { planStart, startDenialOf, type StartGateInput } from "../../extensions/teams-hooks/event/start-gate.js";
import type { SentLog } from "../../extensions/teams-hooks/team/sent-log.js";

const NOW = "2026-12-02T10:00:00.000Z";

function task(partial: Partial<Task> = {}): Task {
  return {
    id: "3",
    subject: "Write the parser",
    description: "",
    owner: "bob",
    status: "in_progress",
    blocks: [],
    blockedBy: ["2"],
    createdAt: "2026-12-02T09:00:00.000Z",
    updatedAt: "2026-12-02T09:30:00.000Z",
    ...partial,
  };
}

const claimed = task();
const KEY = taskEvent(claimed)?.key ?? "";

function input(over: Partial<StartGateInput> = {}): StartGateInput {
  return {
    teamDir: "/teams/alpha",
    taskListId: "alpha",
    taskId: "3",
    key: KEY,
    leadName: "lead",
    now: NOW,
    sent: null as unknown as SentLog,
    passed: false,
    failureMode: "closed",
    summary: "denied (deps.open) • task #2 is not done",
    hookName: "on_task_started",
    code: "deps.open",
    member: "bob",
    logFile: null,
    ...over,
  };
}

describe("planStart: a start gate's answer, decided under the task's lock", () => {
  it("a denial of the claim still there puts it back: pending, no owner, the denial's metadata", () => {
    const plan = planStart(claimed, input());
    expect(plan.kind).toBe("revert");
    if (plan.kind !== "revert") return;
    expect(plan.count).toBe(1);
    expect(plan.to).toBe("bob");
    expect(plan.next).toMatchObject({ status: "pending", updatedAt: NOW });
    // present, so that the write takes it away
    expect("owner" in plan.next && plan.next.owner === undefined).toBe(true);
    expect(plan.next.metadata).toEqual({
      qualityGateStartDenied: true,
      qualityGateStartDeniedAt: NOW,
      qualityGateStartDeniedReason: "denied (deps.open) • task #2 is not done",
      qualityGateStartDeniedHook: "on_task_started",
      qualityGateStartDeniedCount: 1,
      qualityGateStartDeniedKey: KEY,
      qualityGateStartDeniedMember: "bob",
      qualityGateStartDeniedCode: "deps.open",
      // The leader ended the claim: the task's next completion is a new event whatever its stamp.
      qualityGateRound: 1,
    });
    // What it wrote is no claim and no failure: no event.
    expect(taskEvent({ ...plan.next, owner: undefined })).toBeNull();
  });

  it("a later denial counts on and drops the earlier code when the new one has none", () => {
    const before = task({
      metadata: {
        qualityGateStartDenied: true,
        qualityGateStartDeniedAt: "2026-12-02T09:20:00.000Z",
        qualityGateStartDeniedCount: 2,
        qualityGateStartDeniedCode: "old",
        qualityGateStartDeniedKey: "task_started:3:bob:x",
      },
    });
    const plan = planStart(before, input({ key: taskEvent(before)?.key ?? "", code: undefined }));
    expect(plan.kind).toBe("revert");
    if (plan.kind !== "revert") return;
    expect(plan.count).toBe(3);
    expect(plan.next.metadata).not.toHaveProperty("qualityGateStartDeniedCode");
  });

  it("a retry of a denial already applied changes nothing and tells the member again (sent once by the sent-log)", () => {
    const putBack = task({
      owner: undefined,
      status: "pending",
      metadata: { qualityGateStartDeniedKey: KEY, qualityGateStartDeniedCount: 1 },
    });
    expect(planStart(putBack, input())).toEqual({ kind: "reverted", count: 1, to: "bob" });
  });

  it("a denial of a claim that moved on (completed, another owner, the file gone) puts nothing back", () => {
    expect(planStart(task({ status: "completed" }), input())).toEqual({
      kind: "moved_on",
      status: "completed",
      to: "bob",
    });
    expect(planStart(task({ owner: "carol" }), input({ member: null }))).toEqual({
      kind: "moved_on",
      status: "in_progress",
      to: null,
    });
    expect(planStart(null, input())).toEqual({ kind: "moved_on", status: null, to: "bob" });
  });

  it("an allow writes nothing, unless the claim's task still says its last claim was denied", () => {
    expect(planStart(claimed, input({ passed: true }))).toEqual({ kind: "none" });
    const denied = task({
      metadata: { qualityGateStartDenied: true, qualityGateStartDeniedAt: "2026-12-02T09:20:00.000Z" },
    });
    const plan = planStart(denied, input({ passed: true, key: taskEvent(denied)?.key ?? "" }));
    expect(plan.kind).toBe("clear");
    if (plan.kind === "clear")
      expect(plan.next.metadata).toEqual({
        qualityGateStartDenied: false,
        qualityGateStartDeniedAt: "2026-12-02T09:20:00.000Z",
      });
    // The clear keeps the claim's key: the leader's own write is not a new claim.
    if (plan.kind === "clear") expect(taskEvent(plan.next)?.key).toBe(taskEvent(denied)?.key);
  });
});

describe("startDenialOf: the task API's startDenial", () => {
  it("null without a denial; the last denial and whether it stands", () => {
    expect(startDenialOf(claimed)).toBeNull();
    const meta = {
      qualityGateStartDenied: true,
      qualityGateStartDeniedAt: NOW,
      qualityGateStartDeniedHook: "http:ci",
      qualityGateStartDeniedReason: "r",
      qualityGateStartDeniedCount: 2,
    };
    expect(startDenialOf(task({ metadata: meta }))).toEqual({
      active: true,
      at: NOW,
      hook: "http:ci",
      reason: "r",
      code: null,
      count: 2,
    });
    expect(startDenialOf(task({ metadata: { ...meta, qualityGateStartDenied: false } }))?.active).toBe(false);
  });
});
