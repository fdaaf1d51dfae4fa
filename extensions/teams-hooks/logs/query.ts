/**
 * Reading hook logs for people: query the folder (filters, the newest N), search it, and prune it.
 * A file that is not a log goes to `onProblem` and is skipped, never thrown. What the folder holds is
 * decided by logs/hook-log.ts (names, the schema, `readHookLog`); this module reads the common case
 * faster (synchronous reads into one buffer) and hands everything else to `readHookLog`, which names
 * the problem.
 */
import { closeSync, openSync, readSync } from "node:fs";
import fs from "node:fs/promises";
import { describeError, errnoCode } from "../contract/errors.js";
import {
  type HookLogEntry,
  type HookLogProblem,
  type HookLogRecord,
  HookLogRecordSchema,
  compareHookLogNames,
  hookLogFile,
  listHookLogNames,
  listHookLogs,
  readHookLog,
} from "./hook-log.js";
import { READ_FLAGS } from "../team/json-file.js";
import { type LogFilter, nameMayMatch, parseLogName, recordMatches } from "./filter.js";
import { hookLogsDir } from "../team/paths.js";
import { filterSliced, yieldIfDue } from "./slices.js";

/** One readable log. */
export interface LogRow {
  file: string;
  name: string;
  record: HookLogRecord;
}

/** Reports a file that is not a readable log (never a file that vanished while listed: that is no news). */
export type ProblemSink = (problem: HookLogProblem) => void;

// ---------------------------------------------------------------------------------------------
// Query

/** Files read per round when a limit is set: the newest that are still needed, at least this many. */
const MIN_BATCH = 16;

/** A log that may match: its name, its start time, and its record once read. */
export interface Candidate {
  name: string;
  timeMs: number;
  /** Already read (names that say nothing had to be opened to be placed in time). */
  record?: HookLogRecord;
}

interface QueryOptions {
  filter: LogFilter;
  /** Keep the newest `limit` matches; absent = all. */
  limit?: number;
  /**
   * Only logs older than this one: started earlier, or at the same millisecond and before it in the folder's order (a
   * page's cursor).
   */
  before?: { timeMs: number; name: string };
  /**
   * Only the names this keeps, asked once per name in the folder before anything is opened (a cache's: the names it
   * lacks).
   */
  names?: (name: string) => boolean;
  /**
   * Files larger than this are problems (`too_large`), never read whole: a server reading what agents wrote keeps to
   * what the writer writes at most (`MAX_WRITTEN_LOG_BYTES`).
   */
  maxBytes?: number;
  /** List the folder in slices of an event loop (a server's: logs/hook-log.ts `listHookLogNames`). */
  inSlices?: boolean;
  onProblem: ProblemSink;
}

interface QueryResult<T> {
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
 * sample), so that ten thousand matches do not hold ten thousand whole records.
 */
export function queryLogs(teamDir: string, opts: QueryOptions): Promise<QueryResult<LogRow>>;
export function queryLogs<T>(teamDir: string, opts: QueryOptions, project: (row: LogRow) => T): Promise<QueryResult<T>>;
export async function queryLogs<T>(
  teamDir: string,
  opts: QueryOptions,
  project?: (row: LogRow) => T,
): Promise<QueryResult<T | LogRow>> {
  const rows: Array<T | LogRow> = [];
  const keep: (row: LogRow) => T | LogRow = project ?? ((row) => row);
  const { total, truncated } = await streamLogs(teamDir, opts, keep, (item) => rows.push(item));
  return { rows, total, truncated };
}

/**
 * `queryLogs` that hands each match (as `project` made it) to `emit`, oldest first, instead of
 * returning them. When every file that may match fits in the limit (always without one), matches go
 * out as they are read, so that printing 10,000 JSON lines never holds them all; otherwise the newest
 * are found first and then emitted in order.
 */
