/**
 * The work's story in the context document (contract v1, additive: `work`), through the built bin and
 * a real `serve` on 127.0.0.1: a task the task API made carries its template and key (the same
 * `createdBy` as its status route) and its parameters; the worker's result summary; the leader's
 * follow-up names its source task and gate; a failure carries the worker's recorded error; a
 * confidential team's handler is sent who made the task, never its parameters, result or error.
 * The gates are run by `run` (the document each gate was given is in its log, from its stderr).
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startReceiver, type Receiver } from "../helpers/http-receiver.js";
import { ensureBuilt, readLogs, runBin } from "../helpers/leader-rig.js";
import { type ServeProcess, api, createKey, makeTeamsRoot, startServe } from "../helpers/serve-rig.js";

const TEMPLATES = {
  deploy: {
    subject: "Deploy {{parameters.branch}}",
    owner: "ada",
    parameters: { branch: { type: "string", required: true }, canary: { type: "boolean" } },
  },
};
// Prints the document it was given (its log keeps stderr); denies the deploy of main once.
const GATE = `#!/usr/bin/env bash
doc=$(cat)
printf 'DOC %s\\n' "$doc" >&2
case "$doc" in *'"branch":"main"'*) exit 1 ;; esac
exit 0
`;

let root: string;
let cleanup: () => Promise<void>;
let serve: ServeProcess;
let receiver: Receiver;
let key: string;

beforeAll(async () => {
  await ensureBuilt();
  receiver = await startReceiver();
  receiver.route("/work-secret", (_req, res) =>
    res.writeHead(200, { "content-type": "application/json" }).end('{"decision":"allow"}'),
  );
  ({ root, cleanup } = await makeTeamsRoot({
    alpha: { hooks: { templates: TEMPLATES, failureAction: "followup" } },
    secret: {
      hooks: {
        templates: TEMPLATES,
        confidential: true,
        handlers: [{ name: "audit", events: ["task_completed"], url: `${receiver.url}/work-secret` }],
      },
    },
  }));
  const hooks = path.join(root, "_hooks");
  await mkdir(hooks, { recursive: true });
  await writeFile(path.join(hooks, "on_task_completed.sh"), GATE, { mode: 0o755 });
  await writeFile(path.join(hooks, "on_task_failed.sh"), GATE, { mode: 0o755 });
  key = await createKey(root, [
    ...["--name", "ci", "--scopes", "tasks:create,tasks:read"],
    ...["--teams", "alpha,secret", "--all-templates"],
  ]);
  serve = await startServe(root);
}, 120_000);

afterAll(async () => {
  if (serve) expect(await serve.stop()).toMatchObject({ code: 0, signal: null });
  await receiver?.close();
  await cleanup?.();
});

const taskFile = (team: string, id: string) => path.join(root, team, "tasks", team, `${id}.json`);

async function editTask(team: string, id: string, edit: (task: Record<string, unknown>) => void): Promise<void> {
  const task = JSON.parse(await readFile(taskFile(team, id), "utf8")) as Record<string, unknown>;
  task.metadata ??= {};
  edit(task);
  await writeFile(taskFile(team, id), `${JSON.stringify(task, null, 2)}\n`);
}

const meta = (task: Record<string, unknown>) => task.metadata as Record<string, unknown>;

async function complete(team: string, id: string, result: string): Promise<void> {
  await editTask(team, id, (task) => {
    task.status = "completed";
    meta(task).completedAt = new Date().toISOString();
    meta(task).result = result;
  });
}

/** Runs the event by hand (with the policy) and returns the document the file gate was given. */
async function gate(team: string, event: string, id: string): Promise<Record<string, unknown>> {
  const teamDir = path.join(root, team);
  const ran = await runBin(["run", event, "--team-dir", teamDir, "--task", id, "--apply-policy", "--json"]);
  expect([0, 1], ran.stdout + ran.stderr).toContain(ran.code);
  const runIds = (JSON.parse(ran.stdout) as { runIds?: string[]; result: { runId: string } }).runIds;
  const first = runIds?.[0] ?? (JSON.parse(ran.stdout) as { result: { runId: string } }).result.runId;
  const log = (await readLogs(teamDir)).find((l) => l.result.runId === first);
  const line = log?.result.stderr.split("\n").find((l) => l.startsWith("DOC "));
  if (!line) throw new Error(`no document in the log of run ${first}: ${JSON.stringify(log?.result.stderr)}`);
  return JSON.parse(line.slice(4)) as Record<string, unknown>;
}

