/**
 * `serve keys disable NAME` / `serve keys enable NAME` through the built bin, against a real
 * `pi-teams-hooks serve --allow-remote` on 127.0.0.1: a disabled key gets 401 on every route (the
 * task API, the gates and runs views, a decision, the dashboard, its live streams), its open streams
 * end within a second, `keys list` says it is disabled, and `keys enable` brings the same secret back
 * (not the dashboard sessions begun before).
 */
import { stat } from "node:fs/promises";
import { type IncomingMessage, request } from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, runBin, waitUntil } from "../helpers/leader-rig.js";
import { type ServeProcess, api, codeOf, teamKey, makeTeamsRoot, startServe } from "../helpers/serve-rig.js";

let root: string;
let cleanup: () => Promise<void>;
let serve: ServeProcess;
let key: string;
let other: string;

const TEMPLATES = { ping: { subject: "Ping {{parameters.n}}", parameters: { n: { type: "number", required: true } } } };
const SCOPES = "tasks:create,tasks:read,gates:read,gates:decide,logs:read";
const RUN = "0b0e5c1e-0000-4000-8000-000000000001";

beforeAll(async () => {
  await ensureBuilt();
  ({ root, cleanup } = await makeTeamsRoot({ alpha: { hooks: { templates: TEMPLATES } } }));
  key = await teamKey(root, "ci", SCOPES, "alpha");
  other = await teamKey(root, "other", SCOPES, "alpha");
  serve = await startServe(root, ["--allow-remote"]);
}, 240_000);

afterAll(async () => {
  if (serve) expect(await serve.stop()).toMatchObject({ code: 0, signal: null });
  await cleanup?.();
});

const keysCli = (...args: string[]) => runBin(["serve", "keys", ...args, "--teams-root", root]);

/** The status of each route the key may use, in one list (a task created first, so that its status is there). */
async function statuses(bearer: string): Promise<number[]> {
  const auth = { Authorization: `Bearer ${bearer}` };
  const created = await api(serve.url, "POST", "/api/v1/teams/alpha/tasks", {
    key: bearer,
    body: { template: "ping", parameters: { n: 1 } },
  });
  const page = (route: string) =>
    fetch(`${serve.url}${route}`, { headers: auth, signal: AbortSignal.timeout(15_000) }).then(async (r) => {
      await r.body?.cancel();
      return r.status;
    });
  return [
    created.status,
    (await api(serve.url, "GET", "/api/v1/teams/alpha/tasks/1", { key: bearer })).status,
    (await api(serve.url, "GET", "/api/v1/teams/alpha/gates", { key: bearer })).status,
    (await api(serve.url, "GET", "/api/v1/teams/alpha/runs", { key: bearer })).status,
    (
      await api(serve.url, "POST", `/api/v1/teams/alpha/runs/${RUN}/decision`, {
        key: bearer,
        body: { decision: "allow" },
      })
    ).status,
    await page("/"),
  ];
}

/** A live stream of the dashboard: resolves `opened` at its first bytes, `ended` (Date.now()) when it ends. */
function openStream(headers: Record<string, string>): {
  opened: Promise<void>;
  ended: Promise<number>;
  text(): string;
  close(): void;
} {
  const { hostname, port } = new URL(serve.url);
  let text = "";
  let res: IncomingMessage | null = null;
  let opened!: () => void;
  const openedP = new Promise<void>((resolve) => (opened = resolve));
  const req = request({
    host: hostname,
    port,
    path: "/events?view=runs",
    headers: { Accept: "text/event-stream", ...headers },
  });
  const ended = new Promise<number>((resolve) => {
    req.on("response", (answer) => {
      res = answer;
      answer.setEncoding("utf8").on("data", (chunk: string) => {
        text += chunk;
        opened();
      });
      answer.on("end", () => resolve(Date.now()));
      answer.on("close", () => resolve(Date.now()));
    });
    req.on("error", () => resolve(Date.now()));
  });
  req.end();
  return {
    opened: openedP,
    ended,
    text: () => text,
    close: () => {
      (res as IncomingMessage | null)?.destroy();
      req.destroy();
    },
  };
}

