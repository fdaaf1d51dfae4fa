/**
 * The HTTP surfaces of a real `pi-teams-hooks serve` (a child process on 127.0.0.1) against what a
 * team member or a client can do, with real files and a real headless Chromium: a hook log whose
 * file name holds line breaks and markup, a key revoked while its live streams are open, two `Host`
 * headers, a viewer that reads nothing, and a confidential team's task status.
 */
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { type IncomingMessage, type Server, createServer, request } from "node:http";
import { type AddressInfo, type Socket, connect } from "node:net";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser } from "../helpers/browser.js";
import { type DashboardTeams, makeDashboardTeams } from "../helpers/dashboard-team.js";
import { ensureBuilt, once, runBin, waitUntil } from "../helpers/leader-rig.js";
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

const logsDir = (): string => path.join(teams.alpha, "hook-logs");
type Log = Record<string, unknown>;

/**
 * A copy of one of alpha's real logs under `name` (an agent can write any file into hook-logs/),
 * written whole and then renamed, as the leader writes a log: a reader never sees half of it.
 */
async function plantLog(name: string, edit: (record: Log) => void = () => undefined): Promise<void> {
  const record = JSON.parse(await sampleLog()) as Log;
  edit(record);
  const tmp = path.join(logsDir(), `.planted.tmp.${process.pid}`);
  await writeFile(tmp, `${JSON.stringify(record)}\n`);
  await rename(tmp, path.join(logsDir(), name));
}

/** The text of alpha's first real task log (read once: the tests plant hundreds of copies). */
const sampleLog = once(async () => {
  const [sample] = (await readdir(logsDir())).filter((n) => /^\d{4}-.*_task_completed_task-\d\.json$/.test(n)).sort();
  return readFile(path.join(logsDir(), String(sample)), "utf8");
});

/** A server on 127.0.0.1 standing for another site: it records every request it gets. */
async function offSite(): Promise<{ server: Server; port: number; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? "");
    res.writeHead(200, { "Content-Type": "text/plain" }).end("off-site\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

interface OpenStream {
  text(): string;
  /** Where the stream's text has got to, for a `waitFor` that looks only at what comes after it. */
  mark(): number;
  /** Resolves once the stream's text (from `from`, a `mark()`) holds `part`; rejects after `ms`. */
  waitFor(part: string, ms: number, from?: number): Promise<void>;
  /** Resolves with the time (Date.now()) the server ended the stream. */
  ended: Promise<number>;
  close(): void;
}

/** The longest `part` a stream's `waitFor` finds: what of the text it keeps to find one cut between chunks. */
const LONGEST_PART = 256;

/**
 * `GET /events?…` read as it comes, until the server ends it or `close()`. The text is kept as its
 * chunks and searched chunk by chunk: a stream of megabytes, searched once per run that lands, would
 * otherwise be copied whole at each search.
 */
function openStream(url: string, query: string, headers: Record<string, string> = {}): OpenStream {
  const { hostname, port } = new URL(url);
  const chunks: string[] = [];
  let joined: string | null = "";
  let res: IncomingMessage | null = null;
  let waiting: { part: string; resolve: () => void } | null = null;
  /** Whether the text from chunk `from` on holds `part` (also across the cut between two chunks). */
  const holds = (part: string, from: number): boolean => {
    if (part.length > LONGEST_PART) throw new Error(`waitFor finds parts of ${LONGEST_PART} characters at most`);
    let carry = "";
    for (const chunk of chunks.slice(from)) {
      if (`${carry}${chunk.slice(0, part.length)}`.includes(part) || chunk.includes(part)) return true;
      carry = chunk.length >= part.length ? chunk.slice(-part.length) : `${carry}${chunk}`.slice(-part.length);
    }
    return false;
  };
  const req = request({
    host: hostname,
    port,
    path: `/events?${query}`,
    headers: { Accept: "text/event-stream", ...headers },
  });
  const ended = new Promise<number>((resolve) => {
    req.on("response", (answer) => {
      res = answer;
      answer.setEncoding("utf8").on("data", (chunk: string) => {
        chunks.push(chunk);
        joined = null;
        if (waiting !== null && holds(waiting.part, Math.max(0, chunks.length - 1 - waiting.part.length)))
          waiting.resolve();
      });
      answer.on("end", () => resolve(Date.now()));
      answer.on("close", () => resolve(Date.now()));
    });
    req.on("error", () => resolve(Date.now()));
  });
  req.end();
  const waitFor = (part: string, ms: number, from = 0): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (holds(part, from)) return resolve();
      const timer = setTimeout(() => reject(new Error(`no ${JSON.stringify(part)} on the stream in ${ms} ms`)), ms);
      waiting = {
        part,
        resolve: () => {
          clearTimeout(timer);
          waiting = null;
          resolve();
        },
      };
    });
  return {
    text: () => (joined ??= chunks.join("")),
    mark: () => chunks.length,
    waitFor,
    ended,
    close: () => (res ? res.destroy() : req.destroy()),
  };
}

