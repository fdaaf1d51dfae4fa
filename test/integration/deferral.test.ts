/**
 * Held gates in process, with real hooks and real files, no leader: a gate that answers `defer` holds
 * its task (metadata, deferral file, log), and `decideDeferral` records a decision and, with no leader
 * running, applies it under the leader lock: the policy once, a second log that names the deferred
 * run. An application cut short anywhere is finished once by the next one; a leader that holds the
 * lock is left to apply it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Task, TeamIdentity } from "../../extensions/teams-hooks/contract/team-files.js";
import {
  type DecisionInput,
  applyDecision,
  decideDeferral,
} from "../../extensions/teams-hooks/event/deferral-decision.js";
import { type DeferralRecord, deferralFile } from "../../extensions/teams-hooks/deferrals/record.js";
import { type InvokeRequest, invokeEvent } from "../../extensions/teams-hooks/event/invoke.js";
import { eventRequest, teamIdentity } from "../helpers/invoke-request.js";
import { readLogs } from "../helpers/leader-rig.js";
import { teamSettings, type SettingsFor } from "../helpers/team-settings.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";
import { createRuntime } from "../../extensions/teams-hooks/runner/runtime.js";

const KEY = "task_completed:1:2026-12-02T10:00:00.000Z";
const POLICY = { failureAction: "reopen_followup", maxReopensPerTask: 3, followupOwner: "member" };
let team: TempTeam;
let identity: TeamIdentity;
let hooksDir: string;
const children: ChildProcess[] = [];

beforeEach(async () => {
  const completed = makeTask({
    id: "1",
    status: "completed",
    owner: "alice",
    metadata: { completedAt: "2026-12-02T10:00:00.000Z" },
  });
  team = await makeTempTeam({ teamId: "held", tasks: [completed] });
  identity = teamIdentity(team);
  hooksDir = path.join(team.teamsRoot, "_hooks");
  fs.mkdirSync(hooksDir, { recursive: true });
  fs.writeFileSync(
    path.join(hooksDir, "on_task_completed.sh"),
    `#!/usr/bin/env bash\necho '{"decision":"DEFER","code":"ci.pending","reason":"waiting for CI"}'\n`,
    { mode: 0o755 },
  );
});
afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  await team.cleanup();
});

type Over = Partial<InvokeRequest> & SettingsFor;

function request({ hooks, timeoutMs = 5_000, ...over }: Over = {}): InvokeRequest {
  const settings = { hooks: { ...POLICY, ...hooks }, timeoutMs };
  const base = { team, hooksDir, settings, key: KEY, timestamp: "2026-12-02T10:00:00.000Z", applyPolicy: true };
  return eventRequest(base, over);
}

const settings = () => ({ setup: { identity, settings: teamSettings({ hooks: POLICY, timeoutMs: 5_000 }) } });
const decide = (runId: string, input: DecisionInput, over: Parameters<typeof decideDeferral>[3] = { env: {} }) =>
  decideDeferral(team.teamDir, runId, input, { ...over, settings: settings() });

const task = (): Task => JSON.parse(fs.readFileSync(team.taskFile("1"), "utf8")) as Task;
const deferral = (runId: string): DeferralRecord =>
  JSON.parse(fs.readFileSync(deferralFile(team.teamDir, runId), "utf8")) as DeferralRecord;

const logs = () => readLogs(team.teamDir);

async function hold(over: Over = {}): Promise<string> {
  const outcome = await invokeEvent(request(over));
  expect(outcome.counted).toEqual({ state: "held", cause: "deferral" });
  expect(outcome.deferral).not.toBeNull();
  return outcome.deferral?.runId ?? "";
}

describe("a gate that answers defer", () => {
  it("holds the task: metadata, deferral file and log say deferred, with the reason, the run id and the deadline; nothing is counted or sent", async () => {
    const outcome = await invokeEvent(request({ hooks: { deferTimeoutMs: 3_600_000 } }));
    expect(outcome).toMatchObject({
      counted: { state: "held", cause: "deferral" },
      summary: "deferred (ci.pending): waiting for CI",
      actions: [expect.stringMatching(/^held until /)],
      policyApplied: true,
      pending: null,
    });
    const runId = outcome.result?.runId ?? "";
    const record = deferral(runId);
    expect(record).toMatchObject({
      runId,
      eventRunId: runId,
      key: KEY,
      event: "task_completed",
      taskId: "1",
      member: "alice",
      code: "ci.pending",
      reason: "waiting for CI",
      logFile: outcome.logFile,
    });
    expect(record.hook).toMatchObject({
      name: "on_task_completed.sh",
      gate: "on_task_completed",
      layer: "global",
      kind: "v1",
    });
    expect(Date.parse(record.expiresAt) - Date.parse(record.deferredAt)).toBe(3_600_000);
    expect(record.decision).toBeUndefined();
    expect(task().status).toBe("completed");
    expect(task().metadata).toMatchObject({
      qualityGateStatus: "deferred",
      qualityGateOutcome: "deferred",
      qualityGateSummary: "deferred (ci.pending): waiting for CI",
      qualityGateEventKey: KEY,
      qualityGateDeferredRunId: runId,
      qualityGateDeferredReason: "waiting for CI",
      qualityGateDeferredUntil: record.expiresAt,
    });
    expect(task().metadata).not.toHaveProperty("qualityGateFailureCount");
    const [log] = await logs();
    expect(log?.result).toMatchObject({ outcome: "deferred", verdict: { decision: "defer", source: "stdout" } });
    expect(log?.deferral).toMatchObject({ runId, expiresAt: record.expiresAt });
    expect(log?.policy).toMatchObject({ actions: [`held until ${record.expiresAt}`] });
    expect(fs.existsSync(team.inboxFile(team.taskListId, "alice"))).toBe(false);
  });

  it("without a policy (`run` without --apply-policy) only reports: no hold, no deferral file", async () => {
    const outcome = await invokeEvent(request({ applyPolicy: false }));
    expect(outcome).toMatchObject({
      counted: { state: "held", cause: "deferral" },
      deferral: null,
      summary: "deferred (ci.pending): waiting for CI",
    });
    expect(fs.existsSync(path.join(team.teamDir, "hook-state", "deferrals"))).toBe(false);
    expect(task().metadata).not.toHaveProperty("qualityGateStatus");
  });

  it("idle cannot be held: a defer there is a denial with the code deferral_not_supported", async () => {
    fs.writeFileSync(
      path.join(hooksDir, "on_idle.sh"),
      `#!/usr/bin/env bash\necho '{"decision":"defer","reason":"later"}'\n`,
      { mode: 0o755 },
    );
    const outcome = await invokeEvent(request({ event: "idle", key: "idle:alice:t", taskId: null }));
    expect(outcome.counted).toEqual({ state: "failed" });
    expect(outcome.result?.verdict).toMatchObject({
      decision: "deny",
      code: "deferral_not_supported",
      reason: "this event cannot be deferred: later",
    });
    expect(outcome.deferral).toBeNull();
  });
});

describe("decideDeferral without a leader", () => {
  it("allow: applied at once as a pass; a second log names the deferred run; the same decision again is the same answer, another is a conflict", async () => {
    const runId = await hold();
    const answer = await decide(runId, { decision: "allow", reason: "CI green", by: "ci" });
    expect(answer).toMatchObject({ kind: "applied", actions: ["none"] });
    const [held, decided] = await logs();
    expect(held?.result.outcome).toBe("deferred");
    expect(decided?.result).toMatchObject({
      ran: false,
      outcome: "passed",
      verdict: { decision: "allow", reason: "CI green", source: "decision" },
    });
    expect(decided?.decision).toMatchObject({
      deferredRunId: runId,
      deferredLog: held?.file,
      decision: "allow",
      by: "ci",
    });
    expect(decided?.key).toBe(KEY);
    expect(task().metadata).toMatchObject({
      qualityGateStatus: "passed",
      qualityGateDecision: "allow",
      qualityGateDecidedBy: "ci",
      qualityGateDeferredRunId: runId,
    });
    expect(task().metadata).not.toHaveProperty("qualityGateDeferredUntil");
    expect(deferral(runId)).toMatchObject({
      decision: { decision: "allow", by: "ci" },
      applied: { logFile: decided?.file, actions: ["none"] },
    });

    expect(await decide(runId, { decision: "allow", reason: "CI green", by: "someone else" })).toMatchObject({
      kind: "applied",
      logFile: decided?.file,
    });
    expect(await decide(runId, { decision: "deny", by: "ci" })).toMatchObject({
      kind: "conflict",
      existing: { decision: "allow", reason: "CI green" },
    });
    expect(await logs()).toHaveLength(2);
  });

  it("deny: the policy as for a failure (reopen, follow-up, nudge), once", async () => {
    const runId = await hold();
    const answer = await decide(runId, {
      decision: "deny",
      code: "ci.failed",
      reason: "2 tests fail",
      message: "see the pipeline",
      by: "ci",
    });
    expect(answer).toMatchObject({
      kind: "applied",
      actions: ["reopened (1/3)", "reassigned to alice", "follow-up #2 for alice", "nudge alice"],
    });
    expect(task()).toMatchObject({
      status: "pending",
      metadata: {
        qualityGateStatus: "failed",
        qualityGateFailureCount: 1,
        qualityGateCode: "ci.failed",
        qualityGateSummary: "denied (ci.failed) • 2 tests fail • see the pipeline",
        qualityGateDecision: "deny",
      },
    });
    const inbox = JSON.parse(fs.readFileSync(team.inboxFile(team.taskListId, "alice"), "utf8")) as Array<{
      text: string;
    }>;
    // The reopened task handed back to its owner, the follow-up's assignment, the nudge.
    expect(inbox).toHaveLength(3);
    expect(JSON.parse(inbox[0]?.text ?? "{}")).toMatchObject({ type: "task_assignment", taskId: "1" });
  });

  it("one event held twice (the leader and `run --apply-policy`), both denied, the older hold first: one follow-up, one assignment each, one nudge", async () => {
    const older = await hold();
    const newer = await hold();
    // The older hold's decision leaves the task to the newer hold, but makes the event's follow-up.
    expect(await decide(older, { decision: "deny", by: "ci" })).toMatchObject({
      kind: "applied",
      actions: ["task metadata left (a newer gate is recorded)", "follow-up #2 for alice", "nudge alice"],
    });
    // The newer one counts and reopens (and hands the task back), and finds that follow-up rather than making a
    // second.
    expect(await decide(newer, { decision: "deny", by: "ci" })).toMatchObject({
      kind: "applied",
      actions: [
        "reopened (1/3)",
        "reassigned to alice",
        "follow-up #2 (existing) for alice",
        "nudge alice (sent before)",
      ],
    });
    expect(
      fs
        .readdirSync(team.tasksDir)
        .filter((n) => n.endsWith(".json"))
        .sort(),
    ).toEqual(["1.json", "2.json"]);
    expect(task().metadata).toMatchObject({ qualityGateFailureCount: 1, reopenedByQualityGateCount: 1 });
    expect(JSON.parse(fs.readFileSync(team.inboxFile(team.taskListId, "alice"), "utf8"))).toHaveLength(3);
  });

  it("refuses what a verdict would refuse, and run ids it never wrote", async () => {
    const runId = await hold();
    expect(await decide(runId, { decision: "deny", code: "Bad Code", by: "ci" })).toMatchObject({
      kind: "invalid",
      problem: expect.stringContaining("code:"),
    });
    expect(await decide(runId, { decision: "deny", reason: "two\nlines", by: "ci" })).toMatchObject({
      kind: "invalid",
      problem: expect.stringContaining("reason:"),
    });
    expect(await decide(runId, { decision: "defer" as "allow", by: "ci" })).toMatchObject({ kind: "invalid" });
    expect(await decide(runId, { decision: "allow", by: " " })).toMatchObject({
      kind: "invalid",
      problem: expect.stringContaining("by:"),
    });
    expect(await decide("no-such-run", { decision: "allow", by: "ci" })).toEqual({ kind: "unknown" });
    expect(await decide("../../tasks/held/1", { decision: "allow", by: "ci" })).toEqual({ kind: "unknown" });
    expect(deferral(runId).decision).toBeUndefined();
  });

  it("past its deadline a deferral is expired whatever is asked, and applied as the closed error defer_expired", async () => {
    const runId = await hold({ hooks: { deferTimeoutMs: 1_000 } });
    const later = () => new Date(Date.now() + 5_000);
    expect(
      await decide(runId, { decision: "allow", by: "ci" }, { env: {}, runtime: createRuntime({ now: later }) }),
    ).toMatchObject({
      kind: "expired",
      expiresAt: deferral(runId).expiresAt,
    });
    expect(deferral(runId)).toMatchObject({ decision: { decision: "expired", by: "pi-teams-hooks" }, applied: {} });
    const decided = (await logs())[1];
    expect(decided?.result).toMatchObject({
      outcome: "error",
      errorKind: "defer_expired",
      error: expect.stringMatching(/^no decision within 1\.0s \(hooks\.deferTimeoutMs\)/),
    });
    expect(task().metadata).toMatchObject({
      qualityGateStatus: "failed",
      qualityGateOutcome: "error",
      qualityGateDecision: "expired",
    });
    expect(await decide(runId, { decision: "allow", by: "ci" })).toMatchObject({ kind: "expired" });
  });

  it("an application cut short after the policy, before its log, is finished once: same counts, same follow-up, the planned log", async () => {
    const runId = await hold();
    await decide(runId, { decision: "deny", by: "ci" });
    const first = deferral(runId);
    const decisionLog = first.applied?.logFile ?? "";
    // The state a crash leaves after the task writes and messages, before the log: `applying`, no log, no `applied`.
    fs.rmSync(decisionLog);
    fs.writeFileSync(deferralFile(team.teamDir, runId), JSON.stringify({ ...first, applied: undefined }));
    const again = await applyDecision(team.teamDir, runId, settings());
    expect(again).toMatchObject({
      kind: "applied",
      logFile: decisionLog,
      actions: [
        "already applied",
        "was reopened (1/3)",
        "reassigned to alice (sent before)",
        "follow-up #2 (existing) for alice",
        "nudge alice (sent before)",
      ],
    });
    expect(task().metadata).toMatchObject({ qualityGateFailureCount: 1, reopenedByQualityGateCount: 1 });
    expect(fs.readdirSync(team.tasksDir).filter((n) => n.endsWith(".json"))).toEqual(["1.json", "2.json"]);
    expect(await logs()).toHaveLength(2);

    // After the log, before `applied`: nothing is done again but `applied`.
    fs.writeFileSync(deferralFile(team.teamDir, runId), JSON.stringify({ ...first, applied: undefined }));
    const before = fs.readFileSync(team.taskFile("1"), "utf8");
    expect(await applyDecision(team.teamDir, runId, settings())).toMatchObject({
      kind: "applied",
      logFile: decisionLog,
    });
    expect(fs.readFileSync(team.taskFile("1"), "utf8")).toBe(before);
    expect(await logs()).toHaveLength(2);
    expect(deferral(runId).applied?.logFile).toBe(decisionLog);
  });

  it("while a live process holds the leader lock the decision is recorded and left to it; once it is gone the decider applies it", async () => {
    const runId = await hold();
    const holder = spawn("sleep", ["30"], { stdio: "ignore" });
    children.push(holder);
    const lock = path.join(team.teamDir, "hook-state", "leader.lock");
    fs.writeFileSync(
      lock,
      JSON.stringify({ pid: holder.pid, createdAt: new Date().toISOString(), label: "pi-teams-hooks watch" }),
    );
    const began = Date.now();
    expect(await decide(runId, { decision: "allow", by: "ci" }, { env: {}, waitForLeaderMs: 300 })).toMatchObject({
      kind: "recorded",
      deferral: { decision: { decision: "allow" } },
    });
    expect(Date.now() - began).toBeLessThan(5_000);
    expect(await logs()).toHaveLength(1);
    holder.kill("SIGKILL");
    await new Promise((resolve) => holder.once("exit", resolve));
    expect(await decide(runId, { decision: "allow", by: "ci" })).toMatchObject({ kind: "applied" });
    expect(fs.existsSync(lock)).toBe(false);
    expect(await logs()).toHaveLength(2);
  });

  it("a decision that comes before its deferral is written waits for it while the ledger shows the run in flight; otherwise the run is unknown at once", async () => {
    const runId = await hold();
    const file = deferralFile(team.teamDir, runId);
    const aside = `${file}.aside`;
    fs.renameSync(file, aside);
    const began = Date.now();
    expect(await decide(runId, { decision: "allow", by: "ci" }, { env: {}, waitForLeaderMs: 3_000 })).toEqual({
      kind: "unknown",
    });
    expect(Date.now() - began).toBeLessThan(1_000);

    const ledger = path.join(team.teamDir, "hook-state", "ledger.jsonl");
    fs.writeFileSync(ledger, `${JSON.stringify({ op: "begin", key: KEY, at: "t", runId, attempt: 1 })}\n`);
    const answer = decide(runId, { decision: "allow", by: "ci" }, { env: {}, waitForLeaderMs: 5_000 });
    setTimeout(() => fs.renameSync(aside, file), 300); // the scenario, not a wait: the leader is back 0.3 s later
    expect(await answer).toMatchObject({ kind: "applied" });
    expect(deferral(runId).applied).toBeDefined();
  });
});
