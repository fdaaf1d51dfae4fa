/**
 * A task's life under its gates, as one state machine. Every path that settles a gate (the leader, `run
 * --apply-policy`, `decide` and the task API's decisions, the pi extension's leader) plans its writes
 * through policy/decide.ts, which takes each rule from here: which state a verdict leads to, which
 * verdicts hold an event instead of judging it, the gate round that makes a completion after the
 * leader's reopen a new event, and the budget that bounds what one failing tree of tasks may make.
 * Pure: the task, the result and the leader's memory come in as arguments.
 *
 *                  a new completion (a new stamp, or any completion in a later round)
 *        ┌──────────────────────────────────────────────────────────────────────────┐
 *        ▼                                                                          │
 *   unjudged ──begin──▶ running ──the gate allows────────────────────▶ passed ──────┤
 *                         │ ├──the gate denies, budget left, reopen ──▶ reopened ────┘ (round + 1)
 *                         │ ├──the gate denies, no reopen asked ────▶ failed
 *                         │ ├──the gate denies, budget spent ───────▶ escalated (the lead told once)
 *                         │ ├──the gate defers ─────────────────────▶ held (deferral) ──decision──▶ passed |
 *                         │ │                                                            reopened | failed | escalated
 *                         │ ├──the gate cannot run as trusted ──────▶ held (approval) ─┐
 *                         │ ├──our own fault cut the gate off ──────▶ held (fault) ────┴─approval, retry,
 *                         │ │                                                              restart──▶ running
 *                         │ └──the policy cannot be written ───────▶ given_up (in flight: the next start)
 *
 * What each transition writes is in TRANSITIONS (and docs/gate-life.md, which shows what a worker, a
 * dependent task and the lead see in each state).
 */
import { TRUST_ERROR_KINDS, type RunResult } from "../contract/hook-run.js";
import { gateRound, splitRound, taskEvent } from "../contract/events.js";
import type { Task } from "../contract/team-files.js";

export const GATE_STATES = [
  "unjudged",
  "running",
  "passed",
  "failed",
  "reopened",
  "held",
  "escalated",
  "given_up",
] as const;
export type GateState = (typeof GATE_STATES)[number];

/**
 * Why an event is held rather than judged: a gate answered `defer` (a decision comes later); the gate
 * cannot run as the team trusted it (the lead approves or fixes it); or our own part failed under it.
 */
export const HOLD_CAUSES = ["deferral", "approval", "fault"] as const;
export type HoldCause = (typeof HOLD_CAUSES)[number];

/** What one transition writes, for the docs and the test that holds the table to the code. */
export type GateWrite =
  | "ledger begin"
  | "ledger done"
  | "ledger defer"
  | "ledger hold"
  | "ledger memory"
  | "task metadata"
  | "task status"
  | "follow-up task"
  | "assignment"
  | "nudge"
  | "worker note"
  | "lead note"
  | "hook log"
  | "deferral file"
  | "holds file";

export interface GateTransition {
  from: GateState;
  on: string;
  to: GateState;
  /** Which hold the `held` side of the transition is (its other side is plain). */
  cause?: HoldCause;
  writes: readonly GateWrite[];
}

