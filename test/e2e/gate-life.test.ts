/**
 * A task's life under its gates where the features meet, end to end through `pi-teams-hooks watch`
 * (the built CLI) on temp team dirs, with workers as other processes: a completion after the
 * leader's reopen is judged whatever the worker writes to `completedAt`; a gate cut off by our own
 * part (the leader out of file descriptors) holds the event and runs again to its end; one failing task cannot flood
 * the team (its tree's budget, one escalation); a follow-up is not failed for the output the leader quoted in it; a
 * pass clears the last denial's code; the owner of a reopened task is assigned it again (once per reopen, or never when
 * the team says so). Every gate appends to runs.txt when it really runs.
 */
import { execFile as execFileCb } from "node:child_process";
import { readFile, readdir, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import path from "node:path";
import { describe, it } from "vitest";
import {
  type LeaderRig,
  readAllTaskFiles,
  readInboxFile,
  readLedger,
  readTaskFile,
  useLeaderRig,
} from "../helpers/leader-rig.js";
import { makeTask, type TempTeam, runs } from "../helpers/temp-team.js";
import { launchBrowser } from "../helpers/browser.js";
import { startServe } from "../helpers/serve-rig.js";
import { statusText } from "../../extensions/teams-hooks/pi/report.js";
import type { GateStatus } from "../../extensions/teams-hooks/pi/gates.js";

const outerRig = useLeaderRig();
const execFile = promisify(execFileCb);
const RECONCILE_MS = 200;
const GATE = "on_task_completed.sh";

/** Records the run (task id, and the completion stamp it judged), then fails. */
const FAILS = `echo "run $PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"\necho "FAIL: the build is red" >&2\nexit 1`;

async function team(rig: LeaderRig, hooks: Record<string, unknown> = {}, ids = ["1"]): Promise<TempTeam> {
  return rig.team({
    config: {
      version: 1,
      teamId: "alpha",
      taskListId: "alpha",
      leadName: "team-lead",
      members: [],
      hooks: { failureAction: "reopen", ...hooks },
    },
    tasks: ids.map((id) => makeTask({ id, owner: "alice", status: "in_progress" })),
  });
}

async function leadInbox(t: TempTeam): Promise<string[]> {
  return (await readInboxFile(t, "team", t.leadName)).map((m) => m.text);
}

describe.concurrent("a completion after the leader's reopen", () => {
  const variants = [
    ["the same completedAt", "same", undefined],
    ["an older completedAt", "older", undefined],
    ["no completedAt", "none", undefined],
    // A worker that read the task before the reopen writes that copy back: the leader's memory of the round wins.
    ["the same completedAt and the metadata from before the reopen", "same", "stale"],
  ] as const;
  it.for(variants)("is judged again when the worker writes %s", async ([, stamp, metadata], context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const t = await team(rig);
    await rig.hook(t, GATE, FAILS);
    const leader = await rig.leader(t, ["--reconcile-ms", String(RECONCILE_MS)]);
    const first = await rig.worker<{ final: Record<string, string> }>("complete", { tasksDir: t.tasksDir, ids: ["1"] });
    const before = metadata === "stale" ? (await readTaskFile(t, "1")).metadata : undefined;
    const [judged] = await leader.waitForEvents(1);
    expect(judged).toMatchObject({
      key: `task_completed:1:${first.final["1"]}`,
      outcome: "failed",
      actions: expect.arrayContaining(["reopened (1/3)"]),
    });
    await leader.waitFor("the reopen", async () => (await readTaskFile(t, "1")).status === "pending");

    await rig.worker("recomplete", {
      tasksDir: t.tasksDir,
      ids: ["1"],
      stamp,
      ...(before ? { metadata: before } : {}),
    });
    const [, again] = await leader.waitForEvents(2);
    // A new event: the gate ran again, in the task's next round.
    expect(again?.key).toMatch(/^task_completed:1:.*#r1$/);
    expect(again).toMatchObject({
      outcome: "failed",
      retry: false,
      actions: expect.arrayContaining(["reopened (2/3)"]),
    });
    expect(await runs(t)).toEqual(["run 1", "run 1"]);
    const task = await readTaskFile(t, "1");
    expect(task).toMatchObject({ status: "pending", metadata: { qualityGateRound: 2 } });
    // An old copy written back resets the task's own counters, not the budget the leader keeps (2 of 3 spent).
    if (metadata !== "stale")
      expect(task.metadata).toMatchObject({ reopenedByQualityGateCount: 2, qualityGateFailureCount: 2 });
    expect(task.metadata?.qualityGateEventKey).toBe(again?.key);
  });
});

describe.concurrent("a gate cut off by our own part", () => {
  it("holds the event (no reopen, no blame) and runs the gate again to its end: the leader out of file descriptors when the gate starts", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const t = await team(rig);
    // Writes `start`, waits for the test's go (a file), writes `end`, passes.
    await rig.hook(
      t,
      GATE,
      [
        `echo "start $PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"`,
        `while [ ! -e "$PI_TEAMS_TEAM_DIR/go" ]; do sleep 0.05; done`,
        `echo "end $PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"`,
        "exit 0",
      ].join("\n"),
    );
    const leader = await rig.leader(t, ["--reconcile-ms", String(RECONCILE_MS)]);
    // Room for one file at a time (a task file read, the context file written), none for the hook's
    // stdin and pipes: its start fails with EMFILE, the machine's fault and ours, not the worker's.
    const soft = async (n: number): Promise<void> =>
      void (await execFile("prlimit", ["--pid", String(leader.pid), `--nofile=${n}:`]));
    const before = Number(
      (
        await execFile("prlimit", [
          "--pid",
          String(leader.pid),
          "--nofile",
          "--raw",
          "--noheadings",
          "--output",
          "SOFT",
        ])
      ).stdout.trim(),
    );
    await soft((await readdir(`/proc/${leader.pid}/fd`)).length + 2);
    await rig.worker("complete", { tasksDir: t.tasksDir, ids: ["1"] });
    const [held] = await leader.waitForEvents(1);
    await soft(before);
    expect(held).toMatchObject({
      outcome: "error",
      held: "fault",
      summary: expect.stringMatching(/^held: pi-teams-hooks could not finish the gate \(.*EMFILE/),
    });
    expect(await runs(t)).toEqual([]);
    const task = await readTaskFile(t, "1");
    expect(task.status).toBe("completed");
    expect(task.metadata).toMatchObject({ qualityGateStatus: "held", qualityGateHeld: "fault" });
    expect(task.metadata?.reopenedByQualityGateCount).toBeUndefined();
    expect(task.metadata?.qualityGateFailureCount).toBeUndefined();
    const alice = await leader.waitFor("alice told it waits", async () => {
      const texts = (await readInboxFile(t, t.taskListId, "alice")).map((m) => m.text);
      return texts.length > 0 ? texts : false;
    });
    expect(alice).toEqual([expect.stringContaining("Nothing for you to fix")]);
    expect(alice[0]).not.toContain("remediate automatically");

    // It runs again by itself, this time to its end, and passes.
    await leader.waitFor("the gate to start again", async () => (await runs(t)).includes("start 1"));
    await writeFile(path.join(t.teamDir, "go"), "");
    const [, rerun] = await leader.waitForEvents(2);
    expect(rerun).toMatchObject({ key: held?.key, outcome: "passed", retry: true });
    expect(await runs(t)).toEqual(["start 1", "end 1"]);
    const passed = await readTaskFile(t, "1");
    expect(passed).toMatchObject({ status: "completed", metadata: { qualityGateStatus: "passed" } });
    expect(passed.metadata?.qualityGateHeld).toBeUndefined();
    // The lead heard of it once.
    expect((await leadInbox(t)).filter((text) => text.includes("own fault"))).toHaveLength(1);
  });
});

describe("an event held for the lead's approval", () => {
  it("reaches the lead wherever the lead looks: the leader's line, the lead's inbox, /gates status and the dashboard's Needs attention", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const t = await team(rig);
    const gate = await rig.hook(t, GATE, FAILS);
    const leader = await rig.leader(t, ["--reconcile-ms", String(RECONCILE_MS)]);
    await writeFile(gate, `#!/usr/bin/env bash\nexit 0\n`); // edited after the first start: untrusted
    await rig.worker("complete", { tasksDir: t.tasksDir, ids: ["1"] });
    const [held] = await leader.waitForEvents(1);
    expect(held).toMatchObject({
      held: "approval",
      summary: expect.stringContaining(`pi-teams-hooks trust --team-dir ${t.teamDir} ${gate}`),
    });
    await leader.waitFor("the lead's note", async () =>
      (await leadInbox(t)).some((text) => text.includes(gate) && text.includes("held")),
    );

    const status = await statusText(
      { phase: "watching", detail: "test" } as GateStatus,
      t.teamDir,
      { PI_TEAMS_ROOT_DIR: path.dirname(t.teamDir) },
      t.teamDir,
    );
    expect(status).toMatch(
      /held, not failed \(1\):\n {2}#1 alice on_task_completed waits for approval: untrusted_hook: /,
    );

    const serve = await startServe(path.dirname(t.teamDir));
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      expect((await page.goto(`${serve.url}/`))?.status()).toBe(200);
      const attention = page.getByRole("region", { name: "Needs attention" });
      const line = await attention.locator(".attn-held").textContent();
      expect(line).toContain("Waiting for approval");
      expect(line).toContain("task #1");
      expect(line).toContain("not failed");
    } finally {
      await browser.close();
      await serve.stop();
    }
  });
});

