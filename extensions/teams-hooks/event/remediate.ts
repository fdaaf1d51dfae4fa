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
import { withoutGateNote } from "../contract/gate-note.js";
import type { MailboxMessage, Task } from "../contract/team-files.js";
import { patchTask, withoutNeverWritable, type JsonObject } from "../contract/merge-patch.js";
import { describeError } from "../contract/errors.js";
import { appendMessage, readInbox } from "../team/mailbox.js";
import { holdsNewerEvent, type RemediationPlan } from "../policy/plan.js";
import { sentId, type SentLog } from "../team/sent-log.js";
import { createTask, readTask, updateTask } from "../team/tasks.js";
import { isSafeName, taskFile } from "../team/paths.js";
import { type TreeBudget, budgetKeys, rootOf, treeBudget } from "../policy/gate-life.js";
import type { FailureMode } from "../settings/team-settings.js";
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
   * the task in the same locked write as the gate's metadata, which goes on top (event/patches.ts).
   */
  taskPatches?: readonly JsonObject[];
  /** What the leader remembers of its tasks' gate lives (its ledger); absent for a hand run. */
  memory?: GateMemory;
  /** The tree's budget per root (`maxReopensPerTask`); absent: no policy spends one (a pass, a hold). */
  maxBudget?: number;
}

/**
 * The leader's memory of each task's gate life (leader/ledger.ts), which a worker rewriting a task's
 * metadata cannot lower: its gate round, the root of a follow-up, the units a root's tree has spent.
 */
export interface GateMemory {
  round(taskId: string): number;
  /** The root the leader recorded when it made `taskId` as a follow-up (undefined: the task is a root). */
  root(taskId: string): string | undefined;
  spent(rootId: string): number;
  /** Whether event `key` spent a unit of the root's budget already (a retry spends nothing more). */
  spentBy(rootId: string, key: string): boolean;
  /** Records that event `key` spends one unit of the root's budget (at most once per key); synchronous. */
  spend(rootId: string, key: string): void;
  /** Records the root of a follow-up the leader just made (before any event of the follow-up can run). */
  adopt(taskId: string, rootId: string): void;
}

/** What the leader should remember after this remediation (its ledger's `task` records). */
export interface Remembered {
  round?: { taskId: string; round: number };
  root?: { taskId: string; root: string };
  spent?: { root: string; key: string };
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
  /** For the leader's memory: the round a reopen wrote, a follow-up's root, a tree's units spent. */
  remembered: Remembered;
}

/** The budget a plan is decided with: the tree's, or none (a pass, a hold, a hand run without a policy). */
export interface DecideContext {
  budget: TreeBudget | null;
}

/**
 * Decides (through `decideFor`, with the task read under its lock) and applies the plan. A failure
 * that spends a unit of a follow-up's tree budget records it on the root first (policy/gate-life.ts),
 * then writes the task; a root spends in the same write as its own metadata.
 */
