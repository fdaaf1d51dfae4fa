/**
 * Effective settings — the failure policy pi-agent-teams defines and the hook timeout — resolved in one
 * place, so every caller agrees, with the precedence flag > `config.json` `hooks` > environment >
 * default (docs/decisions/team-dir-facts.md). Each setting's levels are its row of the settings table
 * (settings/table.ts): one walk (`resolveSetting`) serves every one. Pure: the raw config block and the
 * environment are arguments. A bad flag is a usage error (`E_USAGE`, exit 2); a bad config or
 * environment value costs one warning naming where it came from, and the next level applies.
 */
import { z } from "zod";
import { FAILURE_ACTIONS, FOLLOWUP_OWNERS } from "../contract/team-files.js";
import { HooksError } from "../contract/errors.js";
import { SETTING_EXPECTED, invalidFlagValue, invalidSettingValue, settingNotAnObject } from "../text/messages.js";
import { LIMIT_NAMES, SETTINGS, type LimitName, type SettingRow } from "./table.js";

type Range = Readonly<{ min: number; max: number }>;

/** A whole decimal number in [min, max]: a number, or a string of digits (surrounding blanks ignored). */
function wholeNumber(min: number, max: number) {
  return z
    .union([z.number(), z.string().trim().regex(/^\d+$/).transform(Number)])
    .pipe(z.number().int().min(min).max(max));
}

// ---------------------------------------------------------------------------------------------
// Schemas of one setting value, as written by a user (flag, config or environment)

/** `warn` | `followup` | `reopen` | `reopen_followup`; trimmed, any case (`" REOPEN "` is `reopen`). */
export const FailureActionSettingSchema = z.string().trim().toLowerCase().pipe(z.enum(FAILURE_ACTIONS));
/** `member` | `lead` | `none`; trimmed, any case. */
export const FollowupOwnerSettingSchema = z.string().trim().toLowerCase().pipe(z.enum(FOLLOWUP_OWNERS));
/** The range of each `hooks.limits` value, from the settings table. */
export const LIMIT_RANGES: Readonly<Record<LimitName, Range>> = Object.freeze(
  Object.fromEntries(LIMIT_NAMES.map((name) => [name, SETTINGS[name].range])) as Record<LimitName, Range>,
);
const { maxReopensPerTask: reopens, timeoutMs: timeout } = SETTINGS;
/** A whole number ≥ 0 (`3`, `"3"`); `0` means never reopen. Rejects `"3abc"`, `-1`, `1.5`. */
export const MaxReopensSettingSchema = wholeNumber(reopens.range.min, reopens.range.max);
/** A whole number of milliseconds in [1, MAX_TIMEOUT_MS]. */
export const TimeoutMsSettingSchema = wholeNumber(timeout.range.min, timeout.range.max);
/** The legacy `PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE`: `1` means `followup`, `0` means not set. */
const CreateTaskOnFailureSchema = z
  .string()
  .trim()
  .pipe(z.enum(["0", "1"]))
  .transform((flag) => (flag === "1" ? ("followup" as const) : undefined));

// ---------------------------------------------------------------------------------------------
// The resolved policy

/** The failure policy in force; its defaults (warn, 3 reopens, the member) are the settings table's. */
export const EffectivePolicySchema = z.object({
  failureAction: z.enum(FAILURE_ACTIONS).default(SETTINGS.failureAction.default),
  maxReopensPerTask: z.number().int().nonnegative().default(SETTINGS.maxReopensPerTask.default),
  followupOwner: z.enum(FOLLOWUP_OWNERS).default(SETTINGS.followupOwner.default),
});
export type EffectivePolicy = z.output<typeof EffectivePolicySchema>;

export const DEFAULT_POLICY: Readonly<EffectivePolicy> = Object.freeze(EffectivePolicySchema.parse({}));

/** Where an effective value came from. */
export type Source = "flag" | "config" | "env" | "default";

/** The settings a command line, config.json and the environment all give, walked by `resolveSetting`. */
const LEVELED_SCHEMAS = Object.freeze({
  failureAction: FailureActionSettingSchema,
  maxReopensPerTask: MaxReopensSettingSchema,
  followupOwner: FollowupOwnerSettingSchema,
  timeoutMs: TimeoutMsSettingSchema,
});
type LeveledSetting = keyof typeof LEVELED_SCHEMAS;
/** The settings of the failure policy, in the order they are resolved and shown. */
const POLICY_SETTINGS = ["failureAction", "maxReopensPerTask", "followupOwner"] as const;

