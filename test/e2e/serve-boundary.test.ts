/**
 * The HTTP surfaces of a real `pi-teams-hooks serve` (a child process on 127.0.0.1) against what a
 * team member or a client can do, with real files and a real headless Chromium:
 * two `Host` headers, and a confidential team's task status.
 */
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { type IncomingMessage, type Server, createServer, request } from "node:http";
import { type AddressInfo, type Socket, connect } from "node:net";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser } from "../helpers/browser.js";
import { type DashboardTeams, makeDashboardTeams } from "../helpers/dashboard-team.js";
import { ensureBuilt, runBin, waitUntil } from "../helpers/leader-rig.js";
import { type ServeProcess, api, createKey, startServe } from "../helpers/serve-rig.js";

let teams: DashboardTeams;
let serve: ServeProcess;
let browser: Browser;

beforeAll(async () => {
  await ensureBuilt();
  [teams, browser] = await Promise.all([makeDashboardTeams(), launchBrowser()]);
  serve = await startServe(teams.root);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  if (serve) expect(await serve.stop()).toMatchObject({ code: 0, signal: null });
  await teams?.cleanup();
});

/** One raw request on its own connection; the whole answer as text once the server closes it. */
function rawRequest(url: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(url).port), "127.0.0.1");
    let answer = "";
    socket.setTimeout(10_000, () => socket.destroy(new Error("no answer in 10 s")));
    socket.setEncoding("utf8").on("data", (c: string) => (answer += c));
    socket.on("end", () => resolve(answer)).on("error", reject);
    // Written, not ended: a client that half-closes may see the server close before it answers.
    socket.write(text);
  });
}

describe("two Host headers", () => {
  it("are a 400 on every path, whichever comes first; one loopback Host is answered", async () => {
    const dashboard = ["/", "/runs", "/events?view=runs", "/assets/app.js", "/login?token=x"];
    const routes = [...dashboard, "/healthz", "/api/v1/teams/alpha/tasks/1"];
    for (const route of routes) {
      for (const hosts of [["127.0.0.1", "evil.example"], ["evil.example", "127.0.0.1"], ["localhost", "localhost"]]) {
        const head = `GET ${route} HTTP/1.1\r\nHost: ${hosts[0]}\r\nHost: ${hosts[1]}\r\nConnection: close\r\n\r\n`;
        const answer = await rawRequest(serve.url, head);
        expect(answer.split("\r\n")[0], `${route} ${hosts.join(", ")}`).toMatch(/^HTTP\/1\.1 400 /);
      }
    }
    const one = await rawRequest(serve.url, `GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    expect(one.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
  });
});

describe("a confidential team's task status", () => {
  it("keeps a start denial's lifecycle and leaves out its reason and code", async () => {
    const secret = path.join(teams.root, "secret");
    await mkdir(path.join(secret, "tasks", "secret"), { recursive: true });
    const identity = { version: 1, teamId: "secret", taskListId: "secret", leadName: "lead", members: [] };
    const config = { ...identity, hooks: { confidential: true } };
    await writeFile(path.join(secret, "config.json"), `${JSON.stringify(config, null, 2)}\n`);
    const denial = {
      qualityGateStartDenied: true,
      qualityGateStartDeniedAt: "2026-12-04T09:51:30.000Z",
      qualityGateStartDeniedReason: "denied (payroll.acme) • the ACME payroll export of task #1 is not signed off",
      qualityGateStartDeniedHook: "on_task_started",
      qualityGateStartDeniedCount: 1,
      qualityGateStartDeniedKey: "task_started:1:ada:t",
      qualityGateStartDeniedCode: "payroll.acme",
      qualityGateRound: 2,
    };
    const task = {
      id: "1",
      subject: "Export the ACME payroll",
      description: "ACME",
      status: "pending",
      blocks: [],
      blockedBy: [],
      metadata: denial,
      createdAt: "t",
      updatedAt: "u",
    };
    await writeFile(path.join(secret, "tasks", "secret", "1.json"), JSON.stringify(task));
    await writeFile(path.join(teams.alpha, "tasks", "alpha", "90.json"), JSON.stringify({ ...task, id: "90" }));
    const key = await createKey(teams.root, ["--name", "poller", "--scopes", "tasks:read", "--teams", "alpha,secret"]);

    const open = await api(serve.url, "GET", "/api/v1/teams/alpha/tasks/90", { key });
    expect(open.json.startDenial).toMatchObject({ reason: denial.qualityGateStartDeniedReason, code: "payroll.acme" });
    const closed = await api(serve.url, "GET", "/api/v1/teams/secret/tasks/1", { key });
    expect(closed.json).toEqual({
      id: "1",
      status: "pending",
      qualityGateStatus: null,
      startDenial: {
        active: true, at: denial.qualityGateStartDeniedAt, hook: "on_task_started",
        reason: null, code: null, count: 1,
      },
      updatedAt: "u",
    });
    expect(JSON.stringify(closed.json)).not.toMatch(/ACME|payroll/i);
  });
});
