/**
 * `pi-teams-hooks config` through the built bin on real team dirs: every setting with its source (a
 * flag, config.json, the environment, a default), each event's whole chain (a v1 file, a `.d` file,
 * an HTTP handler) with its trust state as `trust` compares it, never writing the record; `policy set`
 * for failure modes and limits; and the `watch` banner naming a `.d`-only gate and a handler.
 */
import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runBin, useLeaderRig } from "../helpers/leader-rig.js";
import type { TempTeam } from "../helpers/temp-team.js";
import type { ConfigView } from "../../extensions/teams-hooks/doctor/config-view.js";
import { SETTINGS } from "../../extensions/teams-hooks/settings/table.js";

const rig = useLeaderRig();

const CI = { name: "ci", url: "https://ci.example.com/gate", events: ["task_completed"] };

/** Writes an executable gate under the team's global hooks dir (`<teams root>/_hooks/<name>`). */
async function gate(team: TempTeam, name: string, body: string, layer: "global" | "team" = "global"): Promise<string> {
  const file = path.join(
    layer === "global" ? path.join(team.teamsRoot, "_hooks") : path.join(team.teamDir, "hooks"),
    name,
  );
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `#!/usr/bin/env bash\n${body}\n`);
  await chmod(file, 0o755);
  return file;
}

