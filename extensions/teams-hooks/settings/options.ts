/**
 * Effective settings — the failure policy pi-agent-teams defines and the hook timeout — resolved in one
 * place, so every caller agrees, with the precedence flag > `config.json` `hooks` > environment >
 * default (docs/decisions/team-dir-facts.md). Pure: the raw config block and the
 * environment are arguments. A bad flag is a usage error (`E_USAGE`, exit 2); a bad config or
 * environment value costs one warning naming where it came from, and the next level applies.
 */
import { z } from "zod";
import { DEFAULT_TIMEOUT_MS } from "../contract/hook-run.js";
import { FAILURE_ACTIONS, FOLLOWUP_OWNERS } from "../contract/team-files.js";
import { HooksError } from "../contract/errors.js";
import { SETTING_EXPECTED, invalidFlagValue, invalidSettingValue, settingNotAnObject } from "../text/messages.js";

/** Node timers hold at most 2³¹ − 1 ms; a longer delay fires at once (TimeoutOverflowWarning). */
export const MAX_TIMEOUT_MS = 2_147_483_647;

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
/** The range of each `hooks.limits` value (settings/team-settings.ts holds the defaults and the schema). */
export const LIMIT_RANGES = Object.freeze({
  maxHooksPerEvent: Object.freeze({ min: 1, max: 64 }),
  chainDeadlineMs: Object.freeze({ min: 1, max: MAX_TIMEOUT_MS }),
  maxPayloadBytes: Object.freeze({ min: 1024, max: 1024 * 1024 * 1024 }),
});
/** A whole number ≥ 0 (`3`, `"3"`); `0` means never reopen. Rejects `"3abc"`, `-1`, `1.5`. */
export const MaxReopensSettingSchema = wholeNumber(0, Number.MAX_SAFE_INTEGER);
/** A whole number of milliseconds in [1, MAX_TIMEOUT_MS]. */
export const TimeoutMsSettingSchema = wholeNumber(1, MAX_TIMEOUT_MS);
/** The legacy `PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE`: `1` means `followup`, `0` means not set. */
const CreateTaskOnFailureSchema = z
  .string()
  .trim()
  .pipe(z.enum(["0", "1"]))
  .transform((flag) => (flag === "1" ? ("followup" as const) : undefined));

// ---------------------------------------------------------------------------------------------
// The resolved policy

/** The failure policy in force; its defaults (warn, 3 reopens, the member) live in the schema. */
export const EffectivePolicySchema = z.object({
  failureAction: z.enum(FAILURE_ACTIONS).default("warn"),
  maxReopensPerTask: z.number().int().nonnegative().default(3),
  followupOwner: z.enum(FOLLOWUP_OWNERS).default("member"),
});
export type EffectivePolicy = z.output<typeof EffectivePolicySchema>;

export const DEFAULT_POLICY: Readonly<EffectivePolicy> = Object.freeze(EffectivePolicySchema.parse({}));

/** Where an effective value came from. */
export type Source = "flag" | "config" | "env" | "default";

/**
 * The environment variables read here: the failure policy's (docs/decisions/team-dir-facts.md)
 * and the hook timeout (docs/hook-contract.md).
 */
export const SETTING_ENV = Object.freeze({
  failureAction: "PI_TEAMS_HOOKS_FAILURE_ACTION",
  createTaskOnFailure: "PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE",
  maxReopensPerTask: "PI_TEAMS_HOOKS_MAX_REOPENS_PER_TASK",
  followupOwner: "PI_TEAMS_HOOKS_FOLLOWUP_OWNER",
  timeoutMs: "PI_TEAMS_HOOK_TIMEOUT_MS",
});

/** The command-line flags, as named in messages. */
export const SETTING_FLAGS = Object.freeze({
  failureAction: "--failure-action",
  maxReopens: "--max-reopens",
  followupOwner: "--followup-owner",
  timeoutMs: "--timeout-ms",
});

