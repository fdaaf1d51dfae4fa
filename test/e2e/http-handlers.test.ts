/**
 * HTTP handlers through the built binary: a real `pi-teams-hooks watch` posting to a real receiver on
 * 127.0.0.1 (one node:http server in this test process). The first start trusts the handlers; a
 * request carries a signature the receiver verifies; two events share one kept-alive connection; a
 * secret variable that is not set is said once; a changed handler definition is a changed gate until
 * `trust` records it, and a removed one is missing; a hanging receiver is bounded by the handler's
 * timeout at a stop, and a second signal ends it at once; `run`, `doctor` and `logs show` say what
 * happened, never a secret value.
 */
import { execFile } from "node:child_process";
import { createHmac } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, it } from "vitest";
import {
  REPO_ROOT,
  UNTIL_RELEASED,
  readLogs,
  runBin,
  stopThenRelease,
  useLeaderRig,
  type LeaderProcess,
} from "../helpers/leader-rig.js";
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

const TOKEN = "tok-9f8e7d6c5b4a";
const HMAC_KEY = "hmac-3c2b1a";
const working = (id: string) => makeTask({ id, owner: "alice", status: "in_progress" });
const allow = (_req: unknown, res: import("node:http").ServerResponse): void =>
  void res.writeHead(200, { "content-type": "application/json" }).end('{"decision":"allow"}');

function handler(name: string, route: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, events: ["task_completed"], url: `${receiver.url}${route}`, ...over };
}

async function setHandlers(team: TempTeam, handlers: unknown[]): Promise<void> {
  const file = path.join(team.teamDir, "config.json");
  const config = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;
  await writeFile(file, `${JSON.stringify({ ...config, hooks: { handlers } }, null, 2)}\n`);
}

/**
 * Waits until the leader has taken in a config.json written after `validBefore` valid `config` lines.
 * setHandlers writes in place (truncate, then write), as many editors do, so the leader may first read
 * the empty file: it says so in a `valid: false` line and keeps the block in force; the valid line
 * after it is the reload that counts.
 */
async function reloaded(leader: LeaderProcess, validBefore: number): Promise<void> {
  await leader.waitFor("the config reload", () => {
    const lines = leader.linesOf("config");
    return lines.filter((line) => line.valid === true).length > validBefore && lines.at(-1)?.valid === true;
  });
}

