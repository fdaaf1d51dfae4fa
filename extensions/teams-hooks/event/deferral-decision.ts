/**
 * Settling a held gate: recording a decision (`decideDeferral`, for `pi-teams-hooks decide` and the
 * task API) and applying it (`applyDecision`, only ever by the holder of the team's leader lock: the
 * running leader, or a decider that takes the lock for the moment when no leader runs).
 *
 * Applying is the failure policy exactly as for a pass (allow) or a failure (deny: the decision's
 * code, reason and message; expired: the closed error `defer_expired`), through the same decide and
 * remediate, then a second hook log that names the deferred run (its `decision` block), then
 * `applied` in the deferral file. Each step is written before the next starts, and the file says how
 * far it got (deferrals/record.ts), so a crash anywhere is finished by the next applier once:
 *
 *   decision recorded, no `applying`    → apply
 *   `applying`, its log not on disk      → apply again (idempotent per event key), log to the same name
 *   `applying`, its log on disk          → only `applied` is left to write
 *   `applied`                            → done (the leader then closes the ledger's key)
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import type { HookInvocation } from "../contract/contract.js";
import { confidentialInvocation } from "../contract/projection.js";
import { blankResult, type RunResult } from "../contract/hook-run.js";
import type { Task } from "../contract/team-files.js";
import { describeError } from "../contract/errors.js";
import { VerdictSchema } from "../contract/verdict.js";
import { type DecideInput, decide } from "../policy/decide.js";
import type { EffectivePolicy } from "../settings/options.js";
import { GATE_STATES, type GateState } from "../policy/gate-life.js";
import { type GateMemory, type Remembered, remediate } from "./remediate.js";
import { planHookLogFile, readHookLog, writeHookLog } from "../logs/hook-log.js";
import { NO_REDACTION, redactFields, settingsRedactor, teamDirRedactor, type Redactor } from "../runner/redact.js";
import { createRuntime, type Runtime } from "../runner/runtime.js";
import { BRIEF_HOLDER, tryLeaderLock } from "../team/leader-lock.js";
import { MAX_TEAM_FILE_BYTES, readRegularFile } from "../team/json-file.js";
import { hookLogsDir, ledgerFile, taskFile } from "../team/paths.js";
import { resolveTeamSetup, type TeamSetup } from "../team/setup.js";
import { readTask } from "../team/tasks.js";
import { decisionAllowedSummary, deferExpiredText, describeFailure } from "../text/messages.js";
import { actionsText } from "../text/actions.js";
import {
  type DeferralDecision,
  type DeferralRecord,
  type HeldSettings,
  deferralFile,
  HELD_SETTING_NAMES,
  heldSettingsChanged,
  heldSettingsOf,
  isRunId,
  readDeferral,
  sameDecision,
  updateDeferral,
} from "../deferrals/record.js";
import {
  changedFields,
  checkDeferral,
  describeChanges,
  heldFields,
  heldTrigger,
  ledgerHoldOf,
} from "./deferral-check.js";
import { policyRecordOf } from "./remediate.js";

export type DecisionInput = {
  decision: "allow" | "deny";
  code?: string;
  reason?: string;
  message?: string;
  by: string;
};

export type DecideResult =
  /** No such deferral in this team (`problem`: a file there, but no gate held it: event/deferral-check.ts). → 404 */
  | { kind: "unknown"; problem?: string }
  | { kind: "conflict"; existing: DeferralDecision } // decided otherwise before      → 409
  | { kind: "expired"; expiresAt: string } // past its deadline             → 409 defer_expired
  | { kind: "invalid"; problem: string } // bad code/reason/message       → 400
  /** A running leader applies it (or, `problem`: applying failed here, and the next applier tries again). → 202 */
  | { kind: "recorded"; deferral: DeferralRecord; problem?: string }
  | {
      kind: "applied";
      deferral: DeferralRecord;
      actions: string[];
      logFile: string | null;
      /** The settings it was applied under: those in force when the gate held it (AppliedUnder). */
      appliedUnder?: AppliedUnder;
    }; // applied now → 200

