/**
 * The task API's routes, and the checks every request passes, in this order (each refusal says only
 * what the caller may know):
 *
 *   route and method     404 not_found, 405 method_not_allowed (the routes are documented anyway)
 *   key                  401: missing, malformed, unknown or revoked — one answer for all
 *   rate                 429 with Retry-After, per key
 *   scope, team          403: never a hint whether a team the key does not hold exists
 *   body                 413 over the cap, 400 not JSON or not the request's shape
 *   template allowlist   403
 *   team, task, template 404, only inside the key's scope
 *   parameters           400 naming each problem
 *
 *   GET  /healthz                              no key
 *   POST /api/v1/teams/{team}/tasks            tasks:create  {template, parameters} → 202 {taskId, status, statusUrl}
 *   GET  /api/v1/teams/{team}/tasks/{id}       tasks:read    → 200 {id, status, qualityGateStatus, startDenial,
 *                                                            updatedAt, decidingRun, createdBy} (a confidential
 *                                                            team's: no reason or code in startDenial, no summary
 *                                                            or code in decidingRun)
 *   GET  /api/v1/teams/{team}/gates            gates:read    → 200 the team's gate readiness (doctor/readiness.ts)
 *   GET  /api/v1/teams/{team}/runs?…           logs:read     → 200 a page of runs, the filters of `logs`, `before`
 *                                                            (a confidential team's: no summary, code or stderr)
 *   POST /api/v1/teams/{team}/runs/{runId}/decision
 *                                              gates:decide  {decision: allow|deny, code?, reason?, message?}
 *                                                            → 200 applied, 202 recorded (the team's leader applies it)
 *
 * The key, its scope, team and templates are checked again on every request: a status poll with a
 * key revoked since the task was created is a 401.
 */
import { statSync } from "node:fs";
import path from "node:path";
import { decideDeferral, type DecideResult, heldSoon } from "../held/decision.js";
import { readDeferral } from "../held/deferral.js";
import { startDenialOf } from "../event/start-gate.js";
import { resolveSettings } from "../settings/hooks-config.js";
import type { LoadedTeamConfig } from "../team/config.js";
import { isTeamName, taskFile } from "../team/paths.js";
import { readTask } from "../team/tasks.js";
import { type Answer, ApiError, listProblems, unauthorized } from "./answers.js";
import { createdByOf, decidingRunOf } from "./task-status.js";
import { gatesView, runsPage } from "./team-views.js";
import { createFromTemplate, type TeamRuntime, usableTeamConfig } from "./create-task.js";
import type { KeyInfo, KeyStore, Scope } from "./keys.js";
import type { RateLimit, RateLimiter } from "./rate-limit.js";
import { pathSegment } from "../dashboard/html.js";
import type { LogIndex } from "../logs/log-index.js";
import { relativeTo } from "../logs/shown.js";

/** What the routes use; built once by server/server.ts. */
export interface ApiContext {
  teamsRoot: string;
  /** The server's index of the teams' logs (logs/log-index.ts), shared with the dashboard. */
  index: LogIndex;
  keys: KeyStore;
  limiter: RateLimiter;
  defaultRate: RateLimit;
  team(teamDir: string): TeamRuntime;
  now(): Date;
  /** The environment a decision is applied with when no leader runs for its team. */
  env: Readonly<Record<string, string | undefined>>;
  /** How long one creation may wait for the team's locks in all (then 503). */
  lockTimeoutMs: number;
  /** Aborted when the server stops: a creation not written by then is not written. */
  stopping: AbortSignal;
  warn(message: string): void;
}

/** One request as the routes see it. `body()` reads it once, under the size cap (413). */
export interface ApiRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  idempotencyKey: string | undefined;
  /** The request target's query (`?outcome=failed&since=24h`). */
  query: URLSearchParams;
  body(): Promise<Buffer>;
}

