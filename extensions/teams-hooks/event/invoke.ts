/**
 * One event end to end: discover the chain → run its hooks → (policy) → hook logs. Shared by `run` and
 * the leader, so a hand-fired event behaves exactly as a watched one.
 *
 * The chain (gates/chain.ts; docs/hook-contract.md, "Several hooks per event") is the v1 file, then `on_<event>.d/` of
 * the global and the team layer. Task events run it in order and stop at the first denial or closed error; `idle` runs
 * every hook. The event's outcome folds the runs: a denial or a closed error beats any allow. The policy is applied
 * once, for the run that decided; for `task_started`, the start gate's answer instead (a denied claim is put back:
 * event/after-gate.ts, event/start-gate.ts).
 *
 * Logs are written last, after the policy actions, one per hook run; the first run's log (the one that
 * carries the caller's run id) is written last of all, so that its presence on disk means the event
 * was completely handled. The leader's crash recovery relies on this.
 *
 * A run that answers `defer` (a completion or failure with a policy) holds the gate instead: the task's metadata
 * says `deferred` (policy/decide.ts deferPlan, through remediate), the logs carry the deferral, and
 * then the deferral file is written (deferrals/record.ts); a decision applies the policy later
 * (event/deferral-decision.ts).
 *
 * The team's settings come whole, as the caller resolved them once (`req.setup.settings`,
 * settings/team-settings.ts `TeamSettings`, frozen): nothing here resolves or copies a setting. What the
 * hooks did is fixed once they have run (`Ran`, frozen); settling it is a series of steps, each giving
 * the next `Progress`, so a step that failed is tried again from the progress before it.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { type HookEventName, type HookInvocation, isTaskEvent } from "../contract/contract.js";
import type { RunResult } from "../contract/hook-run.js";
import type { IdleNotification, Task } from "../contract/team-files.js";
import { discoverChain, gateName, type ChainDiscovery, type ChainHook } from "../gates/chain.js";
import { type HookTrigger, planHookLogFile, writeHookLog } from "../logs/hook-log.js";
import { type FailureMode, settingsForEvent } from "../settings/team-settings.js";
import { HooksError, describeError } from "../contract/errors.js";
import { type DeferralRecord, heldRecord, heldSettingsOf, writeDeferral } from "../deferrals/record.js";
import { countsAsPass } from "../policy/decide.js";
import { type GatePlace, holdCauseOf } from "../policy/gate-life.js";
import type { GateMemory, Remembered } from "./remediate.js";
import type { SentLog } from "../team/sent-log.js";
import type { TeamSetup } from "../team/setup.js";
import { checkChainTrust, snapshotChain, type ChainTrust, type TrustRecord } from "../trust/trust.js";
import { loggedInvocation, refusedRun, runChain, type ShownRecord } from "./chain-run.js";
import { type AfterGate, afterGateApplies, applyAfterGate, policyApplies, summarize } from "./after-gate.js";
import { chainPatches, decidingRun, notePatches, patchFate, type KeptPatch } from "./patches.js";
import { taskFile } from "../team/paths.js";
import { noGateInForce, nonBlockingError, noteShadowDenial, observes } from "./shadow.js";
import { readTask } from "../team/tasks.js";
import type { StandbyAhead } from "../runner/run-hook.js";
import { createRuntime, type Runtime } from "../runner/runtime.js";

/**
 * The team an event belongs to, as a command resolved it (team/setup.ts `resolveTeamSetup`): its
 * identity, the hooks dir, its own layer (null: none), the hooks' working directory, and every
 * setting in force. A `TeamSetup` is one as it is.
 */
type InvokeSetup = Pick<TeamSetup, "identity" | "hooksDir" | "cwd" | "settings"> & {
  teamHooksDir: string | null;
};

