/**
 * One event end to end: discover the chain → run its hooks → (policy) → hook logs. Shared by `run` and
 * the leader, so a hand-fired event behaves exactly as a watched one.
 *
 * The chain (runner/chain.ts; docs/hook-contract.md, "Several hooks per event") is the v1 file, then `on_<event>.d/` of the global and the team layer. Task
 * events run it in order and stop at the first denial or closed error; `idle` runs every hook. The
 * event's outcome folds the runs: a denial or a closed error beats any allow. The policy is applied
 * once, for the run that decided; for `task_started`, the start gate's answer instead (a denied claim
 * is put back: invoke/after-gate.ts, policy/start-gate.ts).
 *
 * Logs are written last, after the policy actions, one per hook run; the first run's log (the one that
 * carries the caller's run id) is written last of all, so that its presence on disk means the event
 * was completely handled. The leader's crash recovery relies on this.
 *
 * A run that answers `defer` (a completion or failure with a policy) holds the gate instead: the task's metadata
 * says `deferred` (policy/decide.ts deferPlan, through remediate), the logs carry the deferral, and
 * then the deferral file is written (invoke/deferral.ts); a decision applies the policy later
 * (invoke/decision.ts).
 */
import path from "node:path";
import { type HookEventName, type HookInvocation, isTaskEvent } from "../contract/contract.js";
import type { RunResult } from "../contract/hook-run.js";
import type { IdleNotification, Task, TeamIdentity } from "../contract/team-files.js";
import { discoverChain, gateName, teamHooksDir, type ChainDiscovery, type ChainHook } from "../runner/chain.js";
import { type HookTrigger, planHookLogFile, writeHookLog } from "../runner/hook-log.js";
import { DEFAULT_FAILURE_MODES, DEFAULT_LIMITS, type ExitCodeMode, type FailureMode, type HookLimits, type SweepMode } from "../settings/hooks-config.js";
import { describeError } from "../contract/errors.js";
import { DEFER_TIMEOUT_MS } from "../settings/handlers.js";
import { type DeferralRecord, heldRecord, writeDeferral } from "./deferral.js";
import type { EffectivePolicy } from "../settings/options.js";
import type { HandlerDef } from "../settings/handlers.js";
import type { PrivacySettings } from "../settings/privacy.js";
import { countsAsPass } from "../policy/decide.js";
import { holdCauseOf } from "../policy/gate-life.js";
import type { GateMemory, Remembered } from "../policy/remediate.js";
import type { SentLog } from "../team/sent-log.js";
import { checkChainTrust, snapshotChain, type ChainTrust, type TrustRecord } from "../runner/trust.js";
import { loggedInvocation, refusedRun, runChain, type ShownRecord } from "./chain-run.js";
import { type AfterGate, afterGateApplies, applyAfterGate, policyApplies, summarize } from "./after-gate.js";
import { chainPatches, decidingRun, notePatches, patchFate, type KeptPatch } from "./patches.js";
import { taskFile } from "../team/paths.js";
import { noGateInForce, nonBlockingError, noteShadowDenial, observes } from "./shadow.js";
import { readTask } from "../team/tasks.js";

