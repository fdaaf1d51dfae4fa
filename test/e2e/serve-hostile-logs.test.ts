/**
 * `serve` over what any agent of a team can write into `hook-logs/`, through the built bin and a real
 * `serve` on 127.0.0.1 with real log files: logs of 12 MB, fields of absurd length, durations no
 * date can hold, names with bidirectional controls, impossible dates in filters, a keys file widened
 * by hand; and a confidential team's runs, which a remote viewer of the dashboard sees as the task
 * API shows them (their lifecycle, not what the gate said).
 */
import { link, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeHookLog } from "../../extensions/teams-hooks/logs/hook-log.js";
import { hookLogRecord } from "../helpers/dashboard-team.js";
import { ensureBuilt, runBin, waitUntil } from "../helpers/leader-rig.js";
import { type ServeProcess, api, codeOf, createKey, makeTeamsRoot, startServe } from "../helpers/serve-rig.js";

let root: string;
let cleanup: () => Promise<void>;
let serve: ServeProcess;
let remote: ServeProcess;
const keys: Record<string, string> = {};
const team = (name: string) => path.join(root, name);

type Json = Record<string, unknown>;

/** A log record as the leader writes one, for `teamName`'s task `taskId`; `over` replaces parts of it. */
function record(
  teamName: string,
  taskId: string,
  startedAt: Date,
  over: { result?: Json; policy?: Json; member?: string; subject?: string; key?: string } = {},
): Parameters<typeof writeHookLog>[1] {
  return hookLogRecord({
    teamDir: team(teamName),
    taskId,
    startedAt,
    member: over.member,
    subject: over.subject,
    key: over.key,
    result: {
      outcome: "failed",
      exitCode: 1,
      stderr: "lint: 2 problems in src/payroll.ts\n",
      verdict: { decision: "deny", code: "lint.payroll", reason: "payroll is not formatted", source: "stdout" },
      ...over.result,
    },
    policy: {
      passed: false,
      summary: "exit code 1 • lint: 2 problems in src/payroll.ts",
      actions: ["nudge ada"],
      ...over.policy,
    },
  });
}

beforeAll(async () => {
  await ensureBuilt();
  ({ root, cleanup } = await makeTeamsRoot({
    big: {},
    odd: {},
    dates: {},
    secret: { hooks: { confidential: true } },
    open: {},
  }));
  keys.ops = await createKey(root, [
    "--name",
    "ops",
    "--scopes",
    "logs:read,tasks:read,gates:read",
    "--teams",
    "big,odd,dates,secret,open",
    "--all-templates",
  ]);
  keys.viewer = await createKey(root, ["--name", "viewer", "--scopes", "logs:read", "--teams", "secret,open"]);
  keys.slow = await createKey(root, [
    "--name",
    "slow",
    "--scopes",
    "logs:read",
    "--teams",
    "open",
    "--rate-limit",
    "4/min",
  ]);
  const base = Date.parse("2026-12-01T10:00:00.000Z");
  for (let i = 0; i < 3; i++) await writeHookLog(team("secret"), record("secret", String(i + 1), new Date(base + i)));
  await writeHookLog(team("open"), record("open", "1", new Date(base)));
  serve = await startServe(root);
  remote = await startServe(root, ["--allow-remote"]);
}, 120_000);

afterAll(async () => {
  if (serve) expect(await serve.stop()).toMatchObject({ code: 0, signal: null });
  if (remote) expect(await remote.stop()).toMatchObject({ code: 0, signal: null });
  await cleanup?.();
});

/** `/healthz` answers, so the process is still there. */
async function alive(server: ServeProcess): Promise<void> {
  const health = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
  expect(health.status).toBe(200);
}

