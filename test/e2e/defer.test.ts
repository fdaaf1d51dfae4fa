/**
 * Held gates end to end through the built bin: `watch` holds a task event whose gate answers defer
 * (task metadata, deferral file, ledger `defer`) and never runs it again, across restarts and a
 * SIGKILL; `decide` settles it with a leader running (the leader applies it) or without one (decide
 * applies it under the leader lock); the deadline expires it (while the leader runs, and at the start
 * of a leader that was down); `run --apply-policy` holds too (exit 3). Each crash point of holding
 * and of applying is rebuilt on disk exactly as a SIGKILL there leaves it, and the next start must
 * finish it once: one policy application, two logs. `decide` is a person's act: it needs a terminal
 * (where it asks) or `--yes`, tells the lead which, and refuses a `--by` of the task API's (`api:…`).
 */
import { execFile as execFileCb } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { describe, it } from "vitest";
import type { DeferralRecord } from "../../extensions/teams-hooks/deferrals/record.js";
import {
  BIN,
  type LeaderProcess,
  type LeaderRig,
  readAllTaskFiles,
  readInboxFile,
  readLedger,
  readLogs,
  readTaskFile,
  runBin,
  useLeaderRig,
  waitUntil,
  holdTask,
} from "../helpers/leader-rig.js";
import { makeTask, type TempTeam, runs } from "../helpers/temp-team.js";

const execFile = promisify(execFileCb);
const outerRig = useLeaderRig();
const ARGS = ["--reconcile-ms", "200"];
/** The policy in config.json: `decide` applies it too when no leader runs (a leader's flags are its own). */
const CONFIG = { hooks: { failureAction: "reopen_followup" } };
const working = (id: string) => makeTask({ id, owner: "alice", status: "in_progress" });

/** A gate that counts its runs (in the team dir, which its settings line makes writable) and defers. */
async function deferringGate(rig: LeaderRig, team: TempTeam): Promise<void> {
  await rig.hook(
    team,
    "on_task_completed.sh",
    [
      "# pi-teams-hooks: sandbox-write=$PI_TEAMS_TEAM_DIR",
      'echo run >> "$PI_TEAMS_TEAM_DIR/gate-runs.txt"',
      `echo '{"decision":"defer","code":"ci.pending","reason":"waiting for CI"}'`,
    ].join("\n"),
  );
}

async function gateRuns(team: TempTeam): Promise<number> {
  return (await runs(team, "gate-runs.txt")).length;
}

const deferralsDir = (team: TempTeam) => path.join(team.teamDir, "hook-state", "deferrals");

async function deferrals(team: TempTeam): Promise<DeferralRecord[]> {
  const names = await readdir(deferralsDir(team)).catch(() => []);
  return Promise.all(
    names
      .filter((n) => n.endsWith(".json"))
      .map(async (n) => JSON.parse(await readFile(path.join(deferralsDir(team), n), "utf8")) as DeferralRecord),
  );
}

/** A team whose task 1 is held by a running leader (`first`), under the policy of CONFIG. */
async function held(
  context: Parameters<LeaderRig["scoped"]>[0],
): Promise<{ rig: LeaderRig; team: TempTeam; first: LeaderProcess; runId: string }> {
  const rig = outerRig.scoped(context);
  const team = await rig.team({ tasks: [working("1")], config: CONFIG });
  await deferringGate(rig, team);
  const first = await rig.leader(team, ARGS);
  return { rig, team, first, runId: await holdTask(rig, team, first) };
}

function decide(team: TempTeam, runId: string, ...rest: string[]) {
  return runBin(["decide", "--yes", "--team-dir", team.teamDir, runId, ...rest, "--by", "ci"]);
}

/** The ledger without some of its records (the leader must be dead): the state a crash before them leaves. */
async function dropLedger(team: TempTeam, drop: (record: { op: string; key: string }) => boolean): Promise<void> {
  const file = path.join(team.teamDir, "hook-state", "ledger.jsonl");
  const lines = (await readFile(file, "utf8")).split("\n").filter(Boolean);
  await writeFile(
    file,
    `${lines.filter((line) => !drop(JSON.parse(line) as { op: string; key: string })).join("\n")}\n`,
  );
}

async function lastOp(team: TempTeam, key: string): Promise<string | undefined> {
  return (await readLedger(team.teamDir)).filter((r) => r.key === key).pop()?.op;
}

