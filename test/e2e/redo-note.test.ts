/**
 * A redo that knows why: a reopened task carries the gate's reason at the head of its description (a
 * worker that builds its prompt from the task file reads it on its first redo), replaced at the next
 * reopen and gone once the gate passes; a gate never sees it.
 */
import { watch } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { type LeaderRig, readInboxFile, readLogs, readTaskFile, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";
import { GATE_NOTE_END, GATE_NOTE_START } from "../../extensions/teams-hooks/contract/gate-note.js";

const outerRig = useLeaderRig();

/** Alice's task 1, in progress, whose gate fails with a reason; her inbox's folder made. */
async function failingTeam(rig: LeaderRig) {
  const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
  await rig.hook(team, "on_task_completed.sh", ['echo "FAIL: 3 parser tests are red" >&2', "exit 1"].join("\n"));
  const inbox = team.inboxFile(team.taskListId, "alice");
  await mkdir(path.dirname(inbox), { recursive: true });
  return { team, inbox };
}

describe("the gate's note in a reopened task", () => {
  it("says why at the head of the description, once, replaced at each reopen, gone at the pass; the gate sees only the work", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const description = "Write the parser.\nIt reads numbers.";
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress", description })] });
    // The gate notes the description it was shown, and fails until the team dir holds `ok`.
    await rig.hook(
      team,
      "on_task_completed.sh",
      [
        `node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0,"utf8")).task.description + "\\n")' < "$PI_TEAMS_HOOK_CONTEXT_FILE" >> "$PI_TEAMS_TEAM_DIR/seen.txt"`,
        `[ -e "$PI_TEAMS_TEAM_DIR/ok" ] && exit 0`,
        `echo "FAIL: round $(grep -c . "$PI_TEAMS_TEAM_DIR/seen.txt") of the parser tests" >&2`,
        "exit 1",
      ].join("\n"),
    );
    const leader = await rig.leader(team, ["--failure-action", "reopen"]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await leader.waitForEvents(1, (e) => e.taskId === "1");
    const first = (await readTaskFile(team, "1")).description;
    expect(first, first).toContain(GATE_NOTE_START);
    expect(first.split("\n").slice(0, 2)).toEqual([
      GATE_NOTE_START,
      expect.stringMatching(
        /^Quality gate: on_task_completed did not pass this task \(round 1\): exit code 1 • FAIL: round/,
      ),
    ]);
    expect(first).toContain("FAIL: round");
    expect(first.endsWith(`${GATE_NOTE_END}\n\n${description}`)).toBe(true);

    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await leader.waitForEvents(2, (e) => e.taskId === "1");
    const second = (await readTaskFile(team, "1")).description;
    expect(second.split(GATE_NOTE_START)).toHaveLength(2);
    expect(second).toContain("(round 2)");
    expect(second.endsWith(description)).toBe(true);

    await writeFile(path.join(team.teamDir, "ok"), "");
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const events = await leader.waitForEvents(3, (e) => e.taskId === "1");
    expect(events[2]).toMatchObject({ outcome: "passed" });
    expect((await readTaskFile(team, "1")).description).toBe(description);
    // Each time the gate was shown the worker's description, never the leader's note.
    const seen = await readFile(path.join(team.teamDir, "seen.txt"), "utf8");
    expect(seen).not.toContain(GATE_NOTE_START);
    expect(seen.split("Write the parser.")).toHaveLength(4);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("hands the reopened task back and says why in one write of the owner's inbox: never read one without the other", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const { team, inbox } = await failingTeam(rig);
    // Each replacement of the inbox (a write: a temporary file renamed over it) is one event of the folder's.
    let writes = 0;
    const watcher = watch(path.dirname(inbox), (_type, name) => {
      if (name === path.basename(inbox)) writes += 1;
    });
    try {
      const leader = await rig.leader(team, ["--failure-action", "reopen"]);
      await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
      await leader.waitForEvents(1, (e) => e.taskId === "1" && e.outcome === "failed");
      const messages = await leader.waitFor("both messages in the inbox", async () => {
        const read = await readInboxFile(team, team.taskListId, "alice");
        return read.length >= 2 ? read : false;
      });
      expect(messages.map((m) => m.qualityGateMessage)).toEqual(["reassign-1", "nudge"]);
      expect(await leader.stop()).toMatchObject({ code: 0 });
      expect(writes).toBe(1);
    } finally {
      watcher.close();
    }
  });

  it("a leader killed after claiming both messages, before their write: the next start sends each once, in one write, and says so", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    // The owner's inbox locked in the name of a live process (this one): the leader claims both messages in
    // its sent-log, then waits for the lock, and is killed there.
    const { team, inbox } = await failingTeam(rig);
    const lock = `${inbox}.lock`;
    await writeFile(lock, JSON.stringify({ pid: process.pid, createdAt: new Date().toISOString(), label: "test" }));
    const sentLog = path.join(team.teamDir, "hook-state", "sent.jsonl");
    const first = await rig.leader(team, ["--failure-action", "reopen"]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await first.waitFor("both messages claimed", async () => {
      const lines = (await readFile(sentLog, "utf8").catch(() => "")).split("\n").filter(Boolean);
      const claimed = lines
        .map((l) => JSON.parse(l) as { id: string; state: string })
        .filter((l) => l.state === "sending");
      return claimed.some((l) => l.id.startsWith("reassign-1:")) && claimed.some((l) => l.id.startsWith("nudge:"));
    });
    await first.kill();
    await rm(lock);
    expect(await readLogs(team.teamDir)).toHaveLength(0);

    const second = await rig.leader(team, ["--failure-action", "reopen"]);
    await second.waitForEvents(1, (e) => e.taskId === "1" && e.outcome === "failed");
    const messages = await readInboxFile(team, team.taskListId, "alice");
    expect(messages.map((m) => m.qualityGateMessage)).toEqual(["reassign-1", "nudge"]);
    const [log] = await readLogs(team.teamDir);
    // What the separate steps said: both sent by this attempt (the first sent nothing).
    expect(log?.policy?.actions).toEqual([
      "already applied",
      "was reopened (1/3)",
      "reassigned to alice",
      "nudge alice",
    ]);
    expect(await second.stop()).toMatchObject({ code: 0 });
  });

  it("a member that works as pi-agent-teams' worker does (the task file first, messages after) reads the gate's reason on its first redo", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const description = "Write the parser.";
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress", description })] });
    await rig.hook(
      team,
      "on_task_completed.sh",
      [`[ -e "$PI_TEAMS_TEAM_DIR/ok" ] && exit 0`, `echo "FAIL: 3 parser tests are red" >&2`, "exit 1"].join("\n"),
    );
    const leader = await rig.leader(team, ["--failure-action", "reopen"]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await leader.waitForEvents(1, (e) => e.taskId === "1" && e.outcome === "failed");
    // Reopened: the assignment and the nudge wait in alice's inbox when she starts.
    await writeFile(path.join(team.teamDir, "ok"), "");
    const promptsFile = path.join(team.teamDir, "prompts.jsonl");
    const stopFile = path.join(team.teamDir, "stop");
    const alice = rig.backgroundWorker("member", {
      teamDir: team.teamDir,
      taskListId: team.taskListId,
      name: "alice",
      promptsFile,
      stopFile,
    });
    await leader.waitForEvents(1, (e) => e.taskId === "1" && e.outcome === "passed");
    const prompts = await leader.waitFor("the nudge read after the redo", async () => {
      const lines = (await readFile(promptsFile, "utf8").catch(() => "")).split("\n").filter(Boolean);
      const parsed = lines.map((l) => JSON.parse(l) as { kind: string; text: string });
      return parsed.some((p) => p.kind === "messages") ? parsed : false;
    });
    await writeFile(stopFile, "");
    await alice.result;
    // The first redo's prompt is the task file's, and it says why: the marked section at the head.
    expect(prompts[0]?.kind).toBe("task");
    expect(prompts[0]?.text).toContain(GATE_NOTE_START);
    expect(prompts[0]?.text).toContain("FAIL: 3 parser tests are red");
    expect(prompts[0]?.text).toContain(description);
    // The nudge (the same reason, as a message) comes only after the redo, as with the real worker.
    expect(prompts.findIndex((p) => p.kind === "messages")).toBeGreaterThan(0);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
