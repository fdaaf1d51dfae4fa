/**
 * One hook log record as `logs` sees it: its outcome, its task, and a quick check that a parsed file
 * is a record. Pure, and free of zod at run time on purpose: loading zod and the contract's schemas
 * costs a fresh `logs` process about 150 ms, more than the default view spends on everything else,
 * and running the full schema over 10,000 files costs as much again (docs/logs.md, "Performance").
 *
 * `checkLogRecord` is a copy of `HookLogRecordSchema` (runner/hook-log.ts) for what the project writes, and
 * it must never disagree with it: a value it accepts is one the schema accepts, returned as the
 * schema would return it (each object's schema keys first in schema order, then the others in file
 * order; the value itself when it is in that order already). For anything it is not sure of it says `null`, and the caller asks `readHookLog`, which
 * runs the schema and names the file and field of a bad record. test/unit/logs-record.test.ts holds
 * the copy to the schema (its keys, its enums, and probes of every field).
 */
import type { HookEventName } from "../contract/contract.js";
import type { RunResult } from "../contract/hook-run.js";
import type { HookLogRecord } from "../runner/hook-log.js";

/** contract.ts `HOOK_EVENTS` (copied to keep zod out of `logs`; a unit test keeps them equal). */
export const LOG_EVENTS: readonly HookEventName[] = ["task_completed", "task_failed", "idle", "task_started"];

/** runner/hook-log.ts `HOOK_TRIGGERS` (copied to keep zod out of `logs`; a unit test keeps them equal). */
export const LOG_TRIGGERS = ["leader", "hand"] as const;
export type LogTrigger = (typeof LOG_TRIGGERS)[number];

/** What fired a log's event: its `trigger`, and `leader` for a log written before there was one. */
export function triggerOf(record: Pick<HookLogRecord, "trigger">): LogTrigger {
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

// ---------------------------------------------------------------------------------------------
// The quick check

/** "Not sure": the schema decides. */
const UNSURE = Symbol("unsure");
/** Returns the value as the schema would return it, or UNSURE. */
type Check = (value: unknown) => unknown;

const string: Check = (v) => (typeof v === "string" ? v : UNSURE);
const boolean: Check = (v) => (typeof v === "boolean" ? v : UNSURE);
const number: Check = (v) => (typeof v === "number" && Number.isFinite(v) ? v : UNSURE);
/** `z.number().int()`, and `.nonnegative()` with `min` 0. */
const int =
  (min = Number.NEGATIVE_INFINITY): Check =>
  (v) =>
    typeof v === "number" && Number.isSafeInteger(v) && v >= min ? v : UNSURE;
const nullable =
  (check: Check): Check =>
  (v) =>
    v === null ? null : check(v);
const oneOf = (values: readonly unknown[]): Check => {
  const set = new Set(values);
  return (v) => (set.has(v) ? v : UNSURE);
};
const arrayOf =
  (check: Check): Check =>
  (v) => {
    if (!Array.isArray(v)) return UNSURE;
    for (const item of v) if (check(item) !== item) return UNSURE; // elements here are strings: kept as they are
    return v;
  };
/** `startedAt`: only `Date#toISOString()`'s own form, which `z.iso.datetime({offset: true})` accepts; other valid forms are UNSURE. */
const isoInstant: Check = (v) =>
  typeof v === "string" && v.length === 24 && v[23] === "Z" && !Number.isNaN(Date.parse(v)) && new Date(v).toISOString() === v ? v : UNSURE;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `z.record(z.string(), z.unknown())`: any object, its keys in file order (so: itself). */
const record: Check = (v) => (isObject(v) && !Object.hasOwn(v, "__proto__") ? v : UNSURE);

/** A field of a loose object: its check, and whether it may be absent. */
type Field = readonly [check: Check, optional?: "optional"];

/**
 * `z.looseObject(shape)`: the shape's keys in shape order, then every other key in file order. That
 * is the value itself when the file already has that order (what hook-log.ts writes), else a copy.
 * An own `__proto__` key (the schema drops it) is UNSURE.
 */
function looseObject(shape: Readonly<Record<string, Field>>): Check {
  const keys = Object.keys(shape);
  const checks = keys.map((key) => shape[key]?.[0] ?? (() => UNSURE));
  const optional = keys.map((key) => shape[key]?.[1] === "optional");
  const inShape = new Set(keys);
  /** True when the shape's keys that `v` has come first, in shape order. */
  const inOrder = (v: Record<string, unknown>): boolean => {
    let next = 0;
    let past = false; // past the shape's keys: only others may follow
    for (const key in v) {
      if (!inShape.has(key)) {
        past = true;
        continue;
      }
      if (past) return false;
      while (next < keys.length && keys[next] !== key) next++;
      if (next === keys.length) return false;
      next++;
    }
    return true;
  };
  return (v) => {
    if (!isObject(v) || Object.hasOwn(v, "__proto__")) return UNSURE;
    let same = true;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] ?? "";
      const value = v[key]; // JSON has no undefined: undefined is absent
      if (value === undefined && !(key in v)) {
        if (optional[i]) continue;
        return UNSURE;
      }
      const checked = checks[i]?.(value);
      if (checked === UNSURE) return UNSURE;
      if (checked !== value) same = false;
    }
    if (same && inOrder(v)) return v;
    const out: Record<string, unknown> = {};
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] ?? "";
      if (key in v) out[key] = checks[i]?.(v[key]); // checked above: pure, and rare (a reordered file)
    }
    for (const key in v) if (!inShape.has(key)) out[key] = v[key];
    return out;
  };
}

