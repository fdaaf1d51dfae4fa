/**
 * Hook logs (docs/logs.md, "The files"): one JSON file per hook invocation in `<teamDir>/hook-logs/`.
 * Writing never overwrites another log, whether the two writers are in one process or in several, and
 * keeps every log well within what the readers accept, however large the task; listing is names only,
 * so that `logs` stays fast with tens of thousands of files; reading validates one file and reports a
 * bad one as data.
 */
import { randomBytes } from "node:crypto";
import { existsSync, linkSync, unlinkSync, writeFileSync } from "node:fs";
import { opendir, readdir } from "node:fs/promises";
import type { Dirent } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { CONTEXT_LIMITS, HookInvocationSchema, truncateText } from "../contract/contract.js";
import { MAX_ENV_VALUE_BYTES, RunResultSchema, utf8Length } from "../contract/hook-run.js";
import type { IdleNotification, Task } from "../contract/team-files.js";
import type { HookInvocation } from "../contract/contract.js";
import { HooksError, describeError, errnoCode } from "../contract/errors.js";
import { type FileProblemKind, mkdirUnder, problemDetail, readRegularFile } from "../team/json-file.js";
import { fileProblem } from "../text/messages.js";
import { hookLogsDir, isTempOrLock, sanitizeName } from "../team/paths.js";
import { filterSliced, sortSliced } from "./slices.js";

/**
 * What fired the event a log is of: `leader` (the leader watching the team, in `watch` or in pi, or a
 * held gate's decision applied for it), `hand` (`pi-teams-hooks run`, or the decision of a gate `run`
 * held). A log without the field (written before it existed) is the leader's.
 */
export const HOOK_TRIGGERS = ["leader", "hand"] as const;
export type HookTrigger = (typeof HOOK_TRIGGERS)[number];

/**
 * One log file. Loose at every level this project writes, so that a file written by a later version
 * (extra fields in the record, the invocation, the result or the policy) reads back with them kept.
 */
export const HookLogRecordSchema = z.looseObject({
  invocation: HookInvocationSchema.loose(),
  result: RunResultSchema.loose(),
  /** The event key (contract/events.ts) the ledger dedupes on. */
  key: z.string().optional(),
  /** When the run started (ISO 8601); the file name is built from it. */
  startedAt: z.iso.datetime({ offset: true }),
  /** True when this run repeats an event key already run (a `replay`, or a retry after a crash). */
  retry: z.boolean().optional(),
  /**
   * What fired the event (`HOOK_TRIGGERS`); absent: `leader`. `hand` runs are left out of `logs stats`
   * and the dashboard's figures unless asked for.
   */
  trigger: z.enum(HOOK_TRIGGERS).optional(),
  /**
   * What the hook was shown when it was not the whole context document (a projection, a confidential
   * team's handler): `projection` (the fields), `confidential`, and the document's `bytes` and `sha256`.
   */
  shown: z
    .looseObject({
      projection: z.array(z.string()).optional(),
      confidential: z.boolean().optional(),
      bytes: z.number().int().nonnegative(),
      sha256: z.string(),
    })
    .optional(),
  /** Filled by the policy step: the action chosen and what it did. */
  policy: z.looseObject({}).optional(),
  /** A held gate (the run answered `defer`): its deferral as written to hook-state/deferrals/ (deferrals/record.ts). */
  deferral: z.looseObject({}).optional(),
  /**
   * The record of a decision that settled a held gate: which deferred run and log it names, what was
   * decided, by whom, when, and how long the gate was held (`waitedMs`).
   */
  decision: z.looseObject({}).optional(),
  /**
   * The parts of the record the log keeps shorter than they were, so that it stays readable
   * (`boundedRecord`): `invocation.completedTask.metadata`, `invocation.notification`, or a top-level
   * field in which long strings were cut. Absent when nothing was.
   */
  shortened: z.array(z.string()).optional(),
});
export type HookLogRecord = z.infer<typeof HookLogRecordSchema>;
export type HookLogRecordInput = z.input<typeof HookLogRecordSchema>;

/** A log as listed: its absolute path and its base name (`2024-…Z_task_completed_task-3.json`). */
export interface HookLogEntry {
  file: string;
  name: string;
}

