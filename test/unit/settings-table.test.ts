/**
 * The settings table (settings/table.ts) is the one description of every setting: each row has a
 * schema its default passes, each of its levels is the one the resolver reads (a flag, config.json's
 * field, a variable: set one, and the setting says it came from there), `--help` gives its flags the
 * table's default and doc, and the settings rows show it under the table's label.
 */
import { describe, expect, it } from "vitest";
import { commandSpec } from "../../extensions/teams-hooks/cli/commands.js";
import { settingsRows } from "../../extensions/teams-hooks/cli/io.js";
import { HOOK_EVENTS } from "../../extensions/teams-hooks/contract/contract.js";
import {
  LIMIT_NAMES,
  SETTINGS,
  TEAM_SETTING_NAMES,
  flagDefault,
  type SettingName,
} from "../../extensions/teams-hooks/settings/table.js";
import {
  SETTING_SCHEMAS,
  resolveSettings,
  type Effective,
  type SettingsInput,
  type TeamSettings,
} from "../../extensions/teams-hooks/settings/team-settings.js";
import { type CommandSpec, commandFlags, commandHelp } from "../../extensions/teams-hooks/text/help.js";

const NAMES = Object.keys(SETTINGS) as SettingName[];
const FILE = "/t/config.json";
const settings = (input: Partial<SettingsInput>): TeamSettings =>
  resolveSettings({ hooks: undefined, noBlock: null, file: FILE, env: {}, ...input });

/** A command of the command table, by name. */
function spec(name: string): CommandSpec {
  const found = commandSpec(name);
  if (!found) throw new Error(`no command ${name}`);
  return found;
}

/** A setting as resolved, by its name in the table. */
function inForce(s: TeamSettings, name: SettingName): Effective<unknown> {
  if (name === "failureMode") return s.failureModes.task_completed;
  if ((LIMIT_NAMES as readonly string[]).includes(name)) return s.limits[name as (typeof LIMIT_NAMES)[number]];
  return s[name as Exclude<SettingName, "failureMode" | (typeof LIMIT_NAMES)[number]>];
}

/** A value other than the default, as each level writes it. */
const WRITTEN: Readonly<Record<SettingName, { raw: unknown; value: unknown }>> = {
  failureAction: { raw: "reopen", value: "reopen" },
  maxReopensPerTask: { raw: "7", value: 7 },
  followupOwner: { raw: "lead", value: "lead" },
  timeoutMs: { raw: "1234", value: 1234 },
  failureMode: { raw: "open", value: "open" },
  maxHooksPerEvent: { raw: 4, value: 4 },
  chainDeadlineMs: { raw: 1000, value: 1000 },
  maxPayloadBytes: { raw: 2048, value: 2048 },
  sweep: { raw: "always", value: "always" },
  exitCodes: { raw: "strict", value: "strict" },
  sandbox: { raw: "off", value: "off" },
  deferTimeoutMs: { raw: 5000, value: 5000 },
  writableFields: { raw: ["metadata", "subject"], value: ["metadata", "subject"] },
  confidential: { raw: true, value: true },
  redactEnv: { raw: ["DEPLOY_TOKEN"], value: ["DEPLOY_TOKEN"] },
  reassignOnReopen: { raw: false, value: false },
  projection: { raw: { on_idle: ["task.id"] }, value: { on_idle: ["task.id"] } },
  trustChanges: { raw: true, value: true },
  allowInsecureHooks: { raw: true, value: true },
};

