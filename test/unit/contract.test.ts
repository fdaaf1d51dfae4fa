import { describe, expect, it } from "vitest";
import {
  buildContextDocument,
  canDefer,
  ContextDocumentSchema,
  HOOK_BASE_NAMES,
  HOOK_CONTRACT_VERSION,
  type HookInvocation,
  isTaskEvent,
  policyApplies,
  stopsAtDenial,
  truncateText,
} from "../../extensions/teams-hooks/contract/contract.js";
import {
  buildHookEnvironment,
  capBytes,
  MAX_ENV_VALUE_BYTES,
  prepareContext,
  utf8Length,
} from "../../extensions/teams-hooks/contract/hook-run.js";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";

const ELLIPSIS = "\u2026";

function task(overrides: Partial<Task> = {}): Task {
  return {
    id: "7",
    subject: "Write the parser",
    description: "Parse the input",
    owner: "alice",
    status: "completed",
    blocks: [],
    blockedBy: [],
    metadata: { completedAt: "2026-12-02T10:00:00.000Z" },
    createdAt: "2026-12-02T09:00:00.000Z",
    updatedAt: "2026-12-02T10:00:00.000Z",
    ...overrides,
  };
}

function invocation(overrides: Partial<HookInvocation> = {}): HookInvocation {
  return {
    event: "task_completed",
    teamId: "alpha",
    teamDir: "/teams/alpha",
    taskListId: "alpha",
    style: "normal",
    memberName: "alice",
    timestamp: "2026-12-02T10:00:00.000Z",
    completedTask: task(),
    ...overrides,
  };
}

describe("contract constants", () => {
  it("is version 1 with the four base names of docs/hook-contract.md", () => {
    expect(HOOK_CONTRACT_VERSION).toBe(1);
    expect(HOOK_BASE_NAMES).toEqual({
      task_completed: "on_task_completed",
      task_failed: "on_task_failed",
      idle: "on_idle",
      task_started: "on_task_started",
    });
  });

  it.each([
    ["task_completed", { task: true, policy: true, defer: true, stops: true }],
    ["task_failed", { task: true, policy: true, defer: true, stops: true }],
    ["task_started", { task: true, policy: false, defer: false, stops: true }],
    ["idle", { task: false, policy: false, defer: false, stops: false }],
  ] as const)("what %s is: a task, the policy, a hold, a chain that stops at a denial", (event, is) => {
    expect({
      task: isTaskEvent(event),
      policy: policyApplies(event),
      defer: canDefer(event),
      stops: stopsAtDenial(event),
    }).toEqual(is);
  });
});

describe("truncateText", () => {
  it.each([
    ["short stays", "abc", 5, "abc"],
    ["exact limit stays", "abcde", 5, "abcde"],
    ["one over keeps limit-1 and the mark", "abcdef", 5, `abcd${ELLIPSIS}`],
    ["never splits a surrogate pair", `abc${"\u{1F600}"}xyz`, 5, `abc${ELLIPSIS}`],
    ["a pair that fits stays whole", `ab${"\u{1F600}"}xyz`, 5, `ab${"\u{1F600}"}${ELLIPSIS}`],
  ])("%s", (_name, value, limit, expected) => {
    const out = truncateText(value, limit);
    expect(out).toBe(expected);
    expect(out.length).toBeLessThanOrEqual(limit);
    expect(out.isWellFormed()).toBe(true);
  });
});