/** team/json-file.ts's `FileProblemKind`, so that callers can treat both alike. */
type HookLogProblemKind = FileProblemKind;

/** Why one file is not a log. `message` is the one line to show: file, field, problem, consequence. */
export interface HookLogProblem {
  file: string;
  kind: HookLogProblemKind;
  /** Dotted path of the first bad field (`result.exitCode`), or `(root)`; absent unless `invalid`. */
  field?: string;
  message: string;
}

type HookLogRead = { ok: true; file: string; record: HookLogRecord } | { ok: false; problem: HookLogProblem };

/** Same-stem names tried before giving up: only a runaway writer gets that far. */
const MAX_COLLISIONS = 100_000;
/** A log is tens of kilobytes; anything this big in the dir is not one of ours. */
const MAX_LOG_BYTES = 32 * 1024 * 1024;
/**
 * What a log keeps of a task's metadata and of an idle notification's fields, as JSON: as much as
 * `PI_TEAMS_HOOK_CONTEXT_JSON` may carry. The contract puts no bound on either; a log must stay readable.
 */
const LOG_METADATA_BYTES = MAX_ENV_VALUE_BYTES;
/**
 * The most a log is written with (its strings longer than LOG_STRING_FLOOR cut until it fits): far below
 * MAX_LOG_BYTES, and within the size logs/query.ts reads on its fast path.
 */
export const MAX_WRITTEN_LOG_BYTES = 1024 * 1024;
/** Strings this short are never cut to fit a log: ids, times, names, enum values. */
const LOG_STRING_FLOOR = 256;
/** Suffix values (task id, member name) are cut so that a name stays far below 255 bytes. */
const MAX_SUFFIX_CHARS = 64;

/**
 * The file name without `.json`: `<startedAt as UTC ISO, ":" and "." → "-">_<event>[_<suffix>]`.
 * The suffix is `task-<id>` when there is a task, else `member-<name>` when the member is known.
 * Throws E_INTERNAL when `startedAt` is not a date: the caller built the record wrong.
 */
function hookLogStem(record: { startedAt: string; invocation: HookInvocation }): string {
  const started = new Date(record.startedAt);
  if (Number.isNaN(started.getTime())) {
    throw new HooksError("E_INTERNAL", `hook log: startedAt is not a date: ${JSON.stringify(record.startedAt)}`);
  }
  // Normalised to UTC so that names of runs started in different offsets still sort in time order.
  const time = started.toISOString().replace(/[:.]/g, "-");
  const suffix = logSuffix(record.invocation);
  return suffix ? `${time}_${record.invocation.event}_${suffix}` : `${time}_${record.invocation.event}`;
}

function logSuffix(invocation: HookInvocation): string | null {
  const cut = (value: string): string => sanitizeName(value).slice(0, MAX_SUFFIX_CHARS);
  if (invocation.completedTask) return `task-${cut(invocation.completedTask.id)}`;
  if (invocation.memberName) return `member-${cut(invocation.memberName)}`;
  return null;
}

/**
 * The next collision number to try per `<dir>/<stem>` in this process. Claimed synchronously, so a
 * burst of same-millisecond logs in one process tries distinct names instead of re-probing each
 * taken one. Only a hint: `link` below is what guarantees uniqueness, also against other processes.
 */
const nextNumber = new Map<string, number>();

function claimNumber(key: string): number {
  const n = nextNumber.get(key) ?? 1;
  if (nextNumber.size > 1_000) nextNumber.clear(); // stems are per millisecond: old ones never recur
  nextNumber.set(key, n + 1);
  return n;
}

/**
 * Writes `record` as a new log file and returns its path. The content is complete before the name
 * appears: it goes to a temp file first (ignored by readers: `.…tmp.…`), which is then hard-linked to
 * the final name. `link` fails with EEXIST instead of replacing, which `rename` would silently do, so
 * a taken name moves on to `<stem>_2.json`, `_3`, … — atomic across processes without a lock.
 * No reader ever sees half a log. No fsync: after a power cut a log may be lost or empty, which is
 * acceptable for a log, and `readHookLog` reports an empty one as a problem. The file operations are
 * synchronous behind the async signature: a log is written after every event, and a thread-pool round
 * trip per call costs more than the small write itself (docs/performance.md).
 */
