import { describe, expect, it } from "vitest";
import { HooksError } from "../../extensions/teams-hooks/contract/errors.js";
import { DEFAULT_POLICY, resolvePolicy, resolveTimeoutMs } from "../../extensions/teams-hooks/settings/options.js";
import type { PolicyFlags, ResolvePolicyInput } from "../../extensions/teams-hooks/settings/options.js";

type Env = Record<string, string | undefined>;

const FA = "PI_TEAMS_HOOKS_FAILURE_ACTION";
const CREATE = "PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE";
const MAX = "PI_TEAMS_HOOKS_MAX_REOPENS_PER_TASK";
const OWNER = "PI_TEAMS_HOOKS_FOLLOWUP_OWNER";
const TIMEOUT = "PI_TEAMS_HOOK_TIMEOUT_MS";

function resolve(input: Partial<ResolvePolicyInput>): ReturnType<typeof resolvePolicy> {
  return resolvePolicy({ flags: {}, config: undefined, env: {}, ...input });
}

/** The HooksError a call throws (fails the test if it does not throw one). */
function thrown(fn: () => unknown): HooksError {
  try {
    fn();
  } catch (error) {
    if (error instanceof HooksError) return error;
    throw error;
  }
  throw new Error("expected a HooksError, nothing was thrown");
}

describe("resolvePolicy: defaults", () => {
  it("gives the defaults (the settings table's) with nothing set, and no warnings", () => {
    const { policy, sources, warnings } = resolve({});
    expect(policy).toEqual(DEFAULT_POLICY);
    expect(sources).toEqual({ failureAction: "default", maxReopensPerTask: "default", followupOwner: "default" });
    expect(warnings).toEqual([]);
  });

  it("returns a frozen policy", () => {
    expect(Object.isFrozen(resolve({}).policy)).toBe(true);
  });
});

describe("resolvePolicy: precedence flag > config > env > default", () => {
  type Row = [
    string,
    "failureAction" | "maxReopensPerTask" | "followupOwner",
    PolicyFlags,
    unknown,
    Env,
    unknown,
    string,
  ];
  it.each<Row>([
    ["action from env", "failureAction", {}, undefined, { [FA]: "reopen" }, "reopen", "env"],
    [
      "action from config over env",
      "failureAction",
      {},
      { failureAction: "followup" },
      { [FA]: "reopen" },
      "followup",
      "config",
    ],
    [
      "action from flag over config and env",
      "failureAction",
      { failureAction: "reopen_followup" },
      { failureAction: "followup" },
      { [FA]: "reopen" },
      "reopen_followup",
      "flag",
    ],
    ["action default", "failureAction", {}, {}, {}, "warn", "default"],
    ["max from env", "maxReopensPerTask", {}, undefined, { [MAX]: "5" }, 5, "env"],
    ["max from config over env", "maxReopensPerTask", {}, { maxReopensPerTask: 1 }, { [MAX]: "5" }, 1, "config"],
    [
      "max from flag over config and env",
      "maxReopensPerTask",
      { maxReopens: "0" },
      { maxReopensPerTask: 1 },
      { [MAX]: "5" },
      0,
      "flag",
    ],
    ["max default", "maxReopensPerTask", {}, {}, {}, 3, "default"],
    ["owner from env", "followupOwner", {}, undefined, { [OWNER]: "lead" }, "lead", "env"],
    [
      "owner from config over env",
      "followupOwner",
      {},
      { followupOwner: "none" },
      { [OWNER]: "lead" },
      "none",
      "config",
    ],
    [
      "owner from flag over config and env",
      "followupOwner",
      { followupOwner: "member" },
      { followupOwner: "none" },
      { [OWNER]: "lead" },
      "member",
      "flag",
    ],
    ["owner default", "followupOwner", {}, {}, {}, "member", "default"],
  ])("%s", (_name, setting, flags, config, env, value, source) => {
    const result = resolve({ flags, config, env });
    expect(result.policy[setting]).toBe(value);
    expect(result.sources[setting]).toBe(source);
    expect(result.warnings).toEqual([]);
  });

  it("resolves each setting on its own (mixed sources)", () => {
    const result = resolve({
      flags: { followupOwner: "lead" },
      config: { maxReopensPerTask: 2 },
      env: { [FA]: "reopen" },
    });
    expect(result.policy).toEqual({ failureAction: "reopen", maxReopensPerTask: 2, followupOwner: "lead" });
    expect(result.sources).toEqual({ failureAction: "env", maxReopensPerTask: "config", followupOwner: "flag" });
  });
});