const TASKS = /^\/api\/v1\/teams\/([^/]+)\/tasks\/?$/;
const TASK = /^\/api\/v1\/teams\/([^/]+)\/tasks\/([^/]+)\/?$/;
const DECISION = /^\/api\/v1\/teams\/([^/]+)\/runs\/([^/]+)\/decision\/?$/;
const GATES = /^\/api\/v1\/teams\/([^/]+)\/gates\/?$/;
const RUNS = /^\/api\/v1\/teams\/([^/]+)\/runs\/?$/;
const REQUEST_FIELDS = new Set(["template", "parameters"]);
/** How long a decision waits for the deferral of a run the ledger shows in flight (decideDeferral's wait too). */
const DEFERRAL_WAIT_MS = 5_000;
const DECISION_FIELDS = new Set(["decision", "code", "reason", "message"]);

export async function route(ctx: ApiContext, req: ApiRequest): Promise<Answer> {
  if (req.path === "/healthz") {
    allow(req, ["GET"]);
    return { status: 200, body: { status: "ok" } };
  }
  const tasks = TASKS.exec(req.path);
  if (tasks) {
    allow(req, ["POST"]);
    return createTaskRoute(ctx, req, pathSegment(tasks[1]));
  }
  const task = TASK.exec(req.path);
  if (task) {
    allow(req, ["GET"]);
    return taskStatusRoute(ctx, req, pathSegment(task[1]), pathSegment(task[2]));
  }
  const decision = DECISION.exec(req.path);
  if (decision) {
    allow(req, ["POST"]);
    return decisionRoute(ctx, req, pathSegment(decision[1]), pathSegment(decision[2]));
  }
  const gates = GATES.exec(req.path);
  if (gates) {
    allow(req, ["GET"]);
    return gatesRoute(ctx, req, pathSegment(gates[1]));
  }
  const runs = RUNS.exec(req.path);
  if (runs) {
    allow(req, ["GET"]);
    return runsRoute(ctx, req, pathSegment(runs[1]));
  }
  throw new ApiError("not_found", `no such route: ${req.method} ${req.path.slice(0, 200)}`);
}

async function createTaskRoute(ctx: ApiContext, req: ApiRequest, team: string): Promise<Answer> {
  const key = await authorise(ctx, req, "tasks:create", team);
  const body = parseBody(await req.body());
  const idempotencyKey = checkIdempotencyKey(req.idempotencyKey);
  if (key.templates !== null && !key.templates.includes(body.template.toLowerCase())) {
    throw new ApiError("template_not_allowed", `this key may not create tasks from template "${body.template}"`);
  }
  const runtime = ctx.team(teamDirOf(ctx, team));
  const created = await createFromTemplate(runtime, {
    keyName: key.name,
    template: body.template,
    parameters: body.parameters,
    idempotencyKey,
    now: ctx.now(),
    lockTimeoutMs: ctx.lockTimeoutMs,
    signal: ctx.stopping,
  });
  if (created.warning) ctx.warn(`team ${team}, task #${created.task.id}: ${created.warning}`);
  const statusUrl = `/api/v1/teams/${encodeURIComponent(team)}/tasks/${encodeURIComponent(created.task.id)}`;
  return {
    status: 202,
    body: { taskId: created.task.id, status: created.task.status, statusUrl },
    headers: { Location: statusUrl, ...(created.replayed ? { "Idempotent-Replayed": "true" } : {}) },
  };
}

