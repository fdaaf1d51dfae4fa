import { describe, expect, it } from "vitest";
import type { IdleNotification, Task } from "../../extensions/teams-hooks/contract/team-files.js";
import { idleEvents, parseIdleText, taskEvent } from "../../extensions/teams-hooks/contract/events.js";

function task(overrides: Partial<Task> = {}): Task {
  return {
    id: "3",
    subject: "s",
    description: "",
    owner: "bob",
    status: "completed",
    blocks: [],
    blockedBy: [],
    metadata: { completedAt: "2026-12-02T10:00:00.000Z" },
    createdAt: "2026-12-02T09:00:00.000Z",
    updatedAt: "2026-12-02T10:00:01.000Z",
    ...overrides,
  };
}

describe("taskEvent", () => {
  it.each([
    ["completion keyed by completedAt", task(), "task_completed:3:2026-12-02T10:00:00.000Z", "bob"],
    [
      "completion without completedAt keyed by updatedAt",
      task({ metadata: {} }),
      "task_completed:3:2026-12-02T10:00:01.000Z",
      "bob",
    ],
    [
      "failure keyed by abortedAt",
      task({ status: "pending", metadata: { abortedAt: "2026-12-02T11:00:00.000Z", abortedBy: "bob" } }),
      "task_failed:3:2026-12-02T11:00:00.000Z",
      "bob",
    ],
    [
      "failure member falls back to abortedBy",
      task({
        owner: undefined,
        status: "pending",
        metadata: { abortedAt: "2026-12-02T11:00:00.000Z", abortedBy: "carol" },
      }),
      "task_failed:3:2026-12-02T11:00:00.000Z",
      "carol",
    ],
    ["no owner is a null member", task({ owner: undefined }), "task_completed:3:2026-12-02T10:00:00.000Z", null],
  ])("%s", (_name, t, key, member) => {
    const event = taskEvent(t);
    expect(event?.key).toBe(key);
    expect(event?.member).toBe(member);
  });

  it.each([
    ["a plain pending task", task({ status: "pending", metadata: {} })],
    ["an in-progress task without an owner", task({ owner: undefined, status: "in_progress" })],
    ["an in-progress task with a blank owner", task({ owner: " ", status: "in_progress" })],
    [
      "a task reopened by the gate with an older abort",
      task({
        status: "pending",
        metadata: { abortedAt: "2026-12-02T09:30:00.000Z", reopenedByQualityGateAt: "2026-12-02T10:00:05.000Z" },
      }),
    ],
  ])("no event for %s", (_name, t) => {
    expect(taskEvent(t)).toBeNull();
  });

  it("an abort after the gate's reopen is a new failure", () => {
    const t = task({
      status: "pending",
      metadata: { abortedAt: "2026-12-02T10:30:00.000Z", reopenedByQualityGateAt: "2026-12-02T10:00:05.000Z" },
    });
    expect(taskEvent(t)?.key).toBe("task_failed:3:2026-12-02T10:30:00.000Z");
  });

  it("the leader's gate write on a task without completedAt keeps its key", () => {
    const first = taskEvent(task({ metadata: {} }));
    const afterGate = task({
      updatedAt: "2026-12-02T10:00:09.000Z",
      metadata: { qualityGateEventKey: first?.key, qualityGateAt: "2026-12-02T10:00:09.000Z" },
    });
    expect(taskEvent(afterGate)?.key).toBe(first?.key);
    const workerRewrote = task({ ...afterGate, updatedAt: "2026-12-02T10:05:00.000Z" });
    expect(taskEvent(workerRewrote)?.key).not.toBe(first?.key);
  });
});