export interface InvokeRequest {
  /**
   * The team and its settings, whole (see InvokeSetup): the failure policy, modes, limits, privacy… are read from here.
   */
  setup: InvokeSetup;
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
  /**
   * Apply the team's failure policy to a task's completion or failure, and a start gate's answer to a
   * claim (event/start-gate.ts); false only reports (as `run` without --apply-policy).
   */
  applyPolicy: boolean;
  /** The environment the hooks start with (and the secrets redacted from what they say are read from). */
  env: Readonly<Record<string, string | undefined>>;
  /** This key ran before (a retry after a crash, or a replay): the logs say so. */
  retry?: boolean;
  /** What fired the event, for its logs (`trigger`): `hand` for `run`; default `leader`. */
  trigger?: HookTrigger;
  /** The run id of the chain's first hook (the leader's ledger knows the event by it). */
  runId?: string;
  /** Awaited just before the first hook starts (runner/run-hook.ts `notBefore`): the leader's ledger flush. */
  notBefore?: Promise<unknown>;
  /** A leader's event: its sandboxed gates start from standbys (runner/standby.ts; `ahead`: runner/run-hook.ts). */
  standby?: boolean | StandbyAhead;
  /** The caller is stopping: a chain starts no further hook, and the event is left unsettled (`interrupted`). */
  stopping?: () => boolean;
  /** `PI_TEAMS_HOOK_ATTEMPT`: how many times this event's gate has started, this time included. */
  attempt?: number;
  /**
   * The clock, the lock timeout, the sent log (the team dir's `hook-state/sent.jsonl`), who is told as each
   * hook of the chain starts (`onSpawn`), the test pause: runner/runtime.ts, whole. Default `createRuntime()`.
   */
  runtime?: Runtime;
  /**
   * Compare the chain with the team's trust record before anything runs (trust/trust.ts), under the
   * settings' `trustChanges` and `allowInsecureHooks`.
   */
  trust?: InvokeTrust;
  /** What the leader remembers of its tasks' gate lives (rounds, roots, budgets); absent for a hand run. */
  memory?: GateMemory;
}

interface InvokeTrust {
  /** The record in force; null when there is none yet (only insecure gates are refused then). */
  record: TrustRecord | null;
  /** Called with every check that found a change or a problem (the leader reports each change once). */
  onCheck?: (check: ChainTrust) => void;
}