async function taskStatusRoute(ctx: ApiContext, req: ApiRequest, team: string, id: string): Promise<Answer> {
  const key = await authorise(ctx, req, "tasks:read", team);
  const teamDir = teamDirOf(ctx, team);
  const notFound = new ApiError("task_not_found", `team ${team} has no task ${JSON.stringify(id.slice(0, 100))}`);
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) throw notFound;
  const config = await usableTeamConfig(teamDir);
  const { identity } = config;
  const read = await readTask(taskFile(teamDir, identity.taskListId, id));
  if (!read.ok || read.value.id !== id) throw notFound;
  const task = read.value;
  if (key.templates !== null) {
    const api = task.metadata?.taskApi;
    const template = api !== null && typeof api === "object" ? (api as Record<string, unknown>).template : undefined;
    if (typeof template !== "string" || !key.templates.includes(template.toLowerCase())) {
      throw new ApiError(
        "template_not_allowed",
        `this key may read only tasks created from its templates (${key.templates.join(", ")})`,
      );
    }
  }
  const gate = task.metadata?.qualityGateStatus;
  // `startDenial` (additive): a start gate's last denial of a claim of the task, or null. A
  // confidential team's keeps its lifecycle: what the gate said is content (the reason quotes the
  // task), and so is the code the gate chose.
  const denial = startDenialOf(task);
  const withheld = denial !== null && isConfidential(config, ctx.env);
  const startDenial = withheld ? { ...denial, reason: null, code: null } : denial;
  const qualityGateStatus = typeof gate === "string" ? gate : null;
  const { id: taskId, status, updatedAt } = task;
  // Additive: the run that decided the gate, and what made the task (server/task-status.ts).
  const decidingRun = await decidingRunOf(teamDir, task, isConfidential(config, ctx.env));
  const createdBy = createdByOf(task);
  const body = { id: taskId, status, qualityGateStatus, startDenial, updatedAt, decidingRun, createdBy };
  return { status: 200, body };
}

/**
 * The team's gate readiness (server/team-views.ts). A confidential team's is the same: it holds no
 * task content. A config.json that cannot be used is a 503, as for every route.
 */
async function gatesRoute(ctx: ApiContext, req: ApiRequest, team: string): Promise<Answer> {
  await authorise(ctx, req, "gates:read", team);
  const teamDir = teamDirOf(ctx, team);
  await usableTeamConfig(teamDir);
  // Every reader of the API is remote: the paths under the teams root are written relative to it.
  return { status: 200, body: relativeTo(await gatesView(team, teamDir, ctx.env), path.resolve(ctx.teamsRoot)) };
}

/** The team's runs, filtered as `logs` filters and paged as the dashboard pages (server/team-views.ts). */
async function runsRoute(ctx: ApiContext, req: ApiRequest, team: string): Promise<Answer> {
  await authorise(ctx, req, "logs:read", team);
  const teamDir = teamDirOf(ctx, team);
  const config = await usableTeamConfig(teamDir);
  const confidential = isConfidential(config, ctx.env);
  const nowMs = ctx.now().getTime();
  return { status: 200, body: await runsPage(team, teamDir, req.query, { nowMs, confidential, index: ctx.index }) };
}

/** `hooks.confidential` as the leader reads it (also from a block refused whole: settings/privacy.ts). */
function isConfidential(config: LoadedTeamConfig, env: Readonly<Record<string, string | undefined>>): boolean {
  return resolveSettings({ hooks: config.hooks, noBlock: config.noHooks, file: config.file, env }).confidential.value;
}

/**
 * The decision of a held gate (docs/remote-gates.md, "Deferred decisions"): recorded under the
 * deferral's lock and applied by the team's running leader (202), or here, when none runs (200).
 * A key limited to templates decides only the gates of tasks created from them.
 */
async function decisionRoute(ctx: ApiContext, req: ApiRequest, team: string, runId: string): Promise<Answer> {
  const key = await authorise(ctx, req, "gates:decide", team);
  const body = parseDecision(await req.body());
  const teamDir = teamDirOf(ctx, team);
  const notFound = new ApiError(
    "run_not_found",
    `team ${team} holds no gate deferred by run ${JSON.stringify(runId.slice(0, 100))}`,
  );
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(runId)) throw notFound;
  if (key.templates !== null) {
    // As decideDeferral does: a decision may come before the leader has written the deferral.
    await heldSoon(teamDir, runId, Date.now() + DEFERRAL_WAIT_MS);
    const held = await readDeferral(teamDir, runId);
    if (held === null || !held.ok) throw notFound;
    // The task the decision is applied to: the deferral's own list, whatever config.json says now.
    const read = await readTask(taskFile(teamDir, held.value.taskListId, held.value.taskId));
    const api = read.ok ? read.value.metadata?.taskApi : undefined;
    const template = api !== null && typeof api === "object" ? (api as Record<string, unknown>).template : undefined;
    if (typeof template !== "string" || !key.templates.includes(template.toLowerCase())) {
      throw new ApiError(
        "template_not_allowed",
        `this key may decide only the gates of tasks created from its templates (${key.templates.join(", ")})`,
      );
    }
  }
  const result = await decideDeferral(
    teamDir,
    runId,
    { ...body, by: `api:${key.name}` },
    { env: ctx.env, now: () => ctx.now() },
  );
  return decisionAnswer(result, team, runId, notFound);
}