describe("resolvePolicy: values are trimmed, case-insensitive, whole numbers", () => {
  it.each<[string, PolicyFlags, unknown, Env, Partial<Record<string, unknown>>]>([
    ["flag REOPEN", { failureAction: "REOPEN" }, undefined, {}, { failureAction: "reopen" }],
    ["flag with blanks", { failureAction: "  followup " }, undefined, {}, { failureAction: "followup" }],
    ["config Reopen_Followup", {}, { failureAction: "Reopen_Followup" }, {}, { failureAction: "reopen_followup" }],
    ["env LEAD", {}, undefined, { [OWNER]: " LEAD " }, { followupOwner: "lead" }],
    ["flag None", { followupOwner: "None" }, undefined, {}, { followupOwner: "none" }],
    ["flag number", { maxReopens: 2 }, undefined, {}, { maxReopensPerTask: 2 }],
    ["flag digits with blanks", { maxReopens: " 4 " }, undefined, {}, { maxReopensPerTask: 4 }],
    ["config numeric string", {}, { maxReopensPerTask: "5" }, {}, { maxReopensPerTask: 5 }],
    ["config 0 (never reopen)", {}, { maxReopensPerTask: 0 }, {}, { maxReopensPerTask: 0 }],
    ["env 0", {}, undefined, { [MAX]: "0" }, { maxReopensPerTask: 0 }],
    ["env leading zero", {}, undefined, { [MAX]: "07" }, { maxReopensPerTask: 7 }],
  ])("%s", (_name, flags, config, env, expected) => {
    const result = resolve({ flags, config, env });
    expect(result.policy).toMatchObject(expected);
    expect(result.warnings).toEqual([]);
  });
});

describe("resolvePolicy: an invalid flag is a usage error", () => {
  it.each<[PolicyFlags, string, string, string]>([
    [{ failureAction: "rework" }, "--failure-action", '"rework"', "warn, followup, reopen, reopen_followup"],
    [{ failureAction: "" }, "--failure-action", '""', "warn, followup, reopen, reopen_followup"],
    [{ failureAction: "re open" }, "--failure-action", '"re open"', "reopen_followup"],
    [{ maxReopens: "3abc" }, "--max-reopens", '"3abc"', "whole number ≥ 0"],
    [{ maxReopens: "-1" }, "--max-reopens", '"-1"', "whole number ≥ 0"],
    [{ maxReopens: "1.5" }, "--max-reopens", '"1.5"', "whole number ≥ 0"],
    [{ maxReopens: "" }, "--max-reopens", '""', "whole number ≥ 0"],
    [{ maxReopens: -1 }, "--max-reopens", "-1", "whole number ≥ 0"],
    [{ maxReopens: 1.5 }, "--max-reopens", "1.5", "whole number ≥ 0"],
    [{ maxReopens: "1e3" }, "--max-reopens", '"1e3"', "whole number ≥ 0"],
    [{ followupOwner: "boss" }, "--followup-owner", '"boss"', "member, lead, none"],
  ])("%j → E_USAGE naming %s", (flags, flag, shown, allowed) => {
    const error = thrown(() => resolve({ flags, config: { failureAction: "reopen" }, env: { [FA]: "followup" } }));
    expect(error.code).toBe("E_USAGE");
    expect(error.message).toContain(flag);
    expect(error.message).toContain(shown);
    expect(error.message).toContain(allowed);
  });
});

