/**
 * The failure policy as a pure decision: given one task-event hook result, the fresh task and the
 * effective policy, say what to write and whom to tell (a `RemediationPlan`). remediate.ts applies the
 * plan; nothing here reads files, clocks or ids (STYLE.md rule 3).
 */
import { z } from "zod";
import { CLOSED_ERROR_KINDS, type RunResult } from "../contract/hook-run.js";
import type { Task, TaskAssignment } from "../contract/team-files.js";
import { unreachable } from "../contract/errors.js";
import { taskEvent } from "../contract/events.js";
import {
  describeFailure,
  followupDescription,
  followupSubject,
  gateNudgeText,
  gatePassedSummary,
  reopenSuppressedReason,
  unsafeName,
} from "../text/messages.js";
import type { GateFailureReport, ReopenOutcome } from "../text/messages.js";
import type { EffectivePolicy } from "../settings/options.js";
import { isSafeName, sanitizeName } from "../team/paths.js";

export { describeFailure };

export type TaskEventName = "task_completed" | "task_failed";

// ---------------------------------------------------------------------------------------------
// Task metadata written by the gate (DESIGN.md, "Failure policy"), plus our keys

/** Merged into the source task's `metadata` after every task-event gate. */
export const GateMetadataPatchSchema = z.object({
  qualityGateHook: z.string(),
  qualityGateAt: z.string(),
  qualityGateStatus: z.enum(["passed", "failed"]),
  /** What the hook did (issue 5): `error` is kept apart from `failed`; the status says how it counted. */
  qualityGateOutcome: z.enum(["passed", "failed", "error"]),
  /** The code of the hook's verdict, when it gave one. */
  qualityGateCode: z.string().optional(),
  qualityGateSummary: z.string(),
  /** The event key this gate ran for: a retry of the same key is recognised by it. */
  qualityGateEventKey: z.string(),
  /** sha256 of the gate file that decided, as it was when it ran. */
  qualityGateHookSha256: z.string().optional(),
  qualityGateLastSuccessAt: z.string().optional(),
  qualityGateFailureCount: z.number().int().nonnegative().optional(),
  qualityGateLastFailureAt: z.string().optional(),
  qualityGateReopenSuppressed: z.boolean().optional(),
  qualityGateReopenSuppressedReason: z.string().optional(),
});
export type GateMetadataPatch = z.infer<typeof GateMetadataPatchSchema>;

/** Merged into the source task's `metadata` when the gate reopens it. */
export const ReopenMetadataSchema = z.object({
  reopenedByQualityGateAt: z.string(),
  reopenedByQualityGateHook: z.string(),
  reopenedByQualityGateCount: z.number().int().positive(),
  /** The event key of the reopen, so that a retry of that key never reopens twice. */
  reopenedByQualityGateKey: z.string(),
});
export type ReopenMetadata = z.infer<typeof ReopenMetadataSchema>;

/** The `metadata` of a follow-up task; `qualityGateFollowupFor` lets remediate find one already created. */
export const FollowupMetadataSchema = z.object({
  qualityGateFollowupFor: z.string(),
  qualityGateSourceTaskId: z.string(),
  qualityGateFollowupHook: z.string(),
  qualityGateFollowupEvent: z.enum(["task_completed", "task_failed"]),
});
export type FollowupMetadata = z.infer<typeof FollowupMetadataSchema>;

// ---------------------------------------------------------------------------------------------
// The plan

export interface DecideInput {
  event: TaskEventName;
  /** The event key (`task_completed:<taskId>:<completedAt>`): what makes a retry idempotent. */
  key: string;
  /** The event's task id; known even when the task file is gone. */
  taskId: string;
  result: RunResult;
  /** A fresh copy read under the task lock, or null when the file is gone. */
  task: Task | null;
  policy: EffectivePolicy;
  /** The gate's name (chain.ts gateName): `on_task_completed`, or `on_task_completed.d/10-lint.sh`. */
  hookName: string;
  /** The member who caused the event, when known. */
  member: string | null;
  leadName: string;
  /** ISO time of the decision: every timestamp in the plan. */
  now: string;
  /** The timeout the hook ran under, for `timeout after <ms>ms`. */
  timeoutMs: number;
  /** What a hook error counts as (issue 5); `closed` when not given, as in v1. */
  failureMode?: "closed" | "open" | undefined;
  /** Where the hook log was written, quoted to the people told; optional. */
  logFile?: string | null | undefined;
}

