import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadTeamConfig, updateHooksConfig } from "../../extensions/teams-hooks/team/config-file.js";
import { type TempTeam, tempTeams } from "../helpers/temp-team.js";

const team = tempTeams({ teamId: "alpha" });

const configOf = (t: TempTeam): string => path.join(t.teamDir, "config.json");

describe("loadTeamConfig", () => {
  it("applies the documented defaults when config.json is missing, without a warning", async () => {
    const t = await team();
    expect(await loadTeamConfig(t.teamDir)).toEqual({
      identity: { teamId: "alpha", teamDir: t.teamDir, taskListId: "alpha", leadName: "team-lead", style: "normal" },
      hooks: undefined,
      noHooks: { kind: "missing", reason: `${configOf(t)}: file not found` },
      warnings: [],
      fileWarning: null,
      file: configOf(t),
      exists: false,
    });
  });

  it("reads the identity and the raw hooks block", async () => {
    const hooks = { failureAction: "reopen", maxReopensPerTask: "not checked here", extra: true };
    const t = await team({
      config: { version: 1, teamId: "T", taskListId: "L", leadName: "boss", style: "soviet", hooks, members: [] },
    });
    const loaded = await loadTeamConfig(t.teamDir);
    expect(loaded.identity).toEqual({
      teamId: "T",
      teamDir: t.teamDir,
      taskListId: "L",
      leadName: "boss",
      style: "soviet",
    });
    expect(loaded.hooks).toEqual(hooks);
    expect(loaded).toMatchObject({ warnings: [], exists: true, noHooks: null });
  });

  it("warns about a mistyped identity field, naming the file and the field, and uses the default", async () => {
    const t = await team({ config: { teamId: 42, leadName: "", style: ["x"], taskListId: null } });
    const loaded = await loadTeamConfig(t.teamDir);
    expect(loaded.identity).toEqual({
      teamId: "alpha",
      teamDir: t.teamDir,
      taskListId: "alpha",
      leadName: "team-lead",
      style: "normal",
    });
    expect(loaded.warnings).toHaveLength(3);
    expect(loaded.warnings[0]).toBe(`${configOf(t)}: teamId: expected a non-empty string, got 42 — using "alpha"`);
    expect(loaded.warnings[1]).toContain(`${configOf(t)}: leadName:`);
    expect(loaded.warnings[2]).toContain(`${configOf(t)}: style: expected a non-empty string, got an array`);
  });

  it.each([
    ["invalid JSON", "{ nope", /invalid JSON/],
    ["an empty file", "", /empty file/],
    ["not an object", "[1, 2]", /expected a JSON object, got an array/],
  ])("warns about %s and applies every default", async (_name, raw, warning) => {
    const t = await team({ config: raw });
    const loaded = await loadTeamConfig(t.teamDir);
    expect(loaded.identity).toMatchObject({
      teamId: "alpha",
      taskListId: "alpha",
      leadName: "team-lead",
      style: "normal",
    });
    expect(loaded.exists).toBe(true);
    expect(loaded.warnings).toHaveLength(1);
    expect(loaded.warnings[0]).toContain(configOf(t));
    expect(loaded.warnings[0]).toMatch(warning);
    expect(loaded.fileWarning).toBe(loaded.warnings[0]);
    // No block to check: the settings keep the one in force, or apply the defaults.
    expect(loaded.hooks).toBeUndefined();
    expect(loaded.noHooks?.reason).toMatch(warning);
  });

  it("passes a hooks block that is not an object on as written: the block check refuses it whole", async () => {
    const t = await team({ config: { hooks: "reopen" } });
    const loaded = await loadTeamConfig(t.teamDir);
    expect(loaded).toMatchObject({ hooks: "reopen", noHooks: null, warnings: [] });
  });

  it.each([
    ["no hooks key", {}],
    ["hooks: null", { hooks: null }],
  ])("says why there is no block: %s", async (_name, config) => {
    const t = await team({ config });
    expect((await loadTeamConfig(t.teamDir)).noHooks).toEqual({
      kind: "absent",
      reason: `${configOf(t)}: no "hooks" block`,
    });
  });

  it("an explicit empty block is a block", async () => {
    const t = await team({ config: { hooks: {} } });
    expect(await loadTeamConfig(t.teamDir)).toMatchObject({ hooks: {}, noHooks: null });
  });

  it.each(["a/b", "lead.x"])(
    "refuses a leadName that is not a safe file name (%j): a warning, and the default",
    async (name) => {
      const t = await team({ config: { leadName: name } });
      const loaded = await loadTeamConfig(t.teamDir);
      expect(loaded.identity.leadName).toBe("team-lead");
      expect(loaded.warnings).toEqual([
        expect.stringMatching(
          new RegExp(
            `^${configOf(t)}: leadName: ${JSON.stringify(name).replace(".", "\\.")} is not a safe name .* — using "team-lead"$`,
          ),
        ),
      ]);
    },
  );

  it("resolves a relative team dir to an absolute one", async () => {
    const t = await team();
    const relative = path.relative(process.cwd(), t.teamDir);
    expect((await loadTeamConfig(relative)).identity.teamDir).toBe(t.teamDir);
  });
});

