/**
 * The `hooks` block of config.json, validated as a whole by one schema: the failure policy, the
 * failure mode and the limits per event. An invalid block is refused whole — every problem named by
 * its field — so a team never runs with half of what it wrote (the leader keeps the last valid block).
 * `resolveSettings` turns the block, the environment and the flags into every setting in force, with
 * where each came from (`TeamSettings`, frozen): the leader, `run`, `doctor`, `config` and `policy`
 * all call it, so they cannot disagree, and the event pipeline takes the object whole.
 * Pure: the raw block and the environment are arguments.
 */
import { SANDBOX_MODES, type SandboxMode } from "./hook-line.js";
import { closestName, didYouMean } from "../text/suggest.js";
import path from "node:path";
import { z } from "zod";
import { HOOK_EVENTS, canDefer, type HookEventName } from "../contract/contract.js";
import {
  FailureActionSettingSchema,
  FollowupOwnerSettingSchema,
  LIMIT_RANGES,
  MaxReopensSettingSchema,
  TimeoutMsSettingSchema,
  resolveSetting,
  type EffectivePolicy,
  type PolicyFlags,
  type Source,
} from "./options.js";
import { type Problem, variableNamed } from "./problems.js";
import { LIMIT_NAMES, SETTINGS, type LimitName, type SettingName } from "./table.js";
import { neverWritableWarnings, WritableFieldsSchema } from "../contract/merge-patch.js";
import {
  DEFER_TIMEOUT_MS,
  HANDLER_TIMEOUT_MS,
  HandlersSchema,
  TemplatesSchema,
  type HandlerDef,
  type TemplateDef,
} from "./handlers.js";
import {
  ConfidentialSchema,
  ProjectionSchema,
  RedactEnvSchema,
  keepRefusedPrivacy,
  projectionHandlerProblems,
  type PrivacySettings,
  type Projection,
} from "./privacy.js";

export const FAILURE_MODES = ["closed", "open"] as const;
export type FailureMode = (typeof FAILURE_MODES)[number];

/**
 * What a hook error (could not start, timed out, killed, invalid verdict, a limit) means, by default.
 * A start gate is closed: a gate that could not judge a claim does not admit it.
 */
const DEFAULT_FAILURE_MODES: Readonly<Record<HookEventName, FailureMode>> = SETTINGS.failureMode.default;

/**
 * Hooks in one event's chain (the v1 file plus `on_<event>.d/`); the whole chain of one event, start
 * of the first hook to end of the last; the context document of one invocation, in UTF-8 bytes.
 */
export const DEFAULT_LIMITS: Readonly<HookLimits> = Object.freeze(
  Object.fromEntries(LIMIT_NAMES.map((name) => [name, SETTINGS[name].default])) as HookLimits,
);
export type HookLimits = Record<LimitName, number>;

function whole(min: number, max: number) {
  return z
    .union([z.number(), z.string().trim().regex(/^\d+$/, "expected a whole number").transform(Number)])
    .pipe(z.number().int().min(min).max(max));
}

export const FailureModeSettingSchema = z.string().trim().toLowerCase().pipe(z.enum(FAILURE_MODES));

/** One mode for every event, or a mode per event (events left out keep their default). */
const FailureModeBlock = z.union([
  FailureModeSettingSchema,
  z.strictObject(
    Object.fromEntries(HOOK_EVENTS.map((e) => [e, FailureModeSettingSchema.optional()])) as Record<
      HookEventName,
      z.ZodOptional<typeof FailureModeSettingSchema>
    >,
  ),
]);

/**
 * When a run is checked for processes that left the hook's process group but carry its run id (a
 * `setsid` daemon): `auto` only when something is suspect (a timeout, pipes held open, members left
 * in the group), `always` after every run, a clean exit included. `always` costs a /proc scan per run
 * (docs/performance.md).
 */
export const SWEEP_MODES = ["auto", "always"] as const;
type SweepMode = (typeof SWEEP_MODES)[number];
const DEFAULT_SWEEP: SweepMode = SETTINGS.sweep.default;
const SweepSettingSchema = z.string().trim().toLowerCase().pipe(z.enum(SWEEP_MODES));

/**
 * What a hook's exit code means when it gives no verdict: `v1` (the default, as contract v1 says: 0
 * passes, anything else is a denial) or `strict` (0 allows, 2 denies, any other exit code is a hook
 * error that the failure mode decides, so a gate that crashed is not taken for a judgement).
 */
export const EXIT_CODE_MODES = ["v1", "strict"] as const;
export type ExitCodeMode = (typeof EXIT_CODE_MODES)[number];
const ExitCodesSettingSchema = z.string().trim().toLowerCase().pipe(z.enum(EXIT_CODE_MODES));
/** `hooks.sandbox`: how the team's gates run (runner/sandbox.ts); a gate's own `sandbox=` wins. */
const SandboxSettingSchema = z.string().trim().toLowerCase().pipe(z.enum(SANDBOX_MODES));

/**
 * A limit as written in the block: a whole number (or a string of digits), in range or not. A value
 * outside its range is a request the platform caps (`capLimits`), not a mistake that refuses the
 * block; a value that is no whole number (`"lots"`, `1.5`, `true`) is one.
 */
const limitValue = z.unknown().transform((raw, ctx): number => {
  const digits = typeof raw === "string" && /^\s*-?\d+\s*$/.test(raw);
  const value = typeof raw === "number" ? raw : digits ? Number(raw) : Number.NaN;
  if (Number.isInteger(value)) return value;
  ctx.addIssue({ code: "custom", message: "expected a whole number" });
  return z.NEVER;
});

type LimitKey = keyof typeof LIMIT_RANGES;

