/**
 * The start gate (`task_started`) with the real leader (`watch`, dist/), real hooks and a real worker
 * process claiming tasks: a denial puts the claim back (pending, no owner, `qualityGateStartDenied*`)
 * and tells the member once, an allow leaves the claim alone, no start gate means no event at all, the
 * completion gate's reopen is not a claim (the worker's next one is), a defer is a denial
 * `deferral_not_supported`, the task API shows the denial, and `run task_started` does the same by hand.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";
import {
  type LeaderProcess,
  readInboxFile,
  readLedger,
  readLogs,
  readTaskFile,
  runBin,
  useLeaderRig,
} from "../helpers/leader-rig.js";
import { startReceiver } from "../helpers/http-receiver.js";
import { api, createKey, startServe, type ServeProcess } from "../helpers/serve-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const rig = useLeaderRig();

const DENY = `echo '{"decision":"deny","code":"deps.open","reason":"task #2 is not done"}'`;

/** A team with tasks 1 and 2 pending and no owner, and `on_task_started.sh` with `body`. */
async function startGated(
  body: string | null,
  extra: { config?: Record<string, unknown>; args?: string[]; hooks?: Record<string, string> } = {},
): Promise<{ team: TempTeam; leader: LeaderProcess }> {
  const team = await rig.team({
    tasks: [makeTask({ id: "1" }), makeTask({ id: "2" })],
    ...(extra.config ? { config: extra.config } : {}),
  });
  if (body !== null) await rig.hook(team, "on_task_started.sh", body);
  for (const [name, text] of Object.entries(extra.hooks ?? {})) await rig.hook(team, name, text);
  const leader = await rig.leader(team, extra.args ?? []);
  return { team, leader };
}

const claim = (team: TempTeam, id: string, by = "alice") =>
  rig.worker("claim", { tasksDir: team.tasksDir, ids: [id], by });
const startedEvents = (leader: LeaderProcess) => leader.events((e) => e.event === "task_started");

/** Waits for the ledger to hold `key` as done (the event was handled to its end). */
async function waitDone(leader: LeaderProcess, team: TempTeam, key: string): Promise<void> {
  await leader.waitFor(`${key} done in the ledger`, async () =>
    (await readLedger(team.teamDir)).some((r) => r.op === "done" && r.key === key),
  );
}

