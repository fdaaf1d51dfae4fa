/**
 * The `hooks` block of config.json, validated as a whole by one schema: the failure policy, the
 * failure mode and the limits per event. An invalid block is refused whole — every problem named by
 * its field — so a team never runs with half of what it wrote (the leader keeps the last valid block).
 * Pure: the raw block and the environment are arguments.
 */
import { z } from "zod";
import { HOOK_EVENTS, type HookEventName } from "./contract.js";
import { FailureActionSettingSchema, FollowupOwnerSettingSchema, MAX_TIMEOUT_MS, MaxReopensSettingSchema } from "./options.js";

export const FAILURE_MODES = ["closed", "open"] as const;
export type FailureMode = (typeof FAILURE_MODES)[number];

/** What a hook error (could not start, timed out, killed, invalid verdict, a limit) means, by default. */
export const DEFAULT_FAILURE_MODES: Readonly<Record<HookEventName, FailureMode>> = Object.freeze({
  task_completed: "closed",
  task_failed: "closed",
  idle: "open",
});

export const DEFAULT_LIMITS = Object.freeze({
  /** Hooks in one event's chain (the v1 file plus `on_<event>.d/`). */
  maxHooksPerEvent: 16,
  /** The whole chain of one event, start of the first hook to end of the last. */
  chainDeadlineMs: 300_000,
  /** The context document of one invocation, in UTF-8 bytes. */
  maxPayloadBytes: 8 * 1024 * 1024,
});
export type HookLimits = { -readonly [K in keyof typeof DEFAULT_LIMITS]: number };

function whole(min: number, max: number) {
  return z
    .union([z.number(), z.string().trim().regex(/^\d+$/, "expected a whole number").transform(Number)])
    .pipe(z.number().int().min(min).max(max));
}

export const FailureModeSettingSchema = z.string().trim().toLowerCase().pipe(z.enum(FAILURE_MODES));

/** One mode for every event, or a mode per event (events left out keep their default). */
const FailureModeBlock = z.union([
  FailureModeSettingSchema,
  z.strictObject(Object.fromEntries(HOOK_EVENTS.map((e) => [e, FailureModeSettingSchema.optional()])) as Record<HookEventName, z.ZodOptional<typeof FailureModeSettingSchema>>),
]);

/**
 * When a run is checked for processes that left the hook's process group but carry its run id (a
 * `setsid` daemon): `auto` only when something is suspect (a timeout, pipes held open, members left
 * in the group), `always` after every run, a clean exit included. `always` costs a /proc scan per run
 * (docs/performance.md).
 */
export const SWEEP_MODES = ["auto", "always"] as const;
export type SweepMode = (typeof SWEEP_MODES)[number];
export const DEFAULT_SWEEP: SweepMode = "auto";
export const SweepSettingSchema = z.string().trim().toLowerCase().pipe(z.enum(SWEEP_MODES));

/** The whole `hooks` block. Keys it does not know are left alone (another tool may own them). */
export const HooksBlockSchema = z.looseObject({
  failureAction: FailureActionSettingSchema.nullish(),
  maxReopensPerTask: MaxReopensSettingSchema.nullish(),
  followupOwner: FollowupOwnerSettingSchema.nullish(),
  failureMode: FailureModeBlock.nullish(),
  sweep: SweepSettingSchema.nullish(),
  limits: z
    .strictObject({
      maxHooksPerEvent: whole(1, 64).optional(),
      chainDeadlineMs: whole(1, MAX_TIMEOUT_MS).optional(),
      maxPayloadBytes: whole(1024, 1024 * 1024 * 1024).optional(),
    })
    .nullish(),
});
export type HooksBlock = z.output<typeof HooksBlockSchema>;

export type HooksBlockCheck = { ok: true; block: HooksBlock; raw: Record<string, unknown> } | { ok: false; problems: string[] };

/** Checks the raw block (anything); `undefined`/`null` is an empty, valid block. */
export function checkHooksBlock(raw: unknown, file: string): HooksBlockCheck {
  if (raw === undefined || raw === null) return { ok: true, block: {}, raw: {} };
  const parsed = HooksBlockSchema.safeParse(raw);
  if (parsed.success) return { ok: true, block: parsed.data, raw: raw as Record<string, unknown> };
  const problems = parsed.error.issues.map((issue) => {
    const field = ["hooks", ...issue.path.map(String)].join(".");
    const got = valueAt(raw, issue.path);
    return `${file}: ${field}: ${issue.message}${got === undefined ? "" : `, got ${JSON.stringify(got)}`}`;
  });
  return { ok: false, problems };
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node: unknown = root;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

export interface ResolvedModes {
  modes: Readonly<Record<HookEventName, FailureMode>>;
  sources: Readonly<Record<HookEventName, "config" | "env" | "default">>;
  warnings: string[];
}

/** Failure mode per event: config.json `hooks.failureMode` > `PI_TEAMS_HOOKS_FAILURE_MODE` > default. */
export function resolveFailureModes(block: HooksBlock, env: Readonly<Record<string, string | undefined>>): ResolvedModes {
  const warnings: string[] = [];
  let fromEnv: FailureMode | undefined;
  const rawEnv = env.PI_TEAMS_HOOKS_FAILURE_MODE;
  if (rawEnv !== undefined && rawEnv.trim() !== "") {
    const parsed = FailureModeSettingSchema.safeParse(rawEnv);
    if (parsed.success) fromEnv = parsed.data;
    else warnings.push(`PI_TEAMS_HOOKS_FAILURE_MODE: ${JSON.stringify(rawEnv)} is not valid (expected closed or open) — ignored`);
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
  return Object.freeze({ ...DEFAULT_LIMITS, ...Object.fromEntries(Object.entries(block.limits ?? {}).filter(([, v]) => v !== undefined)) });
}

export interface ResolvedSweep {
  value: SweepMode;
  source: "config" | "default";
}

/** `hooks.sweep` from config.json, else `auto`. */
export function resolveSweep(block: HooksBlock): ResolvedSweep {
  return block.sweep ? { value: block.sweep, source: "config" } : { value: DEFAULT_SWEEP, source: "default" };
}
