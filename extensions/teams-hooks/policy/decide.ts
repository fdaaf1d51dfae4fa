/**
 * The failure policy as a pure decision: given one task-event hook result, the fresh task and the
 * effective policy, say what to write and whom to tell (a `RemediationPlan`, plan.ts). remediate.ts
 * applies the plan. Nothing here reads files, clocks or ids: they come in `DecideInput` (policy/ does
 * no I/O of its own, test/unit/architecture.test.ts).
 */
import { gateNoteText, withGateNote } from "../contract/gate-note.js";
import { CONTEXT_LIMITS, truncateText } from "../contract/contract.js";
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
  budgetSpentReason,
  budgetSpentText,
  gateNudgeText,
  gatePassedSummary,
  heldNoteText,
  heldSummary,
  reopenSuppressedReason,
  unsafeName,
} from "../text/messages.js";
import type { GateFailureReport, ReopenOutcome } from "../text/messages.js";
import { holdsNewerEvent } from "./plan.js";
import { splitRound } from "../contract/events.js";
import { type PolicyAction, actionText } from "../text/actions.js";
import type {
  BudgetSpend,
  EscalationPlan,
  FollowupPlan,
  GateMetadataPatch,
  NudgePlan,
  RemediationPlan,
  ReopenDecision,
  TaskEventName,
} from "./plan.js";
import {
  type GateInput,
  type GatePlace,
  type RerunCause,
  type TreeBudget,
  next,
  nextRound,
  treeBudget,
} from "./gate-life.js";
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
  /** The gate's name (gates/chain.ts gateName): `on_task_completed`, or `on_task_completed.d/10-lint.sh`. */
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
  /** The highest gate round the leader knows for the task (its ledger); a reopen goes past it. */
  round?: number | undefined;
  /**
   * The budget of the task's tree (policy/gate-life.ts), read by remediate.ts from the leader's memory
   * (its ledger), or from the root's file for a hand run; default: the task's own file, as a root.
   */
  budget?: TreeBudget | null | undefined;
  /** Whether the owner of a reopened task gets a `task_assignment` for it (`hooks.reassignOnReopen`); default true. */
  reassign?: boolean | undefined;
}