describe("resolvePolicy: an invalid config value warns and the next level applies", () => {
  type Row = [string, unknown, Env, string, unknown, string, string];
  it.each<Row>([
    ["failureAction", "rework", {}, "hooks.failureAction", "warn", "default", '"rework"'],
    ["failureAction", "rework", { [FA]: "reopen" }, "hooks.failureAction", "reopen", "env", '"rework"'],
    ["failureAction", 5, {}, "hooks.failureAction", "warn", "default", "5"],
    ["failureAction", true, {}, "hooks.failureAction", "warn", "default", "true"],
    ["failureAction", "", {}, "hooks.failureAction", "warn", "default", '""'],
    ["failureAction", ["reopen"], {}, "hooks.failureAction", "warn", "default", '["reopen"]'],
    ["maxReopensPerTask", "3abc", {}, "hooks.maxReopensPerTask", 3, "default", '"3abc"'],
    ["maxReopensPerTask", -1, { [MAX]: "1" }, "hooks.maxReopensPerTask", 1, "env", "-1"],
    ["maxReopensPerTask", "-1", {}, "hooks.maxReopensPerTask", 3, "default", '"-1"'],
    ["maxReopensPerTask", 1.5, {}, "hooks.maxReopensPerTask", 3, "default", "1.5"],
    ["maxReopensPerTask", "1.5", {}, "hooks.maxReopensPerTask", 3, "default", '"1.5"'],
    ["maxReopensPerTask", false, {}, "hooks.maxReopensPerTask", 3, "default", "false"],
    ["followupOwner", "boss", {}, "hooks.followupOwner", "member", "default", '"boss"'],
    ["followupOwner", "boss", { [OWNER]: "none" }, "hooks.followupOwner", "none", "env", '"boss"'],
    ["followupOwner", 1, {}, "hooks.followupOwner", "member", "default", "1"],
  ])("%s = %j (env %j) warns naming %s and falls back", (setting, raw, env, field, value, source, shown) => {
    const result = resolve({ config: { [setting]: raw }, env, configFile: "/teams/a/config.json" });
    const key = setting as "failureAction" | "maxReopensPerTask" | "followupOwner";
    expect(result.policy[key]).toBe(value);
    expect(result.sources[key]).toBe(source);
    expect(result.warnings).toHaveLength(1);
    const warning = result.warnings[0];
    expect(warning).toContain(`/teams/a/config.json: ${field}: ${shown}`);
    expect(warning).toContain(`using ${JSON.stringify(value)}`);
    expect(warning).toContain(source === "default" ? "(default)" : "from PI_TEAMS_HOOKS_");
  });

  it("names config.json when no file is given", () => {
    const [warning] = resolve({ config: { failureAction: "nope" } }).warnings;
    expect(warning).toBe(
      'config.json: hooks.failureAction: "nope" is not valid (expected one of warn, followup, reopen, reopen_followup) — ignored, using "warn" (default)',
    );
  });

  it.each<[unknown, string]>([
    ["reopen", '"reopen"'],
    [3, "3"],
    [["reopen"], '["reopen"]'],
    [true, "true"],
  ])("a hooks block that is not an object (%j) warns naming hooks, and env applies", (config, shown) => {
    const result = resolve({ config, env: { [FA]: "reopen" } });
    expect(result.policy.failureAction).toBe("reopen");
    expect(result.sources.failureAction).toBe("env");
    expect(result.warnings).toEqual([expect.stringContaining(`config.json: hooks: expected an object, got ${shown}`)]);
  });

  it.each([undefined, null])("a hooks block of %s is simply absent", (config) => {
    expect(resolve({ config }).warnings).toEqual([]);
  });

  it("treats a null field as not set", () => {
    const result = resolve({ config: { failureAction: null, maxReopensPerTask: null }, env: { [FA]: "reopen" } });
    expect(result.policy).toMatchObject({ failureAction: "reopen", maxReopensPerTask: 3 });
    expect(result.warnings).toEqual([]);
  });

  it("does not read a level below the one that wins (a bad value there costs nothing yet)", () => {
    const result = resolve({
      flags: { failureAction: "reopen" },
      config: { failureAction: "bogus" },
      env: { [FA]: "bogus" },
    });
    expect(result.policy.failureAction).toBe("reopen");
    expect(result.warnings).toEqual([]);
  });

  it("warns once per bad level when both config and env are bad", () => {
    const result = resolve({ config: { maxReopensPerTask: "x" }, env: { [MAX]: "y" } });
    expect(result.policy.maxReopensPerTask).toBe(3);
    expect(result.warnings).toEqual([
      expect.stringMatching(/^config\.json: hooks\.maxReopensPerTask: "x" .* using 3 \(default\)$/),
      expect.stringMatching(/^PI_TEAMS_HOOKS_MAX_REOPENS_PER_TASK: "y" .* using 3 \(default\)$/),
    ]);
  });
});

