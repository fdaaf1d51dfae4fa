/**
 * A tree's budget is counted from what the leader recorded (its ledger), never from fields a worker can
 * write in the tasks: a root that empties its budget keys, tasks that name another's task as their root,
 * a reopen count written into another's task.
 */
import { writeFile } from "node:fs/promises";
import { describe, it } from "vitest";
import {
  type LeaderRig,
  completeTasks,
  readAllTaskFiles,
  readLedger,
  readTaskFile,
  taskJson,
  useLeaderRig,
} from "../helpers/leader-rig.js";
import { updateTaskFile } from "../fixtures/workers/protocol.mjs";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const GATE = "on_task_completed.sh";
const FAILS = 'echo "FAIL: the build is red" >&2\nexit 1';

async function team(
  rig: LeaderRig,
  hooks: Record<string, unknown>,
  tasks = [makeTask({ id: "1", owner: "bob", status: "in_progress" })],
): Promise<TempTeam> {
  return rig.team({
    config: {
      version: 1,
      teamId: "alpha",
      taskListId: "alpha",
      leadName: "team-lead",
      members: [],
      hooks: { maxReopensPerTask: 3, ...hooks },
    },
    tasks,
  });
}

describe.concurrent("the tree's budget is the leader's record", () => {
  it("a worker that empties the root's budget keys each round: still 3 follow-ups for a budget of 3", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const t = await team(rig, { failureAction: "followup" });
    await rig.hook(t, GATE, FAILS);
    const leader = await rig.leader(t);
    for (let round = 0; round < 10; round++) {
      await updateTaskFile(t.taskFile("1"), (task) => ({
        ...task,
        metadata: { ...(task.metadata ?? {}), qualityGateBudgetKeys: [] },
      }));
      const open = [...(await readAllTaskFiles(t)).values()]
        .filter((task) => task.status !== "completed" || task.id === "1")
        .map((task) => task.id);
      const handled = leader.events().length;
      await completeTasks(t, open);
      await leader.waitForEvents(handled + open.length);
    }
    const followups = [...(await readAllTaskFiles(t)).values()].filter((x) => x.metadata?.qualityGateFollowupFor);
    expect(followups).toHaveLength(3);
    const spent = (await readLedger(t.teamDir)).filter((r) => r.op === "task" && r.key === "task:1");
    expect(Math.max(...spent.map((r) => Number(r.spent ?? 0)))).toBe(3);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("six tasks a worker made naming bob's task as their root, then failed: bob's first failure is reopened", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const t = await team(rig, { failureAction: "reopen" });
    await rig.hook(t, GATE, FAILS);
    const leader = await rig.leader(t);
    const planted = ["2", "3", "4", "5", "6", "7"];
    for (const id of planted) {
      const metadata = { qualityGateFollowupFor: "x", qualityGateSourceTaskId: "1", qualityGateRootTaskId: "1" };
      await writeFile(t.taskFile(id), taskJson({ id, owner: "mallory", status: "in_progress", metadata }));
    }
    await completeTasks(t, planted);
    await leader.waitForEvents(planted.length);
    await completeTasks(t, ["1"]);
    const [bobs] = await leader.waitForEvents(1, (e) => e.taskId === "1");
    expect(bobs?.actions).toContain("reopened (1/3)");
    const bob = await readTaskFile(t, "1");
    expect(bob.status).toBe("pending");
    expect(bob.metadata?.qualityGateEscalated).toBeUndefined();
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("reopenedByQualityGateCount: 3 written into bob's task: bob's first failure is reopened", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const bobsTask = makeTask({ id: "1", owner: "bob", status: "in_progress" });
    const t = await team(rig, { failureAction: "reopen" }, [bobsTask]);
    await rig.hook(t, GATE, FAILS);
    const leader = await rig.leader(t);
    await updateTaskFile(t.taskFile("1"), (task) => ({
      ...task,
      metadata: { ...(task.metadata ?? {}), reopenedByQualityGateCount: 3, qualityGateBudgetKeys: ["a", "b", "c"] },
    }));
    await completeTasks(t, ["1"]);
    const [bobs] = await leader.waitForEvents(1, (e) => e.taskId === "1");
    expect(bobs?.actions.some((a) => a.startsWith("reopened ("))).toBe(true);
    const bob = await readTaskFile(t, "1");
    expect(bob.status).toBe("pending");
    expect(bob.metadata?.qualityGateEscalated).toBeUndefined();
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
