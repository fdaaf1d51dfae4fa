/**
 * `config.json` of a team. Loading never fails: a missing file, invalid JSON or a mistyped field costs
 * a warning (naming the file and the field) and the default other team runtimes use applies
 * (docs/decisions/team-dir-facts.md), because a leader that refuses to start over a
 * cosmetic config error helps nobody. Writing touches only the `hooks` block, under the config lock,
 * and keeps everything else as it was.
 */
import path from "node:path";
import type { TeamIdentity } from "../contract/team-files.js";
import type { NoHooksBlock } from "../settings/team-settings.js";
import { readJsonValue, writeJsonAtomic, type FileProblem } from "./json-file.js";
import { withLock } from "./lock.js";
import { unsafeName } from "../text/messages.js";
import { configFile, isSafeName, sanitizeName } from "./paths.js";

const DEFAULT_LEAD_NAME = "team-lead";
const DEFAULT_STYLE = "normal";

export interface LoadedTeamConfig {
  identity: TeamIdentity;
  /**
   * The raw `hooks` value, of any type (settings/team-settings.ts checks it whole); undefined when `noHooks` says why
   * there is none.
   */
  hooks: unknown;
  /** Why config.json gives no `hooks` block (no file, not JSON, not an object, no `hooks`); null when it gives one. */
  noHooks: NoHooksBlock | null;
  /** Identity fields that fell back to a default, and `fileWarning`. */
  warnings: string[];
  /**
   * The warning for a config.json that cannot be used at all ("using defaults for the whole config"), also in
   * `warnings`.
   */
  fileWarning: string | null;
  file: string;
  /** False when there is no config.json (not a warning: the defaults are the documented behaviour). */
  exists: boolean;
}

const IDENTITY_FIELDS = ["teamId", "taskListId", "leadName", "style"] as const;
type IdentityField = (typeof IDENTITY_FIELDS)[number];

/** Loads the team config of `teamDir` with defaults; never throws for anything in the file. */
export async function loadTeamConfig(teamDir: string): Promise<LoadedTeamConfig> {
  const dir = path.resolve(teamDir);
  const file = configFile(dir);
  const warnings: string[] = [];
  const read = await readJsonValue(file);
  let raw: Record<string, unknown> = {};
  let exists = true;
  let noHooks: NoHooksBlock | null = null;
  if (!read.ok) {
    if (read.problem.kind === "missing") exists = false;
    noHooks = { kind: read.problem.kind === "missing" ? "missing" : "unreadable", reason: read.problem.message };
  } else if (isRecord(read.value)) {
    raw = read.value;
  } else {
    noHooks = { kind: "not_an_object", reason: `${file}: expected a JSON object, got ${kindOf(read.value)}` };
  }
  const fileWarning =
    noHooks && noHooks.kind !== "missing" ? `${noHooks.reason} — using defaults for the whole config` : null;
  if (fileWarning) warnings.push(fileWarning);

  const pick = (field: IdentityField, fallback: string): string => {
    const value = raw[field];
    if (value === undefined || value === null) return fallback;
    if (typeof value === "string" && value.trim() !== "") return value;
    warnings.push(
      `${file}: ${field}: expected a non-empty string, got ${describe(value)} — using ${JSON.stringify(fallback)}`,
    );
    return fallback;
  };
  const teamId = pick("teamId", path.basename(dir));
  const identity: TeamIdentity = {
    teamId,
    teamDir: dir,
    taskListId: pick("taskListId", teamId),
    leadName: safeLeadName(pick("leadName", DEFAULT_LEAD_NAME), file, warnings),
    style: pick("style", DEFAULT_STYLE),
  };

  // A `hooks` of the wrong type is the block check's to refuse (settings/team-settings.ts), with the rest of it.
  const hooks = noHooks ? undefined : (raw.hooks ?? undefined);
  if (!noHooks && hooks === undefined) noHooks = { kind: "absent", reason: `${file}: no "hooks" block` };
  return { identity, hooks, noHooks, warnings, fileWarning, file, exists };
}

/** The leader's inbox is named after the lead: a name that maps onto another's file is not used. */
function safeLeadName(name: string, file: string, warnings: string[]): string {
  if (isSafeName(name)) return name;
  warnings.push(
    `${file}: leadName: ${unsafeName(name, sanitizeName(name))} — using ${JSON.stringify(DEFAULT_LEAD_NAME)}`,
  );
  return DEFAULT_LEAD_NAME;
}

type UpdateHooksResult =
  | { ok: true; file: string; hooks: Record<string, unknown>; created: boolean }
  | { ok: false; problem: FileProblem };

/**
 * Sets keys of the `hooks` block (a key set to `undefined` is removed; `patch` may be a function of the
 * block as it is under the lock, which may throw to write nothing), under the config lock, keeping
 * every other field and key order. A config.json that exists but is not a JSON object, or whose
 * `hooks` is not an object, is returned as a problem and not overwritten. A missing config.json is
 * created with those defaults, so that other team runtimes find a complete file.
 */
export async function updateHooksConfig(
  teamDir: string,
  patch:
    | Readonly<Record<string, unknown>>
    | ((hooks: Readonly<Record<string, unknown>>) => Readonly<Record<string, unknown>>),
  options: { label?: string; timeoutMs?: number; now?: Date } = {},
): Promise<UpdateHooksResult> {
  const dir = path.resolve(teamDir);
  const file = configFile(dir);
  return withLock(
    file,
    async (): Promise<UpdateHooksResult> => {
      const read = await readJsonValue(file);
      let config: Record<string, unknown>;
      let created = false;
      if (read.ok) {
        if (!isRecord(read.value)) return invalid(file, undefined, `${file}: expected a JSON object — left untouched`);
        config = read.value;
      } else if (read.problem.kind === "missing") {
        config = defaultConfig(dir, options.now ?? new Date());
        created = true;
      } else {
        return { ok: false, problem: { ...read.problem, message: `${read.problem.message} — left untouched` } };
      }
      const current = config.hooks;
      if (current !== undefined && current !== null && !isRecord(current)) {
        return invalid(file, "hooks", `${file}: hooks: expected an object, got ${describe(current)} — left untouched`);
      }
      const hooks: Record<string, unknown> = { ...(isRecord(current) ? current : {}) };
      // A function sees the block as it is under the lock: a nested key (limits) merges with what is there now.
      for (const [key, value] of Object.entries(typeof patch === "function" ? patch(hooks) : patch)) {
        if (value === undefined) delete hooks[key];
        else hooks[key] = value;
      }
      const next = { ...config, hooks };
      await writeJsonAtomic(file, next);
      return { ok: true, file, hooks, created };
    },
    {
      label: options.label ?? "update hooks config",
      timeoutMs: options.timeoutMs,
    },
  );
}

function defaultConfig(dir: string, now: Date): Record<string, unknown> {
  const teamId = path.basename(dir);
  const at = now.toISOString();
  return {
    version: 1,
    teamId,
    taskListId: teamId,
    leadName: DEFAULT_LEAD_NAME,
    style: DEFAULT_STYLE,
    createdAt: at,
    updatedAt: at,
    members: [],
  };
}

function invalid(file: string, field: string | undefined, message: string): { ok: false; problem: FileProblem } {
  return { ok: false, problem: { kind: "invalid", file, ...(field ? { field } : {}), message } };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function kindOf(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  return value === null ? "null" : `a ${typeof value}`;
}

function describe(value: unknown): string {
  return isRecord(value) || Array.isArray(value) ? kindOf(value) : JSON.stringify(value);
}
