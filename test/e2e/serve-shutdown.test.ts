/**
 * SIGTERM of the built `serve` while a creation waits for a lock that a live process keeps: the
 * client is cut at the end of the grace, so the task must not be written afterwards (the client saw
 * no answer and would make it twice), the process exits soon after the cut, and a retry with the same
 * Idempotency-Key against a new server makes the task once.
 */
import { mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ensureBuilt, waitUntil } from "../helpers/leader-rig.js";
import { api, teamKey, makeTeamsRoot, startServe } from "../helpers/serve-rig.js";

/** serve's grace for requests under way after SIGTERM (server/server.ts). */
const GRACE_MS = 5_000;

let root: string;
let cleanup: () => Promise<void>;
let key: string;

beforeAll(async () => {
  await ensureBuilt();
  ({ root, cleanup } = await makeTeamsRoot({ alpha: { hooks: { templates: { job: { subject: "Job" } } } } }));
  key = await teamKey(root, "ci", "tasks:create", "alpha");
}, 240_000);

afterAll(async () => {
  await cleanup?.();
});

it("a creation cut off by SIGTERM writes no task, the process exits soon after the cut, and the retry makes it once", async () => {
  const tasksDir = path.join(root, "alpha", "tasks", "alpha");
  const records = path.join(root, "alpha", "hook-state", "api-requests");
  const tasks = async (): Promise<string[]> =>
    (await readdir(tasksDir).catch(() => [] as string[])).filter((n) => n.endsWith(".json"));
  const serve = await startServe(root);
  const lock = path.join(tasksDir, ".highwatermark.lock");
  await mkdir(tasksDir, { recursive: true });
  // This test's process is alive: serve respects its lock.
  await writeFile(
    lock,
    JSON.stringify({ pid: process.pid, createdAt: new Date().toISOString(), label: "a stuck worker" }),
  );
  const request = { key, body: { template: "job" }, headers: { "Idempotency-Key": "cut-1" } };
  const cut = api(serve.url, "POST", "/api/v1/teams/alpha/tasks", request).then(
    (answer) => `answered ${answer.status}`,
    () => "cut",
  );
  // The request is under way once its Idempotency-Key record says "creating": it waits for the lock.
  await waitUntil("the creation to wait for the lock", async () =>
    (await readdir(records).catch(() => [] as string[])).some((n) => n.endsWith(".json")),
  );
  const began = performance.now();
  serve.child.kill("SIGTERM");
  expect(await cut).toBe("cut");
  // The lock frees after the cut: a server that went on would now write the task nobody was answered for.
  await rm(lock);
  const exit = await serve.exited;
  expect(exit).toEqual({ code: 0, signal: null });
  expect(performance.now() - began).toBeLessThan(GRACE_MS + 3_000);
  expect(await tasks()).toEqual([]);
  expect(serve.stderr()).toBe("");

  const again = await startServe(root);
  try {
    const retried = await api(again.url, "POST", "/api/v1/teams/alpha/tasks", request);
    expect(retried.status).toBe(202);
    expect(await tasks()).toEqual([`${String(retried.json.taskId)}.json`]);
    expect(
      JSON.parse(await readFile(path.join(tasksDir, `${String(retried.json.taskId)}.json`), "utf8")),
    ).toMatchObject({ subject: "Job" });
  } finally {
    await again.stop();
  }
}, 30_000);
