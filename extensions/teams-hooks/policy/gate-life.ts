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
 *                         │ └──the policy cannot be written ───────▶ given_up (in flight: tried again)
 *
 * `next` is the one function that moves it: each input's handler switches on the state it comes in,
 * and a move from any other state is an error. transitions() is `next` tried on every state and input
 * (docs/gate-life.md shows it, and what a worker, a dependent task and the lead see in each state).
 */
import { TRUST_ERROR_KINDS, type RunResult } from "../contract/hook-run.js";
import { HooksError, unreachable } from "../contract/errors.js";
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

/** The states a judgement of the work leads to (the gate ran, or a decision settled its deferral). */
export const JUDGED_STATES = ["passed", "failed", "reopened", "escalated"] as const;
export type JudgedState = (typeof JUDGED_STATES)[number];

/**
 * Why an event is held rather than judged: a gate answered `defer` (a decision comes later); the gate
 * cannot run as the team trusted it (the lead approves or fixes it); or our own part failed under it.
 */
const HOLD_CAUSES = ["deferral", "approval", "fault"] as const;
export type HoldCause = (typeof HOLD_CAUSES)[number];
/** A hold that ends by running its gate again (the lead's approval, a retry after our fault), not by a decision. */
export type RerunCause = Exclude<HoldCause, "deferral">;

/** What one transition writes, for the docs and the test that holds the table to the code. */
type GateWrite =
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

/** Where an event is in its gate life: its state, and what holds it when `held`. */
export interface GatePlace {
  state: GateState;
  cause?: HoldCause;
}

/** How a gate judged the work, or how a decision settled a held gate: what decides the state after it. */
type Judgement =
  /**
   * `reopen`: a pass of a completion whose task this same completion's reopen left `pending` (a leader
   * killed after writing the reopen, before the rest, and the gate run again at its next start):
   * `undone` when nothing touched the task since (put back to `completed` as its worker left it), `kept`
   * when its worker took it up again (left as it is; its owner handed it again, the assignment the crash lost).
   */
  | { pass: true; reopen?: "undone" | "kept" }
  /** `reopens`: the policy reopens the task now; `spent`: the tree's budget was spent before this failure. */
  | { pass: false; reopens: boolean; spent: boolean };

/** What moves an event's gate life on. */
export type GateInput =
  /** The leader takes the event: a new one, a hold that ended, a policy given up on at the next start. */
  | { on: "take" }
  /** The leader died while the gate ran: the next start runs it again. */
  | { on: "retry" }
  /** The ledger and the task's gate record disagree on a judged event: it is judged again. */
  | { on: "rejudge" }
  /** The gate's verdict (running), or the decision on a held deferral. */
  | { on: "judge"; judgement: Judgement }
  | { on: "defer" }
  /** The gate could not judge the work (policy/gate-life.ts holdCauseOf). */
  | { on: "hold"; cause: RerunCause }
  /** The policy's writes failed on every try. */
  | { on: "give_up" }
  /** The worker completed the task again: a new event, whose own life starts. */
  | { on: "complete_again" }
  /**
   * The worker completed the task again while this event is held for the lead or a retry: the newer
   * completion is held in its place, and this one ends unrun (the gate runs once, on the latest).
   */
  | { on: "supersede" };

/** Where a transition leads, and what it writes (for the docs, and the test that holds them to the code). */
interface GateMove {
  to: GateState;
  cause?: HoldCause;
  writes: readonly GateWrite[];
}

/** A move asked of a gate life from a state it does not start from: a bug of ours, never a worker's doing. */
export class GateTransitionError extends HooksError {
  constructor(from: GatePlace, input: GateInput) {
    super("E_INTERNAL", `gate life: no transition from ${placeName(from)} on ${inputName(input)}`);
  }
}

/**
 * The one function that moves a gate life: from `from`, on `input`, where to and what it writes. Each
 * input's handler switches on the state it comes in; any other state is an error (GateTransitionError).
 * Pure.
 */