describe("a start gate that denies a claim", () => {
  it("puts the task back to pending without owner, records the denial, tells the member once and logs the run", async () => {
    const { team, leader } = await startGated(DENY);
    await claim(team, "1");
    const [event] = await leader.waitForEvents(1, (e) => e.event === "task_started");
    expect(event).toMatchObject({
      event: "task_started",
      taskId: "1",
      member: "alice",
      outcome: "failed",
      policyApplied: true,
    });
    expect(event?.key).toMatch(/^task_started:1:alice:/);
    expect(event?.actions).toEqual(["claim put back (denial 1)", "told alice"]);

    const task = await readTaskFile(team, "1");
    expect(task.status).toBe("pending");
    expect(task.owner).toBeUndefined();
    expect(task.metadata).toMatchObject({
      qualityGateStartDenied: true,
      qualityGateStartDeniedHook: "on_task_started",
      qualityGateStartDeniedCount: 1,
      qualityGateStartDeniedKey: event?.key,
      qualityGateStartDeniedMember: "alice",
      qualityGateStartDeniedCode: "deps.open",
    });
    expect(task.metadata?.qualityGateStartDeniedReason).toContain("task #2 is not done");

    const told = (await readInboxFile(team, team.taskListId, "alice")).filter(
      (m) => m.qualityGateEventKey === event?.key,
    );
    expect(told).toHaveLength(1);
    expect(told[0]?.text).toContain("Quality gate on_task_started denied your claim of task #1: ");
    expect(told[0]?.text).toContain("Task #1 is back to pending without an owner.");

    const logs = (await readLogs(team.teamDir)).filter((l) => l.invocation.event === "task_started");
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({
      key: event?.key,
      invocation: {
        event: "task_started",
        memberName: "alice",
        completedTask: { id: "1", status: "in_progress", owner: "alice" },
      },
      result: { outcome: "failed" },
    });
    expect(logs[0]?.policy).toMatchObject({
      onDenial: "revert_claim",
      claim: "put_back",
      deniedCount: 1,
      told: "alice",
    });
    // The put-back (the leader's own write, back to pending) is no event of any kind.
    await waitDone(leader, team, event?.key ?? "");
    expect(leader.events()).toHaveLength(1);

    // A restart neither judges nor tells again.
    expect((await leader.stop()).code).toBe(0);
    const again = await rig.leader(team);
    await claim(team, "2", "bob");
    await again.waitForEvents(1, (e) => e.event === "task_started" && e.taskId === "2");
    expect(startedEvents(again).map((e) => e.taskId)).toEqual(["2"]);
    expect(
      (await readInboxFile(team, team.taskListId, "alice")).filter((m) => m.qualityGateEventKey === event?.key),
    ).toHaveLength(1);

    // The member claims again: a new claim (keyed by the denial), judged again, the count goes on.
    await claim(team, "1");
    const [second] = await again.waitForEvents(1, (e) => e.event === "task_started" && e.taskId === "1");
    expect(second?.key).toBe(`task_started:1:alice:${String(task.metadata?.qualityGateStartDeniedAt)}`);
    expect((await readTaskFile(team, "1")).metadata).toMatchObject({ qualityGateStartDeniedCount: 2 });
  });

  it("judges a re-claim whose worker's stamp is later than the denial (a clock ahead): each claim once, none slips through", async () => {
    const { team, leader } = await startGated(DENY);
    const claimAhead = async (): Promise<void> => {
      const task = await readTaskFile(team, "1");
      const next = {
        ...task,
        status: "in_progress",
        owner: "alice",
        metadata: { ...task.metadata, claimedAt: "2099-01-01T00:00:00.000Z" },
      };
      await writeFile(team.taskFile("1"), `${JSON.stringify(next, null, 2)}\n`);
    };
    await claimAhead();
    const [first] = await leader.waitForEvents(1, (e) => e.event === "task_started");
    await waitDone(leader, team, first?.key ?? "");
    await claimAhead(); // the same claimedAt again: once put back, it is a new claim all the same
    const events = await leader.waitForEvents(2, (e) => e.event === "task_started");
    expect(events.map((e) => e.key)).toEqual([
      "task_started:1:alice:2099-01-01T00:00:00.000Z",
      "task_started:1:alice:2099-01-01T00:00:00.000Z#1",
    ]);
    expect(events[1]?.actions).toEqual(["claim put back (denial 2)", "told alice"]);
    await waitDone(leader, team, events[1]?.key ?? "");
    const task = await readTaskFile(team, "1");
    expect(task).toMatchObject({ status: "pending", metadata: { qualityGateStartDeniedCount: 2 } });
    expect(task.owner).toBeUndefined();
  });

  it("a defer is a denial with the code deferral_not_supported: put back too, nothing held", async () => {
    const { team, leader } = await startGated(`echo '{"decision":"defer","reason":"waiting for CI"}'`);
    await claim(team, "1");
    const [event] = await leader.waitForEvents(1, (e) => e.event === "task_started");
    expect(event).toMatchObject({ outcome: "failed", actions: ["claim put back (denial 1)", "told alice"] });
    expect(event?.deferral).toBeUndefined();
    const [log] = (await readLogs(team.teamDir)).filter((l) => l.invocation.event === "task_started");
    expect(log?.result.verdict).toMatchObject({
      decision: "deny",
      code: "deferral_not_supported",
      reason: "this event cannot be deferred: waiting for CI",
    });
    expect(log?.deferral).toBeUndefined();
    const task = await readTaskFile(team, "1");
    expect(task).toMatchObject({
      status: "pending",
      metadata: { qualityGateStartDenied: true, qualityGateStartDeniedCode: "deferral_not_supported" },
    });
    expect(task.owner).toBeUndefined();
  });
});

