/**
 * Held gates against the agents they judge, through the built bin: the agents can write
 * `hook-state/deferrals/` (docs/security.md, the threat model), so the leader and `decide` hold each
 * deferral file to what its gate held (event/deferral-check.ts). Another run's record with a
 * decision planted in it is moved aside and written again at once, a file made unreadable or
 * replaced by a FIFO at its deadline;
 * a deadline pushed into 2099 is put back and the gate expires when it was due; a key edited to
 * another task's cannot carry a decision over to that task (whose gate must still run); a deferral no
 * gate held is refused; files gone with their folder, or with the whole team dir, are written again
 * (a file in the folder's place is said once, not at every reconcile scan).
 * Every one of these is said. Before these checks, each of them left a gate held for ever, in silence,
 * or let a decision pass a gate that never ran.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdir, readFile, readdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import type { DeferralRecord } from "../../extensions/teams-hooks/deferrals/record.js";
import {
  type LeaderProcess,
  type LeaderRig,
  readLedger,
  readTaskFile,
  runBin,
  taskJson,
  useLeaderRig,
  waitUntil,
} from "../helpers/leader-rig.js";
import { makeTask, type TempTeam, runs } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const ARGS = ["--reconcile-ms", "200"];
const working = (id: string) => makeTask({ id, owner: "alice", status: "in_progress" });
const deferralsDir = (team: TempTeam) => path.join(team.teamDir, "hook-state", "deferrals");
const fileOf = (team: TempTeam, runId: string) => path.join(deferralsDir(team), `${runId}.json`);
const readRecord = async (team: TempTeam, runId: string) =>
  JSON.parse(await readFile(fileOf(team, runId), "utf8")) as DeferralRecord;
const FAR = "2099-01-01T00:00:00.000Z";
const MALLORY = { decision: "allow", by: "mallory", at: "2026-01-01T00:00:00.000Z" };

/** A team whose gate counts its runs by task and defers; a leader watching it. */
async function heldTeam(
  rig: LeaderRig,
  ids: string[],
  hooks: Record<string, unknown> = {},
): Promise<{ team: TempTeam; leader: LeaderProcess }> {
  const team = await rig.team({
    tasks: ids.map(working),
    config: { hooks: { failureAction: "reopen_followup", ...hooks } },
  });
  await rig.hook(
    team,
    "on_task_completed.sh",
    `echo "$PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/gate-runs.txt"\necho '{"decision":"defer","code":"ci.pending","reason":"waiting for CI"}'`,
  );
  return { team, leader: await rig.leader(team, ARGS) };
}

/** Completes `ids` and returns the run id each one's gate is held under. */
async function hold(
  rig: LeaderRig,
  team: TempTeam,
  leader: LeaderProcess,
  ids: string[],
): Promise<Map<string, string>> {
  const before = leader.events((e) => e.outcome === "deferred").length;
  await rig.worker("complete", { tasksDir: team.tasksDir, ids });
  const events = await leader.waitForEvents(before + ids.length, (e) => e.outcome === "deferred");
  return new Map(events.map((e) => [e.taskId ?? "", e.deferral?.runId ?? ""]));
}

const gateRuns = (team: TempTeam): Promise<string[]> => runs(team, "gate-runs.txt");

/**
 * Writes `text` over `file` as a careful writer does (a temp file renamed over it), so that it is never seen half
 * written.
 */
async function plant(file: string, text: string): Promise<void> {
  const tmp = `${file}.tmp.${process.pid}.${Date.now()}`;
  await writeFile(tmp, text);
  await rename(tmp, file);
}

/**
 * Puts a file where the folder `dir` is. The leader writes again each deferral file it sees go, so a
 * recursive rm can meet a folder it has just filled (ENOTEMPTY), and the folder can be made again before
 * the file is written: the folder is renamed away (one step) and the file written only if nothing is there.
 */
async function folderToFile(dir: string, text: string): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    await rename(dir, `${dir}.gone.${attempt}`).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
    const written = await writeFile(dir, text, { flag: "wx" }).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code !== "EEXIST" && error.code !== "EISDIR") throw error;
        return false;
      },
    );
    if (written) return;
  }
  throw new Error(`${dir}: made again by the leader 20 times in a row`);
}

/** Writes a task file as a worker does (a temp file renamed over it). */
async function writeTask(team: TempTeam, task: Record<string, unknown> & { id: string }): Promise<void> {
  const tmp = `${team.taskFile(task.id)}.tmp.${process.pid}.${Date.now()}`;
  await writeFile(tmp, taskJson(task));
  await rename(tmp, team.taskFile(task.id));
}

