/**
 * A held gate on disk: `<teamDir>/hook-state/deferrals/<runId>.json`, one file per deferral, named by
 * the run id of the run that answered `defer` (the id an HTTP handler is sent in
 * `X-Pi-Teams-Hook-Run-Id`, and that `pi-teams-hooks decide` takes). Its life, one field at a time,
 * each rewrite atomic and under the file's lock (team/lock.ts), so that a decider and the leader
 * never lose each other's write:
 *
 *   held ──decision (decide, the API, the expiry)──▶ decided ──applying──▶ applied
 *
 * `decision` is written by whoever decides; `applying` (the time, run id and log file name of the
 * application, chosen before the policy runs) and `applied` only by the process that holds the
 * team's leader lock, so a decision is applied in one place. A crash between them is finished by the
 * next applier from what the file says: `applying` without `applied` means "apply again (every
 * policy step is idempotent per event key), into the same log file unless it is there already".
 *
 * The first write comes after the held run's logs (which carry the same record as their `deferral`
 * block): a leader killed in between writes it from the log at its next start
 * (leader/startup.ts), so a deferral that a decider can see is always one that the logs know.
 */
import { readdir } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import type { HookEventName } from "../contract/contract.js";
import type { RunResult } from "../contract/hook-run.js";
import { HooksError } from "../contract/errors.js";
import { gateName, type ChainHook } from "../gates/chain.js";
import { mkdirUnder, readJsonFile, writeJsonAtomic, type ReadResult } from "../team/json-file.js";
import { withLock } from "../team/lock.js";
import { isTempOrLock, leaderStateDir, sanitizeName } from "../team/paths.js";
import { FAILURE_ACTIONS, FOLLOWUP_OWNERS } from "../contract/team-files.js";
import { FAILURE_MODES, type TeamSettings } from "../settings/team-settings.js";

const DEFERRAL_DECISIONS = ["allow", "deny", "expired"] as const;

/** How a deferral was settled: `expired` is the leader's (or a late decider's) when the deadline passed. */
const DeferralDecisionSchema = z.looseObject({
  decision: z.enum(DEFERRAL_DECISIONS),
  code: z.string().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
  /** Who decided: `decide --by`'s value, the API key's name, or `pi-teams-hooks` for an expiry. */
  by: z.string(),
  at: z.string(),
  /** How many secrets were redacted from the code, reason and message before they were recorded. */
  redactions: z.number().int().nonnegative().optional(),
});
export type DeferralDecision = z.infer<typeof DeferralDecisionSchema>;

/**
 * The settings a decision is applied under: those in force when the gate held the event, stamped into
 * the deferral (and its log) then, so that a policy or a confidentiality changed while it waits does not
 * change what its decision does or keeps.
 */
const HeldSettingsSchema = z.looseObject({
  failureAction: z.enum(FAILURE_ACTIONS),
  maxReopensPerTask: z.number().int().nonnegative(),
  followupOwner: z.enum(FOLLOWUP_OWNERS),
  /** The held event's failure mode (`hooks.failureMode`). */
  failureMode: z.enum(FAILURE_MODES),
  /** The run timeout, quoted by a failure summary. */
  timeoutMs: z.number().int().positive(),
  /** `hooks.confidential`: the decision's log keeps no task content. */
  confidential: z.boolean(),
  reassignOnReopen: z.boolean(),
});
export type HeldSettings = z.infer<typeof HeldSettingsSchema>;

/** The held settings in the order they are said. */
export const HELD_SETTING_NAMES = [
  "failureAction",
  "maxReopensPerTask",
  "followupOwner",
  "failureMode",
  "timeoutMs",
  "confidential",
  "reassignOnReopen",
] as const satisfies ReadonlyArray<keyof HeldSettings>;

/** The settings in force for `event`, as a deferral stamps them. */
export function heldSettingsOf(
  settings: Pick<TeamSettings, "values" | "failureModes" | "timeoutMs" | "confidential" | "reassignOnReopen">,
  event: HookEventName,
): HeldSettings {
  return {
    failureAction: settings.values.failureAction,
    maxReopensPerTask: settings.values.maxReopensPerTask,
    followupOwner: settings.values.followupOwner,
    failureMode: settings.failureModes[event].value,
    timeoutMs: settings.timeoutMs.value,
    confidential: settings.confidential.value,
    reassignOnReopen: settings.reassignOnReopen.value,
  };
}

/** The held settings whose value is not the one in force now: `failureAction reopen (now warn)`. */
export function heldSettingsChanged(held: HeldSettings, now: HeldSettings): string[] {
  return HELD_SETTING_NAMES.filter((name) => held[name] !== now[name]).map(
    (name) => `${name} ${String(held[name])} (now ${String(now[name])})`,
  );
}