describe("a start gate that allows", () => {
  it("leaves the claim as the worker wrote it and writes nothing to the task", async () => {
    const { team, leader } = await startGated("exit 0");
    const before = (await claim(team, "1")) as { final: Record<string, string> };
    const [event] = await leader.waitForEvents(1, (e) => e.event === "task_started");
    expect(event).toMatchObject({ outcome: "passed", member: "alice", actions: ["none"] });
    await waitDone(leader, team, event?.key ?? "");
    const task = await readTaskFile(team, "1");
    expect(task).toMatchObject({ status: "in_progress", owner: "alice", updatedAt: before.final["1"] });
    expect(Object.keys(task.metadata ?? {}).filter((k) => k.startsWith("qualityGate"))).toEqual([]);
    expect(await readInboxFile(team, team.taskListId, "alice")).toEqual([]);
  });
});

describe("a leader killed while its start gate runs", () => {
  it("the next leader runs the gate again and applies the denial once: put back once, told once", async () => {
    // The first run waits (and is killed with its leader); the retry answers at once.
    const hang = `if mkdir "$PI_TEAMS_TEAM_DIR/hang-once" 2>/dev/null; then echo "$$" > "$PI_TEAMS_TEAM_DIR/hook.pid"; sleep 60; fi\n${DENY}`;
    const { team, leader } = await startGated(hang);
    await claim(team, "1");
    const pidFile = path.join(team.teamDir, "hook.pid");
    await leader.waitFor("the hanging start gate", () =>
      readFile(pidFile, "utf8").then(
        (t) => t.trim() !== "",
        () => false,
      ),
    );
    await leader.kill();

    const next = await rig.leader(team);
    const [event] = await next.waitForEvents(1, (e) => e.event === "task_started");
    expect(event).toMatchObject({
      taskId: "1",
      outcome: "failed",
      retry: true,
      actions: ["claim put back (denial 1)", "told alice"],
    });
    await waitDone(next, team, event?.key ?? "");
    const task = await readTaskFile(team, "1");
    expect(task).toMatchObject({
      status: "pending",
      metadata: { qualityGateStartDeniedCount: 1, qualityGateStartDeniedKey: event?.key },
    });
    expect(task.owner).toBeUndefined();
    expect(await readInboxFile(team, team.taskListId, "alice")).toHaveLength(1);
    expect(startedEvents(next)).toHaveLength(1);
  });
});

describe("an HTTP handler declared for task_started", () => {
  it("is a start gate on its own: the claim is judged by it and put back as it says", async () => {
    const receiver = await startReceiver();
    try {
      receiver.route(
        "/start",
        (_req, res) =>
          void res
            .writeHead(200, { "content-type": "application/json" })
            .end('{"decision":"deny","code":"capacity","reason":"alice has 3 tasks in progress"}'),
      );
      const config = {
        version: 1,
        teamId: "test-team",
        taskListId: "test-team",
        leadName: "team-lead",
        members: [],
        hooks: { handlers: [{ name: "planner", events: ["task_started"], url: `${receiver.url}/start` }] },
      };
      const { team, leader } = await startGated(null, { config });
      await claim(team, "1");
      const [event] = await leader.waitForEvents(1, (e) => e.event === "task_started");
      expect(event).toMatchObject({
        taskId: "1",
        hook: "http:planner",
        outcome: "failed",
        actions: ["claim put back (denial 1)", "told alice"],
      });
      expect(JSON.parse(receiver.requests("/start")[0]?.body.toString("utf8") ?? "{}")).toMatchObject({
        event: "task_started",
        member: "alice",
        task: { id: "1", status: "in_progress", owner: "alice" },
      });
      expect((await readTaskFile(team, "1")).metadata).toMatchObject({
        qualityGateStartDeniedHook: "http:planner",
        qualityGateStartDeniedCode: "capacity",
      });
    } finally {
      await receiver.close();
    }
  });
});

