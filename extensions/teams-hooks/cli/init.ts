/**
 * `pi-teams-hooks init`: copies the example gates of the package's `hooks/` into a hooks dir, with
 * execute bits — or, with `--from-claude FILE`, writes one wrapper gate per command hook of a Claude
 * Code settings file's TaskCompleted and TeammateIdle events (settings/claude-settings.ts reads the
 * file; this module writes and prints). Never overwrites a file unless `--force`; refuses as a whole,
 * so that a run either writes every gate or none.
 */
import { constants as fsConstants } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type CliIo, type FlagValue, type ParsedArgs, str } from "./io.js";
import { HOOK_BASE_NAMES, HOOK_EVENTS, type HookEventName } from "../contract/contract.js";
import { HooksError, describeError, errnoCode } from "../contract/errors.js";
import { findHook, hookCandidatePaths } from "../gates/discover.js";
import { chainDirName } from "../gates/chain.js";
import { CLAUDE_GATE_EVENTS } from "../contract/claude.js";
import { planClaudeWrappers, type ClaudeWrapper } from "../settings/claude-settings.js";
import { readJsonValue } from "../team/json-file.js";
import { requireDirectory, resolveHooksDir, resolveTeamDirFlags } from "../team/paths.js";
import { npmTestProblem } from "../doctor/gate-checks.js";

const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
/** The example gates shipped in the package. */
const EXAMPLES_DIR = path.join(PACKAGE_ROOT, "hooks");

export async function initCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const v = args.values;
  if (args.positionals.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${args.positionals[0]}"`);
  const fromClaude = str(v["from-claude"]);
  if (fromClaude !== undefined && fromClaude.trim() === "")
    throw new HooksError("E_USAGE", "--from-claude must not be empty");
  // A team named by --team-dir or --team must be there (exit 2, as for every command); it picks the teams root.
  const teamFlag = str(v["team-dir"]) ?? str(v.team);
  const teamDir =
    teamFlag === undefined
      ? undefined
      : await resolveTeamDirFlags({ teamDir: str(v["team-dir"]), team: str(v.team), env: io.env, cwd: io.cwd });
  const target = initTarget(str(v["hooks-dir"]), teamDir, io, v.team === undefined ? "--team-dir" : "--team");
  // init makes the hooks dir, not the folders above it: a parent that is not there is a typo more often than not.
  await requireDirectory(
    path.dirname(target.dir),
    `hooks dir ${target.dir} (${target.why}): its parent folder ${path.dirname(target.dir)}`,
    "E_HOOKS_DIR",
  );
  const force = v.force === true;
  if (fromClaude !== undefined) return initFromClaude(path.resolve(io.cwd, fromClaude), target, force, v, io);
  const examples = await exampleGates();

  const existing: string[] = [];
  for (const name of examples)
    if (await exists(path.join(target.dir, name))) existing.push(path.join(target.dir, name));
  if (existing.length > 0 && !force) return refuseExisting(existing, io);

  await makeDir(target.dir, "the hooks dir");
  io.stdout(`hooks dir ${target.dir} (${target.why})\n`);
  for (const name of examples) {
    const file = path.join(target.dir, name);
    const replaced = existing.includes(file);
    const from = path.join(EXAMPLES_DIR, name);
    await putExecutable(file, force, (dest) => fs.copyFile(from, dest, fsConstants.COPYFILE_EXCL));
    io.stdout(`  ${replaced ? "replaced" : "wrote"} ${name} (mode 755)\n`);
  }
  for (const note of await shadowNotes(target.dir, examples)) io.stdout(`  note: ${note}\n`);
  // The project here (this folder's package.json, or one above) cannot pass the default gate: said now, not at the
  // first task. Without a package.json here, the lines below say where the gate's command runs.
  const npmTest =
    examples.includes("on_task_completed.sh") && (io.env.PI_TEAMS_GATE_CMD ?? "") === ""
      ? npmTestProblem(io.cwd)
      : null;
  if (npmTest && npmTest.kind !== "no_package")
    io.stdout(`  note: on_task_completed.sh runs npm test here: ${npmTest.message}\n`);
  const gateRuns =
    "on_task_completed.sh runs $PI_TEAMS_GATE_CMD (default: npm test --silent, which needs a package.json)";
  const where = "in the folder the leader runs in (or --cwd): start watch in your project, or set PI_TEAMS_GATE_CMD";
  io.stdout(`\nEdit them to taste; ${gateRuns}\n${where}.\n${nextSteps(target, v, io, "task_completed")}`);
  return 0;
}