interface GateDecision {
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
      (recorded.qualityGateStatus === "deferred" &&
        typeof recorded.qualityGateDeferredRunId === "string" &&
        recorded.qualityGateDeferredRunId !== input.decision.deferredRunId));
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
    const left = reopenLeftBy(input);
    if (left === "kept" && task) {
      // The worker took up this completion's reopen already: the task is left as it is (its work is
      // being redone, and that completion is judged), and its owner gets the assignment a crash lost.
      const reassign = reassignPlan(input, task);
      return freezePlan({
        ...NOTHING_MORE,
        passed,
        summary,
        alreadyApplied,
        metadataPatch: null,
        reassign,
        actions: [{ kind: "reopen_kept", status: task.status }],
        gate: gateAfter(judgedFrom(input), { on: "judge", judgement: { pass: true, reopen: "kept" } }),
      });
    }
    return freezePlan({
      ...NOTHING_MORE,
      passed,
      summary,
      alreadyApplied,
      ...(left === "undone" ? { undoReopen: { round: splitRound(key).round } } : {}),
      metadataPatch:
        task && !overtaken
          ? {
              ...gateBase(input, "passed", forTheTeam(summary)),
              qualityGateLastSuccessAt: now,
              qualityGateReopenSuppressed: false,
              qualityGateReopenSuppressedReason: undefined,
            }
          : null,
      actions: [{ kind: overtaken ? "overtaken" : left === "undone" ? "reopen_undone" : "none" }],
      gate: gateAfter(
        judgedFrom(input),
        left === "undone"
          ? { on: "judge", judgement: { pass: true, reopen: "undone" } }
          : { on: "judge", judgement: { pass: true } },
      ),
    });
  }

  const failureCount = counter(metadata.qualityGateFailureCount);
  const budget = input.budget ?? (task ? treeBudget(task.id, task, policy.maxReopensPerTask) : null);
  // What the policy would make of this failure: each reopen or follow-up spends the tree's budget. A
  // retry plans its follow-up again (an earlier attempt may have died before making it: remediate
  // finds one made) and spends nothing more (the unit is recorded by its key).
  const wouldReopen = !alreadyApplied && !overtaken && reopenAsked(input);
  const wouldFollowUp = createsFollowup(policy);
  const spends = (wouldReopen || wouldFollowUp) && budget !== null;
  const retried = budget?.spentBy(key) ?? false;
  const exhausted = spends && !retried && budget.spent >= budget.max;
  const spend: BudgetSpend | null =
    spends && !exhausted
      ? { root: budget.root, spent: retried ? budget.spent : budget.spent + 1, max: budget.max }
      : null;
  const reopen = wouldReopen ? decideReopen(input, exhausted ? budget : null, spend, forTheTeam(summary)) : null;
  const outcome = overtaken ? null : reopenOutcome(input, reopen, alreadyApplied);

  let metadataPatch: GateMetadataPatch | null = null;
  if (task && !overtaken) {
    metadataPatch = {
      ...gateBase(input, "failed", forTheTeam(summary)),
      qualityGateFailureCount: alreadyApplied ? failureCount : failureCount + 1,
      qualityGateLastFailureAt: now,
      // A retry keeps what the first attempt recorded of the reopen.
      ...(alreadyApplied
        ? {
            qualityGateReopenSuppressed: metadata.qualityGateReopenSuppressed === true,
            qualityGateReopenSuppressedReason: str(metadata.qualityGateReopenSuppressedReason),
          }
        : {}),
      ...(alreadyApplied && metadata.qualityGateEscalated === true ? { qualityGateEscalated: true } : {}),
    };
    if (reopen?.kind === "suppressed") {
      metadataPatch.qualityGateReopenSuppressed = true;
      metadataPatch.qualityGateReopenSuppressedReason = reopen.reason;
    }
    if (exhausted) metadataPatch.qualityGateEscalated = true;
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
    ...((exhausted || (alreadyApplied && metadata.qualityGateEscalated === true)) && budget
      ? { spent: { root: budget.root, spent: budget.spent, max: budget.max } }
      : {}),
  };
  const refused: Refusal[] = [];
  const followup =
    wouldFollowUp && !exhausted ? planFollowup(input, report, refused, budget?.root ?? input.taskId) : null;
  // Escalated before, and spent still: the work is judged, and the worker, told once already, is told
  // nothing more until a pass (a worker that acts on every nudge would complete again without end).
  const toldAlready = exhausted && !alreadyApplied && metadata.qualityGateEscalated === true;
  const nudgeTo = toldAlready ? null : safeRecipient(nonEmpty(task?.owner) ?? nonEmpty(input.member), "nudge", refused);
  const nudge: NudgePlan = {
    to: nudgeTo,
    text: (followupId) =>
      gateNudgeText(report, followup && followupId !== null ? { id: followupId, owner: followup.owner } : null),
  };
  // The owner of a reopened task is handed it again, as a team runtime hands out work (a retry of the
  // reopen too: the sent-log sends it once).
  const reopened = reopen?.kind === "reopen" || (alreadyApplied && metadata.reopenedByQualityGateKey === key);
  const reassign = reopened && task ? reassignPlan(input, task) : null;
  // A retry of an escalated failure escalates again: the note goes out once per root (the sent-log).
  const escalates = exhausted || (alreadyApplied && metadata.qualityGateEscalated === true);
  const escalation: EscalationPlan | null =
    escalates && budget ? { root: budget.root, text: budgetSpentText(report, budget) } : null;

  const actions: PolicyAction[] = [];
  if (overtaken) actions.push({ kind: "overtaken" });
  if (alreadyApplied) actions.push({ kind: "already_applied" });
  if (outcome) actions.push(outcomeAction(outcome, reopen !== null));
  if (reassign) actions.push({ kind: "reassigned", to: reassign.to });
  if (followup) actions.push({ kind: "followup", owner: followup.owner });
  if (escalation) actions.push({ kind: "escalated", root: escalation.root });
  if (nudgeTo) actions.push({ kind: "nudge", to: nudgeTo });
  actions.push(...refused);
  if (actions.length === 0) actions.push({ kind: "none" });

  return freezePlan({
    passed,
    summary,
    alreadyApplied,
    metadataPatch,
    reopen,
    followup,
    nudge,
    reassign,
    spend,
    escalation,
    undoReopen: null,
    actions,
    refused: refused.map(refusalLine),
    gate: gateAfter(judgedFrom(input), {
      on: "judge",
      judgement: { pass: false, reopens: reopened, spent: escalates },
    }),
  });
}

