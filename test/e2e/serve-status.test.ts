/**
 * What a task's status adds, through the built bin and a real `serve` on 127.0.0.1: the run that
 * decided its gate (its run id, outcome, error kind, code, summary, start and end, as its log and
 * the task say) and what created it (a template and key, the leader's follow-up, a worker); a
 * confidential team's keeps the lifecycle only. The gates are decided by `run --apply-policy`.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, readLogs, runBin } from "../helpers/leader-rig.js";
import { type ServeProcess, api, createKey, makeTeamsRoot, startServe } from "../helpers/serve-rig.js";

const TEMPLATES = {
  deploy: {
    subject: "Deploy {{parameters.branch}}",
    owner: "ada",
    parameters: { branch: { type: "string", required: true } },
  },
};
const DENY = `#!/usr/bin/env bash
echo "lint: 2 problems in src/payroll.ts" >&2
echo '{"decision":"deny","code":"lint.errors","reason":"2 problems in src/payroll.ts"}'
`;
const DEFER = `#!/usr/bin/env bash
echo '{"decision":"defer","reason":"waiting for review"}'
`;
const SLOW = "#!/usr/bin/env bash\nsleep 10\n";

let root: string;
let cleanup: () => Promise<void>;
let serve: ServeProcess;
let key: string;

beforeAll(async () => {
  await ensureBuilt();
  const hooks = { templates: TEMPLATES, failureAction: "reopen_followup" };
  ({ root, cleanup } = await makeTeamsRoot({
    alpha: { hooks },
    secret: { hooks: { ...hooks, confidential: true } },
    held: { hooks },
  }));
  await writeHooks(root);
  // The team layer of `held` replaces the global gate with one that holds it for a decision.
  await mkdir(path.join(root, "held", "hooks"), { recursive: true });
  await writeFile(path.join(root, "held", "hooks", "on_task_completed.sh"), DEFER, { mode: 0o755 });
  key = await createKey(root, [
    "--name",
    "ci",
    "--scopes",
    "tasks:create,tasks:read",
    "--teams",
    "alpha,secret,held",
    "--all-templates",
  ]);
  serve = await startServe(root);
}, 120_000);

afterAll(async () => {
  if (serve) expect(await serve.stop()).toMatchObject({ code: 0, signal: null });
  await cleanup?.();
});

async function writeHooks(teamsRoot: string): Promise<void> {
  const dir = path.join(teamsRoot, "_hooks");
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "on_task_completed.sh"), DENY, { mode: 0o755 });
  await writeFile(path.join(dir, "on_task_failed.sh"), SLOW, { mode: 0o755 });
}

const taskFile = (team: string, id: string) => path.join(root, team, "tasks", team, `${id}.json`);

async function editTask(
  team: string,
  id: string,
  edit: (task: Record<string, unknown>, meta: Record<string, unknown>) => void,
): Promise<void> {
  const task = JSON.parse(await readFile(taskFile(team, id), "utf8")) as Record<string, unknown>;
  const meta = (task.metadata ?? {}) as Record<string, unknown>;
  edit(task, meta);
  await writeFile(taskFile(team, id), `${JSON.stringify({ ...task, metadata: meta }, null, 2)}\n`);
}

async function createTask(team: string): Promise<string> {
  const made = await api(serve.url, "POST", `/api/v1/teams/${team}/tasks`, {
    key,
    body: { template: "deploy", parameters: { branch: "main" } },
  });
  expect(made.status).toBe(202);
  return String(made.json.taskId);
}

/** Completes task `id` as its worker would, and gates the completion by hand with the policy applied. */
async function completeAndGate(team: string, id: string): Promise<void> {
  await editTask(team, id, (task, meta) => {
    task.status = "completed";
    meta.completedAt = new Date().toISOString();
    meta.result = "deployed";
  });
  const ran = await runBin([
    "run",
    "task_completed",
    "--team-dir",
    path.join(root, team),
    "--task",
    id,
    "--apply-policy",
  ]);
  expect(ran.stdout).toMatch(/denied|failed|deferred/);
}

const status = async (team: string, id: string) => {
  const answer = await api(serve.url, "GET", `/api/v1/teams/${team}/tasks/${id}`, { key });
  expect(answer.status).toBe(200);
  return answer.json;
};

/** The log of the run that decided the gate: the one of the task's event key with the policy step. */
async function decidingLog(team: string, id: string) {
  const task = JSON.parse(await readFile(taskFile(team, id), "utf8")) as { metadata: Record<string, unknown> };
  const logs = (await readLogs(path.join(root, team))).filter(
    (l) => l.key === task.metadata.qualityGateEventKey && l.policy,
  );
  return logs.sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt)).at(-1);
}

