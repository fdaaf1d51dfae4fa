/**
 * `logs stats`: per hook and event, runs, pass rate, p50/p95 duration and the most-failed tasks,
 * computed from small samples (not whole records) and printed as a table or NDJSON. Pure.
 */
import { HOOK_EVENTS, type HookEventName } from "../contract/contract.js";
import type { HookLogRecord } from "./hook-log.js";
import { formatDuration } from "../text/messages.js";
import { hookName, oneLine } from "./format.js";
import { type LogOutcome, outcomeOf, taskIdOf } from "./record.js";
import { type ColumnSpec, formatTable } from "../text/table.js";

interface StatsRow {
  hook: string;
  event: HookEventName;
  runs: number;
  passed: number;
  failed: number;
  timedOut: number;
  error: number;
  /** passed / runs, from 0 to 1. */
  passRate: number;
  p50Ms: number;
  p95Ms: number;
  /** Tasks with the most runs that did not pass (failed, timed out or error), most first. */
  mostFailedTasks: Array<{ taskId: string; failures: number }>;
  /** Events its matchers skipped (not runs: nothing ran); present when there were any. */
  skipped?: number;
  /**
   * Runs in shadow mode (`mode=shadow`), and how many of them would have denied; present when there
   * were any. A shadow run counts above by what it said, not by what was enforced (always a pass).
   */
  shadowRuns?: number;
  shadowDenials?: number;
  /** Passes (counted in `passed`) with a Claude Code gate's non-blocking error; present when there were any. */
  nonBlocking?: number;
}

/** Nearest-rank percentile of ascending `sorted` (q from 0 to 1); 0 for none. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1] ?? 0;
}

/** What stats needs of one log. */
interface StatsSample {
  hook: string;
  event: HookEventName;
  outcome: LogOutcome;
  durationMs: number;
  taskId: string | null;
  /** A held gate's decision record: nothing ran, so its 0 ms is no duration. */
  decided?: boolean;
  /** Its matchers skipped it: counted apart, never as a run. */
  skipped?: boolean;
  /** A shadow run: whether it would have denied (`outcome` is what it said). */
  shadow?: { wouldDeny: boolean };
  /** A pass with a non-blocking error (`result.nonBlocking`). */
  nonBlocking?: boolean;
}

export function statsSample(record: HookLogRecord): StatsSample {
  const { shadow } = record.result;
  return {
    hook: hookName(record.result),
    event: record.invocation.event,
    outcome: outcomeOf(shadow ? { outcome: shadow.outcome, timedOut: record.result.timedOut } : record.result),
    ...(record.result.skipped !== undefined ? { skipped: true } : {}),
    ...(shadow ? { shadow: { wouldDeny: shadow.wouldDeny } } : {}),
    ...(passedWithError(record) ? { nonBlocking: true } : {}),
    durationMs: record.result.durationMs,
    taskId: taskIdOf(record),
    ...(record.decision !== undefined ? { decided: true } : {}),
  };
}

/** A pass with a non-blocking error (a shadow gate's says only what it would have done). */
function passedWithError(record: HookLogRecord): boolean {
  const { result } = record;
  return result.shadow === undefined && result.outcome === "passed" && result.nonBlocking !== undefined;
}

/** One row per hook (file name) and event, sorted by hook then event. */
export function computeStats(samples: readonly StatsSample[], topTasks = 3): StatsRow[] {
  type Group = { hook: string; event: HookEventName; durations: number[]; counts: Record<LogOutcome, number> };
  type Counts = { failures: Map<string, number>; skipped: number; shadowRuns: number; shadowDenials: number };
  type More = Counts & { nonBlocking: number };
  const groups = new Map<string, Group & More>();
  for (const { hook, event, outcome, durationMs, taskId, decided, skipped, shadow, nonBlocking } of samples) {
    const id = `${hook}\u0000${event}`;
    let group = groups.get(id);
    if (!group) {
      const counts = { passed: 0, failed: 0, timed_out: 0, error: 0, deferred: 0 };
      const none = { skipped: 0, shadowRuns: 0, shadowDenials: 0, nonBlocking: 0 };
      group = { hook, event, durations: [], counts, failures: new Map(), ...none };
      groups.set(id, group);
    }
    if (skipped) {
      group.skipped += 1;
      continue;
    }
    if (shadow) {
      group.shadowRuns += 1;
      if (shadow.wouldDeny) group.shadowDenials += 1;
    }
    group.counts[outcome] += 1;
    if (nonBlocking) group.nonBlocking += 1;
    if (!decided) group.durations.push(durationMs);
    // A held run is not a failure (its decision record says how it ended).
    if (outcome !== "passed" && outcome !== "deferred" && taskId !== null)
      group.failures.set(taskId, (group.failures.get(taskId) ?? 0) + 1);
  }
  const rows: StatsRow[] = [];
  for (const g of groups.values()) {
    const sorted = [...g.durations].sort((a, b) => a - b);
    const runs = Object.values(g.counts).reduce((sum, n) => sum + n, 0);
    const mostFailedTasks = [...g.failures]
      .map(([taskId, failures]) => ({ taskId, failures }))
      .sort((a, b) => b.failures - a.failures || compareIds(a.taskId, b.taskId))
      .slice(0, topTasks);
    rows.push({
      hook: g.hook,
      event: g.event,
      runs,
      passed: g.counts.passed,
      failed: g.counts.failed,
      timedOut: g.counts.timed_out,
      error: g.counts.error,
      // A held run is no outcome yet: its decision record is the one counted.
      passRate: runs - g.counts.deferred === 0 ? 0 : g.counts.passed / (runs - g.counts.deferred),
      p50Ms: percentile(sorted, 0.5),
      p95Ms: percentile(sorted, 0.95),
      mostFailedTasks,
      ...(g.skipped > 0 ? { skipped: g.skipped } : {}),
      ...(g.shadowRuns > 0 ? { shadowRuns: g.shadowRuns, shadowDenials: g.shadowDenials } : {}),
      ...(g.nonBlocking > 0 ? { nonBlocking: g.nonBlocking } : {}),
    });
  }
  return rows.sort((a, b) =>
    a.hook === b.hook ? HOOK_EVENTS.indexOf(a.event) - HOOK_EVENTS.indexOf(b.event) : a.hook < b.hook ? -1 : 1,
  );
}

