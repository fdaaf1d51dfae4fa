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
import { appendMessages, readInbox } from "../team/mailbox.js";
import { doneWithTaskWrite, holdsNewerEvent, type RemediationPlan } from "../policy/plan.js";
import { type PolicyAction, actionsText } from "../text/actions.js";
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
  /**
   * Sets the task's gate round back to `round` (it otherwise only rises): the leader undid its own
   * reopen (policy/decide.ts `undoReopen`), so the completion it judged is the task's current one again,
   * not a new event of the round the reopen began. Synchronous, before the task is written.
   */
  lower?(taskId: string, round: number): void;
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
  actions: PolicyAction[];
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
interface DecideContext {
  budget: TreeBudget | null;
}

/** Decides the plan for the task as a step finds it (under its lock), with the tree's budget. */
type DecideFor = (task: Task | null, tree: DecideContext) => RemediationPlan;

/**
 * How far one remediation got: each step adds what it did (the model: event/invoke.ts `Progress`).
 * Every step is idempotent per event key, so a remediation tried again repeats none of them.
 */
interface Applied {
  plan: RemediationPlan;
  /** The task write of the plan is on disk (its metadata, a reopen). */
  written: boolean;
  /**
   * The task recorded this event before this write: a retry, or a held gate (whose other hold may have
   * made a follow-up).
   */
  seenBefore: boolean;
  actions: PolicyAction[];
  followupTaskId: string | null;
  remembered: Remembered;
  patch: RemediationDone["patch"];
  /** The nudge went with the reassignment, in one write of the inbox (reassignStep). */
  nudged?: boolean;
}

/** A step after the task write: null when done, else why it is not (the remediation stops there). */
type Step = (target: RemediationTarget, at: Applied) => Promise<string | null>;

/**
 * Decides (through `decideFor`, with the task read under its lock) and applies the plan, step by step:
 * the tree's budget, the task write, the reassignment, the follow-up, the lead's note, the nudge. A
 * failure that spends a unit of a follow-up's tree budget records it on the root first
 * (policy/gate-life.ts), then writes the task; a root spends in the same write as its own metadata.
 */
export async function remediate(target: RemediationTarget, decideFor: DecideFor): Promise<RemediationDone> {
  const tree = await treeStep(target, decideFor);
  if (!tree.ok) return finished(fresh(tree.plan, target), tree.error);
  const written = await writeTaskStep(target, decideFor, tree.tree);
  if (written.error !== null) return finished(written.at, written.error);
  const at = written.at;
  const steps: Step[] = [reassignStep, followupStep, escalateStep, nudgeStep];
  for (const step of steps) {
    const error = await step(target, at);
    if (error !== null) return finished(at, error);
  }
  return finished(at, null);
}

/** Nothing applied yet: the patch, if one was given, not written. */
function fresh(plan: RemediationPlan, target: RemediationTarget): Applied {
  const patches = target.taskPatches ?? [];
  return {
    plan,
    written: false,
    seenBefore: false,
    actions: [],
    followupTaskId: null,
    remembered: {},
    patch: patches.length > 0 ? { written: false, why: "the task file is gone: the patch was not written" } : undefined,
  };
}

function finished(at: Applied, error: string | null): RemediationDone {
  return {
    plan: at.plan,
    actions: at.actions.length > 0 ? at.actions : [{ kind: "none" }],
    followupTaskId: at.followupTaskId,
    errors: error === null ? [] : [error],
    refused: [...at.plan.refused],
    complete: error === null,
    remembered: at.remembered,
    ...(at.patch ? { patch: at.patch } : {}),
  };
}

/**
 * Step 1, the tree: the budget each decision is made with. With the leader's memory, its record alone
 * (what the root's metadata says is a worker's to write). Without it, a follow-up's root records the
 * unit of this event (once per key) before the task is written, so that a crash in between never lets
 * the tree make more than its budget.
 */
