/**
 * What the failure policy did (or plans to do) after one task-event gate, as data, and its words: the
 * one place an action becomes the short text of a log's `policy.actions`, the leader's one-line output
 * and a deferral's `applied.actions` (docs/logs.md). Everything else reads the kinds.
 */
import { unreachable } from "../contract/errors.js";

/** Whether a message went out now, or had gone out before (a retry: the sent-log says so). */
type Sent = "now" | "before";

/**
 * One action of the failure policy. A planned action (policy/decide.ts) has no `sent`; the same action
 * applied (event/remediate.ts) says whether its message went now or before.
 */
export type PolicyAction =
  /** Nothing to do (a pass; a failure nothing follows). */
  | { kind: "none" }
  /** A newer gate of the task is recorded: its metadata is left as it is. */
  | { kind: "overtaken" }
  /** The task recorded this event's failure before: a retry counts nothing again. */
  | { kind: "already_applied" }
  /** `earlier`: the task was reopened by this event before (a retry), not now. */
  | { kind: "reopened"; count: number; max: number; earlier: boolean }
  | { kind: "reopen_suppressed"; count: number; max: number }
  /**
   * A pass of a completion whose own reopen (its leader killed before the rest) left the task pending:
   * undone (the task `completed` again), or kept (its worker took it up again: `status`, the task left).
   */
  | { kind: "reopen_undone" }
  | { kind: "reopen_kept"; status: string }
  /** `status`: the task's status now (null: its file is gone). */
  | { kind: "reopen_skipped"; status: string | null }
  | { kind: "reassigned"; to: string; sent?: Sent }
  /** `taskId`: the follow-up made (absent while planned); `existing`: an earlier attempt made it. */
  | { kind: "followup"; owner: string | null; taskId?: string; existing?: boolean }
  /** The tree's budget is spent: the lead is told (`sent`, once applied). */
  | { kind: "escalated"; root: string; sent?: Sent }
  | { kind: "nudge"; to: string; sent?: Sent }
  /** A gate answered defer: held until its decision or its deadline. */
  | { kind: "deferred"; until: string }
  /** The gate could not judge the work: held for the lead's approval, or for our own fault. */
  | { kind: "held"; cause: "approval" | "fault" }
  /** The worker told that its event waits. */
  | { kind: "told_waits"; to: string; sent?: Sent }
  /** The worker was told of this hold by an earlier completion's (the same hold): not again. */
  | { kind: "told_before"; to: string }
  /** A message not sent: the member's name is not a safe file name (its inbox would be another's). */
  | { kind: "refused"; role: "nudge" | "follow-up owner"; name: string };

/** The words of one action, as the logs and the output have always shown them. */
export function actionText(action: PolicyAction): string {
  switch (action.kind) {
    case "none":
      return "none";
    case "overtaken":
      return "task metadata left (a newer gate is recorded)";
    case "already_applied":
      return "already applied";
    case "reopened":
      return `${action.earlier ? "was reopened" : "reopened"} (${action.count}/${action.max})`;
    case "reopen_suppressed":
      return `reopen suppressed (${action.count}/${action.max})`;
    case "reopen_undone":
      return "reopen undone";
    case "reopen_kept":
      return `reopen kept (task is ${action.status}: the pass not written)`;
    case "reopen_skipped":
      return `reopen skipped (${action.status === null ? "task file missing" : `task is ${action.status}`})`;
    case "reassigned":
      return `reassigned to ${action.to}${before(action.sent, " (sent before)")}`;
    case "followup":
      if (action.taskId === undefined) return action.owner ? `follow-up for ${action.owner}` : "follow-up (no owner)";
      return `follow-up #${action.taskId}${action.existing ? " (existing)" : ""}${action.owner ? ` for ${action.owner}` : ""}`;
    case "escalated":
      if (action.sent === undefined) return `budget of task #${action.root} spent: lead told`;
      return `lead told the budget of task #${action.root} is spent${before(action.sent, " (before)")}`;
    case "nudge":
      return `nudge ${action.to}${before(action.sent, " (sent before)")}`;
    case "deferred":
      return `held until ${action.until}`;
    case "held":
      return action.cause === "approval"
        ? "held (waiting for the team lead's approval)"
        : "held (our fault: it runs again)";
    case "told_waits":
      return `told ${action.to} it waits${before(action.sent, " (sent before)")}`;
    case "told_before":
      return `${action.to} told before (the same hold)`;
    case "refused":
      return action.role === "nudge"
        ? `no nudge to ${JSON.stringify(action.name)}`
        : `no follow-up owner ${JSON.stringify(action.name)}`;
    default:
      return unreachable(action);
  }
}

/** The words of a list of actions; `none` for an empty one. */
export function actionsText(actions: readonly PolicyAction[]): string[] {
  return actions.length === 0 ? ["none"] : actions.map(actionText);
}

function before(sent: Sent | undefined, words: string): string {
  return sent === "before" ? words : "";
}