function decisionAnswer(result: DecideResult, team: string, runId: string, notFound: ApiError): Answer {
  switch (result.kind) {
    case "unknown":
      throw notFound;
    case "invalid":
      throw new ApiError("invalid_decision", result.problem, { problems: result.problem.split("; ") });
    case "conflict":
      throw new ApiError(
        "already_decided",
        `run ${runId} of team ${team} was decided before: ${result.existing.decision} by ${result.existing.by} at ${result.existing.at}`,
      );
    case "expired":
      throw new ApiError(
        "defer_expired",
        `run ${runId} of team ${team} was held until ${result.expiresAt}; it expired and failed (defer_expired)`,
      );
    case "recorded": {
      const decision = result.deferral.decision;
      return {
        status: 202,
        body: {
          runId,
          taskId: result.deferral.taskId,
          decision: decision?.decision ?? null,
          state: "recorded",
          message: result.problem ?? "recorded; the team's leader applies it",
        },
      };
    }
    case "applied": {
      const decision = result.deferral.decision;
      return {
        status: 200,
        body: {
          runId,
          taskId: result.deferral.taskId,
          decision: decision?.decision ?? null,
          state: "applied",
          actions: result.actions,
        },
      };
    }
  }
}

function parseDecision(bytes: Buffer): {
  decision: "allow" | "deny";
  code?: string;
  reason?: string;
  message?: string;
} {
  const { value, problems } = jsonObject(
    bytes,
    DECISION_FIELDS,
    '{"decision": "allow" | "deny", "code"?, "reason"?, "message"?}',
  );
  const decision = typeof value.decision === "string" ? value.decision.trim().toLowerCase() : value.decision;
  if (decision !== "allow" && decision !== "deny")
    problems.push(`decision: expected "allow" or "deny", got ${JSON.stringify(value.decision) ?? "nothing"}`);
  for (const field of ["code", "reason", "message"] as const) {
    if (value[field] !== undefined && typeof value[field] !== "string") problems.push(`${field}: expected a string`);
  }
  if (problems.length > 0 || (decision !== "allow" && decision !== "deny")) {
    const listed = listProblems(problems);
    throw new ApiError("invalid_decision", listed.join("; "), { problems: listed });
  }
  const text = (field: "code" | "reason" | "message"): Record<string, string> =>
    typeof value[field] === "string" ? { [field]: value[field] as string } : {};
  return { decision, ...text("code"), ...text("reason"), ...text("message") };
}

/** The key of the request, within its rate, holding `scope` and `team`; else the refusal. */
async function authorise(ctx: ApiContext, req: ApiRequest, scope: Scope, team: string): Promise<KeyInfo> {
  const key = await ctx.keys.authenticate(req.authorization);
  if (key === "unavailable") throw new ApiError("unavailable", "the server cannot read its API keys; its log says why");
  if (key === null) throw unauthorized();
  const wait = ctx.limiter.take(key.name, key.rateLimit ?? ctx.defaultRate);
  if (wait !== null)
    throw new ApiError("rate_limited", `too many requests with this key: try again in ${wait} s`, {
      headers: { "Retry-After": String(wait) },
    });
  if (!key.scopes.includes(scope)) throw new ApiError("scope_not_allowed", `this key does not have the scope ${scope}`);
  if (!key.teams.includes(team))
    throw new ApiError("team_not_allowed", `this key is not for team ${JSON.stringify(team.slice(0, 100))}`);
  return key;
}

