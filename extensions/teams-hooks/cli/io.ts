/** What every command gets: its parsed arguments and its I/O, plus the small readers of flag values. */
import { DURATION_FORMS, parseDuration } from "../text/duration.js";
import { HOOK_EVENTS } from "../contract/contract.js";
import { HooksError } from "../contract/errors.js";
import type { SettingsInForce, SettingsReport } from "../settings/team-settings.js";
import {
  LIMIT_NAMES,
  SETTINGS,
  TEAM_SETTING_NAMES,
  showSetting,
  type LimitName,
  type SettingName,
} from "../settings/table.js";
import type { EventReport } from "../leader/notices.js";
import { formatDuration, formatSpan, nonBlockingPass, verdictNotRead } from "../text/messages.js";
import { colourEnabled, runningText } from "../text/terminal.js";
import { type ColumnSpec, fitTable, naturalWidths, tableRow } from "../text/table.js";
import { shortRunId } from "../logs/format.js";
import type { TeamSetup, TeamSetupInput } from "../team/setup.js";
import { gateWarnings } from "../doctor/gate-checks.js";
import { createRuntime, type Runtime } from "../runner/runtime.js";

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  /** True when stdout is a terminal (colour, progress). */
  isTTY: boolean;
  /** The terminal's width when stdout is one (`process.stdout.columns`); text/terminal.ts `terminalWidth` decides. */
  columns?: number;
  /** True when stderr is a terminal: `run`'s "still running" line goes there, so that stdout stays clean. */
  stderrIsTTY?: boolean;
  /** Resolves when the user asks to stop (SIGINT / SIGTERM); long-running commands race it. */
  stopSignal: Promise<string>;
  /**
   * Asks the person at the terminal a question and resolves with the line typed (null at the end of
   * input). Present only when stdin and stderr are a terminal: `trust` approves nothing without it,
   * `approval` or `--yes`.
   */
  ask?: (question: string) => Promise<string | null>;
  /**
   * The command runs for a person who typed it where no terminal is (pi's `/gates trust`): how the
   * approval is said (`pi /gates trust, typed in the session`).
   */
  approval?: string;
  /**
   * What the command runs on (runner/runtime.ts): the bin builds it once, with the test pause it alone
   * reads from the environment. Absent (the library's `runCli`, a test): `main` builds the defaults once.
   */
  runtime?: Runtime;
}

/** The runtime the bin built, or the defaults. */
export function runtimeOf(io: Pick<CliIo, "runtime">): Runtime {
  return io.runtime ?? createRuntime();
}

export type FlagValue = string | boolean | Array<string | boolean> | undefined;
export type ParsedArgs = { values: Record<string, FlagValue>; positionals: string[] };
export type CommandFn = (args: ParsedArgs, io: CliIo) => Promise<number>;

/** A string flag's value, or undefined when not given. */
export function str(value: FlagValue): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** How a person approved an act shown to them (`how` is said in the output and to the lead), or why not. */
type Approval = { kind: "approved"; how: string } | { kind: "declined" } | { kind: "no_terminal" };

/**
 * How a person approves what was just shown (`trust`, `decide`): at a terminal, asked (`at a terminal`,
 * or declined when the answer is not yes, `--yes` or not); for pi's `/gates trust`, as typed there; else
 * only with `--yes` (`without a terminal (--yes)`). The caller says what a missing terminal needs.
 */
export async function personApproval(io: CliIo, yes: boolean, question: string): Promise<Approval> {
  if (io.ask) {
    const answer = await io.ask(question);
    return answer !== null && /^y(es)?$/i.test(answer.trim())
      ? { kind: "approved", how: "at a terminal" }
      : { kind: "declined" };
  }
  if (io.approval) return { kind: "approved", how: io.approval };
  if (yes) return { kind: "approved", how: "without a terminal (--yes)" };
  return { kind: "no_terminal" };
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
  if (parsed === null)
    throw new HooksError(
      "E_USAGE",
      `--timeout "${human}" must be a duration: ${DURATION_FORMS}, or a number of seconds`,
    );
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
    policyFlags: {
      failureAction: str(v["failure-action"]),
      maxReopens: str(v["max-reopens"]),
      followupOwner: str(v["followup-owner"]),
    },
    trustFlags: { trustChanges: v["trust-changes"] === true, allowInsecureHooks: v["allow-insecure-hooks"] === true },
    env: io.env,
    processCwd: io.cwd,
  };
}

/** Colour for stdout: text/terminal.ts `colourEnabled` (NO_COLOR, FORCE_COLOR, else a terminal that is not dumb). */
export function wantsColour(io: Pick<CliIo, "isTTY" | "env">): boolean {
  return colourEnabled(io);
}

