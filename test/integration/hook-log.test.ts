// Hook logs on real temp dirs: names, atomic never-overwriting writes (in one process and across
// several), listing order and speed, and bad files reported as problems.
import { spawn } from "node:child_process";
import { linkSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import type { HookInvocation } from "../../extensions/teams-hooks/contract/contract.js";
import type { RunResult } from "../../extensions/teams-hooks/contract/hook-run.js";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";
import {
  MAX_WRITTEN_LOG_BYTES,
  listHookLogs,
  readHookLog,
  writeHookLog,
} from "../../extensions/teams-hooks/logs/hook-log.js";
import type { HookLogRecord } from "../../extensions/teams-hooks/logs/hook-log.js";
import { compileModules } from "../fixtures/workers/modules.js";
import { tempDirs } from "../helpers/temp-team.js";

const START = "2024-05-01T12:34:56.789Z";

const tempTeam = tempDirs("teams-hooks-log-");

function task(id: string): Task {
  const at = "2024-05-01T12:00:00.000Z";
  return {
    id,
    subject: "Fix it",
    description: "",
    status: "completed",
    blocks: [],
    blockedBy: [],
    createdAt: at,
    updatedAt: at,
  };
}

/** A valid record; `over` replaces top-level fields, `invocation` / `result` are merged. */
function record(
  over: Partial<Omit<HookLogRecord, "invocation" | "result">> & {
    invocation?: Partial<HookInvocation>;
    result?: Partial<RunResult>;
  } = {},
): HookLogRecord {
  const { invocation, result, ...rest } = over;
  return {
    invocation: {
      event: "task_completed",
      teamId: "t1",
      teamDir: "/teams/t1",
      taskListId: "main",
      style: "normal",
      completedTask: task("3"),
      ...invocation,
    },
    result: {
      ran: true,
      hookPath: "/h/on_task_completed.sh",
      command: ["bash", "/h/on_task_completed.sh"],
      outcome: "passed",
      exitCode: 0,
      signal: null,
      timedOut: false,
      durationMs: 12,
      stdout: "ok\n",
      stderr: "",
      stdoutDroppedBytes: 0,
      stderrDroppedBytes: 0,
      leftoverProcesses: 0,
      contextTruncated: false,
      runId: "run-1",
      contractVersion: 1,
      ...result,
    },
    key: "task_completed:main:3:2024-05-01T12:00:00.000Z",
    startedAt: START,
    ...rest,
  };
}

describe("writeHookLog", () => {
  it.each([
    { name: "a task", over: {}, file: "2024-05-01T12-34-56-789Z_task_completed_task-3.json" },
    {
      name: "an unsafe task id",
      over: { invocation: { completedTask: task("../x y") } },
      file: "2024-05-01T12-34-56-789Z_task_completed_task----x-y.json",
    },
    {
      name: "an idle member",
      over: { invocation: { event: "idle" as const, completedTask: null, memberName: "alice" } },
      file: "2024-05-01T12-34-56-789Z_idle_member-alice.json",
    },
    {
      name: "no task, no member",
      over: { invocation: { event: "idle" as const, completedTask: null } },
      file: "2024-05-01T12-34-56-789Z_idle.json",
    },
    {
      name: "a start time with an offset (normalised to UTC)",
      over: { startedAt: "2024-05-01T14:34:56.789+02:00" },
      file: "2024-05-01T12-34-56-789Z_task_completed_task-3.json",
    },
  ])("names the file from the start time, event and suffix: $name", async ({ over, file }) => {
    const team = await tempTeam();
    const written = await writeHookLog(team, record(over));
    expect(written).toBe(path.join(team, "hook-logs", file));
  });

  it("writes pretty JSON with a final newline, creating hook-logs/, and reads it back equal", async () => {
    const team = await tempTeam();
    const rec = record({ retry: true, policy: { action: "reopen", reopened: true } });
    const file = await writeHookLog(team, rec);
    expect(await readFile(file, "utf8")).toBe(`${JSON.stringify(rec, null, 2)}\n`);
    expect(await readHookLog(file)).toEqual({ ok: true, file, record: rec });
  });

  it("never replaces a file it did not write: a taken name moves on to _2", async () => {
    const team = await tempTeam();
    const dir = path.join(team, "hook-logs");
    await mkdir(dir);
    const taken = path.join(dir, "2024-05-01T12-34-56-789Z_task_completed_task-3.json");
    await writeFile(taken, "written elsewhere\n", "utf8");
    expect(await writeHookLog(team, record())).toBe(taken.replace(/\.json$/, "_2.json"));
    expect(await readFile(taken, "utf8")).toBe("written elsewhere\n");
  });

  it("gives 200 concurrent same-millisecond logs 200 distinct files, all valid, no temp files left", async () => {
    const team = await tempTeam();
    const files = await Promise.all(
      Array.from({ length: 200 }, (_, i) => writeHookLog(team, record({ result: { runId: `r${i}` } }))),
    );
    expect(new Set(files).size).toBe(200);
    expect(await readdir(path.join(team, "hook-logs"))).toHaveLength(200);

    const runIds = new Set<string>();
    for (const file of files) {
      const read = await readHookLog(file);
      if (!read.ok) throw new Error(read.problem.message);
      runIds.add(read.record.result.runId);
    }
    expect(runIds.size).toBe(200);
  });

  it("never overwrites across processes: 4 node processes × 50 logs released at once", async () => {
    const team = await tempTeam();
    const modules = await compileModules(["logs/hook-log"]);
    tempTeam.removeAfter(modules.dir);
    const outDir = modules.dir;
    const moduleUrl = pathToFileURL(path.join(outDir, "logs/hook-log.js")).href;
    // Each child loads the module, says "ready", then writes all its logs at once when told "go".
    const script = `import { writeHookLog } from ${JSON.stringify(moduleUrl)};
      const [team, who, recordJson] = process.argv.slice(1);
      const base = JSON.parse(recordJson);
      process.stdin.once("data", async () => {
        const files = await Promise.all(Array.from({ length: 50 }, (_, i) =>
          writeHookLog(team, { ...base, result: { ...base.result, runId: who + "-" + i } })));
        process.stdout.write(JSON.stringify(files));
        process.stdin.destroy();
      });
      process.stdout.write("ready\\n");`;

    const children = ["a", "b", "c", "d"].map((who) => {
      const child = spawn(
        process.execPath,
        ["--input-type=module", "-e", script, team, who, JSON.stringify(record())],
        { stdio: ["pipe", "pipe", "inherit"] },
      );
      let out = "";
      const ready = new Promise<void>((resolve) =>
        child.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          if (out.startsWith("ready\n")) resolve();
        }),
      );
      const done = new Promise<string[]>((resolve, reject) =>
        child.on("close", (code) =>
          code === 0
            ? resolve(JSON.parse(out.slice("ready\n".length)) as string[])
            : reject(new Error(`child ${who} exited ${code}`)),
        ),
      );
      return { child, ready, done };
    });
    await Promise.all(children.map((c) => c.ready));
    for (const { child } of children) child.stdin.write("go\n");
    const files = (await Promise.all(children.map((c) => c.done))).flat();

    expect(new Set(files).size).toBe(200);
    const listed = await listHookLogs(team);
    expect(listed).toHaveLength(200);
    expect(await readdir(path.join(team, "hook-logs"))).toHaveLength(200);
    const runIds = new Set<string>();
    for (const { file } of listed) {
      const read = await readHookLog(file);
      if (!read.ok) throw new Error(read.problem.message);
      runIds.add(read.record.result.runId);
    }
    expect(runIds.size).toBe(200);
  });
});

