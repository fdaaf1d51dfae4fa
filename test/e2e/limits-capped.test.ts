/**
 * Limits written outside their range are capped, through the built bin: one warning naming the key,
 * the value and the ceiling (or floor), the rest of the `hooks` block in force — under a real leader
 * (at its start and at a reload of config.json) and in `policy get`. A value that is no number still
 * refuses the block whole.
 */
import { readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { readTaskFile, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

describe("limits outside their range", () => {
  it("a leader caps each with one warning and keeps the rest of the block; a reload says only the new one", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })],
      config: { hooks: { failureAction: "reopen", limits: { maxHooksPerEvent: 500, maxPayloadBytes: 10 } } },
    });
    const file = path.join(team.teamDir, "config.json");
    await rig.hook(team, "on_task_completed.sh", "echo 'tests fail' >&2\nexit 1");
    const leader = await rig.leader(team);
    const rest = `the rest of the "hooks" block stays in force`;
    const ceiling = `warning: ${file}: hooks.limits.maxHooksPerEvent: 500 is above its ceiling of 64 — capped to 64; ${rest}`;
    const floor = `warning: ${file}: hooks.limits.maxPayloadBytes: 10 is below its floor of 1024 — capped to 1024; ${rest}`;
    expect(leader.warnings().filter((w) => w.includes("capped to"))).toEqual([ceiling, floor]);
    expect(leader.linesOf("policy")[0]).toMatchObject({ policy: { failureAction: "reopen" } });

    // The rest of the block is in force: the failure reopens the task.
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({ outcome: "failed", policyApplied: true });
    expect((await readTaskFile(team, "1")).status).toBe("pending");

    // A reload with one more limit out of range: only the new warning, once.
    const config = JSON.parse(await readFile(file, "utf8")) as { hooks: Record<string, unknown> };
    const configLines = leader.linesOf("config").length;
    await writeFile(`${file}.tmp`, JSON.stringify({ ...config, hooks: { ...config.hooks, deferTimeoutMs: 10 } }));
    await rename(`${file}.tmp`, file);
    await leader.waitFor("the reload", () => leader.linesOf("config").length > configLines);
    const defer = `warning: ${file}: hooks.deferTimeoutMs: 10 is below its floor of 1000 — capped to 1000; ${rest}`;
    await leader.waitFor("the new warning", () => leader.warnings().includes(defer));
    expect(leader.warnings().filter((w) => w.includes("capped to"))).toEqual([ceiling, floor, defer]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("policy get shows the capped value and says why; a string for a number refuses the block", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ config: { hooks: { failureAction: "reopen", limits: { chainDeadlineMs: 0 } } } });
    const got = await runBin(["policy", "get", "--team-dir", team.teamDir, "--json"]);
    expect(got.code).toBe(0);
    type Report = {
      block: { valid: boolean };
      policy: { failureAction: string };
      limits: Record<string, { value: number }>;
    };
    const report = JSON.parse(got.stdout) as Report;
    expect(report.block.valid).toBe(true);
    expect(report.policy.failureAction).toBe("reopen");
    const origin = "config.json hooks.limits.chainDeadlineMs (0, capped to its floor)";
    expect(report.limits.chainDeadlineMs).toEqual({ value: 1, source: "config", origin });
    expect(got.stderr).toContain("hooks.limits.chainDeadlineMs: 0 is below its floor of 1 — capped to 1");

    const bad = await rig.team({ config: { hooks: { failureAction: "reopen", limits: { chainDeadlineMs: "soon" } } } });
    const refused = await runBin(["policy", "get", "--team-dir", bad.teamDir, "--json"]);
    type Refused = { block: { valid: boolean; problems: string[] }; policy: { failureAction: string } };
    const badReport = JSON.parse(refused.stdout) as Refused;
    expect(badReport.block.valid).toBe(false);
    expect(badReport.policy.failureAction).toBe("warn");
    const said =
      'hooks.limits.chainDeadlineMs: expected a whole number, got "soon" — the "hooks" block is refused whole';
    expect(badReport.block.problems[0]).toContain(said);
  });
});
