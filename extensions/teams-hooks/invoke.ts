/**
 * One event end to end: discover the chain → run its hooks → (policy) → hook logs. Shared by `run` and
 * the leader, so a hand-fired event behaves exactly as a watched one.
 *
 * The chain (issue 5) is the v1 file, then `on_<event>.d/` of the global and the team layer. Task
 * events run it in order and stop at the first denial or closed error; `idle` runs every hook. The
 * event's outcome folds the runs: a denial or a closed error beats any allow. The policy is applied
 * once, for the run that decided.
 *
 * Logs are written last, after the policy actions, one per hook run; the first run's log (the one that
 * carries the caller's run id) is written last of all, so that its presence on disk means the event
 * was completely handled. The leader's crash recovery relies on this.
 */
import { randomUUID } from "node:crypto";
import {
  buildContextDocument,
  type HookEventName,
  type HookInvocation,
  isTaskEvent,
  type RunResult,
  type Task,
  type TeamIdentity,
  utf8Length,
} from "./contract.js";
import { discoverChain, teamHooksDir, type ChainDiscovery, type ChainHook } from "./chain.js";
import { writeHookLog } from "./hook-log.js";
import { DEFAULT_FAILURE_MODES, DEFAULT_LIMITS, DEFAULT_SWEEP, type FailureMode, type HookLimits, type SweepMode } from "./hooks-config.js";
import { describeFailure, gatePassedSummary } from "./messages.js";
import type { EffectivePolicy } from "./options.js";
import { countsAsPass, decide } from "./policy.js";
import { remediate } from "./remediate.js";
import { notRunResult, runHook } from "./run.js";
import { taskFile } from "./paths.js";
import { readTask } from "./tasks.js";

export interface InvokeRequest {
  identity: TeamIdentity;
  event: HookEventName;
  /** The event key (events.ts); the ledger's and the log's name for this event. */
  key: string;
  taskId: string | null;
  member: string | null;
  timestamp: string | null;
  hooksDir: string;
  /** The team's own layer (`<teamDir>/hooks`); default: that path. null: no team layer. */
  teamHooksDir?: string | null;
  cwd: string;
  timeoutMs: number;
  /** The failure policy to apply to a task event; null only reports (as `run` without --apply-policy). */
  policy: EffectivePolicy | null;
  /** What a hook error counts as; default: closed for task events, open for idle. */
  failureMode?: FailureMode;
  limits?: Readonly<HookLimits>;
  /** When each hook's run is swept for run-id escapees (run.ts `escapeeScan`); default `auto`. */
  sweep?: SweepMode;
  /** This key ran before (a retry after a crash, or a replay): the logs say so. */
  retry?: boolean;
  env: Readonly<Record<string, string | undefined>>;
  /** The run id of the chain's first hook (the leader's ledger knows the event by it). */
  runId?: string;
  /** Called as each hook of the chain starts: its process group, run id and file name. */
  onSpawn?: (info: { pid: number; runId: string; hook: string }) => void;
  /** Awaited just before the first hook starts (run.ts `notBefore`): the leader's ledger flush. */
  notBefore?: Promise<unknown>;
  /** The clock (tests pass their own). */
  now?: () => Date;
}

export interface HookRun {
  hook: ChainHook;
  result: RunResult;
  startedAt: string;
  logFile: string | null;
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
  /** How the event counts after the failure mode: passed, or failed. null: no hook. */
  counted: "passed" | "failed" | null;
  /** The deciding run's log (the first run's log when all passed). */
  logFile: string | null;
  summary: string;
  /** What the policy did (`reopened (1/3)`, `follow-up #12 for bob`, `nudge bob`), or `none`. */
  actions: string[];
  /** Problems worth a warning: an unreadable task file, a policy step that failed. */
  problems: string[];
}