export interface PolicyFlags {
  failureAction?: string | undefined;
  maxReopens?: string | number | undefined;
  followupOwner?: string | undefined;
}

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
  const env = input.env;

  const failureAction = resolveSetting({
    flag: { name: SETTING_FLAGS.failureAction, raw: flags.failureAction },
    levels: [
      {
        source: "config",
        where: { file, field: "hooks.failureAction" },
        raw: config.failureAction,
        schema: FailureActionSettingSchema,
      },
      {
        source: "env",
        where: { file: SETTING_ENV.failureAction, field: "" },
        raw: envValue(env, SETTING_ENV.failureAction),
        schema: FailureActionSettingSchema,
      },
      {
        source: "env",
        where: { file: SETTING_ENV.createTaskOnFailure, field: "" },
        raw: envValue(env, SETTING_ENV.createTaskOnFailure),
        schema: CreateTaskOnFailureSchema,
        expected: SETTING_EXPECTED.createTaskOnFailure,
      },
    ],
    schema: FailureActionSettingSchema,
    expected: SETTING_EXPECTED.failureAction,
    fallback: DEFAULT_POLICY.failureAction,
    warnings,
  });

  const maxReopensPerTask = resolveSetting({
    flag: { name: SETTING_FLAGS.maxReopens, raw: flags.maxReopens },
    levels: [
      {
        source: "config",
        where: { file, field: "hooks.maxReopensPerTask" },
        raw: config.maxReopensPerTask,
        schema: MaxReopensSettingSchema,
      },
      {
        source: "env",
        where: { file: SETTING_ENV.maxReopensPerTask, field: "" },
        raw: envValue(env, SETTING_ENV.maxReopensPerTask),
        schema: MaxReopensSettingSchema,
      },
    ],
    schema: MaxReopensSettingSchema,
    expected: SETTING_EXPECTED.maxReopensPerTask,
    fallback: DEFAULT_POLICY.maxReopensPerTask,
    warnings,
  });

  const followupOwner = resolveSetting({
    flag: { name: SETTING_FLAGS.followupOwner, raw: flags.followupOwner },
    levels: [
      {
        source: "config",
        where: { file, field: "hooks.followupOwner" },
        raw: config.followupOwner,
        schema: FollowupOwnerSettingSchema,
      },
      {
        source: "env",
        where: { file: SETTING_ENV.followupOwner, field: "" },
        raw: envValue(env, SETTING_ENV.followupOwner),
        schema: FollowupOwnerSettingSchema,
      },
    ],
    schema: FollowupOwnerSettingSchema,
    expected: SETTING_EXPECTED.followupOwner,
    fallback: DEFAULT_POLICY.followupOwner,
    warnings,
  });

  return Object.freeze({
    policy: Object.freeze({
      failureAction: failureAction.value,
      maxReopensPerTask: maxReopensPerTask.value,
      followupOwner: followupOwner.value,
    }),
    sources: Object.freeze({
      failureAction: failureAction.source,
      maxReopensPerTask: maxReopensPerTask.source,
      followupOwner: followupOwner.source,
    }),
    warnings,
  });
}

export interface ResolvedTimeout {
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
  const resolved = resolveSetting({
    flag: { name: SETTING_FLAGS.timeoutMs, raw: input.flag },
    levels: [
      {
        source: "env",
        where: { file: SETTING_ENV.timeoutMs, field: "" },
        raw: envValue(input.env, SETTING_ENV.timeoutMs),
        schema: TimeoutMsSettingSchema,
      },
    ],
    schema: TimeoutMsSettingSchema,
    expected: SETTING_EXPECTED.timeoutMs,
    fallback: DEFAULT_TIMEOUT_MS,
    warnings,
  });
  // No level above can be "config" here: the timeout has no config.json field.
  const source = resolved.source === "config" ? "default" : resolved.source;
  return Object.freeze({ value: resolved.value, source, warnings });
}

// ---------------------------------------------------------------------------------------------
// One precedence walk

interface Level<T> {
  source: "config" | "env";
  where: { file: string; field: string };
  raw: unknown;
  /** Parses the raw value; `undefined` output means "explicitly not set" (CREATE_TASK_ON_FAILURE=0). */
  schema: z.ZodType<T | undefined, unknown>;
  /** Allowed values for this level's warning, when they differ from the setting's. */
  expected?: string;
}

interface SettingSpec<T> {
  flag: { name: string; raw: unknown };
  levels: Level<T>[];
  schema: z.ZodType<T, unknown>;
  expected: string;
  fallback: T;
  warnings: string[];
}

/** Walks flag > levels > fallback for one setting; warnings name what was skipped and what applies. */
function resolveSetting<T>(spec: SettingSpec<T>): { value: T; source: Source } {
  if (spec.flag.raw !== undefined) {
    const parsed = spec.schema.safeParse(spec.flag.raw);
    if (!parsed.success)
      throw new HooksError("E_USAGE", invalidFlagValue(spec.flag.name, spec.flag.raw, spec.expected));
    return { value: parsed.data, source: "flag" };
  }
  const rejected: Level<T>[] = [];
  let chosen: { value: T; source: Source; from: string } | undefined;
  for (const level of spec.levels) {
    if (level.raw === undefined || level.raw === null) continue;
    const parsed = level.schema.safeParse(level.raw);
    if (!parsed.success) {
      rejected.push(level);
      continue;
    }
    if (parsed.data === undefined) continue;
    chosen = {
      value: parsed.data,
      source: level.source,
      from: level.where.field ? `${level.where.file} ${level.where.field}` : level.where.file,
    };
    break;
  }
  chosen ??= { value: spec.fallback, source: "default", from: "default" };
  for (const level of rejected) {
    spec.warnings.push(
      invalidSettingValue(level.where.file, level.where.field, level.raw, level.expected ?? spec.expected, {
        value: chosen.value,
        from: chosen.from,
      }),
    );
  }
  return { value: chosen.value, source: chosen.source };
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