export async function remediate(
  target: RemediationTarget,
  decideFor: (task: Task | null, tree: DecideContext) => RemediationPlan,
): Promise<RemediationDone> {
  const lock = target.lockTimeoutMs === undefined ? {} : { timeoutMs: target.lockTimeoutMs };
  let decided: RemediationPlan | undefined;
  let metadataWritten = false;
  /**
   * The task recorded this event before this write: a retry, or a held gate (whose other holds may have made a
   * follow-up).
   */
  let seenBefore = false;
  const actions: string[] = [];
  const remembered: Remembered = {};
  const patches = target.taskPatches ?? [];
  let patch: RemediationDone["patch"] =
    patches.length > 0 ? { written: false, why: "the task file is gone: the patch was not written" } : undefined;
  const withPatch = (done: Omit<RemediationDone, "patch">): RemediationDone => (patch ? { ...done, patch } : done);
  const stop = (plan: RemediationPlan, error: string, followupTaskId: string | null = null): RemediationDone =>
    withPatch({
      plan,
      actions: actions.length > 0 ? actions : ["none"],
      followupTaskId,
      errors: [error],
      refused: [...plan.refused],
      complete: false,
      remembered,
    });

  // The tree: a follow-up's budget is its root's, spent there before the follow-up itself is written.
  let tree: (task: Task) => DecideContext = () => ({ budget: null });
  const memory = target.memory;
  if (target.maxBudget !== undefined) {
    const max = target.maxBudget;
    const found = await findRoot(target);
    if (memory) {
      // The leader's own record, alone: what the root's metadata says is a worker's to write.
      const root = found.kind === "other" ? found.root : target.taskId;
      const budget = (): TreeBudget =>
        treeBudget(root, null, max, { spent: memory.spent(root), spentBy: (key) => memory.spentBy(root, key) });
      tree = () => ({ budget: budget() });
    } else if (found.kind === "other") {
      let budget = treeBudget(found.root, found.task, max);
      // A dry decision on the task as it is now says whether this failure spends; the root records the
      // unit (once per event key) before the task is written, so that a crash in between never lets
      // the tree make more than its budget.
      const current = await readTask(taskFile(target.teamDir, target.taskListId, target.taskId));
      const dry = decideFor(current.ok ? current.value : null, { budget });
      if (dry.spend && !budget.spentBy(target.key)) {
        try {
          budget = await spendOnRoot(target, found.root, budget, lock);
        } catch (error) {
          return stop(dry, `the budget of task #${found.root} cannot be written: ${describeError(error)}`);
        }
      }
      tree = () => ({ budget });
    } else {
      tree = (task) => ({ budget: treeBudget(task.id, task, max) });
    }
  }

  try {
    const updated = await updateTask(
      target.teamDir,
      target.taskListId,
      target.taskId,
      (task) => {
        seenBefore = task.metadata?.qualityGateEventKey === target.key;
        decided = decideFor(task, tree(task));
        // Spent in the leader's memory as it is decided (no other event's decision comes in between),
        // before anything it pays for is made: a crash after this spends a unit for nothing, never one twice.
        const spend = decided.spend;
        if (spend && memory && !memory.spentBy(spend.root, target.key)) memory.spend(spend.root, target.key);
        if (patches.length === 0) return applyToTask(task, decided, target.now, target.key);
        if (!decided.metadataPatch) {
          patch = { written: false, why: "the task holds a newer gate's record: the patch was not written" };
          return undefined;
        }
        const patched = patchAll(task, patches);
        patch = patched.ok
          ? { written: true }
          : { written: false, why: `${patched.problem}: the patch was not written` };
        return applyToTask(patched.ok ? patched.task : task, decided, target.now, target.key);
      },
      { label: `quality gate ${target.key}`, ...lock },
    );
    if (!updated.ok && updated.problem.kind !== "missing") {
      // Decided (if at all) for a task that was not written: nothing of the plan happened.
      return stop(
        decided ?? decideFor(null, { budget: null }),
        `gate metadata not written: ${updated.problem.message}`,
      );
    }
    metadataWritten = updated.ok && updated.written;
  } catch (error) {
    if (patch?.written) patch = { written: false, why: "the task write failed: the patch was not written" };
    return stop(decided ?? decideFor(null, { budget: null }), `gate metadata not written: ${describeError(error)}`);
  }
  const plan = decided ?? decideFor(null, { budget: null }); // the task file is gone: the plan without task writes
  if (metadataWritten && plan.reopen?.kind === "reopen")
    remembered.round = { taskId: target.taskId, round: plan.reopen.patch.metadata.qualityGateRound };
  if (plan.spend) remembered.spent = { root: plan.spend.root, key: target.key };
  // The task's own outcome (reopened, suppressed, skipped, a retry) is on disk now.
  actions.push(
    ...plan.actions.filter(
      (a) =>
        a !== "none" &&
        !a.startsWith("follow-up") &&
        !a.startsWith("nudge") &&
        !a.startsWith("reassigned") &&
        !a.startsWith("told") &&
        !a.startsWith("budget of"),
    ),
  );

  if (plan.reassign && (metadataWritten || plan.alreadyApplied)) {
    // Once per reopen (the event key): the owner's runtime starts an owned task when it is assigned.
    const { to, message } = plan.reassign;
    const sent = await sendToMember(target, `reassign-${message.taskId}`, to, JSON.stringify(message));
    if (sent.error) return stop(plan, sent.error);
    actions.push(sent.already ? `reassigned to ${to} (sent before)` : `reassigned to ${to}`);
  }

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
          ...(mayExist
            ? { existing: (tasks: Task[]) => tasks.find((t) => t.metadata?.qualityGateFollowupFor === target.key) }
            : {}),
          label: `follow-up for ${target.key}`,
          ...lock,
        },
      );
      followupTaskId = created.task.id;
      remembered.root = { taskId: created.task.id, root: followup.metadata.qualityGateRootTaskId };
      memory?.adopt(created.task.id, followup.metadata.qualityGateRootTaskId);
      actions.push(
        `follow-up #${created.task.id}${created.created ? "" : " (existing)"}${followup.owner ? ` for ${followup.owner}` : ""}`,
      );
    } catch (error) {
      return stop(plan, `follow-up task not created: ${describeError(error)}`);
    }
    if (followup.owner && followup.assignment) {
      const sent = await sendToMember(
        target,
        `assignment-${followupTaskId}`,
        followup.owner,
        JSON.stringify(followup.assignment(followupTaskId)),
      );
      if (sent.error) return stop(plan, sent.error, followupTaskId);
    }
  }

  if (plan.escalation) {
    const { root, text } = plan.escalation;
    const sent = await sendOnce(target.sent, {
      teamDir: target.teamDir,
      namespace: "team",
      to: target.leadName,
      // Once per root and budget: raising the budget and spending it again tells the lead again.
      id: sentId("budget-spent", `${root}:${target.maxBudget ?? 0}`, target.leadName),
      message: {
        from: "pi-teams-hooks",
        text,
        timestamp: target.now,
        read: false,
        qualityGateEventKey: target.key,
        qualityGateMessage: "budget-spent",
      },
      isIt: (m) => m.qualityGateMessage === "budget-spent" && m.qualityGateEventKey === target.key,
      ...(target.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: target.lockTimeoutMs }),
    });
    if (sent.error) return stop(plan, sent.error, followupTaskId);
    actions.push(
      sent.already
        ? `lead told the budget of task #${root} is spent (before)`
        : `lead told the budget of task #${root} is spent`,
    );
  }

  if (plan.nudge?.to) {
    const to = plan.nudge.to;
    const kind = plan.gate.to === "held" ? "held" : "nudge";
    const sent = await sendToMember(target, kind, to, plan.nudge.text(followupTaskId));
    if (sent.error) return stop(plan, sent.error, followupTaskId);
    const word = kind === "held" ? `told ${to} it waits` : `nudge ${to}`;
    actions.push(sent.already ? `${word} (sent before)` : word);
  }
  return withPatch({
    plan,
    actions: actions.length > 0 ? actions : ["none"],
    followupTaskId,
    errors: [],
    refused: [...plan.refused],
    complete: true,
    remembered,
  });
}

