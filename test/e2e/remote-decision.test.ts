import { describe, it } from "vitest";
import {
  type LeaderRig,
  readAllTaskFiles,
  readInboxFile,
  readLedger,
  readLogs,
  readTaskFile,
  useLeaderRig,
  holdTask,
  waitUntil,
} from "../helpers/leader-rig.js";
import { api, codeOf, createKey, teamKey, startServeFor } from "../helpers/serve-rig.js";
import { makeTask, type TempTeam, runs } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const ARGS = ["--reconcile-ms", "200"];
const working = (id: string) => makeTask({ id, owner: "alice", status: "in_progress" });

/** A gate that counts its runs (in the team dir) and defers. */
async function deferringGate(rig: LeaderRig, team: TempTeam): Promise<void> {
  await rig.hook(
    team,
    "on_task_completed.sh",
    `echo run >> "$PI_TEAMS_TEAM_DIR/gate-runs.txt"\necho '{"decision":"defer","code":"ci.pending","reason":"waiting for CI"}'`,
  );
}

async function gateRuns(team: TempTeam): Promise<number> {
  return (await runs(team, "gate-runs.txt")).length;
}

const decisionRoute = (team: TempTeam, runId: string) => `/api/v1/teams/${team.teamId}/runs/${runId}/decision`;

