/**
 * Hook logs for people: query (filters, the newest N), one log in full, stats per hook and event,
 * prune, and follow. Filters are tried on the file name first (its time, event, and task or member
 * suffix: hook-log.ts `hookLogStem`), so a query opens only the files that can match. Every read goes
 * through hook-log.ts; a file that is not a log goes to `onProblem` and is skipped, never thrown.
 * Everything but the functions that touch the folder is pure.
 */
import { closeSync, openSync, readSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { HOOK_EVENTS, type HookEventName, type RunResult, truncateText } from "./contract.js";
import { HooksError, describeError, errnoCode } from "./errors.js";
import { type HookLogEntry, type HookLogProblem, type HookLogRecord, HookLogRecordSchema, isHookLogName, listHookLogs, readHookLog } from "./hook-log.js";
import { formatDuration } from "./messages.js";
import { hookLogsDir, sanitizeName } from "./paths.js";
import { type DirWatcher, watchDirs } from "./watch.js";

/** `timed_out` is `result.timedOut`, whatever `result.outcome` says; the others are `result.outcome`. */
export const LOG_OUTCOMES = ["passed", "failed", "timed_out", "error"] as const;
export type LogOutcome = (typeof LOG_OUTCOMES)[number];

/** What a query keeps. Every field narrows; an absent field keeps everything. */
export interface LogFilter {
  events?: readonly HookEventName[];
  taskId?: string;
  member?: string;
  outcomes?: readonly LogOutcome[];
  /** Runs started at or after this time (ms since the epoch). */
  sinceMs?: number;
}

/** One readable log. */
export interface LogRow {
  file: string;
  name: string;
  record: HookLogRecord;
}

/** Reports a file that is not a readable log (never a file that vanished while listed: that is no news). */
export type ProblemSink = (problem: HookLogProblem) => void;

// ---------------------------------------------------------------------------------------------
// File names and filters (pure)

/** What a log's name says: `<time>_<event>[_task-<id>|_member-<name>][_<n>].json`. */
export interface LogNameInfo {
  timeMs: number;
  event: HookEventName;
  /** The suffix as written: sanitised, cut to 64 characters, maybe followed by `_<n>` (a collision). */
  suffix: { kind: "task" | "member"; raw: string } | null;
}

const NAME = new RegExp(`^(\\d{4}-\\d{2}-\\d{2})T(\\d{2})-(\\d{2})-(\\d{2})-(\\d{3})Z_(${HOOK_EVENTS.join("|")})(_.*)?\\.json$`);
/** hook-log.ts cuts suffix values to this many characters. */
const SUFFIX_CHARS = 64;

/** Parses a log file name; null for a name this project did not write (that file must be opened to know). */
export function parseLogName(name: string): LogNameInfo | null {
  const m = NAME.exec(name);
  if (!m) return null;
  const [, date, hh, mm, ss, ms, event, rest = ""] = m;
  const timeMs = Date.parse(`${date}T${hh}:${mm}:${ss}.${ms}Z`);
  if (Number.isNaN(timeMs) || !isEvent(event)) return null;
  if (rest === "" || /^_\d+$/.test(rest)) return { timeMs, event, suffix: null };
  const suffix = /^_(task|member)-(.+)$/.exec(rest);
  if (!suffix) return null;
  return { timeMs, event, suffix: { kind: suffix[1] === "task" ? "task" : "member", raw: suffix[2] ?? "" } };
}

function isEvent(value: string | undefined): value is HookEventName {
  return (HOOK_EVENTS as readonly string[]).includes(value ?? "");
}

/** True when a suffix written for `value` could be `raw` (`3` matches `3` and `3_2`, never `31`). */
function suffixMayBe(raw: string, value: string): boolean {
  const written = sanitizeName(value).slice(0, SUFFIX_CHARS);
  return raw === written || (raw.startsWith(`${written}_`) && /^\d+$/.test(raw.slice(written.length + 1)));
}

/**
 * False only when the name proves that the log cannot match: a cheap first pass before any file is
 * opened. The record decides the rest (`recordMatches`).
 */
export function nameMayMatch(info: LogNameInfo, filter: LogFilter): boolean {
  if (filter.sinceMs !== undefined && info.timeMs < filter.sinceMs) return false;
  if (filter.events && !filter.events.includes(info.event)) return false;
  if (filter.taskId !== undefined) {
    if (info.suffix?.kind === "task") {
      if (!suffixMayBe(info.suffix.raw, filter.taskId)) return false;
    } else if (info.event === "idle") {
      return false; // idle has no task; a task event whose task file was gone still names it in its key
    }
  }
  if (filter.member !== undefined) {
    if (info.suffix === null) return false; // no suffix: neither a task nor a member
    if (info.suffix.kind === "member" && !suffixMayBe(info.suffix.raw, filter.member)) return false;
  }
  return true;
}

export function recordMatches(record: HookLogRecord, filter: LogFilter): boolean {
  if (filter.sinceMs !== undefined && !(Date.parse(record.startedAt) >= filter.sinceMs)) return false;
  if (filter.events && !filter.events.includes(record.invocation.event)) return false;
  if (filter.taskId !== undefined && taskIdOf(record) !== filter.taskId) return false;
  if (filter.member !== undefined && record.invocation.memberName !== filter.member) return false;
  if (filter.outcomes && !filter.outcomes.includes(outcomeOf(record.result))) return false;
  return true;
}

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

const AGE_UNITS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `30m` → 1,800,000; `2h`, `3d`, `1w`, `45s`. Null when `text` is not an age. */
export function parseAge(text: string): number | null {
  const m = /^(\d+)\s*([smhdw])$/.exec(text.trim());
  const unit = m ? AGE_UNITS[m[2] ?? ""] : undefined;
  return m && unit !== undefined ? Number(m[1]) * unit : null;
}

/**
 * A point in time given as an age before `nowMs` (`2h`) or as an ISO 8601 date or time
 * (`2026-03-01`, `2026-03-01T09:00`, `2026-03-01T11:00:00+02:00`). UTC unless it names an offset,
 * like the times `logs` prints. Null when neither.
 */
export function parseTimeBound(text: string, nowMs: number): number | null {
  const age = parseAge(text);
  if (age !== null) return nowMs - age;
  const iso = text.trim();
  if (!/^\d{4}-\d{2}-\d{2}/.test(iso)) return null;
  // JavaScript reads a date alone as UTC but a date-time without an offset as local time.
  const ms = Date.parse(/T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(iso) ? `${iso}Z` : iso);
  return Number.isNaN(ms) ? null : ms;
}

// ---------------------------------------------------------------------------------------------
// Reading

/** Files read per round when a limit is set: the newest that are still needed, at least this many. */
const MIN_BATCH = 16;

interface Candidate {
  entry: HookLogEntry;
  timeMs: number;
  info: LogNameInfo | null;
  /** Already read (names that say nothing had to be opened to be placed in time). */
  record?: HookLogRecord;
}

export interface QueryOptions {
  filter: LogFilter;
  /** Keep the newest `limit` matches; absent = all. */
  limit?: number;
  onProblem: ProblemSink;
}

export interface QueryResult<T> {
  /** Oldest first. */
  rows: T[];
  /** Log files in the folder. */
  total: number;
  /** True when the limit was reached and older logs that might match were not shown. */
  truncated: boolean;
}

/**
 * The logs of `teamDir` that match, oldest first; with a limit, the newest `limit`, opening as few
 * files as it can. `project` keeps only what the caller needs of each match (table cells, a stats
 * sample, a JSON line), so that ten thousand matches do not hold ten thousand whole records.
 */
export function queryLogs(teamDir: string, opts: QueryOptions): Promise<QueryResult<LogRow>>;
export function queryLogs<T>(teamDir: string, opts: QueryOptions, project: (row: LogRow) => T): Promise<QueryResult<T>>;
export async function queryLogs<T>(teamDir: string, opts: QueryOptions, project?: (row: LogRow) => T): Promise<QueryResult<T | LogRow>> {
  const keep = project ?? ((row: LogRow): LogRow => row);
  const entries = await listHookLogs(teamDir);
  const candidates = await placeInTime(entries, opts.filter, opts.onProblem);
  const limit = opts.limit ?? Number.POSITIVE_INFINITY;
  const newestFirst: Array<T | LogRow> = [];
  let end = candidates.length;
  while (newestFirst.length < limit && end > 0) {
    const wanted = Number.isFinite(limit) ? Math.max(limit - newestFirst.length, MIN_BATCH) : end;
    const batch = candidates.slice(Math.max(0, end - wanted), end);
    end -= batch.length;
    const kept: Array<T | LogRow> = [];
    await readCandidates(batch, opts.onProblem, (row) => {
      if (recordMatches(row.record, opts.filter)) kept.push(keep(row));
    });
    for (const item of kept.reverse()) newestFirst.push(item); // not push(...): 100,000 arguments overflow the stack
  }
  const truncated = end > 0 || newestFirst.length > limit;
  return { rows: newestFirst.slice(0, limit).reverse(), total: entries.length, truncated };
}

/**
 * The entries that may match, oldest first. A name of ours gives its time and is filtered on; any
 * other `.json` name is opened now, to be placed by its `startedAt` (or reported).
 */
async function placeInTime(entries: readonly HookLogEntry[], filter: LogFilter, onProblem: ProblemSink): Promise<Candidate[]> {
  const candidates: Candidate[] = [];
  const others: HookLogEntry[] = [];
  for (const entry of entries) {
    const info = parseLogName(entry.name);
    if (info === null) others.push(entry);
    else if (nameMayMatch(info, filter)) candidates.push({ entry, timeMs: info.timeMs, info });
  }
  if (others.length === 0) return candidates;
  await readCandidates(
    others.map((entry) => ({ entry, timeMs: 0, info: null })),
    onProblem,
    (row) => candidates.push({ entry: { file: row.file, name: row.name }, timeMs: Date.parse(row.record.startedAt), info: null, record: row.record }),
  );
  return candidates.sort((a, b) => a.timeMs - b.timeMs); // stable: same-time names keep their listing order
}

/**
 * Reads candidates in order; problems are reported and dropped, vanished files dropped silently.
 * Fast path: a small file is read synchronously and checked against hook-log.ts's schema — for
 * thousands of small files that is several times quicker than one async read each (bench/logs.mjs).
 * Anything else (a large, unreadable, corrupt or foreign file) goes through `readHookLog`, which
 * names the problem. The event loop gets a turn every `YIELD_EVERY` files.
 */
async function readCandidates(batch: readonly Candidate[], onProblem: ProblemSink, onRow: (row: LogRow) => void): Promise<void> {
  for (let i = 0; i < batch.length; i++) {
    if (i > 0 && i % YIELD_EVERY === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const c = batch[i];
    if (!c) continue;
    const record = c.record ?? readSmallLogSync(c.entry.file);
    if (record) {
      onRow({ file: c.entry.file, name: c.entry.name, record });
      continue;
    }
    const result = await readHookLog(c.entry.file);
    if (result.ok) onRow({ file: c.entry.file, name: c.entry.name, record: result.record });
    else if (result.problem.kind !== "missing") onProblem(result.problem);
  }
}

/** Files read between two turns of the event loop. */
const YIELD_EVERY = 256;
/** Larger files take the slow path (a log keeps at most 12,000 characters of each stream: tens of KB). */
const FAST_READ_BYTES = 1024 * 1024;
/** One buffer for every fast read: open, one read, close — three system calls a file. */
let fastBuffer: Buffer | null = null;

/** A valid log read synchronously, or null for anything `readHookLog` should look at. */
function readSmallLogSync(file: string): HookLogRecord | null {
  fastBuffer ??= Buffer.allocUnsafe(FAST_READ_BYTES + 1);
  let length: number;
  let fd: number | undefined;
  try {
    fd = openSync(file, "r");
    length = readSync(fd, fastBuffer, 0, fastBuffer.length, 0);
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  if (length > FAST_READ_BYTES) return null;
  try {
    const parsed = HookLogRecordSchema.safeParse(JSON.parse(fastBuffer.toString("utf8", 0, length)));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** What `logs show <id>` found: the file name, its stem, or a unique prefix or suffix of either. */
export type LogLookup = { kind: "found"; entry: HookLogEntry } | { kind: "none" } | { kind: "ambiguous"; entries: HookLogEntry[] };

/** Pure: picks `id` among listed logs. An exact name or stem wins over prefixes and suffixes. */
export function lookupLog(entries: readonly HookLogEntry[], id: string): LogLookup {
  const wanted = id.includes("/") ? path.basename(id) : id;
  if (wanted === "") return { kind: "none" };
  const exact = entries.find((e) => e.name === wanted || e.name === `${wanted}.json`);
  if (exact) return { kind: "found", entry: exact };
  const matches = entries.filter((e) => e.name.startsWith(wanted) || e.name.endsWith(wanted) || e.name.slice(0, -".json".length).endsWith(wanted));
  if (matches.length === 0) return { kind: "none" };
  const [only] = matches;
  return matches.length === 1 && only ? { kind: "found", entry: only } : { kind: "ambiguous", entries: matches };
}

export async function findLog(teamDir: string, id: string): Promise<LogLookup> {
  return lookupLog(await listHookLogs(teamDir), id);
}

/** Names already in the folder: what `followLogs` should not print again. */
export async function listedNames(teamDir: string): Promise<string[]> {
  return (await listHookLogs(teamDir)).map((e) => e.name);
}

// ---------------------------------------------------------------------------------------------
// Follow

export interface FollowOptions {
  filter: LogFilter;
  /** Names already shown or deliberately left out; only names not in it are new. */
  seen: Iterable<string>;
  onRow: (row: LogRow) => void;
  onProblem: ProblemSink;
  /** A watcher or listing problem: reported, and following goes on. */
  onWarning: (message: string) => void;
  /** Following ends when this settles. */
  stop: Promise<unknown>;
  /** The periodic rescan that catches what the watcher missed (default 1000 ms). */
  rescanMs?: number;
}

/**
 * Prints (through `onRow`) each matching log that lands in the folder, oldest first, until `stop`.
 * A directory watch is the fast path; a rescan every `rescanMs` catches dropped notices. Creates
 * `hook-logs/` when missing so that it can be watched (the leader would create it anyway).
 */
export async function followLogs(teamDir: string, opts: FollowOptions): Promise<void> {
  let seen = new Set(opts.seen);
  let stopped = false;
  let running: Promise<void> | null = null;
  let again = false;
  let lastWarning = "";

  const scan = async (): Promise<void> => {
    const entries = await listHookLogs(teamDir);
    const fresh = entries.filter((e) => !seen.has(e.name));
    seen = new Set(entries.map((e) => e.name)); // a name pruned and written again is new again
    const candidates = fresh.flatMap((entry): Candidate[] => {
      const info = parseLogName(entry.name);
      return info === null || nameMayMatch(info, opts.filter) ? [{ entry, timeMs: info?.timeMs ?? 0, info }] : [];
    });
    await readCandidates(candidates, opts.onProblem, (row) => {
      if (!stopped && recordMatches(row.record, opts.filter)) opts.onRow(row);
    });
  };
  const requestScan = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await scan();
          lastWarning = "";
        } catch (error) {
          const message = `cannot list ${hookLogsDir(teamDir)}: ${describeError(error)}; trying again`;
          if (message !== lastWarning) opts.onWarning(message);
          lastWarning = message;
        }
      } while (again && !stopped);
    })().finally(() => {
      running = null;
    });
  };

  let watcher: DirWatcher | null = null;
  try {
    watcher = await watchDirs([{ dir: hookLogsDir(teamDir), accept: isHookLogName, onHint: requestScan }], {
      poll: false,
      pollIntervalMs: 0,
      onError: opts.onWarning,
    });
  } catch (error) {
    opts.onWarning(`cannot watch ${hookLogsDir(teamDir)}: ${describeError(error)}; rescanning every ${opts.rescanMs ?? 1000} ms instead`);
  }
  const timer = setInterval(requestScan, opts.rescanMs ?? 1000);
  requestScan(); // whatever landed between the caller's listing and the watch
  try {
    await opts.stop;
  } finally {
    stopped = true;
    clearInterval(timer);
    await watcher?.close();
    await running;
  }
}

