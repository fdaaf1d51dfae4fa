/**
 * `hooks.handlers[].enabled: false` under a real leader, through the built bin: a handler switched off
 * is skipped with the reason in the log (no request goes out), switching it off and on again needs no
 * approval (its trusted hash does not cover `enabled`), while any other change to it still does;
 * `doctor`, `config` and the watch banner say it is off. A string for the boolean refuses the block.
 */
import { readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { readLogs, runBin, useLeaderRig, type LeaderProcess } from "../helpers/leader-rig.js";
import { startReceiver, type Receiver } from "../helpers/http-receiver.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

const working = (id: string) => makeTask({ id, owner: "alice", status: "in_progress" });
const allow = (_req: unknown, res: import("node:http").ServerResponse): void =>
  void res.writeHead(200, { "content-type": "application/json" }).end('{"decision":"allow"}');
const REASON = "disabled: config.json hooks.handlers[0].enabled is false";

async function setHandlers(team: TempTeam, handlers: unknown[]): Promise<void> {
  const file = path.join(team.teamDir, "config.json");
  const config = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;
  const tmp = `${file}.tmp.${process.pid}`;
  await writeFile(tmp, `${JSON.stringify({ ...config, hooks: { handlers } }, null, 2)}\n`);
  // Atomically, as the team's tools write it: the leader never reads half a file.
  await rename(tmp, file);
}

/** Writes the handlers and waits until the leader has taken them in (one more valid `config` line). */
async function reload(leader: LeaderProcess, team: TempTeam, handlers: unknown[]): Promise<void> {
  const valid = (): number => leader.linesOf("config").filter((line) => line.valid === true).length;
  const before = valid();
  await setHandlers(team, handlers);
  await leader.waitFor("the config reload", () => valid() > before);
}

describe("a handler switched off", () => {
  it("is skipped and logged, needs no approval to switch off or on; any other change still needs one", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    receiver.route("/enabled-ci", allow);
    const ci = { name: "ci", events: ["task_completed"], url: `${receiver.url}/enabled-ci` };
    const tasks = ["1", "2", "3", "4"].map(working);
    const team = await rig.team({ tasks, config: { hooks: { handlers: [ci] } } });
    const leader = await rig.leader(team);

    // On: it runs.
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await leader.waitForEvents(1);
    expect(receiver.requests("/enabled-ci")).toHaveLength(1);

    // Off: skipped, said in the log, the event not held, no request sent.
    await reload(leader, team, [{ ...ci, enabled: false }]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
    const [second] = await leader.waitForEvents(1, (e) => e.taskId === "2");
    const summary = `no gate in force: http:ci skipped (${REASON})`;
    expect(second).toMatchObject({ outcome: "passed", noGateInForce: true, summary });
    expect(second?.held).toBeFalsy();
    expect(receiver.requests("/enabled-ci")).toHaveLength(1);
    const logs = await readLogs(team.teamDir);
    const skipped = logs.find((l) => l.invocation.completedTask?.id === "2");
    expect(skipped?.result).toMatchObject({ ran: false, hookPath: "http:ci", skipped: REASON });

    const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(doctor.stdout).toContain("http:ci: disabled (hooks.handlers[].enabled: false): skipped at every event");
    const config = await runBin(["config", "--team-dir", team.teamDir, "--json"]);
    type View = { events: { task_completed: { gates: Array<Record<string, unknown>> } } };
    const gate = (JSON.parse(config.stdout) as View).events.task_completed.gates[0];
    expect(gate).toMatchObject({ name: "http:ci", enabled: false, trust: "trusted" });

    // On again: no approval, it runs.
    await reload(leader, team, [{ ...ci, enabled: true }]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["3"] });
    const [third] = await leader.waitForEvents(1, (e) => e.taskId === "3");
    expect(third).toMatchObject({ outcome: "passed", hook: "http:ci" });
    expect(receiver.requests("/enabled-ci")).toHaveLength(2);

    // Another change (its timeout) is a changed gate: held until approved, as before.
    await reload(leader, team, [{ ...ci, timeoutMs: 20_000 }]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["4"] });
    const [fourth] = await leader.waitForEvents(1, (e) => e.taskId === "4");
    expect(fourth).toMatchObject({ outcome: "error", held: "approval" });
    expect(fourth?.summary).toContain("untrusted_hook");
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("the watch banner says it is off; a string for enabled refuses the block, naming the field", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const ci = { name: "ci", events: ["task_completed"], url: `${receiver.url}/enabled-banner`, enabled: false };
    const team = await rig.team({ tasks: [working("1")], config: { hooks: { handlers: [ci] } } });
    const leader = await rig.leader(team);
    const line = { type: "handler", name: "http:ci", events: ["task_completed"], url: ci.url, enabled: false };
    expect(leader.linesOf("handler")).toEqual([line]);
    expect(await leader.stop()).toMatchObject({ code: 0 });

    const bad = await rig.team({
      config: { hooks: { failureAction: "reopen", handlers: [{ ...ci, enabled: "no" }] } },
    });
    const policy = await runBin(["policy", "get", "--team-dir", bad.teamDir, "--json"]);
    type Report = { block: { valid: boolean; problems: string[] }; policy: { failureAction: string } };
    const report = JSON.parse(policy.stdout) as Report;
    expect(report.block.valid).toBe(false);
    const said = "hooks.handlers.0.enabled: Invalid input: expected boolean, received string";
    expect(report.block.problems.join("\n")).toContain(said);
    expect(report.policy.failureAction).toBe("warn");
  });
});
