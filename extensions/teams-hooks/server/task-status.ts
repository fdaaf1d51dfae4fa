/**
 * What the status route adds to a task's lifecycle (docs/remote-gates.md, "Creating a task and
 * following it"): the run that decided its gate (what created it is contract/work.ts `createdByOf`, as
 * the context document says it). The deciding run is the log of
 * the task's last gated event (`metadata.qualityGateEventKey`) that carries the policy step: the
 * deciding gate of a chain, or the decision that settled a held gate (event/invoke.ts and
 * event/deferral-decision.ts write `policy` on that log alone). A confidential team's keeps its lifecycle:
 * what a gate said (its summary, its code) is left out, as the start gate's reason is.
 */
import type { Task } from "../contract/team-files.js";
import { outcomeOf, taskIdOf } from "../logs/record.js";
import { type LogRow, streamLogs } from "../logs/query.js";
import { cutText } from "../logs/shown.js";
import { MAX_WRITTEN_LOG_BYTES } from "../logs/hook-log.js";

/** Characters an id, a name, a code or a time of a log keeps in an answer. */
export const NAME_CHARS = 256;
/** Characters a summary keeps in an answer (the policy step writes one line of about a hundred). */
export const SUMMARY_CHARS = 2_000;

/** The run whose verdict the task's gate status is; fields a log or the metadata cannot give are null. */
interface DecidingRun {
  /** Null when its log is gone (`logs prune`): the rest then comes from the task's metadata. */
  runId: string | null;
  /** The gate as the policy and the logs name it (`on_task_completed`, `on_task_completed.d/10-lint.sh`, `http:ci`). */
  hook: string | null;
  /** `passed`, `failed`, `timed_out`, `error` or `deferred` (logs' outcomes). */
  outcome: string | null;
  /** Why the outcome is `error` (`timeout`, `spawn_error`, `defer_expired`…); null otherwise. */
  errorKind: string | null;
  /** The verdict's code; null without one, and for a confidential team. */
  code: string | null;
  /** What the policy step wrote (`passed in 120ms`, `exit code 1 • …`); null for a confidential team. */
  summary: string | null;
  startedAt: string | null;
  /** `startedAt` plus the run's duration. */
  endedAt: string | null;
}

/** The task's deciding run, or null when no gate has decided it (nothing in its metadata says one did). */
export async function decidingRunOf(teamDir: string, task: Task, confidential: boolean): Promise<DecidingRun | null> {
  const meta = task.metadata ?? {};
  const key = text(meta.qualityGateEventKey);
  if (key === null) return null;
  let found: LogRow | null = null;
  let foundWithPolicy = false;
  // Oldest first: the last match wins, a log with the policy step over one without.
  await streamLogs(
    teamDir,
    { filter: { taskId: task.id }, maxBytes: MAX_WRITTEN_LOG_BYTES, inSlices: true, onProblem: () => undefined },
    (row) => row,
    (row) => {
      if (row.record.key !== key || taskIdOf(row.record) !== task.id) return;
      const withPolicy = row.record.policy !== undefined;
      if (withPolicy || !foundWithPolicy) {
        found = row;
        foundWithPolicy = withPolicy;
      }
    },
  );
  const row = found as LogRow | null;
  const result = row?.record.result;
  const startedAt = row ? cutText(row.record.startedAt, NAME_CHARS) : null;
  const started = startedAt === null ? Number.NaN : Date.parse(startedAt);
  const policySummary = row?.record.policy?.summary;
  // What a task file or a log says is bounded here: any agent of the team can write either.
  const short = (value: string | null | undefined): string | null =>
    value === null || value === undefined ? null : cutText(value, NAME_CHARS);
  const summary = text(meta.qualityGateSummary) ?? text(policySummary);
  return {
    runId: short(result?.runId),
    hook: short(text(meta.qualityGateHook)),
    outcome: result ? outcomeOf(result) : short(text(meta.qualityGateOutcome)),
    errorKind: short(result?.errorKind),
    code: confidential ? null : short(text(meta.qualityGateCode) ?? result?.verdict?.code),
    summary: confidential || summary === null ? null : cutText(summary, SUMMARY_CHARS),
    startedAt,
    endedAt: result && Number.isFinite(started) ? endOf(started, result.durationMs) : null,
  };
}

/**
 * When a run that started at `startedMs` and took `durationMs` ended, as ISO 8601 UTC; null when that
 * is no time a date can hold (a log that says its run took `1e300` ms: any agent can write one).
 */
export function endOf(startedMs: number, durationMs: number): string | null {
  const end = startedMs + Math.max(0, Math.round(durationMs));
  // ±8.64e15 ms is the range of a JavaScript date; toISOString() throws past it.
  return Number.isFinite(end) && Math.abs(end) <= 8.64e15 ? new Date(end).toISOString() : null;
}

function text(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}