export async function writeHookLog(
  teamDir: string,
  record: HookLogRecordInput,
  opts: { file?: string | null } = {},
): Promise<string> {
  const dir = hookLogsDir(teamDir);
  const stem = hookLogStem(record);
  const body = logBody(boundedRecord(record));
  const tmp = path.join(dir, `.${stem}.tmp.${process.pid}.${randomBytes(6).toString("hex")}`);
  mkdirUnder(teamDir, dir);
  try {
    writeFileSync(tmp, body, { flag: "wx" });
  } catch (cause) {
    removeTemp(tmp);
    throw new HooksError("E_IO", `cannot write hook log in ${dir}: ${describeError(cause)}`, { cause });
  }
  try {
    if (opts.file) {
      // The name planned for it (planHookLogFile), already quoted in messages: taken if still free.
      try {
        linkSync(tmp, opts.file);
        return opts.file;
      } catch (cause) {
        if (errnoCode(cause) !== "EEXIST")
          throw new HooksError("E_IO", `cannot create hook log ${opts.file}: ${describeError(cause)}`, { cause });
      }
    }
    return firstName(dir, stem, (final) => {
      try {
        linkSync(tmp, final);
        return true;
      } catch (cause) {
        if (errnoCode(cause) === "EEXIST") return false;
        throw new HooksError("E_IO", `cannot create hook log ${final}: ${describeError(cause)}`, { cause });
      }
    });
  } finally {
    removeTemp(tmp);
  }
}

const logBody = (record: HookLogRecordInput): string => `${JSON.stringify(record, null, 2)}\n`;

// ---------------------------------------------------------------------------------------------
// What a log keeps

/**
 * The record as its log keeps it. The task is kept as the context document shows it to a hook: the
 * subject, the description and the links within the document's limits (contract.ts CONTEXT_LIMITS,
 * cut the same way; a follow-up's quoted output is kept as written, where a hook is shown one line in
 * its place), and no field the contract does not name. Its metadata, and an idle notification's fields,
 * keep LOG_METADATA_BYTES of JSON: the longest strings are cut first (each ending in `…`), as
 * `PI_TEAMS_HOOK_CONTEXT_JSON` is shrunk, and what still does not fit is dropped (`{}`; of a
 * notification, the fields the contract does not name). Last, a log over MAX_WRITTEN_LOG_BYTES has its
 * longest strings cut wherever they are. `shortened` names what was cut beyond what the hook was shown.
 */
function boundedRecord(record: HookLogRecordInput): HookLogRecordInput {
  const shortened: string[] = [];
  const task = record.invocation.completedTask;
  const notification = record.invocation.notification;
  const invocation = {
    ...record.invocation,
    ...(task ? { completedTask: loggedTask(task, shortened) } : {}),
    ...(notification ? { notification: loggedNotification(notification, shortened) } : {}),
  };
  const bounded: HookLogRecordInput = { ...record, invocation, ...(shortened.length > 0 ? { shortened } : {}) };
  if (utf8Length(logBody(bounded)) <= MAX_WRITTEN_LOG_BYTES) return bounded;
  // Only a record whose other parts are huge gets here (a task id, a member name, a policy's errors).
  // Measured with the longest `shortened` it can get (every top-level key), which is added after.
  const fits = (r: HookLogRecordInput): boolean =>
    utf8Length(logBody({ ...r, shortened: [...shortened, ...Object.keys(r)] })) <= MAX_WRITTEN_LOG_BYTES;
  const fitted = cutLongestStrings(bounded, fits, { floor: LOG_STRING_FLOOR, budget: MAX_WRITTEN_LOG_BYTES });
  return { ...fitted.value, shortened: [...new Set([...shortened, ...fitted.cutKeys])] };
}

function loggedTask(task: Task, shortened: string[]): Task {
  const kept: Task = {
    id: task.id,
    subject: truncateText(task.subject, CONTEXT_LIMITS.subject),
    description: truncateText(task.description, CONTEXT_LIMITS.description),
    ...(task.owner === undefined ? {} : { owner: task.owner }),
    status: task.status,
    blocks: task.blocks.slice(0, CONTEXT_LIMITS.links),
    blockedBy: task.blockedBy.slice(0, CONTEXT_LIMITS.links),
    createdAt: task.createdAt,
    updatedAt: task.updatedAt,
  };
  if (task.metadata === undefined) return kept;
  const fitted = fitJson(task.metadata, LOG_METADATA_BYTES);
  if (fitted.cut) shortened.push("invocation.completedTask.metadata");
  return { ...kept, metadata: fitted.value ?? {} };
}

