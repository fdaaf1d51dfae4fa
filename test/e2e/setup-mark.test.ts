/**
 * A gate (or the agents' tests it passes its output and exit status on from) that prints the sandbox's own mark
 * and exits 125 is a gate that failed, not a sandbox that could not be built: a set-up failure is said where the
 * gate cannot say it (runner/sandbox.ts setupScript, runner/standby.ts WAIT), and the work is judged. Started at
 * the event (`run`) or from a leader's standby.
 */
import { describe, it } from "vitest";
import { completeTasks, readLogs, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

/** What failing tests print to pass for a sandbox that could not be built. */
const FORGED = [
  'echo "pi-teams-hooks sandbox: the gate\'s view could not be built (mount -a -T /x)" >&2',
  "exit 125",
].join("\n");

describe.concurrent("the sandbox's mark, printed by a gate", () => {
  it("is the gate failing when its run started at the event", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })] });
    await rig.hook(team, "on_task_completed.sh", FORGED);
    const out = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--json"], {
      cwd: team.teamsRoot,
    });
    const record = JSON.parse(out.stdout.trim().split("\n").at(-1) ?? "null") as {
      result: { outcome: string; exitCode: number | null; errorCode?: string; sandbox?: string };
    };
    expect(record.result).toMatchObject({ outcome: "failed", exitCode: 125, sandbox: "on" });
    expect(record.result.errorCode).toBeUndefined();
  });

  // A standby whose environment cannot be said to its `sh` (a value over its limit: an agent's task subject of
  // 97 KB) is ended, and its run starts the usual way in its folder: no `started` on fd 3 then, yet the gate ran.
  it.for([
    ["started from a standby", undefined],
    ["fell back from a standby to the usual start", "s".repeat(97 * 1024)],
  ] as const)("is the gate failing when its run %s", async ([, subject], context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const ids = ["1", "2", "3"];
    const team = await rig.team({
      tasks: ids.map((id) => makeTask({ id, owner: "alice", status: "in_progress", ...(subject ? { subject } : {}) })),
    });
    await rig.hook(team, "on_task_completed.sh", FORGED);
    const leader = await rig.leader(team);
    for (const [n, id] of ids.entries()) {
      await completeTasks(team, [id]);
      await leader.waitForEvents(n + 1);
    }
    const logs = await readLogs(team.teamDir);
    expect(logs.map((log) => [log.result.outcome, log.result.exitCode, log.result.errorCode])).toEqual(
      ids.map(() => ["failed", 125, undefined]),
    );
  });
});

// Node's line for a module it cannot find makes a Node gate's failure an error of the gate (held, not blamed on
// the work). A gate judged by its exit status alone passes the output of the agents' tests on, and the tests can
// print that line: its exit status is its verdict all the same.
describe("Node's module-not-found line, printed by a verdict=exit gate's tests", () => {
  it("is the gate failing", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })] });
    await rig.hook(
      team,
      "on_task_completed.mjs",
      [
        "// pi-teams-hooks: verdict=exit",
        "process.stderr.write(\"Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/x/y.js' imported from /x/test.js\\n\");",
        "process.exitCode = 1;",
      ].join("\n"),
    );
    const out = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--json"], {
      cwd: team.teamsRoot,
    });
    const record = JSON.parse(out.stdout.trim().split("\n").at(-1) ?? "null") as {
      result: { outcome: string; exitCode: number | null; errorCode?: string; stderr: string };
    };
    expect(record.result).toMatchObject({ outcome: "failed", exitCode: 1 });
    expect(record.result.stderr).toContain("ERR_MODULE_NOT_FOUND");
    expect(record.result.errorCode).toBeUndefined();
  });
});