const warned = (leader: LeaderProcess, ...parts: string[]) =>
  leader.waitFor(`a warning with ${parts.join(" … ")}`, () =>
    leader.warnings().find((w) => parts.every((p) => w.includes(p))),
  );

describe.concurrent("deferral files edited by an agent", () => {
  it("garbage, a FIFO, another run's record with a planted decision, a deadline in 2099: each said and undone; every gate expires when it was due", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const { team, leader } = await heldTeam(rig, ["1", "2", "3", "4"], { deferTimeoutMs: 4000 });
    const runs = await hold(rig, team, leader, ["1", "2", "3", "4"]);
    const run = (id: string) => runs.get(id) ?? "";
    const due = new Map<string, string>();
    for (const id of runs.keys()) due.set(id, (await readRecord(team, run(id))).expiresAt);

    await plant(fileOf(team, run("1")), "{not json");
    // Made aside and renamed over the record: the leader, which writes a missing record again, never sees a gap.
    const fifo = `${fileOf(team, run("2"))}.fifo.${process.pid}`;
    execFileSync("mkfifo", [fifo]);
    await rename(fifo, fileOf(team, run("2")));
    await plant(fileOf(team, run("3")), JSON.stringify({ ...(await readRecord(team, run("4"))), decision: MALLORY }));
    await plant(fileOf(team, run("4")), JSON.stringify({ ...(await readRecord(team, run("4"))), expiresAt: FAR }));

    // Another run's record is not this gate's: moved aside at once. A deadline moved is put back at once.
    await warned(
      leader,
      fileOf(team, run("3")),
      `holds run ${run("4")}`,
      "refused, moved aside",
      `written again from what the gate of task_completed:3:`,
    );
    await warned(
      leader,
      fileOf(team, run("4")),
      "changed since its gate was held",
      `expiresAt "${FAR}" (held: "${due.get("4")}")`,
      "put back as held",
    );
    // An unreadable file is said, and left until the deadline (a person may be fixing it)…
    await warned(leader, fileOf(team, run("1")), "invalid JSON", "its gate stays held (decide cannot settle it)");
    await warned(leader, fileOf(team, run("2")), "not a regular file (fifo)", "its gate stays held");
    // …which it does not push back: there it is moved aside and written again, and the gate expires.
    await warned(leader, fileOf(team, run("1")), "invalid JSON", "refused, moved aside", "written again");
    await warned(leader, fileOf(team, run("2")), "not a regular file (fifo)", "refused, moved aside");

    const expired = await leader.waitForEvents(4, (e) => e.decision?.decision === "expired", 20_000);
    expect(expired.map((e) => e.taskId).sort()).toEqual(["1", "2", "3", "4"]);
    expect(leader.events((e) => e.decision?.by === "mallory")).toEqual([]);
    for (const id of runs.keys()) {
      const record = await readRecord(team, run(id));
      expect(record).toMatchObject({
        runId: run(id),
        taskId: id,
        expiresAt: due.get(id),
        decision: { decision: "expired" },
        applied: {},
      });
      expect((await readTaskFile(team, id)).metadata).toMatchObject({
        qualityGateDecision: "expired",
        qualityGateFailureCount: 1,
      });
    }
    const aside = (await readdir(deferralsDir(team))).filter((n) => n.includes(".refused-"));
    expect(aside.map((n) => n.replace(/\.refused-\d+$/, "")).sort()).toEqual(
      [`${run("1")}.json`, `${run("2")}.json`, `${run("3")}.json`].sort(),
    );
  });

  it("a decision cannot move to another task: a key edited in a held deferral is put back, a deferral no gate held is refused, and those tasks' gates still run", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const { team, leader } = await heldTeam(rig, ["5", "6", "7"]);
    const run5 = (await hold(rig, team, leader, ["5"])).get("5") ?? "";
    const held = await readRecord(team, run5);
    // The agent chooses the completion stamps of tasks 6 and 7, plants decisions for their keys, then completes them.
    const at6 = new Date(Date.now() + 1000).toISOString();
    const at7 = new Date(Date.now() + 2000).toISOString();
    const key6 = `task_completed:6:${at6}`;
    const key7 = `task_completed:7:${at7}`;
    await plant(fileOf(team, run5), JSON.stringify({ ...held, key: key6, taskId: "6", decision: MALLORY }));
    const forged = {
      ...held,
      runId: "forged-run",
      eventRunId: "forged-run",
      key: key7,
      taskId: "7",
      logFile: null,
      decision: MALLORY,
    };
    await plant(fileOf(team, "forged-run"), JSON.stringify(forged));

    await warned(
      leader,
      fileOf(team, run5),
      "changed since its gate was held",
      `key "${key6}" (held: "${held.key}")`,
      `taskId "6" (held: "5")`,
    );
    await warned(leader, fileOf(team, "forged-run"), "refused: no gate held run forged-run");
    // Mallory's decision stands, named, for the task whose gate it held: task 5.
    const [allowed] = await leader.waitForEvents(1, (e) => e.decision?.by === "mallory");
    expect(allowed).toMatchObject({
      taskId: "5",
      key: held.key,
      decision: { decision: "allow", deferredRunId: run5 },
    });
    expect((await readTaskFile(team, "5")).metadata).toMatchObject({
      qualityGateDecision: "allow",
      qualityGateDecidedBy: "mallory",
    });
    expect((await readRecord(team, run5)).key).toBe(held.key);
    const forgedAnswer = await runBin([
      "decide",
      "--yes",
      "--team-dir",
      team.teamDir,
      "forged-run",
      "allow",
      "--by",
      "mallory",
    ]);
    expect(forgedAnswer.code).not.toBe(0);
    expect(forgedAnswer.stderr).toContain("refused: no gate held run forged-run");

    for (const [id, at] of [
      ["6", at6],
      ["7", at7],
    ] as const) {
      await writeTask(team, {
        id,
        owner: "alice",
        status: "completed",
        updatedAt: at,
        metadata: { result: "done", completedAt: at },
      });
    }
    const deferred = await leader.waitForEvents(2, (e) => e.outcome === "deferred" && e.taskId !== "5");
    expect(deferred.map((e) => e.key).sort()).toEqual([key6, key7]);
    expect((await gateRuns(team)).sort()).toEqual(["5", "6", "7"]);
    expect(
      (await readLedger(team.teamDir)).filter((r) => r.key === key6 || r.key === key7).map((r) => r.op),
    ).not.toContain("done");
  });

  it("the deferrals folder deleted, then the whole team dir deleted and made again: the files are written again, decide settles one, the other expires", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const { team, leader } = await heldTeam(rig, ["1", "2"], { deferTimeoutMs: 9000 });
    const runs = await hold(rig, team, leader, ["1", "2"]);
    const [run1, run2] = [runs.get("1") ?? "", runs.get("2") ?? ""];

    // A file where the folder was: said once (not at every reconcile scan), and the gates wait for it to go.
    await folderToFile(deferralsDir(team), "not a folder\n");
    await warned(leader, deferralsDir(team), "cannot list the deferrals (ENOTDIR");
    const since = performance.now();
    // a negative check: only time can show it
    await leader.waitFor("five reconcile scans", () => performance.now() - since > 1_000);
    expect(leader.warnings().filter((w) => w.includes("cannot list the deferrals"))).toHaveLength(1);
    await rm(deferralsDir(team));
    await warned(leader, fileOf(team, run1), "is gone: written again from what its gate held");
    await warned(leader, fileOf(team, run2), "is gone: written again from what its gate held");
    const answer = await runBin(["decide", "--yes", "--team-dir", team.teamDir, run1, "allow", "--by", "ci"]);
    expect(answer).toMatchObject({ code: 0 });
    await leader.waitForEvents(1, (e) => e.decision?.deferredRunId === run1);

    const saved = `${team.teamDir}.saved`;
    await cp(team.teamDir, saved, { recursive: true });
    // the leader may write into it while it goes
    await rm(team.teamDir, { recursive: true, maxRetries: 20, retryDelay: 20 });
    await leader.waitFor("the team dir is gone", () =>
      leader.warnings().find((w) => w.includes("is gone: no gate runs")),
    );
    await mkdir(team.tasksDir, { recursive: true });
    await cp(path.join(saved, "config.json"), path.join(team.teamDir, "config.json"));
    for (const id of ["1", "2"])
      await cp(path.join(saved, path.relative(team.teamDir, team.taskFile(id))), team.taskFile(id));
    await rm(saved, { recursive: true });
    await waitUntil("run 2's file written again", () => existsSync(fileOf(team, run2)), {
      context: () => leader.describe(),
    });
    const [expired] = await leader.waitForEvents(1, (e) => e.decision?.deferredRunId === run2, 20_000);
    expect(expired).toMatchObject({ taskId: "2", decision: { decision: "expired" } });
    expect(existsSync(fileOf(team, run1))).toBe(false); // applied before: never written again
    expect(
      (await readLedger(team.teamDir))
        .filter((r) => r.key === expired?.key)
        .map((r) => r.op)
        .pop(),
    ).toBe("done");
  });

  it("`applied` and `applying` written by hand are not believed: no gate is closed without its decision applied and logged in hook-logs", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const { team, leader } = await heldTeam(rig, ["1", "2"]);
    const runs = await hold(rig, team, leader, ["1", "2"]);
    const [run1, run2] = [runs.get("1") ?? "", runs.get("2") ?? ""];
    const [held1, held2] = [await readRecord(team, run1), await readRecord(team, run2)];
    // "Applied", naming a log that exists but is not its decision's (the held run's own).
    await plant(
      fileOf(team, run1),
      JSON.stringify({ ...held1, applied: { at: new Date().toISOString(), logFile: held1.logFile, actions: [] } }),
    );
    await warned(
      leader,
      fileOf(team, run1),
      `says applied, but its log ${held1.logFile} is not the decision log of run ${run1}: not believed; its gate stays held`,
    );
    expect(await leader.stop()).toMatchObject({ code: 0 });
    const lastOp = async (key: string) => (await readLedger(team.teamDir)).filter((r) => r.key === key).pop()?.op;
    expect(await lastOp(held1.key)).toBe("defer");
    expect((await readRecord(team, run1)).applied).toBeUndefined();

    // A decision and an `applying` whose log is outside hook-logs: the log goes where logs go, nowhere else.
    const elsewhere = path.join(team.teamsRoot, "elsewhere.json");
    await plant(
      fileOf(team, run2),
      JSON.stringify({
        ...held2,
        decision: { decision: "deny", by: "mallory", at: new Date().toISOString() },
        applying: { at: new Date().toISOString(), runId: "x", logFile: elsewhere },
      }),
    );
    expect(
      await runBin(["decide", "--yes", "--team-dir", team.teamDir, run2, "deny", "--by", "mallory"]),
    ).toMatchObject({
      code: 0,
    });
    expect(existsSync(elsewhere)).toBe(false);
    const applied2 = (await readRecord(team, run2)).applied;
    expect(path.dirname(applied2?.logFile ?? "")).toBe(path.join(team.teamDir, "hook-logs"));
    expect(await runBin(["decide", "--yes", "--team-dir", team.teamDir, run1, "allow", "--by", "ci"])).toMatchObject({
      code: 0,
    });

    const next = await rig.leader(team, ARGS);
    await next.waitFor(
      "both keys done",
      async () => (await lastOp(held1.key)) === "done" && (await lastOp(held2.key)) === "done",
    );
    expect((await readTaskFile(team, "1")).metadata).toMatchObject({
      qualityGateDecision: "allow",
      qualityGateDecidedBy: "ci",
    });
    expect((await readTaskFile(team, "2")).metadata).toMatchObject({
      qualityGateDecision: "deny",
      qualityGateDecidedBy: "mallory",
      qualityGateFailureCount: 1,
    });
  });

  it("with no leader running: decide and the next start hold the files to the deadlines and keys their gates held", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const { team, leader } = await heldTeam(rig, ["1", "2"], { deferTimeoutMs: 1500 });
    const runs = await hold(rig, team, leader, ["1", "2"]);
    const [run1, run2] = [runs.get("1") ?? "", runs.get("2") ?? ""];
    expect(await leader.stop()).toMatchObject({ code: 0 });
    const [held1, held2] = [await readRecord(team, run1), await readRecord(team, run2)];
    const key9 = "task_completed:9:2026-01-01T00:00:00.000Z";
    await plant(fileOf(team, run1), JSON.stringify({ ...held1, expiresAt: FAR, key: key9, taskId: "9" }));
    await plant(fileOf(team, run2), JSON.stringify({ ...held2, expiresAt: FAR }));
    await waitUntil("both deadlines past", () => Date.now() > Date.parse(held2.expiresAt) + 50);

    const late = await runBin(["decide", "--yes", "--team-dir", team.teamDir, run1, "allow", "--by", "ci"]);
    expect(late.code).toBe(1);
    expect(late.stderr).toContain(
      `warning: ${fileOf(team, run1)}: changed since its gate was held: key "${key9}" (held: "${held1.key}"), taskId "9" (held: "1"), expiresAt "${FAR}" (held: "${held1.expiresAt}"); put back as held`,
    );
    expect(late.stderr).toContain(`expired at ${held1.expiresAt}`);
    expect((await readTaskFile(team, "1")).metadata).toMatchObject({ qualityGateDecision: "expired" });

    const next = await rig.leader(team, ARGS);
    await warned(next, fileOf(team, run2), "changed since its gate was held", `expiresAt "${FAR}"`);
    const [expired] = await next.waitForEvents(1, (e) => e.decision?.deferredRunId === run2);
    expect(expired).toMatchObject({ taskId: "2", decision: { decision: "expired" } });
    expect((await readLedger(team.teamDir)).some((r) => r.key === key9)).toBe(false);
  });
});