export async function invokeEvent(req: InvokeRequest): Promise<InvokeOutcome> {
  const now = req.now ?? (() => new Date());
  const mode = req.failureMode ?? DEFAULT_FAILURE_MODES[req.event];
  const limits = req.limits ?? DEFAULT_LIMITS;
  const teamLayer = req.teamHooksDir === undefined ? teamHooksDir(req.identity.teamDir) : req.teamHooksDir;
  const problems: string[] = [];
  // Independent reads: together, not one after the other (they are most of the time before the spawn).
  const [chain, task] = await Promise.all([discoverChain({ globalDir: req.hooksDir, teamDir: teamLayer, event: req.event }), loadTask(req, problems)]);
  const invocation: HookInvocation = {
    event: req.event,
    teamId: req.identity.teamId,
    teamDir: req.identity.teamDir,
    taskListId: req.identity.taskListId,
    style: req.identity.style,
    ...(req.member ? { memberName: req.member } : {}),
    ...(req.timestamp ? { timestamp: req.timestamp } : {}),
    completedTask: task,
  };
  const none: InvokeOutcome = { chain, task, runs: [], result: null, hook: null, counted: null, logFile: null, summary: "no hook", actions: [], problems };
  const first = chain.hooks[0];
  if (!first) return none;

  const runs = await runChain(req, chain.hooks, invocation, { mode, limits, now });
  // Rejected: no hook started (run.ts waited for it), so nothing is applied or logged either; the
  // caller (the leader, its ledger flush failed) leaves the key to be retried.
  await req.notBefore;
  const deciding = runs.find((r) => !countsAsPass(r.result, mode)) ?? runs[runs.length - 1] ?? runs[0];
  if (!deciding) return none;
  const counted = countsAsPass(deciding.result, mode) ? "passed" : "failed";
  let summary = summarize(deciding.result, mode, req.timeoutMs);
  let actions: string[] = [];
  let policyRecord: Record<string, unknown> | undefined;
  const event = req.event;
  if (req.policy && isTaskEvent(event) && req.taskId !== null) {
    const policy = req.policy;
    const taskId = req.taskId;
    const decidedAt = now().toISOString();
    const done = await remediate(
      { teamDir: req.identity.teamDir, taskListId: req.identity.taskListId, taskId, key: req.key, leadName: req.identity.leadName, now: decidedAt },
      (fresh) =>
        decide({
          event,
          key: req.key,
          taskId,
          result: deciding.result,
          task: fresh,
          policy,
          hookName: deciding.hook.name,
          member: req.member,
          leadName: req.identity.leadName,
          now: decidedAt,
          timeoutMs: req.timeoutMs,
          failureMode: mode,
        }),
    );
    summary = done.plan.summary;
    actions = done.actions;
    problems.push(...done.errors);
    policyRecord = {
      failureAction: policy.failureAction,
      maxReopensPerTask: policy.maxReopensPerTask,
      followupOwner: policy.followupOwner,
      failureMode: mode,
      passed: done.plan.passed,
      summary: done.plan.summary,
      alreadyApplied: done.plan.alreadyApplied,
      reopen: done.plan.reopen ? { kind: done.plan.reopen.kind, count: done.plan.reopen.count, max: done.plan.reopen.max } : null,
      followupTaskId: done.followupTaskId,
      nudged: done.plan.nudge?.to ?? null,
      actions,
      errors: done.errors,
    };
  }

  // The first run's log last: its presence means everything else is on disk (see the header).
  const chainRecord = runs.length > 1 ? { hooks: runs.map((r) => r.hook.name), decidedBy: deciding.hook.name, counted } : undefined;
  for (const run of [...runs.slice(1), runs[0]]) {
    if (!run) continue;
    run.logFile = await writeHookLog(req.identity.teamDir, {
      invocation,
      result: run.result,
      key: req.key,
      startedAt: run.startedAt,
      ...(req.retry ? { retry: true } : {}),
      ...(policyRecord && run === deciding ? { policy: policyRecord } : {}),
      ...(chainRecord ? { chain: { ...chainRecord, position: runs.indexOf(run) + 1, layer: run.hook.layer } } : {}),
    });
  }
  return { chain, task, runs, result: deciding.result, hook: deciding.hook, counted, logFile: deciding.logFile, summary, actions, problems };
}

