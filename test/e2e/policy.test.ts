/**
 * `pi-teams-hooks policy get|set` through the built bin on real team dirs: sources, validation before
 * any write, `--reset`, other config fields kept, and a corrupt config left untouched.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../helpers/leader-rig.js";
import { type TempTeam, tempTeams } from "../helpers/temp-team.js";
import { SETTINGS } from "../../extensions/teams-hooks/settings/table.js";

const execFileAsync = promisify(execFile);
const BIN = path.resolve("dist/teams-hooks/bin.js");
const POLICY_ENV = [
  "PI_TEAMS_HOOKS_FAILURE_ACTION",
  "PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE",
  "PI_TEAMS_HOOKS_MAX_REOPENS_PER_TASK",
  "PI_TEAMS_HOOKS_FOLLOWUP_OWNER",
];

async function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const base: Record<string, string | undefined> = { ...process.env };
  for (const name of POLICY_ENV) delete base[name];
  try {
    // A wide terminal: the settings rows whole (narrow ones: cli-terminal.test.ts).
    const { stdout, stderr } = await execFileAsync(process.execPath, [BIN, ...args], {
      env: { ...base, COLUMNS: "200", ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof e.code !== "number") throw error;
    return { code: e.code, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

beforeAll(() => ensureBuilt(), 240_000);
const team = tempTeams();

const readConfig = (t: TempTeam): unknown => JSON.parse(fs.readFileSync(path.join(t.teamDir, "config.json"), "utf8"));

describe("pi-teams-hooks policy get", () => {
  it("prints each value with its source: config.json, the environment, the default", async () => {
    const t = await team({ config: { teamId: "test-team", hooks: { failureAction: "reopen" } } });
    const out = await cli(["policy", "--team-dir", t.teamDir], {
      PI_TEAMS_HOOKS_FOLLOWUP_OWNER: "lead",
      PI_TEAMS_HOOKS_FAILURE_ACTION: "followup",
    });
    expect(out.code).toBe(0);
    expect(out.stdout).toBe(
      `effective policy of ${t.teamDir}:\n  failure action              reopen           config.json hooks.failureAction\n  max reopens per task        3                default\n  follow-up owner             lead             PI_TEAMS_HOOKS_FOLLOWUP_OWNER\n  hook timeout                60000ms          default\n  failure mode task_completed closed           default\n  failure mode task_failed    closed           default\n  failure mode idle           open             default\n  failure mode task_started   closed           default\n  max hooks per event         16               default\n  chain deadline              300000ms         default\n  max payload                 8388608 bytes    default\n  setsid sweep                auto             default\n  exit codes                  v1               default\n  sandbox                     auto             default\n  defer timeout               86400000ms       default\n  writable fields             metadata         default\n  confidential                false            default\n  redact env                  -                default\n  reassign on reopen          true             default\n  projection                  -                default\n`,
    );
    expect(out.stderr).toBe("");
    const strict = await team({
      config: { teamId: "strict-team", hooks: { exitCodes: "strict", sandbox: "required" } },
    });
    const got = await cli(["policy", "--team-dir", strict.teamDir], {});
    expect(got.stdout).toContain("  exit codes                  strict           config.json hooks.exitCodes\n");
    expect(got.stdout).toContain("  sandbox                     required         config.json hooks.sandbox\n");
  });

  it("warns of configured writable fields that are never writable (policy get and doctor): the row lists them, no patch writes them", async () => {
    const t = await team({
      config: {
        teamId: "test-team",
        hooks: { writableFields: ["metadata.labels", "status", "metadata.qualityGateStatus", "updatedAt"] },
      },
    });
    const warning =
      "hooks.writableFields: status, metadata.qualityGateStatus, updatedAt are never writable (a patch's writes of them are dropped whatever the list says)";
    const got = await cli(["policy", "--team-dir", t.teamDir], {});
    expect(got.code).toBe(0);
    expect(got.stderr).toContain(`warning: ${warning}`);
    const doctor = await cli(["doctor", "--team-dir", t.teamDir], {});
    expect(doctor.stdout).toContain(`  warn ${warning}`);
    const fine = await team({
      config: { teamId: "fine-team", hooks: { writableFields: ["metadata", "description"] } },
    });
    expect((await cli(["policy", "--team-dir", fine.teamDir], {})).stderr).toBe("");
  });

  it("--json: every setting with its source and origin, and the block's problems (also on stderr)", async () => {
    const t = await team({ config: { hooks: { maxReopensPerTask: "lots" } } });
    const out = await cli(["policy", "get", "--team-dir", t.teamDir, "--json"], {
      PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE: "1",
      PI_TEAMS_HOOKS_FAILURE_MODE: "open",
    });
    const report = JSON.parse(out.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({
      policy: {
        failureAction: "followup",
        maxReopensPerTask: SETTINGS.maxReopensPerTask.default,
        followupOwner: SETTINGS.followupOwner.default,
      },
      sources: { failureAction: "env", maxReopensPerTask: "default", followupOwner: "default" },
      origins: { failureAction: "PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE", maxReopensPerTask: "default" },
      timeoutMs: { value: SETTINGS.timeoutMs.default, source: "default", origin: "default" },
      failureModes: { idle: { value: "open", source: "env", origin: "PI_TEAMS_HOOKS_FAILURE_MODE" } },
      limits: { chainDeadlineMs: { value: SETTINGS.chainDeadlineMs.default, source: "default", origin: "default" } },
      block: { valid: false, from: "none" },
    });
    const refused = expect.stringMatching(
      /config\.json: hooks\.maxReopensPerTask: .*got "lots" — the "hooks" block is refused whole; defaults and the environment apply$/,
    );
    expect(report.warnings).toEqual([refused]);
    expect(report.block).toMatchObject({ problems: [refused] });
    expect(out.stderr).toMatch(/^warning: .*hooks\.maxReopensPerTask: .*refused whole/);
  });

  it("rejects set flags, a missing team dir and unknown actions", async () => {
    const t = await team();
    expect(await cli(["policy", "get", "--team-dir", t.teamDir, "--reset"])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--reset only applies to "policy set"'),
    });
    expect(await cli(["policy", "--team-dir", path.join(t.teamsRoot, "nope")])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("no such directory"),
    });
    expect(await cli(["policy", "show", "--team-dir", t.teamDir])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('unknown action "show"'),
    });
    expect((await cli(["policy"])).code).toBe(2);
  });
});

describe("pi-teams-hooks policy set", () => {
  it("writes normalised values into config.json hooks, keeping every other field, and prints the new policy", async () => {
    const t = await team({
      config: { version: 1, teamId: "test-team", members: [{ name: "alice" }], hooks: { custom: true } },
    });
    const out = await cli([
      "policy",
      "set",
      "--team-dir",
      t.teamDir,
      "--failure-action",
      " Reopen_Followup ",
      "--max-reopens",
      "2",
      "--followup-owner",
      "LEAD",
    ]);
    expect(out.code).toBe(0);
    expect(readConfig(t)).toEqual({
      version: 1,
      teamId: "test-team",
      members: [{ name: "alice" }],
      hooks: { custom: true, failureAction: "reopen_followup", maxReopensPerTask: 2, followupOwner: "lead" },
    });
    expect(out.stdout).toContain(
      `updated ${path.join(t.teamDir, "config.json")}: failureAction = "reopen_followup", maxReopensPerTask = 2, followupOwner = "lead"\n`,
    );
    expect(out.stdout).toContain("  failure action              reopen_followup  config.json hooks.failureAction\n");
    expect(out.stdout).toContain(
      "  max reopens per task        2                config.json hooks.maxReopensPerTask\n",
    );
  });

  it("creates a missing config.json with the defaults", async () => {
    const t = await team();
    const out = await cli(["policy", "set", "--team-dir", t.teamDir, "--max-reopens", "0", "--json"]);
    expect(out.code).toBe(0);
    expect(readConfig(t)).toMatchObject({
      version: 1,
      teamId: "test-team",
      taskListId: "test-team",
      leadName: "team-lead",
      members: [],
      hooks: { maxReopensPerTask: 0 },
    });
    expect(JSON.parse(out.stdout)).toMatchObject({
      written: path.join(t.teamDir, "config.json"),
      policy: { maxReopensPerTask: 0 },
    });
  });

  it.each([
    [
      ["--failure-action", "rework"],
      '--failure-action: "rework" is not valid; expected one of warn, followup, reopen, reopen_followup',
    ],
    [["--max-reopens", "3abc"], '--max-reopens: "3abc" is not valid; expected a whole number ≥ 0'],
    [["--max-reopens=-1"], '--max-reopens: "-1" is not valid'],
    [["--followup-owner", "boss"], '--followup-owner: "boss" is not valid'],
    [[], "nothing to set"],
  ])("refuses %j before writing anything (exit 2)", async (flags, message) => {
    const t = await team({ config: { hooks: { failureAction: "warn" } } });
    const before = fs.readFileSync(path.join(t.teamDir, "config.json"), "utf8");
    // A valid flag beside the bad one: nothing is written unless every value is valid.
    const valid = flags.length > 0 ? ["--failure-action", "reopen"] : [];
    const out = await cli(["policy", "set", "--team-dir", t.teamDir, ...valid, ...flags]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(message);
    expect(fs.readFileSync(path.join(t.teamDir, "config.json"), "utf8")).toBe(before);
  });

  it("--reset removes the three settings (the environment applies again); flags given with it are set", async () => {
    const t = await team({
      config: { hooks: { failureAction: "reopen", maxReopensPerTask: 1, followupOwner: "none", custom: 1 } },
    });
    const reset = await cli(["policy", "set", "--team-dir", t.teamDir, "--reset"], {
      PI_TEAMS_HOOKS_FAILURE_ACTION: "followup",
    });
    expect(reset.code).toBe(0);
    expect(readConfig(t)).toEqual({ hooks: { custom: 1 } });
    expect(reset.stdout).toContain("failureAction removed, maxReopensPerTask removed, followupOwner removed");
    expect(reset.stdout).toContain("  failure action              followup         PI_TEAMS_HOOKS_FAILURE_ACTION\n");

    await cli(["policy", "set", "--team-dir", t.teamDir, "--failure-action", "reopen", "--max-reopens", "5"]);
    await cli(["policy", "set", "--team-dir", t.teamDir, "--reset", "--followup-owner", "lead"]);
    expect(readConfig(t)).toEqual({ hooks: { custom: 1, followupOwner: "lead" } });
  });

  it("--reset of a block holding only the three settings leaves an explicit empty block, which a running leader takes as a reset", async () => {
    const t = await team({
      config: { teamId: "test-team", hooks: { failureAction: "reopen", maxReopensPerTask: 1 } },
    });
    expect((await cli(["policy", "set", "--team-dir", t.teamDir, "--reset"])).code).toBe(0);
    expect(readConfig(t)).toEqual({ teamId: "test-team", hooks: {} });
  });

  it("leaves a config.json that is not JSON untouched, naming it (exit 2)", async () => {
    const t = await team({ config: "{ not json" });
    const out = await cli(["policy", "set", "--team-dir", t.teamDir, "--failure-action", "reopen"]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(path.join(t.teamDir, "config.json"));
    expect(out.stderr).toContain("left untouched");
    expect(fs.readFileSync(path.join(t.teamDir, "config.json"), "utf8")).toBe("{ not json");
    expect(fs.readdirSync(t.teamDir).filter((f) => f.includes(".lock") || f.includes(".tmp."))).toEqual([]);
  });
});

describe("doctor and policy get show what the leader applies", () => {
  // A block with one bad value is refused whole by the leader: its valid maxReopensPerTask does not
  // apply either. doctor and policy get must say so, not show the half that checks.
  it("a block with a bad failureAction: max reopens 3 (default), not the block's 2, and the refused field named", async () => {
    const t = await team({
      config: { teamId: "test-team", hooks: { failureAction: "rework", maxReopensPerTask: 2 } },
    });
    const file = path.join(t.teamDir, "config.json");
    const refused = `${file}: hooks.failureAction: `;
    const whole = 'got "rework" — the "hooks" block is refused whole; defaults and the environment apply';

    const policy = await cli(["policy", "get", "--team-dir", t.teamDir]);
    expect(policy.code).toBe(0);
    expect(policy.stdout).toContain("  failure action              warn             default\n");
    expect(policy.stdout).toContain("  max reopens per task        3                default\n");
    expect(policy.stderr.split("\n").filter((l) => l.startsWith("warning: "))).toEqual([
      expect.stringMatching(new RegExp(`^warning: ${refused}.*${whole}$`)),
    ]);

    const json = JSON.parse((await cli(["policy", "get", "--team-dir", t.teamDir, "--json"])).stdout) as Record<
      string,
      unknown
    >;
    expect(json).toMatchObject({
      policy: { maxReopensPerTask: 3 },
      sources: { maxReopensPerTask: "default" },
      block: { valid: false },
    });

    const doctor = await cli(["doctor", "--team-dir", t.teamDir]);
    expect(doctor.stdout).toContain("  max reopens per task        3                default\n");
    expect(doctor.stdout).toMatch(new RegExp(`\n  warn ${refused}.*${whole}\n`));
    const report = JSON.parse((await cli(["doctor", "--team-dir", t.teamDir, "--json"])).stdout) as {
      policy: Record<string, unknown>;
    };
    expect(report.policy).toMatchObject({
      values: { maxReopensPerTask: 3 },
      sources: { maxReopensPerTask: "default" },
      origins: { maxReopensPerTask: "default" },
    });
  });
});
