/**
 * Reading hook logs for people: list the folder, query it (filters, the newest N), search it, prune,
 * and resolve the team dir. A file that is not a log goes to `onProblem` and is skipped, never thrown.
 * What the folder holds is decided by runner/hook-log.ts (names, `readHookLog`); this module reads the
 * common case faster (synchronous reads, `checkLogRecord`) and hands everything else to it.
 * runner/hook-log.ts, and with it zod, is loaded only when some file needs it.
 */
import { type Dirent, closeSync, openSync, readSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { HooksError, describeError, errnoCode } from "../contract/errors.js";
import type { HookLogEntry, HookLogProblem, HookLogRead, HookLogRecord } from "../runner/hook-log.js";
import { READ_FLAGS } from "../team/json-file.js";
import { type LogFilter, nameMayMatch, parseLogName, recordMatches } from "./filter.js";
import { checkLogRecord } from "./record.js";
import { hookLogsDir, isTempOrLock } from "../team/paths.js";

/** One readable log. */
export interface LogRow {
  file: string;
  name: string;
  record: HookLogRecord;
}

/** Reports a file that is not a readable log (never a file that vanished while listed: that is no news). */
export type ProblemSink = (problem: HookLogProblem) => void;

// ---------------------------------------------------------------------------------------------
// Listing

/**
 * runner/hook-log.ts `listHookLogs` without loading runner/hook-log.ts (and zod): the logs of a team,
 * oldest first, by name only. A missing `hook-logs/` is an empty list; an unreadable one throws E_IO.
 * test/integration/logs-lib.test.ts checks that the two list the same.
 */
export async function listLogFiles(teamDir: string): Promise<HookLogEntry[]> {
  const dir = hookLogsDir(teamDir);
  return (await listLogNames(dir)).map((name) => ({ file: fileIn(dir, name), name }));
}

/** The log names in `dir`, oldest first: `listLogFiles` without an object per file. */
async function listLogNames(dir: string): Promise<string[]> {
  let dirents: Dirent[];
  try {
    dirents = await fs.readdir(dir, { withFileTypes: true });
  } catch (cause) {
    if (errnoCode(cause) === "ENOENT") return [];
    throw new HooksError("E_IO", `cannot list hook logs in ${dir}: ${describeError(cause)}`, { cause });
  }
  const names: string[] = [];
  for (const dirent of dirents) {
    const name = dirent.name;
    // runner/hook-log.ts `isHookLogName`
    if ((dirent.isFile() || dirent.isSymbolicLink()) && name.endsWith(".json") && !name.startsWith(".") && !isTempOrLock(name)) names.push(name);
  }
  return sortLogNames(names);
}

/** `path.join(dir, name)` for a normalised `dir` and a name without separators, minus the normalising. */
function fileIn(dir: string, name: string): string {
  return `${dir}${path.sep}${name}`;
}

/** The time stamp every name runner/hook-log.ts writes starts with: `2026-03-01T09-12-44-046Z`. */
const STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z/;
const STAMP_CHARS = 24;

/**
 * Sorts in runner/hook-log.ts's order: by `sortKey`, stable. When every name starts with a stamp, plain
 * order already is that order except between equal stamps (the stamp's digit runs have fixed
 * widths, and the `Z` ends them), so keys are built only for those — ten times quicker for 10,000.
 */
function sortLogNames(names: string[]): string[] {
  const keys = new Map<string, string>();
  const key = (name: string): string => {
    let k = keys.get(name);
    if (k === undefined) {
      k = sortKey(name);
      keys.set(name, k);
    }
    return k;
  };
  const byKey = (a: string, b: string): number => {
    const [ka, kb] = [key(a), key(b)];
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  };
  if (!names.every((name) => STAMP.test(name))) return names.sort(byKey);
  return names.sort((a, b) => (a.startsWith(b.slice(0, STAMP_CHARS)) ? byKey(a, b) : a < b ? -1 : 1));
}

/** runner/hook-log.ts's sort key: digit runs padded to 12, so that `…_10.json` sorts after `…_9.json`. */
function sortKey(name: string): string {
  return name.replace(/\d+/g, (digits) => digits.padStart(12, "0"));
}

/** Two log names in the folder's order (`sortLogNames`): for a cursor that must agree with it. */
export function compareLogNames(a: string, b: string): number {
  const [ka, kb] = [sortKey(a), sortKey(b)];
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

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

export interface QueryOptions {
  filter: LogFilter;
  /** Keep the newest `limit` matches; absent = all. */
  limit?: number;
  /** Only logs older than this one: started earlier, or at the same millisecond and before it in the folder's order (a page's cursor). */
  before?: { timeMs: number; name: string };
  /** Only the names this keeps, asked once per name in the folder before anything is opened (a cache's: the names it lacks). */
  names?: (name: string) => boolean;
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
 * sample), so that ten thousand matches do not hold ten thousand whole records.
 */
export function queryLogs(teamDir: string, opts: QueryOptions): Promise<QueryResult<LogRow>>;
export function queryLogs<T>(teamDir: string, opts: QueryOptions, project: (row: LogRow) => T): Promise<QueryResult<T>>;
export async function queryLogs<T>(teamDir: string, opts: QueryOptions, project?: (row: LogRow) => T): Promise<QueryResult<T | LogRow>> {
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
export async function streamLogs<T>(teamDir: string, opts: QueryOptions, project: (row: LogRow) => T, emit: (item: T) => void): Promise<Omit<QueryResult<T>, "rows">> {
  const dir = hookLogsDir(teamDir);
  const names = await listLogNames(dir);
  const placed = await placeInTime(dir, opts.names ? names.filter(opts.names) : names, opts.filter, opts.onProblem);
  const { before } = opts;
  const candidates = before ? placed.filter((c) => c.timeMs < before.timeMs || (c.timeMs === before.timeMs && compareLogNames(c.name, before.name) < 0)) : placed;
  const limit = opts.limit ?? Number.POSITIVE_INFINITY;
  if (candidates.length <= limit) {
    await readCandidates(dir, candidates, opts.onProblem, (row) => {
      if (recordMatches(row.record, opts.filter)) emit(project(row));
    });
    return { total: names.length, truncated: false };
  }
  const newestFirst: T[] = [];
  let end = candidates.length;
  while (newestFirst.length < limit && end > 0) {
    const wanted = Math.max(limit - newestFirst.length, MIN_BATCH);
    const batch = candidates.slice(Math.max(0, end - wanted), end);
    end -= batch.length;
    const kept: T[] = [];
    await readCandidates(dir, batch, opts.onProblem, (row) => {
      if (recordMatches(row.record, opts.filter)) kept.push(project(row));
    });
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
async function placeInTime(dir: string, names: readonly string[], filter: LogFilter, onProblem: ProblemSink): Promise<Candidate[]> {
  const candidates: Candidate[] = [];
  const others: Candidate[] = [];
  for (const name of names) {
    const info = parseLogName(name);
    if (info === null) others.push({ name, timeMs: 0 });
    else if (nameMayMatch(info, filter)) candidates.push({ name, timeMs: info.timeMs });
  }
  if (others.length === 0) return candidates;
  await readCandidates(dir, others, onProblem, (row) => candidates.push({ name: row.name, timeMs: Date.parse(row.record.startedAt), record: row.record }));
  return candidates.sort((a, b) => a.timeMs - b.timeMs); // stable: same-time names keep their listing order
}

/**
 * Reads candidates in order; problems are reported and dropped, vanished files dropped silently. Fast
 * path: a small file is read synchronously and checked by `checkLogRecord` — for thousands of small
 * files that is several times quicker than an async read and the zod schema each (bench/logs.mjs).
 * Anything else (a large, unreadable, corrupt or foreign file, or a record the quick check is not sure
 * of) goes through runner/hook-log.ts `readHookLog`, which names the problem. The event loop gets a
 * turn every `YIELD_EVERY` files.
 */
export async function readCandidates(dir: string, batch: readonly Candidate[], onProblem: ProblemSink, onRow: (row: LogRow) => void): Promise<void> {
  for (let i = 0; i < batch.length; i++) {
    if (i > 0 && i % YIELD_EVERY === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const c = batch[i];
    if (!c) continue;
    const file = fileIn(dir, c.name);
    const record = c.record ?? readSmallLogSync(file);
    if (record) {
      onRow({ file, name: c.name, record });
      continue;
    }
    const result = await readHookLog(file);
    if (result.ok) onRow({ file, name: c.name, record: result.record });
    else if (result.problem.kind !== "missing") onProblem(result.problem);
  }
}

/** runner/hook-log.ts `readHookLog`, loaded on first use: most listings never need it. */
async function readHookLog(file: string): Promise<HookLogRead> {
  const hookLog = await import("../runner/hook-log.js");
  return hookLog.readHookLog(file);
}

/** Files read between two turns of the event loop. */
const YIELD_EVERY = 256;
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
  return checkLogRecord(data);
}

/**
 * `readCandidates` for the logs among `names` whose bytes hold `needle` (as JSON writes it), newest
 * first: a search of every log for a run id decodes and parses only the few that can hold it.
 */
export async function readLogsHolding(dir: string, names: readonly string[], needle: string, onProblem: ProblemSink, onRow: (row: LogRow) => void): Promise<void> {
  const wanted = Buffer.from(JSON.stringify(needle).slice(1, -1));
  for (let i = names.length - 1, n = 0; i >= 0; i--, n++) {
    if (n > 0 && n % YIELD_EVERY === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const name = names[i];
    if (name === undefined) continue;
    const file = fileIn(dir, name);
    const bytes = readSmallSync(file);
    if (bytes !== null && !bytes.includes(wanted)) continue;
    const record = bytes === null ? null : parseLogBytes(bytes);
    await readCandidates(dir, [{ name, timeMs: 0, ...(record ? { record } : {}) }], onProblem, onRow);
  }
}

// ---------------------------------------------------------------------------------------------
// One log

/** Names already in the folder: what `followLogs` should not print again. */
export async function listedNames(teamDir: string): Promise<string[]> {
  return (await listLogFiles(teamDir)).map((e) => e.name);
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
  const plan = planPrune(await listLogFiles(teamDir), rule);
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

