/** What every command gets: its parsed arguments and its I/O, plus the small readers of flag values. */
import { DURATION_FORMS, parseDuration } from "../text/duration.js";
import { HOOK_EVENTS } from "../contract/contract.js";
import { HooksError } from "../contract/errors.js";
import type { SettingsReport } from "../settings/hooks-config.js";
import type { EventReport } from "../leader/notices.js";
import { formatDuration, formatSpan } from "../text/messages.js";
import { shortRunId } from "../logs/format.js";
import type { TeamSetupInput } from "../team/setup.js";

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  /** True when stdout is a terminal (colour, progress). */
  isTTY: boolean;
  /** Resolves when the user asks to stop (SIGINT / SIGTERM); long-running commands race it. */
  stopSignal: Promise<string>;
}

export type FlagValue = string | boolean | Array<string | boolean> | undefined;
export type ParsedArgs = { values: Record<string, FlagValue>; positionals: string[] };
export type CommandFn = (args: ParsedArgs, io: CliIo) => Promise<number>;

/** A string flag's value, or undefined when not given. */
export function str(value: FlagValue): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** A whole-number flag (`--concurrency 2`): `fallback` when absent; E_USAGE naming the flag when bad. */
export function wholeNumber(value: FlagValue, flag: string, fallback: number, min: number): number {
  const raw = str(value);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || !Number.isSafeInteger(Number(raw))) {
    throw new HooksError("E_USAGE", `${flag} "${raw}" must be a whole number ≥ ${min}`);
  }
  return Number(raw);
}

/**
 * `--timeout-ms N`, or `--timeout` as people write durations (`90s`, `5m`, `1.5h`; a bare number is
 * seconds), as the milliseconds the settings take; both at once is a usage error.
 */
function timeoutFlag(v: ParsedArgs["values"]): string | undefined {
  const ms = str(v["timeout-ms"]);
  const human = str(v.timeout);
  if (human === undefined) return ms;
  if (ms !== undefined) throw new HooksError("E_USAGE", "--timeout and --timeout-ms say the same thing: give one");
  const parsed = parseDuration(human, { bare: "s" });
  if (parsed === null) throw new HooksError("E_USAGE", `--timeout "${human}" must be a duration: ${DURATION_FORMS}, or a number of seconds`);
  return String(parsed);
}

/** The team flags every team command shares (`--team-dir`, `--hooks-dir`, policy flags…), for resolveTeamSetup. */
export function teamSetupInput(v: ParsedArgs["values"], io: CliIo): TeamSetupInput {
  return {
    teamDir: str(v["team-dir"]),
    team: str(v.team),
    taskList: str(v["task-list"]),
    lead: str(v.lead),
    hooksDir: str(v["hooks-dir"]),
    cwd: str(v.cwd),
    timeoutMs: timeoutFlag(v),
    policyFlags: { failureAction: str(v["failure-action"]), maxReopens: str(v["max-reopens"]), followupOwner: str(v["followup-owner"]) },
    env: io.env,
    processCwd: io.cwd,
  };
}

/** Colour only for a person at a terminal: not when piped, not with NO_COLOR, not on a dumb terminal. */
export function wantsColour(io: Pick<CliIo, "isTTY" | "env">): boolean {
  return io.isTTY && !io.env.NO_COLOR && io.env.TERM !== "dumb";
}

const COLOURS = { green: 32, red: 31, yellow: 33, dim: 2 } as const;
export type Colour = keyof typeof COLOURS;

export function paint(text: string, colour: Colour, enabled: boolean): string {
  return enabled ? `\u001b[${COLOURS[colour]}m${text}\u001b[0m` : text;
}

/**
 * `10:31:07 task_completed #3 alice on_task_completed.sh failed 1.2s: exit code 1 → reopened (1/3), nudge alice (run 4a739620)`,
 * the deciding run's short id last (what `logs show` takes); a held gate: `… deferred 52ms: deferred: waiting
 * for CI → held until <time> (run <id>)`, the whole id that `decide` takes; its decision:
 * `… denied by ci after 8m 53s (deferred run <id>): denied • 2 tests fail → reopened (1/3), nudge alice (run 5b6a8c24)`.
 */