// ---------------------------------------------------------------------------------------------
// Prune

export interface PruneRule {
  /** Keep the newest `keep` logs. */
  keep?: number;
  /** Remove logs started before this time (ms since the epoch). */
  beforeMs?: number;
}

/**
 * Pure: which logs go, oldest first. `keep` alone: all but the newest `keep`; `beforeMs` alone: those
 * started before it; both: those started before it that are not among the newest `keep`. Neither:
 * none. Only names this project writes are ever removed; other `.json` files are counted as foreign.
 */
export function planPrune(entries: readonly HookLogEntry[], rule: PruneRule): { remove: HookLogEntry[]; keep: number; foreign: number } {
  const logs = entries.flatMap((entry) => {
    const info = parseLogName(entry.name);
    return info ? [{ entry, timeMs: info.timeMs }] : [];
  });
  const foreign = entries.length - logs.length;
  if (rule.keep === undefined && rule.beforeMs === undefined) return { remove: [], keep: logs.length, foreign };
  const keepFrom = rule.keep === undefined ? logs.length : Math.max(0, logs.length - rule.keep);
  const remove = logs.filter((log, index) => index < keepFrom && (rule.beforeMs === undefined || log.timeMs < rule.beforeMs)).map((log) => log.entry);
  return { remove, keep: logs.length - remove.length, foreign };
}