describe("resolvePolicy: an invalid environment value warns and the default applies", () => {
  it.each<[string, string, string, unknown]>([
    [FA, "rework", "failureAction", "warn"],
    [FA, "reopen-followup", "failureAction", "warn"],
    [MAX, "3abc", "maxReopensPerTask", 3],
    [MAX, "-1", "maxReopensPerTask", 3],
    [MAX, "1.5", "maxReopensPerTask", 3],
    [MAX, "0x10", "maxReopensPerTask", 3],
    [OWNER, "boss", "followupOwner", "member"],
  ])("%s=%s", (variable, raw, setting, value) => {
    const result = resolve({ env: { [variable]: raw } });
    const key = setting as "failureAction" | "maxReopensPerTask" | "followupOwner";
    expect(result.policy[key]).toBe(value);
    expect(result.sources[key]).toBe("default");
    expect(result.warnings).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${variable}: ${JSON.stringify(raw).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is not valid .* — ignored, using`,
        ),
      ),
    ]);
  });

  it.each([FA, MAX, OWNER])("an empty or blank %s counts as not set", (variable) => {
    expect(resolve({ env: { [variable]: "" } }).warnings).toEqual([]);
    expect(resolve({ env: { [variable]: "  " } }).sources).toEqual(resolve({}).sources);
  });
});

describe("resolvePolicy: PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE", () => {
  type Row = [string, unknown, Env, string, string, number];
  it.each<Row>([
    ["=1 alone means followup", undefined, { [CREATE]: "1" }, "followup", "env", 0],
    ["=1 loses to PI_TEAMS_HOOKS_FAILURE_ACTION", undefined, { [CREATE]: "1", [FA]: "reopen" }, "reopen", "env", 0],
    [
      "=1 applies when the action variable is invalid",
      undefined,
      { [CREATE]: "1", [FA]: "bogus" },
      "followup",
      "env",
      1,
    ],
    ["=1 loses to config", { failureAction: "warn" }, { [CREATE]: "1" }, "warn", "config", 0],
    ["=0 is off", undefined, { [CREATE]: "0" }, "warn", "default", 0],
    ["empty is off", undefined, { [CREATE]: "" }, "warn", "default", 0],
    ["=true is a warning (only 1 means on)", undefined, { [CREATE]: "true" }, "warn", "default", 1],
  ])("%s", (_name, config, env, action, source, warningCount) => {
    const result = resolve({ config, env });
    expect(result.policy.failureAction).toBe(action);
    expect(result.sources.failureAction).toBe(source);
    expect(result.warnings).toHaveLength(warningCount);
  });

  it("the invalid action warning says the legacy variable applies", () => {
    const [warning] = resolve({ env: { [CREATE]: "1", [FA]: "bogus" } }).warnings;
    expect(warning).toBe(
      'PI_TEAMS_HOOKS_FAILURE_ACTION: "bogus" is not valid (expected one of warn, followup, reopen, reopen_followup) — ignored, using "followup" from PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE',
    );
  });

  it("a bad value names the variable and says what it accepts", () => {
    const [warning] = resolve({ env: { [CREATE]: "yes" } }).warnings;
    expect(warning).toBe(
      'PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE: "yes" is not valid (expected 1 (create a follow-up task) or 0) — ignored, using "warn" (default)',
    );
  });
});

describe("resolveTimeoutMs", () => {
  it.each<[string, string | number | undefined, Env, number, string]>([
    ["default", undefined, {}, 60_000, "default"],
    ["env", undefined, { [TIMEOUT]: "5000" }, 5_000, "env"],
    ["flag over env", "250", { [TIMEOUT]: "5000" }, 250, "flag"],
    ["flag as number", 1_000, {}, 1_000, "flag"],
    ["blank env is not set", undefined, { [TIMEOUT]: " " }, 60_000, "default"],
    ["largest timer delay", "2147483647", {}, 2_147_483_647, "flag"],
  ])("%s", (_name, flag, env, value, source) => {
    expect(resolveTimeoutMs({ flag, env })).toEqual({ value, source, warnings: [] });
  });

  it.each<string | number>(["0", "-5", "1.5", "abc", "10s", "", 0, -1, 2.5, "2147483648"])(
    "flag %j → E_USAGE naming --timeout-ms",
    (flag) => {
      const error = thrown(() => resolveTimeoutMs({ flag, env: {} }));
      expect(error.code).toBe("E_USAGE");
      expect(error.message).toMatch(
        /^--timeout-ms: .* is not valid; expected a whole number of milliseconds from 1 to 2147483647$/,
      );
      expect(error.message).toContain(typeof flag === "string" ? JSON.stringify(flag) : String(flag));
    },
  );

  it.each(["0", "-5", "1.5", "abc", "99999999999"])("env %j warns naming the variable and uses 60000", (raw) => {
    const result = resolveTimeoutMs({ env: { [TIMEOUT]: raw } });
    expect(result.value).toBe(60_000);
    expect(result.source).toBe("default");
    expect(result.warnings).toEqual([
      `PI_TEAMS_HOOK_TIMEOUT_MS: "${raw}" is not valid (expected a whole number of milliseconds from 1 to 2147483647) — ignored, using 60000 (default)`,
    ]);
  });
});
