/**
 * One run of a hook under contract v1: how it is started (`HookCommand`, the default timeout, the
 * environment built from the invocation, each value under `MAX_ENV_VALUE_BYTES`) and what it gives
 * (`RunResult`: its outcome, why it is an error, the captured output). No I/O here: ids and the
 * base environment are arguments. docs/hook-contract.md, "What the hook receives", lists the variables.
 */
import { z } from "zod";
import {
  ELLIPSIS,
  HOOK_CONTRACT_VERSION,
  buildContextDocument,
  truncateText,
  type ContextDocument,
  type HookInvocation,
} from "./contract.js";
import { FULL_VIEW, showsTaskField, viewDocument, type ContextView } from "./projection.js";
import { DECISIONS, VERDICT_SOURCES } from "./verdict.js";

/** `PI_TEAMS_HOOK_CONTEXT_JSON` and every other single variable stay below this many UTF-8 bytes. */
export const MAX_ENV_VALUE_BYTES = 100 * 1024;

/** Captured stdout / stderr keep this many characters each. */
export const OUTPUT_LIMIT_CHARS = 12_000;

// ---------------------------------------------------------------------------------------------
// The command and the result

/** How to start a discovered hook: `command` with `args` (no shell); `[command, ...args]` is what the log shows. */
export interface HookCommand {
  hookPath: string;
  command: string;
  args: string[];
}

/**
 * `deferred` (contract v1, additive): the hook (or HTTP handler) answered `defer`, and the gate of
 * a task event is held until a decision arrives.
 */
const RUN_OUTCOMES = ["passed", "failed", "error", "deferred"] as const;
/** Refused before it ran, whatever the failure mode: the gate file is not the one trusted (trust/trust.ts). */
export const TRUST_ERROR_KINDS = ["untrusted_hook", "gate_missing", "gate_not_executable", "insecure_hook"] as const;
export type TrustErrorKind = (typeof TRUST_ERROR_KINDS)[number];
/**
 * Why a run is an `error` rather than a gate's decision: it could not start (`spawn`), ran past its
 * timeout, died by a signal, gave an invalid verdict, broke a limit of its event, was stopped with
 * the leader, failed inside the runner (`internal`), or was refused by trust; an HTTP handler's
 * request or answer failed (`http`: no connection, a non-2xx status, a redirect, an oversize body,
 * an unsupported decision); a deferred gate got no decision before its deadline (`defer_expired`);
 * under strict exit codes (`hooks.exitCodes: "strict"`), a hook without a verdict exited with neither
 * 0 nor 2 (`unexpected_exit`: a crash, 127, an uncaught exception).
 */
const RUN_ERROR_KINDS = [
  "spawn",
  "timeout",
  "signal",
  "invalid_verdict",
  "limit",
  "stopped",
  "internal",
  ...TRUST_ERROR_KINDS,
  "http",
  "defer_expired",
  "unexpected_exit",
  "hook_settings",
] as const;
/**
 * Error kinds that always fail the event (closed), whatever the failure mode says. `hook_settings`: the gate's settings
 * line cannot be read whole, so it did not run.
 */
