/**
 * The leader under floods of what agents can write: a burst of idle notifications runs the idle gate a
 * handful of times per member and never holds a completion's gate back behind it, and a task with a
 * huge description is handed back with no more of it than a gate sees.
 */
import { rename, writeFile } from "node:fs/promises";
import { describe, it } from "vitest";
import { readInboxFile, readLedger, readLogs, useLeaderRig } from "../helpers/leader-rig.js";
import { makeMessage, makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

/** `count` idle notifications, `from` each member in turn, as one inbox file written at once. */
function burst(members: readonly string[], count: number): unknown[] {
  const base = Date.parse("2026-12-01T09:00:00.000Z");
  return Array.from({ length: count }, (_, i) => {
    const from = members[i % members.length] ?? "bob";
    const timestamp = new Date(base + i).toISOString();
    return makeMessage({ from, timestamp, text: JSON.stringify({ type: "idle_notification", from, timestamp }) });
  });
}

async function writeInbox(file: string, messages: unknown[]): Promise<void> {
  await writeFile(`${file}.tmp.burst`, `${JSON.stringify(messages, null, 2)}\n`);
  await rename(`${file}.tmp.burst`, file);
}

describe.concurrent("floods", () => {
  it("1,000 idle notifications of one member run its idle gate a handful of times; each is done once in the ledger", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ inbox: [] });
    await rig.hook(team, "on_idle.sh", "sleep 0.2");
    const leader = await rig.leader(team);
    await writeInbox(team.inboxFile("team", team.leadName), burst(["bob"], 1000));
    await leader.waitFor("every notification done in the ledger", async () => {
      const done = (await readLedger(team.teamDir)).filter((r) => r.op === "done" && r.key.startsWith("idle:"));
      return new Set(done.map((r) => r.key)).size === 1000;
    });
    const runs = (await readLogs(team.teamDir)).filter((l) => l.invocation.event === "idle");
    expect(runs.length).toBeGreaterThanOrEqual(1);
    expect(runs.length).toBeLessThanOrEqual(5);
    // The latest notification is never the one left out: its gate ran.
    expect(runs.map((l) => l.invocation.timestamp)).toContain(
      new Date(Date.parse("2026-12-01T09:00:00.000Z") + 999).toISOString(),
    );
    const done = (await readLedger(team.teamDir)).filter((r) => r.op === "done" && r.key.startsWith("idle:"));
    expect(done).toHaveLength(1000);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("a completion written during a burst of idle notifications of many members is judged before the burst ends", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ inbox: [], tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    await rig.hook(team, "on_idle.sh", "sleep 0.05");
    await rig.hook(team, "on_task_completed.sh", "exit 1");
    const leader = await rig.leader(team);
    const members = Array.from({ length: 60 }, (_, i) => `agent-${i}`);
    await writeInbox(team.inboxFile("team", team.leadName), burst(members, 60));
    await leader.waitForEvents(1, (e) => e.event === "idle");
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await leader.waitForEvents(60, (e) => e.event === "idle", 60_000);
    const order = leader.events().map((e) => e.event);
    const judged = order.indexOf("task_completed");
    expect(judged).toBeGreaterThan(0);
    // Judged at the next free slot: well before the last of the 60 idle gates, not behind all of them.
    expect(judged).toBeLessThan(order.lastIndexOf("idle") - 10);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("a reopened task with a 60 KB description is handed back with at most the contract's 8,000 characters of it", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const description = "x".repeat(60_000);
    const team = await rig.team({
      tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress", description })],
    });
    await rig.hook(team, "on_task_completed.sh", "exit 1");
    const leader = await rig.leader(team, ["--failure-action", "reopen"]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await leader.waitForEvents(1, (e) => e.event === "task_completed");
    const inbox = await readInboxFile(team, team.taskListId, "alice");
    const assignments = inbox
      .filter((m) => m.text.startsWith("{"))
      .map((m) => JSON.parse(m.text) as { type?: string; description?: string })
      .filter((m) => m.type === "task_assignment");
    expect(assignments).toHaveLength(1);
    expect(assignments[0]?.description).toHaveLength(8_000);
    expect(assignments[0]?.description?.endsWith("…")).toBe(true);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