describe("taskEvent: claims (task_started)", () => {
  const claimed = (metadata: Record<string, unknown> = {}, extra: Partial<Task> = {}): Task =>
    task({ status: "in_progress", owner: "bob", metadata, updatedAt: "2026-12-02T09:30:00.000Z", ...extra });

  it("an in-progress task with an owner is a claim, keyed by owner and createdAt when nothing else says when", () => {
    const event = taskEvent(claimed());
    expect(event).toMatchObject({
      event: "task_started",
      key: "task_started:3:bob:2026-12-02T09:00:00.000Z",
      taskId: "3",
      member: "bob",
    });
    // No claim time: the stamp the hook sees is the task's updatedAt as first seen in progress.
    expect(event?.timestamp).toBe("2026-12-02T09:30:00.000Z");
  });

  it("a runtime's metadata.claimedAt keys the claim, and is its timestamp", () => {
    const event = taskEvent(claimed({ claimedAt: "2026-12-02T09:10:00.000Z" }));
    expect(event?.key).toBe("task_started:3:bob:2026-12-02T09:10:00.000Z");
    expect(event?.timestamp).toBe("2026-12-02T09:10:00.000Z");
  });

  it("the key stays across a worker's progress edits and the leader's own metadata", () => {
    const first = taskEvent(claimed({ claimedAt: "2026-12-02T09:10:00.000Z" }))?.key;
    const edited = claimed(
      { claimedAt: "2026-12-02T09:10:00.000Z", progress: "50%", qualityGateStartDenied: false },
      { updatedAt: "2026-12-02T09:45:00.000Z", description: "more" },
    );
    expect(taskEvent(edited)?.key).toBe(first);
    const noClaimTime = taskEvent(claimed())?.key;
    expect(taskEvent(claimed({ progress: "90%" }, { updatedAt: "2026-12-02T10:45:00.000Z" }))?.key).toBe(noClaimTime);
  });

  it("a new claim after a release (denial, abort, unassign) or by another member has a new key", () => {
    const before = taskEvent(claimed())?.key;
    const afterDenial = taskEvent(claimed({ qualityGateStartDeniedAt: "2026-12-02T09:20:00.000Z" }))?.key;
    const afterAbort = taskEvent(
      claimed({ abortedAt: "2026-12-02T09:21:00.000Z", qualityGateStartDeniedAt: "2026-12-02T09:20:00.000Z" }),
    )?.key;
    const afterUnassign = taskEvent(claimed({ unassignedAt: "2026-12-02T09:22:00.000Z" }))?.key;
    const byCarol = taskEvent(claimed({}, { owner: "carol" }))?.key;
    expect(new Set([before, afterDenial, afterAbort, afterUnassign, byCarol]).size).toBe(5);
    expect(afterDenial).toBe("task_started:3:bob:2026-12-02T09:20:00.000Z");
    // A stamp later than the last denial carries the count of denials (none recorded here: 0).
    expect(afterAbort).toBe("task_started:3:bob:2026-12-02T09:21:00.000Z#0");
  });

  it("a claim after a denial is new even when the worker's stamp is later than the denial (a clock ahead of the leader's)", () => {
    const ahead = { claimedAt: "2099-01-01T00:00:00.000Z" };
    const first = taskEvent(claimed(ahead));
    expect(first?.key).toBe("task_started:3:bob:2099-01-01T00:00:00.000Z");
    const denied = (n: number) => ({
      qualityGateStartDeniedAt: `2026-12-02T09:2${n}:00.000Z`,
      qualityGateStartDeniedCount: n,
    });
    const second = taskEvent(claimed({ ...ahead, ...denied(1) }));
    const third = taskEvent(claimed({ ...ahead, ...denied(2) }));
    expect(second?.key).toBe("task_started:3:bob:2099-01-01T00:00:00.000Z#1");
    expect(third?.key).toBe("task_started:3:bob:2099-01-01T00:00:00.000Z#2");
    expect(third?.timestamp).toBe("2099-01-01T00:00:00.000Z");
    // Stable while the claim lasts: progress and the leader's allow do not move it.
    expect(taskEvent(claimed({ ...ahead, ...denied(2), progress: "50%", qualityGateStartDenied: false }))?.key).toBe(
      third?.key,
    );
  });

  it("a claimedAt older than the last release is stale: the release keys the new claim", () => {
    const stale = claimed({
      claimedAt: "2026-12-02T09:10:00.000Z",
      qualityGateStartDeniedAt: "2026-12-02T09:20:00.000Z",
    });
    expect(taskEvent(stale)?.key).toBe("task_started:3:bob:2026-12-02T09:20:00.000Z");
  });

  it("the completion gate's reopen is no claim; the worker taking the reopened task up again is a new one", () => {
    const reopened = { completedAt: "2026-12-02T10:00:00.000Z", reopenedByQualityGateAt: "2026-12-02T10:00:05.000Z" };
    // The reopen itself writes pending (the owner kept): nothing to judge.
    expect(taskEvent(task({ status: "pending", owner: "bob", metadata: reopened }))).toBeNull();
    // In progress again: a claim keyed by the reopen, or by a later claimedAt.
    const before = taskEvent(claimed({ claimedAt: "2026-12-02T09:10:00.000Z" }))?.key;
    const again = taskEvent(claimed({ ...reopened, claimedAt: "2026-12-02T09:10:00.000Z" }));
    expect(again).toMatchObject({ event: "task_started", key: "task_started:3:bob:2026-12-02T10:00:05.000Z" });
    expect(again?.key).not.toBe(before);
    expect(taskEvent(claimed({ ...reopened, claimedAt: "2026-12-02T10:01:00.000Z" }))?.key).toBe(
      "task_started:3:bob:2026-12-02T10:01:00.000Z",
    );
  });

  it("the start gate's put-back is not a failure: an older abortedAt stays history", () => {
    const putBack = task({
      owner: undefined,
      status: "pending",
      metadata: { abortedAt: "2026-12-02T09:00:00.000Z", qualityGateStartDeniedAt: "2026-12-02T09:20:00.000Z" },
    });
    expect(taskEvent(putBack)).toBeNull();
    const abortedAfter = task({
      status: "pending",
      metadata: { abortedAt: "2026-12-02T09:30:00.000Z", qualityGateStartDeniedAt: "2026-12-02T09:20:00.000Z" },
    });
    expect(taskEvent(abortedAfter)?.key).toBe("task_failed:3:2026-12-02T09:30:00.000Z");
  });
});