/** The `run` events of a stream's text: each event's `id` and its data. */
function runEvents(text: string): Array<{ id: string | null; data: Record<string, unknown> }> {
  const events: Array<{ id: string | null; data: Record<string, unknown> }> = [];
  for (const block of text.split(/\n\n/)) {
    const lines = block.split("\n");
    if (!lines.includes("event: run")) continue;
    const id = lines.find((l) => l.startsWith("id: "))?.slice(4) ?? null;
    const data = lines
      .filter((l) => l.startsWith("data: "))
      .map((l) => l.slice(6))
      .join("\n");
    events.push({ id, data: JSON.parse(data) as Record<string, unknown> });
  }
  return events;
}

describe("a hook log's file name", () => {
  it("with a line feed or a carriage return and markup injects nothing into the live page (Chromium)", async () => {
    const site = await offSite();
    try {
      const context = await browser.newContext();
      const page: Page = await context.newPage();
      await page.goto(`${serve.url}/runs?team=alpha`);
      await expect.poll(() => page.locator("#live-status").textContent()).toMatch(/^Live/);
      const raw = openStream(serve.url, "view=runs&team=alpha");
      // A first run, seen on the stream: the team's watcher is running, so the next logs are news.
      for (let i = 0; i < 50 && !raw.text().includes("_task-2.json"); i++) {
        await plantLog(`2099-01-01T00-00-00-${String(i).padStart(3, "0")}Z_task_completed_task-2.json`);
        await raw.waitFor("_task-2.json", 200).catch(() => undefined);
      }
      // A file name holds no "/": the URLs use "\", which a browser reads as "/" in an http URL. The
      // forged event carries a row as the old page took it (`html`), with an off-site link, an image
      // and a refresh to the off-site server (a navigation, which the Content-Security-Policy allows).
      const offsite = `http:\\\\127.0.0.1:${site.port}\\`;
      const forged = (tag: string, breakText: string): string => {
        const url = `${offsite}${tag}`;
        const html = `<tr id=pwn-${tag}><td><a href=${url}>x<img src=${url}><meta http-equiv=refresh content=0;url=${url}>`;
        const data = JSON.stringify({ team: "alpha", name: tag, html });
        return `2026-01-01T00-00-00-000Z_x${breakText}event: run${breakText}data: ${data}${breakText}${breakText}.json`;
      };
      const lf = forged("lf", "\n");
      const cr = forged("cr", "\r");
      expect(Buffer.byteLength(lf)).toBeLessThanOrEqual(255);
      await plantLog(lf);
      await plantLog(cr);
      const marker = "2099-01-01T00-00-01-000Z_task_completed_task-1.json";
      await plantLog(marker);
      // The watcher may pass over a name it cannot take for a log's: the rescan (every 2 s) finds it.
      const planted = (): Array<{ id: string | null; data: Record<string, unknown> }> =>
        runEvents(raw.text()).filter((e) => !String(e.data.name).endsWith("_task-2.json"));
      await waitUntil("the three runs on the raw stream", () => planted().length >= 3, { timeoutMs: 10_000 });
      raw.close();
      await page.waitForTimeout(500); // the page has had them as long: an image or a refresh would have gone out by now
      expect(site.hits).toEqual([]);
      expect(page.url()).toBe(`${serve.url}/runs?team=alpha`);
      await page.locator(`#runs-body tr[data-name="${marker}"]`).waitFor({ timeout: 10_000 });

      // The stream: three runs, no more, each with an id that is one line and is the run's cursor.
      const events = planted();
      // A name is shown as a page shows text: a control character but a tab or a line feed as U+FFFD.
      const shown = (name: string): string => name.replace(/\r/g, "\ufffd");
      expect(events.map((e) => e.data.name).sort()).toEqual([shown(lf), shown(cr), marker].sort());
      for (const event of events) expect(event.id).toBe(event.data.cursor);
      // The page: the two runs as rows of their own (their names as data), nothing injected.
      expect(await page.locator("[id^=pwn], meta[http-equiv], #runs-body img").count()).toBe(0);
      const hrefs = await page.locator("a[href]").evaluateAll((as) => as.map((a) => a.getAttribute("href") ?? ""));
      const origins = new Set(hrefs.map((href) => new URL(href, page.url()).origin));
      expect(origins).toEqual(new Set([new URL(serve.url).origin]));
      const rows = async (): Promise<Array<[string | null, string | null]>> =>
        page
          .locator("#runs-body tr")
          .evaluateAll((trs) =>
            trs.map((tr) => [tr.getAttribute("data-name"), tr.querySelector("a")?.getAttribute("href")]),
          )
          .then((found) => found.map(([name, href]) => [name ?? null, href ?? null]));
      const newest = async (): Promise<Array<string | null>> =>
        (await rows())
          .slice(0, 3)
          .map(([name]) => name)
          .sort();
      await expect.poll(newest).toEqual([marker, shown(cr), shown(lf)].sort());
      // Its link leads to its own run page.
      const href = (await rows()).find(([name]) => name === shown(lf))?.[1];
      expect(href).toBe(`/runs/alpha/${encodeURIComponent(lf.replace(/\.json$/, ""))}`);
      await context.close();
    } finally {
      site.server.close();
    }
  });
});

