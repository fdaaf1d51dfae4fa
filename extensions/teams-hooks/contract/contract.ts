/**
 * The hook contract, version 1: event names, file formats as zod schemas (the only source of their
 * TypeScript types), and the pure functions that build what a hook receives. No I/O here: clock, ids
 * and the environment are arguments. docs/hook-contract.md describes the same contract in prose, and a
 * golden test holds the two together.
 */
import { z } from "zod";

/** Raised only for breaking changes: see docs/hook-contract.md, "Compatibility". */
export const HOOK_CONTRACT_VERSION = 1 as const;

export const HOOK_EVENTS = ["task_completed", "task_failed", "idle"] as const;
export type HookEventName = (typeof HOOK_EVENTS)[number];
export const HookEventNameSchema = z.enum(HOOK_EVENTS);

/** The file base name looked up in the hooks dir for each event. */
export const HOOK_BASE_NAMES: Readonly<Record<HookEventName, string>> = Object.freeze({
  task_completed: "on_task_completed",
  task_failed: "on_task_failed",
  idle: "on_idle",
});

export function isTaskEvent(event: HookEventName): event is "task_completed" | "task_failed" {
  return event !== "idle";
}

/** Limits of the context document (characters, entries). Lowering one needs contract version 2. */
export const CONTEXT_LIMITS = Object.freeze({ subject: 1_000, description: 8_000, links: 200 });

/** `PI_TEAMS_HOOK_CONTEXT_JSON` and every other single variable stay below this many UTF-8 bytes. */
export const MAX_ENV_VALUE_BYTES = 100 * 1024;

/** The mark left where text was cut (U+2026). */
export const ELLIPSIS = "\u2026";

export const DEFAULT_TIMEOUT_MS = 60_000;
/** Captured stdout / stderr keep this many characters each. */
export const OUTPUT_LIMIT_CHARS = 12_000;

// ---------------------------------------------------------------------------------------------
// Files of the team directory

