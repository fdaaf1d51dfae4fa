/**
 * Whether a deferral file (hook-state/deferrals/<runId>.json, deferrals/record.ts) is still the
 * deferral its gate held. The agents the gate judges can write that folder (docs/security.md, the
 * threat model): a decision written into the file by hand is not prevented, only named (`by`), but
 * nothing else in it may change, because everything else decides *what* a decision settles and
 * *when* the gate expires:
 *
 * - `key`, `event`, `taskId`, `taskListId`: which event the policy is applied to and the ledger
 *   closes. A key changed to another task's would let a decision pass a gate that never ran;
 * - `expiresAt`: pushed into 2099, the gate would never expire (and never fail);
 * - a file planted under another run's name, or a deferral no gate held at all, the same.
 *
 * The reference is the held run's record as first written: the `deferral` block of its log (written
 * before the file, event/invoke.ts), found through the ledger's `defer` record of the run, or, for a
 * deferral the ledger does not know (held by `run --apply-policy`), through the file's own `logFile`
 * — that log must hold the same run. The ledger is the leader's own file: when it holds the run but
 * its log is gone, its key, event run id and deadline still stand. A deferral with no reference at
 * all is refused: no gate held it. Outcomes are data; the callers say them and repair the file.
 *
 * `applying` and `applied` are the applier's, and say "the policy is applied, here is its log": a
 * claim, written by hand, that would close a gate with nothing applied and no decision named. So the
 * log they name must be the decision log of that deferral, in the team's hook-logs
 * (`decisionLogProblem`), or the claim is not believed.
 */
import path from "node:path";
import { DEFERRAL_HELD_FIELDS, type DeferralRecord, deferralOfLog } from "../deferrals/record.js";
import { type HookTrigger, readHookLog } from "../logs/hook-log.js";
import { MAX_TEAM_FILE_BYTES, readRegularFile } from "../team/json-file.js";
import { hookLogsDir, ledgerFile } from "../team/paths.js";

/** What the ledger's `defer` record says of a deferral (docs/ledger.md). */
export interface LedgerHold {
  key: string;
  /** The event's run id (the ledger's `runId`). */
  eventRunId: string;
  expiresAt: string;
  log: string | null;
}

type DeferralCheck =
  /** The file holds the deferral as held (its decision, if any, aside). */
  | { kind: "agrees"; reference: DeferralRecord }
  /**
   * `fields` differ from the reference: put them back (`{ ...file, ...heldFields(reference) }`) before anything is done
   * with it.
   */
  | { kind: "differs"; reference: DeferralRecord; fields: string[] }
  /** No gate held it: neither the ledger nor a held run's log knows the run. */
  | { kind: "refused"; problem: string };

/** Checks `record` against `opts.reference` (the caller's memory), else against the ledger's hold and the logs. */
export async function checkDeferral(
  record: DeferralRecord,
  opts: { reference?: DeferralRecord | null; ledger?: LedgerHold | null; teamDir: string },
): Promise<DeferralCheck> {
  const found = opts.reference
    ? { reference: opts.reference }
    : await referenceOf(record, opts.ledger ?? null, opts.teamDir);
  if (!("reference" in found)) return { kind: "refused", problem: found.problem };
  const { reference } = found;
  const fields = changedFields(record, reference);
  return fields.length === 0 ? { kind: "agrees", reference } : { kind: "differs", reference, fields };
}

/**
 * The fields fixed when the gate was held, as the reference has them (absent ones as undefined, so that a field added
 * to the file goes).
 */
export function heldFields(reference: DeferralRecord): Partial<DeferralRecord> {
  return Object.fromEntries(DEFERRAL_HELD_FIELDS.map((field) => [field, reference[field]])) as Partial<DeferralRecord>;
}

/** The held fields in which `record` differs from `reference`. */
export function changedFields(record: DeferralRecord, reference: DeferralRecord): string[] {
  return DEFERRAL_HELD_FIELDS.filter((field) => canonical(record[field]) !== canonical(reference[field]));
}

/** What the text of the team's ledger says of deferral `runId`: its last `defer` record, or null. */
export function ledgerHoldOf(teamDir: string, runId: string): LedgerHold | null {
  const read = readRegularFile(ledgerFile(teamDir), { maxBytes: MAX_TEAM_FILE_BYTES });
  if (!read.ok) return null;
  const needle = `"deferral":${JSON.stringify(runId)}`;
  let found: LedgerHold | null = null;
  for (const line of read.text.split("\n")) {
    if (!line.startsWith('{"op":"defer"') || !line.includes(needle)) continue;
    try {
      const r = JSON.parse(line) as Record<string, unknown>;
      if (
        r.deferral === runId &&
        typeof r.key === "string" &&
        typeof r.runId === "string" &&
        typeof r.expiresAt === "string"
      ) {
        found = {
          key: r.key,
          eventRunId: r.runId,
          expiresAt: r.expiresAt,
          log: typeof r.log === "string" ? r.log : null,
        };
      }
    } catch {
      // A torn line (a crash mid-append): not a record.
    }
  }
  return found;
}