describe.concurrent("HTTP handlers in the leader", () => {
  it("trusted on first use, signed, kept alive across events, a missing secret said once, logs show the exchange", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    receiver.route("/e2e-ci", allow);
    receiver.route("/e2e-audit", (_req, res) => res.writeHead(204).end());
    const ci = handler("ci", "/e2e-ci", {
      headers: { "X-Team": "alpha" },
      secretHeaders: { Authorization: "CI_GATE_TOKEN" },
      signingSecretEnv: "CI_GATE_HMAC",
    });
    const audit = handler("audit", "/e2e-audit", { secretHeaders: { "X-Api-Key": "AUDIT_KEY" } });
    const team = await rig.team({
      tasks: [working("1"), working("2")],
      config: { hooks: { handlers: [ci, audit] } },
    });
    const leader = await rig.leader(team, ["--reconcile-ms", "200"], {
      env: { CI_GATE_TOKEN: `Bearer ${TOKEN}`, CI_GATE_HMAC: HMAC_KEY },
    });
    expect(leader.linesOf("handler")).toEqual([
      { type: "handler", name: "http:ci", events: ["task_completed"], url: `${receiver.url}/e2e-ci` },
      { type: "handler", name: "http:audit", events: ["task_completed"], url: `${receiver.url}/e2e-audit` },
    ]);
    expect(leader.linesOf("info").map((l) => l.message)).toEqual([
      expect.stringMatching(/^sandbox: gates run sandboxed /),
      expect.stringMatching(/^trusted 2 gate\(s\) on first use .*: http:ci, http:audit;/),
    ]);
    const record = JSON.parse(await readFile(path.join(team.teamDir, "hook-state", "trust.json"), "utf8")) as {
      gates: Record<string, { sha256: string; mode: number; events?: string[] }>;
    };
    expect(record.gates["http:ci"]).toMatchObject({ mode: 0, events: ["task_completed"] });

    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await leader.waitForEvents(1);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
    const events = await leader.waitForEvents(2);
    expect(events.map((e) => [e.taskId, e.hook, e.outcome])).toEqual([
      ["1", "http:audit", "passed"],
      ["2", "http:audit", "passed"],
    ]);

    const sent = receiver.requests("/e2e-ci");
    expect(sent).toHaveLength(2);
    expect(sent[0]?.connection).toBe(sent[1]?.connection); // one connection for both events
    for (const got of sent) {
      expect(got.headers.authorization).toBe(`Bearer ${TOKEN}`);
      expect(got.headers["x-pi-teams-signature"]).toBe(
        `sha256=${createHmac("sha256", HMAC_KEY).update(got.body).digest("hex")}`,
      );
      expect(JSON.parse(got.body.toString("utf8"))).toMatchObject({
        version: 1,
        event: "task_completed",
        team: { dir: team.teamDir },
      });
    }
    expect(receiver.requests("/e2e-audit").map((r) => r.headers["x-api-key"])).toEqual([undefined, undefined]);
    const warned = leader.warnings().filter((w) => w.includes("AUDIT_KEY"));
    expect(warned).toEqual([
      "warning: handler http:audit: environment variable AUDIT_KEY is not set: header X-Api-Key left out; the receiver may refuse the request (set AUDIT_KEY in the leader's environment)",
    ]);

    const logs = await readLogs(team.teamDir);
    expect(logs).toHaveLength(4);
    const ciLog = logs.find((l) => l.result.hookPath === "http:ci");
    expect(ciLog?.result).toMatchObject({
      outcome: "passed",
      http: { status: 200, body: "verdict", signed: true },
      verdict: { decision: "allow", source: "http" },
    });
    expect(ciLog?.result.hookSha256).toBe(record.gates["http:ci"]?.sha256);
    const shown = await runBin(["logs", "show", path.basename(ciLog?.file ?? ""), "--team-dir", team.teamDir]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`command:      POST ${receiver.url}/e2e-ci`);
    expect(shown.stdout).toContain("answer:       HTTP 200 OK, body: a verdict; signed");
    expect(shown.stdout).toContain('response body (1 line):\n  │ {"decision":"allow"}');
    for (const text of [JSON.stringify(logs), shown.stdout, leader.stdout, leader.stderr]) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(HMAC_KEY);
    }
  });

  it("a changed handler definition is a changed gate until `trust` records it; one no longer declared is missing", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    receiver.route("/e2e-trust", allow);
    const before = handler("ci", "/e2e-trust");
    const team = await rig.team({
      tasks: [working("1"), working("2"), working("3")],
      config: { hooks: { handlers: [before] } },
    });
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);

    // "Let my work through": the definition changes (here a header; a new url would be the same).
    await setHandlers(team, [{ ...before, headers: { "X-Skip-Tests": "1" } }]);
    await reloaded(leader, 0);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [refused] = await leader.waitForEvents(1);
    expect(refused).toMatchObject({ taskId: "1", hook: "http:ci", outcome: "error" });
    expect(refused?.summary).toMatch(
      /^held: waiting for the team lead: untrusted_hook: handler http:ci changed since it was trusted \(its definition in config\.json hooks\.handlers: sha256 /,
    );
    expect(receiver.requests("/e2e-trust")).toEqual([]); // never sent
    expect(leader.warnings().filter((w) => w.includes("gate http:ci changed since it was trusted"))).toHaveLength(1);

    const shown = await runBin(["trust", "--team-dir", team.teamDir]);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toContain("changed  http:ci (task_completed): sha256 ");
    expect(shown.stdout).toMatch(/\n\s+\+ {2}"headers": \{\n\s+\+ {4}"X-Skip-Tests": "1"\n\s+\+ {2}\},/);
    const approved = await runBin(["trust", "--team-dir", team.teamDir, "http:ci", "--yes"]);
    expect(approved.code, approved.stderr).toBe(0);
    // The approval runs the held event (task 1) once; a new completion runs as any other.
    const released = await leader.waitForEvents(2);
    expect(released[1]).toMatchObject({ taskId: "1", outcome: "passed", retry: true });
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
    const second = await leader.waitForEvents(3);
    expect(second[2]).toMatchObject({ taskId: "2", outcome: "passed" });
    expect(receiver.requests("/e2e-trust")).toHaveLength(2);

    const validSoFar = leader.linesOf("config").filter((line) => line.valid === true).length;
    await setHandlers(team, []);
    await reloaded(leader, validSoFar);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["3"] });
    const third = await leader.waitForEvents(4);
    expect(third[3]).toMatchObject({ taskId: "3", hook: "http:ci", outcome: "error", held: "approval" });
    expect(third[3]?.summary).toMatch(
      /^held: waiting for the team lead: gate_missing: trusted handler http:ci no longer runs: not declared for task_completed in config\.json hooks\.handlers/,
    );
    const removed = await runBin(["trust", "--team-dir", team.teamDir, "--all", "--yes"]);
    expect(removed.stdout).toContain("removed  http:ci (task_completed): not declared for task_completed");
    const record = JSON.parse(await readFile(path.join(team.teamDir, "hook-state", "trust.json"), "utf8")) as {
      gates: Record<string, unknown>;
    };
    expect(record.gates).toEqual({});
  });

  it("a hanging receiver: a stop waits at most the handler's timeout; a second signal ends the request at once", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    receiver.route("/e2e-hang", () => undefined);
    const team = await rig.team({
      tasks: [working("1")],
      config: { hooks: { handlers: [handler("slow", "/e2e-hang", { timeoutMs: 1_000 })] } },
    });
    const leader = await rig.leader(team);
    const arrived = receiver.nextRequest("/e2e-hang");
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await arrived;
    const stopped = await leader.stop("SIGTERM");
    expect(stopped).toMatchObject({ code: 0, signal: null });
    expect(stopped.ms).toBeLessThan(1_000 + 5_000);
    expect(leader.events()).toEqual([
      expect.objectContaining({ taskId: "1", hook: "http:slow", outcome: "error", timedOut: true }),
    ]);
    const [log] = await readLogs(team.teamDir);
    expect(log?.result).toMatchObject({ errorKind: "http", timedOut: true, http: { status: null } });

    const patient = await rig.team({
      tasks: [working("1")],
      config: { hooks: { handlers: [handler("slow", "/e2e-hang", { timeoutMs: 60_000 })] } },
    });
    const second = await rig.leader(patient);
    const again = receiver.nextRequest("/e2e-hang");
    await rig.worker("complete", { tasksDir: patient.tasksDir, ids: ["1"] });
    await again;
    const began = performance.now();
    // Two different signals, so that the second cannot merge into the first while it is pending.
    second.signal("SIGINT");
    second.signal("SIGTERM");
    expect(await second.exited).toEqual({ code: 130, signal: null });
    expect(performance.now() - began).toBeLessThan(5_000);
  });

  it("a stop while a file hook runs before a handler: the handler is never asked (no wait for its timeout), the event stays open and runs again at the next start", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    receiver.route("/e2e-after-stop", allow);
    const team = await rig.team({
      tasks: [working("1")],
      config: { hooks: { handlers: [handler("late", "/e2e-after-stop", { timeoutMs: 60_000 })] } },
    });
    const marker = path.join(team.teamDir, "file-hook-started");
    // The file hook runs until the test releases it, once the signal is sent.
    await rig.hook(team, "on_task_completed.sh", `echo "$PI_TEAMS_HOOK_ATTEMPT" >> "${marker}"\n${UNTIL_RELEASED}`);
    const leader = await rig.leader(team);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await leader.waitFor("the file hook to start", () => readFile(marker, "utf8").catch(() => null));
    const stopped = await stopThenRelease(leader, "SIGTERM");
    expect(stopped).toMatchObject({ code: 0, signal: null });
    expect(stopped.ms).toBeLessThan(10_000); // the file hook's end, not the handler's minute
    expect(receiver.requests("/e2e-after-stop")).toEqual([]);
    expect(leader.events()).toEqual([]);
    expect(leader.warnings()).toEqual([
      expect.stringMatching(
        /^warning: task_completed:1:.*: the leader is stopping: http:late \(hook 2 of 2\) and the hooks after it did not start; the event stays open: the next start runs its gate again$/,
      ),
    ]);
    expect(await readLogs(team.teamDir)).toEqual([]);

    const next = await rig.leader(team);
    const [event] = await next.waitForEvents(1);
    expect(event).toMatchObject({ taskId: "1", hook: "http:late", outcome: "passed", retry: true });
    expect(receiver.requests("/e2e-after-stop").map((r) => r.headers["x-pi-teams-hook-attempt"])).toEqual(["2"]);
    expect((await readFile(marker, "utf8")).split("\n").filter(Boolean)).toEqual(["1", "2"]);
  });
});

