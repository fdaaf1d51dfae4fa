/**
 * A start gate's answer, applied (`task_started`: a worker claimed a task). A claim cannot be undone
 * before it happens, so a denial compensates: under the task lock, if the task still holds the very
 * claim the gate judged (the same event key: in progress, same owner, same claim stamp), it goes back
 * to `pending` without an owner, with the denial in its metadata; then the member whose claim it was
 * is told why, once per event (team/sent-log.ts). An allow writes nothing — unless the task still
 * says its last claim was denied, which the allow then clears. Every step is idempotent per event key,
 * so a retry after a crash (the hook ran again) neither counts nor tells twice.
 *
 * Why an allow writes nothing: a start gate runs on every claim, while the worker is starting its
 * work. A write there is a locked read-modify-write of the task that worker is about to write, every
 * time, for a record the hook log and the ledger already keep; and each write moves `updatedAt`,
 * which runtimes read, and wakes every watcher of the list again. So the allow is in the log only.
 */
import { z } from "zod";
import type { MailboxMessage, Task } from "../contract/team-files.js";
import { describeError } from "../contract/errors.js";
import { taskEvent } from "../contract/events.js";
import type { FailureMode } from "../settings/team-settings.js";
import { isSafeName, sanitizeName } from "../team/paths.js";
import { sentId } from "../team/sent-log.js";
import { updateTask } from "../team/tasks.js";
import { forTheTeam, startDeniedText, unsafeName } from "../text/messages.js";
import { type RemediationTarget, sendOnce } from "./remediate.js";
import { nextRound } from "../policy/gate-life.js";

/**
 * Merged into the task's `metadata` when a start gate denies its claim (docs/hook-contract.md,
 * "task_started"). `qualityGateStartDenied` says whether the task's last judged claim was denied: an
 * allow of a later claim sets it to false and leaves the rest as the record of that denial.
 */
const StartDenialMetadataSchema = z.object({
  qualityGateStartDenied: z.boolean(),
  qualityGateStartDeniedAt: z.string(),
  /** The gate's failure summary: `denied (deps.open) • task #2 is not done`, `exit code 1 • …`. */
  qualityGateStartDeniedReason: z.string(),
  /** The gate that decided (gates/chain.ts gateName). */
  qualityGateStartDeniedHook: z.string(),
  /** Claims of this task denied so far. */
  qualityGateStartDeniedCount: z.number().int().positive(),
  /** The event key of the denied claim: a retry of that key is recognised by it. */
  qualityGateStartDeniedKey: z.string(),
  /** Whose claim it was (the owner the denial removed). */
  qualityGateStartDeniedMember: z.string().optional(),
  /** The code of the gate's verdict, when it gave one. */
  qualityGateStartDeniedCode: z.string().optional(),
  /** The task's gate round after the denial (contract/events.ts gateRound): its next completion is a new event. */
  qualityGateRound: z.number().int().positive(),
});
type StartDenialMetadata = z.infer<typeof StartDenialMetadataSchema>;

/** Where and when, as for the failure policy; `key` is the claim's (`task_started:<id>:<owner>:<stamp>`). */
export interface StartGateInput
  extends Pick<
    RemediationTarget,
    "teamDir" | "taskListId" | "taskId" | "key" | "leadName" | "now" | "sent" | "lockTimeoutMs"
  > {
  /** How the chain counted (after the failure mode). */
  passed: boolean;
  failureMode: FailureMode;
  summary: string;
  /** The gate that decided, as policy writes name it. */
  hookName: string;
  code?: string | undefined;
  /** Whose claim it was, when known (the event's member). */
  member: string | null;
  /** The deciding run's log, quoted to the member. */
  logFile: string | null;
  /** The highest gate round the leader knows for the task (its ledger); the denial goes past it. */
  round?: number | undefined;
}

/** What to do with the task, decided under its lock from the task as it is then. Pure. */
type StartPlan =
  /** Denied, and the claim is still there: put back (`next`). */
  | { kind: "revert"; next: Task; count: number; to: string | null }
  /** Denied, and this claim was put back before (a retry after a crash). */
  | { kind: "reverted"; count: number; to: string | null }
  /** Denied, but the claim is gone (completed, given up, claimed again, the file deleted): nothing to put back. */
  | { kind: "moved_on"; status: string | null; to: string | null }
  /** Allowed, and the task still said its last claim was denied: that is cleared (`next`). */
  | { kind: "clear"; next: Task }
  /** Allowed: nothing written. */
  | { kind: "none" };

