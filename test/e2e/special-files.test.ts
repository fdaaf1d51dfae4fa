/**
 * Nothing a worker or a hook puts in the team dir can hang or bloat the leader: a FIFO, a symlink to
 * a device, or a FIFO at a lock's name is refused with one warning naming the file and what it is; a
 * FIFO an unsandboxed hook puts in place of its result file (in the run's private folder, made empty by
 * the leader: runner/run-dir.ts) is an invalid verdict, unread, and a sandboxed hook cannot put one
 * there; the leader goes on handling other tasks, and stops on SIGTERM with exit 0. Before the shared
 * reader, each of these blocked the leader in a synchronous open for good (deaf to SIGTERM), and
 * /dev/zero grew it by gigabytes.
 */
import { execFileSync } from "node:child_process";
import { existsSync, utimesSync } from "node:fs";
import { mkdir, readFile, rename, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runsRoot } from "../../extensions/teams-hooks/runner/run-dir.js";
import { type LeaderProcess, readLogs, readTaskFile, useLeaderRig, elapse } from "../helpers/leader-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const rig = useLeaderRig();

const RECONCILE_MS = 100;
const PASSING_GATE = `echo "gate ran for $PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/gates.txt"`;

function mkfifo(file: string): void {
  execFileSync("mkfifo", [file]);
}

const working = (id: string) => makeTask({ id, owner: "alice", status: "in_progress" });

async function gateTeam(tasks = [working("1")]): Promise<TempTeam> {
  const team = await rig.team({ tasks });
  await rig.hook(team, "on_task_completed.sh", PASSING_GATE);
  return team;
}

/** Completes task `id` through a worker (the lock protocol) and waits for its gate's event. */
async function completeAndWait(leader: LeaderProcess, team: TempTeam, id: string): Promise<void> {
  await rig.worker("complete", { tasksDir: team.tasksDir, ids: [id] });
  await leader.waitFor(`task ${id}'s gate`, () => leader.events((e) => e.taskId === id).length === 1);
}

/** The warnings that name `file`, after a few reconcile scans have looked at everything again. */
async function warningsAbout(leader: LeaderProcess, file: string): Promise<string[]> {
  // a negative check (no second warning): only time can show it
  await elapse(RECONCILE_MS * 5);
  return leader.warnings().filter((w) => w.includes(file));
}

async function expectStopsOnSigterm(leader: LeaderProcess): Promise<void> {
  const stopped = await leader.stop("SIGTERM");
  expect(stopped, leader.describe()).toMatchObject({ code: 0, signal: null });
}

/** Writes a completed task straight into place (tmp + rename), as a worker that takes no lock would. */
async function writeCompleted(team: TempTeam, id: string): Promise<void> {
  const now = new Date().toISOString();
  const task = { ...working(id), status: "completed", updatedAt: now, metadata: { completedAt: now } };
  const tmp = `${team.taskFile(id)}.tmp.${process.pid}.${Date.now()}`;
  await writeFile(tmp, `${JSON.stringify(task, null, 2)}\n`);
  await rename(tmp, team.taskFile(id));
}