export async function streamLogs<T>(
  teamDir: string,
  opts: QueryOptions,
  project: (row: LogRow) => T,
  emit: (item: T) => void,
): Promise<Omit<QueryResult<T>, "rows">> {
  const dir = hookLogsDir(teamDir);
  const names = await listHookLogNames(teamDir, { inSlices: opts.inSlices ?? false });
  const placed = await placeInTime(
    dir,
    opts.names ? await filterSliced(names, opts.names) : names,
    opts.filter,
    opts.onProblem,
    opts.maxBytes,
  );
  const { before } = opts;
  const candidates = before
    ? placed.filter(
        (c) => c.timeMs < before.timeMs || (c.timeMs === before.timeMs && compareHookLogNames(c.name, before.name) < 0),
      )
    : placed;
  const limit = opts.limit ?? Number.POSITIVE_INFINITY;
  if (candidates.length <= limit) {
    await readCandidates(
      dir,
      candidates,
      opts.onProblem,
      (row) => {
        if (recordMatches(row.record, opts.filter)) emit(project(row));
      },
      opts.maxBytes,
    );
    return { total: names.length, truncated: false };
  }
  const newestFirst: T[] = [];
  let end = candidates.length;
  while (newestFirst.length < limit && end > 0) {
    const wanted = Math.max(limit - newestFirst.length, MIN_BATCH);
    const batch = candidates.slice(Math.max(0, end - wanted), end);
    end -= batch.length;
    const kept: T[] = [];
    await readCandidates(
      dir,
      batch,
      opts.onProblem,
      (row) => {
        if (recordMatches(row.record, opts.filter)) kept.push(project(row));
      },
      opts.maxBytes,
    );
    for (const item of kept.reverse()) newestFirst.push(item); // not push(...): 100,000 arguments overflow the stack
  }
  const truncated = end > 0 || newestFirst.length > limit;
  const shown = newestFirst.slice(0, limit);
  for (let i = shown.length - 1; i >= 0; i--) emit(shown[i] as T);
  return { total: names.length, truncated };
}

/**
 * The entries that may match, oldest first. A name of ours gives its time and is filtered on; any
 * other `.json` name is opened now, to be placed by its `startedAt` (or reported).
 */
async function placeInTime(
  dir: string,
  names: readonly string[],
  filter: LogFilter,
  onProblem: ProblemSink,
  maxBytes?: number,
): Promise<Candidate[]> {
  const candidates: Candidate[] = [];
  const others: Candidate[] = [];
  for (let i = 0; i < names.length; i++) {
    if (i % 1024 === 0) await yieldIfDue();
    const name = names[i] as string;
    const info = parseLogName(name);
    if (info === null) others.push({ name, timeMs: 0 });
    else if (nameMayMatch(info, filter)) candidates.push({ name, timeMs: info.timeMs });
  }
  if (others.length === 0) return candidates;
  await readCandidates(
    dir,
    others,
    onProblem,
    (row) => candidates.push({ name: row.name, timeMs: Date.parse(row.record.startedAt), record: row.record }),
    maxBytes,
  );
  return candidates.sort((a, b) => a.timeMs - b.timeMs); // stable: same-time names keep their listing order
}

/**
 * Reads candidates in order; problems are reported and dropped, vanished files dropped silently. Fast
 * path: a small file is read synchronously into one buffer and checked by the schema — for thousands
 * of small files that is several times quicker than an async read each (bench/logs.mjs). Anything
 * else (a large, unreadable, corrupt or foreign file) goes through logs/hook-log.ts `readHookLog`,
 * which names the problem. The event loop gets a turn at least every `SLICE_MS` (`yieldIfDue`), so
 * that reading ten thousand files never holds up a server's other requests. A file over `maxBytes`
 * is a problem (`too_large`) read no further.
 */
export async function readCandidates(
  dir: string,
  batch: readonly Candidate[],
  onProblem: ProblemSink,
  onRow: (row: LogRow) => void,
  maxBytes?: number,
): Promise<void> {
  for (let i = 0; i < batch.length; i++) {
    await yieldIfDue();
    const c = batch[i];
    if (!c) continue;
    const file = hookLogFile(dir, c.name);
    const record = c.record ?? readSmallLogSync(file);
    if (record) {
      onRow({ file, name: c.name, record });
      continue;
    }
    const result = await readHookLog(file, maxBytes === undefined ? {} : { maxBytes });
    if (result.ok) onRow({ file, name: c.name, record: result.record });
    else if (result.problem.kind !== "missing") onProblem(result.problem);
  }
}

