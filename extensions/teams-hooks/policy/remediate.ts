/**
 * Applies the failure policy of one task-event gate to the team dir, in steps, each only once the one
 * before it is on disk: the gate metadata (and reopen) in one locked write of the task, then the
 * follow-up task, its assignment, and the nudge. The plan is decided inside the task lock from the
 * task as it is then, so a retry of the same event key sees what an earlier attempt wrote and never
 * counts, reopens or creates twice; messages go out at most once per event (team/sent-log.ts).
 *
 * A step that fails stops the remediation there (`complete: false`): what was applied is listed, the
 * rest is not attempted (a nudge must not tell of a reopen that did not happen), and the caller tries
 * the whole remediation again later — every step is idempotent per event key.
 */
import type { MailboxMessage, Task } from "../contract/team-files.js";
import { patchTask, withoutNeverWritable, type JsonObject } from "../contract/merge-patch.js";
import { describeError } from "../contract/errors.js";
import { appendMessage, readInbox } from "../team/mailbox.js";
import { holdsNewerEvent, type RemediationPlan } from "./plan.js";
import { sentId, type SentLog } from "../team/sent-log.js";
import { createTask, updateTask } from "../team/tasks.js";
import type { FailureMode } from "../settings/hooks-config.js";
import type { EffectivePolicy } from "../settings/options.js";

export interface RemediationTarget {
  teamDir: string;
  taskListId: string;
  taskId: string;
  key: string;
  leadName: string;
  now: string;
  /** Where messages are recorded before they are sent (at most once per event). */
  sent: SentLog;
  /** How long to wait for a lock (task, `.highwatermark`, inbox); default the lock protocol's 10 s. */
  lockTimeoutMs?: number;
  /**
   * The patches of a chain that passed, in chain order, already cut to the writable fields: laid over
   * the task in the same locked write as the gate's metadata, which goes on top (invoke/patches.ts).
   */
  taskPatches?: readonly JsonObject[];
}

export interface RemediationDone {
  plan: RemediationPlan;
  /** What was applied, in order (`reopened (1/3)`, `follow-up #12 for bob`, `nudge bob`), or `none`. */
  actions: string[];
  followupTaskId: string | null;
  /** One line per step that failed (at most one: the first failure stops the steps). */
  errors: string[];
  /** Messages the plan refused to send (an unsafe member name): said, but not a failure to try again. */
  refused: string[];
  /** False when a step failed: the remediation is not done and must be tried again. */
  complete: boolean;
  /** What became of `taskPatches` (absent when none were given): written, or why not. */
  patch?: { written: true } | { written: false; why: string };
}