/**
 * What a decision was applied under: the settings stamped when its gate held the event (`held`), or,
 * for a deferral held before they were stamped, those in force when it was applied (`now`); `changed`
 * names each stamped setting that differs from what is in force now (`failureAction reopen (now warn)`).
 */
interface AppliedUnder {
  from: "held" | "now";
  heldAt: string;
  settings: HeldSettings;
  changed: string[];
}

/**
 * What a decision was applied under, in words: `under the settings in force when its gate held it
 * (2026-…): failureAction reopen, …; changed since: confidential true (now false)`.
 */
export function appliedUnderText(under: AppliedUnder): string {
  const values = HELD_SETTING_NAMES.map((name) => `${name} ${String(under.settings[name])}`).join(", ");
  if (under.from === "now")
    return `under the settings in force now (held at ${under.heldAt}, before a deferral kept its own): ${values}`;
  const changed = under.changed.length > 0 ? `; changed since: ${under.changed.join(", ")}` : "; unchanged since";
  return `under the settings in force when its gate held it (${under.heldAt}): ${values}${changed}`;
}

/** Who `expired` decisions are by. */
export const EXPIRY_BY = "pi-teams-hooks";

/** What applying needs to know of the team: its identity and the settings in force where it is applied. */
export interface ApplySettings {
  /**
   * The team's identity and every setting in force (team/setup.ts `TeamSetup`), whole: the failure
   * policy, the failure modes, the timeout, `hooks.confidential` (the decision's log keeps no task
   * content), `hooks.reassignOnReopen`.
   */
  setup: Pick<TeamSetup, "identity" | "settings">;
  /** The clock, the lock timeout and the sent log (runner/runtime.ts), whole; default `createRuntime()`. */
  runtime?: Runtime;
  /**
   * The deferral as its gate held it (event/deferral-check.ts): its held fields are applied, and
   * written back, whatever the file says now (an agent may have edited it since it was checked).
   */
  reference?: DeferralRecord;
  /**
   * The team's redaction (runner/redact.ts `settingsRedactor`): a decision's code, reason and message go through it.
   */
  redact?: Redactor;
  /** What the leader remembers of its tasks' gate lives (a decider with no leader running has none). */
  memory?: GateMemory;
}

type Application =
  /** `already`: it was applied before this call (nothing was done now). */
  | {
      kind: "applied";
      record: DeferralRecord;
      result: RunResult;
      summary: string;
      actions: string[];
      logFile: string | null;
      waitedMs: number;
      already: boolean;
      remembered?: Remembered;
      appliedUnder: AppliedUnder;
      /** The state the decision moved the gate life to (policy/gate-life.ts next); absent when applied before. */
      gate?: GateState;
    }
  /** A policy step or a write failed: nothing after it was done; the next try starts over (idempotent). */
  | { kind: "pending"; record: DeferralRecord | null; error: string }
  | { kind: "undecided" | "unknown" };

// ---------------------------------------------------------------------------------------------
// Recording

/** The decision's fields checked as a verdict's are (contract/verdict.ts), and who decided; null when fine. */
export function decisionProblem(input: DecisionInput): string | null {
  if ((input.decision as string) !== "allow" && (input.decision as string) !== "deny")
    return `decision: ${JSON.stringify(input.decision)} is not one of allow, deny`;
  const checked = VerdictSchema.safeParse({
    decision: input.decision,
    code: input.code,
    reason: input.reason,
    message: input.message,
  });
  if (!checked.success)
    return checked.error.issues.map((i) => `${i.path.map(String).join(".") || "decision"}: ${i.message}`).join("; ");
  if (input.by.trim() === "" || Buffer.byteLength(input.by) > 128 || /[\u0000-\u001f\u007f]/.test(input.by))
    return `by: ${JSON.stringify(input.by)} must be a name of 1 to 128 bytes without control characters`;
  return null;
}