/** A dashboard session cookie for `name`, through its one-time login link. */
async function logIn(name: string): Promise<string> {
  const login = await keysCli("login", name, "--url", serve.url);
  expect(login.code).toBe(0);
  const token = new URL(login.stdout.trimEnd().split("\n").pop() ?? "").searchParams.get("token") ?? "";
  const posted = await fetch(`${serve.url}/login`, {
    method: "POST",
    body: new URLSearchParams({ token }),
    redirect: "manual",
  });
  expect(posted.status).toBe(303);
  return (posted.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
}

const dashboardStatus = async (headers: Record<string, string>): Promise<number> => {
  const answer = await fetch(`${serve.url}/`, { headers, redirect: "manual", signal: AbortSignal.timeout(15_000) });
  await answer.body?.cancel();
  return answer.status;
};

describe("serve keys disable / enable", () => {
  it("a disabled key gets 401 everywhere and its streams end within a second; enabled, the same secret works again", async () => {
    // Enabled: every route answers (the decision's run is unknown: 404 inside the key's scope).
    expect(await statuses(key)).toEqual([202, 200, 200, 200, 404, 200]);
    const cookie = await logIn("ci");
    expect(await dashboardStatus({ Cookie: cookie })).toBe(200);
    const bearer = openStream({ Authorization: `Bearer ${key}` });
    const session = openStream({ Cookie: cookie });
    await Promise.all([bearer.opened, session.opened]);

    const disabled = await keysCli("disable", "ci");
    expect(disabled.code).toBe(0);
    expect(disabled.stdout).toMatch(/^disabled key "ci"/);
    const changedMs = (await stat(path.join(root, ".pi-teams-hooks", "keys.json"))).mtimeMs;
    const timeout = new Promise<number>((resolve) => setTimeout(() => resolve(Number.POSITIVE_INFINITY), 5_000));
    const ends = [await Promise.race([bearer.ended, timeout]), await Promise.race([session.ended, timeout])];
    bearer.close();
    session.close();
    for (const end of ends) expect(end - changedMs).toBeLessThan(1_000);
    expect(bearer.text()).toContain('event: bye\ndata: {"why":"access"}');

    // 401 on every route, as an unknown key; the other key goes on.
    expect(await statuses(key)).toEqual([401, 401, 401, 401, 401, 401]);
    expect(codeOf(await api(serve.url, "GET", "/api/v1/teams/alpha/gates", { key }))).toBe("unauthorized");
    expect(await dashboardStatus({ Cookie: cookie })).toBe(401);
    const stream = await fetch(`${serve.url}/events?view=runs`, { headers: { Authorization: `Bearer ${key}` } });
    expect(stream.status).toBe(401);
    await stream.body?.cancel();
    expect((await api(serve.url, "GET", "/api/v1/teams/alpha/gates", { key: other })).status).toBe(200);

    // Listed as disabled, kept whole; no login link for it; the server said so.
    const list = await runBin(["serve", "keys", "list", "--teams-root", root], { env: { COLUMNS: "240" } });
    expect(list.stdout).toMatch(/^NAME +PREFIX +SCOPES +TEAMS +TEMPLATES +RATE +STATE +CREATED/m);
    expect(list.stdout).toMatch(/^ci +pth_\w+ .* disabled +\d{4}-/m);
    expect(list.stdout).toMatch(/^other +pth_\w+ .* enabled +\d{4}-/m);
    const json = JSON.parse((await keysCli("list", "--json")).stdout) as Array<Record<string, unknown>>;
    expect(json.find((k) => k.name === "ci")).toMatchObject({ disabledAt: expect.any(String), enabledAt: null });
    expect(json.find((k) => k.name === "other")).toMatchObject({ disabledAt: null });
    const login = await keysCli("login", "ci");
    expect(login.code).toBe(2);
    expect(login.stderr).toContain('key "ci" is disabled');
    await waitUntil("the server's line", () => serve.stdout().includes('key disabled: "ci"') || null, {
      timeoutMs: 5_000,
    });
    expect((await keysCli("disable", "ci")).stdout).toBe('key "ci" is disabled already\n');

    // Enabled again: the same secret works on every route; the session begun before stays ended.
    const enabled = await keysCli("enable", "ci");
    expect(enabled.code).toBe(0);
    expect(enabled.stdout).toMatch(/^enabled key "ci"/);
    expect(await statuses(key)).toEqual([202, 200, 200, 200, 404, 200]);
    expect(await dashboardStatus({ Cookie: cookie })).toBe(401);
    expect(await dashboardStatus({ Cookie: await logIn("ci") })).toBe(200);
    const again = JSON.parse((await keysCli("list", "--json")).stdout) as Array<Record<string, unknown>>;
    expect(again.find((k) => k.name === "ci")).toMatchObject({ disabledAt: null, enabledAt: expect.any(String) });
    await waitUntil("the server's line", () => serve.stdout().includes('key enabled: "ci"') || null, {
      timeoutMs: 5_000,
    });
  });

  it("no such key: exit 1 naming it; no NAME, or two: usage (exit 2)", async () => {
    for (const form of ["disable", "enable"]) {
      const missing = await keysCli(form, "nobody");
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain(`serve keys ${form}: no key named "nobody"`);
      expect((await keysCli(form)).code).toBe(2);
      expect((await keysCli(form, "a", "b")).code).toBe(2);
    }
    const help = await runBin(["serve", "--help"]);
    expect(help.stdout).toContain("keys disable NAME");
    expect(help.stdout).toContain("keys enable NAME");
  });
});
