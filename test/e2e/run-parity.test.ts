/**
 * `pi-teams-hooks run` behaves as the leader would, through the built bin: a task event without
 * `--member` is the task owner's (the leader's event member), so a `members=` gate judges it as the
 * leader's run would.
 */
import { describe, it } from "vitest";
import { readLogs, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

describe("run, as the leader would", () => {
  it("without --member, a task event is its owner's: a members= gate for the owner judges it, as under the leader", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "completed", owner: "bob" })] });
    await rig.hook(team, "on_task_completed.sh", "# pi-teams-hooks: members=bob\necho \"member $PI_TEAMS_MEMBER\" >&2\nexit 1");

    const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(ran.code, ran.stdout + ran.stderr).toBe(1);
    expect(ran.stdout).toMatch(/^task_completed #1 on_task_completed\.sh failed in \S+: exit code 1 • member bob \(run [0-9a-f]{8}\)$/m);
    const [log] = await readLogs(team.teamDir);
    expect(log?.invocation.memberName).toBe("bob");

    // --member still names someone else, and the gate for bob skips that member's event.
    const other = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--member", "alice"]);
    expect(other.code, other.stdout + other.stderr).toBe(0);
    expect(other.stdout).toContain("skipped in 0ms: no gate in force: on_task_completed skipped (members=bob: member alice does not match)");
  });
});