async function configJson(
  team: TempTeam,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<ConfigView & { warnings: string[] }> {
  const out = await runBin(["config", "--team-dir", team.teamDir, "--json", ...args], { env });
  expect(out.code, out.stderr).toBe(0);
  return JSON.parse(out.stdout) as ConfigView & { warnings: string[] };
}

const readConfig = async (team: TempTeam): Promise<{ hooks: Record<string, unknown> } & Record<string, unknown>> =>
  JSON.parse(await readFile(path.join(team.teamDir, "config.json"), "utf8")) as {
    hooks: Record<string, unknown>;
  } & Record<string, unknown>;

describe("pi-teams-hooks config", () => {
  it("--json names where each setting comes from: a flag, config.json, the environment, a default", async () => {
    const team = await rig.team({
      config: { teamId: "test-team", hooks: { failureAction: "reopen", limits: { maxHooksPerEvent: 8 } } },
    });
    const view = await configJson(team, ["--timeout-ms", "5000"], {
      PI_TEAMS_HOOKS_FOLLOWUP_OWNER: "lead",
      PI_TEAMS_HOOKS_FAILURE_MODE: "open",
    });
    expect(view.settings).toMatchObject({
      timeoutMs: { value: 5000, source: "flag", origin: "--timeout-ms" },
      failureAction: { value: "reopen", source: "config", origin: "config.json hooks.failureAction" },
      followupOwner: { value: "lead", source: "env", origin: "PI_TEAMS_HOOKS_FOLLOWUP_OWNER" },
      maxReopensPerTask: { value: SETTINGS.maxReopensPerTask.default, source: "default", origin: "default" },
      failureModes: { idle: { value: "open", source: "env", origin: "PI_TEAMS_HOOKS_FAILURE_MODE" } },
      limits: {
        maxHooksPerEvent: { value: 8, source: "config", origin: "config.json hooks.limits.maxHooksPerEvent" },
        chainDeadlineMs: { value: SETTINGS.chainDeadlineMs.default, source: "default" },
      },
      sweep: { value: SETTINGS.sweep.default, source: "default" },
      exitCodes: { value: SETTINGS.exitCodes.default, source: "default" },
      writableFields: { value: SETTINGS.writableFields.default, source: "default" },
      confidential: { value: SETTINGS.confidential.default, source: "default" },
      projection: { value: {}, source: "default" },
      trustChanges: { value: false, source: "default" },
    });
    expect(view).toMatchObject({
      teamDir: team.teamDir,
      hooksDir: { value: path.join(team.teamsRoot, "_hooks"), source: "default" },
      block: { valid: true, from: "file", problems: [] },
    });
    expect(view.events.task_completed).toMatchObject({
      failureMode: { value: "open", source: "env" },
      gates: [],
      missing: [],
    });

    const hooksDir = path.join(team.teamsRoot, "elsewhere");
    await mkdir(hooksDir);
    const flagged = await configJson(team, ["--hooks-dir", hooksDir, "--failure-action", "warn", "--trust-changes"]);
    expect(flagged.hooksDir).toEqual({ value: hooksDir, source: "flag", origin: "--hooks-dir" });
    expect(flagged.settings.failureAction).toEqual({ value: "warn", source: "flag", origin: "--failure-action" });
    expect(flagged.settings.trustChanges).toEqual({ value: true, source: "flag", origin: "--trust-changes" });
  });

  it("a chain of a v1 file, a .d file and an HTTP handler, in run order, with each gate's trust: trusted after trust --all, then changed", async () => {
    const team = await rig.team({ config: { hooks: { handlers: [CI] } } });
    const v1 = await gate(team, "on_task_completed.sh", "exit 0");
    const lint = await gate(
      team,
      "on_task_completed.d/10-lint.sh",
      "# pi-teams-hooks: mode=shadow timeout=30s\nexit 0",
    );
    const before = await configJson(team);
    expect(before.trustRecord).toMatchObject({ state: "none" });
    expect(before.events.task_completed.gates.map((g) => g.trust)).toEqual(["no_record", "no_record", "no_record"]);

    expect((await runBin(["trust", "--team-dir", team.teamDir, "--all", "--yes"])).code).toBe(0);
    const trusted = await configJson(team);
    expect(trusted.events.task_completed.gates).toEqual([
      {
        name: "on_task_completed.sh",
        gate: "on_task_completed",
        kind: "v1",
        layer: "global",
        path: v1,
        command: ["bash", v1],
        settings: null,
        settingsError: null,
        trust: "trusted",
        trustDetail: null,
        insecure: null,
        enabled: true,
      },
      {
        name: "on_task_completed.d/10-lint.sh",
        gate: "on_task_completed.d/10-lint.sh",
        kind: "chain",
        layer: "global",
        path: lint,
        command: ["bash", lint],
        settings: "timeout=30s mode=shadow",
        settingsError: null,
        trust: "trusted",
        trustDetail: null,
        insecure: null,
        enabled: true,
      },
      {
        name: "http:ci",
        gate: "http:ci",
        kind: "http",
        layer: "team",
        path: "http:ci",
        command: ["POST", CI.url],
        settings: null,
        settingsError: null,
        trust: "trusted",
        trustDetail: null,
        insecure: null,
        enabled: true,
      },
    ]);
    expect(trusted.trustRecord).toMatchObject({ state: "ok", gates: 3 });

    // The .d file edited, the handler pointed elsewhere, the v1 file deleted.
    await writeFile(lint, "#!/usr/bin/env bash\n# pi-teams-hooks: mode=shadow timeout=30s\nexit 1\n");
    const config = await readConfig(team);
    await writeFile(
      path.join(team.teamDir, "config.json"),
      JSON.stringify({ ...config, hooks: { handlers: [{ ...CI, url: "https://ci.example.com/gate2" }] } }),
    );
    await rm(v1);
    const record = await readFile(path.join(team.teamDir, "hook-state", "trust.json"), "utf8");
    const changed = await configJson(team);
    expect(changed.events.task_completed.gates.map((g) => [g.name, g.trust])).toEqual([
      ["on_task_completed.d/10-lint.sh", "changed"],
      ["http:ci", "changed"],
    ]);
    expect(changed.events.task_completed.gates[0]?.trustDetail).toMatch(/^sha256 [0-9a-f]{12}… → [0-9a-f]{12}…$/);
    expect(changed.events.task_completed.missing).toEqual([
      expect.objectContaining({ name: "on_task_completed.sh", path: v1, trust: "missing", trustDetail: "deleted" }),
    ]);
    // config reads the record and never writes it; trust sees the same three changes.
    expect(await readFile(path.join(team.teamDir, "hook-state", "trust.json"), "utf8")).toBe(record);
    const listed = await runBin(["trust", "--team-dir", team.teamDir]);
    expect(listed.stdout).toMatch(/^changed +http:ci /m);
    expect(listed.stdout).toMatch(/^removed +\S+on_task_completed\.sh /m);

    const human = await runBin(["config", "--team-dir", team.teamDir, "--timeout", "90s"]);
    expect(human.code).toBe(0);
    const lines = human.stdout.split("\n");
    expect(lines[0]).toBe(`pi-teams-hooks config: ${team.teamDir}`);
    expect(lines).toContain(`  hooks dir                   ${path.join(team.teamsRoot, "_hooks")} default`);
    expect(human.stdout).toContain(
      "  task_completed\n    1. on_task_completed.d/10-lint.sh  global .d file CHANGED (sha256 ",
    );
    expect(lines).toContain("       settings: timeout=30s mode=shadow");
    expect(
      lines.some((l) =>
        /^ {4}2\. http:ci {25}team {3}http {4}CHANGED \(sha256 \w+… → \w+…; POST https:\/\/ci\.example\.com\/gate2\)$/.test(
          l,
        ),
      ),
    ).toBe(true);
    expect(lines).toContain("     - on_task_completed.sh            global file    MISSING (deleted)");
    expect(lines).toContain("  task_failed: none");
    expect(lines).toContain(
      `  3 gate(s) not as trusted: their events are held until approved: pi-teams-hooks trust --team-dir ${team.teamDir}`,
    );
    expect(lines).toContain("  hook timeout                90000ms          --timeout");
    expect(lines).toContain("  failure mode idle           open             default");
    expect(lines).toContain("  trust changes               no               default");
    expect(lines).toContain("  hooks block                 valid            config.json");
  });

  it("a refused hooks block is shown, problem by problem (exit 1); a missing team dir or a bad flag is exit 2", async () => {
    const team = await rig.team({ config: { hooks: { maxReopensPerTask: "many", failureAction: "reopen" } } });
    const refused = await runBin(["config", "--team-dir", team.teamDir]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain("  failure action              warn             default\n");
    expect(refused.stdout).toContain("  hooks block                 REFUSED          1 problem(s):\n");
    expect(refused.stdout).toMatch(
      /^ {4}\S+config\.json: hooks\.maxReopensPerTask: .*got "many" — the "hooks" block is refused whole; defaults and the environment apply$/m,
    );
    const json = await runBin(["config", "--team-dir", team.teamDir, "--json"]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      block: { valid: false, from: "none", problems: [expect.stringContaining("hooks.maxReopensPerTask")] },
    });

    expect(await runBin(["config", "--team-dir", path.join(team.teamsRoot, "nope")])).toMatchObject({ code: 2 });
    const bad = await runBin(["config", "--team-dir", team.teamDir, "--failure-action", "rework"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      '--failure-action: "rework" is not valid; expected one of warn, followup, reopen, reopen_followup',
    );
    expect(
      (await runBin(["config", "--team", team.teamId, "--json"], { env: { PI_TEAMS_ROOT_DIR: team.teamsRoot } })).code,
    ).toBe(1);
  });
});

describe("pi-teams-hooks policy set: failure modes and limits", () => {
  it("writes a failure mode per event and a limit, keeping every other key; policy get shows them with their field", async () => {
    const team = await rig.team({
      config: {
        teamId: "test-team",
        members: [{ name: "ada" }],
        hooks: { failureAction: "reopen", owner: "another tool" },
      },
    });
    const set = await runBin([
      "policy",
      "set",
      "--team-dir",
      team.teamDir,
      "--failure-mode",
      "idle=closed",
      "--max-hooks-per-event",
      "8",
    ]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain(
      `updated ${path.join(team.teamDir, "config.json")}: failureMode = {"idle":"closed"}, limits = {"maxHooksPerEvent":8}\n`,
    );
    expect(await readConfig(team)).toMatchObject({
      teamId: "test-team",
      members: [{ name: "ada" }],
      hooks: {
        failureAction: "reopen",
        owner: "another tool",
        failureMode: { idle: "closed" },
        limits: { maxHooksPerEvent: 8 },
      },
    });

    // A mode for every event, then one event's; another limit beside the first.
    expect(
      (
        await runBin([
          "policy",
          "set",
          "--team-dir",
          team.teamDir,
          "--failure-mode",
          "open",
          "--failure-mode",
          "task_started=closed",
          "--chain-deadline-ms",
          "60000",
        ])
      ).code,
    ).toBe(0);
    expect((await readConfig(team)).hooks).toEqual({
      failureAction: "reopen",
      owner: "another tool",
      failureMode: { task_completed: "open", task_failed: "open", idle: "open", task_started: "closed" },
      limits: { maxHooksPerEvent: 8, chainDeadlineMs: 60000 },
    });
    // every origin whole
    const get = await runBin(["policy", "get", "--team-dir", team.teamDir], { env: { COLUMNS: "200" } });
    expect(get.stdout).toContain("  failure mode idle           open             config.json hooks.failureMode.idle\n");
    expect(get.stdout).toContain(
      "  failure mode task_started   closed           config.json hooks.failureMode.task_started\n",
    );
    expect(get.stdout).toContain(
      "  chain deadline              60000ms          config.json hooks.limits.chainDeadlineMs\n",
    );

    const reset = await runBin(["policy", "set", "--team-dir", team.teamDir, "--reset"]);
    expect(reset.code).toBe(0);
    expect((await readConfig(team)).hooks).toEqual({ owner: "another tool" });
  });

  it.each([
    [
      ["--max-hooks-per-event", "100"],
      '--max-hooks-per-event (hooks.limits.maxHooksPerEvent): "100" is not valid; expected a whole number from 1 to 64',
    ],
    [
      ["--max-payload-bytes", "12"],
      '--max-payload-bytes (hooks.limits.maxPayloadBytes): "12" is not valid; expected a whole number from 1024 to 1073741824',
    ],
    [
      ["--chain-deadline-ms", "soon"],
      '--chain-deadline-ms (hooks.limits.chainDeadlineMs): "soon" is not valid; expected a whole number from 1 to 2147483647',
    ],
    [
      ["--failure-mode", "idle=maybe"],
      '--failure-mode (hooks.failureMode): "idle=maybe" is not valid; expected closed or open for every event, or EVENT=closed|open for one (EVENT: task_completed, task_failed, idle, task_started)',
    ],
    [["--failure-mode", "idel=open"], '--failure-mode (hooks.failureMode): "idel=open" is not valid'],
  ])("%j: exit 2, naming the flag, its field and what it accepts; nothing written", async (flags, message) => {
    const team = await rig.team({ config: { hooks: { failureAction: "reopen" } } });
    const before = await readFile(path.join(team.teamDir, "config.json"), "utf8");
    const out = await runBin([
      "policy",
      "set",
      "--team-dir",
      team.teamDir,
      "--failure-mode",
      "task_failed=open",
      ...flags,
    ]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(message);
    expect(await readFile(path.join(team.teamDir, "config.json"), "utf8")).toBe(before);
  });
});

describe("the watch banner names each event's whole chain", () => {
  it("a .d-only gate, a team-layer gate and an HTTP handler are named, not 'none'", async () => {
    const team = await rig.team({ config: { hooks: { handlers: [CI] } } });
    const lint = await gate(team, "on_task_completed.d/10-lint.sh", "exit 0");
    await gate(team, "on_idle.d/20-tidy.sh", "# pi-teams-hooks: mode=shadow\nexit 0", "team");
    const leader = await rig.leader(team);
    const hooks = Object.fromEntries(leader.linesOf("hook").map((line) => [line.event, line]));
    expect(hooks.task_completed).toMatchObject({
      hook: null,
      chain: [
        { name: "on_task_completed.d/10-lint.sh", layer: "global", kind: "chain", path: lint, shadow: false },
        { name: "http:ci", layer: "team", kind: "http", path: "http:ci", shadow: false },
      ],
    });
    expect(hooks.idle).toMatchObject({
      hook: null,
      chain: [{ name: "on_idle.d/20-tidy.sh", layer: "team", kind: "chain", shadow: true }],
    });
    expect(hooks.task_failed).toMatchObject({ hook: null, chain: [] });
    expect(await leader.stop()).toMatchObject({ code: 0 });

    const human = await runBin(["watch", "--team-dir", team.teamDir, "--once"]);
    expect(human.code, human.stderr).toBe(0);
    const lines = human.stdout.split("\n");
    expect(lines).toContain(
      `hooks dir: ${path.join(team.teamsRoot, "_hooks")} (default); team layer: ${path.join(team.teamDir, "hooks")}`,
    );
    expect(lines).toContain("hook task_completed: on_task_completed.d/10-lint.sh, http:ci");
    expect(lines).toContain("hook idle: on_idle.d/20-tidy.sh (team, shadow)");
    expect(lines).toContain("hook task_failed: none");
  });
});