describe("logs no gate writes", () => {
  it("fifty logs of 12 MB each: the page of runs answers, them skipped and counted, and the server stays up", async () => {
    const base = Date.parse("2026-12-02T10:00:00.000Z");
    await writeHookLog(team("big"), record("big", "1", new Date(base)));
    // The writer keeps a log within 1 MiB: a 12 MB one is written as any agent could, straight into the
    // folder, once, under fifty names (hard links: the disk holds it once, the server meets fifty).
    const dir = path.join(team("big"), "hook-logs");
    const huge = record("big", "2", new Date(base + 1000), { policy: { summary: "x".repeat(12 * 1024 * 1024) } });
    const first = path.join(dir, "2026-12-02T10-00-01-000Z_task_completed_task-2.json");
    await writeFile(first, JSON.stringify(huge));
    for (let i = 1; i < 50; i++) {
      const name = `2026-12-02T10-00-${String(1 + i).padStart(2, "0")}-000Z_task_completed_task-2.json`;
      await link(first, path.join(dir, name));
    }
    const answer = await api(serve.url, "GET", "/api/v1/teams/big/runs", { key: keys.ops });
    expect(answer.status).toBe(200);
    expect((answer.json.runs as Json[]).map((r) => r.taskId)).toEqual(["1"]);
    expect(answer.json.unreadable).toBe(50);
    // The dashboard's page of the same runs, and a run page of one of them: answered, not a 500.
    const page = await fetch(`${serve.url}/runs?team=big`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("50 log file(s) could not be read");
    await alive(serve);
  });

  it("a log within the size a log may have but with fields of absurd length: each field is cut, the answer stays small", async () => {
    const base = Date.parse("2026-12-03T10:00:00.000Z");
    const dir = path.join(team("odd"), "hook-logs");
    await mkdir(dir, { recursive: true });
    const odd = record("odd", "7", new Date(base), {
      policy: { summary: "s".repeat(200_000), actions: Array.from({ length: 5_000 }, (_, i) => `act ${i}`) },
      result: {
        hookPath: `/x/${"k".repeat(50_000)}.sh`,
        verdict: { decision: "deny", code: "c".repeat(50_000), source: "stdout" },
      },
      member: "m".repeat(50_000),
    });
    await writeFile(path.join(dir, "2026-12-03T10-00-00-000Z_task_completed_task-7.json"), JSON.stringify(odd));
    const response = await fetch(`${serve.url}/api/v1/teams/odd/runs`, {
      headers: { Authorization: `Bearer ${keys.ops}` },
    });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text.length).toBeLessThan(20_000);
    const [run] = (JSON.parse(text) as { runs: Json[] }).runs;
    expect(run, text).toBeDefined();
    expect(String(run?.summary).length).toBeLessThanOrEqual(2_000);
    expect(String(run?.summary)).toMatch(/^s+… \[cut\]$/);
    expect(String(run?.member).length).toBeLessThanOrEqual(256);
    expect(String(run?.code).length).toBeLessThanOrEqual(256);
    expect(String(run?.hook).length).toBeLessThanOrEqual(256);
    expect(((run?.actions ?? []) as string[]).length).toBeLessThanOrEqual(20);
    await alive(serve);
  }, 60_000);

  it("durations no date can hold (1e300, 8.64e15 ms): the runs and the task's status answer, the duration as written", async () => {
    const base = Date.parse("2026-12-04T10:00:00.000Z");
    const tasks = path.join(team("odd"), "tasks", "odd");
    await mkdir(tasks, { recursive: true });
    for (const [i, durationMs] of [1e300, 8.64e15].entries()) {
      const id = String(20 + i);
      const at = new Date(base + i * 1000);
      const key = `task_completed:${id}:${at.toISOString()}`;
      await writeHookLog(team("odd"), record("odd", id, at, { result: { durationMs }, key }));
      const task = {
        id,
        subject: `Task ${id}`,
        description: "",
        status: "pending",
        owner: "ada",
        blocks: [],
        blockedBy: [],
        metadata: { qualityGateStatus: "failed", qualityGateEventKey: key, qualityGateHook: "on_task_completed" },
        createdAt: at.toISOString(),
        updatedAt: at.toISOString(),
      };
      await writeFile(path.join(tasks, `${id}.json`), `${JSON.stringify(task, null, 2)}\n`);
      const status = await api(serve.url, "GET", `/api/v1/teams/odd/tasks/${id}`, { key: keys.ops });
      expect(status.status, JSON.stringify(status.json)).toBe(200);
      expect(status.json.decidingRun).toMatchObject({ outcome: "failed", endedAt: null });
    }
    const runs = await api(serve.url, "GET", "/api/v1/teams/odd/runs?since=2026-12-04", { key: keys.ops });
    expect(runs.status, JSON.stringify(runs.json)).toBe(200);
    expect((runs.json.runs as Json[]).map((r) => [r.durationMs, r.endedAt])).toEqual([
      [8.64e15, null],
      [1e300, null],
    ]);
    expect((await fetch(`${serve.url}/runs?team=odd`)).status).toBe(200);
    await alive(serve);
  });

  it("a right-to-left override in a member's name and a log's name is shown as its code point, never applied", async () => {
    const at = new Date(Date.parse("2026-12-05T10:00:00.000Z"));
    await writeHookLog(team("odd"), record("odd", "30", at, { member: "ada\u202Egnp.exe" }));
    const page = await (await fetch(`${serve.url}/runs?team=odd&task=30`)).text();
    expect(page).not.toContain("\u202E");
    expect(page).toContain("ada&lt;U+202E&gt;gnp.exe");
  });
});