const DeferralRecordSchema = z.looseObject({
  version: z.literal(1),
  /** The deferral's run id: the run that answered `defer` (`<eventRunId>.N` for a chain's later hook). */
  runId: z.string(),
  /** The event's run id: the ledger's and the chain's first log's. */
  eventRunId: z.string(),
  key: z.string(),
  event: z.enum(["task_completed", "task_failed"]),
  taskId: z.string(),
  member: z.string().nullable(),
  timestamp: z.string().nullable(),
  teamId: z.string(),
  taskListId: z.string(),
  /** The hook that deferred: file name, kind, layer, path and command as logged, and its gate name. */
  hook: z.looseObject({
    name: z.string(),
    kind: z.string(),
    layer: z.string(),
    hookPath: z.string(),
    command: z.array(z.string()),
    gate: z.string(),
    sha256: z.string().optional(),
  }),
  code: z.string().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
  deferredAt: z.string(),
  expiresAt: z.string(),
  /** The held run's log (its name was chosen before it was written). */
  logFile: z.string().nullable(),
  /** The settings in force when the gate held the event; absent in a deferral held before they were stamped. */
  settings: HeldSettingsSchema.optional(),
  decision: DeferralDecisionSchema.optional(),
  /** The application under way: its time (the policy's), the decision log's run id and file. */
  applying: z.looseObject({ at: z.string(), runId: z.string(), logFile: z.string() }).optional(),
  applied: z.looseObject({ at: z.string(), logFile: z.string().nullable(), actions: z.array(z.string()) }).optional(),
  /**
   * The patches of the held chain (cut to the writable fields, in chain order): written with an allow, dropped
   * otherwise.
   */
  patches: z.array(z.record(z.string(), z.unknown())).optional(),
});
export type DeferralRecord = z.infer<typeof DeferralRecordSchema>;

/**
 * The fields fixed when the gate is held (all but what deciding and applying add): event/deferral-check.ts holds a file
 * to them.
 */
export const DEFERRAL_HELD_FIELDS = [
  "version",
  "runId",
  "eventRunId",
  "key",
  "event",
  "taskId",
  "member",
  "timestamp",
  "teamId",
  "taskListId",
  "hook",
  "code",
  "reason",
  "message",
  "deferredAt",
  "expiresAt",
  "logFile",
  "patches",
  "settings",
] as const satisfies ReadonlyArray<keyof DeferralRecord>;

export function deferralsDir(teamDir: string): string {
  return path.join(leaderStateDir(teamDir), "deferrals");
}

/**
 * The file of a deferral; run ids are UUIDs (and `.N`), so the sanitised name is unambiguous in practice, and the
 * record's own `runId` is checked on every read.
 */
export function deferralFile(teamDir: string, runId: string): string {
  return path.join(deferralsDir(teamDir), `${sanitizeName(runId)}.json`);
}

/** True for a name in the deferrals folder that is a deferral (not a temp or lock file). */
export function isDeferralFileName(name: string): boolean {
  return name.endsWith(".json") && !name.startsWith(".") && !isTempOrLock(name);
}

/**
 * The run ids of the team's deferrals that are `given` or start with it (any case): how `decide` takes
 * the short id the `logs` table and `watch` show. `given` itself alone when it names a deferral
 * whole. From the file names; a record's own `runId` is checked when it is read.
 */
export async function deferralRunIds(teamDir: string, given: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(deferralsDir(teamDir));
  } catch {
    return []; // no deferrals folder: nothing was ever held here
  }
  const ids = names.filter(isDeferralFileName).map((name) => name.slice(0, -".json".length));
  if (ids.includes(given)) return [given];
  const prefix = given.toLowerCase();
  return ids.filter((id) => id.toLowerCase().startsWith(prefix)).sort();
}

/**
 * A run id a person or a service may hand in: what this project writes (a UUID, `.N`), nothing that could climb out of
 * the folder.
 */
export function isRunId(value: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(value);
}

export function readDeferralFile(file: string): Promise<ReadResult<DeferralRecord>> {
  return readJsonFile(file, DeferralRecordSchema);
}

/** The deferral of `runId`, or null when there is none (a file of another run id at that name is none). */
export async function readDeferral(teamDir: string, runId: string): Promise<ReadResult<DeferralRecord> | null> {
  const read = await readDeferralFile(deferralFile(teamDir, runId));
  if (!read.ok) return read.problem.kind === "missing" ? null : read;
  return read.value.runId === runId ? read : null;
}

/**
 * Writes a deferral as held, unless its file is there already (a write tried again, or a recovery that
 * finds what a decider may have added since): atomically and synced, as it is the only record of a
 * held gate besides the logs. Returns the record on disk.
 */