/** `hooks.limits`: each a whole number, capped to its range (LIMIT_RANGES); limits left out keep their default. */
const LimitsSchema = z.strictObject(
  Object.fromEntries(Object.keys(LIMIT_RANGES).map((name) => [name, limitValue.optional()])) as Record<
    LimitKey,
    z.ZodOptional<typeof limitValue>
  >,
);

/**
 * What a hook point accepts of its gates: `admit` (allow or deny), `transform` (a patch, within the
 * writable fields), `defer` (hold the event until a decision; task_completed and task_failed only).
 */
export const HOOK_POINT_MODES = ["admit", "transform", "defer"] as const;
type HookPointMode = (typeof HOOK_POINT_MODES)[number];

/**
 * Which gates of a hook point a team may drop without an approval: `both` (the default: as each gate
 * says, its settings line's `required=false` makes it optional), `required` (none: every gate is
 * required there), `optional` (every global gate of the point may be dropped).
 */
export const PARTICIPATIONS = ["both", "required", "optional"] as const;
type Participation = (typeof PARTICIPATIONS)[number];

/**
 * `hooks.events.<event>`: one hook point's own declaration, over the team's settings for that event
 * alone. Limits are capped as the team's are (`capLimits`).
 */
const EventDeclarationSchema = z.strictObject({
  modes: z
    .array(z.enum(HOOK_POINT_MODES))
    .refine((modes) => modes.includes("admit"), "must hold admit (every gate may allow or deny)")
    .refine((modes) => new Set(modes).size === modes.length, "must not name a mode twice")
    .optional(),
  failureMode: FailureModeSettingSchema.optional(),
  writableFields: WritableFieldsSchema.optional(),
  projection: ProjectionSchema.optional(),
  participation: z.string().trim().toLowerCase().pipe(z.enum(PARTICIPATIONS)).optional(),
  limits: LimitsSchema.optional(),
});

const EventsBlockSchema = z.strictObject(
  Object.fromEntries(HOOK_EVENTS.map((e) => [e, EventDeclarationSchema.optional()])) as Record<
    HookEventName,
    z.ZodOptional<typeof EventDeclarationSchema>
  >,
);

/** One limit as a flag gives it (`policy set --max-hooks-per-event`): a person is told the range, nothing capped. */
export function limitFlagSchema(name: keyof typeof LIMIT_RANGES) {
  return whole(LIMIT_RANGES[name].min, LIMIT_RANGES[name].max);
}

/** The ranges the block's limits are capped to, by field as written (`hooks.limits.maxHooksPerEvent`). */
interface CappedRange {
  field: string;
  range: Readonly<{ min: number; max: number }>;
  get: (b: HooksBlock) => number | null | undefined;
  set: (b: HooksBlock, v: number) => HooksBlock;
}
const CAPPED_RANGES: readonly CappedRange[] = [
  ...(Object.keys(LIMIT_RANGES) as Array<keyof typeof LIMIT_RANGES>).map((name) => ({
    field: `hooks.limits.${name}`,
    range: LIMIT_RANGES[name],
    get: (b: HooksBlock) => b.limits?.[name],
    set: (b: HooksBlock, v: number): HooksBlock => ({ ...b, limits: { ...b.limits, [name]: v } }),
  })),
  ...HOOK_EVENTS.flatMap((event) =>
    (Object.keys(LIMIT_RANGES) as Array<keyof typeof LIMIT_RANGES>).map((name) => ({
      field: `hooks.events.${event}.limits.${name}`,
      range: LIMIT_RANGES[name],
      get: (b: HooksBlock) => b.events?.[event]?.limits?.[name],
      set: (b: HooksBlock, v: number): HooksBlock => {
        const declared = b.events?.[event] ?? {};
        const events = { ...b.events, [event]: { ...declared, limits: { ...declared.limits, [name]: v } } };
        return { ...b, events };
      },
    })),
  ),
  {
    field: "hooks.deferTimeoutMs",
    range: { min: DEFER_TIMEOUT_MS.min, max: DEFER_TIMEOUT_MS.max },
    get: (b: HooksBlock) => b.deferTimeoutMs,
    set: (b: HooksBlock, v: number): HooksBlock => ({ ...b, deferTimeoutMs: v }),
  },
];

/** A limit moved into its range: which, from what, to what. */
interface CappedLimit {
  field: string;
  written: number;
  value: number;
  bound: "ceiling" | "floor";
}

/**
 * The block with every limit outside its range moved to its ceiling or floor, and what was moved: a
 * limit written down is a request the platform caps; the rest of the block stays in force.
 */
function capLimits(block: HooksBlock): { block: HooksBlock; capped: CappedLimit[] } {
  const capped: CappedLimit[] = [];
  let out = block;
  for (const { field, range, get, set } of CAPPED_RANGES) {
    const written = get(out);
    if (written === undefined || written === null) continue;
    if (written > range.max) capped.push({ field, written, value: range.max, bound: "ceiling" });
    else if (written < range.min) capped.push({ field, written, value: range.min, bound: "floor" });
    else continue;
    out = set(out, capped[capped.length - 1]?.value ?? written);
  }
  // Each handler's own timeout (part of its definition, so its trust covers the value as capped).
  const handlers = out.handlers?.map((handler, index) => {
    const written = handler.timeoutMs;
    const bound =
      written > HANDLER_TIMEOUT_MS.max ? "ceiling" : written < HANDLER_TIMEOUT_MS.min ? ("floor" as const) : null;
    if (bound === null) return handler;
    const value = bound === "ceiling" ? HANDLER_TIMEOUT_MS.max : HANDLER_TIMEOUT_MS.min;
    capped.push({ field: `hooks.handlers.${index}.timeoutMs`, written, value, bound });
    return { ...handler, timeoutMs: value };
  });
  if (handlers?.some((h, i) => h !== out.handlers?.[i])) out = { ...out, handlers };
  return { block: out, capped };
}