describe("GET …/tasks/{id}: the deciding run and what created the task", () => {
  it("a task made by the API, before any gate: createdBy is its template and key, decidingRun null", async () => {
    const id = await createTask("alpha");
    expect(await status("alpha", id)).toMatchObject({
      id,
      status: "pending",
      qualityGateStatus: null,
      decidingRun: null,
      createdBy: { kind: "api", template: "deploy", key: "ci" },
    });
  });

  it("its gate denied: the deciding run's id, outcome, code, summary and times, as its log says", async () => {
    const id = await createTask("alpha");
    await completeAndGate("alpha", id);
    const log = await decidingLog("alpha", id);
    const started = Date.parse(log?.startedAt ?? "");
    const answer = await status("alpha", id);
    expect(answer).toMatchObject({
      id,
      status: "pending",
      qualityGateStatus: "failed",
      createdBy: { kind: "api", template: "deploy", key: "ci" },
    });
    expect(answer.decidingRun).toEqual({
      runId: log?.result.runId,
      hook: "on_task_completed",
      outcome: "failed",
      errorKind: null,
      code: "lint.errors",
      summary: expect.stringContaining("2 problems in src/payroll.ts"),
      startedAt: log?.startedAt,
      endedAt: new Date(started + Math.round(log?.result.durationMs ?? 0)).toISOString(),
    });
  });

  it("the leader's follow-up names its source task and gate; a task a worker wrote says worker", async () => {
    const id = await createTask("alpha");
    await completeAndGate("alpha", id);
    const task = JSON.parse(await readFile(taskFile("alpha", id), "utf8")) as { metadata: Record<string, unknown> };
    const policy = (await decidingLog("alpha", id))?.policy as { followupTaskId?: string };
    expect(policy.followupTaskId).toMatch(/^\d+$/);
    expect(task.metadata.qualityGateEventKey).toMatch(/^task_completed:/);
    expect(await status("alpha", String(policy.followupTaskId))).toMatchObject({
      decidingRun: null,
      createdBy: { kind: "followup", sourceTaskId: id, hook: "on_task_completed", event: "task_completed" },
    });
    const worker = {
      id: "900",
      subject: "by hand",
      description: "",
      status: "pending",
      blocks: [],
      blockedBy: [],
      createdAt: "t",
      updatedAt: "t",
    };
    await writeFile(taskFile("alpha", "900"), `${JSON.stringify(worker)}\n`);
    expect(await status("alpha", "900")).toMatchObject({ decidingRun: null, createdBy: { kind: "worker" } });
  });

  it("a gate that timed out: outcome timed_out and its error kind", async () => {
    const id = await createTask("alpha");
    await editTask("alpha", id, (task, meta) => {
      task.owner = "ada";
      meta.abortedAt = new Date().toISOString();
      meta.abortedBy = "ada";
      meta.abortReason = "gave up";
    });
    const ran = await runBin([
      "run",
      "task_failed",
      "--team-dir",
      path.join(root, "alpha"),
      "--task",
      id,
      "--apply-policy",
      "--timeout",
      "300ms",
    ]);
    expect(ran.stdout).toMatch(/timed out|timeout/);
    const log = await decidingLog("alpha", id);
    expect((await status("alpha", id)).decidingRun).toMatchObject({
      runId: log?.result.runId,
      hook: "on_task_failed",
      outcome: "timed_out",
      errorKind: "timeout",
    });
  });

  it("a held gate: the deferring run until a decision comes, then the decision's run", async () => {
    const id = await createTask("held");
    await completeAndGate("held", id);
    const held = await decidingLog("held", id);
    expect((await status("held", id)).decidingRun).toMatchObject({
      runId: held?.result.runId,
      outcome: "deferred",
      summary: expect.stringContaining("waiting for review"),
    });
    const deferredRunId = JSON.parse(await readFile(taskFile("held", id), "utf8")).metadata
      .qualityGateDeferredRunId as string;
    const decided = await runBin([
      "decide",
      "--yes",
      "--team-dir",
      path.join(root, "held"),
      deferredRunId,
      "allow",
      "--reason",
      "reviewed",
    ]);
    expect(decided.code).toBe(0);
    const decision = await decidingLog("held", id);
    expect(decision?.decision).toBeDefined();
    expect(decision?.result.runId).not.toBe(held?.result.runId);
    expect(await status("held", id)).toMatchObject({
      qualityGateStatus: "passed",
      decidingRun: { runId: decision?.result.runId, outcome: "passed", startedAt: decision?.startedAt },
    });
  });

  it("a confidential team: the lifecycle only, no summary, no code; nothing the gate said is in it", async () => {
    const id = await createTask("secret");
    await completeAndGate("secret", id);
    const log = await decidingLog("secret", id);
    const answer = await status("secret", id);
    expect(answer.decidingRun).toEqual({
      runId: log?.result.runId,
      hook: "on_task_completed",
      outcome: "failed",
      errorKind: null,
      code: null,
      summary: null,
      startedAt: log?.startedAt,
      endedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    expect(answer.createdBy).toEqual({ kind: "api", template: "deploy", key: "ci" });
    expect(JSON.stringify(answer)).not.toMatch(/payroll|lint/);
  });
});