export interface PruneResult {
  removed: HookLogEntry[];
  kept: number;
  /** `.json` files whose names this project does not write: never removed. */
  foreign: number;
  failed: Array<{ entry: HookLogEntry; message: string }>;
}

/** Removes (or with `dryRun` only lists) the logs `rule` selects, oldest first; `onRemoved` hears each. */
export async function pruneLogs(teamDir: string, rule: PruneRule, opts: { dryRun: boolean; onRemoved?: (entry: HookLogEntry) => void }): Promise<PruneResult> {
  const plan = planPrune(await listHookLogs(teamDir), rule);
  const removed: HookLogEntry[] = [];
  const failed: PruneResult["failed"] = [];
  for (const entry of plan.remove) {
    if (!opts.dryRun) {
      try {
        await fs.unlink(entry.file);
      } catch (error) {
        if (errnoCode(error) === "ENOENT") continue; // someone else removed it first
        failed.push({ entry, message: `cannot remove ${entry.file}: ${describeError(error)}` });
        continue;
      }
    }
    removed.push(entry);
    opts.onRemoved?.(entry);
  }
  return { removed, kept: plan.keep + failed.length, foreign: plan.foreign, failed };
}

// ---------------------------------------------------------------------------------------------
// Team dir

/**
 * The team dir of `--team-dir DIR` or `--team ID` (under `PI_TEAMS_ROOT_DIR`). Throws E_USAGE naming
 * the flag, or E_TEAM_DIR when the folder is not there.
 */