export function planStart(task: Task | null, input: StartGateInput): StartPlan {
  const meta = task?.metadata ?? {};
  const sameClaim = task !== null && taskEvent(task)?.key === input.key;
  if (input.passed) {
    if (!task || !sameClaim || meta.qualityGateStartDenied !== true) return { kind: "none" };
    return {
      kind: "clear",
      next: { ...task, updatedAt: input.now, metadata: { ...meta, qualityGateStartDenied: false } },
    };
  }
  const owner = nonEmpty(task?.owner);
  // The claim judged is the owner's (the key names the owner): it is the owner who is told, whoever
  // `run --member` said caused the event; a claim gone since is told to the event's member.
  const to = (sameClaim ? owner : null) ?? nonEmpty(input.member);
  // A retry is recognised by the record only once the claim is gone: a task that still holds the
  // claim is put back whatever its metadata says (a worker writes that metadata too).
  if (!task || !sameClaim) {
    if (meta.qualityGateStartDeniedKey === input.key)
      return { kind: "reverted", count: counter(meta.qualityGateStartDeniedCount), to };
    return { kind: "moved_on", status: task?.status ?? null, to };
  }
  const count = counter(meta.qualityGateStartDeniedCount) + 1;
  const denial: StartDenialMetadata = {
    qualityGateStartDenied: true,
    qualityGateStartDeniedAt: input.now,
    qualityGateStartDeniedReason: forTheTeam(input.summary),
    qualityGateStartDeniedHook: input.hookName,
    qualityGateStartDeniedCount: count,
    qualityGateStartDeniedKey: input.key,
    ...(owner ? { qualityGateStartDeniedMember: owner } : {}),
    ...(input.code ? { qualityGateStartDeniedCode: input.code } : {}),
    // The claim is ended by the leader: whatever completion comes next is a new event.
    qualityGateRound: nextRound(task, input.key, input.round),
  };
  // `owner: undefined`: team/tasks.ts updateTask lays `next` over the file as read (top-level keys
  // only), so the key must be there to take the owner away (JSON leaves it out). `metadata` is
  // replaced whole: a code of an earlier denial does not linger.
  const { qualityGateStartDeniedCode: _earlier, ...kept } = meta;
  const next: Task = {
    ...task,
    owner: undefined,
    status: "pending",
    updatedAt: input.now,
    metadata: { ...kept, ...denial },
  };
  return { kind: "revert", next, count, to };
}

/** What applying a start gate's answer did: the shape event/invoke.ts settles and logs. */
interface StartGateDone {
  plan: StartPlan;
  summary: string;
  /** `claim put back (denial 1)`, `told alice`, or `none`. */
  actions: string[];
  /** One line per step that failed (the first failure stops the steps). */
  errors: string[];
  /** Messages not sent to a member whose name is not a safe file name. */
  refused: string[];
  complete: boolean;
}

