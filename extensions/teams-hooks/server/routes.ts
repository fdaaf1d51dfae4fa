/**
 * The task API's routes, and the checks every request passes, in this order (each refusal says only
 * what the caller may know):
 *
 *   route and method     404 not_found, 405 method_not_allowed (the routes are documented anyway)
 *   key                  401: missing, malformed, unknown, revoked or disabled — one answer for all
 *   rate                 429 with Retry-After, per key
 *   scope, team          403: never a hint whether a team the key does not hold exists
 *   body                 413 over the cap, 400 not JSON or not the request's shape
 *   template allowlist   403
 *   team, task, template 404, only inside the key's scope
 *   parameters           400 naming each problem
 *
 *   GET  /healthz                              no key
 *   POST /api/v1/teams/{team}/tasks            tasks:create  {template, parameters} → 202 {taskId, status, statusUrl}
 *   GET  /api/v1/teams/{team}/tasks/{id}       tasks:read    → 200 {id, status, qualityGateStatus, gateState,
 *                                                            startDenial, updatedAt, decidingRun, createdBy} (a
 *                                                            confidential team's: no reason or code in startDenial,
 *                                                            no summary or code in decidingRun)
 *   GET  /api/v1/teams/{team}/gates            gates:read    → 200 the team's gate readiness (doctor/readiness.ts)
 *   GET  /api/v1/teams/{team}/runs?…           logs:read     → 200 a page of runs, the filters of `logs`, `before`
 *                                                            (a confidential team's: no summary, code or stderr)
 *   GET  /api/v1/teams/{team}/bindings         gates:admin   → 200 the team's bindings with their trust
 *   POST /api/v1/teams/{team}/bindings         gates:admin   {name, handler | file, events, settings?} → 202 (new: its
 *                                                            events wait for the lead's approval, `trust`)
 *   DELETE /api/v1/teams/{team}/bindings/{name} gates:admin  → 200 (a trusted one is gate_missing until approved)
 *   POST /api/v1/teams/{team}/runs/{runId}/decision
 *                                              gates:decide  {decision: allow|deny, code?, reason?, message?}
 *                                                            → 200 applied, 202 recorded (the team's leader applies it)
 *
 * The key, its scope, team and templates are checked again on every request: a status poll with a
 * key revoked since the task was created is a 401.
 */
import { statSync } from "node:fs";
import path from "node:path";
import { decideDeferral, type DecideResult, heldSoon } from "../event/deferral-decision.js";
import { readDeferral } from "../deferrals/record.js";
import { startDenialOf } from "../event/start-gate.js";
import { gateStateOf } from "../policy/gate-life.js";
import { GateMetadataPatchSchema } from "../policy/plan.js";

/** The words a gate writes in `qualityGateStatus`. */
const GATE_STATUS_WORDS: ReadonlySet<string> = new Set(GateMetadataPatchSchema.shape.qualityGateStatus.options);
import { resolveSettings } from "../settings/team-settings.js";
import type { LoadedTeamConfig } from "../team/config-file.js";
import { isTeamName, taskFile } from "../team/paths.js";
import { readTask } from "../team/tasks.js";
import { type Answer, ApiError, listProblems, problemLines, problemOfLine, unauthorized } from "./answers.js";
import { decidingRunOf } from "./task-status.js";
import { createdByOf } from "../contract/work.js";
import { gatesView, runsPage } from "./team-views.js";
import { createFromTemplate, type TeamRuntime, usableTeamConfig } from "./create-task.js";
import type { KeyInfo, KeyStore, Scope } from "./keys.js";
import type { RateLimit, RateLimiter } from "./rate-limit.js";
import { pathSegment } from "../dashboard/html.js";
import type { Problem } from "../settings/problems.js";
import { BindingRequestSchema, bindingGateName, changeBindings } from "../gates/bindings.js";
import { handlerGateName } from "../settings/handlers.js";
import { readGlobalHandlers } from "../gates/global-handlers.js";
import { bindingsView } from "../doctor/bindings-view.js";
import { resolveTeamSetup } from "../team/setup.js";
import { isHooksError } from "../contract/errors.js";
import type { LogIndex } from "../logs/log-index.js";
import { relativeTo } from "../logs/shown.js";
import type { Runtime } from "../runner/runtime.js";

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
  /** What a decision applied here runs on: the server's clock (runner/runtime.ts), built once. */
  runtime: Runtime;
  /** Aborted when the server stops: a creation not written by then is not written. */
  stopping: AbortSignal;
  warn(message: string): void;
}

