import { describe, expect, it } from "vitest";
import {
  buildContextDocument,
  ContextDocumentSchema,
  type HookInvocation,
} from "../../extensions/teams-hooks/contract/contract.js";
import { buildHookEnvironment, prepareContext } from "../../extensions/teams-hooks/contract/hook-run.js";
import {
  confidentialInvocation,
  projectionPathProblem,
  viewDocument,
  viewKey,
} from "../../extensions/teams-hooks/contract/projection.js";
import { checkHooksBlock, privacyOf, resolveSettings } from "../../extensions/teams-hooks/settings/team-settings.js";
import {
  GATE_NAME_PATTERN,
  PROJECTION_PATH_PATTERN,
  gateNameProblem,
  projectionFor,
} from "../../extensions/teams-hooks/settings/privacy.js";

const task = {
  id: "7",
  subject: "Rotate the payroll keys",
  description: "The old key is in vault path secret/payroll",
  owner: "alice",
  status: "completed" as const,
  blocks: ["9"],
  blockedBy: [],
  metadata: { files: ["a.ts"], ci: { url: "https://ci/1", token: "t" }, completedAt: "2026-12-02T10:00:00.000Z" },
  createdAt: "2026-12-02T09:00:00.000Z",
  updatedAt: "2026-12-02T10:00:00.000Z",
  notes: "a field the contract does not name",
};
const invocation: HookInvocation = {
  event: "task_completed",
  teamId: "alpha",
  teamDir: "/teams/alpha",
  taskListId: "alpha",
  style: "normal",
  memberName: "alice",
  timestamp: "2026-12-02T10:00:00.000Z",
  completedTask: task,
};
const full = buildContextDocument(invocation);