const COLOURS = { green: 32, red: 31, yellow: 33, dim: 2 } as const;
type Colour = keyof typeof COLOURS;

export function paint(text: string, colour: Colour, enabled: boolean): string {
  return enabled ? `\u001b[${COLOURS[colour]}m${text}\u001b[0m` : text;
}

/**
 * `10:31:07 task_completed #3 alice on_task_completed.sh failed 1.2s: exit code 1 → reopened (1/3), nudge alice (run
 * 4a739620)`, the deciding run's short id last (what `logs show` takes); a held gate: `… deferred 52ms: deferred:
 * waiting for CI → held until <time> (run <id>)`, the whole id that `decide` takes; its decision: `… denied by ci after
 * 8m 53s (deferred run <id>): denied • 2 tests fail → reopened (1/3), nudge alice (run 5b6a8c24)`.
 */
export function eventLine(r: EventReport, colour = false, clock: (iso: string) => string = utcClock): string {
  const time = paint(clock(r.time), "dim", colour);
  const who = r.member ? ` ${r.member}` : "";
  const label = r.taskId ? `${r.event} #${r.taskId}` : r.event;
  if (r.outcome === "no_hook") return `${time} ${label}${who}: no hook`;
  const d = r.decision;
  const decided = d?.decision === "allow" ? "allowed" : d?.decision === "deny" ? "denied" : "expired";
  const verdict = d
    ? `${decided}${d.decision === "expired" ? "" : ` by ${d.by}`}`
    : r.held
      ? "held"
      : r.outcome === "passed"
        ? passedWord(r)
        : r.timedOut
          ? "timed out"
          : r.outcome === "error"
            ? "error"
            : r.outcome;
  // A pass that let an error through is not plain green: the error is what the line is for.
  const letThrough = r.outcome === "passed" && r.nonBlocking !== undefined;
  const warm = r.outcome === "error" || r.outcome === "deferred" || letThrough;
  const hue = warm ? "yellow" : r.outcome === "passed" ? "green" : "red";
  const painted = paint(verdict, hue, colour);
  const timing = d ? `after ${formatSpan(d.waitedMs)} (deferred run ${d.deferredRunId})` : formatDuration(r.durationMs);
  // A pass that nothing judged (gates skipped or on trial) says so: "passed" alone would hide it.
  // A held event (its gate could not judge the work) says why after the word `held` the line already says.
  const detail =
    r.outcome === "passed"
      ? r.noGateInForce
        ? `: ${r.summary}`
        : ""
      : r.outcome === "deferred"
        ? heldDetail(r.summary)
        : r.held
          ? `: ${r.summary.replace(/^held: /, "")}`
          : `: ${r.summary}`;
  const actions = r.actions.length && r.actions.join("") !== "none" ? ` → ${r.actions.join(", ")}` : "";
  const held = r.deferral ? ` (run ${r.deferral.runId})` : r.runId ? ` (run ${shortRunId(r.runId)})` : "";
  const open =
    r.policyApplied === false
      ? paint(" (policy NOT applied: see the warnings; the event stays open)", "yellow", colour)
      : "";
  const unread = r.verdictUnread === undefined ? "" : ` • ${verdictNotRead(r.verdictUnread)}`;
  return `${time} ${label}${who} ${r.hook ?? ""} ${painted} ${timing}${detail}${actions}${held}${open}${r.retry ? " (retry)" : ""}${unread}`;
}

/** `passed`, or what a pass let through: `passed (non-blocking error: exit code 1 • linter crashed)`. */
function passedWord(r: EventReport): string {
  return r.nonBlocking === undefined ? "passed" : nonBlockingPass(r.nonBlocking);
}

/** `10:31:07` of an ISO time, in UTC. */
function utcClock(iso: string): string {
  return iso.slice(11, 19);
}

/**
 * A held gate's summary after the word `deferred` the line already says: ` (ci.pending): waiting for CI`, `: waiting
 * for CI`, or nothing.
 */
export function heldDetail(summary: string): string {
  const rest = summary.replace(/^deferred/, "");
  return rest.startsWith(" (") || rest.startsWith(":") || rest === "" ? rest : `: ${summary}`;
}

/**
 * The settings table of `doctor`, `policy get` and `config`, one row per setting a team sets, in the
 * settings table's order and words (settings/table.ts), with its origin:
 * ```
 *   failure action              reopen           config.json hooks.failureAction
 *   failure mode task_completed closed           default
 * ```
 */