describe("dates", () => {
  it("an impossible date is a 400 naming the parameter in the API and the dashboard, and a usage error of logs", async () => {
    const answer = await api(serve.url, "GET", "/api/v1/teams/dates/runs?since=2026-02-30", { key: keys.ops });
    expect(answer.status).toBe(400);
    expect(codeOf(answer)).toBe("invalid_request");
    expect(answer.json.error).toMatchObject({
      problems: [
        {
          kind: "request_field",
          path: "since",
          message: 'since: "2026-02-30" is not a date: February 2026 has 28 days',
        },
      ],
    });
    const page = await fetch(`${serve.url}/runs?since=2026-02-30`);
    expect(page.status).toBe(400);
    expect(await page.text()).toContain("since: &quot;2026-02-30&quot; is not a date: February 2026 has 28 days");
    for (const since of ["2026-04-31", "2026-13-01T00:00Z"]) {
      const refused = await api(serve.url, "GET", `/api/v1/teams/dates/runs?since=${since}`, { key: keys.ops });
      expect(refused.status, since).toBe(400);
    }
    expect((await api(serve.url, "GET", "/api/v1/teams/dates/runs?since=2028-02-29", { key: keys.ops })).status).toBe(
      200,
    );
    const logs = await runBin(["logs", "--team-dir", team("dates"), "--since", "2026-02-30"]);
    expect(logs.code).toBe(2);
    expect(logs.stderr).toContain('--since "2026-02-30" is not a date: February 2026 has 28 days');
  });
});