export interface InvokeRequest {
  identity: TeamIdentity;
  event: HookEventName;
  /** The event key (contract/events.ts); the ledger's and the log's name for this event. */
  key: string;
  taskId: string | null;
  member: string | null;
  timestamp: string | null;
  /** The idle notification the event came from, when it did: the context document's `notification`. */
  notification?: IdleNotification;
  /** The task as the caller just read it (the leader's look); default: read from its file now. */
  task?: Task | null;
  hooksDir: string;
  /** The team's own layer (`<teamDir>/hooks`); default: that path. null: no team layer. */
  teamHooksDir?: string | null;
  /** config.json `hooks.handlers`: those declared for the event run after its files (runner/chain.ts). */
  handlers?: readonly HandlerDef[];
  cwd: string;
  timeoutMs: number;
  /**
   * The failure policy to apply to a task event; null only reports (as `run` without --apply-policy).
   * For `task_started` its presence asks for the start gate's own answer (policy/start-gate.ts).
   */
  policy: EffectivePolicy | null;
  /** What a hook error counts as; default: closed for task events, open for idle. */
  failureMode?: FailureMode;
  limits?: Readonly<HookLimits>;
  /** When each hook's run is swept for run-id escapees (runner/run.ts `escapeeScan`); default `auto`. */
  sweep?: SweepMode;
  /** What a hook's exit code means without a verdict (`hooks.exitCodes`); default `v1`. */
  exitCodes?: ExitCodeMode;
  /** This key ran before (a retry after a crash, or a replay): the logs say so. */
  retry?: boolean;
  /** What fired the event, for its logs (`trigger`): `hand` for `run`; default `leader`. */
  trigger?: HookTrigger;
  env: Readonly<Record<string, string | undefined>>;
  /** The run id of the chain's first hook (the leader's ledger knows the event by it). */
  runId?: string;
  /** Called as each hook of the chain starts: its process group, run id and file name. */
  onSpawn?: (info: { pid: number; runId: string; hook: string }) => void;
  /** Awaited just before the first hook starts (runner/run.ts `notBefore`): the leader's ledger flush. */
  notBefore?: Promise<unknown>;
  /** The caller is stopping: a chain starts no further hook, and the event is left unsettled (`interrupted`). */
  stopping?: () => boolean;
  /** The clock (tests pass their own). */
  now?: () => Date;
  /** `PI_TEAMS_HOOK_ATTEMPT`: how many times this event's gate has started, this time included. */
  attempt?: number;
  /** Records messages before they are sent (default: the team dir's `hook-state/sent.jsonl`). */
  sentLog?: SentLog;
  /** How long the policy's writes wait for a lock; default the lock protocol's 10 s. */
  lockTimeoutMs?: number;
  /** Compare the chain with the team's trust record before anything runs (runner/trust.ts). */
  trust?: InvokeTrust;
  /** How long a held gate waits for its decision (`hooks.deferTimeoutMs`); default 24 h. */
  deferTimeoutMs?: number;
  /** What the leader remembers of its tasks' gate lives (rounds, roots, budgets); absent for a hand run. */
  memory?: GateMemory;
  /** Whether the owner of a task the policy reopens is sent its `task_assignment` (`hooks.reassignOnReopen`); default true. */
  reassignOnReopen?: boolean;
  /** What a patch verdict may write (`hooks.writableFields`); default (null) `metadata` (contract/merge-patch.ts). */
  writableFields?: readonly string[] | null;
  /** What hooks are shown and what is redacted from what they say (`hooks.projection`, `confidential`, `redactEnv`); default none. */
  privacy?: PrivacySettings;
}

export interface InvokeTrust {
  /** The record in force; null when there is none yet (only insecure gates are refused then). */
  record: TrustRecord | null;
  /** `--trust-changes`: new, changed and removed gates run as they are now (the log keeps both hashes). */
  acceptChanges: boolean;
  /** `--allow-insecure-hooks`. */
  allowInsecure: boolean;
  /** Called with every check that found a change or a problem (the leader reports each change once). */
  onCheck?: (check: ChainTrust) => void;
}

export interface HookRun {
  hook: ChainHook;
  result: RunResult;
  startedAt: string;
  logFile: string | null;
  /** The part of a patch verdict inside the writable fields (invoke/patches.ts). */
  patch?: KeptPatch;
  /** What the hook was shown, when it was not the whole document: its log's `shown` block. */
  shown?: ShownRecord;
}