describe.concurrent("one failing task cannot flood the team", () => {
  it("ten rounds of a worker completing every open task under a gate that fails everything: the root's budget bounds the tree, the lead is told once", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const t = await team(rig, { failureAction: "reopen_followup", maxReopensPerTask: 3 });
    await rig.hook(t, GATE, FAILS);
    const leader = await rig.leader(t, ["--reconcile-ms", String(RECONCILE_MS)]);
    for (let round = 0; round < 10; round++) {
      const open = [...(await readAllTaskFiles(t)).values()]
        .filter((task) => task.status !== "completed")
        .map((task) => task.id);
      if (open.length === 0) break;
      const handled = leader.events().length;
      await rig.worker("complete", { tasksDir: t.tasksDir, ids: open });
      await leader.waitForEvents(handled + open.length);
    }
    const tasks = [...(await readAllTaskFiles(t)).values()];
    // The root and at most 3 follow-ups: every reopen and follow-up of the tree spent one unit of 3.
    expect(tasks.length).toBeLessThanOrEqual(1 + 3);
    expect(
      tasks
        .filter((task) => task.metadata?.qualityGateFollowupFor !== undefined)
        .every((task) => task.metadata?.qualityGateRootTaskId === "1"),
    ).toBe(true);
    // The units are the leader's record (its ledger), with the events that spent them.
    const memory = (await readLedger(t.teamDir)).filter((r) => r.op === "task" && r.key === "task:1");
    expect(Math.max(...memory.map((r) => Number(r.spent ?? 0)))).toBe(3);
    expect(memory.flatMap((r) => (Array.isArray(r.by) ? r.by : []))).toHaveLength(3);
    const escalations = (await leadInbox(t)).filter((text) => text.includes("is spent"));
    expect(escalations).toHaveLength(1);
    expect(escalations[0]).toMatch(
      /the gate budget of task #1( and its follow-ups)? is spent \(3 of 3 reopens and follow-ups\)/i,
    );
    // Every later failure of the spent tree names the note, sent before: it went out once.
    const told = leader.events().flatMap((e) => e.actions.filter((a) => a.startsWith("lead told the budget")));
    expect(told.filter((a) => !a.endsWith("(before)"))).toHaveLength(1);
  });

  it("a gate that fails what quotes its own output does not fail the follow-up made to fix it (it is not shown the quote)", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const t = await team(rig, { failureAction: "followup" });
    // Fails the root's work; fails any task whose description (as the gate is shown it) quotes the gate.
    await rig.hook(
      t,
      GATE,
      [
        `echo "run $PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"`,
        `if [ "$PI_TEAMS_TASK_ID" = 1 ]; then echo "GATE-SAYS-NO: the root is wrong" >&2; exit 1; fi`,
        `if grep -q "GATE-SAYS-NO" "$PI_TEAMS_HOOK_CONTEXT_FILE"; then echo "GATE-SAYS-NO: quoted" >&2; exit 1; fi`,
        "exit 0",
      ].join("\n"),
    );
    const leader = await rig.leader(t, ["--reconcile-ms", String(RECONCILE_MS)]);
    await rig.worker("complete", { tasksDir: t.tasksDir, ids: ["1"] });
    await leader.waitForEvents(1);
    const followup = await leader.waitFor("the follow-up", async () => (await readAllTaskFiles(t)).get("2"));
    expect(followup.description).toContain("GATE-SAYS-NO: the root is wrong"); // the worker reads it
    await rig.worker("complete", { tasksDir: t.tasksDir, ids: ["2"] });
    const [, second] = await leader.waitForEvents(2);
    expect(second).toMatchObject({ taskId: "2", outcome: "passed" });
    expect([...(await readdir(t.tasksDir))].filter((n) => n.endsWith(".json")).sort()).toEqual(["1.json", "2.json"]);
  });
});

