/**
 * Under strict exit codes (`hooks.exitCodes: "strict"`), exit 3 — a hook runtime's "defer" by exit
 * code — is a denial with the code `deferral_not_supported`, through the built bin: `run --json`, the
 * log, and a real leader that applies the policy to it as to any denial (never holding the gate).
 * Under v1 the same exit is an ordinary denial without a code.
 */
import { describe, it } from "vitest";
import { readLogs, readTaskFile, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const GATE = "echo 'waiting for CI' >&2\nexit 3";
const REASON = "exit code 3 asks to defer, which an exit code cannot: a gate defers with a verdict: waiting for CI";

describe("exit 3 under strict exit codes", () => {
  it("run: a denial with code deferral_not_supported (strict), a plain denial (v1)", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const done = makeTask({ id: "1", status: "completed", owner: "ada" });
    const strict = await rig.team({ tasks: [done], config: { hooks: { exitCodes: "strict" } } });
    await rig.hook(strict, "on_task_completed.sh", GATE);
    const ran = await runBin(["run", "task_completed", "--team-dir", strict.teamDir, "--task", "1", "--json"]);
    expect(ran.code).toBe(1);
    const report = JSON.parse(ran.stdout) as { result: Record<string, unknown> };
    expect(report.result).toMatchObject({
      outcome: "failed",
      exitCode: 3,
      verdict: { decision: "deny", code: "deferral_not_supported", reason: REASON, source: "exit_code" },
    });
    expect(report.result.errorKind).toBeUndefined();
    const [log] = await readLogs(strict.teamDir);
    const verdict = { code: "deferral_not_supported", source: "exit_code" };
    expect(log?.result).toMatchObject({ outcome: "failed", verdict });

    const v1 = await rig.team({ tasks: [makeTask({ id: "1", status: "completed", owner: "ada" })] });
    await rig.hook(v1, "on_task_completed.sh", GATE);
    const plain = await runBin(["run", "task_completed", "--team-dir", v1.teamDir, "--task", "1", "--json"]);
    expect(plain.code).toBe(1);
    const result = (JSON.parse(plain.stdout) as { result: Record<string, unknown> }).result;
    expect(result).toMatchObject({ outcome: "failed", exitCode: 3 });
    expect(result.verdict).toBeUndefined();
  });

  it("a running leader applies the policy to it as a denial: reopened, the code on the task, nothing held", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })],
      config: { hooks: { exitCodes: "strict", failureAction: "reopen" } },
    });
    await rig.hook(team, "on_task_completed.sh", GATE);
    const leader = await rig.leader(team);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1, (e) => e.event === "task_completed");
    const summary = `denied (deferral_not_supported) • ${REASON}`;
    expect(event).toMatchObject({ outcome: "failed", policyApplied: true, summary });
    expect(event?.held).toBeFalsy();
    const task = await readTaskFile(team, "1");
    expect(task.status).toBe("pending");
    expect(task.metadata).toMatchObject({ qualityGateStatus: "failed", qualityGateCode: "deferral_not_supported" });
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
