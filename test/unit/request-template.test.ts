/**
 * A handler's body template (contract/request-template.ts): which placeholders exist, how each is
 * filled from the document the handler is shown and from its run, that values are escaped and never
 * read twice, that secrets are read from the environment given and reported, and that the settings
 * refuse an unknown placeholder naming the handler and the placeholder.
 */
import { describe, expect, it } from "vitest";
import { prepareContext } from "../../extensions/teams-hooks/contract/hook-run.js";
import {
  renderTemplate,
  templateProblems,
  templateSecretVariables,
} from "../../extensions/teams-hooks/contract/request-template.js";
import { checkHooksBlock } from "../../extensions/teams-hooks/settings/team-settings.js";
import { HandlerSchema } from "../../extensions/teams-hooks/settings/handlers.js";
import { handlerDefinitionText } from "../../extensions/teams-hooks/trust/trust.js";
import { makeInvocation } from "../helpers/invocation.js";

const doc = prepareContext(
  makeInvocation({
    task: { subject: 'Fix "quotes" and\nnewlines {{secret.CI_TOKEN}}', metadata: { ci: { branch: "feat/x" }, n: 3 } },
  }),
).doc;
const values = {
  doc,
  runId: "r-1",
  eventKey: "task_completed:3:2025-01-15T10:42:07.123Z",
  attempt: 2,
  env: { CI_TOKEN: "tok-123", EMPTY: "" },
};

describe("filling a body template", () => {
  it.each<[string, string, string]>([
    ["the run id", "{{runId}}", "r-1"],
    ["the event key", "{{ eventKey }}", "task_completed:3:2025-01-15T10:42:07.123Z"],
    ["the attempt, as written", "{{attempt}}", "2"],
    ["the event", "{{event}}", "task_completed"],
    ["the team's id", "{{team.id}}", "demo"],
    ["the member", "{{member}}", "alice"],
    ["the task's id inside other text", "task #{{task.id}} of {{team.id}}", "task #3 of demo"],
    ["a metadata key, deep", "{{task.metadata.ci.branch}}", "feat/x"],
    ["a number in metadata", "{{task.metadata.n}}", "3"],
    ["a list as its JSON", "{{task.blockedBy}}", '["1","2"]'],
    ["an object as its JSON", "{{task.metadata.ci}}", '{"branch":"feat/x"}'],
    ["a metadata key that is not there: nothing", "[{{task.metadata.missing}}]", "[]"],
    ["a secret", "Bearer {{secret.CI_TOKEN}}", "Bearer tok-123"],
  ])("%s", (_name, template, expected) => {
    expect(JSON.parse(renderTemplate({ v: template }, values).json)).toEqual({ v: expected });
  });

  it("escapes what a value holds, and never reads a value for placeholders again", () => {
    const rendered = renderTemplate({ subject: "{{task.subject}}" }, values);
    expect(JSON.parse(rendered.json)).toEqual({ subject: 'Fix "quotes" and\nnewlines {{secret.CI_TOKEN}}' });
    expect(rendered.json).toContain('\\"quotes\\" and\\nnewlines');
    expect(rendered.secrets).toEqual([]);
  });

  it("keeps the template's shape: nested objects, lists, numbers, booleans, null, key order and a __proto__ key", () => {
    const template = JSON.parse(
      '{"z":1,"a":{"list":["{{task.id}}",true,null],"__proto__":"{{member}}"},"b":false}',
    ) as Record<string, unknown>;
    const rendered = renderTemplate(template, values);
    expect(rendered.json).toBe('{"z":1,"a":{"list":["3",true,null],"__proto__":"alice"},"b":false}');
  });

  it("reports the secrets it holds, and the variables not set (or empty) as missing, their placeholders empty", () => {
    const rendered = renderTemplate(
      { token: "{{secret.CI_TOKEN}}", other: "x{{secret.EMPTY}}y", gone: "{{secret.NOT_SET}}" },
      values,
    );
    expect(JSON.parse(rendered.json)).toEqual({ token: "tok-123", other: "xy", gone: "" });
    expect(rendered.secrets).toEqual(["tok-123"]);
    expect(rendered.missingSecrets).toEqual(["EMPTY", "NOT_SET"]);
  });

  it("shows what the handler's view shows: an idle event has no task, a confidential view no content", () => {
    const idle = prepareContext(makeInvocation({ event: "idle", task: null })).doc;
    expect(
      JSON.parse(
        renderTemplate({ t: "#{{task.id}} {{task.subject}}", m: "{{member}}" }, { ...values, doc: idle }).json,
      ),
    ).toEqual({ t: "# ", m: "alice" });
    const confidential = prepareContext(makeInvocation(), { projection: null, confidential: true }).doc;
    expect(
      JSON.parse(
        renderTemplate({ s: "{{task.subject}}", d: "{{task.description}}" }, { ...values, doc: confidential }).json,
      ),
    ).toEqual({ s: "3", d: "" });
    const projected = prepareContext(makeInvocation(), { projection: ["task.id"], confidential: false }).doc;
    expect(
      JSON.parse(renderTemplate({ s: "{{task.subject}}", i: "{{task.id}}" }, { ...values, doc: projected }).json),
    ).toEqual({ s: "", i: "3" });
  });
});