describe("the keys file changed by hand", () => {
  it("is read again, each changed key said on serve's output, a widened one warned", async () => {
    const file = path.join(root, ".pi-teams-hooks", "keys.json");
    const data = JSON.parse(await readFile(file, "utf8")) as { keys: Array<Json> };
    const viewer = data.keys.find((k) => k.name === "viewer");
    if (!viewer) throw new Error("no viewer key");
    viewer.scopes = ["logs:read", "gates:decide"];
    viewer.teams = ["secret", "open", "big"];
    await writeFile(file, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
    // The next request reads the file again; the new scope is in force at once, and said.
    expect((await api(serve.url, "GET", "/api/v1/teams/big/runs", { key: keys.viewer })).status).toBe(200);
    const said = await waitUntil("the change on serve's output", () =>
      /warning: key changed: "viewer" \(pth_[0-9a-f]{12}\): scopes logs:read → logs:read, gates:decide; teams secret, open → secret, open, big — it may now do more than before/.exec(
        serve.stderr(),
      ),
    );
    expect(said).toBeTruthy();
  });
});

describe("a remote viewer of a confidential team's runs", () => {
  const bearer = () => ({ Authorization: `Bearer ${keys.viewer}` });

  it("sees on the runs page, a run's page and the live stream what the API gives: the lifecycle, not what the gate said", async () => {
    const api1 = await api(remote.url, "GET", "/api/v1/teams/secret/runs", { key: keys.viewer });
    expect(api1.status).toBe(200);
    expect(JSON.stringify(api1.json)).not.toMatch(/payroll/);
    const runs = await fetch(`${remote.url}/runs?team=secret`, { headers: bearer() });
    expect(runs.status).toBe(200);
    const table = await runs.text();
    expect(table).toContain('data-team="secret"');
    expect(table).not.toMatch(/payroll/);
    expect(table).toContain("(withheld: confidential team)");
    const [, href] = /<a href="(\/runs\/secret\/[^"]+)"/.exec(table) ?? [];
    if (!href) throw new Error("no run link");
    const run = await fetch(`${remote.url}${href}`, { headers: bearer() });
    expect(run.status).toBe(200);
    const runText = await run.text();
    expect(runText).toContain("is confidential");
    expect(runText).not.toMatch(/payroll|Task 1\b/);
    // Paths under the teams root are relative to it.
    expect(runText).not.toContain(root);
    // A team that is not confidential: shown whole, its paths relative too.
    const open = await (await fetch(`${remote.url}/runs?team=open`, { headers: bearer() })).text();
    expect(open).toContain("lint: 2 problems in src/payroll.ts");
    const [, openHref] = /<a href="(\/runs\/open\/[^"]+)"/.exec(open) ?? [];
    const openRun = await (await fetch(`${remote.url}${openHref}`, { headers: bearer() })).text();
    expect(openRun).toContain("payroll");
    expect(openRun).toContain("open/hooks/on_task_completed.sh");
    expect(openRun).not.toContain(root);
    // The machine's own viewer (no --allow-remote) sees the confidential team's runs whole, as `logs` does.
    expect(await (await fetch(`${serve.url}/runs?team=secret`)).text()).toMatch(/payroll/);

    // The live stream, caught up from the start: each run, without what the gate said.
    const controller = new AbortController();
    const stream = await fetch(`${remote.url}/events?view=runs&team=secret&after=1~secret~a`, {
      headers: bearer(),
      signal: controller.signal,
    });
    expect(stream.status).toBe(200);
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    let text = "";
    const decoder = new TextDecoder();
    const deadline = Date.now() + 10_000;
    try {
      while ((text.match(/event: run/g) ?? []).length < 3 && Date.now() < deadline) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
    } finally {
      controller.abort();
    }
    expect((text.match(/event: run/g) ?? []).length).toBe(3);
    expect(text).not.toMatch(/payroll/);
    expect(text).toContain("withheld: confidential team");
  });
});

describe("paths", () => {
  it("a reader of /gates sees the paths under the teams root relative to it", async () => {
    const hooks = path.join(team("open"), "hooks");
    await mkdir(hooks, { recursive: true });
    // A gate whose interpreter is a file of the team's that is not there: the problem names it.
    const interpreter = path.join(team("open"), "tools", "lint-runner");
    await writeFile(path.join(hooks, "on_task_failed.sh"), `#!${interpreter}\nexit 0\n`, { mode: 0o755 });
    const answer = await api(serve.url, "GET", "/api/v1/teams/open/gates", { key: keys.ops });
    expect(answer.status).toBe(200);
    const text = JSON.stringify(answer.json);
    expect(text).toContain("open/tools/lint-runner");
    expect(text).not.toContain(root);
  });
});

describe("the dashboard's rate", () => {
  it("a key's pages and streams spend its rate, shared with its API requests (429 with Retry-After)", async () => {
    const headers = { Authorization: `Bearer ${keys.slow}` };
    const statuses: number[] = [];
    statuses.push((await api(remote.url, "GET", "/api/v1/teams/open/runs", { key: keys.slow })).status);
    for (let i = 0; i < 4; i++) statuses.push((await fetch(`${remote.url}/runs?team=open`, { headers })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    const refused = await fetch(`${remote.url}/`, { headers });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await api(remote.url, "GET", "/api/v1/teams/open/runs", { key: keys.slow })).status).toBe(429);
  });
});
