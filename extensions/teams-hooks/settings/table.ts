/**
 * Every setting of a team, one row each: its name, the flag that gives it on a command line, its
 * config.json field, its environment variable, its default, its range and one line of doc. The rest
 * is made from these rows: the precedence walk and the origins (settings/options.ts, settings/
 * team-settings.ts), the flags' defaults in `--help` (cli/commands.ts), the settings rows of `config`,
 * `policy get` and `doctor` (cli/io.ts `settingsRows`) and the settings table of docs/cli.md
 * (`npm run docs:cli`). Each row's schema sits beside the resolver, in `SETTING_SCHEMAS`
 * (settings/options.ts), typed to hold one per row: the command table reads this file on every call,
 * so it holds data only and loads nothing.
 *
 * Precedence, for the levels a row has: flag > config.json `hooks` > environment > default.
 */
import type { HookEventName } from "../contract/contract.js";
import type { SettingDoc } from "../text/cli-reference.js";
import { DEFAULT_TIMEOUT_MS, DEFAULT_WRITABLE_FIELDS } from "../contract/setting-defaults.js";

/** Node timers hold at most 2³¹ − 1 ms; a longer delay fires at once (TimeoutOverflowWarning). */
export const MAX_TIMEOUT_MS = 2_147_483_647;

const HOUR_MS = 3_600_000;

export interface SettingRow<T = unknown> {
  /** As `config`, `policy get` and `doctor` name it, in their settings rows. */
  label: string;
  /** The flag that gives it on the command line of `run`, `watch`, `config` (above config.json); null: none. */
  flag: string | null;
  /** The flag of `policy set` that writes its config.json field; null: `policy set` does not write it. */
  setFlag: string | null;
  /** Its field in config.json, from the top (`hooks.failureAction`); null: not in config.json. */
  field: string | null;
  /** The environment variables that give it, the first that holds a valid value winning; [] when none. */
  env: readonly string[];
  default: T;
  /** The values a number may take; a config.json value outside is capped to it (`capLimits`), a flag's refused. */
  range?: Readonly<{ min: number; max: number }>;
  /** How its value reads in the settings rows: a number of `ms`, of `bytes`. */
  unit?: "ms" | "bytes";
  /** How an empty list reads in the settings rows. */
  empty?: string;
  /** A yes/no setting the settings rows say as `yes` or `no` (else `true` or `false`). */
  yesNo?: true;
  /** One line: what it decides. */
  doc: string;
}

/** A row, its type kept as written (a row with a range is known to have one). */
function row<S extends SettingRow>(spec: S): Readonly<S> {
  if (spec.range) Object.freeze(spec.range);
  Object.freeze(spec.env);
  return Object.freeze(spec);
}

/** What a hook error means for each event when nothing says otherwise; a start gate's is closed. */
const DEFAULT_FAILURE_MODES: Readonly<Record<HookEventName, "closed" | "open">> = Object.freeze({
  task_completed: "closed",
  task_failed: "closed",
  idle: "open",
  task_started: "closed",
});

