/**
 * A completion counts as judged only when the leader's ledger and the task's gate record agree on it:
 * a `done` line nobody's gate record backs, or a ledger gone while the tasks still carry the records
 * of a leader that judged them, makes the leader judge the completion again and tell the lead once.
 */
import { appendFile, rm } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import {
  completeTasks,
  readAllTaskFiles,
  readInboxFile,
  readLogs,
  readTaskFile,
  useLeaderRig,
} from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";
import { updateTaskFile } from "../fixtures/workers/protocol.mjs";

const outerRig = useLeaderRig();
type Rig = ReturnType<typeof outerRig.scoped>;
type Team = Awaited<ReturnType<Rig["team"]>>;
type Leader = Awaited<ReturnType<Rig["leader"]>>;

/** A first start and stop (the team's ledger exists), then task 1 completed while no leader runs: its event key. */
async function completedWhileStopped(rig: Rig, team: Team): Promise<string> {
  const first = await rig.leader(team);
  if ((await first.stop()).code !== 0) throw new Error("the first leader did not stop cleanly");
  const { "1": completedAt } = await completeTasks(team, ["1"]);
  return `task_completed:1:${completedAt}`;
}

/** A line a worker appends to the leader's ledger. */
function appendToLedger(team: Team, line: Record<string, unknown>): Promise<void> {
  return appendFile(path.join(team.teamDir, "hook-state", "ledger.jsonl"), `${JSON.stringify(line)}\n`);
}

/** The lead's inbox notes about `key`, once there is one. */
function leadNotesAbout(leader: Leader, team: Team, key: string): Promise<Array<{ text: string }>> {
  return leader.waitFor("the lead's note", async () => {
    const found = (await readInboxFile(team, "team", team.leadName)).filter((m) => m.text.includes(key));
    return found.length > 0 ? found : false;
  });
}