/** Every transition of a completion's gate life (a failure's is the same without the reopen). */
export const TRANSITIONS: readonly GateTransition[] = Object.freeze([
  { from: "unjudged", on: "the leader takes the event", to: "running", writes: ["ledger begin"] },
  { from: "running", on: "the gate allows", to: "passed", writes: ["task metadata", "hook log", "ledger done"] },
  {
    from: "running",
    on: "the gate denies; the policy reopens and the tree's budget is not spent",
    to: "reopened",
    writes: [
      "task status",
      "task metadata",
      "ledger memory",
      "follow-up task",
      "assignment",
      "nudge",
      "hook log",
      "ledger done",
    ],
  },
  {
    from: "running",
    on: "the gate denies; the policy does not reopen",
    to: "failed",
    writes: ["task metadata", "follow-up task", "assignment", "nudge", "hook log", "ledger done"],
  },
  {
    from: "running",
    on: "the gate denies; the tree's budget is spent",
    to: "escalated",
    writes: ["task metadata", "lead note", "nudge", "hook log", "ledger done"],
  },
  {
    from: "running",
    on: "the gate answers defer",
    to: "held",
    cause: "deferral",
    writes: ["task metadata", "hook log", "deferral file", "ledger defer"],
  },
  {
    from: "running",
    on: "the gate is untrusted, missing, insecure or cannot start",
    to: "held",
    cause: "approval",
    writes: ["task metadata", "worker note", "lead note", "hook log", "ledger hold", "holds file"],
  },
  {
    from: "running",
    on: "our own part failed under the gate",
    to: "held",
    cause: "fault",
    writes: ["task metadata", "worker note", "lead note", "hook log", "ledger hold", "holds file"],
  },
  { from: "running", on: "the policy's writes fail on every try", to: "given_up", writes: ["lead note", "hook log"] },
  {
    from: "held",
    on: "a decision (decide, the task API, the deadline)",
    to: "passed",
    cause: "deferral",
    writes: ["deferral file", "task metadata", "hook log", "ledger done"],
  },
  {
    from: "held",
    on: "an approval or fault hold ends: the lead approves (trust), the gate put back as trusted, the fault seen cleared, a retry, the leader restarts",
    to: "running",
    writes: ["ledger begin", "holds file"],
  },
  { from: "reopened", on: "the worker completes the task again", to: "unjudged", writes: [] },
  { from: "passed", on: "the worker completes the task again with a new stamp", to: "unjudged", writes: [] },
  { from: "given_up", on: "the leader starts again", to: "running", writes: ["ledger begin"] },
]);

// ---------------------------------------------------------------------------------------------
// Holds

/** Spawn errors that are this machine running short, not the gate: our side, tried again. */
const FAULT_SPAWN_CODES: ReadonlySet<string> = new Set([
  "EMFILE",
  "ENFILE",
  "EAGAIN",
  "ENOMEM",
  // The machine cannot sandbox a gate that requires it, or the sandbox's mounts failed: no approval helps.
  "E_SANDBOX_UNAVAILABLE",
  "E_SANDBOX_SETUP",
  // A run-as= user this leader cannot switch to, or cannot reach the run's folder: the machine's set-up.
  "E_RUN_AS",
]);
const APPROVAL_KINDS: ReadonlySet<string> = new Set([...TRUST_ERROR_KINDS, "hook_settings"]);

/**
 * Whether the run that decided an event holds it instead of judging the work, and why. Nothing a
 * worker did makes a gate untrusted, missing, insecure or unable to start, or the leader's own parts
 * fail: such a run is never a failure of the work. Only a run that would count as a failure is held
 * (under failure mode `open` an internal error is let through, as the team asked).
 */
export function holdCauseOf(
  result: Pick<RunResult, "outcome" | "errorKind" | "errorCode">,
  countsAsPass: boolean,
): "approval" | "fault" | null {
  if (result.outcome !== "error" || countsAsPass || result.errorKind === undefined) return null;
  if (APPROVAL_KINDS.has(result.errorKind)) return "approval";
  if (result.errorKind === "internal") return "fault";
  if (result.errorKind === "spawn")
    return result.errorCode !== undefined && FAULT_SPAWN_CODES.has(result.errorCode) ? "fault" : "approval";
  return null;
}

// ---------------------------------------------------------------------------------------------
// The state a task's file shows

/**
 * The gate state a task's metadata records for its current event. `running` and `given_up` live in
 * the leader's ledger only (nothing is written to the task for them); a task whose current event is
 * newer than the one its gate recorded is `unjudged`.
 */
