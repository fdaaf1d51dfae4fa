/**
 * The task API in-process (server/server.ts on 127.0.0.1:0) with real requests and real files: what
 * outlives a restart (Idempotency-Key records), a crash between an idempotent creation's writes,
 * malformed HTTP, a broken keys file or config, a task not made by the API, and closing.
 */
import { connect } from "node:net";
import { mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, keysFile, keySpec } from "../../extensions/teams-hooks/server/keys.js";
import { type TaskServer, startTaskServer } from "../../extensions/teams-hooks/server/server.js";
import { api, codeOf, makeTeamsRoot } from "../helpers/serve-rig.js";

const TEMPLATES = {
  ping: { subject: "Ping {{parameters.n}}", owner: "bob", parameters: { n: { type: "number", required: true } } },
};

let root: string;
let cleanup: () => Promise<void>;
let key: string;
let limited: string;
const logged: string[] = [];
let server: TaskServer;

async function start(): Promise<TaskServer> {
  return startTaskServer({
    teamsRoot: root,
    host: "127.0.0.1",
    port: 0,
    log: (level, message) => logged.push(`${level}: ${message}`),
  });
}

/** A pending task's fields but its id, in the order a task file has them. */
const PENDING = {
  subject: "s",
  description: "",
  status: "pending",
  blocks: [],
  blockedBy: [],
  createdAt: "t",
  updatedAt: "t",
};
const tasksDir = (): string => path.join(root, "alpha", "tasks", "alpha");
const taskFiles = async (): Promise<string[]> =>
  (await readdir(tasksDir()).catch(() => [] as string[])).filter((n) => n.endsWith(".json"));
const create = (body: unknown, idem?: string) =>
  api(server.url, "POST", "/api/v1/teams/alpha/tasks", {
    key,
    body,
    ...(idem ? { headers: { "Idempotency-Key": idem } } : {}),
  });

beforeAll(async () => {
  ({ root, cleanup } = await makeTeamsRoot({
    alpha: { hooks: { templates: TEMPLATES } },
    broken: { hooks: { templates: { bad: { subject: "" } } } },
  }));
  key = (
    await createKey(
      root,
      keySpec({
        name: "lib",
        scopes: "tasks:create,tasks:read",
        teams: "alpha,broken,bare",
        templates: undefined,
        allTemplates: true,
        rateLimit: null,
      }),
    )
  ).key;
  limited = (
    await createKey(
      root,
      keySpec({ name: "limited", scopes: "tasks:read", teams: "alpha", templates: "ping", rateLimit: null }),
    )
  ).key;
  server = await start();
});

afterAll(async () => {
  await server?.close();
  await cleanup?.();
});

describe("Idempotency-Key", () => {
  it("outlives a restart of the server: the same task after it, a 409 for another body", async () => {
    const first = await create({ template: "ping", parameters: { n: 1 } }, "restart-1");
    expect(first.status).toBe(202);
    await server.close();
    server = await start();
    const again = await create({ template: "ping", parameters: { n: 1 } }, "restart-1");
    expect(again).toMatchObject({ status: 202, json: first.json });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(codeOf(await create({ template: "ping", parameters: { n: 2 } }, "restart-1"))).toBe("idempotency_conflict");
    // The owner was told once, whatever the retries.
    const inbox = JSON.parse(
      await readFile(path.join(root, "alpha", "mailboxes", "alpha", "inboxes", "bob.json"), "utf8"),
    ) as Array<{ text: string }>;
    expect(inbox.filter((m) => (JSON.parse(m.text) as { taskId: string }).taskId === first.json.taskId)).toHaveLength(
      1,
    );
  });

  it("after a crash between its two writes, finds the task it made, or makes the one it did not", async () => {
    const first = await create({ template: "ping", parameters: { n: 7 } }, "crash-1");
    const recordDir = path.join(root, "alpha", "hook-state", "api-requests");
    const records = await readdir(recordDir);
    let recordFile = "";
    for (const name of records.filter((n) => n.endsWith(".json"))) {
      const record = JSON.parse(await readFile(path.join(recordDir, name), "utf8")) as { taskId?: string };
      if (record.taskId === first.json.taskId) recordFile = path.join(recordDir, name);
    }
    const record = JSON.parse(await readFile(recordFile, "utf8")) as Record<string, unknown>;
    // Crashed after the task was written: the record still says `creating`.
    await writeFile(recordFile, JSON.stringify({ ...record, state: "creating", taskId: undefined }));
    const before = (await taskFiles()).length;
    const found = await create({ template: "ping", parameters: { n: 7 } }, "crash-1");
    expect(found).toMatchObject({ status: 202, json: first.json });
    expect((await taskFiles()).length).toBe(before);
    // Crashed before the task was written.
    await rm(path.join(tasksDir(), `${String(first.json.taskId)}.json`));
    await writeFile(recordFile, JSON.stringify({ ...record, state: "creating", taskId: undefined }));
    const made = await create({ template: "ping", parameters: { n: 7 } }, "crash-1");
    expect(made.status).toBe(202);
    expect(made.json.taskId).not.toBe(first.json.taskId);
    expect(JSON.parse(await readFile(recordFile, "utf8"))).toMatchObject({
      state: "created",
      taskId: made.json.taskId,
    });
  });
});