/** One request as the routes see it. `body()` reads it once, under the size cap (413). */
interface ApiRequest {
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
const BINDINGS = /^\/api\/v1\/teams\/([^/]+)\/bindings\/?$/;
const BINDING = /^\/api\/v1\/teams\/([^/]+)\/bindings\/([^/]+)\/?$/;
const BINDING_FIELDS = new Set(["name", "handler", "file", "events", "settings"]);
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
  const bindings = BINDINGS.exec(req.path);
  if (bindings) {
    allow(req, ["GET", "POST"]);
    return bindingsRoute(ctx, req, pathSegment(bindings[1]));
  }
  const binding = BINDING.exec(req.path);
  if (binding) {
    allow(req, ["DELETE"]);
    return deleteBindingRoute(ctx, req, pathSegment(binding[1]), pathSegment(binding[2]));
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
  // The last gate's word, as the task records it (only the words a gate writes: anything else is an agent's);
  // `gateState` (additive): where the task's current event is in its gate life (policy/gate-life.ts), which
  // is `unjudged` while a newer completion than the one judged waits for its gate.
  const qualityGateStatus = typeof gate === "string" && GATE_STATUS_WORDS.has(gate) ? gate : null;
  const gateState = gateStateOf(task);
  const { id: taskId, status, updatedAt } = task;
  // Additive: the run that decided the gate, and what made the task (server/task-status.ts).
  const decidingRun = await decidingRunOf(teamDir, task, isConfidential(config, ctx.env));
  const createdBy = createdByOf(task);
  const body = { id: taskId, status, qualityGateStatus, gateState, startDenial, updatedAt, decidingRun, createdBy };
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

/**
 * The team's bindings (GET), or a new one (POST): trusted content, so it is recorded and said to be
 * `new`: its events wait for the lead's approval (`pi-teams-hooks trust`) as a gate edit's do.
 */
async function bindingsRoute(ctx: ApiContext, req: ApiRequest, team: string): Promise<Answer> {
  const key = await authorise(ctx, req, "gates:admin", team);
  const teamDir = teamDirOf(ctx, team);
  const setup = await teamSetupOf(teamDir, ctx.env);
  if (req.method === "GET") {
    const view = bindingsView(teamDir, setup.hooksDir, setup.settings.handlers, ctx.env);
    return { status: 200, body: { team, ...view } };
  }
  const { value, problems } = jsonObject(
    await req.body(),
    BINDING_FIELDS,
    '{"name": "…", "handler": "<a handler\'s name>" or "file": "<a gate file in a hooks dir>", "events": [...], "settings"?: {…}}',
  );
  const parsed = BindingRequestSchema.safeParse(value);
  if (!parsed.success)
    for (const issue of parsed.error.issues) {
      const field = issue.path.map(String).join(".") || "binding";
      if (!problems.some((p) => p.path === field)) problems.push(fieldProblem(field, issue.message));
    }
  if (problems.length > 0 || !parsed.success) {
    const listed = listProblems(problems);
    throw new ApiError("invalid_request", problemLines(listed), { problems: listed });
  }
  const binding = { ...parsed.data, createdAt: ctx.now().toISOString(), createdBy: `api:${key.name}` };
  const handlers = [...setup.settings.handlers, ...readGlobalHandlers(setup.hooksDir).handlers];
  const dirs = { team: setup.teamHooksDir, global: setup.hooksDir };
  const done = await changeBindings(teamDir, { add: binding, handlers, dirs });
  if (done.kind === "exists")
    throw new ApiError(
      "binding_exists",
      `team ${team} has a binding ${JSON.stringify(binding.name)} already (DELETE it first)`,
    );
  if (done.kind === "invalid") {
    const listed = [fieldProblem(done.field, done.problem)];
    throw new ApiError("invalid_request", problemLines(listed), { problems: listed });
  }
  const gate = binding.file === undefined ? handlerGateName(binding.name) : bindingGateName(binding.name);
  const names = binding.file === undefined ? `handler ${binding.handler}` : `file ${binding.file}`;
  ctx.warn(
    `team ${team}: binding ${gate} (${names}; ${binding.events.join(", ")}) added by key "${key.name}": its events wait for the lead's approval (pi-teams-hooks trust)`,
  );
  return {
    status: 202,
    body: {
      team,
      name: binding.name,
      gate,
      trust: "new",
      message: `recorded; a binding is trusted content: its events wait for the team lead's approval (pi-teams-hooks trust --team-dir <team dir> ${gate})`,
    },
    headers: { Location: `/api/v1/teams/${encodeURIComponent(team)}/bindings` },
  };
}

/** Removes a binding: one that was trusted is then missing (`gate_missing`) until the lead approves its removal. */
async function deleteBindingRoute(ctx: ApiContext, req: ApiRequest, team: string, name: string): Promise<Answer> {
  const key = await authorise(ctx, req, "gates:admin", team);
  const teamDir = teamDirOf(ctx, team);
  await usableTeamConfig(teamDir);
  const done = await changeBindings(teamDir, { remove: name });
  if (done.kind !== "removed")
    throw new ApiError("binding_not_found", `team ${team} has no binding ${JSON.stringify(name.slice(0, 100))}`);
  const gate =
    done.binding.file === undefined ? handlerGateName(done.binding.name) : bindingGateName(done.binding.name);
  ctx.warn(`team ${team}: binding ${gate} removed by key "${key.name}"`);
  return {
    status: 200,
    body: {
      team,
      name: done.binding.name,
      removed: true,
      message: "removed; if it was trusted, its events wait for the team lead's approval of the removal (gate_missing)",
    },
  };
}

/** The team's setup as `GET …/gates` resolves it; a hooks dir that is not there is a 503. */
async function teamSetupOf(teamDir: string, env: ApiContext["env"]) {
  await usableTeamConfig(teamDir);
  try {
    return await resolveTeamSetup({ teamDir, env, processCwd: teamDir });
  } catch (error) {
    if (isHooksError(error) && error.code === "E_HOOKS_DIR")
      throw new ApiError("unavailable", `the team's gates cannot be read: ${error.message}`);
    throw error;
  }
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
    { env: ctx.env, runtime: ctx.runtime },
  );
  return decisionAnswer(result, team, runId, notFound);
}

function decisionAnswer(result: DecideResult, team: string, runId: string, notFound: ApiError): Answer {
  switch (result.kind) {
    case "unknown":
      throw notFound;
    case "invalid":
      throw new ApiError("invalid_decision", result.problem, {
        problems: listProblems(result.problem.split("; ").map((line) => problemOfLine("request_field", line))),
      });
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
          message:
            result.problem ??
            (result.deferral.settings
              ? `recorded; the team's leader applies it under the settings in force when its gate held it (${result.deferral.deferredAt})`
              : "recorded; the team's leader applies it"),
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
          // The settings it was applied under (those in force when its gate held it), and what changed since.
          appliedUnder: result.appliedUnder,
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
    problems.push(
      fieldProblem("decision", `expected "allow" or "deny", got ${JSON.stringify(value.decision) ?? "nothing"}`),
    );
  for (const field of ["code", "reason", "message"] as const) {
    if (value[field] !== undefined && typeof value[field] !== "string")
      problems.push(fieldProblem(field, "expected a string"));
  }
  if (problems.length > 0 || (decision !== "allow" && decision !== "deny")) {
    const listed = listProblems(problems);
    throw new ApiError("invalid_decision", problemLines(listed), { problems: listed });
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
): { value: Record<string, unknown>; problems: Problem[] } {
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
    .map((field) => fieldProblem(field.slice(0, 100), `unknown field (fields: ${known})`));
  return { value, problems };
}

/** A problem with a field of the request (`request_field`): its path the field's name, its line `<field>: <text>`. */
function fieldProblem(field: string, text: string): Problem {
  return { kind: "request_field", path: field, message: `${field}: ${text}` };
}

function parseBody(bytes: Buffer): { template: string; parameters: Record<string, unknown> } {
  const { value, problems } = jsonObject(bytes, REQUEST_FIELDS, '{"template": "<slug>", "parameters": {…}}');
  const { template, parameters } = value;
  if (typeof template !== "string" || template.trim() === "")
    problems.push(fieldProblem("template", "missing, expected the slug of one of the team's templates"));
  if (parameters !== undefined && !isRecord(parameters))
    problems.push(fieldProblem("parameters", "expected an object"));
  if (problems.length > 0 || typeof template !== "string") {
    const listed = listProblems(problems);
    throw new ApiError("invalid_request", problemLines(listed), { problems: listed });
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
