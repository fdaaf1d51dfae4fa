/**
 * A task from a template, written the way the team writes tasks: the id allocated under
 * `.highwatermark.lock` (team/tasks.ts createTask), the task file atomic, the owner told with a
 * `task_assignment` message from the lead in the task namespace, as the policy's follow-ups are, at
 * most once per task (team/sent-log.ts).
 *
 * An `Idempotency-Key` makes a retry return the task the first request created. Its record is
 * `hook-state/api-requests/<sha256(key name, Idempotency-Key)>.json` in the team dir (so it outlives
 * a restart of `serve`), read and written under its own lock around the creation:
 *
 *   no record                → record `creating`, create the task, record `created` with its id
 *   `created`, same body     → the same task (and its owner told, if a crash stopped that)
 *   any record, other body   → 409 idempotency_conflict
 *   `creating` (a crash between the two writes) → the task is looked for by the record's id in its
 *                              metadata, created only if it is not there
 */
import { assignedText } from "../policy/decide.js";
import { createHash } from "node:crypto";
import path from "node:path";
import { z } from "zod";
import type { Task, TaskAssignment, TeamIdentity } from "../contract/team-files.js";
import { HooksError } from "../contract/errors.js";
import { checkHooksBlock } from "../settings/team-settings.js";
import type { TemplateDef } from "../settings/handlers.js";
import { type LoadedTeamConfig, loadTeamConfig } from "../team/config-file.js";
import { mkdirUnder, readJsonFile, writeJsonAtomic } from "../team/json-file.js";
import { DEFAULT_LOCK_TIMEOUT_MS, withLock } from "../team/lock.js";
import { leaderStateDir, taskFile } from "../team/paths.js";
import { sentId, type SentLog } from "../team/sent-log.js";
import { createTask, readTask } from "../team/tasks.js";
import { sendOnce } from "../event/remediate.js";
import { ApiError, listProblems, problemLines } from "./answers.js";
import { findTemplate, matchParameters, renderTask } from "./templates.js";

/** What the server keeps per team dir: one sent-log, and one creation at a time from this process. */
export interface TeamRuntime {
  teamDir: string;
  sent: SentLog;
  /**
   * Runs `fn` after every creation this process started before it (the file lock still guards against other processes).
   */
  serialise<T>(fn: () => Promise<T>): Promise<T>;
}

interface CreateRequest {
  /** The key's name (recorded in the task, and the scope of its Idempotency-Keys). */
  keyName: string;
  template: string;
  parameters: Readonly<Record<string, unknown>>;
  idempotencyKey: string | null;
  now: Date;
  /**
   * How long this request may wait for the team's locks in all (its Idempotency-Key's, then the id
   * lock's), counted from its start: a request queued behind others that each waited for a stuck
   * lock must not wait as long again on top of theirs. Default 10 s (then 503).
   */
  lockTimeoutMs?: number;
  /** Aborted when the server stops: a task not written by then is not written (its client has gone). */
  signal?: AbortSignal;
}

interface Created {
  task: Task;
  /** True when an Idempotency-Key found the task of an earlier request. */
  replayed: boolean;
  /** A message the owner did not get (it is sent again on a retry with the same Idempotency-Key). */
  warning: string | null;
}

const RecordSchema = z.object({
  requestHash: z.string(),
  state: z.enum(["creating", "created"]),
  taskId: z.string().optional(),
  at: z.string(),
});
type IdempotencyRecord = z.infer<typeof RecordSchema>;

