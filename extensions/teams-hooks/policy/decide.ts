/**
 * The failure policy as a pure decision: given one task-event hook result, the fresh task and the
 * effective policy, say what to write and whom to tell (a `RemediationPlan`, plan.ts). remediate.ts
 * applies the plan. Nothing here reads files, clocks or ids: they come in `DecideInput` (policy/ does
 * no I/O of its own, test/unit/architecture.test.ts).
 */
import { CLOSED_ERROR_KINDS, type RunResult } from "../contract/hook-run.js";
import type { Task } from "../contract/team-files.js";
import { unreachable } from "../contract/errors.js";
import {
  deferredSummary,
  decisionAllowedSummary,
  describeFailure,
  followupDescription,
  followupSubject,
  forTheTeam,
  gateNudgeText,
  gatePassedSummary,
  reopenSuppressedReason,
  unsafeName,
} from "../text/messages.js";
import type { GateFailureReport, ReopenOutcome } from "../text/messages.js";
import { holdsNewerEvent } from "./plan.js";
import type { FollowupPlan, GateMetadataPatch, NudgePlan, RemediationPlan, ReopenDecision, TaskEventName } from "./plan.js";
import type { EffectivePolicy } from "../settings/options.js";
import { isSafeName, sanitizeName } from "../team/paths.js";

// ---------------------------------------------------------------------------------------------
// The decision

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
  /** The gate's name (runner/chain.ts gateName): `on_task_completed`, or `on_task_completed.d/10-lint.sh`. */
  hookName: string;
  /** The member who caused the event, when known. */
  member: string | null;
  leadName: string;
  /** ISO time of the decision: every timestamp in the plan. */
  now: string;
  /** The timeout the hook ran under, for `timeout after <ms>ms`. */
  timeoutMs: number;
  /**
   * What a hook error counts as; `closed` when not given, as in v1 (docs/hook-contract.md, "Hook
   * errors and failure modes").
   */
  failureMode?: "closed" | "open" | undefined;
  /** Where the hook log was written, quoted to the people told; optional. */
  logFile?: string | null | undefined;
  /**
   * The decision that settles a deferred gate (`pi-teams-hooks decide`, the task API, the expiry): the
   * result is the decision's, and the task records who decided, when, and which deferral.
   */
  decision?: GateDecision | undefined;
}

export interface GateDecision {
  /** The run id the deferral is known by. */
  deferredRunId: string;
  deferredReason?: string | undefined;
  decision: "allow" | "deny" | "expired";
  by: string;
  at: string;
}

/** The remediation plan for one task-event hook result (see `RemediationPlan`). Pure. */
export function decide(input: DecideInput): RemediationPlan {
  const { key, now, policy } = input;
  const passed = countsAsPass(input.result, input.failureMode ?? "closed");
  // A decision that comes after another gate of this task was recorded (a newer completion ran its own
  // gate while this one was held) does not overwrite that gate's record or reopen its work: the task
  // is left as it is; the follow-up and the nudge still go out.
  const { task } = input;
  // So is one whose hold was replaced by a newer hold of the same event (`run --apply-policy` again).
  const recorded = task?.metadata ?? {};
  const overtaken =
    input.decision !== undefined &&
    ((typeof recorded.qualityGateEventKey === "string" && recorded.qualityGateEventKey !== key) ||
      (recorded.qualityGateStatus === "deferred" && typeof recorded.qualityGateDeferredRunId === "string" && recorded.qualityGateDeferredRunId !== input.decision.deferredRunId));
  const metadata = task?.metadata ?? {};
  // A retry of a failure already counted (a restart after a crash): counted and reopened once. A
  // failure after a pass recorded for the same key was not counted yet, so it counts.
  const alreadyApplied = metadata.qualityGateEventKey === key && metadata.qualityGateStatus === "failed";
  const summary = !passed
    ? describeFailure(input.result, input.timeoutMs)
    : input.result.outcome === "error"
      ? `allowed (failure mode open): ${describeFailure(input.result, input.timeoutMs)}`
      : input.decision?.decision === "allow"
        ? decisionAllowedSummary(input.decision.by, input.result.verdict?.reason)
        : gatePassedSummary(input.result.durationMs);

  if (passed) {
    return freezePlan({
      passed,
      summary,
      alreadyApplied,
      metadataPatch: task && !overtaken
        ? { ...gateBase(input, "passed", forTheTeam(summary)), qualityGateLastSuccessAt: now, qualityGateReopenSuppressed: false }
        : null,
      reopen: null,
      followup: null,
      nudge: null,
      actions: overtaken ? ["task metadata left (a newer gate is recorded)"] : ["none"],
      refused: [],
    });
  }

  const failureCount = counter(metadata.qualityGateFailureCount);
  const reopen = alreadyApplied || overtaken ? null : decideReopen(input);
  const outcome = overtaken ? null : reopenOutcome(input, reopen, alreadyApplied);

  let metadataPatch: GateMetadataPatch | null = null;
  if (task && !overtaken) {
    metadataPatch = {
      ...gateBase(input, "failed", forTheTeam(summary)),
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
    summary: forTheTeam(summary),
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
  if (overtaken) actions.push("task metadata left (a newer gate is recorded)");
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
    ...decisionFields(input.decision),
  };
}

/** The deferral fields of a gate's metadata: a decision's, or none (cleared: see GateMetadataPatchSchema). */
function decisionFields(decision: GateDecision | undefined): Partial<GateMetadataPatch> {
  return {
    qualityGateDeferredRunId: decision?.deferredRunId,
    qualityGateDeferredReason: decision?.deferredReason,
    qualityGateDeferredUntil: undefined,
    qualityGateDecision: decision?.decision,
    qualityGateDecidedBy: decision?.by,
    qualityGateDecidedAt: decision?.at,
  };
}

export interface DeferInput {
  event: TaskEventName;
  key: string;
  taskId: string;
  /** The run that answered `defer` (its outcome is `deferred`). */
  result: RunResult;
  task: Task | null;
  hookName: string;
  now: string;
  /** The run id the deferral is known by (the deferring run's), and when it expires. */
  deferredRunId: string;
  expiresAt: string;
}

/**
 * The plan of a held gate: the task's metadata says `deferred`, with the gate's reason, the run id a
 * decision names and the deadline; nothing is counted, reopened, created or sent until the decision
 * comes (then `decide` with `decision` plans the rest). Pure.
 */
export function deferPlan(input: DeferInput): RemediationPlan {
  const { result, now } = input;
  const summary = deferredSummary(result.verdict);
  const reason = result.verdict?.reason;
  return freezePlan({
    passed: false,
    summary,
    alreadyApplied: false,
    metadataPatch: input.task
      ? {
          qualityGateOutcome: "deferred",
          ...(result.verdict?.code ? { qualityGateCode: result.verdict.code } : {}),
          qualityGateHook: input.hookName,
          qualityGateAt: now,
          qualityGateStatus: "deferred",
          qualityGateSummary: summary,
          qualityGateEventKey: input.key,
          qualityGateHookSha256: result.hookSha256,
          ...decisionFields(undefined),
          qualityGateDeferredRunId: input.deferredRunId,
          qualityGateDeferredReason: reason,
          qualityGateDeferredUntil: input.expiresAt,
        }
      : null,
    reopen: null,
    followup: null,
    nudge: null,
    actions: [`held until ${input.expiresAt}`],
    refused: [],
  });
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
  // A newer completion than the one this gate judged is not reopened: its own gate decides.
  if (holdsNewerEvent(task, input.key)) return null;
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
