// `pi-teams-hooks logs` on real temp team dirs with real log files (written by writeHookLog, plus
// hand-made corrupt and foreign files), through the command line's main() with captured output.
import { mkdir, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { HookEventName } from "../../extensions/teams-hooks/contract/contract.js";
import { main } from "../../extensions/teams-hooks/cli/main.js";
import type { CliIo } from "../../extensions/teams-hooks/cli/io.js";
import { type HookLogRecordInput, writeHookLog } from "../../extensions/teams-hooks/logs/hook-log.js";
import { makeTask, type TempTeam, tempTeams } from "../helpers/temp-team.js";

const team = tempTeams({ teamId: "alpha" });

type Outcome = "passed" | "failed" | "timed_out" | "error";

interface Seed {
  at: string;
  event?: HookEventName;
  /** null: no task (idle, or a task event whose task file was gone: see `key`). */
  task?: string | null;
  member?: string;
  outcome?: Outcome;
  durationMs?: number;
  stderr?: string;
  stdout?: string;
  actions?: string[];
  hook?: string;
  key?: string;
}

function record(teamDir: string, s: Seed): HookLogRecordInput {
  const event = s.event ?? "task_completed";
  const outcome = s.outcome ?? "passed";
  const task = s.task === undefined ? "1" : s.task;
  const hook = `/hooks/${s.hook ?? `on_${event}.sh`}`;
  return {
    invocation: {
      event,
      teamId: "alpha",
      teamDir,
      taskListId: "alpha",
      style: "normal",
      ...(s.member ? { memberName: s.member } : {}),
      timestamp: s.at,
      completedTask:
        task === null || event === "idle" ? null : makeTask({ id: task, status: "completed", owner: s.member ?? null }),
    },
    result: {
      ran: true,
      hookPath: hook,
      command: ["bash", hook],
      outcome: outcome === "timed_out" ? "error" : outcome,
      exitCode: outcome === "passed" ? 0 : outcome === "failed" ? 1 : null,
      signal: outcome === "timed_out" ? "SIGTERM" : null,
      timedOut: outcome === "timed_out",
      durationMs: s.durationMs ?? 100,
      stdout: s.stdout ?? "checking\n",
      stderr: s.stderr ?? (outcome === "passed" ? "" : "\n  FAIL: 2 tests fail\nmore\n"),
      stdoutDroppedBytes: 0,
      stderrDroppedBytes: 0,
      ...(outcome === "error" ? { error: "spawn bash ENOENT", errorCode: "ENOENT" } : {}),
      leftoverProcesses: 0,
      contextTruncated: false,
      runId: `run-${s.at}`,
      contractVersion: 1,
    },
    key: s.key ?? (event === "idle" ? `idle:${s.member ?? "unknown"}:${s.at}` : `${event}:${task ?? "?"}:${s.at}`),
    startedAt: s.at,
    ...(s.actions
      ? {
          policy: {
            failureAction: "reopen_followup",
            maxReopensPerTask: 3,
            followupOwner: "member",
            summary: "exit code 1",
            actions: s.actions,
            followupTaskId: null,
            errors: [],
          },
        }
      : {}),
  };
}

async function seed(t: TempTeam, seeds: Seed[]): Promise<string[]> {
  const files: string[] = [];
  for (const s of seeds) files.push(await writeHookLog(t.teamDir, record(t.teamDir, s)));
  return files;
}

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

async function logs(args: string[], env: Record<string, string | undefined> = {}): Promise<Ran> {
  let stdout = "";
  let stderr = "";
  const io: CliIo = {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: { COLUMNS: "400", ...env }, // a wide table: every column whole (narrow ones: e2e/cli-terminal.test.ts)
    cwd: process.cwd(),
    isTTY: false,
    stopSignal: new Promise<string>(() => {}),
  };
  const code = await main(["logs", ...args], io);
  return { code, stdout, stderr };
}

/** The data rows of a table (no header), split into cells on runs of two or more spaces, without the id column. */
function rows(stdout: string): string[][] {
  return stdout
    .trimEnd()
    .split("\n")
    .slice(1)
    .map((line) => line.split(/ {2,}/).slice(1));
}

function column(stdout: string, index: number): string[] {
  return rows(stdout).map((r) => r[index] ?? "");
}

/** A mixed set: 3 tasks, 2 members, every outcome, all three events, over 4 hours of 2026-03-01. */
const MIXED: Seed[] = [
  { at: "2026-03-01T08:00:00.000Z", task: "1", member: "ada", outcome: "passed", durationMs: 100 },
  {
    at: "2026-03-01T09:00:00.000Z",
    task: "2",
    member: "brian",
    outcome: "failed",
    durationMs: 200,
    actions: ["reopened (1/3)", "follow-up #9 for brian", "nudge brian"],
  },
  { at: "2026-03-01T09:30:00.000Z", event: "idle", member: "ada", outcome: "passed", durationMs: 50 },
  {
    at: "2026-03-01T10:00:00.000Z",
    task: "2",
    member: "brian",
    outcome: "timed_out",
    durationMs: 60_000,
    actions: ["nudge brian"],
  },
  {
    at: "2026-03-01T10:30:00.000Z",
    event: "task_failed",
    task: "3",
    member: "ada",
    outcome: "error",
    durationMs: 5,
    stderr: "",
  },
  { at: "2026-03-01T11:00:00.000Z", task: "2", member: "brian", outcome: "passed", durationMs: 300, actions: ["none"] },
  { at: "2026-03-01T11:30:00.000Z", event: "idle", member: "brian", outcome: "failed", durationMs: 70 },
];

describe("logs: the table", () => {
  it("shows every column, newest last", async () => {
    const t = await team();
    await seed(t, MIXED);
    const { code, stdout, stderr } = await logs(["--team-dir", t.teamDir]);
    expect(code).toBe(0);
    expect(stderr).toBe("");
    const lines = stdout.trimEnd().split("\n");
    expect(lines[0]?.split(/ {2,}/)).toEqual([
      "id",
      "time (UTC)",
      "event",
      "task",
      "member",
      "hook",
      "outcome",
      "duration",
      "action",
      "first stderr line",
    ]);
    // These run ids share their first 8 characters (run-2026): each is shown as far as it differs.
    expect(lines.slice(1).map((line) => line.split(/ {2,}/)[0])).toEqual([
      "run-2026-03-01T08",
      "run-2026-03-01T09:0",
      "run-2026-03-01T09:3",
      "run-2026-03-01T10:0",
      "run-2026-03-01T10:3",
      "run-2026-03-01T11:0",
      "run-2026-03-01T11:3",
    ]);
    expect(rows(stdout)).toEqual([
      ["2026-03-01 08:00:00", "task_completed", "#1", "ada", "on_task_completed.sh", "passed", "100ms", "-"],
      [
        "2026-03-01 09:00:00",
        "task_completed",
        "#2",
        "brian",
        "on_task_completed.sh",
        "failed",
        "200ms",
        "reopened (1/3), follow-up #9 for brian, nudge brian",
        "FAIL: 2 tests fail",
      ],
      ["2026-03-01 09:30:00", "idle", "-", "ada", "on_idle.sh", "passed", "50ms", "-"],
      [
        "2026-03-01 10:00:00",
        "task_completed",
        "#2",
        "brian",
        "on_task_completed.sh",
        "timed out",
        "60.0s",
        "nudge brian",
        "FAIL: 2 tests fail",
      ],
      [
        "2026-03-01 10:30:00",
        "task_failed",
        "#3",
        "ada",
        "on_task_failed.sh",
        "error",
        "5ms",
        "-",
        "(spawn bash ENOENT)",
      ],
      ["2026-03-01 11:00:00", "task_completed", "#2", "brian", "on_task_completed.sh", "passed", "300ms", "-"],
      ["2026-03-01 11:30:00", "idle", "-", "brian", "on_idle.sh", "failed", "70ms", "-", "FAIL: 2 tests fail"],
    ]);
  });

  it("says so when there are no logs, or none match", async () => {
    const t = await team();
    expect(await logs(["--team-dir", t.teamDir])).toEqual({
      code: 0,
      stdout: `no hook logs in ${path.join(t.teamDir, "hook-logs")}\n`,
      stderr: "",
    });
    await seed(t, MIXED);
    const none = await logs(["--team-dir", t.teamDir, "--member", "zoe"]);
    expect(none.code).toBe(0);
    expect(none.stdout).toBe(`none of 7 hook logs match (member zoe) in ${path.join(t.teamDir, "hook-logs")}\n`);
  });

  it("cleans control characters and colour codes out of cells", async () => {
    const t = await team();
    await seed(t, [
      { at: "2026-03-01T08:00:00.000Z", outcome: "failed", stderr: "\u001b[31mred\u001b[0m\tfail\u0007ure\n" },
    ]);
    const { stdout } = await logs(["--team-dir", t.teamDir]);
    expect(column(stdout, 8)).toEqual(["red failure"]);
  });
});

describe("logs: filters", () => {
  it.each([
    {
      name: "--event task_completed",
      args: ["--event", "task_completed"],
      times: ["08:00", "09:00", "10:00", "11:00"],
    },
    { name: "--event idle,task_failed", args: ["--event", "idle,task_failed"], times: ["09:30", "10:30", "11:30"] },
    { name: "--task 2", args: ["--task", "2"], times: ["09:00", "10:00", "11:00"] },
    { name: "--task '#3'", args: ["--task", "#3"], times: ["10:30"] },
    { name: "--member ada", args: ["--member", "ada"], times: ["08:00", "09:30", "10:30"] },
    { name: "--outcome passed", args: ["--outcome", "passed"], times: ["08:00", "09:30", "11:00"] },
    { name: "--outcome failed", args: ["--outcome", "failed"], times: ["09:00", "11:30"] },
    { name: "--outcome timed_out", args: ["--outcome", "timed_out"], times: ["10:00"] },
    { name: "--outcome error (a timeout is not an error here)", args: ["--outcome", "error"], times: ["10:30"] },
    { name: "--outcome failed,timed_out", args: ["--outcome", "failed,timed_out"], times: ["09:00", "10:00", "11:30"] },
    { name: "--since ISO", args: ["--since", "2026-03-01T10:30:00Z"], times: ["10:30", "11:00", "11:30"] },
    {
      name: "--since ISO with an offset",
      args: ["--since", "2026-03-01T12:30:00+02:00"],
      times: ["10:30", "11:00", "11:30"],
    },
    { name: "--since a date", args: ["--since", "2026-03-02"], times: [] },
    { name: "--event + --outcome", args: ["--event", "idle", "--outcome", "failed"], times: ["11:30"] },
    {
      name: "--task + --member + --since",
      args: ["--task", "2", "--member", "brian", "--since", "2026-03-01T09:30:00Z"],
      times: ["10:00", "11:00"],
    },
    { name: "--member + --outcome", args: ["--member", "brian", "--outcome", "passed"], times: ["11:00"] },
    { name: "--task that no idle log has + --event idle", args: ["--task", "2", "--event", "idle"], times: [] },
  ])("$name", async ({ args, times }) => {
    const t = await team();
    await seed(t, MIXED);
    const { code, stdout, stderr } = await logs(["--team-dir", t.teamDir, ...args]);
    expect(code).toBe(0);
    expect(stderr).toBe("");
    expect(times.length === 0 ? stdout : column(stdout, 0).map((c) => c.slice(11, 16))).toEqual(
      times.length === 0 ? expect.stringMatching(/^none of 7 hook logs match/) : times,
    );
  });

  it("--since an age (30m, 2h, 3d) counts back from now", async () => {
    const t = await team();
    const ago = (ms: number): string => new Date(Date.now() - ms).toISOString();
    const h = 3_600_000;
    await seed(t, [
      { at: ago(4 * 24 * h), task: "1" },
      { at: ago(2 * 24 * h), task: "2" },
      { at: ago(90 * 60_000), task: "3" },
      { at: ago(10 * 60_000), task: "4" },
    ]);
    const tasks = async (since: string): Promise<string[]> =>
      column((await logs(["--team-dir", t.teamDir, "--since", since])).stdout, 2);
    expect(await tasks("30m")).toEqual(["#4"]);
    expect(await tasks("2h")).toEqual(["#3", "#4"]);
    expect(await tasks("3d")).toEqual(["#2", "#3", "#4"]);
    expect(await tasks("1w")).toEqual(["#1", "#2", "#3", "#4"]);
  });

  it("--task matches the exact task: 3 is not 31, and collisions (_2) and a missing task file still count", async () => {
    const t = await team();
    await seed(t, [
      { at: "2026-03-01T08:00:00.000Z", task: "3" },
      { at: "2026-03-01T08:00:00.000Z", task: "3" }, // same millisecond: …_task-3_2.json
      { at: "2026-03-01T08:01:00.000Z", task: "31" },
      // task file gone
      { at: "2026-03-01T08:02:00.000Z", task: null, member: "ada", key: "task_completed:3:2026-03-01T08:02:00.000Z" },
    ]);
    const names = await readdir(path.join(t.teamDir, "hook-logs"));
    expect(names).toContain("2026-03-01T08-00-00-000Z_task_completed_task-3_2.json");
    expect(names).toContain("2026-03-01T08-02-00-000Z_task_completed_member-ada.json");
    const { stdout } = await logs(["--team-dir", t.teamDir, "--task", "3"]);
    expect(column(stdout, 0).map((c) => c.slice(11))).toEqual(["08:00:00", "08:00:00", "08:02:00"]);
    expect(column(stdout, 2)).toEqual(["#3", "#3", "#3"]);
  });

  it("filters on the file name before opening files: a corrupt log outside the window is never read", async () => {
    const t = await team();
    await seed(t, MIXED);
    const dir = path.join(t.teamDir, "hook-logs");
    await writeFile(path.join(dir, "2026-02-01T00-00-00-000Z_task_completed_task-1.json"), "{ corrupt", "utf8");
    await writeFile(path.join(dir, "2026-03-01T11-45-00-000Z_idle_member-ada.json"), "{ corrupt", "utf8");
    const since = await logs(["--team-dir", t.teamDir, "--since", "2026-03-01"]);
    expect(since.stderr).toMatch(/^warning: .*2026-03-01T11-45-00-000Z_idle_member-ada\.json: not JSON .*\n$/);
    expect(rows(since.stdout)).toHaveLength(MIXED.length);
    const byEvent = await logs(["--team-dir", t.teamDir, "--event", "task_completed"]);
    expect(byEvent.stderr).toMatch(/2026-02-01T00-00-00-000Z_task_completed_task-1\.json: not JSON/);
    expect(byEvent.stderr).not.toMatch(/member-ada/);
    const byTask = await logs(["--team-dir", t.teamDir, "--task", "2"]);
    expect(byTask.stderr).toBe("");
  });
});

describe("logs: --limit", () => {
  async function sixty(): Promise<TempTeam> {
    const t = await team();
    const base = Date.parse("2026-03-01T00:00:00.000Z");
    await seed(
      t,
      Array.from({ length: 60 }, (_, i) => ({ at: new Date(base + i * 60_000).toISOString(), task: String(i + 1) })),
    );
    return t;
  }

  it("shows the newest 50 by default, oldest first, and says older ones were left out", async () => {
    const t = await sixty();
    const { stdout, stderr } = await logs(["--team-dir", t.teamDir]);
    expect(column(stdout, 2)).toEqual(Array.from({ length: 50 }, (_, i) => `#${i + 11}`));
    expect(stderr).toMatch(
      /the newest 50 matching logs are shown; older ones may match: --limit N shows more, --limit 0 all/,
    );
  });

  it("--limit 3 keeps the newest 3 matches, after filtering", async () => {
    const t = await sixty();
    expect(column((await logs(["--team-dir", t.teamDir, "--limit", "3"])).stdout, 2)).toEqual(["#58", "#59", "#60"]);
    const since = await logs([
      "--team-dir",
      t.teamDir,
      "--limit",
      "3",
      "--since",
      "2026-03-01T00:05:00Z",
      "--task",
      "7",
    ]);
    expect(column(since.stdout, 2)).toEqual(["#7"]);
    expect(since.stderr).toBe("");
  });

  it("--limit 0 shows all; --limit above the count shows all without a note", async () => {
    const t = await sixty();
    expect(rows((await logs(["--team-dir", t.teamDir, "--limit", "0"])).stdout)).toHaveLength(60);
    const all = await logs(["--team-dir", t.teamDir, "--limit", "100"]);
    expect(rows(all.stdout)).toHaveLength(60);
    expect(all.stderr).toBe("");
  });
});

describe("logs --json", () => {
  it("prints one log record per line, with its file, oldest first", async () => {
    const t = await team();
    const files = await seed(t, MIXED);
    const { code, stdout, stderr } = await logs(["--team-dir", t.teamDir, "--json", "--outcome", "failed,timed_out"]);
    expect(code).toBe(0);
    expect(stderr).toBe("");
    const lines = stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { file: string; startedAt: string; result: { timedOut: boolean } });
    expect(lines.map((l) => l.file)).toEqual([files[1], files[3], files[6]]);
    expect(lines.map((l) => l.startedAt)).toEqual([
      "2026-03-01T09:00:00.000Z",
      "2026-03-01T10:00:00.000Z",
      "2026-03-01T11:30:00.000Z",
    ]);
    expect(lines[1]).toMatchObject({
      result: { timedOut: true },
      invocation: { event: "task_completed" },
      policy: { actions: ["nudge brian"] },
    });
  });

  it("prints nothing for no logs, and no note about the limit", async () => {
    const t = await team();
    expect(await logs(["--team-dir", t.teamDir, "--json"])).toEqual({ code: 0, stdout: "", stderr: "" });
    await seed(t, MIXED);
    const limited = await logs(["--team-dir", t.teamDir, "--json", "--limit", "2"]);
    expect(limited.stdout.trimEnd().split("\n")).toHaveLength(2);
    expect(limited.stderr).toBe("");
  });
});