export async function resolveLogsTeamDir(input: {
  teamDir: string | undefined;
  team: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
}): Promise<string> {
  if (input.teamDir !== undefined && input.team !== undefined) throw new HooksError("E_USAGE", "--team-dir and --team: give one, not both");
  let dir: string;
  let label: string;
  if (input.teamDir !== undefined) {
    if (input.teamDir.trim() === "") throw new HooksError("E_USAGE", "--team-dir must not be empty");
    dir = path.resolve(input.cwd, input.teamDir);
    label = `--team-dir ${dir}`;
  } else if (input.team !== undefined) {
    const id = input.team;
    if (id === "" || sanitizeName(id) !== id) throw new HooksError("E_USAGE", `--team "${id}" is not a team id (letters, digits, "_" and "-" only)`);
    const root = input.env.PI_TEAMS_ROOT_DIR?.trim();
    if (!root) {
      throw new HooksError("E_USAGE", `--team ${id}: PI_TEAMS_ROOT_DIR is not set, so there is no teams root to look for "${id}" in; set it, or pass --team-dir DIR`);
    }
    dir = path.join(path.resolve(input.cwd, root), id);
    label = `--team ${id}: ${dir} (under PI_TEAMS_ROOT_DIR)`;
  } else {
    throw new HooksError("E_USAGE", "--team-dir DIR or --team ID is required (--team looks under $PI_TEAMS_ROOT_DIR)");
  }
  try {
    const stat = await fs.stat(dir);
    if (!stat.isDirectory()) throw new HooksError("E_TEAM_DIR", `${label}: not a directory`);
  } catch (error) {
    if (error instanceof HooksError) throw error;
    throw new HooksError("E_TEAM_DIR", `${label}: ${errnoCode(error) === "ENOENT" ? "no such directory" : describeError(error)}`, { cause: error });
  }
  return dir;
}