/** Decides (through `decideFor`, with the task read under its lock) and applies the plan. */
export async function remediate(target: RemediationTarget, decideFor: (task: Task | null) => RemediationPlan): Promise<RemediationDone> {
  const lock = target.lockTimeoutMs === undefined ? {} : { timeoutMs: target.lockTimeoutMs };
  let decided: RemediationPlan | undefined;
  let metadataWritten = false;
  /** The task recorded this event before this write: a retry, or a held gate (whose other holds may have made a follow-up). */
  let seenBefore = false;
  const actions: string[] = [];
  const patches = target.taskPatches ?? [];
  let patch: RemediationDone["patch"] = patches.length > 0 ? { written: false, why: "the task file is gone: the patch was not written" } : undefined;
  const withPatch = (done: Omit<RemediationDone, "patch">): RemediationDone => (patch ? { ...done, patch } : done);
  const stop = (plan: RemediationPlan, error: string, followupTaskId: string | null = null): RemediationDone =>
    withPatch({
      plan,
      actions: actions.length > 0 ? actions : ["none"],
      followupTaskId,
      errors: [error],
      refused: [...plan.refused],
      complete: false,
    });

  try {
    const updated = await updateTask(
      target.teamDir,
      target.taskListId,
      target.taskId,
      (task) => {
        seenBefore = task.metadata?.qualityGateEventKey === target.key;
        decided = decideFor(task);
        if (patches.length === 0) return applyToTask(task, decided, target.now, target.key);
        if (!decided.metadataPatch) {
          patch = { written: false, why: "the task holds a newer gate's record: the patch was not written" };
          return undefined;
        }
        const patched = patchAll(task, patches);
        patch = patched.ok ? { written: true } : { written: false, why: `${patched.problem}: the patch was not written` };
        return applyToTask(patched.ok ? patched.task : task, decided, target.now, target.key);
      },
      { label: `quality gate ${target.key}`, ...lock },
    );
    if (!updated.ok && updated.problem.kind !== "missing") {
      // Decided (if at all) for a task that was not written: nothing of the plan happened.
      return stop(decided ?? decideFor(null), `gate metadata not written: ${updated.problem.message}`);
    }
    metadataWritten = updated.ok && updated.written;
  } catch (error) {
    if (patch?.written) patch = { written: false, why: "the task write failed: the patch was not written" };
    return stop(decided ?? decideFor(null), `gate metadata not written: ${describeError(error)}`);
  }
  const plan = decided ?? decideFor(null); // the task file is gone: the plan without task writes
  // The task's own outcome (reopened, suppressed, skipped, a retry) is on disk now.
  actions.push(...plan.actions.filter((a) => a !== "none" && !a.startsWith("follow-up") && !a.startsWith("nudge")));

  let followupTaskId: string | null = null;
  if (plan.followup) {
    const followup = plan.followup;
    // Looking for a follow-up made by an earlier attempt reads every task of the list while holding
    // `.highwatermark.lock` (seconds at 10,000 tasks, and every worker creating a task waits), so only
    // a possible retry looks: the gate metadata is written before the follow-up, so a first attempt
    // that wrote it cannot have one. test/slow/leader-followup-scale.test.ts. A task that recorded
    // this key before may: a retry (`alreadyApplied`), or the decision of a held gate whose event was
    // held twice (the leader and `run --apply-policy`): the other hold's decision, applied first,
    // made its follow-up without writing the task (a newer hold was recorded). test/integration/deferral.test.ts.
    const mayExist = plan.alreadyApplied || !metadataWritten || seenBefore;
    try {
      const created = await createTask(
        target.teamDir,
        target.taskListId,
        (id) => ({
          id,
          subject: followup.subject,
          description: followup.description,
          ...(followup.owner ? { owner: followup.owner } : {}),
          status: "pending",
          blocks: [],
          blockedBy: [],
          metadata: { ...followup.metadata },
          createdAt: target.now,
          updatedAt: target.now,
        }),
        {
          ...(mayExist ? { existing: (tasks: Task[]) => tasks.find((t) => t.metadata?.qualityGateFollowupFor === target.key) } : {}),
          label: `follow-up for ${target.key}`,
          ...lock,
        },
      );
      followupTaskId = created.task.id;
      actions.push(`follow-up #${created.task.id}${created.created ? "" : " (existing)"}${followup.owner ? ` for ${followup.owner}` : ""}`);
    } catch (error) {
      return stop(plan, `follow-up task not created: ${describeError(error)}`);
    }
    if (followup.owner && followup.assignment) {
      const sent = await sendToMember(target, `assignment-${followupTaskId}`, followup.owner, JSON.stringify(followup.assignment(followupTaskId)));
      if (sent.error) return stop(plan, sent.error, followupTaskId);
    }
  }

  if (plan.nudge?.to) {
    const to = plan.nudge.to;
    const sent = await sendToMember(target, "nudge", to, plan.nudge.text(followupTaskId));
    if (sent.error) return stop(plan, sent.error, followupTaskId);
    actions.push(sent.already ? `nudge ${to} (sent before)` : `nudge ${to}`);
  }
  return withPatch({ plan, actions: actions.length > 0 ? actions : ["none"], followupTaskId, errors: [], refused: [...plan.refused], complete: true });
}

/** The task with every patch laid over it in order (each cut once more to what may ever be written), or why not. */
function patchAll(task: Task, patches: readonly JsonObject[]): { ok: true; task: Task } | { ok: false; problem: string } {
  let current = task;
  for (const patch of patches) {
    const next = patchTask(current, withoutNeverWritable(patch));
    if (!next.ok) return next;
    current = next.task;
  }
  return { ok: true, task: current };
}

/**
 * The task with the plan's metadata (and reopen) laid over it; `updatedAt` marks the leader's write,
 * unless the task holds a newer event than the one judged (the worker completed again while the gate
 * ran): a completion without `completedAt` is keyed by its `updatedAt`, and a new one would make it
 * read as this older completion's key (contract/events.ts completionStamp), hiding it from a leader
 * that had not seen it yet (`holdsNewerEvent`, plan.ts). test/integration/remediate-stale.test.ts.
 */
function applyToTask(task: Task, plan: RemediationPlan, now: string, key: string): Task | undefined {
  if (!plan.metadataPatch) return undefined;
  const updatedAt = holdsNewerEvent(task, key) ? task.updatedAt : now;
  const next: Task = { ...task, updatedAt, metadata: { ...(task.metadata ?? {}), ...plan.metadataPatch } };
  if (plan.reopen?.kind === "reopen" && task.status === "completed") {
    next.status = plan.reopen.patch.status;
    next.metadata = { ...next.metadata, ...plan.reopen.patch.metadata };
  }
  return next;
}

