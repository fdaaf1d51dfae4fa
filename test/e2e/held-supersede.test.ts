/**
 * One run per held event: completions that arrive while a task's event is held supersede each other, so
 * the approval runs the gate once, on the latest, not once per completion.
 */
import { appendFile, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { readInboxFile, readLedger, readLogs, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

describe("completions while a gate is held", () => {
  it("five completions while the gate waits for approval: one run at the approval, on the latest", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    const gate = await rig.hook(team, "on_task_completed.sh", "exit 0");
    const leader = await rig.leader(team);
    await appendFile(gate, "# edited: not approved yet\n");
    for (let n = 1; n <= 5; n++) {
      await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
      await leader.waitForEvents(n, (e) => e.taskId === "1" && e.held === "approval");
    }
    const trusted = await runBin(["trust", "--team-dir", team.teamDir, "--all", "--yes"]);
    expect(trusted.code, trusted.stderr).toBe(0);
    await leader.waitForEvents(1, (e) => e.taskId === "1" && e.outcome === "passed");
    const last = leader.events((e) => e.taskId === "1" && e.held === "approval").at(-1)?.key;
    const passed = leader.events((e) => e.taskId === "1" && e.outcome === "passed");
    expect(passed.map((e) => e.key)).toEqual([last]);
    const ran = (await readLogs(team.teamDir)).filter((l) => l.result.outcome === "passed");
    expect(ran).toHaveLength(1);
    const superseded = (await readLedger(team.teamDir)).filter((r) => r.op === "done" && r.outcome === "superseded");
    expect(superseded).toHaveLength(4);
    // One note to the worker for the held event, not one per completion held.
    const notes = (await readInboxFile(team, team.taskListId, "alice")).filter((m) => m.qualityGateMessage === "held");
    expect(notes).toHaveLength(1);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("a gate edited and put back as it was trusted: its held event runs at the next scan, with no approval", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    const gate = await rig.hook(team, "on_task_completed.sh", "exit 0");
    const trustedText = await readFile(gate, "utf8");
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    await appendFile(gate, "# an edit, not approved\n");
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await leader.waitForEvents(1, (e) => e.taskId === "1" && e.held === "approval");
    await writeFile(gate, trustedText); // the edit reverted: the bytes trusted again
    const [passed] = await leader.waitForEvents(1, (e) => e.taskId === "1" && e.outcome === "passed");
    expect(passed).toMatchObject({ outcome: "passed", retry: true });
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("a leader killed after a held event's log, before the ledger's hold: the next start holds it again, never done", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    const gate = await rig.hook(team, "on_task_completed.sh", "exit 0");
    const first = await rig.leader(team);
    await appendFile(gate, "# edited: not approved yet\n");
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [held] = await first.waitForEvents(1, (e) => e.taskId === "1" && e.held === "approval");
    const key = held?.key ?? "";
    await first.kill();
    // The crash point: the ledger without the hold record (the log and the task's metadata are written).
    const file = path.join(team.teamDir, "hook-state", "ledger.jsonl");
    const lines = (await readFile(file, "utf8")).split("\n").filter(Boolean);
    const kept = lines.filter((line) => !(JSON.parse(line).op === "hold" && JSON.parse(line).key === key));
    expect(kept).toHaveLength(lines.length - 1);
    await writeFile(file, `${kept.join("\n")}\n`);
    const second = await rig.leader(team);
    expect(second.linesOf("recovered")).toEqual([{ type: "recovered", key, how: "held" }]);
    // Held again, as any held event at a start: its gate is still not approved.
    await second.waitForEvents(1, (e) => e.key === key && e.held === "approval");
    const ops = (await readLedger(team.teamDir)).filter((r) => r.key === key).map((r) => r.op);
    expect(ops).not.toContain("done");
    const trusted = await runBin(["trust", "--team-dir", team.teamDir, "--all", "--yes"]);
    expect(trusted.code, trusted.stderr).toBe(0);
    await second.waitForEvents(1, (e) => e.key === key && e.outcome === "passed");
    expect(await second.stop()).toMatchObject({ code: 0 });
  });
});