/** A variable whose values mean something else than the setting's (the legacy one): its own schema. */
const ENV_SCHEMAS: Readonly<Record<string, { schema: z.ZodType<unknown, unknown>; expected: string }>> = {
  PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE: {
    schema: CreateTaskOnFailureSchema,
    expected: SETTING_EXPECTED.createTaskOnFailure,
  },
};

export interface PolicyFlags {
  failureAction?: string | undefined;
  maxReopens?: string | number | undefined;
  followupOwner?: string | undefined;
}
/** The flag each setting of the policy is given by, as `PolicyFlags` names it. */
const POLICY_FLAG_KEYS: Readonly<Record<(typeof POLICY_SETTINGS)[number], keyof PolicyFlags>> = {
  failureAction: "failureAction",
  maxReopensPerTask: "maxReopens",
  followupOwner: "followupOwner",
};

export interface ResolvePolicyInput {
  /** Command-line values; `undefined` means not given. */
  flags?: PolicyFlags | undefined;
  /** The raw `hooks` block of config.json, of any type (a non-object is a warning). */
  config: unknown;
  env: Readonly<Record<string, string | undefined>>;
  /** How warnings name the config file; `config.json` by default. */
  configFile?: string | undefined;
}

export interface ResolvedPolicy {
  policy: Readonly<EffectivePolicy>;
  sources: Readonly<{ failureAction: Source; maxReopensPerTask: Source; followupOwner: Source }>;
  warnings: string[];
}

/**
 * The effective failure policy. Each setting is taken from the first level that holds a valid value:
 * flag, then config.json `hooks`, then the environment, then the default. Levels below the one that
 * wins are not read, so a bad value there costs nothing until it matters.
 *
 * - A flag that is given but invalid throws `HooksError("E_USAGE")` naming the flag, the value and the
 *   allowed values.
 * - An invalid config or environment value adds a warning naming the file and field (or the variable),
 *   the value, and the value used instead.
 * - `null` in the config and an empty environment variable count as not set.
 * - `PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE=1` means `followup` when `PI_TEAMS_HOOKS_FAILURE_ACTION` is
 *   not set or invalid (as in pi-agent-teams).
 */
export function resolvePolicy(input: ResolvePolicyInput): ResolvedPolicy {
  const flags = input.flags ?? {};
  const file = input.configFile ?? "config.json";
  const warnings: string[] = [];
  const config = readConfigBlock(input.config, file, warnings);
  const walked = Object.fromEntries(
    POLICY_SETTINGS.map((name) => [
      name,
      resolveSetting(name, { flag: flags[POLICY_FLAG_KEYS[name]], config, env: input.env, file, warnings }),
    ]),
  ) as { [K in (typeof POLICY_SETTINGS)[number]]: Resolved<EffectivePolicy[K]> };
  return Object.freeze({
    policy: Object.freeze({
      failureAction: walked.failureAction.value,
      maxReopensPerTask: walked.maxReopensPerTask.value,
      followupOwner: walked.followupOwner.value,
    }),
    sources: Object.freeze({
      failureAction: walked.failureAction.source,
      maxReopensPerTask: walked.maxReopensPerTask.source,
      followupOwner: walked.followupOwner.source,
    }),
    warnings,
  });
}

interface ResolvedTimeout {
  value: number;
  source: Exclude<Source, "config">;
  warnings: string[];
}

/**
 * The hook timeout in milliseconds: `--timeout-ms` > `PI_TEAMS_HOOK_TIMEOUT_MS` > 60,000. A whole number
 * from 1 to 2,147,483,647 (the longest delay a Node timer holds). A bad flag throws `E_USAGE`; a bad
 * variable is a warning and the default applies.
 */
export function resolveTimeoutMs(input: {
  flag?: string | number | undefined;
  env: Readonly<Record<string, string | undefined>>;
}): ResolvedTimeout {
  const warnings: string[] = [];
  const resolved = resolveSetting("timeoutMs", { flag: input.flag, env: input.env, file: "", warnings });
  // The timeout has no config.json field: its row has no config level.
  const source = resolved.source === "config" ? "default" : resolved.source;
  return Object.freeze({ value: resolved.value, source, warnings });
}