/**
 * `/t/config.json: hooks.limits.maxHooksPerEvent: 500 is above its ceiling of 64 — capped to 64; the rest
 * of the "hooks" block stays in force`
 */
function cappedLimitWarning(file: string, c: CappedLimit): string {
  const where = c.bound === "ceiling" ? `above its ceiling of ${c.value}` : `below its floor of ${c.value}`;
  const rest = `the rest of the "hooks" block stays in force`;
  return `${file}: ${c.field}: ${c.written} is ${where} — capped to ${c.value}; ${rest}`;
}

/**
 * The schema of each setting's value as config.json, a flag or a variable writes it, by the settings
 * table's names: the `hooks` block's schema takes its fields' from here (the failure mode's and the
 * limits' inside their own objects); the precedence walk (settings/options.ts) takes the same schemas.
 */
export const SETTING_SCHEMAS = Object.freeze({
  failureAction: FailureActionSettingSchema,
  maxReopensPerTask: MaxReopensSettingSchema,
  followupOwner: FollowupOwnerSettingSchema,
  timeoutMs: TimeoutMsSettingSchema,
  failureMode: FailureModeSettingSchema,
  maxHooksPerEvent: limitValue,
  chainDeadlineMs: limitValue,
  maxPayloadBytes: limitValue,
  sweep: SweepSettingSchema,
  exitCodes: ExitCodesSettingSchema,
  sandbox: SandboxSettingSchema,
  deferTimeoutMs: limitValue,
  writableFields: WritableFieldsSchema,
  confidential: ConfidentialSchema,
  redactEnv: RedactEnvSchema,
  reassignOnReopen: z.boolean(),
  projection: ProjectionSchema,
  trustChanges: z.boolean(),
  allowInsecureHooks: z.boolean(),
} satisfies Record<SettingName, z.ZodType>);

/** The whole `hooks` block. Keys it does not know are left alone (another tool may own them). */
const HooksBlockSchema = z
  .looseObject({
    failureAction: SETTING_SCHEMAS.failureAction.nullish(),
    maxReopensPerTask: SETTING_SCHEMAS.maxReopensPerTask.nullish(),
    followupOwner: SETTING_SCHEMAS.followupOwner.nullish(),
    failureMode: FailureModeBlock.nullish(),
    sweep: SETTING_SCHEMAS.sweep.nullish(),
    exitCodes: SETTING_SCHEMAS.exitCodes.nullish(),
    sandbox: SETTING_SCHEMAS.sandbox.nullish(),
    limits: LimitsSchema.nullish(),
    /** HTTP handlers: gates on other machines, run after an event's file hooks (settings/handlers.ts). */
    handlers: HandlersSchema.nullish(),
    /** Task templates the task API creates tasks from (settings/handlers.ts). */
    templates: TemplatesSchema.nullish(),
    /** How long a deferred gate waits for its decision before it fails (`defer_expired`). */
    deferTimeoutMs: SETTING_SCHEMAS.deferTimeoutMs.nullish(),
    /**
     * The fields a patch verdict may write (dotted paths); replaces the default, `metadata` (contract/merge-patch.ts).
     */
    writableFields: SETTING_SCHEMAS.writableFields.nullish(),
    /** Gate name → the fields of the context document it may see (settings/privacy.ts). */
    projection: SETTING_SCHEMAS.projection.nullish(),
    /** HTTP handlers and hook logs get no task content: identity and lifecycle only. */
    confidential: SETTING_SCHEMAS.confidential.nullish(),
    /** Variables whose values are redacted from hook output, besides the handlers' secrets. */
    redactEnv: SETTING_SCHEMAS.redactEnv.nullish(),
    /**
     * Whether the owner of a task the policy reopens is sent a `task_assignment` for it (default true), as
     * a team runtime hands out work: a worker that starts an owned task only when assigned takes it up again.
     */
    reassignOnReopen: SETTING_SCHEMAS.reassignOnReopen.nullish(),
    /** Each hook point's own declaration: modes, failure mode, writable fields, projection, participation, limits. */
    events: EventsBlockSchema.nullish(),
  })
  .superRefine((block, ctx) => {
    // Across fields, so here: a projection of `http:<name>` names a handler of the same block.
    for (const problem of projectionHandlerProblems(block.projection, block.handlers))
      ctx.addIssue({ code: "custom", path: problem.path, message: problem.message });
    for (const event of HOOK_EVENTS) {
      const declared = block.events?.[event];
      if (!declared) continue;
      for (const problem of projectionHandlerProblems(declared.projection, block.handlers))
        ctx.addIssue({ code: "custom", path: ["events", event, ...problem.path], message: problem.message });
      if (declared.modes?.includes("defer") && !canDefer(event))
        ctx.addIssue({
          code: "custom",
          path: ["events", event, "modes"],
          message: `defer: ${event} cannot be held (only task_completed and task_failed can)`,
        });
    }
  });
type HooksBlock = z.output<typeof HooksBlockSchema>;

/** `fields`: each problem's field, a dotted path from config.json's top (`hooks.limits.maxHooksPerEvent`), in order. */
type HooksBlockCheck =
  | { ok: true; block: HooksBlock; raw: Record<string, unknown> }
  | { ok: false; problems: string[]; fields: string[] };