/** Larger files take the slow path (a log keeps at most 12,000 characters of each stream: tens of KB). */
const FAST_READ_BYTES = 1024 * 1024;
/** One buffer for every fast read: open, one read, close — three system calls a file. */
let fastBuffer: Buffer | null = null;

/** A valid log read synchronously, or null for anything `readHookLog` should look at. */
function readSmallLogSync(file: string): HookLogRecord | null {
  const bytes = readSmallSync(file);
  return bytes === null ? null : parseLogBytes(bytes);
}

/**
 * The bytes of a small file, read synchronously into the one buffer (valid until the next read), or
 * null for anything `readHookLog` should look at: a large, unreadable or vanished file.
 */
function readSmallSync(file: string): Buffer | null {
  fastBuffer ??= Buffer.allocUnsafe(FAST_READ_BYTES + 1);
  let length: number;
  let fd: number | undefined;
  try {
    // Non-blocking: a FIFO here gives nothing to parse (not a wait for a writer); readHookLog names it.
    fd = openSync(file, READ_FLAGS);
    length = readSync(fd, fastBuffer, 0, fastBuffer.length, 0);
  } catch {
    return null; // readHookLog reads it again and says what is wrong (or that it is gone)
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  return length > FAST_READ_BYTES ? null : fastBuffer.subarray(0, length);
}

function parseLogBytes(bytes: Buffer): HookLogRecord | null {
  let data: unknown;
  try {
    data = JSON.parse(bytes.toString("utf8"));
  } catch {
    return null; // not JSON: readHookLog words the problem
  }
  const parsed = HookLogRecordSchema.safeParse(data);
  return parsed.success ? parsed.data : null; // not a log: readHookLog reads it again and words the problem
}

/**
 * `readCandidates` for the logs among `names` whose bytes hold `needle` (as JSON writes it), newest
 * first: a search of every log for a run id decodes and parses only the few that can hold it.
 */
export async function readLogsHolding(
  dir: string,
  names: readonly string[],
  needle: string,
  onProblem: ProblemSink,
  onRow: (row: LogRow) => void,
  maxBytes?: number,
): Promise<void> {
  const wanted = Buffer.from(JSON.stringify(needle).slice(1, -1));
  for (let i = names.length - 1; i >= 0; i--) {
    await yieldIfDue();
    const name = names[i];
    if (name === undefined) continue;
    const file = hookLogFile(dir, name);
    const bytes = readSmallSync(file);
    if (bytes !== null && !bytes.includes(wanted)) continue;
    const record = bytes === null ? null : parseLogBytes(bytes);
    await readCandidates(dir, [{ name, timeMs: 0, record: record ?? undefined }], onProblem, onRow, maxBytes);
  }
}

// ---------------------------------------------------------------------------------------------
// Prune

interface PruneRule {
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
export function planPrune(
  entries: readonly HookLogEntry[],
  rule: PruneRule,
): { remove: HookLogEntry[]; keep: number; foreign: number } {
  const logs = entries.flatMap((entry) => {
    const info = parseLogName(entry.name);
    return info ? [{ entry, timeMs: info.timeMs }] : [];
  });
  const foreign = entries.length - logs.length;
  if (rule.keep === undefined && rule.beforeMs === undefined) return { remove: [], keep: logs.length, foreign };
  const keepFrom = rule.keep === undefined ? logs.length : Math.max(0, logs.length - rule.keep);
  const remove = logs
    .filter((log, index) => index < keepFrom && (rule.beforeMs === undefined || log.timeMs < rule.beforeMs))
    .map((log) => log.entry);
  return { remove, keep: logs.length - remove.length, foreign };
}

interface PruneResult {
  removed: HookLogEntry[];
  kept: number;
  /** `.json` files whose names this project does not write: never removed. */
  foreign: number;
  failed: Array<{ entry: HookLogEntry; message: string }>;
}

/** Removes (or with `dryRun` only lists) the logs `rule` selects, oldest first; `onRemoved` hears each. */
export async function pruneLogs(
  teamDir: string,
  rule: PruneRule,
  opts: { dryRun: boolean; onRemoved?: (entry: HookLogEntry) => void },
): Promise<PruneResult> {
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