describe("without a start gate", () => {
  it("a claim is nothing: no event, no log, no ledger line", async () => {
    const team = await rig.team({
      tasks: [makeTask({ id: "1" }), makeTask({ id: "2", status: "in_progress", owner: "bob" })],
    });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    const leader = await rig.leader(team);
    await claim(team, "1");
    // Task 2 completed after the claim of task 1: once its event is done, the claim was seen before it.
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
    const [done] = await leader.waitForEvents(1, (e) => e.event === "task_completed");
    await waitDone(leader, team, done?.key ?? "");
    expect(leader.events().map((e) => e.event)).toEqual(["task_completed"]);
    expect((await readLedger(team.teamDir)).filter((r) => r.key.startsWith("task_started"))).toEqual([]);
    expect((await readLogs(team.teamDir)).map((l) => l.invocation.event)).toEqual(["task_completed"]);
    expect(await readTaskFile(team, "1")).toMatchObject({ status: "in_progress", owner: "alice" });
  });
});

describe("a ledger of a leader that did not know claims", () => {
  it("takes the claims in progress at the next start as history, then judges new ones", async () => {
    const { team, leader } = await startGated(DENY);
    expect((await leader.stop()).code).toBe(0);
    // As an older leader left it: no claims' marker.
    const ledgerFile = path.join(team.teamDir, "hook-state", "ledger.jsonl");
    const lines = (await readFile(ledgerFile, "utf8"))
      .split("\n")
      .filter((line) => line !== "" && !line.includes("leader:claims-baseline-complete"));
    expect(lines.length).toBeGreaterThan(0);
    await writeFile(ledgerFile, `${lines.join("\n")}\n`);
    await claim(team, "1"); // while no leader runs

    const again = await rig.leader(team);
    const ledger = await readLedger(team.teamDir);
    expect(ledger.filter((r) => r.op === "baseline" && r.key.startsWith("task_started:1:alice:"))).toHaveLength(1);
    expect(ledger.some((r) => r.key === "leader:claims-baseline-complete")).toBe(true);
    await claim(team, "2", "bob");
    const [event] = await again.waitForEvents(1, (e) => e.event === "task_started");
    expect(event).toMatchObject({ taskId: "2", outcome: "failed" });
    await waitDone(again, team, event?.key ?? "");
    expect(startedEvents(again)).toHaveLength(1);
    expect(await readTaskFile(team, "1")).toMatchObject({ status: "in_progress", owner: "alice" });
  });
});

describe("a start gate added while the leader runs", () => {
  it("judges the claims made from then on, not one seen before it (not even when its task is edited)", async () => {
    const { team, leader } = await startGated(null, {
      args: ["--reconcile-ms", "200"],
      hooks: { "on_task_completed.sh": "exit 0" },
    });
    await claim(team, "1");
    // Task 2 completed after the claim of task 1: once its event is out, the claim was looked at.
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
    await leader.waitForEvents(1, (e) => e.event === "task_completed");

    const gate = await rig.hook(team, "on_task_started.sh", DENY);
    expect((await runBin(["trust", "--team-dir", team.teamDir, gate, "--yes"])).code).toBe(0);
    await leader.waitFor("the start gate noticed", () =>
      leader.linesOf("info").some((l) => String(l.message).startsWith("start gate in force (on_task_started.sh)")),
    );
    await rig.worker("touch", { tasksDir: team.tasksDir, ids: ["1"], field: "progress", rounds: 1 });
    await rig.worker("create-plain", { tasksDir: team.tasksDir, count: 1 });
    await claim(team, "3", "bob");
    const [event] = await leader.waitForEvents(1, (e) => e.event === "task_started");
    expect(event).toMatchObject({ taskId: "3", member: "bob", outcome: "failed" });
    await waitDone(leader, team, event?.key ?? "");
    expect(startedEvents(leader)).toHaveLength(1);
    expect(await readTaskFile(team, "1")).toMatchObject({
      status: "in_progress",
      owner: "alice",
      metadata: { progress: 1 },
    });
  });
});

