/**
 * A binding that names a gate file, end to end: a real `pi-teams-hooks serve` on 127.0.0.1 takes it
 * (`POST …/bindings` with a `gates:admin` key), a real leader (`watch`, the built CLI) on the same
 * team runs it at the binding's events as the gate `binding:<name>`. Trusted content: added, it holds
 * its events until the lead's `trust`; approved, it runs and its verdict applies (a denial reopens
 * the task); its file edited, it holds them again; deleted (and the removal approved), it no longer
 * runs. `config`, `config --json`, `GET …/gates` and the dashboard's overview show it beside the files; a
 * projection may name it.
 */
import { appendFile, mkdir, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { readLogs, readTaskFile, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { api, codeOf, createKey, startServe } from "../helpers/serve-rig.js";
import { makeTask, runs } from "../helpers/temp-team.js";

const rig = useLeaderRig();

/** The team alpha's config.json, with the hooks block given. */
function alphaConfig(hooks: Record<string, unknown>): Record<string, unknown> {
  return { version: 1, teamId: "alpha", taskListId: "alpha", leadName: "team-lead", members: [], hooks };
}
const RECONCILE_MS = 200;

/** Records that it ran, then denies. */
const DENIES = [
  "#!/usr/bin/env bash",
  'echo "review $PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"',
  'echo "FAIL: the review found a bug" >&2',
  "exit 1",
  "",
].join("\n");

describe("a binding naming a gate file", () => {
  it("waits for the lead's approval, then runs at its event and its denial applies; edited, it waits again; deleted, it no longer runs", async (context) => {
    const { expect } = context;
    const team = await rig.team({
      teamId: "alpha",
      config: alphaConfig({ failureAction: "reopen" }),
      tasks: ["1", "2", "3"].map((id) => makeTask({ id, owner: "alice", status: "in_progress" })),
    });
    const gate = path.join(team.teamDir, "hooks", "gates", "review.sh");
    await mkdir(path.dirname(gate), { recursive: true });
    await writeFile(gate, DENIES, { mode: 0o755 });
    const admin = await createKey(team.teamsRoot, [
      "--name",
      "admin",
      "--scopes",
      "gates:admin,gates:read",
      "--teams",
      "alpha",
    ]);
    const serve = await startServe(team.teamsRoot);
    context.onTestFinished(async () => void (await serve.stop()));
    // A first start trusts what is there: no gate yet.
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    const route = "/api/v1/teams/alpha/bindings";

    // Refused with the field at fault: no such file, a handler's setting, both a handler and a file.
    const missing = await api(serve.url, "POST", route, {
      key: admin,
      body: { name: "review", file: "gates/nope.sh", events: ["task_completed"] },
    });
    expect(missing.status).toBe(400);
    expect((missing.json.error as { problems: unknown[] }).problems).toEqual([
      { kind: "request_field", path: "file", message: expect.stringContaining("names no file gates/nope.sh in") },
    ]);
    const both = await api(serve.url, "POST", route, {
      key: admin,
      body: { name: "review", file: "gates/review.sh", handler: "ci", events: ["task_completed"] },
    });
    expect((both.json.error as { problems: Array<{ path: string }> }).problems.map((p) => p.path)).toEqual(["file"]);
    const outside = await api(serve.url, "POST", route, {
      key: admin,
      body: { name: "review", file: "../config.json", events: ["task_completed"] },
    });
    expect((outside.json.error as { problems: Array<{ path: string }> }).problems.map((p) => p.path)).toEqual(["file"]);

    const body = { name: "review", file: "gates/review.sh", events: ["task_completed"] };
    const added = await api(serve.url, "POST", route, { key: admin, body });
    expect(added).toMatchObject({ status: 202, json: { gate: "binding:review", trust: "new" } });
    expect(serve.stdout() + serve.stderr()).toContain(
      'binding binding:review (file gates/review.sh; task_completed) added by key "admin"',
    );

    // Shown beside the files: the binding's list, the readiness of /gates, `config --json`.
    const listed = await api(serve.url, "GET", route, { key: admin });
    expect(listed.json.bindings).toEqual([
      expect.objectContaining({
        gate: "binding:review",
        handler: null,
        file: "gates/review.sh",
        path: gate,
        trust: "new",
        ready: false,
      }),
    ]);
    const gates = await api(serve.url, "GET", "/api/v1/teams/alpha/gates", { key: admin });
    const completed = (gates.json.events as Record<string, { ready: boolean; gates: unknown[] }>).task_completed;
    expect(completed?.ready).toBe(false);
    expect(completed?.gates).toEqual([
      expect.objectContaining({ name: "binding:review", gate: "binding:review", kind: "binding", trust: "new" }),
    ]);
    // The dashboard's overview lists it among the gates waiting for the lead, as it lists a new gate file.
    const page = await (await fetch(`${serve.url}/`, { signal: AbortSignal.timeout(15_000) })).text();
    expect(page).toMatch(/<strong>Untrusted<\/strong> alpha: binding:review \(task_completed\) new, not yet approved/);
    const config = async () =>
      JSON.parse((await runBin(["config", "--team-dir", team.teamDir, "--json"])).stdout) as {
        events: { task_completed: { gates: Array<Record<string, unknown>> } };
      };
    expect((await config()).events.task_completed.gates).toEqual([
      expect.objectContaining({
        name: "binding:review",
        kind: "binding",
        path: "binding:review",
        file: gate,
        trust: "new",
      }),
    ]);
    const human = await runBin(["config", "--team-dir", team.teamDir]);
    expect(human.stdout).toMatch(/binding:review\s+team\s+binding/);
    expect(human.stdout).toContain(`binding:review  file ${gate}; task_completed, by api:admin  NEW`);

    // Held until the lead approves it: the gate does not run, the task is not reopened.
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [held] = await leader.waitForEvents(1);
    expect(held).toMatchObject({ taskId: "1", outcome: "error", held: "approval" });
    expect(held?.summary).toMatch(/^held: waiting for the team lead: untrusted_hook: binding:review \(/);
    expect(held?.summary).toContain(`pi-teams-hooks trust --team-dir ${team.teamDir} binding:review`);
    expect(await runs(team)).toEqual([]);
    expect((await readTaskFile(team, "1")).status).toBe("completed");

    // `trust` shows the binding's record and file; approving it runs the held event: the gate's denial reopens the task.
    const shown = await runBin(["trust", "--team-dir", team.teamDir]);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toContain("new      binding:review (task_completed)");
    expect(shown.stdout).toContain(`"path": "${gate}"`);
    const approved = await runBin(["trust", "--team-dir", team.teamDir, "binding:review", "--yes"]);
    expect(approved.code, approved.stderr).toBe(0);
    const [, ran] = await leader.waitForEvents(2);
    expect(ran).toMatchObject({ taskId: "1", outcome: "failed", actions: expect.arrayContaining(["reopened (1/3)"]) });
    expect(await runs(team)).toEqual(["review 1"]);
    const reopened = await readTaskFile(team, "1");
    expect(reopened.status).toBe("pending");
    expect(reopened.metadata).toMatchObject({ qualityGateStatus: "failed" });
    const logs = await readLogs(team.teamDir);
    expect(logs.at(-1)?.result).toMatchObject({ ran: true, hookPath: gate, exitCode: 1 });
    expect((await config()).events.task_completed.gates).toEqual([
      expect.objectContaining({ name: "binding:review", trust: "trusted" }),
    ]);

    // The file edited: held again, not run, until approved again.
    await appendFile(gate, "# a comment\n");
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
    const [, , again] = await leader.waitForEvents(3);
    expect(again).toMatchObject({ taskId: "2", outcome: "error", held: "approval" });
    expect(again?.summary).toContain("untrusted_hook: binding:review");
    expect(again?.summary).toContain("the binding or its file changed since it was trusted");
    expect(await runs(team)).toEqual(["review 1"]);
    expect((await api(serve.url, "GET", route, { key: admin })).json.bindings).toEqual([
      expect.objectContaining({ gate: "binding:review", trust: "changed", ready: false }),
    ]);
    expect((await runBin(["trust", "--team-dir", team.teamDir, "binding:review", "--yes"])).code).toBe(0);
    const [, , , rerun] = await leader.waitForEvents(4);
    expect(rerun).toMatchObject({ taskId: "2", outcome: "failed" });
    expect(await runs(team)).toEqual(["review 1", "review 2"]);

    // Its file gone: the binding cannot run, said by its gate name; a trusted gate that no longer runs (gate_missing).
    await rm(gate);
    const broken = await runBin(["config", "--team-dir", team.teamDir]);
    expect(broken.stdout).toContain("skipped binding:review (team): binding review: names no file gates/review.sh in");
    expect(broken.stdout).toMatch(/- binding:review\s+team\s+binding MISSING/);
    const readiness = await api(serve.url, "GET", "/api/v1/teams/alpha/gates", { key: admin });
    const skipped = (readiness.json.events as Record<string, { skipped: Array<{ name: string }> }>).task_completed;
    expect(skipped?.skipped.map((s) => s.name)).toEqual(["binding:review"]);
    const shownGone = await runBin(["trust", "--team-dir", team.teamDir]);
    expect(shownGone.code).toBe(1);
    expect(shownGone.stdout).toContain("removed  binding:review (task_completed): binding review: names no file");
    await writeFile(gate, DENIES, { mode: 0o755 });
    await appendFile(gate, "# a comment\n");

    // Deleted: a trusted binding gone holds its events until the lead approves the removal; then it no longer runs.
    expect(await api(serve.url, "DELETE", `${route}/review`, { key: admin })).toMatchObject({
      status: 200,
      json: { removed: true },
    });
    expect(codeOf(await api(serve.url, "DELETE", `${route}/review`, { key: admin }))).toBe("binding_not_found");
    const gone = await runBin(["trust", "--team-dir", team.teamDir, "binding:review", "--yes"]);
    expect(gone.code, gone.stderr).toBe(0);
    await leader.waitFor("the removal taken", () =>
      leader.warnings().some((w) => w.includes("trust record: binding:review removed")),
    );
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["3"] });
    const [, , , , last] = await leader.waitForEvents(5);
    expect(last).toMatchObject({ taskId: "3" });
    expect(last?.outcome).not.toBe("failed");
    expect(await runs(team)).toEqual(["review 1", "review 2"]);
    expect((await readTaskFile(team, "3")).status).toBe("completed");
    expect((await config()).events.task_completed.gates).toEqual([]);
  });
});

describe("a file binding of the global hooks dir", () => {
  it("is found there, a projection may name it (the gate is shown only the fields listed), and it can be switched off", async (context) => {
    const { expect } = context;
    const team = await rig.team({
      teamId: "alpha",
      config: alphaConfig({ projection: { "binding:seen": ["task.id", "task.status"] } }),
      tasks: [makeTask({ id: "1", owner: "alice", status: "completed", description: "the secret plan" })],
    });
    // In the global hooks dir: the team's has no file of that name.
    const gate = path.join(team.teamsRoot, "_hooks", "seen.sh");
    await mkdir(path.dirname(gate), { recursive: true });
    await writeFile(gate, "#!/usr/bin/env bash\ncat >&2\nexit 0\n", { mode: 0o755 });
    const bindings = { version: 1, bindings: [{ name: "seen", file: "seen.sh", events: ["task_completed"] }] };
    await mkdir(path.join(team.teamDir, "hook-state"), { recursive: true });
    await writeFile(path.join(team.teamDir, "hook-state", "bindings.json"), `${JSON.stringify(bindings)}\n`);
    const config = await runBin(["config", "--team-dir", team.teamDir, "--json"]);
    expect(config.code, config.stdout).toBe(0); // the projection's gate name is not refused
    expect(JSON.parse(config.stdout).bindings.bindings).toEqual([
      expect.objectContaining({ gate: "binding:seen", file: "seen.sh", path: gate, trust: "no_record" }),
    ]);
    expect((await runBin(["trust", "--team-dir", team.teamDir, "--all", "--yes"])).code).toBe(0);
    const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    expect(ran.stdout).toContain("binding:seen passed");
    // What it was given on stdin, as it said it back (its stderr, kept in the run's log): the fields it is not
    // given are blank (a v1 document keeps its shape).
    const log = (await readLogs(team.teamDir)).at(-1);
    const seen = JSON.parse(log?.result.stderr ?? "") as { task: Record<string, unknown> };
    expect(seen.task).toMatchObject({ id: "1", status: "completed", description: "" });
    expect(log?.shown).toMatchObject({ projection: ["task.id", "task.status"] });
    expect(JSON.stringify(seen)).not.toContain("the secret plan");

    // Switched off: skipped at every event, and logged; no approval needed (nor asked for once it is on again).
    const off = { version: 1, bindings: [{ ...bindings.bindings[0], settings: { enabled: false } }] };
    await writeFile(path.join(team.teamDir, "hook-state", "bindings.json"), `${JSON.stringify(off)}\n`);
    const shown = await runBin(["config", "--team-dir", team.teamDir]);
    expect(shown.stdout).toContain("disabled: skipped at every event (the binding's settings.enabled: false");
    expect(shown.stdout).not.toContain("CHANGED");
    const skipped = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(skipped.code, skipped.stdout + skipped.stderr).toBe(0);
    expect((await readLogs(team.teamDir)).at(-1)?.result.skipped).toBe(
      "disabled: binding seen (its settings.enabled is false)",
    );
  });
  it("naming a file its event's chain runs already, it runs once there, as the file; at its other events it runs", async (context) => {
    const { expect } = context;
    const team = await rig.team({
      teamId: "alpha",
      tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })],
    });
    const gate = path.join(team.teamDir, "hooks", "on_task_completed.d", "10-review.sh");
    await mkdir(path.dirname(gate), { recursive: true });
    await writeFile(gate, DENIES, { mode: 0o755 });
    const bindings = {
      version: 1,
      bindings: [
        { name: "twice", file: "on_task_completed.d/10-review.sh", events: ["task_completed", "task_failed"] },
      ],
    };
    await mkdir(path.join(team.teamDir, "hook-state"), { recursive: true });
    await writeFile(path.join(team.teamDir, "hook-state", "bindings.json"), `${JSON.stringify(bindings)}\n`);
    const config = JSON.parse((await runBin(["config", "--team-dir", team.teamDir, "--json"])).stdout) as {
      events: Record<string, { gates: Array<{ name: string }>; skipped: Array<{ path: string; code: string }> }>;
    };
    expect(config.events.task_completed?.gates.map((g) => g.name)).toEqual(["on_task_completed.d/10-review.sh"]);
    expect(config.events.task_completed?.skipped).toContainEqual(
      expect.objectContaining({ path: "binding:twice", code: "runs_already" }),
    );
    expect(config.events.task_failed?.gates.map((g) => g.name)).toEqual(["binding:twice"]);
    expect((await runBin(["trust", "--team-dir", team.teamDir, "--all", "--yes"])).code).toBe(0);
    const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(ran.stdout, ran.stdout + ran.stderr).toMatch(/10-review\.sh failed/);
    expect(ran.stdout).not.toContain("binding:twice");
    // One run, of the file: the binding did not run it a second time.
    const logs = await readLogs(team.teamDir);
    expect(logs.map((l) => [path.basename(l.result.hookPath ?? ""), l.result.outcome])).toEqual([
      ["10-review.sh", "failed"],
    ]);
  });
  it("naming a file its chain runs through a link, it is the same file: it runs once, as the link's gate", async (context) => {
    const { expect } = context;
    const team = await rig.team({
      teamId: "alpha",
      tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })],
    });
    const gate = path.join(team.teamDir, "hooks", "gates", "review.sh");
    await mkdir(path.dirname(gate), { recursive: true });
    await writeFile(gate, DENIES, { mode: 0o755 });
    await mkdir(path.join(team.teamDir, "hooks", "on_task_completed.d"), { recursive: true });
    await symlink("../gates/review.sh", path.join(team.teamDir, "hooks", "on_task_completed.d", "20-review.sh"));
    const bindings = {
      version: 1,
      bindings: [{ name: "linked", file: "gates/review.sh", events: ["task_completed"] }],
    };
    await mkdir(path.join(team.teamDir, "hook-state"), { recursive: true });
    await writeFile(path.join(team.teamDir, "hook-state", "bindings.json"), `${JSON.stringify(bindings)}\n`);
    const config = JSON.parse((await runBin(["config", "--team-dir", team.teamDir, "--json"])).stdout) as {
      events: Record<string, { gates: Array<{ name: string }>; skipped: Array<{ path: string; code: string }> }>;
    };
    expect(config.events.task_completed?.gates.map((g) => g.name)).toEqual(["on_task_completed.d/20-review.sh"]);
    expect(config.events.task_completed?.skipped).toContainEqual(
      expect.objectContaining({ path: "binding:linked", code: "runs_already" }),
    );
  });
});