/**
 * `--from-claude`: the settings file is read and checked whole before anything is written, so a
 * problem anywhere in it leaves the hooks dir as it was.
 */
async function initFromClaude(
  file: string,
  target: InitTarget,
  force: boolean,
  v: ParsedArgs["values"],
  io: CliIo,
): Promise<number> {
  const read = await readJsonValue(file);
  if (!read.ok)
    throw new HooksError(
      "E_CONFIG",
      `--from-claude ${read.problem.message} (the Claude Code settings file; nothing written)`,
    );
  const plan = planClaudeWrappers(read.raw, file);
  if (plan.kind === "invalid")
    throw new HooksError(
      "E_CONFIG",
      `cannot use the Claude Code settings (nothing written):\n  ${plan.problems.join("\n  ")}`,
    );
  if (plan.wrappers.length === 0) {
    io.stderr(`pi-teams-hooks init: ${file} has no command hook for TaskCompleted or TeammateIdle: nothing written\n`);
    for (const note of plan.notes) io.stderr(`  ${note.message}\n`);
    return 1;
  }

  const fileOf = (w: ClaudeWrapper): string => path.join(target.dir, ...w.relPath.split("/"));
  const existing: string[] = [];
  for (const w of plan.wrappers) if (await exists(fileOf(w))) existing.push(fileOf(w));
  if (existing.length > 0 && !force) return refuseExisting(existing, io);

  for (const dir of new Set(plan.wrappers.map((w) => path.dirname(fileOf(w))))) await makeDir(dir, "the chain dir");
  io.stdout(`hooks dir ${target.dir} (${target.why})\nfrom the Claude Code settings ${file}\n`);
  for (const w of plan.wrappers) {
    const replaced = existing.includes(fileOf(w));
    await putExecutable(fileOf(w), force, (dest) => fs.writeFile(dest, w.content, { flag: "wx" }));
    const timeout = w.timeoutSeconds === null ? "" : `, timeout ${w.timeoutSeconds}s`;
    io.stdout(
      `  ${replaced ? "replaced" : "wrote"} ${w.relPath} (mode 755): ${w.claudeEvent} hook ${w.n}${timeout}: ${firstLine(w.command)}\n`,
    );
  }
  for (const note of plan.notes) io.stdout(`  ${note.message}\n`);
  for (const left of await leftoverWrappers(target.dir, plan.wrappers)) {
    io.stdout(
      `  note: ${left} was not written now (an earlier run's?) and still runs: delete it if the settings no longer have that hook\n`,
    );
  }
  // The chain is the v1 file, then the .d files: an example gate copied earlier keeps running too.
  for (const event of new Set(plan.wrappers.map((w) => w.event))) {
    const v1 = (await findHook(target.dir, event)).hook;
    if (v1)
      io.stdout(`  note: ${path.basename(v1.hookPath)} runs too, before the wrappers of ${chainDirName(event)}/\n`);
  }
  const first = plan.wrappers[0]?.event ?? "task_completed";
  io.stdout(
    `\nEach wrapper runs its command with bash, unchanged: edit the wrapper, or the settings and run this again with --force.\n${nextSteps(target, v, io, first, true)}`,
  );
  return 0;
}