async function referenceOf(
  record: DeferralRecord,
  ledger: LedgerHold | null,
  teamDir: string,
): Promise<{ reference: DeferralRecord } | { problem: string }> {
  if (ledger) {
    const held = await heldOfLog(ledger.log, record.runId);
    if (held) return { reference: held };
    // The log is gone (hook-logs cleaned, a team dir made again): the ledger's own record still says what was held.
    const [event, taskId] = ledger.key.split(":");
    const fromKey: Partial<DeferralRecord> = {
      ...(event === "task_completed" || event === "task_failed" ? { event } : {}),
      ...(taskId ? { taskId } : {}),
    };
    return {
      reference: { ...record, key: ledger.key, eventRunId: ledger.eventRunId, expiresAt: ledger.expiresAt, ...fromKey },
    };
  }
  // Held by `run --apply-policy` (no leader's ledger knows it): only by this team's own log of that run. A
  // deferral made in another team (a scratch copy of a task, under a gate of an agent's own) and copied in is none.
  const own =
    record.logFile !== null && path.dirname(path.resolve(record.logFile)) === path.resolve(hookLogsDir(teamDir));
  if (!own)
    return {
      problem: `no gate held run ${record.runId}: the ledger has no such deferral, and its logFile (${record.logFile ?? "none"}) is not a log of this team's (${hookLogsDir(teamDir)})`,
    };
  const held = await heldOfLog(record.logFile, record.runId, teamDir);
  if (held) return { reference: held };
  return {
    problem: `no gate held run ${record.runId}: the ledger has no such deferral, and its logFile (${record.logFile ?? "none"}) is not the log of a held run of that id`,
  };
}

/**
 * Why `logFile` (a deferral's `applying` or `applied` log) is not the decision log of `runId` in the team's hook-logs;
 * null when it is.
 */
export async function decisionLogProblem(
  teamDir: string,
  runId: string,
  logFile: string | null,
): Promise<string | null> {
  if (logFile === null) return "it names no decision log";
  const dir = hookLogsDir(teamDir);
  if (path.dirname(path.resolve(logFile)) !== path.resolve(dir)) return `its log ${logFile} is not in ${dir}`;
  const read = await readHookLog(logFile);
  if (!read.ok) return read.problem.kind === "missing" ? `its log ${logFile} does not exist` : read.problem.message;
  const decision = read.record.decision as { deferredRunId?: unknown } | undefined;
  return decision?.deferredRunId === runId ? null : `its log ${logFile} is not the decision log of run ${runId}`;
}

/** The held record a log's `deferral` block holds for `runId`, or null. */
export async function heldOfLog(log: string | null, runId: string, teamDir?: string): Promise<DeferralRecord | null> {
  if (log === null) return null;
  const read = await readHookLog(log);
  // A log of another team's run (its invocation names that team): not this team's hold.
  if (read.ok && teamDir !== undefined && path.resolve(read.record.invocation.teamDir) !== path.resolve(teamDir))
    return null;
  const held = read.ok ? deferralOfLog(read.record.deferral) : null;
  return held?.runId === runId ? held : null;
}

/**
 * What fired the held run's event, from its log: a decision's log is of the same event, whoever
 * applies it (the leader, or `decide` while none runs). The leader's when the log cannot say.
 */
export async function heldTrigger(log: string | null): Promise<HookTrigger> {
  if (log === null) return "leader";
  const read = await readHookLog(log);
  return read.ok && read.record.trigger === "hand" ? "hand" : "leader";
}

/** JSON with sorted keys: the same record read from a log and from a file compares equal whatever its key order. */
function canonical(value: unknown): string {
  if (value === undefined) return "undefined";
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/**
 * `key "task_completed:9:…" (held: "task_completed:1:…"), expiresAt "2099-…" (held: "2026-…")`: what changed, for a
 * warning.
 */
export function describeChanges(record: DeferralRecord, reference: DeferralRecord, fields: readonly string[]): string {
  const shown = (value: unknown): string => {
    const text = value === undefined ? "absent" : JSON.stringify(value);
    return text.length > 80 ? `${text.slice(0, 79)}…` : text;
  };
  return fields
    .map(
      (f) => `${f} ${shown(record[f as keyof DeferralRecord])} (held: ${shown(reference[f as keyof DeferralRecord])})`,
    )
    .join(", ");
}