/** Checks the raw block (anything); `undefined`/`null` is an empty, valid block. */
export function checkHooksBlock(raw: unknown, file: string): HooksBlockCheck {
  if (raw === undefined || raw === null) return { ok: true, block: {}, raw: {} };
  const parsed = HooksBlockSchema.safeParse(raw);
  if (parsed.success) return { ok: true, block: parsed.data, raw: raw as Record<string, unknown> };
  const fields = parsed.error.issues.map((issue) => ["hooks", ...issue.path.map(String)].join("."));
  const problems = parsed.error.issues.map((issue, index) => {
    const got = valueAt(raw, issue.path);
    const shown = got === undefined ? "" : `, got ${JSON.stringify(got)}`;
    return `${file}: ${fields[index] ?? "hooks"}: ${withSuggestion(issue)}${shown}`;
  });
  return { ok: false, problems, fields };
}

/**
 * A key of the `hooks` block that is not a setting, but within two edits of one (`failureAcion`): a
 * typo, said with the name meant. The block keeps it (another tool may own a key), and a key that is
 * near no setting is left alone in silence for that reason.
 */
function unknownKeyWarnings(raw: Record<string, unknown>, file: string): Problem[] {
  const known = Object.keys(HooksBlockSchema.shape);
  return Object.keys(raw)
    .filter((key) => !known.includes(key) && closestName(key, known, 2) !== null)
    .map((key) => ({
      kind: "setting_ignored",
      path: `hooks.${key}`,
      message: `${file}: hooks.${key}: not a setting of pi-teams-hooks${didYouMean(key, known, 2)} — ignored`,
    }));
}

/** The keys a strict part of the block accepts, for a "did you mean" on an unrecognized one. */
const STRICT_KEYS: Readonly<Record<string, readonly string[]>> = {
  limits: Object.keys(LIMIT_RANGES),
  failureMode: HOOK_EVENTS,
  events: HOOK_EVENTS,
  ...Object.fromEntries(HOOK_EVENTS.map((e) => [`events.${e}`, Object.keys(EventDeclarationSchema.shape)])),
  ...Object.fromEntries(HOOK_EVENTS.map((e) => [`events.${e}.limits`, Object.keys(LIMIT_RANGES)])),
};