/** Every setting, in the order the settings rows show them. */
export const SETTINGS = Object.freeze({
  failureAction: row({
    label: "failure action",
    flag: "--failure-action",
    setFlag: "--failure-action",
    field: "hooks.failureAction",
    env: ["PI_TEAMS_HOOKS_FAILURE_ACTION", "PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE"],
    default: "warn" as "warn" | "followup" | "reopen" | "reopen_followup",
    doc: "what a failed gate does, in any case: warn | followup | reopen | reopen_followup",
  }),
  maxReopensPerTask: row({
    label: "max reopens per task",
    flag: "--max-reopens",
    setFlag: "--max-reopens",
    field: "hooks.maxReopensPerTask",
    env: ["PI_TEAMS_HOOKS_MAX_REOPENS_PER_TASK"],
    default: 3,
    range: { min: 0, max: Number.MAX_SAFE_INTEGER },
    doc: "the budget of reopens and follow-ups of a task and the follow-ups made for it; once spent, the gate makes no more; 0 = never",
  }),
  followupOwner: row({
    label: "follow-up owner",
    flag: "--followup-owner",
    setFlag: "--followup-owner",
    field: "hooks.followupOwner",
    env: ["PI_TEAMS_HOOKS_FOLLOWUP_OWNER"],
    default: "member" as "member" | "lead" | "none",
    doc: "who owns a follow-up task: member | lead | none",
  }),
  timeoutMs: row({
    label: "hook timeout",
    flag: "--timeout-ms",
    setFlag: null,
    field: null,
    env: ["PI_TEAMS_HOOK_TIMEOUT_MS"],
    default: DEFAULT_TIMEOUT_MS,
    range: { min: 1, max: MAX_TIMEOUT_MS },
    unit: "ms",
    doc: "hook timeout in ms",
  }),
  failureMode: row({
    label: "failure mode",
    flag: null,
    setFlag: "--failure-mode",
    field: "hooks.failureMode",
    env: ["PI_TEAMS_HOOKS_FAILURE_MODE"],
    default: DEFAULT_FAILURE_MODES,
    doc: "what a hook error means (a hook that could not start, timed out, gave an invalid verdict): open (the event passes) | closed (it fails)",
  }),
  maxHooksPerEvent: row({
    label: "max hooks per event",
    flag: null,
    setFlag: "--max-hooks-per-event",
    field: "hooks.limits.maxHooksPerEvent",
    env: [],
    default: 16,
    range: { min: 1, max: 64 },
    doc: "hooks in one event's chain",
  }),
  chainDeadlineMs: row({
    label: "chain deadline",
    flag: null,
    setFlag: "--chain-deadline-ms",
    field: "hooks.limits.chainDeadlineMs",
    env: [],
    default: 300_000,
    range: { min: 1, max: MAX_TIMEOUT_MS },
    unit: "ms",
    doc: "the whole chain of one event, in ms",
  }),
  maxPayloadBytes: row({
    label: "max payload",
    flag: null,
    setFlag: "--max-payload-bytes",
    field: "hooks.limits.maxPayloadBytes",
    env: [],
    default: 8 * 1024 * 1024,
    range: { min: 1024, max: 1024 * 1024 * 1024 },
    unit: "bytes",
    doc: "the context document of one invocation, in bytes",
  }),
  sweep: row({
    label: "setsid sweep",
    flag: null,
    setFlag: null,
    field: "hooks.sweep",
    env: [],
    default: "auto" as "auto" | "always",
    doc: "when a run is checked for processes that left its group with its run id: auto (when something is suspect) | always",
  }),
  exitCodes: row({
    label: "exit codes",
    flag: null,
    setFlag: null,
    field: "hooks.exitCodes",
    env: [],
    default: "v1" as "v1" | "strict",
    doc: "what an exit code means without a verdict: v1 (0 passes, any other denies) | strict (0 allows, 2 denies, any other is a hook error)",
  }),
  sandbox: row({
    label: "sandbox",
    flag: null,
    setFlag: null,
    field: "hooks.sandbox",
    env: [],
    default: "auto" as "auto" | "required" | "off",
    doc: "how the team's gates run: auto (sandboxed wherever this machine can) | required | off; a gate's own sandbox= wins",
  }),
  deferTimeoutMs: row({
    label: "defer timeout",
    flag: null,
    setFlag: null,
    field: "hooks.deferTimeoutMs",
    env: [],
    default: 24 * HOUR_MS,
    range: { min: 1_000, max: 30 * 24 * HOUR_MS },
    unit: "ms",
    doc: "how long a deferred gate waits for its decision before it fails (defer_expired)",
  }),
  writableFields: row({
    label: "writable fields",
    flag: null,
    setFlag: null,
    field: "hooks.writableFields",
    env: [],
    default: DEFAULT_WRITABLE_FIELDS,
    empty: "none",
    doc: "the fields a patch verdict may write, as dotted paths (never the task's identity or the gate's own metadata)",
  }),
  confidential: row({
    label: "confidential",
    flag: null,
    setFlag: null,
    field: "hooks.confidential",
    env: [],
    default: false,
    doc: "HTTP handlers and hook logs get no task content: identity and lifecycle only",
  }),
  redactEnv: row({
    label: "redact env",
    flag: null,
    setFlag: null,
    field: "hooks.redactEnv",
    env: [],
    default: Object.freeze([]) as readonly string[],
    empty: "-",
    doc: "variables whose values are redacted from hook output, besides the handlers' secrets",
  }),
  reassignOnReopen: row({
    label: "reassign on reopen",
    flag: null,
    setFlag: null,
    field: "hooks.reassignOnReopen",
    env: [],
    default: true,
    doc: "the owner of a task the policy reopens is sent its task_assignment again",
  }),
  projection: row({
    label: "projection",
    flag: null,
    setFlag: null,
    field: "hooks.projection",
    env: [],
    default: Object.freeze({}) as Readonly<Record<string, readonly string[]>>,
    doc: "gate name → the fields of the context document it may see ({}: every hook sees the whole document)",
  }),
  trustChanges: row({
    label: "trust changes",
    flag: "--trust-changes",
    setFlag: null,
    field: null,
    env: [],
    default: false,
    yesNo: true,
    doc: "gates not as trusted run as they are now",
  }),
  allowInsecureHooks: row({
    label: "allow insecure hooks",
    flag: "--allow-insecure-hooks",
    setFlag: null,
    field: null,
    env: [],
    default: false,
    yesNo: true,
    doc: "world-writable gates and gates of another owner run",
  }),
});

