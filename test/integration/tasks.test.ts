import { mkdir, readFile, readdir, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";
import { writeJsonAtomic } from "../../extensions/teams-hooks/team/json-file.js";
import {
  createTask,
  listTaskFiles,
  readAllTasks,
  readTask,
  updateTask,
} from "../../extensions/teams-hooks/team/tasks.js";
import { makeTask, tempTeams } from "../helpers/temp-team.js";
import { compileModules, runWorker, type CompiledModules } from "../fixtures/workers/modules.js";

let modules: CompiledModules;
const team = tempTeams();

beforeAll(async () => {
  modules = await compileModules(["team/tasks"]);
});
afterAll(async () => {
  await modules.cleanup();
});

const newTask = (id: string): Task => makeTask({ id, subject: `new ${id}` });

describe("listTaskFiles", () => {
  it("lists <id>.json only, numeric ids in numeric order, and ignores temp, lock and watermark files", async () => {
    const t = await team({
      tasks: [makeTask({ id: "10" }), makeTask({ id: "2" }), makeTask({ id: "alpha" })],
      highWatermark: 10,
    });
    for (const name of ["2.json.lock", "2.json.tmp.123.456", ".highwatermark.lock", "notes.txt", "a b.json"]) {
      await writeFile(path.join(t.tasksDir, name), "{}");
    }
    expect((await listTaskFiles(t.teamDir, t.taskListId)).map((entry) => entry.id)).toEqual(["2", "10", "alpha"]);
  });

  it("is empty when the task list folder does not exist", async () => {
    const t = await team();
    expect(await listTaskFiles(t.teamDir, "no-such-list")).toEqual([]);
  });
});

describe("readTask", () => {
  it.each([
    ["bad JSON", "{ not json", "invalid_json", undefined, /invalid JSON/],
    ["empty file", "", "invalid_json", undefined, /empty file/],
    [
      "a missing field",
      JSON.stringify({ ...makeTask({ id: "3" }), subject: undefined }),
      "invalid",
      "subject",
      /: subject: missing, expected string/,
    ],
    [
      "a wrong enum value",
      JSON.stringify(makeTask({ id: "3", status: "done" as Task["status"] })),
      "invalid",
      "status",
      /: status: expected "pending" \| "in_progress" \| "completed", got "done"/,
    ],
    [
      "a mistyped array entry",
      JSON.stringify({ ...makeTask({ id: "3" }), blocks: ["1", 2] }),
      "invalid",
      "blocks[1]",
      /: blocks\[1\]: expected string, got 2/,
    ],
    ["not an object", "[]", "invalid", undefined, /: expected object, got an array/],
  ])("reports %s as a problem naming the file and the field", async (_name, raw, kind, field, message) => {
    const t = await team({ tasks: [{ id: "3", raw }] });
    const result = await readTask(t.taskFile("3"));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problem).toMatchObject({ kind, file: t.taskFile("3") });
    expect(result.problem.field).toBe(field);
    expect(result.problem.message).toContain(t.taskFile("3"));
    expect(result.problem.message).toMatch(message);
  });

  it("reads a valid task with its unknown fields", async () => {
    const t = await team({ tasks: [makeTask({ id: "1", extra: { nested: true } })] });
    const result = await readTask(t.taskFile("1"));
    expect(result.ok && result.value).toMatchObject({ id: "1", extra: { nested: true } });
  });

  it("readAllTasks skips files that are not tasks and reports each", async () => {
    const t = await team({ tasks: [makeTask({ id: "1" }), { id: "2", raw: "{" }, makeTask({ id: "3" })] });
    const { tasks, problems } = await readAllTasks(t.teamDir, t.taskListId);
    expect(tasks.map((task) => task.id)).toEqual(["1", "3"]);
    expect(problems).toHaveLength(1);
    expect(problems[0]?.file).toBe(t.taskFile("2"));
  });
});

