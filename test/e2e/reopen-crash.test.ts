/**
 * A leader killed after its reopen is written, before the rest of the policy (the assignment, the hook
 * log, the ledger's `done`), whose gate passes when the next start runs the event again: the task is
 * not left `pending` with a pass nobody acts on. Untouched since the reopen, it is put back to
 * `completed` as its worker left it (the reopen undone, and said); taken up again already, it is left
 * alone and its worker gets the assignment the crash lost.
 *
 * The moment: the test holds the owner's inbox lock in the name of a live process (its own), so the
 * leader's reassignment waits just after the task's write; the leader is killed there.
 */
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  type LeaderProcess,
  readInboxFile,
  readLedger,
  readLogs,
  readTaskFile,
  useLeaderRig,
} from "../helpers/leader-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";
import { taskEvent } from "../../extensions/teams-hooks/contract/events.js";
import { GATE_NOTE_START } from "../../extensions/teams-hooks/contract/gate-note.js";

const outerRig = useLeaderRig();

const GATE = ['[ -e "$PI_TEAMS_TEAM_DIR/ok" ] && exit 0', 'echo "FAIL: the parser tests" >&2', "exit 1"].join("\n");

type Rig = ReturnType<typeof outerRig.scoped>;

/** Completes task 1 under a failing gate and kills the leader once the reopen is on disk, before anything else. */
async function reopenThenCrash(rig: Rig, team: TempTeam): Promise<{ key: string; lock: string }> {
  const lock = path.join(team.teamDir, "mailboxes", team.taskListId, "inboxes", "alice.json.lock");
  await mkdir(path.dirname(lock), { recursive: true });
  await writeFile(lock, JSON.stringify({ pid: process.pid, createdAt: new Date().toISOString(), label: "test" }));
  const leader: LeaderProcess = await rig.leader(team, ["--failure-action", "reopen"]);
  await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
  const task = await leader.waitFor("the reopen written", async () => {
    const t = await readTaskFile(team, "1");
    return t.status === "pending" && typeof t.metadata?.reopenedByQualityGateKey === "string" ? t : null;
  });
  await leader.kill();
  await rm(lock);
  expect(await readLogs(team.teamDir)).toHaveLength(0); // killed before its hook log
  return { key: String(task.metadata?.reopenedByQualityGateKey), lock };
}

describe("a reopen written by a leader killed before the rest, whose gate passes at the re-run", () => {
  it("the task untouched since: put back to completed as its worker left it, the reopen undone and said", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const description = "Write the parser.";
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress", description })] });
    await rig.hook(team, "on_task_completed.sh", GATE);
    const { key } = await reopenThenCrash(rig, team);
    await writeFile(path.join(team.teamDir, "ok"), ""); // the gate passes from now on

    const second = await rig.leader(team, ["--failure-action", "reopen"]);
    const [passed] = await second.waitForEvents(1, (e) => e.key === key);
    expect(passed).toMatchObject({ outcome: "passed" });
    const task = await readTaskFile(team, "1");
    expect(task).toMatchObject({ status: "completed", owner: "alice", description });
    expect(task.description).not.toContain(GATE_NOTE_START);
    expect(task.metadata).toMatchObject({ qualityGateStatus: "passed", qualityGateEventKey: key });
    // In the round it was completed in, as the leader remembers it: its completion is the one judged.
    expect(task.metadata?.qualityGateRound).toBeUndefined();
    expect(taskEvent(task)?.key).toBe(key);
    // The leader's memory of the task's round is that completion's (0): it set the reopen's round back
    // (`lowered`), or never took it in (the re-run settled before this start's scan looked at the task).
    const rounds = (await readLedger(team.teamDir)).filter(
      (r) => r.op === "task" && r.key === "task:1" && r.round !== undefined,
    );
    expect(rounds.at(-1) ?? { round: 0 }).toMatchObject({ round: 0 });
    if (rounds.some((r) => r.round !== 0)) expect(rounds.at(-1)).toMatchObject({ lowered: true });
    // Said where the lead looks: the policy's actions in the log and on the event line.
    const logs = await readLogs(team.teamDir);
    const log = logs.find((l) => l.key === key && l.result.outcome === "passed");
    expect(log?.policy?.actions).toContain("reopen undone");
    expect(log?.policy?.gate).toBe("passed");
    expect(JSON.stringify(passed)).toContain("reopen undone");
    // Nothing asks the worker to redo a task that passed, and the same completion is not judged again.
    const inbox = await readInboxFile(team, team.taskListId, "alice");
    expect(inbox.filter((m) => m.text.includes("task_assignment"))).toHaveLength(0);
    expect(await second.stop()).toMatchObject({ code: 0 });
    const third = await rig.leader(team, ["--failure-action", "reopen"]);
    expect(await third.stop()).toMatchObject({ code: 0 });
    expect([...second.events((e) => e.taskId === "1"), ...third.events((e) => e.taskId === "1")]).toHaveLength(1);
    expect((await readLogs(team.teamDir)).map((l) => l.result.outcome)).toEqual(["passed"]);
  });

  it("the worker took the task up again before the restart: left alone, and its worker gets the lost assignment", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    await rig.hook(team, "on_task_completed.sh", GATE);
    const { key } = await reopenThenCrash(rig, team);
    await writeFile(path.join(team.teamDir, "ok"), "");
    // The worker takes its reopened task up again (in progress) while no leader runs.
    const file = path.join(team.tasksDir, "1.json");
    const before = JSON.parse(await readFile(file, "utf8"));
    await writeFile(file, JSON.stringify({ ...before, status: "in_progress" }, null, 2));

    const second = await rig.leader(team, ["--failure-action", "reopen"]);
    const [passed] = await second.waitForEvents(1, (e) => e.key === key);
    expect(passed).toMatchObject({ outcome: "passed" });
    const task = await readTaskFile(team, "1");
    expect(task.status).toBe("in_progress");
    // Not "passed": the worker is redoing it, and the next completion is judged.
    expect(task.metadata?.qualityGateStatus).toBe("failed");
    expect(task.description).toContain(GATE_NOTE_START);
    const inbox = await readInboxFile(team, team.taskListId, "alice");
    const assignments = inbox.filter((m) => m.text.includes("task_assignment"));
    expect(assignments).toHaveLength(1);
    expect(JSON.parse(assignments[0]?.text ?? "{}")).toMatchObject({ type: "task_assignment", taskId: "1" });
    expect(await second.stop()).toMatchObject({ code: 0 });
  });
});