export function gateStateOf(task: Task): { state: GateState; cause?: HoldCause } {
  const meta = task.metadata ?? {};
  const recorded = typeof meta.qualityGateEventKey === "string" ? meta.qualityGateEventKey : null;
  const current = taskEvent(task);
  if (recorded === null) return { state: "unjudged" };
  if (current !== null && current.event !== "task_started" && current.key !== recorded) {
    const now = splitRound(current.key);
    const then = splitRound(recorded);
    if (now.base !== then.base || now.round > then.round) return { state: "unjudged" };
  }
  switch (meta.qualityGateStatus) {
    case "passed":
      return { state: "passed" };
    case "deferred":
      return { state: "held", cause: "deferral" };
    case "held":
      return { state: "held", cause: meta.qualityGateHeld === "fault" ? "fault" : "approval" };
    case "failed":
      if (meta.qualityGateEscalated === true) return { state: "escalated" };
      if (task.status === "pending" && meta.reopenedByQualityGateKey === recorded) return { state: "reopened" };
      return { state: "failed" };
    default:
      return { state: "unjudged" };
  }
}

// ---------------------------------------------------------------------------------------------
// Rounds

/**
 * The round a task goes to when the leader puts it back to `pending` (a reopen, a start gate's
 * denial): one past the highest it was known in, from its file, the key judged (made with the
 * leader's memory) and that memory itself.
 */
export function nextRound(task: Task, key: string, memory = 0): number {
  const judged = key.startsWith("task_completed:") ? splitRound(key).round : 0;
  return Math.max(gateRound(task), judged, memory) + 1;
}

// ---------------------------------------------------------------------------------------------
// The tree's budget

/**
 * A follow-up made by a gate belongs to the tree of the task it was made for (its root): the root's
 * budget, `maxReopensPerTask`, bounds every reopen and every follow-up made in the whole tree. Each
 * failure that reopens a task, makes a follow-up, or both, spends one unit, recorded on the root by
 * its event key (a retry of the same event spends nothing more). Once spent, nothing more is made:
 * the lead is told once, and the tree waits for a person.
 */
export interface TreeBudget {
  /** The root task's id (the task itself when it is no follow-up). */
  root: string;
  /** Units spent so far, the event keys that spent them included. */
  spent: number;
  max: number;
  /** Whether `key` has spent a unit already (a retry). */
  spentBy: (key: string) => boolean;
}

/**
 * The root of a task's tree. With the leader's memory (`memory` given, the leader's ledger): the root it
 * recorded when it made the task as a follow-up, else the task itself — never what the task's metadata
 * names (`qualityGateRootTaskId`, `qualityGateFollowupFor`: a worker can write those, and name another's
 * task). Without it (a hand run, `run --apply-policy`): the root the follow-up's metadata names.
 */
export function rootOf(task: Task, memory?: { root: string | undefined }): string {
  if (memory) return memory.root ?? task.id;
  const meta = task.metadata ?? {};
  const named = [meta.qualityGateRootTaskId, meta.qualityGateSourceTaskId].find(
    (v): v is string => typeof v === "string" && v.trim() !== "",
  );
  return named && typeof meta.qualityGateFollowupFor === "string" ? named : task.id;
}

/** The event keys recorded on a root as having spent its budget. */
export function budgetKeys(root: Task | null): string[] {
  const keys = root?.metadata?.qualityGateBudgetKeys;
  return Array.isArray(keys) ? keys.filter((k): k is string => typeof k === "string") : [];
}

/**
 * The budget of the tree `root` heads. With the leader's memory (`memory`: the units it recorded in its
 * ledger as spent on this root, each with the event that spent it): that alone, never the root's
 * metadata (`qualityGateBudgetKeys`, `reopenedByQualityGateCount`), which a worker can empty to escape
 * the budget or fill to spend another's. Without it (a hand run): what the root's file records.
 */
export function treeBudget(
  rootId: string,
  root: Task | null,
  max: number,
  memory?: { spent: number; spentBy?: (key: string) => boolean },
): TreeBudget {
  if (memory) return { root: rootId, spent: memory.spent, max, spentBy: memory.spentBy ?? (() => false) };
  const keys = budgetKeys(root);
  // A root reopened before budgets were kept counts its reopens as spent.
  const reopens = root?.metadata?.reopenedByQualityGateCount;
  const legacy = typeof reopens === "number" && Number.isFinite(reopens) && reopens > 0 ? Math.floor(reopens) : 0;
  return { root: rootId, spent: Math.max(keys.length, legacy), max, spentBy: (key) => keys.includes(key) };
}
