/**
 * A task file must hold the task its name says (`<id>.json`): the leader's policy writes go to the
 * file the id names, so a completion in `7.json` that says `"id": "8"` would rewrite task 8. Such a
 * file is reported, naming the file and the field, and runs nothing until it is fixed.
 */
import { readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readAllTaskFiles, seedTasks, taskJson, useLeaderRig, elapse } from "../helpers/leader-rig.js";

const rig = useLeaderRig();

describe("a task file whose id does not match its name", () => {
  it("is reported and runs nothing, leaves the task its id names alone, and runs once fixed", async () => {
    const team = await rig.team();
    await seedTasks(team, 1, 8);
    await rig.hook(team, "on_task_completed.sh", `echo "$PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"; exit 1`);
    const leader = await rig.leader(team, ["--failure-action", "reopen"]);
    const task8Before = await readFile(team.taskFile("8"), "utf8");

    const write = async (id: string, fields: Record<string, unknown>): Promise<void> => {
      const tmp = `${team.taskFile("7")}.tmp.test.${Date.now()}`;
      await writeFile(tmp, taskJson({ id, owner: "alice", ...fields }));
      await rename(tmp, team.taskFile("7"));
    };
    await write("8", { status: "completed", metadata: { completedAt: "2026-01-01T00:00:00.000Z" } });
    await leader.waitFor("the warning", () => leader.warnings().some((w) => w.includes(team.taskFile("7"))));
    expect(leader.warnings().find((w) => w.includes(team.taskFile("7")))).toContain(
      'id: "8" does not match the file name',
    );
    await elapse(300); // a negative check: only time can show it
    expect(leader.events()).toEqual([]);
    expect(await readFile(team.taskFile("8"), "utf8")).toBe(task8Before);

    await write("7", { status: "completed", metadata: { completedAt: "2026-01-02T00:00:00.000Z" } });
    await leader.waitFor("the event", () => leader.events().length >= 1);
    expect(leader.events().map((e) => e.taskId)).toEqual(["7"]);
    expect((await readAllTaskFiles(team)).get("7")).toMatchObject({ status: "pending" }); // reopened: the right file
    expect(await readFile(path.join(team.teamDir, "runs.txt"), "utf8")).toBe("7\n");
    expect(await leader.stop()).toMatchObject({ code: 0 });
  }, 60_000);
});