/**
 * The `task_assignment` that hands a reopened task to its owner again (`hooks.reassignOnReopen`), as a
 * team runtime hands out work; null when it is off or the task has no owner a message can go to.
 */
function reassignPlan(input: DecideInput, task: Task): RemediationPlan["reassign"] {
  const to = input.reassign !== false ? safeRecipient(nonEmpty(task.owner), "nudge", []) : null;
  if (to === null) return null;
  return {
    to,
    message: {
      type: "task_assignment",
      taskId: task.id,
      ...assignedText(task),
      assignedBy: input.leadName,
      timestamp: input.now,
    },
  };
}

/**
 * Whether a gate that passes judges a completion that its own reopen left `pending` (the task's reopen
 * record names this event, the gate's record is this event's failure, not completed since): a leader
 * killed after writing the reopen, before the assignment, the log and the ledger's `done`, and the gate
 * run again at its next start. `undone` when nothing touched the task since the reopen (still
 * `pending`, its `updatedAt` the reopen's, the same owner as the member who completed it): the pass puts
 * it back to `completed`. `kept` when its worker took it up again: the task is left, its owner told.
 * Null for any other pass, and for a decision (which never meets a reopen of its own event).
 */
function reopenLeftBy(input: DecideInput): "undone" | "kept" | null {
  const { task, key } = input;
  if (!task || input.decision !== undefined || input.event !== "task_completed") return null;
  const meta = task.metadata ?? {};
  if (meta.reopenedByQualityGateKey !== key || meta.qualityGateEventKey !== key) return null;
  // Completed again since (a newer completion, or this one put back already): that is judged as it is.
  if (meta.qualityGateStatus !== "failed" || task.status === "completed") return null;
  const member = nonEmpty(input.member);
  const untouched =
    task.status === "pending" &&
    task.updatedAt === meta.reopenedByQualityGateAt &&
    (member === null || task.owner === member);
  return untouched ? "undone" : "kept";
}

/**
 * Where a judgement starts from: the gate ran (`running`: the leader's, a hand run's), or a decision
 * settles a held deferral.
 */
function judgedFrom(input: DecideInput): GatePlace {
  return input.decision ? { state: "held", cause: "deferral" } : { state: "running" };
}

/** The gate life's move (policy/gate-life.ts next), as the plan records it. */
function gateAfter(from: GatePlace, input: GateInput): RemediationPlan["gate"] {
  const move = next(from, input);
  return move.cause ? { to: move.to, cause: move.cause } : { to: move.to };
}

/** What a plan without a failure leaves out. */
const NOTHING_MORE: Pick<
  RemediationPlan,
  "reopen" | "followup" | "nudge" | "reassign" | "spend" | "escalation" | "undoReopen" | "refused"
> = Object.freeze({
  reopen: null,
  followup: null,
  nudge: null,
  reassign: null,
  spend: null,
  escalation: null,
  undoReopen: null,
  refused: [],
});

// ---------------------------------------------------------------------------------------------

/**
 * v1: only `passed` passes. A hook error (could not start, timed out, killed, invalid verdict) counts as
 * its failure mode says: `closed` (the default for task events) makes it a failure, `open` lets it
 * pass, logged. A broken limit is always closed.
 */
export function countsAsPass(result: Pick<RunResult, "outcome" | "errorKind">, mode: "closed" | "open"): boolean {
  if (result.outcome === "passed") return true;
  return (
    result.outcome === "error" &&
    mode === "open" &&
    !(result.errorKind !== undefined && CLOSED_ERROR_KINDS.has(result.errorKind))
  );
}

