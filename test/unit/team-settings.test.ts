import { describe, expect, it } from "vitest";
import {
  checkHooksBlock,
  DEFAULT_LIMITS,
  resolveFailureModes,
  resolveLimits,
  resolveSweep,
  resolveSettings,
  settingValues,
  settingsReport,
  type SettingsInput,
  type SettingsReport,
} from "../../extensions/teams-hooks/settings/team-settings.js";
import { DEFAULT_POLICY } from "../../extensions/teams-hooks/settings/options.js";

describe("checkHooksBlock", () => {
  it.each([
    ["nothing", undefined],
    ["null", null],
    ["an empty block", {}],
    [
      "a full block",
      {
        failureAction: "reopen",
        maxReopensPerTask: "2",
        followupOwner: "LEAD",
        failureMode: { idle: "closed" },
        limits: { maxHooksPerEvent: 4, chainDeadlineMs: 1000, maxPayloadBytes: 2048 },
      },
    ],
    ["one mode for all", { failureMode: "open" }],
    ["keys of another tool", { someOtherTool: { x: 1 } }],
  ])("accepts %s", (_name, raw) => {
    expect(checkHooksBlock(raw, "config.json").ok).toBe(true);
  });

  it("a config with three mistakes reports all three, each by field", () => {
    const check = checkHooksBlock(
      { failureAction: "rework", maxReopensPerTask: -1, failureMode: { idle: "ajar" } },
      "/t/config.json",
    );
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.problems).toHaveLength(3);
    expect(check.problems[0]).toMatch(/^\/t\/config\.json: hooks\.failureAction: .*got "rework"$/);
    expect(
      check.problems.some((p) => p.startsWith("/t/config.json: hooks.maxReopensPerTask:") && p.endsWith("got -1")),
    ).toBe(true);
    expect(check.problems.some((p) => p.startsWith("/t/config.json: hooks.failureMode"))).toBe(true);
  });

  it.each([
    ["a block that is not an object", "warn"],
    ["an unknown limit", { limits: { maxHooks: 3 } }],
    ["a limit that is not a whole number", { limits: { maxHooksPerEvent: "lots" } }],
    ["a limit that is a fraction", { limits: { chainDeadlineMs: 1.5 } }],
    ["a defer timeout that is not a number", { deferTimeoutMs: true }],
    ["an unknown event in failureMode", { failureMode: { task_done: "open" } }],
    ["a sweep that is neither auto nor always", { failureAction: "reopen", sweep: "sometimes" }],
  ])("refuses %s", (_name, raw) => {
    expect(checkHooksBlock(raw, "config.json").ok).toBe(false);
  });
});