/**
 * The team dir of a team the key holds (so its name is a team name); 404 when it is not a folder under the teams root.
 */
function teamDirOf(ctx: ApiContext, team: string): string {
  const dir = path.join(ctx.teamsRoot, team);
  let isDir = false;
  try {
    isDir = isTeamName(team) && statSync(dir).isDirectory();
  } catch {
    isDir = false; // missing or unreadable: not a team this server can serve
  }
  if (!isDir) throw new ApiError("team_not_found", `there is no team ${team} under the server's teams root`);
  return dir;
}

/**
 * The body as a JSON object, and one problem per field it should not have; else 400 (`invalid_json`,
 * `invalid_request`). JSON is UTF-8 (RFC 8259): other bytes are refused, not replaced, so that what is
 * stored (and compared for an Idempotency-Key) is what was sent. Nesting is capped: 64 KiB of `[`
 * would otherwise reach the task file and every reader of it, and overflow the stack of any code that
 * walks it (a 500 here, before the cap).
 */
function jsonObject(
  bytes: Buffer,
  fields: ReadonlySet<string>,
  shape: string,
): { value: Record<string, unknown>; problems: string[] } {
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    throw new ApiError("invalid_json", "the body is not JSON: it is not valid UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ApiError(
      "invalid_json",
      `the body is not JSON: ${error instanceof Error ? error.message.slice(0, 200) : "parse error"}`,
    );
  }
  if (!isRecord(value)) throw new ApiError("invalid_request", `the body must be a JSON object: ${shape}`);
  if (nestedDeeperThan(value, MAX_BODY_DEPTH))
    throw new ApiError(
      "invalid_request",
      `the body is nested deeper than ${MAX_BODY_DEPTH} levels of objects and arrays`,
    );
  const known = [...fields].join(", ");
  const problems = Object.keys(value)
    .filter((field) => !fields.has(field))
    .map((field) => `${field.slice(0, 100)}: unknown field (fields: ${known})`);
  return { value, problems };
}

function parseBody(bytes: Buffer): { template: string; parameters: Record<string, unknown> } {
  const { value, problems } = jsonObject(bytes, REQUEST_FIELDS, '{"template": "<slug>", "parameters": {…}}');
  const { template, parameters } = value;
  if (typeof template !== "string" || template.trim() === "")
    problems.push("template: missing, expected the slug of one of the team's templates");
  if (parameters !== undefined && !isRecord(parameters)) problems.push("parameters: expected an object");
  if (problems.length > 0 || typeof template !== "string") {
    const listed = listProblems(problems);
    throw new ApiError("invalid_request", listed.join("; "), { problems: listed });
  }
  return { template, parameters: isRecord(parameters) ? parameters : {} };
}

/** An `Idempotency-Key`: 1 to 255 visible ASCII characters, or none. */
function checkIdempotencyKey(value: string | undefined): string | null {
  if (value === undefined) return null;
  if (!/^[\x21-\x7e]{1,255}$/.test(value))
    throw new ApiError(
      "invalid_idempotency_key",
      "Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID, for example)",
    );
  return value;
}

function allow(req: ApiRequest, methods: readonly string[]): void {
  if (!methods.includes(req.method)) {
    throw new ApiError("method_not_allowed", `${req.method} is not allowed here (allowed: ${methods.join(", ")})`, {
      headers: { Allow: methods.join(", ") },
    });
  }
}

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
/** Levels of objects and arrays a body may hold, itself included: far more than any template's parameters need. */
const MAX_BODY_DEPTH = 32;

/** Whether `value` holds objects or arrays more than `limit` levels deep (walked without recursion). */
function nestedDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<{ node: unknown; depth: number }> = [{ node: value, depth: 1 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    if (item.node === null || typeof item.node !== "object") continue;
    if (item.depth > limit) return true;
    for (const child of Object.values(item.node))
      if (child !== null && typeof child === "object") stack.push({ node: child, depth: item.depth + 1 });
  }
  return false;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
