/**
 * The task API against hostile or careless clients and team members, in-process (server/server.ts on
 * 127.0.0.1:0) with real requests and real files: bodies that are not UTF-8 or nested without end, two
 * keys in one request, a keys file whose key names would forge the server's output, a config.json that
 * cannot be read, a template-limited key deciding a gate held on another task list, and creations
 * queued behind a lock that a live process does not let go.
 */
import { execFileSync } from "node:child_process";
import { connect } from "node:net";
import { mkdir, readFile, readdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { invokeEvent } from "../../extensions/teams-hooks/event/invoke.js";
import type { Problem } from "../../extensions/teams-hooks/settings/problems.js";
import { createKey, keysFile, keySpec } from "../../extensions/teams-hooks/server/keys.js";
import { type TaskServer, startTaskServer } from "../../extensions/teams-hooks/server/server.js";
import { api, codeOf, makeTeamsRoot } from "../helpers/serve-rig.js";
import { teamSettings } from "../helpers/team-settings.js";

const TEMPLATES = {
  ping: {
    subject: "Ping {{parameters.n}}",
    parameters: { n: { type: "number", required: true }, extra: { type: "array" } },
  },
  pong: { subject: "Pong" },
};
const LOCK_BUDGET_MS = 1_000;

let root: string;
let cleanup: () => Promise<void>;
let key: string;
const logged: string[] = [];
let server: TaskServer;
const TASKS = "/api/v1/teams/alpha/tasks";
const tasksDir = (): string => path.join(root, "alpha", "tasks", "alpha");
const taskFiles = async (): Promise<string[]> =>
  (await readdir(tasksDir()).catch(() => [] as string[])).filter((n) => n.endsWith(".json"));

beforeAll(async () => {
  ({ root, cleanup } = await makeTeamsRoot({ alpha: { hooks: { templates: TEMPLATES } } }));
  key = (
    await createKey(
      root,
      keySpec({
        name: "lib",
        scopes: "tasks:create,tasks:read,gates:decide",
        teams: "alpha",
        templates: undefined,
        allTemplates: true,
        rateLimit: null,
      }),
    )
  ).key;
  server = await startTaskServer({
    teamsRoot: root,
    host: "127.0.0.1",
    port: 0,
    lockTimeoutMs: LOCK_BUDGET_MS,
    log: (level, message) => logged.push(`${level}: ${message}`),
  });
});

afterAll(async () => {
  await server?.close();
  await cleanup?.();
});

/** One raw request; the whole answer as text once the server closes the connection. */
function raw(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(server.url).port), "127.0.0.1");
    let answer = "";
    socket
      .setEncoding("utf8")
      .on("data", (c: string) => (answer += c))
      .on("end", () => resolve(answer))
      .on("error", reject);
    socket.end(text);
  });
}

