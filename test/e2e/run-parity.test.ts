/**
 * `pi-teams-hooks run` behaves as the leader would, through the built bin: a task event without
 * `--member` is the task owner's (the leader's event member), so a `members=` gate judges it as the
 * leader's run would; `run` and `watch` warn, before anything runs, about what `doctor` finds wrong
 * with a chain (in the very words doctor uses); every log says what fired it (`trigger`: `hand` for
 * `run`, `leader` for the leader), and a held gate's decision log says what its held run said;
 * `logs` marks hand runs, and `logs stats` leaves them out unless asked for (`--include-hand-runs`,
 * `--trigger`), counting a log written before the field existed as the leader's. `run --apply-policy`,
 * `decide` with no leader running and the leader apply the same settings (config.json's
 * `reassignOnReopen` among them).
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { writeHookLog } from "../../extensions/teams-hooks/logs/hook-log.js";
import { makeRunResult } from "../helpers/invocation.js";
import { readLogs, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const done = (id: string, owner: string) => makeTask({ id, owner, status: "completed" });
const working = (id: string, owner: string) => makeTask({ id, owner, status: "in_progress" });

describe("run, as the leader would", () => {
  it("without --member, a task event is its owner's: a members= gate judges it as the leader's", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [done("1", "bob")] });
    const gate = '# pi-teams-hooks: members=bob\necho "member $PI_TEAMS_MEMBER" >&2; exit 1';
    await rig.hook(team, "on_task_completed.sh", gate);
    const run = (...args: string[]) =>
      runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", ...args]);

    const ran = await run();
    expect(ran.code, ran.stdout + ran.stderr).toBe(1);
    expect(ran.stdout).toMatch(/^task_completed #1 on_task_completed\.sh failed in \S+: exit code 1 • member bob /m);
    const [log] = await readLogs(team.teamDir);
    expect(log?.invocation.memberName).toBe("bob");

    // --member still names someone else, and the gate for bob skips that member's event.
    const other = await run("--member", "alice");
    expect(other.code, other.stdout + other.stderr).toBe(0);
    expect(other.stdout).toContain("on_task_completed skipped (members=bob: member alice does not match)");
  });

  it("warns as doctor does (chain files that cannot run, settings lines not read): run, watch", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [done("1", "bob")] });
    const hooks = path.join(team.teamsRoot, "_hooks");
    const lint = path.join(hooks, "on_task_completed.d", "20-lint");
    await rig.hook(team, "on_task_completed.sh", "# PI-TEAMS-HOOKS: timeout=5s\nexit 0");
    await mkdir(path.dirname(lint), { recursive: true });
    await writeFile(lint, "#!/usr/bin/env bash\nexit 1\n", { mode: 0o644 });
    await writeFile(path.join(hooks, "on_task_complete.sh"), "exit 1\n", { mode: 0o755 });
    const expected = [
      `skipped global on_task_completed.d/20-lint: not executable (chmod +x ${lint})`,
      "on_task_completed.sh:2: looks like a settings line, but is not read (only a line that starts `# pi-teams-hooks:` or `// pi-teams-hooks:`, in lower case, is read)",
      `${path.join(hooks, "on_task_complete.sh")} never runs: the gate of no event`,
    ];

    const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
    for (const text of expected) expect(doctor.stdout).toContain(text);

    const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    const warnings = ran.stderr.split("\n").filter((line) => line.startsWith("warning: "));
    for (const text of expected) {
      expect(
        warnings.some((line) => line.includes(text)),
        `${text}\nin: ${ran.stderr}`,
      ).toBe(true);
    }

    const leader = await rig.leader(team);
    const said = leader.warnings().join("\n");
    for (const text of expected) expect(said).toContain(text);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("every log says what fired it: hand (run) or leader; a decision's log says its held run's", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const tasks = [done("1", "bob"), done("2", "bob"), working("3", "bob"), working("4", "bob")];
    const team = await rig.team({ tasks });
    // Tasks 2 and 4 are held for a decision; the others pass.
    const defer = `echo '{"decision":"defer","reason":"CI"}'`;
    await rig.hook(team, "on_task_completed.sh", `case "$PI_TEAMS_TASK_ID" in 2|4) ${defer};; esac`);
    const triggers = async (taskId: string): Promise<unknown[]> =>
      (await readLogs(team.teamDir))
        .filter((l) => l.invocation.completedTask?.id === taskId)
        .map((l) => [l.decision ? "decision" : "run", l.trigger]);
    const run = (...args: string[]) => runBin(["run", "task_completed", "--team-dir", team.teamDir, ...args]);
    const decide = (runId: string, decision: string) =>
      runBin(["decide", "--yes", "--team-dir", team.teamDir, runId, decision]);

    const byHand = await run("--task", "1", "--json");
    expect(byHand.code, byHand.stderr).toBe(0);
    expect(JSON.parse(byHand.stdout)).toMatchObject({ trigger: "hand" });
    const heldByHand = await run("--task", "2", "--apply-policy");
    expect(heldByHand.code, heldByHand.stderr).toBe(3);
    const handRunId = / ([0-9a-f-]{36}) allow\|deny$/m.exec(heldByHand.stdout)?.[1] ?? "";
    expect((await decide(handRunId, "allow")).code).toBe(0);

    const leader = await rig.leader(team);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["3", "4"] });
    const events = await leader.waitForEvents(2, (e) => e.event === "task_completed");
    const leaderRunId = events.find((e) => e.outcome === "deferred")?.deferral?.runId ?? "";
    expect(await leader.stop()).toMatchObject({ code: 0 });
    // No leader runs now: decide applies the decision itself, and its log is still the leader's event's.
    const denied = await decide(leaderRunId, "deny");
    expect(denied.code, denied.stdout + denied.stderr).toBe(0);

    expect(await triggers("1")).toEqual([["run", "hand"]]);
    expect(await triggers("2")).toEqual([
      ["run", "hand"],
      ["decision", "hand"],
    ]);
    expect(await triggers("3")).toEqual([["run", "leader"]]);
    expect(await triggers("4")).toEqual([
      ["run", "leader"],
      ["decision", "leader"],
    ]);
  });

  it("run --apply-policy, decide with no leader and the leader apply the team's settings alike: reassignOnReopen false", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const config = {
      version: 1,
      teamId: "alpha",
      taskListId: "alpha",
      leadName: "team-lead",
      members: [],
      hooks: { failureAction: "reopen", reassignOnReopen: false },
    };
    const team = await rig.team({ config, tasks: [done("1", "bob"), done("2", "bob"), working("3", "bob")] });
    // Task 2 is held for a decision; the others are denied.
    await rig.hook(
      team,
      "on_task_completed.sh",
      `case "$PI_TEAMS_TASK_ID" in 2) echo '{"decision":"defer","reason":"CI"}';; *) echo "lint failed" >&2; exit 1;; esac`,
    );
    const run = (id: string) =>
      runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", id, "--apply-policy"]);

    const byHand = await run("1");
    expect(byHand.code, byHand.stderr).toBe(1);
    expect(byHand.stdout).toMatch(/→ reopened \(1\/3\), nudge bob \(run /);
    const held = await run("2");
    expect(held.code, held.stderr).toBe(3);
    const heldRunId = / ([0-9a-f-]{36}) allow\|deny$/m.exec(held.stdout)?.[1] ?? "";
    const decided = await runBin(["decide", "--yes", "--team-dir", team.teamDir, heldRunId, "deny"]);
    expect(decided.code, decided.stdout + decided.stderr).toBe(0);
    expect(decided.stdout).toContain("→ reopened (1/3), nudge bob");

    const leader = await rig.leader(team);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["3"] });
    const [event] = await leader.waitForEvents(1, (e) => e.taskId === "3");
    expect(event?.actions).toEqual(["reopened (1/3)", "nudge bob"]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("logs marks hand runs; logs stats leaves them out unless asked; old logs are the leader's", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [done("1", "ada"), done("2", "bob")] });
    const body = `[ "$PI_TEAMS_TASK_ID" = 2 ] && { echo "FAIL: task 2" >&2; exit 1; }; exit 0`;
    const gate = await rig.hook(team, "on_task_completed.sh", body);
    // The leader's run of task 1, as a log of a version before `trigger` was written.
    const at = new Date(Date.now() - 60_000).toISOString();
    const oldRunId = "01d1eade-0000-4000-8000-000000000001";
    await writeHookLog(team.teamDir, {
      invocation: {
        event: "task_completed",
        teamId: team.teamId,
        teamDir: team.teamDir,
        taskListId: team.taskListId,
        style: "normal",
        memberName: "ada",
        completedTask: done("1", "ada"),
      },
      result: makeRunResult({
        ran: true,
        outcome: "passed",
        exitCode: 0,
        hookPath: gate,
        command: ["bash", gate],
        durationMs: 40,
        runId: oldRunId,
      }),
      key: `task_completed:1:${at}`,
      startedAt: at,
    });
    for (let i = 0; i < 2; i++) {
      expect((await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "2"])).code).toBe(1);
    }
    const logs = (...args: string[]) => runBin(["logs", ...args, "--team-dir", team.teamDir]);
    const lines = (stdout: string): Array<Record<string, unknown>> =>
      stdout
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    const stats = async (...args: string[]) => lines((await logs("stats", "--json", ...args)).stdout);

    expect(await stats()).toEqual([expect.objectContaining({ hook: "on_task_completed.sh", runs: 1, passRate: 1 })]);
    expect(await stats("--include-hand-runs")).toEqual([expect.objectContaining({ runs: 3, passed: 1, failed: 2 })]);
    expect(await stats("--trigger", "hand")).toEqual([
      expect.objectContaining({ runs: 2, passed: 0, failed: 2, mostFailedTasks: [{ taskId: "2", failures: 2 }] }),
    ]);
    expect(await stats("--trigger", "leader")).toEqual([expect.objectContaining({ runs: 1, passed: 1 })]);
    const none = await logs("stats", "--task", "2");
    expect(none.stdout).toContain("no hook logs (task #2) in ");
    expect(none.stdout).toContain("runs by hand (pi-teams-hooks run) are left out: --include-hand-runs counts them");

    // The table shows every run, and marks those by hand where a narrow terminal still shows it.
    const table = await runBin(["logs", "--team-dir", team.teamDir], { env: { COLUMNS: "80" } });
    const rows = table.stdout.trimEnd().split("\n").slice(1);
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatch(/ #1 +ada +passed +- *$/);
    for (const row of rows.slice(1)) expect(row).toMatch(/ #2 +bob +failed +by hand +FAIL: task 2/);
    expect(lines((await logs("--trigger", "hand", "--json")).stdout).map((l) => l.trigger)).toEqual(["hand", "hand"]);
    const byLeader = lines((await logs("--trigger", "leader", "--json")).stdout);
    expect(byLeader.map((l) => (l.result as { runId: string }).runId)).toEqual([oldRunId]);
    expect((await logs("show", "last")).stdout).toMatch(/^fired: +by hand \(pi-teams-hooks run\)$/m);
    expect((await logs("--trigger", "cron")).stderr).toContain('--trigger "cron" must be one of leader, hand');
  });
});