describe("a key revoked while its live streams are open", () => {
  it("ends them within a second of the keys file changing, bearer and session alike", async () => {
    const remote = await startServe(teams.root, ["--allow-remote"]);
    try {
      const key = await createKey(teams.root, ["--name", "watcher", "--scopes", "logs:read", "--teams", "alpha"]);
      const cookie = await logIn(remote.url, "watcher");
      const bearer = openStream(remote.url, "view=runs", { Authorization: `Bearer ${key}` });
      const session = openStream(remote.url, "view=runs", { Cookie: cookie });
      for (const s of [bearer, session]) await s.waitFor("retry:", 10_000);

      expect((await runBin(["serve", "keys", "revoke", "watcher", "--teams-root", teams.root])).code).toBe(0);
      const changedMs = (await stat(path.join(teams.root, ".pi-teams-hooks", "keys.json"))).mtimeMs;
      const timeout = new Promise<number>((resolve) => setTimeout(() => resolve(Number.POSITIVE_INFINITY), 5_000));
      const bearerEnd = await Promise.race([bearer.ended, timeout]);
      const sessionEnd = await Promise.race([session.ended, timeout]);
      bearer.close();
      session.close();
      expect(bearerEnd - changedMs).toBeLessThan(1_000);
      expect(sessionEnd - changedMs).toBeLessThan(1_000);
      expect(bearer.text()).toContain('event: bye\ndata: {"why":"access"}');
      // And it does not come back.
      const again = await fetch(`${remote.url}/events?view=runs`, { headers: { Authorization: `Bearer ${key}` } });
      expect(again.status).toBe(401);
      await again.body?.cancel();
    } finally {
      expect(await remote.stop()).toMatchObject({ code: 0 });
    }
  });

  it("a session's streams end within a second of session-secret being deleted; a bearer key's stay", async () => {
    const remote = await startServe(teams.root, ["--allow-remote"]);
    try {
      const key = await createKey(teams.root, ["--name", "keeper", "--scopes", "logs:read", "--teams", "alpha"]);
      const cookie = await logIn(remote.url, "keeper");
      const bearer = openStream(remote.url, "view=runs", { Authorization: `Bearer ${key}` });
      const session = openStream(remote.url, "view=runs", { Cookie: cookie });
      for (const s of [bearer, session]) await s.waitFor("retry:", 10_000);
      const deletedMs = Date.now();
      await rm(path.join(teams.root, ".pi-teams-hooks", "session-secret"));
      const timeout = new Promise<number>((resolve) => setTimeout(() => resolve(Number.POSITIVE_INFINITY), 5_000));
      expect((await Promise.race([session.ended, timeout])) - deletedMs).toBeLessThan(1_000);
      expect(session.text()).toContain('event: bye\ndata: {"why":"access"}');
      // A bearer key has no session: its stream goes on.
      const still = await Promise.race([bearer.ended, new Promise((resolve) => setTimeout(resolve, 600, "open"))]);
      expect(still).toBe("open");
      bearer.close();
      session.close();
    } finally {
      expect(await remote.stop()).toMatchObject({ code: 0 });
    }
  });
});