describe("idleEvents", () => {
  const note = (extra: Partial<IdleNotification> = {}): IdleNotification => ({
    type: "idle_notification",
    from: "bob",
    timestamp: "2026-12-02T10:00:02.000Z",
    ...extra,
  });

  it("a plain idle notification is one idle event", () => {
    expect(idleEvents(note(), null).map((e) => e.key)).toEqual(["idle:bob:2026-12-02T10:00:02.000Z"]);
  });

  it("a reported completion takes the task file's key and the notification's member", () => {
    const events = idleEvents(note({ completedTaskId: "3", completedStatus: "completed" }), task());
    expect(events[1]).toMatchObject({
      key: "task_completed:3:2026-12-02T10:00:00.000Z",
      member: "bob",
      source: "inbox",
    });
    expect(events[1]?.key).toBe(taskEvent(task())?.key);
  });

  it("a reported completion the file does not show is left to the file", () => {
    expect(
      idleEvents(note({ completedTaskId: "3", completedStatus: "completed" }), task({ status: "in_progress" })),
    ).toHaveLength(1);
  });

  it("a completion of a task whose file is gone is keyed by the notification", () => {
    const events = idleEvents(note({ completedTaskId: "9", completedStatus: "completed" }), null);
    expect(events[1]?.key).toBe("task_completed:9:2026-12-02T10:00:02.000Z");
  });

  it("a reported failure without abortedAt in the file is keyed by the notification", () => {
    const events = idleEvents(
      note({ completedTaskId: "3", completedStatus: "failed" }),
      task({ status: "pending", metadata: {} }),
    );
    expect(events[1]?.key).toBe("task_failed:3:2026-12-02T10:00:02.000Z");
  });

  it("every event of a notification carries it, failureReason and unknown fields included; a task file's event does not", () => {
    const sent = note({ completedTaskId: "3", completedStatus: "failed", failureReason: "tests failed", attempt: 2 });
    expect(idleEvents(sent, task({ status: "pending", metadata: {} })).map((e) => e.notification)).toEqual([
      sent,
      sent,
    ]);
    expect(
      idleEvents(sent, task({ status: "pending", metadata: { abortedAt: "2026-12-02T10:00:00.000Z" } }))[1]
        ?.notification,
    ).toBe(sent);
    expect(taskEvent(task())).not.toHaveProperty("notification");
  });
});

describe("a task event's timestamp is the same whichever source saw it first", () => {
  const NOTE_AT = "2026-12-02T10:00:02.000Z";
  const COMPLETED_AT = "2026-12-02T10:00:00.000Z";
  const UPDATED_AT = "2026-12-02T10:00:01.000Z";
  const ABORTED_AT = "2026-12-02T11:00:00.000Z";
  const completed = task();
  const completedBare = task({ metadata: {} });
  const aborted = task({ status: "pending", updatedAt: UPDATED_AT, metadata: { abortedAt: ABORTED_AT } });
  const failedBare = task({ status: "pending", metadata: {} });
  const reported = (status: "completed" | "failed", taskId = "3"): IdleNotification => ({
    type: "idle_notification",
    from: "bob",
    timestamp: NOTE_AT,
    completedTaskId: taskId,
    completedStatus: status,
  });
  const fromNote = (n: IdleNotification, t: Task | null) => idleEvents(n, t)[1]?.timestamp;

  it.each<[string, string | null | undefined, string]>([
    ["completion with completedAt, from the task file", taskEvent(completed)?.timestamp, COMPLETED_AT],
    ["completion with completedAt, from the notification", fromNote(reported("completed"), completed), COMPLETED_AT],
    [
      "completion without completedAt, from the task file: the stamp that keys it",
      taskEvent(completedBare)?.timestamp,
      UPDATED_AT,
    ],
    [
      "completion without completedAt, from the notification: its timestamp",
      fromNote(reported("completed"), completedBare),
      NOTE_AT,
    ],
    ["failure with abortedAt, from the task file", taskEvent(aborted)?.timestamp, ABORTED_AT],
    ["failure with abortedAt, from the notification", fromNote(reported("failed"), aborted), ABORTED_AT],
    [
      "failure without abortedAt, from the notification: its timestamp",
      fromNote(reported("failed"), failedBare),
      NOTE_AT,
    ],
    [
      "completion of a task whose file is gone: the notification's timestamp",
      fromNote(reported("completed", "9"), null),
      NOTE_AT,
    ],
  ])("%s", (_name, timestamp, expected) => {
    expect(timestamp).toBe(expected);
  });
});

describe("parseIdleText", () => {
  it.each([
    ['{"type":"idle_notification","from":"a","timestamp":"t"}', true],
    ["I am idle_notification-ish prose", false],
    ["hello", false],
  ])("%s", (text, isJson) => {
    expect(parseIdleText(text) !== null).toBe(isJson);
  });
});