const optional = "optional";

/** contract/team-files.ts `TaskSchema`. */
const TASK = {
  id: [string],
  subject: [string],
  description: [string],
  owner: [nullable(string), optional], // nullish
  status: [oneOf(["pending", "in_progress", "completed"])],
  blocks: [arrayOf(string)],
  blockedBy: [arrayOf(string)],
  metadata: [record, optional],
  createdAt: [string],
  updatedAt: [string],
} as const satisfies Record<string, Field>;

/** contract/team-files.ts `IdleNotificationSchema`. */
const NOTIFICATION = {
  type: [oneOf(["idle_notification"])],
  from: [string],
  timestamp: [string],
  completedTaskId: [string, optional],
  completedStatus: [oneOf(["completed", "failed"]), optional],
  failureReason: [string, optional],
} as const satisfies Record<string, Field>;

/** contract.ts `HookInvocationSchema`, loose as runner/hook-log.ts reads it. */
const INVOCATION = {
  event: [oneOf(LOG_EVENTS)],
  teamId: [string],
  teamDir: [string],
  taskListId: [string],
  style: [string],
  memberName: [string, optional],
  timestamp: [string, optional],
  completedTask: [nullable(looseObject(TASK))],
  notification: [looseObject(NOTIFICATION), optional],
} as const satisfies Record<string, Field>;

/** contract/hook-run.ts `RunResultSchema`'s `verdict`. */
const VERDICT = {
  decision: [oneOf(["allow", "deny", "defer", "patch"])],
  code: [string, optional],
  reason: [string, optional],
  message: [string, optional],
  patch: [looseObject({}), optional],
  source: [oneOf(["file", "stdout", "http", "decision", "claude"])],
} as const satisfies Record<string, Field>;

/** contract/hook-run.ts `RunResultSchema`'s `http`. */
const HTTP = {
  url: [string],
  status: [nullable(int())],
  statusText: [string, optional],
  body: [oneOf(["verdict", "empty", "malformed"]), optional],
  missingSecrets: [arrayOf(string), optional],
  signed: [boolean, optional],
  resent: [boolean, optional],
} as const satisfies Record<string, Field>;