/** Creates the task `request` asks for, or finds the one an earlier request with its Idempotency-Key created. */
export async function createFromTemplate(team: TeamRuntime, request: CreateRequest): Promise<Created> {
  const deadline = Date.now() + (request.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS);
  // At least one attempt, however late: a lock that is free is taken.
  const locks = (): { label: string; timeoutMs: number } => ({
    label: label(request),
    timeoutMs: Math.max(1, deadline - Date.now()),
  });
  if (request.idempotencyKey === null) {
    const plan = await planTask(team.teamDir, request);
    const task = await team.serialise(
      async () =>
        (await createTask(team.teamDir, plan.identity.taskListId, (id) => buildTask(id, plan, request, null), locks()))
          .task,
    );
    return { task, replayed: false, warning: await tellOwner(team, plan.identity, task) };
  }
  const ref = requestRef(request.keyName, request.idempotencyKey);
  const file = path.join(leaderStateDir(team.teamDir), "api-requests", `${ref}.json`);
  mkdirUnder(team.teamDir, path.dirname(file));
  const requestHash = hashRequest(request);
  return withLock(
    file,
    async (): Promise<Created> => {
      const record = await readRecord(file);
      if (record && record.requestHash !== requestHash) {
        throw new ApiError(
          "idempotency_conflict",
          "this Idempotency-Key was used before with another request body: use a new key for a new request",
        );
      }
      if (record?.state === "created" && record.taskId !== undefined) return replay(team, record.taskId);
      const plan = await planTask(team.teamDir, request);
      if (!record) await writeRecord(file, { requestHash, state: "creating", at: request.now.toISOString() });
      const created = await team.serialise(() =>
        createTask(team.teamDir, plan.identity.taskListId, (id) => buildTask(id, plan, request, ref), {
          ...locks(),
          // Only after a crash between the record's two writes: a listing of the whole list, under the id lock.
          existing: record ? (tasks: Task[]) => tasks.find((t) => requestOf(t) === ref) : undefined,
        }),
      );
      await writeRecord(file, {
        requestHash,
        state: "created",
        taskId: created.task.id,
        at: request.now.toISOString(),
      });
      return {
        task: created.task,
        replayed: !created.created,
        warning: await tellOwner(team, plan.identity, created.task),
      };
    },
    { label: `pi-teams-hooks serve: Idempotency-Key of ${request.keyName}`, timeoutMs: locks().timeoutMs },
  );
}

/**
 * The team's config.json for a request; 503 when the file is there but cannot be used (not JSON, not
 * an object, a FIFO or a device): its defaults would name another task list and no template, and the
 * client would read "no such task" or "no such template" where the truth is "try again once it is
 * fixed". A team without config.json has its defaults, as everywhere.
 */
export async function usableTeamConfig(teamDir: string): Promise<LoadedTeamConfig> {
  const config = await loadTeamConfig(teamDir);
  if (config.fileWarning !== null) {
    throw new ApiError(
      "unavailable",
      "the team's config.json cannot be read as a JSON object, so its task list and templates are unknown until it is fixed (pi-teams-hooks doctor names the problem)",
    );
  }
  return config;
}

interface TaskPlan {
  identity: TeamIdentity;
  slug: string;
  template: TemplateDef;
  values: Record<string, unknown>;
  subject: string;
  description: string;
}

/** The team's template, the parameters checked and rendered; an ApiError for what the request got wrong. */
async function planTask(teamDir: string, request: CreateRequest): Promise<TaskPlan> {
  const config = await usableTeamConfig(teamDir);
  const block = checkHooksBlock(config.hooks, config.file);
  if (!block.ok) {
    throw new ApiError(
      "unavailable",
      `the team's config.json "hooks" block is invalid, so none of its templates can be used until it is fixed (pi-teams-hooks doctor names the problem)`,
    );
  }
  const found = findTemplate(block.block.templates ?? {}, request.template);
  if (!found)
    throw new ApiError(
      "template_not_found",
      `this team has no template "${request.template}" (config.json hooks.templates)`,
    );
  const matched = matchParameters(found.template, request.parameters);
  if (!matched.ok) {
    const listed = listProblems(matched.problems);
    throw new ApiError("invalid_parameters", `parameters of template "${found.slug}": ${problemLines(listed)}`, {
      problems: listed,
    });
  }
  return {
    identity: config.identity,
    slug: found.slug,
    template: found.template,
    values: matched.values,
    ...renderTask(found.template, matched.values),
  };
}

/**
 * Called under the id lock, right before the task is written: the last moment a stopping server can still not write it.
 */