describe("writeHookLog: what a log keeps of something huge", () => {
  const MB = 1_000_000;
  async function written(rec: HookLogRecord): Promise<{ bytes: number; record: HookLogRecord }> {
    const file = await writeHookLog(await tempTeam(), rec);
    const read = await readHookLog(file);
    if (!read.ok) throw new Error(read.problem.message);
    return { bytes: Buffer.byteLength(await readFile(file, "utf8")), record: read.record };
  }

  it("a record within every bound is written as given", async () => {
    const rec = record({ invocation: { completedTask: { ...task("3"), metadata: { result: "ok", n: [1, 2] } } } });
    expect((await written(rec)).record).toEqual(rec);
  });

  it("an idle notification: failureReason as the document cuts it, its other fields within the budget", async () => {
    const notification = {
      type: "idle_notification" as const,
      from: "alice",
      timestamp: START,
      completedStatus: "failed" as const,
      failureReason: "r".repeat(20_000),
      trace: "t".repeat(5 * MB),
      small: "kept",
    };
    const idle = record({ invocation: { event: "idle", completedTask: null, notification } });
    const { bytes, record: kept } = await written(idle);
    expect(bytes).toBeLessThan(MAX_WRITTEN_LOG_BYTES);
    const failureReason = `${"r".repeat(7_999)}…`;
    expect(kept.invocation.notification).toMatchObject({ from: "alice", failureReason, small: "kept" });
    expect(String(kept.invocation.notification?.trace)).toMatch(/^t+…$/);
    expect(kept.shortened).toEqual(["invocation.notification"]);
  });

  it("huge strings anywhere else: the longest are cut until the log is within its cap; it still reads", async () => {
    const rec = record({
      invocation: { memberName: "m".repeat(3 * MB), completedTask: { ...task("3"), owner: "o".repeat(2 * MB) } },
      policy: { failureAction: "warn", errors: ["e".repeat(2 * MB), "short error"] },
    });
    const { bytes, record: kept } = await written(rec);
    expect(bytes).toBeLessThanOrEqual(MAX_WRITTEN_LOG_BYTES);
    expect(kept).toMatchObject({ startedAt: START, key: rec.key, result: { runId: "run-1", stdout: "ok\n" } });
    const errors = [expect.stringMatching(/^e+…$/), "short error"];
    expect(kept.policy).toMatchObject({ failureAction: "warn", errors });
    expect(kept.invocation.memberName).toMatch(/^m+…$/);
    expect(kept.shortened).toEqual(["invocation", "policy"]);
  });
});