export async function writeDeferral(teamDir: string, record: DeferralRecord): Promise<DeferralRecord> {
  const file = deferralFile(teamDir, record.runId);
  mkdirUnder(teamDir, path.dirname(file));
  return withLock(
    file,
    async () => {
      const there = await readDeferral(teamDir, record.runId);
      if (there?.ok) return there.value;
      await writeJsonAtomic(file, record, { fsync: true });
      return record;
    },
    { label: `pi-teams-hooks deferral ${record.runId}` },
  );
}

/**
 * Read-modify-write of a deferral under its lock. `change` gets the record as it is on disk now and
 * returns the new one, or undefined to write nothing; the record on disk afterwards is returned.
 * null: there is no such deferral.
 */
export async function updateDeferral(
  teamDir: string,
  runId: string,
  change: (record: DeferralRecord) => DeferralRecord | undefined,
): Promise<DeferralRecord | null> {
  const file = deferralFile(teamDir, runId);
  if ((await readDeferral(teamDir, runId)) === null) return null; // no file, no lock file either
  return withLock(
    file,
    async () => {
      const read = await readDeferral(teamDir, runId);
      if (read === null) return null;
      if (!read.ok) throw new HooksError("E_IO", `${read.problem.message}; move it aside to drop the deferral`);
      const next = change(read.value);
      if (next === undefined) return read.value;
      await writeJsonAtomic(file, next, { fsync: true });
      return next;
    },
    { label: `pi-teams-hooks deferral ${runId}` },
  );
}

/** What a held gate is recorded as, built when its event settles: the deferral file and the logs' `deferral` block. */
export function heldRecord(input: {
  identity: { teamId: string; taskListId: string };
  event: HookEventName & ("task_completed" | "task_failed");
  key: string;
  taskId: string;
  member: string | null;
  timestamp: string | null;
  eventRunId: string;
  hook: ChainHook;
  result: RunResult;
  deferredAt: string;
  deferTimeoutMs: number;
  logFile: string;
  /** The chain's kept patches, in order. */
  patches?: readonly Record<string, unknown>[];
  /** The settings in force now, when the gate holds the event (`heldSettingsOf`). */
  settings: HeldSettings;
}): DeferralRecord {
  const { result, hook } = input;
  const verdict = result.verdict;
  return {
    version: 1,
    runId: result.runId,
    eventRunId: input.eventRunId,
    key: input.key,
    event: input.event,
    taskId: input.taskId,
    member: input.member,
    timestamp: input.timestamp,
    teamId: input.identity.teamId,
    taskListId: input.identity.taskListId,
    hook: {
      name: hook.name,
      kind: hook.kind,
      layer: hook.layer,
      hookPath: hook.hook.hookPath,
      command: [hook.hook.command, ...hook.hook.args],
      gate: gateName(hook, input.event),
      ...(result.hookSha256 ? { sha256: result.hookSha256 } : {}),
    },
    ...(verdict?.code ? { code: verdict.code } : {}),
    ...(verdict?.reason ? { reason: verdict.reason } : {}),
    ...(verdict?.message ? { message: verdict.message } : {}),
    deferredAt: input.deferredAt,
    expiresAt: new Date(Date.parse(input.deferredAt) + input.deferTimeoutMs).toISOString(),
    logFile: input.logFile,
    ...(input.patches && input.patches.length > 0 ? { patches: [...input.patches] } : {}),
    settings: { ...input.settings },
  };
}

/** The deferral a log's `deferral` block holds (a held run's log), or null when it holds none. */
export function deferralOfLog(block: unknown): DeferralRecord | null {
  if (block === undefined) return null;
  const parsed = DeferralRecordSchema.safeParse(block);
  // Only the record as first written: a log never carries a decision.
  return parsed.success ? { ...parsed.data, decision: undefined, applying: undefined, applied: undefined } : null;
}

/** Whether two decisions say the same (who and when aside): the same decision recorded twice is one. */
export function sameDecision(
  a: Pick<DeferralDecision, "decision" | "code" | "reason" | "message">,
  b: Pick<DeferralDecision, "decision" | "code" | "reason" | "message">,
): boolean {
  return (
    a.decision === b.decision &&
    sameWords(a.code, b.code) &&
    sameWords(a.reason, b.reason) &&
    sameWords(a.message, b.message)
  );
}

/**
 * Whether a recorded field (`a`) is what a decider sent (`b`): equal, or equal but for what the
 * applier redacted in the record since (each `[redacted]` stands for some text: a decider without
 * the team's variables sends them again unredacted).
 */
function sameWords(a: string | undefined, b: string | undefined): boolean {
  if ((a ?? null) === (b ?? null)) return true;
  if (a === undefined || b === undefined || !a.includes("[redacted]")) return false;
  const parts = a.split("[redacted]").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${parts.join("[\\s\\S]+?")}$`).test(b);
}