describe("the completion gate's reopen", () => {
  it("is not a claim; the worker taking the reopened task up again is one, judged by the start gate", async () => {
    const { team, leader } = await startGated("exit 0", {
      args: ["--failure-action", "reopen"],
      hooks: { "on_task_completed.sh": `echo "lint failed" >&2\nexit 1` },
    });
    await claim(team, "1");
    const [first] = await leader.waitForEvents(1, (e) => e.event === "task_started");
    expect(first?.outcome).toBe("passed");
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [completed] = await leader.waitForEvents(1, (e) => e.event === "task_completed");
    expect(completed).toMatchObject({ outcome: "failed" });
    expect(completed?.actions).toContain("reopened (1/3)");
    const reopened = await readTaskFile(team, "1");
    expect(reopened).toMatchObject({ status: "pending", owner: "alice" });

    await claim(team, "1");
    const started = await leader.waitForEvents(2, (e) => e.event === "task_started");
    const reopenedAt = String(reopened.metadata?.reopenedByQualityGateAt);
    expect(started[1]?.key).toBe(`task_started:1:alice:${reopenedAt}`);
    await waitDone(leader, team, started[1]?.key ?? "");
    // Two claims, two judgements: the reopen itself was none.
    expect(startedEvents(leader)).toHaveLength(2);
    expect(
      (await readLedger(team.teamDir))
        .filter((r) => r.op === "done" && r.key.startsWith("task_started:"))
        .map((r) => r.key),
    ).toEqual([first?.key, started[1]?.key]);
    expect(await readTaskFile(team, "1")).toMatchObject({ status: "in_progress", owner: "alice" });
  });
});

describe("a task created through the task API", () => {
  it("shows the start gate's denial in its status", async () => {
    const templates = {
      build: {
        subject: "Build {{parameters.ref}}",
        owner: "alice",
        parameters: { ref: { type: "string", required: true } },
      },
    };
    const { team, leader } = await startGated(DENY, {
      config: {
        version: 1,
        teamId: "test-team",
        taskListId: "test-team",
        leadName: "team-lead",
        members: [],
        hooks: { templates },
      },
    });
    const key = await createKey(team.teamsRoot, [
      "--name",
      "ci",
      "--scopes",
      "tasks:create,tasks:read",
      "--teams",
      "test-team",
      "--all-templates",
    ]);
    let serve: ServeProcess | null = null;
    try {
      serve = await startServe(team.teamsRoot);
      const created = await api(serve.url, "POST", "/api/v1/teams/test-team/tasks", {
        key,
        body: { template: "build", parameters: { ref: "main" } },
      });
      expect(created.status).toBe(202);
      const route = String(created.json.statusUrl);
      const id = String(created.json.taskId);
      expect((await api(serve.url, "GET", route, { key })).json).toMatchObject({
        id,
        status: "pending",
        startDenial: null,
      });

      await claim(team, id);
      const [event] = await leader.waitForEvents(1, (e) => e.event === "task_started");
      await waitDone(leader, team, event?.key ?? "");
      const task: Task = await readTaskFile(team, id);
      const status = await api(serve.url, "GET", route, { key });
      expect(status.status).toBe(200);
      expect(status.json).toEqual({
        id,
        status: "pending",
        qualityGateStatus: null,
        gateState: { state: "unjudged" },
        startDenial: {
          active: true,
          at: task.metadata?.qualityGateStartDeniedAt,
          hook: "on_task_started",
          reason: task.metadata?.qualityGateStartDeniedReason,
          code: "deps.open",
          count: 1,
        },
        updatedAt: task.updatedAt,
        decidingRun: null,
        createdBy: { kind: "api", template: "build", key: "ci" },
      });
    } finally {
      if (serve) await serve.stop();
    }
  });
});