export function next(from: GatePlace, input: GateInput): GateMove {
  switch (input.on) {
    case "take":
      return onTake(from, input);
    case "retry":
      if (from.state === "running") return { to: "running", writes: ["ledger begin"] };
      throw new GateTransitionError(from, input);
    case "rejudge":
      return onRejudge(from, input);
    case "judge":
      return onJudge(from, input);
    case "defer":
      if (from.state === "running")
        return {
          to: "held",
          cause: "deferral",
          writes: ["task metadata", "hook log", "deferral file", "ledger defer"],
        };
      throw new GateTransitionError(from, input);
    case "hold":
      if (from.state === "running") return { to: "held", cause: input.cause, writes: HOLD_WRITES };
      throw new GateTransitionError(from, input);
    case "give_up":
      // The leader lists the event as a fault hold and keeps trying; a hand run (`run --apply-policy`) writes
      // its log with `complete: false` instead, and tells no one.
      if (from.state === "running") return { to: "given_up", writes: ["lead note", "holds file"] };
      throw new GateTransitionError(from, input);
    case "complete_again":
      return onCompleteAgain(from, input);
    case "supersede":
      if (heldFor(from) !== null) return { to: "unjudged", writes: ["ledger done", "holds file"] };
      throw new GateTransitionError(from, input);
    default:
      return unreachable(input);
  }
}

const HOLD_WRITES: readonly GateWrite[] = Object.freeze<GateWrite[]>([
  "task metadata",
  "worker note",
  "lead note",
  "hook log",
  "ledger hold",
  "holds file",
]);

function onTake(from: GatePlace, input: GateInput): GateMove {
  switch (from.state) {
    case "unjudged":
    case "given_up":
      return { to: "running", writes: ["ledger begin"] };
    case "held":
      // A deferral ends by its decision, never by running its gate again.
      if (from.cause === "deferral") throw new GateTransitionError(from, input);
      return { to: "running", writes: ["ledger begin", "holds file"] };
    case "running":
    case "passed":
    case "failed":
    case "reopened":
    case "escalated":
      throw new GateTransitionError(from, input);
    default:
      return unreachable(from.state);
  }
}

function onRejudge(from: GatePlace, input: GateInput): GateMove {
  switch (from.state) {
    case "passed":
    case "failed":
    case "reopened":
    case "escalated":
      return { to: "running", writes: ["ledger begin", "lead note"] };
    case "held":
      // A deferral that neither its file, its log nor the task's gate record says a gate held (a `defer`
      // line written by hand): its gate never ran, so it runs now. A hold for the lead or a retry runs anyway.
      if (from.cause === "deferral") return { to: "running", writes: ["ledger begin", "lead note"] };
      throw new GateTransitionError(from, input);
    case "unjudged":
    case "running":
    case "given_up":
      throw new GateTransitionError(from, input);
    default:
      return unreachable(from.state);
  }
}

function onJudge(from: GatePlace, input: Extract<GateInput, { on: "judge" }>): GateMove {
  switch (from.state) {
    case "running":
      return judged(input.judgement, []);
    case "held":
      // Only a deferral is settled by a decision; an approval or fault hold runs its gate again. A
      // decision never meets a reopen of its own event: only a gate run again after a crash does.
      if (from.cause !== "deferral" || (input.judgement.pass && input.judgement.reopen))
        throw new GateTransitionError(from, input);
      return judged(input.judgement, ["deferral file"]);
    case "unjudged":
    case "passed":
    case "failed":
    case "reopened":
    case "escalated":
    case "given_up":
      throw new GateTransitionError(from, input);
    default:
      return unreachable(from.state);
  }
}

function judged(j: Judgement, first: readonly GateWrite[]): GateMove {
  const end: GateWrite[] = ["hook log", "ledger done"];
  if (j.pass && j.reopen === "undone")
    return { to: "passed", writes: [...first, "task status", "task metadata", "ledger memory", ...end] };
  if (j.pass && j.reopen === "kept") return { to: "reopened", writes: [...first, "assignment", ...end] };
  if (j.pass) return { to: "passed", writes: [...first, "task metadata", ...end] };
  if (j.spent) return { to: "escalated", writes: [...first, "task metadata", "lead note", "nudge", ...end] };
  const made: GateWrite[] = ["follow-up task", "assignment", "nudge"];
  if (j.reopens)
    return { to: "reopened", writes: [...first, "task status", "task metadata", "ledger memory", ...made, ...end] };
  return { to: "failed", writes: [...first, "task metadata", ...made, ...end] };
}

