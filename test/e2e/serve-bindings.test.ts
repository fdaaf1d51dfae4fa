/**
 * The binding API of a real `pi-teams-hooks serve` on 127.0.0.1 (`GET/POST/DELETE
 * /api/v1/teams/{team}/bindings`, a `gates:admin` key), with the built CLI and a real receiver: a
 * binding names a handler, its events and settings; added over HTTP it is trusted content, so its
 * events wait for the lead's `trust` as a gate edit's do; `config` and `GET …/gates` show it beside
 * the files; removed once trusted, it is missing until the lead approves that too.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, runBin } from "../helpers/leader-rig.js";
import { type Receiver, startReceiver } from "../helpers/http-receiver.js";
import { type ServeProcess, api, codeOf, createKey, makeTeamsRoot, startServe } from "../helpers/serve-rig.js";
import { makeTask } from "../helpers/temp-team.js";

let root: string;
let cleanup: () => Promise<void>;
let serve: ServeProcess;
let receiver: Receiver;
let admin: string;
let reader: string;
const ROUTE = "/api/v1/teams/alpha/bindings";

beforeAll(async () => {
  await ensureBuilt();
  receiver = await startReceiver();
  receiver.route("/bind-ci", (_req, res) =>
    res.writeHead(200, { "content-type": "application/json" }).end('{"decision":"allow"}'),
  );
  ({ root, cleanup } = await makeTeamsRoot({ alpha: {} }));
  await mkdir(path.join(root, "_hooks"), { recursive: true });
  const ci = { name: "ci", events: ["task_completed"], url: `${receiver.url}/bind-ci` };
  await writeFile(path.join(root, "_hooks", "handlers.json"), `${JSON.stringify({ handlers: [ci] })}\n`);
  await mkdir(path.join(root, "alpha", "tasks", "alpha"), { recursive: true });
  const task = makeTask({ id: "1", owner: "alice", status: "completed" });
  await writeFile(path.join(root, "alpha", "tasks", "alpha", "1.json"), `${JSON.stringify(task)}\n`);
  admin = await createKey(root, ["--name", "admin", "--scopes", "gates:admin", "--teams", "alpha"]);
  reader = await createKey(root, ["--name", "reader", "--scopes", "gates:read", "--teams", "alpha"]);
  serve = await startServe(root);
}, 240_000);

afterAll(async () => {
  if (serve) expect(await serve.stop()).toMatchObject({ code: 0, signal: null });
  await receiver?.close();
  await cleanup?.();
});

const teamDir = () => path.join(root, "alpha");
const run = () => runBin(["run", "task_completed", "--team-dir", teamDir(), "--task", "1"]);

describe("the binding API", () => {
  it("a binding added over HTTP waits for the lead's approval; config and /gates show it; removed, it is missing", async () => {
    expect((await runBin(["trust", "--team-dir", teamDir(), "--all", "--yes"])).code).toBe(0);
    expect(await api(serve.url, "GET", ROUTE, { key: admin })).toMatchObject({
      status: 200,
      json: { team: "alpha", bindings: [] },
    });
    expect(codeOf(await api(serve.url, "GET", ROUTE, { key: reader }))).toBe("scope_not_allowed");

    const body = { name: "ci-slow", handler: "ci", events: ["task_completed"], settings: { timeoutMs: 5000 } };
    const added = await api(serve.url, "POST", ROUTE, { key: admin, body });
    expect(added).toMatchObject({ status: 202, json: { gate: "http:ci-slow", trust: "new" } });
    expect(codeOf(await api(serve.url, "POST", ROUTE, { key: admin, body }))).toBe("binding_exists");
    const bad = await api(serve.url, "POST", ROUTE, { key: admin, body: { name: "x", handler: "nope", events: [] } });
    expect(bad.status).toBe(400);
    expect((bad.json.error as { problems: unknown[] }).problems).toEqual([
      { kind: "request_field", path: "events", message: expect.stringMatching(/^events: /) },
    ]);
    const unknown = await api(serve.url, "POST", ROUTE, {
      key: admin,
      body: { name: "x", handler: "nope", events: ["idle"] },
    });
    expect((unknown.json.error as { problems: unknown[] }).problems).toEqual([
      { kind: "request_field", path: "handler", message: expect.stringContaining("names no handler (handlers: ci)") },
    ]);

    // Shown beside the files, new: not ready until the lead approves it.
    const listed = await api(serve.url, "GET", ROUTE, { key: admin });
    expect(listed.json.bindings).toEqual([
      expect.objectContaining({
        name: "ci-slow",
        gate: "http:ci-slow",
        handler: "ci",
        events: ["task_completed"],
        settings: { timeoutMs: 5000 },
        createdBy: "api:admin",
        trust: "new",
        ready: false,
      }),
    ]);
    const gates = await api(serve.url, "GET", "/api/v1/teams/alpha/gates", { key: reader });
    expect((gates.json.bindings as { bindings: unknown[] }).bindings).toEqual([
      expect.objectContaining({ gate: "http:ci-slow", trust: "new" }),
    ]);
    const config = JSON.parse((await runBin(["config", "--team-dir", teamDir(), "--json"])).stdout) as {
      bindings: { bindings: Array<{ gate: string; trust: string }> };
      events: { task_completed: { gates: Array<{ name: string; trust: string }> } };
    };
    expect(config.bindings.bindings).toEqual([expect.objectContaining({ gate: "http:ci-slow", trust: "new" })]);
    expect(config.events.task_completed.gates.map((g) => [g.name, g.trust])).toEqual([
      ["http:ci", "trusted"],
      ["http:ci-slow", "new"],
    ]);

    // Held until the lead approves it: nothing is sent.
    const held = await run();
    expect(held.code).not.toBe(0);
    expect(held.stdout + held.stderr).toContain("untrusted_hook");
    expect(receiver.requests("/bind-ci")).toHaveLength(0);
    const trust = await runBin(["trust", "--team-dir", teamDir(), "http:ci-slow", "--yes"]);
    expect(trust.code, trust.stderr).toBe(0);
    expect((await run()).code).toBe(0);
    expect(receiver.requests("/bind-ci")).toHaveLength(2); // http:ci, then the binding

    // Removed: a trusted binding gone is missing until the lead approves the removal.
    expect(await api(serve.url, "DELETE", `${ROUTE}/ci-slow`, { key: admin })).toMatchObject({
      status: 200,
      json: { removed: true },
    });
    expect(codeOf(await api(serve.url, "DELETE", `${ROUTE}/ci-slow`, { key: admin }))).toBe("binding_not_found");
    const missing = await run();
    expect(missing.code).not.toBe(0);
    expect(missing.stdout + missing.stderr).toContain("gate_missing");
    expect(serve.stdout() + serve.stderr()).toContain(
      'binding http:ci-slow (handler ci; task_completed) added by key "admin"',
    );
  });
});
