/**
 * The built `pi-teams-hooks logs` as a child process: `--follow` prints a log written after it
 * started and ends with exit 0 on SIGINT; exit codes and `--team` through the real binary; `--help`.
 */
import { execFile, spawn } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import type { HookLogRecordInput } from "../../extensions/teams-hooks/logs/hook-log.js";
import { writeHookLog } from "../../extensions/teams-hooks/logs/hook-log.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

const exec = promisify(execFile);
const BIN = path.resolve("dist/teams-hooks/bin.js");

const teams: TempTeam[] = [];
afterEach(async () => {
  for (const team of teams.splice(0)) await team.cleanup();
});

function record(teamDir: string, at: string, taskId: string, outcome: "passed" | "failed"): HookLogRecordInput {
  return {
    invocation: {
      event: "task_completed",
      teamId: "alpha",
      teamDir,
      taskListId: "alpha",
      style: "normal",
      memberName: "ada",
      completedTask: makeTask({ id: taskId, status: "completed" }),
    },
    result: {
      ran: true,
      hookPath: "/hooks/on_task_completed.sh",
      command: ["bash", "/hooks/on_task_completed.sh"],
      outcome,
      exitCode: outcome === "passed" ? 0 : 1,
      signal: null,
      timedOut: false,
      durationMs: 1234,
      stdout: "",
      stderr: outcome === "passed" ? "" : "FAIL: lint\n",
      stdoutDroppedBytes: 0,
      stderrDroppedBytes: 0,
      leftoverProcesses: 0,
      contextTruncated: false,
      runId: `run-${taskId}`,
      contractVersion: 1,
    },
    key: `task_completed:${taskId}:${at}`,
    startedAt: at,
    policy: { failureAction: "reopen", actions: outcome === "passed" ? ["none"] : ["reopened (1/3)", "nudge ada"] },
  };
}

async function bin(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [BIN, ...args], {
      env: { ...process.env, NO_COLOR: "1", PI_TEAMS_ROOT_DIR: "", ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

describe("logs through the built binary", () => {
  it("--follow prints a log written after it started, and exits 0 on SIGINT", async () => {
    const team = await makeTempTeam({ teamId: "alpha" });
    teams.push(team);
    await writeHookLog(team.teamDir, record(team.teamDir, "2026-03-01T08:00:00.000Z", "1", "passed"));

    const child = spawn(process.execPath, [BIN, "logs", "--team-dir", team.teamDir, "--follow"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NO_COLOR: "1", COLUMNS: "200" },
    }); // wide: every column (narrow ones: cli-terminal.test.ts)
    let stdout = "";
    let stderr = "";
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      child.on("exit", (code, signal) => resolve({ code, signal })),
    );
    const checks = new Set<() => void>();
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      for (const check of checks) check();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      for (const check of checks) check();
    });
    const waitFor = (what: () => boolean, label: string): Promise<void> =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no ${label} within 15 s; stdout: ${stdout}; stderr: ${stderr}`)),
          15_000,
        );
        const check = (): void => {
          if (!what()) return;
          clearTimeout(timer);
          checks.delete(check);
          resolve();
        };
        checks.add(check);
        check();
      });
    try {
      await waitFor(() => stderr.includes("following "), "'following' notice");
      expect(stdout).toMatch(
        /^id +time \(UTC\) .*\nrun-1 +2026-03-01 08:00:00 +task_completed +#1 +ada +on_task_completed\.sh +passed +1\.2s +-\n$/,
      );

      await writeHookLog(team.teamDir, record(team.teamDir, "2026-03-01T08:05:00.000Z", "2", "failed"));
      await waitFor(() => stdout.includes("#2"), "line for the new log");
      expect(stdout.trimEnd().split("\n").at(-1)).toMatch(
        /^run-2 +2026-03-01 08:05:00 +task_completed +#2 +ada +on_task_completed\.sh +failed +1\.2s +reopened \(1\/3\), nudge ada +FAIL: lint$/,
      );
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(stdout.match(/#2/g), stdout).toHaveLength(1);
  });

  it("--team resolves under PI_TEAMS_ROOT_DIR; without it, exit 2 saying why", async () => {
    const team = await makeTempTeam({ teamId: "alpha" });
    teams.push(team);
    await writeHookLog(team.teamDir, record(team.teamDir, "2026-03-01T08:00:00.000Z", "1", "failed"));
    const found = await bin(["logs", "--team", "alpha", "--json"], { PI_TEAMS_ROOT_DIR: team.teamsRoot });
    expect(found.code).toBe(0);
    expect(JSON.parse(found.stdout)).toMatchObject({
      file: expect.stringContaining(path.join(team.teamDir, "hook-logs")),
      invocation: { event: "task_completed" },
    });
    const lost = await bin(["logs", "--team", "alpha"]);
    expect(lost.code).toBe(2);
    expect(lost.stderr).toContain("PI_TEAMS_ROOT_DIR is not set");
  });

  it("a bidirectional control in a name or stderr is printed as its code point, in the table and in show", async () => {
    const team = await makeTempTeam({ teamId: "alpha" });
    teams.push(team);
    const base = record(team.teamDir, "2026-03-01T08:00:00.000Z", "1", "failed");
    const hookPath = "/hooks/on_task_completed_\u202egnp.sh";
    await writeHookLog(team.teamDir, {
      ...base,
      invocation: { ...base.invocation, memberName: "ada\u2066x" },
      result: { ...base.result, hookPath, stderr: "FAIL: \u202etxet desrever\n" },
    });
    const table = await bin(["logs", "--team-dir", team.teamDir], { COLUMNS: "400" });
    expect(table.code).toBe(0);
    expect(table.stdout).toContain("on_task_completed_<U+202E>gnp.sh");
    expect(table.stdout).toContain("ada<U+2066>x");
    const shown = await bin(["logs", "show", "last", "--team-dir", team.teamDir]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("FAIL: <U+202E>txet desrever");
    expect(`${table.stdout}${shown.stdout}`).not.toMatch(/[\u202a-\u202e\u2066-\u2069]/);
  });

  it("--help names every flag the command accepts", async () => {
    const { code, stdout } = await bin(["logs", "--help"]);
    expect(code).toBe(0);
    const filters = ["--event", "--task", "--member", "--hook", "--outcome", "--since", "--trigger", "--limit"];
    const others = ["--include-hand-runs", "--json", "--follow", "--keep", "--older-than", "--dry-run", "--failed"];
    const words = ["logs show <id>", "last", "logs stats", "logs prune"];
    for (const flag of ["--team-dir", "--team ", ...filters, ...others, ...words]) {
      expect(stdout).toContain(flag);
    }
    expect((await bin(["--help"])).stdout).toMatch(/^ {2}logs +list, show, follow/m);
  });
});
