/**
 * A held gate is decided under the settings in force when it held the event, through the built bin
 * (`run --apply-policy` holds it, `decide` decides it) and a real `serve` (its decision route): a
 * policy changed from `reopen` to `warn` while it waits still reopens the task, a team that was
 * confidential when the gate held keeps the task's content out of the decision's log though
 * `confidential` was switched off since, and both say what the decision was applied under and what
 * changed since; a running leader that applies the API's decision after a config reload does the
 * same, and warns what changed.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { readLogs, readTaskFile, runBin, useLeaderRig, type LeaderRig } from "../helpers/leader-rig.js";
import { makeTask as workingTask } from "../helpers/temp-team.js";
import { api, createKey, startServeFor } from "../helpers/serve-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const DESCRIPTION = "Rotate the payroll signing key (plan: HSM slot 4, window Friday 02:00)";
const HELD_CONFIG = { hooks: { failureAction: "reopen", confidential: true } };
const LATER_CONFIG = { hooks: { failureAction: "warn", confidential: false } };

/** A team whose task 1 is completed and whose gate defers, held by `run --apply-policy`; the held run's id. */
async function held(rig: LeaderRig): Promise<{ team: TempTeam; runId: string }> {
  const team = await rig.team({
    tasks: [makeTask({ id: "1", owner: "alice", status: "completed", description: DESCRIPTION })],
    config: HELD_CONFIG,
  });
  await rig.hook(
    team,
    "on_task_completed.sh",
    `echo '{"decision":"defer","code":"review","reason":"waiting for review"}'`,
  );
  const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--apply-policy"]);
  const runId = /decide --team-dir \S+ (\S+) allow\|deny/.exec(ran.stdout)?.[1];
  if (!runId) throw new Error(`not held: ${ran.stdout}${ran.stderr}`);
  // The settings change while the gate waits.
  await writeFile(path.join(team.teamDir, "config.json"), `${JSON.stringify(LATER_CONFIG, null, 2)}\n`);
  return { team, runId };
}

/** The decision's log: the one that names the deferred run. */
async function decisionLog(team: TempTeam) {
  const logs = await readLogs(team.teamDir);
  const log = logs.find((l) => l.decision !== undefined);
  if (!log) throw new Error("no decision log");
  return log;
}

describe("a held gate is decided under the settings in force when it held", () => {
  it("decide: reopens under the policy held (not warn), keeps no content (confidential when held), says so", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const { team, runId } = await held(rig);

    const decided = await runBin([
      ...["decide", "--team-dir", team.teamDir, runId, "deny"],
      ...["--reason", "the key ceremony needs two people", "--by", "ada", "--yes"],
    ]);
    expect(decided.code, decided.stdout + decided.stderr).toBe(0);
    expect(decided.stdout).toContain("reopened");
    expect(decided.stdout).toContain("applied under the settings in force when its gate held it (");
    expect(decided.stdout).toContain("failureAction reopen,");
    expect(decided.stdout).toContain("changed since: failureAction reopen (now warn), confidential true (now false)");

    const task = await readTaskFile(team, "1");
    expect(task.status).toBe("pending");
    expect(task.metadata).toMatchObject({ qualityGateStatus: "failed", qualityGateDecision: "deny" });

    const log = await decisionLog(team);
    expect(JSON.stringify(log)).not.toContain("HSM slot 4");
    expect(log.invocation.completedTask).toMatchObject({ id: "1", subject: "1", description: "" });
    expect(log.decision).toMatchObject({
      appliedUnder: {
        from: "held",
        settings: { failureAction: "reopen", confidential: true },
        changed: ["failureAction reopen (now warn)", "confidential true (now false)"],
      },
    });
  });

  it("the task API's decision route: the same, and its answer says what the decision was applied under", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const { team, runId } = await held(rig);
    const key = await createKey(team.teamsRoot, [
      ...["--name", "review", "--scopes", "gates:decide", "--teams", team.teamId, "--all-templates"],
    ]);
    const serve = await startServeFor(context, team.teamsRoot);

    const answer = await api(serve.url, "POST", `/api/v1/teams/${team.teamId}/runs/${runId}/decision`, {
      key,
      body: { decision: "deny", reason: "the key ceremony needs two people" },
    });
    expect(answer.status, JSON.stringify(answer.json)).toBe(200);
    expect(answer.json).toMatchObject({
      state: "applied",
      appliedUnder: {
        from: "held",
        settings: { failureAction: "reopen", confidential: true },
        changed: ["failureAction reopen (now warn)", "confidential true (now false)"],
      },
    });
    expect(answer.json.actions).toEqual(expect.arrayContaining([expect.stringContaining("reopened")]));
    expect((await readTaskFile(team, "1")).status).toBe("pending");
    const log = await decisionLog(team);
    expect(JSON.stringify(log)).not.toContain("HSM slot 4");
  });

  it("a running leader applies the API's decision under the settings held, after a reload, and warns what changed", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [workingTask({ id: "1", owner: "alice", status: "in_progress", description: DESCRIPTION })],
      config: HELD_CONFIG,
    });
    await rig.hook(
      team,
      "on_task_completed.sh",
      `echo '{"decision":"defer","code":"review","reason":"waiting for review"}'`,
    );
    const key = await createKey(team.teamsRoot, [
      ...["--name", "review", "--scopes", "gates:decide", "--teams", team.teamId, "--all-templates"],
    ]);
    const serve = await startServeFor(context, team.teamsRoot);
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1, (e) => e.outcome === "deferred");
    const runId = event?.deferral?.runId ?? "";
    expect(runId).not.toBe("");

    const reloads = leader.linesOf("config").length;
    await writeFile(path.join(team.teamDir, "config.json"), `${JSON.stringify(LATER_CONFIG, null, 2)}\n`);
    await leader.waitFor("the reload", () =>
      leader
        .linesOf("config")
        .slice(reloads)
        .some((l) => l.valid === true),
    );

    const answer = await api(serve.url, "POST", `/api/v1/teams/${team.teamId}/runs/${runId}/decision`, {
      key,
      body: { decision: "deny", reason: "the key ceremony needs two people" },
    });
    expect([200, 202], JSON.stringify(answer.json)).toContain(answer.status);
    await leader.waitForEvents(2);
    expect((await readTaskFile(team, "1")).status).toBe("pending");
    await leader.waitFor("the warning", () =>
      leader.warnings().some((w) => w.includes("applied under the settings in force when its gate held it")),
    );
    const said = leader.warnings().find((w) => w.includes("applied under the settings"));
    // The leader keeps `confidential` as approved (switching it off waits for `trust settings`); the policy changed.
    expect(said).toContain("changed since: failureAction reopen (now warn)");
    const log = await decisionLog(team);
    expect(JSON.stringify(log)).not.toContain("HSM slot 4");
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
