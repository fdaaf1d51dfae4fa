/**
 * Applies the failure policy of one task-event gate to the team dir: the gate metadata (and reopen)
 * in one locked write of the task, then the follow-up task and its assignment, then the nudge. The
 * plan is decided inside the task lock from the task as it is then, so a retry of the same event key
 * sees what the first attempt wrote and never counts, reopens or creates twice. A step that fails is
 * reported and the next steps still run: a lost nudge must not cost the follow-up.
 */
import type { MailboxMessage, Task } from "./contract.js";
import { describeError } from "./errors.js";
import { taskEvent } from "./events.js";
import { appendMessage, readInbox } from "./mailbox.js";
import type { RemediationPlan } from "./policy.js";
import { createTask, readTask, updateTask } from "./tasks.js";
import { taskFile } from "./paths.js";

export interface RemediationTarget {
  teamDir: string;
  taskListId: string;
  taskId: string;
  key: string;
  leadName: string;
  now: string;
}

export interface RemediationDone {
  plan: RemediationPlan;
  /** What was really done (the plan's actions, corrected by what happened). */
  actions: string[];
  followupTaskId: string | null;
  /** One line per step that failed. */
  errors: string[];
}

/** Decides (through `decideFor`, with the task read under its lock) and applies the plan. */
export async function remediate(target: RemediationTarget, decideFor: (task: Task | null) => RemediationPlan): Promise<RemediationDone> {
  const errors: string[] = [];
  let decided: RemediationPlan | undefined;
  let metadataWritten = false;

  try {
    const updated = await updateTask(
      target.teamDir,
      target.taskListId,
      target.taskId,
      (task) => {
        decided = decideFor(task);
        return applyToTask(task, decided, target.now, target.key);
      },
      { label: `quality gate ${target.key}` },
    );
    if (!updated.ok) {
      if (updated.problem.kind !== "missing") errors.push(`gate metadata not written: ${updated.problem.message}`);
      decided ??= decideFor(null);
    } else {
      metadataWritten = updated.written;
    }
  } catch (error) {
    errors.push(`gate metadata not written: ${describeError(error)}`);
  }
  // Only a failed lock or write leaves no decision: decide from the file as it is, unlocked.
  const plan = decided ?? decideFor(await readTaskOrNull(target));

  const actions = [...plan.actions];
  errors.push(...plan.refused);
  let followupTaskId: string | null = null;
  if (plan.followup) {
    const followup = plan.followup;
    // Looking for a follow-up made by an earlier attempt reads every task of the list while holding
    // `.highwatermark.lock` (seconds at 10,000 tasks, and every worker creating a task waits), so only
    // a possible retry looks: the gate metadata is written before the follow-up, so a first attempt
    // that wrote it (not `alreadyApplied`) cannot have one. test/slow/leader-followup-scale.test.ts.
    const mayExist = plan.alreadyApplied || !metadataWritten;
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
        },
      );
      followupTaskId = created.task.id;
      replaceAction(actions, "follow-up", `follow-up #${created.task.id}${created.created ? "" : " (existing)"}${followup.owner ? ` for ${followup.owner}` : ""}`);
      if (followup.owner && followup.assignment) {
        const assignment = followup.assignment(created.task.id);
        const sent = await sendOnce(target, followup.owner, JSON.stringify(assignment), (m) => parsesAs(m.text, "task_assignment", created.task.id));
        if (sent) errors.push(sent);
      }
    } catch (error) {
      errors.push(`follow-up task not created: ${describeError(error)}`);
      replaceAction(actions, "follow-up", "follow-up failed");
    }
  }

  if (plan.nudge?.to) {
    const text = plan.nudge.text(followupTaskId);
    const sent = await sendOnce(target, plan.nudge.to, text, (m) => m.qualityGateEventKey === target.key && !parsesAs(m.text, "task_assignment"));
    if (sent) errors.push(sent);
  }
  return { plan, actions, followupTaskId, errors };
}

/**
 * The task with the plan's metadata (and reopen) laid over it; `updatedAt` marks the leader's write,
 * unless the task holds a newer event than the one judged (the worker completed again while the gate
 * ran): a completion without `completedAt` is keyed by its `updatedAt`, and a new one would make it
 * read as this older completion's key (events.ts completionStamp), hiding it from a leader that had
 * not seen it yet. test/integration/remediate-stale.test.ts.
 */
function applyToTask(task: Task, plan: RemediationPlan, now: string, key: string): Task | undefined {
  if (!plan.metadataPatch) return undefined;
  const current = taskEvent(task);
  const updatedAt = current !== null && current.key !== key ? task.updatedAt : now;
  const next: Task = { ...task, updatedAt, metadata: { ...(task.metadata ?? {}), ...plan.metadataPatch } };
  if (plan.reopen?.kind === "reopen" && task.status === "completed") {
    next.status = plan.reopen.patch.status;
    next.metadata = { ...next.metadata, ...plan.reopen.patch.metadata };
  }
  return next;
}

async function readTaskOrNull(target: RemediationTarget): Promise<Task | null> {
  const read = await readTask(taskFile(target.teamDir, target.taskListId, target.taskId));
  return read.ok ? read.value : null;
}

/**
 * Appends a message from the leader to `to`'s inbox in the task namespace, unless `alreadySent` finds
 * it there (a retry). Messages carry the event key, which is how a retry recognises its own.
 * Returns an error line, or null.
 */
async function sendOnce(
  target: RemediationTarget,
  to: string,
  text: string,
  alreadySent: (message: MailboxMessage) => boolean,
): Promise<string | null> {
  try {
    const inbox = await readInbox(target.teamDir, target.taskListId, to);
    if (inbox.ok && inbox.messages.some((entry) => alreadySent(entry.message))) return null;
    const message: MailboxMessage = { from: target.leadName, text, timestamp: target.now, read: false, qualityGateEventKey: target.key };
    const appended = await appendMessage(target.teamDir, target.taskListId, to, message, { label: `quality gate ${target.key}` });
    return appended.ok ? null : `message to ${to} not sent: ${appended.problem.message}`;
  } catch (error) {
    return `message to ${to} not sent: ${describeError(error)}`;
  }
}

function parsesAs(text: string, type: string, taskId?: string): boolean {
  if (!text.includes(type)) return false;
  try {
    const value = JSON.parse(text) as { type?: unknown; taskId?: unknown };
    return value.type === type && (taskId === undefined || value.taskId === taskId);
  } catch {
    return false; // prose that mentions the word
  }
}

function replaceAction(actions: string[], prefix: string, replacement: string): void {
  const index = actions.findIndex((a) => a.startsWith(prefix));
  if (index >= 0) actions[index] = replacement;
  else actions.push(replacement);
}