describe("logs show", () => {
  it("shows one invocation readably: context, command, exit, timing, policy, stdout, stderr", async () => {
    const t = await team();
    const files = await seed(t, MIXED);
    const file = files[1] ?? "";
    const { code, stdout } = await logs(["show", path.basename(file), "--team-dir", t.teamDir]);
    expect(code).toBe(0);
    for (const expected of [
      `log:          ${file}`,
      "event:        task_completed",
      "key:          task_completed:2:2026-03-01T09:00:00.000Z",
      "started:      2026-03-01T09:00:00.000Z",
      `team:         alpha (task list alpha, style normal) ${t.teamDir}`,
      "member:       brian",
      "task:         #2 Task 2",
      "              status completed, owner brian, updated 2025-01-01T00:00:00.000Z",
      "hook:         /hooks/on_task_completed.sh",
      "command:      bash /hooks/on_task_completed.sh",
      "outcome:      failed",
      "exit:         exit code 1",
      "duration:     200ms",
      "policy:       reopen_followup, max reopens 3, follow-up owner member",
      "summary:      exit code 1",
      "actions:      reopened (1/3), follow-up #9 for brian, nudge brian",
      "stdout (1 line):\n  │ checking",
      "stderr (3 lines):\n  │\n  │   FAIL: 2 tests fail\n  │ more",
    ]) {
      expect(stdout).toContain(expected);
    }
  });

  it("finds a log by its stem, a unique prefix or a unique suffix, and prints JSON with --json", async () => {
    const t = await team();
    const files = await seed(t, MIXED);
    const idle = files[6] ?? "";
    const stem = path.basename(idle, ".json");
    for (const id of [stem, "2026-03-01T11-3", "idle_member-brian", "member-brian.json", idle]) {
      const { code, stdout } = await logs(["show", id, "--team-dir", t.teamDir]);
      expect({ id, code, first: stdout.split("\n")[0] }).toEqual({ id, code: 0, first: `log:          ${idle}` });
    }
    const json = await logs(["show", stem, "--team-dir", t.teamDir, "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ file: idle, invocation: { event: "idle", memberName: "brian" } });
  });

  it("prefers an exact stem over longer names it prefixes", async () => {
    const t = await team();
    const [first, second] = await seed(t, [{ at: "2026-03-01T08:00:00.000Z" }, { at: "2026-03-01T08:00:00.000Z" }]);
    expect(path.basename(second ?? "")).toBe("2026-03-01T08-00-00-000Z_task_completed_task-1_2.json");
    const { stdout } = await logs(["show", path.basename(first ?? "", ".json"), "--team-dir", t.teamDir]);
    expect(stdout.split("\n")[0]).toBe(`log:          ${first}`);
  });

  it("lists the matches of an ambiguous id, newest first with their ids, and names a missing one (exit 2 both)", async () => {
    const t = await team();
    await seed(t, MIXED);
    const ambiguous = await logs(["show", "2026-03-01T09", "--team-dir", t.teamDir]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stdout).toBe("");
    const lines = ambiguous.stderr.trimEnd().split("\n");
    expect(lines[0]).toBe('pi-teams-hooks logs show: "2026-03-01T09" matches 2 runs, newest first:');
    expect(lines.slice(2, 4).map((line) => line.split(/ {2,}/).slice(0, 3))).toEqual([
      ["run-2026-03-01T09:3", "2026-03-01 09:30:00", "idle"],
      ["run-2026-03-01T09:0", "2026-03-01 09:00:00", "task_completed"],
    ]);
    expect(lines[4]).toBe("pick one by its id: pi-teams-hooks logs show <id>");
    const missing = await logs(["show", "2027-01-01", "--team-dir", t.teamDir]);
    expect(missing).toEqual({
      code: 2,
      stdout: "",
      stderr: `pi-teams-hooks logs show: no hook log matches "2027-01-01" in ${path.join(t.teamDir, "hook-logs")} (run ids are the first column of pi-teams-hooks logs)\n`,
    });
  });

  it("reports a corrupt log it was asked to show (exit 1), and needs an id (exit 2)", async () => {
    const t = await team();
    await mkdir(path.join(t.teamDir, "hook-logs"));
    const file = path.join(t.teamDir, "hook-logs", "2026-03-01T08-00-00-000Z_idle.json");
    await writeFile(file, "[1, 2", "utf8");
    const corrupt = await logs(["show", "2026-03-01T08", "--team-dir", t.teamDir]);
    expect(corrupt.code).toBe(1);
    expect(corrupt.stderr).toContain(`${file}: not JSON`);
    const noId = await logs(["show", "--team-dir", t.teamDir]);
    expect(noId.code).toBe(2);
    expect(noId.stderr).toContain("logs show needs a run: its id (the first column of logs), last, --task N");
  });
});

describe("logs stats", () => {
  /** on_task_completed.sh × task_completed: 6 runs — 3 passed, 2 failed, 1 timed out; durations 10…60. */
  const KNOWN: Seed[] = [
    { at: "2026-03-01T08:00:00.000Z", task: "1", outcome: "passed", durationMs: 30 },
    { at: "2026-03-01T08:01:00.000Z", task: "2", outcome: "failed", durationMs: 10 },
    { at: "2026-03-01T08:02:00.000Z", task: "2", outcome: "timed_out", durationMs: 60 },
    { at: "2026-03-01T08:03:00.000Z", task: "7", outcome: "failed", durationMs: 20 },
    { at: "2026-03-01T08:04:00.000Z", task: "2", outcome: "passed", durationMs: 50 },
    { at: "2026-03-01T08:05:00.000Z", task: "7", outcome: "passed", durationMs: 40 },
    { at: "2026-03-01T08:06:00.000Z", event: "idle", member: "ada", outcome: "passed", durationMs: 5 },
    {
      at: "2026-03-01T08:07:00.000Z",
      event: "idle",
      member: "ada",
      outcome: "error",
      durationMs: 1500,
      hook: "on_idle.mjs",
    },
  ];

  it("gives runs, pass rate, outcome counts, p50 / p95 and the most-failed tasks per hook and event", async () => {
    const t = await team();
    await seed(t, KNOWN);
    const json = await logs(["stats", "--team-dir", t.teamDir, "--json"]);
    expect(json.code).toBe(0);
    expect(
      json.stdout
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([
      {
        hook: "on_idle.mjs",
        event: "idle",
        runs: 1,
        passed: 0,
        failed: 0,
        timedOut: 0,
        error: 1,
        passRate: 0,
        p50Ms: 1500,
        p95Ms: 1500,
        mostFailedTasks: [],
      },
      {
        hook: "on_idle.sh",
        event: "idle",
        runs: 1,
        passed: 1,
        failed: 0,
        timedOut: 0,
        error: 0,
        passRate: 1,
        p50Ms: 5,
        p95Ms: 5,
        mostFailedTasks: [],
      },
      {
        hook: "on_task_completed.sh",
        event: "task_completed",
        runs: 6,
        passed: 3,
        failed: 2,
        timedOut: 1,
        error: 0,
        passRate: 0.5,
        p50Ms: 30,
        p95Ms: 60,
        mostFailedTasks: [
          { taskId: "2", failures: 2 },
          { taskId: "7", failures: 1 },
        ],
      },
    ]);

    const table = await logs(["stats", "--team-dir", t.teamDir]);
    expect(table.stdout).toBe(
      [
        "hook                  event           runs  pass rate  failed  timed out  error   p50   p95  most-failed tasks",
        "on_idle.mjs           idle               1         0%       0          0      1  1.5s  1.5s  -",
        "on_idle.sh            idle               1       100%       0          0      0   5ms   5ms  -",
        "on_task_completed.sh  task_completed     6        50%       2          1      0  30ms  60ms  #2 (2), #7 (1)",
        "",
      ].join("\n"),
    );
  });

  it("applies the filters and --limit (the newest N)", async () => {
    const t = await team();
    await seed(t, KNOWN);
    const parse = (stdout: string): Array<{ hook: string; runs: number; passRate: number }> =>
      stdout
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l) as { hook: string; runs: number; passRate: number });
    expect(parse((await logs(["stats", "--team-dir", t.teamDir, "--json", "--task", "2"])).stdout)).toMatchObject([
      { hook: "on_task_completed.sh", runs: 3, passRate: 1 / 3 },
    ]);
    expect(
      parse((await logs(["stats", "--team-dir", t.teamDir, "--json", "--limit", "3"])).stdout).map((r) => [
        r.hook,
        r.runs,
      ]),
    ).toEqual([
      ["on_idle.mjs", 1],
      ["on_idle.sh", 1],
      ["on_task_completed.sh", 1],
    ]);
    const none = await logs(["stats", "--team-dir", t.teamDir, "--event", "task_failed"]);
    const leftOut = "runs by hand (pi-teams-hooks run) are left out: --include-hand-runs counts them";
    expect(none.stdout).toBe(`no hook logs (event task_failed) in ${path.join(t.teamDir, "hook-logs")}; ${leftOut}\n`);
  });
});

describe("logs prune", () => {
  /** Ten logs a day apart, from `base` on (default 2026-03-01 … 03-10), and a foreign notes.json. */
  async function ten(
    base = Date.parse("2026-03-01T00:00:00.000Z"),
  ): Promise<{ t: TempTeam; dir: string; names: string[] }> {
    const t = await team();
    const files = await seed(
      t,
      Array.from({ length: 10 }, (_, i) => ({
        at: new Date(base + i * 86_400_000).toISOString(),
        task: String(i + 1),
      })),
    );
    const dir = path.join(t.teamDir, "hook-logs");
    await writeFile(path.join(dir, "notes.json"), "{}", "utf8");
    return { t, dir, names: files.map((f) => path.basename(f)) };
  }

  it("--keep N removes all but the newest N, printing each, and leaves foreign files alone", async () => {
    const { t, dir, names } = await ten();
    const { code, stdout } = await logs(["prune", "--keep", "3", "--team-dir", t.teamDir]);
    expect(code).toBe(0);
    expect(stdout).toBe(
      `${names
        .slice(0, 7)
        .map((n) => `removed ${n}\n`)
        .join("")}removed 7 hook log(s), kept 3 in ${dir}; 1 other .json file(s) left alone\n`,
    );
    expect((await readdir(dir)).sort()).toEqual([...names.slice(7), "notes.json"].sort());
  });

  it("--older-than removes logs started before now − age; an ISO time works too", async () => {
    // Ages 9d23h, 8d23h, … 0d23h: five are older than 5 days.
    const { t, dir, names } = await ten(Date.now() - 10 * 86_400_000 + 3_600_000);
    const aged = await logs(["prune", "--older-than", "5d", "--team-dir", t.teamDir]);
    expect(aged.code).toBe(0);
    expect(aged.stdout.split("\n").filter((l) => /^removed \d{4}-/.test(l))).toEqual(
      names.slice(0, 5).map((n) => `removed ${n}`),
    );
    expect((await readdir(dir)).sort()).toEqual([...names.slice(5), "notes.json"].sort());
    const sixth = names[5] ?? "";
    const iso = await logs([
      "prune",
      "--older-than",
      new Date(Date.parse(sixth.slice(0, 10)) + 86_400_000).toISOString().slice(0, 10),
      "--team-dir",
      t.teamDir,
    ]);
    expect(iso.stdout).toContain(`removed ${sixth}\nremoved 1 hook log(s), kept 4`);
  });

  it("--dry-run lists what would go and removes nothing; --json prints one object per log", async () => {
    const { t, dir, names } = await ten();
    const before = (await readdir(dir)).sort();
    const dry = await logs(["prune", "--keep", "8", "--dry-run", "--team-dir", t.teamDir]);
    expect(dry.stdout).toBe(
      `would remove ${names[0]}\nwould remove ${names[1]}\nwould remove 2 hook log(s), would keep 8 in ${dir}; 1 other .json file(s) left alone (dry run: nothing removed)\n`,
    );
    expect((await readdir(dir)).sort()).toEqual(before);
    const json = await logs(["prune", "--keep", "9", "--json", "--team-dir", t.teamDir]);
    expect(
      json.stdout
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([{ file: path.join(dir, names[0] ?? ""), removed: true }]);
  });

  it("--keep with --older-than removes only old logs beyond the newest N", async () => {
    const { t, names } = await ten();
    const { stdout } = await logs([
      "prune",
      "--keep",
      "8",
      "--older-than",
      "2026-03-06",
      "--team-dir",
      t.teamDir,
      "--dry-run",
    ]);
    expect(stdout.split("\n").filter((l) => /^would remove \d{4}-/.test(l))).toEqual(
      names.slice(0, 2).map((n) => `would remove ${n}`),
    );
    const { stdout: older } = await logs([
      "prune",
      "--keep",
      "2",
      "--older-than",
      "2026-03-03",
      "--team-dir",
      t.teamDir,
      "--dry-run",
    ]);
    expect(older.split("\n").filter((l) => /^would remove \d{4}-/.test(l))).toEqual(
      names.slice(0, 2).map((n) => `would remove ${n}`),
    );
  });

  it("needs --keep or --older-than", async () => {
    const { t } = await ten();
    const none = await logs(["prune", "--team-dir", t.teamDir]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("logs prune needs --keep N or --older-than AGE");
  });
});

describe("logs: corrupt and foreign files", () => {
  it("reports each on stderr, naming the file and the problem, skips it, and exits 0", async () => {
    const t = await team();
    await seed(t, MIXED);
    const dir = path.join(t.teamDir, "hook-logs");
    const corrupt = path.join(dir, "2026-03-01T08-30-00-000Z_task_completed_task-5.json");
    const foreign = path.join(dir, "2026-03-01T09-15-00-000Z_idle.json");
    const empty = path.join(dir, "2026-03-01T09-16-00-000Z_idle.json");
    const notes = path.join(dir, "notes.json");
    await writeFile(corrupt, '{"invocation": {', "utf8");
    await writeFile(foreign, JSON.stringify({ hello: "world" }), "utf8");
    await writeFile(empty, "", "utf8");
    await writeFile(notes, JSON.stringify([1, 2, 3]), "utf8");
    // a write in progress: not listed
    await writeFile(path.join(dir, ".2026-03-01T09-20-00-000Z_idle.tmp.1.abc"), "{", "utf8");
    await mkdir(path.join(dir, "2026-03-01T09-21-00-000Z_idle.json")); // a folder with a log's name: not listed

    const { code, stdout, stderr } = await logs(["--team-dir", t.teamDir]);
    expect(code).toBe(0);
    expect(rows(stdout)).toHaveLength(MIXED.length);
    const warnings = stderr.trimEnd().split("\n");
    expect(warnings).toHaveLength(4);
    expect(warnings).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`^warning: ${escapeRegExp(corrupt)}: not JSON \\(.+\\) — log skipped$`)),
        expect.stringMatching(new RegExp(`^warning: ${escapeRegExp(foreign)}: invocation: .+ — log skipped$`)),
        expect.stringMatching(new RegExp(`^warning: ${escapeRegExp(empty)}: not JSON \\(.+\\) — log skipped$`)),
        expect.stringMatching(new RegExp(`^warning: ${escapeRegExp(notes)}: \\(root\\): .+ — log skipped$`)),
      ]),
    );

    const stats = await logs(["stats", "--team-dir", t.teamDir, "--json"]);
    expect(stats.code).toBe(0);
    expect(stats.stderr.trimEnd().split("\n")).toHaveLength(4);
    const json = await logs(["--team-dir", t.teamDir, "--json"]);
    expect(json.stdout.trimEnd().split("\n")).toHaveLength(MIXED.length);
  });

  it("places a valid log with a name of its own by its start time", async () => {
    const t = await team();
    await seed(t, MIXED);
    const dir = path.join(t.teamDir, "hook-logs");
    await writeFile(
      path.join(dir, "copied-by-hand.json"),
      JSON.stringify(record(t.teamDir, { at: "2026-03-01T08:30:00.000Z", task: "42" })),
      "utf8",
    );
    const { stdout, stderr } = await logs(["--team-dir", t.teamDir, "--limit", "0"]);
    expect(stderr).toBe("");
    expect(column(stdout, 2).slice(0, 3)).toEqual(["#1", "#42", "#2"]);
    expect(column((await logs(["--team-dir", t.teamDir, "--task", "42"])).stdout, 2)).toEqual(["#42"]);
  });
});

