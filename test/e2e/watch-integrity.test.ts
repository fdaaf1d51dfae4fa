/**
 * What the leader tells, and what it survives, end to end through `pi-teams-hooks watch`: a nudge goes
 * out once per event even across a crash after the worker popped its inbox; a retried gate knows it
 * is one; nudges and follow-ups name the hook log; a full disk (a file-size limit: EFBIG) holds events
 * in flight until writing works again; a team dir deleted under the leader is said, never re-created;
 * a hooks dir with no gate, a named one that is missing, and files that will never run are said.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { nodeStripsTypes } from "../../extensions/teams-hooks/gates/typescript.js";
import {
  readInboxFile,
  readLedger,
  readLogs,
  readTaskFile,
  runBin,
  useLeaderRig,
  elapse,
} from "../helpers/leader-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const RECONCILE_MS = 200;
const working = (id: string) => makeTask({ id, owner: "alice", status: "in_progress" });

async function lines(file: string): Promise<string[]> {
  return (await readFile(file, "utf8").catch(() => "")).split("\n").filter(Boolean);
}

/** A task file rewritten as a worker would: read, change, write a temp file and rename it over. */
async function workerWrites(
  team: TempTeam,
  id: string,
  change: (task: Record<string, unknown>) => Record<string, unknown>,
): Promise<void> {
  const file = team.taskFile(id);
  const task = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;
  await writeFile(`${file}.tmp.test`, `${JSON.stringify(change(task), null, 2)}\n`);
  execFileSync("mv", [`${file}.tmp.test`, file]);
}

describe.concurrent("what the leader tells", () => {
  it("A2 + C15: a nudge goes out once per event even when the worker popped its inbox and the leader crashed; the retried gate sees attempt 2 and the same key", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")] });
    await rig.hook(
      team,
      "on_task_completed.sh",
      `echo "$PI_TEAMS_HOOK_ATTEMPT $PI_TEAMS_HOOK_EVENT_KEY" >> "$PI_TEAMS_TEAM_DIR/attempts.txt"\necho "tests fail" >&2\nexit 1`,
    );
    // hook-logs/ is a file: every log write fails, so the event stays in flight after its nudge.
    await writeFile(path.join(team.teamDir, "hook-logs"), "not a folder\n");
    const first = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const inbox = team.inboxFile(team.taskListId, "alice");
    await first.waitFor("the nudge", async () => (await readInboxFile(team, team.taskListId, "alice")).length === 1);
    await first.waitFor("the log write to fail", () => first.warnings().some((w) => w.includes("hook-logs")));
    // The worker pops its inbox: reads it and writes it back without what it read (nor our fields).
    await writeFile(inbox, "[]\n");
    await first.kill();

    await rm(path.join(team.teamDir, "hook-logs"));
    const second = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    const [event] = await second.waitForEvents(1);
    expect(event).toMatchObject({
      taskId: "1",
      outcome: "failed",
      retry: true,
      actions: ["already applied", "nudge alice (sent before)"],
    });
    expect(await readInboxFile(team, team.taskListId, "alice")).toEqual([]);
    const attempts = await lines(path.join(team.teamDir, "attempts.txt"));
    expect(attempts).toEqual([`1 ${event?.key}`, `2 ${event?.key}`]);
  });

  it("A6: the nudge and the follow-up task name the hook log, and the log is there", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")] });
    await rig.hook(team, "on_task_completed.sh", `echo "tests fail" >&2\nexit 1`);
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS), "--failure-action", "followup"]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    const [log] = await readLogs(team.teamDir);
    expect(event?.logFile).toBe(log?.file);
    const nudge = (await readInboxFile(team, team.taskListId, "alice")).find(
      (m) => !m.text.includes("task_assignment"),
    );
    expect(nudge?.text).toContain(`Hook log: ${log?.file}`);
    const followup = await readTaskFile(team, "2");
    expect(followup.subject).toBe("Quality gate failed: on_task_completed (task #1)");
    expect(followup.description).toContain(`Hook log: ${log?.file}`);
  });
});