describe("updateTask", () => {
  it("keeps unknown fields, key order and every field the mutation did not change", async () => {
    const original = {
      zeta: 1,
      ...makeTask({ id: "1", owner: "w1", metadata: { keep: "me" } }),
      custom: { a: [1, 2] },
    };
    const t = await team({ tasks: [original] });
    const result = await updateTask(t.teamDir, t.taskListId, "1", (task) => ({ ...task, status: "completed" }));
    expect(result).toMatchObject({ ok: true, written: true });
    const text = await readFile(t.taskFile("1"), "utf8");
    expect(text.endsWith("}\n")).toBe(true);
    const written = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(written)).toEqual(Object.keys(original));
    expect(written).toEqual({ ...original, status: "completed" });
  });

  it("removes a field set to undefined, and sets nothing implicitly", async () => {
    const t = await team({ tasks: [makeTask({ id: "1", owner: "w1" })] });
    await updateTask(t.teamDir, t.taskListId, "1", (task) => ({ ...task, owner: undefined }));
    const written = JSON.parse(await readFile(t.taskFile("1"), "utf8")) as Record<string, unknown>;
    expect(written).not.toHaveProperty("owner");
    expect(written.updatedAt).toBe(makeTask().updatedAt);
  });

  it("writes nothing when the mutation returns undefined", async () => {
    const t = await team({ tasks: [makeTask({ id: "1" })] });
    const before = await stat(t.taskFile("1"));
    const result = await updateTask(t.teamDir, t.taskListId, "1", () => undefined);
    expect(result).toMatchObject({ ok: true, written: false, task: { id: "1" } });
    expect((await stat(t.taskFile("1"))).mtimeMs).toBe(before.mtimeMs);
  });

  it("returns a problem for a missing or malformed task and leaves the file alone", async () => {
    const t = await team({ tasks: [{ id: "2", raw: '{"id":"2"}' }] });
    const missing = await updateTask(t.teamDir, t.taskListId, "9", (task) => task);
    expect(missing).toMatchObject({ ok: false, problem: { kind: "missing" } });
    const malformed = await updateTask(t.teamDir, t.taskListId, "2", (task) => task);
    expect(malformed).toMatchObject({ ok: false, problem: { kind: "invalid", field: "subject" } });
    expect(await readFile(t.taskFile("2"), "utf8")).toBe('{"id":"2"}');
    expect((await readdir(t.tasksDir)).sort()).toEqual(["2.json"]);
  });

  it("refuses to write a mutation that breaks the task", async () => {
    const t = await team({ tasks: [makeTask({ id: "1" })] });
    const before = await readFile(t.taskFile("1"), "utf8");
    await expect(
      updateTask(t.teamDir, t.taskListId, "1", (task) => ({ ...task, status: "done" as Task["status"] })),
    ).rejects.toMatchObject({
      code: "E_TASK",
    });
    expect(await readFile(t.taskFile("1"), "utf8")).toBe(before);
  });

  it("loses no update when other processes change other fields at the same time, and the file always parses", async () => {
    const t = await team({ tasks: [makeTask({ id: "1", custom: "kept" })] });
    const iterations = 30;
    const goFile = path.join(t.teamsRoot, "go");
    const workers = ["w1", "w2", "w3", "w4"].map((key) =>
      runWorker(modules, "update-task", {
        teamDir: t.teamDir,
        taskListId: t.taskListId,
        taskId: "1",
        key,
        iterations,
        goFile,
      }),
    );
    await writeFile(goFile, "");
    let reads = 0;
    let finished = false;
    const all = Promise.all(workers).finally(() => (finished = true));
    const reader = (async () => {
      while (!finished) {
        JSON.parse(await readFile(t.taskFile("1"), "utf8")); // throws (and fails the test) on a torn file
        reads += 1;
      }
    })();
    for (let i = 0; i < iterations; i++) {
      const result = await updateTask(t.teamDir, t.taskListId, "1", (task) => ({
        ...task,
        metadata: { ...task.metadata, main: Number(task.metadata?.main ?? 0) + 1 },
      }));
      expect(result.ok).toBe(true);
    }
    await all;
    await reader;
    expect(reads).toBeGreaterThan(0);
    const final = JSON.parse(await readFile(t.taskFile("1"), "utf8")) as Task;
    expect(final.metadata).toEqual({
      main: iterations,
      w1: iterations,
      w2: iterations,
      w3: iterations,
      w4: iterations,
    });
    expect(final.custom).toBe("kept");
    expect((await readdir(t.tasksDir)).sort()).toEqual(["1.json"]);
  });
});

