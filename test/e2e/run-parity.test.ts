/**
 * `pi-teams-hooks run` behaves as the leader would, through the built bin: a task event without
 * `--member` is the task owner's (the leader's event member), so a `members=` gate judges it as the
 * leader's run would; `run` and `watch` warn, before anything runs, about what `doctor` finds wrong
 * with a chain (in the very words doctor uses); every log says what fired it (`trigger`: `hand` for
 * `run`, `leader` for the leader), and a held gate's decision log says what its held run said.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { readLogs, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

describe("run, as the leader would", () => {
  it("without --member, a task event is its owner's: a members= gate for the owner judges it, as under the leader", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "completed", owner: "bob" })] });
    await rig.hook(team, "on_task_completed.sh", "# pi-teams-hooks: members=bob\necho \"member $PI_TEAMS_MEMBER\" >&2\nexit 1");

    const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(ran.code, ran.stdout + ran.stderr).toBe(1);
    expect(ran.stdout).toMatch(/^task_completed #1 on_task_completed\.sh failed in \S+: exit code 1 • member bob \(run [0-9a-f]{8}\)$/m);
    const [log] = await readLogs(team.teamDir);
    expect(log?.invocation.memberName).toBe("bob");

    // --member still names someone else, and the gate for bob skips that member's event.
    const other = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--member", "alice"]);
    expect(other.code, other.stdout + other.stderr).toBe(0);
    expect(other.stdout).toContain("skipped in 0ms: no gate in force: on_task_completed skipped (members=bob: member alice does not match)");
  });

  it("warns, as doctor does, about a chain file that cannot run, a settings line that is not read and a stray on_* name: in run, and at watch's start", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "completed", owner: "bob" })] });
    const hooks = path.join(team.teamsRoot, "_hooks");
    await rig.hook(team, "on_task_completed.sh", "# PI-TEAMS-HOOKS: timeout=5s\nexit 0");
    await mkdir(path.join(hooks, "on_task_completed.d"), { recursive: true });
    await writeFile(path.join(hooks, "on_task_completed.d", "20-lint"), "#!/usr/bin/env bash\nexit 1\n", { mode: 0o644 });
    await writeFile(path.join(hooks, "on_task_complete.sh"), "exit 1\n", { mode: 0o755 });
    const expected = [
      `skipped global on_task_completed.d/20-lint: not executable (chmod +x ${path.join(hooks, "on_task_completed.d", "20-lint")})`,
      "on_task_completed.sh:2: looks like a settings line, but is not read (only a line that starts `# pi-teams-hooks:` or `// pi-teams-hooks:`, in lower case, is read)",
      `${path.join(hooks, "on_task_complete.sh")} never runs: the gate of no event`,
    ];

    const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
    for (const text of expected) expect(doctor.stdout).toContain(text);

    const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    const warnings = ran.stderr.split("\n").filter((line) => line.startsWith("warning: "));
    for (const text of expected) expect(warnings.some((line) => line.includes(text)), `${text}\nin: ${ran.stderr}`).toBe(true);

    const leader = await rig.leader(team);
    const said = leader.warnings().join("\n");
    for (const text of expected) expect(said).toContain(text);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("every log says what fired it: run's are hand, the leader's leader; a held gate's decision log is its held run's", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const working = (id: string) => makeTask({ id, owner: "bob", status: "in_progress" });
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "completed", owner: "bob" }), makeTask({ id: "2", status: "completed", owner: "bob" }), working("3"), working("4")] });
    // Tasks 2 and 4 are held for a decision; the others pass.
    await rig.hook(team, "on_task_completed.sh", `case "$PI_TEAMS_TASK_ID" in 2|4) echo '{"decision":"defer","reason":"waiting for CI"}';; esac`);
    const triggers = async (taskId: string): Promise<unknown[]> =>
      (await readLogs(team.teamDir)).filter((l) => l.invocation.completedTask?.id === taskId).map((l) => [l.decision ? "decision" : "run", l.trigger]);

    const byHand = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--json"]);
    expect(byHand.code, byHand.stderr).toBe(0);
    expect(JSON.parse(byHand.stdout)).toMatchObject({ trigger: "hand" });
    const heldByHand = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "2", "--apply-policy"]);
    expect(heldByHand.code, heldByHand.stderr).toBe(3);
    const handRunId = / ([0-9a-f-]{36}) allow\|deny$/m.exec(heldByHand.stdout)?.[1] ?? "";
    expect((await runBin(["decide", "--team-dir", team.teamDir, handRunId, "allow"])).code).toBe(0);

    const leader = await rig.leader(team);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["3", "4"] });
    const events = await leader.waitForEvents(2, (e) => e.event === "task_completed");
    const leaderRunId = events.find((e) => e.outcome === "deferred")?.deferral?.runId ?? "";
    expect(await leader.stop()).toMatchObject({ code: 0 });
    // No leader runs now: decide applies the decision itself, and its log is still the leader's event's.
    expect((await runBin(["decide", "--team-dir", team.teamDir, leaderRunId, "deny"])).code).toBe(0);

    expect(await triggers("1")).toEqual([["run", "hand"]]);
    expect(await triggers("2")).toEqual([["run", "hand"], ["decision", "hand"]]);
    expect(await triggers("3")).toEqual([["run", "leader"]]);
    expect(await triggers("4")).toEqual([["run", "leader"], ["decision", "leader"]]);
  });
});