describe("bad input never stops the server", () => {
  const raw = (text: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const socket = connect(Number(new URL(server.url).port), "127.0.0.1");
      let answer = "";
      socket
        .setEncoding("utf8")
        .on("data", (c: string) => (answer += c))
        .on("end", () => resolve(answer))
        .on("error", reject);
      socket.end(text);
    });

  it("answers malformed HTTP and oversized headers with JSON, then closes", async () => {
    const garbage = await raw("GARBAGE\r\n\r\n");
    expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(garbage.slice(garbage.indexOf("\r\n\r\n") + 4))).toMatchObject({
      error: { code: "invalid_request" },
    });
    const huge = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
    expect(huge).toMatch(/^HTTP\/1\.1 431 /);
    expect(huge).toContain('"code":"headers_too_large"');
    expect((await api(server.url, "GET", "/healthz")).status).toBe(200);
  });

  it("a keys file that is not one refuses every request (503) until it is fixed, without a restart", async () => {
    const file = keysFile(root);
    const good = await readFile(file, "utf8");
    await writeFile(file, "{ not json");
    try {
      expect(await api(server.url, "GET", "/api/v1/teams/alpha/tasks/1", { key })).toMatchObject({
        status: 503,
        json: { error: { code: "unavailable" } },
      });
      expect(logged.some((line) => line.startsWith("warn:") && line.includes("keys.json"))).toBe(true);
    } finally {
      await writeFile(file, good);
    }
    expect((await api(server.url, "GET", "/api/v1/teams/alpha/tasks/1", { key })).status).not.toBe(503);
  });

  it("a team whose hooks block is invalid: 503; a team without config.json: no template (404)", async () => {
    expect(
      await api(server.url, "POST", "/api/v1/teams/broken/tasks", { key, body: { template: "bad" } }),
    ).toMatchObject({ status: 503, json: { error: { code: "unavailable" } } });
    await mkdir(path.join(root, "bare"));
    expect(codeOf(await api(server.url, "POST", "/api/v1/teams/bare/tasks", { key, body: { template: "ping" } }))).toBe(
      "template_not_found",
    );
  });

  it("gateState says where the task's current completion is: unjudged while a newer one than the gate judged waits", async () => {
    const judged = "2026-12-07T08:00:00.000Z";
    const meta = {
      qualityGateStatus: "passed",
      qualityGateEventKey: `task_completed:600:${judged}`,
      qualityGateAt: "2026-12-07T08:00:05.000Z",
    };
    const task = { id: "600", ...PENDING, status: "completed", metadata: { ...meta, completedAt: judged } };
    await mkdir(tasksDir(), { recursive: true });
    await writeFile(path.join(tasksDir(), "600.json"), `${JSON.stringify(task)}\n`);
    const read = async () => (await api(server.url, "GET", "/api/v1/teams/alpha/tasks/600", { key })).json;
    expect(await read()).toMatchObject({ qualityGateStatus: "passed", gateState: { state: "passed" } });
    // The worker completes it again: the last gate's word stays, and the completion is not judged yet.
    const again = { ...task, metadata: { ...meta, completedAt: "2026-12-07T09:00:00.000Z" } };
    await writeFile(path.join(tasksDir(), "600.json"), `${JSON.stringify(again)}\n`);
    expect(await read()).toMatchObject({ qualityGateStatus: "passed", gateState: { state: "unjudged" } });
    // A word no gate writes is no gate's word.
    const forged = { ...task, metadata: { ...meta, qualityGateStatus: "approved" } };
    await writeFile(path.join(tasksDir(), "600.json"), `${JSON.stringify(forged)}\n`);
    expect(await read()).toMatchObject({ qualityGateStatus: null, gateState: { state: "unjudged" } });
  });

  it("a task not made by the API is not one a template-limited key may read", async () => {
    await writeFile(path.join(tasksDir(), "500.json"), `${JSON.stringify({ id: "500", ...PENDING })}\n`);
    expect(codeOf(await api(server.url, "GET", "/api/v1/teams/alpha/tasks/500", { key: limited }))).toBe(
      "template_not_allowed",
    );
    expect((await api(server.url, "GET", "/api/v1/teams/alpha/tasks/500", { key })).json).toEqual({
      id: "500",
      status: "pending",
      qualityGateStatus: null,
      gateState: { state: "unjudged" },
      startDenial: null,
      updatedAt: "t",
      decidingRun: null,
      createdBy: { kind: "worker" },
    });
    // A file whose id says another task is not that task.
    await writeFile(path.join(tasksDir(), "501.json"), `${JSON.stringify({ id: "7", ...PENDING })}\n`);
    expect(codeOf(await api(server.url, "GET", "/api/v1/teams/alpha/tasks/501", { key }))).toBe("task_not_found");
  });
});

describe("slow clients", () => {
  it("a request whose headers do not come in time gets a JSON 408, and the connection closes", async () => {
    const own = await startTaskServer({
      teamsRoot: root,
      host: "127.0.0.1",
      port: 0,
      headersTimeoutMs: 300,
      log: () => undefined,
    });
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(new URL(own.url).port), "127.0.0.1", () =>
          socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n"),
        );
        let text = "";
        socket
          .setEncoding("utf8")
          .on("data", (c: string) => (text += c))
          .on("close", () => resolve(text))
          .on("error", reject);
        setTimeout(() => socket.destroy(new Error("no answer within 5 s")), 5_000).unref();
      });
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(answer).toContain('"code":"request_timeout"');
    } finally {
      await own.close();
    }
  });
});

describe("closing", () => {
  it("does not wait for an idle keep-alive connection, and may be called twice", async () => {
    const own = await start();
    const socket = connect(Number(new URL(own.url).port), "127.0.0.1");
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    await new Promise<void>((resolve) => socket.once("data", () => resolve()));
    const began = performance.now();
    await Promise.all([own.close(), own.close()]);
    expect(performance.now() - began).toBeLessThan(2_000);
    socket.destroy();
  });
});
