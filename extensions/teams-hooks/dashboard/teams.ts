/**
 * The teams the dashboard shows (the folders under the teams root that hold a `config.json`, named as
 * team dirs are) and, per team, the gates held for a decision now (`hook-state/deferrals/`).
 */
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import type { HookEventName } from "../contract/contract.js";
import { deferralsDir, isDeferralFileName, readDeferralFile } from "../deferrals/record.js";
import { configFile, isTeamName } from "../team/paths.js";
import { loadTeamConfig } from "../team/config-file.js";
import { resolveSettings } from "../settings/team-settings.js";

export interface TeamRef {
  name: string;
  dir: string;
  /**
   * What its gates said is withheld from this viewer: a confidential team (`hooks.confidential`, or
   * a config.json that cannot be read: fail closed) seen by a remote viewer (a key), as the task API
   * withholds it. Its runs keep their lifecycle; their stderr, verdict, output and summary are left out.
   */
  withheld?: boolean;
}

/**
 * `teams` as `viewer` may see them: with `remote` (a viewer with a key, on a server started with
 * --allow-remote), each confidential team marked `withheld`.
 */
export async function forViewer(
  teams: readonly TeamRef[],
  remote: boolean,
  env: Readonly<Record<string, string | undefined>>,
): Promise<TeamRef[]> {
  if (!remote) return [...teams];
  const marked: TeamRef[] = [];
  for (const team of teams) marked.push((await isConfidentialTeam(team.dir, env)) ? { ...team, withheld: true } : team);
  return marked;
}

/** `hooks.confidential` as the leader reads it; true when the team's config cannot be read (fail closed). */
async function isConfidentialTeam(
  teamDir: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<boolean> {
  try {
    const config = await loadTeamConfig(teamDir);
    if (config.fileWarning !== null) return true;
    return resolveSettings({ hooks: config.hooks, noBlock: config.noHooks, file: config.file, env }).confidential.value;
  } catch {
    return true;
  }
}

/** The teams under `teamsRoot` in name order; `allowed` (a key's teams) narrows them, null keeps all. */
export async function listTeams(teamsRoot: string, allowed: readonly string[] | null): Promise<TeamRef[]> {
  const names = (await readdir(teamsRoot, { withFileTypes: true }))
    .filter(
      (d) =>
        (d.isDirectory() || d.isSymbolicLink()) && isTeamName(d.name) && (allowed === null || allowed.includes(d.name)),
    )
    .map((d) => d.name)
    .sort();
  const teams: TeamRef[] = [];
  for (const name of names) {
    const dir = path.join(teamsRoot, name);
    if (await isFile(configFile(dir))) teams.push({ name, dir });
  }
  return teams;
}

/** The team `name` if it is one of `listTeams`; null otherwise (never a path outside the root). */
export async function findTeam(
  teamsRoot: string,
  name: string,
  allowed: readonly string[] | null,
): Promise<TeamRef | null> {
  if (!isTeamName(name) || (allowed !== null && !allowed.includes(name))) return null;
  const dir = path.join(teamsRoot, name);
  return (await isFile(configFile(dir))) ? { name, dir } : null;
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

/** A gate that answered `defer` and waits for `decide` (or the API); `expired` once its time is past. */
export interface HeldGate {
  runId: string;
  gate: string;
  event: HookEventName;
  taskId: string;
  member: string | null;
  deferredAt: string;
  expiresAt: string;
  expired: boolean;
  reason: string | null;
  /** The held run's log file name, when the leader wrote it. */
  logName: string | null;
}

/**
 * The team's held gates, oldest first; a record that cannot be read is left out (`decide` names it).
 * `withheld`: without their reasons.
 */
export async function heldGates(teamDir: string, nowMs: number, withheld = false): Promise<HeldGate[]> {
  let names: string[];
  try {
    names = (await readdir(deferralsDir(teamDir))).filter(isDeferralFileName);
  } catch {
    return []; // nothing was ever held here
  }
  const held: HeldGate[] = [];
  for (const name of names) {
    const read = await readDeferralFile(path.join(deferralsDir(teamDir), name));
    if (!read.ok) continue;
    const d = read.value;
    if (d.decision !== undefined || d.applied !== undefined) continue;
    held.push({
      runId: d.runId,
      gate: d.hook.gate,
      event: d.event,
      taskId: d.taskId,
      member: d.member,
      deferredAt: d.deferredAt,
      expiresAt: d.expiresAt,
      expired: Date.parse(d.expiresAt) <= nowMs,
      // The gate's reason may quote the task: left out where what gates said is withheld.
      reason: withheld ? null : (d.reason ?? null),
      logName: d.logFile === null ? null : path.basename(d.logFile),
    });
  }
  return held.sort((a, b) => (a.deferredAt < b.deferredAt ? -1 : 1));
}
