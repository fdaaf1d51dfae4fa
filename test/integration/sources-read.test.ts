/**
 * How the leader reads a task file (sources.ts lookAtTask): one positioned read sized from fstat, into
 * a shared buffer for small files and a buffer of their own for large ones. Checked with real files:
 * small and large, multi-byte text across the buffer's size, and a file rewritten in place.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { fileTempDir } from "../helpers/temp-team.js";
import { TeamSources } from "../../extensions/teams-hooks/leader/sources.js";
import { taskJson } from "../helpers/leader-rig.js";

const root = fileTempDir("sources-read-");

function sources(): { sources: TeamSources; file: (id: string) => string } {
  const teamDir = mkdtempSync(path.join(root, "team-"));
  const dir = path.join(teamDir, "tasks", "t");
  mkdirSync(dir, { recursive: true });
  return {
    sources: new TeamSources({ teamId: "t", teamDir, taskListId: "t", leadName: "lead", style: "normal" }),
    file: (id) => path.join(dir, `${id}.json`),
  };
}

describe("reading a task file", () => {
  it.each([
    ["small", 50],
    ["just under the shared buffer (64 KiB)", 32 * 1024 - 200],
    ["larger than the shared buffer", 200 * 1024],
  ])("%s, with two-byte characters, reads whole and exact", (_name, chars) => {
    const { sources: s, file } = sources();
    const description = "é".repeat(chars); // two bytes each in UTF-8
    writeFileSync(file("1"), taskJson({ id: "1", description }));
    const look = s.lookAtTask(file("1"));
    expect(look.kind).toBe("task");
    if (look.kind === "task") expect(look.task.description).toBe(description);
  });

  it("a file rewritten in place, shorter then longer, is read as it is now", () => {
    const { sources: s, file } = sources();
    writeFileSync(file("2"), taskJson({ id: "2", description: "x".repeat(5000) }));
    expect(s.lookAtTask(file("2"))).toMatchObject({ kind: "task", task: { description: "x".repeat(5000) } });
    writeFileSync(file("2"), taskJson({ id: "2", description: "short" }));
    expect(s.lookAtTask(file("2"))).toMatchObject({ kind: "task", task: { description: "short" } });
    writeFileSync(file("2"), taskJson({ id: "2", description: "y".repeat(90_000) }));
    expect(s.lookAtTask(file("2"))).toMatchObject({ kind: "task", task: { description: "y".repeat(90_000) } });
  });
});

describe("a task whose id is not a safe file name", () => {
  // "a/b" and "a.b" both map onto a-b.json: a file claiming such an id is no task of its own.
  it.each(["a/b", "a.b"])("%j in a-b.json is refused, naming the file and the field", (id) => {
    const { sources: s, file } = sources();
    writeFileSync(file("a-b"), taskJson({ id, status: "completed" }));
    const look = s.lookAtTask(file("a-b"));
    expect(look).toMatchObject({
      kind: "problem",
      message: `${file("a-b")}: id: ${JSON.stringify(id)} is not a safe name (only A-Z, a-z, 0-9, _ and - are: it would share the file of "a-b") — skipped until it changes`,
    });
  });
});