/** What happens to the source task of a failed `task_completed` gate under a reopening policy. */
export type ReopenDecision =
  | {
      kind: "reopen";
      /** The reopen count after this reopen, and the cap. */
      count: number;
      max: number;
      /** Applied in the same locked write as `metadataPatch`. */
      patch: { status: "pending"; metadata: ReopenMetadata };
    }
  | {
      kind: "suppressed";
      /** Reopens done so far (≥ max), and the cap. `metadataPatch` already says so. */
      count: number;
      max: number;
      reason: string;
    };

export interface FollowupPlan {
  subject: string;
  description: string;
  /** Who the new task is for; null (policy `none`) leaves it unowned and sends no assignment. */
  owner: string | null;
  metadata: FollowupMetadata;
  /**
   * The `task_assignment` message for `owner`, built once the new task's id is known; null without an
   * owner. The message goes to the owner's inbox in the task namespace, from the leader.
   */
  assignment: ((taskId: string) => TaskAssignment) | null;
}

export interface NudgePlan {
  /** The task's owner, else the member; null when neither is known (nothing to send). */
  to: string | null;
  /**
   * The message text. Pass the follow-up task's id once it exists, or null when there is none or its
   * creation failed, so that the text never mentions a task that does not exist.
   */
  text: (followupId: string | null) => string;
}

/**
 * What to do after one task-event hook. Apply in this order, each step after the one before succeeded:
 * 1. under the task lock, merge `metadataPatch` (and, when `reopen.kind === "reopen"`, `reopen.patch`)
 *    into the task in one write, re-checking that the task is still `completed` before reopening;
 * 2. create `followup` — unless a task with `metadata.qualityGateFollowupFor === key` exists (a retry) —
 *    and send its `assignment`;
 * 3. send the `nudge`.
 *
 * Idempotent per event key: when the task already records `qualityGateEventKey === key`
 * (`alreadyApplied`), counters keep their values and no reopen is planned, so a restarted leader can
 * decide the same event again. The follow-up and the nudge are still planned: the first attempt may have
 * died before them (the follow-up is deduplicated by its metadata; a nudge may arrive twice).
 *
 * The plan holds two functions (`followup.assignment`, `nudge.text`); `JSON.stringify` leaves them out,
 * so the rest can be logged as is.
 */
export interface RemediationPlan {
  /** v1: only the outcome `passed` passes; `failed` and `error` are failures. */
  passed: boolean;
  /** `passed in <ms>ms`, or the failure summary (`describeFailure`). */
  summary: string;
  /** The task already recorded this event key: a retry. */
  alreadyApplied: boolean;
  /** Keys to merge into `task.metadata`; null when the task file is gone. */
  metadataPatch: GateMetadataPatch | null;
  reopen: ReopenDecision | null;
  followup: FollowupPlan | null;
  /** Every failure tells someone; null on a pass. */
  nudge: NudgePlan | null;
  /** Short words for the log and the one-line output: `reopened (1/3)`, `nudge alice`, `none`… */
  actions: string[];
  /**
   * Messages not sent because the member's name is not a safe file name (its inbox would be
   * another's), one line each: the policy errors of the log.
   */
  refused: string[];
}