/** zod's unrecognized-key message, with the key that was probably meant. */
function withSuggestion(issue: z.core.$ZodIssue): string {
  if (issue.code !== "unrecognized_keys") return issue.message;
  const known = STRICT_KEYS[issue.path.map(String).join(".")];
  if (!known) return issue.message;
  const hints = issue.keys.map((key) => didYouMean(key, known, 2)).filter((hint) => hint !== "");
  return `${issue.message}${hints.join("")}`;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node: unknown = root;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

const FAILURE_MODE_VARIABLE = SETTINGS.failureMode.env[0] ?? "PI_TEAMS_HOOKS_FAILURE_MODE";

interface ResolvedModes {
  modes: Readonly<Record<HookEventName, FailureMode>>;
  sources: Readonly<Record<HookEventName, "config" | "env" | "default">>;
  warnings: string[];
}

/** Failure mode per event: config.json `hooks.failureMode` > `PI_TEAMS_HOOKS_FAILURE_MODE` > default. */
export function resolveFailureModes(
  block: HooksBlock,
  env: Readonly<Record<string, string | undefined>>,
): ResolvedModes {
  const warnings: string[] = [];
  let fromEnv: FailureMode | undefined;
  const variable = FAILURE_MODE_VARIABLE;
  const rawEnv = env[variable];
  if (rawEnv !== undefined && rawEnv.trim() !== "") {
    const parsed = FailureModeSettingSchema.safeParse(rawEnv);
    if (parsed.success) fromEnv = parsed.data;
    else warnings.push(`${variable}: ${JSON.stringify(rawEnv)} is not valid (expected closed or open) — ignored`);
  }
  const configured = block.failureMode;
  const modes = {} as Record<HookEventName, FailureMode>;
  const sources = {} as Record<HookEventName, "config" | "env" | "default">;
  for (const event of HOOK_EVENTS) {
    const fromConfig = typeof configured === "string" ? configured : configured?.[event];
    if (fromConfig) [modes[event], sources[event]] = [fromConfig, "config"];
    else if (fromEnv) [modes[event], sources[event]] = [fromEnv, "env"];
    else [modes[event], sources[event]] = [DEFAULT_FAILURE_MODES[event], "default"];
  }
  return { modes: Object.freeze(modes), sources: Object.freeze(sources), warnings };
}

export function resolveLimits(block: HooksBlock): Readonly<HookLimits> {
  return Object.freeze({
    ...DEFAULT_LIMITS,
    ...Object.fromEntries(Object.entries(block.limits ?? {}).filter(([, v]) => v !== undefined)),
  });
}

// ---------------------------------------------------------------------------------------------
// Every setting in force, with where it came from

/** Where the `hooks` block in force comes from: config.json's own, the last valid one kept, or none. */
type HooksBlockFrom = "file" | "kept" | "none";

/** Why config.json gives no `hooks` block at all. */
export interface NoHooksBlock {
  /** `missing`: no config.json; `unreadable`: it cannot be read or is not JSON; `absent`: no `hooks` (or `null`). */
  kind: "missing" | "unreadable" | "not_an_object" | "absent";
  /** Names the file and says why: `/t/config.json: invalid JSON (…)`. */
  reason: string;
}

export interface SettingsInput {
  /** config.json's `hooks` value as written (anything); not read when `noBlock` is set. */
  hooks: unknown;
  noBlock: NoHooksBlock | null;
  /** The config file, as messages name it. */
  file: string;
  env: Readonly<Record<string, string | undefined>>;
  flags?: PolicyFlags | undefined;
  timeoutFlag?: string | number | undefined;
  /** `--trust-changes` and `--allow-insecure-hooks` (`run`, `watch`, `config`); absent: not given. */
  trustFlags?: TrustFlags | undefined;
  /**
   * The block in force until now (a leader's reload), or undefined when none is (the leader started
   * without one): kept when config.json's block is refused or config.json gives none.
   */
  lastValid?: Record<string, unknown> | undefined;
}

/** One setting's value, the level it came from, and that level as people name it. */
export interface Effective<T, S extends Source = Source> {
  value: T;
  source: S;
  /** `config.json hooks.failureAction`, `PI_TEAMS_HOOKS_FAILURE_ACTION`, `--failure-action`, `default`. */
  origin: string;
}

type PolicySetting = keyof EffectivePolicy;
export type { LimitName } from "./table.js";

/**
 * Every setting in force, each in one shape, `{ value, source, origin }`: its value, the level it came
 * from, and that level as people name it (settings/table.ts says which levels each setting has).
 */
export interface SettingsInForce {
  failureAction: Effective<EffectivePolicy["failureAction"]>;
  maxReopensPerTask: Effective<number>;
  followupOwner: Effective<EffectivePolicy["followupOwner"]>;
  timeoutMs: Effective<number, Exclude<Source, "config">>;
  failureModes: Record<HookEventName, Effective<FailureMode>>;
  limits: Record<LimitName, Effective<number>>;
  /** `hooks.sweep`: whether every run is checked for `setsid` escapees. */
  sweep: Effective<SweepMode, "config" | "default">;
  /** `hooks.exitCodes`: what an exit code means without a verdict (`v1` or `strict`). */
  exitCodes: Effective<ExitCodeMode, "config" | "default">;
  /** `hooks.sandbox`: how the team's gates run: `auto` (default), `required` or `off`. */
  sandbox: Effective<SandboxMode, "config" | "default">;
  /** `hooks.handlers`, in declaration order (secret values are never here: only variable names). */
  handlers: readonly HandlerDef[];
  /** `hooks.templates`, by slug as written. */
  templates: Readonly<Record<string, TemplateDef>>;
  /** `hooks.deferTimeoutMs`: how long a deferred gate waits for its decision. */
  deferTimeoutMs: Effective<number, "config" | "default">;
  /** `hooks.writableFields`: what a patch verdict may write (never the task's identity or the gate's own metadata). */
  writableFields: Effective<readonly string[], "config" | "default">;
  /** `hooks.projection`: the fields each named gate may see (`{}`: every hook sees the whole document). */
  projection: Effective<Projection, "config" | "default">;
  /** `hooks.confidential`: HTTP handlers and hook logs get no task content. */
  confidential: Effective<boolean, "config" | "default">;
  /** `hooks.redactEnv`: the names (never the values) of variables redacted besides the handlers' secrets. */
  redactEnv: Effective<readonly string[], "config" | "default">;
  /** `hooks.reassignOnReopen`: the owner of a reopened task gets its `task_assignment` again. */
  reassignOnReopen: Effective<boolean, "config" | "default">;
  /**
   * Each hook point as its event sees it: `hooks.events.<event>` over the team's settings (its failure
   * mode is in `failureModes`). An event's run takes these in place of the team's (`settingsForEvent`).
   */
  events: Readonly<Record<HookEventName, EventPoint>>;
  block: {
    /** False when config.json's block (or config.json itself) was refused. */
    valid: boolean;
    from: HooksBlockFrom;
    /** One line per problem, each naming the file and the field, and saying what applies instead. */
    problems: string[];
  };
}

/**
 * What `doctor` and `policy get` show (JSON as is): the settings in force, with the failure policy's
 * three as `values`, `sources` and `origins` (`settingsReport`).
 */
export interface SettingsReport extends Omit<SettingsInForce, PolicySetting> {
  values: EffectivePolicy;
  sources: Record<PolicySetting, Source>;
  origins: Record<PolicySetting, string>;
}

/** One hook point's settings in force: its own declaration's, else the team's. */
export interface EventPoint {
  /** What its gates may do: admit always, transform, defer (task_completed and task_failed only). */
  modes: Effective<readonly HookPointMode[], "config" | "default">;
  /** Which of its gates a team may drop without an approval. */
  participation: Effective<Participation, "config" | "default">;
  writableFields: Effective<readonly string[], "config" | "default">;
  /** The team's projection with the point's own entries over it (gate by gate). */
  projection: Effective<Projection, "config" | "default">;
  limits: Record<LimitName, Effective<number>>;
}

/** The command-line flags that say how gates are trusted; not part of config.json. */
export interface TrustFlags {
  trustChanges?: boolean | undefined;
  allowInsecureHooks?: boolean | undefined;
}

/**
 * Everything a team's settings say (config.json `hooks`, the flags, the environment, the defaults),
 * each with where it came from: built once by `resolveSettings` per change of config.json or of the
 * flags, frozen, and passed whole to whatever fires an event (event/invoke.ts) — never re-spread.
 */
export interface TeamSettings extends SettingsInForce {
  /** The failure policy's values, as the policy takes them (the `value` of its three settings). */
  values: EffectivePolicy;
  /** `--trust-changes`: gates changed since they were trusted run as they are (each change still said). */
  trustChanges: Effective<boolean, "flag" | "default">;
  /** `--allow-insecure-hooks`: world-writable gates and gates of other users run. */
  allowInsecureHooks: Effective<boolean, "flag" | "default">;
  /** What one event needs of `projection`, `confidential` and `redactEnv`, as values (`privacyOf`). */
  privacy: PrivacySettings;
  /** The `hooks` block in force, as written. */
  hooksBlock: Record<string, unknown>;
  /**
   * The same string for the same refusal (`unreadable`, or the block's problems), null when nothing
   * is refused: a leader says a refusal once, not at every change of config.json while it lasts.
   */
  refusal: string | null;
  /** Limits of the block outside their range, as capped (each also a warning). */
  capped: readonly CappedLimit[];
  /** Every warning below as data, `{ kind, path, message }` (settings/problems.ts), in the same order. */
  problems: readonly Problem[];
  /** The block's problems, then limits capped, then environment values that fell back (a bad flag throws instead). */
  warnings: string[];
}

/**
 * Every setting in force: flag > config.json `hooks` > environment > default, where the `hooks` block
 * is config.json's if it checks whole, else the last valid one (`lastValid`), else none. Throws
 * `E_USAGE` for a bad flag; everything else is a warning.
 */
export function resolveSettings(input: SettingsInput): TeamSettings {
  const chosen = chooseBlock(input);
  const checked = checkHooksBlock(chosen.value, input.file);
  // The block in force always checks (config.json's, accepted, or one accepted before): never half of one.
  // Its limits outside their range are capped, each said once (capLimits).
  const { block, capped } = capLimits(checked.ok ? checked.block : {});
  const raw = checked.ok ? checked.raw : {};
  const configName = path.basename(input.file);
  const keptNote = chosen.from === "kept" ? " (last valid block)" : "";
  const cappedNote = (field: string): string => {
    const c = capped.find((x) => x.field === field);
    return c ? ` (${c.written}, capped to its ${c.bound})` : "";
  };
  /** A config.json field as an origin: `config.json hooks.limits.maxHooksPerEvent (500, capped to its ceiling)`. */
  const inConfig = (field: string): string => `${configName} ${field}${keptNote}${cappedNote(field)}`;
  /** A setting of the table as found at a level: its origin is that level's name (flag, field, variable, `default`). */
  function effective<T, S extends Source>(
    name: SettingName,
    value: T,
    source: S,
    at: { field?: string; variable?: string | null } = {},
  ): Effective<T, S> {
    const setting = SETTINGS[name];
    const origin =
      source === "flag"
        ? (setting.flag ?? name)
        : source === "config"
          ? inConfig(at.field ?? setting.field ?? name)
          : source === "env"
            ? (at.variable ?? setting.env[0] ?? name)
            : "default";
    return { value, source, origin };
  }
  /** A setting config.json may give (at `field`, its own by default), else its default. */
  function fromBlock<T>(
    name: SettingName,
    written: T | null | undefined,
    fallback: T,
    field?: string,
  ): Effective<T, "config" | "default"> {
    return written === undefined || written === null
      ? effective(name, fallback, "default")
      : effective(name, written, "config", field === undefined ? {} : { field });
  }

  // Flag > config.json > environment > default, walked by the table's rows (a bad flag throws first
  // for the policy, then for the timeout); warnings in the order timeout, policy, failure modes.
  const policyWarnings: string[] = [];
  const flags = input.flags ?? {};
  const walk = { config: raw, env: input.env, file: input.file, warnings: policyWarnings };
  const failureAction = resolveSetting("failureAction", { ...walk, flag: flags.failureAction });
  const maxReopensPerTask = resolveSetting("maxReopensPerTask", { ...walk, flag: flags.maxReopens });
  const followupOwner = resolveSetting("followupOwner", { ...walk, flag: flags.followupOwner });
  const timeoutWarnings: string[] = [];
  const timeout = resolveSetting("timeoutMs", { ...walk, flag: input.timeoutFlag, warnings: timeoutWarnings });
  const modes = resolveFailureModes(block, input.env);

  const failureModes = {} as Record<HookEventName, Effective<FailureMode>>;
  for (const event of HOOK_EVENTS) {
    const own = block.events?.[event]?.failureMode;
    const source = own ? "config" : modes.sources[event];
    const team = typeof block.failureMode === "string" ? "hooks.failureMode" : `hooks.failureMode.${event}`;
    const field = own ? `hooks.events.${event}.failureMode` : team;
    failureModes[event] = effective("failureMode", own ?? modes.modes[event], source, { field });
  }
  const limitRows = {} as Record<LimitName, Effective<number>>;
  for (const name of LIMIT_NAMES) limitRows[name] = fromBlock(name, block.limits?.[name], SETTINGS[name].default);

  const withheld = keepRefusedPrivacy(chosen.valid || input.noBlock ? null : input.hooks, input.file, {
    confidential: fromBlock("confidential", block.confidential, SETTINGS.confidential.default),
    redactEnv: fromBlock("redactEnv", block.redactEnv ? [...block.redactEnv] : null, SETTINGS.redactEnv.default),
  });
  const projection = fromBlock("projection", block.projection, SETTINGS.projection.default as Projection);
  const writableFields = fromBlock(
    "writableFields",
    block.writableFields ? [...block.writableFields] : null,
    SETTINGS.writableFields.default,
  );
  const events = eventPoints(block, { limits: limitRows, writableFields, projection }, inConfig);
  const flagged = (name: "trustChanges" | "allowInsecureHooks"): Effective<boolean, "flag" | "default"> =>
    input.trustFlags?.[name] === true ? effective(name, true, "flag") : effective(name, false, "default");

  // Every warning as data (settings/problems.ts); `warnings` is their messages, in this order.
  const fallen = [...timeoutWarnings, ...policyWarnings, ...modes.warnings];
  const problems = settingProblems({ chosen, capped, fallen, block, raw, file: input.file });
  const policy = {
    failureAction: effective("failureAction", failureAction.value, failureAction.source, failureAction),
    maxReopensPerTask: effective("maxReopensPerTask", maxReopensPerTask.value, maxReopensPerTask.source),
    followupOwner: effective("followupOwner", followupOwner.value, followupOwner.source, followupOwner),
  };
  return deepFreeze({
    ...policy,
    values: {
      failureAction: failureAction.value,
      maxReopensPerTask: maxReopensPerTask.value,
      followupOwner: followupOwner.value,
    },
    timeoutMs: effective("timeoutMs", timeout.value, timeout.source as Exclude<Source, "config">, timeout),
    failureModes,
    limits: limitRows,
    sweep: fromBlock("sweep", block.sweep, SETTINGS.sweep.default),
    exitCodes: fromBlock("exitCodes", block.exitCodes, SETTINGS.exitCodes.default),
    sandbox: fromBlock("sandbox", block.sandbox, SETTINGS.sandbox.default),
    handlers: [...(block.handlers ?? [])],
    templates: { ...(block.templates ?? {}) },
    deferTimeoutMs: fromBlock("deferTimeoutMs", block.deferTimeoutMs, SETTINGS.deferTimeoutMs.default),
    writableFields,
    projection,
    // A refused block still says what to withhold: its redaction and confidentiality are kept (settings/privacy.ts).
    ...withheld,
    reassignOnReopen: fromBlock("reassignOnReopen", block.reassignOnReopen, SETTINGS.reassignOnReopen.default),
    events,
    block: { valid: chosen.valid, from: chosen.from, problems: chosen.problems },
    trustChanges: flagged("trustChanges"),
    allowInsecureHooks: flagged("allowInsecureHooks"),
    privacy: privacyOf({ projection, ...withheld }),
    // A copy: the caller's config object stays its own (this one is frozen).
    hooksBlock: structuredClone(raw),
    refusal: chosen.refusal,
    capped,
    problems,
    warnings: problems.map((p) => p.message),
  });
}

/** Every problem of a team's settings, in order: the block's, limits capped, variables that fell back, fields never writable, keys unknown. */
function settingProblems(found: {
  chosen: ChosenBlock;
  capped: readonly CappedLimit[];
  fallen: readonly string[];
  block: HooksBlock;
  raw: Record<string, unknown>;
  file: string;
}): Problem[] {
  const { chosen, capped, fallen, block, raw, file } = found;
  return [
    ...chosen.problems.map((message, index): Problem => {
      const where = chosen.found[index] ?? { kind: "setting_invalid" as const, path: "hooks" };
      return { ...where, message };
    }),
    ...capped.map((c): Problem => ({ kind: "setting_capped", path: c.field, message: cappedLimitWarning(file, c) })),
    ...fallen.map((message): Problem => ({ kind: "env_ignored", path: variableNamed(message), message })),
    ...neverWritableWarnings(block.writableFields).map(
      (message): Problem => ({ kind: "setting_ignored", path: "hooks.writableFields", message }),
    ),
    ...HOOK_EVENTS.flatMap((event) =>
      neverWritableWarnings(block.events?.[event]?.writableFields).map(
        (message): Problem => ({
          kind: "setting_ignored",
          path: `hooks.events.${event}.writableFields`,
          message: message.replace("hooks.writableFields", `hooks.events.${event}.writableFields`),
        }),
      ),
    ),
    ...unknownKeyWarnings(raw, file),
  ];
}

/** Each hook point as its event sees it: its own declaration (`hooks.events.<event>`), else the team's settings. */
function eventPoints(
  block: HooksBlock,
  team: Pick<SettingsInForce, "limits" | "writableFields" | "projection">,
  inConfig: (field: string) => string,
): Record<HookEventName, EventPoint> {
  const events = {} as Record<HookEventName, EventPoint>;
  const { limits: limitRows, writableFields, projection } = team;
  for (const event of HOOK_EVENTS) {
    const own = block.events?.[event];
    const field = (name: string): string => `hooks.events.${event}.${name}`;
    const pointLimits = {} as Record<LimitName, Effective<number>>;
    for (const name of LIMIT_NAMES) {
      const value = own?.limits?.[name];
      pointLimits[name] =
        value === undefined ? limitRows[name] : { value, source: "config", origin: inConfig(field(`limits.${name}`)) };
    }
    events[event] = {
      modes: own?.modes
        ? { value: [...own.modes], source: "config", origin: inConfig(field("modes")) }
        : { value: defaultModes(event), source: "default", origin: "default" },
      participation: own?.participation
        ? { value: own.participation, source: "config", origin: inConfig(field("participation")) }
        : { value: "both", source: "default", origin: "default" },
      writableFields: own?.writableFields
        ? { value: [...own.writableFields], source: "config", origin: inConfig(field("writableFields")) }
        : writableFields,
      projection: own?.projection
        ? { value: { ...projection.value, ...own.projection }, source: "config", origin: inConfig(field("projection")) }
        : projection,
      limits: pointLimits,
    };
  }
  return events;
}

/** The modes of a hook point without a declaration: admit and transform, and defer where the event can be held. */
function defaultModes(event: HookEventName): readonly HookPointMode[] {
  return canDefer(event) ? HOOK_POINT_MODES : ["admit", "transform"];
}

/** Whether a defer may hold `event` under these settings: the event can be held, and its point's modes allow it. */
export function pointCanDefer(settings: Pick<SettingsReport, "events">, event: HookEventName): boolean {
  return canDefer(event) && settings.events[event].modes.value.includes("defer");
}

/**
 * The settings one event's run takes: the team's, with its hook point's writable fields (none when
 * its modes leave `transform` out), projection and limits in place of the team's. The same object
 * when the point declares nothing of its own.
 */
export function settingsForEvent(settings: TeamSettings, event: HookEventName): TeamSettings {
  const point = settings.events[event];
  const transform = point.modes.value.includes("transform");
  if (transform && point.writableFields === settings.writableFields && point.projection === settings.projection) {
    const sameLimits = (Object.keys(point.limits) as LimitName[]).every((n) => point.limits[n] === settings.limits[n]);
    if (sameLimits) return settings;
  }
  const writableFields: Effective<readonly string[], "config" | "default"> = transform
    ? point.writableFields
    : { value: [], source: "config", origin: `${point.modes.origin} (no transform: a patch writes nothing)` };
  return deepFreeze({
    ...settings,
    writableFields,
    projection: point.projection,
    limits: point.limits,
    privacy: privacyOf({
      projection: point.projection,
      confidential: settings.confidential,
      redactEnv: settings.redactEnv,
    }),
  });
}

/** `value` and everything it holds, frozen: settings in force are read, never changed, by whoever holds them. */
function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  for (const inner of Object.values(value)) deepFreeze(inner);
  return Object.freeze(value);
}

