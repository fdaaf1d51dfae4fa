/**
 * HTTP handlers declared once for a teams root (`<teams root>/_hooks/handlers.json`, beside the
 * global gates), through the built bin against a real receiver on 127.0.0.1: every team of the root
 * runs them, before its own handlers; `config` shows their layer; they are trusted per team like the
 * global files (a change holds until `trust`); a team handler of the same name replaces one; a file
 * that cannot be used is said, and its handlers do not run.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { type Receiver, startReceiver } from "../helpers/http-receiver.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

const allow = (_req: unknown, res: import("node:http").ServerResponse): void =>
  void res.writeHead(200, { "content-type": "application/json" }).end('{"decision":"allow"}');
const done = makeTask({ id: "1", owner: "alice", status: "completed" });

function handler(name: string, route: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, events: ["task_completed"], url: `${receiver.url}${route}`, ...over };
}

async function writeGlobal(team: TempTeam, content: unknown): Promise<string> {
  const dir = path.join(team.teamsRoot, "_hooks");
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, "handlers.json");
  await writeFile(file, typeof content === "string" ? content : `${JSON.stringify(content, null, 2)}\n`);
  return file;
}

/** A second team in the same teams root, with one completed task and no handler of its own. */
async function sibling(team: TempTeam, name: string): Promise<string> {
  const dir = path.join(team.teamsRoot, name);
  await mkdir(path.join(dir, "tasks", name), { recursive: true });
  const config = { teamId: name, taskListId: name, leadName: "team-lead", members: [] };
  await writeFile(path.join(dir, "config.json"), `${JSON.stringify(config)}\n`);
  await writeFile(path.join(dir, "tasks", name, "1.json"), `${JSON.stringify(done)}\n`);
  return dir;
}

interface ConfigGate {
  name: string;
  layer: string;
  trust: string;
}
async function gatesOf(teamDir: string): Promise<ConfigGate[]> {
  const json = await runBin(["config", "--team-dir", teamDir, "--json"]);
  const view = JSON.parse(json.stdout) as { events: Record<string, { gates: ConfigGate[] }> };
  return (view.events.task_completed?.gates ?? []).map(({ name, layer, trust }) => ({ name, layer, trust }));
}

const run = (teamDir: string) => runBin(["run", "task_completed", "--team-dir", teamDir, "--task", "1"]);

