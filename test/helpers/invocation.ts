/**
 * A realistic HookInvocation for tests: a completed task of a small team, with overrides for the
 * fields a test is about.
 */
import type { HookEventName, HookInvocation } from "../../extensions/teams-hooks/contract/contract.js";
import { blankResult, type RunResult } from "../../extensions/teams-hooks/contract/hook-run.js";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";

export interface InvocationOverrides {
  event?: HookEventName;
  teamDir?: string;
  memberName?: string;
  /** Fields merged into the default task; `null` for an invocation without a task (e.g. `idle`). */
  task?: Partial<Task> | null;
}

export function makeTask(overrides: Partial<Task> = {}): Task {
  return {
    id: "3",
    subject: "Add retry with backoff to the uploader",
    description: "Uploads fail on transient 503s. Retry up to 5 times with jittered exponential backoff.",
    owner: "alice",
    status: "completed",
    blocks: ["4"],
    blockedBy: ["1", "2"],
    metadata: {
      result: "Added retryWithBackoff() in src/upload.ts; tests in test/upload.test.ts pass.",
      completedAt: "2025-01-15T10:42:07.123Z",
    },
    createdAt: "2025-01-15T09:00:00.000Z",
    updatedAt: "2025-01-15T10:42:07.123Z",
    ...overrides,
  };
}

export function makeInvocation(overrides: InvocationOverrides = {}): HookInvocation {
  const task = overrides.task === null ? null : makeTask(overrides.task ?? {});
  return {
    event: overrides.event ?? "task_completed",
    teamId: "demo",
    teamDir: overrides.teamDir ?? "/tmp/pi-teams/demo",
    taskListId: "demo",
    style: "normal",
    memberName: overrides.memberName ?? "alice",
    timestamp: "2025-01-15T10:42:07.123Z",
    completedTask: task,
  };
}

/**
 * A RunResult with only the fields the contract requires (a run that did not start, outcome `error`),
 * with `overrides` for what a test is about.
 */
export function makeRunResult(overrides: Partial<RunResult> = {}): RunResult {
  const {
    hookPath: _hookPath,
    command: _command,
    ...bare
  } = blankResult({ ran: false, hookPath: "", command: [], runId: "r" });
  return { ...bare, outcome: "error", ...overrides };
}