/**
 * What one policy application of a denial under reopen_followup leaves: counted once, one follow-up, the task and the
 * follow-up assigned once each, one nudge.
 */
async function expectDeniedOnce(context: { expect: typeof import("vitest").expect }, team: TempTeam): Promise<void> {
  const { expect } = context;
  const task = await readTaskFile(team, "1");
  expect(task).toMatchObject({
    status: "pending",
    metadata: {
      qualityGateStatus: "failed",
      qualityGateFailureCount: 1,
      reopenedByQualityGateCount: 1,
      qualityGateDecision: "deny",
    },
  });
  const followups = [...(await readAllTaskFiles(team)).values()].filter(
    (t) => t.metadata?.qualityGateFollowupFor !== undefined,
  );
  expect(followups).toHaveLength(1);
  expect(await readInboxFile(team, team.taskListId, "alice")).toHaveLength(3);
  const logs = await readLogs(team.teamDir);
  expect(logs.map((l) => l.result.outcome)).toEqual(["deferred", "failed"]);
  expect(logs[1]?.decision).toMatchObject({ decision: "deny", deferredLog: logs[0]?.file });
}

describe.concurrent("a held gate in the leader", () => {
  it("holds the task (metadata, deferral, ledger) and never runs it again: not after a restart, nor after a SIGKILL", async (context) => {
    const { expect } = context;
    const { rig, team, first, runId } = await held(context);
    const [event] = first.events();
    expect(event).toMatchObject({
      outcome: "deferred",
      summary: "deferred (ci.pending): waiting for CI",
      actions: [expect.stringMatching(/^held until /)],
    });
    const task = await readTaskFile(team, "1");
    expect(task).toMatchObject({
      status: "completed",
      metadata: {
        qualityGateStatus: "deferred",
        qualityGateDeferredRunId: runId,
        qualityGateDeferredReason: "waiting for CI",
      },
    });
    expect(await lastOp(team, event?.key ?? "")).toBe("defer");
    expect(await first.stop()).toMatchObject({ code: 0 });

    // A worker edits the held task (another field): looked at again, still the same held event.
    const second = await rig.leader(team, ARGS);
    await rig.worker("touch", { tasksDir: team.tasksDir, ids: ["1"], field: "note", rounds: 1 });
    // a negative check: only time can show it
    await second.waitFor("a reconcile scan past the edit", () => performance.now() - second.startedAt > 1000);
    expect(await second.stop()).toMatchObject({ code: 0 });
    const third = await rig.leader(team, ARGS); // resolves once its start-up scan has looked at every task
    await rig.worker("touch", { tasksDir: team.tasksDir, ids: ["1"], field: "note", rounds: 1 });
    await third.kill();
    const fourth = await rig.leader(team, ARGS);
    expect(await gateRuns(team)).toBe(1);
    expect(second.events()).toEqual([]);
    expect([...third.events(), ...fourth.events()]).toEqual([]);
    expect(await lastOp(team, event?.key ?? "")).toBe("defer");
    expect((await readTaskFile(team, "1")).metadata?.qualityGateStatus).toBe("deferred");
  });

  it("decide allow while the leader runs: the leader applies it as a pass, decide says so, two logs, the key is done", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")], config: CONFIG });
    await deferringGate(rig, team);
    const leader = await rig.leader(team, ARGS);
    const runId = await holdTask(rig, team, leader);
    const answer = await decide(team, runId, "allow", "--reason", "CI green");
    expect(answer.code, answer.stderr).toBe(0);
    expect(answer.stdout).toContain(`task_completed #1 on_task_completed.sh: allow applied for run ${runId}`);
    const [decided] = await leader.waitForEvents(1, (e) => e.decision !== undefined);
    expect(decided).toMatchObject({
      outcome: "passed",
      decision: { deferredRunId: runId, decision: "allow", by: "ci" },
    });
    expect(await readTaskFile(team, "1")).toMatchObject({
      status: "completed",
      metadata: { qualityGateStatus: "passed", qualityGateDecision: "allow", qualityGateDecidedBy: "ci" },
    });
    const logs = await readLogs(team.teamDir);
    expect(logs.map((l) => l.result.outcome)).toEqual(["deferred", "passed"]);
    expect(logs[1]).toMatchObject({
      key: decided?.key,
      result: { verdict: { decision: "allow", reason: "CI green", source: "decision" } },
      decision: { deferredRunId: runId },
    });
    await leader.waitFor("the key done", async () => (await lastOp(team, decided?.key ?? "")) === "done");

    const again = await decide(team, runId, "allow", "--reason", "CI green");
    expect(again.code).toBe(0);
    const other = await decide(team, runId, "deny");
    expect(other.code).toBe(1);
    expect(other.stderr).toContain(`run ${runId} was decided before: allow "CI green" by ci`);
    expect(await readLogs(team.teamDir)).toHaveLength(2);
  });

  it("decide deny without a leader applies it itself; the next start closes the key and runs nothing", async (context) => {
    const { expect } = context;
    const { rig, team, first, runId } = await held(context);
    const key = first.events()[0]?.key ?? "";
    await first.stop();
    // The short id of the `logs` table names the run, unless another held run starts the same way.
    const short = runId.slice(0, 8);
    const decoy = path.join(deferralsDir(team), `${short}-0000-4000-8000-000000000000.json`);
    await writeFile(decoy, "{}");
    const ambiguous = await decide(team, short, "deny");
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain(`run id "${short}" matches 2 held runs: `);
    expect(ambiguous.stderr).toContain(runId);
    await rm(decoy);
    const answer = await decide(team, short, "deny", "--code", "ci.failed", "--reason", "2 tests fail");
    expect(answer.code, answer.stderr).toBe(0);
    expect(answer.stdout).toContain(`deny applied for run ${runId}`);
    expect(answer.stdout).toContain("→ reopened (1/3), reassigned to alice, follow-up #2 for alice, nudge alice");
    expect(existsSync(path.join(team.teamDir, "hook-state", "leader.lock"))).toBe(false);
    await expectDeniedOnce(context, team);

    const second = await rig.leader(team, ARGS);
    await second.waitFor("the key done", async () => (await lastOp(team, key)) === "done");
    expect(await gateRuns(team)).toBe(1);
    await expectDeniedOnce(context, team);
  });

  it("SIGKILL while held, a restart, then decide: exactly one policy application and two log records", async (context) => {
    const { expect } = context;
    const { rig, team, first, runId } = await held(context);
    await first.kill();
    const second = await rig.leader(team, ARGS);
    const answer = await decide(team, runId, "deny", "--reason", "2 tests fail");
    expect(answer.code, answer.stderr).toBe(0);
    await second.waitForEvents(1, (e) => e.decision !== undefined);
    await expectDeniedOnce(context, team);
    expect(await gateRuns(team)).toBe(1);
    await second.stop();
    const third = await rig.leader(team, ARGS);
    await third.waitFor("a reconcile scan", async () => (await readLedger(team.teamDir)).some((r) => r.op === "done"));
    expect(third.events()).toEqual([]);
    await expectDeniedOnce(context, team);
  });

  it("a deferral expires at hooks.deferTimeoutMs while the leader runs: the closed error defer_expired, and decide is refused", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [working("1")],
      config: { hooks: { deferTimeoutMs: 1000, failureAction: "reopen" } },
    });
    await deferringGate(rig, team);
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    const runId = await holdTask(rig, team, leader);
    const [expired] = await leader.waitForEvents(1, (e) => e.decision !== undefined);
    expect(expired).toMatchObject({
      outcome: "error",
      decision: { decision: "expired", by: "pi-teams-hooks" },
      actions: ["reopened (1/3)", "reassigned to alice", "nudge alice"],
    });
    expect(expired?.summary).toMatch(/^no decision within 1\.0s \(hooks\.deferTimeoutMs\)/);
    expect(await readTaskFile(team, "1")).toMatchObject({
      status: "pending",
      metadata: { qualityGateStatus: "failed", qualityGateOutcome: "error", qualityGateDecision: "expired" },
    });
    expect((await readLogs(team.teamDir))[1]?.result).toMatchObject({ outcome: "error", errorKind: "defer_expired" });
    const late = await decide(team, runId, "allow");
    expect(late.code).toBe(1);
    expect(late.stderr).toContain("expired at");
  });

  it("a leader that was down expires overdue deferrals at its start", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const completed = makeTask({
      id: "1",
      owner: "alice",
      status: "completed",
      metadata: { completedAt: "2026-12-02T10:00:00.000Z" },
    });
    const team = await rig.team({ tasks: [completed], config: { hooks: { deferTimeoutMs: 1000 } } });
    await deferringGate(rig, team);
    // Held with no leader running (so that no leader's timer can expire it first).
    expect(
      (await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--apply-policy"])).code,
    ).toBe(3);
    const [held] = await deferrals(team);
    // the point of the test
    await waitUntil("the deadline to pass", () => Date.now() > Date.parse(held?.expiresAt ?? ""));
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    const [expired] = await leader.waitForEvents(1);
    expect(expired).toMatchObject({ outcome: "error", decision: { decision: "expired", deferredRunId: held?.runId } });
    expect(await gateRuns(team)).toBe(1);
    await leader.waitFor("the key done", async () => (await lastOp(team, held?.key ?? "")) === "done");
  });
});