export const TASK_STATUSES = ["pending", "in_progress", "completed"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

const Metadata = z.record(z.string(), z.unknown());

/** One task file. Loose: unknown fields pass through and survive a rewrite. */
export const TaskSchema = z.looseObject({
  id: z.string(),
  subject: z.string(),
  description: z.string(),
  owner: z.string().nullish(),
  status: z.enum(TASK_STATUSES),
  blocks: z.array(z.string()),
  blockedBy: z.array(z.string()),
  metadata: Metadata.optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Task = z.infer<typeof TaskSchema>;

export const FAILURE_ACTIONS = ["warn", "followup", "reopen", "reopen_followup"] as const;
export type FailureAction = (typeof FAILURE_ACTIONS)[number];
export const FOLLOWUP_OWNERS = ["member", "lead", "none"] as const;
export type FollowupOwner = (typeof FOLLOWUP_OWNERS)[number];

/**
 * `config.json`. Every field may be missing (DESIGN.md defaults apply), and the `hooks` values are
 * checked one by one by options.ts so that one bad value costs a warning, not the whole file.
 */
export const TeamConfigSchema = z.looseObject({
  version: z.unknown().optional(),
  teamId: z.unknown().optional(),
  taskListId: z.unknown().optional(),
  leadName: z.unknown().optional(),
  style: z.unknown().optional(),
  hooks: z
    .looseObject({
      failureAction: z.unknown().optional(),
      maxReopensPerTask: z.unknown().optional(),
      followupOwner: z.unknown().optional(),
    })
    .optional(),
  createdAt: z.unknown().optional(),
  updatedAt: z.unknown().optional(),
  members: z.unknown().optional(),
});
export type TeamConfigFile = z.infer<typeof TeamConfigSchema>;

/** Who the team is, as the hook sees it. */
export const TeamIdentitySchema = z.object({
  teamId: z.string(),
  teamDir: z.string(),
  taskListId: z.string(),
  leadName: z.string(),
  style: z.string(),
});
export type TeamIdentity = z.infer<typeof TeamIdentitySchema>;

/** One message in a mailbox file (a JSON array of these). Loose, for the same reason as tasks. */
export const MailboxMessageSchema = z.looseObject({
  from: z.string(),
  text: z.string(),
  timestamp: z.string(),
  read: z.boolean(),
  color: z.string().optional(),
  urgent: z.boolean().optional(),
});
export type MailboxMessage = z.infer<typeof MailboxMessageSchema>;
export const MailboxSchema = z.array(z.unknown());

/** The JSON inside an idle message's `text`. */
export const IdleNotificationSchema = z.looseObject({
  type: z.literal("idle_notification"),
  from: z.string(),
  timestamp: z.string(),
  completedTaskId: z.string().optional(),
  completedStatus: z.enum(["completed", "failed"]).optional(),
  failureReason: z.string().optional(),
});
export type IdleNotification = z.infer<typeof IdleNotificationSchema>;

/** The message a follow-up task's owner receives (task namespace). */
export const TaskAssignmentSchema = z.object({
  type: z.literal("task_assignment"),
  taskId: z.string(),
  subject: z.string(),
  description: z.string(),
  assignedBy: z.string(),
  timestamp: z.string(),
});
export type TaskAssignment = z.infer<typeof TaskAssignmentSchema>;

// ---------------------------------------------------------------------------------------------
// One invocation

/** What the leader (or `run`) asks to run: the shape the log file keeps under `invocation`. */
export const HookInvocationSchema = z.object({
  event: HookEventNameSchema,
  teamId: z.string(),
  teamDir: z.string(),
  taskListId: z.string(),
  style: z.string(),
  memberName: z.string().optional(),
  timestamp: z.string().optional(),
  completedTask: TaskSchema.nullable(),
});
export type HookInvocation = z.infer<typeof HookInvocationSchema>;

const ContextTaskSchema = z.object({
  id: z.string(),
  subject: z.string(),
  description: z.string(),
  owner: z.string().nullable(),
  status: z.string(),
  blockedBy: z.array(z.string()),
  blocks: z.array(z.string()),
  metadata: Metadata,
  createdAt: z.string(),
  updatedAt: z.string(),
});

/** The context document of contract v1; key order is part of the contract. */
export const ContextDocumentSchema = z.object({
  version: z.literal(HOOK_CONTRACT_VERSION),
  event: HookEventNameSchema,
  team: z.object({ id: z.string(), dir: z.string(), taskListId: z.string(), style: z.string() }),
  member: z.string().nullable(),
  timestamp: z.string().nullable(),
  task: ContextTaskSchema.nullable(),
});
export type ContextDocument = z.infer<typeof ContextDocumentSchema>;

/** How to start a discovered hook: `command` with `args` (no shell); `[command, ...args]` is what the log shows. */
export interface HookCommand {
  hookPath: string;
  command: string;
  args: string[];
}

export const RUN_OUTCOMES = ["passed", "failed", "error"] as const;
/**
 * Why a run is an `error` rather than a gate's decision: it could not start (`spawn`), ran past its
 * timeout, died by a signal, gave an invalid verdict, broke a limit of its event, or was stopped with
 * the leader.
 */
/** Refused before it ran, whatever the failure mode: the gate file is not the one trusted (trust.ts). */
export const TRUST_ERROR_KINDS = ["untrusted_hook", "gate_missing", "gate_not_executable", "insecure_hook"] as const;
export type TrustErrorKind = (typeof TRUST_ERROR_KINDS)[number];
export const RUN_ERROR_KINDS = ["spawn", "timeout", "signal", "invalid_verdict", "limit", "stopped", "internal", ...TRUST_ERROR_KINDS] as const;
/** Error kinds that always fail the event (closed), whatever the failure mode says. */
export const CLOSED_ERROR_KINDS: ReadonlySet<RunErrorKind> = new Set(["limit", ...TRUST_ERROR_KINDS]);
export type RunErrorKind = (typeof RUN_ERROR_KINDS)[number];
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

/**
 * What one hook run gave. `outcome`: `passed` (exit 0), `failed` (the hook ran and said no: a
 * non-zero exit), `error` (it could not start, timed out, or died by a signal). v1 policy counts an
 * error as a failure.
 */
export const RunResultSchema = z.object({
  ran: z.boolean(),
  hookPath: z.string().optional(),
  command: z.array(z.string()).optional(),
  outcome: z.enum(RUN_OUTCOMES),
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  timedOut: z.boolean(),
  durationMs: z.number(),
  stdout: z.string(),
  stderr: z.string(),
  stdoutDroppedBytes: z.number().int().nonnegative(),
  stderrDroppedBytes: z.number().int().nonnegative(),
  /** A spawn failure, one line (`spawn bash ENOENT`). */
  error: z.string().optional(),
  /** Its errno code (`ENOENT`, `EACCES`, `E2BIG`). */
  errorCode: z.string().optional(),
  /** Processes of the hook still alive after it exited (or timed out) and killed by the runner. */
  leftoverProcesses: z.number().int().nonnegative(),
  /** An environment value was shortened to fit; stdin and the context file were complete. */
  contextTruncated: z.boolean(),
  /** Why the outcome is `error` (absent otherwise). */
  errorKind: z.enum(RUN_ERROR_KINDS).optional(),
  /** The hook's structured verdict, when it gave a valid one (it decided the outcome). */
  verdict: z
    .looseObject({
      decision: z.enum(["allow", "deny"]),
      code: z.string().optional(),
      reason: z.string().optional(),
      message: z.string().optional(),
      source: z.enum(["file", "stdout"]),
    })
    .optional(),
  runId: z.string(),
  contractVersion: z.literal(HOOK_CONTRACT_VERSION),
  /** sha256 of the gate file as it was when the run started (absent when it could not be read). */
  hookSha256: z.string().optional(),
  /** The sha256 trusted for it, when that differs (a change run anyway with --trust-changes). */
  trustedSha256: z.string().optional(),
  /** Why a gate was refused before it ran (untrusted, missing, insecure): every reason, not only the first. */
  trustProblems: z.array(z.looseObject({ kind: z.string(), path: z.string(), reason: z.string() })).optional(),
});
export type RunResult = z.infer<typeof RunResultSchema>;

// ---------------------------------------------------------------------------------------------
// Pure builders

/**
 * Cuts `value` to at most `limit` UTF-16 units: the first (limit − 1) followed by `…`. A surrogate
 * pair on the cut is dropped whole, so the result is always well-formed.
 */
export function truncateText(value: string, limit: number): string {
  if (value.length <= limit) return value;
  if (limit <= 0) return "";
  let cut = limit - 1;
  if (cut > 0 && isHighSurrogate(value.charCodeAt(cut - 1))) cut -= 1;
  return value.slice(0, cut) + ELLIPSIS;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** Builds the v1 context document. Keys are written in contract order; absent values are `null`. */
export function buildContextDocument(invocation: HookInvocation): ContextDocument {
  const task = invocation.completedTask;
  return {
    version: HOOK_CONTRACT_VERSION,
    event: invocation.event,
    team: {
      id: invocation.teamId,
      dir: invocation.teamDir,
      taskListId: invocation.taskListId,
      style: invocation.style,
    },
    member: invocation.memberName ?? null,
    timestamp: invocation.timestamp ?? null,
    task: task
      ? {
          id: task.id,
          subject: truncateText(task.subject, CONTEXT_LIMITS.subject),
          description: truncateText(task.description, CONTEXT_LIMITS.description),
          owner: task.owner ?? null,
          status: task.status,
          blockedBy: task.blockedBy.slice(0, CONTEXT_LIMITS.links),
          blocks: task.blocks.slice(0, CONTEXT_LIMITS.links),
          metadata: task.metadata ?? {},
          createdAt: task.createdAt,
          updatedAt: task.updatedAt,
        }
      : null,
  };
}

/** Variables of ours that must never leak from the leader's own environment into a hook's. */
const CONTRACT_VARIABLE = /^PI_TEAMS_(HOOK_(EVENT|CONTEXT_\w+|RUN_ID|RESULT_FILE|ATTEMPT|EVENT_KEY)|TEAM_ID|TEAM_DIR|TASK_LIST_ID|STYLE|MEMBER|EVENT_TIMESTAMP|TASK_(ID|STATUS|SUBJECT|OWNER))$/;

export interface HookEnvironment {
  /** The full environment for the hook: the base environment plus the contract variables. */
  env: Record<string, string>;
  /** The complete context document as JSON: what stdin and the context file carry. */
  contextJson: string;
  /** True when `PI_TEAMS_HOOK_CONTEXT_JSON` or another value was shortened to fit. */
  truncated: boolean;
}

/**
 * The environment of one invocation: `base` (the leader's environment, minus stale contract
 * variables) plus the contract variables of DESIGN.md, plus ours (`PI_TEAMS_HOOK_RUN_ID`,
 * `PI_TEAMS_HOOK_CONTEXT_FILE`, `PI_TEAMS_HOOK_CONTEXT_TRUNCATED`). No value contains NUL and none
 * exceeds `maxValueBytes`; the context JSON shrinks its largest metadata strings first.
 */
export function buildHookEnvironment(
  invocation: HookInvocation,
  extra: {
    runId: string;
    contextFile: string;
    /** Where the hook may write its verdict (contract v1, additive); unset when not offered. */
    resultFile?: string;
    /**
     * The event's key and how many times its gate has been started (1, 2, … after a crash or a retry):
     * `PI_TEAMS_HOOK_EVENT_KEY`, `PI_TEAMS_HOOK_ATTEMPT` (contract v1, additive). Unset when not known.
     */
    eventKey?: string;
    attempt?: number;
    base: Readonly<Record<string, string | undefined>>;
    maxValueBytes?: number;
  },
): HookEnvironment {
  const maxBytes = extra.maxValueBytes ?? MAX_ENV_VALUE_BYTES;
  const doc = buildContextDocument(invocation);
  const contextJson = JSON.stringify(doc);
  let truncated = false;

  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(extra.base)) {
    if (value === undefined || CONTRACT_VARIABLE.test(name)) continue;
    env[name] = value;
  }

  const set = (name: string, value: string): void => {
    const clean = value.includes("\0") ? value.replaceAll("\0", "\uFFFD") : value;
    const capped = capBytes(clean, maxBytes);
    if (capped !== clean) truncated = true;
    env[name] = capped;
  };

  const envJson = fitContextJson(doc, contextJson, maxBytes);
  if (envJson !== contextJson) truncated = true;

  set("PI_TEAMS_HOOK_EVENT", invocation.event);
  set("PI_TEAMS_HOOK_CONTEXT_VERSION", String(HOOK_CONTRACT_VERSION));
  set("PI_TEAMS_HOOK_CONTEXT_JSON", envJson);
  set("PI_TEAMS_TEAM_ID", invocation.teamId);
  set("PI_TEAMS_TEAM_DIR", invocation.teamDir);
  set("PI_TEAMS_TASK_LIST_ID", invocation.taskListId);
  set("PI_TEAMS_STYLE", invocation.style);
  if (invocation.memberName) set("PI_TEAMS_MEMBER", invocation.memberName);
  if (invocation.timestamp) set("PI_TEAMS_EVENT_TIMESTAMP", invocation.timestamp);
  const task = invocation.completedTask;
  if (task) {
    set("PI_TEAMS_TASK_ID", task.id);
    set("PI_TEAMS_TASK_STATUS", task.status);
    if (task.subject) set("PI_TEAMS_TASK_SUBJECT", task.subject);
    if (task.owner) set("PI_TEAMS_TASK_OWNER", task.owner);
  }
  set("PI_TEAMS_HOOK_RUN_ID", extra.runId);
  set("PI_TEAMS_HOOK_CONTEXT_FILE", extra.contextFile);
  if (extra.resultFile) set("PI_TEAMS_HOOK_RESULT_FILE", extra.resultFile);
  if (extra.eventKey) set("PI_TEAMS_HOOK_EVENT_KEY", extra.eventKey);
  if (extra.attempt !== undefined) set("PI_TEAMS_HOOK_ATTEMPT", String(extra.attempt));
  if (truncated) env.PI_TEAMS_HOOK_CONTEXT_TRUNCATED = "1";
  return { env, contextJson, truncated };
}

/** Cuts a string to at most `maxBytes` UTF-8 bytes, ending in `…` when cut. */
export function capBytes(value: string, maxBytes: number): string {
  if (utf8Length(value) <= maxBytes) return value;
  // Binary search for the longest cut that fits: the byte length grows with the cut.
  let low = 0;
  let high = value.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (utf8Length(truncateText(value, mid)) <= maxBytes) low = mid;
    else high = mid - 1;
  }
  return truncateText(value, low);
}

export function utf8Length(value: string): number {
  return Buffer.byteLength(value, "utf8");
}

/**
 * The context JSON for the environment: `full` when it fits, else a copy of `doc` whose largest
 * metadata strings are cut (each ending in `…`) until it does. If metadata strings cannot make it fit,
 * the metadata is replaced by `{}`, and then the task's other strings are cut the same way.
 */
function fitContextJson(doc: ContextDocument, full: string, maxBytes: number): string {
  if (utf8Length(full) <= maxBytes) return full;
  if (!doc.task) return capBytes(full, maxBytes); // team names alone: cannot happen with sane dirs
  const copy = structuredClone(doc) as ContextDocument & { task: NonNullable<ContextDocument["task"]> };
  let json = shrinkStrings(copy, collectStrings(copy.task.metadata), maxBytes);
  if (utf8Length(json) <= maxBytes) return json;
  copy.task.metadata = {};
  json = JSON.stringify(copy);
  if (utf8Length(json) <= maxBytes) return json;
  json = shrinkStrings(copy, collectStrings(copy.task), maxBytes);
  return utf8Length(json) <= maxBytes ? json : JSON.stringify({ ...copy, task: null });
}

/** A place that holds a string: `holder[key]`. */
interface StringSlot {
  holder: Record<string, unknown> | unknown[];
  key: string | number;
}

function collectStrings(root: unknown): StringSlot[] {
  const slots: StringSlot[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach((item, index) => (typeof item === "string" ? slots.push({ holder: node, key: index }) : walk(item)));
    } else if (node !== null && typeof node === "object") {
      const record = node as Record<string, unknown>;
      for (const [key, item] of Object.entries(record)) {
        if (typeof item === "string") slots.push({ holder: record, key });
        else walk(item);
      }
    }
  };
  walk(root);
  return slots;
}

function readSlot(slot: StringSlot): string {
  return String((slot.holder as Record<string | number, unknown>)[slot.key]);
}

/** Cuts the largest string of `slots` by the current excess, again and again, until `doc` fits. */
function shrinkStrings(doc: ContextDocument, slots: StringSlot[], maxBytes: number): string {
  let json = JSON.stringify(doc);
  for (let round = 0; round < 10_000; round++) {
    const excess = utf8Length(json) - maxBytes;
    if (excess <= 0) break;
    let largest: StringSlot | undefined;
    let largestBytes = 0;
    for (const slot of slots) {
      const bytes = jsonLength(readSlot(slot));
      if (bytes > largestBytes) [largest, largestBytes] = [slot, bytes];
    }
    if (!largest || largestBytes <= 8) break;
    const value = readSlot(largest);
    // Aim a little past the excess: JSON escapes make a character cost more than one byte.
    const keep = Math.max(0, value.length - Math.ceil((excess + 8) * (value.length / largestBytes)) - 1);
    (largest.holder as Record<string | number, unknown>)[largest.key] = keep < value.length - 1 ? truncateText(value, keep + 1) : ELLIPSIS;
    json = JSON.stringify(doc);
  }
  return json;
}

function jsonLength(value: string): number {
  return utf8Length(JSON.stringify(value));
}