describe("run task_started by hand", () => {
  it("judges the claim in the task file; with --apply-policy a denial puts it back and tells the member", async () => {
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "in_progress", owner: "alice" })] });
    await rig.hook(team, "on_task_started.sh", DENY);
    const env = { NO_COLOR: "1" };
    const report = await runBin(["run", "task_started", "--team-dir", team.teamDir, "--task", "1"], { env });
    expect(report.code).toBe(1);
    expect(report.stdout).toMatch(/^task_started #1 on_task_started\.sh failed in \d+ms: /);
    expect(await readTaskFile(team, "1")).toMatchObject({ status: "in_progress", owner: "alice" });

    const applied = await runBin(
      ["run", "task_started", "--team-dir", team.teamDir, "--task", "1", "--member", "alice", "--apply-policy"],
      { env },
    );
    expect(applied.code).toBe(1);
    expect(applied.stdout).toContain("→ claim put back (denial 1), told alice");
    const task = await readTaskFile(team, "1");
    expect(task).toMatchObject({
      status: "pending",
      metadata: { qualityGateStartDenied: true, qualityGateStartDeniedMember: "alice" },
    });
    expect(task.owner).toBeUndefined();
    expect(await readInboxFile(team, team.taskListId, "alice")).toHaveLength(1);
    expect((await runBin(["run", "task_started", "--team-dir", team.teamDir], { env })).stderr).toContain(
      "--task is required for task_started",
    );
  });

  it("puts back a claim whose task claims to have been put back already (the worker writes that metadata too)", async () => {
    const forged = {
      qualityGateStartDeniedKey: "task_started:1:alice:2025-01-01T00:00:00.000Z",
      qualityGateStartDeniedCount: 1,
    };
    const team = await rig.team({
      tasks: [makeTask({ id: "1", status: "in_progress", owner: "alice", metadata: forged })],
    });
    await rig.hook(team, "on_task_started.sh", DENY);
    const applied = await runBin(
      ["run", "task_started", "--team-dir", team.teamDir, "--task", "1", "--apply-policy", "--json"],
      { env: { NO_COLOR: "1" } },
    );
    expect(applied.code).toBe(1);
    const record = JSON.parse(applied.stdout) as { key: string; policy: Record<string, unknown> };
    expect(record.key).toBe(forged.qualityGateStartDeniedKey);
    expect(record.policy).toMatchObject({ claim: "put_back", alreadyApplied: false, deniedCount: 2, told: "alice" });
    const task = await readTaskFile(team, "1");
    expect(task).toMatchObject({
      status: "pending",
      metadata: { qualityGateStartDenied: true, qualityGateStartDeniedCount: 2 },
    });
    expect(task.owner).toBeUndefined();
  });

  it("with --apply-policy refuses a task that holds no claim (exit 2): nobody is told of a claim that was never made", async () => {
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "pending" })] });
    await rig.hook(team, "on_task_started.sh", DENY);
    const refused = await runBin(
      ["run", "task_started", "--team-dir", team.teamDir, "--task", "1", "--member", "alice", "--apply-policy"],
      { env: { NO_COLOR: "1" } },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      "--task 1: the task holds no claim (it is pending without an owner): --apply-policy has nothing to put back",
    );
    expect(await readInboxFile(team, team.taskListId, "alice")).toHaveLength(0);
    // Without --apply-policy the gate is tried as the file stands.
    expect(
      (await runBin(["run", "task_started", "--team-dir", team.teamDir, "--task", "1"], { env: { NO_COLOR: "1" } }))
        .code,
    ).toBe(1);
  });

  it("tells the member whose claim it put back, not the --member named", async () => {
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "in_progress", owner: "alice" })] });
    await rig.hook(team, "on_task_started.sh", DENY);
    const applied = await runBin(
      ["run", "task_started", "--team-dir", team.teamDir, "--task", "1", "--member", "bob", "--apply-policy"],
      { env: { NO_COLOR: "1" } },
    );
    expect(applied.code).toBe(1);
    expect(applied.stdout).toContain("→ claim put back (denial 1), told alice");
    expect(await readTaskFile(team, "1")).toMatchObject({
      status: "pending",
      metadata: { qualityGateStartDeniedMember: "alice" },
    });
    expect(await readInboxFile(team, team.taskListId, "alice")).toHaveLength(1);
    expect(await readInboxFile(team, team.taskListId, "bob")).toHaveLength(0);
  });
});