describe.concurrent("each crash point, as a SIGKILL there leaves it", () => {
  it("after the held run's log, before its deferral file: the next start writes it from the log and keeps the key held", async (context) => {
    const { expect } = context;
    const { rig, team, first, runId } = await held(context);
    const key = first.events()[0]?.key ?? "";
    await first.kill();
    await rm(deferralsDir(team), { recursive: true });
    await dropLedger(team, (r) => r.op === "defer");
    const second = await rig.leader(team, ARGS);
    expect(second.linesOf("recovered")).toEqual([{ type: "recovered", key, how: "deferred" }]);
    expect((await deferrals(team)).map((d) => d.runId)).toEqual([runId]);
    expect(await lastOp(team, key)).toBe("defer");
    expect((await decide(team, runId, "deny")).code).toBe(0);
    await second.waitForEvents(1, (e) => e.decision !== undefined);
    await expectDeniedOnce(context, team);
    expect(await gateRuns(team)).toBe(1);
  });

  it("after the deferral file, before the ledger's record, decided meanwhile with no leader: the next start keeps the decision and closes the key", async (context) => {
    const { expect } = context;
    const { rig, team, first, runId } = await held(context);
    const key = first.events()[0]?.key ?? "";
    await first.kill();
    await dropLedger(team, (r) => r.op === "defer");
    expect((await decide(team, runId, "deny")).code).toBe(0);
    const second = await rig.leader(team, ARGS);
    expect(second.linesOf("recovered")).toEqual([{ type: "recovered", key, how: "deferred" }]);
    await second.waitFor("the key done", async () => (await lastOp(team, key)) === "done");
    await expectDeniedOnce(context, team);
    expect(await gateRuns(team)).toBe(1);
  });

  it("after the task metadata, before the log: the event was not handled, so it runs again (attempt 2) and holds anew", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")], config: CONFIG });
    await deferringGate(rig, team);
    const first = await rig.leader(team, ARGS);
    const oldRun = await holdTask(rig, team, first);
    await first.kill();
    await rm(path.join(team.teamDir, "hook-logs"), { recursive: true });
    await rm(deferralsDir(team), { recursive: true });
    await dropLedger(team, (r) => r.op === "defer");
    const second = await rig.leader(team, ARGS);
    const [again] = await second.waitForEvents(1, (e) => e.outcome === "deferred");
    expect(again?.retry).toBe(true);
    expect(await gateRuns(team)).toBe(2);
    expect((await readTaskFile(team, "1")).metadata?.qualityGateDeferredRunId).toBe(again?.deferral?.runId);
    const stale = await decide(team, oldRun, "allow");
    expect(stale.code).toBe(2);
    expect(stale.stderr).toContain("no deferral with run id");
  });

  it("during an application, after the policy and before its log (and after the log, before `applied`): the next start finishes it once", async (context) => {
    const { expect } = context;
    const { rig, team, first, runId } = await held(context);
    const key = first.events()[0]?.key ?? "";
    await first.stop();
    expect((await decide(team, runId, "deny")).code).toBe(0);
    const file = path.join(deferralsDir(team), `${runId}.json`);
    const applied = JSON.parse(await readFile(file, "utf8")) as DeferralRecord;
    const decisionLog = applied.applied?.logFile ?? "";
    // Policy applied (task, follow-up, messages), log not written, `applied` not written.
    await rm(decisionLog);
    await writeFile(file, JSON.stringify({ ...applied, applied: undefined }));
    const second = await rig.leader(team, ARGS);
    const [event] = await second.waitForEvents(1, (e) => e.decision !== undefined);
    expect(event).toMatchObject({
      logFile: decisionLog,
      actions: [
        "already applied",
        "was reopened (1/3)",
        "reassigned to alice (sent before)",
        "follow-up #2 (existing) for alice",
        "nudge alice (sent before)",
      ],
    });
    await second.waitFor("the key done", async () => (await lastOp(team, key)) === "done");
    await expectDeniedOnce(context, team);
    await second.stop();

    // Log written, `applied` not: only `applied` is left to write.
    await writeFile(file, JSON.stringify({ ...applied, applied: undefined }));
    await dropLedger(team, (r) => r.op === "done" && r.key === key);
    const before = await readFile(team.taskFile("1"), "utf8");
    const third = await rig.leader(team, ARGS);
    await third.waitFor("the key done", async () => (await lastOp(team, key)) === "done");
    expect(await readFile(team.taskFile("1"), "utf8")).toBe(before);
    await expectDeniedOnce(context, team);
    expect(await gateRuns(team)).toBe(1);
  });
});