describe("listHookLogs", () => {
  it("lists in time order, counts collisions numerically, and skips temp, hidden and foreign entries", async () => {
    const team = await tempTeam();
    const times = ["2024-05-01T12:00:00.002Z", "2024-05-01T11:59:59.999Z", "2024-05-01T12:00:00.001Z"];
    for (const startedAt of times) await writeHookLog(team, record({ startedAt }));
    for (let i = 0; i < 11; i++)
      await writeHookLog(
        team,
        record({ startedAt: "2024-05-01T12:00:00.003Z", invocation: { event: "idle", completedTask: null } }),
      );
    const dir = path.join(team, "hook-logs");
    await writeFile(path.join(dir, ".x.json.tmp.1.abc"), "{", "utf8");
    await writeFile(path.join(dir, ".hidden.json"), "{}", "utf8");
    await writeFile(path.join(dir, "notes.txt"), "", "utf8");
    await mkdir(path.join(dir, "sub.json"));

    const names = (await listHookLogs(team)).map((e) => e.name);
    const idle = "2024-05-01T12-00-00-003Z_idle";
    expect(names).toEqual([
      "2024-05-01T11-59-59-999Z_task_completed_task-3.json",
      "2024-05-01T12-00-00-001Z_task_completed_task-3.json",
      "2024-05-01T12-00-00-002Z_task_completed_task-3.json",
      `${idle}.json`,
      ...Array.from({ length: 10 }, (_, i) => `${idle}_${i + 2}.json`),
    ]);

    const newest = await listHookLogs(team, { limit: 2 });
    expect(newest).toEqual([
      { file: path.join(dir, `${idle}_10.json`), name: `${idle}_10.json` },
      { file: path.join(dir, `${idle}_11.json`), name: `${idle}_11.json` },
    ]);
    expect(await listHookLogs(team, { limit: 0 })).toEqual([]);
  });

  it("gives an empty list when hook-logs/ does not exist", async () => {
    expect(await listHookLogs(await tempTeam())).toEqual([]);
  });

  it("lists 10,000 logs quickly, by name only", async () => {
    const team = await tempTeam();
    const dir = path.join(team, "hook-logs");
    await mkdir(dir);
    const base = Date.parse("2024-01-01T00:00:00.000Z");
    const names = Array.from(
      { length: 10_000 },
      (_, i) => `${new Date(base + i * 1000).toISOString().replace(/[:.]/g, "-")}_idle.json`,
    );
    // One empty file under 10,000 names (hard links): a listing sees 10,000 entries all the same, and a
    // link costs a small part of what a new file does (no inode to allocate).
    const first = path.join(dir, names[0] as string);
    await writeFile(first, "", "utf8");
    for (const name of names.slice(1)) linkSync(first, path.join(dir, name));
    const started = performance.now();
    const listed = await listHookLogs(team);
    const ms = performance.now() - started;
    expect(listed.map((e) => e.name)).toEqual(names);
    expect(ms).toBeLessThan(1_000); // typically ~20 ms; a generous bound that still catches parsing each file
  });
});

