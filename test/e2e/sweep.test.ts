/**
 * `hooks.sweep` in config.json: a hook that exits 0 at once but leaves a `setsid` daemon with its
 * output redirected (test/fixtures/hooks/setsid-quiet.sh) is invisible to its process group and its
 * pipes. With `"always"` every run is swept for processes carrying its run id, so the daemon is gone
 * when the run is over; with the default (`"auto"`) a clean exit is not swept and the daemon is left
 * running — which the default case shows, then kills itself. Either way the run's private folder
 * (`<runs root>/<run id>.XXXXXX`: its context file, result file and the gate's copy) is gone when the
 * run is over, even while the daemon it left still runs.
 */
import { execFile } from "node:child_process";
import { copyFile, mkdir, readdir } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { runsRoot } from "../../extensions/teams-hooks/runner/run-dir.js";
import { BIN, REPO_ROOT, processesWithEnv, readLogs, useLeaderRig, waitUntil } from "../helpers/leader-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const rig = useLeaderRig();
const execFileAsync = promisify(execFile);

const SETSID_QUIET = path.join(REPO_ROOT, "test", "fixtures", "hooks", "setsid-quiet.sh");

async function quietDaemonTeam(sweep: string | undefined, sandbox = "off"): Promise<TempTeam> {
  // Unsandboxed unless asked: the sweep is what ends a daemon outside the sandbox, which ends its own.
  const team = await rig.team({
    config: { teamId: "alpha", hooks: { sandbox, ...(sweep === undefined ? {} : { sweep }) } },
    tasks: [
      makeTask({ id: "1", owner: "alice", status: "completed" }),
      makeTask({ id: "2", owner: "alice", status: "in_progress" }),
    ],
  });
  const hooks = path.join(team.teamsRoot, "_hooks");
  await mkdir(hooks, { recursive: true });
  await copyFile(SETSID_QUIET, path.join(hooks, "on_task_completed.sh"));
  return team;
}

/** `pi-teams-hooks run task_completed --task 1` as a person would type it (no PI_TEAMS_* of the test's own). */
async function runGate(team: TempTeam): Promise<void> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("PI_TEAMS_")));
  await execFileAsync(process.execPath, [BIN, "run", "task_completed", "--team-dir", team.teamDir, "--task", "1"], {
    cwd: team.teamsRoot,
    env,
  });
}

/** The private folders of run `runId` left in the leader's runs folder (the leaders here share this process's). */
async function runFolders(runId: string): Promise<string[]> {
  return (await readdir(runsRoot())).filter((name) => name.startsWith(`${runId}.`));
}

/** The processes still carrying the run id of the team's only hook log. */
async function leftOf(team: TempTeam): Promise<{ runId: string; processes: Array<{ pid: number; cmdline: string }> }> {
  const [log] = await readLogs(team.teamDir);
  const runId = log?.result.runId ?? "(no log)";
  return { runId, processes: await processesWithEnv(`PI_TEAMS_HOOK_RUN_ID=${runId}`) };
}

describe("hooks.sweep", () => {
  it('"always": the setsid daemon a cleanly exiting hook leaves is gone when `run` returns', async () => {
    const team = await quietDaemonTeam("always");
    await runGate(team);
    const { runId, processes } = await leftOf(team);
    expect(processes).toEqual([]);
    expect(await runFolders(runId)).toEqual([]);
    expect((await readLogs(team.teamDir))[0]?.result).toMatchObject({ outcome: "passed", leftoverProcesses: 1 });
  });

  it("sandboxed (the default), the setsid daemon a cleanly exiting gate leaves is ended with its run, and counted", async () => {
    const team = await quietDaemonTeam(undefined, "auto");
    await runGate(team);
    expect((await leftOf(team)).processes).toEqual([]);
    const [log] = await readLogs(team.teamDir);
    expect(log?.result).toMatchObject({ outcome: "passed", sandbox: "on" });
    expect(log?.result.leftoverProcesses).toBeGreaterThanOrEqual(1);
  });

  it('unsandboxed, the default ("auto"): a clean exit is not swept, so the setsid daemon is left running', async () => {
    const team = await quietDaemonTeam(undefined);
    let left: Array<{ pid: number; cmdline: string }> = [];
    try {
      await runGate(team);
      left = await waitUntil("the daemon", async () => {
        const found = (await leftOf(team)).processes;
        return found.length > 0 ? found : null;
      });
      expect(left.map((p) => p.cmdline)).toEqual(["sleep 300"]);
      expect(await runFolders((await leftOf(team)).runId)).toEqual([]);
      expect((await readLogs(team.teamDir))[0]?.result).toMatchObject({ outcome: "passed", leftoverProcesses: 0 });
    } finally {
      for (const { pid } of left.length > 0 ? left : (await leftOf(team)).processes) process.kill(pid, "SIGKILL");
    }
  });

  it('"always" in the leader: the policy line says so, and the daemon of a watched completion is gone after its event', async () => {
    const team = await quietDaemonTeam("always");
    const leader = await rig.leader(team);
    expect(leader.linesOf("policy")[0]).toMatchObject({ sweep: "always", sweepSource: "config" });
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({ taskId: "2", outcome: "passed" });
    expect((await leftOf(team)).processes).toEqual([]);
    expect(await leader.stop("SIGTERM")).toMatchObject({ code: 0 });
  });
});
