/**
 * The JSON Schemas in docs/schema/ are generated from the zod schemas (cli-schema.ts) and committed.
 * A file snapshot holds them together: with CI=true a difference fails; `npx vitest run -u` rewrites
 * the files after an intended change to a schema (review the diff: it is a contract change).
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SCHEMA_NAMES, schemaJson } from "../../extensions/teams-hooks/cli/schema.js";
import { buildContextDocument, type HookInvocation } from "../../extensions/teams-hooks/contract/contract.js";

const DOCS = path.resolve("docs/schema");

describe("docs/schema", () => {
  it.each(SCHEMA_NAMES)("%s.schema.json is what z.toJSONSchema generates", async (name) => {
    await expect(schemaJson(name)).toMatchFileSnapshot(`../../docs/schema/${name}.schema.json`);
  });

  it("holds no schema that is no longer generated", () => {
    const files = fs.readdirSync(DOCS).filter((f) => f.endsWith(".schema.json"));
    expect(files.sort()).toEqual(SCHEMA_NAMES.map((n) => `${n}.schema.json`).sort());
  });
});

describe("the context schema", () => {
  const schema = JSON.parse(schemaJson("context")) as {
    required: string[];
    properties: Record<
      string,
      { anyOf?: Array<{ properties?: Record<string, unknown> }>; properties?: Record<string, unknown> }
    >;
  };
  const invocation: HookInvocation = {
    event: "task_completed",
    teamId: "alpha",
    teamDir: "/teams/alpha",
    taskListId: "alpha",
    style: "normal",
    memberName: "alice",
    timestamp: "2026-12-02T10:00:00.000Z",
    completedTask: {
      id: "7",
      subject: "s",
      description: "d",
      status: "completed",
      blocks: [],
      blockedBy: [],
      createdAt: "2026-12-02T09:00:00.000Z",
      updatedAt: "2026-12-02T10:00:00.000Z",
    },
  };
  const doc = buildContextDocument(invocation);

  it("requires every key of the document, in contract order; the notification, the work and the two keys a shown document may add are optional", () => {
    const v1 = Object.keys(doc).filter((k) => k !== "work");
    expect(Object.keys(doc)).toEqual([...v1, "work"]);
    expect(Object.keys(schema.properties)).toEqual([...v1, "notification", "work", "projection", "confidential"]);
    expect(schema.required).toEqual(v1);
  });

  it("names every key of the task, in contract order", () => {
    const taskSchema = schema.properties.task?.anyOf?.find((s) => s.properties);
    expect(Object.keys(taskSchema?.properties ?? {})).toEqual(Object.keys(doc.task ?? {}));
  });

  it("lets a v1 reader accept fields a later v1 adds (no additionalProperties: false)", () => {
    expect(schemaJson("context")).not.toContain('"additionalProperties": false');
  });
});