describe.concurrent("what the leader survives", () => {
  it("B9: a log it cannot write (EFBIG under a file-size limit) holds the event in flight, said once, and it catches up once writing works", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1"), working("2")] });
    // Its log is over 12 KB (the head of its output is kept): more than the leader may write. Unsandboxed: the
    // sandbox's own files (its fstab) would hit the limit first, and this is about the leader's log.
    await rig.hook(
      team,
      "on_task_completed.sh",
      `# pi-teams-hooks: sandbox=off\nhead -c 20000 /dev/zero | tr '\\0' x\nexit 0`,
    );
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)], {
      wrap: ["prlimit", "--fsize=8192:unlimited", "--"],
    });
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await leader.waitFor("the warning", () => leader.warnings().some((w) => /EFBIG|file too large/i.test(w)));
    // tries at 1 s and 3 s: a negative check, only time can show it
    await elapse(2500);
    expect(leader.warnings().filter((w) => /EFBIG|file too large/i.test(w))).toHaveLength(1);
    expect(leader.events()).toEqual([]);
    expect((await readLedger(team.teamDir)).map((r) => r.op)).not.toContain("done");

    execFileSync("prlimit", ["--pid", String(leader.pid), "--fsize=unlimited:unlimited"]);
    const [event] = await leader.waitForEvents(1, () => true, 40_000);
    expect(event).toMatchObject({ taskId: "1", outcome: "passed" });
    await leader.waitFor("the all-clear", () =>
      leader.linesOf("info").some((l) => String(l.message).startsWith("writing works again")),
    );
    expect((await readLogs(team.teamDir)).map((l) => l.invocation.completedTask?.id)).toEqual(["1"]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
    await leader.waitForEvents(2);
    expect((await readLedger(team.teamDir)).filter((r) => r.op === "done")).toHaveLength(2);
  });

  it("B9: a team dir deleted while watching is a loud warning, is not created again, and a note reaches the lead when it is back", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")] });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    await rm(team.teamDir, { recursive: true, force: true });
    await leader.waitFor("the warning", () =>
      leader.warnings().some((w) => w.includes(`team dir ${team.teamDir} is gone`)),
    );
    await elapse(RECONCILE_MS * 5); // a negative check: only time can show it
    expect(existsSync(team.teamDir)).toBe(false);
    expect(leader.running).toBe(true);

    await mkdir(team.tasksDir, { recursive: true });
    await writeFile(team.taskFile("2"), `${JSON.stringify(working("2"), null, 2)}\n`);
    await leader.waitFor("the team dir back", () =>
      leader.linesOf("info").some((l) => String(l.message).startsWith(`team dir ${team.teamDir} is back`)),
    );
    const notes = await leader.waitFor("the note", async () => {
      const messages = await readInboxFile(team, "team", team.leadName);
      return messages.length > 0 ? messages : false;
    });
    expect(notes.map((m) => m.text)).toEqual([expect.stringContaining(`the team dir ${team.teamDir} was gone from `)]);
    await workerWrites(team, "2", (task) => ({
      ...task,
      status: "completed",
      metadata: { completedAt: new Date().toISOString() },
    }));
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({ taskId: "2", outcome: "passed" });
  });
});

describe.concurrent("no gate at all is loud", () => {
  it("C12: --hooks-dir or PI_TEAMS_HOOKS_DIR naming a folder that does not exist is a usage error for run and watch", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")] });
    const missing = path.join(team.teamsRoot, "nope");
    for (const [args, env] of [
      [["run", "idle", "--team-dir", team.teamDir, "--hooks-dir", missing], {}],
      [["watch", "--team-dir", team.teamDir, "--hooks-dir", missing, "--once"], {}],
      [["watch", "--team-dir", team.teamDir, "--once"], { PI_TEAMS_HOOKS_DIR: "nope" }],
    ] as const) {
      const result = await runBin([...args], { env: { ...env } });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`${missing}: no such directory`);
    }
  });

  it("C12: watch warns when no event has a gate, and watch, run and doctor name on_* files that never run, with a did-you-mean", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")] });
    const hooks = path.join(team.teamsRoot, "_hooks");
    await mkdir(hooks, { recursive: true });
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    expect(leader.warnings()).toContainEqual(
      expect.stringContaining(`no gate runs for any event: no hook in ${hooks}`),
    );
    await leader.stop();

    await writeFile(path.join(hooks, "on_task_completed.ts"), "export {};\n");
    await writeFile(path.join(hooks, "on_task_complete.sh"), "exit 0\n");
    await writeFile(path.join(hooks, "on-idle.sh"), "exit 0\n");
    const expected = [
      `${path.join(hooks, "on-idle.sh")} never runs: the gate of no event (events: on_task_completed, on_task_failed, on_idle, on_task_started); did you mean on_idle.sh?`,
      `${path.join(hooks, "on_task_complete.sh")} never runs: the gate of no event (events: on_task_completed, on_task_failed, on_idle, on_task_started); did you mean on_task_completed.sh?`,
      // A .ts gate is named only where nothing can run it: no tsx from the hooks dir, a Node without type stripping.
      ...(nodeStripsTypes()
        ? []
        : [
            `${path.join(hooks, "on_task_completed.ts")} never runs: a .ts gate needs tsx where it can be found from ${hooks} (cd ${hooks} && npm install --save-dev tsx) or a Node with type stripping (this is Node ${process.versions.node}); or compile it to on_task_completed.js with tsc`,
          ]),
    ];
    const watching = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    for (const line of expected) expect(watching.warnings()).toContain(`warning: ${line}`);
    await watching.stop();
    const run = await runBin(["run", "idle", "--team-dir", team.teamDir]);
    for (const line of expected) expect(run.stderr).toContain(`warning: ${line}`);
    const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
    for (const line of expected) expect(doctor.stdout).toContain(line);
  });
});