describe("updateHooksConfig", () => {
  it("changes only the hooks block, keeping every other field and the key order", async () => {
    const config = {
      version: 1,
      teamId: "alpha",
      custom: { x: [1] },
      hooks: { followupOwner: "lead", other: 1 },
      members: [{ name: "w1" }],
    };
    const t = await team({ config });
    const result = await updateHooksConfig(t.teamDir, { failureAction: "reopen", other: undefined });
    expect(result).toEqual({
      ok: true,
      file: configOf(t),
      hooks: { followupOwner: "lead", failureAction: "reopen" },
      created: false,
    });
    const text = await readFile(configOf(t), "utf8");
    expect(text.endsWith("}\n")).toBe(true);
    const written = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(written)).toEqual(Object.keys(config));
    expect(written).toEqual({ ...config, hooks: { followupOwner: "lead", failureAction: "reopen" } });
  });

  it("creates a complete config.json with the defaults when there is none", async () => {
    const t = await team();
    const now = new Date("2025-02-03T04:05:06.000Z");
    const result = await updateHooksConfig(t.teamDir, { maxReopensPerTask: 1 }, { now });
    expect(result).toMatchObject({ ok: true, created: true });
    expect(JSON.parse(await readFile(configOf(t), "utf8"))).toEqual({
      version: 1,
      teamId: "alpha",
      taskListId: "alpha",
      leadName: "team-lead",
      style: "normal",
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
      members: [],
      hooks: { maxReopensPerTask: 1 },
    });
  });

  it.each([
    ["invalid JSON", "{ nope", "invalid_json"],
    ["not an object", "[]", "invalid"],
    ["a hooks block that is not an object", '{"hooks": 3}', "invalid"],
  ])("never overwrites a config.json with %s", async (_name, raw, kind) => {
    const t = await team({ config: raw });
    const result = await updateHooksConfig(t.teamDir, { failureAction: "warn" });
    expect(result).toMatchObject({ ok: false, problem: { kind, file: configOf(t) } });
    expect(await readFile(configOf(t), "utf8")).toBe(raw);
  });

  it("loses no key when many updates run at once", async () => {
    const t = await team({ config: { version: 1 } });
    const keys = Array.from({ length: 20 }, (_, i) => `key${i}`);
    const results = await Promise.all(keys.map((key, i) => updateHooksConfig(t.teamDir, { [key]: i })));
    expect(results.every((result) => result.ok)).toBe(true);
    const written = JSON.parse(await readFile(configOf(t), "utf8")) as { hooks: Record<string, unknown> };
    expect(Object.keys(written.hooks).sort()).toEqual([...keys].sort());
  });
});
