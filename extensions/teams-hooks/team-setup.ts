/**
 * Everything a command needs to know about the team before it fires an event: identity (config.json
 * with flag overrides), hooks dir, working directory, timeout and the effective policy with the source
 * of each value. Shared by `run`, `watch` and the pi extension, so they agree on every default.
 */
import fs from "node:fs/promises";
import path from "node:path";
import type { TeamIdentity } from "./contract.js";
import { HooksError, describeError, errnoCode } from "./errors.js";
import { checkHooksBlock, type FailureMode, type HookLimits, type ResolvedSweep, resolveFailureModes, resolveLimits, resolveSweep } from "./hooks-config.js";
import type { HookEventName } from "./contract.js";
import { resolvePolicy, resolveTimeoutMs, type PolicyFlags, type ResolvedPolicy, type ResolvedTimeout } from "./options.js";
import { resolveHooksDir } from "./paths.js";
import { loadTeamConfig } from "./team-config.js";

export interface TeamSetupInput {
  teamDir: string | undefined;
  taskList?: string | undefined;
  lead?: string | undefined;
  hooksDir?: string | undefined;
  cwd?: string | undefined;
  timeoutMs?: string | undefined;
  policyFlags?: PolicyFlags | undefined;
  env: Readonly<Record<string, string | undefined>>;
  /** The process's working directory: relative paths are taken from here. */
  processCwd: string;
  /** The last `hooks` block that was valid (the leader's, on a reload): used when the file's is not. */
  lastValidHooks?: Record<string, unknown> | undefined;
}

export interface TeamSetup {
  identity: TeamIdentity;
  configFile: string;
  hooksDir: string;
  hooksDirSource: "flag" | "env" | "default";
  /** The team's own hook layer, `<teamDir>/hooks` (issue 5): its files replace the global ones. */
  teamHooksDir: string;
  /** The config.json `hooks` block in force (the file's, or the last valid one when the file's is not). */
  hooksBlock: Record<string, unknown>;
  /** False when the file's `hooks` block was refused whole. */
  hooksBlockValid: boolean;
  failureModes: Readonly<Record<HookEventName, FailureMode>>;
  limits: Readonly<HookLimits>;
  /** Whether every run is swept for run-id escapees, or only a suspect one (`hooks.sweep`). */
  sweep: ResolvedSweep;
  cwd: string;
  timeout: ResolvedTimeout;
  policy: ResolvedPolicy;
  /** Config and environment problems that fell back to a default: show them, keep going. */
  warnings: string[];
}

/** Throws `E_USAGE` / `E_TEAM_DIR` for a missing or bad flag or directory, naming it. */
export async function resolveTeamSetup(input: TeamSetupInput): Promise<TeamSetup> {
  if (!input.teamDir) throw new HooksError("E_USAGE", "--team-dir is required (the team's directory, e.g. ~/.pi/teams/my-team)");
  const teamDir = path.resolve(input.processCwd, input.teamDir);
  await requireDirectory(teamDir, "--team-dir", "E_TEAM_DIR");
  const cwd = input.cwd ? path.resolve(input.processCwd, input.cwd) : input.processCwd;
  if (input.cwd) await requireDirectory(cwd, "--cwd", "E_USAGE");

  const config = await loadTeamConfig(teamDir);
  const identity: TeamIdentity = { ...config.identity };
  if (input.taskList !== undefined) identity.taskListId = nonEmpty(input.taskList, "--task-list");
  if (input.lead !== undefined) identity.leadName = nonEmpty(input.lead, "--lead");

  const hooks = resolveHooksDir({ flag: input.hooksDir, teamDir, env: input.env, cwd: input.processCwd });
  const timeout = resolveTimeoutMs({ ...(input.timeoutMs === undefined ? {} : { flag: input.timeoutMs }), env: input.env });
  // The block is checked whole (issue 5): one mistake refuses all of it, never half.
  const check = checkHooksBlock(config.hooks, config.file);
  const blockWarnings: string[] = [];
  let hooksBlock: Record<string, unknown> = check.ok ? check.raw : (input.lastValidHooks ?? {});
  if (!check.ok) {
    const fallback = input.lastValidHooks ? "the last valid block stays in force" : "defaults and the environment apply";
    // One line per problem, each whole on its own: logs and `grep` read lines.
    for (const problem of check.problems) blockWarnings.push(`${problem} — the "hooks" block is refused whole; ${fallback}`);
  }
  const block = checkHooksBlock(hooksBlock, config.file);
  if (!block.ok) hooksBlock = {}; // a "last valid" block that no longer checks: cannot happen, but never half
  const parsedBlock = block.ok ? block.block : {};
  const modes = resolveFailureModes(parsedBlock, input.env);
  const policy = resolvePolicy({ flags: input.policyFlags, config: hooksBlock, env: input.env, configFile: config.file });
  return {
    identity,
    configFile: config.file,
    hooksDir: hooks.dir,
    hooksDirSource: hooks.source,
    teamHooksDir: path.join(teamDir, "hooks"),
    hooksBlock,
    hooksBlockValid: check.ok,
    failureModes: modes.modes,
    limits: resolveLimits(parsedBlock),
    sweep: resolveSweep(parsedBlock),
    cwd,
    timeout,
    policy,
    warnings: [...config.warnings, ...blockWarnings, ...timeout.warnings, ...policy.warnings, ...modes.warnings],
  };
}

async function requireDirectory(dir: string, flag: string, code: "E_USAGE" | "E_TEAM_DIR"): Promise<void> {
  try {
    const stat = await fs.stat(dir);
    if (!stat.isDirectory()) throw new HooksError(code, `${flag} ${dir}: not a directory`);
  } catch (error) {
    if (error instanceof HooksError) throw error;
    const reason = errnoCode(error) === "ENOENT" ? "no such directory" : describeError(error);
    throw new HooksError(code, `${flag} ${dir}: ${reason}`, { cause: error });
  }
}

function nonEmpty(value: string, flag: string): string {
  if (value.trim() === "") throw new HooksError("E_USAGE", `${flag} must not be empty`);
  return value;
}