function loggedNotification(note: IdleNotification, shortened: string[]): IdleNotification {
  const { type, from, timestamp, completedTaskId, completedStatus, failureReason, ...rest } = note;
  const named: IdleNotification = {
    type,
    from,
    timestamp,
    ...(completedTaskId === undefined ? {} : { completedTaskId }),
    ...(completedStatus === undefined ? {} : { completedStatus }),
    ...(failureReason === undefined
      ? {}
      : {
          failureReason: truncateText(failureReason, CONTEXT_LIMITS.failureReason),
        }),
  };
  const fitted = fitJson(rest, LOG_METADATA_BYTES - utf8Length(JSON.stringify(named)));
  if (fitted.cut) shortened.push("invocation.notification");
  return { ...named, ...fitted.value };
}

/** `value` within `maxBytes` of JSON: its longest strings cut; null (dropped) when that is not enough. */
function fitJson<T extends Record<string, unknown>>(value: T, maxBytes: number): { value: T | null; cut: boolean } {
  const fits = (v: unknown): boolean => utf8Length(JSON.stringify(v)) <= maxBytes;
  if (fits(value)) return { value, cut: false };
  const fitted = cutLongestStrings(value, fits, { floor: 1, budget: maxBytes });
  return { value: fits(fitted.value) ? fitted.value : null, cut: true };
}

/**
 * `value` with every string longer than the longest length that fits (found by bisection, between
 * `floor` and `budget` characters: no longer string can fit) cut to that length, so the longest strings
 * are cut first and most, as in contract/hook-run.ts, in a few rounds however many strings there are.
 * When even `floor` does not fit, the cut to `floor`. `cutKeys`: the top-level keys a cut was under.
 */
function cutLongestStrings<T>(
  value: T,
  fits: (v: T) => boolean,
  bounds: { floor: number; budget: number },
): { value: T; cutKeys: Set<string> } {
  const cutTo = (limit: number): { value: T; cutKeys: Set<string> } => {
    const cutKeys = new Set<string>();
    return { value: cutStrings(value, limit, null, cutKeys) as T, cutKeys };
  };
  // Most of a value that does not fit even so is structure (keys, entries), which no cut shrinks:
  // one walk instead of a bisection's twenty over something that large.
  const least = cutTo(bounds.floor);
  if (!fits(least.value)) return least;
  let best = least;
  // Monotonic: a longer limit never gives less JSON.
  for (let low = bounds.floor + 1, high = Math.min(longestString(value) - 1, bounds.budget); low <= high; ) {
    const mid = Math.floor((low + high) / 2);
    const cut = cutTo(mid);
    if (fits(cut.value)) [best, low] = [cut, mid + 1];
    else high = mid - 1;
  }
  return best;
}

function longestString(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (value === null || typeof value !== "object") return 0;
  let longest = 0;
  for (const item of Object.values(value)) longest = Math.max(longest, longestString(item));
  return longest;
}