export interface HookRun {
  hook: ChainHook;
  result: RunResult;
  startedAt: string;
  logFile: string | null;
  /** The part of a patch verdict inside the writable fields (event/patches.ts). */
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
   * Where the gate's run puts the event in its gate life (policy/gate-life.ts), after the failure mode and
   * before the policy: `passed`, `failed` (the policy then says whether it reopens or escalates), `held`
   * with cause `deferral` (a gate answered `defer`), or `held` with cause `approval` or `fault` (its gate
   * could not judge the work: holdCauseOf; only when a policy applies). null: no hook.
   */
  counted: GatePlace | null;
  /** What the leader should remember of the task's gate life after this event (event/remediate.ts). */
  remembered?: Remembered;
  /** The deciding run's log (the first run's log when all passed). */
  logFile: string | null;
  summary: string;
  /** What the policy did, in words (text/actions.ts: `reopened (1/3)`, `follow-up #12 for bob`, `nudge bob`), or `none`. */
  actions: string[];
  /** The follow-up task the policy made for this event (or found made before); absent when none. */
  followupTaskId?: string;
  /** Where the policy moved the event's gate life (policy/gate-life.ts next); absent when no policy applied. */
  gate?: AfterGate["gate"];
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

export interface PendingStep {
  /**
   * `remediation`: a task or mailbox write of the policy failed (a lock held too long, a full disk). `logs`: a log
   * could not be written.
   */
  stage: "remediation" | "logs";
  error: string;
  /** Tries the failed step again, then what follows it. */
  resume(): Promise<InvokeOutcome>;
  /** Stops trying to apply the policy: the logs are written saying what was and was not applied. */
  abandon(): Promise<InvokeOutcome>;
}

export async function invokeEvent(given: InvokeRequest): Promise<InvokeOutcome> {
  // One dispatch, one id: its hooks run as `<id>`, `<id>.2`, `<id>.3`… whoever fired it (the leader
  // gives its own, for its ledger; a hand run gets one here).
  const request: InvokeRequest = {
    ...given,
    runId: given.runId ?? randomUUID(),
    runtime: given.runtime ?? createRuntime(),
  };
  // The event's own hook point (`hooks.events.<event>`): its writable fields, projection and limits for this run.
  const eventSettings = settingsForEvent(request.setup.settings, request.event);
  const req =
    eventSettings === request.setup.settings
      ? request
      : { ...request, setup: Object.freeze({ ...request.setup, settings: eventSettings }) };
  const { identity, settings } = req.setup;
  const runtime = request.runtime ?? createRuntime();
  const now = runtime.now;
  const mode = settings.failureModes[req.event].value;
  const teamLayer = req.setup.teamHooksDir;
  const problems: string[] = [];
  // Independent reads: together, not one after the other (they are most of the time before the spawn).
  const [chain, task] = await Promise.all([
    discoverChain({ globalDir: req.setup.hooksDir, teamDir: teamLayer, event: req.event, handlers: settings.handlers }),
    loadTask(req, problems),
  ]);
  const invocation: HookInvocation = {
    event: req.event,
    teamId: identity.teamId,
    teamDir: identity.teamDir,
    taskListId: identity.taskListId,
    style: identity.style,
    ...(req.member ? { memberName: req.member } : {}),
    ...(req.timestamp ? { timestamp: req.timestamp } : {}),
    completedTask: task,
    ...(req.notification ? { notification: req.notification } : {}),
  };
  const none: InvokeOutcome = {
    chain,
    task,
    runs: [],
    result: null,
    hook: null,
    counted: null,
    logFile: null,
    summary: "no hook",
    actions: [],
    problems,
    pending: null,
    policyApplied: null,
    deferral: null,
  };
  const layers = {
    global: path.resolve(req.setup.hooksDir),
    team: teamLayer === null ? null : path.resolve(teamLayer),
  };
  // Each gate read once: checked, its settings line read, and started from these bytes (runner/run-hook.ts).
  const snapshots = snapshotChain(chain);
  const trust = req.trust
    ? checkChainTrust(chain, req.event, layers, {
        record: req.trust.record,
        allowInsecure: settings.allowInsecureHooks.value,
        uid: process.getuid?.() ?? null,
        snapshots,
        participation: settings.events[req.event].participation.value,
      })
    : null;
  const worthSaying = trust && (trust.changes.length > 0 || trust.problems.length > 0 || trust.dropped.length > 0);
  if (trust && worthSaying && req.trust?.onCheck) req.trust.onCheck(trust);
  // A gate that is not the one trusted never runs, and neither does the rest of its chain.
  const refused = trust ? trust.problems.filter((p) => p.kind === "insecure_hook" || !settings.trustChanges.value) : [];
  if (chain.hooks.length === 0 && refused.length === 0) return none;

  const chainRun =
    refused.length > 0
      ? { runs: [refusedRun(req, chain, layers, refused, now)], interrupted: null }
      : await runChain(req, chain.hooks, invocation, { mode, now, trust, snapshots });
  const { interrupted } = chainRun;
  // Optional gates the team dropped are said in every log of the event (trust/trust.ts).
  const droppedGates = trust?.dropped.map((d) => ({ path: d.path, detail: `dropped by the team: ${d.detail}` })) ?? [];
  const runs: HookRun[] =
    droppedGates.length === 0
      ? chainRun.runs
      : chainRun.runs.map((run) => ({ ...run, result: { ...run.result, droppedGates } }));
  if (interrupted !== null) return { ...none, runs, interrupted };
  // Rejected: no hook started (runner/run-hook.ts waited for it), so nothing is applied or logged either; the
  // caller (the leader, its ledger flush failed) leaves the key to be retried.
  await req.notBefore;
  // Gates skipped by their matchers and shadow gates never decide: the rest do, and when none is left,
  // the event had no gate in force (no policy), and its runs are only logged.
  const enforced = runs.filter((r) => !observes(r.result));
  const deciding = decidingRun(enforced.length > 0 ? enforced : runs, mode);
  if (!deciding) return none;
  // Chosen now: the policy's messages quote it, and they go out before the logs are written.
  const decidingLog = planHookLogFile(identity.teamDir, { startedAt: deciding.startedAt, invocation });
  const deferred = deciding.result.outcome === "deferred";
  const passes = countsAsPass(deciding.result, mode);
  // A gate that cannot judge the work holds the event (when a policy would judge it): never the worker's failure.
  const hold = policyApplies(req) && !deferred ? holdCauseOf(deciding.result, passes) : null;
  const counted: GatePlace = deferred
    ? { state: "held", cause: "deferral" }
    : hold
      ? { state: "held", cause: hold }
      : { state: passes ? "passed" : "failed" };
  const ran: Ran = Object.freeze({
    req,
    mode,
    now,
    chain,
    task,
    invocation,
    runs: Object.freeze(runs.map((run) => Object.freeze(run))),
    deciding,
    decidingIndex: runs.indexOf(deciding),
    counted,
    problems: Object.freeze([...problems]),
    decidingLog,
    sent: runtime.sentLog(identity.teamDir),
    held:
      deferred && policyApplies(req)
        ? heldRecord({
            ...req,
            identity,
            eventRunId: runs[0]?.result.runId ?? deciding.result.runId,
            hook: deciding.hook,
            result: deciding.result,
            deferredAt: now().toISOString(),
            deferTimeoutMs: settings.deferTimeoutMs.value,
            logFile: decidingLog,
            patches: chainPatches(runs),
            // What the decision will be applied under, whatever config.json says by then.
            settings: heldSettingsOf(settings, req.event),
          })
        : null,
  });
  return settle(ran, { shadow: null, remediation: null, abandoned: false, logs: runs.map(() => null), deferral: null });
}

/**
 * Everything known about an event once its hooks have run, fixed from then on (frozen): what `settle`
 * finishes, as often as it takes. Its `deciding` run is `runs[decidingIndex]`.
 */
export interface Ran {
  readonly req: InvokeRequest;
  readonly mode: FailureMode;
  readonly now: () => Date;
  readonly chain: ChainDiscovery;
  readonly task: Task | null;
  readonly invocation: HookInvocation;
  readonly runs: readonly HookRun[];
  /** The run that decided the event, as it ran. */
  readonly deciding: HookRun;
  /** Its place in `runs` (and in the runs as settled, which say what became of their patches). */
  readonly decidingIndex: number;
  /** Where the gate's run put the event (InvokeOutcome.counted). */
  readonly counted: GatePlace;
  /** Problems found before the policy (an unreadable task file). */
  readonly problems: readonly string[];
  readonly decidingLog: string;
  /** Where the messages of what follows the gate are recorded before they are sent. */
  readonly sent: SentLog;
  /** The deferral of a held gate (the deciding run answered `defer` and a policy applies); null otherwise. */
  readonly held: DeferralRecord | null;
}

/** The run that decided the event, of `runs` as settled so far. */
function decidingOf(ran: Ran, runs: readonly HookRun[]): HookRun {
  const run = runs[ran.decidingIndex];
  if (!run) throw new HooksError("E_INTERNAL", `no deciding run at ${ran.decidingIndex} of ${runs.length}`);
  return run;
}

/** How far the settling of a `Ran` got: each step gives the next; a pending step resumes from the one it failed in. */
interface Progress {
  /**
   * What the shadow step did (`shadow: NAME would have denied`, or nothing); null until it ran (once: not tried again).
   */
  readonly shadow: { action: string | null; problem: string | null } | null;
  /**
   * The last attempt at what follows the gate (the policy, or a start gate's answer); null before the first (or when
   * none applies).
   */
  readonly remediation: AfterGate | null;
  /** Remediation given up: the logs say what was and was not applied. */
  readonly abandoned: boolean;
  /** Each run's log once written, by its place in the chain. */
  readonly logs: readonly (string | null)[];
  /** The held gate's deferral once its file is written (the last step). */
  readonly deferral: DeferralRecord | null;
}

/**
 * Applies the policy (unless done already) and writes the logs (those not written yet). Stops at the
 * first step that fails and returns it as `pending`, with the means to try it again from there.
 */
async function settle(ran: Ran, from: Progress): Promise<InvokeOutcome> {
  const { req } = ran;
  let at = from;
  if (at.shadow === null) at = { ...at, shadow: await noteShadowDenial(req, ran.runs, ran.now) };
  if (!noGateInForce(ran.runs) && afterGateApplies(req) && !at.abandoned && !at.remediation?.complete) {
    const remediation = await applyAfterGate(ran);
    at = { ...at, remediation };
    if (!remediation.complete)
      return outcomeOf(ran, at, ran.runs, pendingStep(ran, at, "remediation", remediation.errors.join("; ")));
  }
  const runs = notePatches(
    ran.runs,
    patchFate({
      counted: ran.counted,
      held: ran.held !== null,
      policy: policyApplies(req),
      remediation: at.remediation,
    }),
  );
  const logged = await writeLogs(ran, runs, at);
  at = { ...at, logs: logged.logs };
  if (!logged.ok) return outcomeOf(ran, at, runs, pendingStep(ran, at, "logs", describeError(logged.error)));
  // After the logs: a deferral a decider can find is one the logs know (see deferrals/record.ts).
  if (ran.held && at.remediation?.complete && at.deferral === null) {
    try {
      at = { ...at, deferral: await writeDeferral(req.setup.identity.teamDir, ran.held) };
    } catch (error) {
      return outcomeOf(ran, at, runs, pendingStep(ran, at, "logs", describeError(error)));
    }
  }
  return outcomeOf(ran, at, runs, null);
}

function pendingStep(ran: Ran, at: Progress, stage: PendingStep["stage"], error: string): PendingStep {
  return {
    stage,
    error,
    resume: () => settle(ran, at),
    abandon: () => settle(ran, { ...at, abandoned: true }),
  };
}

/**
 * The logs of `runs`, each one not written yet; the first run's last (its presence means "done", see
 * the header). Stops at the first that cannot be written: the logs written so far are in `logs`.
 */
async function writeLogs(
  ran: Ran,
  runs: readonly HookRun[],
  at: Progress,
): Promise<{ ok: true; logs: (string | null)[] } | { ok: false; logs: (string | null)[]; error: unknown }> {
  const { req, counted, decidingIndex } = ran;
  const deciding = decidingOf(ran, runs);
  const logs = runs.map((_, i) => at.logs[i] ?? null);
  const policyRecord = at.remediation?.record;
  const chainRecord =
    runs.length > 1
      ? { hooks: runs.map((r) => r.hook.name), decidedBy: deciding.hook.name, counted: countedWord(counted) }
      : undefined;
  const order = [...runs.keys()].filter((i) => i > 0).concat(0);
  for (const i of order) {
    const run = runs[i];
    if (!run || logs[i] !== null) continue;
    try {
      logs[i] = await writeHookLog(
        req.setup.identity.teamDir,
        {
          invocation: loggedInvocation(req.setup.settings, ran.invocation),
          result: run.result,
          ...(run.shown ? { shown: run.shown } : {}),
          key: req.key,
          startedAt: run.startedAt,
          ...(req.retry ? { retry: true } : {}),
          trigger: req.trigger ?? "leader",
          ...(policyRecord && i === decidingIndex ? { policy: policyRecord } : {}),
          ...(chainRecord ? { chain: { ...chainRecord, position: i + 1, layer: run.hook.layer } } : {}),
          // The first run's log (the one recovery reads) and the held run's say what holds the event.
          ...(ran.held && (i === decidingIndex || i === 0) ? { deferral: ran.held } : {}),
        },
        { file: i === decidingIndex ? ran.decidingLog : null },
      );
    } catch (error) {
      return { ok: false, logs, error };
    }
  }
  return { ok: true, logs };
}

/** The outcome as far as `at` got: `runs` as settled so far (with what became of their patches), each with its log. */
function outcomeOf(ran: Ran, at: Progress, settled: readonly HookRun[], pending: PendingStep | null): InvokeOutcome {
  const { remediation } = at;
  const runs = settled.map((run, i) => ({ ...run, logFile: at.logs[i] ?? null }));
  const deciding = decidingOf(ran, runs);
  const observedOnly = noGateInForce(runs);
  const { event } = ran.req;
  const timeoutMs = ran.req.setup.settings.timeoutMs.value;
  const nonBlocking = nonBlockingError(runs, deciding, { counted: ran.counted, mode: ran.mode, event, timeoutMs });
  return {
    chain: ran.chain,
    task: ran.task,
    runs,
    result: deciding.result,
    hook: deciding.hook,
    counted: ran.counted,
    ...(remediation?.remembered ? { remembered: remediation.remembered } : {}),
    logFile: deciding.logFile,
    summary: remediation
      ? remediation.summary
      : observedOnly
        ? observedSummary(ran)
        : summarize(deciding.result, ran.mode, timeoutMs),
    actions: [...(remediation?.actions ?? []), ...(at.shadow?.action ? [at.shadow.action] : [])],
    ...(remediation?.followupTaskId === undefined ? {} : { followupTaskId: remediation.followupTaskId }),
    ...(remediation?.gate === undefined ? {} : { gate: remediation.gate }),
    problems: [
      ...ran.problems,
      ...(at.shadow?.problem ? [at.shadow.problem] : []),
      ...(remediation?.refused ?? []),
      ...(remediation?.errors ?? []),
    ],
    pending,
    policyApplied: remediation ? remediation.complete : null,
    deferral: at.deferral,
    ...(observedOnly ? { noGateInForce: true as const } : {}),
    ...(nonBlocking !== null ? { nonBlocking } : {}),
  };
}

/**
 * The word a chain's logs keep for how the event counted (`chain.counted`, docs/logs.md): `passed`,
 * `failed`, `deferred` (held for a decision) or `held` (held for the lead's approval or a retry).
 */
function countedWord(counted: GatePlace): "passed" | "failed" | "deferred" | "held" {
  if (counted.state === "held") return counted.cause === "deferral" ? "deferred" : "held";
  return counted.state === "passed" ? "passed" : "failed";
}

/** An event whose gates all were skipped or in shadow mode: what each did, in one line. */
function observedSummary(ran: Ran): string {
  const said = ran.runs.map((run) => {
    const name = gateName(run.hook, ran.req.event);
    if (run.result.skipped !== undefined) return `${name} skipped (${run.result.skipped})`;
    return `${name} in shadow mode${run.result.shadow?.wouldDeny ? " would have denied" : " allowed"}`;
  });
  return `no gate in force: ${said.join("; ")}`;
}

async function loadTask(req: InvokeRequest, problems: string[]): Promise<Task | null> {
  if (req.taskId === null || !isTaskEvent(req.event)) return null;
  if (req.task !== undefined) return req.task;
  const { teamDir, taskListId } = req.setup.identity;
  const read = await readTask(taskFile(teamDir, taskListId, req.taskId));
  if (read.ok) return read.value;
  if (read.problem.kind !== "missing") problems.push(`${read.problem.message}`);
  return null;
}