export interface InvokeOutcome {
  chain: ChainDiscovery;
  /** The task as the hooks saw it; null for idle, or when its file is gone or unreadable. */
  task: Task | null;
  /** Every hook that ran (or was refused by a limit), in order. */
  runs: HookRun[];
  /** The run that decided the event (the first denial or closed error, else the last run); null: no hook. */
  result: RunResult | null;
  /** The deciding run's hook. */
  hook: ChainHook | null;
  /**
   * How the event counts after the failure mode: passed, failed, deferred (a gate answered `defer`), or
   * held (its gate could not judge the work: policy/gate-life.ts holdCauseOf). null: no hook.
   */
  counted: Counted | null;
  /** Why the event is held (`counted: "held"`): the lead's approval, or our own fault. */
  hold?: "approval" | "fault";
  /** What the leader should remember of the task's gate life after this event (policy/remediate.ts). */
  remembered?: Remembered;
  /** The deciding run's log (the first run's log when all passed). */
  logFile: string | null;
  summary: string;
  /** What the policy did (`reopened (1/3)`, `follow-up #12 for bob`, `nudge bob`), or `none`. */
  actions: string[];
  /** Problems worth a warning: an unreadable task file, a policy step that failed. */
  problems: string[];
  /**
   * null: everything is on disk (task writes, messages, logs). Otherwise the step that failed; nothing
   * after it was done, and `resume()` tries it again without running a hook again.
   */
  pending: PendingStep | null;
  /** Whether the whole policy was applied; null when no policy applies (idle, `run` without it, no hook). */
  policyApplied: boolean | null;
  /** The held gate, once its deferral is on disk; null when the event was not held. */
  deferral: DeferralRecord | null;
  /** Every run was skipped by its matchers or a shadow gate's: no gate was in force, nothing was enforced. */
  noGateInForce?: true;
  /** The event passed, but a run's error did not block it (shadow.ts `nonBlockingError`): what "passed" would hide. */
  nonBlocking?: string;
  /**
   * Why the chain was cut short by a stop (`req.stopping`); then nothing was applied or logged, and
   * the event must be run again (the leader leaves it in flight). Absent otherwise.
   */
  interrupted?: string;
}

/** How an event counts once its gate ran: see InvokeOutcome.counted. */
export type Counted = "passed" | "failed" | "deferred" | "held";

export interface PendingStep {
  /** `remediation`: a task or mailbox write of the policy failed (a lock held too long, a full disk). `logs`: a log could not be written. */
  stage: "remediation" | "logs";
  error: string;
  /** Tries the failed step again, then what follows it. */
  resume(): Promise<InvokeOutcome>;
  /** Stops trying to apply the policy: the logs are written saying what was and was not applied. */
  abandon(): Promise<InvokeOutcome>;
}

export async function invokeEvent(req: InvokeRequest): Promise<InvokeOutcome> {
  const now = req.now ?? (() => new Date());
  const mode = req.failureMode ?? DEFAULT_FAILURE_MODES[req.event];
  const limits = req.limits ?? DEFAULT_LIMITS;
  const teamLayer = req.teamHooksDir === undefined ? teamHooksDir(req.identity.teamDir) : req.teamHooksDir;
  const problems: string[] = [];
  // Independent reads: together, not one after the other (they are most of the time before the spawn).
  const [chain, task] = await Promise.all([discoverChain({ globalDir: req.hooksDir, teamDir: teamLayer, event: req.event, handlers: req.handlers ?? [] }), loadTask(req, problems)]);
  const invocation: HookInvocation = {
    event: req.event,
    teamId: req.identity.teamId,
    teamDir: req.identity.teamDir,
    taskListId: req.identity.taskListId,
    style: req.identity.style,
    ...(req.member ? { memberName: req.member } : {}),
    ...(req.timestamp ? { timestamp: req.timestamp } : {}),
    completedTask: task,
    ...(req.notification ? { notification: req.notification } : {}),
  };
  const none: InvokeOutcome = { chain, task, runs: [], result: null, hook: null, counted: null, logFile: null, summary: "no hook", actions: [], problems, pending: null, policyApplied: null, deferral: null };
  const layers = { global: path.resolve(req.hooksDir), team: teamLayer === null ? null : path.resolve(teamLayer) };
  // Each gate read once: checked, its settings line read, and started from these bytes (runner/run.ts).
  const snapshots = snapshotChain(chain);
  const trust = req.trust ? checkChainTrust(chain, req.event, layers, { record: req.trust.record, allowInsecure: req.trust.allowInsecure, uid: process.getuid?.() ?? null, snapshots }) : null;
  if (trust && req.trust?.onCheck && (trust.changes.length > 0 || trust.problems.length > 0)) req.trust.onCheck(trust);
  // A gate that is not the one trusted never runs, and neither does the rest of its chain.
  const refused = trust ? trust.problems.filter((p) => p.kind === "insecure_hook" || !req.trust?.acceptChanges) : [];
  if (chain.hooks.length === 0 && refused.length === 0) return none;

  const { runs, interrupted } =
    refused.length > 0
      ? { runs: [refusedRun(req, chain, layers, refused, now)], interrupted: null }
      : await runChain(req, chain.hooks, invocation, { mode, limits, now, trust, snapshots });
  if (interrupted !== null) return { ...none, runs, interrupted };
  // Rejected: no hook started (runner/run.ts waited for it), so nothing is applied or logged either; the
  // caller (the leader, its ledger flush failed) leaves the key to be retried.
  await req.notBefore;
  // Gates skipped by their matchers and shadow gates never decide: the rest do, and when none is left,
  // the event had no gate in force (no policy), and its runs are only logged.
  const enforced = runs.filter((r) => !observes(r.result));
  const deciding = decidingRun(enforced.length > 0 ? enforced : runs, mode);
  if (!deciding) return none;
  // Chosen now: the policy's messages quote it, and they go out before the logs are written.
  const decidingLog = planHookLogFile(req.identity.teamDir, { startedAt: deciding.startedAt, invocation });
  const deferred = deciding.result.outcome === "deferred";
  const passes = countsAsPass(deciding.result, mode);
  // A gate that cannot judge the work holds the event (when a policy would judge it): never the worker's failure.
  const hold = policyApplies(req) && !deferred ? holdCauseOf(deciding.result, passes) : null;
  const settling: Settling = {
    req,
    mode,
    now,
    chain,
    task,
    invocation,
    runs,
    deciding,
    counted: deferred ? "deferred" : hold ? "held" : passes ? "passed" : "failed",
    hold,
    problems,
    decidingLog,
    remediation: null,
    abandoned: false,
    sent: req.sentLog ?? null,
    held: deferred && policyApplies(req) ? heldRecord({ ...req, identity: req.identity, eventRunId: runs[0]?.result.runId ?? deciding.result.runId, hook: deciding.hook, result: deciding.result, deferredAt: now().toISOString(), deferTimeoutMs: req.deferTimeoutMs ?? DEFER_TIMEOUT_MS.default, logFile: decidingLog, patches: chainPatches(runs) }) : null,
    deferral: null,
    shadowNote: null,
  };
  return settle(settling);
}