function gateBase(input: DecideInput, status: "passed" | "failed", summary: string): GateMetadataPatch {
  return {
    ...CLEARED,
    qualityGateOutcome: input.result.outcome,
    qualityGateCode: input.result.verdict?.code,
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

/**
 * What belongs to one run of a gate and goes with the next (`undefined` removes the key): the
 * verdict's code, what held the gate, the escalation. Counters, round, budget and the times of the
 * last success and failure persist (docs/gate-life.md, "What persists").
 */
const CLEARED = Object.freeze({
  qualityGateCode: undefined,
  qualityGateHeld: undefined,
  qualityGateHeldReason: undefined,
  qualityGateEscalated: undefined,
});

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

interface DeferInput {
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
          ...CLEARED,
          qualityGateOutcome: "deferred",
          qualityGateCode: result.verdict?.code,
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
    ...NOTHING_MORE,
    actions: [{ kind: "deferred", until: input.expiresAt }],
    gate: gateAfter({ state: "running" }, { on: "defer" }),
  });
}

interface HoldInput {
  event: TaskEventName;
  key: string;
  /** The run that could not judge the work (its error says why). */
  result: RunResult;
  task: Task | null;
  hookName: string;
  member: string | null;
  leadName: string;
  now: string;
  cause: RerunCause;
  /** The summary of the run (its error), as the team reads it. */
  summary: string;
  logFile?: string | null | undefined;
}

/**
 * The plan of an event held because its gate could not judge the work (policy/gate-life.ts
 * holdCauseOf): the task's metadata says `held` and why; nothing is counted, reopened, created or
 * spent; the worker is told once that it waits for the team lead, with nothing to fix. The lead is
 * told by the leader (what to approve); the event runs again when the lead approves or the leader
 * starts again. Pure.
 */
export function holdPlan(input: HoldInput): RemediationPlan {
  const { task, now } = input;
  const summary = heldSummary(input.cause, input.summary);
  // One note per held event: a completion that arrives while the task is held for the same cause (an
  // earlier completion's hold, which this one supersedes) tells its worker nothing new.
  const meta = task?.metadata ?? {};
  const toldBefore =
    meta.qualityGateStatus === "held" &&
    meta.qualityGateHeld === input.cause &&
    typeof meta.qualityGateEventKey === "string" &&
    meta.qualityGateEventKey !== input.key;
  const owner = safeRecipient(nonEmpty(task?.owner) ?? nonEmpty(input.member), "nudge", []);
  const to = toldBefore ? null : owner;
  return freezePlan({
    ...NOTHING_MORE,
    passed: false,
    summary,
    alreadyApplied: false,
    metadataPatch: task
      ? {
          ...CLEARED,
          qualityGateOutcome: "error",
          qualityGateHook: input.hookName,
          qualityGateAt: now,
          qualityGateStatus: "held",
          qualityGateSummary: summary,
          qualityGateEventKey: input.key,
          qualityGateHookSha256: input.result.hookSha256,
          ...decisionFields(undefined),
          qualityGateHeld: input.cause,
          qualityGateHeldReason: input.summary,
        }
      : null,
    nudge: to
      ? {
          to,
          text: () =>
            heldNoteText({
              hookName: input.hookName,
              taskId: task?.id ?? null,
              cause: input.cause,
              logFile: input.logFile ?? null,
            }),
        }
      : null,
    actions: [
      { kind: "held", cause: input.cause },
      ...(to ? [{ kind: "told_waits" as const, to }] : owner ? [{ kind: "told_before" as const, to: owner }] : []),
    ],
    gate: gateAfter({ state: "running" }, { on: "hold", cause: input.cause }),
  });
}

function reopens(policy: EffectivePolicy): boolean {
  return policy.failureAction === "reopen" || policy.failureAction === "reopen_followup";
}

function createsFollowup(policy: EffectivePolicy): boolean {
  return policy.failureAction === "followup" || policy.failureAction === "reopen_followup";
}

/**
 * Whether the policy asks to reopen this task now: a completed task (its completion the one judged) under a reopening
 * policy.
 */
function reopenAsked(input: DecideInput): boolean {
  const { task, policy } = input;
  if (input.event !== "task_completed" || !reopens(policy) || task?.status !== "completed") return false;
  // A newer completion than the one this gate judged is not reopened: its own gate decides.
  return !holdsNewerEvent(task, input.key);
}