export const CLOSED_ERROR_KINDS: ReadonlySet<RunErrorKind> = new Set([
  "limit",
  ...TRUST_ERROR_KINDS,
  "defer_expired",
  "hook_settings",
]);
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
  /**
   * Where the gate ran (contract v1, additive): `on` in its sandbox, `off` as the leader runs
   * (`sandbox=off`), `unavailable` as the leader runs because this machine cannot sandbox it.
   * Absent for an HTTP handler and in logs written before the sandbox.
   */
  sandbox: z.enum(["on", "off", "unavailable"]).optional(),
  /** The hook's structured verdict, when it gave a valid one (it decided the outcome). */
  verdict: z
    .looseObject({
      decision: z.enum(DECISIONS),
      code: z.string().optional(),
      reason: z.string().optional(),
      message: z.string().optional(),
      /** A patch verdict's merge patch, as the hook gave it (contract/merge-patch.ts). */
      patch: z.record(z.string(), z.unknown()).optional(),
      source: z.enum(VERDICT_SOURCES),
    })
    .optional(),
  /**
   * A patch verdict (contract v1, additive): the dotted paths of its patch written to the task
   * (`patchApplied`), those dropped as outside the writable fields (`patchRejected`), and why the
   * kept part was not written, when it was not (`patchIgnored`: an idle event, a chain denied, a gate
   * held, no policy applied).
   */
  patchApplied: z.array(z.string()).optional(),
  patchRejected: z.array(z.string()).optional(),
  patchIgnored: z.string().optional(),
  /**
   * An HTTP handler's exchange (contract v1, additive): the URL it was sent to, the status (null: no
   * answer), the reason phrase, and what a 2xx body held (`verdict`, `empty`, `malformed`). Secret
   * header values are never recorded; `missingSecrets` names the variables that were not set.
   */
  http: z
    .looseObject({
      url: z.string(),
      status: z.number().int().nullable(),
      statusText: z.string().optional(),
      body: z.enum(["verdict", "empty", "malformed"]).optional(),
      missingSecrets: z.array(z.string()).optional(),
      signed: z.boolean().optional(),
      /** The kept-alive connection was found closed by the receiver before any answer: sent once more on a new one. */
      resent: z.boolean().optional(),
    })
    .optional(),
  runId: z.string(),
  /**
   * The gate's own settings line (contract v1, additive; settings/hook-line.ts), as it was applied: `timeout=300s
   * mode=shadow`.
   */
  hookSettings: z.string().optional(),
  /**
   * Optional global gates (`required=false`) of the event's chain that the team dropped — switched off,
   * replaced or deleted — which needs no approval (trust/trust.ts): each with why it does not run.
   * Contract v1, additive.
   */
  droppedGates: z.array(z.looseObject({ path: z.string(), detail: z.string() })).optional(),
  /**
   * Additive: the gate's matchers did not match the event, so it did not run (`ran: false`, `outcome: passed`): which
   * one, and why.
   */
  skipped: z.string().optional(),
  /**
   * Additive: a `mode=shadow` gate. Its verdict is never enforced, so `outcome` is `passed`; what it
   * said is here: the outcome it would have had, its error, and whether it would have denied.
   */
  shadow: z
    .looseObject({
      outcome: z.enum(RUN_OUTCOMES),
      errorKind: z.enum(RUN_ERROR_KINDS).optional(),
      error: z.string().optional(),
      wouldDeny: z.boolean(),
    })
    .optional(),
  /**
   * Additive: a Claude Code gate (`format=claude`) exited with neither 0 nor 2, which Claude Code lets through: why it
   * was allowed.
   */
  nonBlocking: z.string().optional(),
  /**
   * Additive: the last line of stdout started like a verdict (`{`, holding `"decision"`) but was not JSON, so no
   * verdict was read and the exit code decided: why, and the line (cut), e.g. `not JSON (…): {"decision": "deny", …`.
   */
  verdictUnread: z.string().optional(),
  /**
   * How many secrets and credential-shaped strings were replaced by `[redacted]` in what this run
   * said (its output, verdict, a receiver's answer) before anything of it was kept (contract v1,
   * additive; docs/security.md, "Redaction"). Absent only where no redaction ran (older logs).
   */
  redactions: z.number().int().nonnegative().optional(),
  contractVersion: z.literal(HOOK_CONTRACT_VERSION),
  /** sha256 of the gate file as it was when the run started (absent when it could not be read). */
  hookSha256: z.string().optional(),
  /** The sha256 trusted for it, when that differs (a change run anyway with --trust-changes). */
  trustedSha256: z.string().optional(),
  /** Why a gate was refused before it ran (untrusted, missing, insecure): every reason, not only the first. */
  trustProblems: z.array(z.looseObject({ kind: z.string(), path: z.string(), reason: z.string() })).optional(),
});
export type RunResult = z.infer<typeof RunResultSchema>;

/**
 * A result with nothing in it yet, for a run that is not a process (an HTTP handler, a decision):
 * passed, no exit code, no output, no leftovers. Callers lay what happened over it.
 */
export function blankResult(run: { hookPath: string; command: string[]; runId: string; ran: boolean }): RunResult {
  return {
    ran: run.ran,
    hookPath: run.hookPath,
    command: run.command,
    outcome: "passed",
    exitCode: null,
    signal: null,
    timedOut: false,
    durationMs: 0,
    stdout: "",
    stderr: "",
    stdoutDroppedBytes: 0,
    stderrDroppedBytes: 0,
    leftoverProcesses: 0,
    contextTruncated: false,
    runId: run.runId,
    contractVersion: HOOK_CONTRACT_VERSION,
  };
}

// ---------------------------------------------------------------------------------------------
// The environment

/** Variables of ours that must never leak from the leader's own environment into a hook's. */
const CONTRACT_VARIABLE =
  /^PI_TEAMS_(HOOK_(EVENT|CONTEXT_\w+|RUN_ID|RESULT_FILE|ATTEMPT|EVENT_KEY|PATH)|TEAM_ID|TEAM_DIR|TASK_LIST_ID|STYLE|MEMBER|EVENT_TIMESTAMP|TASK_(ID|STATUS|SUBJECT|OWNER))$/;