/** Runs the chain under its limits; task events stop at the first run that does not count as a pass. */
async function runChain(
  req: InvokeRequest,
  hooks: ChainHook[],
  invocation: HookInvocation,
  ctx: { mode: FailureMode; limits: Readonly<HookLimits>; now: () => Date },
): Promise<HookRun[]> {
  const { limits } = ctx;
  const refused = (hook: ChainHook, message: string): HookRun[] => [
    { hook, result: notRunResult(hook.hook, req.runId ?? randomUUID(), "limit", message), startedAt: ctx.now().toISOString(), logFile: null },
  ];
  const [head] = hooks;
  if (!head) return [];
  if (hooks.length > limits.maxHooksPerEvent) {
    return refused(head, `${hooks.length} hooks for ${req.event}; the limit is ${limits.maxHooksPerEvent} (hooks.limits.maxHooksPerEvent) — none ran`);
  }
  const payload = utf8Length(JSON.stringify(buildContextDocument(invocation)));
  if (payload > limits.maxPayloadBytes) {
    return refused(head, `the context document is ${payload} bytes; the limit is ${limits.maxPayloadBytes} (hooks.limits.maxPayloadBytes) — none ran`);
  }

  const runs: HookRun[] = [];
  const deadline = performance.now() + limits.chainDeadlineMs;
  for (const [index, hook] of hooks.entries()) {
    const left = Math.floor(deadline - performance.now());
    if (left <= 0) {
      runs.push(...refused(hook, `the chain of ${req.event} ran past its deadline of ${limits.chainDeadlineMs}ms (hooks.limits.chainDeadlineMs); ${hook.name} and later hooks did not run`));
      break;
    }
    const timeoutMs = Math.min(req.timeoutMs, left);
    const startedAt = ctx.now().toISOString();
    let result = await runHook(hook.hook, invocation, {
      cwd: req.cwd,
      timeoutMs,
      baseEnv: req.env,
      escapeeScan: req.sweep ?? DEFAULT_SWEEP,
      // The chain's later hooks run as `<runId>.2`, `<runId>.3`…: a restarted leader finds them all.
      ...(req.runId ? { runId: index === 0 ? req.runId : `${req.runId}.${index + 1}` } : {}),
      ...(req.onSpawn ? { onSpawn: (info: { pid: number; runId: string }) => req.onSpawn?.({ ...info, hook: hook.name }) } : {}),
      ...(req.notBefore ? { notBefore: req.notBefore } : {}),
    });
    if (result.timedOut && timeoutMs < req.timeoutMs) {
      // Cut short by the chain's deadline, not by its own timeout: the limit is what failed.
      result = { ...result, errorKind: "limit", error: `stopped at the chain deadline of ${limits.chainDeadlineMs}ms (hooks.limits.chainDeadlineMs)` };
    }
    runs.push({ hook, result, startedAt, logFile: null });
    if (isTaskEvent(req.event) && !countsAsPass(result, ctx.mode)) break;
  }
  return runs;
}


function summarize(result: RunResult, mode: FailureMode, timeoutMs: number): string {
  if (result.outcome === "passed") return gatePassedSummary(result.durationMs);
  if (countsAsPass(result, mode)) return `allowed (failure mode open): ${describeFailure(result, timeoutMs)}`;
  return describeFailure(result, timeoutMs);
}

async function loadTask(req: InvokeRequest, problems: string[]): Promise<Task | null> {
  if (req.taskId === null || !isTaskEvent(req.event)) return null;
  const read = await readTask(taskFile(req.identity.teamDir, req.identity.taskListId, req.taskId));
  if (read.ok) return read.value;
  if (read.problem.kind !== "missing") problems.push(`${read.problem.message}`);
  return null;
}