describe("checking a body template", () => {
  it.each<[string, unknown, string]>([
    [
      "an unknown name",
      { a: "{{task.titel}}" },
      'a: handler "ci": {{task.titel}} names no field of the context document',
    ],
    [
      "a misspelt run value",
      { a: ["x", "{{runid}}"] },
      'a.1: handler "ci": {{runid}} names no field of the context document (task.id, task.subject, task.description, task.owner, task.status, task.blockedBy, task.blocks, task.metadata, task.createdAt, task.updatedAt, task.metadata.<key>, notification, work, work.<field>, or an identity field: version, event, team, team.id, team.dir, team.taskListId, team.style, member, timestamp); the other placeholders are runId, eventKey, attempt and secret.<VARIABLE>',
    ],
    ["an empty placeholder", { a: "{{ }}" }, 'a: handler "ci": {{ }} is empty'],
    [
      "a secret without a variable name",
      { a: "{{secret.1X}}" },
      'a: handler "ci": {{secret.1X}} needs an environment variable name',
    ],
    [
      "a placeholder in a key",
      { "{{task.id}}": "x" },
      'handler "ci": {{task.id}} is in a key; placeholders go in values only',
    ],
  ])("refuses %s, naming the handler and the placeholder", (_name, template, expected) => {
    const problems = templateProblems(template, "ci").map(
      (p) => `${p.path.join(".")}${p.path.length ? ": " : ""}${p.message}`,
    );
    expect(problems.join("\n")).toContain(expected);
  });

  it("accepts every run value, secrets and fields of the document", () => {
    const template = {
      a: "{{runId}} {{eventKey}} {{attempt}} {{event}} {{member}} {{timestamp}} {{version}}",
      b: {
        c: ["{{team.id}}", "{{task}}", "{{task.metadata.x.y}}", "{{notification}}", "{{secret.GITLAB_TRIGGER_TOKEN}}"],
      },
    };
    expect(templateProblems(template, "ci")).toEqual([]);
    expect(templateSecretVariables(template)).toEqual(["GITLAB_TRIGGER_TOKEN"]);
  });

  it("config.json: an unknown placeholder refuses the block, naming the file, the field, the handler and the placeholder", () => {
    const check = checkHooksBlock(
      {
        handlers: [
          {
            name: "gitlab",
            events: ["task_completed"],
            url: "https://gitlab.example/api",
            body: { variables: { SUBJECT: "{{task.title}}" } },
          },
        ],
      },
      "/t/config.json",
    );
    expect(check.ok).toBe(false);
    if (!check.ok)
      expect(check.problems.join("\n")).toMatch(
        /^\/t\/config\.json: hooks\.handlers\.0\.body\.variables\.SUBJECT: handler "gitlab": \{\{task\.title\}\} names no field of the context document/m,
      );
  });

  it('config.json: answer "held" on an event that cannot wait is refused, naming the events', () => {
    const check = checkHooksBlock(
      { handlers: [{ name: "ci", events: ["task_completed", "idle"], url: "https://ci.example/x", answer: "held" }] },
      "/t/config.json",
    );
    expect(check.ok).toBe(false);
    if (!check.ok)
      expect(check.problems.join("\n")).toMatch(
        /hooks\.handlers\.0\.answer: "held" holds a gate until a decision comes back, and idle cannot wait/,
      );
  });

  it.each([
    ["a method that carries no body", { method: "GET" }, /hooks\.handlers\.0\.method/],
    ["a body that is not an object", { body: ["a"] }, /hooks\.handlers\.0\.body/],
    ["another answer", { answer: "async" }, /hooks\.handlers\.0\.answer/],
  ])("config.json: refuses %s", (_name, over, problem) => {
    const check = checkHooksBlock(
      { handlers: [{ name: "ci", events: ["task_completed"], url: "https://ci.example/x", ...over }] },
      "/t/config.json",
    );
    expect(check.ok ? "" : check.problems.join("\n")).toMatch(problem);
  });
});

describe("a handler's trust covers what it sends", () => {
  const base = { name: "ci", events: ["task_completed"], url: "https://ci.example/x" };
  const text = (over: Record<string, unknown>): string =>
    handlerDefinitionText(HandlerSchema.parse({ ...base, ...over }));

  it("a handler without method, body or answer hashes as before they existed; POST and verdict said aloud change nothing", () => {
    const handler = { events: ["task_completed"], name: "ci", timeoutMs: 10_000, url: "https://ci.example/x" };
    const before = `${JSON.stringify(handler, null, 2)}\n`;
    expect(text({})).toBe(before);
    expect(text({ method: "POST", answer: "verdict" })).toBe(before);
  });

  it("a method, a body (any key order) and answer held are in the definition; a change of any of them changes it", () => {
    const body = { event_type: "pi-gate", client_payload: { run: "{{runId}}", task: "{{task.id}}" } };
    const held = text({ body, answer: "held" });
    expect(held).toContain('"answer": "held"');
    expect(held).toContain('"client_payload": {');
    expect(
      text({
        answer: "held",
        body: { client_payload: { task: "{{task.id}}", run: "{{runId}}" }, event_type: "pi-gate" },
      }),
    ).toBe(held);
    expect(text({ body: { ...body, event_type: "other" }, answer: "held" })).not.toBe(held);
    expect(text({ body })).not.toBe(held);
    expect(text({ body, answer: "held", method: "PUT" })).not.toBe(held);
  });
});