async function createTask(team: string, parameters: Record<string, unknown>): Promise<string> {
  const made = await api(serve.url, "POST", `/api/v1/teams/${team}/tasks`, {
    key,
    body: { template: "deploy", parameters },
  });
  expect(made.status, JSON.stringify(made.json)).toBe(202);
  return String(made.json.taskId);
}

describe("the document's work: what made the task, its parameters, the worker's result and error", () => {
  it("an API task: its template and key (as the status route says), its parameters and the result summary", async () => {
    const id = await createTask("alpha", { branch: "main", canary: true });
    await complete("alpha", id, "Deployed main to staging; smoke tests green");
    const doc = await gate("alpha", "task_completed", id);

    const status = await api(serve.url, "GET", `/api/v1/teams/alpha/tasks/${id}`, { key });
    expect(status.status).toBe(200);
    expect(doc.work).toEqual({
      createdBy: status.json.createdBy,
      parameters: { branch: "main", canary: true },
      summary: "Deployed main to staging; smoke tests green",
      error: null,
    });
    expect(status.json.createdBy).toEqual({ kind: "api", template: "deploy", key: "ci" });
    // Every key of the first v1 document first, in its order; the work after them.
    expect(Object.keys(doc)).toEqual(["version", "event", "team", "member", "timestamp", "task", "work"]);

    // The gate denied: the leader's follow-up names its source task and its gate.
    const logs = await readLogs(path.join(root, "alpha"));
    const policy = logs.find((l) => l.policy && l.invocation.completedTask?.id === id)?.policy as
      | { followupTaskId?: string }
      | undefined;
    const followup = String(policy?.followupTaskId ?? "");
    expect(followup).toMatch(/^\d+$/);
    await complete("alpha", followup, "Fixed the smoke test");
    const next = await gate("alpha", "task_completed", followup);
    expect(next.work).toEqual({
      createdBy: { kind: "followup", sourceTaskId: id, hook: "on_task_completed", event: "task_completed" },
      parameters: null,
      summary: "Fixed the smoke test",
      error: null,
    });
  });

  it("a worker's failure: the error it recorded", async () => {
    const worker = {
      id: "500",
      subject: "Write the parser",
      description: "",
      owner: "bob",
      status: "pending",
      blocks: [],
      blockedBy: [],
      metadata: { abortedAt: new Date().toISOString(), abortedBy: "bob", abortReason: "npm test: 3 failing" },
      createdAt: "2026-12-01T08:00:00.000Z",
      updatedAt: "2026-12-01T09:00:00.000Z",
    };
    await writeFile(taskFile("alpha", "500"), `${JSON.stringify(worker)}\n`);
    const doc = await gate("alpha", "task_failed", "500");
    expect(doc.work).toEqual({
      createdBy: { kind: "worker" },
      parameters: null,
      summary: null,
      error: "npm test: 3 failing",
    });
  });

  it("a confidential team: its handler is sent who made the task, never the parameters, result or error", async () => {
    const id = await createTask("secret", { branch: "hotfix-payroll" });
    await complete("secret", id, "Patched the payroll rounding");
    const doc = await gate("secret", "task_completed", id);
    // The file gate runs on this machine: it is shown the whole story.
    expect(doc.work).toMatchObject({
      parameters: { branch: "hotfix-payroll" },
      summary: "Patched the payroll rounding",
    });
    const [request] = receiver.requests("/work-secret");
    const body = JSON.parse(request?.body.toString("utf8") ?? "{}") as Record<string, unknown>;
    expect(body.work).toEqual({
      createdBy: { kind: "api", template: "deploy", key: "ci" },
      parameters: null,
      summary: null,
      error: null,
    });
    expect(body.confidential).toBe(true);
    expect(request?.body.toString("utf8")).not.toContain("hotfix-payroll");
    expect(request?.body.toString("utf8")).not.toContain("rounding");
  });
});
