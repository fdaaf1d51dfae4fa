/**
 * `pi-teams-hooks run --timeout-ms 500` against hooks that misbehave on purpose: each returns in
 * under 3 s (timeout + grace + margin), no process the hook started is left alive, nothing of the run
 * is left (its private folder in the leader's runs folder, runner/run-dir.ts, nor anything beside the
 * gate), and the log says timedOut where it timed out. Exit codes and outcomes are checked from the
 * command's --json output.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runsRoot } from "../../extensions/teams-hooks/runner/run-dir.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

const exec = promisify(execFile);
const BIN = path.resolve("dist/teams-hooks/bin.js");
const FIXTURES = path.resolve("test/fixtures/hooks");

let team: TempTeam;
beforeAll(async () => {
  team = await makeTempTeam({ teamId: "hang", tasks: [makeTask({ id: "1", status: "completed" })] });
});
afterAll(async () => {
  await team.cleanup();
});

/** Live (non-zombie) processes whose environment carries this run id. */
function processesOfRun(runId: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      if (fs.readFileSync(`/proc/${entry}/environ`, "latin1").split("\0").includes(`PI_TEAMS_HOOK_RUN_ID=${runId}`))
        found.push(Number(entry));
    } catch {
      // the process ended while we looked: not a survivor
    }
  }
  return found;
}

interface RunJson {
  result: {
    outcome: string;
    exitCode: number | null;
    timedOut: boolean;
    leftoverProcesses: number;
    runId: string;
    durationMs: number;
  };
}

/**
 * What is left of run `runId`: its private folders in the leader's runs folder (the command inherits
 * this process's XDG_STATE_HOME), and anything beside the gate in `hooksDir` but the gate.
 */
function leftOfRun(runId: string, hooksDir: string): string[] {
  const folders = fs.readdirSync(runsRoot()).filter((name) => name.startsWith(`${runId}.`));
  const beside = fs.readdirSync(hooksDir).filter((name) => !name.startsWith("on_task_completed."));
  return [...folders, ...beside];
}

async function fire(
  hookFile: string,
  timeoutMs = 500,
): Promise<{ code: number; ms: number; json: RunJson; hooksDir: string }> {
  const hooksDir = fs.mkdtempSync(path.join(team.teamsRoot, "hooks-"));
  const ext = path.extname(hookFile);
  fs.copyFileSync(path.join(FIXTURES, hookFile), path.join(hooksDir, `on_task_completed${ext}`));
  const started = performance.now();
  let code = 0;
  let stdout = "";
  try {
    ({ stdout } = await exec(process.execPath, [
      BIN,
      "run",
      "task_completed",
      "--team-dir",
      team.teamDir,
      "--task",
      "1",
      "--hooks-dir",
      hooksDir,
      "--timeout-ms",
      String(timeoutMs),
      "--json",
    ]));
  } catch (error) {
    const failed = error as { code?: number; stdout?: string };
    code = failed.code ?? -1;
    stdout = failed.stdout ?? "";
  }
  const ms = performance.now() - started;
  return { code, ms, json: JSON.parse(stdout) as RunJson, hooksDir };
}

describe("run --timeout-ms 500: every process the hook started ends", () => {
  it.each([
    ["sleep 300 & wait", "sleep-bg-wait.sh"],
    ["a subshell (sleep 300; true)", "subshell-sleep.sh"],
    ["a foreground sleep 300", "sleep-forever.sh"],
    ["trap '' TERM; sleep 300", "trap-term.sh"],
    ["setsid sleep 300 & wait", "setsid-escape.sh"],
    ["a node hook that ignores SIGTERM", "ignore-term.mjs"],
  ])("%s: timed out, exit 1, nothing left", async (_name, fixture) => {
    const { code, ms, json, hooksDir } = await fire(fixture);
    expect(code).toBe(1);
    expect(json.result).toMatchObject({ outcome: "error", timedOut: true });
    // The run itself ends within timeout + 2 s; the command around it adds node's start-up, which a
    // loaded machine stretches, so the wall clock only has to show that nothing hung.
    expect(json.result.durationMs).toBeLessThan(3_000);
    expect(ms).toBeLessThan(15_000);
    expect(processesOfRun(json.result.runId)).toEqual([]);
    expect(leftOfRun(json.result.runId, hooksDir)).toEqual([]);
  });

  it("sleep 300 & exit 0: passes with its exit code, at once, and the leftover is killed and counted", async () => {
    // Its own timeout is far away: on a loaded machine bash alone can take 500 ms to start and exit,
    // and this case is about a hook that exits at once while a child holds its stdout, not a timeout.
    const { code, ms, json, hooksDir } = await fire("fork-grandchild.sh", 20_000);
    expect(code).toBe(0);
    expect(json.result).toMatchObject({ outcome: "passed", exitCode: 0, timedOut: false });
    expect(json.result.leftoverProcesses).toBeGreaterThanOrEqual(1);
    expect(json.result.durationMs).toBeLessThan(3_000);
    expect(ms).toBeLessThan(15_000);
    expect(processesOfRun(json.result.runId)).toEqual([]);
    expect(leftOfRun(json.result.runId, hooksDir)).toEqual([]);
  });
});
