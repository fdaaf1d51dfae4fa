/**
 * The team-dir layout pi-agent-teams writes (docs/decisions/team-dir-facts.md), as pure
 * functions of values passed in, and (resolveTeamDirFlags and requireDirectory, the functions here
 * that look at the disk) which team dir a command's flags or working directory name. Every name that becomes a path
 * component goes through `sanitizeName` first.
 */
import { lstatSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { HooksError, describeError, errnoCode } from "../contract/errors.js";

/** Every character outside `[A-Za-z0-9_-]` becomes `-`. */
export function sanitizeName(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, "-");
}

/**
 * True when `name` can name a file of its own: not empty, and left as it is by `sanitizeName` (which
 * pi-agent-teams applies the same way). Any other name shares a file with another: `a/b` and `a.b`
 * both become `a-b`. Task ids and member names from the team's files are refused unless safe.
 */
export function isSafeName(name: string): boolean {
  return /^[A-Za-z0-9_-]+$/.test(name);
}

/** A team dir's name as keys and the dashboard name teams: a safe name not starting with `_` (`_hooks` is no team). */
export function isTeamName(name: string): boolean {
  return isSafeName(name) && !name.startsWith("_");
}

export function tasksDir(teamDir: string, taskListId: string): string {
  return path.join(teamDir, "tasks", sanitizeName(taskListId));
}

export function taskFile(teamDir: string, taskListId: string, taskId: string): string {
  return path.join(tasksDir(teamDir, taskListId), `${sanitizeName(taskId)}.json`);
}

export function highWatermarkFile(teamDir: string, taskListId: string): string {
  return path.join(tasksDir(teamDir, taskListId), ".highwatermark");
}

export function configFile(teamDir: string): string {
  return path.join(teamDir, "config.json");
}

/** The inbox of `member` in `namespace` (`team` for the leader's inbox, else a task list id). */
export function inboxFile(teamDir: string, namespace: string, member: string): string {
  return path.join(teamDir, "mailboxes", sanitizeName(namespace), "inboxes", `${sanitizeName(member)}.json`);
}

export function hookLogsDir(teamDir: string): string {
  return path.join(teamDir, "hook-logs");
}

/** Where the leader keeps its own state (ledger). */
export function leaderStateDir(teamDir: string): string {
  return path.join(teamDir, "hook-state");
}

/** The leader's journal of event keys (leader/ledger.ts; docs/ledger.md). */
export function ledgerFile(teamDir: string): string {
  return path.join(leaderStateDir(teamDir), "ledger.jsonl");
}

/**
 * The leader's saved knowledge of the task files (leader/sources.ts saveState), so a restart reads only what changed.
 */
export function scanStateFile(teamDir: string): string {
  return path.join(leaderStateDir(teamDir), "task-files.json");
}

/** The events a running leader holds because their gate could not judge the work (holds/held-events.ts), for people. */
export function holdsFile(teamDir: string): string {
  return path.join(leaderStateDir(teamDir), "holds.json");
}

/**
 * Written when a first start on the team dir begins to watch, removed once its baseline is recorded:
 * its mtime (the file system's clock) separates what existed before the first start from what came
 * after (leader/leader.ts, docs/ledger.md).
 */
export function firstStartFile(teamDir: string): string {
  return path.join(leaderStateDir(teamDir), "first-start");
}

/** `PI_TEAMS_ROOT_DIR`, else the parent folder of the team dir. */
function teamsRootDir(teamDir: string, env: Readonly<Record<string, string | undefined>>): string {
  const root = env.PI_TEAMS_ROOT_DIR?.trim();
  return root ? path.resolve(root) : path.dirname(path.resolve(teamDir));
}

/** The hooks dir: the flag, else `PI_TEAMS_HOOKS_DIR` (relative = under the teams root), else `<teamsRoot>/_hooks`. */
export function resolveHooksDir(opts: {
  flag?: string | undefined;
  teamDir: string;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
}): { dir: string; source: "flag" | "env" | "default" } {
  if (opts.flag) return { dir: path.resolve(opts.cwd, opts.flag), source: "flag" };
  const root = teamsRootDir(opts.teamDir, opts.env);
  const fromEnv = opts.env.PI_TEAMS_HOOKS_DIR?.trim();
  if (fromEnv) return { dir: path.resolve(root, fromEnv), source: "env" };
  return { dir: path.join(root, "_hooks"), source: "default" };
}

/** True for files the watcher and scanner must ignore: temp files of atomic writes and locks. */
export function isTempOrLock(file: string): boolean {
  const base = path.basename(file);
  return base.includes(".tmp.") || base.endsWith(".lock") || base === ".highwatermark";
}