describe("bodies", () => {
  it("bytes that are not UTF-8 are refused (400 invalid_json), not stored as U+FFFD", async () => {
    const body = Buffer.concat([
      Buffer.from('{"template":"ping","parameters":{"n":1,"extra":["a'),
      Buffer.from([0xff, 0xc0, 0x80]),
      Buffer.from('"]}}'),
    ]);
    const before = (await taskFiles()).length;
    const answer = await fetch(`${server.url}${TASKS}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}` },
      body,
    });
    expect([answer.status, ((await answer.json()) as { error: { code: string } }).error.code]).toEqual([
      400,
      "invalid_json",
    ]);
    expect((await taskFiles()).length).toBe(before);
  });

  it("a body nested deeper than 32 levels is a 400 naming the cap, with or without an Idempotency-Key; 32 levels pass", async () => {
    const nested = (levels: number): string =>
      `{"template":"ping","parameters":{"n":1,"extra":${"[".repeat(levels)}${"]".repeat(levels)}}}`;
    for (const headers of [{}, { "Idempotency-Key": "deep" }] as Array<Record<string, string>>) {
      for (const levels of [31, 5_000, 30_000]) {
        const answer = await api(server.url, "POST", TASKS, { key, body: nested(levels), headers });
        expect([answer.status, codeOf(answer)], JSON.stringify(answer.json)).toEqual([400, "invalid_request"]);
        expect((answer.json.error as { message: string }).message).toContain("nested deeper than 32 levels");
      }
    }
    // The body, its parameters and 30 levels of array: 32 in all.
    expect((await api(server.url, "POST", TASKS, { key, body: nested(30) })).status).toBe(202);
    expect(logged.filter((line) => line.startsWith("error:"))).toEqual([]);
  });

  it("64 KiB of unknown names is answered with 20 problems and a count, not megabytes", async () => {
    const many = (prefix: string): Record<string, number> =>
      Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`${prefix}${i}`, 0]));
    const bodies: Array<[string, unknown, string, string]> = [
      [TASKS, { template: "ping", parameters: { n: 1, ...many("p") } }, "invalid_parameters", "request_parameter"],
      [TASKS, { template: "ping", ...many("f") }, "invalid_request", "request_field"],
      [
        "/api/v1/teams/alpha/runs/0b0e5c1e-0000-4000-8000-000000000999/decision",
        { decision: "allow", ...many("f") },
        "invalid_decision",
        "request_field",
      ],
    ];
    for (const [route, body, code, kind] of bodies) {
      const sent = JSON.stringify(body);
      const answer = await fetch(`${server.url}${route}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key}` },
        body: sent,
      });
      const text = await answer.text();
      const { error } = JSON.parse(text) as { error: { code: string; problems: Problem[] } };
      expect([answer.status, error.code]).toEqual([400, code]);
      expect(error.problems).toHaveLength(21);
      expect(error.problems.at(-1)).toEqual({ kind, path: "", message: "and 4980 more" });
      expect(text.length).toBeLessThan(sent.length);
    }
  });
});

describe("keys", () => {
  it("two Authorization headers are refused (401), whichever of them holds the key", async () => {
    for (const pair of [
      [`Bearer ${key}`, "Bearer nope"],
      ["Bearer nope", `Bearer ${key}`],
      [`Bearer ${key}`, `Bearer ${key}`],
    ]) {
      const answer = await raw(
        `GET ${TASKS}/1 HTTP/1.1\r\nHost: x\r\nAuthorization: ${pair[0]}\r\nAuthorization: ${pair[1]}\r\nConnection: close\r\n\r\n`,
      );
      expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    }
    expect((await api(server.url, "GET", `${TASKS}/1`, { key })).status).not.toBe(401);
  });

  it("a key whose name would forge the server's output (a newline, a terminal escape) refuses the keys file (503) until it is fixed", async () => {
    const file = keysFile(root);
    const good = await readFile(file, "utf8");
    const parsed = JSON.parse(good) as { keys: Array<Record<string, unknown>> };
    const forged = { ...parsed.keys[0], id: "abcdefabcdef", name: 'x\u001b[2K\r\u001b[1Akey removed: "lib"\nok' };
    for (const bad of [
      forged,
      { ...forged, name: "fine", teams: ["alpha\nkey removed"] },
      { ...forged, name: "fine", templates: ["\u001b[8m"] },
    ]) {
      await writeFile(file, JSON.stringify({ ...parsed, keys: [...parsed.keys, bad] }), { mode: 0o600 });
      const seen = logged.length;
      expect(await api(server.url, "GET", `${TASKS}/1`, { key })).toMatchObject({
        status: 503,
        json: { error: { code: "unavailable" } },
      });
      const said = logged.slice(seen).join("\n");
      expect(said).toMatch(/keys\.json: keys\[1\]\.(name|teams\[0\]|templates\[0\]): /);
      expect(said).not.toMatch(/[\u0000-\u0009\u000b-\u001f]|key added/);
    }
    await writeFile(file, good, { mode: 0o600 });
    expect((await api(server.url, "GET", `${TASKS}/1`, { key })).status).not.toBe(503);
  });
});

