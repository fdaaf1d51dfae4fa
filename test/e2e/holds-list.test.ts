/**
 * `hook-state/holds.json` is the leader's word on what it holds, read by `/gates status`, the dashboard
 * and `doctor`. The agents the gates judge can write it: a list emptied or removed while the leader runs
 * is written again from the leader's memory at its next reconcile scan, and said.
 */
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { completeTasks, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const ARGS = ["--reconcile-ms", "200"];

async function listedKeys(teamDir: string): Promise<string[] | false> {
  try {
    const file = JSON.parse(await readFile(path.join(teamDir, "hook-state", "holds.json"), "utf8"));
    return (file.holds as Array<{ key: string }>).map((h) => h.key);
  } catch {
    return false;
  }
}

describe("the list of held events", () => {
  it("emptied, then removed, while the leader runs: written again from its memory, and said", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    await rig.hook(team, "on_task_completed.sh", "exit 1");
    const leader = await rig.leader(team, ARGS);
    // The gate changed since it was trusted: the completion is held for the lead's approval.
    await rig.hook(team, "on_task_completed.sh", "echo changed; exit 1");
    const { "1": completedAt } = await completeTasks(team, ["1"]);
    const key = `task_completed:1:${completedAt}`;
    await leader.waitFor("the hold listed", async () => ((await listedKeys(team.teamDir)) || []).includes(key));

    const file = path.join(team.teamDir, "hook-state", "holds.json");
    const listed = JSON.parse(await readFile(file, "utf8"));
    await writeFile(file, JSON.stringify({ ...listed, holds: [] }));
    await leader.waitFor("the hold listed again", async () => ((await listedKeys(team.teamDir)) || []).includes(key));
    await leader.waitFor("the warning", () => leader.warnings().find((w) => w.includes("holds.json")));

    await rm(file);
    await leader.waitFor("the list written again", async () => ((await listedKeys(team.teamDir)) || []).includes(key));
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