describe("buildContextDocument", () => {
  it("writes keys in contract order", () => {
    const doc = buildContextDocument(invocation());
    // `work` (additive, still v1) after every key of the first v1 document.
    expect(Object.keys(doc)).toEqual(["version", "event", "team", "member", "timestamp", "task", "work"]);
    expect(Object.keys(doc.team)).toEqual(["id", "dir", "taskListId", "style"]);
    expect(Object.keys(doc.task ?? {})).toEqual([
      "id",
      "subject",
      "description",
      "owner",
      "status",
      "blockedBy",
      "blocks",
      "metadata",
      "createdAt",
      "updatedAt",
    ]);
    expect(ContextDocumentSchema.parse(doc)).toEqual(doc);
  });

  it.each([
    ["subject of 1,000 stays", { subject: "s".repeat(1000) }, (d: Task) => d.subject === "s".repeat(1000)],
    [
      "subject of 1,001 is cut to 999 + …",
      { subject: "s".repeat(1001) },
      (d: Task) => d.subject === `${"s".repeat(999)}${ELLIPSIS}`,
    ],
    [
      "description of 8,000 stays",
      { description: "d".repeat(8000) },
      (d: Task) => d.description.length === 8000 && !d.description.endsWith(ELLIPSIS),
    ],
    [
      "description of 9,000 is cut to 7,999 + …",
      { description: "d".repeat(9000) },
      (d: Task) => d.description === `${"d".repeat(7999)}${ELLIPSIS}`,
    ],
    [
      "250 blockedBy keep the first 200",
      { blockedBy: Array.from({ length: 250 }, (_, i) => String(i)) },
      (d: Task) => d.blockedBy.length === 200 && d.blockedBy[199] === "199",
    ],
    [
      "201 blocks keep the first 200",
      { blocks: Array.from({ length: 201 }, (_, i) => String(i)) },
      (d: Task) => d.blocks.length === 200,
    ],
    ["no owner is null", { owner: undefined }, (d: Task) => d.owner === null],
    ["no metadata is {}", { metadata: undefined }, (d: Task) => JSON.stringify(d.metadata) === "{}"],
    [
      "unicode and newlines pass unchanged",
      { subject: "Zürich\n東京 \u{1F680}" },
      (d: Task) => d.subject === "Zürich\n東京 \u{1F680}",
    ],
    [
      "nested metadata passes whole",
      { metadata: { a: { b: [1, { c: null }] } } },
      (d: Task) => JSON.stringify(d.metadata) === '{"a":{"b":[1,{"c":null}]}}',
    ],
  ])("%s", (_name, overrides, check) => {
    const doc = buildContextDocument(invocation({ completedTask: task(overrides) }));
    expect(doc.task).not.toBeNull();
    expect(check(doc.task as unknown as Task)).toBe(true);
  });

  it("idle without member or timestamp has nulls and no task", () => {
    const doc = buildContextDocument(
      invocation({ event: "idle", memberName: undefined, timestamp: undefined, completedTask: null }),
    );
    expect(JSON.stringify(doc)).toBe(
      '{"version":1,"event":"idle","team":{"id":"alpha","dir":"/teams/alpha","taskListId":"alpha","style":"normal"},"member":null,"timestamp":null,"task":null}',
    );
  });

  it("drops unknown task fields: the document has exactly the contract keys", () => {
    const doc = buildContextDocument(invocation({ completedTask: { ...task(), extra: 1 } as Task }));
    expect(doc.task).not.toHaveProperty("extra");
  });
});