// ---------------------------------------------------------------------------------------------
// Stats (pure)

export interface StatsRow {
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
}

/** Nearest-rank percentile of ascending `sorted` (q from 0 to 1); 0 for none. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1] ?? 0;
}

/** What stats needs of one log. */
export interface StatsSample {
  hook: string;
  event: HookEventName;
  outcome: LogOutcome;
  durationMs: number;
  taskId: string | null;
}

export function statsSample(record: HookLogRecord): StatsSample {
  return { hook: hookName(record.result), event: record.invocation.event, outcome: outcomeOf(record.result), durationMs: record.result.durationMs, taskId: taskIdOf(record) };
}

/** One row per hook (file name) and event, sorted by hook then event. */
export function computeStats(samples: readonly StatsSample[], topTasks = 3): StatsRow[] {
  const groups = new Map<string, { hook: string; event: HookEventName; durations: number[]; counts: Record<LogOutcome, number>; failures: Map<string, number> }>();
  for (const { hook, event, outcome, durationMs, taskId } of samples) {
    const id = `${hook}\u0000${event}`;
    let group = groups.get(id);
    if (!group) {
      group = { hook, event, durations: [], counts: { passed: 0, failed: 0, timed_out: 0, error: 0 }, failures: new Map() };
      groups.set(id, group);
    }
    group.counts[outcome] += 1;
    group.durations.push(durationMs);
    if (outcome !== "passed" && taskId !== null) group.failures.set(taskId, (group.failures.get(taskId) ?? 0) + 1);
  }
  const rows: StatsRow[] = [];
  for (const g of groups.values()) {
    const sorted = [...g.durations].sort((a, b) => a - b);
    const mostFailedTasks = [...g.failures]
      .map(([taskId, failures]) => ({ taskId, failures }))
      .sort((a, b) => b.failures - a.failures || compareIds(a.taskId, b.taskId))
      .slice(0, topTasks);
    rows.push({
      hook: g.hook,
      event: g.event,
      runs: sorted.length,
      passed: g.counts.passed,
      failed: g.counts.failed,
      timedOut: g.counts.timed_out,
      error: g.counts.error,
      passRate: sorted.length === 0 ? 0 : g.counts.passed / sorted.length,
      p50Ms: percentile(sorted, 0.5),
      p95Ms: percentile(sorted, 0.95),
      mostFailedTasks,
    });
  }
  return rows.sort((a, b) => (a.hook === b.hook ? HOOK_EVENTS.indexOf(a.event) - HOOK_EVENTS.indexOf(b.event) : a.hook < b.hook ? -1 : 1));
}