/**
 * The context document one hook is shown and its JSON, built once per distinct view and shared by
 * a chain's runs. `view`: what of the event it shows (contract/projection.ts); the full view is the
 * v1 document byte for byte.
 */
export interface PreparedContext {
  doc: ContextDocument;
  json: string;
  view: ContextView;
}

export function prepareContext(invocation: HookInvocation, view: ContextView = FULL_VIEW): PreparedContext {
  const doc = viewDocument(buildContextDocument(invocation), view);
  return { doc, json: JSON.stringify(doc), view };
}

interface HookEnvironment {
  /** The full environment for the hook: the base environment plus the contract variables. */
  env: Record<string, string>;
  /** The complete context document as JSON: what stdin and the context file carry. */
  contextJson: string;
  /** The document itself (what `contextJson` spells). */
  doc: ContextDocument;
  /** True when `PI_TEAMS_HOOK_CONTEXT_JSON` or another value was shortened to fit. */
  truncated: boolean;
}

/**
 * The environment of one invocation: `base` (the leader's environment, minus stale contract
 * variables) plus the contract variables of docs/hook-contract.md ("What the hook receives"), plus ours
 * (`PI_TEAMS_HOOK_RUN_ID`, `PI_TEAMS_HOOK_CONTEXT_FILE`, `PI_TEAMS_HOOK_CONTEXT_TRUNCATED`). No value contains NUL and
 * none exceeds `maxValueBytes`; the context JSON shrinks its largest metadata strings first.
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
    /** The invocation's document when the caller built it already (it must be built from `invocation`). */
    context?: PreparedContext;
  },
): HookEnvironment {
  const maxBytes = extra.maxValueBytes ?? MAX_ENV_VALUE_BYTES;
  const { doc, json: contextJson } = extra.context ?? prepareContext(invocation);
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
    // A projected hook gets the variable of a task field only when it is shown that field.
    const view = extra.context?.view ?? FULL_VIEW;
    if (showsTaskField(view, "id")) set("PI_TEAMS_TASK_ID", task.id);
    if (showsTaskField(view, "status")) set("PI_TEAMS_TASK_STATUS", task.status);
    if (task.subject && showsTaskField(view, "subject"))
      set("PI_TEAMS_TASK_SUBJECT", view.confidential ? task.id : task.subject);
    if (task.owner && showsTaskField(view, "owner")) set("PI_TEAMS_TASK_OWNER", task.owner);
  }
  set("PI_TEAMS_HOOK_RUN_ID", extra.runId);
  set("PI_TEAMS_HOOK_CONTEXT_FILE", extra.contextFile);
  if (extra.resultFile) set("PI_TEAMS_HOOK_RESULT_FILE", extra.resultFile);
  if (extra.eventKey) set("PI_TEAMS_HOOK_EVENT_KEY", extra.eventKey);
  if (extra.attempt !== undefined) set("PI_TEAMS_HOOK_ATTEMPT", String(extra.attempt));
  if (truncated) env.PI_TEAMS_HOOK_CONTEXT_TRUNCATED = "1";
  return { env, contextJson, doc, truncated };
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
 * metadata strings (and the work's: its parameters, summary, error) are cut (each ending in `…`) until it
 * does. If those cannot make it fit, the metadata and the work's parameters are replaced by `{}`, and then the task's other strings are cut the same way.
 */
function fitContextJson(doc: ContextDocument, full: string, maxBytes: number): string {
  if (utf8Length(full) <= maxBytes) return full;
  if (!doc.task) return capBytes(full, maxBytes); // team names alone: cannot happen with sane dirs
  const copy = structuredClone(doc) as ContextDocument & { task: NonNullable<ContextDocument["task"]> };
  let json = shrinkStrings(copy, [...collectStrings(copy.task.metadata), ...collectStrings(copy.work)], maxBytes);
  if (utf8Length(json) <= maxBytes) return json;
  copy.task.metadata = {};
  if (copy.work) copy.work = { ...copy.work, parameters: copy.work.parameters === null ? null : {} };
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
    (largest.holder as Record<string | number, unknown>)[largest.key] =
      keep < value.length - 1 ? truncateText(value, keep + 1) : ELLIPSIS;
    json = JSON.stringify(doc);
  }
  return json;
}

function jsonLength(value: string): number {
  return utf8Length(JSON.stringify(value));
}