/** The first line of a command, with how many lines follow. */
function firstLine(command: string): string {
  const lines = command.replace(/\n+$/, "").split("\n");
  return lines.length > 1 ? `${lines[0]} (+${lines.length - 1} more line(s))` : (lines[0] ?? "");
}

/**
 * `claude-<n>.sh` files in the chain dirs of the mapped events that this run did not write: left by
 * an earlier run on a settings file that had more hooks. They still run, and only a person knows
 * whether they should, so they are named and left alone.
 */
async function leftoverWrappers(hooksDir: string, written: readonly ClaudeWrapper[]): Promise<string[]> {
  const ours = new Set(written.map((w) => w.relPath));
  const left: string[] = [];
  for (const event of Object.values(CLAUDE_GATE_EVENTS)) {
    let names: string[];
    try {
      names = await fs.readdir(path.join(hooksDir, chainDirName(event)));
    } catch {
      continue; // no chain dir (or one we cannot read, which doctor reports): nothing left over to name
    }
    for (const name of names.sort()) {
      const rel = `${chainDirName(event)}/${name}`;
      if (/^claude-\d+\.sh$/.test(name) && !ours.has(rel)) left.push(rel);
    }
  }
  return left;
}

function refuseExisting(existing: readonly string[], io: CliIo): number {
  io.stderr(
    `pi-teams-hooks init: not overwriting ${existing.length} existing file(s) (nothing written; --force replaces them):\n`,
  );
  for (const file of existing) io.stderr(`  ${file}\n`);
  return 1;
}

async function makeDir(dir: string, what: string): Promise<void> {
  try {
    await fs.mkdir(dir, { recursive: true });
  } catch (error) {
    throw new HooksError("E_IO", `cannot create ${what} ${dir}: ${describeError(error)}`, { cause: error });
  }
}

/**
 * The commands to run next, with the flags this run was given. `trust`: also say that a leader that
 * has already recorded the team's gates refuses new ones until they are approved.
 */
function nextSteps(
  target: InitTarget,
  v: Record<string, FlagValue>,
  io: CliIo,
  event: HookEventName,
  trust = false,
): string {
  const teamFlag = str(v["team-dir"]);
  const teamId = str(v.team);
  const team =
    teamId !== undefined
      ? `--team ${teamId}`
      : `--team-dir ${teamFlag ? path.resolve(io.cwd, teamFlag) : "<team dir>"}`;
  const hooksFlag = target.source === "flag" ? ` --hooks-dir ${target.dir}` : "";
  const who = event === "idle" ? "--member <name>" : "--task <id>";
  return (
    `Check:  pi-teams-hooks doctor ${team}${hooksFlag}\nTry:    pi-teams-hooks run ${event} ${team} ${who}${hooksFlag}\n` +
    (trust
      ? `Trust:  a leader already watching the team runs new gates only once approved: pi-teams-hooks trust ${team}${hooksFlag}\n`
      : "")
  );
}

interface InitTarget {
  dir: string;
  source: "flag" | "env" | "default";
  why: string;
}

/**
 * Where the gates go: `--hooks-dir`, else the global hooks dir as every command resolves it —
 * `PI_TEAMS_HOOKS_DIR` (relative to the teams root), else `<teams root>/_hooks`, the teams root being
 * `PI_TEAMS_ROOT_DIR`, else the parent of the team dir (`teamDir`: resolved from `--team-dir` or
 * `--team`, named `teamFlag` in what is printed).
 */
