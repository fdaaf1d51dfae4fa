/**
 * Gates with settings lines under a real leader, with a worker process completing tasks while it
 * watches: a shadow gate that would deny every completion and changes nothing but its shadow fields,
 * a gate for one member that denies only that member's work (skipped, and logged, for the others);
 * then what `logs`, `logs stats` and `doctor` say about them, through the built bin.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { listTaskFiles } from "../../extensions/teams-hooks/team/tasks.js";
import { readLogs, readTaskFile, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const POLICY = { hooks: { failureAction: "reopen_followup" } };

describe("gate settings under a running leader", () => {
  it("a shadow gate denies nothing, a member's gate judges only that member; logs, stats and doctor say so", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [
        makeTask({ id: "1", owner: "alice", status: "in_progress" }),
        makeTask({ id: "2", owner: "bob", status: "in_progress" }),
      ],
      config: POLICY,
    });
    await rig.hook(
      team,
      "on_task_completed.sh",
      "# pi-teams-hooks: mode=shadow timeout=30s\necho 'lint: 2 warnings' >&2\nexit 1",
    );
    await mkdir(path.join(team.teamsRoot, "_hooks", "on_task_completed.d"), { recursive: true });
    await rig.hook(
      team,
      "on_task_completed.d/10-bob.sh",
      "# pi-teams-hooks: members=bob\necho 'bob: tests fail' >&2\nexit 1",
    );
    const leader = await rig.leader(team);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1", "2"] });
    const events = await leader.waitForEvents(2, (e) => e.event === "task_completed");
    const byTask = new Map(events.map((e) => [e.taskId, e]));

    // alice: the shadow gate would have denied, bob's gate was skipped: nothing in force, nothing enforced.
    expect(byTask.get("1")).toMatchObject({
      outcome: "passed",
      policyApplied: null,
      noGateInForce: true,
      actions: ["shadow: on_task_completed would have denied"],
    });
    expect(byTask.get("1")?.summary).toBe(
      "no gate in force: on_task_completed.d/10-bob.sh skipped (members=bob: member alice does not match); on_task_completed in shadow mode would have denied",
    );
    const alice = await readTaskFile(team, "1");
    expect(alice.status).toBe("completed");
    expect(alice.metadata).toMatchObject({
      qualityGateShadowHook: "on_task_completed",
      qualityGateShadowOutcome: "failed",
      qualityGateShadowSummary: "exit code 1 • lint: 2 warnings",
      qualityGateShadowCount: 1,
    });
    expect(
      Object.keys(alice.metadata ?? {}).filter(
        (k) => k.startsWith("qualityGate") && !k.startsWith("qualityGateShadow"),
      ),
    ).toEqual([]);

    // bob: his gate denied and the policy applied; the shadow gate's verdict is beside it.
    expect(byTask.get("2")).toMatchObject({ outcome: "failed", hook: "10-bob.sh", policyApplied: true });
    const bob = await readTaskFile(team, "2");
    expect(bob.metadata).toMatchObject({
      qualityGateHook: "on_task_completed.d/10-bob.sh",
      qualityGateShadowHook: "on_task_completed",
    });
    expect((await listTaskFiles(team.teamDir, team.taskListId)).length).toBe(3); // bob's follow-up only
    expect(await leader.stop()).toMatchObject({ code: 0 });

    const table = await runBin(["logs", "--team-dir", team.teamDir], { env: { COLUMNS: "200" } }); // every column
    expect(table.stdout).toMatch(/#1 +alice +10-bob\.sh +skipped .*\(members=bob: member alice does not match\)/);
    expect(table.stdout).toMatch(/#1 +alice +on_task_completed\.sh +shadow: failed/);
    const stats = await runBin(["logs", "stats", "--team-dir", team.teamDir]);
    expect(stats.stdout).toContain(
      "shadow: on_task_completed.sh (task_completed) would have denied 2 of its 2 run(s); nothing was enforced",
    );
    expect(stats.stdout).toContain("skipped: 10-bob.sh (task_completed) was skipped by its matchers 1 time(s)");
    const json = await runBin(["logs", "stats", "--team-dir", team.teamDir, "--json"]);
    const rows = json.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(rows.find((r) => r.hook === "on_task_completed.sh")).toMatchObject({
      runs: 2,
      failed: 2,
      shadowRuns: 2,
      shadowDenials: 2,
    });
    expect(rows.find((r) => r.hook === "10-bob.sh")).toMatchObject({ runs: 1, failed: 1, skipped: 1 });

    const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(doctor.stdout).toContain("on_task_completed.sh settings (line 2): timeout=30s mode=shadow");
    expect(doctor.stdout).toContain("on_task_completed.d/10-bob.sh settings (line 2): members=bob");
  });

  it("verdict=exit: the exit status alone decides, from a standby as at the event; no result file is offered, no verdict read", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const ids = ["1", "2", "3"];
    const team = await rig.team({ tasks: ids.map((id) => makeTask({ id, owner: "alice", status: "in_progress" })) });
    // An allow verdict on stdout and in the file the runs make beside the context (what a gate's tests could do),
    // and a failing exit status: the status decides.
    await rig.hook(
      team,
      "on_task_completed.sh",
      [
        "# pi-teams-hooks: verdict=exit",
        'echo "offered=$PI_TEAMS_HOOK_RESULT_FILE" >&2',
        `echo '{"decision":"allow"}' > "$(dirname "$PI_TEAMS_HOOK_CONTEXT_FILE")/result.json" 2>/dev/null`,
        "echo 'the check failed' >&2",
        `echo '{"decision":"allow"}'`,
        "exit 1",
      ].join("\n"),
    );
    const leader = await rig.leader(team);
    for (const [n, id] of ids.entries()) {
      await rig.worker("complete", { tasksDir: team.tasksDir, ids: [id] });
      await leader.waitForEvents(n + 1);
    }
    const logs = (await readLogs(team.teamDir)).sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    expect(logs.map((log) => log.result.outcome)).toEqual(["failed", "failed", "failed"]);
    for (const log of logs) {
      expect(log.result.verdict).toBeUndefined();
      expect(log.result.exitCode).toBe(1);
      expect(log.result.stderr).toMatch(/^offered=$/m);
      expect(log.result.hookSettings).toBe("verdict=exit");
    }
  });

  it("a settings line that cannot be read: doctor and the leader name the key and the line, and the gate's events are held", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })],
      config: POLICY,
    });
    await rig.hook(team, "on_task_completed.sh", "# pi-teams-hooks: mode=shadowy\nexit 0");
    const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(doctor.stdout).toContain(
      "on_task_completed.sh:2: mode=shadowy: expected enforce or shadow: the gate does not run, and its task_completed events are held (hook_settings)",
    );
    expect(doctor.code).not.toBe(0);
    const leader = await rig.leader(team);
    expect(leader.warnings().join("\n")).toContain(
      "on_task_completed.sh:2: mode=shadowy: expected enforce or shadow: the gate does not run, and its task_completed events are held (hook_settings)",
    );
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1, (e) => e.event === "task_completed");
    // The lead's to fix: the event is held (not the worker's failure), its metadata says why.
    expect(event).toMatchObject({ outcome: "error", policyApplied: true, held: "approval" });
    expect((await readTaskFile(team, "1")).metadata).toMatchObject({
      qualityGateStatus: "held",
      qualityGateSummary:
        "held: waiting for the team lead: on_task_completed.sh:2: mode=shadowy: expected enforce or shadow: the gate did not run",
    });
  });
});
