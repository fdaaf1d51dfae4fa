/**
 * Required and optional gates under a real leader, through the built bin: a global gate whose settings
 * line says `required=false` is trusted as optional (the record says so), and a team that switches it
 * off through its own layer drops it without an approval — said once on the leader's output and in
 * the event's logs, `config` and `doctor` — while a required gate switched off the same way holds its
 * events as `gate_missing` until the lead approves.
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { readLogs, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const working = (id: string) => makeTask({ id, owner: "alice", status: "in_progress" });

describe("required and optional gates", () => {
  it("an optional global gate the team switches off is dropped: no approval; output, logs, config, doctor", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1"), working("2"), working("3")] });
    const nits = "# pi-teams-hooks: required=false\necho 'style: 3 nits' >&2\nexit 1";
    const optional = await rig.hook(team, "on_task_completed.sh", nits);
    await mkdir(path.join(team.teamsRoot, "_hooks", "on_task_completed.d"), { recursive: true });
    await rig.hook(team, "on_task_completed.d/10-tests.sh", "exit 0");
    const leader = await rig.leader(team);
    const trustJson = await readFile(path.join(team.teamDir, "hook-state", "trust.json"), "utf8");
    const record = JSON.parse(trustJson) as { gates: Record<string, Record<string, unknown>> };
    expect(record.gates[optional]).toMatchObject({ required: false });
    const tests = path.join(team.teamsRoot, "_hooks", "on_task_completed.d", "10-tests.sh");
    expect(record.gates[tests]?.required).toBeUndefined();

    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [first] = await leader.waitForEvents(1);
    expect(first).toMatchObject({ outcome: "failed", hook: "on_task_completed.sh" });

    // The team switches it off in its own layer.
    const marker = path.join(team.teamDir, "hooks", "on_task_completed.sh.disabled");
    await mkdir(path.dirname(marker), { recursive: true });
    await writeFile(marker, "");
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["3"] });
    const later = await leader.waitForEvents(2, (e) => e.taskId !== "1");
    for (const event of later) expect(event).toMatchObject({ outcome: "passed", hook: "10-tests.sh" });
    expect(later.some((e) => e.held)).toBe(false);
    const why = "it is optional (required=false in the trusted gate), so its events run without it; no approval needed";
    const said = `gate ${optional} dropped by the team (disabled by ${marker}): ${why}`;
    const dropped = leader.linesOf("info").filter((l) => String(l.message).includes("dropped by the team"));
    expect(dropped).toEqual([{ type: "info", message: said }]);
    expect(leader.warnings().join("\n")).not.toContain("gate_missing");

    const logs = await readLogs(team.teamDir);
    const ofTwo = logs.find((l) => l.invocation.completedTask?.id === "2");
    const detail = `dropped by the team: disabled by ${marker}`;
    expect(ofTwo?.result.droppedGates).toEqual([{ path: optional, detail }]);

    const configOut = (await runBin(["config", "--team-dir", team.teamDir, "--json"])).stdout;
    const config = JSON.parse(configOut) as { events: Record<string, { dropped: unknown[]; missing: unknown[] }> };
    const droppedView = [{ path: optional, detail: `disabled by ${marker}` }];
    expect(config.events.task_completed).toMatchObject({ dropped: droppedView, missing: [] });
    const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
    const line = `${optional}: dropped by the team (disabled by ${marker}): optional (required=false in the trusted gate)`;
    expect(doctor.stdout).toContain(line);
    // By hand, the same line on stderr, and the gate that is left decides.
    const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "2"]);
    expect(ran.code).toBe(0);
    expect(ran.stderr).toContain(said);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("a required gate switched off by the team holds its events as gate_missing until approved", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")] });
    const body = "# pi-teams-hooks: required=true timeout=30s\nexit 0";
    const required = await rig.hook(team, "on_task_completed.sh", body);
    const leader = await rig.leader(team);
    const marker = path.join(team.teamDir, "hooks", "on_task_completed.sh.disabled");
    await mkdir(path.dirname(marker), { recursive: true });
    await writeFile(marker, "");
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({ outcome: "error", held: "approval" });
    expect(event?.summary).toContain(`gate_missing: trusted gate ${required} no longer runs: disabled by ${marker}`);
    expect(leader.linesOf("info").some((l) => String(l.message).includes("dropped by the team"))).toBe(false);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("required: false written into trust.json by hand is no approval: said, written back, still required", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")] });
    const gate = await rig.hook(team, "on_task_completed.sh", "exit 0");
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    const file = path.join(team.teamDir, "hook-state", "trust.json");
    const approved = await readFile(file, "utf8");
    const record = JSON.parse(approved) as { gates: Record<string, Record<string, unknown>> };
    record.gates[gate] = { ...record.gates[gate], required: false };
    await writeFile(`${file}.tmp`, JSON.stringify(record));
    await rename(`${file}.tmp`, file);
    const edited = (w: string): boolean =>
      w.includes("trust.json was changed while the leader ran") && w.includes(gate);
    await leader.waitFor("the edit said", () => leader.warnings().some(edited));
    await leader.waitFor("trust.json written back", async () => (await readFile(file, "utf8")) === approved);
    const marker = path.join(team.teamDir, "hooks", "on_task_completed.sh.disabled");
    await mkdir(path.dirname(marker), { recursive: true });
    await writeFile(marker, "");
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({ outcome: "error", held: "approval" });
    expect(event?.summary).toContain("gate_missing");
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("a required gate made optional is a changed gate: required=… is in what trust hashes", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")] });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    const leader = await rig.leader(team);
    await rig.hook(team, "on_task_completed.sh", "# pi-teams-hooks: required=false\nexit 0");
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({ outcome: "error", held: "approval" });
    expect(event?.summary).toContain("untrusted_hook");
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