export function settingsRows(settings: SettingsShown, width = Number.POSITIVE_INFINITY): string {
  const rows = TEAM_SETTING_NAMES.flatMap((name): Array<[string, string, string]> => {
    const label = SETTINGS[name].label;
    if (name === "projection") return projectionRows(settings.projection);
    if (name === "failureMode")
      return HOOK_EVENTS.map((event) => {
        const mode = settings.failureModes[event];
        return [`${label} ${event}`, mode.value, mode.origin];
      });
    const setting = isLimit(name) ? settings.limits[name] : settings[name as Exclude<TeamSettingKey, "failureMode">];
    return [[label, showSetting(name, setting.value), setting.origin]];
  });
  // Each row laid out on its own, as ever: a long value pushes only its own origin.
  const opts = { width, gap: 1, indent: "  " };
  return rows
    .map((cells) => {
      const widths = fitTable(naturalWidths([cells], 3, [27, 16]), SETTINGS_COLUMNS, opts);
      return `${tableRow(cells, widths, SETTINGS_COLUMNS, opts)}\n`;
    })
    .join("");
}

/** What the settings rows read: every setting a team sets, each as `{ value, source, origin }`. */
type SettingsShown = Pick<SettingsInForce, Exclude<TeamSettingKey, "failureMode">> &
  Pick<SettingsInForce, "failureModes" | "limits">;
type TeamSettingKey = Exclude<SettingName, LimitName | "trustChanges" | "allowInsecureHooks">;

function isLimit(name: SettingName): name is LimitName {
  return (LIMIT_NAMES as readonly string[]).includes(name);
}

/** A settings row gives way to a narrow terminal by cutting a long value or origin. */
const SETTINGS_COLUMNS: readonly ColumnSpec[] = [{}, { min: 16 }, { min: 12 }];

/** One `projection` row per projected gate (`<gate>: <fields>`); one `-` row without a projection. */
function projectionRows(projection: SettingsReport["projection"]): Array<[string, string, string]> {
  const entries = Object.entries(projection.value);
  if (entries.length === 0) return [["projection", "-", projection.origin]];
  return entries.map(([gate, fields]): [string, string, string] => [
    "projection",
    `${gate}: ${fields.join(", ") || "identity fields only"}`,
    projection.origin,
  ]);
}

/**
 * On a terminal, one status line under the output that says which hooks have been running for more
 * than `afterMs`, and for how long (text/terminal.ts `runningText`); redrawn in place, cut to the
 * terminal's width (a line that wrapped could not be redrawn), and cleared before every other line
 * is printed and at the end.
 */
export class RunningLine {
  readonly #write: (text: string) => void;
  readonly #width: number;
  readonly #afterMs: number;
  readonly #running = new Map<string, { label: string; since: number }>();
  #timer: NodeJS.Timeout | null = null;
  #shown = "";

  /** `write` goes to the terminal the line is drawn on (stdout for watch, stderr for run). */
  constructor(write: (text: string) => void, opts: { width: number; afterMs: number }) {
    this.#write = write;
    this.#width = opts.width;
    this.#afterMs = opts.afterMs;
  }

  /** `key` started (again: its clock restarts) under `label`. */
  started(key: string, label: string): void {
    this.#running.set(key, { label, since: Date.now() });
    // Ticks more often than the seconds change, so that the line shows up soon after `afterMs`.
    this.#timer ??= setInterval(() => this.#draw(), 250);
  }

  finished(key: string): void {
    this.#running.delete(key);
    if (this.#running.size === 0) this.close();
  }

  /** Prints `text` above the status line. */
  print(text: string): void {
    this.#clear();
    this.#write(text);
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#clear();
  }

  #draw(): void {
    const text = runningText([...this.#running.values()], Date.now(), { afterMs: this.#afterMs, width: this.#width });
    if (text === "") return this.#clear();
    if (text === this.#shown) return;
    this.#write(`\r\u001b[2K${text}`);
    this.#shown = text;
  }

  #clear(): void {
    if (this.#shown === "") return;
    this.#write("\r\u001b[2K");
    this.#shown = "";
  }
}

/**
 * Says on stderr what the setup warns of and what doctor finds wrong with the gates, before any gate
 * runs: `run` and `watch` alike. `noGate`: whether a team with no gate at all is worth a warning.
 */
export async function warnBeforeRunning(setup: TeamSetup, io: CliIo, noGate: boolean): Promise<void> {
  for (const warning of setup.warnings) io.stderr(`warning: ${warning}\n`);
  const warnings = await gateWarnings({
    hooksDir: setup.hooksDir,
    teamHooksDir: setup.teamHooksDir,
    allowInsecure: setup.settings.allowInsecureHooks.value,
    noGate,
    handlers: setup.settings.handlers,
    projection: setup.settings.projection.value,
    project: { cwd: setup.cwd, env: io.env },
  });
  for (const warning of warnings) io.stderr(`warning: ${warning}\n`);
}