/** Decimal ids in number order, others after them in string order. */
function compareIds(a: string, b: string): number {
  const [na, nb] = [/^\d+$/.test(a) ? Number(a) : Number.NaN, /^\d+$/.test(b) ? Number(b) : Number.NaN];
  if (!Number.isNaN(na) && !Number.isNaN(nb)) return na - nb;
  if (Number.isNaN(na) !== Number.isNaN(nb)) return Number.isNaN(na) ? 1 : -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function percent(rate: number): string {
  const value = Math.round(rate * 1000) / 10;
  return `${Number.isInteger(value) ? value.toFixed(0) : value.toFixed(1)}%`;
}

const STATS_HEADER: readonly string[] = [
  "hook",
  "event",
  "runs",
  "pass rate",
  "failed",
  "timed out",
  "error",
  "p50",
  "p95",
  "most-failed tasks",
];

/**
 * How the stats columns give way to a narrow terminal (text/table.ts): hook names and the task list
 * are cut; p50, then p95, then the task list are left out when even that does not fit. A count
 * column that is 0 on every row (timed out, error, failed) says nothing: it goes before all of them.
 */
const STATS_COLUMNS: readonly ColumnSpec[] = [
  { min: 12 },
  {},
  { right: true },
  { right: true },
  { right: true },
  { right: true },
  { right: true },
  { right: true, drop: 1 },
  { right: true, drop: 2 },
  { min: 12, drop: 3 },
];

/** The count columns left out first when they are 0 on every row: timed out, then error, then failed. */
const ZERO_FIRST: ReadonlyArray<{ column: number; drop: number; count: (r: StatsRow) => number }> = [
  { column: 5, drop: 0, count: (r) => r.timedOut },
  { column: 6, drop: 0.25, count: (r) => r.error },
  { column: 4, drop: 0.5, count: (r) => r.failed },
];

/**
 * The stats table in `width` columns (default: never cut); counts and durations right-aligned. `note` says what was
 * left out.
 */
export function formatStats(
  rows: readonly StatsRow[],
  width = Number.POSITIVE_INFINITY,
): { text: string; note: string } {
  const cells = rows.map((r) => [
    oneLine(r.hook),
    r.event,
    String(r.runs),
    percent(r.passRate),
    String(r.failed),
    String(r.timedOut),
    String(r.error),
    formatDuration(r.p50Ms),
    formatDuration(r.p95Ms),
    r.mostFailedTasks.length > 0
      ? r.mostFailedTasks.map((t) => `#${oneLine(t.taskId)} (${t.failures})`).join(", ")
      : "-",
  ]);
  const zero = (count: (r: StatsRow) => number): boolean => rows.length > 0 && rows.every((r) => count(r) === 0);
  const specs = STATS_COLUMNS.map((spec, i) => {
    const goesFirst = ZERO_FIRST.find((z) => z.column === i && zero(z.count));
    return goesFirst ? { ...spec, drop: goesFirst.drop } : spec;
  });
  const table = formatTable([STATS_HEADER, ...cells], specs, { width });
  return { text: `${table.text}${notes(rows)}`, note: table.note };
}

/**
 * Under the table: the gates on trial and what they would have denied, the events matchers skipped,
 * and the passes that let an error through (a figure of their own, whatever the width).
 */
function notes(rows: readonly StatsRow[]): string {
  const out: string[] = [];
  for (const r of rows) {
    const gate = `${oneLine(r.hook)} (${r.event})`;
    const passes = `passed ${r.nonBlocking ?? 0} of its ${r.runs} run(s)`;
    if (r.nonBlocking) out.push(`non-blocking: ${gate} ${passes} with a non-blocking error`);
    if (r.shadowRuns)
      out.push(
        `shadow: ${gate} would have denied ${r.shadowDenials ?? 0} of its ${r.shadowRuns} run(s); nothing was enforced`,
      );
    if (r.skipped) out.push(`skipped: ${gate} was skipped by its matchers ${r.skipped} time(s)`);
  }
  return out.length > 0 ? `\n${out.join("\n")}\n` : "";
}

/** One stats row as NDJSON. */
export function statsJsonLine(row: StatsRow): string {
  return `${JSON.stringify(row)}\n`;
}