/** Everything known about an event once its hooks have run: what `settle` finishes, as often as it takes. */
export interface Settling {
  req: InvokeRequest;
  mode: FailureMode;
  now: () => Date;
  chain: ChainDiscovery;
  task: Task | null;
  invocation: HookInvocation;
  runs: HookRun[];
  deciding: HookRun;
  counted: Counted;
  /** Why the event is held instead of judged (counted `held`); null otherwise. */
  hold: "approval" | "fault" | null;
  /** Problems found before the policy (an unreadable task file). */
  problems: string[];
  decidingLog: string;
  /** The last attempt at what follows the gate (the policy, or a start gate's answer); null before the first (or when none applies). */
  remediation: AfterGate | null;
  /** Remediation given up: the logs say what was and was not applied. */
  abandoned: boolean;
  sent: SentLog | null;
  /** The deferral of a held gate (the deciding run answered `defer` and a policy applies); null otherwise. */
  held: DeferralRecord | null;
  /** The held gate's deferral once its file is written (the last step). */
  deferral: DeferralRecord | null;
  /** What the shadow step did (`shadow: NAME would have denied`, or nothing); null until it ran (once: not tried again). */
  shadowNote: { action: string | null } | null;
}

/**
 * Applies the policy (unless done already) and writes the logs (those not written yet). Stops at the
 * first step that fails and returns it as `pending`, with the means to try it again.
 */
async function settle(ctx: Settling): Promise<InvokeOutcome> {
  const { req } = ctx;
  if (ctx.shadowNote === null) {
    const noted = await noteShadowDenial(req, ctx.runs, ctx.now);
    ctx.shadowNote = { action: noted.action };
    if (noted.problem) ctx.problems.push(noted.problem);
  }
  if (!noGateInForce(ctx.runs) && afterGateApplies(req) && !ctx.abandoned && !ctx.remediation?.complete) {
    ctx.remediation = await applyAfterGate(ctx);
    if (!ctx.remediation.complete) return outcomeOf(ctx, pendingStep(ctx, "remediation", ctx.remediation.errors.join("; ")));
  }
  notePatches(ctx.runs, patchFate({ counted: ctx.counted, held: ctx.held !== null, policy: policyApplies(req), remediation: ctx.remediation }));
  try {
    await writeLogs(ctx);
    // After the logs: a deferral a decider can find is one the logs know (see invoke/deferral.ts).
    if (ctx.held && ctx.remediation?.complete) ctx.deferral ??= await writeDeferral(req.identity.teamDir, ctx.held);
  } catch (error) {
    return outcomeOf(ctx, pendingStep(ctx, "logs", describeError(error)));
  }
  return outcomeOf(ctx, null);
}