describe.concurrent("by hand", () => {
  it("run --apply-policy holds a deferring gate (exit 3) and decide settles it; without --apply-policy nothing is held", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [
        makeTask({
          id: "1",
          owner: "alice",
          status: "completed",
          metadata: { completedAt: "2026-12-02T10:00:00.000Z" },
        }),
      ],
    });
    await deferringGate(rig, team);
    const dry = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(dry.code).toBe(3);
    expect(dry.stdout).toContain("not held: without --apply-policy nothing is recorded");
    expect(await deferrals(team)).toEqual([]);

    const held = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--apply-policy"]);
    expect(held.code, held.stderr).toBe(3);
    const [record] = await deferrals(team);
    expect(held.stdout).toContain(`task_completed #1 on_task_completed.sh deferred`);
    expect(held.stdout).toContain(
      `held: decide with pi-teams-hooks decide --team-dir ${team.teamDir} ${record?.runId} allow|deny`,
    );
    expect((await readTaskFile(team, "1")).metadata?.qualityGateStatus).toBe("deferred");

    // A leader that starts meanwhile (running what exists: --catch-up) knows the key is held: no second gate.
    const leader = await rig.leader(team, ["--catch-up"]);
    expect(await gateRuns(team)).toBe(2); // the two `run`s above
    expect(leader.events()).toEqual([]);
    expect(await lastOp(team, record?.key ?? "")).toBe("defer");
    await leader.stop();

    const bad = await decide(team, record?.runId ?? "", "deny", "--code", "Not A Code");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--code: must start with a lower-case letter");
    expect((await decide(team, "no-such-run", "allow")).code).toBe(2);
    const json = await runBin(["decide", "--yes", "--team-dir", team.teamDir, record?.runId ?? "", "allow", "--json"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ kind: "applied", runId: record?.runId, actions: ["none"] });
    expect((await readTaskFile(team, "1")).metadata?.qualityGateStatus).toBe("passed");
  });

  it("idle cannot be held: a defer is a denial with the code deferral_not_supported", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({});
    await rig.hook(team, "on_idle.sh", `echo '{"decision":"defer","reason":"later"}'`);
    const result = await runBin(["run", "idle", "--team-dir", team.teamDir, "--member", "alice", "--json"]);
    // idle is observe-only: its failure is said, and `run` exits 0.
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      result: {
        outcome: "failed",
        verdict: { decision: "deny", code: "deferral_not_supported", reason: "this event cannot be deferred: later" },
      },
    });
    expect(existsSync(deferralsDir(team))).toBe(false);
  });
});