/** The part of the settings `doctor` and `policy get` show: the failure policy as `values`, `sources` and `origins`. */
export function settingsReport(settings: SettingsInForce): SettingsReport {
  const { failureAction, maxReopensPerTask, followupOwner, timeoutMs, failureModes, limits, sweep, exitCodes } =
    settings;
  const policy = { failureAction, maxReopensPerTask, followupOwner };
  const each = <T>(pick: (e: Effective<unknown>) => T): { [K in PolicySetting]: T } => ({
    failureAction: pick(policy.failureAction),
    maxReopensPerTask: pick(policy.maxReopensPerTask),
    followupOwner: pick(policy.followupOwner),
  });
  return {
    values: {
      failureAction: failureAction.value,
      maxReopensPerTask: maxReopensPerTask.value,
      followupOwner: followupOwner.value,
    },
    sources: each((e) => e.source),
    origins: each((e) => e.origin),
    timeoutMs,
    failureModes,
    limits,
    sweep,
    exitCodes,
    sandbox: settings.sandbox,
    handlers: settings.handlers,
    templates: settings.templates,
    deferTimeoutMs: settings.deferTimeoutMs,
    writableFields: settings.writableFields,
    projection: settings.projection,
    confidential: settings.confidential,
    redactEnv: settings.redactEnv,
    reassignOnReopen: settings.reassignOnReopen,
    events: settings.events,
    block: settings.block,
  };
}