/**
 * Records a decision for the deferral `runId` of the team in `teamDir`, then has it applied: by the
 * running leader (waited for up to `waitForLeaderMs`, default 5 s), or here, under the leader lock,
 * when no leader runs. The same decision twice is one (the second answers as the first would now);
 * a deferral past its deadline is recorded as expired (and applied as such), whatever was asked.
 */
export async function decideDeferral(
  teamDir: string,
  runId: string,
  input: DecisionInput,
  opts: {
    env: Readonly<Record<string, string | undefined>>;
    /** The clock, the lock timeout and the sent log (runner/runtime.ts); default `createRuntime()`. */
    runtime?: Runtime;
    waitForLeaderMs?: number;
    settings?: ApplySettings;
    warn?: (message: string) => void;
  },
): Promise<DecideResult> {
  const runtime = opts.runtime ?? createRuntime();
  const now = runtime.now;
  const problem = decisionProblem(input);
  if (problem !== null) return { kind: "invalid", problem };
  if (!isRunId(runId)) return { kind: "unknown" };
  // What a decider says is kept (the deferral file, the task, the logs, the nudge): redacted first, as a hook's words
  // are.
  const redacted = redactFields(input, opts.settings?.redact ?? (await teamDirRedactor(teamDir, opts.env)));
  input = redacted.decision;
  const deadline = Date.now() + (opts.waitForLeaderMs ?? 5_000);
  // A decider may answer before the leader has written the deferral (an HTTP handler told the run id
  // and its service decided at once): while the ledger shows the run in flight, its deferral is awaited.
  if ((await readDeferral(teamDir, runId)) === null && !(await heldSoon(teamDir, runId, deadline)))
    return { kind: "unknown" };
  const checked = await heldReference(teamDir, runId, opts.warn);
  if (checked.kind === "unknown") return checked;
  const { reference } = checked;
  const { record, verdict } = await recordDecision(teamDir, runId, input, reference, now, redacted.count);
  if (record === null) return { kind: "unknown" };
  if (verdict === "conflict" && record.decision) return { kind: "conflict", existing: record.decision };
  const settled = await settle(teamDir, record, { ...opts, runtime, deadline, ...(reference ? { reference } : {}) });
  return verdict === "expired" ? { kind: "expired", expiresAt: record.expiresAt } : settled;
}

/**
 * The file as its gate held it: a key or a deadline edited since is put back before anything is
 * decided on it, and a deferral no gate held is none (event/deferral-check.ts). An applied one only
 * answers a decision sent twice: nothing of it is used (no reference).
 */
async function heldReference(
  teamDir: string,
  runId: string,
  warn: ((message: string) => void) | undefined,
): Promise<{ kind: "held"; reference: DeferralRecord | null } | { kind: "unknown"; problem: string }> {
  const found = await readDeferral(teamDir, runId);
  if (!found?.ok || found.value.applied) return { kind: "held", reference: null };
  const check = await checkDeferral(found.value, { ledger: ledgerHoldOf(teamDir, runId), teamDir });
  if (check.kind === "refused")
    return { kind: "unknown", problem: `${deferralFile(teamDir, runId)}: refused: ${check.problem}` };
  if (check.kind === "differs")
    warn?.(
      `${deferralFile(teamDir, runId)}: changed since its gate was held: ${describeChanges(found.value, check.reference, check.fields)}; put back as held`,
    );
  return { kind: "held", reference: check.reference };
}

/**
 * The decision written into the deferral file, under its lock, once: the same decision again is
 * `same`, another `conflict`; past its deadline the deferral is recorded as `expired` whatever was asked.
 */