describe.concurrent("what one run leaves for the next", () => {
  it("a pass clears the previous denial's code, and what was held; counters stay", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const t = await team(rig, { failureAction: "reopen" });
    // Denies with a code the first time, passes after.
    await rig.hook(
      t,
      GATE,
      [
        `if [ ! -e "$PI_TEAMS_TEAM_DIR/denied" ]; then touch "$PI_TEAMS_TEAM_DIR/denied"`,
        `  echo '{"decision":"deny","code":"tests.red","reason":"2 tests fail"}'; exit 2; fi`,
        "exit 0",
      ].join("\n"),
    );
    const leader = await rig.leader(t, ["--reconcile-ms", String(RECONCILE_MS)]);
    await rig.worker("complete", { tasksDir: t.tasksDir, ids: ["1"] });
    await leader.waitForEvents(1);
    expect((await readTaskFile(t, "1")).metadata).toMatchObject({
      qualityGateStatus: "failed",
      qualityGateCode: "tests.red",
    });
    await rig.worker("complete", { tasksDir: t.tasksDir, ids: ["1"] });
    await leader.waitForEvents(2);
    const task = await readTaskFile(t, "1");
    expect(task.metadata).toMatchObject({
      qualityGateStatus: "passed",
      qualityGateFailureCount: 1,
      reopenedByQualityGateCount: 1,
      qualityGateReopenSuppressed: false,
    });
    expect(task.metadata).not.toHaveProperty("qualityGateCode");
    expect(task.metadata).not.toHaveProperty("qualityGateReopenSuppressedReason");
  });
});