/**
 * Reopen or suppress, for a task reopenAsked: suppressed when the tree's budget is spent (`spent`),
 * else reopened into the next gate round, its count the budget's (`spend`).
 */
function decideReopen(
  input: DecideInput,
  spent: TreeBudget | null,
  spend: BudgetSpend | null,
  summary: string,
): ReopenDecision | null {
  const { task, policy } = input;
  if (!task) return null;
  const max = policy.maxReopensPerTask;
  if (spent)
    return {
      kind: "suppressed",
      count: spent.spent,
      max,
      reason: budgetSpentReason(spent.spent, max, spent.root, task.id),
    };
  const done = counter(task.metadata?.reopenedByQualityGateCount);
  const round = nextRound(task, input.key, input.round);
  return {
    kind: "reopen",
    count: spend?.spent ?? done + 1,
    max,
    patch: {
      status: "pending",
      description: withGateNote(task.description, gateNoteText({ hook: input.hookName, round, summary })),
      metadata: {
        reopenedByQualityGateAt: input.now,
        reopenedByQualityGateHook: input.hookName,
        reopenedByQualityGateCount: done + 1,
        reopenedByQualityGateKey: input.key,
        qualityGateRound: round,
      },
    },
  };
}

/**
 * What the people told should read about the source task, or null when the policy does not reopen or
 * the event is `task_failed`. On a retry it is read back from the task: reopened by this key, or not.
 */
function reopenOutcome(
  input: DecideInput,
  reopen: ReopenDecision | null,
  alreadyApplied: boolean,
): ReopenOutcome | null {
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

function outcomeAction(outcome: ReopenOutcome, planned: boolean): PolicyAction {
  switch (outcome.kind) {
    case "reopened":
      return { kind: "reopened", count: outcome.count, max: outcome.max, earlier: !planned };
    case "suppressed":
      return { kind: "reopen_suppressed", count: outcome.count, max: outcome.max };
    case "not_completed":
      return { kind: "reopen_skipped", status: outcome.status };
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

function planFollowup(input: DecideInput, report: GateFailureReport, refused: Refusal[], root: string): FollowupPlan {
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
      qualityGateRootTaskId: root,
      qualityGateFollowupHook: input.hookName,
      qualityGateFollowupEvent: input.event,
      qualityGateQuotedOutput: true,
    },
    assignment:
      owner === null
        ? null
        : (taskId) => ({
            type: "task_assignment",
            taskId,
            ...assignedText({ subject, description }),
            assignedBy: input.leadName,
            timestamp: input.now,
          }),
  };
}

/** A message not sent (its action), and the line the log's errors say of it. */
type Refusal = Extract<PolicyAction, { kind: "refused" }>;

function refusalLine(r: Refusal): string {
  return `${actionText(r)}: ${unsafeName(r.name, sanitizeName(r.name))}; nothing was sent to that inbox`;
}

/**
 * `name` when it is a safe file name, else null and a refusal (`no nudge to "a/b"`, with why): its
 * inbox would be another member's.
 */
function safeRecipient(name: string | null, role: "nudge" | "follow-up owner", refused: Refusal[]): string | null {
  if (name === null || isSafeName(name)) return name;
  refused.push({ kind: "refused", role, name });
  return null;
}

/** A stored counter: a number ≥ 0 (fractions floored); anything else counts as 0. */
function counter(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function nonEmpty(value: string | null | undefined): string | null {
  return value !== undefined && value !== null && value.trim() !== "" ? value : null;
}

function freezePlan(plan: RemediationPlan): RemediationPlan {
  return Object.freeze(plan);
}

/**
 * The subject and description a `task_assignment` carries, cut to the contract's limits (a gate sees
 * no more either): the task file has the whole text, and an inbox is no place for 60 MB of it, sent
 * again at every reopen.
 */
export function assignedText(task: { subject: string; description: string }): { subject: string; description: string } {
  return {
    subject: truncateText(task.subject, CONTEXT_LIMITS.subject),
    description: truncateText(task.description, CONTEXT_LIMITS.description),
  };
}