function onCompleteAgain(from: GatePlace, input: GateInput): GateMove {
  switch (from.state) {
    case "passed":
    case "failed":
    case "reopened":
    case "escalated":
      return { to: "unjudged", writes: [] };
    case "unjudged":
    case "running":
    case "held":
    case "given_up":
      throw new GateTransitionError(from, input);
    default:
      return unreachable(from.state);
  }
}

/**
 * Where a record of `reached` (what a policy's plan or a run's log says the event came to) takes an event
 * the caller has at `from`: the move through `next`; null for a state no run of a gate leads to. A move
 * `next` refuses is a bug of ours: said through `warn`, and `reached` kept all the same (the task holds it).
 */
export function moveReaching(from: GatePlace, reached: GatePlace, warn: (message: string) => void): GatePlace | null {
  const input = inputReaching(reached);
  if (!input) return null;
  try {
    const move = next(from, input);
    return move.cause ? { state: move.to, cause: move.cause } : { state: move.to };
  } catch (error) {
    if (!(error instanceof GateTransitionError)) throw error;
    warn(error.message);
    return reached;
  }
}

/**
 * The input that moves a gate that ran to `to` (what a policy's plan reached: policy/decide.ts), so
 * that a caller recording the plan takes the move through `next` from where it has the event; null for
 * a state no run of a gate leads to.
 */
export function inputReaching(to: GatePlace): GateInput | null {
  switch (to.state) {
    case "passed":
      return { on: "judge", judgement: { pass: true } };
    case "reopened":
      return { on: "judge", judgement: { pass: false, reopens: true, spent: false } };
    case "failed":
      return { on: "judge", judgement: { pass: false, reopens: false, spent: false } };
    case "escalated":
      return { on: "judge", judgement: { pass: false, reopens: false, spent: true } };
    case "held":
      if (to.cause === "deferral") return { on: "defer" };
      return to.cause ? { on: "hold", cause: to.cause } : null;
    case "given_up":
      return { on: "give_up" };
    case "unjudged":
    case "running":
      return null;
    default:
      return unreachable(to.state);
  }
}

/**
 * The place a hook log's policy block records (`gate`, and `held`: a hold's cause); null when it records
 * none (an older log, no policy) or not one of the gate life's places.
 */
export function placeOfLog(gate: unknown, held: unknown): GatePlace | null {
  if (!(GATE_STATES as readonly unknown[]).includes(gate)) return null;
  if (gate !== "held") return { state: gate as GateState };
  return (HOLD_CAUSES as readonly unknown[]).includes(held) ? { state: "held", cause: held as HoldCause } : null;
}

/** Why `place` holds its event for the lead or for a retry (an approval or fault hold); null for any other place. */
export function heldFor(place: GatePlace | null | undefined): RerunCause | null {
  return place?.state === "held" && (place.cause === "approval" || place.cause === "fault") ? place.cause : null;
}

function placeName(place: GatePlace): string {
  return place.state === "held" && place.cause ? `held (${place.cause})` : place.state;
}

function inputName(input: GateInput): string {
  if (input.on === "hold") return `hold (${input.cause})`;
  if (input.on !== "judge") return input.on;
  const j = input.judgement;
  return `judge (${j.pass ? `pass${j.reopen ? `, reopen ${j.reopen}` : ""}` : `deny${j.reopens ? ", reopens" : ""}${j.spent ? ", spent" : ""}`})`;
}

// ---------------------------------------------------------------------------------------------
// The table, as `next` gives it

interface GateTransition {
  from: GateState;
  on: string;
  to: GateState;
  /** Which hold the `held` side of the transition is (its other side is plain). */
  cause?: HoldCause;
  writes: readonly GateWrite[];
}

/** Every place an event can be in. */
const PLACES: readonly GatePlace[] = GATE_STATES.flatMap((state): GatePlace[] =>
  state === "held" ? HOLD_CAUSES.map((cause) => ({ state, cause })) : [{ state }],
);