describe.concurrent("a reopened task is handed back to its owner", () => {
  it("a task_assignment once per reopen, recorded in the sent-log; none with hooks.reassignOnReopen false", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const on = await team(rig);
    const off = await team(rig, { reassignOnReopen: false });
    for (const t of [on, off]) await rig.hook(t, GATE, FAILS);
    const leaders = [
      await rig.leader(on, ["--reconcile-ms", String(RECONCILE_MS)]),
      await rig.leader(off, ["--reconcile-ms", String(RECONCILE_MS)]),
    ];
    for (const [index, t] of [on, off].entries()) {
      await rig.worker("complete", { tasksDir: t.tasksDir, ids: ["1"] });
      await leaders[index]?.waitForEvents(1);
      await rig.worker("complete", { tasksDir: t.tasksDir, ids: ["1"] });
      await leaders[index]?.waitForEvents(2);
    }
    const assignments = async (t: TempTeam) =>
      (await readInboxFile(t, t.taskListId, "alice")).flatMap((m) => {
        try {
          const value = JSON.parse(m.text) as { type?: string; taskId?: string };
          return value.type === "task_assignment" ? [{ ...value, from: m.from }] : [];
        } catch {
          return [];
        }
      });
    expect(await assignments(on)).toEqual([
      expect.objectContaining({
        type: "task_assignment",
        taskId: "1",
        subject: "Task 1",
        assignedBy: "team-lead",
        from: "team-lead",
      }),
      expect.objectContaining({ type: "task_assignment", taskId: "1" }),
    ]);
    const sent = (await readFile(path.join(on.teamDir, "hook-state", "sent.jsonl"), "utf8"))
      .split("\n")
      .filter((l) => l.includes("reassign-1:") && l.includes('"sent"'));
    expect(sent).toHaveLength(2);
    expect(await assignments(off)).toEqual([]);
    expect((await readTaskFile(off, "1")).status).toBe("pending"); // reopened all the same
  });
});