/** The root of the task's tree: the task itself, or another task (a follow-up's root), read as it is now. */
async function findRoot(
  target: RemediationTarget,
): Promise<{ kind: "self" } | { kind: "other"; root: string; task: Task | null }> {
  const read = await readTask(taskFile(target.teamDir, target.taskListId, target.taskId));
  if (!read.ok) return { kind: "self" };
  const root = rootOf(read.value, target.memory ? { root: target.memory.root(target.taskId) } : undefined);
  if (root === target.taskId || !isSafeName(root)) return { kind: "self" };
  const rootRead = await readTask(taskFile(target.teamDir, target.taskListId, root));
  // A root whose file is gone keeps its budget in the leader's memory; without that, nothing is left to spend from.
  return { kind: "other", root, task: rootRead.ok ? rootRead.value : null };
}

/**
 * Records one unit of the root's budget for this event under the root's lock (at most once per event
 * key, never past the budget); gives the budget as it is then.
 */
async function spendOnRoot(
  target: RemediationTarget,
  root: string,
  budget: TreeBudget,
  lock: { timeoutMs?: number },
): Promise<TreeBudget> {
  let after = budget;
  const updated = await updateTask(
    target.teamDir,
    target.taskListId,
    root,
    (rootTask) => {
      after = treeBudget(root, rootTask, budget.max);
      if (after.spentBy(target.key) || after.spent >= after.max) return undefined;
      const keys = [...budgetKeys(rootTask), target.key];
      const next = { ...rootTask, metadata: { ...(rootTask.metadata ?? {}), qualityGateBudgetKeys: keys } };
      after = treeBudget(root, next, budget.max);
      return next;
    },
    { label: `quality gate budget ${target.key}`, ...lock },
  );
  if (!updated.ok && updated.problem.kind !== "missing") throw new Error(updated.problem.message);
  if (!updated.ok) {
    // The root's file is gone: the unit is counted in memory only (the leader's), never past the budget.
    return budget.spent >= budget.max
      ? budget
      : { ...budget, spent: budget.spent + 1, spentBy: (key) => key === target.key || budget.spentBy(key) };
  }
  return after;
}