/** The settings in force a report shows (`settingsReport`'s inverse): the failure policy's three, each whole again. */
export function reportInForce(report: SettingsReport): SettingsInForce {
  const { values, sources, origins, ...rest } = report;
  const each = <K extends PolicySetting>(key: K): Effective<EffectivePolicy[K]> => ({
    value: values[key],
    source: sources[key],
    origin: origins[key],
  });
  return {
    failureAction: each("failureAction"),
    maxReopensPerTask: each("maxReopensPerTask"),
    followupOwner: each("followupOwner"),
    ...rest,
  };
}

/** What one event needs of the privacy settings: the projection, confidentiality, the variables to redact. */
export function privacyOf(
  settings: Pick<SettingsReport, "projection" | "confidential" | "redactEnv">,
): PrivacySettings {
  return {
    projection: settings.projection.value,
    confidential: settings.confidential.value,
    redactEnv: settings.redactEnv.value,
  };
}

/** The values of a group of settings (`failureModes`, `limits`), without where they came from. */
export function settingValues<K extends string, T>(rows: Readonly<Record<K, Effective<T>>>): Readonly<Record<K, T>> {
  return Object.freeze(
    Object.fromEntries(Object.entries<Effective<T>>(rows).map(([key, row]) => [key, row.value])) as Record<K, T>,
  );
}