async function recordDecision(
  teamDir: string,
  runId: string,
  input: DecisionInput,
  reference: DeferralRecord | null,
  now: () => Date,
  redactions: number,
): Promise<{ record: DeferralRecord | null; verdict: "recorded" | "same" | "expired" | "conflict" }> {
  // Set inside the locked update (a closure, hence the cast: TypeScript does not follow it there).
  let verdict = "recorded" as "recorded" | "same" | "expired" | "conflict";
  const record = await updateDeferral(teamDir, runId, (onDisk) => {
    const repaired = reference !== null && changedFields(onDisk, reference).length > 0;
    const held = reference ? { ...onDisk, ...heldFields(reference) } : onDisk;
    if (held.decision) {
      verdict =
        held.decision.decision === "expired" ? "expired" : sameDecision(held.decision, input) ? "same" : "conflict";
      return repaired ? held : undefined;
    }
    const at = now().toISOString();
    if (Date.parse(at) >= Date.parse(held.expiresAt)) {
      verdict = "expired";
      return { ...held, decision: { decision: "expired", by: EXPIRY_BY, at } };
    }
    const { decision, code, reason, message, by } = input;
    const counted = redactions > 0 ? { redactions } : {};
    return {
      ...held,
      decision: {
        decision,
        ...(code ? { code } : {}),
        ...(reason ? { reason } : {}),
        ...(message ? { message } : {}),
        by,
        at,
        ...counted,
      },
    };
  });
  return { record, verdict };
}