/** The remediation plan for one task-event hook result (see `RemediationPlan`). Pure. */
export function decide(input: DecideInput): RemediationPlan {
  const { task, key, now, policy } = input;
  const passed = countsAsPass(input.result, input.failureMode ?? "closed");
  const metadata = task?.metadata ?? {};
  // A retry of a failure already counted (a restart after a crash): counted and reopened once. A
  // failure after a pass recorded for the same key was not counted yet, so it counts.
  const alreadyApplied = metadata.qualityGateEventKey === key && metadata.qualityGateStatus === "failed";
  const summary = !passed
    ? describeFailure(input.result, input.timeoutMs)
    : input.result.outcome === "error"
      ? `allowed (failure mode open): ${describeFailure(input.result, input.timeoutMs)}`
      : gatePassedSummary(input.result.durationMs);

  if (passed) {
    return freezePlan({
      passed,
      summary,
      alreadyApplied,
      metadataPatch: task
        ? { ...gateBase(input, "passed", summary), qualityGateLastSuccessAt: now, qualityGateReopenSuppressed: false }
        : null,
      reopen: null,
      followup: null,
      nudge: null,
      actions: ["none"],
      refused: [],
    });
  }

  const failureCount = counter(metadata.qualityGateFailureCount);
  const reopen = alreadyApplied ? null : decideReopen(input);
  const outcome = reopenOutcome(input, reopen, alreadyApplied);

  let metadataPatch: GateMetadataPatch | null = null;
  if (task) {
    metadataPatch = {
      ...gateBase(input, "failed", summary),
      qualityGateFailureCount: alreadyApplied ? failureCount : failureCount + 1,
      qualityGateLastFailureAt: now,
    };
    if (reopen?.kind === "suppressed") {
      metadataPatch.qualityGateReopenSuppressed = true;
      metadataPatch.qualityGateReopenSuppressedReason = reopen.reason;
    }
  }

  const report: GateFailureReport = {
    event: input.event,
    key,
    hookName: input.hookName,
    taskId: input.taskId,
    taskSubject: task?.subject ?? null,
    policy,
    summary,
    result: input.result,
    reopen: outcome,
    logFile: input.logFile ?? null,
  };
  const refused: Refusal[] = [];
  const followup = createsFollowup(policy) ? planFollowup(input, report, refused) : null;
  const nudgeTo = safeRecipient(nonEmpty(task?.owner) ?? nonEmpty(input.member), "nudge", refused);
  const nudge: NudgePlan = {
    to: nudgeTo,
    text: (followupId) => gateNudgeText(report, followup && followupId !== null ? { id: followupId, owner: followup.owner } : null),
  };

  const actions: string[] = [];
  if (alreadyApplied) actions.push("already applied");
  if (outcome) actions.push(outcomeAction(outcome, reopen !== null));
  if (followup) actions.push(followup.owner ? `follow-up for ${followup.owner}` : "follow-up (no owner)");
  if (nudgeTo) actions.push(`nudge ${nudgeTo}`);
  actions.push(...refused.map((r) => r.action));
  if (actions.length === 0) actions.push("none");

  return freezePlan({ passed, summary, alreadyApplied, metadataPatch, reopen, followup, nudge, actions, refused: refused.map((r) => r.line) });
}

// ---------------------------------------------------------------------------------------------

/**
 * v1: only `passed` passes. A hook error (could not start, timed out, killed, invalid verdict) counts as
 * its failure mode says: `closed` (the default for task events) makes it a failure, `open` lets it
 * pass, logged. A broken limit is always closed.
 */
export function countsAsPass(result: Pick<RunResult, "outcome" | "errorKind">, mode: "closed" | "open"): boolean {
  if (result.outcome === "passed") return true;
  return result.outcome === "error" && mode === "open" && !(result.errorKind !== undefined && CLOSED_ERROR_KINDS.has(result.errorKind));
}

function gateBase(input: DecideInput, status: "passed" | "failed", summary: string): GateMetadataPatch {
  return {
    qualityGateOutcome: input.result.outcome,
    ...(input.result.verdict?.code ? { qualityGateCode: input.result.verdict.code } : {}),
    qualityGateHook: input.hookName,
    qualityGateAt: input.now,
    qualityGateStatus: status,
    qualityGateSummary: summary,
    qualityGateEventKey: input.key,
    // Always set: a gate refused before it ran (a deleted file) leaves no hash of an earlier run behind.
    qualityGateHookSha256: input.result.hookSha256,
  };
}

function reopens(policy: EffectivePolicy): boolean {
  return policy.failureAction === "reopen" || policy.failureAction === "reopen_followup";
}

function createsFollowup(policy: EffectivePolicy): boolean {
  return policy.failureAction === "followup" || policy.failureAction === "reopen_followup";
}

/** Reopen or suppress, for a completed task under a reopening policy; never for `task_failed`. */
function decideReopen(input: DecideInput): ReopenDecision | null {
  const { task, policy } = input;
  if (input.event !== "task_completed" || !reopens(policy) || task?.status !== "completed") return null;
  // The task holds a newer completion than the one this gate judged (the worker completed again while
  // the gate ran): reopening now would throw away work nobody has checked yet. Its own gate decides.
  if (taskEvent(task)?.key !== input.key) return null;
  const done = counter(task.metadata?.reopenedByQualityGateCount);
  const max = policy.maxReopensPerTask;
  if (done >= max) return { kind: "suppressed", count: done, max, reason: reopenSuppressedReason(done, max) };
  return {
    kind: "reopen",
    count: done + 1,
    max,
    patch: {
      status: "pending",
      metadata: {
        reopenedByQualityGateAt: input.now,
        reopenedByQualityGateHook: input.hookName,
        reopenedByQualityGateCount: done + 1,
        reopenedByQualityGateKey: input.key,
      },
    },
  };
}

