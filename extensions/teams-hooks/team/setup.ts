/**
 * Everything a command needs to know about the team before it fires an event: identity (config.json
 * with flag overrides), hooks dir, working directory, and every setting in force with the source of
 * each value (settings/team-settings.ts `TeamSettings`, built by the one resolver `doctor`, `config` and
 * `policy` use). Shared by `run`, `watch` and the pi extension, so they agree on every default. Frozen:
 * a leader that re-reads config.json builds a new one (leader/hints.ts), it never edits this one.
 */
import { readApprovedSettings } from "./approved-settings.js";
import { compareSettings, settingsView, withHeldBack, type SettingChange } from "../settings/weakening.js";
import path from "node:path";
import type { TeamIdentity } from "../contract/team-files.js";
import { HooksError } from "../contract/errors.js";
import { type TeamSettings, type TrustFlags, resolveSettings } from "../settings/team-settings.js";
import type { PolicyFlags } from "../settings/options.js";
import { unsafeName } from "../text/messages.js";
import { isSafeName, requireDirectory, resolveHooksDir, resolveTeamDirFlags, sanitizeName } from "./paths.js";
import { loadTeamConfig } from "./config-file.js";

export interface TeamSetupInput {
  /**
   * `--team-dir`; with `team`, `--team ID`; with neither, the team dir the working directory is in
   * (resolveTeamDirFlags).
   */
  teamDir: string | undefined;
  team?: string | undefined;
  taskList?: string | undefined;
  lead?: string | undefined;
  hooksDir?: string | undefined;
  cwd?: string | undefined;
  timeoutMs?: string | undefined;
  policyFlags?: PolicyFlags | undefined;
  /** `--trust-changes`, `--allow-insecure-hooks`. */
  trustFlags?: TrustFlags | undefined;
  env: Readonly<Record<string, string | undefined>>;
  /** The process's working directory: relative paths are taken from here. */
  processCwd: string;
  /**
   * The `hooks` block in force (the leader's, on a reload): kept when the file's is refused, or when
   * config.json is unreadable, gone or without `hooks`. Undefined: none is in force.
   */
  lastValidHooks?: Record<string, unknown> | undefined;
}

export interface TeamSetup {
  identity: TeamIdentity;
  configFile: string;
  hooksDir: string;
  hooksDirSource: "flag" | "env" | "default";
  /** The team's own hook layer, `<teamDir>/hooks`: its files replace the global ones (gates/chain.ts). */
  teamHooksDir: string;
  cwd: string;
  /**
   * Every setting in force with where it came from, as `doctor` and `policy get` show them: the
   * failure policy, timeout, failure modes, limits, privacy, handlers, trust flags… and the `hooks`
   * block in force (the file's, or the last valid one when the file's is not).
   */
  settings: TeamSettings;
  /** Config and environment problems that fell back to a default: show them, keep going. */
  warnings: readonly string[];
  /** Changes of config.json that can weaken a verdict, held for the lead's approval (settings/weakening.ts). */
  heldSettings: readonly SettingChange[];
}

/**
 * Throws `E_USAGE` for a bad flag, `E_TEAM_DIR` / `E_HOOKS_DIR` / `E_PATH` for a directory that is not there, naming
 * it.
 */
export async function resolveTeamSetup(input: TeamSetupInput): Promise<TeamSetup> {
  const teamDir = await resolveTeamDirFlags({
    teamDir: input.teamDir,
    team: input.team,
    env: input.env,
    cwd: input.processCwd,
  });
  const cwd = input.cwd ? path.resolve(input.processCwd, input.cwd) : input.processCwd;
  if (input.cwd) await requireDirectory(cwd, `--cwd ${cwd}`, "E_PATH");

  const config = await loadTeamConfig(teamDir);
  const identity: TeamIdentity = { ...config.identity };
  if (input.taskList !== undefined) identity.taskListId = nonEmpty(input.taskList, "--task-list");
  if (input.lead !== undefined) identity.leadName = safeName(input.lead, "--lead");

  const hooks = resolveHooksDir({ flag: input.hooksDir, teamDir, env: input.env, cwd: input.processCwd });
  // A hooks dir someone named and that is not there means no gate at all: a mistake, never silence.
  // (The default dir missing is how a team without gates looks; `watch` warns about that.)
  if (hooks.source !== "default") {
    await requireDirectory(
      hooks.dir,
      `${hooks.source === "flag" ? "--hooks-dir" : "PI_TEAMS_HOOKS_DIR"} ${hooks.dir}`,
      "E_HOOKS_DIR",
    );
  }
  // A change of config.json that can weaken a verdict waits for the lead's approval: the approved value stays.
  const approved = readApprovedSettings(teamDir, input.env);
  const changes = approved ? compareSettings(approved, settingsView(config.hooks)) : [];
  const held = changes.filter((c) => c.weakens);
  const block =
    held.length > 0 && approved
      ? withHeldBack(
          config.hooks && typeof config.hooks === "object" && !Array.isArray(config.hooks)
            ? (config.hooks as Record<string, unknown>)
            : {},
          approved,
          held,
        )
      : config.hooks;
  const settings = resolveSettings({
    hooks: block,
    noBlock: held.length > 0 ? null : config.noHooks,
    file: config.file,
    env: input.env,
    flags: input.policyFlags,
    timeoutFlag: input.timeoutMs,
    trustFlags: input.trustFlags,
    lastValid: input.lastValidHooks,
  });
  // An unusable config.json is said once: by the settings (which say what applies instead).
  const configWarnings = config.warnings.filter((w) => w !== config.fileWarning);
  return Object.freeze({
    identity: Object.freeze(identity),
    configFile: config.file,
    hooksDir: hooks.dir,
    hooksDirSource: hooks.source,
    teamHooksDir: path.join(teamDir, "hooks"),
    cwd,
    settings,
    heldSettings: Object.freeze(held),
    warnings: Object.freeze([
      ...configWarnings,
      ...settings.warnings,
      ...held.map((c) => heldSettingWarning(config.file, c)),
    ]),
  });
}

/** One weakening change of config.json, held: what it is and what to do. */
export function heldSettingWarning(file: string, c: SettingChange): string {
  return `${file}: ${c.path} changed from ${c.from} to ${c.to}, which can weaken a gate's verdict: it waits for the team lead's approval (pi-teams-hooks trust), and the approved value stays in force`;
}

/**
 * The setup in force once config.json changed under a leader: `next`'s settings, `before`'s identity
 * and directories (a leader does not move to another team mid-run). A new object; neither is changed.
 */
export function withSettingsOf(before: TeamSetup, next: TeamSetup): TeamSetup {
  return Object.freeze({ ...before, settings: next.settings, heldSettings: next.heldSettings });
}

/** The leader's inbox file is named after it: a name that maps onto another's file is refused. */
function safeName(value: string, flag: string): string {
  if (!isSafeName(value)) throw new HooksError("E_USAGE", `${flag} ${unsafeName(value, sanitizeName(value))}`);
  return value;
}

function nonEmpty(value: string, flag: string): string {
  if (value.trim() === "") throw new HooksError("E_USAGE", `${flag} must not be empty`);
  return value;
}