/** Decides under the task lock and applies: the task write, then the message to the member. Never throws. */
export async function applyStartGate(input: StartGateInput): Promise<StartGateDone> {
  const lock = input.lockTimeoutMs === undefined ? {} : { timeoutMs: input.lockTimeoutMs };
  let decided: StartPlan | undefined;
  const actions: string[] = [];
  const refused: string[] = [];
  const done = (plan: StartPlan, error?: string): StartGateDone => ({
    plan,
    summary: input.summary,
    actions: actions.length > 0 ? actions : ["none"],
    errors: error ? [error] : [],
    refused,
    complete: error === undefined,
  });
  try {
    const updated = await updateTask(
      input.teamDir,
      input.taskListId,
      input.taskId,
      (task) => {
        decided = planStart(task, input);
        return decided.kind === "revert" || decided.kind === "clear" ? decided.next : undefined;
      },
      { label: `start gate ${input.key}`, ...lock },
    );
    if (!updated.ok && updated.problem.kind !== "missing")
      return done(decided ?? planStart(null, input), `task not written: ${updated.problem.message}`);
  } catch (error) {
    return done(decided ?? planStart(null, input), `task not written: ${describeError(error)}`);
  }
  const plan = decided ?? planStart(null, input); // the task file is gone
  switch (plan.kind) {
    case "none":
      return done(plan);
    case "clear":
      actions.push("earlier start denial cleared");
      return done(plan);
    case "revert":
      actions.push(`claim put back (denial ${plan.count})`);
      break;
    case "reverted":
      actions.push(`claim was put back (denial ${plan.count})`);
      break;
    case "moved_on":
      actions.push(`claim not put back (${plan.status === null ? "task file missing" : `task is ${plan.status} now`})`);
      break;
  }
  const to = plan.to;
  if (to === null) return done(plan);
  if (!isSafeName(to)) {
    actions.push(`no message to ${JSON.stringify(to)}`);
    refused.push(
      `no message to ${JSON.stringify(to)}: ${unsafeName(to, sanitizeName(to))}; nothing was sent to that inbox`,
    );
    return done(plan);
  }
  const text = startDeniedText({
    hookName: input.hookName,
    taskId: input.taskId,
    summary: forTheTeam(input.summary),
    putBack: plan.kind === "moved_on" ? { status: plan.status } : null,
    count: plan.kind === "moved_on" ? null : plan.count,
    logFile: input.logFile,
  });
  const message: MailboxMessage = {
    from: input.leadName,
    text,
    timestamp: input.now,
    read: false,
    qualityGateEventKey: input.key,
  };
  const sent = await sendOnce(input.sent, {
    teamDir: input.teamDir,
    namespace: input.taskListId,
    to,
    id: sentId("start-denied", input.key, to),
    message,
    isIt: (m) => m.qualityGateEventKey === input.key,
    lockTimeoutMs: input.lockTimeoutMs,
  });
  if (sent.error) return done(plan, sent.error);
  actions.push(sent.already ? `told ${to} (sent before)` : `told ${to}`);
  return done(plan);
}

/** The log's `policy` block of a start gate: what it decided and did (docs/logs.md). */
export function startGateRecord(
  input: Pick<StartGateInput, "failureMode" | "passed">,
  done: StartGateDone,
): Record<string, unknown> {
  const { plan } = done;
  return {
    onDenial: "revert_claim",
    failureMode: input.failureMode,
    passed: input.passed,
    summary: done.summary,
    alreadyApplied: plan.kind === "reverted",
    claim:
      plan.kind === "revert" || plan.kind === "reverted"
        ? "put_back"
        : plan.kind === "moved_on"
          ? "moved_on"
          : plan.kind === "clear"
            ? "cleared"
            : "kept",
    deniedCount: plan.kind === "revert" || plan.kind === "reverted" ? plan.count : null,
    told:
      done.complete && plan.kind !== "none" && plan.kind !== "clear" && plan.to !== null && isSafeName(plan.to)
        ? plan.to
        : null,
    actions: done.actions,
    errors: [...done.refused, ...done.errors],
    ...(done.complete ? {} : { complete: false }),
  };
}

/**
 * A task's start denial as the task API's status answer shows it (docs/remote-gates.md): null when
 * no start gate ever denied a claim of it; else the last denial, and whether it still stands
 * (`active`: false once a later claim was allowed). Pure: read from the task's metadata.
 */
interface StartDenialStatus {
  active: boolean;
  at: string;
  hook: string | null;
  reason: string | null;
  code: string | null;
  count: number;
}

export function startDenialOf(task: Task): StartDenialStatus | null {
  const meta = task.metadata ?? {};
  const at = meta.qualityGateStartDeniedAt;
  if (typeof at !== "string") return null;
  const text = (value: unknown): string | null => (typeof value === "string" ? value : null);
  return {
    active: meta.qualityGateStartDenied === true,
    at,
    hook: text(meta.qualityGateStartDeniedHook),
    reason: text(meta.qualityGateStartDeniedReason),
    code: text(meta.qualityGateStartDeniedCode),
    count: counter(meta.qualityGateStartDeniedCount),
  };
}

/** A stored counter: a number ≥ 0 (fractions floored); anything else counts as 0. */
function counter(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

function nonEmpty(value: string | null | undefined): string | null {
  return value !== undefined && value !== null && value.trim() !== "" ? value : null;
}