async function treeStep(
  target: RemediationTarget,
  decideFor: DecideFor,
): Promise<{ ok: true; tree: (task: Task) => DecideContext } | { ok: false; plan: RemediationPlan; error: string }> {
  if (target.maxBudget === undefined) return { ok: true, tree: () => ({ budget: null }) };
  const max = target.maxBudget;
  const found = await findRoot(target);
  const memory = target.memory;
  if (memory) {
    const root = found.kind === "other" ? found.root : target.taskId;
    const budget = (): TreeBudget =>
      treeBudget(root, null, max, { spent: memory.spent(root), spentBy: (key) => memory.spentBy(root, key) });
    return { ok: true, tree: () => ({ budget: budget() }) };
  }
  if (found.kind === "self") return { ok: true, tree: (task) => ({ budget: treeBudget(task.id, task, max) }) };
  let budget = treeBudget(found.root, found.task, max);
  // A dry decision on the task as it is now says whether this failure spends.
  const current = await readTask(taskFile(target.teamDir, target.taskListId, target.taskId));
  const dry = decideFor(current.ok ? current.value : null, { budget });
  if (dry.spend && !budget.spentBy(target.key)) {
    try {
      budget = await spendOnRoot(target, found.root, budget, lockOf(target));
    } catch (error) {
      return {
        ok: false,
        plan: dry,
        error: `the budget of task #${found.root} cannot be written: ${describeError(error)}`,
      };
    }
  }
  return { ok: true, tree: () => ({ budget }) };
}

/**
 * Step 2, the task: decided under the task's lock from the task as it is then, and written in one go
 * (the chain's patches, the gate's metadata, a reopen). A retry sees what an earlier attempt wrote and
 * counts nothing twice. The budget a decision spends is spent in the leader's memory as it is decided.
 */
async function writeTaskStep(
  target: RemediationTarget,
  decideFor: DecideFor,
  tree: (task: Task) => DecideContext,
): Promise<{ at: Applied; error: string | null }> {
  let decided: RemediationPlan | undefined;
  let seenBefore = false;
  const patches = target.taskPatches ?? [];
  let patch: RemediationDone["patch"] =
    patches.length > 0 ? { written: false, why: "the task file is gone: the patch was not written" } : undefined;
  const failed = (error: string): { at: Applied; error: string } => ({
    at: { ...fresh(decided ?? decideFor(null, { budget: null }), target), patch },
    error,
  });
  let written: boolean;
  try {
    const updated = await updateTask(
      target.teamDir,
      target.taskListId,
      target.taskId,
      (task) => {
        decided = decideFor(task, tree(task));
        // Before anything it pays for is made: a crash after this spends a unit for nothing, never one twice.
        const spend = decided.spend;
        const memory = target.memory;
        const paidBefore = spend !== null && memory?.spentBy(spend.root, target.key) === true;
        if (spend && memory && !paidBefore) memory.spend(spend.root, target.key);
        // Before the task is written: the leader must not key the completion, put back, in the round the reopen began.
        if (decided.undoReopen && task.status !== "completed") memory?.lower?.(target.taskId, decided.undoReopen.round);
        // Seen before: the task's record says so, or the leader's own does (the key paid for what it made already:
        // a record the worker took out, to be judged again, finds the follow-up made then, not a new one).
        seenBefore = task.metadata?.qualityGateEventKey === target.key || paidBefore;
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
      { label: `quality gate ${target.key}`, ...lockOf(target) },
    );
    // Decided (if at all) for a task that was not written: nothing of the plan happened.
    if (!updated.ok && updated.problem.kind !== "missing")
      return failed(`gate metadata not written: ${updated.problem.message}`);
    written = updated.ok && updated.written;
  } catch (error) {
    if (patch?.written) patch = { written: false, why: "the task write failed: the patch was not written" };
    return failed(`gate metadata not written: ${describeError(error)}`);
  }
  const plan = decided ?? decideFor(null, { budget: null }); // the task file is gone: the plan without task writes
  const remembered: Remembered = {};
  if (written && plan.reopen?.kind === "reopen")
    remembered.round = { taskId: target.taskId, round: plan.reopen.patch.metadata.qualityGateRound };
  if (plan.spend) remembered.spent = { root: plan.spend.root, key: target.key };
  // The task's own outcome (reopened, suppressed, skipped, a retry, a hold) is on disk now.
  const actions = plan.actions.filter(doneWithTaskWrite);
  return { at: { plan, written, seenBefore, actions, followupTaskId: null, remembered, patch }, error: null };
}

/**
 * Step 3: the owner of a reopened task is handed it again, once per reopen (its runtime starts an owned
 * task when assigned).
 */
const reassignStep: Step = async (target, at) => {
  const { reassign } = at.plan;
  if (!reassign || !(at.written || at.plan.alreadyApplied)) return null;
  const { to, message } = reassign;
  const handedBack = memberMessage(target, `reassign-${message.taskId}`, to, JSON.stringify(message));
  // With nothing between them to wait for (no follow-up for the nudge to quote, no note to the lead), the
  // nudge to the same member goes in the same write: the redo is never read without its reason.
  const nudge = !at.plan.followup && !at.plan.escalation && at.plan.nudge?.to === to ? nudgeOf(target, at) : null;
  const [sent, nudged] = await sendAllOnce(target.sent, nudge ? [handedBack, nudge.message] : [handedBack]);
  if (!sent) return "internal error: the reassignment was not answered";
  if (sent.error) return sent.error;
  at.actions.push({ kind: "reassigned", to, sent: sent.already ? "before" : "now" });
  if (!nudge || !nudged) return null;
  if (nudged.error) return nudged.error;
  at.actions.push(nudge.action(nudged.already));
  at.nudged = true;
  return null;
};

/**
 * Step 4: the follow-up task and its assignment. Looking for one made by an earlier attempt reads every
 * task of the list while holding `.highwatermark.lock` (seconds at 10,000 tasks, and every worker
 * creating a task waits), so only a possible retry looks: the gate metadata is written before the
 * follow-up, so a first attempt that wrote it cannot have one. test/slow/leader-followup-scale.test.ts.
 * A task that recorded this key before may: a retry, or the decision of a held gate whose event was
 * held twice (the leader and `run --apply-policy`): the other hold's decision, applied first, made its
 * follow-up without writing the task (a newer hold was recorded). test/integration/deferral.test.ts.
 */
const followupStep: Step = async (target, at) => {
  const followup = at.plan.followup;
  if (!followup) return null;
  const mayExist = at.plan.alreadyApplied || !at.written || at.seenBefore;
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
        ...lockOf(target),
      },
    );
    at.followupTaskId = created.task.id;
    at.remembered.root = { taskId: created.task.id, root: followup.metadata.qualityGateRootTaskId };
    target.memory?.adopt(created.task.id, followup.metadata.qualityGateRootTaskId);
    at.actions.push({ kind: "followup", owner: followup.owner, taskId: created.task.id, existing: !created.created });
  } catch (error) {
    return `follow-up task not created: ${describeError(error)}`;
  }
  if (!followup.owner || !followup.assignment) return null;
  const id = at.followupTaskId;
  const sent = await sendToMember(target, `assignment-${id}`, followup.owner, JSON.stringify(followup.assignment(id)));
  return sent.error;
};