/**
 * The team dir a command names: `--team-dir DIR`, or `--team ID` (under `$PI_TEAMS_ROOT_DIR`), or,
 * with neither, the team dir the working directory is in (itself or a folder above it: one that holds
 * `tasks/` beside `config.json`, `mailboxes/` or `hook-state/`), so that `cd` into a team and `doctor`
 * works. Absolute; a directory. Throws E_USAGE for flags that cannot be used, E_TEAM_DIR for a
 * directory that is not there, naming what was asked for.
 */
export async function resolveTeamDirFlags(input: {
  teamDir: string | undefined;
  team: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
}): Promise<string> {
  if (input.teamDir !== undefined && input.team !== undefined)
    throw new HooksError("E_USAGE", "--team-dir and --team: give one, not both");
  let dir: string;
  let label: string;
  if (input.teamDir !== undefined) {
    if (input.teamDir.trim() === "") throw new HooksError("E_USAGE", "--team-dir must not be empty");
    dir = path.resolve(input.cwd, input.teamDir);
    label = `--team-dir ${dir}`;
  } else if (input.team !== undefined) {
    const id = input.team;
    if (id === "" || sanitizeName(id) !== id)
      throw new HooksError("E_USAGE", `--team "${id}" is not a team id (letters, digits, "_" and "-" only)`);
    const root = input.env.PI_TEAMS_ROOT_DIR?.trim();
    if (!root)
      throw new HooksError(
        "E_USAGE",
        `--team ${id}: PI_TEAMS_ROOT_DIR is not set, so there is no teams root to look for "${id}" in; set it, or pass --team-dir DIR`,
      );
    dir = path.join(path.resolve(input.cwd, root), id);
    label = `--team ${id}: ${dir} (under PI_TEAMS_ROOT_DIR)`;
  } else {
    const found = await enclosingTeamDir(input.cwd);
    if (found === null)
      throw new HooksError(
        "E_USAGE",
        "--team-dir DIR or --team ID is required (--team looks under $PI_TEAMS_ROOT_DIR), or run the command inside a team dir",
      );
    return found;
  }
  await requireDirectory(dir, label, "E_TEAM_DIR");
  return dir;
}

/**
 * `dir` is a directory, or a HooksError of `code` says `<label>: no such directory` (or why not):
 * one line naming what was asked for, for every path a command needs to be there (exit 2).
 */
export async function requireDirectory(
  dir: string,
  label: string,
  code: "E_TEAM_DIR" | "E_HOOKS_DIR" | "E_PATH",
): Promise<void> {
  try {
    const stat = await fs.stat(dir);
    if (!stat.isDirectory()) throw new HooksError(code, `${label}: not a directory`);
  } catch (error) {
    if (error instanceof HooksError) throw error;
    throw new HooksError(
      code,
      `${label}: ${errnoCode(error) === "ENOENT" ? "no such directory" : describeError(error)}`,
      { cause: error },
    );
  }
}

/** `cwd` or the nearest folder above it that looks like a team dir (see resolveTeamDirFlags); null when none does. */
async function enclosingTeamDir(cwd: string): Promise<string | null> {
  const isDir = (p: string): Promise<boolean> =>
    fs.stat(p).then(
      (st) => st.isDirectory(),
      () => false,
    );
  const isFile = (p: string): Promise<boolean> =>
    fs.stat(p).then(
      (st) => st.isFile(),
      () => false,
    );
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    if (
      (await isDir(path.join(dir, "tasks"))) &&
      ((await isFile(path.join(dir, "config.json"))) ||
        (await isDir(path.join(dir, "mailboxes"))) ||
        (await isDir(path.join(dir, "hook-state"))))
    )
      return dir;
    if (path.dirname(dir) === dir) return null;
  }
}

/**
 * The user's state directory for pi-teams-hooks: `$XDG_STATE_HOME/pi-teams-hooks`, else
 * `~/.local/state/pi-teams-hooks`.
 */
export function userStateDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const base =
    env.XDG_STATE_HOME && path.isAbsolute(env.XDG_STATE_HOME)
      ? env.XDG_STATE_HOME
      : path.join(env.HOME || os.homedir(), ".local", "state");
  return path.join(base, "pi-teams-hooks");
}

/** Whether anything is at `file`, a dangling link included (the link itself is looked at, never followed). */
export function existsNoFollow(file: string): boolean {
  try {
    lstatSync(file);
    return true;
  } catch {
    return false;
  }
}