describe("resolveFailureModes", () => {
  it("defaults: closed for task events (a start gate too), open for idle", () => {
    expect(resolveFailureModes({}, {}).modes).toEqual({
      task_completed: "closed",
      task_failed: "closed",
      idle: "open",
      task_started: "closed",
    });
  });

  it("config beats the environment, per event", () => {
    const resolved = resolveFailureModes({ failureMode: { idle: "closed" } }, { PI_TEAMS_HOOKS_FAILURE_MODE: "open" });
    expect(resolved.modes).toEqual({
      task_completed: "open",
      task_failed: "open",
      idle: "closed",
      task_started: "open",
    });
    expect(resolved.sources).toEqual({
      task_completed: "env",
      task_failed: "env",
      idle: "config",
      task_started: "env",
    });
  });

  it("hooks.failureMode.task_started sets the start gate's mode alone", () => {
    const resolved = resolveFailureModes({ failureMode: { task_started: "open" } }, {});
    expect(resolved.modes).toEqual({
      task_completed: "closed",
      task_failed: "closed",
      idle: "open",
      task_started: "open",
    });
    expect(resolved.sources.task_started).toBe("config");
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

describe("limits outside their range are capped, the rest of the block stays", () => {
  it.each<[string, Record<string, unknown>, string, number, string]>([
    [
      "above its ceiling",
      { limits: { maxHooksPerEvent: 500 } },
      "hooks.limits.maxHooksPerEvent",
      64,
      "500 is above its ceiling of 64 — capped to 64",
    ],
    [
      "above its ceiling, as digits",
      { limits: { maxHooksPerEvent: "65" } },
      "hooks.limits.maxHooksPerEvent",
      64,
      "65 is above its ceiling of 64 — capped to 64",
    ],
    [
      "below its floor",
      { limits: { maxPayloadBytes: 10 } },
      "hooks.limits.maxPayloadBytes",
      1024,
      "10 is below its floor of 1024 — capped to 1024",
    ],
    [
      "negative",
      { limits: { chainDeadlineMs: -5 } },
      "hooks.limits.chainDeadlineMs",
      1,
      "-5 is below its floor of 1 — capped to 1",
    ],
    [
      "a defer timeout past 30 days",
      { deferTimeoutMs: 9e12 },
      "hooks.deferTimeoutMs",
      2_592_000_000,
      "9000000000000 is above its ceiling of 2592000000 — capped to 2592000000",
    ],
  ])("%s", (_name, hooks, field, value, said) => {
    const settings = resolveSettings({
      hooks: { failureAction: "reopen", ...hooks },
      noBlock: null,
      file: "/t/config.json",
      env: {},
    });
    expect(settings.block.valid).toBe(true);
    expect(settings.values.failureAction).toBe("reopen");
    expect(settings.capped).toEqual([expect.objectContaining({ field, value })]);
    expect(settings.warnings).toEqual([
      `/t/config.json: ${field}: ${said}; the rest of the "hooks" block stays in force`,
    ]);
    const name = field.split(".").pop() ?? "";
    const row = field.startsWith("hooks.limits.")
      ? settings.limits[name as keyof typeof settings.limits]
      : settings.deferTimeoutMs;
    expect(row.value).toBe(value);
    expect(row.origin).toMatch(/\(-?\d+, capped to its (ceiling|floor)\)$/);
  });
});

describe("a handler's timeoutMs outside its range is capped, as the limits are", () => {
  it.each<[string, unknown, number, string]>([
    ["under a second", 999, 1_000, "999 is below its floor of 1000 — capped to 1000"],
    ["over five minutes", 300_001, 300_000, "300001 is above its ceiling of 300000 — capped to 300000"],
    ["over five minutes, as digits", "900000", 300_000, "900000 is above its ceiling of 300000 — capped to 300000"],
  ])("%s", (_name, timeoutMs, value, said) => {
    const ci = { name: "ci", events: ["task_completed"], url: "https://ci.example/gate", timeoutMs };
    const settings = resolveSettings({
      hooks: {
        failureAction: "reopen",
        handlers: [{ name: "audit", events: ["idle"], url: "https://a.example/" }, ci],
      },
      noBlock: null,
      file: "/t/config.json",
      env: {},
    });
    expect(settings.block.valid).toBe(true);
    expect(settings.values.failureAction).toBe("reopen");
    expect(settings.handlers.map((h) => h.timeoutMs)).toEqual([10_000, value]);
    expect(settings.warnings).toEqual([
      `/t/config.json: hooks.handlers.1.timeoutMs: ${said}; the rest of the "hooks" block stays in force`,
    ]);
  });
});

describe("resolveSettings: what the leader, doctor and policy get all apply", () => {
  const FILE = "/t/config.json";
  const settings = (input: Partial<SettingsInput>) =>
    resolveSettings({ hooks: undefined, noBlock: null, file: FILE, env: {}, ...input });

  it("a block with one bad value is refused whole: max reopens 3 (default), not the 2 it also holds", () => {
    const s = settings({ hooks: { failureAction: "rework", maxReopensPerTask: 2 } });
    expect(s.values).toEqual(DEFAULT_POLICY);
    expect(settingsReport(s).origins).toEqual({
      failureAction: "default",
      maxReopensPerTask: "default",
      followupOwner: "default",
    });
    expect(s.block).toEqual({
      valid: false,
      from: "none",
      problems: [
        expect.stringMatching(
          /^\/t\/config\.json: hooks\.failureAction: .*got "rework" — the "hooks" block is refused whole; defaults and the environment apply$/,
        ),
      ],
    });
    expect(s.warnings).toEqual(s.block.problems);
  });

  it("a valid block: every value with where it came from", () => {
    const s = settings({
      hooks: { failureAction: "reopen", failureMode: { idle: "closed" }, limits: { chainDeadlineMs: 1000 } },
      env: {
        PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE: "1",
        PI_TEAMS_HOOKS_FOLLOWUP_OWNER: "lead",
        PI_TEAMS_HOOKS_FAILURE_MODE: "open",
        PI_TEAMS_HOOK_TIMEOUT_MS: "5000",
      },
      flags: { maxReopens: "1" },
    });
    expect(s.values).toEqual({ failureAction: "reopen", maxReopensPerTask: 1, followupOwner: "lead" });
    expect(settingsReport(s).origins).toEqual({
      failureAction: "config.json hooks.failureAction",
      maxReopensPerTask: "--max-reopens",
      followupOwner: "PI_TEAMS_HOOKS_FOLLOWUP_OWNER",
    });
    expect(s.timeoutMs).toEqual({ value: 5000, source: "env", origin: "PI_TEAMS_HOOK_TIMEOUT_MS" });
    expect(s.failureModes).toEqual({
      task_completed: { value: "open", source: "env", origin: "PI_TEAMS_HOOKS_FAILURE_MODE" },
      task_failed: { value: "open", source: "env", origin: "PI_TEAMS_HOOKS_FAILURE_MODE" },
      idle: { value: "closed", source: "config", origin: "config.json hooks.failureMode.idle" },
      task_started: { value: "open", source: "env", origin: "PI_TEAMS_HOOKS_FAILURE_MODE" },
    });
    expect(s.limits).toEqual({
      maxHooksPerEvent: { value: DEFAULT_LIMITS.maxHooksPerEvent, source: "default", origin: "default" },
      chainDeadlineMs: { value: 1000, source: "config", origin: "config.json hooks.limits.chainDeadlineMs" },
      maxPayloadBytes: { value: DEFAULT_LIMITS.maxPayloadBytes, source: "default", origin: "default" },
    });
    expect(s.block).toEqual({ valid: true, from: "file", problems: [] });
    expect(s.refusal).toBeNull();
    expect(settingValues(s.failureModes)).toEqual({
      task_completed: "open",
      task_failed: "open",
      idle: "closed",
      task_started: "open",
    });
  });

  it("names the variable that set failureAction, and one failure mode for all events by its field", () => {
    expect(
      settingsReport(settings({ env: { PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE: "1" } })).origins.failureAction,
    ).toBe("PI_TEAMS_HOOKS_CREATE_TASK_ON_FAILURE");
    expect(settingsReport(settings({ env: { PI_TEAMS_HOOKS_FAILURE_ACTION: "reopen" } })).origins.failureAction).toBe(
      "PI_TEAMS_HOOKS_FAILURE_ACTION",
    );
    expect(settings({ hooks: { failureMode: "open" } }).failureModes.task_failed.origin).toBe(
      "config.json hooks.failureMode",
    );
  });

  const LAST = { failureAction: "reopen" };
  it.each<[string, Partial<SettingsInput>, string]>([
    [
      "not JSON",
      { noBlock: { kind: "unreadable", reason: `${FILE}: invalid JSON (Unexpected token)` } },
      `${FILE}: invalid JSON (Unexpected token) — the last valid "hooks" block stays in force`,
    ],
    [
      "deleted",
      { noBlock: { kind: "missing", reason: `${FILE}: file not found` } },
      `${FILE}: file not found — the last valid "hooks" block stays in force`,
    ],
    [
      "without hooks",
      { noBlock: { kind: "absent", reason: `${FILE}: no "hooks" block` } },
      `${FILE}: no "hooks" block — the last valid "hooks" block stays in force`,
    ],
    [
      "an invalid block",
      { hooks: { failureAction: "rework" } },
      "the block is refused whole; the last valid block stays in force",
    ],
  ])(
    "config.json %s with a block in force: that block is kept, with one problem naming the file",
    (_name, input, problem) => {
      const s = settings({ ...input, lastValid: LAST });
      expect(s.values.failureAction).toBe("reopen");
      expect(settingsReport(s).origins.failureAction).toBe("config.json hooks.failureAction (last valid block)");
      expect(s.hooksBlock).toEqual(LAST);
      expect(s.block).toMatchObject({ valid: false, from: "kept" });
      expect(s.block.problems).toHaveLength(1);
      expect(s.block.problems[0]?.replace('"hooks" block is', "block is")).toContain(problem);
      // The same refusal twice (another broken save) is one state: the leader says it once.
      expect(settings({ ...input, lastValid: LAST }).refusal).toBe(s.refusal);
      expect(s.refusal).not.toBeNull();
    },
  );

  it.each<[string, Partial<SettingsInput>, SettingsReport["block"]]>([
    ["no config.json", { noBlock: { kind: "missing", reason: "x" } }, { valid: true, from: "none", problems: [] }],
    ["no hooks", { noBlock: { kind: "absent", reason: "x" } }, { valid: true, from: "none", problems: [] }],
    ["an explicit empty block", { hooks: {} }, { valid: true, from: "file", problems: [] }],
    [
      "not JSON",
      { noBlock: { kind: "unreadable", reason: `${FILE}: invalid JSON (x)` } },
      { valid: false, from: "none", problems: [`${FILE}: invalid JSON (x) — using defaults for the whole config`] },
    ],
  ])("without a block in force, %s: the defaults", (_name, input, block) => {
    const s = settings(input);
    expect(s.block).toEqual(block);
    expect(s.values).toEqual(DEFAULT_POLICY);
  });

  it("an explicit empty block replaces the one in force (how a team resets)", () => {
    const s = settings({ hooks: {}, lastValid: LAST });
    expect(s.block).toEqual({ valid: true, from: "file", problems: [] });
    expect(s.values.failureAction).toBe("warn");
  });

  it("holds the trust flags with their origin, and what one event needs of privacy as values", () => {
    const none = settings({});
    expect([none.trustChanges, none.allowInsecureHooks]).toEqual([
      { value: false, source: "default", origin: "default" },
      { value: false, source: "default", origin: "default" },
    ]);
    const flagged = settings({
      hooks: { confidential: true, redactEnv: ["DEPLOY_TOKEN"] },
      trustFlags: { trustChanges: true, allowInsecureHooks: true },
    });
    expect(flagged.trustChanges).toEqual({ value: true, source: "flag", origin: "--trust-changes" });
    expect(flagged.allowInsecureHooks).toEqual({ value: true, source: "flag", origin: "--allow-insecure-hooks" });
    expect(flagged.privacy).toEqual({ projection: {}, confidential: true, redactEnv: ["DEPLOY_TOKEN"] });
  });

  it("is frozen all through: a setting in force is never changed in place, and the caller's block stays its own", () => {
    const hooks = { failureAction: "reopen", limits: { chainDeadlineMs: 1000 }, redactEnv: ["DEPLOY_TOKEN"] };
    const s = settings({ hooks });
    expect(
      [
        s,
        s.values,
        s.failureModes.idle,
        s.limits.chainDeadlineMs,
        s.redactEnv.value,
        s.privacy.redactEnv,
        s.hooksBlock,
        s.block.problems,
        s.warnings,
      ].every(Object.isFrozen),
    ).toBe(true);
    expect(() => {
      (s.values as { failureAction: string }).failureAction = "warn";
    }).toThrow(TypeError);
    expect(Object.isFrozen(hooks) || Object.isFrozen(hooks.limits)).toBe(false);
    hooks.failureAction = "warn";
    expect(s.hooksBlock).toMatchObject({ failureAction: "reopen" });
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
    if (!check.ok)
      expect(check.problems).toEqual([expect.stringMatching(/^\/t\/config\.json: hooks\.sweep: .*got "sometimes"$/)]);
  });
});

describe("hooks.writableFields", () => {
  it("defaults to metadata, and a configured list replaces it, naming its field", () => {
    expect(resolveSettings({ hooks: {}, noBlock: null, file: "/t/config.json", env: {} }).writableFields).toEqual({
      value: ["metadata"],
      source: "default",
      origin: "default",
    });
    const settings = resolveSettings({
      hooks: { writableFields: ["metadata.labels", "description", "metadata.ci.*"] },
      noBlock: null,
      file: "/t/config.json",
      env: {},
    });
    expect(settings.writableFields).toEqual({
      value: ["metadata.labels", "description", "metadata.ci"],
      source: "config",
      origin: "config.json hooks.writableFields",
    });
    expect(
      resolveSettings({ hooks: { writableFields: [] }, noBlock: null, file: "/t/config.json", env: {} }).writableFields
        .value,
    ).toEqual([]);
  });

  it.each([
    ["not a list", { writableFields: "metadata" }],
    ["a path with a blank", { writableFields: ["meta data"] }],
    ["an empty segment", { writableFields: ["metadata..labels"] }],
  ])("refuses %s, naming the field", (_name, raw) => {
    const check = checkHooksBlock(raw, "/t/config.json");
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.problems.join("\n")).toMatch(/hooks\.writableFields/);
  });
});

describe("hooks.handlers, hooks.templates and hooks.deferTimeoutMs, validated with the block", () => {
  const ci = { name: "ci", events: ["task_completed"], url: "https://ci.example/hooks/gate" };
  const problemsOf = (raw: unknown): string[] => {
    const check = checkHooksBlock(raw, "/t/config.json");
    return check.ok ? [] : check.problems;
  };

  it("a handler gets the default timeout, and the settings list handlers in declaration order", () => {
    const settings = resolveSettings({
      hooks: { handlers: [ci, { ...ci, name: "review", timeoutMs: "30000" }] },
      noBlock: null,
      file: "/t/config.json",
      env: {},
    });
    expect(settings.handlers.map((h) => [h.name, h.timeoutMs])).toEqual([
      ["ci", 10_000],
      ["review", 30_000],
    ]);
    expect(settings.deferTimeoutMs).toEqual({ value: 24 * 3_600_000, source: "default", origin: "default" });
  });

  it("hooks.deferTimeoutMs in force names its field", () => {
    const settings = resolveSettings({
      hooks: { deferTimeoutMs: 90_000 },
      noBlock: null,
      file: "/t/config.json",
      env: {},
    });
    expect(settings.deferTimeoutMs).toEqual({
      value: 90_000,
      source: "config",
      origin: "config.json hooks.deferTimeoutMs",
    });
  });

  it.each<[string, unknown, RegExp]>([
    ["a blank name", { handlers: [{ ...ci, name: "  " }] }, /hooks\.handlers\.0\.name: must not be blank/],
    [
      "two handlers of one name, whatever the case",
      { handlers: [ci, { ...ci, name: "CI" }] },
      /hooks\.handlers\.1\.name: "CI" is also the name of handler 0/,
    ],
    ["no events", { handlers: [{ ...ci, events: [] }] }, /hooks\.handlers\.0\.events: must name at least one event/],
    ["an unknown event", { handlers: [{ ...ci, events: ["task_done"] }] }, /hooks\.handlers\.0\.events\.0/],
    [
      "a relative URL",
      { handlers: [{ ...ci, url: "/hooks/gate" }] },
      /hooks\.handlers\.0\.url: must be an absolute URL/,
    ],
    ["an ftp URL", { handlers: [{ ...ci, url: "ftp://ci.example/x" }] }, /must be http:\/\/ or https:\/\//],
    [
      "credentials in the URL",
      { handlers: [{ ...ci, url: "https://bot:hunter2@ci.example/x" }] },
      /must not hold credentials/,
    ],
    [
      "a header name with a blank",
      { handlers: [{ ...ci, headers: { "X Team": "a" } }] },
      /hooks\.handlers\.0\.headers\.X Team: must be a header name/,
    ],
    [
      "a header value with a newline",
      { handlers: [{ ...ci, headers: { "X-Team": "a\r\nX-Evil: 1" } }] },
      /must not contain CR, LF or NUL/,
    ],
    [
      "a header set by the runner",
      { handlers: [{ ...ci, headers: { "Content-Type": "text/plain" } }] },
      /is set by pi-teams-hooks itself/,
    ],
    [
      "one of our context headers",
      { handlers: [{ ...ci, headers: { "X-Pi-Teams-Hook-Event": "x" } }] },
      /pi-teams-hooks' own/,
    ],
    [
      "a static and a secret header of one name",
      { handlers: [{ ...ci, headers: { "X-Token": "a" }, secretHeaders: { "x-token": "TOKEN" } }] },
      /secretHeaders\.x-token: is the same header as headers\.X-Token/,
    ],
    [
      "a secret header naming no variable",
      { handlers: [{ ...ci, secretHeaders: { Authorization: "1TOKEN" } }] },
      /must be an environment variable name/,
    ],
    [
      "a timeout in words (a timeout out of range is capped instead)",
      { handlers: [{ ...ci, timeoutMs: "soon" }] },
      /hooks\.handlers\.0\.timeoutMs/,
    ],
    ["a timeout that is no whole number", { handlers: [{ ...ci, timeoutMs: 1.5 }] }, /hooks\.handlers\.0\.timeoutMs/],
    ["an unknown handler key", { handlers: [{ ...ci, retries: 3 }] }, /hooks\.handlers\.0/],
    [
      "a placeholder naming no parameter",
      { templates: { deploy: { subject: "Deploy {{parameters.branch}}" } } },
      /hooks\.templates\.deploy\.subject: \{\{parameters\.branch\}\} names no declared parameter/,
    ],
    [
      "two templates of one slug",
      { templates: { deploy: { subject: "a" }, Deploy: { subject: "b" } } },
      /hooks\.templates\.Deploy: is the same template as deploy/,
    ],
    [
      "an unknown parameter type",
      { templates: { deploy: { subject: "a", parameters: { n: { type: "integer" } } } } },
      /hooks\.templates\.deploy\.parameters\.n\.type/,
    ],
    ["a defer timeout in words", { deferTimeoutMs: "a day" }, /hooks\.deferTimeoutMs: expected a whole number/],
  ])("refuses %s, naming the field", (_name, raw, problem) => {
    const problems = problemsOf(raw);
    expect(
      problems.some((p) => problem.test(p)),
      problems.join("\n"),
    ).toBe(true);
  });

  it("accepts a full handler and a template whose placeholders name declared parameters (any case)", () => {
    const raw = {
      handlers: [
        {
          ...ci,
          headers: { "X-Team": "alpha" },
          secretHeaders: { Authorization: "CI_GATE_TOKEN" },
          signingSecretEnv: "CI_GATE_HMAC",
          timeoutMs: 1_000,
        },
      ],
      templates: {
        deploy: {
          subject: "Deploy {{parameters.Branch}}",
          description: "{{ parameters.branch }} to {{parameters.env}}",
          owner: "ada",
          parameters: { branch: { type: "string", required: true }, env: { type: "string" } },
        },
      },
      deferTimeoutMs: "3600000",
    };
    expect(problemsOf(raw)).toEqual([]);
  });
});

describe("template names", () => {
  it.each<[string, unknown, RegExp]>([
    [
      "a slug with a slash",
      { templates: { "de/ploy": { subject: "a" } } },
      /hooks\.templates\.de\/ploy: must be a slug/,
    ],
    [
      "a parameter name with a dash",
      { templates: { deploy: { subject: "a", parameters: { "my-branch": { type: "string" } } } } },
      /hooks\.templates\.deploy\.parameters\.my-branch: must be a parameter name/,
    ],
    [
      "two parameters of one name, whatever the case",
      {
        templates: { deploy: { subject: "a", parameters: { branch: { type: "string" }, Branch: { type: "string" } } } },
      },
      /parameters\.Branch: is the same parameter as branch/,
    ],
  ])("refuses %s, naming it", (_name, raw, problem) => {
    const check = checkHooksBlock(raw, "/t/config.json");
    const problems = check.ok ? [] : check.problems;
    expect(
      problems.some((p) => problem.test(p)),
      problems.join("\n"),
    ).toBe(true);
  });
});

describe("hooks.exitCodes", () => {
  it("is v1 by default and strict when config.json says so (any case), with its origin", () => {
    expect(resolveSettings({ hooks: {}, noBlock: null, file: "/t/config.json", env: {} }).exitCodes).toEqual({
      value: "v1",
      source: "default",
      origin: "default",
    });
    expect(
      resolveSettings({ hooks: { exitCodes: " STRICT " }, noBlock: null, file: "/t/config.json", env: {} }).exitCodes,
    ).toEqual({ value: "strict", source: "config", origin: "config.json hooks.exitCodes" });
  });

  it("refuses another value, naming the field", () => {
    const check = checkHooksBlock({ exitCodes: "posix" }, "/t/config.json");
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.problems[0]).toMatch(/^\/t\/config\.json: hooks\.exitCodes: .*got "posix"$/);
  });
});

describe("a refused block still says what to withhold", () => {
  it("its redactEnv, its handlers' secret variables and confidential: true stay in force; nothing else of it does", () => {
    const hooks = {
      failureAction: "reopen_followup",
      confidential: true,
      redactEnv: ["DEPLOY_TOKEN", "not a name", 3],
      handlers: [
        { name: "ci", url: "not a url", secretHeaders: { Authorization: "CI_TOKEN" }, signingSecretEnv: "CI_HMAC" },
      ],
      projection: { on_task_completed: ["task.title"] },
    };
    const refused = resolveSettings({ hooks, noBlock: null, file: "/t/config.json", env: {} });
    expect(refused.block.valid).toBe(false);
    expect(refused.handlers).toEqual([]);
    expect(refused.values.failureAction).not.toBe("reopen_followup");
    expect(refused.redactEnv).toEqual({
      value: ["DEPLOY_TOKEN", "CI_TOKEN", "CI_HMAC"],
      source: "config",
      origin: "config.json hooks.redactEnv (of the refused block: kept, for what is withheld)",
    });
    expect(refused.confidential).toMatchObject({ value: true, source: "config" });
    // Kept by a leader's reload: the last valid block's names, and the refused block's added.
    const kept = resolveSettings({
      hooks: { ...hooks, confidential: false },
      noBlock: null,
      file: "/t/config.json",
      env: {},
      lastValid: { redactEnv: ["NPM_TOKEN"] },
    });
    expect(kept.redactEnv.value).toEqual(["NPM_TOKEN", "DEPLOY_TOKEN", "CI_TOKEN", "CI_HMAC"]);
    expect(kept.confidential.value).toBe(false);
    // A valid block, or none: nothing added.
    expect(
      resolveSettings({ hooks: { redactEnv: ["A_TOKEN"] }, noBlock: null, file: "/t/config.json", env: {} }).redactEnv
        .origin,
    ).toBe("config.json hooks.redactEnv");
    expect(resolveSettings({ hooks: undefined, noBlock: null, file: "/t/config.json", env: {} }).redactEnv).toEqual({
      value: [],
      source: "default",
      origin: "default",
    });
  });
});