/** Decimal ids in number order, others after them in string order. */
function compareIds(a: string, b: string): number {
  const [na, nb] = [/^\d+$/.test(a) ? Number(a) : Number.NaN, /^\d+$/.test(b) ? Number(b) : Number.NaN];
  if (!Number.isNaN(na) && !Number.isNaN(nb)) return na - nb;
  if (Number.isNaN(na) !== Number.isNaN(nb)) return Number.isNaN(na) ? 1 : -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------
// Text (pure)

/** ANSI escapes and control characters; tabs and line breaks become spaces where a cell needs one line. */
const CONTROL = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b[@-_]|[\u0000-\u0008\u000b-\u001f\u007f]/g;

function oneLine(text: string): string {
  return text.replace(/[\t\n\r]+/g, " ").replace(CONTROL, "").trim();
}

/** The first line of `text` that holds something, cleaned, cut to `max` characters. */
export function firstLine(text: string, max = 100): string {
  for (const line of text.split(/\r\n|\n|\r/)) {
    const clean = oneLine(line);
    if (clean) return truncateText(clean, max);
  }
  return "";
}

function hookName(result: Pick<RunResult, "hookPath">): string {
  return result.hookPath ? path.basename(result.hookPath) : "(none)";
}

/** `timed out` for `timed_out`; the others as they are. */
export function outcomeWord(outcome: LogOutcome): string {
  return outcome === "timed_out" ? "timed out" : outcome;
}

/** The actions the policy step took (`reopened (1/3)`, `follow-up #12 for bob`, `nudge bob`); empty when none or no policy ran. */
export function policyActions(record: HookLogRecord): string[] {
  const actions = record.policy?.actions;
  if (!Array.isArray(actions)) return [];
  return actions.filter((a): a is string => typeof a === "string" && a !== "none");
}

/** `2026-03-01 09:12:44`, UTC. */
function shortTime(iso: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  const utc = new Date(ms).toISOString();
  return `${utc.slice(0, 10)} ${utc.slice(11, 19)}`;
}

export const TABLE_HEADER: readonly string[] = ["time (UTC)", "event", "task", "member", "hook", "outcome", "duration", "action", "first stderr line"];

/** Column widths `followLogs` starts from, before it has seen any row. */
export const FOLLOW_WIDTHS: readonly number[] = [19, 14, 4, 8, 20, 9, 8, 12];

/** The cells of one table row. The last is the first stderr line, else the spawn error. */
export function rowCells(row: LogRow): string[] {
  const { invocation, result } = row.record;
  const taskId = taskIdOf(row.record);
  const actions = policyActions(row.record);
  const stderr = firstLine(result.stderr) || (result.error ? `(${firstLine(result.error)})` : "");
  return [
    shortTime(row.record.startedAt),
    invocation.event,
    taskId === null ? "-" : `#${oneLine(taskId)}`,
    invocation.memberName ? oneLine(invocation.memberName) : "-",
    oneLine(hookName(result)),
    outcomeWord(outcomeOf(result)),
    formatDuration(result.durationMs),
    actions.length > 0 ? oneLine(actions.join(", ")) : "-",
    stderr,
  ];
}

/** The widths that fit `rows` (all columns but the last, which is never padded). */
export function columnWidths(rows: ReadonlyArray<readonly string[]>, start: readonly number[] = []): number[] {
  const widths = TABLE_HEADER.slice(0, -1).map((h, i) => Math.max(h.length, start[i] ?? 0));
  for (const cells of rows) for (let i = 0; i < widths.length; i++) widths[i] = Math.max(widths[i] ?? 0, (cells[i] ?? "").length);
  return widths;
}

/** Cells padded to `widths`, two spaces apart; numbers (duration) right-aligned. */
export function tableLine(cells: readonly string[], widths: readonly number[]): string {
  return cells
    .map((cell, i) => {
      const width = widths[i];
      if (width === undefined) return cell;
      return i === 6 ? cell.padStart(width) : cell.padEnd(width);
    })
    .join("  ")
    .trimEnd();
}

/** The whole table, header first, rows in the order given. */
export function formatTable(rows: readonly LogRow[]): string {
  const cells = rows.map(rowCells);
  const widths = columnWidths(cells);
  return [TABLE_HEADER, ...cells].map((c) => `${tableLine(c, widths)}\n`).join("");
}

/** One log as NDJSON: its file first, then the record as written. */
export function jsonLine(row: LogRow): string {
  return `${JSON.stringify({ file: row.file, ...row.record })}\n`;
}

function percent(rate: number): string {
  const value = Math.round(rate * 1000) / 10;
  return `${Number.isInteger(value) ? value.toFixed(0) : value.toFixed(1)}%`;
}

export const STATS_HEADER: readonly string[] = ["hook", "event", "runs", "pass rate", "failed", "timed out", "error", "p50", "p95", "most-failed tasks"];

/** The stats table; counts and durations right-aligned. */
export function formatStats(rows: readonly StatsRow[]): string {
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
    r.mostFailedTasks.length > 0 ? r.mostFailedTasks.map((t) => `#${oneLine(t.taskId)} (${t.failures})`).join(", ") : "-",
  ]);
  const all = [STATS_HEADER, ...cells];
  const widths = STATS_HEADER.map((_, i) => Math.max(...all.map((c) => (c[i] ?? "").length)));
  const last = STATS_HEADER.length - 1;
  const line = (c: readonly string[]): string =>
    c
      .map((cell, i) => (i === last ? cell : i >= 2 && i <= 8 ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return `${all.map(line).join("\n")}\n`;
}

/** One stats row as NDJSON. */
export function statsJsonLine(row: StatsRow): string {
  return `${JSON.stringify(row)}\n`;
}

/** Lines of at most this many kept from each of stdout and stderr by `formatShow`. Everything is in the file. */
const SHOW_OUTPUT_LINES = 200;

/** One log, readably: context, command, exit, timing, policy, stdout and stderr. */
export function formatShow(row: LogRow): string {
  const { invocation, result, policy } = row.record;
  const out: string[] = [];
  const field = (name: string, value: string): void => {
    out.push(`${(name ? `${name}:` : "").padEnd(14)}${value}`);
  };
  field("log", row.file);
  field("event", `${invocation.event}${row.record.retry ? " (a retry: this event key ran before)" : ""}`);
  if (row.record.key) field("key", row.record.key);
  field("started", row.record.startedAt);
  field("team", `${invocation.teamId} (task list ${invocation.taskListId}, style ${invocation.style}) ${invocation.teamDir}`);
  field("member", invocation.memberName ?? "(unknown)");
  field("event time", invocation.timestamp ?? "(unknown)");
  const task = invocation.completedTask;
  if (task) {
    field("task", `#${task.id} ${oneLine(task.subject)}`);
    field("", `status ${task.status}, owner ${task.owner ?? "(none)"}, updated ${task.updatedAt}`);
    const description = task.description.trim();
    if (description) out.push(...indent(cutLines(description, 20)));
  } else {
    const taskId = taskIdOf(row.record);
    field("task", taskId === null ? "(none)" : `#${taskId} (its task file was gone when the hook ran)`);
  }
  out.push("");
  field("hook", result.hookPath ?? "(none)");
  if (result.command) field("command", shellLine(result.command));
  field("outcome", outcomeWord(outcomeOf(result)));
  const exit = [
    result.exitCode === null ? "no exit code" : `exit code ${result.exitCode}`,
    ...(result.signal ? [`signal ${result.signal}`] : []),
    ...(result.timedOut ? ["timed out"] : []),
  ];
  field("exit", exit.join(", "));
  if (result.error) field("error", `${oneLine(result.error)}${result.errorCode ? ` (${result.errorCode})` : ""}`);
  field("duration", result.durationMs >= 1000 ? `${formatDuration(result.durationMs)} (${Math.round(result.durationMs)} ms)` : formatDuration(result.durationMs));
  field("run id", result.runId);
  if (result.leftoverProcesses > 0) field("leftovers", `${result.leftoverProcesses} process(es) of the hook were still running after it and were killed`);
  if (result.contextTruncated) field("context", "an environment value was shortened to fit (stdin and the context file were complete)");
  out.push("");
  if (policy) {
    const p = policy as Record<string, unknown>;
    const text = (v: unknown): string | null => (typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? String(v) : null);
    const settings = [
      text(p.failureAction) ?? "(unknown action)",
      ...(text(p.maxReopensPerTask) !== null ? [`max reopens ${text(p.maxReopensPerTask)}`] : []),
      ...(text(p.followupOwner) !== null ? [`follow-up owner ${text(p.followupOwner)}`] : []),
    ];
    field("policy", settings.join(", "));
    if (text(p.summary)) field("summary", oneLine(text(p.summary) ?? ""));
    const actions = policyActions(row.record);
    field("actions", actions.length > 0 ? actions.join(", ") : "none");
    if (text(p.followupTaskId)) field("follow-up", `#${text(p.followupTaskId)}`);
    if (p.alreadyApplied === true) field("", "(already applied by an earlier run of this event: nothing done again)");
    if (Array.isArray(p.errors)) for (const e of p.errors) field("policy error", oneLine(String(e)));
  } else {
    field("policy", "not applied (reported only)");
  }
  out.push("", ...outputBlock("stdout", result.stdout, result.stdoutDroppedBytes), "", ...outputBlock("stderr", result.stderr, result.stderrDroppedBytes));
  return `${out.join("\n")}\n`;
}

function outputBlock(name: string, text: string, dropped: number): string[] {
  const lost = dropped > 0 ? `, ${dropped} more bytes were not captured` : "";
  const body = text.replace(/\s+$/, "");
  if (body === "") return [`${name}: (empty${lost})`];
  const lines = body.split(/\r\n|\n|\r/);
  return [`${name} (${lines.length} line${lines.length === 1 ? "" : "s"}${lost}):`, ...indent(cutLines(body, SHOW_OUTPUT_LINES), "  │ ")];
}

function cutLines(text: string, max: number): string[] {
  const lines = text.split(/\r\n|\n|\r/).map((l) => l.replace(CONTROL, ""));
  return lines.length <= max ? lines : [...lines.slice(0, max), `… ${lines.length - max} more lines (in the log file)`];
}

function indent(lines: readonly string[], prefix = "  "): string[] {
  return lines.map((l) => `${prefix}${l}`.trimEnd());
}

/** The argv as one shell-like line, for reading. */
function shellLine(argv: readonly string[]): string {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`)).join(" ");
}