/** The task with every patch laid over it in order (each cut once more to what may ever be written), or why not. */
function patchAll(
  task: Task,
  patches: readonly JsonObject[],
): { ok: true; task: Task } | { ok: false; problem: string } {
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
  // A root spends its own budget in this write (a follow-up's root was written before: remediate).
  if (plan.spend?.root === task.id && !budgetKeys(task).includes(key))
    next.metadata = { ...next.metadata, qualityGateBudgetKeys: [...budgetKeys(task), key] };
  if (plan.reopen?.kind === "reopen" && task.status === "completed") {
    next.status = plan.reopen.patch.status;
    next.description = plan.reopen.patch.description;
    next.metadata = { ...next.metadata, ...plan.reopen.patch.metadata };
  } else if (
    plan.metadataPatch.qualityGateStatus === "passed" &&
    withoutGateNote(task.description) !== task.description
  ) {
    // A gate passed: its note from the last reopen goes.
    next.description = withoutGateNote(task.description);
  }
  return next;
}

/** The log's `policy` block of a failure policy applied (docs/logs.md). */
export function policyRecordOf(
  policy: EffectivePolicy,
  mode: FailureMode,
  done: RemediationDone,
): Record<string, unknown> {
  return {
    failureAction: policy.failureAction,
    maxReopensPerTask: policy.maxReopensPerTask,
    followupOwner: policy.followupOwner,
    failureMode: mode,
    passed: done.plan.passed,
    summary: done.plan.summary,
    alreadyApplied: done.plan.alreadyApplied,
    reopen:
      done.complete && done.plan.reopen
        ? { kind: done.plan.reopen.kind, count: done.plan.reopen.count, max: done.plan.reopen.max }
        : null,
    followupTaskId: done.followupTaskId,
    nudged: done.complete ? (done.plan.nudge?.to ?? null) : null,
    actions: done.actions,
    errors: [...done.refused, ...done.errors],
    // The gate life's state this event left the task in (policy/gate-life.ts), and why it is held.
    gate: done.plan.gate.to,
    ...(done.plan.gate.cause ? { held: done.plan.gate.cause } : {}),
    ...(done.plan.spend
      ? { budget: { root: done.plan.spend.root, spent: done.plan.spend.spent, max: done.plan.spend.max } }
      : {}),
    // Absent when everything was applied (older logs have no such field either).
    ...(done.complete ? {} : { complete: false }),
  };
}

/** Appends a message from the leader to `to`'s inbox in the task namespace, once per event (sendOnce). */
async function sendToMember(
  target: RemediationTarget,
  kind: MemberMessageKind,
  to: string,
  text: string,
): Promise<{ error: string | null; already: boolean }> {
  const message: MailboxMessage = {
    from: target.leadName,
    text,
    timestamp: target.now,
    read: false,
    qualityGateEventKey: target.key,
    qualityGateMessage: kind,
  };
  return sendOnce(target.sent, {
    teamDir: target.teamDir,
    namespace: target.taskListId,
    to,
    id: sentId(kind, target.key, to),
    message,
    // What a crashed attempt may have left there: a message of this event, of this kind (a retry's
    // nudge may read differently: "was reopened" instead of "reopened").
    isIt: (m) =>
      m.qualityGateEventKey === target.key &&
      (typeof m.qualityGateMessage === "string"
        ? m.qualityGateMessage === kind
        : // Written before messages said their kind: a nudge is no assignment, an assignment names its task.
          kind === "nudge"
          ? assignmentTaskId(m.text) === null
          : `assignment-${assignmentTaskId(m.text) ?? ""}` === kind),
    ...(target.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: target.lockTimeoutMs }),
  });
}

/**
 * What the leader sends a member about one event, each at most once: the nudge after a failure, the
 * note that a held event waits, a follow-up's assignment, a reopened task handed back to its owner.
 */
type MemberMessageKind = "nudge" | "held" | `assignment-${string}` | `reassign-${string}`;

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
    return {
      error: `message to ${m.to} not sent (the sent-log cannot be written): ${describeError(error)}`,
      already: false,
    };
  }
  try {
    const appended = await appendMessage(m.teamDir, m.namespace, m.to, m.message, {
      label: `pi-teams-hooks ${m.id}`,
      unlessPresent: m.isIt, // another process (a second leader, `trust` beside the leader) sent it first
      ...(m.lockTimeoutMs === undefined ? {} : { timeoutMs: m.lockTimeoutMs }),
    });
    if (appended.ok) {
      sent.confirm(m.id, at);
      return { error: null, already: appended.present };
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