/**
 * What the people told should read about the source task, or null when the policy does not reopen or
 * the event is `task_failed`. On a retry it is read back from the task: reopened by this key, or not.
 */
function reopenOutcome(input: DecideInput, reopen: ReopenDecision | null, alreadyApplied: boolean): ReopenOutcome | null {
  if (input.event !== "task_completed" || !reopens(input.policy)) return null;
  const metadata = input.task?.metadata ?? {};
  const max = input.policy.maxReopensPerTask;
  if (reopen?.kind === "reopen") return { kind: "reopened", count: reopen.count, max };
  if (reopen?.kind === "suppressed") return { kind: "suppressed", count: reopen.count, max, reason: reopen.reason };
  if (alreadyApplied && metadata.reopenedByQualityGateKey === input.key) {
    return { kind: "reopened", count: counter(metadata.reopenedByQualityGateCount), max };
  }
  if (alreadyApplied && metadata.qualityGateReopenSuppressed === true) {
    const count = counter(metadata.reopenedByQualityGateCount);
    return { kind: "suppressed", count, max, reason: reopenSuppressedReason(count, max) };
  }
  // A retry with no trace of a reopen: the first attempt did not reopen, and there is nothing to say.
  if (alreadyApplied) return null;
  return { kind: "not_completed", status: input.task?.status ?? null };
}

function outcomeAction(outcome: ReopenOutcome, planned: boolean): string {
  switch (outcome.kind) {
    case "reopened":
      return planned ? `reopened (${outcome.count}/${outcome.max})` : `was reopened (${outcome.count}/${outcome.max})`;
    case "suppressed":
      return `reopen suppressed (${outcome.count}/${outcome.max})`;
    case "not_completed":
      return `reopen skipped (${outcome.status === null ? "task file missing" : `task is ${outcome.status}`})`;
    default:
      return unreachable(outcome);
  }
}

/** Owner by policy: `member` → the member, else the task's owner, else the leader; `lead`; `none`. */
function followupOwner(input: DecideInput): string | null {
  switch (input.policy.followupOwner) {
    case "member":
      return nonEmpty(input.member) ?? nonEmpty(input.task?.owner) ?? input.leadName;
    case "lead":
      return input.leadName;
    case "none":
      return null;
    default:
      return unreachable(input.policy.followupOwner);
  }
}

function planFollowup(input: DecideInput, report: GateFailureReport, refused: Refusal[]): FollowupPlan {
  const subject = followupSubject(input.hookName, input.taskId);
  const description = followupDescription(report);
  const owner = safeRecipient(followupOwner(input), "follow-up owner", refused);
  return {
    subject,
    description,
    owner,
    metadata: {
      qualityGateFollowupFor: input.key,
      qualityGateSourceTaskId: input.taskId,
      qualityGateFollowupHook: input.hookName,
      qualityGateFollowupEvent: input.event,
    },
    assignment:
      owner === null
        ? null
        : (taskId) => ({ type: "task_assignment", taskId, subject, description, assignedBy: input.leadName, timestamp: input.now }),
  };
}

/** A message not sent: the short action for the log's actions, and the line for its errors. */
interface Refusal {
  action: string;
  line: string;
}

/**
 * `name` when it is a safe file name, else null and a refusal (`no nudge to "a/b"`, with why): its
 * inbox would be another member's.
 */
function safeRecipient(name: string | null, role: "nudge" | "follow-up owner", refused: Refusal[]): string | null {
  if (name === null || isSafeName(name)) return name;
  const action = role === "nudge" ? `no nudge to ${JSON.stringify(name)}` : `no follow-up owner ${JSON.stringify(name)}`;
  refused.push({ action, line: `${action}: ${unsafeName(name, sanitizeName(name))}; nothing was sent to that inbox` });
  return null;
}

/** A stored counter: a number ≥ 0 (fractions floored); anything else counts as 0. */
function counter(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

function nonEmpty(value: string | null | undefined): string | null {
  return value !== undefined && value !== null && value.trim() !== "" ? value : null;
}

function freezePlan(plan: RemediationPlan): RemediationPlan {
  return Object.freeze(plan);
}
