/**
 * A leader killed while a *later* hook of a chain runs (`on_task_completed.d/…`): the next
 * leader must end that hook's processes too, not only the first hook's, and remove the run's private
 * folder (its context file, result file and the gate's copy: runner/run-dir.ts) from the leader's runs
 * folder. The chain's hooks run as `<runId>`, `<runId>.2`, `<runId>.3`…, in folders
 * `<runs root>/<runId>.XXXXXX`, `<runs root>/<runId>-2.XXXXXX`…
 */
import { access, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runsRoot } from "../../extensions/teams-hooks/runner/run-dir.js";
import { sanitizeName } from "../../extensions/teams-hooks/team/paths.js";
import { readLogs, seedTasks, taskJson, useLeaderRig, waitUntil } from "../helpers/leader-rig.js";

const rig = useLeaderRig();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/**
 * The names among `names` of run folders of `runId` or its chain (`<runId>.N`, which sanitizeName makes
 * `<runId>-N`), as runner/run-dir.ts makeRunDir names them: `<runId>[-N].XXXXXX`.
 */
function runFoldersOf(names: string[], runId: string): string[] {
  const stem = sanitizeName(runId);
  return names.filter((name) => name.startsWith(stem) && /^(-\d+)?\.[A-Za-z0-9]{6}$/.test(name.slice(stem.length)));
}

describe("a leader killed in the middle of a chain", () => {
  it("the next leader ends the later hook's processes, removes the run's temp files, and retries the event once", async () => {
    const team = await rig.team();
    await seedTasks(team, 1, 1);
    const hooksDir = path.join(team.teamsRoot, "_hooks");
    await rig.hook(team, "on_task_completed.sh", `echo "v1 $PI_TEAMS_HOOK_RUN_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"`);
    await mkdir(path.join(hooksDir, "on_task_completed.d"), { recursive: true });
    // The second hook hangs the first time (a background child holds on too), and records what it is.
    const second = path.join(hooksDir, "on_task_completed.d", "20-hang.sh");
    await writeFile(
      second,
      [
        `D="$PI_TEAMS_TEAM_DIR"`,
        `echo "d20 $PI_TEAMS_HOOK_RUN_ID" >> "$D/runs.txt"`,
        `if mkdir "$D/hang-once" 2>/dev/null; then`,
        `  sleep 60 & echo "$!" > "$D/child.pid"`,
        `  echo "$PI_TEAMS_HOOK_CONTEXT_FILE" > "$D/context-file.txt"`,
        `  echo "$$" > "$D/hook.pid"`,
        `  wait`,
        `fi`,
      ].join("\n") + "\n",
    );

    const first = await rig.leader(team);
    await writeFile(
      team.taskFile("1"),
      taskJson({ id: "1", owner: "alice", status: "completed", metadata: { completedAt: "2026-01-01T00:00:00.000Z" } }),
    );
    const pidFile = path.join(team.teamDir, "hook.pid");
    await waitUntil("the hanging second hook", () => exists(pidFile));
    const hookPid = Number((await readFile(pidFile, "utf8")).trim());
    const childPid = Number((await readFile(path.join(team.teamDir, "child.pid"), "utf8")).trim());
    const contextFile = (await readFile(path.join(team.teamDir, "context-file.txt"), "utf8")).trim();
    expect(await exists(contextFile)).toBe(true);
    // The context file is in the run's private folder, in the leader's runs folder (runner/run-dir.ts runsRoot).
    const runFolder = path.dirname(contextFile);
    expect(path.basename(contextFile)).toBe("context.json");
    expect(path.dirname(runFolder)).toBe(runsRoot());
    await first.kill();
    expect(alive(hookPid) && alive(childPid)).toBe(true); // (else the kill proves nothing)

    const next = await rig.leader(team);
    await waitUntil("the orphaned hook and its child ended", () => !alive(hookPid) && !alive(childPid));
    expect(await exists(contextFile)).toBe(false);
    expect(await exists(runFolder)).toBe(false);
    expect(next.warnings().join("\n")).toMatch(/ended 2 process\(es\) left by an interrupted run of task_completed:1:/);

    // The event is retried: both hooks again, one log each, marked as a retry.
    await next.waitFor("the retried event", () => next.events().length >= 1);
    expect(next.events()).toHaveLength(1);
    expect(next.events()[0]).toMatchObject({ retry: true, outcome: "passed" });
    const runs = (await readFile(path.join(team.teamDir, "runs.txt"), "utf8")).trim().split("\n");
    const [v1First = "", d20First = "", v1Retry = "", d20Retry = ""] = runs.map((line) => line.split(" ")[1] ?? "");
    expect(runs).toHaveLength(4);
    expect(d20First).toBe(`${v1First}.2`);
    expect(d20Retry).toBe(`${v1Retry}.2`);
    expect(runFoldersOf([path.basename(runFolder)], d20First)).toHaveLength(1);
    // Nothing of either run is left in the runs folder: not the crashed one's, not the retry's.
    const names = await readdir(runsRoot());
    expect([...runFoldersOf(names, v1First), ...runFoldersOf(names, v1Retry)]).toEqual([]);
    const logs = await readLogs(team.teamDir);
    expect(logs).toHaveLength(2);
    expect(logs.every((log) => log.retry === true)).toBe(true);
    expect(await next.stop()).toMatchObject({ code: 0 });
  }, 60_000);
});
