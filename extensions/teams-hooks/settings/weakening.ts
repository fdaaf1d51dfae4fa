/**
 * Settings that can weaken a verdict are trusted content, like a gate's bytes: config.json is the
 * team's (the agents can write it), so a change of `hooks` that could turn a failing gate into a pass,
 * blind it or let it run with more authority waits for the team lead's approval, while the last
 * approved value stays in force. A change that can only make a gate stricter applies at once.
 *
 * The settings kept: failureMode, exitCodes, projection, limits, writableFields, sandbox, confidential,
 * redactEnv, and each hook point's own declaration, `events` (a handler is a gate of its own, trusted
 * by content: trust/trust.ts). Pure: the approved
 * view is read and written by team/approved-settings.ts.
 */
import { isDeepStrictEqual } from "node:util";

/** The `hooks` keys whose change can weaken a verdict. */
const WEAKENING_KEYS = [
  "failureMode",
  "exitCodes",
  "projection",
  "limits",
  "writableFields",
  "sandbox",
  "confidential",
  "redactEnv",
  "events",
] as const;
type WeakeningKey = (typeof WEAKENING_KEYS)[number];

/** What config.json says of the weakening keys (an absent key: the default). */
export type SettingsView = Partial<Record<WeakeningKey, unknown>>;

/** One key that differs from what the lead approved. */
export interface SettingChange {
  /** `hooks.failureMode` */
  path: string;
  key: WeakeningKey;
  /** As JSON, `(default)` when absent. */
  from: string;
  to: string;
  /** Could it turn a failing gate into a pass, blind it, or let it run with more authority? */
  weakens: boolean;
}

/** The weakening keys of a `hooks` block as written (absent ones left out). */
export function settingsView(block: unknown): SettingsView {
  const view: SettingsView = {};
  if (block === null || typeof block !== "object" || Array.isArray(block)) return view;
  const record = block as Record<string, unknown>;
  for (const key of WEAKENING_KEYS) if (record[key] !== undefined && record[key] !== null) view[key] = record[key];
  return view;
}

/** Each key that differs between the approved view and the proposed one, and whether it weakens. */
export function compareSettings(approved: SettingsView, proposed: SettingsView): SettingChange[] {
  const changes: SettingChange[] = [];
  for (const key of WEAKENING_KEYS) {
    const before = approved[key];
    const after = proposed[key];
    if (isDeepStrictEqual(before, after)) continue;
    changes.push({
      path: `hooks.${key}`,
      key,
      from: shown(before),
      to: shown(after),
      weakens: !strengthens(key, before, after),
    });
  }
  return changes;
}

/**
 * The `hooks` block that is in force: the proposed one with each weakening change held back (its key
 * as approved: set to the approved value, or removed when the approved block had none).
 */
export function withHeldBack(block: Record<string, unknown>, approved: SettingsView, held: readonly SettingChange[]) {
  const merged: Record<string, unknown> = { ...block };
  for (const change of held) {
    const value = approved[change.key];
    if (value === undefined) delete merged[change.key];
    else merged[change.key] = value;
  }
  return merged;
}

/** A change that can only make a gate stricter (a gate that failed before still fails). */
function strengthens(key: WeakeningKey, before: unknown, after: unknown): boolean {
  switch (key) {
    case "failureMode":
      // Errors that were let through (open) fail now (closed), and none the other way.
      return failureModes(after).every((mode, i) => mode === "closed" || mode === failureModes(before)[i]);
    case "sandbox":
      return rank(sandboxOf(after)) >= rank(sandboxOf(before));
    case "confidential":
      return after === true;
    case "redactEnv": {
      const was = Array.isArray(before) ? before : [];
      const now = Array.isArray(after) ? after : [];
      return was.every((name) => now.includes(name));
    }
    case "events":
      return EVENTS.every((event) => pointStrengthens(event, declaration(before, event), declaration(after, event)));
    case "exitCodes":
    case "projection":
    case "limits":
    case "writableFields":
      return false;
  }
}

/** `hooks.events.<event>` as written, or an empty declaration. */
function declaration(events: unknown, event: (typeof EVENTS)[number]): Record<string, unknown> {
  const record = events && typeof events === "object" ? (events as Record<string, unknown>)[event] : undefined;
  return record && typeof record === "object" && !Array.isArray(record) ? (record as Record<string, unknown>) : {};
}

/**
 * Whether one hook point's declaration can only be stricter than before: its failure mode closed (or
 * as it was), its modes fewer (or the same), its participation more required; writable fields,
 * projection and limits as they were (any change of those is held, as the team-wide ones are).
 */
function pointStrengthens(
  event: (typeof EVENTS)[number],
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): boolean {
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const [was, now] = [before[key], after[key]];
    if (isDeepStrictEqual(was, now)) continue;
    if (key === "failureMode") {
      if (typeof now === "string" && now.trim().toLowerCase() === "closed") continue;
      return false;
    }
    if (key === "modes") {
      const all =
        event === "task_completed" || event === "task_failed"
          ? ["admit", "transform", "defer"]
          : ["admit", "transform"];
      const wasModes = Array.isArray(was) ? was : all;
      if (Array.isArray(now) && now.every((mode) => wasModes.includes(mode))) continue;
      return false;
    }
    if (key === "participation") {
      if (participationRank(now) >= participationRank(was)) continue;
      return false;
    }
    return false;
  }
  return true;
}

/** `optional` < `both` (the default) < `required`. */
function participationRank(value: unknown): number {
  const word = typeof value === "string" ? value.trim().toLowerCase() : "both";
  return word === "required" ? 2 : word === "optional" ? 0 : 1;
}

const EVENTS = ["task_completed", "task_failed", "idle", "task_started"] as const;
/** The default failure modes: task events closed, idle open. */
const DEFAULT_MODES: Record<(typeof EVENTS)[number], string> = {
  task_completed: "closed",
  task_failed: "closed",
  idle: "open",
  task_started: "closed",
};

/** `hooks.failureMode` (a mode for all, or one per event) as one mode per event. */
function failureModes(value: unknown): string[] {
  if (typeof value === "string") return EVENTS.map(() => value.trim().toLowerCase());
  const record = value && typeof value === "object" ? (value as Record<string, unknown>) : {};
  return EVENTS.map((event) => {
    const mode = record[event];
    return typeof mode === "string" ? mode.trim().toLowerCase() : DEFAULT_MODES[event];
  });
}

function sandboxOf(value: unknown): string {
  return typeof value === "string" ? value.trim().toLowerCase() : "auto";
}

function rank(mode: string): number {
  return mode === "required" ? 2 : mode === "auto" ? 1 : 0;
}

function shown(value: unknown): string {
  return value === undefined ? "(default)" : JSON.stringify(value);
}
