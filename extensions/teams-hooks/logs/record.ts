/**
 * One hook log record as `logs` sees it: what fired it, its outcome and its task. Pure.
 */
import type { RunResult } from "../contract/hook-run.js";
import type { HookLogRecord, HookTrigger } from "./hook-log.js";

/** What fired a log's event: its `trigger`, and `leader` for a log written before there was one. */
export function triggerOf(record: Pick<HookLogRecord, "trigger">): HookTrigger {
  return record.trigger ?? "leader";
}

/** `timed_out` is `result.timedOut`, whatever `result.outcome` says; the others are `result.outcome`. */
export const LOG_OUTCOMES = ["passed", "failed", "timed_out", "error", "deferred"] as const;
export type LogOutcome = (typeof LOG_OUTCOMES)[number];

export function outcomeOf(result: Pick<RunResult, "outcome" | "timedOut">): LogOutcome {
  return result.timedOut ? "timed_out" : result.outcome;
}

/** The task of a log: the task the hook saw, else (task file gone) the id in the event key. */
export function taskIdOf(record: HookLogRecord): string | null {
  const { invocation } = record;
  if (invocation.completedTask) return invocation.completedTask.id;
  if (invocation.event === "idle" || !record.key?.startsWith(`${invocation.event}:`)) return null;
  const rest = record.key.slice(invocation.event.length + 1);
  const end = rest.indexOf(":");
  return end > 0 ? rest.slice(0, end) : null;
}