function initTarget(
  hooksDir: string | undefined,
  teamDir: string | undefined,
  io: Pick<CliIo, "env" | "cwd">,
  teamFlag = "--team-dir",
): InitTarget {
  if (hooksDir !== undefined && hooksDir.trim() === "")
    throw new HooksError("E_USAGE", "--hooks-dir must not be empty");
  if (hooksDir) return { dir: path.resolve(io.cwd, hooksDir), source: "flag", why: "--hooks-dir" };
  const root = io.env.PI_TEAMS_ROOT_DIR?.trim();
  const fromEnv = io.env.PI_TEAMS_HOOKS_DIR?.trim();
  if (!teamDir && !root && !(fromEnv && path.isAbsolute(fromEnv))) {
    throw new HooksError(
      "E_USAGE",
      "where should the gates go? Give --hooks-dir DIR, or --team-dir DIR (they go to the teams root's _hooks: the team dir's parent), or set PI_TEAMS_ROOT_DIR (they go to $PI_TEAMS_ROOT_DIR/_hooks, or to $PI_TEAMS_HOOKS_DIR under it)",
    );
  }
  // With PI_TEAMS_ROOT_DIR set (or an absolute PI_TEAMS_HOOKS_DIR) the team dir does not matter: any path under the
  // root will do.
  const team = teamDir ? path.resolve(io.cwd, teamDir) : path.join(root ? path.resolve(root) : io.cwd, "_");
  const resolved = resolveHooksDir({ teamDir: team, env: io.env, cwd: io.cwd });
  const rootWhy = root ? "PI_TEAMS_ROOT_DIR" : `the parent of ${teamFlag}`;
  const why =
    resolved.source === "env"
      ? `PI_TEAMS_HOOKS_DIR${path.isAbsolute(fromEnv ?? "") ? "" : ` under ${rootWhy}`}`
      : `_hooks under ${rootWhy}`;
  return { ...resolved, why };
}

/** The example gate files: `on_*` in the package's hooks/ (not its README). */
async function exampleGates(): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(EXAMPLES_DIR);
  } catch (error) {
    throw new HooksError(
      "E_INTERNAL",
      `the package's example gates are missing (${EXAMPLES_DIR}: ${describeError(error)})`,
      { cause: error },
    );
  }
  return names.filter((name) => name.startsWith("on_")).sort();
}

/**
 * Puts an executable file in place through `put(dest)` (which creates `dest`, exclusively): written whole to a temp
 * file beside it, then moved into place, so a leader watching the hooks dir never runs a gate half written. The temp
 * name ends in `~`, which the chain and discovery ignore (an editor's backup), so even one left behind by a kill never
 * runs. Without `force` the move is a hard link, which fails if a file appeared at `to` since the check (nothing is
 * overwritten); with `force` a rename.
 */
async function putExecutable(to: string, force: boolean, put: (dest: string) => Promise<void>): Promise<void> {
  const tmp = `${to}.${process.pid}.${Date.now()}.tmp~`;
  try {
    await put(tmp);
    await fs.chmod(tmp, 0o755);
    if (force) await fs.rename(tmp, to);
    else await fs.link(tmp, to);
    await fs.rm(tmp, { force: true });
  } catch (error) {
    await fs.rm(tmp, { force: true });
    if (errnoCode(error) === "EEXIST")
      throw new HooksError("E_IO", `${to} appeared while writing; nothing overwritten (run again, or with --force)`, {
        cause: error,
      });
    throw new HooksError("E_IO", `cannot write ${to}: ${describeError(error)}`, { cause: error });
  }
}

/** A file earlier in the lookup order than a copied gate, and runnable, wins over it: say so. */
async function shadowNotes(dir: string, copied: readonly string[]): Promise<string[]> {
  const notes: string[] = [];
  for (const event of HOOK_EVENTS) {
    const ours = hookCandidatePaths(dir, event).find((file) => copied.includes(path.basename(file)));
    const chosen = (await findHook(dir, event)).hook;
    if (ours && chosen && chosen.hookPath !== ours) {
      notes.push(
        `${path.basename(chosen.hookPath)} comes before ${path.basename(ours)} in the lookup order, so the ${HOOK_BASE_NAMES[event]} example will not run`,
      );
    }
  }
  return notes;
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.lstat(file);
    return true;
  } catch {
    return false; // ENOENT (or a dir we cannot search: the copy reports that)
  }
}