/** Applies a recorded decision here when no leader runs, else waits for the leader to apply it. */
async function settle(
  teamDir: string,
  record: DeferralRecord,
  opts: {
    env: Readonly<Record<string, string | undefined>>;
    runtime: Runtime;
    deadline: number;
    settings?: ApplySettings;
    reference?: DeferralRecord;
  },
): Promise<DecideResult> {
  const { deadline } = opts;
  let latest = record;
  for (;;) {
    if (latest.applied)
      return { kind: "applied", deferral: latest, actions: latest.applied.actions, logFile: latest.applied.logFile };
    const got = await tryLeaderLock(teamDir, BRIEF_HOLDER);
    if (got.ok) {
      try {
        const settings = opts.settings ?? (await settingsOf(teamDir, opts.env));
        const applied = await applyDecision(teamDir, record.runId, {
          ...settings,
          runtime: opts.runtime,
          ...(opts.reference ? { reference: opts.reference } : {}),
        });
        if (applied.kind === "applied")
          return {
            kind: "applied",
            deferral: applied.record,
            actions: applied.actions,
            logFile: applied.logFile,
            appliedUnder: applied.appliedUnder,
          };
        if (applied.kind === "pending")
          return { kind: "recorded", deferral: applied.record ?? record, problem: applied.error };
        return { kind: "unknown" }; // removed meanwhile by someone
      } finally {
        await got.lock.release();
      }
    }
    // A leader runs: its watcher sees the decision and applies it.
    const read = await readDeferral(teamDir, record.runId);
    if (read?.ok) latest = read.value;
    if (latest.applied) continue;
    if (Date.now() >= deadline) return { kind: "recorded", deferral: latest };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Waits (until `deadline`) for the deferral of a run the ledger shows in flight: true once its file is
 * there, false when the run is not in flight (or no longer is, without one). Exported for the task
 * API, which reads a deferral before it decides (a key limited to templates decides by its task).
 */
export async function heldSoon(teamDir: string, runId: string, deadline: number): Promise<boolean> {
  // A chain's later hook runs as `<event run id>.N`: the ledger knows the event's.
  const eventRunId = runId.replace(/\.\d+$/, "");
  for (;;) {
    if ((await readDeferral(teamDir, runId)) !== null) return true;
    if (Date.now() >= deadline || !inFlight(teamDir, eventRunId)) return false;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Whether the ledger's last record of the event run `runId` is its begin or spawn (hook-state/ledger.jsonl,
 * docs/ledger.md).
 */
function inFlight(teamDir: string, runId: string): boolean {
  const read = readRegularFile(ledgerFile(teamDir), { maxBytes: MAX_TEAM_FILE_BYTES });
  if (!read.ok) return false;
  const needle = `"runId":${JSON.stringify(runId)}`;
  let open = false;
  for (const line of read.text.split("\n")) {
    if (!line.includes(needle)) continue;
    const op = /^\{"op":"(\w+)"/.exec(line)?.[1];
    if (op === "begin" || op === "spawn") open = true;
    else if (op === "defer" || op === "done") open = false;
  }
  return open;
}

async function settingsOf(teamDir: string, env: Readonly<Record<string, string | undefined>>): Promise<ApplySettings> {
  const setup = await resolveTeamSetup({ teamDir, env, processCwd: process.cwd() });
  return { setup, redact: settingsRedactor(env, setup.settings, setup.hooksDir) };
}

// ---------------------------------------------------------------------------------------------
// Applying

/** What a decision makes of the held run: a result of its own, `source: "decision"`, with nothing run. */
function decisionResult(record: DeferralRecord, decision: DeferralDecision, runId: string): RunResult {
  const base: RunResult = {
    ...blankResult({ ran: false, hookPath: record.hook.hookPath, command: record.hook.command, runId }),
    ...(record.hook.sha256 ? { hookSha256: record.hook.sha256 } : {}),
  };
  const { code, reason, message } = decision;
  const said = {
    ...(code ? { code } : {}),
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
    source: "decision" as const,
  };
  switch (decision.decision) {
    case "allow":
      return { ...base, verdict: { decision: "allow", ...said } };
    case "deny":
      return { ...base, outcome: "failed", verdict: { decision: "deny", ...said } };
    case "expired":
      return {
        ...base,
        outcome: "error",
        errorKind: "defer_expired",
        error: deferExpiredText(record.deferredAt, record.expiresAt),
      };
  }
}

/**
 * A decision being applied: what its steps share. Fixed once read, but for `record`, which each step
 * that writes the deferral file replaces with what it wrote.
 */
interface Settling {
  teamDir: string;
  runId: string;
  apply: ApplySettings;
  runtime: Runtime;
  now: () => Date;
  /** The held fields applied and written back at each step (see ApplySettings.reference); none once applied. */
  held: Partial<DeferralRecord>;
  record: DeferralRecord;
  /** The decision as recorded, redacted again; `redacted`: what that replaced now. */
  decision: DeferralDecision;
  redacted: number;
  redact: Redactor;
  waitedMs: number;
  /** The settings it is applied under (AppliedUnder), and the failure policy among them. */
  under: HeldSettings;
  appliedUnder: AppliedUnder;
  policy: EffectivePolicy;
}

/** What the policy step did: the summary and actions for `applied`, the log, what the leader remembers. */
interface Settled {
  summary: string;
  actions: string[];
  logFile: string;
  result: RunResult;
  remembered?: Remembered;
  gate?: GateState;
}

type Pending = Extract<Application, { kind: "pending" }>;

/**
 * Applies the recorded decision of the deferral `runId`: the policy, the decision log, `applied`.
 * Only the holder of the team's leader lock may call it. Never applies twice: see the top of the file.
 * Each step writes before the next starts, and each is idempotent: a step tried again after a crash
 * finds what it wrote and does no more.
 */
export async function applyDecision(teamDir: string, runId: string, apply: ApplySettings): Promise<Application> {
  const opened = await openDecision(teamDir, runId, apply);
  if (opened.kind !== "open") return opened;
  const s = opened.settling;
  if (s.record.applied) return alreadyApplied(s, s.record.applied);
  await rewriteRedacted(s);
  const invocation = invocationOf(s, await freshTask(teamDir, s.record));
  const applying = await planApplying(s, invocation);
  if (applying.kind !== "planned") return applying;
  const settled = (await loggedBefore(s, applying.at)) ?? (await applyPolicyAndLog(s, applying.at, invocation));
  if ("kind" in settled) return settled;
  return markApplied(s, settled);
}

/** Step 1: the deferral as held, its decision redacted again, and what it is applied under; or why there is nothing. */
async function openDecision(
  teamDir: string,
  runId: string,
  apply: ApplySettings,
): Promise<{ kind: "open"; settling: Settling } | Extract<Application, { kind: "unknown" | "undecided" | "pending" }>> {
  const read = await readDeferral(teamDir, runId);
  if (read === null) return { kind: "unknown" };
  if (!read.ok) return { kind: "pending", record: null, error: read.problem.message };
  // What is applied, and written back at each step, is the deferral as held (see ApplySettings.reference).
  const held = apply.reference && !read.value.applied ? heldFields(apply.reference) : {};
  const record: DeferralRecord = { ...read.value, ...held };
  const redact = apply.redact ?? NO_REDACTION;
  // A decision may have been written into the file by hand: what is applied and kept is redacted again.
  const again = record.decision ? redactFields(record.decision, redact) : undefined;
  const decision = again?.decision;
  if (!again || !decision) return { kind: "undecided" };
  // The settings in force when the gate held the event, whatever config.json says now; a deferral
  // held before they were stamped has only those in force now.
  const current = heldSettingsOf(apply.setup.settings, record.event);
  const stamped = record.settings;
  const under = stamped ?? current;
  const runtime = apply.runtime ?? createRuntime();
  return {
    kind: "open",
    settling: {
      teamDir,
      runId,
      apply,
      runtime,
      now: runtime.now,
      held,
      record,
      decision,
      redacted: again.count,
      redact,
      waitedMs: Math.max(0, Date.parse(decision.at) - Date.parse(record.deferredAt)),
      under,
      appliedUnder: {
        from: stamped ? "held" : "now",
        heldAt: record.deferredAt,
        settings: under,
        changed: stamped ? heldSettingsChanged(stamped, current) : [],
      },
      policy: {
        failureAction: under.failureAction,
        maxReopensPerTask: under.maxReopensPerTask,
        followupOwner: under.followupOwner,
      },
    },
  };
}

function alreadyApplied(s: Settling, applied: NonNullable<DeferralRecord["applied"]>): Application {
  return {
    kind: "applied",
    record: s.record,
    result: decisionResult(s.record, s.decision, s.record.applying?.runId ?? s.runId),
    summary: "",
    actions: applied.actions,
    logFile: applied.logFile,
    waitedMs: s.waitedMs,
    already: true,
    appliedUnder: s.appliedUnder,
  };
}

/**
 * Step 2: a decider without this environment (serve, decide in another shell) kept what only it redacts:
 * rewritten so.
 */
async function rewriteRedacted(s: Settling): Promise<void> {
  if (s.redacted === 0) return;
  const redacted = (r: DeferralRecord): DeferralRecord | undefined =>
    r.decision && !r.applied
      ? {
          ...r,
          ...s.held,
          decision: {
            ...redactFields(r.decision, s.redact).decision,
            redactions: (r.decision.redactions ?? 0) + s.redacted,
          },
        }
      : undefined;
  s.record = { ...((await updateDeferral(s.teamDir, s.runId, redacted).catch(() => null)) ?? s.record), ...s.held };
}

function invocationOf(s: Settling, task: Task | null): HookInvocation {
  const { identity } = s.apply.setup;
  const { record } = s;
  return {
    event: record.event,
    teamId: identity.teamId,
    teamDir: identity.teamDir,
    taskListId: record.taskListId,
    style: identity.style,
    ...(record.member ? { memberName: record.member } : {}),
    ...(record.timestamp ? { timestamp: record.timestamp } : {}),
    completedTask: task,
  };
}

/**
 * Step 3: `applying` (the time, run id and log file of the application) written before the policy
 * runs, once. One whose log is not in the team's hook-logs was not planned by an applier (written by
 * hand, it would have the log written anywhere): planned again.
 */
async function planApplying(
  s: Settling,
  invocation: HookInvocation,
): Promise<{ kind: "planned"; at: NonNullable<DeferralRecord["applying"]> } | Pending | { kind: "unknown" }> {
  const logs = path.resolve(hookLogsDir(s.teamDir));
  const planned = (r: DeferralRecord): boolean =>
    r.applying !== undefined && path.dirname(path.resolve(r.applying.logFile)) === logs;
  try {
    if (!planned(s.record)) {
      const at = s.now().toISOString();
      const applying = { at, runId: randomUUID(), logFile: planHookLogFile(s.teamDir, { startedAt: at, invocation }) };
      const written = await updateDeferral(s.teamDir, s.runId, (r) =>
        planned(r) ? undefined : { ...r, ...s.held, applying },
      );
      s.record = { ...(written ?? s.record), ...s.held };
    }
  } catch (error) {
    return { kind: "pending", record: s.record, error: describeError(error) };
  }
  return s.record.applying ? { kind: "planned", at: s.record.applying } : { kind: "unknown" };
}

/** The decision's own result, as the policy and the log take it (its redactions counted). */
function resultOf(s: Settling, applying: NonNullable<DeferralRecord["applying"]>): RunResult {
  return {
    ...decisionResult(s.record, s.decision, applying.runId),
    redactions: (s.decision.redactions ?? 0) + s.redacted,
  };
}

/** Applied and logged before a crash (only this deferral's decision log says so): only `applied` is left. */
async function loggedBefore(s: Settling, applying: NonNullable<DeferralRecord["applying"]>): Promise<Settled | null> {
  const onDisk = existsSync(applying.logFile) ? await readHookLog(applying.logFile) : null;
  if (!onDisk?.ok || (onDisk.record.decision as { deferredRunId?: unknown } | undefined)?.deferredRunId !== s.runId)
    return null;
  const policy = onDisk.record.policy as { summary?: unknown; actions?: unknown; gate?: unknown } | undefined;
  return {
    ...((GATE_STATES as readonly unknown[]).includes(policy?.gate) ? { gate: policy?.gate as GateState } : {}),
    summary: typeof policy?.summary === "string" ? policy.summary : "",
    actions: Array.isArray(policy?.actions) ? policy.actions.filter((a): a is string => typeof a === "string") : [],
    logFile: applying.logFile,
    result: resultOf(s, applying),
  };
}

/** Step 4: the failure policy (as for the gate's own verdict: decide and remediate), then the decision's log. */
async function applyPolicyAndLog(
  s: Settling,
  applying: NonNullable<DeferralRecord["applying"]>,
  invocation: HookInvocation,
): Promise<Settled | Pending> {
  const { record, decision, apply, policy } = s;
  const result = resultOf(s, applying);
  const done = await remediate(
    {
      teamDir: s.teamDir,
      taskListId: record.taskListId,
      taskId: record.taskId,
      key: record.key,
      leadName: apply.setup.identity.leadName,
      now: applying.at,
      sent: s.runtime.sentLog(s.teamDir),
      lockTimeoutMs: s.runtime.lockTimeoutMs,
      // The held chain's patches are written only if the decision allows it (event/patches.ts).
      ...(decision.decision === "allow" && record.patches?.length ? { taskPatches: record.patches } : {}),
      memory: apply.memory,
      maxBudget: policy.maxReopensPerTask,
    },
    (fresh, tree) => decide(decideInput(s, applying, result, fresh, tree.budget)),
  );
  if (!done.complete) return { kind: "pending", record, error: done.errors.join("; ") };
  try {
    // At the name planned, unless something else took it: then the next free one.
    const logFile = await writeHookLog(
      s.teamDir,
      {
        invocation: s.under.confidential ? confidentialInvocation(invocation) : invocation,
        result,
        key: record.key,
        startedAt: applying.at,
        trigger: await heldTrigger(record.logFile),
        policy: policyRecordOf(policy, s.under.failureMode, done),
        decision: {
          deferredRunId: record.runId,
          deferredLog: record.logFile,
          decision: decision.decision,
          ...said(decision),
          by: decision.by,
          at: decision.at,
          waitedMs: s.waitedMs,
          ...patchNote(done.patch, record),
          // Said in the log: what the decision was applied under, and what has changed since.
          appliedUnder: s.appliedUnder,
        },
      },
      { file: applying.logFile },
    );
    const { remembered } = done;
    const gate = done.plan.gate.to;
    return { summary: done.plan.summary, actions: actionsText(done.actions), logFile, result, remembered, gate };
  } catch (error) {
    return { kind: "pending", record, error: describeError(error) };
  }
}

function decideInput(
  s: Settling,
  applying: NonNullable<DeferralRecord["applying"]>,
  result: RunResult,
  task: Task | null,
  budget: DecideInput["budget"],
): DecideInput {
  const { record, decision } = s;
  return {
    event: record.event,
    key: record.key,
    taskId: record.taskId,
    result,
    task,
    policy: s.policy,
    hookName: record.hook.gate,
    member: record.member,
    leadName: s.apply.setup.identity.leadName,
    now: applying.at,
    timeoutMs: s.under.timeoutMs,
    failureMode: s.under.failureMode,
    logFile: applying.logFile,
    decision: {
      deferredRunId: record.runId,
      deferredReason: record.reason === undefined ? undefined : s.redact(record.reason).text,
      decision: decision.decision,
      by: decision.by,
      at: decision.at,
    },
    budget,
    round: s.apply.memory?.round(record.taskId),
    reassign: s.under.reassignOnReopen,
  };
}

/** Step 5: `applied` written: the deferral is settled (the leader then closes the ledger's key). */
async function markApplied(s: Settling, settled: Settled): Promise<Application> {
  const { summary, actions, logFile, result, remembered, gate } = settled;
  try {
    const applied = { at: s.now().toISOString(), logFile, actions };
    const written = await updateDeferral(s.teamDir, s.runId, (r) => ({ ...r, ...s.held, applied }));
    s.record = { ...(written ?? { ...s.record, applied }), ...s.held };
  } catch (error) {
    return { kind: "pending", record: s.record, error: describeError(error) };
  }
  return {
    kind: "applied",
    record: s.record,
    result,
    summary: summary || summaryOf(result, s.record.decision?.by ?? "?"),
    actions,
    logFile,
    waitedMs: s.waitedMs,
    already: false,
    ...(remembered ? { remembered } : {}),
    appliedUnder: s.appliedUnder,
    ...(gate === undefined ? {} : { gate }),
  };
}

/** What became of the held chain's patches, for the decision's log: the patches written, or why not. */
function patchNote(
  patch: { written: boolean; why?: string } | undefined,
  record: DeferralRecord,
): Record<string, unknown> {
  if (!record.patches?.length) return {};
  if (patch === undefined)
    return { patchIgnored: "the decision is not allow: the held chain's patches were discarded" };
  return patch.written ? { patchApplied: record.patches } : { patchIgnored: patch.why ?? "not written" };
}

function said(decision: DeferralDecision): Partial<DeferralDecision> {
  return {
    ...(decision.code ? { code: decision.code } : {}),
    ...(decision.reason ? { reason: decision.reason } : {}),
    ...(decision.message ? { message: decision.message } : {}),
  };
}

function summaryOf(result: RunResult, by: string): string {
  return result.outcome === "passed" ? decisionAllowedSummary(by, result.verdict?.reason) : describeFailure(result, 0);
}

async function freshTask(teamDir: string, record: DeferralRecord): Promise<Task | null> {
  const read = await readTask(taskFile(teamDir, record.taskListId, record.taskId));
  return read.ok ? read.value : null;
}