export function eventLine(r: EventReport, colour = false): string {
  const time = paint(r.time.slice(11, 19), "dim", colour);
  const who = r.member ? ` ${r.member}` : "";
  const label = r.taskId ? `${r.event} #${r.taskId}` : r.event;
  if (r.outcome === "no_hook") return `${time} ${label}${who}: no hook`;
  const d = r.decision;
  const verdict = d
    ? `${d.decision === "allow" ? "allowed" : d.decision === "deny" ? "denied" : "expired"}${d.decision === "expired" ? "" : ` by ${d.by}`}`
    : r.outcome === "passed" ? "passed" : r.timedOut ? "timed out" : r.outcome === "error" ? "error" : r.outcome;
  const painted = paint(verdict, r.outcome === "passed" ? "green" : r.outcome === "error" || r.outcome === "deferred" ? "yellow" : "red", colour);
  const timing = d ? `after ${formatSpan(d.waitedMs)} (deferred run ${d.deferredRunId})` : formatDuration(r.durationMs);
  // A pass that nothing judged (gates skipped or on trial) says so: "passed" alone would hide it.
  const detail = r.outcome === "passed" ? (r.noGateInForce ? `: ${r.summary}` : "") : r.outcome === "deferred" ? heldDetail(r.summary) : `: ${r.summary}`;
  const actions = r.actions.length && r.actions.join("") !== "none" ? ` → ${r.actions.join(", ")}` : "";
  const held = r.deferral ? ` (run ${r.deferral.runId})` : r.runId ? ` (run ${shortRunId(r.runId)})` : "";
  const open = r.policyApplied === false ? paint(" (policy NOT applied: see the warnings; the event stays open)", "yellow", colour) : "";
  return `${time} ${label}${who} ${r.hook ?? ""} ${painted} ${timing}${detail}${actions}${held}${open}${r.retry ? " (retry)" : ""}`;
}

/** A held gate's summary after the word `deferred` the line already says: ` (ci.pending): waiting for CI`, `: waiting for CI`, or nothing. */
export function heldDetail(summary: string): string {
  const rest = summary.replace(/^deferred/, "");
  return rest.startsWith(" (") || rest.startsWith(":") || rest === "" ? rest : `: ${summary}`;
}

/**
 * The settings table of `doctor` and `policy get`, one row per setting with its origin:
 * ```
 *   failure action              reopen           config.json hooks.failureAction
 *   failure mode task_completed closed           default
 * ```
 */
export function settingsRows(report: Omit<SettingsReport, "block" | "sources">): string {
  const rows: Array<[string, string, string]> = [
    ["failure action", report.values.failureAction, report.origins.failureAction],
    ["max reopens per task", String(report.values.maxReopensPerTask), report.origins.maxReopensPerTask],
    ["follow-up owner", report.values.followupOwner, report.origins.followupOwner],
    ["hook timeout", `${report.timeoutMs.value}ms`, report.timeoutMs.origin],
    ...HOOK_EVENTS.map((event): [string, string, string] => [`failure mode ${event}`, report.failureModes[event].value, report.failureModes[event].origin]),
    ["max hooks per event", String(report.limits.maxHooksPerEvent.value), report.limits.maxHooksPerEvent.origin],
    ["chain deadline", `${report.limits.chainDeadlineMs.value}ms`, report.limits.chainDeadlineMs.origin],
    ["max payload", `${report.limits.maxPayloadBytes.value} bytes`, report.limits.maxPayloadBytes.origin],
    ["setsid sweep", report.sweep.value, report.sweep.origin],
    ["exit codes", report.exitCodes.value, report.exitCodes.origin],
    ["defer timeout", `${report.deferTimeoutMs.value}ms`, report.deferTimeoutMs.origin],
    ["writable fields", report.writableFields.value.length > 0 ? report.writableFields.value.join(", ") : "none", report.writableFields.origin],
    ["confidential", String(report.confidential.value), report.confidential.origin],
    ["redact env", report.redactEnv.value.join(", ") || "-", report.redactEnv.origin],
    ...projectionRows(report.projection),
  ];
  return rows.map(([name, value, origin]) => `  ${name.padEnd(27)} ${value.padEnd(16)} ${origin}\n`).join("");
}

/** One `projection` row per projected gate (`<gate>: <fields>`); one `-` row without a projection. */
function projectionRows(projection: SettingsReport["projection"]): Array<[string, string, string]> {
  const entries = Object.entries(projection.value);
  if (entries.length === 0) return [["projection", "-", projection.origin]];
  return entries.map(([gate, fields]): [string, string, string] => ["projection", `${gate}: ${fields.join(", ") || "identity fields only"}`, projection.origin]);
}

/**
 * On a terminal, one status line under the output that says which hooks have been running for more
 * than two seconds, and for how long; cleared before every other line is printed.
 */
export class RunningLine {
  readonly #io: CliIo;
  readonly #running = new Map<string, { label: string; since: number }>();
  #timer: NodeJS.Timeout | null = null;
  #shown = false;

  constructor(io: CliIo) {
    this.#io = io;
  }

  started(key: string, label: string): void {
    this.#running.set(key, { label, since: Date.now() });
    this.#timer ??= setInterval(() => this.#draw(), 1000);
  }

  finished(key: string): void {
    this.#running.delete(key);
    if (this.#running.size === 0) this.close();
  }

  /** Prints `text` above the status line. */
  print(text: string): void {
    this.#clear();
    this.#io.stdout(text);
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#clear();
  }

  #draw(): void {
    const now = Date.now();
    const slow = [...this.#running.values()].filter((r) => now - r.since >= 2000);
    if (slow.length === 0) return this.#clear();
    const text = slow.map((r) => `${r.label} running ${Math.round((now - r.since) / 1000)}s`).join(", ");
    this.#io.stdout(`\r\u001b[2K… ${text}`);
    this.#shown = true;
  }

  #clear(): void {
    if (!this.#shown) return;
    this.#io.stdout("\r\u001b[2K");
    this.#shown = false;
  }
}