/** Every input, each with the words the table says of it (`held`: from a held place). */
const INPUTS: ReadonlyArray<{ input: GateInput; on: (from: GatePlace) => string }> = [
  {
    input: { on: "take" },
    on: (from) =>
      from.state === "held"
        ? "an approval or fault hold ends: the lead approves (trust), the gate put back as trusted, the fault seen cleared, a retry, the leader restarts"
        : from.state === "given_up"
          ? "the leader tries the policy again (every 30 s, and at its next start)"
          : "the leader takes the event",
  },
  { input: { on: "retry" }, on: () => "the leader died while the gate ran: its next start runs it again" },
  {
    input: { on: "rejudge" },
    on: (from) =>
      from.state === "held"
        ? "the ledger holds it deferred, and no deferral file, log or gate record of the task says a gate held it: judged"
        : "the ledger and the task's gate record disagree (a record edited or lost): judged again",
  },
  ...(
    [
      [{ pass: true }, "allows"],
      [
        { pass: true, reopen: "undone" },
        "allows, run again after a crash, and this completion's own reopen left the task pending and untouched: the reopen undone",
      ],
      [
        { pass: true, reopen: "kept" },
        "allows, run again after a crash, and the worker took up this completion's own reopen already: the task left, its owner handed it again",
      ],
      [{ pass: false, reopens: true, spent: false }, "denies; the policy reopens and the tree's budget is not spent"],
      [{ pass: false, reopens: false, spent: false }, "denies; the policy does not reopen"],
      [{ pass: false, reopens: true, spent: true }, "denies; the tree's budget is spent"],
    ] as const
  ).map(([judgement, words]) => ({
    input: { on: "judge" as const, judgement },
    on: (from: GatePlace) =>
      from.state === "held" ? `a decision (decide, the task API, the deadline) ${words}` : `the gate ${words}`,
  })),
  { input: { on: "defer" }, on: () => "the gate answers defer" },
  {
    input: { on: "hold", cause: "approval" },
    on: () => "the gate is untrusted, missing, insecure, does not parse or cannot start",
  },
  { input: { on: "hold", cause: "fault" }, on: () => "our own part failed under the gate" },
  { input: { on: "give_up" }, on: () => "the policy's writes fail on every try" },
  { input: { on: "complete_again" }, on: () => "the worker completes the task again (a new event)" },
  {
    input: { on: "supersede" },
    on: () => "the worker completes the task again: the newer completion is held in its place, this one done unrun",
  },
];

/**
 * Every transition of a completion's gate life (a failure's is the same without the reopen): `next`, tried on every
 * place and input. Made when asked (the tests, the table in docs/gate-life.md), not at every command's start.
 */
export function transitions(): readonly GateTransition[] {
  return PLACES.flatMap((from) =>
    INPUTS.flatMap(({ input, on }) => {
      let move: GateMove;
      try {
        move = next(from, input);
      } catch (error) {
        if (error instanceof GateTransitionError) return [];
        throw error;
      }
      const cause = move.cause ?? from.cause;
      return [{ from: from.state, on: on(from), to: move.to, cause, writes: move.writes }];
    }),
  );
}

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
): RerunCause | null {
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
export function gateStateOf(task: Task): GatePlace {
  const meta = task.metadata ?? {};
  const recorded = typeof meta.qualityGateEventKey === "string" ? meta.qualityGateEventKey : null;
  const current = taskEvent(task);
  if (recorded === null) return { state: "unjudged" };
  if (current !== null && current.event !== "task_started" && current.key !== recorded) {
    const now = splitRound(current.key);
    const then = splitRound(recorded);
    if (now.base !== then.base || now.round > then.round) return { state: "unjudged" };
  }
  return placeRecorded(task, recorded);
}

/**
 * Where a task's gate record says event `key` is, whether or not it is the task's current event: null
 * when the record is of another event, or there is none. (gateStateOf says it of the current event.)
 */
export function recordedPlaceOf(task: Task, key: string): GatePlace | null {
  return task.metadata?.qualityGateEventKey === key ? placeRecorded(task, key) : null;
}

/** Whether `place` is one a judgement of the work leads to (the gate ran, or a decision settled it). */
export function isJudged(place: GatePlace | null): boolean {
  return place !== null && (JUDGED_STATES as readonly GateState[]).includes(place.state);
}

/** The place the gate words of a task's metadata say, for the event `recorded` they are of. */
function placeRecorded(task: Task, recorded: string): GatePlace {
  const meta = task.metadata ?? {};
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
