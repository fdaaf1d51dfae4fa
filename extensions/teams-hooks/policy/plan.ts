/**
 * The remediation plan of one task-event gate, as data: the task metadata the failure policy writes
 * (zod schemas), and the plan that decide.ts gives and remediate.ts applies. Also the one staleness
 * check both of them make: whether the task already holds a newer event than the one judged.
 */
import { z } from "zod";
import type { Task, TaskAssignment } from "../contract/team-files.js";
import { splitRound, taskEvent } from "../contract/events.js";
import type { GateState, HoldCause } from "./gate-life.js";
import type { PolicyAction } from "../text/actions.js";
import { unreachable } from "../contract/errors.js";

export type TaskEventName = "task_completed" | "task_failed";

// ---------------------------------------------------------------------------------------------
// Task metadata the failure policy writes (docs/hook-contract.md, "Hook errors and failure modes";
// the event keys: docs/ledger.md)

/** Merged into the source task's `metadata` after every task-event gate. */
export const GateMetadataPatchSchema = z.object({
  qualityGateHook: z.string(),
  qualityGateAt: z.string(),
  /**
   * `deferred`: the gate is held until a decision arrives; `held`: the gate could not judge the work
   * (untrusted, missing, our own fault) and waits for the lead or a retry (contract v1, additive).
   */
  qualityGateStatus: z.enum(["passed", "failed", "deferred", "held"]),
  /** What the hook did: `error` is kept apart from `failed`; the status says how the failure mode counted it. */
  qualityGateOutcome: z.enum(["passed", "failed", "error", "deferred"]),
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
  /**
   * A held gate (`qualityGateStatus: "deferred"`): the run id its decision names, the gate's reason, and
   * when it expires. Once decided, the run id and reason stay and the deadline goes; a gate that was
   * not deferred clears them all (the metadata describes the task's last gate).
   */
  qualityGateDeferredRunId: z.string().optional(),
  qualityGateDeferredReason: z.string().optional(),
  qualityGateDeferredUntil: z.string().optional(),
  /** How a deferred gate was settled (`expired`: no decision before its deadline), by whom, when. */
  qualityGateDecision: z.enum(["allow", "deny", "expired"]).optional(),
  qualityGateDecidedBy: z.string().optional(),
  qualityGateDecidedAt: z.string().optional(),
  /** A held gate (`qualityGateStatus: "held"`): what holds it (`approval`, `fault`), and why in words. */
  qualityGateHeld: z.enum(["approval", "fault"]).optional(),
  qualityGateHeldReason: z.string().optional(),
  /** The tree's budget was spent when this gate failed: nothing more was made, and the lead was told. */
  qualityGateEscalated: z.boolean().optional(),
});
export type GateMetadataPatch = z.infer<typeof GateMetadataPatchSchema>;

/** Merged into the source task's `metadata` when the gate reopens it. */
const ReopenMetadataSchema = z.object({
  reopenedByQualityGateAt: z.string(),
  reopenedByQualityGateHook: z.string(),
  reopenedByQualityGateCount: z.number().int().positive(),
  /** The event key of the reopen, so that a retry of that key never reopens twice. */
  reopenedByQualityGateKey: z.string(),
  /** The task's gate round after the reopen (contract/events.ts gateRound): its next completion is a new event. */
  qualityGateRound: z.number().int().positive(),
});
type ReopenMetadata = z.infer<typeof ReopenMetadataSchema>;

/** The `metadata` of a follow-up task; `qualityGateFollowupFor` lets remediate find one already created. */
const FollowupMetadataSchema = z.object({
  qualityGateFollowupFor: z.string(),
  qualityGateSourceTaskId: z.string(),
  /** The task at the root of the follow-up's tree, whose budget it spends (policy/gate-life.ts). */
  qualityGateRootTaskId: z.string(),
  qualityGateFollowupHook: z.string(),
  qualityGateFollowupEvent: z.enum(["task_completed", "task_failed"]),
  /**
   * The description quotes the failing gate's output between marker lines (text/messages.ts
   * QUOTED_OUTPUT_BEGIN): the leader's words, not the work; the document a gate is shown leaves them out.
   */
  qualityGateQuotedOutput: z.literal(true),
});
type FollowupMetadata = z.infer<typeof FollowupMetadataSchema>;