function pendingStep(ctx: Settling, stage: PendingStep["stage"], error: string): PendingStep {
  return {
    stage,
    error,
    resume: () => settle(ctx),
    abandon: () => {
      ctx.abandoned = true;
      return settle(ctx);
    },
  };
}

/** The logs, one per run not logged yet; the first run's last (its presence means "done", see the header). */
async function writeLogs(ctx: Settling): Promise<void> {
  const { req, runs, deciding, counted } = ctx;
  const policyRecord = ctx.remediation?.record;
  const chainRecord = runs.length > 1 ? { hooks: runs.map((r) => r.hook.name), decidedBy: deciding.hook.name, counted } : undefined;
  for (const run of [...runs.slice(1), runs[0]]) {
    if (!run || run.logFile !== null) continue;
    run.logFile = await writeHookLog(
      req.identity.teamDir,
      {
        invocation: loggedInvocation(req, ctx.invocation),
        result: run.result,
        ...(run.shown ? { shown: run.shown } : {}),
        key: req.key,
        startedAt: run.startedAt,
        ...(req.retry ? { retry: true } : {}),
        trigger: req.trigger ?? "leader",
        ...(policyRecord && run === deciding ? { policy: policyRecord } : {}),
        ...(chainRecord ? { chain: { ...chainRecord, position: runs.indexOf(run) + 1, layer: run.hook.layer } } : {}),
        // The first run's log (the one recovery reads) and the held run's say what holds the event.
        ...(ctx.held && (run === deciding || run === runs[0]) ? { deferral: ctx.held } : {}),
      },
      { file: run === deciding ? ctx.decidingLog : null },
    );
  }
}

function outcomeOf(ctx: Settling, pending: PendingStep | null): InvokeOutcome {
  const { deciding, remediation } = ctx;
  const observedOnly = noGateInForce(ctx.runs);
  const { event, timeoutMs } = ctx.req;
  const nonBlocking = nonBlockingError(ctx.runs, deciding, { counted: ctx.counted, mode: ctx.mode, event, timeoutMs });
  return {
    chain: ctx.chain,
    task: ctx.task,
    runs: ctx.runs,
    result: deciding.result,
    hook: deciding.hook,
    counted: ctx.counted,
    ...(ctx.hold ? { hold: ctx.hold } : {}),
    ...(remediation?.remembered ? { remembered: remediation.remembered } : {}),
    logFile: deciding.logFile,
    summary: remediation ? remediation.summary : observedOnly ? observedSummary(ctx) : summarize(deciding.result, ctx.mode, ctx.req.timeoutMs),
    actions: [...(remediation?.actions ?? []), ...(ctx.shadowNote?.action ? [ctx.shadowNote.action] : [])],
    problems: [...ctx.problems, ...(remediation?.refused ?? []), ...(remediation?.errors ?? [])],
    pending,
    policyApplied: remediation ? remediation.complete : null,
    deferral: ctx.deferral,
    ...(observedOnly ? { noGateInForce: true as const } : {}),
    ...(nonBlocking !== null ? { nonBlocking } : {}),
  };
}

/** An event whose gates all were skipped or in shadow mode: what each did, in one line. */
function observedSummary(ctx: Settling): string {
  const said = ctx.runs.map((run) => {
    const name = gateName(run.hook, ctx.req.event);
    if (run.result.skipped !== undefined) return `${name} skipped (${run.result.skipped})`;
    return `${name} in shadow mode${run.result.shadow?.wouldDeny ? " would have denied" : " allowed"}`;
  });
  return `no gate in force: ${said.join("; ")}`;
}

async function loadTask(req: InvokeRequest, problems: string[]): Promise<Task | null> {
  if (req.taskId === null || !isTaskEvent(req.event)) return null;
  if (req.task !== undefined) return req.task;
  const read = await readTask(taskFile(req.identity.teamDir, req.identity.taskListId, req.taskId));
  if (read.ok) return read.value;
  if (read.problem.kind !== "missing") problems.push(`${read.problem.message}`);
  return null;
}