describe("readHookLog", () => {
  async function logFile(content: string): Promise<string> {
    const dir = path.join(await tempTeam(), "hook-logs");
    await mkdir(dir);
    const file = path.join(dir, "2024-05-01T12-34-56-789Z_idle.json");
    await writeFile(file, content, "utf8");
    return file;
  }

  it("reports a corrupt file as invalid_json, naming the file", async () => {
    const file = await logFile('{"invocation": ');
    const read = await readHookLog(file);
    expect(read).toMatchObject({ ok: false, problem: { file, kind: "invalid_json" } });
    if (read.ok) return;
    expect(read.problem.message).toMatch(new RegExp(`^${escapeRegExp(file)}: not JSON \\(.+\\) — log skipped$`));
  });

  it.each([
    { name: "foreign JSON", content: { hello: "world" }, field: "invocation" },
    { name: "a JSON array", content: [1, 2], field: "(root)" },
    {
      name: "a mistyped field",
      content: { ...record(), result: { ...record().result, exitCode: "x" } },
      field: "result.exitCode",
      got: '(got "x")',
    },
    {
      name: "a mistyped array item",
      content: {
        ...record(),
        invocation: { ...record().invocation, completedTask: { ...task("3"), blocks: ["1", 2] } },
      },
      field: "invocation.completedTask.blocks[1]",
      got: "(got 2)",
    },
    {
      name: "a bad start time",
      content: { ...record(), startedAt: "yesterday" },
      field: "startedAt",
      got: '(got "yesterday")',
    },
  ])("reports $name as invalid, naming the file and the field", async ({ content, field, got }) => {
    const file = await logFile(JSON.stringify(content));
    const read = await readHookLog(file);
    expect(read).toMatchObject({ ok: false, problem: { file, kind: "invalid", field } });
    if (read.ok) return;
    expect(read.problem.message.startsWith(`${file}: ${field}: `)).toBe(true);
    expect(read.problem.message.endsWith(" — log skipped")).toBe(true);
    if (got) expect(read.problem.message).toContain(got);
  });

  it("reports a missing file as missing, and a directory as not a regular file", async () => {
    const team = await tempTeam();
    const file = path.join(team, "nope.json");
    expect(await readHookLog(file)).toMatchObject({ ok: false, problem: { file, kind: "missing" } });
    expect(await readHookLog(team)).toMatchObject({
      ok: false,
      problem: { file: team, kind: "not_regular", message: `${team}: not a regular file (directory) — log skipped` },
    });
  });

  it("keeps fields written by a later version", async () => {
    const later = {
      ...record(),
      extra: { v: 2 },
      invocation: { ...record().invocation, source: "x" },
      result: { ...record().result, cpuMs: 3 },
      policy: { action: "warn", notified: ["alice"] },
    };
    const read = await readHookLog(await logFile(JSON.stringify(later)));
    expect(read).toMatchObject({ ok: true, record: later });
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