describe.concurrent("handlers declared for the whole teams root", () => {
  it("every team runs them, before its own handlers; config shows each one's layer", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    receiver.route("/root-ci", allow);
    receiver.route("/root-review", allow);
    const team = await rig.team({
      tasks: [done],
      config: { hooks: { handlers: [handler("review", "/root-review")] } },
    });
    await writeGlobal(team, { handlers: [handler("ci", "/root-ci", { events: ["task_completed", "task_failed"] })] });
    const beta = await sibling(team, "beta");

    expect(await gatesOf(team.teamDir)).toEqual([
      { name: "http:ci", layer: "global", trust: "no_record" },
      { name: "http:review", layer: "team", trust: "no_record" },
    ]);
    expect(await gatesOf(beta)).toEqual([{ name: "http:ci", layer: "global", trust: "no_record" }]);
    const text = await runBin(["config", "--team-dir", team.teamDir]);
    expect(text.stdout).toMatch(/1\. http:ci +global http .*\n +2\. http:review +team +http /);

    const ran = await run(team.teamDir);
    expect(ran.code, ran.stderr).toBe(0);
    // The global handler first, then the team's: one after the other, in chain order.
    const order = receiver
      .requests()
      .filter((r) => r.path === "/root-ci" || r.path === "/root-review")
      .map((r) => r.path);
    expect(order).toEqual(["/root-ci", "/root-review"]);
    expect((await run(beta)).code).toBe(0);
    expect(receiver.requests("/root-ci")).toHaveLength(2);
    expect(receiver.requests("/root-review")).toHaveLength(1);
    const body = JSON.parse(receiver.requests("/root-ci")[1]?.body.toString("utf8") ?? "{}") as {
      team?: { dir?: string };
    };
    expect(body.team?.dir).toBe(beta);
  });

  it("trusted per team like a global gate: a change of handlers.json is held until trust records it", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    receiver.route("/trust-ci", allow);
    receiver.route("/trust-ci2", allow);
    const team = await rig.team({ tasks: [done], config: { hooks: {} } });
    await writeGlobal(team, { handlers: [handler("ci", "/trust-ci")] });
    expect((await runBin(["trust", "--team-dir", team.teamDir, "--all", "--yes"])).code).toBe(0);
    const record = JSON.parse(await readFile(path.join(team.teamDir, "hook-state", "trust.json"), "utf8")) as {
      gates: Record<string, unknown>;
    };
    expect(Object.keys(record.gates)).toEqual(["http:ci"]);
    expect((await run(team.teamDir)).code).toBe(0);
    expect(receiver.requests("/trust-ci")).toHaveLength(1);

    await writeGlobal(team, { handlers: [handler("ci", "/trust-ci2")] });
    expect(await gatesOf(team.teamDir)).toEqual([{ name: "http:ci", layer: "global", trust: "changed" }]);
    const held = await run(team.teamDir);
    expect(held.code).not.toBe(0);
    expect(held.stdout + held.stderr).toMatch(/untrusted_hook/);
    expect(receiver.requests("/trust-ci2")).toHaveLength(0);
    const shown = await runBin(["trust", "--team-dir", team.teamDir]);
    expect(shown.stdout).toContain("changed  http:ci (task_completed)");
    expect(shown.stdout).toContain(`+  "url": "${receiver.url}/trust-ci2"`);

    expect((await runBin(["trust", "--team-dir", team.teamDir, "http:ci", "--yes"])).code).toBe(0);
    expect((await run(team.teamDir)).code).toBe(0);
    expect(receiver.requests("/trust-ci2")).toHaveLength(1);
  });

  it("a team handler of the same name replaces the global one; enabled: false switches it off", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    receiver.route("/swap-global", allow);
    receiver.route("/swap-team", allow);
    const team = await rig.team({
      tasks: [done],
      config: { hooks: { handlers: [handler("CI", "/swap-team")] } },
    });
    await writeGlobal(team, { handlers: [handler("ci", "/swap-global")] });
    expect(await gatesOf(team.teamDir)).toEqual([{ name: "http:CI", layer: "team", trust: "no_record" }]);
    expect((await run(team.teamDir)).code).toBe(0);
    expect(receiver.requests("/swap-team")).toHaveLength(1);
    expect(receiver.requests("/swap-global")).toHaveLength(0);

    // The global handler switched off in its own file: skipped, and the log says where.
    const other = await rig.team({ tasks: [done], config: { hooks: {} } });
    const file = await writeGlobal(other, { handlers: [handler("ci", "/swap-global", { enabled: false })] });
    const ran = await run(other.teamDir);
    expect(ran.code).toBe(0);
    expect(ran.stdout).toContain(`disabled: ${file} handlers[0].enabled is false`);
    expect(receiver.requests("/swap-global")).toHaveLength(0);
  });

  it("a running leader trusts them on first use and runs them; a change of handlers.json is held without a restart", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    receiver.route("/watch-ci", allow);
    receiver.route("/watch-ci2", allow);
    const working = (id: string) => makeTask({ id, owner: "alice", status: "in_progress" });
    const team = await rig.team({ tasks: [working("1"), working("2")], config: { hooks: {} } });
    await writeGlobal(team, { handlers: [handler("ci", "/watch-ci")] });
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    expect(leader.linesOf("handler")).toEqual([
      { type: "handler", name: "http:ci", events: ["task_completed"], url: `${receiver.url}/watch-ci` },
    ]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [first] = await leader.waitForEvents(1);
    expect(first).toMatchObject({ taskId: "1", hook: "http:ci", outcome: "passed" });
    expect(receiver.requests("/watch-ci")).toHaveLength(1);

    await writeGlobal(team, { handlers: [handler("ci", "/watch-ci2")] });
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
    await leader.waitFor("the changed handler held", () =>
      leader.warnings().some((w) => w.includes("http:ci") && w.includes("changed since it was trusted")),
    );
    expect(receiver.requests("/watch-ci2")).toHaveLength(0);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("a handlers.json that cannot be used is said, naming the file and the field; its handlers do not run", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [done], config: { hooks: {} } });
    const file = await writeGlobal(team, { handlers: [{ name: "ci", url: "http://127.0.0.1:9/x" }] });
    const text = await runBin(["config", "--team-dir", team.teamDir]);
    expect(text.stdout).toContain(`${file}: handlers.0.events:`);
    expect(text.stdout).toContain("the file is refused whole: no global handler runs");
    expect(await gatesOf(team.teamDir)).toEqual([]);
    await writeGlobal(team, "{ not json");
    expect((await runBin(["config", "--team-dir", team.teamDir])).stdout).toContain(`${file}: invalid JSON`);
  });
});
