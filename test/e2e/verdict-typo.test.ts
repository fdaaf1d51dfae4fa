/**
 * A verdict with a typo on the last line of stdout (`{"decision": "deny", "reason": oops`): it is not
 * JSON, so no verdict is read and the exit code decides, as the contract says; but it is said, through
 * the built bin, wherever the run is shown: `run`'s line and its JSON, the log, `logs show`, and a
 * running leader's event line.
 */
import { describe, it } from "vitest";
import { readLogs, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const TYPO = '{"decision": "deny", "reason": oops';
const GATE = `echo 'checked the work'\necho '${TYPO}'\nexit 0`;
const SAID = "a verdict-like line was not read: ";

describe("a verdict-like last line that is not JSON", () => {
  it("run passes on the exit code, and its line, its JSON, the log and logs show say the line was not read", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "completed", owner: "ada" })] });
    await rig.hook(team, "on_task_completed.sh", GATE);
    const args = ["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"];

    const human = await runBin(args);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/on_task_completed\.sh passed in /);
    expect(human.stdout).toContain(SAID);
    expect(human.stdout).toContain(TYPO);

    const json = await runBin([...args, "--json"]);
    const result = (JSON.parse(json.stdout) as { result: Record<string, unknown> }).result;
    expect(result).toMatchObject({ outcome: "passed", exitCode: 0 });
    expect(result.verdict).toBeUndefined();
    expect(result.verdictUnread).toMatch(/^not JSON \(.*\): \{"decision": "deny", "reason": oops$/);

    const logs = await readLogs(team.teamDir);
    expect(logs.map((l) => l.result.verdictUnread)).toEqual([result.verdictUnread, result.verdictUnread]);
    const shown = await runBin(["logs", "show", "last", "--team-dir", team.teamDir]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`${SAID}not JSON`);
    expect(shown.stdout).toContain(`${TYPO} (the exit code decided)`);
  });

  it("a JSON last line without decision, or a plain one, is ordinary output: nothing is said", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "completed", owner: "ada" })] });
    for (const last of ['{"tests": 12, "failed": 0}', "{ all good }", "done"]) {
      await rig.hook(team, "on_task_completed.sh", `echo '${last}'`);
      const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--json"]);
      const result = (JSON.parse(ran.stdout) as { result: Record<string, unknown> }).result;
      expect({ last, outcome: result.outcome, unread: result.verdictUnread }).toEqual({ last, outcome: "passed" });
    }
  });

  it("a running leader's event says it too, and the policy follows the exit code", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })],
      config: { hooks: { failureAction: "reopen" } },
    });
    await rig.hook(team, "on_task_completed.sh", GATE);
    const leader = await rig.leader(team);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1, (e) => e.event === "task_completed");
    expect(event).toMatchObject({ outcome: "passed", policyApplied: true });
    expect(event?.verdictUnread).toMatch(/^not JSON \(.*\): \{"decision": "deny", "reason": oops$/);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
