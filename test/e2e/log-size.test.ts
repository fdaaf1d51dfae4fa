/**
 * A task far larger than a hook is shown, run through the built `run --apply-policy`: its log keeps the
 * task as the context document cuts it (and its metadata within the log's budget, saying so), stays
 * small, and `logs`, `logs show` and `logs stats` all read it — also when the document was over the
 * payload limit and nothing ran.
 */
import { mkdir, readFile, readdir, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { HookLogRecord } from "../../extensions/teams-hooks/logs/hook-log.js";
import { ensureBuilt, runBin } from "../helpers/leader-rig.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

const MB = 1_000_000;
const teams: TempTeam[] = [];
beforeAll(() => ensureBuilt(), 240_000);
afterEach(async () => {
  for (const team of teams.splice(0)) await team.cleanup();
});

/** A gate that says on stderr how much of the task it was shown, then denies. */
const GATE = `#!/usr/bin/env node
let input = "";
process.stdin.setEncoding("utf8").on("data", (c) => (input += c)).on("end", () => {
  const task = JSON.parse(input).task;
  console.error(\`shown: description \${task.description.length}, metadata.log \${task.metadata.log.length}\`);
  process.exit(1);
});
`;

async function bigTeam(tasks: Array<Record<string, unknown>>): Promise<TempTeam> {
  const team = await makeTempTeam({ teamId: "alpha", tasks });
  teams.push(team);
  await mkdir(path.join(team.teamsRoot, "_hooks"), { recursive: true });
  await writeFile(path.join(team.teamsRoot, "_hooks", "on_task_completed.mjs"), GATE, { mode: 0o755 });
  return team;
}

const completed = (id: string, description: string, log: string) =>
  makeTask({
    id,
    status: "completed",
    owner: "ada",
    subject: "s".repeat(5_000),
    description,
    blocks: Array.from({ length: 300 }, (_, i) => String(i + 100)),
    metadata: { result: "done", completedAt: "2026-03-01T08:00:00.000Z", log, note: "kept" },
    unknownField: "x".repeat(MB),
  });

async function onlyLog(teamDir: string): Promise<{ file: string; bytes: number; record: HookLogRecord }> {
  const dir = path.join(teamDir, "hook-logs");
  const names = (await readdir(dir)).filter((n) => n.endsWith(".json"));
  expect(names).toHaveLength(1);
  const file = path.join(dir, names[0] ?? "");
  return { file, bytes: (await stat(file)).size, record: JSON.parse(await readFile(file, "utf8")) as HookLogRecord };
}

async function readersSee(teamDir: string, runId: string): Promise<void> {
  const id = runId.slice(0, 8);
  const list = await runBin(["logs", "--team-dir", teamDir, "--json"]);
  expect(list.stderr).toBe("");
  expect(list.code).toBe(0);
  expect(list.stdout).toContain(runId);
  const show = await runBin(["logs", "show", id, "--team-dir", teamDir]);
  expect(show.stderr).toBe("");
  expect(show.code).toBe(0);
  expect(show.stdout).toContain(runId);
  // A run by hand counts in stats only when asked for.
  const stats = await runBin(["logs", "stats", "--team-dir", teamDir, "--json", "--include-hand-runs"]);
  expect(stats.stderr).toBe("");
  expect(stats.code).toBe(0);
  expect(JSON.stringify(JSON.parse(stats.stdout))).toMatch(/"runs":1\b/);
}

describe("the log of a task larger than a hook is shown", () => {
  it("a 40 MB description: the log keeps what the hook saw, its metadata cut, and every reader reads it", async () => {
    const team = await bigTeam([completed("1", "d".repeat(40 * MB), "m".repeat(2 * MB))]);
    const run = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--apply-policy"]);
    expect(run.code, run.stderr).toBe(1);
    const { bytes, record } = await onlyLog(team.teamDir);
    const stderr = `shown: description 8000, metadata.log ${2 * MB}\n`;
    expect(record.result).toMatchObject({ outcome: "failed", stderr });

    expect(bytes).toBeLessThan(256 * 1024);
    const task = record.invocation.completedTask;
    expect(task?.description).toBe(`${"d".repeat(7_999)}…`);
    expect(task?.subject).toBe(`${"s".repeat(999)}…`);
    expect(task?.blocks).toHaveLength(200);
    expect(task).not.toHaveProperty("unknownField");
    expect(task?.metadata).toMatchObject({ result: "done", completedAt: "2026-03-01T08:00:00.000Z", note: "kept" });
    expect(String(task?.metadata?.log)).toMatch(/^m+…$/);
    expect(JSON.stringify(task?.metadata).length).toBeLessThanOrEqual(100 * 1024);
    expect(record).toMatchObject({ shortened: ["invocation.completedTask.metadata"] });
    await readersSee(team.teamDir, record.result.runId);
  });

  it("40 MB of metadata (over the payload limit): the log is small and every reader reads it", async () => {
    const team = await bigTeam([completed("2", "small", "m".repeat(40 * MB))]);
    const run = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "2", "--apply-policy"]);
    expect(run.code, run.stderr).toBe(1);
    const { bytes, record } = await onlyLog(team.teamDir);
    expect(record.result).toMatchObject({ ran: false, outcome: "error", errorKind: "limit" });
    expect(bytes).toBeLessThan(256 * 1024);
    expect(record).toMatchObject({ shortened: ["invocation.completedTask.metadata"] });
    await readersSee(team.teamDir, record.result.runId);
  });
});
