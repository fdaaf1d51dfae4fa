import { describe, expect, it } from "vitest";
import {
  applyMergePatch,
  filterPatch,
  nestsDeeperThan,
  neverWritable,
  patchTask,
  WritableFieldsSchema,
  withoutNeverWritable,
} from "../../extensions/teams-hooks/contract/merge-patch.js";
import { readHttpVerdict, readVerdict, verdictOutcome } from "../../extensions/teams-hooks/contract/verdict.js";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";

describe("applyMergePatch (RFC 7396)", () => {
  // The examples of RFC 7396, appendix A, plus the nested case of its section 3.
  it.each([
    [{ a: "b" }, { a: "c" }, { a: "c" }],
    [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
    [{ a: "b" }, { a: null }, {}],
    [{ a: "b", b: "c" }, { a: null }, { b: "c" }],
    [{ a: ["b"] }, { a: "c" }, { a: "c" }],
    [{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
    [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
    [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
    [
      ["a", "b"],
      ["c", "d"],
      ["c", "d"],
    ],
    [{ a: "b" }, ["c"], ["c"]],
    [{ a: "foo" }, null, null],
    [{ a: "foo" }, "bar", "bar"],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: "b", c: null }, { a: "b" }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
    [
      { title: "Goodbye!", author: { givenName: "John", familyName: "Doe" }, tags: ["example", "sample"] },
      { title: "Hello!", phoneNumber: "+01-123-456-7890", author: { familyName: null }, tags: ["example"] },
      { title: "Hello!", author: { givenName: "John" }, tags: ["example"], phoneNumber: "+01-123-456-7890" },
    ],
  ])("%j + %j = %j", (target, patch, expected) => {
    expect(applyMergePatch(target, patch)).toEqual(expected);
  });

  it("changes neither the target nor the patch", () => {
    const target = { a: { b: 1 } };
    const patch = { a: { c: 2 } };
    applyMergePatch(target, patch);
    expect(target).toEqual({ a: { b: 1 } });
    expect(patch).toEqual({ a: { c: 2 } });
  });

  it("a __proto__ key is an own key, never the prototype", () => {
    const patch = JSON.parse('{"__proto__":{"polluted":true}}') as Record<string, unknown>;
    const out = applyMergePatch({}, patch) as Record<string, unknown>;
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});

describe("filterPatch", () => {
  it.each([
    [
      "the default: metadata keys",
      { metadata: { labels: ["a"], note: "x" } },
      null,
      { metadata: { labels: ["a"], note: "x" } },
      ["metadata.labels", "metadata.note"],
      [],
    ],
    [
      "the default: no description",
      { description: "new", metadata: { a: 1 } },
      null,
      { metadata: { a: 1 } },
      ["metadata.a"],
      ["description"],
    ],
    [
      "the gate's own keys never",
      {
        metadata: {
          qualityGateStatus: "passed",
          reopenedByQualityGateCount: 0,
          qualityGateStartDeniedAt: "x",
          taskApi: {},
          ok: 1,
        },
      },
      null,
      { metadata: { ok: 1 } },
      ["metadata.ok"],
      [
        "metadata.qualityGateStatus",
        "metadata.reopenedByQualityGateCount",
        "metadata.qualityGateStartDeniedAt",
        "metadata.taskApi",
      ],
    ],
    [
      "identity and workflow never",
      { id: "9", status: "completed", owner: "eve", blocks: [], blockedBy: ["1"] },
      ["id", "status", "owner", "blocks", "blockedBy"],
      {},
      [],
      ["id", "status", "owner", "blocks", "blockedBy"],
    ],
    [
      "configured: description, not metadata.x",
      { description: "d", metadata: { x: 1, labels: ["l"] } },
      ["metadata.labels", "description"],
      { description: "d", metadata: { labels: ["l"] } },
      ["description", "metadata.labels"],
      ["metadata.x"],
    ],
    [
      "configured gate keys stay out",
      { metadata: { qualityGateStatus: "passed" } },
      ["metadata.qualityGateStatus", "metadata"],
      {},
      [],
      ["metadata.qualityGateStatus"],
    ],
    ["metadata: null would delete the gate's keys", { metadata: null }, null, {}, [], ["metadata"]],
    ["metadata: a string would replace them", { metadata: "x" }, null, {}, [], ["metadata"]],
    [
      "a deeper writable field",
      { metadata: { ci: { url: "u", secret: "s" } } },
      ["metadata.ci.url"],
      { metadata: { ci: { url: "u" } } },
      ["metadata.ci.url"],
      ["metadata.ci.secret"],
    ],
    ["a scalar on the way to a field", { metadata: { ci: "x" } }, ["metadata.ci.url"], {}, [], ["metadata.ci"]],
    [
      "null deletes within the fields",
      { metadata: { old: null } },
      null,
      { metadata: { old: null } },
      ["metadata.old"],
      [],
    ],
    ["none writable", { metadata: { a: 1 } }, [], {}, [], ["metadata"]],
  ])("%s", (_name, patch, fields, kept, applied, rejected) => {
    expect(filterPatch(patch as Record<string, unknown>, fields)).toEqual({ patch: kept, applied, rejected });
  });

  it("withoutNeverWritable keeps everything but what may never be written", () => {
    expect(withoutNeverWritable({ description: "d", status: "pending", metadata: { qualityGateX: 1, y: 2 } })).toEqual({
      description: "d",
      metadata: { y: 2 },
    });
  });

  it.each([
    [["status"], true],
    [["metadata", "qualityGateEventKey"], true],
    [["metadata", "taskApi"], true],
    [["metadata", "completedAt"], true],
    [["metadata", "abortedAt"], true],
    [["metadata", "abortedBy"], true],
    [["metadata", "claimedAt"], true],
    [["metadata", "unassignedAt"], true],
    [["updatedAt"], true],
    [["createdAt"], true],
    [["metadata", "__proto__"], true],
    [["metadata", "completedAtLocal"], false],
    [["metadata", "labels"], false],
    [["description"], false],
  ])("neverWritable(%j) is %s", (segments, expected) => {
    expect(neverWritable(segments)).toBe(expected);
  });

  it("hooks.writableFields: dotted paths, `.*` means the same as without it", () => {
    expect(WritableFieldsSchema.parse(["metadata.*", " description "])).toEqual(["metadata", "description"]);
    expect(WritableFieldsSchema.safeParse(["metadata..x"]).success).toBe(false);
    expect(WritableFieldsSchema.safeParse(["a b"]).success).toBe(false);
  });
});

describe("patchTask", () => {
  const task: Task = {
    id: "1",
    subject: "s",
    description: "d",
    status: "completed",
    blocks: [],
    blockedBy: [],
    createdAt: "t",
    updatedAt: "t",
    metadata: { a: 1 },
    extra: "kept",
  };

  it("lays the patch over the task, unknown fields kept", () => {
    expect(patchTask(task, { metadata: { b: 2 } })).toEqual({ ok: true, task: { ...task, metadata: { a: 1, b: 2 } } });
  });

  it("a deleted top-level key is there as undefined (what removes it in a locked rewrite)", () => {
    const out = patchTask(task, { extra: null });
    expect(out.ok && Object.hasOwn(out.task, "extra") && out.task.extra === undefined).toBe(true);
  });

  it("a patch that leaves no task says why", () => {
    expect(patchTask(task, { description: 5 })).toMatchObject({
      ok: false,
      problem: expect.stringContaining("description"),
    });
    expect(patchTask(task, { subject: null })).toMatchObject({
      ok: false,
      problem: expect.stringContaining("subject"),
    });
  });
});

describe("patch verdicts", () => {
  it.each([
    ["lower case", '{"decision":"patch","patch":{"metadata":{"a":1}}}'],
    ["upper case", '{"decision":"PATCH","patch":{"metadata":{"a":1}}}'],
  ])("%s: a valid patch passes", (_name, text) => {
    const read = readVerdict({ fileText: text, stdout: "" });
    expect(read).toEqual({
      kind: "verdict",
      source: "file",
      verdict: { decision: "patch", patch: { metadata: { a: 1 } } },
    });
    if (read.kind === "verdict") expect(verdictOutcome(read.verdict, true).outcome).toBe("passed");
  });

  it.each([
    ["no patch", '{"decision":"patch"}', "patch: a patch verdict needs a patch"],
    ["an array", '{"decision":"patch","patch":[1]}', "patch: must be a JSON object, got an array"],
    ["null", '{"decision":"patch","patch":null}', "patch: must be a JSON object, got null"],
    ["a string", '{"decision":"patch","patch":"x"}', "patch: must be a JSON object, got string"],
    [
      "too big",
      `{"decision":"patch","patch":{"metadata":{"a":"${"x".repeat(17_000)}"}}}`,
      "patch: must be at most 16384 bytes",
    ],
    [
      "too deep",
      `{"decision":"patch","patch":${'{"a":'.repeat(40)}1${"}".repeat(40)}}`,
      "patch: must nest at most 32 levels",
    ],
  ])("%s: an invalid verdict", (_name, text, problem) => {
    const read = readVerdict({ fileText: text, stdout: "" });
    expect(read.kind).toBe("invalid");
    expect(read.kind === "invalid" && read.problem).toContain(problem);
  });

  it("a patch with another decision means nothing and is dropped", () => {
    expect(readVerdict({ fileText: '{"decision":"allow","patch":5}', stdout: "" })).toEqual({
      kind: "verdict",
      source: "file",
      verdict: { decision: "allow" },
    });
  });

  it("an HTTP handler's answer may patch", () => {
    expect(readHttpVerdict('{"decision":"Patch","patch":{"metadata":{"ci":"green"}}}')).toEqual({
      kind: "verdict",
      source: "http",
      verdict: { decision: "patch", patch: { metadata: { ci: "green" } } },
    });
  });

  it("nestsDeeperThan counts objects and arrays", () => {
    expect(nestsDeeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
    expect(nestsDeeperThan(5, 0)).toBe(false);
  });
});