describe("the ledger and the task's gate record", () => {
  it("a done line appended while no leader runs: the completion is judged anyway, the lead told once", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    const key = await completedWhileStopped(rig, team);
    const forged = { op: "done", key, at: new Date().toISOString(), runId: null, outcome: "passed", log: null };
    await appendToLedger(team, forged);

    const leader = await rig.leader(team);
    const [judged] = await leader.waitForEvents(1, (e) => e.key === key);
    expect(judged).toMatchObject({ outcome: "passed" });
    expect((await readLogs(team.teamDir)).filter((l) => l.key === key)).toHaveLength(1);
    expect((await readTaskFile(team, "1")).metadata).toMatchObject({ qualityGateEventKey: key });
    await leader.waitFor("the warning", () => leader.warnings().find((w) => w.includes(key) && /ledger/.test(w)));
    const notes = await leadNotesAbout(leader, team, key);
    expect(notes).toHaveLength(1);
    expect(notes[0]?.text).toMatch(/no gate record/);
    expect(await leader.stop()).toMatchObject({ code: 0 });

    // A third start: the records agree now, nothing runs again.
    const third = await rig.leader(team);
    expect(third.events((e) => e.key === key)).toHaveLength(0);
    expect(await third.stop()).toMatchObject({ code: 0 });
    expect((await readLogs(team.teamDir)).filter((l) => l.key === key)).toHaveLength(1);
  });

  it("a defer line appended while no leader runs, that no deferral file, log or gate record backs: judged, the lead told once", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    await rig.hook(team, "on_task_completed.sh", "exit 1");
    const key = await completedWhileStopped(rig, team);
    // The worker's forgery: its completion "held" by a run no gate made, so that its gate never runs.
    const runId = "bbbbbbbb-1111-4111-8111-111111111111";
    const at = new Date().toISOString();
    const forged = { op: "defer", key, at, runId, deferral: runId, expiresAt: "2099-01-01T00:00:00.000Z", log: null };
    await appendToLedger(team, forged);

    const leader = await rig.leader(team);
    const [judged] = await leader.waitForEvents(1, (e) => e.key === key);
    expect(judged).toMatchObject({ outcome: "failed" });
    expect((await readTaskFile(team, "1")).metadata).toMatchObject({
      qualityGateEventKey: key,
      qualityGateStatus: "failed",
    });
    await leader.waitFor("the warning", () => leader.warnings().find((w) => w.includes(key) && /judged again/.test(w)));
    const notes = await leadNotesAbout(leader, team, key);
    expect(notes).toHaveLength(1);
    expect(notes[0]?.text).toMatch(/deferred/);
    expect(await leader.stop()).toMatchObject({ code: 0 });

    // A third start: the records agree now, nothing runs again.
    const third = await rig.leader(team);
    expect(third.events((e) => e.key === key)).toHaveLength(0);
    expect(await third.stop()).toMatchObject({ code: 0 });
    expect((await readLogs(team.teamDir)).filter((l) => l.key === key)).toHaveLength(1);
  });

  it("a defer line appended with a gate record that names its run: held, the lead told once how to have it judged, judged once told", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    await rig.hook(team, "on_task_completed.sh", "exit 1");
    const key = await completedWhileStopped(rig, team);
    // The worker's forgery, both records: a run no gate made holds its completion, and its task says so.
    const runId = "cccccccc-2222-4222-8222-222222222222";
    const at = new Date().toISOString();
    await appendToLedger(team, {
      op: "defer",
      key,
      at,
      runId,
      deferral: runId,
      expiresAt: "2099-01-01T00:00:00.000Z",
      log: null,
    });
    await updateTaskFile(team.taskFile("1"), (task) => ({
      ...task,
      metadata: {
        ...(task.metadata ?? {}),
        qualityGateEventKey: key,
        qualityGateStatus: "deferred",
        qualityGateDeferredRunId: runId,
      },
    }));

    const leader = await rig.leader(team);
    const notes = await leadNotesAbout(leader, team, key);
    expect(
      notes.map((n) => n.text),
      JSON.stringify(notes),
    ).toHaveLength(1);
    expect(notes[0]?.text).toContain(`run ${runId}`);
    expect(notes[0]?.text).toContain("qualityGateDeferredRunId");
    expect(leader.events((e) => e.key === key)).toHaveLength(0); // held: no gate ran
    // The lead does as told: the completion is judged, once.
    await updateTaskFile(team.taskFile("1"), (task) => {
      const { qualityGateDeferredRunId: _run, ...metadata } = (task.metadata ?? {}) as Record<string, unknown>;
      return { ...task, metadata };
    });
    const [judged] = await leader.waitForEvents(1, (e) => e.key === key);
    expect(judged).toMatchObject({ outcome: "failed" });
    expect(await leader.stop()).toMatchObject({ code: 0 });
    // The note that it stays held, once; then the one every completion judged again gets.
    const told = (await readInboxFile(team, "team", team.leadName)).filter((m) => m.text.includes(key));
    expect(told.filter((m) => m.text.includes("stays held"))).toHaveLength(1);
    expect(told.filter((m) => /judged .* again/.test(m.text))).toHaveLength(1);
  });

  it("a done line appended while no gate is in force: nothing judged it before or now, so nothing is said to the lead", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    const key = await completedWhileStopped(rig, team);
    const forged = { op: "done", key, at: new Date().toISOString(), runId: null, outcome: "passed", log: null };
    await appendToLedger(team, forged);

    const leader = await rig.leader(team, ["--verbose"]);
    // The leader says why it reports nothing (--verbose): its records disagreed, and no gate judged it now.
    await leader.waitFor("the no-gate line", () =>
      leader
        .linesOf("verbose")
        .some((l) => l.reason === "no_gate" && l.key === key && /no gate judged it now either/.test(String(l.detail))),
    );
    expect(await leader.stop()).toMatchObject({ code: 0 });
    expect(leader.warnings().filter((w) => w.includes(key))).toEqual([]);
    expect((await readInboxFile(team, "team", team.leadName)).filter((m) => m.text.includes(key))).toEqual([]);
  });

  it("a gate record written with no ledger line (forged metadata): judged as ever, the lead told once", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    await rig.hook(team, "on_task_completed.sh", "exit 1");
    const key = await completedWhileStopped(rig, team);
    await updateTaskFile(team.taskFile("1"), (task) => ({
      ...task,
      metadata: { ...(task.metadata ?? {}), qualityGateEventKey: key, qualityGateStatus: "passed" },
    }));

    const leader = await rig.leader(team);
    const [judged] = await leader.waitForEvents(1, (e) => e.key === key);
    expect(judged).toMatchObject({ outcome: "failed" });
    expect((await readTaskFile(team, "1")).metadata).toMatchObject({ qualityGateStatus: "failed" });
    const notes = await leadNotesAbout(leader, team, key);
    expect(notes).toHaveLength(1);
    expect(notes[0]?.text).toMatch(/the ledger has no line for it/);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("a gate record removed again and again while the leader runs: judged each time, one follow-up and one assignment in all", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      config: { hooks: { failureAction: "followup" } },
      tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })],
    });
    await rig.hook(team, "on_task_completed.sh", 'echo "FAIL: no"; exit 1');
    const leader = await rig.leader(team);
    const { "1": completedAt } = await completeTasks(team, ["1"]);
    const key = `task_completed:1:${completedAt}`;
    await leader.waitForEvents(1, (e) => e.key === key && e.outcome === "failed");
    // The worker takes its gate record out, each time its gate has judged the completion again.
    for (let round = 2; round <= 4; round += 1) {
      await updateTaskFile(team.taskFile("1"), (task) => {
        const metadata: Record<string, unknown> = { ...(task.metadata ?? {}) };
        delete metadata.qualityGateEventKey;
        return { ...task, metadata };
      });
      await leader.waitForEvents(round, (e) => e.key === key && e.outcome === "failed");
      await leader.waitFor(
        "the gate record written again",
        async () => (await readTaskFile(team, "1")).metadata?.qualityGateEventKey === key,
      );
    }
    expect(await leader.stop()).toMatchObject({ code: 0 });
    const followups = [...(await readAllTaskFiles(team)).values()].filter(
      (t) => t.metadata?.qualityGateFollowupFor === key,
    );
    expect(followups.map((t) => t.id)).toEqual(["2"]);
    const assignments = (await readInboxFile(team, team.taskListId, "alice")).filter((m) =>
      m.text.includes('"task_assignment"'),
    );
    expect(assignments).toHaveLength(1);
    const notes = (await readInboxFile(team, "team", team.leadName)).filter((m) => m.text.includes(key));
    expect(notes).toHaveLength(1);
  });

  it("a failed completion's gate record rewritten to passed while the leader runs: judged again, failed, the lead told once", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    await rig.hook(team, "on_task_completed.sh", 'echo "FAIL: no"; exit 1');
    const leader = await rig.leader(team);
    const { "1": completedAt } = await completeTasks(team, ["1"]);
    const key = `task_completed:1:${completedAt}`;
    await leader.waitForEvents(1, (e) => e.key === key && e.outcome === "failed");
    // The worker's forgery: its failed completion accepted, as a dependent (gateStateOf) reads it.
    await updateTaskFile(team.taskFile("1"), (task) => ({
      ...task,
      metadata: { ...(task.metadata ?? {}), qualityGateStatus: "passed", qualityGateOutcome: "passed" },
    }));
    await leader.waitForEvents(2, (e) => e.key === key && e.outcome === "failed");
    await leader.waitFor("the gate record written again", async () => {
      const { metadata } = await readTaskFile(team, "1");
      return metadata?.qualityGateEventKey === key && metadata?.qualityGateStatus === "failed";
    });
    const notes = await leadNotesAbout(leader, team, key);
    expect(notes).toHaveLength(1);
    expect(notes[0]?.text).toMatch(/says passed/);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("hook-state/ deleted before a restart: a completion of a task a gate judged before is judged, not history", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [
        makeTask({ id: "1", owner: "alice", status: "in_progress" }),
        makeTask({ id: "2", owner: "bob", status: "completed" }),
      ],
    });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    const first = await rig.leader(team);
    await completeTasks(team, ["1"]);
    await first.waitForEvents(1, (e) => e.taskId === "1" && e.outcome === "passed");
    expect(await first.stop()).toMatchObject({ code: 0 });

    // Completed again while no leader runs, and the leader's state deleted.
    const { "1": again } = await completeTasks(team, ["1"]);
    await rm(path.join(team.teamDir, "hook-state"), { recursive: true, force: true });
    const key = `task_completed:1:${again}`;

    const leader = await rig.leader(team);
    await leader.waitForEvents(1, (e) => e.key === key && e.outcome === "passed");
    // Task 2 never carried a gate record: what existed before this first start is history, as ever.
    expect(leader.events((e) => e.taskId === "2")).toHaveLength(0);
    expect((await readTaskFile(team, "1")).metadata).toMatchObject({ qualityGateEventKey: key });
    await leader.waitFor("the warning", () => leader.warnings().find((w) => /#1/.test(w) && /ledger/.test(w)));
    const notes = await leader.waitFor("the lead's note", async () => {
      const found = (await readInboxFile(team, "team", team.leadName)).filter((m) => /judged again/.test(m.text));
      return found.length > 0 ? found : false;
    });
    expect(notes).toHaveLength(1);
    expect(notes[0]?.text).toContain("#1");
    // Task 2's completion, taken as history on a team a leader gated before, is said with how to judge it.
    const history = await leader.waitFor("the history warning", () =>
      leader.warnings().find((w) => /taken as history, not judged \(#2\)/.test(w)),
    );
    expect(history).toContain("--task <id> --apply-policy");
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