describe("special files in the team dir", () => {
  it("a FIFO as a task file: one warning naming it (fifo), other tasks' gates run, SIGTERM exits 0", async () => {
    const team = await gateTeam();
    const fifo = team.taskFile("300");
    mkfifo(fifo);
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    await completeAndWait(leader, team, "1");
    expect(leader.events()[0]).toMatchObject({ taskId: "1", outcome: "passed" });
    expect(await warningsAbout(leader, fifo)).toEqual([
      `warning: ${fifo}: not a regular file (fifo) — skipped until it changes`,
    ]);
    await expectStopsOnSigterm(leader);
  });

  it("a FIFO made as a task file while the leader watches: one warning naming it (fifo)", async () => {
    const team = await gateTeam();
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    const fifo = team.taskFile("301");
    mkfifo(fifo);
    await leader.waitFor("the warning", () => leader.warnings().some((w) => w.includes(fifo)));
    await completeAndWait(leader, team, "1");
    expect(await warningsAbout(leader, fifo)).toEqual([
      `warning: ${fifo}: not a regular file (fifo) — skipped until it changes`,
    ]);
    await expectStopsOnSigterm(leader);
  });

  it("a symlink to /dev/zero as a task file: one warning naming it (character device), nothing read", async () => {
    const team = await gateTeam();
    const link = team.taskFile("300");
    await symlink("/dev/zero", link);
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    await completeAndWait(leader, team, "1");
    expect(await warningsAbout(leader, link)).toEqual([
      `warning: ${link}: not a regular file (character device) — skipped until it changes`,
    ]);
    await expectStopsOnSigterm(leader);
  });

  it("a FIFO as the leader's inbox: one warning naming it (fifo), task gates still run", async () => {
    const team = await gateTeam();
    const inbox = team.inboxFile("team", team.leadName);
    await mkdir(path.dirname(inbox), { recursive: true });
    mkfifo(inbox);
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    await completeAndWait(leader, team, "1");
    expect(await warningsAbout(leader, inbox)).toEqual([
      `warning: ${inbox}: not a regular file (fifo) — skipped until it changes`,
    ]);
    await expectStopsOnSigterm(leader);
  });

  it("a FIFO as config.json: one warning naming it (fifo), the defaults apply, gates run", async () => {
    const team = await gateTeam();
    const config = path.join(team.teamDir, "config.json");
    mkfifo(config);
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    expect(leader.linesOf("policy")[0]).toMatchObject({
      policy: { failureAction: "warn" },
      sources: { failureAction: "default" },
    });
    await completeAndWait(leader, team, "1");
    expect(await warningsAbout(leader, config)).toEqual([
      `warning: ${config}: not a regular file (fifo) — using defaults for the whole config`,
    ]);
    await expectStopsOnSigterm(leader);
  });

  it("a FIFO as the lock of a task the policy must write: read as a lock without a pid, taken over once stale; other tasks' gates run meanwhile", async () => {
    const team = await gateTeam([working("1"), working("2")]);
    const lock = `${team.taskFile("1")}.lock`;
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS), "--concurrency", "2"]);
    mkfifo(lock);
    // Made 55 s ago: stale (no readable pid, over 60 s old) a few seconds from now.
    utimesSync(lock, new Date(Date.now() - 55_000), new Date(Date.now() - 55_000));
    await writeCompleted(team, "1"); // a worker would wait at the FIFO too: this one takes no lock
    await completeAndWait(leader, team, "2");
    expect((await readTaskFile(team, "2")).metadata).toMatchObject({ qualityGateStatus: "passed" });
    // Task 1's gate ran; writing its result waits for the lock, which holds no readable pid: stale
    // once over 60 s old (docs/team-dir.md), so it is taken over.
    await leader.waitFor("task 1's event", () => leader.events((e) => e.taskId === "1").length === 1, {
      timeoutMs: 30_000,
    });
    expect(leader.events((e) => e.taskId === "1")[0]).toMatchObject({ outcome: "passed", policyApplied: true });
    expect((await readTaskFile(team, "1")).metadata).toMatchObject({ qualityGateStatus: "passed" });
    expect(existsSync(lock)).toBe(false);
    await expectStopsOnSigterm(leader);
  });

  it("an unsandboxed hook that puts a FIFO in place of its result file and exits 0: an invalid verdict, the FIFO unread, the next gate runs", async () => {
    const team = await rig.team({ tasks: [working("1"), working("2")] });
    // Unsandboxed (sandbox=off, as under auto on a machine without the sandbox), a hook can replace
    // the result file the leader made; the sandbox does not concern what the leader then reads.
    await rig.hook(
      team,
      "on_task_completed.sh",
      `# pi-teams-hooks: sandbox=off\nF=$PI_TEAMS_HOOK_RESULT_FILE\nif [ "$PI_TEAMS_TASK_ID" = 1 ]; then rm "$F" && mkfifo "$F" || exit 1; echo "$F" > "$PI_TEAMS_TEAM_DIR/result-file.txt"; fi\nexit 0`,
    );
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    await completeAndWait(leader, team, "1");
    // The leader made the file: anything else at its path is not its file, whatever it is.
    const problem =
      "invalid verdict in PI_TEAMS_HOOK_RESULT_FILE: the result file the leader made for the run was replaced (by a FIFO)";
    expect(leader.events()[0]).toMatchObject({ taskId: "1", outcome: "error" });
    expect(leader.events()[0]?.summary).toContain(problem);
    expect((await readLogs(team.teamDir))[0]?.result).toMatchObject({
      outcome: "error",
      errorKind: "invalid_verdict",
      error: problem,
    });
    // The result file was in the run's private folder in the leader's runs folder, removed with it.
    const resultFile = (await readFile(path.join(team.teamDir, "result-file.txt"), "utf8")).trim();
    expect(path.basename(resultFile)).toBe("result.json");
    expect(path.dirname(path.dirname(resultFile))).toBe(runsRoot());
    expect(existsSync(path.dirname(resultFile))).toBe(false);
    await completeAndWait(leader, team, "2");
    expect(leader.events((e) => e.taskId === "2")[0]).toMatchObject({ outcome: "passed" });
    await expectStopsOnSigterm(leader);
  });

  it("a sandboxed hook cannot put a FIFO in place of its result file: the file stays the leader's, and the exit code decides", async () => {
    const team = await rig.team({ tasks: [working("1")] });
    // Exits 0 only when its result file is still a regular file after the attempt to replace it.
    await rig.hook(
      team,
      "on_task_completed.sh",
      `F=$PI_TEAMS_HOOK_RESULT_FILE\nrm -f "$F" 2>/dev/null; mkfifo "$F" 2>/dev/null\n[ -f "$F" ] && [ ! -p "$F" ]`,
    );
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    await completeAndWait(leader, team, "1");
    expect(leader.events()[0]).toMatchObject({ taskId: "1", outcome: "passed" });
    expect((await readLogs(team.teamDir))[0]?.result).toMatchObject({ outcome: "passed", sandbox: "on" });
    await expectStopsOnSigterm(leader);
  });

  it("a FIFO as the leader's own first-start mark: the start fails with a message naming it, instead of hanging", async () => {
    const team = await gateTeam();
    const mark = path.join(team.teamDir, "hook-state", "first-start");
    await mkdir(path.dirname(mark), { recursive: true });
    mkfifo(mark);
    const leader = await rig.leader(team, [], { waitForWatching: false });
    const exit = await leader.exited;
    expect(exit.code).not.toBe(0);
    expect(leader.stderr).toContain(`${mark}: not a regular file`);
  });
});
