import { describe, expect, it } from "vitest";
import { checkHooksBlock, DEFAULT_LIMITS, resolveFailureModes, resolveLimits, resolveSweep } from "../../extensions/teams-hooks/hooks-config.js";

describe("checkHooksBlock", () => {
  it.each([
    ["nothing", undefined],
    ["null", null],
    ["an empty block", {}],
    ["a full block", { failureAction: "reopen", maxReopensPerTask: "2", followupOwner: "LEAD", failureMode: { idle: "closed" }, limits: { maxHooksPerEvent: 4, chainDeadlineMs: 1000, maxPayloadBytes: 2048 } }],
    ["one mode for all", { failureMode: "open" }],
    ["keys of another tool", { someOtherTool: { x: 1 } }],
  ])("accepts %s", (_name, raw) => {
    expect(checkHooksBlock(raw, "config.json").ok).toBe(true);
  });

  it("a config with three mistakes reports all three, each by field", () => {
    const check = checkHooksBlock({ failureAction: "rework", maxReopensPerTask: -1, failureMode: { idle: "ajar" } }, "/t/config.json");
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.problems).toHaveLength(3);
    expect(check.problems[0]).toMatch(/^\/t\/config\.json: hooks\.failureAction: .*got "rework"$/);
    expect(check.problems.some((p) => p.startsWith("/t/config.json: hooks.maxReopensPerTask:") && p.endsWith("got -1"))).toBe(true);
    expect(check.problems.some((p) => p.startsWith("/t/config.json: hooks.failureMode"))).toBe(true);
  });

  it.each([
    ["a block that is not an object", "warn"],
    ["an unknown limit", { limits: { maxHooks: 3 } }],
    ["too many hooks", { limits: { maxHooksPerEvent: 65 } }],
    ["an unknown event in failureMode", { failureMode: { task_done: "open" } }],
    ["a sweep that is neither auto nor always", { failureAction: "reopen", sweep: "sometimes" }],
  ])("refuses %s", (_name, raw) => {
    expect(checkHooksBlock(raw, "config.json").ok).toBe(false);
  });
});

describe("resolveFailureModes", () => {
  it("defaults: closed for task events, open for idle", () => {
    expect(resolveFailureModes({}, {}).modes).toEqual({ task_completed: "closed", task_failed: "closed", idle: "open" });
  });

  it("config beats the environment, per event", () => {
    const resolved = resolveFailureModes({ failureMode: { idle: "closed" } }, { PI_TEAMS_HOOKS_FAILURE_MODE: "open" });
    expect(resolved.modes).toEqual({ task_completed: "open", task_failed: "open", idle: "closed" });
    expect(resolved.sources).toEqual({ task_completed: "env", task_failed: "env", idle: "config" });
  });

  it("a bad environment value is a warning naming it", () => {
    const resolved = resolveFailureModes({}, { PI_TEAMS_HOOKS_FAILURE_MODE: "ajar" });
    expect(resolved.warnings[0]).toMatch(/PI_TEAMS_HOOKS_FAILURE_MODE: "ajar"/);
    expect(resolved.modes.task_completed).toBe("closed");
  });
});

describe("resolveLimits", () => {
  it("fills what the block leaves out", () => {
    expect(resolveLimits({ limits: { maxHooksPerEvent: 3 } })).toEqual({ ...DEFAULT_LIMITS, maxHooksPerEvent: 3 });
  });
});

describe("resolveSweep", () => {
  it.each([
    [{}, { value: "auto", source: "default" }],
    [{ sweep: "always" }, { value: "always", source: "config" }],
    [{ sweep: " Always " }, { value: "always", source: "config" }],
    [{ sweep: "auto" }, { value: "auto", source: "config" }],
  ])("%j → %j", (raw, expected) => {
    const check = checkHooksBlock(raw, "config.json");
    expect(check.ok).toBe(true);
    if (check.ok) expect(resolveSweep(check.block)).toEqual(expected);
  });

  it("a bad sweep names its field, and refuses the block with it", () => {
    const check = checkHooksBlock({ sweep: "sometimes" }, "/t/config.json");
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.problems).toEqual([expect.stringMatching(/^\/t\/config\.json: hooks\.sweep: .*got "sometimes"$/)]);
  });
});
