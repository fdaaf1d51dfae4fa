/**
 * The command line forgives typos and speaks one language, through the built bin: a command, flag,
 * event or subcommand that is almost right gets the right one suggested (exit 2, none of Node's
 * parser wording); durations are taken as people write them (`--since 1d12h`, `--timeout 2m`); a
 * path that is not there is exit 2 for `doctor` too; a second leader on a team dir is told so
 * without a `--help` hint; every team command takes `--team ID`, and finds the team dir it is run in.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

describe("typos", () => {
  it.each([
    [["watc"], 'pi-teams-hooks: unknown command "watc" (did you mean watch?)'],
    [
      ["run", "--timout-ms", "5", "task_completed"],
      "pi-teams-hooks run: unknown flag --timout-ms (did you mean --timeout-ms?)",
    ],
    [
      ["run", "task_complete", "--team-dir", "/nowhere"],
      'pi-teams-hooks run: unknown event "task_complete" (did you mean task_completed?)',
    ],
    [["logs", "shwo"], 'pi-teams-hooks logs: unknown subcommand "shwo" (did you mean show?)'],
    [["run", "task_completed", "--task"], "pi-teams-hooks run: --task needs a value"],
    [["logs", "--json=yes"], "pi-teams-hooks logs: --json takes no value"],
    [
      ["policy", "set", "--max-payload-bytes", "-1"],
      'pi-teams-hooks policy: --max-payload-bytes needs a value, and "-1" starts with "-" (a value that does is written --max-payload-bytes=-1)',
    ],
    [["run", "task_completed", "--task", "--json"], "pi-teams-hooks run: --task needs a value"],
    [
      ["logs", "-f", "--limit", "-5"],
      'pi-teams-hooks logs: --limit needs a value, and "-5" starts with "-" (a value that does is written --limit=-5)',
    ],
    [["doctor", "-x"], "pi-teams-hooks doctor: unknown flag -x (short flags: -h for --help)"],
  ])("%j: one line that names the fix, exit 2", async (args, line) => {
    const { code, stdout, stderr } = await runBin(args);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr.split("\n")[0]).toContain(line);
    expect(stderr).not.toMatch(/ERR_PARSE_ARGS|Unknown option|argument missing|To specify/);
  });
});

describe("help for one subcommand", () => {
  it.each([
    [
      ["logs", "show", "--help"],
      "Usage: pi-teams-hooks logs show <id> | last [--task ID] [--failed] [--json]",
      "  logs show <id>  one run in full",
    ],
    [
      ["help", "logs", "prune"],
      "Usage: pi-teams-hooks logs prune [--keep N] [--older-than AGE] [--dry-run] [--json]",
      "  logs prune      remove old logs",
    ],
    [
      ["policy", "set", "-h"],
      "Usage: pi-teams-hooks policy set [--team-dir DIR | --team ID] [--failure-action A] [--max-reopens N]\n       [--followup-owner P] [--failure-mode [EVENT=]MODE]...\n       [--max-hooks-per-event N] [--chain-deadline-ms N]\n       [--max-payload-bytes N] [--reset] [--json]",
      "",
    ],
  ])("%j: its usage and its entry, and where the rest is", async (args, usage, entry) => {
    const { code, stdout } = await runBin(args);
    expect(code).toBe(0);
    expect(stdout.startsWith(`${usage}\n`)).toBe(true);
    expect(stdout).toContain(entry);
    expect(stdout).not.toContain("logs stats      per hook");
    expect(stdout.trimEnd().split("\n").pop()).toMatch(
      /^Every flag, and the exit status: pi-teams-hooks (logs|policy) --help$/,
    );
  });

  it("a word that is no subcommand gets the whole help", async () => {
    const { code, stdout } = await runBin(["logs", "bogus", "--help"]);
    expect(code).toBe(0);
    expect(stdout).toContain("logs stats      per hook");
  });
});

describe("durations as people write them", () => {
  it("--since takes 1d12h, 1.5h and 2H; a bad one names the forms", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "completed", owner: "ada" })] });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    expect((await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"])).code).toBe(0);
    for (const since of ["1d12h", "1.5h", "2H", "90m", "30s"]) {
      const listed = await runBin(["logs", "--team-dir", team.teamDir, "--since", since, "--json"]);
      expect(listed.code).toBe(0);
      expect(listed.stdout.trim().split("\n")).toHaveLength(1);
    }
    const bad = await runBin(["logs", "--team-dir", team.teamDir, "--since", "yesterday"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      '--since "yesterday" must be an age (a number with a unit: 30s, 90m, 1.5h, 1d12h, 1500ms (units ms, s, m, h, d, w))',
    );
  });

  it("--timeout 1s ends a hook as --timeout-ms 1000 does; both at once, or a bad one, is a usage error", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "completed", owner: "ada" })] });
    await rig.hook(team, "on_task_completed.sh", "sleep 30");
    const ran = await runBin([
      "run",
      "task_completed",
      "--team-dir",
      team.teamDir,
      "--task",
      "1",
      "--timeout",
      "1s",
      "--json",
    ]);
    expect(ran.code).toBe(1);
    expect(JSON.parse(ran.stdout)).toMatchObject({
      result: { outcome: "error", errorKind: "timeout", timedOut: true },
    });
    const both = await runBin([
      "run",
      "task_completed",
      "--team-dir",
      team.teamDir,
      "--task",
      "1",
      "--timeout",
      "1s",
      "--timeout-ms",
      "1000",
    ]);
    expect(both).toMatchObject({ code: 2 });
    expect(both.stderr).toContain("--timeout and --timeout-ms say the same thing: give one");
    const bad = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--timeout", "soon"]);
    expect(bad).toMatchObject({ code: 2 });
    expect(bad.stderr).toContain('--timeout "soon" must be a duration');
  });
});

describe("exit codes", () => {
  it("doctor on a team dir that is not there is exit 2, like every command", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({});
    const missing = path.join(team.teamsRoot, "nope");
    const { code, stderr } = await runBin(["doctor", "--team-dir", missing]);
    expect(code).toBe(2);
    expect(stderr).toBe(`pi-teams-hooks doctor: --team-dir ${missing}: no such directory\n`);
  });

  it("a second leader on the same team dir: exit 2, the live leader named, no --help hint", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "pending" })] });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    const leader = await rig.leader(team);
    const second = await runBin(["watch", "--team-dir", team.teamDir, "--once"]);
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(/^pi-teams-hooks watch: another leader \(pid \d+\) is already watching /);
    expect(second.stderr).not.toContain("--help");
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});

describe("naming a team", () => {
  it("--team ID (under PI_TEAMS_ROOT_DIR) on every team command, and the team dir found from a folder inside it", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [makeTask({ id: "1", status: "completed", owner: "ada" })],
      config: { hooks: { failureAction: "warn" } },
    });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    const env = { PI_TEAMS_ROOT_DIR: team.teamsRoot };
    const byId = (args: string[]) => runBin([...args, "--team", team.teamId], { env });
    expect(await byId(["run", "task_completed", "--task", "1"])).toMatchObject({ code: 0 });
    expect(JSON.parse((await byId(["doctor", "--json"])).stdout)).toMatchObject({ teamDir: team.teamDir });
    expect(await byId(["policy", "get"])).toMatchObject({ code: 0 });
    expect(await byId(["trust", "--all", "--yes"])).toMatchObject({ code: 0 });
    expect((await byId(["logs", "--json"])).stdout.trim().split("\n")).toHaveLength(1);
    expect(await byId(["watch", "--once"])).toMatchObject({ code: 0 });
    const nowhere = await runBin(["doctor", "--team", "nope"], { env });
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toContain(
      `--team nope: ${path.join(team.teamsRoot, "nope")} (under PI_TEAMS_ROOT_DIR): no such directory`,
    );

    // cd into the team (or any folder in it) and leave the flag out.
    const inside = path.join(team.tasksDir);
    const found = await runBin(["doctor", "--json"], { cwd: inside });
    expect(JSON.parse(found.stdout)).toMatchObject({ teamDir: team.teamDir });
    expect(await runBin(["run", "task_completed", "--task", "1"], { cwd: team.teamDir })).toMatchObject({ code: 0 });
    const outside = await runBin(["doctor"], { cwd: team.teamsRoot });
    expect(outside.code).toBe(2);
    expect(outside.stderr).toContain("or run the command inside a team dir");
  });
});