/** A session cookie (`pth_session=…`) for the key `name`, through its one-time login link. */
async function logIn(url: string, name: string): Promise<string> {
  const login = await runBin(["serve", "keys", "login", name, "--teams-root", teams.root, "--url", url]);
  const token = new URL(login.stdout.trimEnd().split("\n").pop() ?? "").searchParams.get("token") ?? "";
  const form = new URLSearchParams({ token });
  const posted = await fetch(`${url}/login`, { method: "POST", body: form, redirect: "manual" });
  expect(posted.status).toBe(303);
  const cookie = (posted.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  expect(cookie).toMatch(/^pth_session=/);
  return cookie;
}

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
      for (const hosts of [
        ["127.0.0.1", "evil.example"],
        ["evil.example", "127.0.0.1"],
        ["localhost", "localhost"],
      ]) {
        const head = `GET ${route} HTTP/1.1\r\nHost: ${hosts[0]}\r\nHost: ${hosts[1]}\r\nConnection: close\r\n\r\n`;
        const answer = await rawRequest(serve.url, head);
        expect(answer.split("\r\n")[0], `${route} ${hosts.join(", ")}`).toMatch(/^HTTP\/1\.1 400 /);
      }
    }
    const one = await rawRequest(serve.url, `GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    expect(one.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
  });
});

describe("a viewer that reads nothing", () => {
  it("gets at most 256 KiB ahead of it, counting what the kernel holds, and is cut when more wait", async () => {
    const BOUND = 256 * 1024;
    const RUNS = 450;
    // Each run's row is about 12 KB (two cells of 2,000 three-byte characters, as long as a cell
    // gets): 450 of them are 5 MB, past what the kernel's buffers of one connection hold on Linux
    // (4 MiB of send buffer at most) and the server's own bounds.
    const long = "€".repeat(2_000);
    const slow: Socket = connect(Number(new URL(serve.url).port), "127.0.0.1");
    await new Promise<void>((resolve) => slow.once("connect", resolve));
    slow.write("GET /events?view=runs&team=alpha HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n");
    slow.pause(); // nothing is read from here on: what the server sends waits in the kernel
    const fast = openStream(serve.url, "view=runs&team=alpha");
    try {
      // A first run, seen on the stream: the team's watcher is running, so the next logs are news.
      for (let i = 0; i < 50 && !fast.text().includes("_task-3.json"); i++) {
        await plantLog(`2099-02-01T00-00-00-${String(i).padStart(3, "0")}Z_task_completed_task-3.json`);
        await fast.waitFor("_task-3.json", 200).catch(() => undefined);
      }
      // One run at a time, each seen by a viewer that reads (the server sends a run to both streams
      // in one go): the slow one has been sent, or refused, every run before the next lands.
      for (let i = 0; i < RUNS; i++) {
        const name = `2099-02-02T00-00-00-${String(i).padStart(3, "0")}Z_task_completed_task-1.json`;
        const before = fast.mark(); // a run's name is on no stream before its log lands
        await plantLog(name, (record) => {
          (record.invocation as Record<string, unknown>).memberName = long;
          record.policy = { ...(record.policy as object | undefined), actions: [long] };
        });
        await fast.waitFor(name, 10_000, before);
      }
      // Now read: what waited for this viewer when it was cut, then the end. Node's socket took up to
      // its read buffer's worth before it stopped reading: that was in this process, not the kernel.
      const buffered = slow.readableLength;
      let received = 0;
      const ended = new Promise<boolean>((resolve) => {
        slow.on("data", (chunk: Buffer) => (received += chunk.length));
        slow.on("end", () => resolve(true));
        slow.on("error", () => resolve(true));
        setTimeout(() => resolve(false), 10_000);
      });
      slow.resume();
      expect(await ended, "the server cut the stream").toBe(true);
      expect(received - buffered).toBeLessThanOrEqual(BOUND);
      expect(received - buffered).toBeGreaterThan(BOUND / 2);
      // The viewer that reads was never cut.
      expect(fast.text()).not.toContain("event: bye");
    } finally {
      fast.close();
      slow.destroy();
    }
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
    const key = await createKey(teams.root, [
      "--name",
      "poller",
      "--scopes",
      "tasks:read",
      "--teams",
      "alpha,secret",
      "--all-templates",
    ]);

    const open = await api(serve.url, "GET", "/api/v1/teams/alpha/tasks/90", { key });
    expect(open.json.startDenial).toMatchObject({ reason: denial.qualityGateStartDeniedReason, code: "payroll.acme" });
    const closed = await api(serve.url, "GET", "/api/v1/teams/secret/tasks/1", { key });
    expect(closed.json).toEqual({
      id: "1",
      status: "pending",
      qualityGateStatus: null,
      gateState: { state: "unjudged" },
      startDenial: {
        active: true,
        at: denial.qualityGateStartDeniedAt,
        hook: "on_task_started",
        reason: null,
        code: null,
        count: 1,
      },
      updatedAt: "u",
      decidingRun: null,
      createdBy: { kind: "worker" },
    });
    expect(JSON.stringify(closed.json)).not.toMatch(/ACME|payroll/i);
  });
});