describe("buildHookEnvironment", () => {
  const extra = { runId: "run-1", contextFile: "/tmp/ctx.json", base: { PATH: "/usr/bin", HOME: "/root" } };

  it("sets exactly the contract variables for a task event", () => {
    const { env, contextJson, truncated } = buildHookEnvironment(invocation(), extra);
    const ours = Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith("PI_TEAMS_")));
    expect(ours).toEqual({
      PI_TEAMS_HOOK_EVENT: "task_completed",
      PI_TEAMS_HOOK_CONTEXT_VERSION: "1",
      PI_TEAMS_HOOK_CONTEXT_JSON: contextJson,
      PI_TEAMS_TEAM_ID: "alpha",
      PI_TEAMS_TEAM_DIR: "/teams/alpha",
      PI_TEAMS_TASK_LIST_ID: "alpha",
      PI_TEAMS_STYLE: "normal",
      PI_TEAMS_MEMBER: "alice",
      PI_TEAMS_EVENT_TIMESTAMP: "2026-12-02T10:00:00.000Z",
      PI_TEAMS_TASK_ID: "7",
      PI_TEAMS_TASK_STATUS: "completed",
      PI_TEAMS_TASK_SUBJECT: "Write the parser",
      PI_TEAMS_TASK_OWNER: "alice",
      PI_TEAMS_HOOK_RUN_ID: "run-1",
      PI_TEAMS_HOOK_CONTEXT_FILE: "/tmp/ctx.json",
    });
    expect(env.PATH).toBe("/usr/bin");
    expect(truncated).toBe(false);
    expect(contextJson).toBe(JSON.stringify(buildContextDocument(invocation())));
  });

  it("leaves member, timestamp and owner unset when unknown, and drops stale ones from the base", () => {
    const base = { ...extra.base, PI_TEAMS_MEMBER: "stale", PI_TEAMS_TASK_OWNER: "stale", PI_TEAMS_ROOT_DIR: "/teams" };
    const { env } = buildHookEnvironment(
      invocation({ memberName: undefined, timestamp: undefined, completedTask: task({ owner: undefined }) }),
      { ...extra, base },
    );
    expect(env).not.toHaveProperty("PI_TEAMS_MEMBER");
    expect(env).not.toHaveProperty("PI_TEAMS_EVENT_TIMESTAMP");
    expect(env).not.toHaveProperty("PI_TEAMS_TASK_OWNER");
    expect(env.PI_TEAMS_ROOT_DIR).toBe("/teams");
  });

  it("keeps the full subject in PI_TEAMS_TASK_SUBJECT even past 1,000 characters", () => {
    const subject = "x".repeat(1500);
    const { env } = buildHookEnvironment(invocation({ completedTask: task({ subject }) }), extra);
    expect(env.PI_TEAMS_TASK_SUBJECT).toBe(subject);
  });

  it("replaces NUL in values; the JSON escapes it and keeps it in the document", () => {
    const { env, contextJson } = buildHookEnvironment(invocation({ completedTask: task({ subject: "a\0b" }) }), extra);
    expect(env.PI_TEAMS_TASK_SUBJECT).toBe("a\uFFFDb");
    for (const value of Object.values(env)) expect(value.includes("\0")).toBe(false);
    expect(JSON.parse(contextJson).task.subject).toBe("a\0b");
  });

  it("shrinks the largest metadata strings to fit 100 KiB and marks them", () => {
    const metadata = { big: "b".repeat(150_000), medium: "m".repeat(60_000), small: "keep me", n: 1 };
    const { env, contextJson, truncated } = buildHookEnvironment(
      invocation({ completedTask: task({ metadata }) }),
      extra,
    );
    expect(truncated).toBe(true);
    expect(env.PI_TEAMS_HOOK_CONTEXT_TRUNCATED).toBe("1");
    const envJson = env.PI_TEAMS_HOOK_CONTEXT_JSON ?? "";
    expect(utf8Length(envJson)).toBeLessThanOrEqual(MAX_ENV_VALUE_BYTES);
    const shrunk = JSON.parse(envJson).task.metadata;
    expect(shrunk.big.endsWith(ELLIPSIS)).toBe(true);
    expect(shrunk.small).toBe("keep me");
    expect(shrunk.n).toBe(1);
    expect(utf8Length(envJson)).toBeGreaterThan(MAX_ENV_VALUE_BYTES - 2048);
    expect(JSON.parse(contextJson).task.metadata.big).toHaveLength(150_000);
  });

  it("fits even when the size is in many small strings or in the task's other fields", () => {
    const metadata = Object.fromEntries(Array.from({ length: 30_000 }, (_, i) => [`k${i}`, "v"]));
    const blocks = Array.from({ length: 200 }, () => "z".repeat(2_000));
    const { env, truncated } = buildHookEnvironment(invocation({ completedTask: task({ metadata, blocks }) }), extra);
    expect(truncated).toBe(true);
    expect(utf8Length(env.PI_TEAMS_HOOK_CONTEXT_JSON ?? "")).toBeLessThanOrEqual(MAX_ENV_VALUE_BYTES);
    expect(() => JSON.parse(env.PI_TEAMS_HOOK_CONTEXT_JSON ?? "")).not.toThrow();
  });

  it("given the document a chain built once, gives every hook the same environment, and shrinks a copy", () => {
    const metadata = { big: "b".repeat(150_000), small: "keep me" };
    const inv = invocation({ completedTask: task({ metadata }) });
    const context = prepareContext(inv);
    const first = buildHookEnvironment(inv, { ...extra, context });
    const second = buildHookEnvironment(inv, { ...extra, context });
    expect(first).toEqual(buildHookEnvironment(inv, extra));
    expect(second).toEqual(first);
    expect(first.contextJson).toBe(context.json);
    expect(context.doc.task?.metadata.big).toHaveLength(150_000); // the shared document is never shrunk in place
  });

  it("caps any other single value and never splits a character", () => {
    const subject = "\u{1F600}".repeat(60_000); // 240,000 UTF-8 bytes
    const { env, truncated } = buildHookEnvironment(invocation({ completedTask: task({ subject }) }), extra);
    const capped = env.PI_TEAMS_TASK_SUBJECT ?? "";
    expect(truncated).toBe(true);
    expect(utf8Length(capped)).toBeLessThanOrEqual(MAX_ENV_VALUE_BYTES);
    expect(capped.endsWith(ELLIPSIS)).toBe(true);
    expect(capped.isWellFormed()).toBe(true);
  });
});

describe("capBytes", () => {
  it.each([
    ["ascii", "a".repeat(500), 100],
    ["three-byte characters", "東".repeat(500), 100],
    ["pairs", "\u{1F600}".repeat(500), 101],
  ])("cuts %s to the longest prefix that fits", (_name, value, max) => {
    const out = capBytes(value, max);
    expect(utf8Length(out)).toBeLessThanOrEqual(max);
    expect(utf8Length(out)).toBeGreaterThan(max - 8);
    expect(out.isWellFormed()).toBe(true);
  });
});