describe("viewDocument", () => {
  it("the full view is the v1 document itself, without the added keys", () => {
    expect(viewDocument(full, { projection: null, confidential: false })).toBe(full);
    expect(prepareContext(invocation).json).toBe(JSON.stringify(full));
  });

  it("a projection keeps every v1 key in order with its type; hidden fields hold their empty value", () => {
    const doc = viewDocument(full, {
      projection: ["task.id", "task.subject", "task.metadata.files", "task.metadata.ci.url"],
      confidential: false,
    });
    expect(JSON.stringify(doc)).toBe(
      JSON.stringify({
        version: 1,
        event: "task_completed",
        team: full.team,
        member: "alice",
        timestamp: "2026-12-02T10:00:00.000Z",
        task: {
          id: "7",
          subject: "Rotate the payroll keys",
          description: "",
          owner: null,
          status: "",
          blockedBy: [],
          blocks: [],
          metadata: { files: ["a.ts"], ci: { url: "https://ci/1" } },
          createdAt: "",
          updatedAt: "",
        },
        projection: ["task.id", "task.subject", "task.metadata.files", "task.metadata.ci.url"],
      }),
    );
    // A hook written for v1 still parses it.
    expect(ContextDocumentSchema.safeParse(doc).success).toBe(true);
  });

  it("an empty projection shows the identity fields only; `task` shows the whole task", () => {
    const none = viewDocument(full, { projection: [], confidential: false });
    expect(none.task).toEqual({
      id: "",
      subject: "",
      description: "",
      owner: null,
      status: "",
      blockedBy: [],
      blocks: [],
      metadata: {},
      createdAt: "",
      updatedAt: "",
    });
    expect(none.member).toBe("alice");
    expect(viewDocument(full, { projection: ["task"], confidential: false }).task).toEqual(full.task);
  });

  it("confidential: no description, no metadata, the subject is the id; identity and lifecycle kept", () => {
    const doc = viewDocument(full, { projection: null, confidential: true });
    expect(doc.task).toMatchObject({
      id: "7",
      subject: "7",
      description: "",
      owner: "alice",
      status: "completed",
      blocks: ["9"],
      metadata: {},
      createdAt: full.task?.createdAt,
    });
    expect(doc.confidential).toBe(true);
    expect(JSON.stringify(doc)).not.toMatch(/payroll|vault|a\.ts/);
    // Projected and confidential: confidentiality wins over a projection that names content.
    const both = viewDocument(full, {
      projection: ["task.description", "task.metadata.files", "task.subject"],
      confidential: true,
    });
    expect(both.task).toMatchObject({ id: "", subject: "", description: "", metadata: {} });
  });

  it("a metadata key named __proto__ stays data", () => {
    const meta = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as Record<string, unknown>;
    const doc = viewDocument(buildContextDocument({ ...invocation, completedTask: { ...task, metadata: meta } }), {
      projection: ["task.metadata.__proto__"],
      confidential: false,
    });
    expect(JSON.stringify(doc.task?.metadata)).toBe('{"__proto__":{"polluted":true}}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("one key per distinct view, whatever the order of its fields", () => {
    expect(viewKey({ projection: ["task.id", "task.subject"], confidential: false })).toBe(
      viewKey({ projection: ["task.subject", "task.id", "task.id"], confidential: false }),
    );
    expect(viewKey({ projection: null, confidential: false })).toBe("");
    expect(
      new Set([
        viewKey({ projection: null, confidential: true }),
        viewKey({ projection: [], confidential: false }),
        viewKey({ projection: [], confidential: true }),
      ]).size,
    ).toBe(3);
  });
});

describe("the idle notification an event came from", () => {
  const note = {
    type: "idle_notification" as const,
    from: "alice",
    timestamp: "2026-12-02T10:00:01.000Z",
    completedTaskId: "7",
    completedStatus: "failed" as const,
    failureReason: "3 tests failed",
    extra: "sent by a newer worker",
  };
  const withNote = buildContextDocument({ ...invocation, event: "task_failed", notification: note });

  it("is added after the task, whole, only when there is one", () => {
    // Before the work's story (additive, last of the event's own keys).
    const v1 = Object.keys(full).filter((k) => k !== "work");
    expect(Object.keys(withNote)).toEqual([...v1, "notification", "work"]);
    expect(withNote.notification).toEqual(note);
    expect(Object.hasOwn(full, "notification")).toBe(false);
    expect(ContextDocumentSchema.safeParse(withNote).success).toBe(true);
  });

  it("cuts a long failureReason to the description's limit", () => {
    const doc = buildContextDocument({ ...invocation, notification: { ...note, failureReason: "x".repeat(9_000) } });
    expect(doc.notification?.failureReason).toHaveLength(8_000);
  });

  it.each<[string, readonly string[] | null, boolean, unknown]>([
    ["a projection that does not name it: hidden", ["task.id"], false, undefined],
    ["a projection that names it: whole", ["task.id", "notification"], false, note],
    [
      "confidential: its lifecycle fields only, no failureReason",
      null,
      true,
      {
        type: "idle_notification",
        from: "alice",
        timestamp: note.timestamp,
        completedTaskId: "7",
        completedStatus: "failed",
      },
    ],
    ["confidential and not projected: hidden", ["task.id"], true, undefined],
  ])("%s", (_name, projection, confidential, shown) => {
    expect(viewDocument(withNote, { projection, confidential }).notification).toEqual(shown);
  });

  it("a confidential team's log keeps its lifecycle fields only", () => {
    expect(confidentialInvocation({ ...invocation, notification: note }).notification).toEqual({
      type: "idle_notification",
      from: "alice",
      timestamp: note.timestamp,
      completedTaskId: "7",
      completedStatus: "failed",
    });
  });
});

describe("the environment of a projected hook", () => {
  it("carries the task variables of the fields shown only, and the projected document", () => {
    const context = prepareContext(invocation, { projection: ["task.id"], confidential: false });
    const { env } = buildHookEnvironment(invocation, { runId: "r", contextFile: "/tmp/c.json", base: {}, context });
    expect(env.PI_TEAMS_TASK_ID).toBe("7");
    expect(env.PI_TEAMS_TASK_SUBJECT).toBeUndefined();
    expect(env.PI_TEAMS_TASK_STATUS).toBeUndefined();
    expect(env.PI_TEAMS_TASK_OWNER).toBeUndefined();
    expect(env.PI_TEAMS_MEMBER).toBe("alice");
    expect(env.PI_TEAMS_HOOK_CONTEXT_JSON).toBe(context.json);
    expect(Object.values(env).join("\n")).not.toMatch(/payroll|vault/);
  });
});

describe("confidentialInvocation (what a confidential team's logs keep)", () => {
  it("keeps identity and lifecycle, drops description, metadata and fields the contract does not name", () => {
    expect(confidentialInvocation(invocation).completedTask).toEqual({
      id: "7",
      subject: "7",
      description: "",
      owner: "alice",
      status: "completed",
      blocks: ["9"],
      blockedBy: [],
      createdAt: "2026-12-02T09:00:00.000Z",
      updatedAt: "2026-12-02T10:00:00.000Z",
    });
  });
});

describe("hooks.projection, hooks.confidential, hooks.redactEnv in the hooks block", () => {
  const ci = { name: "ci", events: ["task_completed"], url: "https://ci.example/gate" };

  it.each([
    ["identity fields", "team.id"],
    ["the whole task", "task"],
    ["a task field", "task.subject"],
    ["metadata, deep", "task.metadata.ci.url"],
  ])("a path naming %s is a field", (_name, path) => {
    expect(projectionPathProblem(path)).toBeNull();
  });

  it.each([
    ["task.title", /names no field of the context document/],
    ["description", /names no field/],
    ["task.subject.text", /task\.subject has no fields of its own/],
    ["task..metadata", /not a dotted path/],
  ])("%s names no field: a config error naming it", (path, message) => {
    expect(projectionPathProblem(path)).toMatch(message);
  });

  it("refuses the block whole, naming every bad path, gate name and handler", () => {
    const check = checkHooksBlock(
      {
        handlers: [ci],
        projection: {
          "http:ci": ["task.id", "task.title"],
          "http:cd": ["task.id"],
          "on_task_completed.sh": [],
          "on_idle.d/10-x.sh": ["member"],
        },
        redactEnv: ["OK_NAME", "not a name"],
      },
      "/t/config.json",
    );
    expect(check.ok).toBe(false);
    if (check.ok) return;
    const text = check.problems.join("\n");
    expect(text).toMatch(/hooks\.projection\.http:ci\.1: "task\.title" names no field/);
    expect(text).toMatch(/hooks\.projection\.http:cd: names no handler of hooks\.handlers \(http:ci\)/);
    expect(text).toMatch(
      /hooks\.projection\.on_task_completed\.sh: is not a gate name: the v1 file is named on_task_completed/,
    );
    expect(text).toMatch(/hooks\.redactEnv\.1: must be an environment variable name/);
    expect(text).not.toMatch(/on_idle\.d/);
    expect(gateNameProblem("on_task_completed.d/10-lint.sh")).toBeNull();
  });

  it("is in the settings with its origin, and defaults to nothing", () => {
    const none = resolveSettings({ hooks: {}, noBlock: null, file: "/t/config.json", env: {} });
    expect(privacyOf(none)).toEqual({ projection: {}, confidential: false, redactEnv: [] });
    expect(none.confidential.origin).toBe("default");
    const set = resolveSettings({
      hooks: {
        handlers: [ci],
        projection: { "http:ci": ["task.id"] },
        confidential: "true",
        redactEnv: ["DEPLOY_TOKEN"],
      },
      noBlock: null,
      file: "/t/config.json",
      env: {},
    });
    expect(set.projection).toEqual({
      value: { "http:ci": ["task.id"] },
      source: "config",
      origin: "config.json hooks.projection",
    });
    expect(set.confidential).toMatchObject({ value: true, origin: "config.json hooks.confidential" });
    expect(set.redactEnv).toMatchObject({ value: ["DEPLOY_TOKEN"], origin: "config.json hooks.redactEnv" });
    expect(projectionFor(set.projection.value, "http:ci")).toEqual(["task.id"]);
    expect(projectionFor(set.projection.value, "on_task_completed")).toBeNull();
  });
});

describe("the documented config schema's patterns agree with the checks", () => {
  it.each([
    "task",
    "task.id",
    "task.updatedAt",
    "task.metadata",
    "task.metadata.ci.url",
    "team",
    "team.style",
    "member",
    "version",
    "task.title",
    "task.subject.text",
    "task..metadata",
    "task.metadata.",
    "team.name",
    "description",
    "",
    "notification",
    "notification.failureReason",
  ])("path %j", (path) => {
    expect(PROJECTION_PATH_PATTERN.test(path)).toBe(projectionPathProblem(path) === null);
  });

  it.each([
    "on_task_completed",
    "on_task_failed",
    "on_idle",
    "on_task_started",
    "on_task_started.d/10-claim.sh",
    "on_task_completed.d/10-lint.sh",
    "on_idle.d/x",
    "http:ci",
    "binding:review",
    "binding:",
    "on_task_completed.sh",
    "on_idle.d/",
    "http:",
    "on_teardown",
    "ci",
  ])("gate name %j", (name) => {
    expect(GATE_NAME_PATTERN.test(name)).toBe(gateNameProblem(name) === null);
  });
});
