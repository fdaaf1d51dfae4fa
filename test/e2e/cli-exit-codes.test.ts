/**
 * A path that is not there is exit 2 for every command, through the built bin: one line on stderr that
 * names the flag (or variable) and the path, no `--help` hint (the command was used right; the path is
 * wrong), no stack trace, nothing on stdout, and nothing written.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, it } from "vitest";
import { runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const rig = useLeaderRig();

/** The paths of one case: a team that is there, and a folder beside it that is not. */
interface Paths {
  team: TempTeam;
  missing: string;
}

type Case = [
  label: string,
  args: (p: Paths) => string[],
  named: (p: Paths) => string,
  env?: (p: Paths) => Record<string, string>,
];

const CASES: Case[] = [
  [
    "run --team-dir",
    (p) => ["run", "task_completed", "--team-dir", p.missing, "--task", "1"],
    (p) => `--team-dir ${p.missing}: no such directory`,
  ],
  [
    "run --team",
    () => ["run", "task_completed", "--team", "nope", "--task", "1"],
    (p) => `--team nope: ${p.missing} (under PI_TEAMS_ROOT_DIR): no such directory`,
    (p) => ({ PI_TEAMS_ROOT_DIR: p.team.teamsRoot }),
  ],
  [
    "run --hooks-dir",
    (p) => ["run", "task_completed", "--team-dir", p.team.teamDir, "--task", "1", "--hooks-dir", p.missing],
    (p) => `--hooks-dir ${p.missing}: no such directory`,
  ],
  [
    "run PI_TEAMS_HOOKS_DIR",
    (p) => ["run", "task_completed", "--team-dir", p.team.teamDir, "--task", "1"],
    (p) => `PI_TEAMS_HOOKS_DIR ${p.missing}: no such directory`,
    () => ({ PI_TEAMS_HOOKS_DIR: "nope" }),
  ],
  [
    "run --cwd",
    (p) => ["run", "task_completed", "--team-dir", p.team.teamDir, "--task", "1", "--cwd", p.missing],
    (p) => `--cwd ${p.missing}: no such directory`,
  ],
  [
    "decide --team-dir",
    (p) => ["decide", "--team-dir", p.missing, "5f0c", "allow"],
    (p) => `--team-dir ${p.missing}: no such directory`,
  ],
  [
    "watch --team-dir",
    (p) => ["watch", "--team-dir", p.missing, "--once"],
    (p) => `--team-dir ${p.missing}: no such directory`,
  ],
  [
    "watch --hooks-dir",
    (p) => ["watch", "--team-dir", p.team.teamDir, "--once", "--hooks-dir", p.missing],
    (p) => `--hooks-dir ${p.missing}: no such directory`,
  ],
  [
    "watch --cwd",
    (p) => ["watch", "--team-dir", p.team.teamDir, "--once", "--cwd", p.missing],
    (p) => `--cwd ${p.missing}: no such directory`,
  ],
  [
    "doctor --team-dir",
    (p) => ["doctor", "--team-dir", p.missing],
    (p) => `--team-dir ${p.missing}: no such directory`,
  ],
  [
    "doctor --hooks-dir",
    (p) => ["doctor", "--team-dir", p.team.teamDir, "--hooks-dir", p.missing],
    (p) => `--hooks-dir ${p.missing}: no such directory`,
  ],
  [
    "config --team-dir",
    (p) => ["config", "--team-dir", p.missing],
    (p) => `--team-dir ${p.missing}: no such directory`,
  ],
  [
    "config --hooks-dir",
    (p) => ["config", "--team-dir", p.team.teamDir, "--hooks-dir", p.missing],
    (p) => `--hooks-dir ${p.missing}: no such directory`,
  ],
  [
    "policy get --team-dir",
    (p) => ["policy", "get", "--team-dir", p.missing],
    (p) => `--team-dir ${p.missing}: no such directory`,
  ],
  [
    "policy set --team-dir",
    (p) => ["policy", "set", "--team-dir", p.missing, "--failure-action", "reopen"],
    (p) => `--team-dir ${p.missing}: no such directory`,
  ],
  ["trust --team-dir", (p) => ["trust", "--team-dir", p.missing], (p) => `--team-dir ${p.missing}: no such directory`],
  [
    "trust --hooks-dir",
    (p) => ["trust", "--team-dir", p.team.teamDir, "--hooks-dir", p.missing],
    (p) => `--hooks-dir ${p.missing}: no such directory`,
  ],
  ["logs --team-dir", (p) => ["logs", "--team-dir", p.missing], (p) => `--team-dir ${p.missing}: no such directory`],
  [
    "logs show --team-dir",
    (p) => ["logs", "show", "abc", "--team-dir", p.missing],
    (p) => `--team-dir ${p.missing}: no such directory`,
  ],
  [
    "logs --follow --team-dir",
    (p) => ["logs", "-f", "--team-dir", p.missing],
    (p) => `--team-dir ${p.missing}: no such directory`,
  ],
  [
    "logs stats --team-dir",
    (p) => ["logs", "stats", "--team-dir", p.missing],
    (p) => `--team-dir ${p.missing}: no such directory`,
  ],
  [
    "logs prune --team-dir",
    (p) => ["logs", "prune", "--keep", "3", "--team-dir", p.missing],
    (p) => `--team-dir ${p.missing}: no such directory`,
  ],
  ["init --team-dir", (p) => ["init", "--team-dir", p.missing], (p) => `--team-dir ${p.missing}: no such directory`],
  [
    "init --team",
    () => ["init", "--team", "nope"],
    (p) => `--team nope: ${p.missing} (under PI_TEAMS_ROOT_DIR): no such directory`,
    (p) => ({ PI_TEAMS_ROOT_DIR: p.team.teamsRoot }),
  ],
  [
    "init --hooks-dir (its parent)",
    (p) => ["init", "--hooks-dir", path.join(p.missing, "hooks")],
    (p) =>
      `hooks dir ${path.join(p.missing, "hooks")} (--hooks-dir): its parent folder ${p.missing}: no such directory`,
  ],
  [
    "init PI_TEAMS_ROOT_DIR (its _hooks' parent)",
    () => ["init"],
    (p) =>
      `hooks dir ${path.join(p.missing, "_hooks")} (_hooks under PI_TEAMS_ROOT_DIR): its parent folder ${p.missing}: no such directory`,
    (p) => ({ PI_TEAMS_ROOT_DIR: p.missing }),
  ],
  [
    "init --from-claude",
    (p) => [
      "init",
      "--hooks-dir",
      path.join(p.team.teamsRoot, "_hooks"),
      "--from-claude",
      path.join(p.missing, "settings.json"),
    ],
    (p) => `--from-claude ${path.join(p.missing, "settings.json")}: file not found`,
  ],
  [
    "serve --teams-root",
    (p) => ["serve", "--teams-root", p.missing],
    (p) => `--teams-root ${p.missing}: no such directory`,
  ],
  [
    "serve keys list --teams-root",
    (p) => ["serve", "keys", "list", "--teams-root", p.missing],
    (p) => `--teams-root ${p.missing}: no such directory`,
  ],
];

// Each case on its own team dir, one process each: they run side by side.
describe.concurrent("a path that is not there", () => {
  it.for(CASES)("%s: exit 2, one line naming it, no --help hint", async ([, args, named, env], context) => {
    const { expect } = context;
    const team = await rig.scoped(context).team({ tasks: [makeTask({ id: "1", status: "completed", owner: "ada" })] });
    const p: Paths = { team, missing: path.join(team.teamsRoot, "nope") };
    const result = await runBin(args(p), { env: env?.(p) ?? {}, cwd: team.teamsRoot });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stdout).toBe("");
    const lines = result.stderr.trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^pi-teams-hooks [a-z]+: /);
    expect(lines[0]).toContain(named(p));
    expect(result.stderr).not.toContain("--help");
    expect(result.stderr).not.toMatch(/^\s+at /m);
    // Nothing was made where the path was missing (init creates a hooks dir, never the folders above it).
    expect(existsSync(p.missing)).toBe(false);
  });

  it("schema: an unknown name is a usage error (exit 2) that lists the names there are", async ({ expect }) => {
    const result = await runBin(["schema", "nope"]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr.split("\n")[0]).toBe(
      'pi-teams-hooks schema: unknown schema "nope" (one of context, log, task, config)',
    );
  });
});
