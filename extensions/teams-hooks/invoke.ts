/**
 * One event end to end: discover → run → (policy) → hook log. Shared by `run` and the leader, so a
 * hand-fired event behaves exactly as a watched one. The log is written last, after the policy
 * actions, so that a log on disk means the event is completely handled (the leader's crash recovery
 * relies on this).
 */
import path from "node:path";
import { type HookEventName, type RunResult, type Task, type TeamIdentity, isTaskEvent } from "./contract.js";
import { findHook, type HookDiscovery } from "./discover.js";
import { writeHookLog } from "./hook-log.js";
import { describeFailure, gatePassedSummary } from "./messages.js";
import type { EffectivePolicy } from "./options.js";
import { decide } from "./policy.js";
import { remediate } from "./remediate.js";
import { runHook } from "./run.js";
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
  cwd: string;
  timeoutMs: number;
  /** The failure policy to apply to a task event; null only reports (as `run` without --apply-policy). */
  policy: EffectivePolicy | null;
  /** This key ran before (a retry after a crash, or a replay): the log says so. */
  retry?: boolean;
  env: Readonly<Record<string, string | undefined>>;
  runId?: string;
  onSpawn?: (info: { pid: number; runId: string }) => void;
  /** The clock (tests pass their own). */
  now?: () => Date;
}

export interface InvokeOutcome {
  discovery: HookDiscovery;
  /** The task as the hook saw it; null for idle, or when its file is gone or unreadable. */
  task: Task | null;
  /** null: no hook for this event (nothing ran, no log). */
  result: RunResult | null;
  logFile: string | null;
  summary: string;
  /** What the policy did (`reopened (1/3)`, `follow-up #12 for bob`, `nudge bob`), or `none`. */
  actions: string[];
  /** Problems worth a warning: an unreadable task file, a policy step that failed. */
  problems: string[];
}

export async function invokeEvent(req: InvokeRequest): Promise<InvokeOutcome> {
  const now = req.now ?? (() => new Date());
  const discovery = await findHook(req.hooksDir, req.event);
  const problems: string[] = [];
  const task = await loadTask(req, problems);
  if (!discovery.hook) {
    return { discovery, task, result: null, logFile: null, summary: "no hook", actions: [], problems };
  }

  const startedAt = now().toISOString();
  const invocation = {
    event: req.event,
    teamId: req.identity.teamId,
    teamDir: req.identity.teamDir,
    taskListId: req.identity.taskListId,
    style: req.identity.style,
    ...(req.member ? { memberName: req.member } : {}),
    ...(req.timestamp ? { timestamp: req.timestamp } : {}),
    completedTask: task,
  };
  const result = await runHook(discovery.hook, invocation, {
    cwd: req.cwd,
    timeoutMs: req.timeoutMs,
    baseEnv: req.env,
    ...(req.runId ? { runId: req.runId } : {}),
    ...(req.onSpawn ? { onSpawn: req.onSpawn } : {}),
  });

  let summary = result.outcome === "passed" ? gatePassedSummary(result.durationMs) : describeFailure(result, req.timeoutMs);
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
          result,
          task: fresh,
          policy,
          hookName: path.basename(discovery.hook?.hookPath ?? ""),
          member: req.member,
          leadName: req.identity.leadName,
          now: decidedAt,
          timeoutMs: req.timeoutMs,
        }),
    );
    summary = done.plan.summary;
    actions = done.actions;
    problems.push(...done.errors);
    policyRecord = {
      failureAction: policy.failureAction,
      maxReopensPerTask: policy.maxReopensPerTask,
      followupOwner: policy.followupOwner,
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

  const logFile = await writeHookLog(req.identity.teamDir, {
    invocation,
    result,
    key: req.key,
    startedAt,
    ...(req.retry ? { retry: true } : {}),
    ...(policyRecord ? { policy: policyRecord } : {}),
  });
  return { discovery, task, result, logFile, summary, actions, problems };
}

async function loadTask(req: InvokeRequest, problems: string[]): Promise<Task | null> {
  if (req.taskId === null || !isTaskEvent(req.event)) return null;
  const read = await readTask(taskFile(req.identity.teamDir, req.identity.taskListId, req.taskId));
  if (read.ok) return read.value;
  if (read.problem.kind !== "missing") problems.push(`${read.problem.message}`);
  return null;
}
