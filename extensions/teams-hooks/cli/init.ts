/**
 * `pi-teams-hooks init`: copies the example gates of the package's `hooks/` into a hooks dir, with
 * execute bits. Never overwrites a file unless `--force`; refuses as a whole, so that a run either
 * writes every gate or none.
 */
import { constants as fsConstants } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type CliIo, type ParsedArgs, str } from "./io.js";
import { HOOK_BASE_NAMES, HOOK_EVENTS } from "../contract/contract.js";
import { HooksError, describeError, errnoCode } from "../contract/errors.js";
import { findHook, hookCandidatePaths } from "../runner/discover.js";
import { resolveHooksDir } from "../team/paths.js";

const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
/** The example gates shipped in the package. */
export const EXAMPLES_DIR = path.join(PACKAGE_ROOT, "hooks");

export async function initCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const v = args.values;
  if (args.positionals.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${args.positionals[0]}"`);
  const target = initTarget(str(v["hooks-dir"]), str(v["team-dir"]), io);
  const examples = await exampleGates();
  const force = v.force === true;

  const existing: string[] = [];
  for (const name of examples) if (await exists(path.join(target.dir, name))) existing.push(path.join(target.dir, name));
  if (existing.length > 0 && !force) {
    io.stderr(`pi-teams-hooks init: not overwriting ${existing.length} existing file(s) (nothing written; --force replaces them):\n`);
    for (const file of existing) io.stderr(`  ${file}\n`);
    return 1;
  }

  try {
    await fs.mkdir(target.dir, { recursive: true });
  } catch (error) {
    throw new HooksError("E_IO", `cannot create the hooks dir ${target.dir}: ${describeError(error)}`, { cause: error });
  }
  io.stdout(`hooks dir ${target.dir} (${target.why})\n`);
  for (const name of examples) {
    const file = path.join(target.dir, name);
    const replaced = existing.includes(file);
    await copyExecutable(path.join(EXAMPLES_DIR, name), file, force);
    io.stdout(`  ${replaced ? "replaced" : "wrote"} ${name} (mode 755)\n`);
  }
  for (const note of await shadowNotes(target.dir, examples)) io.stdout(`  note: ${note}\n`);
  const teamFlag = str(v["team-dir"]);
  const team = teamFlag ? path.resolve(io.cwd, teamFlag) : "<team dir>";
  const hooksFlag = target.source === "flag" ? ` --hooks-dir ${target.dir}` : "";
  io.stdout(
    `\nEdit them to taste; on_task_completed.sh runs $PI_TEAMS_GATE_CMD (default: npm test --silent).\n` +
      `Check:  pi-teams-hooks doctor --team-dir ${team}${hooksFlag}\n` +
      `Try:    pi-teams-hooks run task_completed --team-dir ${team} --task <id>${hooksFlag}\n`,
  );
  return 0;
}

interface InitTarget {
  dir: string;
  source: "flag" | "env" | "default";
  why: string;
}

/**
 * Where the gates go: `--hooks-dir`, else the global hooks dir as every command resolves it —
 * `PI_TEAMS_HOOKS_DIR` (relative to the teams root), else `<teams root>/_hooks`, the teams root being
 * `PI_TEAMS_ROOT_DIR`, else the parent of `--team-dir`.
 */
export function initTarget(hooksDir: string | undefined, teamDir: string | undefined, io: Pick<CliIo, "env" | "cwd">): InitTarget {
  if (hooksDir !== undefined && hooksDir.trim() === "") throw new HooksError("E_USAGE", "--hooks-dir must not be empty");
  if (hooksDir) return { dir: path.resolve(io.cwd, hooksDir), source: "flag", why: "--hooks-dir" };
  const root = io.env.PI_TEAMS_ROOT_DIR?.trim();
  const fromEnv = io.env.PI_TEAMS_HOOKS_DIR?.trim();
  if (!teamDir && !root && !(fromEnv && path.isAbsolute(fromEnv))) {
    throw new HooksError(
      "E_USAGE",
      "where should the gates go? Give --hooks-dir DIR, or --team-dir DIR (they go to the teams root's _hooks: the team dir's parent), " +
        "or set PI_TEAMS_ROOT_DIR (they go to $PI_TEAMS_ROOT_DIR/_hooks, or to $PI_TEAMS_HOOKS_DIR under it)",
    );
  }
  // With PI_TEAMS_ROOT_DIR set (or an absolute PI_TEAMS_HOOKS_DIR) the team dir does not matter: any path under the root will do.
  const team = teamDir ? path.resolve(io.cwd, teamDir) : path.join(root ? path.resolve(root) : io.cwd, "_");
  const resolved = resolveHooksDir({ teamDir: team, env: io.env, cwd: io.cwd });
  const rootWhy = root ? "PI_TEAMS_ROOT_DIR" : "the parent of --team-dir";
  const why = resolved.source === "env" ? `PI_TEAMS_HOOKS_DIR${path.isAbsolute(fromEnv ?? "") ? "" : ` under ${rootWhy}`}` : `_hooks under ${rootWhy}`;
  return { ...resolved, why };
}

/** The example gate files: `on_*` in the package's hooks/ (not its README). */
async function exampleGates(): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(EXAMPLES_DIR);
  } catch (error) {
    throw new HooksError("E_INTERNAL", `the package's example gates are missing (${EXAMPLES_DIR}: ${describeError(error)})`, { cause: error });
  }
  return names.filter((name) => name.startsWith("on_")).sort();
}

/**
 * Copies with the execute bits set. Without `force` the copy is exclusive (COPYFILE_EXCL), so a file
 * created between the check and the copy is not overwritten either; with `force` it goes through a
 * temp file and a rename, so the hook is never seen half-written.
 */
async function copyExecutable(from: string, to: string, force: boolean): Promise<void> {
  const tmp = `${to}.tmp.${process.pid}.${Date.now()}`;
  try {
    if (force) {
      await fs.copyFile(from, tmp);
      await fs.chmod(tmp, 0o755);
      await fs.rename(tmp, to);
    } else {
      await fs.copyFile(from, to, fsConstants.COPYFILE_EXCL);
      await fs.chmod(to, 0o755);
    }
  } catch (error) {
    await fs.rm(tmp, { force: true });
    if (errnoCode(error) === "EEXIST") throw new HooksError("E_IO", `${to} appeared while copying; nothing overwritten (run again, or with --force)`, { cause: error });
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
      notes.push(`${path.basename(chosen.hookPath)} comes before ${path.basename(ours)} in the lookup order, so the ${HOOK_BASE_NAMES[event]} example will not run`);
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