describe("logs: the team and the flags", () => {
  it("--team ID finds the team under PI_TEAMS_ROOT_DIR", async () => {
    const t = await team();
    await seed(t, MIXED);
    const { code, stdout } = await logs(["--team", "alpha", "--limit", "1"], { PI_TEAMS_ROOT_DIR: t.teamsRoot });
    expect(code).toBe(0);
    expect(column(stdout, 0)).toEqual(["2026-03-01 11:30:00"]);
  });

  it.each([
    {
      name: "--team without PI_TEAMS_ROOT_DIR",
      args: ["--team", "alpha"],
      env: {},
      message:
        '--team alpha: PI_TEAMS_ROOT_DIR is not set, so there is no teams root to look for "alpha" in; set it, or pass --team-dir DIR',
    },
    { name: "no team at all", args: [], env: {}, message: "--team-dir DIR or --team ID is required" },
    {
      name: "--team and --team-dir",
      args: ["--team", "alpha", "--team-dir", "x"],
      env: {},
      message: "--team-dir and --team: give one, not both",
    },
    {
      name: "a team id that is not one",
      args: ["--team", "../etc"],
      env: { PI_TEAMS_ROOT_DIR: "/tmp" },
      message: '--team "../etc" is not a team id',
    },
    {
      name: "a bad --outcome",
      args: ["--team-dir", ".", "--outcome", "broken"],
      env: {},
      message: '--outcome "broken" must be one of passed, failed, timed_out, error',
    },
    {
      name: "a bad --event",
      args: ["--team-dir", ".", "--event", "task_done"],
      env: {},
      message: '--event "task_done" must be one of task_completed, task_failed, idle',
    },
    {
      name: "a bad --since",
      args: ["--team-dir", ".", "--since", "yesterday"],
      env: {},
      message:
        '--since "yesterday" must be an age (a number with a unit: 30s, 90m, 1.5h, 1d12h, 1500ms (units ms, s, m, h, d, w)) or an ISO 8601 time',
    },
    {
      name: "a bad --limit",
      args: ["--team-dir", ".", "--limit", "ten"],
      env: {},
      message: '--limit "ten" must be a whole number ≥ 0',
    },
    {
      name: "a --limit past 2^53",
      args: ["--team-dir", ".", "--limit", "99999999999999999999"],
      env: {},
      message: '--limit "99999999999999999999" must be a whole number ≥ 0',
    },
    {
      name: "a bad --keep",
      args: ["prune", "--team-dir", ".", "--keep", "1.5"],
      env: {},
      message: '--keep "1.5" must be a whole number ≥ 0',
    },
    {
      name: "a bad --older-than",
      args: ["prune", "--team-dir", ".", "--older-than", "30x"],
      env: {},
      message: '--older-than "30x" must be an age',
    },
    {
      name: "a flag of another subcommand",
      args: ["--team-dir", ".", "--keep", "3"],
      env: {},
      message: "--keep does not apply to logs (only to logs prune)",
    },
    {
      name: "--follow on stats",
      args: ["stats", "--team-dir", ".", "--follow"],
      env: {},
      message: "--follow does not apply to logs stats (only to logs)",
    },
    { name: "an unknown subcommand", args: ["tail"], env: {}, message: 'unknown subcommand "tail"' },
    { name: "an unknown flag", args: ["--team-dir", ".", "--colour"], env: {}, message: "unknown flag --colour" },
  ])("usage error, exit 2: $name", async ({ args, env, message }) => {
    const { code, stdout, stderr } = await logs(args, env);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toContain(message);
  });

  it("a missing team dir is exit 2, naming it", async () => {
    const t = await team();
    const missing = path.join(t.teamsRoot, "nope");
    const byDir = await logs(["--team-dir", missing]);
    expect(byDir).toEqual({
      code: 2,
      stdout: "",
      stderr: `pi-teams-hooks logs: --team-dir ${missing}: no such directory\n`,
    });
    const byId = await logs(["--team", "nope"], { PI_TEAMS_ROOT_DIR: t.teamsRoot });
    expect(byId.code).toBe(2);
    expect(byId.stderr).toContain(`--team nope: ${missing} (under PI_TEAMS_ROOT_DIR): no such directory`);
  });

  it("an unreadable hook-logs folder is exit 1", async () => {
    const t = await team();
    await writeFile(path.join(t.teamDir, "hook-logs"), "not a folder", "utf8");
    const { code, stderr } = await logs(["--team-dir", t.teamDir]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/cannot list hook logs in .*hook-logs/);
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