interface ChosenBlock {
  value: unknown;
  from: HooksBlockFrom;
  valid: boolean;
  problems: string[];
  /** Each problem's kind and path (settings/problems.ts), in the same order. */
  found: Array<Omit<Problem, "message">>;
  refusal: string | null;
}

function chooseBlock(input: SettingsInput): ChosenBlock {
  const kept = input.lastValid;
  const noBlock = input.noBlock;
  if (noBlock) {
    const found = [{ kind: "config_unreadable" as const, path: noBlock.kind === "not_an_object" ? "hooks" : "" }];
    if (kept)
      return {
        value: kept,
        from: "kept",
        valid: false,
        problems: [`${noBlock.reason} — the last valid "hooks" block stays in force`],
        found,
        refusal: noBlock.kind,
      };
    // No config.json, or one without `hooks`: the documented defaults, nothing to refuse.
    if (noBlock.kind === "missing" || noBlock.kind === "absent")
      return { value: {}, from: "none", valid: true, problems: [], found: [], refusal: null };
    return {
      value: {},
      from: "none",
      valid: false,
      problems: [`${noBlock.reason} — using defaults for the whole config`],
      found,
      refusal: noBlock.kind,
    };
  }
  const check = checkHooksBlock(input.hooks, input.file);
  if (check.ok) return { value: check.raw, from: "file", valid: true, problems: [], found: [], refusal: null };
  const fallback = kept ? "the last valid block stays in force" : "defaults and the environment apply";
  // One line per problem, each whole on its own: logs and `grep` read lines.
  const problems = check.problems.map((problem) => `${problem} — the "hooks" block is refused whole; ${fallback}`);
  const found = check.fields.map((path) => ({ kind: "setting_invalid" as const, path }));
  return {
    value: kept ?? {},
    from: kept ? "kept" : "none",
    valid: false,
    problems,
    found,
    refusal: check.problems.join("\n"),
  };
}

interface ResolvedSweep {
  value: SweepMode;
  source: "config" | "default";
}

/** `hooks.sweep` from config.json, else `auto`. */
export function resolveSweep(block: HooksBlock): ResolvedSweep {
  return block.sweep ? { value: block.sweep, source: "config" } : { value: DEFAULT_SWEEP, source: "default" };
}