/**
 * Step 5: the lead told the tree's budget is spent, once per root and budget (raising it and spending it
 * again tells again).
 */
const escalateStep: Step = async (target, at) => {
  const escalation = at.plan.escalation;
  if (!escalation) return null;
  const { root, text } = escalation;
  const sent = await sendOnce(target.sent, {
    teamDir: target.teamDir,
    namespace: "team",
    to: target.leadName,
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
    lockTimeoutMs: target.lockTimeoutMs,
  });
  if (sent.error) return sent.error;
  at.actions.push({ kind: "escalated", root, sent: sent.already ? "before" : "now" });
  return null;
};

/** Step 6: the worker's nudge after a failure (quoting the follow-up made), or its note that a held event waits. */
const nudgeStep: Step = async (target, at) => {
  if (at.nudged) return null; // sent with the reassignment
  const nudge = nudgeOf(target, at);
  if (!nudge) return null;
  const sent = await sendOnce(target.sent, nudge.message);
  if (sent.error) return sent.error;
  at.actions.push(nudge.action(sent.already));
  return null;
};

/** The plan's nudge (or its note that a held event waits) as a message, and the action its sending is. */
function nudgeOf(
  target: RemediationTarget,
  at: Applied,
): { message: OnceMessage; action: (already: boolean) => PolicyAction } | null {
  const to = at.plan.nudge?.to;
  if (!at.plan.nudge || !to) return null;
  const kind = at.plan.gate.to === "held" ? "held" : "nudge";
  return {
    message: memberMessage(target, kind, to, at.plan.nudge.text(at.followupTaskId)),
    action: (already) => {
      const sent = already ? "before" : "now";
      return kind === "held" ? { kind: "told_waits", to, sent } : { kind: "nudge", to, sent };
    },
  };
}