describe("HTTP handlers by hand", () => {
  it("the leader's code loads no HTTP client until a handler's first request", async ({ expect }) => {
    receiver.route("/e2e-lazy", allow);
    const script = `
      const loaded = (m) => process.moduleLoadList.includes("NativeModule " + m);
      await import(${JSON.stringify(path.join(REPO_ROOT, "dist/teams-hooks/cli/main.js"))});
      await import(${JSON.stringify(path.join(REPO_ROOT, "dist/teams-hooks/leader/leader.js"))});
      const before = ["http", "https", "undici"].filter(loaded);
      const { runHandler } = await import(${JSON.stringify(path.join(REPO_ROOT, "dist/teams-hooks/runner/http.js"))});
      const invocation = {
        event: "idle", teamId: "t", teamDir: "/tmp/t", taskListId: "t", style: "normal", completedTask: null,
      };
      const url = ${JSON.stringify(`${receiver.url}/e2e-lazy`)};
      const handler = { name: "lazy", events: ["idle"], url, timeoutMs: 5000 };
      const result = await runHandler(handler, invocation, { timeoutMs: 5000, env: {} });
      const after = ["http", "https", "undici"].filter(loaded);
      console.log(JSON.stringify({ before, after, outcome: result.outcome }));
    `;
    // Not execFileSync: the receiver answers from this process's event loop.
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], {
      encoding: "utf8",
    });
    expect(JSON.parse(stdout)).toEqual({ before: [], after: ["http"], outcome: "passed" });
  });

  it("`run` fires one, warns about a missing secret, exits without waiting on the kept-alive connection; `doctor` shows each handler", async ({
    expect,
  }) => {
    const rig = outerRig;
    receiver.route("/e2e-run", (_req, res) => {
      res.statusMessage = "Service Unavailable";
      res.writeHead(503, { "content-type": "text/plain" }).end("pipeline paused by ops\n");
    });
    const ci = handler("ci", "/e2e-run", {
      secretHeaders: { Authorization: "CI_GATE_TOKEN" },
      signingSecretEnv: "CI_GATE_HMAC",
    });
    const team = await rig.team({
      tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })],
      config: { hooks: { handlers: [ci] } },
    });
    const env = { CI_GATE_TOKEN: `Bearer ${TOKEN}` };
    const began = performance.now();
    const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"], { env });
    const ms = performance.now() - began;
    expect(ran.code).toBe(1);
    expect(ran.stdout).toMatch(
      /^task_completed #1 http:ci error in [\d.]+m?s: HTTP 503 Service Unavailable: pipeline paused by ops \(run [0-9a-f]{8}\)\n$/,
    );
    expect(ran.stderr).toContain(
      "warning: handler http:ci: environment variable CI_GATE_HMAC is not set: requests unsigned (no X-Pi-Teams-Signature)",
    );
    // An idle kept-alive socket is unref'd: the command ends well before the agent's 4 s idle timeout.
    expect(ms).toBeLessThan(3_500);

    const doctor = await runBin(["doctor", "--team-dir", team.teamDir], { env });
    expect(doctor.stdout).toContain(`1. team   http:ci  POST ${receiver.url}/e2e-run`);
    expect(doctor.stdout).toContain(
      `http:ci: POST ${receiver.url}/e2e-run; timeout 10000ms; secret Authorization from CI_GATE_TOKEN (set); signed with CI_GATE_HMAC (NOT SET)`,
    );
    expect(doctor.stdout).toContain(
      "http:ci: signingSecretEnv CI_GATE_HMAC is not set in this environment: requests go out unsigned",
    );
    expect(doctor.stdout).toContain("http:ci: trusted when the leader first starts (no trust record yet)");
    const json = await runBin(["doctor", "--team-dir", team.teamDir, "--json"], { env });
    const report = JSON.parse(json.stdout) as {
      hooks: Array<{ event: string; chain: { hooks: Array<{ handler?: unknown }> } }>;
    };
    expect(report.hooks.find((e) => e.event === "task_completed")?.chain.hooks[0]?.handler).toEqual({
      url: `${receiver.url}/e2e-run`,
      method: "POST",
      template: false,
      answer: "verdict",
      timeoutMs: 10_000,
      headers: [],
      secretHeaders: [{ header: "Authorization", variable: "CI_GATE_TOKEN", set: true }],
      bodySecrets: [],
      signing: { variable: "CI_GATE_HMAC", set: false },
      trust: "no_record",
      enabled: true,
    });
    for (const text of [ran.stdout, ran.stderr, doctor.stdout, json.stdout]) expect(text).not.toContain(TOKEN);
  });
});