describe("createTask", () => {
  it.each([
    ["the watermark is ahead", 10, ["3"], "11"],
    ["a task file is ahead", 2, ["1", "7"], "8"],
    ["there is nothing yet", undefined, [], "1"],
  ])("allocates max(highwatermark, largest id) + 1 when %s", async (_name, highWatermark, ids, expected) => {
    const t = await team({
      tasks: [...ids.map((id) => makeTask({ id })), makeTask({ id: "notes" })],
      ...(highWatermark === undefined ? {} : { highWatermark }),
    });
    const result = await createTask(t.teamDir, t.taskListId, newTask);
    expect(result).toMatchObject({
      created: true,
      task: { id: expected, subject: `new ${expected}` },
      file: t.taskFile(expected),
    });
    expect(await readFile(path.join(t.tasksDir, ".highwatermark"), "utf8")).toBe(`${expected}\n`);
    expect(JSON.parse(await readFile(t.taskFile(expected), "utf8"))).toEqual(newTask(expected));
  });

  it("creates the task list folder when it is missing", async () => {
    const t = await team();
    const result = await createTask(t.teamDir, "fresh-list", newTask);
    expect(result.task.id).toBe("1");
    expect(await readFile(path.join(t.teamDir, "tasks", "fresh-list", "1.json"), "utf8")).toContain('"id": "1"');
  });

  it("throws when build returns a task with another id", async () => {
    const t = await team();
    await expect(createTask(t.teamDir, t.taskListId, () => newTask("99"))).rejects.toMatchObject({
      code: "E_INTERNAL",
    });
  });

  it("gives unique consecutive ids to several processes creating at once", async () => {
    const t = await team({ tasks: [makeTask({ id: "1" })], highWatermark: 5 });
    const goFile = path.join(t.teamsRoot, "go");
    const runs = Array.from({ length: 5 }, () =>
      runWorker<{ ids: string[] }>(modules, "create-tasks", {
        teamDir: t.teamDir,
        taskListId: t.taskListId,
        count: 8,
        goFile,
      }),
    );
    await writeFile(goFile, "");
    const results = await Promise.all(runs);
    const ids = results
      .flatMap((result) => result.ids)
      .map(Number)
      .sort((a, b) => a - b);
    expect(ids).toEqual(Array.from({ length: 40 }, (_, i) => i + 6));
    expect(await readFile(path.join(t.tasksDir, ".highwatermark"), "utf8")).toBe("45\n");
    expect((await listTaskFiles(t.teamDir, t.taskListId)).length).toBe(41);
  });

  it("creates once when every process first looks for an existing task with the same key", async () => {
    const t = await team();
    const goFile = path.join(t.teamsRoot, "go");
    const runs = Array.from({ length: 6 }, () =>
      runWorker<{ created: boolean; id: string }>(modules, "create-once", {
        teamDir: t.teamDir,
        taskListId: t.taskListId,
        key: "gate:7",
        goFile,
      }),
    );
    await writeFile(goFile, "");
    const results = await Promise.all(runs);
    expect(results.filter((result) => result.created)).toHaveLength(1);
    expect(new Set(results.map((result) => result.id))).toEqual(new Set(["1"]));
    expect(await listTaskFiles(t.teamDir, t.taskListId)).toHaveLength(1);
  });
});

// The atomic write under every rewrite above.
describe("writeJsonAtomic", () => {
  it("writes pretty JSON + newline (or compact), leaving no temp file", async () => {
    const t = await team();
    const file = path.join(t.teamDir, "data.json");
    await writeJsonAtomic(file, { a: [1] });
    expect(await readFile(file, "utf8")).toBe('{\n  "a": [\n    1\n  ]\n}\n');
    await writeJsonAtomic(file, { a: [1] }, { pretty: false, fsync: true });
    expect(await readFile(file, "utf8")).toBe('{"a":[1]}\n');
    expect(await readdir(t.teamDir)).not.toContainEqual(expect.stringContaining(".tmp."));
  });

  it("gives concurrent writes of one file distinct temp files", async () => {
    const t = await team();
    const file = path.join(t.teamDir, "data.json");
    await Promise.all(Array.from({ length: 20 }, (_, i) => writeJsonAtomic(file, { i })));
    expect(JSON.parse(await readFile(file, "utf8"))).toHaveProperty("i");
    expect(await readdir(t.teamDir)).not.toContainEqual(expect.stringContaining(".tmp."));
  });

  it("throws E_IO naming the file and removes its temp file when the rename fails", async () => {
    const t = await team();
    const file = path.join(t.teamDir, "occupied");
    await mkdir(path.join(file, "child"), { recursive: true }); // a non-empty directory cannot be replaced by a file
    const error: unknown = await writeJsonAtomic(file, {}).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "E_IO", message: expect.stringContaining(file) });
    expect(await readdir(t.teamDir)).not.toContainEqual(expect.stringContaining(".tmp."));
  });
});