function lockOf(target: RemediationTarget): { timeoutMs?: number } {
  return target.lockTimeoutMs === undefined ? {} : { timeoutMs: target.lockTimeoutMs };
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
  } else if (plan.gate.to === "passed" && withoutGateNote(task.description) !== task.description) {
    // A gate passed: its note from the last reopen goes.
    next.description = withoutGateNote(task.description);
  }
  if (plan.undoReopen && task.status !== "completed") {
    // This completion's own reopen, undone: `completed` as its worker left it, in the round it was completed in.
    next.status = "completed";
    const { qualityGateRound: _reopened, ...rest } = next.metadata ?? {};
    next.metadata = plan.undoReopen.round > 0 ? { ...rest, qualityGateRound: plan.undoReopen.round } : rest;
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
    actions: actionsText(done.actions),
    errors: [...done.refused, ...done.errors],
    // The gate life's state this event left the task in (policy/gate-life.ts), and why it is held.
    gate: done.plan.gate.to,
    held: done.plan.gate.cause,
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
  return sendOnce(target.sent, memberMessage(target, kind, to, text));
}

/** A message to member `to` about the target's event, of `kind`, each sent at most once (sendOnce). */
function memberMessage(target: RemediationTarget, kind: MemberMessageKind, to: string, text: string): OnceMessage {
  return {
    teamDir: target.teamDir,
    namespace: target.taskListId,
    to,
    id: sentId(kind, target.key, to),
    message: {
      from: target.leadName,
      text,
      timestamp: target.now,
      read: false,
      qualityGateEventKey: target.key,
      qualityGateMessage: kind,
    },
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
    lockTimeoutMs: target.lockTimeoutMs,
  };
}

/**
 * What the leader sends a member about one event, each at most once: the nudge after a failure, the
 * note that a held event waits, a follow-up's assignment, a reopened task handed back to its owner.
 */
type MemberMessageKind = "nudge" | "held" | `assignment-${string}` | `reassign-${string}`;

interface OnceMessage {
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
  const [only] = await sendAllOnce(sent, [m]);
  return only ?? { error: "internal error: sendAllOnce answered for no message", already: false };
}

/**
 * `sendOnce` of messages to one inbox (`namespace`, `to`: the first's), in one write of it: its member reads
 * them together or not at all (one whose sent-log line cannot be written holds back the others, each then
 * answered with its error). One answer per message, in order.
 */
async function sendAllOnce(
  sent: SentLog,
  ms: readonly OnceMessage[],
): Promise<{ error: string | null; already: boolean }[]> {
  const answers: ({ error: string | null; already: boolean } | null)[] = ms.map(() => null);
  const claimed: number[] = [];
  let inbox: Awaited<ReturnType<typeof readInbox>> | null = null;
  for (const [i, m] of ms.entries()) {
    const at = m.message.timestamp;
    try {
      const state = sent.state(m.id);
      if (state === "sent") {
        answers[i] = { error: null, already: true };
        continue;
      }
      if (state === "sending") {
        inbox ??= await readInbox(m.teamDir, m.namespace, m.to);
        if (inbox.ok && inbox.messages.some((entry) => m.isIt(entry.message))) {
          sent.confirm(m.id, at);
          answers[i] = { error: null, already: true };
          continue;
        }
      }
      sent.claim(m.id, at);
      claimed.push(i);
    } catch (error) {
      answers[i] = {
        error: `message to ${m.to} not sent (the sent-log cannot be written): ${describeError(error)}`,
        already: false,
      };
    }
  }
  const release = (error: (m: OnceMessage) => string): void => {
    for (const i of claimed) {
      const m = ms[i] as OnceMessage;
      sent.release(m.id, m.message.timestamp);
      answers[i] = { error: error(m), already: false };
    }
  };
  // One that cannot be sent holds back the others: the member reads them together or not at all.
  const unsent = answers.find((answer) => answer?.error)?.error;
  const first = ms[0];
  if (unsent) release(() => unsent);
  else if (claimed.length > 0 && first) {
    try {
      const items = claimed.map((i) => ms[i] as OnceMessage);
      const appended = await appendMessages(
        first.teamDir,
        first.namespace,
        first.to,
        // another process (a second leader, `trust` beside the leader) may have sent one first
        items.map((m) => ({ message: m.message, unlessPresent: m.isIt })),
        { label: `pi-teams-hooks ${items.map((m) => m.id).join(" ")}`, timeoutMs: first.lockTimeoutMs },
      );
      if (appended.ok) {
        appended.messages.forEach(({ present }, k) => {
          const i = claimed[k] as number;
          const m = ms[i] as OnceMessage;
          sent.confirm(m.id, m.message.timestamp);
          answers[i] = { error: null, already: present };
        });
      } else release((m) => `message to ${m.to} not sent: ${appended.problem.message}`);
    } catch (error) {
      release((m) => `message to ${m.to} not sent: ${describeError(error)}`);
    }
  }
  return answers.map((answer) => answer ?? { error: "internal error: a message left unanswered", already: false });
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