describe("the settings table", () => {
  it("gives every setting a schema, and every default is a value its schema takes", () => {
    expect(Object.keys(SETTING_SCHEMAS).sort()).toEqual([...NAMES].sort());
    for (const name of NAMES) {
      const value = SETTINGS[name].default;
      const each = name === "failureMode" ? Object.values(value as Record<string, unknown>) : [value];
      for (const one of each) expect(SETTING_SCHEMAS[name].safeParse(one).success, name).toBe(true);
    }
  });

  it.each(NAMES.map((name) => [name]))("%s: with nothing written, its default, from `default`", (name) => {
    expect(inForce(settings({}), name)).toEqual({
      value: name === "failureMode" ? SETTINGS.failureMode.default.task_completed : SETTINGS[name].default,
      source: "default",
      origin: "default",
    });
  });

  const fields = NAMES.filter((name) => SETTINGS[name].field !== null);
  it.each(fields.map((name) => [name]))("%s: written at its config.json field, taken from there", (name) => {
    const path = (SETTINGS[name].field ?? "").split(".").slice(1);
    const hooks: Record<string, unknown> = {};
    let node = hooks;
    for (const key of path.slice(0, -1)) node = (node[key] = {}) as Record<string, unknown>;
    node[path[path.length - 1] ?? ""] = WRITTEN[name].raw;
    const got = inForce(settings({ hooks }), name);
    expect(got).toEqual({
      value: WRITTEN[name].value,
      source: "config",
      origin: `config.json ${SETTINGS[name].field}`,
    });
  });

  const variables = NAMES.flatMap((name) => SETTINGS[name].env.map((variable) => [name, variable] as const));
  it.each(variables)("%s: given by %s, said to come from it", (name, variable) => {
    const legacy = variable === "PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE";
    const got = inForce(settings({ env: { [variable]: legacy ? "1" : String(WRITTEN[name].raw) } }), name);
    expect(got).toEqual({ value: legacy ? "followup" : WRITTEN[name].value, source: "env", origin: variable });
  });

  it("gives each flag of a setting to the resolver, which names it as the origin", () => {
    const s = settings({
      flags: { failureAction: "reopen", maxReopens: "7", followupOwner: "lead" },
      timeoutFlag: "1234",
      trustFlags: { trustChanges: true, allowInsecureHooks: true },
    });
    const flagged = NAMES.filter((name) => SETTINGS[name].flag !== null);
    for (const name of flagged)
      expect(inForce(s, name), name).toEqual({
        value: WRITTEN[name].value,
        source: "flag",
        origin: SETTINGS[name].flag,
      });
  });
});

describe("--help takes the settings' flags from the table", () => {
  const flagged = NAMES.filter((name) => SETTINGS[name].flag !== null && typeof SETTINGS[name].default !== "boolean");
  it.each(flagged.map((name) => [name]))("%s: run's flag says the table's default and doc", (name) => {
    const flag = commandFlags(spec("run")).find((f) => `--${f.name}` === SETTINGS[name].flag);
    expect(flag).toMatchObject({ default: flagDefault(name), help: SETTINGS[name].doc });
  });

  it("policy set takes a flag for each setting it writes, and --help says each limit's range and field", () => {
    const policy = spec("policy");
    const set = policy.subcommands?.find((sub) => sub.name === "set")?.flags ?? [];
    const written = NAMES.flatMap((name) => (SETTINGS[name].setFlag ? [SETTINGS[name].setFlag.slice(2)] : []));
    expect(set.filter((flag) => flag !== "reset" && flag !== "team-dir" && flag !== "team" && flag !== "json")).toEqual(
      written,
    );
    const help = commandHelp(policy);
    expect(help).toContain("1 to 64 (hooks.limits.maxHooksPerEvent)");
    expect(help).toContain(`${SETTINGS.maxPayloadBytes.range.min} to ${SETTINGS.maxPayloadBytes.range.max}`);
  });
});

describe("the settings rows", () => {
  it("show every setting a team sets, in the table's order, under the table's label", () => {
    const labels = settingsRows(settings({}))
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => line.slice(2, 29).trimEnd());
    const expected = TEAM_SETTING_NAMES.flatMap((name) =>
      name === "failureMode" ? HOOK_EVENTS.map((e) => `${SETTINGS[name].label} ${e}`) : [SETTINGS[name].label],
    );
    expect(labels).toEqual(expected);
  });
});
