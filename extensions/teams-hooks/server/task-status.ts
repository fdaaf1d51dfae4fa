/**
 * What the status route adds to a task's lifecycle (docs/remote-gates.md, "Creating a task and
 * following it"): the run that decided its gate (what created it is contract/work.ts `createdByOf`, as
 * the context document says it). The deciding run is the log of
 * the task's last gated event (`metadata.qualityGateEventKey`) that carries the policy step: the
 * deciding gate of a chain, or the decision that settled a held gate (event/invoke.ts and
 * deferrals/decision.ts write `policy` on that log alone). A confidential team's keeps its lifecycle:
 * what a gate said (its summary, its code) is left out, as the start gate's reason is.
 */
import type { Task } from "../contract/team-files.js";
import { outcomeOf, taskIdOf } from "../logs/record.js";
import { type LogRow, streamLogs } from "../logs/query.js";

/** The run whose verdict the task's gate status is; fields a log or the metadata cannot give are null. */
export interface DecidingRun {
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
    { filter: { taskId: task.id }, onProblem: () => undefined },
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
  const startedAt = row?.record.startedAt ?? null;
  const started = startedAt === null ? Number.NaN : Date.parse(startedAt);
  const policySummary = row?.record.policy?.summary;
  return {
    runId: result?.runId ?? null,
    hook: text(meta.qualityGateHook),
    outcome: result ? outcomeOf(result) : text(meta.qualityGateOutcome),
    errorKind: result?.errorKind ?? null,
    code: confidential ? null : (text(meta.qualityGateCode) ?? result?.verdict?.code ?? null),
    summary: confidential ? null : (text(meta.qualityGateSummary) ?? text(policySummary)),
    startedAt,
    endedAt: result && Number.isFinite(started) ? endOf(started, result.durationMs) : null,
  };
}

/** When a run that started at `startedMs` and took `durationMs` ended, as ISO 8601 UTC. */
export function endOf(startedMs: number, durationMs: number): string {
  return new Date(startedMs + Math.max(0, Math.round(durationMs))).toISOString();
}

function text(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}