describe.concurrent("decisions of held gates through the task API", () => {
  it("SIGKILL while held, a restart, then the API's decision: the leader applies it once, two log records", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")], config: { hooks: { failureAction: "reopen_followup" } } });
    await deferringGate(rig, team);
    const key = await teamKey(team.teamsRoot, "ci", "gates:decide", team.teamId);
    const serve = await startServeFor(context, team.teamsRoot);

    const first = await rig.leader(team, ARGS);
    const runId = await holdTask(rig, team, first, "1");
    expect((await readTaskFile(team, "1")).metadata).toMatchObject({
      qualityGateStatus: "deferred",
      qualityGateDeferredRunId: runId,
    });
    await first.kill();
    const second = await rig.leader(team, ARGS);

    const answer = await api(serve.url, "POST", decisionRoute(team, runId), {
      key,
      body: { decision: "DENY", code: "ci.failed", reason: "2 tests fail in auth/" },
    });
    // The running leader holds the team: it applies the decision (the API waits a moment for it).
    expect([200, 202], JSON.stringify(answer.json)).toContain(answer.status);
    expect(answer.json).toMatchObject({ runId, taskId: "1", decision: "deny" });
    const [applied] = await second.waitForEvents(1, (e) => e.decision !== undefined);
    expect(applied).toMatchObject({ decision: { decision: "deny", by: "api:ci", deferredRunId: runId } });

    const expectOnce = async (): Promise<void> => {
      const task = await readTaskFile(team, "1");
      expect(task).toMatchObject({
        status: "pending",
        metadata: {
          qualityGateStatus: "failed",
          qualityGateFailureCount: 1,
          reopenedByQualityGateCount: 1,
          qualityGateDecision: "deny",
          qualityGateDecidedBy: "api:ci",
        },
      });
      const followups = [...(await readAllTaskFiles(team)).values()].filter(
        (t) => t.metadata?.qualityGateFollowupFor !== undefined,
      );
      expect(followups).toHaveLength(1);
      // the task handed back, the follow-up's assignment and one nudge
      expect(await readInboxFile(team, team.taskListId, "alice")).toHaveLength(3);
      const logs = await readLogs(team.teamDir);
      expect(logs.map((l) => l.result.outcome)).toEqual(["deferred", "failed"]);
      expect(logs[1]?.decision).toMatchObject({
        decision: "deny",
        by: "api:ci",
        deferredRunId: runId,
        deferredLog: logs[0]?.file,
      });
    };
    await expectOnce();
    expect(await gateRuns(team)).toBe(1);

    // The same decision again is answered as the first; another is refused.
    const again = await api(serve.url, "POST", decisionRoute(team, runId), {
      key,
      body: { decision: "deny", code: "ci.failed", reason: "2 tests fail in auth/" },
    });
    expect(again.status, JSON.stringify(again.json)).toBe(200);
    const other = await api(serve.url, "POST", decisionRoute(team, runId), { key, body: { decision: "allow" } });
    expect([other.status, codeOf(other)]).toEqual([409, "already_decided"]);

    // And a third start finds nothing left to do.
    await second.stop();
    const third = await rig.leader(team, ARGS);
    await third.waitFor("a reconcile scan", async () => (await readLedger(team.teamDir)).some((r) => r.op === "done"));
    expect(third.events()).toEqual([]);
    await expectOnce();
  });

  it("with no leader running, the API applies the decision itself (200); a later leader runs nothing again", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")], config: { hooks: { failureAction: "reopen" } } });
    await deferringGate(rig, team);
    const key = await teamKey(team.teamsRoot, "review", "gates:decide", team.teamId);
    const serve = await startServeFor(context, team.teamsRoot);
    const leader = await rig.leader(team, ARGS);
    const runId = await holdTask(rig, team, leader, "1");
    await leader.stop();

    const answer = await api(serve.url, "POST", decisionRoute(team, runId), {
      key,
      body: { decision: "allow", reason: "reviewed by ada" },
    });
    expect(answer.status, JSON.stringify(answer.json)).toBe(200);
    expect(answer.json).toMatchObject({ runId, taskId: "1", decision: "allow", state: "applied" });
    expect(await readTaskFile(team, "1")).toMatchObject({
      status: "completed",
      metadata: { qualityGateStatus: "passed", qualityGateDecision: "allow", qualityGateDecidedBy: "api:review" },
    });
    expect((await readLogs(team.teamDir)).map((l) => l.result.outcome)).toEqual(["deferred", "passed"]);

    const next = await rig.leader(team, ARGS);
    await next.waitFor("the key done", async () => (await readLedger(team.teamDir)).some((r) => r.op === "done"));
    expect(next.events()).toEqual([]);
    expect(await gateRuns(team)).toBe(1);
    expect((await readLogs(team.teamDir)).length).toBe(2);
  });

  it("refuses a missing key, a key without gates:decide, another team's key, a bad body, an unknown run, and an expired gate", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")], config: { hooks: { deferTimeoutMs: 1000 } } });
    await deferringGate(rig, team);
    const decider = await teamKey(team.teamsRoot, "ci", "gates:decide", team.teamId);
    const reader = await createKey(team.teamsRoot, [
      "--name",
      "reader",
      "--scopes",
      "tasks:read,tasks:create",
      "--teams",
      team.teamId,
      "--all-templates",
    ]);
    const elsewhere = await teamKey(team.teamsRoot, "other", "gates:decide", "beta");
    const serve = await startServeFor(context, team.teamsRoot);
    const leader = await rig.leader(team, ARGS);
    const runId = await holdTask(rig, team, leader, "1");
    const route = decisionRoute(team, runId);
    await leader.stop(); // the hold stays; nothing expires it while no leader runs

    const refusals = [
      [await api(serve.url, "POST", route, { body: { decision: "allow" } }), 401, "unauthorized"],
      [await api(serve.url, "POST", route, { key: reader, body: { decision: "allow" } }), 403, "scope_not_allowed"],
      [await api(serve.url, "POST", route, { key: elsewhere, body: { decision: "allow" } }), 403, "team_not_allowed"],
      [await api(serve.url, "POST", route, { key: decider, body: "{not json" }), 400, "invalid_json"],
      [
        await api(serve.url, "POST", route, { key: decider, body: { decision: "maybe", extra: 1 } }),
        400,
        "invalid_decision",
      ],
      [
        await api(serve.url, "POST", route, { key: decider, body: { decision: "deny", code: "Not A Code" } }),
        400,
        "invalid_decision",
      ],
      [
        await api(serve.url, "POST", decisionRoute(team, "0b0e5c1e-0000-4000-8000-000000000000"), {
          key: decider,
          body: { decision: "allow" },
        }),
        404,
        "run_not_found",
      ],
      [await api(serve.url, "GET", route, { key: decider }), 405, "method_not_allowed"],
    ] as const;
    for (const [answer, status, code] of refusals)
      expect([answer.status, codeOf(answer)], JSON.stringify(answer.json)).toEqual([status, code]);
    // A bad decision's problems are data, as config --json gives its own: {kind, path, message}.
    expect(refusals[4][0].json.error).toMatchObject({
      problems: [
        { kind: "request_field", path: "extra", message: expect.stringContaining("extra: unknown field") },
        { kind: "request_field", path: "decision", message: 'decision: expected "allow" or "deny", got "maybe"' },
      ],
    });
    expect(refusals[5][0].json.error).toMatchObject({
      problems: [{ kind: "request_field", path: "code", message: expect.stringMatching(/^code: /) }],
    });
    expect((await readTaskFile(team, "1")).metadata?.qualityGateStatus).toBe("deferred");

    // Past its deadline (1 s) the gate is expired, whatever is asked: a closed error, and a 409 says so.
    const until = Date.parse(String((await readTaskFile(team, "1")).metadata?.qualityGateDeferredUntil));
    expect(Number.isFinite(until)).toBe(true);
    await waitUntil("the gate's deadline past", () => Date.now() > until, { timeoutMs: 5_000 });
    const late = await api(serve.url, "POST", route, { key: decider, body: { decision: "allow" } });
    expect([late.status, codeOf(late)], JSON.stringify(late.json)).toEqual([409, "defer_expired"]);
    expect(await readTaskFile(team, "1")).toMatchObject({
      metadata: { qualityGateStatus: "failed", qualityGateDecision: "expired" },
    });
    expect((await readLogs(team.teamDir)).map((l) => l.result.errorKind ?? l.result.outcome)).toEqual([
      "deferred",
      "defer_expired",
    ]);
  });
});
