/**
 * What the commands say of gates that will not run, and settings that are requests, through the
 * built bin: `doctor` exits 1 for a gate changed since it was trusted and for an event the leader
 * holds; `contract=1` on a settings line is accepted and any other version refused with the list
 * supported; `run idle` exits 0 when an idle hook fails (idle is observe-only) and says it failed; a
 * handler's `timeoutMs` out of range is capped with a warning, the rest of the `hooks` block in force.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { startReceiver, type Receiver } from "../helpers/http-receiver.js";
import { runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

describe("doctor: a gate that will not run is an error", () => {
  it("changed since it was trusted, then an event held for it: exit 1, each said", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    const gate = await rig.hook(team, "on_task_completed.sh", "exit 0");
    // The leader's first start trusts the gates as they are.
    const first = await rig.leader(team);
    expect(await first.stop()).toMatchObject({ code: 0 });
    const clean = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(clean.code, clean.stdout + clean.stderr).toBe(0);

    await rig.hook(team, "on_task_completed.sh", "echo edited; exit 0");
    const changed = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(changed.code, changed.stdout + changed.stderr).toBe(1);
    expect(changed.stdout).toContain(`${gate} changed since it was trusted`);
    expect(changed.stdout).toContain(`pi-teams-hooks trust --team-dir ${team.teamDir} ${gate}`);
    const json = await runBin(["doctor", "--team-dir", team.teamDir, "--json"]);
    const problems = (JSON.parse(json.stdout) as { problems: Array<{ kind: string; path: string }> }).problems;
    expect(problems).toContainEqual(expect.objectContaining({ kind: "gate_untrusted", path: gate }));

    // A completion while the gate is changed: the leader holds the event for the lead.
    const leader = await rig.leader(team);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await leader.waitFor("the holds list", async () =>
      (await readFile(path.join(team.teamDir, "hook-state", "holds.json"), "utf8").catch(() => "")).includes('"1"'),
    );
    const held = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(held.code, held.stdout + held.stderr).toBe(1);
    expect(held.stdout).toMatch(
      /held since \S+: task_completed #1 on_task_completed did not run its gate \(untrusted_hook\)/,
    );
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});

describe("contract= on a gate's settings line", () => {
  it("contract=1 is accepted; contract=2 is refused with the versions supported", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })] });
    await rig.hook(team, "on_task_completed.sh", "# pi-teams-hooks: contract=1 timeout=30s\nexit 0");
    const one = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(one.code, one.stdout + one.stderr).toBe(0);
    expect(one.stdout).toMatch(/^task_completed #1 on_task_completed\.sh passed/m);
    const doctorOne = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(doctorOne.code, doctorOne.stdout).toBe(0);
    expect(doctorOne.stdout).toContain("timeout=30s contract=1");

    await rig.hook(team, "on_task_completed.sh", "# pi-teams-hooks: contract=2\nexit 0");
    const refused =
      "on_task_completed.sh:2: contract=2: not a hook contract version this pi-teams-hooks supports (supported: 1)";
    const two = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(two.code, two.stdout + two.stderr).toBe(1);
    expect(two.stdout).toContain(refused);
    const doctorTwo = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(doctorTwo.code, doctorTwo.stdout).toBe(1);
    expect(doctorTwo.stdout).toContain(refused);
  });
});

describe("run idle: observe-only", () => {
  it("an idle hook that fails: exit 0, and the line says it failed", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team();
    await rig.hook(team, "on_idle.sh", 'echo "journal full" >&2; exit 1');
    const ran = await runBin(["run", "idle", "--team-dir", team.teamDir, "--member", "alice"]);
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    expect(ran.stdout).toMatch(/^idle on_idle\.sh failed in \S+: exit code 1 • journal full/m);
    expect(ran.stdout).toContain("idle is observe-only: the failure is reported and logged, nothing is enforced");
    const json = await runBin(["run", "idle", "--team-dir", team.teamDir, "--member", "alice", "--json"]);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as { result: { outcome: string } }).result.outcome).toBe("failed");
  });
});

describe("a handler's timeoutMs out of range", () => {
  it("is capped with a warning; the rest of the hooks block stays in force and the handler runs", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    receiver.route("/capped", (_req, res) =>
      res.writeHead(200, { "content-type": "application/json" }).end('{"decision":"allow"}'),
    );
    const handler = { name: "ci", events: ["task_completed"], url: `${receiver.url}/capped`, timeoutMs: 900000 };
    const team = await rig.team({
      tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })],
      config: { hooks: { failureAction: "reopen", handlers: [handler] } },
    });
    const config = path.join(team.teamDir, "config.json");
    const warning = `${config}: hooks.handlers.0.timeoutMs: 900000 is above its ceiling of 300000 — capped to 300000; the rest of the "hooks" block stays in force`;

    const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    expect(ran.stderr).toContain(`warning: ${warning}`);
    expect(receiver.requests("/capped")).toHaveLength(1);

    const policy = await runBin(["policy", "get", "--team-dir", team.teamDir]);
    expect(policy.stdout).toMatch(/failure action\s+reopen\s+config\.json hooks\.failureAction/);
    const shown = await runBin(["config", "--team-dir", team.teamDir, "--json"]);
    const view = JSON.parse(shown.stdout) as { problems: Array<{ kind: string; path: string; message: string }> };
    expect(view.problems).toContainEqual({
      kind: "setting_capped",
      path: "hooks.handlers.0.timeoutMs",
      message: warning,
    });

    // A value that is no whole number is a mistake, not a request: the block is refused, as for the limits.
    await writeFile(config, `${JSON.stringify({ hooks: { handlers: [{ ...handler, timeoutMs: "lots" }] } })}\n`);
    const bad = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(bad.stderr).toContain("hooks.handlers.0.timeoutMs");
    expect(bad.stderr).toContain("refused whole");
  });
});