/** A team whose task 1 is held by `run --apply-policy` (no leader runs); returns its deferral's run id. */
async function heldByHand(rig: LeaderRig, team: TempTeam): Promise<string> {
  await deferringGate(rig, team);
  const held = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--apply-policy"]);
  if (held.code !== 3) throw new Error(`not held (exit ${held.code}): ${held.stderr}`);
  const [record] = await deferrals(team);
  if (!record) throw new Error("no deferral written");
  return record.runId;
}

const completed = () =>
  makeTask({ id: "1", owner: "alice", status: "completed", metadata: { completedAt: "2026-12-02T10:00:00.000Z" } });

async function leadNotes(team: TempTeam): Promise<string[]> {
  return (await readInboxFile(team, "team", team.leadName)).map((m) => m.text);
}

describe.concurrent("a decision by hand is a person's", () => {
  it("decide refuses a --by that starts with api: (exit 2): those are the task API's keys; nothing is decided", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [completed()] });
    const runId = await heldByHand(rig, team);
    for (const by of ["api:ci", "API:ci"]) {
      const refused = await runBin(["decide", "--yes", "--team-dir", team.teamDir, runId, "allow", "--by", by]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(
        `--by ${JSON.stringify(by)}: names that start with api: are the task API's keys, set by serve for a decision made with that key`,
      );
    }
    const [record] = await deferrals(team);
    expect(record?.decision).toBeUndefined();
    expect((await readTaskFile(team, "1")).metadata?.qualityGateStatus).toBe("deferred");
    expect(await leadNotes(team)).toEqual([]);
  });

  it("without a terminal, decide needs --yes (exit 2, nothing decided); with it, it decides and says so, in its output and to the lead", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [completed()] });
    const runId = await heldByHand(rig, team);
    const refused = await runBin(["decide", "--team-dir", team.teamDir, runId, "allow", "--by", "ada"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      "deciding a held gate is a person's act: run decide at a terminal (it asks), or give --yes to decide without one",
    );
    expect((await deferrals(team))[0]?.decision).toBeUndefined();
    expect((await readTaskFile(team, "1")).metadata?.qualityGateStatus).toBe("deferred");
    expect(await leadNotes(team)).toEqual([]);

    const yes = await runBin(["decide", "--yes", "--team-dir", team.teamDir, runId, "allow", "--by", "ada"]);
    expect(yes.code, yes.stderr).toBe(0);
    expect(yes.stdout).toContain(`task_completed #1 on_task_completed.sh: allow applied for run ${runId}`);
    expect(yes.stdout).toContain("decided by ada, without a terminal (--yes)");
    expect((await readTaskFile(team, "1")).metadata).toMatchObject({
      qualityGateStatus: "passed",
      qualityGateDecidedBy: "ada",
    });
    // The name given (--by) and who ran the command: user, host and pid, as trust says its approvals.
    const notes = await leadNotes(team);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(
      new RegExp(
        `^pi-teams-hooks decide: held gate decided: allow for task_completed #1 on_task_completed\\.sh, run ${runId}, by ada, run by \\S+@\\S* \\(pid \\d+, pi-teams-hooks decide, without a terminal \\(--yes\\)\\)$`,
      ),
    );
    // The same decision again answers as the first did; the lead is told once.
    expect((await runBin(["decide", "--yes", "--team-dir", team.teamDir, runId, "allow", "--by", "ada"])).code).toBe(0);
    expect(await leadNotes(team)).toHaveLength(1);
  });

  it.for([
    ["y", 0, "at a terminal"],
    ["n", 1, null],
  ] as const)("at a terminal, decide shows what is held and asks: %s", async ([answer, code, said], context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [completed()] });
    const runId = await heldByHand(rig, team);
    // util-linux `script` gives the command a terminal; the answer is typed on it.
    const command = `${process.execPath} ${BIN} decide --team-dir ${team.teamDir} ${runId} deny --code ci.failed --by ada`;
    const out = await execFile(
      "bash",
      ["-c", `printf '${answer}\\n' | script -qec '${command}' /dev/null; echo "exit=$?"`],
      {
        env: { ...process.env, NO_COLOR: "1" },
      },
    );
    expect(out.stdout).toContain(`Decide deny for task_completed #1 on_task_completed.sh, run ${runId}, as ada? [y/N]`);
    expect(out.stdout).toContain(`exit=${code}`);
    const metadata = (await readTaskFile(team, "1")).metadata;
    if (said) {
      expect(out.stdout).toContain(`decided by ada, ${said}`);
      expect(metadata).toMatchObject({
        qualityGateStatus: "failed",
        qualityGateDecision: "deny",
        qualityGateDecidedBy: "ada",
      });
      expect(await leadNotes(team)).toEqual([
        expect.stringMatching(
          new RegExp(`run ${runId}, by ada, run by \\S+@\\S* \\(pid \\d+, pi-teams-hooks decide, at a terminal\\)$`),
        ),
      ]);
    } else {
      expect(out.stdout).toContain(`not decided: task_completed #1 on_task_completed.sh, run ${runId} stays held`);
      expect(metadata?.qualityGateStatus).toBe("deferred");
      expect((await deferrals(team))[0]?.decision).toBeUndefined();
      expect(await leadNotes(team)).toEqual([]);
    }
  });
});
