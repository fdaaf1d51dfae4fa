/**
 * A gate cannot be switched off silently, end to end through `pi-teams-hooks watch` and `trust`: the
 * first start records every gate's sha256 (trust on first use); a gate that is changed, added,
 * deleted, disabled or replaced through the team layer, or loses its execute bit, makes its events
 * closed errors until `trust` records the change; world-writable gates are refused; every run logs
 * the gate's hash. Each gate appends a line to runs.txt when it really runs, so "did not run" is seen
 * on disk, not taken from the leader's word.
 */
import { createHash } from "node:crypto";
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { type ExpectStatic, describe, it } from "vitest";
import {
  type LeaderProcess,
  type LeaderRig,
  readInboxFile,
  readLogs,
  readTaskFile,
  runBin,
  useLeaderRig,
  elapse,
} from "../helpers/leader-rig.js";
import { makeTask, type TempTeam, runs } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const RECONCILE_MS = 200;
const GATE = "on_task_completed.sh";
/** Records that it ran (and which content: its first argument line), then passes. */
const recording = (label: string): string =>
  `echo "${label} $PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"\nexit 0`;

async function sha256(file: string): Promise<string> {
  return createHash("sha256")
    .update(await readFile(file))
    .digest("hex");
}

async function gateTeam(rig: LeaderRig, ids = ["1", "2", "3"]): Promise<TempTeam> {
  return rig.team({ tasks: ids.map((id) => makeTask({ id, owner: "alice", status: "in_progress" })) });
}

function trust(team: TempTeam, ...args: string[]) {
  return runBin(["trust", "--team-dir", team.teamDir, ...args]);
}

/** Two reconcile passes later, still `count` events: nothing ran twice (a negative check: only time can show it). */
async function expectNoMore(leader: LeaderProcess, count: number, expect: ExpectStatic): Promise<void> {
  await elapse(RECONCILE_MS * 3); // a negative check: see above
  expect(leader.events()).toHaveLength(count);
}

async function leadMessages(team: TempTeam): Promise<string[]> {
  return (await readInboxFile(team, "team", team.leadName)).map((m) => m.text);
}