/** The log's `policy` block of a failure policy applied (docs/logs.md). */
export function policyRecordOf(policy: EffectivePolicy, mode: FailureMode, done: RemediationDone): Record<string, unknown> {
  return {
    failureAction: policy.failureAction,
    maxReopensPerTask: policy.maxReopensPerTask,
    followupOwner: policy.followupOwner,
    failureMode: mode,
    passed: done.plan.passed,
    summary: done.plan.summary,
    alreadyApplied: done.plan.alreadyApplied,
    reopen: done.complete && done.plan.reopen ? { kind: done.plan.reopen.kind, count: done.plan.reopen.count, max: done.plan.reopen.max } : null,
    followupTaskId: done.followupTaskId,
    nudged: done.complete ? (done.plan.nudge?.to ?? null) : null,
    actions: done.actions,
    errors: [...done.refused, ...done.errors],
    // Absent when everything was applied (older logs have no such field either).
    ...(done.complete ? {} : { complete: false }),
  };
}

/** Appends a message from the leader to `to`'s inbox in the task namespace, once per event (sendOnce). */
async function sendToMember(target: RemediationTarget, kind: "nudge" | `assignment-${string}`, to: string, text: string): Promise<{ error: string | null; already: boolean }> {
  const message: MailboxMessage = { from: target.leadName, text, timestamp: target.now, read: false, qualityGateEventKey: target.key };
  return sendOnce(target.sent, {
    teamDir: target.teamDir,
    namespace: target.taskListId,
    to,
    id: sentId(kind, target.key, to),
    message,
    // What a crashed attempt may have left there: a message of this event, of this kind (a retry's
    // nudge may read differently: "was reopened" instead of "reopened").
    isIt: (m) => m.qualityGateEventKey === target.key && (kind === "nudge" ? assignmentTaskId(m.text) === null : `assignment-${assignmentTaskId(m.text) ?? ""}` === kind),
    ...(target.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: target.lockTimeoutMs }),
  });
}

export interface OnceMessage {
  teamDir: string;
  namespace: string;
  to: string;
  /** The sent-log id (sentId): what the message is, about what, for whom. */
  id: string;
  message: MailboxMessage;
  /** Recognises this message in the inbox (after a crash between claiming it and recording it sent). */
  isIt: (message: MailboxMessage) => boolean;
  lockTimeoutMs?: number;
}

/**
 * Appends `message` to an inbox unless the sent-log says it went out before (see team/sent-log.ts for
 * the guarantee). Never throws: an error line says what was not sent.
 */
export async function sendOnce(sent: SentLog, m: OnceMessage): Promise<{ error: string | null; already: boolean }> {
  const at = m.message.timestamp;
  try {
    const state = sent.state(m.id);
    if (state === "sent") return { error: null, already: true };
    if (state === "sending") {
      const inbox = await readInbox(m.teamDir, m.namespace, m.to);
      if (inbox.ok && inbox.messages.some((entry) => m.isIt(entry.message))) {
        sent.confirm(m.id, at);
        return { error: null, already: true };
      }
    }
    sent.claim(m.id, at);
  } catch (error) {
    return { error: `message to ${m.to} not sent (the sent-log cannot be written): ${describeError(error)}`, already: false };
  }
  try {
    const appended = await appendMessage(m.teamDir, m.namespace, m.to, m.message, {
      label: `pi-teams-hooks ${m.id}`,
      ...(m.lockTimeoutMs === undefined ? {} : { timeoutMs: m.lockTimeoutMs }),
    });
    if (appended.ok) {
      sent.confirm(m.id, at);
      return { error: null, already: false };
    }
    sent.release(m.id, at);
    return { error: `message to ${m.to} not sent: ${appended.problem.message}`, already: false };
  } catch (error) {
    sent.release(m.id, at);
    return { error: `message to ${m.to} not sent: ${describeError(error)}`, already: false };
  }
}

/** The task id of a `task_assignment` message's text, or null for any other text. */
function assignmentTaskId(text: string): string | null {
  if (!text.includes("task_assignment")) return null;
  try {
    const value = JSON.parse(text) as { type?: unknown; taskId?: unknown };
    return value.type === "task_assignment" && typeof value.taskId === "string" ? value.taskId : null;
  } catch {
    return null; // prose that mentions the word
  }
}
