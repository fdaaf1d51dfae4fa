/**
 * 200 task creations through the real `serve` (16 requests in flight, on loopback) while a worker
 * process creates tasks in the same list with its own plain-JS lock protocol: 200 distinct API tasks,
 * no id given twice, every file a task, the watermark at the top, each API task's owner told once.
 */
import { readFile, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ensureBuilt, startWorker, waitUntil } from "../helpers/leader-rig.js";
import { type ServeProcess, api, teamKey, makeTeamsRoot, pool, startServe } from "../helpers/serve-rig.js";

const API_TASKS = 200;
const WORKER_TASKS = 100;

let root: string;
let cleanup: () => Promise<void>;
let serve: ServeProcess;
let key: string;

beforeAll(async () => {
  await ensureBuilt();
  ({ root, cleanup } = await makeTeamsRoot({
    alpha: {
      hooks: {
        templates: {
          job: { subject: "Job {{parameters.n}}", owner: "ada", parameters: { n: { type: "number", required: true } } },
        },
      },
    },
  }));
  key = await teamKey(root, "load", "tasks:create", "alpha");
  serve = await startServe(root);
}, 240_000);

afterAll(async () => {
  if (serve) expect(await serve.stop()).toMatchObject({ code: 0 });
  await cleanup?.();
});

it(`${API_TASKS} concurrent creations beside a worker creating ${WORKER_TASKS}: no id collides, every file parses`, async () => {
  const tasksDir = path.join(root, "alpha", "tasks", "alpha");
  const goFile = path.join(root, "go");
  const worker = startWorker("create-plain", { tasksDir, count: WORKER_TASKS, pauseMs: 5, goFile });
  await writeFile(goFile, "");
  // The requests start once the worker is creating (its first task is there): on a busy machine a
  // fresh process can take longer to start than the server takes for all 200.
  await waitUntil(
    "the worker's first task",
    async () => ((await readdir(tasksDir).catch(() => [])).some((n) => /^\d+\.json$/.test(n)) ? true : undefined),
    { timeoutMs: 30_000 },
  );
  const answers = await pool(
    Array.from({ length: API_TASKS }, (_, n) => n),
    16,
    (n) => api(serve.url, "POST", "/api/v1/teams/alpha/tasks", { key, body: { template: "job", parameters: { n } } }),
  );
  const { ids: workerIds } = (await worker.result) as { ids: string[] };

  expect(answers.map((a) => a.status)).toEqual(Array(API_TASKS).fill(202));
  const apiIds = answers.map((a) => String(a.json.taskId));
  expect(new Set(apiIds).size).toBe(API_TASKS);
  expect(new Set(workerIds).size).toBe(WORKER_TASKS);
  expect(apiIds.filter((id) => workerIds.includes(id))).toEqual([]);
  // They did run side by side: each side's ids reach into the other's range.
  const [apiNums, workerNums] = [apiIds.map(Number), workerIds.map(Number)];
  expect(Math.min(...workerNums)).toBeLessThan(Math.max(...apiNums));
  expect(Math.min(...apiNums)).toBeLessThan(Math.max(...workerNums));

  // Every file of the list is a task, holding what its creator wrote; nothing else is left behind.
  const names = await readdir(tasksDir);
  expect(names.filter((n) => n !== ".highwatermark" && !/^\d+\.json$/.test(n))).toEqual([]);
  const total = API_TASKS + WORKER_TASKS;
  expect(
    names
      .filter((n) => n.endsWith(".json"))
      .map((n) => Number(n.slice(0, -5)))
      .sort((a, b) => a - b),
  ).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  expect((await readFile(path.join(tasksDir, ".highwatermark"), "utf8")).trim()).toBe(String(total));
  const byId = new Map<string, Record<string, unknown>>();
  for (const name of names.filter((n) => n.endsWith(".json"))) {
    const task = JSON.parse(await readFile(path.join(tasksDir, name), "utf8")) as Record<string, unknown>;
    expect(`${String(task.id)}.json`).toBe(name);
    byId.set(String(task.id), task);
  }
  answers.forEach((answer, n) =>
    expect(byId.get(String(answer.json.taskId))).toMatchObject({
      subject: `Job ${n}`,
      owner: "ada",
      status: "pending",
    }),
  );
  for (const id of workerIds) expect(byId.get(id)?.subject).toMatch(/^made by worker \d+$/);

  // Each API task's owner was told once.
  const inbox = JSON.parse(
    await readFile(path.join(root, "alpha", "mailboxes", "alpha", "inboxes", "ada.json"), "utf8"),
  ) as Array<{ text: string }>;
  const told = inbox.map((m) => JSON.parse(m.text) as { type: string; taskId: string });
  expect(told.every((m) => m.type === "task_assignment")).toBe(true);
  expect(told.map((m) => m.taskId).sort()).toEqual([...apiIds].sort());
  expect(serve.stderr()).toBe("");
}, 60_000);