describe.concurrent("trust", () => {
  it("C10: the first start trusts the gates it finds; every run logs the gate's sha256, in the log and in the task", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    const gate = await rig.hook(team, GATE, recording("v1"));
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    const record = JSON.parse(await readFile(path.join(team.teamDir, "hook-state", "trust.json"), "utf8")) as {
      gates: Record<string, { sha256: string }>;
    };
    expect(Object.keys(record.gates)).toEqual([gate]);
    expect(record.gates[gate]?.sha256).toBe(await sha256(gate));
    expect(leader.linesOf("info").map((l) => l.message)).toEqual([
      expect.stringMatching(/^sandbox: gates run sandboxed \(hooks\.sandbox auto, default\): /),
      expect.stringMatching(/^trusted 1 gate\(s\) on first use .*on_task_completed\.sh/),
    ]);

    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({ outcome: "passed" });
    const [log] = await readLogs(team.teamDir);
    expect(log?.result.hookSha256).toBe(await sha256(gate));
    expect((await readTaskFile(team, "1")).metadata?.qualityGateHookSha256).toBe(await sha256(gate));
  });

  it("C10: a gate edited after it was trusted does not run: its events are held (untrusted_hook), not failed, one note to the lead, and `trust` runs each held event once", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    const gate = await rig.hook(team, GATE, recording("v1"));
    const leader = await rig.leader(team, [
      "--reconcile-ms",
      String(RECONCILE_MS),
      "--failure-action",
      "reopen_followup",
    ]);
    const trustedSha = await sha256(gate);
    // the lead tightens the gate, not yet approved
    await writeFile(gate, `#!/usr/bin/env bash\n${recording("v2")}\n`);

    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
    const events = await leader.waitForEvents(2);
    expect(events.map((e) => [e.taskId, e.outcome, e.held])).toEqual([
      ["1", "error", "approval"],
      ["2", "error", "approval"],
    ]);
    expect(events[0]?.summary).toMatch(
      new RegExp(
        `^held: waiting for the team lead: untrusted_hook: ${gate} changed since it was trusted \\(sha256 ${trustedSha.slice(0, 12)}… → `,
      ),
    );
    expect(await runs(team)).toEqual([]); // the edited gate never ran
    // Held, not failed: nothing reopened, counted, spent or made; the task is not accepted meanwhile.
    const held = await readTaskFile(team, "1");
    expect(held.status).toBe("completed");
    expect(held.metadata).toMatchObject({
      qualityGateStatus: "held",
      qualityGateHeld: "approval",
      qualityGateOutcome: "error",
    });
    expect(held.metadata?.reopenedByQualityGateCount).toBeUndefined();
    expect(held.metadata?.qualityGateFailureCount).toBeUndefined();
    expect(held.metadata?.qualityGateBudgetKeys).toBeUndefined();
    expect([...(await readdir(team.tasksDir))].filter((n) => n.endsWith(".json")).sort()).toEqual([
      "1.json",
      "2.json",
      "3.json",
    ]);
    // The approval command is the lead's (the output line, the log); the team it judges is told only who approves.
    expect(events[0]?.summary).toContain(
      `the team lead approves a change with: pi-teams-hooks trust --team-dir ${team.teamDir} ${gate}`,
    );
    expect(held.metadata?.qualityGateSummary).toMatch(
      /changed since it was trusted .*; only the team lead can approve the change$/,
    );
    const told = await leader.waitFor("alice told it waits, once per task", async () => {
      const texts = (await readInboxFile(team, team.taskListId, "alice")).map((m) => m.text);
      return texts.length === 2 ? texts : false;
    });
    for (const text of told) {
      expect(text).toContain("only the team lead can approve it");
      expect(text).toContain("Nothing for you to fix");
      expect(text).not.toContain("remediate automatically");
    }
    expect(JSON.stringify(told)).not.toContain("pi-teams-hooks trust");
    const logs = await readLogs(team.teamDir);
    expect(logs.map((l) => [l.result.ran, l.result.errorKind, l.policy?.gate, l.policy?.held])).toEqual([
      [false, "untrusted_hook", "held", "approval"],
      [false, "untrusted_hook", "held", "approval"],
    ]);
    expect(logs[0]?.result.trustProblems).toEqual([
      { kind: "untrusted_hook", path: gate, reason: expect.stringContaining("changed since it was trusted") },
    ]);
    // Said once (not once per event), to the leader's output and to the lead's inbox.
    expect(leader.warnings().filter((w) => w.includes(`gate ${gate} changed since it was trusted`))).toHaveLength(1);
    expect((await leadMessages(team)).filter((t) => t.includes(gate))).toHaveLength(1);
    expect(JSON.parse(await readFile(path.join(team.teamDir, "hook-state", "holds.json"), "utf8"))).toMatchObject({
      holds: [
        { taskId: "1", cause: "approval", kind: "untrusted_hook", hook: "on_task_completed" },
        { taskId: "2", cause: "approval", kind: "untrusted_hook", hook: "on_task_completed" },
      ],
    });

    // `trust` shows the change with a diff, records nothing, and exits 1.
    const shown = await trust(team);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toContain(`changed  ${gate} (task_completed): sha256 ${trustedSha.slice(0, 12)}…`);
    expect(shown.stdout).toMatch(/-echo "v1 \$PI_TEAMS_TASK_ID"[^\n]*\n\s+\+echo "v2 \$PI_TEAMS_TASK_ID"/);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["3"] });
    await leader.waitForEvents(3);
    expect(await runs(team)).toEqual([]);

    // Approved: every held event runs at once, each once, with the new content; the leader says who changed the
    // record.
    const approved = await trust(team, gate, "--yes");
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain("recorded 1 change(s)");
    const after = await leader.waitForEvents(6);
    expect(
      after
        .slice(3)
        .map((e) => [e.taskId, e.outcome, e.retry])
        .sort(),
    ).toEqual([
      ["1", "passed", true],
      ["2", "passed", true],
      ["3", "passed", true],
    ]);
    expect((await runs(team)).sort()).toEqual(["v2 1", "v2 2", "v2 3"]);
    const passed = await readTaskFile(team, "1");
    expect(passed.status).toBe("completed");
    expect(passed.metadata).toMatchObject({ qualityGateStatus: "passed" });
    // What the hold wrote goes with the pass; no reopen was spent.
    expect(passed.metadata?.qualityGateHeld).toBeUndefined();
    expect(passed.metadata?.reopenedByQualityGateCount).toBeUndefined();
    expect(JSON.parse(await readFile(path.join(team.teamDir, "hook-state", "holds.json"), "utf8"))).toMatchObject({
      holds: [],
    });
    expect(leader.warnings().some((w) => w.includes(`trust record: ${gate} approved`))).toBe(true);
    expect((await trust(team)).code).toBe(0);
    await expectNoMore(leader, 6, expect);
  });

  it("C10: watch --trust-changes runs the changed gate, logs both hashes and warns once per change", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    const gate = await rig.hook(team, GATE, recording("v1"));
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS), "--trust-changes"]);
    const trustedSha = await sha256(gate);
    await writeFile(gate, `#!/usr/bin/env bash\n${recording("v2")}\n`);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1", "2"] });
    const events = await leader.waitForEvents(2);
    expect(events.map((e) => e.outcome)).toEqual(["passed", "passed"]);
    expect(await runs(team)).toEqual(["v2 1", "v2 2"]);
    const logs = await readLogs(team.teamDir);
    expect(logs.map((l) => [l.result.hookSha256, l.result.trustedSha256])).toEqual([
      [await sha256(gate), trustedSha],
      [await sha256(gate), trustedSha],
    ]);
    expect(leader.warnings().filter((w) => w.includes(`gate ${gate} changed since it was trusted`))).toEqual([
      expect.stringContaining("--trust-changes"),
    ]);
  });

  const removals: Array<[string, (gate: string, team: TempTeam) => Promise<void>, string]> = [
    ["deleted", (gate) => rm(gate), "deleted"],
    [
      "switched off by NAME.disabled in the team layer",
      async (_gate, team) => {
        await mkdir(path.join(team.teamDir, "hooks"), { recursive: true });
        await writeFile(path.join(team.teamDir, "hooks", `${GATE}.disabled`), "");
      },
      "disabled by",
    ],
  ];
  it.for(removals)(
    'C11: a trusted gate %s holds its events (gate_missing, not "no hook") until trust records the removal, which releases them',
    async ([, change, detail], context) => {
      const kind = "gate_missing";
      const { expect } = context;
      const rig = outerRig.scoped(context);
      const team = await gateTeam(rig);
      const gate = await rig.hook(team, GATE, recording("v1"));
      const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS), "--failure-action", "reopen"]);
      await change(gate, team);
      await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
      const [event] = await leader.waitForEvents(1);
      expect(event).toMatchObject({
        outcome: "error",
        held: "approval",
        summary: expect.stringContaining(`${kind}: trusted gate ${gate} no longer runs: ${detail}`),
      });
      expect((await readTaskFile(team, "1")).status).toBe("completed"); // held, not reopened
      expect((await readLogs(team.teamDir))[0]?.result).toMatchObject({ ran: false, errorKind: kind, hookPath: gate });

      const recorded = await trust(team, "--all", "--yes");
      expect(recorded.stdout).toContain(`removed  ${gate} (task_completed)`);
      expect(recorded.code).toBe(0);
      // The removal approved: the held event runs again (no gate now), and so does a new completion.
      const released = await leader.waitForEvents(2);
      expect(released[1]).toMatchObject({ taskId: "1", outcome: "no_hook", retry: true });
      await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
      const after = await leader.waitForEvents(3);
      expect(after[2]).toMatchObject({ taskId: "2", outcome: "no_hook" }); // the removal is approved now
    },
  );

  it("C11: replacing a gate through the team layer is the global gate missing and the new one untrusted", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    const gate = await rig.hook(team, GATE, recording("global"));
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    const replacement = path.join(team.teamDir, "hooks", GATE);
    await mkdir(path.dirname(replacement), { recursive: true });
    await writeFile(replacement, recording("team"), { mode: 0o755 });
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event?.outcome).toBe("error");
    expect(await runs(team)).toEqual([]);
    const [log] = await readLogs(team.teamDir);
    expect(log?.result.trustProblems?.map((p) => [p.kind, p.path])).toEqual([
      ["untrusted_hook", replacement],
      ["gate_missing", gate],
    ]);
  });

  it("C11: a trusted bare gate that loses its execute bit is gate_not_executable", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    const gate = await rig.hook(team, "on_task_completed", recording("bare"));
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    await chmod(gate, 0o644);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({
      outcome: "error",
      held: "approval",
      summary: expect.stringMatching(
        /^held: waiting for the team lead: gate_not_executable: trusted gate .*on_task_completed no longer runs: not executable/,
      ),
    });
    expect(await runs(team)).toEqual([]);
  });

  it("C11: a gate added after the first start (team layer) needs trust like any other", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    await rig.hook(team, GATE, recording("global"));
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    const added = path.join(team.teamDir, "hooks", "on_task_completed.d", "10-extra.sh");
    await mkdir(path.dirname(added), { recursive: true });
    await writeFile(added, recording("added"));
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({
      outcome: "error",
      summary: expect.stringContaining(`untrusted_hook: ${added} is a new gate, not trusted yet`),
    });
    expect(await runs(team)).toEqual([]); // neither the new gate nor the rest of its chain
    expect((await trust(team)).stdout).toContain(`new      ${added} (task_completed): sha256 `);
  });

  it("C13: a world-writable gate is refused (insecure_hook) unless --allow-insecure-hooks; watch and doctor say why", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    const gate = await rig.hook(team, GATE, recording("open"));
    await chmod(gate, 0o777);
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    expect(leader.warnings()).toContain(
      `warning: ${gate} is world-writable (mode 0777): any user can rewrite it (chmod o-w): its events are held (insecure_hook) unless the leader runs with --allow-insecure-hooks`,
    );
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({
      outcome: "error",
      held: "approval",
      summary: expect.stringMatching(/^held: waiting for the team lead: insecure_hook: .* is world-writable/),
    });
    expect(await runs(team)).toEqual([]);
    // Not a trust change, so told to the lead as a hold: what holds it, and that nothing was failed.
    await leader.waitFor("the lead told of the hold", async () =>
      (await leadMessages(team)).some((t) => t.includes("could not judge task #1") && t.includes("world-writable")),
    );
    await leader.stop();

    const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toContain("the leader refuses it (insecure_hook) unless started with --allow-insecure-hooks");

    // The next start runs the held event again: allowed now, it runs; so does a new completion.
    const allowed = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS), "--allow-insecure-hooks"]);
    const [released] = await allowed.waitForEvents(1);
    expect(released).toMatchObject({ taskId: "1", outcome: "passed", retry: true });
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
    const [, passed] = await allowed.waitForEvents(2);
    expect(passed).toMatchObject({ taskId: "2", outcome: "passed" });
    expect(await runs(team)).toEqual(["open 1", "open 2"]);
  });

  // Only root can give a file to another user; as another user, no such file can be made.
  it.skipIf(process.getuid?.() !== 0)(
    "C13: a gate owned by another user is refused (checked as root, chown 65534)",
    async (context) => {
      const { expect } = context;
      const rig = outerRig.scoped(context);
      const team = await gateTeam(rig);
      const gate = await rig.hook(team, GATE, recording("theirs"));
      execFileSync("chown", ["65534:65534", gate]);
      const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
      await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
      const [event] = await leader.waitForEvents(1);
      expect(event).toMatchObject({
        outcome: "error",
        summary: expect.stringContaining("owned by uid 65534, not by the leader's uid 0 (or root)"),
      });
      expect(await runs(team)).toEqual([]);
    },
  );

  it("a removed trust record is written back from the approved copy (the gates run as approved), and the lead is told", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    await rig.hook(team, GATE, recording("v1"));
    const first = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    const record = await readFile(path.join(team.teamDir, "hook-state", "trust.json"), "utf8");
    await first.stop();
    await rm(path.join(team.teamDir, "hook-state", "trust.json"));
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    expect(
      leader.warnings().some((w) => w.includes("trust.json was removed while no leader ran: written back as approved")),
    ).toBe(true);
    expect(JSON.parse(await readFile(path.join(team.teamDir, "hook-state", "trust.json"), "utf8"))).toEqual(
      JSON.parse(record),
    );
    await leader.waitFor("the lead told", async () =>
      (await leadMessages(team)).some((t) => t.includes("trust.json was removed")),
    );
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({ outcome: "passed" });
    expect(await runs(team)).toEqual(["v1 1"]);
  });

  it("with the approved copy gone too (another account, a state dir wiped), a removed record trusts nothing anew: every gate is held", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    await rig.hook(team, GATE, recording("v1"));
    const first = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    await first.stop();
    await rm(path.join(team.teamDir, "hook-state", "trust.json"));
    const elsewhere = await mkdtemp(path.join(os.tmpdir(), "pi-teams-state-other-"));
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)], {
      env: { XDG_STATE_HOME: elsewhere },
    });
    expect(
      leader.warnings().some((w) => w.includes("trust.json is gone: nothing is trusted anew; every gate is untrusted")),
    ).toBe(true);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({
      outcome: "error",
      held: "approval",
      summary: expect.stringMatching(/^held: waiting for the team lead: untrusted_hook: /),
    });
    expect(await runs(team)).toEqual([]);
    await rm(elsewhere, { recursive: true, force: true });
  });

  it("C10: run by hand refuses a changed gate once a record exists, and runs it with --trust-changes", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig, ["1"]);
    const gate = await rig.hook(team, GATE, recording("v1"));
    // Run from the teams root, as the leader runs: a sandboxed gate writes runs.txt in the team dir
    // because it lies in its working directory.
    const run = (...args: string[]) =>
      runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", ...args], { cwd: team.teamsRoot });
    const fresh = await run();
    expect(fresh.code, fresh.stderr).toBe(0); // no record yet: nothing to compare
    expect((await trust(team, "--all", "--yes")).code).toBe(0);
    await writeFile(gate, `#!/usr/bin/env bash\n${recording("v2")}\n`);
    const refused = await run();
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(`untrusted_hook: ${gate} changed since it was trusted`);
    const accepted = await run("--trust-changes");
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(await runs(team)).toEqual(["v1 1", "v2 1"]);
  });
});