/** contract/hook-run.ts `RunResultSchema`'s `shadow`. */
const SHADOW = {
  outcome: [oneOf(["passed", "failed", "error", "deferred"])],
  errorKind: [string, optional],
  error: [string, optional],
  wouldDeny: [boolean],
} as const satisfies Record<string, Field>;

/** contract/hook-run.ts `RunResultSchema`'s `trustProblems` entries. */
const TRUST_PROBLEM = {
  kind: [string],
  path: [string],
  reason: [string],
} as const satisfies Record<string, Field>;

/** contract/hook-run.ts `RunResultSchema`, loose as runner/hook-log.ts reads it. */
const RESULT = {
  ran: [boolean],
  hookPath: [string, optional],
  command: [arrayOf(string), optional],
  outcome: [oneOf(["passed", "failed", "error", "deferred"])],
  exitCode: [nullable(int())],
  signal: [nullable(string)],
  timedOut: [boolean],
  durationMs: [number],
  stdout: [string],
  stderr: [string],
  stdoutDroppedBytes: [int(0)],
  stderrDroppedBytes: [int(0)],
  error: [string, optional],
  errorCode: [string, optional],
  leftoverProcesses: [int(0)],
  contextTruncated: [boolean],
  errorKind: [
    oneOf(["spawn", "timeout", "signal", "invalid_verdict", "limit", "stopped", "internal", "untrusted_hook", "gate_missing", "gate_not_executable", "insecure_hook", "http", "defer_expired", "unexpected_exit", "hook_settings"]),
    optional,
  ],
  verdict: [looseObject(VERDICT), optional],
  patchApplied: [arrayOf(string), optional],
  patchRejected: [arrayOf(string), optional],
  patchIgnored: [string, optional],
  http: [looseObject(HTTP), optional],
  runId: [string],
  hookSettings: [string, optional],
  skipped: [string, optional],
  shadow: [looseObject(SHADOW), optional],
  nonBlocking: [string, optional],
  redactions: [int(0), optional],
  contractVersion: [oneOf([1])],
  hookSha256: [string, optional],
  trustedSha256: [string, optional],
  trustProblems: [arrayOf(looseObject(TRUST_PROBLEM)), optional],
} as const satisfies Record<string, Field>;

/** hook-log.ts `HookLogRecordSchema`'s `shown`. */
const SHOWN = {
  projection: [arrayOf(string), optional],
  confidential: [boolean, optional],
  bytes: [int(0)],
  sha256: [string],
} as const satisfies Record<string, Field>;

/** hook-log.ts `HookLogRecordSchema`. */
const RECORD = {
  invocation: [looseObject(INVOCATION)],
  result: [looseObject(RESULT)],
  key: [string, optional],
  startedAt: [isoInstant],
  retry: [boolean, optional],
  trigger: [oneOf(LOG_TRIGGERS), optional],
  shown: [looseObject(SHOWN), optional],
  policy: [looseObject({}), optional],
  deferral: [looseObject({}), optional],
  decision: [looseObject({}), optional],
  shortened: [arrayOf(string), optional],
} as const satisfies Record<string, Field>;

/** The keys of each object the check rebuilds, in order: what the unit test compares with the schemas. */
export const CHECKED_KEYS = Object.freeze({
  record: Object.keys(RECORD),
  invocation: Object.keys(INVOCATION),
  task: Object.keys(TASK),
  result: Object.keys(RESULT),
  verdict: Object.keys(VERDICT),
});

const checkRecord = looseObject(RECORD);

/**
 * `data` (parsed JSON) as `HookLogRecordSchema.parse` would return it (`data` itself, or a copy in
 * the schema's key order), or null when this check is not sure: then only the schema
 * (`readHookLog`) can say whether it is a log, and why not.
 */
export function checkLogRecord(data: unknown): HookLogRecord | null {
  const checked = checkRecord(data);
  return checked === UNSURE ? null : (checked as HookLogRecord);
}