// ---------------------------------------------------------------------------------------------
// The plan

/** What happens to the source task of a failed `task_completed` gate under a reopening policy. */
export type ReopenDecision =
  | {
      kind: "reopen";
      /** The reopen count after this reopen, and the cap. */
      count: number;
      max: number;
      /** Applied in the same locked write as `metadataPatch`. */
      /** `description`: the task's, with the gate's note of this reopen at its head (contract/gate-note.ts). */
      patch: { status: "pending"; metadata: ReopenMetadata; description: string };
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

/** The note to the lead when a tree's budget is spent: sent once per root (team namespace). */
export interface EscalationPlan {
  root: string;
  text: string;
}

/** A unit of the tree's budget this plan spends, recorded on the root by the event key (policy/gate-life.ts). */
export interface BudgetSpend {
  root: string;
  /** Units spent once this one is (for the words: `reopen 2 of 3`). */
  spent: number;
  max: number;
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
  /**
   * The `task_assignment` the owner of a reopened task gets, once per reopen, so that a worker that
   * starts owned tasks only when assigned takes it up again; null when there is no reopen (or it is off).
   */
  reassign: { to: string; message: TaskAssignment } | null;
  /**
   * A pass of a completion whose own reopen (written by a leader killed before the rest of it) left the
   * task `pending` and untouched: the reopen undone in the pass's write, the task `completed` again as
   * its worker left it, in the gate round it was completed in (`round`). Null otherwise.
   */
  undoReopen: { round: number } | null;
  /** The unit of the tree's budget this failure spends (before the task is written); null when none. */
  spend: BudgetSpend | null;
  /** The tree's budget is spent: the lead is told once per root; null otherwise. */
  escalation: EscalationPlan | null;
  /** The gate life's transition this plan makes (policy/gate-life.ts), for the log. */
  gate: { to: GateState; cause?: HoldCause };
  /**
   * What the plan does, in order (text/actions.ts renders the words: `reopened (1/3)`, `nudge alice`…);
   * `[{kind: "none"}]` when nothing.
   */
  actions: PolicyAction[];
  /**
   * Messages not sent because the member's name is not a safe file name (its inbox would be
   * another's), one line each: the policy errors of the log.
   */
  refused: string[];
}

/**
 * Whether `task` holds a newer event than the one judged (`key`): the worker completed (or failed) it
 * again while the gate ran. Such a task is not reopened (that would throw away work nobody has checked
 * yet; its own gate decides), and the leader's write leaves its `updatedAt` alone (remediate.ts
 * applyToTask). A task that stands for no event holds no newer one.
 *
 * A completion in a later gate round (contract/events.ts gateRound) is newer whatever its stamp; one
 * whose file says an earlier round than the key judged is the same completion: the worker wrote an
 * old copy of the metadata back, and the leader's memory of the round (which made the key) wins.
 */
export function holdsNewerEvent(task: Task, key: string): boolean {
  const current = taskEvent(task);
  if (current === null || current.key === key) return false;
  const now = splitRound(current.key);
  const judged = splitRound(key);
  return now.base !== judged.base || now.round > judged.round;
}

/**
 * Whether a planned action is done by the task's own write (the first step: reopen, suppression, a
 * hold) or said by it (a retry, a refusal), rather than by a later step that sends or makes something
 * (each of those says its own action once it is done).
 */
export function doneWithTaskWrite(action: PolicyAction): boolean {
  switch (action.kind) {
    case "overtaken":
    case "already_applied":
    case "reopened":
    case "reopen_suppressed":
    case "reopen_skipped":
    case "deferred":
    case "held":
    case "told_before":
    case "refused":
    case "reopen_undone":
    case "reopen_kept":
      return true;
    case "none":
    case "reassigned":
    case "followup":
    case "escalated":
    case "nudge":
    case "told_waits":
      return false;
    default:
      return unreachable(action);
  }
}