export type SettingName = keyof typeof SETTINGS;

/** The settings a team sets (in config.json or the environment), as against a command line's alone. */
export const TEAM_SETTING_NAMES: readonly SettingName[] = Object.freeze(
  (Object.keys(SETTINGS) as SettingName[]).filter((name) => {
    const setting: SettingRow = SETTINGS[name];
    return setting.field !== null || setting.env.length > 0;
  }),
);

/** A value as the settings rows show it: `60000ms`, `8388608 bytes`, `metadata, subject`, `none`, `yes`. */
export function showSetting(name: SettingName, value: unknown): string {
  const setting: SettingRow = SETTINGS[name];
  if (Array.isArray(value)) return value.length > 0 ? value.join(", ") : (setting.empty ?? "");
  if (typeof value === "boolean" && setting.yesNo) return value ? "yes" : "no";
  if (setting.unit === "ms") return `${value}ms`;
  if (setting.unit === "bytes") return `${value} bytes`;
  return String(value);
}

/** The three limits of `hooks.limits`, by key. */
export const LIMIT_NAMES = ["maxHooksPerEvent", "chainDeadlineMs", "maxPayloadBytes"] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];

/** A flag's default as `--help` says it: the variable first when there is one (`$PI_TEAMS_HOOK_TIMEOUT_MS, else 60000`). */
export function flagDefault(name: SettingName): string {
  const setting: SettingRow = SETTINGS[name];
  const value = String(setting.default);
  return setting.env.length > 0 && setting.field === null ? `$${setting.env[0]}, else ${value}` : value;
}

/** A range as `--help` and messages say it: `1 to 64`. */
export function rangeText(name: SettingName): string {
  const range = (SETTINGS[name] as SettingRow).range;
  return range ? `${range.min} to ${range.max}` : "";
}

/** A default as docs/cli.md says it: `60000 ms`, `closed (idle: open)`, `["metadata"]`. */
function defaultText(name: SettingName): string {
  const setting: SettingRow = SETTINGS[name];
  const value = setting.default;
  if (name === "failureMode") {
    const modes = Object.entries(value as Record<string, string>);
    const usual = modes[0]?.[1] ?? "";
    const others = modes.filter(([, mode]) => mode !== usual).map(([event, mode]) => `${event}: ${mode}`);
    return others.length > 0 ? `${usual} (${others.join(", ")})` : usual;
  }
  if (typeof value === "object") return JSON.stringify(value);
  return setting.unit ? `${value} ${setting.unit}` : String(value);
}

/** Every setting as the settings block of docs/cli.md shows it (`npm run docs:cli`). */
export function settingDocs(): SettingDoc[] {
  return (Object.keys(SETTINGS) as SettingName[]).map((name) => {
    const setting: SettingRow = SETTINGS[name];
    const { flag, setFlag, field, env, doc } = setting;
    return { name, flag, setFlag, field, env, default: defaultText(name), doc };
  });
}