/** A copy of `value` with every string longer than `limit` cut to it; `top`: the top-level key it is under. */
function cutStrings(value: unknown, limit: number, top: string | null, cutKeys: Set<string>): unknown {
  if (typeof value === "string") {
    if (value.length <= limit) return value;
    if (top !== null) cutKeys.add(top);
    return truncateText(value, limit);
  }
  if (Array.isArray(value)) return value.map((item) => cutStrings(item, limit, top, cutKeys));
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const cut = cutStrings(item, limit, top ?? key, cutKeys);
    // defineProperty: a key like `__proto__` (metadata is anyone's JSON) stays a plain own property.
    Object.defineProperty(out, key, { value: cut, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/**
 * The name a log will get, chosen before it is written: the policy's messages quote it ("Hook log: …")
 * and are sent before the log exists (the log is written last: its presence means the event is done).
 * The name is claimed in this process and skips names already on disk; `writeHookLog(…, { file })`
 * then takes it. Only another process writing a log of the same millisecond, event and task between
 * the two calls can take it first, and then the log moves to the next free name.
 */
export function planHookLogFile(teamDir: string, record: { startedAt: string; invocation: HookInvocation }): string {
  return firstName(hookLogsDir(teamDir), hookLogStem(record), (file) => !existsSync(file));
}

/** `<stem>.json`, `<stem>_2.json`, … (numbers claimed in this process): the first that `take` accepts. */
function firstName(dir: string, stem: string, take: (file: string) => boolean): string {
  const hintKey = path.join(dir, stem);
  for (let attempt = 0; attempt < MAX_COLLISIONS; attempt++) {
    const n = claimNumber(hintKey);
    const file = path.join(dir, n === 1 ? `${stem}.json` : `${stem}_${n}.json`);
    if (take(file)) return file;
  }
  throw new HooksError("E_IO", `cannot name a hook log: ${MAX_COLLISIONS} names tried for ${stem} in ${dir}`);
}

function removeTemp(tmp: string): void {
  try {
    unlinkSync(tmp);
  } catch {
    // ENOENT: it was never created. Anything else leaves a hidden `.tmp.` file that listing ignores.
  }
}

/** True for a name `listHookLogs` reports: `*.json`, not hidden, not a temp or lock file. */
export function isHookLogName(name: string): boolean {
  return name.endsWith(".json") && !name.startsWith(".") && !isTempOrLock(name);
}

/**
 * Sort key of a log name: every run of digits padded to a fixed width, so that plain string order is
 * time order and puts `…_10.json` after `…_9.json` (plain name order would not). Fixed-width fields
 * of the timestamp are unchanged relative to each other.
 */
function sortKey(name: string): string {
  return name.replace(/\d+/g, (digits) => digits.padStart(12, "0"));
}

/** Two log names in the folder's order (by `sortKey`): for a cursor that must agree with the listing. */
export function compareHookLogNames(a: string, b: string): number {
  const [ka, kb] = [sortKey(a), sortKey(b)];
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/**
 * The logs of a team, oldest first, by name only (no file is opened). `limit` keeps the newest
 * `limit`. A missing `hook-logs/` is an empty list; an unreadable one throws E_IO.
 */
export async function listHookLogs(teamDir: string, opts: { limit?: number } = {}): Promise<HookLogEntry[]> {
  const dir = hookLogsDir(teamDir);
  const names = await listHookLogNames(teamDir);
  const limit = opts.limit === undefined ? names.length : Math.max(0, Math.floor(opts.limit));
  return names.slice(Math.max(0, names.length - limit)).map((name) => ({ file: hookLogFile(dir, name), name }));
}

/**
 * The names `listHookLogs` lists, in its order, without an object per file (`logs` lists 10,000).
 * `inSlices`: read the folder in batches of 1,024 entries, each its own turn of the event loop (a
 * server's): one `readdir` of 100,000 names holds the loop some 30 ms while their objects are made,
 * a batch at most a few, for about twice the total time; and sort them in slices (logs/slices.ts).
 */
export async function listHookLogNames(teamDir: string, opts: { inSlices?: boolean } = {}): Promise<string[]> {
  const dir = hookLogsDir(teamDir);
  const names: string[] = [];
  const take = (dirent: Dirent): void => {
    if ((dirent.isFile() || dirent.isSymbolicLink()) && isHookLogName(dirent.name)) names.push(dirent.name);
  };
  try {
    if (opts.inSlices) for await (const dirent of await opendir(dir, { bufferSize: 1024 })) take(dirent);
    else for (const dirent of await readdir(dir, { withFileTypes: true })) take(dirent);
  } catch (cause) {
    if (errnoCode(cause) === "ENOENT") return [];
    throw new HooksError("E_IO", `cannot list hook logs in ${dir}: ${describeError(cause)}`, { cause });
  }
  return opts.inSlices ? sortHookLogNamesSliced(names) : sortHookLogNames(names);
}

/** `path.join(dir, name)` for a normalised `dir` (`hook-logs/`) and a log's name, minus the normalising. */
export function hookLogFile(dir: string, name: string): string {
  return `${dir}${path.sep}${name}`;
}

/** The time stamp every name `hookLogStem` makes starts with: `2026-03-01T09-12-44-046Z`. */
const STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z/;
const STAMP_CHARS = 24;

/**
 * Sorts by `sortKey` (stable). When every name starts with a stamp, plain order already is that
 * order except between equal stamps (the stamp's digit runs have fixed widths, and the `Z` ends
 * them), and names of one stamp are next to each other in plain order: a plain sort, then keys built
 * for those runs alone (`fixSameStamps`) — several times quicker for 100,000 names.
 */
function sortHookLogNames(names: string[]): string[] {
  if (!names.every((name) => STAMP.test(name))) return names.sort(byKeyOf(new Map()));
  return fixSameStamps(names.sort(plainOrder));
}

/** `sortHookLogNames` in slices of a server's event loop (logs/slices.ts `sortSliced`). */
async function sortHookLogNamesSliced(names: string[]): Promise<string[]> {
  const stamped = await filterSliced(names, (name) => STAMP.test(name));
  if (stamped.length !== names.length) return sortSliced(names, byKeyOf(new Map()));
  return fixSameStamps(await sortSliced(names, plainOrder));
}

function plainOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Compares by `sortKey`, each name's key made once (in `keys`). */
function byKeyOf(keys: Map<string, string>): (a: string, b: string) => number {
  const key = (name: string): string => {
    let k = keys.get(name);
    if (k === undefined) {
      k = sortKey(name);
      keys.set(name, k);
    }
    return k;
  };
  return (a, b) => plainOrder(key(a), key(b));
}

/** Names in plain order, each run of one stamp put in `sortKey` order (`…_9` before `…_10`). */
function fixSameStamps(names: string[]): string[] {
  const byKey = byKeyOf(new Map());
  for (let start = 0; start < names.length; ) {
    const stamp = (names[start] as string).slice(0, STAMP_CHARS);
    let end = start + 1;
    while (end < names.length && (names[end] as string).startsWith(stamp)) end++;
    if (end - start > 1) {
      const run = names.slice(start, end).sort(byKey);
      for (let k = 0; k < run.length; k++) names[start + k] = run[k] as string;
    }
    start = end;
  }
  return names;
}

/** Reads and validates one log. A missing, corrupt or foreign file is a problem, never a throw. */
export async function readHookLog(file: string, opts: { maxBytes?: number } = {}): Promise<HookLogRead> {
  // A FIFO or a device in hook-logs/ is refused unread: it must not hang `logs` or a leader's recovery.
  const read = readRegularFile(file, { maxBytes: Math.min(opts.maxBytes ?? MAX_LOG_BYTES, MAX_LOG_BYTES) });
  if (!read.ok) return problem(file, read.problem.kind, undefined, problemDetail(read.problem));
  const text = read.text;
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (cause) {
    return problem(file, "invalid_json", undefined, `not JSON (${describeError(cause)})`);
  }
  const parsed = HookLogRecordSchema.safeParse(data);
  if (parsed.success) return { ok: true, file, record: parsed.data };
  const [first, ...rest] = parsed.error.issues;
  const where = first && first.path.length > 0 ? fieldPath(first.path) : "(root)";
  const got = first ? valueAt(data, first.path) : undefined;
  const detail = `${first?.message ?? "not a hook log"}${got === undefined ? "" : ` (got ${preview(got)})`}`;
  const more = rest.length > 0 ? ` (and ${rest.length} more problem${rest.length > 1 ? "s" : ""})` : "";
  return problem(file, "invalid", where, `${detail}${more}`);
}

function problem(file: string, kind: HookLogProblemKind, field: string | undefined, detail: string): HookLogRead {
  const message = fileProblem(file, field ?? "", detail, "log skipped");
  return { ok: false, problem: field === undefined ? { file, kind, message } : { file, kind, field, message } };
}

/** `["result", "exitCode"]` → `result.exitCode`; `["invocation", "completedTask", "blocks", 1]` → `….blocks[1]`. */
function fieldPath(segments: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const segment of segments) {
    if (typeof segment === "number") out += `[${segment}]`;
    else out += out ? `.${String(segment)}` : String(segment);
  }
  return out;
}

function valueAt(root: unknown, at: ReadonlyArray<PropertyKey>): unknown {
  let node: unknown = root;
  for (const key of at) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

function preview(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 60 ? `${json.slice(0, 59)}…` : json;
}