describe("a config.json that cannot be read", () => {
  it("is a 503 for creations and status polls, not 'no such template' or 'no such task'; fixed, it serves again", async () => {
    const created = await api(server.url, "POST", TASKS, { key, body: { template: "pong" } });
    expect(created.status).toBe(202);
    const config = path.join(root, "alpha", "config.json");
    await rename(config, `${config}.good`);
    try {
      for (const plant of [
        () => writeFile(config, '{"hooks": {'),
        () => writeFile(config, "[]"),
        async () => execFileSync("mkfifo", [config]),
      ]) {
        await rm(config, { force: true });
        await plant();
        const create = await api(server.url, "POST", TASKS, { key, body: { template: "pong" } });
        const poll = await api(server.url, "GET", `${TASKS}/${String(created.json.taskId)}`, { key });
        expect([create.status, codeOf(create), poll.status, codeOf(poll)]).toEqual([
          503,
          "unavailable",
          503,
          "unavailable",
        ]);
        expect((create.json.error as { message: string }).message).not.toContain(root); // no path of the server's
      }
    } finally {
      await rm(config, { force: true });
      await rename(`${config}.good`, config);
    }
    expect((await api(server.url, "GET", `${TASKS}/${String(created.json.taskId)}`, { key })).status).toBe(200);
  });
});

describe("team files that are not what their name says", () => {
  it("a FIFO for an Idempotency-Key's record, a file for hook-state/: 503 naming nothing of the server's, a warning naming the file, no stack", async () => {
    const records = path.join(root, "alpha", "hook-state", "api-requests");
    expect(
      (
        await api(server.url, "POST", TASKS, {
          key,
          body: { template: "pong" },
          headers: { "Idempotency-Key": "fifo-1" },
        })
      ).status,
    ).toBe(202);
    const [record] = (await readdir(records)).filter((n) => n.endsWith(".json"));
    await rm(path.join(records, String(record)));
    execFileSync("mkfifo", [path.join(records, String(record))]);
    const seen = logged.length;
    const answer = await api(server.url, "POST", TASKS, {
      key,
      body: { template: "pong" },
      headers: { "Idempotency-Key": "fifo-1" },
    });
    expect([answer.status, codeOf(answer)]).toEqual([503, "unavailable"]);
    expect(JSON.stringify(answer.json)).not.toContain(root);
    expect(logged.slice(seen)).toEqual([
      expect.stringMatching(/^warn: .*api-requests\/[0-9a-f]{64}\.json: not a regular file \(fifo\)$/),
    ]);
    await rm(path.join(records, String(record)));

    const state = path.join(root, "alpha", "hook-state");
    await rename(state, `${state}.aside`);
    try {
      await writeFile(state, "not a folder");
      const noState = await api(server.url, "POST", TASKS, {
        key,
        body: { template: "pong" },
        headers: { "Idempotency-Key": "fifo-2" },
      });
      expect([noState.status, codeOf(noState)]).toEqual([503, "unavailable"]);
    } finally {
      await rm(state, { force: true });
      await rename(`${state}.aside`, state);
    }
    expect(logged.filter((line) => line.startsWith("error:"))).toEqual([]);
  });
});