// ---------------------------------------------------------------------------------------------
// One precedence walk

/** One setting as the walk found it: its value, its level, and the variable it came from (for `env`). */
interface Resolved<T> {
  value: T;
  source: Source;
  /** The variable the value was read from, when `source` is `env`; null otherwise. */
  variable: string | null;
}

interface WalkInput {
  /** The flag's raw value; `undefined`: not given. */
  flag?: unknown;
  /** The `hooks` block (raw, as a record); absent: the setting is not read from config.json. */
  config?: Readonly<Record<string, unknown>> | undefined;
  env: Readonly<Record<string, string | undefined>>;
  /** How warnings name the config file. */
  file: string;
  /** Where the warnings of values skipped go, in order. */
  warnings: string[];
}

interface Level {
  source: "config" | "env";
  /** The file and field, or the variable, as warnings name it. */
  where: { file: string; field: string };
  variable: string | null;
  raw: unknown;
  /** Parses the raw value; `undefined` output means "explicitly not set" (CREATE_TASK_ON_FAILURE=0). */
  schema: z.ZodType<unknown, unknown>;
  /** Allowed values for this level's warning, when they differ from the setting's. */
  expected?: string | undefined;
}

/**
 * Walks flag > config.json > environment > default for one setting of the table, with the levels its
 * row has; warnings name what was skipped and what applies.
 */
export function resolveSetting<K extends LeveledSetting>(
  name: K,
  input: WalkInput,
): Resolved<z.output<(typeof LEVELED_SCHEMAS)[K]>> {
  type T = z.output<(typeof LEVELED_SCHEMAS)[K]>;
  const setting: SettingRow = SETTINGS[name];
  const schema = LEVELED_SCHEMAS[name] as unknown as z.ZodType<T, unknown>;
  const expected = SETTING_EXPECTED[name];
  if (input.flag !== undefined) {
    const parsed = schema.safeParse(input.flag);
    if (!parsed.success) throw new HooksError("E_USAGE", invalidFlagValue(setting.flag ?? name, input.flag, expected));
    return { value: parsed.data, source: "flag", variable: null };
  }
  const levels: Level[] = [];
  if (setting.field !== null && input.config !== undefined)
    levels.push({
      source: "config",
      where: { file: input.file, field: setting.field },
      variable: null,
      raw: input.config[setting.field.slice("hooks.".length)],
      schema,
    });
  for (const variable of setting.env)
    levels.push({
      source: "env",
      where: { file: variable, field: "" },
      variable,
      raw: envValue(input.env, variable),
      schema: ENV_SCHEMAS[variable]?.schema ?? schema,
      expected: ENV_SCHEMAS[variable]?.expected,
    });
  const rejected: Level[] = [];
  let chosen: { value: T; source: Source; variable: string | null; from: string } | undefined;
  for (const level of levels) {
    if (level.raw === undefined || level.raw === null) continue;
    const parsed = level.schema.safeParse(level.raw);
    if (!parsed.success) {
      rejected.push(level);
      continue;
    }
    if (parsed.data === undefined) continue;
    const { file, field } = level.where;
    chosen = {
      value: parsed.data as T,
      source: level.source,
      variable: level.variable,
      from: field ? `${file} ${field}` : file,
    };
    break;
  }
  chosen ??= { value: setting.default as T, source: "default", variable: null, from: "default" };
  for (const level of rejected) {
    input.warnings.push(
      invalidSettingValue(level.where.file, level.where.field, level.raw, level.expected ?? expected, {
        value: chosen.value,
        from: chosen.from,
      }),
    );
  }
  return { value: chosen.value, source: chosen.source, variable: chosen.variable };
}

/** An environment value, with empty or blank meaning not set (`VAR= command` is how shells unset). */
function envValue(env: Readonly<Record<string, string | undefined>>, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === "" ? undefined : value;
}

/** The `hooks` block as a record; anything but an object (or nothing) is a warning and reads as empty. */
function readConfigBlock(config: unknown, file: string, warnings: string[]): Record<string, unknown> {
  if (config === undefined || config === null) return {};
  if (typeof config === "object" && !Array.isArray(config)) return config as Record<string, unknown>;
  warnings.push(settingNotAnObject(file, "hooks", config));
  return {};
}