function buildTask(id: string, plan: TaskPlan, request: CreateRequest, ref: string | null): Task {
  if (request.signal?.aborted)
    throw new ApiError("unavailable", "the server is stopping: the task was not created; send the request again", {
      headers: { "Retry-After": "1" },
    });
  const at = request.now.toISOString();
  const taskApi = {
    template: plan.slug,
    key: request.keyName,
    parameters: plan.values,
    requestedAt: at,
    request: ref ?? undefined,
  };
  return {
    id,
    subject: plan.subject,
    description: plan.description,
    owner: plan.template.owner,
    status: "pending",
    blocks: [],
    blockedBy: [],
    metadata: { taskApi },
    createdAt: at,
    updatedAt: at,
  };
}

async function replay(team: TeamRuntime, taskId: string): Promise<Created> {
  const config = await usableTeamConfig(team.teamDir);
  const read = await readTask(taskFile(team.teamDir, config.identity.taskListId, taskId));
  if (!read.ok)
    throw new ApiError(
      "task_not_found",
      `the task this Idempotency-Key created, #${taskId}, is gone or no longer a task`,
    );
  return { task: read.value, replayed: true, warning: await tellOwner(team, config.identity, read.value) };
}

/** Sends the owner its `task_assignment`, once per task; a line saying what was not sent, else null. */
async function tellOwner(team: TeamRuntime, identity: TeamIdentity, task: Task): Promise<string | null> {
  const owner = task.owner;
  if (!owner) return null;
  const at = new Date().toISOString();
  const assignment: TaskAssignment = {
    type: "task_assignment",
    taskId: task.id,
    ...assignedText(task),
    assignedBy: identity.leadName,
    timestamp: at,
  };
  const sent = await sendOnce(team.sent, {
    teamDir: team.teamDir,
    namespace: identity.taskListId,
    to: owner,
    id: sentId("assignment", `api:${task.id}`, owner),
    message: { from: identity.leadName, text: JSON.stringify(assignment), timestamp: at, read: false },
    isIt: (m) => assignmentFor(m.text) === task.id,
  });
  return sent.error;
}

/** The task id of a `task_assignment` text, else null. */
function assignmentFor(text: string): string | null {
  try {
    const value = JSON.parse(text) as { type?: unknown; taskId?: unknown };
    return value.type === "task_assignment" && typeof value.taskId === "string" ? value.taskId : null;
  } catch {
    return null; // not JSON: not an assignment
  }
}

/** The record's name: the key's name and its Idempotency-Key, hashed (any bytes a client sends stay out of paths). */
function requestRef(keyName: string, idempotencyKey: string): string {
  return createHash("sha256").update(keyName).update("\0").update(idempotencyKey).digest("hex");
}

/**
 * The request's identity, as the API reads it: the template and the parameter names in any case, key
 * order and whitespace do not count.
 */
function hashRequest(request: CreateRequest): string {
  // Pairs, not an object: `PR` and `pr` given together stay two (and the request is refused for it).
  const parameters = Object.entries(request.parameters)
    .map(([name, value]) => [name.toLowerCase(), value] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash("sha256")
    .update(canonicalJson({ template: request.template.toLowerCase(), parameters }))
    .digest("hex");
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

function requestOf(task: Task): unknown {
  const api = task.metadata?.taskApi;
  return api !== null && typeof api === "object" ? (api as Record<string, unknown>).request : undefined;
}

async function readRecord(file: string): Promise<IdempotencyRecord | null> {
  const read = await readJsonFile(file, RecordSchema);
  if (read.ok) return read.value;
  if (read.problem.kind === "missing") return null;
  throw new HooksError("E_IO", `the record of an Idempotency-Key: ${read.problem.message}`);
}

async function writeRecord(file: string, record: IdempotencyRecord): Promise<void> {
  await writeJsonAtomic(file, record);
}

function label(request: CreateRequest): string {
  return `pi-teams-hooks serve: task for ${request.keyName}`;
}