describe("decisions", () => {
  it("a template-limited key decides a gate by the task it was held on, in the deferral's own task list", async () => {
    const limited = (
      await createKey(
        root,
        keySpec({ name: "pinger", scopes: "gates:decide", teams: "alpha", templates: "ping", rateLimit: null }),
      )
    ).key;
    // Task 900 of the list config.json names now was made from "ping"; the held gate is task 900 of
    // the list the team used before: a worker's task.
    const task = (id: string, metadata: Record<string, unknown>) => ({
      id,
      subject: "s",
      description: "",
      owner: "alice",
      status: "completed",
      blocks: [],
      blockedBy: [],
      metadata,
      createdAt: "t",
      updatedAt: "t",
    });
    await writeFile(path.join(tasksDir(), "900.json"), JSON.stringify(task("900", { taskApi: { template: "ping" } })));
    await mkdir(path.join(root, "alpha", "tasks", "old"), { recursive: true });
    await writeFile(path.join(root, "alpha", "tasks", "old", "900.json"), JSON.stringify(task("900", {})));
    const runId = "0b0e5c1e-0000-4000-8000-000000000900";
    const deferrals = path.join(root, "alpha", "hook-state", "deferrals");
    await mkdir(deferrals, { recursive: true });
    const hook = {
      name: "on_task_completed.sh",
      kind: "v1",
      layer: "global",
      hookPath: "/nowhere/on_task_completed.sh",
      command: ["bash", "/nowhere/on_task_completed.sh"],
      gate: "on_task_completed",
    };
    const held = {
      version: 1,
      runId,
      eventRunId: runId,
      key: "task_completed:900:t",
      event: "task_completed",
      taskId: "900",
      member: "alice",
      timestamp: null,
      teamId: "alpha",
      taskListId: "old",
      hook,
      deferredAt: new Date().toISOString(),
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      logFile: null,
    };
    await writeFile(path.join(deferrals, `${runId}.json`), JSON.stringify(held));

    const answer = await api(server.url, "POST", `/api/v1/teams/alpha/runs/${runId}/decision`, {
      key: limited,
      body: { decision: "allow" },
    });
    expect([answer.status, codeOf(answer)], JSON.stringify(answer.json)).toEqual([403, "template_not_allowed"]);
    expect(JSON.parse(await readFile(path.join(deferrals, `${runId}.json`), "utf8"))).not.toHaveProperty("decision");

    // A service that decides at once may come before the leader has written the deferral: while the
    // ledger shows the run in flight, a template-limited key waits for it as any other key does.
    const early = "0b0e5c1e-0000-4000-8000-000000000901";
    await writeFile(path.join(tasksDir(), "901.json"), JSON.stringify(task("901", { taskApi: { template: "ping" } })));
    const begin = { op: "begin", key: "task_completed:901:t", at: new Date().toISOString(), runId: early, attempt: 1 };
    await writeFile(path.join(root, "alpha", "hook-state", "ledger.jsonl"), `${JSON.stringify(begin)}\n`);
    const decided = api(server.url, "POST", `/api/v1/teams/alpha/runs/${early}/decision`, {
      key: limited,
      body: { decision: "allow" },
    });
    // Unanswered after a moment (the server waits up to 5 s); refused at once, it would have won this race.
    const first = await Promise.race([
      decided.then(() => "answered"),
      new Promise((resolve) => setTimeout(resolve, 300, "waiting")),
    ]);
    expect(first).toBe("waiting");
    // The leader's hold, for real: the gate defers, and the task, its log and the deferral are written.
    const hooksDir = path.join(root, "_hooks");
    await mkdir(hooksDir, { recursive: true });
    await writeFile(path.join(hooksDir, "on_task_completed.sh"), `echo '{"decision":"defer","reason":"CI queued"}'\n`, {
      mode: 0o755,
    });
    const holding = await invokeEvent({
      setup: {
        identity: {
          teamId: "alpha",
          teamDir: path.join(root, "alpha"),
          taskListId: "alpha",
          leadName: "team-lead",
          style: "normal",
        },
        hooksDir,
        teamHooksDir: null,
        cwd: root,
        settings: teamSettings({ timeoutMs: 10_000 }),
      },
      event: "task_completed",
      key: "task_completed:901:t",
      taskId: "901",
      member: "alice",
      timestamp: null,
      applyPolicy: true,
      env: process.env,
      runId: early,
    });
    expect(holding.counted).toEqual({ state: "held", cause: "deferral" });
    const settled = await decided;
    expect(settled.status, JSON.stringify(settled.json)).toBe(200);
    expect(settled.json).toMatchObject({ runId: early, taskId: "901", decision: "allow", state: "applied" });
  });
});

describe("a lock a live process keeps", () => {
  it("bounds every queued creation by its own budget (503 once), instead of one budget per creation ahead of it", async () => {
    const lock = path.join(tasksDir(), ".highwatermark.lock");
    // This very process is alive: its lock is respected, never taken over as stale.
    await writeFile(
      lock,
      JSON.stringify({ pid: process.pid, createdAt: new Date().toISOString(), label: "a stuck worker" }),
    );
    try {
      const began = performance.now();
      const answers = await Promise.all(
        Array.from({ length: 4 }, async (_, n) => {
          const answer = await api(server.url, "POST", TASKS, {
            key,
            body: { template: "ping", parameters: { n } },
            ...(n % 2 ? { headers: { "Idempotency-Key": `stuck-${n}` } } : {}),
          });
          return { status: answer.status, code: codeOf(answer), ms: performance.now() - began };
        }),
      );
      expect(answers.map((a) => [a.status, a.code])).toEqual(Array(4).fill([503, "unavailable"]));
      // Queued one behind the other, they would answer after 1, 2, 3 and 4 budgets.
      expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(2 * LOCK_BUDGET_MS);
    } finally {
      await rm(lock, { force: true });
    }
    expect(
      (await api(server.url, "POST", TASKS, { key, body: { template: "ping", parameters: { n: 5 } } })).status,
    ).toBe(202);
  });
});
